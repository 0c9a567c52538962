"""Warp's furthest-point and ray-parity point queries against brute force (float64 numpy), their gradients
against central finite differences, and replacing a Mesh's points / velocities arrays."""
import numpy as np
import pytest

import simkit as wp
from test_mesh import MESHES, closest_on_triangles, sk_mesh, tri_arrays, winding_number

CORNERS = {(1.0, 0.0): 0, (0.0, 1.0): 1, (0.0, 0.0): 2}


@wp.kernel
def k_furthest(mesh: wp.uint64, xs: wp.array(dtype=wp.vec3), min_dist: float, found: wp.array(dtype=int),
               faces: wp.array(dtype=int), uv: wp.array(dtype=wp.vec2), pos: wp.array(dtype=wp.vec3),
               same: wp.array(dtype=int)):
    i = wp.tid()
    q = wp.mesh_query_furthest_point_no_sign(mesh, xs[i], min_dist)
    face = int(-7)
    u = float(-7.0)
    v = float(-7.0)
    hit = wp.mesh_query_furthest_point_no_sign(mesh, xs[i], min_dist, face, u, v)
    found[i] = wp.where(q.result, 1, 0)
    same[i] = wp.where(hit == q.result and q.sign == 0.0, 1, 0)
    if q.result:
        faces[i] = q.face
        uv[i] = wp.vec2(q.u, q.v)
        pos[i] = wp.mesh_eval_position(mesh, q.face, q.u, q.v)
        same[i] = wp.where(same[i] == 1 and face == q.face and u == q.u and v == q.v, 1, 0)
    elif face != -7 or u != -7.0 or v != -7.0:
        same[i] = 0  # (the older form leaves its variables alone without a result)


@wp.kernel
def k_furthest_dist(mesh: wp.uint64, xs: wp.array(dtype=wp.vec3), out: wp.array(dtype=float)):
    i = wp.tid()
    q = wp.mesh_query_furthest_point_no_sign(mesh, xs[i], 0.0)
    if q.result:
        out[i] = wp.length(wp.mesh_eval_position(mesh, q.face, q.u, q.v) - xs[i])


@wp.kernel
def k_parity(mesh: wp.uint64, xs: wp.array(dtype=wp.vec3), n_sample: int, signs: wp.array(dtype=float, ndim=2),
             cps: wp.array(dtype=wp.vec3), same: wp.array(dtype=int)):
    i = wp.tid()
    x = xs[i]
    q = wp.mesh_query_point_sign_parity(mesh, x, 1.0e6, n_sample, 0.1)
    q1 = wp.mesh_query_point_sign_parity(mesh, x, 1.0e6)
    q2 = wp.mesh_query_point_sign_parity(mesh, x, 1.0e6, n_sample)
    ns = wp.mesh_query_point_no_sign(mesh, x, 1.0e6)
    signs[i, 0] = q.sign
    signs[i, 1] = q1.sign
    signs[i, 2] = q2.sign
    inside = float(0.0)
    face = int(-1)
    u = float(0.0)
    v = float(0.0)
    hit = wp.mesh_query_point_sign_parity(mesh, x, 1.0e6, inside, face, u, v, n_sample, 0.1)
    same[i] = wp.where(hit == q.result and inside == q.sign and face == q.face and u == q.u and v == q.v
                       and face == ns.face and u == ns.u and v == ns.v, 1, 0)
    if q.result:
        cps[i] = wp.mesh_eval_position(mesh, q.face, q.u, q.v)


@wp.kernel
def k_parity_cp(mesh: wp.uint64, xs: wp.array(dtype=wp.vec3), out: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    q = wp.mesh_query_point_sign_parity(mesh, xs[i], 1.0e6, 3, 0.1)
    if q.result:
        out[i] = wp.mesh_eval_position(mesh, q.face, q.u, q.v) * q.sign


@wp.kernel
def k_closest_vel(mesh: wp.uint64, xs: wp.array(dtype=wp.vec3), cps: wp.array(dtype=wp.vec3),
                  vel: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    q = wp.mesh_query_point_no_sign(mesh, xs[i], 1.0e6)
    if q.result:
        cps[i] = wp.mesh_eval_position(mesh, q.face, q.u, q.v)
        vel[i] = wp.mesh_eval_velocity(mesh, q.face, q.u, q.v)


def far_points(tm, n, seed):
    rng = np.random.default_rng(seed)
    lo, hi = tm.bounds
    return rng.uniform(lo - 0.5 * (hi - lo), hi + 0.5 * (hi - lo), (n, 3)).astype(np.float32)


def closest_points(xs, a, b, c):
    out = []
    for x in xs.astype(np.float64):
        cp = closest_on_triangles(x, a, b, c)
        out.append(cp[np.argmin(np.linalg.norm(cp - x, axis=1))])
    return np.array(out)


def run_furthest(mesh, xs, min_dist, device):
    n = len(xs)
    outs = [wp.zeros(n, dtype=int, device=device), wp.zeros(n, dtype=int, device=device),
            wp.zeros(n, dtype=wp.vec2, device=device), wp.zeros(n, dtype=wp.vec3, device=device),
            wp.zeros(n, dtype=int, device=device)]
    wp.launch(k_furthest, n, inputs=[mesh.id, wp.array(xs, dtype=wp.vec3, device=device), min_dist], outputs=outs,
              device=device)
    return [o.numpy() for o in outs]


@pytest.mark.parametrize("name", ["icosphere", "torus", "star"])
def test_furthest_point_matches_brute_force(device, name, tree_layout):
    tm = MESHES[name]
    mesh = sk_mesh(tm, device)
    xs = far_points(tm, 300, seed=5)
    found, faces, uv, pos, same = run_furthest(mesh, xs, 0.0, device)
    v = np.asarray(tm.vertices, np.float32).astype(np.float64)
    corners = np.asarray(tm.faces)
    brute = np.sqrt(((v[None, corners.ravel()] - xs[:, None].astype(np.float64)) ** 2).sum(-1).max(1))
    assert found.all() and same.all()
    for i in range(len(xs)):
        k = CORNERS[tuple(uv[i].tolist())]  # a vertex of the face
        np.testing.assert_allclose(pos[i], v[corners[faces[i], k]], atol=1e-6)
    np.testing.assert_allclose(np.linalg.norm(pos - xs, axis=1), brute, rtol=1e-5)
    # min_dist: strictly farther points only; a negative min_dist accepts every face
    found, _, _, _, same = run_furthest(mesh, xs, float(brute.max()) * 1.001, device)
    assert not found.any() and same.all()
    found, _, _, _, _ = run_furthest(mesh, xs[:5], -1.0, device)
    assert found.all()
    below = run_furthest(mesh, xs[:1], float(brute[0]) * 0.999, device)
    above = run_furthest(mesh, xs[:1], float(brute[0]) * 1.001, device)
    assert below[0][0] == 1 and above[0][0] == 0


def test_furthest_point_gradients(device):
    """The furthest point's (u, v) are constant (a vertex): d|x - far(x)|/dx through mesh_eval_position, against
    central differences, and the vertex gradients."""
    tm = MESHES["icosphere"]
    v = np.asarray(tm.vertices, np.float32)
    pts = wp.array(v, dtype=wp.vec3, device=device, requires_grad=True)
    mesh = wp.Mesh(pts, wp.array(np.asarray(tm.faces, np.int32).ravel(), dtype=wp.int32, device=device))
    xs = far_points(tm, 12, seed=9)
    xa = wp.array(xs, dtype=wp.vec3, device=device)
    out = wp.zeros(12, dtype=float, device=device, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(k_furthest_dist, 12, inputs=[mesh.id, xa], outputs=[out], device=device)
    tape.backward(grads={out: np.ones(12, np.float32)})
    grad = pts.grad.numpy()
    far = np.argmax(((v[None] - xs[:, None]) ** 2).sum(-1), axis=1)  # each query's furthest vertex
    expect = np.zeros_like(v, dtype=np.float64)
    for i, k in enumerate(far):
        d = v[k].astype(np.float64) - xs[i]
        expect[k] += d / np.linalg.norm(d)
    np.testing.assert_allclose(grad, expect, atol=1e-5)
    out = wp.zeros(12, dtype=float, device=device)
    wp.autograd.gradcheck(k_furthest_dist, 12, [mesh.id, wp.array(xs, dtype=wp.vec3, device=device)], [out],
                          eps=1e-3, atol=2e-3, rtol=2e-2, device=device)


@pytest.mark.parametrize("name", ["torus", "star"])
def test_sign_parity_matches_winding_number(device, name, tree_layout):
    tm = MESHES[name]
    mesh = sk_mesh(tm, device)
    a, b, c = tri_arrays(tm)
    rng = np.random.default_rng(11)
    lo, hi = tm.bounds
    xs = rng.uniform(lo - 0.2, hi + 0.2, (400, 3)).astype(np.float32)
    dist = np.array([np.linalg.norm(closest_on_triangles(x.astype(np.float64), a, b, c) - x, axis=1).min()
                     for x in xs])
    xs = xs[dist > 1e-3]  # (not on the surface)
    n = len(xs)
    expect = np.array([-1.0 if winding_number(x.astype(np.float64), a, b, c) > 0.5 else 1.0 for x in xs])
    for n_sample in (1, 3):
        signs = wp.zeros((n, 3), dtype=float, device=device)
        cps = wp.zeros(n, dtype=wp.vec3, device=device)
        same = wp.zeros(n, dtype=int, device=device)
        wp.launch(k_parity, n, inputs=[mesh.id, wp.array(xs, dtype=wp.vec3, device=device), n_sample],
                  outputs=[signs, cps, same], device=device)
        s = signs.numpy()
        assert same.numpy().all()
        assert (s[:, 0] == expect).mean() > 0.99  # a ray may graze an edge or vertex
        if n_sample == 1:
            np.testing.assert_array_equal(s[:, 1], s[:, 0])  # (the defaults: one ray, perturbation 0.1)
        np.testing.assert_array_equal(s[:, 2], s[:, 0])
        np.testing.assert_allclose(cps.numpy(), closest_points(xs, a, b, c), atol=1e-5)
    signs = wp.zeros((n, 3), dtype=float, device=device)
    wp.launch(k_parity, n, inputs=[mesh.id, wp.array(xs, dtype=wp.vec3, device=device), 0],
              outputs=[signs, wp.zeros(n, dtype=wp.vec3, device=device), wp.zeros(n, dtype=int, device=device)],
              device=device)
    assert (signs.numpy()[:, 0] == -1.0).all()  # no rays: inside (as in Warp)


def test_sign_parity_closest_point_gradient(device):
    tm = MESHES["icosphere"]
    mesh = sk_mesh(tm, device)
    rng = np.random.default_rng(2)
    d = rng.normal(size=(16, 3))
    r = rng.uniform(1.3, 1.7, (16, 1))  # (outside: inside a convex mesh the closest face jumps near its medial axis)
    xs = (d / np.linalg.norm(d, axis=1, keepdims=True) * r).astype(np.float32)
    out = wp.zeros(16, dtype=wp.vec3, device=device)
    wp.autograd.gradcheck(k_parity_cp, 16, [mesh.id, wp.array(xs, dtype=wp.vec3, device=device)], [out],
                          eps=1e-3, atol=2e-3, rtol=2e-2, device=device)


def test_assigning_points_and_velocities_refits(device):
    tm = MESHES["icosphere"]
    v = np.asarray(tm.vertices, np.float32)
    idx = wp.array(np.asarray(tm.faces, np.int32).ravel(), dtype=wp.int32, device=device)
    mesh = wp.Mesh(wp.array(v, dtype=wp.vec3, device=device), idx)
    shift = np.array([3.0, -1.0, 0.5], np.float32)
    xs = far_points(tm, 200, seed=1)
    xs = (xs[np.linalg.norm(xs, axis=1) > 1.2][:50] + shift).astype(np.float32)  # (outside: one closest point)
    new_points = wp.array(v + shift, dtype=wp.vec3, device=device)
    mesh.points = new_points
    assert mesh.points is new_points
    mesh.velocities = wp.array(np.tile(shift, (len(v), 1)), dtype=wp.vec3, device=device)
    cps, vel = wp.zeros(50, dtype=wp.vec3, device=device), wp.zeros(50, dtype=wp.vec3, device=device)
    wp.launch(k_closest_vel, 50, inputs=[mesh.id, wp.array(xs, dtype=wp.vec3, device=device)], outputs=[cps, vel],
              device=device)
    a, b, c = tri_arrays(tm)
    brute = closest_points(xs - shift, a, b, c) + shift  # (distances: a few points are equally close to two faces)
    np.testing.assert_allclose(np.linalg.norm(cps.numpy() - xs, axis=1), np.linalg.norm(brute - xs, axis=1),
                               atol=1e-5)
    np.testing.assert_allclose(vel.numpy(), np.tile(shift, (50, 1)), atol=1e-6)
    mesh.velocities = None
    wp.launch(k_closest_vel, 50, inputs=[mesh.id, wp.array(xs, dtype=wp.vec3, device=device)], outputs=[cps, vel],
              device=device)
    assert (vel.numpy() == 0).all()
    with pytest.raises(ValueError, match="the new points have shape"):
        mesh.points = wp.zeros(3, dtype=wp.vec3, device=device)
    with pytest.raises(ValueError, match="the new velocities have shape"):
        mesh.velocities = wp.zeros(3, dtype=wp.vec3, device=device)
    with pytest.raises(TypeError, match="points must be a 1D array of vec3"):
        mesh.points = wp.zeros(len(v), dtype=float, device=device)
    assert mesh.points is new_points


@wp.kernel
def k_older_forms_loss(mesh: wp.uint64, xs: wp.array(dtype=wp.vec3), ds: wp.array(dtype=wp.vec3),
                       out: wp.array(dtype=wp.vec3, ndim=2)):
    i = wp.tid()
    x = xs[i]
    d = ds[i]
    t = d[0] * 2.0  # (values from the inputs: kept on a miss, and their gradients pass through)
    u = x[1]
    v = float(0.0)
    sign = float(0.0)
    n = wp.vec3(x[2], 0.0, 0.0)
    f = int(0)
    wp.mesh_query_ray(mesh, x, d, 1.0e6, t, u, v, sign, n, f)
    out[i, 0] = wp.vec3(t, u, v) + n
    face = int(0)
    pu = x[2]
    pv = d[1]
    s = float(0.0)
    wp.mesh_query_point(mesh, x, 0.6, s, face, pu, pv)
    out[i, 1] = wp.vec3(pu, pv, s)
    wp.mesh_query_point_no_sign(mesh, x, 0.6, face, pu, pv)
    out[i, 2] = wp.mesh_eval_position(mesh, face, pu, pv)


def test_older_output_argument_forms_are_differentiable(device):
    """As in Warp: the variables' adjoints reach the query point / ray when a face was found; on a miss they
    kept their values, and their gradients pass through (central differences)."""
    tm = MESHES["icosphere"]
    mesh = sk_mesh(tm, device)
    rng = np.random.default_rng(6)
    # inside: the closest point is inside a face (u, v smooth) within 0.6 of it, or farther; outside: farther
    r = np.r_[rng.uniform(0.1, 0.3, 3), rng.uniform(0.45, 0.75, 5), rng.uniform(1.7, 2.2, 6)]
    d = rng.normal(size=(len(r), 3))
    xs = (d / np.linalg.norm(d, axis=1, keepdims=True) * r[:, None]).astype(np.float32)
    ds = rng.normal(size=(len(xs), 3)).astype(np.float32)
    out = wp.zeros((len(xs), 3), dtype=wp.vec3, device=device)
    wp.launch(k_older_forms_loss, len(xs), inputs=[mesh.id, wp.array(xs, dtype=wp.vec3, device=device),
                                                   wp.array(ds, dtype=wp.vec3, device=device)],
              outputs=[out], device=device)
    o = out.numpy()
    missed = (o[:, 0, 0] == np.float32(2 * ds[:, 0]) + xs[:, 2]) & (o[:, 0, 1] == xs[:, 1])
    assert 0 < missed.sum() < len(xs)  # some rays hit, some miss
    assert 0 < (o[:, 1, 0] != xs[:, 2]).sum() < len(xs)  # some points within 0.6, some not
    wp.autograd.gradcheck(k_older_forms_loss, len(xs), [mesh.id, wp.array(xs, dtype=wp.vec3, device=device),
                                                        wp.array(ds, dtype=wp.vec3, device=device)],
                          [out], eps=1e-3, atol=2e-3, rtol=2e-2, device=device)

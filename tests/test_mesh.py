"""Mesh queries against brute force over every face (float64 numpy), signs against the exact
winding number, gradients against central finite differences, construction errors."""
import numpy as np
import pytest

import simkit as wp

trimesh = pytest.importorskip("trimesh")  # (a test dependency; the GPU machine gets it as a carried wheel)

# ---------------------------------------------------------------------------
# Kernels


@wp.func
def point_query(mesh: wp.uint64, x: wp.vec3, method: int, max_dist: float):
    q = wp.mesh_query_point_no_sign(mesh, x, max_dist)
    if method == 1:
        q = wp.mesh_query_point(mesh, x, max_dist)
    elif method == 2:
        q = wp.mesh_query_point_sign_normal(mesh, x, max_dist)
    elif method == 3:
        q = wp.mesh_query_point_sign_winding_number(mesh, x, max_dist)
    return q


@wp.kernel
def k_point(mesh: wp.uint64, xs: wp.array(dtype=wp.vec3), method: int, max_dist: float, found: wp.array(dtype=int),
            cps: wp.array(dtype=wp.vec3), faces: wp.array(dtype=int), uv: wp.array(dtype=wp.vec2),
            signs: wp.array(dtype=float)):
    i = wp.tid()
    q = point_query(mesh, xs[i], method, max_dist)
    found[i] = wp.where(q.result, 1, 0)
    if q.result:
        cps[i] = wp.mesh_eval_position(mesh, q.face, q.u, q.v)
        faces[i] = q.face
        uv[i] = wp.vec2(q.u, q.v)
        signs[i] = q.sign


@wp.kernel
def k_point_position(mesh: wp.uint64, xs: wp.array(dtype=wp.vec3), method: int, max_dist: float,
                     cps: wp.array(dtype=wp.vec3), dists: wp.array(dtype=float)):
    # k_point's closest point and its signed distance (what a tie between faces does not change)
    i = wp.tid()
    q = point_query(mesh, xs[i], method, max_dist)
    if q.result:
        cp = wp.mesh_eval_position(mesh, q.face, q.u, q.v)
        cps[i] = cp
        dists[i] = wp.length(cp - xs[i]) * q.sign


@wp.kernel
def k_ray(mesh: wp.uint64, xs: wp.array(dtype=wp.vec3), ds: wp.array(dtype=wp.vec3), max_t: float,
          ts: wp.array(dtype=float), faces: wp.array(dtype=int), hit: wp.array(dtype=wp.vec3),
          normals: wp.array(dtype=wp.vec3), signs: wp.array(dtype=float)):
    i = wp.tid()
    q = wp.mesh_query_ray(mesh, xs[i], ds[i], max_t)
    ts[i] = -1.0
    if q.result:
        ts[i] = q.t
        faces[i] = q.face
        hit[i] = wp.mesh_eval_position(mesh, q.face, q.u, q.v)
        normals[i] = q.normal
        signs[i] = q.sign


@wp.kernel
def k_aabb(mesh: wp.uint64, lo: wp.array(dtype=wp.vec3), hi: wp.array(dtype=wp.vec3), counts: wp.array(dtype=int),
           hits: wp.array(dtype=int, ndim=2)):
    i = wp.tid()
    query = wp.mesh_query_aabb(mesh, lo[i], hi[i])
    face = int(0)
    n = int(0)
    while wp.mesh_query_aabb_next(query, face):
        if n < hits.shape[1]:
            hits[i, n] = face
        n += 1
    counts[i] = n


@wp.kernel
def k_access(mesh: wp.uint64, faces: wp.array(dtype=int), uv: wp.array(dtype=wp.vec2), pos: wp.array(dtype=wp.vec3),
             vel: wp.array(dtype=wp.vec3), nrm: wp.array(dtype=wp.vec3), corner: wp.array(dtype=wp.vec3),
             corner_vel: wp.array(dtype=wp.vec3), corner_index: wp.array(dtype=int)):
    i = wp.tid()
    f = faces[i]
    pos[i] = wp.mesh_eval_position(mesh, f, uv[i][0], uv[i][1])
    vel[i] = wp.mesh_eval_velocity(mesh, f, uv[i][0], uv[i][1])
    nrm[i] = wp.mesh_eval_face_normal(mesh, f)
    corner[i] = wp.mesh_get_point(mesh, 3 * f + 1)
    corner_vel[i] = wp.mesh_get_velocity(mesh, 3 * f + 1)
    corner_index[i] = wp.mesh_get_index(mesh, 3 * f + 1)


@wp.kernel
def k_closest_points(mesh: wp.uint64, xs: wp.array(dtype=wp.vec3), out: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    q = wp.mesh_query_point(mesh, xs[i], 1.0e6)
    if q.result:
        out[i] = wp.mesh_eval_position(mesh, q.face, q.u, q.v)


@wp.kernel
def k_ray_tuv(mesh: wp.uint64, xs: wp.array(dtype=wp.vec3), ds: wp.array(dtype=wp.vec3), tuv: wp.array(dtype=wp.vec3),
              normals: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    q = wp.mesh_query_ray(mesh, xs[i], ds[i], 1.0e6)
    if q.result:
        tuv[i] = wp.vec3(q.t, q.u, q.v)
        normals[i] = q.normal


@wp.kernel
def k_vertex_loss(mesh: wp.uint64, xs: wp.array(dtype=wp.vec3), ds: wp.array(dtype=wp.vec3),
                  w: wp.array(dtype=wp.vec3), out: wp.array(dtype=float)):
    i = wp.tid()
    x = xs[i]
    q = wp.mesh_query_point_sign_normal(mesh, x, 1.0e6)
    s = float(0.0)
    if q.result:
        cp = wp.mesh_eval_position(mesh, q.face, q.u, q.v)
        s += wp.length(cp - x) + wp.dot(cp, w[i])
    r = wp.mesh_query_ray(mesh, x, ds[i], 1.0e6)
    if r.result:
        s += r.t * w[i][0] + r.u * w[i][1] + r.v * w[i][2] + wp.dot(r.normal, w[i])
        s += wp.dot(wp.mesh_eval_face_normal(mesh, r.face), w[i])
    wp.atomic_add(out, 0, s)


@wp.kernel
def k_edge_edge(p1: wp.array(dtype=wp.vec3d), q1: wp.array(dtype=wp.vec3d), p2: wp.array(dtype=wp.vec3d),
                q2: wp.array(dtype=wp.vec3d), out: wp.array(dtype=wp.vec3d)):
    i = wp.tid()
    out[i] = wp.closest_point_edge_edge(p1[i], q1[i], p2[i], q2[i], wp.float64(1.0e-12))


@wp.kernel
def k_edge_edge_f(p1: wp.array(dtype=wp.vec3), q1: wp.array(dtype=wp.vec3), p2: wp.array(dtype=wp.vec3),
                  q2: wp.array(dtype=wp.vec3), out: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    out[i] = wp.closest_point_edge_edge(p1[i], q1[i], p2[i], q2[i], 1.0e-6)


@wp.kernel
def k_tri_tri(v: wp.array(dtype=wp.vec3d, ndim=2), u: wp.array(dtype=wp.vec3d, ndim=2), out: wp.array(dtype=int),
              out_f: wp.array(dtype=int)):
    i = wp.tid()
    out[i] = wp.intersect_tri_tri(v[i, 0], v[i, 1], v[i, 2], u[i, 0], u[i, 1], u[i, 2])
    out_f[i] = wp.intersect_tri_tri(wp.vec3(v[i, 0]), wp.vec3(v[i, 1]), wp.vec3(v[i, 2]), wp.vec3(u[i, 0]),
                                    wp.vec3(u[i, 1]), wp.vec3(u[i, 2]))


@wp.kernel
def k_winding(mesh: wp.uint64, xs: wp.array(dtype=wp.vec3), out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = wp.mesh_query_winding_number(mesh, xs[i], 2.0)


# ---------------------------------------------------------------------------
# Meshes and references


def star_prism(n=5, r_in=0.45, r_out=1.0, h=0.8):
    """A concave (star-shaped) prism: sharp concave edges for the sign tests."""
    ang = np.arange(2 * n) * np.pi / n
    r = np.where(np.arange(2 * n) % 2 == 0, r_out, r_in)
    ring = np.stack([r * np.cos(ang), r * np.sin(ang)], 1)
    m = len(ring)
    verts = np.concatenate([np.c_[ring, np.full(m, -h / 2)], np.c_[ring, np.full(m, h / 2)],
                            [[0, 0, -h / 2], [0, 0, h / 2]]])
    faces = []
    for k in range(m):
        a, b = k, (k + 1) % m
        faces += [[a, b, m + b], [a, m + b, m + a], [2 * m, b, a], [2 * m + 1, m + a, m + b]]
    return trimesh.Trimesh(verts, np.array(faces), process=False)


def _meshes():
    return {
        "icosphere": trimesh.creation.icosphere(subdivisions=3),
        "torus": trimesh.creation.torus(major_radius=1.0, minor_radius=0.35, major_sections=32, minor_sections=16),
        "annulus": trimesh.creation.annulus(r_min=0.5, r_max=1.0, height=0.6),
        "star": star_prism(),
    }


MESHES = _meshes()


def sk_mesh(tm, device, **kw):
    pts = wp.array(np.asarray(tm.vertices, np.float32), dtype=wp.vec3, device=device)
    idx = wp.array(np.asarray(tm.faces, np.int32).ravel(), dtype=wp.int32, device=device)
    return wp.Mesh(pts, idx, **kw)


def tri_arrays(tm):
    v = np.asarray(tm.vertices, np.float32).astype(np.float64)
    f = np.asarray(tm.faces)
    return v[f[:, 0]], v[f[:, 1]], v[f[:, 2]]


def closest_on_triangles(p, a, b, c):
    """Closest point to p on every triangle (vectorized Ericson), float64."""
    ab, ac = b - a, c - a
    ap, bp, cp = p - a, p - b, p - c
    d1, d2 = (ab * ap).sum(1), (ac * ap).sum(1)
    d3, d4 = (ab * bp).sum(1), (ac * bp).sum(1)
    d5, d6 = (ab * cp).sum(1), (ac * cp).sum(1)
    va, vb, vc = d3 * d6 - d5 * d4, d5 * d2 - d1 * d6, d1 * d4 - d3 * d2
    with np.errstate(divide="ignore", invalid="ignore"):
        den = 1.0 / (va + vb + vc)
        res = a + ab * (vb * den)[:, None] + ac * (vc * den)[:, None]
        cases = [((d1 <= 0) & (d2 <= 0), a), ((d3 >= 0) & (d4 <= d3), b),
                 ((vc <= 0) & (d1 >= 0) & (d3 <= 0), a + ab * (d1 / (d1 - d3))[:, None]),
                 ((d6 >= 0) & (d5 <= d6), c),
                 ((vb <= 0) & (d2 >= 0) & (d6 <= 0), a + ac * (d2 / (d2 - d6))[:, None]),
                 ((va <= 0) & (d4 - d3 >= 0) & (d5 - d6 >= 0),
                  b + (c - b) * ((d4 - d3) / ((d4 - d3) + (d5 - d6)))[:, None])]
        for m, v in reversed(cases):  # earlier cases take precedence, as in the algorithm
            res = np.where(m[:, None], v, res)
    return res


def ray_triangles(o, d, a, b, c):
    """t of the ray o + t d against every triangle (Moller-Trumbore, float64); inf when missed."""
    e1, e2 = b - a, c - a
    pv = np.cross(d, e2)
    det = (e1 * pv).sum(1)
    with np.errstate(divide="ignore", invalid="ignore"):
        inv = 1.0 / det
        tv = o - a
        u = (tv * pv).sum(1) * inv
        qv = np.cross(tv, e1)
        v = (d * qv).sum(1) * inv
        t = (e2 * qv).sum(1) * inv
    ok = (det != 0) & (u >= 0) & (v >= 0) & (u + v <= 1) & (t >= 0)
    return np.where(ok, t, np.inf)


def winding_number(p, a, b, c):
    x, y, z = a - p, b - p, c - p
    lx, ly, lz = (np.linalg.norm(v, axis=1) for v in (x, y, z))
    num = (x * np.cross(y, z)).sum(1)
    den = lx * ly * lz + (x * y).sum(1) * lz + (x * z).sum(1) * ly + (y * z).sum(1) * lx
    return (2.0 * np.arctan2(num, den)).sum() / (4.0 * np.pi)


def query_points(tm, n, seed):
    rng = np.random.default_rng(seed)
    lo, hi = tm.bounds
    pad = 0.3 * (hi - lo)
    return rng.uniform(lo - pad, hi + pad, (n, 3)).astype(np.float32)


def run_points(mesh, xs, method, device, max_dist=1.0e6):
    n = len(xs)
    out = [wp.zeros(n, dtype=int, device=device), wp.zeros(n, dtype=wp.vec3, device=device),
           wp.zeros(n, dtype=int, device=device), wp.zeros(n, dtype=wp.vec2, device=device),
           wp.zeros(n, dtype=float, device=device)]
    wp.launch(k_point, n, inputs=[mesh.id, wp.array(xs, dtype=wp.vec3, device=device), method, max_dist],
              outputs=out, device=device)
    return [o.numpy() for o in out]


METHODS = {"no_sign": 0, "rays": 1, "normal": 2, "winding": 3}

# ---------------------------------------------------------------------------
# Closest point, signs


@pytest.mark.parametrize("name", list(MESHES))
@pytest.mark.parametrize("method", list(METHODS))
def test_closest_point_and_sign_match_brute_force(device, name, method, tree_layout):
    tm = MESHES[name]
    mesh = sk_mesh(tm, device, support_winding_number=True)
    xs = query_points(tm, 300, seed=len(name))
    found, cps, faces, uv, signs = run_points(mesh, xs, METHODS[method], device)
    assert found.all()
    a, b, c = tri_arrays(tm)
    for i, x in enumerate(xs.astype(np.float64)):
        cand = closest_on_triangles(x, a, b, c)
        d = np.linalg.norm(cand - x, axis=1)
        best = d.min()
        assert abs(np.linalg.norm(cps[i] - x) - best) < 1e-5, (i, x)
        order = np.argsort(d)
        if d[order[1]] - best > 1e-4:  # a unique closest face: same face and point
            assert faces[i] == order[0]
            np.testing.assert_allclose(cps[i], cand[order[0]], atol=1e-5)
        u, v = uv[i]
        np.testing.assert_allclose(u * a[faces[i]] + v * b[faces[i]] + (1 - u - v) * c[faces[i]], cps[i], atol=1e-5)
        if method == "no_sign":
            assert signs[i] == 0.0
        elif best > 1e-3:
            inside = winding_number(x, a, b, c) > 0.5
            assert (signs[i] < 0) == inside, (i, x, signs[i])


def test_parallel_build_closest_points(device, monkeypatch):
    # a Mesh whose tree was built one subtree per thread answers like brute force
    from simkit.collision import bvh_build
    monkeypatch.setattr(bvh_build, "PARALLEL_MIN_ITEMS", 64)
    monkeypatch.setattr(wp.config, "cpu_threads", 2)
    tm = MESHES["torus"]
    mesh = sk_mesh(tm, device)
    xs = query_points(tm, 150, seed=31)
    found, cps = run_points(mesh, xs, 0, device)[:2]
    assert found.all()
    a, b, c = tri_arrays(tm)
    for i, x in enumerate(xs.astype(np.float64)):
        best = np.linalg.norm(closest_on_triangles(x, a, b, c) - x, axis=1).min()
        assert abs(np.linalg.norm(cps[i] - x) - best) < 1e-5, i


def test_max_dist_limits_the_search(device):
    tm = MESHES["torus"]
    mesh = sk_mesh(tm, device)
    xs = query_points(tm, 200, seed=7)
    a, b, c = tri_arrays(tm)
    best = np.array([np.linalg.norm(closest_on_triangles(x, a, b, c) - x, axis=1).min() for x in xs.astype(float)])
    limit = float(np.median(best))
    found = run_points(mesh, xs, 0, device, max_dist=limit)[0]
    keep = np.abs(best - limit) > 1e-5
    np.testing.assert_array_equal(found[keep] == 1, best[keep] < limit)
    assert not run_points(mesh, xs, 1, device, max_dist=0.0)[0].any()


def test_sliver_faces_are_skipped_by_point_and_ray_queries(device):
    # a unit square (2 faces) and a degenerate face (collinear points) hovering above it
    v = np.array([[0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0], [0.2, 0.5, 0.5], [0.5, 0.5, 0.5], [0.8, 0.5, 0.5]],
                 np.float32)
    f = np.array([0, 1, 2, 0, 2, 3, 4, 5, 6], np.int32)
    mesh = wp.Mesh(wp.array(v, dtype=wp.vec3, device=device), wp.array(f, dtype=wp.int32, device=device))
    found, cps, faces = run_points(mesh, np.array([[0.5, 0.5, 0.6]], np.float32), 0, device)[:3]
    assert found[0] == 1 and faces[0] in (0, 1) and abs(cps[0][2]) < 1e-6
    outs = [wp.zeros(1, dtype=float, device=device), wp.zeros(1, dtype=int, device=device)] + \
        [wp.zeros(1, dtype=t, device=device) for t in (wp.vec3, wp.vec3, float)]
    wp.launch(k_ray, 1, inputs=[mesh.id, wp.array([[0.5, 0.5, 1.0]], dtype=wp.vec3, device=device),
                                wp.array([[0.0, 0.0, -1.0]], dtype=wp.vec3, device=device), 1.0e6], outputs=outs,
              device=device)
    assert abs(outs[0].numpy()[0] - 1.0) < 1e-6 and outs[1].numpy()[0] in (0, 1)


def test_winding_number_on_an_open_mesh(device):
    tm = trimesh.creation.icosphere(subdivisions=2)
    tm = trimesh.Trimesh(tm.vertices, tm.faces[1:], process=False)  # one face missing: not watertight
    mesh = sk_mesh(tm, device, support_winding_number=True)
    rng = np.random.default_rng(5)
    dirs = rng.normal(size=(200, 3))
    dirs /= np.linalg.norm(dirs, axis=1, keepdims=True)
    xs = (dirs * rng.choice([0.5, 1.5], size=(200, 1))).astype(np.float32)
    signs = run_points(mesh, xs, METHODS["winding"], device)[4]
    np.testing.assert_array_equal(signs < 0, np.linalg.norm(xs, axis=1) < 1.0)
    w = wp.zeros(200, dtype=float, device=device)
    wp.launch(k_winding, 200, inputs=[mesh.id, wp.array(xs, dtype=wp.vec3, device=device), w], device=device)
    a, b, c = tri_arrays(tm)
    ref = np.array([winding_number(x, a, b, c) for x in xs.astype(float)])
    np.testing.assert_allclose(w.numpy(), ref, atol=0.05)  # dipole approximation far away


# ---------------------------------------------------------------------------
# Rays, boxes, access


@pytest.mark.parametrize("name", list(MESHES))
def test_ray_matches_brute_force(device, name, tree_layout):
    tm = MESHES[name]
    mesh = sk_mesh(tm, device)
    n = 400
    xs = query_points(tm, n, seed=11)
    rng = np.random.default_rng(12)
    ds = rng.normal(size=(n, 3)).astype(np.float32)
    ds[: n // 2] = (tm.centroid - xs[: n // 2]).astype(np.float32)  # aimed at the mesh: mostly hits
    outs = [wp.zeros(n, dtype=float, device=device), wp.zeros(n, dtype=int, device=device),
            wp.zeros(n, dtype=wp.vec3, device=device), wp.zeros(n, dtype=wp.vec3, device=device),
            wp.zeros(n, dtype=float, device=device)]
    wp.launch(k_ray, n, inputs=[mesh.id, wp.array(xs, dtype=wp.vec3, device=device),
                                wp.array(ds, dtype=wp.vec3, device=device), 1.0e6], outputs=outs, device=device)
    ts, faces, hit, normals, signs = (o.numpy() for o in outs)
    a, b, c = tri_arrays(tm)
    hits = 0
    for i in range(n):
        o, d = xs[i].astype(float), ds[i].astype(float)
        t = ray_triangles(o, d, a, b, c)
        order = np.argsort(t)
        tmin = t[order[0]]
        if not np.isfinite(tmin):
            assert ts[i] == -1.0 or ts[i] < 1e-5, i  # a grazing float32 hit may exist at an edge
            continue
        hits += 1
        assert abs(ts[i] - tmin) <= 1e-5 * max(1.0, tmin), (i, ts[i], tmin)
        np.testing.assert_allclose(hit[i], o + ts[i] * d, atol=1e-5)
        if t[order[1]] - tmin > 1e-4:
            f = order[0]
            assert faces[i] == f
            nrm = np.cross(b[f] - a[f], c[f] - a[f])
            nrm /= np.linalg.norm(nrm)
            np.testing.assert_allclose(normals[i], nrm, atol=1e-5)
            assert signs[i] == (1.0 if d @ nrm < 0 else -1.0)
    assert hits > n // 3
    # max_t excludes farther hits
    wp.launch(k_ray, n, inputs=[mesh.id, wp.array(xs, dtype=wp.vec3, device=device),
                                wp.array(ds, dtype=wp.vec3, device=device), 1.0e-3], outputs=outs, device=device)
    assert (outs[0].numpy()[ts > 2e-3] == -1.0).all()


def test_mesh_query_aabb_matches_brute_force(device, tree_layout):
    tm = MESHES["torus"]
    mesh = sk_mesh(tm, device)
    rng = np.random.default_rng(3)
    n = 200
    c = rng.uniform(-1.4, 1.4, (n, 3)).astype(np.float32)
    e = rng.uniform(0.0, 0.3, (n, 3)).astype(np.float32)
    counts = wp.zeros(n, dtype=int, device=device)
    hits = wp.zeros((n, 1024), dtype=int, device=device)
    wp.launch(k_aabb, n, inputs=[mesh.id, wp.array(c - e, dtype=wp.vec3, device=device),
                                 wp.array(c + e, dtype=wp.vec3, device=device), counts, hits], device=device)
    tri = np.asarray(tm.vertices, np.float32)[tm.faces]
    flo, fhi = tri.min(1), tri.max(1)
    cn, hn = counts.numpy(), hits.numpy()
    for i in range(n):
        ref = np.nonzero(np.all(flo <= c[i] + e[i], 1) & np.all(fhi >= c[i] - e[i], 1))[0]
        assert cn[i] == len(ref) and set(hn[i, :cn[i]].tolist()) == set(ref.tolist())


def test_eval_and_access(device):
    tm = MESHES["star"]
    v = np.asarray(tm.vertices, np.float32)
    vel_np = (np.random.default_rng(0).normal(size=v.shape)).astype(np.float32)
    mesh = wp.Mesh(wp.array(v, dtype=wp.vec3, device=device),
                   wp.array(np.asarray(tm.faces, np.int32).ravel(), dtype=wp.int32, device=device),
                   velocities=wp.array(vel_np, dtype=wp.vec3, device=device))
    n = len(tm.faces)
    rng = np.random.default_rng(1)
    uv = rng.uniform(0, 0.5, (n, 2)).astype(np.float32)
    outs = [wp.zeros(n, dtype=wp.vec3, device=device) for _ in range(5)] + [wp.zeros(n, dtype=int, device=device)]
    wp.launch(k_access, n, inputs=[mesh.id, wp.array(np.arange(n, dtype=np.int32), dtype=int, device=device),
                                   wp.array(uv, dtype=wp.vec2, device=device)], outputs=outs, device=device)
    pos, vel, nrm, corner, corner_vel, corner_index = (o.numpy() for o in outs)
    f = np.asarray(tm.faces)
    w = np.c_[uv, 1 - uv.sum(1)][:, :, None]
    np.testing.assert_allclose(pos, (v[f] * w).sum(1), atol=1e-6)
    np.testing.assert_allclose(vel, (vel_np[f] * w).sum(1), atol=1e-5)
    ref_n = np.cross(v[f[:, 1]] - v[f[:, 0]], v[f[:, 2]] - v[f[:, 0]])
    np.testing.assert_allclose(nrm, ref_n / np.linalg.norm(ref_n, axis=1, keepdims=True), atol=1e-6)
    np.testing.assert_array_equal(corner_index, f[:, 1])
    np.testing.assert_array_equal(corner, v[f[:, 1]])
    np.testing.assert_array_equal(corner_vel, vel_np[f[:, 1]])
    assert mesh.points is not None and mesh.indices.shape == (3 * n,) and mesh.num_faces == n


def test_refit_follows_moved_points(device, tree_layout):
    tm = MESHES["icosphere"]
    v = np.asarray(tm.vertices, np.float32)
    pts = wp.array(v, dtype=wp.vec3, device=device)
    mesh = wp.Mesh(pts, wp.array(np.asarray(tm.faces, np.int32).ravel(), dtype=wp.int32, device=device))
    xs = query_points(tm, 100, seed=2)
    moved = (v * np.array([1.5, 0.7, 1.0], np.float32) + np.array([0.2, 0.0, -0.1], np.float32))
    pts.assign(moved)
    mesh.refit()
    cps = run_points(mesh, xs, 0, device)[1]
    tm2 = trimesh.Trimesh(moved, tm.faces, process=False)
    a, b, c = tri_arrays(tm2)
    for i, x in enumerate(xs.astype(float)):
        best = np.linalg.norm(closest_on_triangles(x, a, b, c) - x, axis=1).min()
        assert abs(np.linalg.norm(cps[i] - x) - best) < 1e-5


@wp.kernel
def k_deform(rest: wp.array(dtype=wp.vec3), scale: wp.array(dtype=wp.vec3), out: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    out[i] = wp.cw_mul(rest[i], scale[0])


def test_refit_and_query_captured_in_a_cuda_graph(cuda_device):
    """A step that deforms the mesh, refits it and queries it, captured once and replayed with new
    deformations: the descriptor write is part of the graph."""
    tm = MESHES["icosphere"]
    v = np.asarray(tm.vertices, np.float32)
    rest = wp.array(v, dtype=wp.vec3, device=cuda_device)
    pts = wp.array(v, dtype=wp.vec3, device=cuda_device)
    mesh = wp.Mesh(pts, wp.array(np.asarray(tm.faces, np.int32).ravel(), dtype=wp.int32, device=cuda_device))
    xs = query_points(tm, 60, seed=4)
    scale = wp.array([[1.0, 1.0, 1.0]], dtype=wp.vec3, device=cuda_device)
    n = len(xs)
    out = [wp.zeros(n, dtype=int, device=cuda_device), wp.zeros(n, dtype=wp.vec3, device=cuda_device),
           wp.zeros(n, dtype=int, device=cuda_device), wp.zeros(n, dtype=wp.vec2, device=cuda_device),
           wp.zeros(n, dtype=float, device=cuda_device)]
    xs_dev = wp.array(xs, dtype=wp.vec3, device=cuda_device)

    def step():
        wp.launch(k_deform, len(v), inputs=[rest, scale, pts], device=cuda_device)
        mesh.refit()
        wp.launch(k_point, n, inputs=[mesh.id, xs_dev, 0, 1.0e6, *out], device=cuda_device)

    step()  # loads the kernels
    wp.synchronize()
    with wp.ScopedCapture(cuda_device) as cap:
        step()
    for s in ([1.6, 0.6, 1.0], [0.8, 1.3, 0.5]):
        scale.assign([s])
        wp.capture_launch(cap.graph)
        a, b, c = tri_arrays(trimesh.Trimesh(v * np.float32(s), tm.faces, process=False))
        cps = out[1].numpy()
        for i, x in enumerate(xs.astype(float)):
            best = np.linalg.norm(closest_on_triangles(x, a, b, c) - x, axis=1).min()
            assert abs(np.linalg.norm(cps[i] - x) - best) < 1e-5


@pytest.mark.parametrize("per_level", [False, True])
def test_refit_paths_agree(device, per_level, monkeypatch):
    # the GPU refit (one launch per tree level) also runs on the CPU here
    from simkit.collision import bvh_build

    monkeypatch.setattr(bvh_build, "LEVELS_ON_CPU", per_level)
    tm = MESHES["torus"]
    v = np.asarray(tm.vertices, np.float32)
    pts = wp.array(v, dtype=wp.vec3, device=device)
    mesh = wp.Mesh(pts, wp.array(np.asarray(tm.faces, np.int32).ravel(), dtype=wp.int32, device=device),
                   support_winding_number=True)
    moved = (v * np.array([1.2, 0.8, 1.5], np.float32)).astype(np.float32)
    pts.assign(moved)
    mesh.refit()
    xs = query_points(tm, 80, seed=21) * np.array([1.2, 0.8, 1.5], np.float32)
    found, cps, _, _, signs = run_points(mesh, xs, METHODS["winding"], device)
    a, b, c = tri_arrays(trimesh.Trimesh(moved, tm.faces, process=False))
    for i, x in enumerate(xs.astype(float)):
        d = np.linalg.norm(closest_on_triangles(x, a, b, c) - x, axis=1).min()
        assert abs(np.linalg.norm(cps[i] - x) - d) < 1e-5
        if d > 1e-3:
            assert (signs[i] < 0) == (winding_number(x, a, b, c) > 0.5)


# ---------------------------------------------------------------------------
# Gradients


def feature_points(tm, n, seed):
    """Query points whose closest feature is, robustly, a face (inside and outside), an edge or a
    vertex (outside), so that finite differences never cross into another feature."""
    rng = np.random.default_rng(seed)
    v = np.asarray(tm.vertices, np.float64)
    f = np.asarray(tm.faces)
    e = tm.edges_unique
    groups = [v[f].mean(1) * 0.6, v[f].mean(1) * 1.3, (v[e[:, 0]] + v[e[:, 1]]) * 0.5 * 1.4, v * 1.4]
    pts = np.concatenate([g[rng.permutation(len(g))[: n // 4 + 1]] for g in groups])[:n]
    return pts.astype(np.float32)


def face_targets(tm, x, seed):
    """Ray directions from x to a point well inside the face whose centroid is nearest to x (on a convex
    mesh that face is hit first, so the hit face, u, v and normal are locally smooth)."""
    tri = np.asarray(tm.vertices)[tm.faces]
    cen = tri.mean(1)
    f = np.argmin(np.linalg.norm(cen[None] - x[:, None], axis=2), axis=1)
    w = np.random.default_rng(seed).dirichlet([4.0, 4.0, 4.0], len(x))
    return ((tri[f] * w[:, :, None]).sum(1) - x).astype(np.float32)


def test_gradients_wrt_query_point_and_ray(device):
    tm = trimesh.creation.icosphere(subdivisions=1)
    mesh = sk_mesh(tm, device)
    x = feature_points(tm, 16, seed=3)
    d = face_targets(tm, x, seed=3)
    xs = wp.array(x, dtype=wp.vec3, device=device)
    ds = wp.array(d, dtype=wp.vec3, device=device)
    out = wp.zeros(16, dtype=wp.vec3, device=device)
    nrm = wp.zeros(16, dtype=wp.vec3, device=device)
    wp.autograd.gradcheck(k_closest_points, 16, [mesh.id, xs], [out], eps=1e-3, atol=2e-3, rtol=2e-2, device=device)
    wp.autograd.gradcheck(k_ray_tuv, 16, [mesh.id, xs, ds], [out, nrm], eps=1e-3, atol=2e-3, rtol=2e-2,
                          device=device)


@pytest.mark.parametrize("method", list(METHODS))
def test_every_point_query_and_eval_is_differentiable(device, method):
    tm = trimesh.creation.icosphere(subdivisions=1)
    v = np.asarray(tm.vertices, np.float32)
    mesh = wp.Mesh(wp.array(v, dtype=wp.vec3, device=device),
                   wp.array(np.asarray(tm.faces, np.int32).ravel(), dtype=wp.int32, device=device),
                   velocities=wp.array(2.0 * v, dtype=wp.vec3, device=device), support_winding_number=True)
    x = feature_points(tm, 12, seed=1)  # 4 points of each: face inside, face outside, edge
    for pts, kern in ((x[:8], k_point), (x, k_point_position)):
        # (u, v) of a closest point on an edge depends on which of the two faces the query reports: both are
        # at the same distance, and rounding decides. Its position, distance and sign do not.
        n = len(pts)
        outs = [wp.zeros(n, dtype=int, device=device), wp.zeros(n, dtype=wp.vec3, device=device),
                wp.zeros(n, dtype=int, device=device), wp.zeros(n, dtype=wp.vec2, device=device),
                wp.zeros(n, dtype=float, device=device)]
        if kern is k_point_position:
            outs = [outs[1], outs[4]]
        wp.autograd.gradcheck(kern, n, [mesh.id, wp.array(pts, dtype=wp.vec3, device=device), METHODS[method],
                                        1.0e6], outs, eps=1e-3, atol=2e-3, rtol=2e-2, device=device)
    nf = len(tm.faces)
    uv = wp.array(np.random.default_rng(0).uniform(0, 0.5, (nf, 2)).astype(np.float32), dtype=wp.vec2, device=device)
    outs = [wp.zeros(nf, dtype=wp.vec3, device=device) for _ in range(5)] + [wp.zeros(nf, dtype=int, device=device)]
    faces = wp.array(np.arange(nf, dtype=np.int32), dtype=int, device=device)
    wp.autograd.gradcheck(k_access, nf, [mesh.id, faces, uv], outs, eps=1e-3, atol=2e-3, rtol=2e-2, device=device)


def test_gradients_wrt_vertices(device):
    tm = trimesh.creation.icosphere(subdivisions=1)
    v = np.asarray(tm.vertices, np.float32)
    pts = wp.array(v, dtype=wp.vec3, device=device, requires_grad=True)
    mesh = wp.Mesh(pts, wp.array(np.asarray(tm.faces, np.int32).ravel(), dtype=wp.int32, device=device))
    rng = np.random.default_rng(4)
    x = feature_points(tm, 40, seed=4)
    d = face_targets(tm, x, seed=4)
    args = [mesh.id, wp.array(x, dtype=wp.vec3, device=device), wp.array(d, dtype=wp.vec3, device=device),
            wp.array(rng.normal(size=x.shape).astype(np.float32), dtype=wp.vec3, device=device)]
    out = wp.zeros(1, dtype=float, device=device, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(k_vertex_loss, len(x), inputs=args, outputs=[out], device=device)
    tape.backward(grads={out: np.ones(1, np.float32)})
    grad = pts.grad.numpy().copy()
    eps, fd = 1e-3, np.zeros_like(grad)
    for i in range(len(v)):
        for k in range(3):
            vals = []
            for s in (1.0, -1.0):
                p = v.copy()
                p[i, k] += s * eps
                pts.assign(p)
                mesh.refit()
                o = wp.zeros(1, dtype=float, device=device)
                wp.launch(k_vertex_loss, len(x), inputs=args, outputs=[o], device=device)
                vals.append(float(o.numpy()[0]))
            fd[i, k] = (vals[0] - vals[1]) / (2 * eps)
    np.testing.assert_allclose(grad, fd, atol=5e-3 * max(1.0, np.abs(fd).max()), rtol=2e-2)


def test_closest_point_edge_edge(device):
    rng = np.random.default_rng(8)
    n = 64
    p1, q1, p2, q2 = (rng.normal(size=(n, 3)) for _ in range(4))
    q2[:8] = p2[:8]  # degenerate second edge
    q1[8:16] = p1[8:16] + 2.0 * (q2[8:16] - p2[8:16])  # parallel edges
    arrs = [wp.array(a, dtype=wp.vec3d, device=device) for a in (p1, q1, p2, q2)]
    out = wp.zeros(n, dtype=wp.vec3d, device=device)
    wp.launch(k_edge_edge, n, inputs=arrs, outputs=[out], device=device)
    res = out.numpy()
    s, t, dist = res[:, 0], res[:, 1], res[:, 2]
    assert ((s >= 0) & (s <= 1) & (t >= 0) & (t <= 1)).all()
    c1 = p1 + s[:, None] * (q1 - p1)
    c2 = p2 + t[:, None] * (q2 - p2)
    np.testing.assert_allclose(dist, np.linalg.norm(c1 - c2, axis=1), atol=1e-12)
    g = np.linspace(0, 1, 401)  # brute force over a fine grid of both parameters
    for i in range(n):
        a = p1[i] + g[:, None] * (q1[i] - p1[i])
        b = p2[i] + g[:, None] * (q2[i] - p2[i])
        ref = np.linalg.norm(a[:, None] - b[None], axis=2).min()
        assert dist[i] <= ref + 1e-12 and dist[i] > ref - 1e-3
    assert (s[:8] >= 0).all() and (t[:8] == 0).all()
    # float32 overload agrees
    outf = wp.zeros(n, dtype=wp.vec3, device=device)
    wp.launch(k_edge_edge_f, n, inputs=[wp.array(a.astype(np.float32), dtype=wp.vec3, device=device)
                                        for a in (p1, q1, p2, q2)], outputs=[outf], device=device)
    np.testing.assert_allclose(outf.numpy()[16:, 2], dist[16:], atol=1e-4)
    # gradients (generic, non-degenerate edges)
    sub = [wp.array(a[16:], dtype=wp.vec3d, device=device) for a in (p1, q1, p2, q2)]
    wp.autograd.gradcheck(k_edge_edge, n - 16, sub, [wp.zeros(n - 16, dtype=wp.vec3d, device=device)], eps=1e-6,
                          atol=1e-5, rtol=1e-4, device=device)


def _segment_hits_triangle(p, q, a, b, c):
    d = q - p
    e1, e2 = b - a, c - a
    h = np.cross(d, e2)
    det = e1 @ h
    if abs(det) < 1e-14:
        return False
    f = 1.0 / det
    s = p - a
    u = f * (s @ h)
    qq = np.cross(s, e1)
    v = f * (d @ qq)
    t = f * (e2 @ qq)
    return u >= 0 and v >= 0 and u + v <= 1 and 0 <= t <= 1


def test_intersect_tri_tri(device):
    rng = np.random.default_rng(9)
    n = 400
    v = rng.normal(size=(n, 3, 3))
    u = rng.normal(size=(n, 3, 3)) * 0.8 + rng.normal(size=(n, 1, 3)) * 0.6
    out = wp.zeros(n, dtype=int, device=device)
    out_f = wp.zeros(n, dtype=int, device=device)
    wp.launch(k_tri_tri, n, inputs=[wp.array(v, dtype=wp.vec3d, device=device),
                                    wp.array(u, dtype=wp.vec3d, device=device)], outputs=[out, out_f], device=device)
    ref = np.array([any(_segment_hits_triangle(x[k], x[(k + 1) % 3], *y) for x, y in ((v[i], u[i]), (u[i], v[i]))
                        for k in range(3)) for i in range(n)])
    np.testing.assert_array_equal(out.numpy() == 1, ref)
    assert (out_f.numpy() == out.numpy()).mean() > 0.99
    assert 0.1 < ref.mean() < 0.9
    # coplanar: overlapping and disjoint triangles in the plane z = 0
    tri = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0]], float)
    cases = np.array([[tri, tri + [0.2, 0.2, 0]], [tri, tri + [2.0, 0, 0]], [tri, tri * 0.2 + [0.1, 0.1, 0]]])
    outc = wp.zeros(3, dtype=int, device=device)
    wp.launch(k_tri_tri, 3, inputs=[wp.array(cases[:, 0], dtype=wp.vec3d, device=device),
                                    wp.array(cases[:, 1], dtype=wp.vec3d, device=device)],
              outputs=[outc, wp.zeros(3, dtype=int, device=device)], device=device)
    assert outc.numpy().tolist() == [1, 0, 1]


# ---------------------------------------------------------------------------
# Construction errors


def test_construction_errors(device):
    v = np.asarray(MESHES["icosphere"].vertices, np.float32)
    f = np.asarray(MESHES["icosphere"].faces, np.int32).ravel()
    pts = wp.array(v, dtype=wp.vec3, device=device)
    with pytest.raises(ValueError, match=r"index count \(7\) is not a multiple of 3"):
        wp.Mesh(pts, wp.array(f[:7], dtype=wp.int32, device=device))
    bad = f.copy()
    bad[5] = len(v)
    with pytest.raises(ValueError, match=rf"indices\[5\] = {len(v)} is out of range for {len(v)} points"):
        wp.Mesh(pts, wp.array(bad, dtype=wp.int32, device=device))
    bad[5] = -1
    with pytest.raises(ValueError, match=r"indices\[5\] = -1 is out of range"):
        wp.Mesh(pts, wp.array(bad, dtype=wp.int32, device=device))
    nanv = v.copy()
    nanv[3, 1] = np.nan
    with pytest.raises(ValueError, match=r"points\[3\] is not finite"):
        wp.Mesh(wp.array(nanv, dtype=wp.vec3, device=device), wp.array(f, dtype=wp.int32, device=device))
    with pytest.raises(TypeError, match="points must be a 1D array of vec3"):
        wp.Mesh(wp.array(v.ravel(), dtype=float, device=device), wp.array(f, dtype=wp.int32, device=device))
    with pytest.raises(ValueError, match="no faces"):
        wp.Mesh(pts, wp.array(f[:0], dtype=wp.int32, device=device))
    with pytest.raises(ValueError, match="bvh_leaf_size must be in"):
        wp.Mesh(pts, wp.array(f, dtype=wp.int32, device=device), bvh_leaf_size=16)
    with pytest.raises(ValueError, match="velocities has 3 entries"):
        wp.Mesh(pts, wp.array(f, dtype=wp.int32, device=device), velocities=wp.zeros(3, dtype=wp.vec3, device=device))


@wp.func
def face_area(mesh_id: wp.uint64, f: int):
    mesh = wp.mesh_get(mesh_id)
    a = mesh.points[mesh.indices[3 * f]]
    b = mesh.points[mesh.indices[3 * f + 1]]
    c = mesh.points[mesh.indices[3 * f + 2]]
    return 0.5 * wp.length(wp.cross(b - a, c - a))


@wp.kernel
def total_area(mesh_id: wp.uint64, out: wp.array(dtype=float)):
    wp.atomic_add(out, 0, face_area(mesh_id, wp.tid()))


def _areas_np(points, faces):
    a, b, c = (points[faces[:, k]] for k in range(3))
    return 0.5 * np.linalg.norm(np.cross(b - a, c - a), axis=1).sum()


def test_mesh_get_reads_arrays_and_passes_gradients_to_points(device):
    """wp.mesh_get(id): the mesh's arrays in kernels; the gradient of the total area reaches points.grad
    (against central differences of numpy's area, float64)."""
    pts = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1]], dtype=np.float64) + 0.1 * np.arange(12).reshape(4, 3)
    faces = np.array([[0, 1, 2], [0, 2, 3], [0, 3, 1], [1, 3, 2]])
    points = wp.array(pts.astype(np.float32), dtype=wp.vec3, device=device, requires_grad=True)
    mesh = wp.Mesh(points=points, indices=wp.array(faces.reshape(-1), dtype=wp.int32, device=device))
    out = wp.zeros(1, device=device, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(total_area, 4, inputs=[mesh.id, out], device=device)
    np.testing.assert_allclose(out.numpy()[0], _areas_np(pts, faces), rtol=1e-6)
    tape.backward(loss=out)
    fd = np.zeros_like(pts)
    for idx in np.ndindex(*pts.shape):
        plus, minus = pts.copy(), pts.copy()
        plus[idx] += 1e-6
        minus[idx] -= 1e-6
        fd[idx] = (_areas_np(plus, faces) - _areas_np(minus, faces)) / 2e-6
    np.testing.assert_allclose(points.grad.numpy(), fd, rtol=1e-4, atol=1e-5)

"""The Tape and spatial structures queried by id: a HashGrid rebuilt every step is restored for each
step's adjoint, structures stay alive until backward(), and changed build data raises TapeError."""
import contextlib
import gc

import numpy as np
import pytest

import simkit as wp


@wp.kernel
def grid_energy(grid: wp.uint64, points: wp.array(dtype=wp.vec3d), radius: wp.float64,
                out: wp.array(dtype=wp.float64)):
    # E = sum over ordered neighbour pairs of (r^2 - d^2)^2 (smooth at d = r)
    i = wp.tid()
    p = points[i]
    query = wp.hash_grid_query(grid, p, radius)
    j = int(0)
    e = wp.float64(0.0)
    while wp.hash_grid_query_next(query, j):
        if j != i:
            d2 = wp.length_sq(points[j] - p)
            if d2 < radius * radius:
                w = radius * radius - d2
                e += w * w
    wp.atomic_add(out, 0, e)


@wp.kernel
def scale_points(src: wp.array(dtype=wp.vec3d), s: wp.float64, dst: wp.array(dtype=wp.vec3d)):
    i = wp.tid()
    dst[i] = src[i] * s


@wp.kernel
def mesh_distance(mesh: wp.uint64, xs: wp.array(dtype=wp.vec3), out: wp.array(dtype=float)):
    i = wp.tid()
    q = wp.mesh_query_point_no_sign(mesh, xs[i], 1.0e6)
    if q.result:
        wp.atomic_add(out, 0, wp.length(wp.mesh_eval_position(mesh, q.face, q.u, q.v) - xs[i]))


def energy_and_grad(x, r):
    d = x[:, None] - x[None]
    d2 = (d * d).sum(-1)
    near = (d2 < r * r) & ~np.eye(len(x), dtype=bool)
    w = np.where(near, r * r - d2, 0.0)
    # dE/dx_i over both orders of each pair: 2 * sum_j 2 w (-2 d_ij)
    return (w * w).sum(), (-8.0 * w[..., None] * d).sum(1)


def two_step_gradient(device, grid, x0, r, scale):
    p0 = wp.array(x0, dtype=wp.vec3d, device=device, requires_grad=True)
    p1 = wp.zeros(len(x0), dtype=wp.vec3d, device=device, requires_grad=True)
    out = wp.zeros(1, dtype=wp.float64, device=device, requires_grad=True)
    tape = wp.Tape()
    with tape:
        grid.build(p0, r)
        wp.launch(grid_energy, len(x0), inputs=[grid.id, p0, r], outputs=[out], device=device)
        wp.launch(scale_points, len(x0), inputs=[p0, scale], outputs=[p1], device=device)
        grid.build(p1, r)  # the same grid, rebuilt from other points: step 2
        wp.launch(grid_energy, len(x0), inputs=[grid.id, p1, r], outputs=[out], device=device)
    return tape, p0, out


def test_grid_rebuilt_each_step_is_restored_for_backward(device):
    # E(x) + E(s x): the neighbour sets of the two steps differ, so the first step's adjoint is right
    # only if it runs against the first step's grid
    rng = np.random.default_rng(4)
    x0 = rng.random((120, 3)) * 1.5
    r, s = 0.3, 0.8
    grid = wp.HashGrid(8, 8, 8, device=device, dtype=wp.float64)
    tape, p0, out = two_step_gradient(device, grid, x0, r, s)
    e0, g0 = energy_and_grad(x0, r)
    e1, g1 = energy_and_grad(x0 * s, r)
    np.testing.assert_allclose(out.numpy()[0], e0 + e1, rtol=1e-12)
    tape.backward(out)
    expected = g0 + s * g1
    assert np.abs(g0).max() > 0 and np.abs(g1).max() > 0
    np.testing.assert_allclose(p0.grad.numpy(), expected, rtol=1e-10, atol=1e-12 * np.abs(expected).max())
    # central finite differences of the whole two-step loss agree too
    k, h = 7, 1e-6
    fd = np.zeros(3)
    for c in range(3):
        xp, xm = x0.copy(), x0.copy()
        xp[k, c] += h
        xm[k, c] -= h
        fd[c] = (sum(energy_and_grad(xp * m, r)[0] for m in (1, s))
                 - sum(energy_and_grad(xm * m, r)[0] for m in (1, s))) / (2 * h)
    np.testing.assert_allclose(p0.grad.numpy()[k], fd, rtol=1e-5, atol=1e-8)


def test_structures_stay_alive_until_backward(device):
    rng = np.random.default_rng(5)
    x0 = rng.random((60, 3))
    grid = wp.HashGrid(4, 4, 4, device=device, dtype=wp.float64)
    tape, p0, out = two_step_gradient(device, grid, x0, 0.35, 1.1)
    del grid
    gc.collect()
    tape.backward(out)  # the Tape holds the grid its launches queried: no dangling id
    e0, g0 = energy_and_grad(x0, 0.35)
    e1, g1 = energy_and_grad(x0 * 1.1, 0.35)
    np.testing.assert_allclose(p0.grad.numpy(), g0 + 1.1 * g1, rtol=1e-10, atol=1e-10)


def test_points_modified_after_the_query_raise(device):
    x0 = np.random.default_rng(6).random((40, 3))
    grid = wp.HashGrid(4, 4, 4, device=device, dtype=wp.float64)
    p = wp.array(x0, dtype=wp.vec3d, device=device, requires_grad=True)
    out = wp.zeros(1, dtype=wp.float64, device=device, requires_grad=True)
    grid.build(p, 0.3)  # built before the Tape
    tape = wp.Tape()
    with tape:
        wp.launch(grid_energy, 40, inputs=[grid.id, p, 0.3], outputs=[out], device=device)
    other = wp.array(x0 * 2.0, dtype=wp.vec3d, device=device)
    grid.build(other, 0.3)  # rebuilt outside the Tape: backward cannot know the grid it queried
    with pytest.raises(wp.TapeError, match=r"HashGrid .* queried by kernel 'grid_energy'.*rebuilt"):
        tape.backward(out)
    grid.build(p, 0.3)
    p.assign(x0 * 3.0)  # the grid's own points changed in place
    with pytest.raises(wp.TapeError, match="HashGrid .*built from an array .* that was modified"):
        tape.backward(out)


def test_mesh_refit_after_the_query_raises(device):
    pts = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [1, 1, 0]], dtype=np.float32)
    mp = wp.array(pts, dtype=wp.vec3, device=device)
    mesh = wp.Mesh(mp, wp.array([0, 1, 2, 1, 3, 2], dtype=wp.int32, device=device))
    xs = wp.array([[0.25, 0.25, 0.5], [0.7, 0.6, -0.2]], dtype=wp.vec3, device=device, requires_grad=True)
    out = wp.zeros(1, dtype=float, device=device, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(mesh_distance, 2, inputs=[mesh.id, xs], outputs=[out], device=device)
    np.testing.assert_allclose(out.numpy()[0], 0.7, rtol=1e-6)
    tape.backward(out)  # unchanged mesh: d(sum |z|)/dz = sign(z)
    np.testing.assert_allclose(xs.grad.numpy()[:, 2], [1.0, -1.0], atol=1e-6)
    mp.assign(pts + np.float32([0, 0, 0.1]))
    mesh.refit()
    with pytest.raises(wp.TapeError, match="Mesh .* queried by kernel 'mesh_distance'"):
        tape.backward(out)


# ---------------------------------------------------------------------------------------------------------------
# A kinematic Mesh: its points are moved in place (same array) and refit every step inside the Tape.

@wp.kernel
def advance_particles(x: wp.array(dtype=wp.vec3d), v: wp.array(dtype=wp.vec3d), dt: wp.float64,
                      y: wp.array(dtype=wp.vec3d)):
    i = wp.tid()
    y[i] = x[i] + v[i] * dt


@wp.kernel
def mesh_sq_distance(mesh: wp.uint64, x: wp.array(dtype=wp.vec3d), loss: wp.array(dtype=wp.float64)):
    i = wp.tid()
    p = wp.vec3(x[i])
    q = wp.mesh_query_point_no_sign(mesh, p, 1.0e6)
    if q.result:
        d = wp.mesh_eval_position(mesh, q.face, q.u, q.v) - p
        wp.atomic_add(loss, 0, wp.float64(wp.dot(d, d)))


BOX_FACES = np.array([[0, 2, 1], [0, 3, 2], [4, 5, 6], [4, 6, 7], [0, 1, 5], [0, 5, 4],
                      [2, 3, 7], [2, 7, 6], [1, 2, 6], [1, 6, 5], [0, 4, 7], [0, 7, 3]], dtype=np.int32)
BOX_CORNERS = np.array([[0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0], [0, 0, 1], [1, 0, 1], [1, 1, 1], [0, 1, 1]],
                       dtype=np.float64) - 0.5
STEPS, DT = 3, 0.5


def box_pose(k):
    a = 0.06 * k
    rot = np.array([[np.cos(a), -np.sin(a), 0], [np.sin(a), np.cos(a), 0], [0, 0, 1]])
    return rot, np.array([0.04, -0.03, 0.05]) * k


def box_at(k):
    """The collider's vertices at step k: the unit box turned about z and shifted (float32, like Mesh points)."""
    rot, shift = box_pose(k)
    return (BOX_CORNERS @ rot.T + shift).astype(np.float32)


def closest_on_box(x, k):
    rot, shift = box_pose(k)
    return np.clip((x - shift) @ rot, -0.5, 0.5) @ rot.T + shift


def particles_near_box(n_per_face=4, seed=7):
    """Points outside the box, over the middle of its faces (away from edges: the distance is smooth there)."""
    rng = np.random.default_rng(seed)
    out = []
    for axis in range(3):
        for side in (-1.0, 1.0):
            p = rng.uniform(-0.2, 0.2, (n_per_face, 3))
            p[:, axis] = side * rng.uniform(0.65, 0.9, n_per_face)
            out.append(p)
    return np.concatenate(out)


def box_mesh(device, requires_grad=False, velocities=False, k=0):
    pts = wp.array(box_at(k), dtype=wp.vec3, device=device, requires_grad=requires_grad)
    vel = wp.zeros(8, dtype=wp.vec3, device=device) if velocities else None
    return wp.Mesh(pts, wp.array(BOX_FACES.ravel(), dtype=wp.int32, device=device), velocities=vel)


def kinematic_rollout(device, x0, v, mesh=None, tape=None):
    """sum over steps k and particles of the squared distance to the box at step k; the particles advance by
    v * DT per step (each step's own array). ``mesh``: one Mesh moved in place and refit every step (inside
    ``tape`` when given); None: a new Mesh per step. Returns (loss, x0 array, the meshes used)."""
    xs = [wp.array(x0, dtype=wp.vec3d, device=device, requires_grad=True)]
    va = wp.array(v, dtype=wp.vec3d, device=device)
    loss = wp.zeros(1, dtype=wp.float64, device=device, requires_grad=True)
    used = []
    with tape if tape is not None else contextlib.nullcontext():
        for k in range(STEPS):
            if mesh is not None:
                mesh.points.assign(box_at(k))  # the same array, written in place (not recorded)
                if mesh.velocities is not None:
                    mesh.velocities.assign(np.full((8, 3), float(k), dtype=np.float32))
                mesh.refit()
                m = mesh
            else:
                m = box_mesh(device, requires_grad=True, k=k)  # its own points array
                used.append(m)
            wp.launch(mesh_sq_distance, len(x0), inputs=[m.id, xs[-1]], outputs=[loss], device=device)
            xs.append(wp.zeros(len(x0), dtype=wp.vec3d, device=device, requires_grad=True))
            wp.launch(advance_particles, len(x0), inputs=[xs[-2], va, DT], outputs=[xs[-1]], device=device)
    return loss, xs[0], used


def test_kinematic_mesh_moved_in_place_is_restored_for_backward(device):
    x0 = particles_near_box()
    v = np.random.default_rng(8).uniform(-0.08, 0.08, x0.shape)
    mesh = box_mesh(device, requires_grad=True, velocities=True)
    tape = wp.Tape()
    loss, xa, _ = kinematic_rollout(device, x0, v, mesh, tape)
    tape.backward(loss)
    g = xa.grad.numpy()
    # the same rollout with a new Mesh per step
    tape2 = wp.Tape()
    loss2, xb, meshes = kinematic_rollout(device, x0, v, None, tape2)
    tape2.backward(loss2)
    np.testing.assert_allclose(loss.numpy()[0], loss2.numpy()[0], rtol=1e-12)
    np.testing.assert_allclose(g, xb.grad.numpy(), rtol=1e-6, atol=1e-9)
    # the vertex gradients of all steps add up in the one points.grad (the restores leave it alone)
    vertex_grad = sum(m.points.grad.numpy() for m in meshes)
    assert np.abs(vertex_grad).max() > 0.1
    np.testing.assert_allclose(mesh.points.grad.numpy(), vertex_grad, rtol=1e-5, atol=1e-6)
    # after backward the mesh is as the first recorded query saw it (step 0), velocities included
    np.testing.assert_array_equal(mesh.points.numpy(), box_at(0))
    np.testing.assert_array_equal(mesh.velocities.numpy(), np.zeros((8, 3), np.float32))

    # d loss / d x0 = sum_k 2 (x_k - closest point of box k): each step's own box, not the last one
    def forward(x):
        return kinematic_rollout(device, x, v, mesh)[0].numpy()[0]

    expected = sum(2.0 * (x0 + k * DT * v - closest_on_box(x0 + k * DT * v, k)) for k in range(STEPS))
    np.testing.assert_allclose(g, expected, rtol=1e-4, atol=1e-5)
    last_box_only = sum(2.0 * (x0 + k * DT * v - closest_on_box(x0 + k * DT * v, STEPS - 1)) for k in range(STEPS))
    assert np.abs(last_box_only - expected).max() > 0.05  # (what the adjoints against the last box would give)
    h = 1e-3
    for u in np.random.default_rng(9).standard_normal((3,) + x0.shape):
        fd = (forward(x0 + h * u) - forward(x0 - h * u)) / (2 * h)
        np.testing.assert_allclose((g * u).sum(), fd, rtol=1e-4, atol=1e-5)


def _one_query(device, mesh, x):
    loss = wp.zeros(1, dtype=wp.float64, device=device, requires_grad=True)
    wp.launch(mesh_sq_distance, len(x), inputs=[mesh.id, x], outputs=[loss], device=device)
    return loss


def test_kinematic_mesh_points_moved_without_refit_raise(device):
    x0 = particles_near_box(1)
    mesh = box_mesh(device)
    x = wp.array(x0, dtype=wp.vec3d, device=device, requires_grad=True)
    # queried at step 1 (after an in-tape refit), then moved without a refit: backward would run the
    # adjoint against points the query never saw
    tape = wp.Tape()
    with tape:
        mesh.points.assign(box_at(1))
        mesh.refit()
        loss = _one_query(device, mesh, x)
        mesh.points.assign(box_at(2))
    expected = 2.0 * (x0 - closest_on_box(x0, 1))
    np.testing.assert_allclose(loss.numpy()[0], (expected ** 2).sum() / 4.0, rtol=1e-5)
    with pytest.raises(wp.TapeError, match=r"Mesh .* 'mesh_sq_distance'.* built from an array \(source 0\) "
                                           r"that was modified"):
        tape.backward(loss)
    assert not x.grad.numpy().any()  # raised before any adjoint ran
    mesh.refit()  # refit now (outside the Tape): the query's geometry is gone
    with pytest.raises(wp.TapeError, match="Mesh .*refit from other data"):
        tape.backward(loss)
    # a query recorded after the points moved (no refit between) ran on stale geometry: a later refit inside
    # the Tape restores the refit the query names, which does not make that query right
    tape = wp.Tape()
    with tape:
        mesh.points.assign(box_at(0))
        mesh.refit()
        first = _one_query(device, mesh, x)  # right
        mesh.points.assign(box_at(1))
        stale = _one_query(device, mesh, x)  # boxes of step 0, points of step 1
        mesh.refit()
    with pytest.raises(wp.TapeError, match=r"Mesh .* built from an array \(source 0\) that was modified"):
        tape.backward(stale)
    assert not x.grad.numpy().any()
    # without the stale query the same recording differentiates (the refit inside the Tape is undone)
    tape.ops = [op for op in tape.ops if not any(a is stale for a in op.arrays())]
    tape.backward(first)
    np.testing.assert_allclose(x.grad.numpy(), 2.0 * (x0 - closest_on_box(x0, 0)), rtol=1e-4, atol=1e-6)
    np.testing.assert_array_equal(mesh.points.numpy(), box_at(0))


def test_kinematic_mesh_refit_outside_the_tape_raises(device):
    x0 = particles_near_box(1)
    v = np.zeros_like(x0)
    mesh = box_mesh(device)
    tape = wp.Tape()
    loss, x, _ = kinematic_rollout(device, x0, v, mesh, tape)
    mesh.points.assign(box_at(5))
    mesh.refit()  # outside the Tape: the last step's geometry cannot be restored
    with pytest.raises(wp.TapeError, match=r"Mesh .* 'mesh_sq_distance'.*refit from other data \(outside the Tape\)"):
        tape.backward(loss)
    assert not x.grad.numpy().any()
    # recorded again: differentiates; then a second backward() over the same recording raises, since backward
    # left the mesh as the first step saw it
    tape = wp.Tape()
    loss, x, _ = kinematic_rollout(device, x0, v, mesh, tape)
    tape.backward(loss)
    expected = sum(2.0 * (x0 - closest_on_box(x0, k)) for k in range(STEPS))
    np.testing.assert_allclose(x.grad.numpy(), expected, rtol=1e-4, atol=1e-5)
    tape.zero()
    with pytest.raises(wp.TapeError, match="Mesh .*refit from other data"):
        tape.backward(loss)
    assert not x.grad.numpy().any()

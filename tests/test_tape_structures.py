"""The Tape and spatial structures queried by id: a HashGrid rebuilt every step is restored for each
step's adjoint, structures stay alive until backward(), and changed build data raises TapeError."""
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

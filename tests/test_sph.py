"""SPHSolver: densities and forces against a brute-force numpy implementation (mirror images
included), still water in a closed box against the infinite lattice, momentum conservation,
hydrostatic pressure against rho g depth, and gradients of a rollout against central finite
differences."""
import itertools
import math

import numpy as np
import pytest

import simkit as sk

f64 = sk.float64
H_SPACING = 0.02            # particle spacing [m]; h = 2 spacings (the solver's default)
BOX = ((0.0, 0.0, 0.0), (0.12, 0.3, 0.1))


@sk.kernel
def weighted_sum(q: sk.array(dtype=sk.vec3d), w: sk.array(dtype=sk.vec3d), loss: sk.array(dtype=sk.float64)):
    i = sk.tid()
    sk.atomic_add(loss, 0, sk.dot(q[i], w[i]))


# ----------------------------------------------------------------------------- numpy reference

def box_walls(bounds):
    normals, offsets = [], []
    for k in range(3):
        e = np.eye(3)[k]
        normals += [e, -e]
        offsets += [bounds[0][k], -bounds[1][k]]
    return np.array(normals), np.array(offsets)


def images(xi, xj, vj, normals, offsets, h):
    """xj's (position, velocity) mirror images in every set of at most 3 walls closer than h to xi,
    reflected in increasing wall order (as the solver does)."""
    near = [k for k in range(len(normals)) if xi @ normals[k] - offsets[k] < h]
    out = []
    for size in (1, 2, 3):
        for walls in itertools.combinations(near, size):
            y, v = xj.copy(), vj.copy()
            for k in walls:
                n = normals[k]
                y = y - 2.0 * abs(y @ n - offsets[k]) * n
                v = v - 2.0 * (v @ n) * n
            out.append((y, v))
    return out


def reference(x, v, m, normals, offsets, h, rho0, c, mu):
    """Brute-force density, pressure and SPH force (pressure + viscosity, no contacts)."""
    poly6, spiky = 315.0 / (64.0 * math.pi * h ** 9), 45.0 / (math.pi * h ** 6)
    n = len(x)
    W = lambda d: poly6 * max(h * h - d @ d, 0.0) ** 3          # noqa: E731
    rho = np.zeros(n)
    for i, j in itertools.product(range(n), range(n)):
        rho[i] += m[j] * (W(x[i] - x[j]) + sum(W(x[i] - y) for y, _ in images(x[i], x[j], v[j], normals, offsets, h)))
    p = np.maximum(rho0 * c * c / 7.0 * ((rho / rho0) ** 7 - 1.0), 0.0)
    f = np.zeros((n, 3))
    for i, j in itertools.product(range(n), range(n)):
        others = ([] if i == j else [(x[j], v[j])]) + images(x[i], x[j], v[j], normals, offsets, h)
        cp = m[i] * m[j] * spiky * (p[i] / rho[i] ** 2 + p[j] / rho[j] ** 2)
        cv = m[i] * m[j] * spiky * mu / (rho[i] * rho[j])
        for y, vy in others:
            d = x[i] - y
            r = np.linalg.norm(d)
            if 0.0 < r < h:
                f[i] += cp * (h - r) ** 2 / r * d + cv * (h - r) * (vy - v[i])
    return rho, p, f


def fluid(device, *, dims=(3, 3, 3), pos=(0.015, 0.012, 0.013), gravity=-9.81, jitter=0.002, seed=3,
          requires_grad=False, ground=False):
    b = sk.ModelBuilder(gravity=gravity)
    b.add_fluid_block(pos=pos, dim_x=dims[0], dim_y=dims[1], dim_z=dims[2], spacing=H_SPACING, jitter=jitter,
                      seed=seed)
    if ground:
        b.add_ground_plane()
    return b.finalize(device=device, dtype=f64, requires_grad=requires_grad)


def one_step(model, solver, q, qd, dt=1.0e-4):
    s0, s1 = model.state(), model.state()
    s0.particle_q.assign(q)
    s0.particle_qd.assign(qd)
    solver.step(model, s0, s1, None, dt)
    return s1


# ----------------------------------------------------------------------------- tests

@pytest.mark.parametrize("bounds", [BOX, None])
def test_density_pressure_and_forces_match_numpy(device, bounds):
    # a jittered block in a box's corner (mirror images in one, two and three walls) with random
    # velocities: densities, pressures and accelerations against the brute-force reference
    model = fluid(device)
    q = model.particle_q.numpy() * 0.9 + 0.002               # compressed: positive pressures
    qd = np.random.default_rng(0).normal(scale=0.3, size=q.shape)
    solver = sk.SPHSolver(bounds=bounds, viscosity=2.0)
    dt = 1.0e-4
    out = one_step(model, solver, q, qd, dt)
    m = model.particle_mass.numpy()
    normals, offsets = box_walls(bounds) if bounds else (np.zeros((0, 3)), np.zeros(0))
    rho, p, f = reference(q, qd, m, normals, offsets, solver.support(model), 1000.0, 20.0, 2.0)
    np.testing.assert_allclose(solver.density.numpy(), rho, rtol=1e-12)
    np.testing.assert_allclose(solver.pressure.numpy(), p, rtol=1e-10, atol=1e-9)
    accel = (out.particle_qd.numpy() - qd) / dt - np.array([0.0, -9.81, 0.0])
    np.testing.assert_allclose(accel, f / m[:, None], rtol=1e-8, atol=1e-6)
    assert p.max() > 100.0 and np.abs(f).max() > 1e-3      # pressure and forces are not trivially zero
    if bounds:  # the walls count: the particle in the corner sees seven images of itself and others
        alone = reference(q, qd, m, np.zeros((0, 3)), np.zeros(0), solver.support(model), 1000.0, 20.0, 2.0)[0]
        assert rho[0] > 1.2 * alone[0]


def test_still_water_in_a_closed_box_stays_at_rest(device):
    # a lattice that fills the box: the mirrors make the walls invisible, every particle (faces, edges,
    # corners alike) has the density of the infinite lattice and feels no force
    n = (4, 4, 5)
    s = H_SPACING
    model = fluid(device, dims=n, pos=(s / 2, s / 2, s / 2), gravity=0.0, jitter=0.0)
    solver = sk.SPHSolver(bounds=((0.0, 0.0, 0.0), tuple(k * s for k in n)), sound_speed=10.0)
    h = solver.support(model)
    r = np.arange(-4, 5) * s
    d2 = (r[:, None, None] ** 2 + r[None, :, None] ** 2 + r[None, None, :] ** 2).ravel()
    lattice = 1000.0 * s ** 3 * 315.0 / (64.0 * math.pi * h ** 9) * (np.maximum(h * h - d2, 0.0) ** 3).sum()
    q = model.particle_q.numpy()
    out = one_step(model, solver, q, np.zeros_like(q))
    np.testing.assert_allclose(solver.density.numpy(), lattice, rtol=1e-12)
    assert solver.pressure.numpy().min() > 100.0            # compressed by 1%, so every force is pushing
    np.testing.assert_allclose(out.particle_qd.numpy(), 0.0, atol=1e-12)


def test_a_ground_plane_in_a_box_face_mirrors_once(device):
    q_model = fluid(device)
    q, qd = q_model.particle_q.numpy(), np.zeros((27, 3))
    rho = []
    for ground in (False, True):
        model = fluid(device, ground=ground)
        solver = sk.SPHSolver(bounds=BOX)
        one_step(model, solver, q, qd)
        rho.append(solver.density.numpy())
    np.testing.assert_array_equal(rho[0], rho[1])


def test_momentum_is_conserved_and_energy_dissipated_in_free_space(device):
    model = fluid(device, dims=(4, 4, 4), gravity=0.0, jitter=0.004)
    q = model.particle_q.numpy() * 0.95                      # compressed: it expands
    qd = np.random.default_rng(1).normal(scale=0.2, size=q.shape)
    m = model.particle_mass.numpy()[:, None]
    solver = sk.SPHSolver()
    s0, s1 = model.state(), model.state()
    s0.particle_q.assign(q)
    s0.particle_qd.assign(qd)
    dt = solver.max_time_step(model, max_speed=2.0)
    B, r0 = solver.stiffness, solver.rest_density

    def energy(v, rho):     # kinetic + Tait internal energy, int_r0^rho p / rho^2
        e = np.where(rho > r0, B * (rho ** 6 / (6 * r0 ** 7) + 1 / rho - 7 / (6 * r0)), 0.0)
        return float((0.5 * m[:, 0] * (v ** 2).sum(1)).sum() + (m[:, 0] * e).sum())

    energies = []
    for _ in range(150):
        solver.step(model, s0, s1, None, dt)
        energies.append(energy(s0.particle_qd.numpy(), solver.density.numpy()))
        s0, s1 = s1, s0
    momentum = (m * s0.particle_qd.numpy()).sum(0)
    np.testing.assert_allclose(momentum, (m * qd).sum(0), rtol=0, atol=1e-13)
    assert np.abs(s0.particle_q.numpy() - q).max() > 0.01     # it moved
    assert energies[-1] < energies[0]


def test_a_settled_tank_has_hydrostatic_pressure():
    # float32 on the CPU (the slowest test here, ~3 s): a 6 x 10 x 6 column settles; its pressure,
    # averaged over the last 400 steps, grows with depth as rho0 g (within 15%: the spiky gradient
    # on a two-spacing support underestimates pressure gradients by ~5%)
    nx, ny, s, g = 6, 10, H_SPACING, 9.81
    b = sk.ModelBuilder()
    b.add_fluid_block(pos=(s / 2, s / 2, s / 2), dim_x=nx, dim_y=ny, dim_z=nx, spacing=s)
    model = b.finalize(device="cpu")
    solver = sk.SPHSolver(bounds=((0.0, 0.0, 0.0), (nx * s, 1.0, nx * s)))
    dt = solver.max_time_step(model, max_speed=1.0)
    s0, s1 = model.state(), model.state()
    p_sum, y_sum, avg = 0.0, 0.0, 400
    for k in range(1600):
        solver.step(model, s0, s1, None, dt)
        if k >= 1600 - avg:
            p_sum = p_sum + solver.pressure.numpy()
            y_sum = y_sum + s0.particle_q.numpy()[:, 1]
        s0, s1 = s1, s0
    p, y = p_sum / avg, y_sum / avg
    assert np.sqrt((s0.particle_qd.numpy() ** 2).sum(1).mean()) < 0.03   # settled (up to sloshing)
    surface = y.max() + s / 2
    assert abs(surface - ny * s) < 0.1 * ny * s
    below = y < surface - 2 * s              # pressure is clamped at 0 near the free surface
    slope, p0 = np.polyfit(y[below], p[below], 1)
    assert -slope == pytest.approx(1000.0 * g, rel=0.15)
    assert p0 == pytest.approx(1000.0 * g * surface, rel=0.15)
    np.testing.assert_allclose(solver.density.numpy()[below], 1000.0, rtol=0.03)   # weakly compressible


def test_a_lone_particle_rests_on_the_ground(device):
    b = sk.ModelBuilder()
    b.add_fluid_block(pos=(0.0, 0.1, 0.0), dim_x=1, dim_y=1, dim_z=1, spacing=H_SPACING)
    b.add_ground_plane()
    model = b.finalize(device=device, dtype=f64)
    solver = sk.SPHSolver(wall_kd=0.05)
    dt = solver.max_time_step(model, max_speed=2.0)
    s0, s1 = model.state(), model.state()
    for _ in range(3000):
        solver.step(model, s0, s1, None, dt)
        s0, s1 = s1, s0
    # alone it has less than rest density (no pressure): the wall's penalty contact holds it
    m, r = 1000.0 * H_SPACING ** 3, H_SPACING / 2
    assert solver.pressure.numpy()[0] == 0.0
    np.testing.assert_allclose(s0.particle_q.numpy()[0], [0.0, r - m * 9.81 / solver.wall_ke, 0.0], atol=1e-6)


# ----------------------------------------------------------------------------- gradients

def rollout(device, q0, qd0, steps, tape=None):
    model = fluid(device, dims=(2, 2, 2), requires_grad=True)
    solver = sk.SPHSolver(bounds=BOX)
    dt = 5.0e-4
    start = model.state()
    start.particle_q.assign(q0)
    start.particle_qd.assign(qd0)
    loss = sk.zeros(1, dtype=f64, requires_grad=True, device=device)
    w = sk.array(np.random.default_rng(2).normal(size=(8, 3)), dtype=sk.vec3d, device=device)
    with tape if tape is not None else sk.Tape():
        state = start
        for k in range(steps):
            out = model.state()
            solver.step(model, state, out, None, dt)
            state = out
            if k == 0:
                first_pressure = solver.pressure.numpy()
        sk.launch(weighted_sum, 8, inputs=[state.particle_q, w], outputs=[loss], device=device)
    return loss, start, first_pressure


def test_rollout_gradients_match_finite_differences(device):
    # 8 particles in a box corner (mirror images in three walls), under pressure: d loss / d q0, qd0
    q0 = fluid(device, dims=(2, 2, 2)).particle_q.numpy()
    q0 = (q0 - q0.mean(0)) * 0.5 + 0.02                         # compressed: positive pressures
    qd0 = np.random.default_rng(4).normal(scale=0.1, size=q0.shape)
    steps = 12
    tape = sk.Tape()
    loss, start, pressure = rollout(device, q0, qd0, steps, tape)
    assert pressure.min() > 1.0e4
    tape.backward(loss=loss)
    g_q, g_v = start.particle_q.grad.numpy(), start.particle_qd.grad.numpy()
    eps = 1.0e-6
    for k, d in enumerate(np.random.default_rng(5).normal(size=(4,) + q0.shape)):
        dq, dv = (d, 0.0 * d) if k % 2 == 0 else (0.0 * d, d)
        fd = (rollout(device, q0 + eps * dq, qd0 + eps * dv, steps)[0].numpy()[0]
              - rollout(device, q0 - eps * dq, qd0 - eps * dv, steps)[0].numpy()[0]) / (2 * eps)
        np.testing.assert_allclose(np.sum(g_q * dq) + np.sum(g_v * dv), fd, rtol=1e-6, atol=1e-9)
    assert np.abs(g_q).max() > 0.5


# ----------------------------------------------------------------------------- errors

@pytest.mark.parametrize("kwargs,match", [
    (dict(bounds=((0, 0, 0), (1, -1, 1))), "upper > lower"),
    (dict(bounds=((0, 0), (1, 1))), "3-vectors"),
    (dict(rest_density=0.0), "rest_density"),
    (dict(sound_speed=float("nan")), "sound_speed"),
    (dict(viscosity=-1.0), "viscosity"),
    (dict(smoothing_length=-0.1), "smoothing_length"),
])
def test_bad_options_name_the_option(kwargs, match):
    with pytest.raises(ValueError, match=match):
        sk.SPHSolver(**kwargs)


def test_springs_and_radius_less_particles_are_rejected():
    b = sk.ModelBuilder()
    b.add_particle((0.0, 0.0, 0.0), (0.0, 0.0, 0.0), 1.0, radius=0.01)
    b.add_particle((0.1, 0.0, 0.0), (0.0, 0.0, 0.0), 1.0, radius=0.01)
    b.add_spring(0, 1, 10.0, 0.0)
    model = b.finalize(device="cpu")
    with pytest.raises(ValueError, match="1 springs"):
        sk.SPHSolver().step(model, model.state(), model.state(), None, 1e-3)
    b = sk.ModelBuilder()
    b.add_particle((0.0, 0.0, 0.0), (0.0, 0.0, 0.0), 1.0, radius=0.0)
    with pytest.raises(ValueError, match="smoothing_length"):
        sk.SPHSolver().support(b.finalize(device="cpu"))
    with pytest.raises(ValueError, match="spacing"):
        sk.ModelBuilder().add_fluid_block(pos=(0, 0, 0), dim_x=1, dim_y=1, dim_z=1, spacing=0.0)


def test_walls_closer_than_two_smoothing_lengths_are_rejected():
    model = fluid("cpu")
    with pytest.raises(ValueError, match=r"-y face and \+y face are 0.06 m apart"):
        sk.SPHSolver(bounds=((0.0, 0.0, 0.0), (0.3, 0.06, 0.3))).planes(model)
    b = sk.ModelBuilder()
    b.add_fluid_block(pos=(0.0, 0.1, 0.0), dim_x=2, dim_y=2, dim_z=2, spacing=H_SPACING)
    b.add_ground_plane(height=0.03)
    with pytest.raises(ValueError, match="-y face and ground"):
        sk.SPHSolver(bounds=((-1.0, 0.0, -1.0), (1.0, 1.0, 1.0))).planes(b.finalize(device="cpu"))

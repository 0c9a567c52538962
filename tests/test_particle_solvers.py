"""Particle solvers against analytic solutions and finite differences: free fall, spring frequency,
ground and particle contact, cloth on a sphere mesh, XPBD convergence, step gradients (float64)."""
import math

import numpy as np
import pytest

import simkit as sk

f64 = sk.float64


def euler():
    return sk.SemiImplicitEulerSolver()


def xpbd(iterations=10):
    return sk.XPBDSolver(iterations=iterations)


SOLVERS = {"euler": euler, "xpbd": xpbd}


def simulate(model, solver, steps, dt, control=None):
    s0, s1 = model.state(), model.state()
    for _ in range(steps):
        solver.step(model, s0, s1, control, dt)
        s0, s1 = s1, s0
    return s0


@sk.kernel
def weighted_sum(x: sk.array(dtype=sk.vec3d), w: sk.array(dtype=sk.vec3d), loss: sk.array(dtype=f64)):
    i = sk.tid()
    sk.atomic_add(loss, 0, sk.dot(x[i], w[i]))


def icosphere(radius, subdivisions):
    t = (1.0 + 5 ** 0.5) / 2.0
    v = [(-1, t, 0), (1, t, 0), (-1, -t, 0), (1, -t, 0), (0, -1, t), (0, 1, t), (0, -1, -t), (0, 1, -t),
         (t, 0, -1), (t, 0, 1), (-t, 0, -1), (-t, 0, 1)]
    f = [(0, 11, 5), (0, 5, 1), (0, 1, 7), (0, 7, 10), (0, 10, 11), (1, 5, 9), (5, 11, 4), (11, 10, 2),
         (10, 7, 6), (7, 1, 8), (3, 9, 4), (3, 4, 2), (3, 2, 6), (3, 6, 8), (3, 8, 9), (4, 9, 5), (2, 4, 11),
         (6, 2, 10), (8, 6, 7), (9, 8, 1)]
    verts = [np.array(p, dtype=np.float64) / np.linalg.norm(p) for p in v]
    for _ in range(subdivisions):
        cache, faces = {}, []

        def mid(a, b):
            key = (min(a, b), max(a, b))
            if key not in cache:
                p = verts[a] + verts[b]
                verts.append(p / np.linalg.norm(p))
                cache[key] = len(verts) - 1
            return cache[key]

        for a, b, c in f:
            ab, bc, ca = mid(a, b), mid(b, c), mid(c, a)
            faces += [(a, ab, ca), (b, bc, ab), (c, ca, bc), (ab, bc, ca)]
        f = faces
    return np.array(verts) * radius, np.array(f, dtype=np.int32)


# ----------------------------------------------------------------------------- builder and model

def test_builder_and_model_arrays(device):
    b = sk.ModelBuilder(gravity=-10.0)
    cloth = b.add_cloth_grid(pos=(0.0, 1.0, 0.0), rot=(0.0, 0.0, 0.0, 1.0), vel=(0.0, 0.0, 0.0), dim_x=3, dim_y=2,
                             cell_x=0.1, cell_y=0.2, mass=0.1, fix_left=True, add_springs=True, edge_ke=0.0)
    assert len(cloth) == 12
    grid = b.add_particle_grid(pos=(0.0, 2.0, 0.0), dim_x=2, dim_y=2, dim_z=2, cell_x=0.3, cell_y=0.3, cell_z=0.3,
                               mass=1.0, radius_mean=0.05)
    assert len(grid) == 8
    b.add_ground_plane(height=-0.5, ke=1e4)
    model = b.finalize(device=device)
    assert (model.particle_count, model.tri_count) == (20, 12)
    assert model.spring_count == 3 * 3 + 4 * 2 + 2 * 6  # horizontal, vertical, two diagonals per cell
    assert model.gravity == (0.0, -10.0, 0.0)
    mass = model.particle_mass.numpy()
    np.testing.assert_array_equal(mass[[0, 4, 8]], 0.0)  # fix_left
    np.testing.assert_array_equal(model.particle_inv_mass.numpy()[[1, 12]], [10.0, 1.0])
    np.testing.assert_allclose(model.tri_areas.numpy(), 0.01)
    np.testing.assert_allclose(model.spring_rest_length.numpy()[:2], [0.1, 0.2], rtol=1e-6)
    # the rest pose maps the rest edges to an orthonormal frame: |F u| = 1 for unit rest vectors
    pose = model.tri_poses.numpy()[0]
    q = model.particle_q.numpy()
    i, j, k = model.tri_indices.numpy()[0]
    f = np.stack([q[j] - q[i], q[k] - q[i]], axis=1) @ pose
    np.testing.assert_allclose(f.T @ f, np.eye(2), atol=1e-5)
    state = model.state()
    np.testing.assert_array_equal(state.particle_q.numpy(), q)
    assert not state.particle_f.numpy().any() and not state.requires_grad
    assert model.control().spring_activation.shape == (model.spring_count,)
    with pytest.raises(ValueError, match="tri_ka must be > 0"):
        b.add_triangle(0, 1, 5, tri_ke=10.0, tri_ka=0.0)
    with pytest.raises(IndexError):
        b.add_spring(0, 99, 1.0, 0.0)


# ----------------------------------------------------------------------------- analytic trajectories

@pytest.mark.parametrize("name", SOLVERS)
def test_free_fall_matches_semi_implicit_euler_formula(device, name):
    b = sk.ModelBuilder()
    b.add_particle((0.1, 2.0, -0.3), (0.5, 1.0, 0.0), 1.0)
    b.add_particle((0.0, 0.0, 0.0), (0.0, 1.0, 0.0), 0.0)  # kinematic: keeps its velocity
    model = b.finalize(device=device, dtype=f64)
    dt, n = 1.0e-2, 50
    state = simulate(model, SOLVERS[name](), n, dt)
    g = np.array(model.gravity)
    # v_k = v0 + k g dt, x_n = x0 + dt sum_{k=1..n} v_k
    expect = np.array([0.1, 2.0, -0.3]) + n * dt * np.array([0.5, 1.0, 0.0]) + g * dt * dt * n * (n + 1) / 2
    np.testing.assert_allclose(state.particle_q.numpy()[0], expect, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(state.particle_qd.numpy()[0], [0.5, 1.0, 0.0] + n * dt * g, atol=1e-9)
    np.testing.assert_allclose(state.particle_q.numpy()[1], [0.0, n * dt, 0.0], atol=1e-9)


@pytest.mark.parametrize("name", SOLVERS)
def test_external_forces_and_damping(device, name):
    # a = F / m - c v from rest: v_k = (1 - c dt) v_{k-1} + a dt, a geometric series
    b = sk.ModelBuilder(gravity=0.0)
    b.add_particle((0.0, 0.0, 0.0), (0.0, 0.0, 0.0), 2.0)
    b.particle_damping = 0.5
    model = b.finalize(device=device, dtype=f64)
    solver = SOLVERS[name]()
    s0, s1 = model.state(), model.state()
    for s in (s0, s1):
        s.particle_f.assign(np.array([[4.0, 0.0, -2.0]]))
    dt, n = 1.0e-2, 40
    for _ in range(n):
        solver.step(model, s0, s1, None, dt)
        s0, s1 = s1, s0
    a, decay = np.array([2.0, 0.0, -1.0]), 1.0 - 0.5 * dt
    v = a * dt * (1.0 - decay ** n) / (1.0 - decay)
    np.testing.assert_allclose(s0.particle_qd.numpy()[0], v, rtol=1e-9)
    s0.clear_forces()
    assert not s0.particle_f.numpy().any()


def oscillation_period(xs, dt):
    s = np.sign(xs - xs.mean())
    up = np.nonzero((s[:-1] < 0) & (s[1:] >= 0))[0]
    # interpolate the crossing times
    t = [(k + (0 - (xs[k] - xs.mean())) / ((xs[k + 1] - xs[k]))) * dt for k in up]
    return np.diff(t).mean()


@pytest.mark.parametrize("name", SOLVERS)
def test_spring_oscillates_at_analytic_frequency(device, name):
    k, m, rest = 40.0, 0.1, 0.5
    b = sk.ModelBuilder(gravity=0.0)
    b.add_particle((0.0, 0.0, 0.0), (0.0, 0.0, 0.0), 0.0)  # anchor
    b.add_particle((rest, 0.0, 0.0), (0.0, 0.0, 0.0), m)
    b.add_spring(0, 1, k, 0.0)
    b.particle_contact = False
    model = b.finalize(device=device, dtype=f64)
    q = model.particle_q.numpy()
    q[1, 0] = rest + 0.05  # stretched by 5 cm
    model.particle_q.assign(q)
    dt = 1.0e-3
    solver = SOLVERS[name]()
    s0, s1 = model.state(), model.state()
    xs = []
    for _ in range(2500):  # 2.5 s: about 8 periods of 0.314 s
        solver.step(model, s0, s1, None, dt)
        s0, s1 = s1, s0
        xs.append(s0.particle_q.numpy()[1, 0])
    period = oscillation_period(np.array(xs), dt)
    expect = 2.0 * np.pi * np.sqrt(m / k)
    assert abs(period - expect) / expect < 0.01, (period, expect)


# ----------------------------------------------------------------------------- contact

@pytest.mark.parametrize("name,dt,steps", [("euler", 1.0e-3, 1500), ("xpbd", 1.0 / 60.0, 90)])
def test_particles_come_to_rest_on_the_ground(device, name, dt, steps):
    r = 0.05
    b = sk.ModelBuilder()
    b.add_particle_grid(pos=(-0.2, 0.3, -0.2), dim_x=4, dim_y=2, dim_z=4, cell_x=0.12, cell_y=0.12, cell_z=0.12,
                        mass=0.1, jitter=0.005, radius_mean=r)
    b.add_ground_plane(ke=1.0e4, kd=20.0, kf=10.0, mu=0.5)
    b.particle_ke, b.particle_kd = 1.0e4, 20.0
    model = b.finalize(device=device)
    state = simulate(model, SOLVERS[name](), steps, dt)
    y = state.particle_q.numpy()[:, 1]
    assert y.min() > r - 2.0e-3, y.min()           # no particle sinks into the ground
    assert np.abs(state.particle_qd.numpy()).max() < 0.05
    assert (y < 3 * r).sum() >= 16                  # at least a full bottom layer lies on the plane


@pytest.mark.parametrize("name", SOLVERS)
def test_overlapping_particles_separate_to_twice_the_radius(device, name):
    r = 0.1
    b = sk.ModelBuilder(gravity=0.0)
    b.add_particle((0.0, 0.0, 0.0), (0.0, 0.0, 0.0), 1.0, radius=r)
    b.add_particle((0.12, 0.03, 0.0), (0.0, 0.0, 0.0), 1.0, radius=r)  # overlap: distance ~0.124 < 0.2
    b.particle_ke, b.particle_kd = 1.0e3, 10.0
    model = b.finalize(device=device, dtype=f64)
    if name == "euler":
        state = simulate(model, euler(), 300, 1.0e-3)
    else:
        state = simulate(model, xpbd(iterations=20), 1, 1.0e-2)
    q = state.particle_q.numpy()
    d = np.linalg.norm(q[1] - q[0])
    if name == "xpbd":
        assert abs(d - 2 * r) < 1e-6, d           # projected exactly onto the contact
    else:  # pushed apart, with at most the elastic energy stored in the overlap as kinetic energy
        v = state.particle_qd.numpy()
        assert d > 2 * r and np.dot(v[1] - v[0], q[1] - q[0]) > 0.0, d
        overlap = 2 * r - np.hypot(0.12, 0.03)
        assert 0.5 * (v ** 2).sum() <= 0.5 * 1.0e3 * overlap ** 2 * 1.01
    np.testing.assert_allclose(q.mean(axis=0), [0.06, 0.015, 0.0], atol=1e-9)  # momentum is conserved
    dirn = (q[1] - q[0]) / d
    np.testing.assert_allclose(dirn, np.array([0.12, 0.03, 0.0]) / np.hypot(0.12, 0.03), atol=1e-6)


@pytest.mark.parametrize("name,dt,steps", [("euler", 5.0e-4, 2400), ("xpbd", 1.0 / 120.0, 150)])
def test_cloth_rests_on_a_sphere_mesh(device, name, dt, steps):
    center, radius = np.array([0.0, 0.5, 0.0]), 0.3
    points, faces = icosphere(radius, 3)
    b = sk.ModelBuilder()
    b.add_shape_mesh((points, faces), pos=tuple(center), ke=1.0e3, kd=5.0, kf=1.0, mu=0.3)
    n, cell = 10, 0.08
    b.add_cloth_grid(pos=(-n * cell / 2, 0.9, n * cell / 2), rot=(-0.7071068, 0.0, 0.0, 0.7071068),
                     dim_x=n, dim_y=n, cell_x=cell, cell_y=cell, mass=0.01, tri_ke=1.0e2, tri_ka=1.0e2, tri_kd=0.5,
                     edge_ke=1.0, particle_radius=0.01)
    b.particle_contact = False
    model = b.finalize(device=device)
    assert model.shape_count == 1 and model.shape_mesh[0].num_faces == faces.shape[0]
    q0 = model.particle_q.numpy()
    assert np.allclose(q0[:, 1], 0.9) and q0[:, 2].min() < -0.3  # the rotation laid the cloth flat (x-z)
    state = simulate(model, SOLVERS[name](), steps, dt)
    q = state.particle_q.numpy()
    assert np.all(np.isfinite(q))
    dist = np.linalg.norm(q - center, axis=1)
    inscribed = radius * np.cos(np.deg2rad(4.0))  # faces of a level-3 icosphere lie within ~0.25% of R
    assert dist.min() > inscribed + 0.01 - 3.0e-3, dist.min()  # radius 0.01, tolerance 3 mm
    middle = q[(n + 1) * (n // 2) + n // 2]
    assert abs(middle[0]) < 0.02 and abs(middle[2]) < 0.02 and middle[1] > center[1] + radius  # draped on top
    assert q[:, 1].min() < center[1]  # the corners hang down the sides


# ----------------------------------------------------------------------------- XPBD convergence

def test_xpbd_converges_stretched_springs_to_rest_length(device):
    b = sk.ModelBuilder(gravity=0.0)
    b.add_particle((0.0, 0.0, 0.0), (0.0, 0.0, 0.0), 0.0)
    for k in range(1, 5):
        b.add_particle((0.2 * k, 0.0, 0.0), (0.0, 0.0, 0.0), 0.1)
        b.add_spring(k - 1, k, 1.0e9, 0.0)  # nearly rigid: compliance leaves ~1e-6 m in one step
    model = b.finalize(device=device, dtype=f64)
    q = model.particle_q.numpy()
    q[1:, 0] *= 1.5  # every spring stretched by 50%
    model.particle_q.assign(q)
    errors = []
    for iterations in (5, 50, 400):
        state = simulate(model, xpbd(iterations), 1, 1.0e-2)
        x = state.particle_q.numpy()[:, 0]
        errors.append(np.abs(np.diff(x) - 0.2).max())
    assert errors[0] > errors[1] > errors[2]
    assert errors[2] < 1.0e-4, errors
    # a soft spring settles at its rest length too (many steps, damping)
    b = sk.ModelBuilder(gravity=0.0)
    b.add_particle((0.0, 0.0, 0.0), (0.0, 0.0, 0.0), 0.0)
    b.add_particle((0.3, 0.0, 0.0), (0.0, 0.0, 0.0), 0.1)
    b.add_spring(0, 1, 50.0, 2.0)
    model = b.finalize(device=device, dtype=f64)
    model.particle_q.assign(np.array([[0.0, 0.0, 0.0], [0.6, 0.0, 0.0]]))
    state = simulate(model, xpbd(4), 600, 1.0e-2)
    assert abs(state.particle_q.numpy()[1, 0] - 0.3) < 1e-4


@pytest.mark.parametrize("name", SOLVERS)
def test_spring_activation_changes_the_rest_length(device, name):
    b = sk.ModelBuilder(gravity=0.0)
    b.add_particle((0.0, 0.0, 0.0), (0.0, 0.0, 0.0), 0.0)
    b.add_particle((0.4, 0.0, 0.0), (0.0, 0.0, 0.0), 0.1)
    if name == "xpbd":
        b.add_spring(0, 1, 1.0e9, 0.0)  # one stiff step
    else:
        b.add_spring(0, 1, 100.0, 5.0)  # damped: settles within a second
    model = b.finalize(device=device, dtype=f64)
    control = model.control()
    control.spring_activation.assign(np.array([-0.25]))
    if name == "xpbd":
        state = simulate(model, xpbd(50), 1, 1.0e-2, control)
    else:
        state = simulate(model, euler(), 3000, 1.0e-3, control)
    np.testing.assert_allclose(state.particle_q.numpy()[1, 0], 0.3, atol=1e-4)


# ----------------------------------------------------------------------------- gradients

def gradient_scene(device):
    b = sk.ModelBuilder()
    b.add_particle((0.0, 0.04, 0.0), (0.3, -0.2, 0.1), 1.0, radius=0.05)    # in ground contact
    b.add_particle((0.5, 0.3, 0.0), (0.0, 0.0, 0.0), 0.5, radius=0.05)
    b.add_spring(0, 1, 100.0, 0.5)
    b.add_particle((0.0, 0.3, 0.5), (0.0, 0.1, 0.0), 2.0, radius=0.05)
    b.add_triangle(0, 1, 2, tri_ke=100.0, tri_ka=200.0, tri_kd=1.0)
    b.add_particle((0.5, 0.38, 0.02), (0.0, 0.0, 0.0), 1.0, radius=0.05)  # overlaps particle 1
    b.add_ground_plane(ke=1.0e3, kd=10.0, kf=10.0, mu=0.5)
    return b.finalize(device=device, requires_grad=True, dtype=f64)


WEIGHTS = np.random.default_rng(0).normal(size=(4, 3))


def rollout(device, name, q0, stiffness, steps, tape=None, every=0):
    """Loss of a rollout from positions q0; ``every`` > 0 checkpoints every that many steps."""
    model = gradient_scene(device)
    model.spring_stiffness.assign(stiffness)
    solver = euler() if name == "euler" else xpbd(5)
    dt = 1.0e-3 if name == "euler" else 1.0e-2
    start = model.state()
    start.particle_q.assign(q0)
    loss = sk.zeros(1, dtype=f64, requires_grad=True, device=device)
    w = sk.array(WEIGHTS, dtype=sk.vec3d, device=device)

    def advance(q, qd, k):
        state = sk.State(q, qd, start.particle_f)
        for _ in range(k):
            out = model.state()
            solver.step(model, state, out, None, dt)
            state = out
        return state.particle_q, state.particle_qd

    with tape if tape is not None else sk.Tape():
        q, qd = start.particle_q, start.particle_qd
        if every:
            for _ in range(steps // every):
                q, qd = sk.checkpoint(lambda a, b: advance(a, b, every), q, qd)
        else:
            q, qd = advance(q, qd, steps)
        sk.launch(weighted_sum, 4, inputs=[q, w], outputs=[loss], device=device)
    return loss, model, start


@pytest.mark.parametrize("name,steps", [("euler", 20), ("xpbd", 5)])
def test_step_gradients_match_finite_differences(device, name, steps):
    q0 = gradient_scene(device).particle_q.numpy()
    k0 = np.array([100.0])
    tape = sk.Tape()
    loss, model, start = rollout(device, name, q0, k0, steps, tape)
    tape.backward(loss=loss)
    g_q = start.particle_q.grad.numpy()
    g_v = start.particle_qd.grad.numpy()
    g_k = model.spring_stiffness.grad.numpy()
    eps = 1.0e-6
    for d in np.random.default_rng(1).normal(size=(3,) + q0.shape):  # directional derivatives
        fd = (rollout(device, name, q0 + eps * d, k0, steps)[0].numpy()[0]
              - rollout(device, name, q0 - eps * d, k0, steps)[0].numpy()[0]) / (2 * eps)
        np.testing.assert_allclose(np.sum(g_q * d), fd, rtol=1e-6, atol=1e-8)
    fd_k = (rollout(device, name, q0, k0 + 1e-4, steps)[0].numpy()[0]
            - rollout(device, name, q0, k0 - 1e-4, steps)[0].numpy()[0]) / 2e-4
    np.testing.assert_allclose(g_k, [fd_k], rtol=1e-5, atol=1e-8)
    assert np.abs(g_q).max() > 0.1 and np.abs(g_v).max() > 0.0 and abs(g_k[0]) > 0.0


@pytest.mark.parametrize("name,steps,every", [("euler", 20, 5), ("xpbd", 6, 2)])
def test_checkpointed_rollout_gives_the_same_gradients(device, name, steps, every):
    # the particle grid is rebuilt for each step's adjoint, also when segments are recomputed
    q0 = gradient_scene(device).particle_q.numpy()
    k0 = np.array([100.0])
    grads = []
    for ev in (0, every):
        tape = sk.Tape()
        loss, model, start = rollout(device, name, q0, k0, steps, tape, every=ev)
        tape.backward(loss=loss)
        grads.append((loss.numpy()[0], start.particle_q.grad.numpy(), model.spring_stiffness.grad.numpy()))
    assert grads[0][0] == grads[1][0]
    np.testing.assert_allclose(grads[1][1], grads[0][1], rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(grads[1][2], grads[0][2], rtol=1e-12)


@pytest.mark.parametrize("name,steps,dt", [("euler", 100, 1.0e-3), ("xpbd", 25, 1.0e-2)])
def test_contact_gradients_when_particles_fly_apart(device, name, steps, dt):
    # the particles collide in the first steps and end far apart, in other grid cells: each step's
    # adjoint must query the grid as it was built for that step
    def loss_of(q0, tape=None):
        b = sk.ModelBuilder(gravity=0.0)
        b.add_particle((0.0, 0.0, 0.0), (0.0, 0.0, 0.0), 0.1, radius=0.05)
        b.add_particle((0.08, 0.01, 0.0), (0.0, 0.0, 0.0), 0.1, radius=0.05)
        b.add_particle((0.5, 0.0, 0.3), (0.0, 0.0, 0.0), 0.1, radius=0.05)  # a bystander
        b.particle_ke, b.particle_kd = 1.0e4, 1.0
        model = b.finalize(device=device, requires_grad=True, dtype=f64)
        solver = SOLVERS[name]()
        state = model.state()
        state.particle_q.assign(q0)
        start = state
        loss = sk.zeros(1, dtype=f64, requires_grad=True, device=device)
        with tape if tape is not None else sk.Tape():
            for _ in range(steps):
                out = model.state()
                solver.step(model, state, out, None, dt)
                state = out
            sk.launch(weighted_sum, 3, inputs=[state.particle_q, sk.array(WEIGHTS[:3], dtype=sk.vec3d, device=device)],
                      outputs=[loss], device=device)
        return loss, start, state

    q0 = np.array([[0.0, 0.0, 0.0], [0.08, 0.01, 0.0], [0.5, 0.0, 0.3]])
    tape = sk.Tape()
    loss, start, end = loss_of(q0, tape)
    assert np.linalg.norm(end.particle_q.numpy()[1] - end.particle_q.numpy()[0]) > 0.4  # they flew apart
    tape.backward(loss=loss)
    eps = 1.0e-6
    fd = np.zeros_like(q0)
    for i in range(2):
        for c in range(3):
            dq = np.zeros_like(q0)
            dq[i, c] = eps
            fd[i, c] = (loss_of(q0 + dq)[0].numpy()[0] - loss_of(q0 - dq)[0].numpy()[0]) / (2 * eps)
    np.testing.assert_allclose(start.particle_q.grad.numpy()[:2], fd[:2], rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("name,steps,dt,eps", [("euler", 30, 1.0e-3, 1.0e-3), ("xpbd", 5, 1.0e-2, 3.0e-3)])
def test_mesh_contact_gradients(device, name, steps, dt, eps):
    # a particle pressed into a static square (two triangles) while sliding; the mesh query runs in
    # float32, so the finite differences take a large step (float32 noise / eps stays small). The contact
    # normal is (x - closest point) / distance: the centre stays ~0.035 off the surface, or the closest
    # point's float32 rounding, divided by that distance, decides the result (it differed between the
    # CPU's and the GPU's query code paths with the centre 0.005 off)
    plane = (np.array([[-1.0, 0.0, -1.0], [1.0, 0.0, -1.0], [1.0, 0.0, 1.0], [-1.0, 0.0, 1.0]]),
             np.array([0, 2, 1, 0, 3, 2]))

    def loss_of(q0, tape=None):
        b = sk.ModelBuilder()
        b.add_particle((0.1, 0.04, 0.0), (0.5, -0.3, 0.2), 0.2, radius=0.05)
        b.add_shape_mesh(plane, pos=(0.0, 0.0, 0.0), rot=(0.0, 0.0, 0.0998334, 0.9950042), ke=1.0e3, kd=5.0,
                         kf=10.0, mu=0.4)
        model = b.finalize(device=device, requires_grad=True, dtype=f64)
        solver = SOLVERS[name]()
        state = model.state()
        state.particle_q.assign(q0)
        start = state
        loss = sk.zeros(1, dtype=f64, requires_grad=True, device=device)
        with tape if tape is not None else sk.Tape():
            for _ in range(steps):
                out = model.state()
                solver.step(model, state, out, None, dt)
                state = out
            sk.launch(weighted_sum, 1, inputs=[state.particle_q, sk.array(WEIGHTS[:1], dtype=sk.vec3d,
                                                                             device=device)],
                      outputs=[loss], device=device)
        return loss, start, state

    q0 = np.array([[0.1, 0.04, 0.0]])
    tape = sk.Tape()
    loss, start, end = loss_of(q0, tape)
    tape.backward(loss=loss)
    g = start.particle_q.grad.numpy()
    fd = np.array([(loss_of(q0 + e)[0].numpy()[0] - loss_of(q0 - e)[0].numpy()[0]) / (2 * eps)
                   for e in np.eye(3)[:, None, :] * eps])
    np.testing.assert_allclose(g[0], fd, rtol=2e-3, atol=5e-4)
    assert np.abs(g).max() > 0.1


@pytest.mark.parametrize("name,steps", [("euler", 6), ("xpbd", 3)])
def test_graph_capture_of_a_rollout_and_its_backward_pass(cuda_device, name, steps):
    """One CUDA graph holds the simulation steps, the loss and the Tape's backward pass; each replay,
    after new start positions are copied in, gives the gradients of an uncaptured run from them."""
    q0 = gradient_scene("cpu").particle_q.numpy()
    starts = [q0, q0 + np.random.default_rng(2).normal(scale=1.0e-3, size=q0.shape)]
    k0 = np.array([100.0])
    expected = []
    for q in starts:
        tape = sk.Tape()
        loss, model, start = rollout(cuda_device, name, q, k0, steps, tape)
        tape.backward(loss=loss)
        expected.append((loss.numpy()[0], start.particle_q.grad.numpy(), model.spring_stiffness.grad.numpy()))

    model = gradient_scene(cuda_device)
    model.spring_stiffness.assign(k0)
    solver = euler() if name == "euler" else xpbd(5)
    dt = 1.0e-3 if name == "euler" else 1.0e-2
    states = [model.state() for _ in range(steps + 1)]
    loss = sk.zeros(1, dtype=f64, requires_grad=True, device=cuda_device)
    w = sk.array(WEIGHTS, dtype=sk.vec3d, device=cuda_device)

    def step_loss_and_backward():
        loss.zero_()  # (the loss kernel accumulates)
        tape = sk.Tape()
        with tape:
            for i in range(steps):
                solver.step(model, states[i], states[i + 1], None, dt)
            sk.launch(weighted_sum, 4, inputs=[states[-1].particle_q, w], outputs=[loss], device=cuda_device)
        tape.backward(loss=loss)
        return tape

    step_loss_and_backward()  # compiles and loads every kernel (no compiling inside a capture)
    sk.synchronize()
    with sk.ScopedCapture(cuda_device) as cap:
        tape = step_loss_and_backward()
    for q, (l_ref, g_ref, gk_ref) in zip(starts, expected):
        tape.zero()
        states[0].particle_q.assign(q)
        sk.capture_launch(cap.graph)
        sk.synchronize()
        assert loss.numpy()[0] == pytest.approx(l_ref, rel=1e-12)
        np.testing.assert_allclose(states[0].particle_q.grad.numpy(), g_ref, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(model.spring_stiffness.grad.numpy(), gk_ref, rtol=1e-10)


def test_euler_max_time_step_is_a_stable_step_with_margin():
    # a 1 kg particle on a stiff spring to a fixed one, no gravity: semi-implicit Euler is stable for
    # w dt < 2; max_time_step gives 0.3 / w (the spring and the strongest contact, summed), so the
    # motion stays bounded at that step and at 5x it, and blows up at 8x
    b = sk.ModelBuilder(gravity=0.0)
    b.add_particle((0.0, 0.0, 0.0), (0.0, 0.0, 0.0), 0.0, radius=0.01)       # fixed
    b.add_particle((0.6, 0.0, 0.0), (1.0, 0.0, 0.0), 1.0, radius=0.01)       # oscillates by v / w = 5 mm
    b.add_spring(0, 1, 4.0e4, 0.0)
    b.particle_kd = b.particle_kf = 0.0
    model = b.finalize(device="cpu", dtype=f64)
    solver = sk.SemiImplicitEulerSolver()
    dt = solver.max_time_step(model)
    k = 4.0e4 + model.particle_ke
    assert dt == pytest.approx(0.3 * math.sqrt(1.0 / k))
    for factor, stable in ((1.0, True), (5.0, True), (8.0, False)):
        end = simulate(model, solver, 400, dt * factor)
        assert (np.abs(end.particle_q.numpy()[1, 0] - 0.6) < 0.02) == stable, factor
    b.ground = True                                   # a contact with viscous friction lowers it
    b.ground_material = (1.0e3, 10.0, 1.0e4, 0.5)
    assert solver.max_time_step(b.finalize(device="cpu")) == pytest.approx(0.3 * 1.0 / (10.0 + 1.0e4))

"""Particles and rigid bodies in one model: contacts push both (momentum conserved), a particle
rests on a box that rests on the ground (forces balance through the body), gradients through a
particle-body collision match finite differences, and solvers that cannot step both say so."""
import math

import numpy as np
import pytest

import simkit as sk

f64 = sk.float64


def rotate(q, v):
    x, y, z, w = q
    u = np.array([x, y, z])
    return v + 2.0 * w * np.cross(u, v) + 2.0 * np.cross(u, np.cross(u, v))


def run(model, solver, steps, dt):
    s0, s1 = model.state(), model.state()
    for _ in range(steps):
        solver.step(model, s0, s1, None, dt)
        s0, s1 = s1, s0
    return s0


@pytest.mark.parametrize("kind", ["sphere", "box", "capsule"])
def test_particle_hitting_a_body_conserves_momentum(device, kind):
    # frictionless: a friction force on a spinless particle's surface has no lever arm on the particle,
    # so with friction only linear momentum is conserved
    b = sk.ModelBuilder(gravity=0.0)
    body = b.add_body(pos=(0.3, 0.02, 0.01), ang_vel=(0.0, 0.5, 0.0))
    if kind == "sphere":
        b.add_shape_sphere(body, radius=0.1, density=200.0, ke=2e3, kd=5.0, kf=0.0, mu=0.0)
    elif kind == "box":
        b.add_shape_box(body, hx=0.08, hy=0.1, hz=0.1, rot=(0.0, 0.0, 0.2588190, 0.9659258), density=200.0, ke=2e3,
                        kd=5.0, kf=0.0, mu=0.0)
    else:
        b.add_shape_capsule(body, radius=0.06, half_height=0.1, rot=(0.3826834, 0.0, 0.0, 0.9238795), density=200.0,
                            ke=2e3, kd=5.0, kf=0.0, mu=0.0)
    b.add_particle((0.0, 0.0, 0.0), (2.0, 0.0, 0.1), 0.3, radius=0.03)
    model = b.finalize(device=device, dtype=f64)
    m, M = 0.3, model.body_mass.numpy()[0]
    inertia, com_local = model.body_inertia.numpy()[0], model.body_com.numpy()[0]

    def momenta(state):
        x, v = state.particle_q.numpy()[0], state.particle_qd.numpy()[0]
        q, qd = state.body_q.numpy()[0], state.body_qd.numpy()[0]
        R = np.array([rotate(q[3:], e) for e in np.eye(3)]).T
        c = q[:3] + R @ com_local
        P = m * v + M * qd[3:]
        L = m * np.cross(x, v) + R @ inertia @ R.T @ qd[:3] + M * np.cross(c, qd[3:])
        return P, L

    P0, L0 = momenta(model.state())
    end = run(model, sk.SemiImplicitEulerSolver(), 1500, 2.0e-4)
    P1, L1 = momenta(end)
    np.testing.assert_allclose(P1, P0, atol=1e-10)
    np.testing.assert_allclose(L1, L0, atol=1e-3 * np.linalg.norm(L0) + 1e-6)
    assert end.particle_qd.numpy()[0, 0] < 1.5 and end.body_qd.numpy()[0, 3] > 0.1    # they collided


def test_a_particle_rests_on_a_box_that_rests_on_the_ground(device):
    b = sk.ModelBuilder()
    box = b.add_body(pos=(0.0, 0.05, 0.0))
    b.add_shape_box(box, hx=0.2, hy=0.05, hz=0.2, density=100.0, ke=1e4, kd=200.0)
    b.add_particle((0.02, 0.14, -0.03), (0.0, 0.0, 0.0), 0.5, radius=0.03)
    b.add_ground_plane()
    model = b.finalize(device=device, dtype=f64)
    b_ke = 1e4
    end = run(model, sk.SemiImplicitEulerSolver(), 6000, 2.5e-4)
    M, m, g = model.body_mass.numpy()[0], 0.5, 9.81
    box_y = 0.05 - (M + m) * g / (4 * b_ke)                 # four corners carry both
    assert end.body_q.numpy()[0, 1] == pytest.approx(box_y, abs=2e-5)
    assert end.particle_q.numpy()[0, 1] == pytest.approx(box_y + 0.05 + 0.03 - m * g / b_ke, abs=2e-5)
    np.testing.assert_allclose(end.body_qd.numpy()[0], 0.0, atol=1e-3)
    np.testing.assert_allclose(end.particle_qd.numpy()[0], 0.0, atol=1e-3)


@sk.kernel
def coupled_loss(x: sk.array(dtype=sk.vec3d), q: sk.array(dtype=sk.transformd), loss: sk.array(dtype=sk.float64)):
    p = x[0]
    c = sk.transform_get_translation(q[0])
    r = sk.transform_get_rotation(q[0])
    loss[0] = p[0] + 2.0 * p[2] - c[0] * 3.0 + c[1] + r[1] * 0.5


def rollout(device, v0, w0, steps, tape=None):
    b = sk.ModelBuilder(gravity=-2.0)
    body = b.add_body(pos=(0.35, 0.0, 0.02), ang_vel=tuple(w0))
    b.add_shape_capsule(body, radius=0.06, half_height=0.1, rot=(0.3826834, 0.0, 0.0, 0.9238795), density=200.0,
                        ke=2e3, kd=5.0, kf=20.0, mu=0.5)
    b.add_particle((0.0, 0.0, 0.0), tuple(v0), 0.3, radius=0.03)
    model = b.finalize(device=device, dtype=f64, requires_grad=True)
    solver = sk.SemiImplicitEulerSolver()
    loss = sk.zeros(1, dtype=f64, requires_grad=True, device=device)
    start = model.state()
    with tape if tape is not None else sk.Tape():
        state = start
        for _ in range(steps):
            nxt = model.state()
            solver.step(model, state, nxt, None, 5.0e-4)
            state = nxt
        sk.launch(coupled_loss, 1, inputs=[state.particle_q, state.body_q], outputs=[loss], device=device)
    return loss, start


def test_gradients_through_a_particle_body_collision_match_finite_differences(device):
    v0, w0, steps = np.array([2.0, 0.1, 0.05]), np.array([0.0, 0.5, 0.3]), 300
    tape = sk.Tape()
    loss, start = rollout(device, v0, w0, steps, tape)
    tape.backward(loss=loss)
    g_v = start.particle_qd.grad.numpy()[0]
    g_w = start.body_qd.grad.numpy()[0, :3]
    eps = 1.0e-6
    for k in range(3):
        e = np.eye(3)[k] * eps
        fd_v = (rollout(device, v0 + e, w0, steps)[0].numpy()[0] - rollout(device, v0 - e, w0, steps)[0].numpy()[0]) / (2 * eps)
        fd_w = (rollout(device, v0, w0 + e, steps)[0].numpy()[0] - rollout(device, v0, w0 - e, steps)[0].numpy()[0]) / (2 * eps)
        assert g_v[k] == pytest.approx(fd_v, rel=1e-5, abs=1e-8)
        assert g_w[k] == pytest.approx(fd_w, rel=1e-5, abs=1e-8)
    assert abs(g_w).max() > 1e-3        # the body's spin matters: the collision carries it


def test_solvers_that_step_one_kind_say_so():
    # (XPBDSolver steps both: tests/test_xpbd_coupling.py)
    b = sk.ModelBuilder()
    body = b.add_body()
    b.add_shape_sphere(body, radius=0.1)
    b.add_particle((1.0, 0.0, 0.0), (0.0, 0.0, 0.0), 1.0)
    model = b.finalize(device="cpu")
    with pytest.raises(ValueError, match="1 particles"):
        sk.RigidBodySolver().step(model, model.state(), model.state(), None, 1e-3)
    # the Euler solver steps a body-only model like the rigid-body solver
    b = sk.ModelBuilder()
    body = b.add_body(pos=(0.0, 1.0, 0.0), vel=(1.0, 0.0, 0.0))
    b.add_shape_box(body, hx=0.1, hy=0.1, hz=0.1)
    model = b.finalize(device="cpu", dtype=f64)
    a = run(model, sk.SemiImplicitEulerSolver(), 100, 1e-3).body_q.numpy()
    np.testing.assert_array_equal(a, run(model, sk.RigidBodySolver(), 100, 1e-3).body_q.numpy())
    assert math.isfinite(a[0, 1]) and a[0, 1] < 1.0


def test_a_light_box_floats_in_sph_water_at_its_archimedes_draft():
    # CPU, float32, ~7 s: a box of half the water's density settles in a tank of 512 particles; it
    # floats with half its height submerged (within 20%: the contacts keep particle centres a radius
    # away from the box, so it sits a little deep) and stays upright: within 10 degrees, as the
    # lumpy 2 cm "water" rocks it by 2.4 degrees on one machine and by 4.8 on another (other
    # compiler and vector width)
    s = 0.02
    b = sk.ModelBuilder()
    b.add_fluid_block(pos=(s / 2, s / 2, s / 2), dim_x=8, dim_y=8, dim_z=8, spacing=s)
    box = b.add_body(pos=(0.08, 0.22, 0.08))
    b.add_shape_box(box, hx=0.04, hy=0.03, hz=0.04, density=500.0, ke=2e3, kd=2.0, kf=0.0, mu=0.0)
    model = b.finalize(device="cpu")
    solver = sk.SPHSolver(bounds=((0.0, 0.0, 0.0), (0.16, 1.0, 0.16)))
    dt = min(solver.max_time_step(model, max_speed=1.5), sk.RigidBodySolver().max_time_step(model))
    end = run(model, solver, 2500, dt)
    q = end.body_q.numpy()[0]
    surface = np.percentile(end.particle_q.numpy()[:, 1], 99) + s / 2
    draft = surface - (q[1] - 0.03)
    assert draft == pytest.approx(0.5 * 0.06, rel=0.2)
    assert abs(end.body_qd.numpy()[0, 4]) < 0.01
    assert rotate(q[3:], np.array([0.0, 1.0, 0.0]))[1] > np.cos(np.radians(10.0))

"""XPBDSolver with particles and rigid shapes together (solvers/particle/kernels_xpbd_coupling.py):
collisions against momentum (and angular momentum) conservation and the inelastic common velocity,
loads resting on bodies that rest on the ground (nothing creeps), static rigid shapes, a cloth on a
box, gradients against central finite differences, and the GPU against the CPU."""
import numpy as np
import pytest

import simkit as sk

f64 = sk.float64
DT = 1.0 / 120.0
BOX_MASS = 8.0        # a 0.2 m cube of density 1000


def head_on(mass, offset=0.0, v=2.0, device="cpu", requires_grad=False, mu=0.0):
    """A particle flying at a free cube (zero gravity); returns the model."""
    b = sk.ModelBuilder()
    body = b.add_body(pos=(0.0, 0.0, 0.0))
    b.add_shape_box(body, hx=0.1, hy=0.1, hz=0.1, density=1000.0, mu=mu)
    b.add_particle((-0.3, offset, 0.0), (v, 0.0, 0.0), mass=mass, radius=0.02)
    b.particle_mu = mu
    model = b.finalize(dtype=f64, device=device, requires_grad=requires_grad)
    model.gravity = (0.0, 0.0, 0.0)
    return model


def run(model, steps, solver=None, control=None):
    solver = solver or sk.XPBDSolver(iterations=10)
    s0, s1 = model.state(), model.state()
    for _ in range(steps):
        solver.step(model, s0, s1, control, DT)
        s0, s1 = s1, s0
    return s0


@pytest.mark.parametrize("mass", [0.1, 8.0, 100.0])
def test_a_head_on_hit_is_inelastic_and_keeps_momentum(mass):
    # a light, an equal and a heavy particle: after the hit both move at m v / (m + M), as a perfectly
    # inelastic collision leaves them (XPBD contacts do not bounce); the heavy one gains no energy
    s = run(head_on(mass), 60)
    vp, vb = s.particle_qd.numpy()[0], s.body_qd.numpy()[0]
    common = mass * 2.0 / (mass + BOX_MASS)
    np.testing.assert_allclose(vp, [common, 0.0, 0.0], rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(vb, [0.0, 0.0, 0.0, common, 0.0, 0.0], rtol=1e-9, atol=1e-12)
    assert mass * vp[0] + BOX_MASS * vb[3] == pytest.approx(mass * 2.0, rel=1e-12)


def test_many_particles_hitting_at_once_keep_momentum():
    # 25 particles (5 x 5) hit one face together: the body's mass is split among its contacts, and it
    # takes the momentum the particles lose (averaging its corrections instead lost 80% of it)
    b = sk.ModelBuilder()
    body = b.add_body(pos=(0.0, 0.0, 0.0))
    b.add_shape_box(body, hx=0.1, hy=0.1, hz=0.1, density=1000.0)
    for y in np.linspace(-0.08, 0.08, 5):
        for z in np.linspace(-0.08, 0.08, 5):
            b.add_particle((-0.3, y, z), (2.0, 0.0, 0.0), mass=1.0, radius=0.02)
    model = b.finalize(dtype=f64)
    model.gravity = (0.0, 0.0, 0.0)
    s = run(model, 60)
    vp, vb = s.particle_qd.numpy(), s.body_qd.numpy()[0]
    assert vp[:, 0].sum() + BOX_MASS * vb[3] == pytest.approx(50.0, rel=1e-4)
    assert 0.5 * (vp ** 2).sum() + 0.5 * BOX_MASS * vb[3] ** 2 < 0.5 * 25 * 2.0 ** 2   # (no energy gained)
    assert vb[3] > 1.2 and vp[:, 0].max() < 1.7                     # (the inelastic common velocity: 1.52)


def test_an_off_centre_hit_spins_the_body_and_keeps_angular_momentum():
    from quat_reference import qmat

    model = head_on(1.0, offset=0.05)
    inertia = model.body_inertia.numpy()[0]

    def momenta(s):
        q, qd = s.body_q.numpy()[0], s.body_qd.numpy()[0]
        x, v = s.particle_q.numpy()[0], s.particle_qd.numpy()[0]
        rot = qmat(q[3:])
        return (v + BOX_MASS * qd[3:],
                np.cross(x, v) + BOX_MASS * np.cross(q[:3], qd[3:]) + rot @ inertia @ rot.T @ qd[:3])

    p0, l0 = momenta(model.state())
    s = run(model, 60)
    p1, l1 = momenta(s)
    np.testing.assert_allclose(p1, p0, atol=1e-9)
    np.testing.assert_allclose(l1, l0, atol=0.02 * abs(l0[2]))     # (positional corrections: 1% here)
    assert s.body_qd.numpy()[0, 2] < -1.0                             # spun clockwise about z


def resting(offset, rigid_load=False):
    """A box on the ground with a 0.5 kg load on its top, ``offset`` from its middle: a particle,
    or (``rigid_load``) a body of the same mass and size."""
    b = sk.ModelBuilder()
    body = b.add_body(pos=(0.0, 0.1, 0.0))
    b.add_shape_box(body, hx=0.2, hy=0.1, hz=0.2, density=100.0)      # 3.2 kg
    b.add_ground_plane()
    if rigid_load:
        top = b.add_body(pos=(offset, 0.22, 0.0))
        b.add_shape_sphere(top, radius=0.02, density=0.5 / (4.0 / 3.0 * np.pi * 0.02 ** 3))
    else:
        b.add_particle((offset, 0.3, 0.0), (0.0, 0.0, 0.0), mass=0.5, radius=0.02)
    return b.finalize(dtype=f64)


@pytest.mark.parametrize("offset", [0.0, 0.05, 0.15])
def test_a_load_rests_on_a_body_on_the_ground_without_creeping(offset):
    # the particle's push enters the body step as a wrench, solved with the ground contacts: the box
    # stays put under an off-centre load, as under a rigid body of the same mass (pushing the box's
    # pose after its step instead let it tilt and creep ~4 mm/s)
    s = run(resting(offset), 240)
    x, q = s.particle_q.numpy()[0], s.body_q.numpy()[0]
    np.testing.assert_allclose(x, [offset, 0.22, 0.0], atol=5e-4)
    np.testing.assert_allclose(q[:3], [0.0, 0.1, 0.0], atol=1e-5)
    np.testing.assert_allclose(q[3:], [0.0, 0.0, 0.0, 1.0], atol=1e-5)
    rigid = run(resting(offset, rigid_load=True), 240).body_q.numpy()[0]
    np.testing.assert_allclose(q[:3], rigid[:3], atol=1e-5)


def test_static_rigid_shapes_stop_particles():
    b = sk.ModelBuilder()
    b.add_shape_capsule(-1, pos=(0.0, 0.2, 0.0), rot=(0.0, 0.0, 0.7071068, 0.7071068), radius=0.1,
                        half_height=0.3)                        # static (no bodies), lying along x
    for k in range(3):
        b.add_particle((-0.2 + 0.2 * k, 0.6, 0.0), (0.0, 0.0, 0.0), mass=0.1, radius=0.02)
    s = run(b.finalize(dtype=f64), 120)
    np.testing.assert_allclose(s.particle_q.numpy()[:, 1], 0.32, atol=2e-3)   # on the capsule's top
    np.testing.assert_allclose(s.particle_q.numpy()[:, 0], [-0.2, 0.0, 0.2], atol=1e-6)


def test_a_cloth_drapes_over_a_free_box_on_the_ground():
    b = sk.ModelBuilder()
    body = b.add_body(pos=(0.0, 0.1, 0.0))
    b.add_shape_box(body, hx=0.1, hy=0.1, hz=0.1, density=500.0, mu=0.5)    # 4 kg
    b.add_ground_plane()
    b.add_cloth_grid(pos=(-0.25, 0.3, 0.25), rot=(-0.7071068, 0.0, 0.0, 0.7071068), dim_x=10, dim_y=10,
                     cell_x=0.05, cell_y=0.05, mass=0.005, tri_ke=1.0e2, tri_ka=1.0e2, edge_ke=1.0,
                     particle_radius=0.01)
    b.particle_mu = 0.5
    model = b.finalize(dtype=f64)
    s = run(model, 120, sk.XPBDSolver(iterations=10))
    x = s.particle_q.numpy()
    over = (np.abs(x[:, 0]) < 0.09) & (np.abs(x[:, 2]) < 0.09)              # particles above the top face
    assert over.sum() >= 9 and np.all(x[over, 1] > 0.2 + 0.01 - 1e-3)         # resting on it, not through
    assert np.all(x[:, 1] > 0.01 - 1e-3)                                       # the rest on the ground
    np.testing.assert_allclose(s.body_q.numpy()[0], [0.0, 0.1, 0.0, 0.0, 0.0, 0.0, 1.0], atol=1e-4)


@sk.kernel
def coupled_loss(q: sk.array(dtype=sk.transformd), x: sk.array(dtype=sk.vec3d), loss: sk.array(dtype=sk.float64)):
    p = q[0]
    sk.atomic_add(loss, 0, p[0] + 0.5 * p[1] * p[1] + 0.3 * p[5] + x[0][0] * x[0][1] + 0.2 * x[0][2])


def coupled_rollout(v0, tape=None, steps=30):
    model = head_on(1.0, offset=0.04, requires_grad=True, mu=0.4)
    states = [model.state() for _ in range(steps + 1)]
    states[0].particle_qd.assign(v0)
    solver = sk.XPBDSolver(iterations=4)
    loss = sk.zeros(1, dtype=f64, requires_grad=True)
    with tape if tape is not None else sk.Tape():
        for i in range(steps):
            solver.step(model, states[i], states[i + 1], None, DT)
        sk.launch(coupled_loss, 1, inputs=[states[-1].body_q, states[-1].particle_q], outputs=[loss])
    return loss.numpy()[0], states[0], loss


def test_coupled_rollout_gradients_match_finite_differences():
    # an off-centre hit with friction (the particle also moves along y and z): d loss / d the
    # particle's initial velocity through the contact, the body's wrench and its step
    v0 = np.array([[2.0, 0.3, -0.2]])
    tape = sk.Tape()
    _, start, loss = coupled_rollout(v0, tape)
    tape.backward(loss=loss)
    g = start.particle_qd.grad.numpy()
    eps = 1.0e-6
    for k in range(3):
        d = np.zeros((1, 3))
        d[0, k] = 1.0
        fd = (coupled_rollout(v0 + eps * d)[0] - coupled_rollout(v0 - eps * d)[0]) / (2 * eps)
        assert g[0, k] == pytest.approx(fd, rel=1e-5, abs=1e-8)
    assert np.abs(g).max() > 0.01


def test_coupled_steps_on_the_gpu_follow_the_cpu(cuda_device):
    cpu, gpu = (run(head_on(1.0, offset=0.05, device=d), 40) for d in ("cpu", cuda_device))
    np.testing.assert_allclose(gpu.body_q.numpy(), cpu.body_q.numpy(), atol=1e-9)
    np.testing.assert_allclose(gpu.particle_q.numpy(), cpu.particle_q.numpy(), atol=1e-9)

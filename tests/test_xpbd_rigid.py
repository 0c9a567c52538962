"""XPBDSolver with rigid bodies at frame-rate steps (1/60 s): resting contacts, Coulomb friction on a
slope (sticking and sliding at g (sin - mu cos)), stopping distance v^2 / 2 mu g, a stack of boxes,
momentum in collisions, a pendulum's period, drives to their targets and limits, joints that hold
(ball chain, fixed cantilever, prismatic rail), a box on a static mesh, and gradients of rollouts
against central finite differences."""
import math

import numpy as np
import pytest

import simkit as sk

f64 = sk.float64
DT = 1.0 / 60.0


def simulate(model, steps, dt=DT, iterations=10, control=None, trace=False):
    solver = sk.XPBDSolver(iterations=iterations)
    s0, s1 = model.state(), model.state()
    poses = []
    for _ in range(steps):
        solver.step(model, s0, s1, control, dt)
        s0, s1 = s1, s0
        if trace:
            poses.append(s0.body_q.numpy().copy())
    return (s0, np.array(poses)) if trace else s0


def unit(q):
    q = np.asarray(q, dtype=float)
    return tuple(q / np.linalg.norm(q))


def rotate(q, v):
    x, y, z, w = q
    u = np.array([x, y, z])
    return v + 2.0 * w * np.cross(u, v) + 2.0 * np.cross(u, np.cross(u, v))


# ----------------------------------------------------------------------------- contacts

@pytest.mark.parametrize("shape", ["sphere", "box", "capsule"])
def test_shapes_come_to_rest_on_the_ground_at_frame_rate_steps(device, shape):
    rest = {"sphere": 0.1, "box": 0.05, "capsule": 0.05}[shape]
    b = sk.ModelBuilder()
    body = b.add_body(pos=(0.0, rest + 0.05, 0.0))
    if shape == "sphere":
        b.add_shape_sphere(body, radius=0.1)
    elif shape == "box":
        b.add_shape_box(body, hx=0.2, hy=0.05, hz=0.1)
    else:   # lying along x
        b.add_shape_capsule(body, radius=0.05, half_height=0.15, rot=(0.0, 0.0, 0.7071068, 0.7071068))
    b.add_ground_plane()
    model = b.finalize(device=device, dtype=f64)
    end = simulate(model, 60)
    q, qd = end.body_q.numpy()[0], end.body_qd.numpy()[0]
    # one step of gravity (g dt^2 = 2.7 mm) sinks in and is pushed out again: left over, far less
    assert q[1] == pytest.approx(rest, abs=2e-4)
    np.testing.assert_allclose(qd, 0.0, atol=2e-2)
    np.testing.assert_allclose(np.abs(q[3:]), np.abs(model.body_q.numpy()[0, 3:]), atol=1e-4)


@pytest.mark.parametrize("mu,slides", [(0.5, False), (0.2, True)])
def test_a_box_on_a_slope_sticks_or_slides_at_g_sin_minus_mu_cos(mu, slides):
    # gravity tilted by 20 degrees over flat ground: tan 20 = 0.364
    theta, g = math.radians(20.0), 9.81
    b = sk.ModelBuilder(gravity=(g * math.sin(theta), -g * math.cos(theta), 0.0))
    body = b.add_body(pos=(0.0, 0.05, 0.0))
    b.add_shape_box(body, hx=0.1, hy=0.05, hz=0.1, mu=mu)
    b.add_ground_plane()
    model = b.finalize(dtype=f64)
    steps = 60
    end, poses = simulate(model, steps, trace=True)
    x = poses[:, 0, 0]
    if slides:   # x = a t^2 / 2 from rest: fit a over the second half (the first steps settle the contact)
        t = DT * np.arange(1, steps + 1)
        a = np.polyfit(t[30:], x[30:], 2)[0] * 2.0
        assert a == pytest.approx(g * (math.sin(theta) - mu * math.cos(theta)), rel=0.03)
    else:
        assert abs(x[-1]) < 5e-4         # (creeps less than 0.5 mm/s)
        np.testing.assert_allclose(end.body_qd.numpy()[0], 0.0, atol=1e-3)


@pytest.mark.parametrize("iterations,substeps,tol", [(2, 4, 0.01), (10, 1, 0.05)])
def test_a_ball_rolls_down_a_slope_at_five_sevenths_g_sin(iterations, substeps, tol):
    # a solid ball rolling without slipping: a = 5/7 g sin(theta), v = w r, its centre a radius up.
    # The contact is the bottom of the sphere every step (a point fixed to the ball turned away with
    # it: the ball sank through the ground at one step of 10 sweeps, or hovered 9 mm up at substeps)
    theta, g = math.radians(20.0), 9.81
    b = sk.ModelBuilder(gravity=(g * math.sin(theta), -g * math.cos(theta), 0.0))
    body = b.add_body(pos=(0.0, 0.1, 0.0))
    b.add_shape_sphere(body, radius=0.1, mu=0.5)
    b.add_ground_plane()
    model = b.finalize(dtype=f64)
    s0, s1 = model.state(), model.state()
    solver = sk.XPBDSolver(iterations=iterations, substeps=substeps)
    x = []
    for _ in range(120):
        solver.step(model, s0, s1, None, DT)
        s0, s1 = s1, s0
        x.append(s0.body_q.numpy()[0, 0])
    t = DT * np.arange(1, 121)
    a = np.polyfit(t[20:], np.array(x)[20:], 2)[0] * 2.0
    assert a == pytest.approx(5.0 / 7.0 * g * math.sin(theta), rel=tol)
    qd = s0.body_qd.numpy()[0]
    assert qd[3] == pytest.approx(-qd[2] * 0.1, rel=3 * tol)
    assert s0.body_q.numpy()[0, 1] == pytest.approx(0.1, abs=1e-4)


def test_a_sliding_box_stops_after_v2_over_2_mu_g():
    # each step slows it by mu g dt and then moves it: v0^2 / 2 mu g less half a step at v0
    b = sk.ModelBuilder()
    body = b.add_body(pos=(0.0, 0.05, 0.0), vel=(2.0, 0.0, 0.0))
    b.add_shape_box(body, hx=0.1, hy=0.05, hz=0.1, mu=0.4)
    b.add_ground_plane()
    model = b.finalize(dtype=f64)
    end = simulate(model, 90)
    assert end.body_q.numpy()[0, 0] == pytest.approx(2.0 ** 2 / (2 * 0.4 * 9.81) - 2.0 * DT / 2, rel=0.01)
    np.testing.assert_allclose(end.body_qd.numpy()[0], 0.0, atol=1e-3)


def test_a_stack_of_boxes_stands_still(device):
    # four boxes, each smaller, shifted and turned on the one below (one overhangs a corner by 2 mm)
    b = sk.ModelBuilder()
    for k in range(4):
        body = b.add_body(pos=(0.01 * k, 0.1 + 0.2 * k, 0.0), rot=unit((0.0, 0.05 * k, 0.0, 1.0)))
        b.add_shape_box(body, hx=0.15 - 0.02 * k, hy=0.1, hz=0.15 - 0.02 * k, mu=0.6)
    b.add_ground_plane()
    model = b.finalize(device=device, dtype=f64)
    end = simulate(model, 120, iterations=16)
    q = end.body_q.numpy()
    np.testing.assert_allclose(q[:, 1], 0.1 + 0.2 * np.arange(4), atol=5e-4)
    # nothing slid off or toppled: each box within 2 mm of its place on the one below, the bottom one
    # within 2 mm of where it was (each step undoes the slip the sweeps of the last one left over;
    # without, the stack crept a few mm/s)
    np.testing.assert_allclose(np.diff(q[:, [0, 2]], axis=0), [[0.01, 0.0]] * 3, atol=2e-3)
    assert np.abs(q[0, [0, 2]]).max() < 2e-3
    np.testing.assert_allclose(end.body_qd.numpy()[:, 3:], 0.0, atol=1e-2)
    np.testing.assert_allclose(end.body_qd.numpy()[:, :3], 0.0, atol=2e-2)   # (rocks a little: iterations)


@pytest.mark.parametrize("solver", [sk.XPBDSolver, sk.RigidBodySolver])
def test_a_free_spin_keeps_its_rate_and_turns_by_w_t(solver):
    # a sphere spinning at 20 rad/s, no gravity: a step turns it by exactly w dt (the first-order
    # update turned it short by (w dt)^3 / 12, and XPBD, taking w back from the turn, lost 40% a second)
    b = sk.ModelBuilder(gravity=(0.0, 0.0, 0.0))
    body = b.add_body(pos=(0.0, 1.0, 0.0), ang_vel=(0.0, 0.0, 20.0))
    b.add_shape_sphere(body, radius=0.1)
    model = b.finalize(dtype=f64)
    s0, s1 = model.state(), model.state()
    step = solver() if solver is sk.RigidBodySolver else solver(iterations=2, substeps=2)
    for _ in range(45):
        step.step(model, s0, s1, None, DT)
        s0, s1 = s1, s0
    np.testing.assert_allclose(s0.body_qd.numpy()[0], [0.0, 0.0, 20.0, 0.0, 0.0, 0.0], atol=1e-9)
    angle = 20.0 * 45 * DT                                   # 15 rad
    np.testing.assert_allclose(s0.body_q.numpy()[0, 3:], [0.0, 0.0, math.sin(angle / 2), math.cos(angle / 2)],
                               atol=1e-9)


@pytest.mark.parametrize("kinds", [("sphere", "sphere"), ("box", "sphere"), ("box", "box"), ("capsule", "capsule")])
def test_collisions_conserve_momentum(kinds):
    # two bodies meet off-centre in zero gravity: the contact impulses are equal and opposite
    b = sk.ModelBuilder(gravity=0.0)
    for k, (kind, x, v) in enumerate(zip(kinds, (-0.3, 0.3), (1.5, -1.0))):
        body = b.add_body(pos=(x, 0.05 * k, 0.0), vel=(v, 0.0, 0.1 * k), ang_vel=(0.0, 0.5 * k, 1.0 - k))
        if kind == "sphere":
            b.add_shape_sphere(body, radius=0.1)
        elif kind == "box":
            b.add_shape_box(body, hx=0.1, hy=0.12, hz=0.08, rot=(0.0, 0.0, 0.2588190, 0.9659258))
        else:
            b.add_shape_capsule(body, radius=0.08, half_height=0.1, rot=(0.0, 0.0, 0.7071068, 0.7071068))
    model = b.finalize(dtype=f64)
    m = model.body_mass.numpy()
    start = model.state()
    end = simulate(model, 30)
    p0 = (m[:, None] * start.body_qd.numpy()[:, 3:]).sum(0)
    p1 = (m[:, None] * end.body_qd.numpy()[:, 3:]).sum(0)
    np.testing.assert_allclose(p1, p0, atol=1e-9)
    assert end.body_qd.numpy()[0, 3] < 1.0            # they did collide


def test_a_box_rests_on_a_static_triangle_mesh():
    square = (np.array([[-1.0, 0.0, -1.0], [1.0, 0.0, -1.0], [1.0, 0.0, 1.0], [-1.0, 0.0, 1.0]]),
              np.array([0, 2, 1, 0, 3, 2]))
    c, s = math.cos(math.radians(5.0)), math.sin(math.radians(5.0))    # tilted 10 degrees, mu 1: it sticks
    b = sk.ModelBuilder()
    b.add_shape_mesh(square, rot=(s, 0.0, 0.0, c), mu=1.0)
    body = b.add_body(pos=(0.0, 0.05 / math.cos(math.radians(10.0)) + 0.01, 0.0), rot=(s, 0.0, 0.0, c))
    b.add_shape_box(body, hx=0.2, hy=0.05, hz=0.1, density=200.0)
    model = b.finalize(dtype=f64)
    end = simulate(model, 60)
    normal = np.array([0.0, math.cos(math.radians(10.0)), math.sin(math.radians(10.0))])
    assert end.body_q.numpy()[0, :3] @ normal == pytest.approx(0.05, abs=3e-4)
    np.testing.assert_allclose(end.body_qd.numpy()[0], 0.0, atol=1e-3)


# ----------------------------------------------------------------------------- joints

def test_a_pendulum_swings_at_its_period_and_its_joint_holds():
    # a ball on a 1 m hinge, 0.1 rad: T = 2 pi sqrt(I_pivot / (m g L)) (the small-angle error is 0.06 %)
    b = sk.ModelBuilder()
    th = 0.1
    body = b.add_body(pos=(math.sin(th), -math.cos(th), 0.0))
    b.add_shape_sphere(body, radius=0.05)
    b.add_joint_revolute(-1, body, anchor=(0.0, 0.0, 0.0), axis=(0.0, 0.0, 1.0))
    model = b.finalize(dtype=f64)
    dt = 1.0 / 240.0
    _, poses = simulate(model, 960, dt=dt, iterations=4, trace=True)
    x = poses[:, 0, 0]
    up = [i for i in range(1, len(x)) if x[i - 1] < 0.0 <= x[i]]
    period = (up[-1] - up[0]) / (len(up) - 1) * dt
    m = model.body_mass.numpy()[0]
    inertia = 0.4 * m * 0.05 ** 2 + m
    assert period == pytest.approx(2 * math.pi * math.sqrt(inertia / (m * 9.81)), rel=3e-3)
    np.testing.assert_allclose(np.linalg.norm(poses[:, 0, :3], axis=1), 1.0, atol=1e-9)
    np.testing.assert_allclose(poses[:, 0, 2], 0.0, atol=1e-9)     # in its plane


def test_a_chain_of_ball_joints_hangs_together():
    b = sk.ModelBuilder()
    parent = -1
    for k in range(5):   # capsules 0.2 m long along x, joined end to end, released horizontal
        body = b.add_body(pos=(0.1 + 0.2 * k, 0.0, 0.0))
        b.add_shape_capsule(body, radius=0.02, half_height=0.08, rot=(0.0, 0.0, 0.7071068, 0.7071068))
        b.add_joint_ball(parent, body, anchor=(0.2 * k, 0.0, 0.0))
        parent = body
    model = b.finalize(dtype=f64)
    end = simulate(model, 120, iterations=10)
    q = end.body_q.numpy()
    ends = [(rotate(q[k, 3:], np.array([-0.1, 0.0, 0.0])) + q[k, :3], rotate(q[k, 3:], np.array([0.1, 0.0, 0.0]))
             + q[k, :3]) for k in range(5)]
    gaps = [np.linalg.norm(ends[0][0])] + [np.linalg.norm(ends[k][0] - ends[k - 1][1]) for k in range(1, 5)]
    assert max(gaps) < 5e-3
    assert ends[-1][1][1] < -0.6          # it swung down


def test_a_fixed_joint_holds_a_cantilever():
    b = sk.ModelBuilder()
    body = b.add_body(pos=(0.5, 0.0, 0.0))
    b.add_shape_box(body, hx=0.5, hy=0.02, hz=0.05)
    b.add_joint_fixed(-1, body, anchor=(0.0, 0.0, 0.0))
    model = b.finalize(dtype=f64)
    end = simulate(model, 60)
    np.testing.assert_allclose(end.body_q.numpy()[0], [0.5, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0], atol=1e-6)


def test_a_prismatic_drive_settles_at_its_spring_balance_and_limits_stop_it():
    def rail(target_ke, lower):
        b = sk.ModelBuilder()
        body = b.add_body(pos=(0.0, 1.0, 0.0), ang_vel=(0.5, 1.0, 0.0))
        b.add_shape_box(body, hx=0.05, hy=0.05, hz=0.05, density=1000.0)
        b.add_joint_prismatic(-1, body, anchor=(0.0, 1.0, 0.0), axis=(0.0, 1.0, 0.0), target_ke=target_ke,
                              target_kd=0.2 * target_ke, limit_lower=lower, limit_upper=0.2)
        model = b.finalize(dtype=f64)
        return model, simulate(model, 240)

    model, end = rail(500.0, -0.2)       # the drive's spring holds the weight: y = 1 - m g / ke
    m = model.body_mass.numpy()[0]
    np.testing.assert_allclose(end.body_q.numpy()[0], [0.0, 1.0 - m * 9.81 / 500.0, 0.0, 0.0, 0.0, 0.0, 1.0],
                               atol=1e-6)
    model, end = rail(5.0, -0.05)        # too weak: the lower limit holds it
    np.testing.assert_allclose(end.body_q.numpy()[0], [0.0, 0.95, 0.0, 0.0, 0.0, 0.0, 1.0], atol=1e-6)


def test_a_revolute_drive_reaches_its_target_and_the_limit_caps_it():
    b = sk.ModelBuilder(gravity=0.0)
    arm = b.add_body(pos=(0.5, 0.0, 0.0))
    b.add_shape_box(arm, hx=0.5, hy=0.05, hz=0.05)
    b.add_joint_revolute(-1, arm, anchor=(0.0, 0.0, 0.0), axis=(0.0, 0.0, 1.0), target_ke=100.0, target_kd=10.0,
                         limit_lower=-1.0, limit_upper=0.6)
    model = b.finalize(dtype=f64)
    control = model.control()
    for target, reached in ((0.5, 0.5), (1.2, 0.6)):
        control.joint_target.assign(np.array([target]))
        q = simulate(model, 300, control=control).body_q.numpy()[0]
        assert 2.0 * math.atan2(q[5], q[6]) == pytest.approx(reached, abs=1e-4)
        np.testing.assert_allclose(q[:3], [0.5 * math.cos(reached), 0.5 * math.sin(reached), 0.0], atol=1e-4)


# ----------------------------------------------------------------------------- gradients

@sk.kernel
def pose_loss(q: sk.array(dtype=sk.transformd), loss: sk.array(dtype=sk.float64)):
    i = sk.tid()
    x = q[i]
    sk.atomic_add(loss, 0, x[0] * x[0] + 0.5 * x[1] + 0.3 * x[3] - x[5] * x[4] + sk.float64(i) * x[2])


def contact_scene(b):
    a = b.add_body(pos=(0.0, 0.2, 0.0), rot=unit((0.2, 0.1, 0.05, 1.0)))
    b.add_shape_box(a, hx=0.1, hy=0.05, hz=0.08, mu=0.6)
    c = b.add_body(pos=(0.5, 0.1, 0.0))
    b.add_shape_sphere(c, radius=0.1, mu=0.4)
    b.add_ground_plane()


def joint_scene(b):
    a = b.add_body(pos=(0.5, 0.0, 0.0))
    b.add_shape_box(a, hx=0.5, hy=0.05, hz=0.05)
    c = b.add_body(pos=(1.0, -0.5, 0.0))
    b.add_shape_capsule(c, radius=0.05, half_height=0.5)
    b.add_joint_revolute(-1, a, anchor=(0.0, 0.0, 0.0), axis=(0.0, 0.0, 1.0), target_ke=20.0, target_kd=1.0)
    b.add_joint_ball(a, c, anchor=(1.0, 0.0, 0.0))
    d = b.add_body(pos=(-0.3, -0.2, 0.0))
    b.add_shape_box(d, hx=0.05, hy=0.05, hz=0.05)
    b.add_joint_prismatic(-1, d, anchor=(-0.3, -0.2, 0.0), axis=(1.0, 1.0, 0.0), target_ke=50.0, target_kd=2.0,
                          limit_lower=-0.5, limit_upper=0.5)


def rollout(scene, qd0, steps, tape=None, substeps=1):
    b = sk.ModelBuilder()
    scene(b)
    model = b.finalize(dtype=f64, requires_grad=True)
    states = [model.state(requires_grad=True) for _ in range(steps + 1)]
    states[0].body_qd.assign(qd0)
    solver = sk.XPBDSolver(iterations=4 // substeps, substeps=substeps)
    loss = sk.zeros(1, dtype=f64, requires_grad=True, device=model.device)
    with tape if tape is not None else sk.Tape():
        for i in range(steps):
            solver.step(model, states[i], states[i + 1], None, DT)
        sk.launch(pose_loss, model.body_count, inputs=[states[-1].body_q], outputs=[loss])
    return loss.numpy()[0], states[0], loss


@pytest.mark.parametrize("scene,substeps", [(contact_scene, 1), (joint_scene, 1), (contact_scene, 2)],
                         ids=["contacts", "joints", "contacts-substeps"])
def test_rollout_gradients_match_finite_differences(scene, substeps):
    # a tilted box lands on a corner and slides with friction next to a ball; a driven hinge with a
    # ball-jointed pendulum and a driven slider: d loss / d initial velocities over 30 steps, through
    # the contact impulses each step keeps for the next (and each substep for the next)
    n = 2 if scene is contact_scene else 3
    steps = 30 if substeps == 1 else 20    # (at 30 steps of 2 substeps a contact switches within 1e-6)
    qd0 = np.random.default_rng(1).normal(size=(n, 6)) * 0.5
    tape = sk.Tape()
    _, start, loss = rollout(scene, qd0, steps, tape, substeps)
    tape.backward(loss=loss)
    g = start.body_qd.grad.numpy()
    eps = 1.0e-6
    for d in np.random.default_rng(3).normal(size=(3, n, 6)):
        fd = (rollout(scene, qd0 + eps * d, steps, substeps=substeps)[0]
              - rollout(scene, qd0 - eps * d, steps, substeps=substeps)[0]) / (2 * eps)
        assert np.sum(g * d) == pytest.approx(fd, rel=1e-5, abs=1e-8)
    assert np.abs(g).max() > 0.01


# ----------------------------------------------------------------------------- colouring and its fallback

def test_colours_share_no_movable_body():
    from simkit.solvers.rigid.coloring import color_lists, colors

    rng = np.random.default_rng(0)
    a, b = rng.integers(-1, 30, 400), rng.integers(-1, 30, 400)
    b[a == b] = -1                                         # (a constraint joins two bodies)
    movable = rng.random(30) > 0.2
    c = colors(a, b, movable)
    assert (c >= 0).all()
    for k in range(c.max() + 1):
        ends = np.concatenate([a[c == k], b[c == k]])
        ends = ends[(ends >= 0) & movable[np.maximum(ends, 0)]]
        assert len(ends) == len(np.unique(ends))           # no movable body twice in a colour
    assert sorted(np.concatenate(color_lists(a, b, movable)).tolist()) == list(range(400))
    chain = np.arange(-1, 9)
    assert colors(chain[:-1], chain[1:], np.ones(9, bool)).max() <= 2    # a chain: two or three colours


def test_contact_groups_past_the_colours_average_what_they_push(monkeypatch):
    # groups that need more colours than contact_coloring.MAX_COLORS (here: all of them) are solved in
    # one launch, each body moved by the average of its groups' corrections (Jacobi)
    from simkit.solvers.rigid import contact_coloring

    monkeypatch.setattr(contact_coloring, "MAX_COLORS", 0)
    b = sk.ModelBuilder()
    for k in range(2):
        body = b.add_body(pos=(0.0, 0.1 + 0.2 * k, 0.0))
        b.add_shape_box(body, hx=0.15 - 0.03 * k, hy=0.1, hz=0.15 - 0.03 * k, mu=0.6)
    b.add_ground_plane()
    model = b.finalize(dtype=f64)
    solver = sk.XPBDSolver(iterations=20, broad_phase="all_pairs")
    s0, s1 = model.state(), model.state()
    for _ in range(60):
        solver.step(model, s0, s1, None, DT)
        s0, s1 = s1, s0
    np.testing.assert_allclose(s0.body_q.numpy()[:, 1], [0.1, 0.3], atol=3e-3)
    np.testing.assert_allclose(s0.body_q.numpy()[:, [0, 2]], 0.0, atol=1e-2)


def test_steps_captured_in_a_cuda_graph_match_the_cpu(cuda_device):
    # the contacts are coloured on the device (contact_coloring.py): a capture solves them colour by
    # colour as a direct step does, and replays match the same steps on the CPU
    def boxes(device):
        b = sk.ModelBuilder()
        for k in range(2):
            body = b.add_body(pos=(0.01 * k, 0.1 + 0.2 * k, 0.0))
            b.add_shape_box(body, hx=0.15 - 0.03 * k, hy=0.1, hz=0.15 - 0.03 * k, mu=0.6, restitution=0.2)
        b.add_ground_plane()
        return b.finalize(device=device, dtype=f64)

    def run(device, frames, capture):
        model = boxes(device)
        solver = sk.XPBDSolver(iterations=4, broad_phase="all_pairs")
        s0, s1 = model.state(), model.state()
        s0.body_qd.assign(np.tile([0.0, 0.0, 0.0, 0.0, -1.0, 0.0], (2, 1)))   # falling: they bounce

        def frame():
            nonlocal s0, s1
            for _ in range(2):
                solver.step(model, s0, s1, None, DT)
                s0, s1 = s1, s0

        frame()                                  # (direct: kernels loaded, caches filled)
        if capture:
            with sk.ScopedCapture(device) as cap:
                frame()
            for _ in range(frames):
                sk.capture_launch(cap.graph)
        else:
            for _ in range(frames):
                frame()
        return s0.body_q.numpy(), s0.body_qd.numpy()

    (q, qd), (q_ref, qd_ref) = run(cuda_device, 5, True), run("cpu", 5, False)
    np.testing.assert_allclose(q, q_ref, atol=1e-9)
    np.testing.assert_allclose(qd, qd_ref, atol=1e-7)
    assert abs(q[1, 1] - 0.3) < 0.02 and abs(q[0, 1] - 0.1) < 0.02   # resting on each other, not sunk

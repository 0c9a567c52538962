"""Joints of RigidBodySolver: a compound pendulum's period, revolute axes held, ball joints holding
their anchor, welded bodies moving as one, drives reaching their targets, momentum conservation,
prismatic joints (spring-drive offset and period, off-axis loads, limits), revolute limits, and
gradients through a driven arm and a limited slider against central finite differences."""
import math

import numpy as np
import pytest

import simkit as sk
from fd_helpers import central_differences

f64 = sk.float64


def rotate(q, v):
    x, y, z, w = q
    u = np.array([x, y, z])
    return v + 2.0 * w * np.cross(u, v) + 2.0 * np.cross(u, np.cross(u, v))


def z_rotation(angle):
    return (0.0, 0.0, math.sin(angle / 2), math.cos(angle / 2))


def pendulum(device, angle0=0.1, half=0.25, gravity=-9.81, **joint):
    """A rod (box 2 x half long) hanging from a hinge about z at the origin, turned by angle0."""
    b = sk.ModelBuilder(gravity=gravity)
    rod = b.add_body(pos=(half * math.sin(angle0), -half * math.cos(angle0), 0.0), rot=z_rotation(angle0))
    b.add_shape_box(rod, hx=0.02, hy=half, hz=0.02)
    b.add_joint_revolute(-1, rod, anchor=(0.0, 0.0, 0.0), axis=(0.0, 0.0, 1.0), **joint)
    return b


def run(model, steps, dt, control=None, record=None, wrench=None):
    """``steps`` steps from the initial state; ``wrench``: a constant external (torque, force) per body."""
    solver = sk.RigidBodySolver()
    s0, s1 = model.state(), model.state()
    if wrench is not None:
        for s in (s0, s1):
            s.body_f.assign(np.asarray(wrench, dtype=float).reshape(-1, 6))
    for _ in range(steps):
        solver.step(model, s0, s1, control, dt)
        s0, s1 = s1, s0
        if record is not None:
            record.append(s0.body_q.numpy().copy())
    return s0


def test_compound_pendulum_swings_at_its_analytic_period(device):
    model = pendulum(device, ke=1e6, kd=50.0).finalize(device=device, dtype=f64)
    frames = []
    run(model, 4000, 5.0e-4, record=frames)          # 2 s
    q = np.array(frames)[:, 0]
    angle = np.arctan2(q[:, 0], -q[:, 1])            # of the rod's centre about the pivot
    crossings = np.nonzero((angle[:-1] > 0) & (angle[1:] <= 0))[0]
    period = np.diff(crossings).mean() * 5.0e-4
    m = model.body_mass.numpy()[0]
    i_pivot = model.body_inertia.numpy()[0][2, 2] + m * 0.25 ** 2
    expected = 2 * math.pi * math.sqrt(i_pivot / (m * 9.81 * 0.25)) * (1 + 0.1 ** 2 / 16)   # amplitude 0.1 rad
    assert len(crossings) >= 2
    assert period == pytest.approx(expected, rel=5e-3)
    # the rod's end stays on the pivot (the anchor spring stretches by about m g / ke)
    ends = q[:, :3] + np.array([rotate(r, np.array([0.0, 0.25, 0.0])) for r in q[:, 3:]])
    assert np.abs(ends).max() < 1e-4
    assert np.abs(angle).max() == pytest.approx(0.1, rel=0.02)                 # it keeps its amplitude


def test_revolute_joint_keeps_its_axis_against_a_twist(device):
    # the rod spins about x at the start: the hinge stops rotations off its axis
    # (the damping's bound: 0.3 I / angular_kd > dt for the rod's tiny inertia about its length)
    b = pendulum(device, gravity=0.0, ke=1e5, kd=50.0, angular_ke=200.0, angular_kd=0.2)
    b.body_qd[0] = (3.0, 0.0, 2.0, -0.5, 0.0, 0.0)          # (angular, linear): mostly off-axis
    model = b.finalize(device=device, dtype=f64)
    assert sk.RigidBodySolver().max_time_step(model) > 2.5e-4
    end = run(model, 4000, 2.5e-4)
    r = end.body_q.numpy()[0, 3:]
    np.testing.assert_allclose(rotate(r, np.array([0.0, 0.0, 1.0])), [0.0, 0.0, 1.0], atol=5e-3)   # wobbles
    w = end.body_qd.numpy()[0, :3]
    assert abs(w[2]) > 0.5 and np.abs(w[:2]).max() < 0.15     # swinging about z; off-axis 3 rad/s -> wobble


def test_ball_joint_chain_holds_together_and_conserves_momentum_in_free_space(device):
    # three links with ball joints, thrown and spinning, no world joint, no gravity: total linear and
    # angular momentum are conserved and the joints' anchors stay together
    b = sk.ModelBuilder(gravity=0.0)
    links = []
    for k in range(3):
        body = b.add_body(pos=(0.2 * k, 0.0, 0.0), vel=(0.0, 0.3 * k, 0.1), ang_vel=(0.5, 0.0, 1.0 - k))
        b.add_shape_capsule(body, radius=0.03, half_height=0.07, rot=z_rotation(math.pi / 2))
        links.append(body)
    for k in range(2):
        b.add_joint_ball(links[k], links[k + 1], anchor=(0.2 * k + 0.1, 0.0, 0.0), ke=1e5, kd=20.0)
    model = b.finalize(device=device, dtype=f64)
    m, inertia, com = model.body_mass.numpy(), model.body_inertia.numpy(), model.body_com.numpy()

    def momenta(state):
        q, qd = state.body_q.numpy(), state.body_qd.numpy()
        L = np.zeros(3)
        for i in range(3):
            R = np.array([rotate(q[i, 3:], e) for e in np.eye(3)]).T
            L += R @ inertia[i] @ R.T @ qd[i, :3] + m[i] * np.cross(q[i, :3] + R @ com[i], qd[i, 3:])
        return (m[:, None] * qd[:, 3:]).sum(0), L

    P0, L0 = momenta(model.state())
    end = run(model, 2000, 2.5e-4)
    P1, L1 = momenta(end)
    np.testing.assert_allclose(P1, P0, atol=1e-10)
    np.testing.assert_allclose(L1, L0, atol=2e-3 * np.linalg.norm(L0))
    q = end.body_q.numpy()
    for k in range(2):
        a = q[k, :3] + rotate(q[k, 3:], np.array([0.1, 0.0, 0.0]))
        c = q[k + 1, :3] + rotate(q[k + 1, 3:], np.array([-0.1, 0.0, 0.0]))
        assert np.linalg.norm(a - c) < 1e-3


def test_fixed_joint_moves_two_bodies_as_one(device):
    # a box welded to a sphere, thrown spinning: their relative pose stays; they rotate like one body
    b = sk.ModelBuilder(gravity=-9.81)
    box = b.add_body(pos=(0.0, 1.0, 0.0), vel=(1.0, 2.0, 0.0), ang_vel=(0.0, 0.0, 3.0))
    b.add_shape_box(box, hx=0.1, hy=0.1, hz=0.1)
    ball = b.add_body(pos=(0.25, 1.0, 0.0), vel=(1.0, 2.75, 0.0), ang_vel=(0.0, 0.0, 3.0))   # v = v0 + w x r
    b.add_shape_sphere(ball, radius=0.08)
    b.add_joint_fixed(box, ball, ke=1e6, kd=100.0, angular_ke=1e4, angular_kd=10.0)
    model = b.finalize(device=device, dtype=f64)
    end = run(model, 2000, 2.5e-4)
    q = end.body_q.numpy()
    rel = rotate(np.array([-q[0, 3], -q[0, 4], -q[0, 5], q[0, 6]]), q[1, :3] - q[0, :3])
    np.testing.assert_allclose(rel, [0.25, 0.0, 0.0], atol=1e-3)
    np.testing.assert_allclose(q[1, 3:], q[0, 3:], atol=1e-3)
    m = model.body_mass.numpy()
    com = (m[0] * q[0, :3] + m[1] * q[1, :3]) / m.sum()
    com0 = (m[0] * np.array([0.0, 1.0, 0.0]) + m[1] * np.array([0.25, 1.0, 0.0])) / m.sum()
    v0 = (m[0] * np.array([1.0, 2.0, 0.0]) + m[1] * np.array([1.0, 2.75, 0.0])) / m.sum()
    t = 0.5
    np.testing.assert_allclose(com, com0 + v0 * t + [0.0, -0.5 * 9.81 * t * t, 0.0], atol=5e-3)


def test_revolute_drive_reaches_its_target_angle(device):
    model = pendulum(device, angle0=0.0, gravity=0.0, ke=1e5, kd=50.0, target_ke=5.0, target_kd=1.0).finalize(
        device=device, dtype=f64)
    control = model.control()
    control.joint_target.assign(np.array([0.7]))
    end = run(model, 4000, 2.5e-4, control)
    r = end.body_q.numpy()[0, 3:]
    assert 2 * math.atan2(r[2], r[3]) == pytest.approx(0.7, abs=1e-3)


# ----------------------------------------------------------------------------- prismatic joints, limits

def slider(device, axis=(0.0, 1.0, 0.0), gravity=-9.81, pos=(0.3, 1.0, -0.2), rot=(0.0, 0.0, 0.0, 1.0), **joint):
    """A 0.1 m box (1 kg) on a rail through its centre along ``axis``, fixed to the world."""
    b = sk.ModelBuilder(gravity=gravity)
    body = b.add_body(pos=pos, rot=rot)
    b.add_shape_box(body, hx=0.05, hy=0.05, hz=0.05)
    b.add_joint_prismatic(-1, body, anchor=pos, axis=axis, **joint)
    return b


def slide(q, pos, axis):
    """(the position along the unit axis, the distance off it) of the box centres in q."""
    d = q[..., :3] - np.asarray(pos)
    x = d @ np.asarray(axis)
    return x, np.linalg.norm(d - x[..., None] * np.asarray(axis), axis=-1)


@pytest.mark.parametrize("dtype", [f64, sk.float32])
def test_prismatic_spring_drive_under_gravity_settles_at_m_g_over_ke(device, dtype):
    # the rail tilted 45 degrees in the xy plane, the box turned: gravity's part along the rail
    # stretches the drive's spring by m g cos45 / target_ke, its part across it the anchor
    # spring by m g sin45 / ke; the rotation stays
    axis, pos, rot = np.array([1.0, 1.0, 0.0]) / math.sqrt(2.0), (0.3, 1.0, -0.2), z_rotation(0.4)
    ke, target_ke = 1.0e5, 200.0
    model = slider(device, axis=axis, pos=pos, rot=rot, ke=ke, kd=200.0, angular_ke=100.0, angular_kd=0.5,
                   target_ke=target_ke, target_kd=10.0).finalize(device=device, dtype=dtype)
    m, g = model.body_mass.numpy()[0], 9.81
    tol = 1e-3 if dtype is f64 else 3e-2                    # float32: 1e-7 m resolution at 1 m
    assert m == pytest.approx(1.0)
    end = run(model, 4000, 5.0e-4)                         # 2 s, critically damped-ish drive
    q = end.body_q.numpy()[0]
    x, off = slide(q, pos, axis)
    assert x == pytest.approx(-m * g / math.sqrt(2.0) / target_ke, rel=tol)
    assert off == pytest.approx(m * g / math.sqrt(2.0) / ke, rel=10 * tol)
    np.testing.assert_allclose(q[3:], rot, atol=1e-6)


def test_prismatic_joint_resists_off_axis_forces_and_torques(device):
    # a constant force across the rail and a torque on the box (no gravity): it moves across by
    # F / ke and turns by about T / angular_ke, not along the rail (no force along it)
    ke, angular_ke, F, T = 1.0e5, 1.0e3, 20.0, 0.5
    pos, axis = (0.0, 0.5, 0.0), np.array([1.0, 0.0, 0.0])
    model = slider(device, axis=axis, pos=pos, gravity=0.0, ke=ke, kd=300.0, angular_ke=angular_ke,
                   angular_kd=0.4).finalize(device=device, dtype=f64)
    dt = 2.5e-4
    assert sk.RigidBodySolver().max_time_step(model) > dt
    frames = []
    run(model, 4000, dt, record=frames, wrench=[T, T, T, 0.0, F, F])
    q = np.array(frames)[:, 0]
    x, off = slide(q, pos, axis)
    assert np.abs(x).max() < 1e-9                                       # no slide
    assert off[-1] == pytest.approx(math.sqrt(2.0) * F / ke, rel=1e-3)
    assert off.max() < 2.0 * math.sqrt(2.0) * F / ke                    # at most the step response's overshoot
    turn = 2.0 * np.arcsin(np.linalg.norm(q[:, 3:6], axis=1))
    assert turn[-1] == pytest.approx(math.sqrt(3.0) * T / angular_ke, rel=0.02)   # small angle: T / k
    assert turn.max() < 2.2 * math.sqrt(3.0) * T / angular_ke


def test_prismatic_spring_drive_oscillates_at_sqrt_m_over_k(device):
    # no damping, target 5 cm ahead: the box oscillates between 0 and 10 cm with period 2 pi sqrt(m / k)
    k, dt = 100.0, 5.0e-4
    axis, pos = np.array([0.0, 0.6, 0.8]), (0.0, 0.0, 0.0)
    model = slider(device, axis=axis, pos=pos, gravity=0.0, target_ke=k).finalize(device=device, dtype=f64)
    control = model.control()
    control.joint_target.assign(np.array([0.05]))
    frames = []
    run(model, 6000, dt, control, record=frames)                        # 3 s: ~4.8 periods
    x, off = slide(np.array(frames)[:, 0], pos, axis)
    s = np.nonzero(np.sign(x[:-1] - 0.05) != np.sign(x[1:] - 0.05))[0]
    t = (s + (x[s] - 0.05) / (x[s] - x[s + 1])) * dt                   # crossings of the centre, interpolated
    period = 2.0 * np.diff(t).mean()
    m = model.body_mass.numpy()[0]
    assert len(t) >= 8
    assert period == pytest.approx(2.0 * math.pi * math.sqrt(m / k), rel=1e-3)
    assert x.max() == pytest.approx(0.1, rel=1e-3) and x.min() > -1e-6   # energy kept
    assert off.max() < 1e-9


def test_revolute_limit_stops_a_pendulum(device):
    # a rod released 0.3 rad from hanging would swing 0.6 rad past its start; a limit 0.2 rad below
    # the start stops it and holds it there against gravity (deflection tau_g / limit_ke); a drive
    # with only target_kd damps the hinge
    angle0, lower, limit_ke = 0.3, -0.2, 1.0e3
    model = pendulum(device, angle0=angle0, ke=1e5, kd=50.0, angular_kd=0.02, target_kd=0.05, limit_lower=lower,
                     limit_ke=limit_ke, limit_kd=12.0).finalize(device=device, dtype=f64)
    dt = 2.5e-4
    assert sk.RigidBodySolver().max_time_step(model) > dt
    frames = []
    run(model, 8000, dt, record=frames)                                 # 2 s
    q = np.array(frames)[:, 0]
    angle = 2.0 * np.arctan2(q[:, 5], q[:, 6]) - angle0                 # the joint angle (about z)
    m = model.body_mass.numpy()[0]
    tau = m * 9.81 * 0.25 * math.sin(angle0 + lower)                    # gravity's torque at the limit
    assert lower - 0.02 < angle.min() < lower - 1e-3                    # hit at ~1.5 rad/s: ~0.01 rad in
    assert angle[-1] == pytest.approx(lower - tau / limit_ke, abs=1e-6)
    assert np.abs(angle[-2000:] - angle[-1]).max() < 1e-6               # at rest for the last 0.5 s


def test_prismatic_limit_stops_a_falling_slider(device):
    # a vertical slider, no drive, falls 10 cm onto its lower limit and rests m g / limit_ke below it
    lower, limit_ke, dt = -0.1, 1.0e5, 2.5e-4
    pos, axis = (0.3, 1.0, -0.2), (0.0, 1.0, 0.0)
    model = slider(device, axis=axis, pos=pos, ke=1e5, kd=200.0, limit_lower=lower, limit_upper=0.05,
                   limit_ke=limit_ke, limit_kd=300.0).finalize(device=device, dtype=f64)
    assert sk.RigidBodySolver().max_time_step(model) > dt
    frames = []
    run(model, 6000, dt, record=frames)                                 # 1.5 s
    x, off = slide(np.array(frames)[:, 0], pos, axis)
    m = model.body_mass.numpy()[0]
    v = math.sqrt(2.0 * 9.81 * 0.1)                                     # at impact
    assert lower - 1.2 * v * math.sqrt(m / limit_ke) < x.min() < lower - 1e-3
    assert x.max() < 1e-9                                               # the bounce stays below the start
    assert x[-1] == pytest.approx(lower - m * 9.81 / limit_ke, abs=1e-6)
    assert off.max() < 1e-9


@pytest.mark.parametrize("kind", ["revolute", "revolute_past_pi", "prismatic"])
def test_drive_against_a_limit_balances_the_two_springs(device, kind):
    # the drive pulls past the upper limit: the coordinate settles where target_ke (target - x) =
    # limit_ke (x - upper), so the drive and the limit see the same x. "revolute_past_pi": limits
    # [2, 3.5] rad (the angle is measured around their middle), the hinge starts below them and
    # turns through pi
    target_ke, limit_ke = 3.0, 9.0
    if kind == "prismatic":
        target, lower, upper = 0.25, -math.inf, 0.125
        b = slider(device, axis=(1.0, 0.0, 0.0), gravity=0.0, target_ke=100 * target_ke, target_kd=10.0,
                   limit_upper=upper, limit_ke=100 * limit_ke, limit_kd=10.0)
    else:
        target, lower, upper = (1.0, -math.inf, 0.5) if kind == "revolute" else (4.0, 2.0, 3.5)
        b = pendulum(device, angle0=0.0, gravity=0.0, ke=1e5, kd=50.0, target_ke=target_ke, target_kd=1.0,
                     limit_lower=lower, limit_upper=upper, limit_ke=limit_ke, limit_kd=1.0)
    model = b.finalize(device=device, dtype=f64)
    control = model.control()
    control.joint_target.assign(np.array([target]))
    q = run(model, 8000, 2.5e-4, control).body_q.numpy()[0]
    x = q[0] - 0.3 if kind == "prismatic" else (2 * math.atan2(q[5], q[6])) % (2 * math.pi)
    assert x == pytest.approx((target_ke * target + limit_ke * upper) / (target_ke + limit_ke), abs=1e-5)


def test_prismatic_joint_between_free_bodies_conserves_momentum(device):
    # a rail body and a slider body, thrown spinning in free space, the slider driven and hitting its
    # limit: linear momentum is conserved exactly, angular to the explicit integrator's drift
    b = sk.ModelBuilder(gravity=0.0)
    rail = b.add_body(vel=(0.1, 0.2, 0.0), ang_vel=(0.3, 0.0, 1.0))
    b.add_shape_box(rail, hx=0.3, hy=0.03, hz=0.03)
    car = b.add_body(pos=(0.1, 0.06, 0.0), vel=(0.0, 0.2, -0.1), ang_vel=(0.0, 0.5, 0.0))
    b.add_shape_box(car, hx=0.05, hy=0.03, hz=0.03)
    b.add_joint_prismatic(rail, car, anchor=(0.1, 0.06, 0.0), axis=(1.0, 0.0, 0.0), ke=1e5, kd=20.0,
                          angular_ke=100.0, angular_kd=0.05, target_ke=50.0, limit_upper=0.05, limit_ke=1e3,
                          limit_kd=5.0)
    model = b.finalize(device=device, dtype=f64)
    control = model.control()
    control.joint_target.assign(np.array([0.2]))
    m, inertia, com = model.body_mass.numpy(), model.body_inertia.numpy(), model.body_com.numpy()

    def momenta(state):
        q, qd = state.body_q.numpy(), state.body_qd.numpy()
        L = np.zeros(3)
        for i in range(2):
            R = np.array([rotate(q[i, 3:], e) for e in np.eye(3)]).T
            L += R @ inertia[i] @ R.T @ qd[i, :3] + m[i] * np.cross(q[i, :3] + R @ com[i], qd[i, 3:])
        return (m[:, None] * qd[:, 3:]).sum(0), L

    P0, L0 = momenta(model.state())
    dt = 1.0e-4
    assert sk.RigidBodySolver().max_time_step(model) > dt
    end = run(model, 5000, dt, control)
    P1, L1 = momenta(end)
    np.testing.assert_allclose(P1, P0, atol=1e-10)
    np.testing.assert_allclose(L1, L0, atol=2e-3 * np.linalg.norm(L0))
    q = end.body_q.numpy()
    rel = rotate(np.array([-q[0, 3], -q[0, 4], -q[0, 5], q[0, 6]]), q[1, :3] - q[0, :3])   # in the rail's frame
    assert rel[0] - 0.1 == pytest.approx(0.05, abs=0.02)                 # slid to about the limit
    np.testing.assert_allclose(rel[1:], [0.06, 0.0], atol=2e-3)          # on the rail


# ----------------------------------------------------------------------------- gradients

@sk.kernel
def tip_loss(q: sk.array(dtype=sk.transformd), loss: sk.array(dtype=sk.float64)):
    tip = sk.transform_point(q[1], sk.vec3d(0.0, -0.15, 0.0))
    loss[0] = tip[0] * 2.0 + tip[1] - tip[2] * 0.5


def arm_rollout(device, target, steps, tape=None):
    # a two-link arm hanging from the world, shoulder driven, elbow passive, under gravity
    b = sk.ModelBuilder()
    upper = b.add_body(pos=(0.0, -0.15, 0.0))
    b.add_shape_capsule(upper, radius=0.03, half_height=0.12)
    lower = b.add_body(pos=(0.0, -0.45, 0.0), ang_vel=(0.0, 0.0, 0.5))
    b.add_shape_capsule(lower, radius=0.03, half_height=0.12)
    b.add_joint_revolute(-1, upper, anchor=(0.0, 0.0, 0.0), axis=(0.0, 0.0, 1.0), target_ke=20.0, target_kd=1.0)
    b.add_joint_ball(upper, lower, anchor=(0.0, -0.3, 0.0))
    model = b.finalize(device=device, dtype=f64, requires_grad=True)
    control = model.control()
    control.joint_target.assign(np.asarray(target))
    loss = sk.zeros(1, dtype=f64, requires_grad=True, device=device)
    solver = sk.RigidBodySolver()
    with tape if tape is not None else sk.Tape():
        state = model.state()
        for _ in range(steps):
            nxt = model.state()
            solver.step(model, state, nxt, control, 1.0e-3)
            state = nxt
        sk.launch(tip_loss, 1, inputs=[state.body_q], outputs=[loss], device=device)
    return loss, control, model


def test_gradients_through_a_driven_arm_match_finite_differences(device):
    target, steps = np.array([0.8, 0.0]), 150
    tape = sk.Tape()
    loss, control, model = arm_rollout(device, target, steps, tape)
    tape.backward(loss=loss)
    g = control.joint_target.grad.numpy()
    g_ke = model.joint_target_ke.grad.numpy()
    eps = 1.0e-6
    fd = (arm_rollout(device, target + [eps, 0.0], steps)[0].numpy()[0]
          - arm_rollout(device, target - [eps, 0.0], steps)[0].numpy()[0]) / (2 * eps)
    assert g[0] == pytest.approx(fd, rel=1e-5) and abs(fd) > 1e-3
    assert g[1] == 0.0                     # the ball joint has no drive
    assert abs(g_ke[0]) > 0.0


@sk.kernel
def slider_loss(q: sk.array(dtype=sk.transformd), loss: sk.array(dtype=sk.float64)):
    p = sk.transform_point(q[0], sk.vec3d(0.05, 0.0, 0.0))
    loss[0] = p[0] * 2.0 + p[1] - p[2] * 0.5


def slider_rollout(device, target, offset, steps, tape=None):
    """A box on a tilted rail under gravity, started ``offset`` [m] off its rest pose and moving, its
    drive pulling it to ``target`` against the upper limit (the limit and the anchor spring engage).
    Returns the loss array, the control and the initial state."""
    axis, pos = np.array([1.0, 2.0, -0.5]) / math.sqrt(5.25), (0.3, 1.0, -0.2)
    b = slider(device, axis=axis, pos=pos, rot=z_rotation(0.3), ke=2e4, kd=20.0, angular_ke=100.0,
               angular_kd=0.1, target_ke=300.0, target_kd=2.0, limit_lower=-0.1, limit_upper=0.02, limit_ke=2e3,
               limit_kd=20.0)
    b.body_qd[0] = (0.5, -0.3, 0.2, 0.1, 0.2, 0.0)
    model = b.finalize(device=device, dtype=f64, requires_grad=True)
    control = model.control()
    control.joint_target.assign(np.array([target]))
    state0 = model.state()
    q0 = state0.body_q.numpy()
    q0[0, :3] += offset
    state0.body_q.assign(q0)
    loss = sk.zeros(1, dtype=f64, requires_grad=True, device=device)
    solver = sk.RigidBodySolver()
    with tape if tape is not None else sk.Tape():
        state = state0
        for _ in range(steps):
            nxt = model.state()
            solver.step(model, state, nxt, control, 1.0e-3)
            state = nxt
        sk.launch(slider_loss, 1, inputs=[state.body_q], outputs=[loss], device=device)
    return loss, control, state0, model


def test_gradients_through_a_limited_prismatic_slider_match_finite_differences(device):
    x = {"target": np.array([[0.1]]), "offset": np.array([[[0.002, -0.001, 0.003]]])}
    steps = 120
    tape = sk.Tape()
    loss, control, state0, model = slider_rollout(device, x["target"][0, 0], x["offset"][0, 0], steps, tape)
    tape.backward(loss=loss)
    grads = {"target": control.joint_target.grad.numpy(), "offset": state0.body_q.grad.numpy()[0, :3]}

    def total(v):
        return slider_rollout(device, v["target"][0, 0], v["offset"][0, 0], steps)[0].numpy()[None]

    fd_target, fd_offset = central_differences(x, ["target", "offset"], total)
    assert grads["target"][0] == pytest.approx(fd_target[0, 0], rel=1e-5) and abs(fd_target[0, 0]) > 1e-2
    np.testing.assert_allclose(grads["offset"], fd_offset[0, 0], rtol=1e-5)
    assert np.abs(fd_offset).min() > 1e-3
    assert abs(model.joint_limit_ke.grad.numpy()[0]) > 0.0                 # the limit was active
    assert abs(model.joint_ke.grad.numpy()[0]) > 0.0


# ----------------------------------------------------------------------------- errors

def test_bad_joints_are_named():
    b = sk.ModelBuilder()
    body = b.add_body()
    with pytest.raises(ValueError, match="child must be a body index"):
        b.add_joint_ball(-1, 3, anchor=(0, 0, 0))
    with pytest.raises(ValueError, match="parent must be -1"):
        b.add_joint_ball(5, body, anchor=(0, 0, 0))
    with pytest.raises(ValueError, match="axis must not be zero"):
        b.add_joint_revolute(-1, body, anchor=(0, 0, 0), axis=(0, 0, 0))
    with pytest.raises(ValueError, match="finite numbers >= 0"):
        b.add_joint_revolute(-1, body, anchor=(0, 0, 0), axis=(0, 0, 1), ke=-1.0)
    with pytest.raises(ValueError, match="child must be a body index"):
        b.add_joint_fixed(-1, -1)
    with pytest.raises(ValueError, match=r"limit_lower must be <= limit_upper .* got \[0.5, 0.2\]"):
        b.add_joint_prismatic(-1, body, anchor=(0, 0, 0), axis=(1, 0, 0), limit_lower=0.5, limit_upper=0.2)
    with pytest.raises(ValueError, match="limit_lower must be <= limit_upper"):
        b.add_joint_revolute(-1, body, anchor=(0, 0, 0), axis=(0, 0, 1), limit_lower=math.nan)
    with pytest.raises(ValueError, match="limit_ke and limit_kd must be finite numbers >= 0"):
        b.add_joint_revolute(-1, body, anchor=(0, 0, 0), axis=(0, 0, 1), limit_ke=-1.0)
    with pytest.raises(ValueError, match="add_joint_prismatic: axis must not be zero"):
        b.add_joint_prismatic(-1, body, anchor=(0, 0, 0), axis=(0, 0, 0))


def test_joined_bodies_do_not_collide(device):
    # two overlapping boxes joined by a ball joint at rest, no gravity: no contact force pushes them
    # apart, with either broad phase; a sphere overlapping one of them (not joined) is pushed away
    b = sk.ModelBuilder(gravity=0.0)
    a = b.add_body()
    b.add_shape_box(a, hx=0.1, hy=0.1, hz=0.1)
    c = b.add_body(pos=(0.15, 0.0, 0.0))
    b.add_shape_box(c, hx=0.1, hy=0.1, hz=0.1)
    b.add_joint_ball(a, c, anchor=(0.075, 0.0, 0.0))
    free = b.add_body(pos=(0.0, 0.0, 0.5))
    b.add_shape_sphere(free, radius=0.1)
    b.add_shape_sphere(-1, pos=(0.0, 0.0, 0.62), radius=0.05)   # static, overlapping the free sphere
    model = b.finalize(device=device, dtype=f64)
    assert model.body_filter.numpy().tolist() == [1, 0, -1] and model.rigid_pair_count == 5
    for mode in ("all_pairs", "bvh"):
        solver = sk.RigidBodySolver(broad_phase=mode)
        s0, s1 = model.state(), model.state()
        for _ in range(10):
            solver.step(model, s0, s1, None, 1.0e-3)
            s0, s1 = s1, s0
        qd = s0.body_qd.numpy()
        np.testing.assert_array_equal(qd[:2], 0.0)
        assert qd[2, 5] < -0.01                                   # the free sphere is pushed off the static one

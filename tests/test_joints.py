"""Joints of RigidBodySolver: a compound pendulum's period, revolute axes held, ball joints holding
their anchor, welded bodies moving as one, drives reaching their targets, momentum conservation, and
gradients through a driven arm against central finite differences."""
import math

import numpy as np
import pytest

import simkit as sk

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


def run(model, steps, dt, control=None, record=None):
    solver = sk.RigidBodySolver()
    s0, s1 = model.state(), model.state()
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

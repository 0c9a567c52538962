"""simkit.io.load_usd: UsdPhysics joints (spherical, revolute and prismatic with drives and limits, fixed)
into simkit joints, in numbers: anchors and axes against numpy and UsdPhysics' own parser, a loaded pendulum's period
against the compound pendulum's, drives reaching their USD targets, units and skipped joints."""
import math

import numpy as np
import pytest

import simkit as sk

pxr = pytest.importorskip("pxr")
from pxr import Gf, Usd, UsdGeom, UsdPhysics

f64 = sk.float64


def _stage(up="Y", mpu=1.0, gravity=True):
    stage = Usd.Stage.CreateInMemory()
    UsdGeom.SetStageUpAxis(stage, UsdGeom.Tokens.y if up == "Y" else UsdGeom.Tokens.z)
    UsdGeom.SetStageMetersPerUnit(stage, mpu)
    if gravity:
        UsdPhysics.Scene.Define(stage, "/physicsScene")
    return stage


def _axis_angle(axis, angle):
    """Rotation matrix about a unit axis (column vectors), independent of simkit and pxr."""
    x, y, z = np.asarray(axis, float) / np.linalg.norm(axis)
    c, s = math.cos(angle), math.sin(angle)
    K = np.array([[0, -z, y], [z, 0, -x], [-y, x, 0]])
    return np.eye(3) + s * K + (1 - c) * K @ K


def _q_matrix(q):
    """Rotation matrix of a quaternion (x, y, z, w)."""
    x, y, z, w = np.asarray(q, float) / np.linalg.norm(q)
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                     [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                     [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]])


def _gf_quat(axis, angle):
    a = np.asarray(axis, float) / np.linalg.norm(axis) * math.sin(angle / 2)
    return Gf.Quatf(math.cos(angle / 2), *a)


def _place(prim, pos=None, axis=None, angle=0.0, scale=None):
    xf = UsdGeom.Xformable(prim)
    if pos is not None:
        xf.AddTranslateOp().Set(Gf.Vec3d(*pos))
    if axis is not None:
        xf.AddOrientOp().Set(_gf_quat(axis, angle))
    if scale is not None:
        xf.AddScaleOp().Set(Gf.Vec3f(*scale))
    return prim


def _body(stage, path, kind="cube", pos=None, axis=None, angle=0.0, scale=None, **attrs):
    """A rigid body that is its own collider (a Cube, Sphere or Capsule)."""
    geom = {"sphere": UsdGeom.Sphere, "cube": UsdGeom.Cube, "capsule": UsdGeom.Capsule}[kind].Define(stage, path)
    for k, v in attrs.items():
        geom.GetPrim().GetAttribute(k).Set(v)
    UsdPhysics.CollisionAPI.Apply(geom.GetPrim())
    UsdPhysics.RigidBodyAPI.Apply(geom.GetPrim())
    return _place(geom.GetPrim(), pos, axis, angle, scale)


def _joint(stage, path, kind, body0=None, body1=None, pos0=(0.0, 0.0, 0.0), pos1=(0.0, 0.0, 0.0), rot0=None,
           rot1=None, axis=None):
    j = {"revolute": UsdPhysics.RevoluteJoint, "spherical": UsdPhysics.SphericalJoint,
         "fixed": UsdPhysics.FixedJoint, "prismatic": UsdPhysics.PrismaticJoint,
         "distance": UsdPhysics.DistanceJoint, "d6": UsdPhysics.Joint}[kind].Define(stage, path)
    if body0 is not None:
        j.CreateBody0Rel().SetTargets([body0])
    if body1 is not None:
        j.CreateBody1Rel().SetTargets([body1])
    j.CreateLocalPos0Attr(Gf.Vec3f(*pos0))
    j.CreateLocalPos1Attr(Gf.Vec3f(*pos1))
    if rot0 is not None:
        j.CreateLocalRot0Attr(_gf_quat(*rot0))
    if rot1 is not None:
        j.CreateLocalRot1Attr(_gf_quat(*rot1))
    if axis is not None:
        j.GetPrim().GetAttribute("physics:axis").Set(axis)
    return j.GetPrim()


def _drive(joint, stiffness=0.0, damping=0.0, target=None, kind=None, dof="angular"):
    d = UsdPhysics.DriveAPI.Apply(joint, dof)
    d.CreateStiffnessAttr(stiffness)
    d.CreateDampingAttr(damping)
    if target is not None:
        d.CreateTargetPositionAttr(target)
    if kind is not None:
        d.CreateTypeAttr(kind)
    return d


def _run(model, seconds, dt, control=None, record=None):
    solver = sk.RigidBodySolver()
    s0, s1 = model.state(), model.state()
    for _ in range(round(seconds / dt)):
        solver.step(model, s0, s1, control, dt)
        s0, s1 = s1, s0
        if record is not None:
            record.append(s0.body_q.numpy().copy())
    return s0


def _point(q, local):
    """World position of a body-frame point, body pose q = (pos, quat xyzw)."""
    return np.asarray(q[:3]) + _q_matrix(q[3:]) @ np.asarray(local, float)


# ----------------------------------------------------------------------------- revolute: a pendulum

def test_revolute_pendulum_matches_the_compound_pendulum_period():
    # a 0.4 m rod (a unit Cube scaled to 0.08 x 0.4 x 0.08) hinged to the world about z at P, its end
    # localPos1 = (0, 0.5, 0) of the scaled cube, turned 0.1 rad from hanging straight down
    stage = _stage()
    P, half, angle0 = np.array([0.3, 1.2, -0.1]), 0.2, 0.1
    R0 = _axis_angle((0.0, 0.0, 1.0), angle0)
    centre = P + R0 @ [0.0, -half, 0.0]
    _body(stage, "/World/rod", pos=centre, axis=(0.0, 0.0, 1.0), angle=angle0, scale=(0.08, 2 * half, 0.08),
          size=1.0)
    _joint(stage, "/World/hinge", "revolute", body1="/World/rod", pos0=P, pos1=(0.0, 0.5, 0.0), axis="Z")
    builder = sk.ModelBuilder()
    info = sk.io.load_usd(stage, builder, joint_ke=5.0e5, joint_kd=50.0, joint_angular_ke=100.0,
                          joint_angular_kd=1.0)
    assert info.joints == {"/World/hinge": 0} and info.joint_targets == {} and info.skipped == {}
    model = builder.finalize(device="cpu", dtype=f64)
    assert model.joint_type.numpy().tolist() == [1]                          # revolute
    assert model.joint_parent.numpy().tolist() == [-1] and model.joint_child.numpy().tolist() == [0]
    np.testing.assert_allclose(model.joint_anchor_parent.numpy(), [P], atol=1e-7)          # world frame
    np.testing.assert_allclose(model.joint_anchor_child.numpy(), [[0.0, half, 0.0]], atol=1e-7)   # rod frame
    np.testing.assert_allclose(model.joint_axis_parent.numpy(), [[0.0, 0.0, 1.0]], atol=1e-7)
    np.testing.assert_allclose(model.joint_axis_child.numpy(), [R0.T @ [0.0, 0.0, 1.0]], atol=1e-7)
    np.testing.assert_allclose(model.joint_ke.numpy(), [5.0e5])
    np.testing.assert_allclose(model.joint_angular_kd.numpy(), [1.0])
    np.testing.assert_allclose(model.joint_target_ke.numpy(), [0.0])

    dt = 5.0e-4
    assert sk.RigidBodySolver().max_time_step(model) > dt
    frames = []
    _run(model, 1.6, dt, record=frames)
    q = np.array(frames)[:, 0]
    r = q[:, :3] - P
    angle = np.arctan2(r[:, 0], -r[:, 1])                                   # of the rod's centre about P
    s = np.nonzero(np.sign(angle[:-1]) != np.sign(angle[1:]))[0]            # zero crossings, interpolated
    t = (s + angle[s] / (angle[s] - angle[s + 1])) * dt
    assert len(t) >= 3
    period = 2.0 * np.diff(t).mean()
    m = model.body_mass.numpy()[0]
    i_pivot = model.body_inertia.numpy()[0][2, 2] + m * half ** 2
    np.testing.assert_allclose(i_pivot, m * ((2 * half) ** 2 + 0.08 ** 2) / 12 + m * half ** 2, rtol=1e-6)
    expected = 2 * math.pi * math.sqrt(i_pivot / (m * 9.81 * half)) * (1 + angle0 ** 2 / 16)
    assert period == pytest.approx(expected, rel=0.01)
    ends = np.array([_point(f, (0.0, half, 0.0)) for f in q])                # the rod's end stays on P
    assert np.abs(ends - P).max() < 1e-4
    assert np.abs(angle).max() == pytest.approx(angle0, rel=0.02)


# ----------------------------------------------------------------------------- spherical

def test_spherical_joints_hold_a_swinging_chain_together():
    # a sphere hung from the world at the origin by a ball joint, a capsule hung from the sphere; the
    # second joint targets the capsule's child prim (its frame places localPos1, as in UsdPhysics)
    stage = _stage()
    _body(stage, "/World/a", "sphere", pos=(0.0, -0.2, 0.0), radius=0.05)
    b = UsdGeom.Xform.Define(stage, "/World/b")
    _place(b.GetPrim(), (0.0, -0.45, 0.0))
    UsdPhysics.RigidBodyAPI.Apply(b.GetPrim()).CreateVelocityAttr(Gf.Vec3f(0.0, 0.0, 1.0))   # swings out of plane
    cap = UsdGeom.Capsule.Define(stage, "/World/b/geom")
    cap.CreateRadiusAttr(0.03)
    cap.CreateHeightAttr(0.2)
    cap.CreateAxisAttr("Y")
    UsdPhysics.CollisionAPI.Apply(cap.GetPrim())
    _place(cap.GetPrim(), (0.0, 0.02, 0.0), (1.0, 0.0, 0.0), math.pi)      # turned over: its +y points down
    _joint(stage, "/World/shoulder", "spherical", body1="/World/a", pos1=(0.0, 0.2, 0.0))   # body0: the world
    _joint(stage, "/World/elbow", "spherical", body0="/World/a", body1="/World/b/geom", pos0=(0.0, -0.07, 0.0),
           pos1=(0.0, -0.16, 0.0))                                           # (0, -0.27, 0) in the world
    builder = sk.ModelBuilder()
    info = sk.io.load_usd(stage, builder, joint_ke=1.0e5, joint_kd=20.0)
    assert info.joints == {"/World/shoulder": 0, "/World/elbow": 1} and info.bodies == {"/World/a": 0,
                                                                                         "/World/b": 1}
    model = builder.finalize(device="cpu", dtype=f64)
    assert model.joint_type.numpy().tolist() == [0, 0]
    assert model.joint_parent.numpy().tolist() == [-1, 0] and model.joint_child.numpy().tolist() == [0, 1]
    np.testing.assert_allclose(model.joint_anchor_parent.numpy(), [[0.0, 0.0, 0.0], [0.0, -0.07, 0.0]], atol=1e-7)
    np.testing.assert_allclose(model.joint_anchor_child.numpy(), [[0.0, 0.2, 0.0], [0.0, 0.18, 0.0]], atol=1e-7)
    dt = min(2.5e-4, sk.RigidBodySolver().max_time_step(model))
    end = _run(model, 0.5, dt)
    q, qd = end.body_q.numpy(), end.body_qd.numpy()
    assert np.linalg.norm(_point(q[0], (0.0, 0.2, 0.0))) < 1e-3                              # the shoulder
    assert np.linalg.norm(_point(q[0], (0.0, -0.07, 0.0)) - _point(q[1], (0.0, 0.18, 0.0))) < 1e-3   # the elbow
    assert abs(q[1, 2]) > 0.05 and np.abs(qd[:, 3:]).max() > 0.1            # it did swing


# ----------------------------------------------------------------------------- fixed

def test_fixed_joints_weld_bodies_together_and_to_the_world():
    stage = _stage()
    box = _body(stage, "/World/box", pos=(0.0, 1.0, 0.0), scale=(0.2, 0.2, 0.2), size=1.0)   # scaled
    UsdPhysics.RigidBodyAPI(box).CreateVelocityAttr(Gf.Vec3f(1.0, 2.0, 0.0))
    UsdPhysics.RigidBodyAPI(box).CreateAngularVelocityAttr(Gf.Vec3f(0.0, 0.0, math.degrees(3.0)))
    ball = _body(stage, "/World/ball", "sphere", pos=(0.25, 1.0, 0.0), radius=0.08)
    UsdPhysics.RigidBodyAPI(ball).CreateVelocityAttr(Gf.Vec3f(1.0, 2.75, 0.0))               # v + w x r
    UsdPhysics.RigidBodyAPI(ball).CreateAngularVelocityAttr(Gf.Vec3f(0.0, 0.0, math.degrees(3.0)))
    _joint(stage, "/World/weld", "fixed", body0="/World/box", body1="/World/ball", pos0=(0.625, 0.0, 0.0),
           pos1=(-0.125, 0.0, 0.0))                                         # 0.625 x the box's scale 0.2
    # a bracket welded to the world, body1 empty: added as the child of the world (the ends swapped)
    _body(stage, "/World/bracket", pos=(1.0, 0.5, 0.0), axis=(0.0, 1.0, 0.0), angle=0.4, size=0.1)
    _joint(stage, "/World/bolt", "fixed", body0="/World/bracket", pos0=(0.0, 0.0, 0.0), pos1=(1.0, 0.5, 0.0),
           rot1=((0.0, 1.0, 0.0), 0.4))                                     # the frames agree: no warning
    builder = sk.ModelBuilder()
    info = sk.io.load_usd(stage, builder, joint_ke=1.0e6, joint_kd=100.0, joint_angular_ke=1.0e4,
                          joint_angular_kd=10.0)
    assert info.joints == {"/World/weld": 0, "/World/bolt": 1}
    model = builder.finalize(device="cpu", dtype=f64)
    assert model.joint_type.numpy().tolist() == [2, 2]
    assert model.joint_parent.numpy().tolist() == [0, -1] and model.joint_child.numpy().tolist() == [1, 2]
    np.testing.assert_allclose(model.joint_anchor_parent.numpy()[0], [0.125, 0.0, 0.0], atol=1e-7)
    np.testing.assert_allclose(model.joint_anchor_child.numpy()[0], [-0.125, 0.0, 0.0], atol=1e-7)
    np.testing.assert_allclose(model.joint_anchor_parent.numpy()[1], [1.0, 0.5, 0.0], atol=1e-7)
    np.testing.assert_allclose(model.joint_anchor_child.numpy()[1], [0.0, 0.0, 0.0], atol=1e-7)
    dt = min(2.5e-4, sk.RigidBodySolver().max_time_step(model))
    end = _run(model, 0.5, dt)
    q = end.body_q.numpy()
    rel = _q_matrix(q[0, 3:]).T @ (q[1, :3] - q[0, :3])
    np.testing.assert_allclose(rel, [0.25, 0.0, 0.0], atol=1e-3)             # moved as one
    np.testing.assert_allclose(q[1, 3:], q[0, 3:], atol=1e-3)
    assert q[0, 0] > 0.3                                                     # thrown
    m = model.body_mass.numpy()[2]
    np.testing.assert_allclose(q[2, :3], [1.0, 0.5 - m * 9.81 / 1.0e6, 0.0], atol=1e-5)   # the bracket hangs on
    np.testing.assert_allclose(_q_matrix(q[2, 3:]), _axis_angle((0.0, 1.0, 0.0), 0.4), atol=1e-5)


# ----------------------------------------------------------------------------- drives

def test_angular_drive_gains_and_targets_are_converted_and_reached():
    # two arms hinged to the world about x (the joint frames turn X onto the world's z), no gravity:
    # "/World/a" is body1 (USD's target angle = simkit's), "/World/b" is body0 with body1 the world
    # (simkit's angle is the opposite); both joints' localRot1 are 10 degrees ahead of localRot0 about
    # the axis, so their initial USD angle is 10 degrees and simkit's target is 30 - 10 = 20 degrees
    stage = _stage(gravity=False)
    q0 = Gf.Quatf(math.cos(-math.pi / 4), 0.0, math.sin(-math.pi / 4), 0.0)  # X -> z (-90 degrees about y)
    q1 = q0 * Gf.Quatf(math.cos(math.radians(5.0)), math.sin(math.radians(5.0)), 0.0, 0.0)   # then 10 about X
    for name, x, order in (("a", 0.0, 1), ("b", 1.0, 0)):
        _body(stage, f"/World/{name}", pos=(x, -0.2, 0.0), scale=(0.1, 0.4, 0.1), size=1.0)
        pos = {order: (0.0, 0.5, 0.0), 1 - order: (x, 0.0, 0.0)}                # the arm's end; the world point
        j = _joint(stage, f"/World/{name}_hinge", "revolute", body0=f"/World/{name}" if order == 0 else None,
                   body1=f"/World/{name}" if order == 1 else None, pos0=pos[0], pos1=pos[1], axis="X")
        j.GetAttribute("physics:localRot0").Set(q0)
        j.GetAttribute("physics:localRot1").Set(q1)
        _drive(j, stiffness=1.0, damping=0.08, target=30.0)
    builder = sk.ModelBuilder(gravity=0.0)                                    # the stage has no physics scene
    info = sk.io.load_usd(stage, builder, joint_angular_kd=0.05)
    assert info.joints == {"/World/a_hinge": 0, "/World/b_hinge": 1}
    assert info.joint_targets == pytest.approx({"/World/a_hinge": math.radians(20.0),
                                                "/World/b_hinge": -math.radians(20.0)}, abs=1e-6)
    model = builder.finalize(device="cpu", dtype=f64)
    assert model.joint_parent.numpy().tolist() == [-1, -1] and model.joint_child.numpy().tolist() == [0, 1]
    np.testing.assert_allclose(model.joint_axis_parent.numpy(), [[0.0, 0.0, 1.0]] * 2, atol=1e-6)
    np.testing.assert_allclose(model.joint_target_ke.numpy(), 1.0 * 180.0 / math.pi, rtol=1e-6)    # per degree
    np.testing.assert_allclose(model.joint_target_kd.numpy(), 0.08 * 180.0 / math.pi, rtol=1e-6)
    control = model.control()
    targets = info.joint_target_array(model.joint_count)
    np.testing.assert_allclose(targets, [math.radians(20.0), -math.radians(20.0)], atol=1e-6)
    control.joint_target.assign(targets)
    dt = min(1.0e-3, sk.RigidBodySolver().max_time_step(model))
    end = _run(model, 1.5, dt, control)
    q = end.body_q.numpy()
    # USD's joint angle at the end: body1's joint frame relative to body0's, about the joint's X
    frame0 = _q_matrix((0.0, math.sin(-math.pi / 4), 0.0, math.cos(-math.pi / 4)))
    frame1 = frame0 @ _axis_angle((1.0, 0.0, 0.0), math.radians(10.0))
    for k in (0, 1):
        turn = _q_matrix(q[k, 3:])                                          # the body's rotation (started at I)
        if k == 0:
            rel = frame0.T @ (turn @ frame1)                                 # body1 = the arm turned
        else:
            rel = (turn @ frame0).T @ frame1                                 # body0 = the arm turned
        angle = math.atan2(rel[2, 1], rel[1, 1])                            # about the joint frame's x
        assert math.degrees(angle) == pytest.approx(30.0, abs=0.1), k


def test_acceleration_drive_is_scaled_by_the_moment_of_inertia():
    stage = _stage(gravity=False)
    _body(stage, "/World/arm", pos=(0.2, 0.0, 0.0), scale=(0.4, 0.05, 0.05), size=1.0)
    j = _joint(stage, "/World/hinge", "revolute", body1="/World/arm", pos1=(-0.5, 0.0, 0.0), axis="Z")
    _drive(j, stiffness=2.0, damping=0.5, target=-45.0, kind="acceleration")
    builder = sk.ModelBuilder()
    info = sk.io.load_usd(stage, builder)
    m = 1000.0 * 0.4 * 0.05 * 0.05
    inertia = m * (0.4 ** 2 + 0.05 ** 2) / 12 + m * 0.2 ** 2                 # about z through the hinge
    model = builder.finalize(device="cpu", dtype=f64)
    np.testing.assert_allclose(model.joint_target_ke.numpy(), [2.0 * 180 / math.pi * inertia], rtol=1e-6)
    np.testing.assert_allclose(model.joint_target_kd.numpy(), [0.5 * 180 / math.pi * inertia], rtol=1e-6)
    assert info.joint_targets["/World/hinge"] == pytest.approx(-math.pi / 4)


# ----------------------------------------------------------------------------- prismatic joints, limits

def test_prismatic_joints_with_limits_and_a_linear_drive():
    # a centimetre, gram stage, Y up: two 10 cm cubes (1 kg) on vertical rails (the joint frames
    # turn X onto y). "a": body1, its anchor 3 cm above body0's (USD's position starts at 3 cm),
    # limits [-7, 20] cm -> simkit [-0.1, 0.17] m, driven to 13 cm -> 0.1 m (settles m g / ke
    # lower). "b": body0, body1 the world 3 cm above (swapped: simkit's position is 3 cm minus
    # USD's), limits [-20, 7] cm -> [-0.04, 0.23] m: it falls onto its lower limit
    stage = _stage(mpu=0.01)
    UsdPhysics.SetStageKilogramsPerUnit(stage, 0.001)
    up = ((0.0, 0.0, 1.0), math.pi / 2)
    _body(stage, "/World/a", pos=(10.0, 50.0, 0.0), size=10.0)
    _body(stage, "/World/b", pos=(40.0, 50.0, 0.0), size=10.0)
    a = _joint(stage, "/World/a_rail", "prismatic", body1="/World/a", pos0=(10.0, 47.0, 0.0), rot0=up, rot1=up,
               axis="X")
    b = _joint(stage, "/World/b_rail", "prismatic", body0="/World/b", pos1=(40.0, 53.0, 0.0), rot0=up, rot1=up,
               axis="X")
    for j, (lower, upper) in ((a, (-7.0, 20.0)), (b, (-20.0, 7.0))):
        j.GetAttribute("physics:lowerLimit").Set(lower)
        j.GetAttribute("physics:upperLimit").Set(upper)
    _drive(a, stiffness=5.0e5, damping=2.0e4, target=13.0, dof="linear")   # [g / s^2] = 1e-3 N/m per unit
    builder = sk.ModelBuilder()
    info = sk.io.load_usd(stage, builder, joint_ke=1.0e5, joint_kd=300.0)
    assert info.joints == {"/World/a_rail": 0, "/World/b_rail": 1} and info.skipped == {}
    assert info.joint_targets == {"/World/a_rail": pytest.approx(0.1, abs=1e-7)}
    model = builder.finalize(device="cpu", dtype=f64)
    assert model.joint_type.numpy().tolist() == [3, 3]
    assert model.joint_parent.numpy().tolist() == [-1, -1] and model.joint_child.numpy().tolist() == [0, 1]
    np.testing.assert_allclose(model.joint_axis_parent.numpy(), [[0.0, 1.0, 0.0]] * 2, atol=1e-7)
    np.testing.assert_allclose(model.joint_anchor_parent.numpy(), [[0.1, 0.47, 0.0], [0.4, 0.5, 0.0]], atol=1e-7)
    np.testing.assert_allclose(model.joint_anchor_child.numpy(), [[0.0, -0.03, 0.0], [0.0, 0.0, 0.0]], atol=1e-7)
    np.testing.assert_allclose(model.joint_limit_lower.numpy(), [-0.1, -0.04], atol=1e-7)
    np.testing.assert_allclose(model.joint_limit_upper.numpy(), [0.17, 0.23], atol=1e-7)
    np.testing.assert_allclose(model.joint_limit_ke.numpy(), [1.0e5] * 2)           # the joint's own springs
    np.testing.assert_allclose(model.joint_limit_kd.numpy(), [300.0] * 2)
    np.testing.assert_allclose(model.joint_target_ke.numpy(), [500.0, 0.0], rtol=1e-9)
    np.testing.assert_allclose(model.joint_target_kd.numpy(), [20.0, 0.0], rtol=1e-9)
    control = model.control()
    control.joint_target.assign(info.joint_target_array(model.joint_count))
    dt = 2.5e-4
    assert sk.RigidBodySolver().max_time_step(model) > dt
    frames = []
    _run(model, 1.5, dt, control, record=frames)
    q = np.array(frames)
    m = model.body_mass.numpy()
    assert m == pytest.approx([1.0, 1.0])
    x = q[:, :, 1] - 0.5                                                         # along the rails
    assert x[-1, 0] == pytest.approx(0.1 - m[0] * 9.81 / 500.0, abs=1e-5)
    assert x[-1, 1] == pytest.approx(-0.04 - m[1] * 9.81 / 1.0e5, abs=1e-6)
    assert -0.04 - 0.01 < x[:, 1].min() < -0.04                                  # hit at 0.9 m/s, ~3 mm in
    np.testing.assert_allclose(q[-1, :, [0, 2]], [[0.1, 0.4], [0.0, 0.0]], atol=1e-9)   # on the rails


def test_revolute_limits_are_converted_and_stop_a_pendulum():
    # a thick rod (20 kg) hung from the world about z, released 0.3 rad from hanging (USD's angle:
    # the rod's turn, 0.3 rad); limits [0.1 rad, 60 degrees] -> simkit [-0.2, 60 deg - 0.3] rad; it
    # swings down onto the lower limit and rests tau_g / angular_ke beyond it
    stage = _stage()
    angle0, half = 0.3, 0.25
    R0 = _axis_angle((0.0, 0.0, 1.0), angle0)
    _body(stage, "/World/rod", pos=R0 @ [0.0, -half, 0.0], axis=(0.0, 0.0, 1.0), angle=angle0,
          scale=(0.2, 2 * half, 0.2), size=1.0)
    j = _joint(stage, "/World/hinge", "revolute", body1="/World/rod", pos1=(0.0, 0.5, 0.0), axis="Z")
    j.GetAttribute("physics:lowerLimit").Set(math.degrees(0.1))
    j.GetAttribute("physics:upperLimit").Set(60.0)
    builder = sk.ModelBuilder()
    info = sk.io.load_usd(stage, builder, joint_ke=1.0e6, joint_kd=300.0, joint_angular_ke=1.0e4,
                          joint_angular_kd=100.0)
    assert info.joints == {"/World/hinge": 0} and info.joint_targets == {}
    model = builder.finalize(device="cpu", dtype=f64)
    np.testing.assert_allclose(model.joint_limit_lower.numpy(), [0.1 - angle0], atol=1e-6)
    np.testing.assert_allclose(model.joint_limit_upper.numpy(), [math.radians(60.0) - angle0], atol=1e-6)
    np.testing.assert_allclose(model.joint_limit_ke.numpy(), [1.0e4])
    dt = 2.5e-4
    assert sk.RigidBodySolver().max_time_step(model) > dt
    frames = []
    _run(model, 2.0, dt, record=frames)
    r = np.array(frames)[:, 0, 3:]
    angle = 2.0 * np.arctan2(r[:, 2], r[:, 3]) - angle0                         # simkit's joint angle
    m = model.body_mass.numpy()[0]
    tau = m * 9.81 * half * math.sin(0.1)
    assert -0.2 - 0.03 < angle.min() < -0.2 - 1e-3
    assert angle[-1] == pytest.approx(-0.2 - tau / 1.0e4, abs=1e-5)


# ----------------------------------------------------------------------------- units

def test_centimetre_z_up_stage_into_y_up_builder():
    # Z-up, cm, g: a turned, scaled body hinged to a static (non-rigid-body) bracket, about the bracket
    # frame's X turned onto the stage's y by localRot0; the anchors and axes against numpy and against
    # UsdPhysics' own parser (which gives the joint frames in the bodies' frames)
    stage = _stage(up="Z", mpu=0.01)
    UsdPhysics.SetStageKilogramsPerUnit(stage, 0.001)
    bracket = UsdGeom.Xform.Define(stage, "/World/bracket").GetPrim()              # static: the world
    _place(bracket, (10.0, 20.0, 30.0), (0.0, 0.0, 1.0), 0.3)
    axis, angle = np.array([1.0, 2.0, 2.0]) / 3.0, 0.7
    _body(stage, "/World/arm", pos=(15.0, 25.0, 20.0), axis=axis, angle=angle, scale=(2.0, 2.0, 2.0), size=5.0)
    _body(stage, "/World/link", "sphere", pos=(0.0, 0.0, 80.0), radius=4.0)
    pos0, rot0 = np.array([4.0, -2.0, 1.0]), ((1.0, 1.0, 0.0), 0.9)
    R_bracket = _axis_angle((0.0, 0.0, 1.0), 0.3)
    pivot = np.array([10.0, 20.0, 30.0]) + R_bracket @ pos0                        # stage units, stage axes
    R_arm = _axis_angle(axis, angle)
    pos1 = R_arm.T @ (pivot - [15.0, 25.0, 20.0]) / 2.0                             # the arm's scale: 2
    j = _joint(stage, "/World/hinge", "revolute", body0="/World/bracket", body1="/World/arm", pos0=pos0,
               pos1=pos1, rot0=rot0, axis="Y")
    # localRot1: the same joint frame in the arm's frame, turned 10 degrees further about the joint's Y
    q1 = Gf.Quatd(_gf_quat(axis, angle)).GetInverse() * Gf.Quatd(_gf_quat((0.0, 0.0, 1.0), 0.3)) \
        * Gf.Quatd(_gf_quat(*rot0)) * Gf.Quatd(_gf_quat((0.0, 1.0, 0.0), math.radians(10.0)))
    j.GetAttribute("physics:localRot1").Set(Gf.Quatf(q1))
    _drive(j, stiffness=3.0e4, damping=1.0e3, target=25.0)
    _joint(stage, "/World/ball", "spherical", body0="/World/arm", body1="/World/link", pos0=(0.0, 0.0, 3.0),
           pos1=R_arm @ [0.0, 0.0, 6.0] + [15.0, 25.0, 20.0] - [0.0, 0.0, 80.0])
    builder = sk.ModelBuilder(up_axis="y")
    info = sk.io.load_usd(stage, builder)
    assert info.joints == {"/World/hinge": 0, "/World/ball": 1} and info.meters_per_unit == pytest.approx(0.01)
    assert info.joint_targets == {"/World/hinge": pytest.approx(math.radians(25.0 - 10.0), abs=1e-6)}
    rot = np.array([[1.0, 0.0, 0.0], [0.0, 0.0, 1.0], [0.0, -1.0, 0.0]])            # (x, y, z) -> (x, z, -y)
    world_axis = rot @ R_bracket @ _axis_angle(*rot0) @ [0.0, 1.0, 0.0]
    model = builder.finalize(device="cpu", dtype=f64)
    q = model.body_q.numpy()
    np.testing.assert_allclose(model.joint_anchor_parent.numpy()[0], 0.01 * rot @ pivot, atol=1e-6)
    np.testing.assert_allclose(model.joint_axis_parent.numpy()[0], world_axis, atol=1e-6)
    Rb = _q_matrix(q[0, 3:])
    np.testing.assert_allclose(Rb, rot @ R_arm, atol=1e-6)
    np.testing.assert_allclose(model.joint_anchor_child.numpy()[0], Rb.T @ (0.01 * rot @ pivot - q[0, :3]),
                               atol=1e-6)
    np.testing.assert_allclose(model.joint_axis_child.numpy()[0], Rb.T @ world_axis, atol=1e-6)
    # the ball joint: 3 cm along the arm's z, scaled by 2: 6 cm, in the arm's (unscaled) frame
    np.testing.assert_allclose(model.joint_anchor_parent.numpy()[1], [0.0, 0.0, 0.06], atol=1e-6)
    # stiffness [g cm^2 / s^2 / degree] -> [kg m^2 / s^2 / rad]
    np.testing.assert_allclose(model.joint_target_ke.numpy()[0], 3.0e4 * 1e-3 * 1e-4 * 180 / math.pi, rtol=1e-6)
    np.testing.assert_allclose(model.joint_target_kd.numpy()[0], 1.0e3 * 1e-3 * 1e-4 * 180 / math.pi, rtol=1e-6)
    # UsdPhysics' parser: the joint frames in the bodies' frames (body1 of the hinge: the arm; of the
    # ball: the link, unscaled so its local positions are simkit's body frame over metersPerUnit)
    load = getattr(UsdPhysics, "UsdPhysicsLoadStageFromPrimRange", None) or UsdPhysics.LoadUsdPhysicsFromRange
    parsed = load(stage, ["/"])
    joints = {str(d.primPath): d for kind, (paths, descs) in parsed.items() for d in descs
              if str(kind).endswith("Joint")}
    ball = joints["/World/ball"]
    assert str(ball.body0) == "/World/arm" and str(ball.body1) == "/World/link"
    np.testing.assert_allclose(model.joint_anchor_child.numpy()[1], 0.01 * np.array(ball.localPose1Position),
                               atol=1e-6)
    hinge = joints["/World/hinge"]                  # body0: the static bracket is the world; the arm is scaled by 2
    assert str(hinge.body0) == "" and str(hinge.body1) == "/World/arm"
    np.testing.assert_allclose(model.joint_anchor_parent.numpy()[0], 0.01 * rot @ np.array(hinge.localPose0Position),
                               atol=1e-6)
    q0 = hinge.localPose0Orientation
    frame0 = _q_matrix((*q0.GetImaginary(), q0.GetReal()))
    np.testing.assert_allclose(model.joint_axis_parent.numpy()[0], rot @ frame0 @ [0.0, 1.0, 0.0], atol=1e-6)
    np.testing.assert_allclose(model.joint_anchor_child.numpy()[0], 0.01 * np.array(hinge.localPose1Position),
                               atol=1e-6)


# ----------------------------------------------------------------------------- skipped joints, errors

def test_unsupported_and_broken_joints_are_skipped_with_warnings():
    stage = _stage()
    _body(stage, "/World/a", pos=(0.0, 1.0, 0.0), size=0.2)
    _body(stage, "/World/b", pos=(0.5, 1.0, 0.0), size=0.2)
    UsdPhysics.RigidBodyAPI.Apply(UsdGeom.Xform.Define(stage, "/World/ghost").GetPrim())   # no colliders: skipped
    for kind in ("distance", "d6"):
        _joint(stage, f"/World/{kind}", kind, body0="/World/a", body1="/World/b", pos0=(0.25, 0.0, 0.0),
               pos1=(-0.25, 0.0, 0.0))
    _joint(stage, "/World/missing", "spherical", body0="/World/a", body1="/World/nowhere")
    _joint(stage, "/World/to_ghost", "spherical", body0="/World/ghost", body1="/World/b")
    _joint(stage, "/World/nothing", "spherical", body0="/World/bracket")
    _joint(stage, "/World/self", "fixed", body0="/World/a", body1="/World/a")
    off = _joint(stage, "/World/off", "spherical", body0="/World/a", body1="/World/b", pos0=(0.25, 0.0, 0.0),
                 pos1=(-0.25, 0.0, 0.0))
    off.GetAttribute("physics:jointEnabled").Set(False)                     # skipped, silently
    off = _joint(stage, "/World/off_rope", "distance", body0="/World/a", body1="/World/b")
    off.GetAttribute("physics:jointEnabled").Set(False)                     # even an unsupported type
    limited = _joint(stage, "/World/limited", "revolute", body1="/World/a", pos0=(0.0, 1.1, 0.0),
                     pos1=(0.0, 0.1, 0.0), axis="Z")
    limited.GetAttribute("physics:lowerLimit").Set(45.0)                    # empty: ignored
    limited.GetAttribute("physics:upperLimit").Set(-30.0)
    cone = _joint(stage, "/World/cone", "spherical", body0="/World/a", body1="/World/b", pos0=(0.25, 0.0, 0.0),
                  pos1=(-0.25, 0.0, 0.0))
    cone.GetAttribute("physics:coneAngle0Limit").Set(20.0)
    _drive(cone, stiffness=1.0)                                               # a drive on a ball joint: ignored
    _joint(stage, "/World/apart", "spherical", body0="/World/a", body1="/World/b", pos0=(0.25, 0.0, 0.0),
                   pos1=(0.25, 0.0, 0.0))                                    # 0.5 m apart: warned, kept
    spin = _joint(stage, "/World/spin", "revolute", body0="/World/a", body1="/World/b", pos0=(0.25, 0.0, 0.0),
                  pos1=(-0.25, 0.0, 0.0), axis="X")
    d = _drive(spin, stiffness=1.0, target=10.0)
    d.CreateTargetVelocityAttr(5.0)
    d.CreateMaxForceAttr(3.0)
    _drive(spin, stiffness=1.0, kind=None, dof="linear")                     # a linear drive on a hinge: ignored
    _joint(stage, "/World/tilted", "revolute", body0="/World/a", body1="/World/b", pos0=(0.25, 0.0, 0.0),
           pos1=(-0.25, 0.0, 0.0), rot1=((0.0, 0.0, 1.0), 0.2), axis="X")   # body1's copy of X: 0.2 rad off
    _joint(stage, "/World/welded", "fixed", body0="/World/a", body1="/World/b", pos0=(0.25, 0.0, 0.0),
           pos1=(-0.25, 0.0, 0.0), rot1=((1.0, 0.0, 0.0), 0.1))
    builder = sk.ModelBuilder()
    with pytest.warns(UserWarning) as record:
        info = sk.io.load_usd(stage, builder)
    messages = "\n".join(str(w.message) for w in record)
    for expected in ("skipping the joint '/World/distance' (PhysicsDistanceJoint)",
                     "skipping the joint '/World/d6' (PhysicsJoint)",
                     "skipping the joint '/World/missing': its body1 '/World/nowhere' does not exist",
                     ("skipping the joint '/World/to_ghost': its body0 '/World/ghost' belongs to the rigid body "
                      "'/World/ghost', which was not loaded"),
                     "skipping the joint '/World/nothing': its body0 '/World/bracket' does not exist",
                     "skipping the joint '/World/self': it connects the rigid body 0 to itself",
                     "joint '/World/limited': its limits [45.0, -30.0] are empty (ignored: the joint is unlimited)",
                     "joint '/World/cone': its cone limits [20.0, -1.0] degrees are not supported",
                     "joint '/World/cone': its drive(s) ['angular'] are not supported on a ball joint",
                     "joint '/World/apart': localPos0 (in body0's frame) and localPos1 (in body1's) are 0.5 m apart",
                     "joint '/World/spin': its drive's targetVelocity (5.0 degrees/s) is not supported",
                     "joint '/World/spin': its drive's maxForce (3.0) is not supported",
                     "joint '/World/spin': its drive(s) ['linear'] are not supported on a revolute joint",
                     ("joint '/World/tilted': its axis in body0's frame (localRot0) and in body1's (localRot1) are "
                      "11.5 degrees apart; using body0's"),
                     ("joint '/World/welded': its frames in body0 (localRot0) and body1 (localRot1) are turned 5.73 "
                      "degrees apart")):
        assert expected in messages, expected
    assert messages.count("'/World/limited'") == 1 and "/World/off" not in messages
    assert info.joints == {"/World/limited": 0, "/World/cone": 1, "/World/apart": 2, "/World/spin": 3,
                           "/World/tilted": 4, "/World/welded": 5}
    assert len(record) == 16                   # the above and the rigid body /World/ghost without colliders
    assert info.skipped["/World/off"] == "joint disabled"
    assert info.skipped["/World/distance"] == "PhysicsDistanceJoint (not supported)"
    assert set(info.skipped) == {"/World/ghost", "/World/distance", "/World/d6", "/World/missing", "/World/to_ghost",
                                 "/World/nothing", "/World/self", "/World/off", "/World/off_rope"}
    assert builder.joint_count == 6


def test_a_joint_between_the_world_and_static_prims_only_is_skipped():
    stage = _stage()
    UsdPhysics.CollisionAPI.Apply(UsdGeom.Cube.Define(stage, "/World/table").GetPrim())   # static collider
    _joint(stage, "/World/j", "fixed", body0="/World/table")
    with pytest.warns(UserWarning, match="'/World/j': it connects no loaded rigid body"):
        info = sk.io.load_usd(stage, sk.ModelBuilder())
    assert info.joints == {} and "/World/j" in info.skipped


def test_joint_errors():
    stage = _stage()
    _body(stage, "/World/a", size=0.2)
    j = _joint(stage, "/World/j", "revolute", body1="/World/a", axis="Z")
    with pytest.raises(ValueError, match="joint_ke, joint_kd"):
        sk.io.load_usd(stage, sk.ModelBuilder(), joint_ke=-1.0)
    _drive(j, stiffness=-2.0)
    with pytest.raises(ValueError, match=r"/World/j: drive:angular:physics:stiffness must be a finite number >= 0"):
        sk.io.load_usd(stage, sk.ModelBuilder())

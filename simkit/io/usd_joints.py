"""UsdPhysics joints for ``load_usd``: ``SphericalJoint`` -> ball, ``RevoluteJoint`` -> revolute (with
its ``PhysicsDriveAPI:angular`` drive and its limits), ``PrismaticJoint`` -> prismatic (with its
``PhysicsDriveAPI:linear`` drive and its limits), ``FixedJoint`` -> fixed; other joint types are
skipped with a warning.

Each end of a joint is its ``physics:body0`` / ``physics:body1`` relationship: no target is the
world (the stage's frame); a target at or below a loaded rigid body is that body (the target prim's
own frame places the joint, as in UsdPhysics' parser); a target with no enabled rigid body at or
above it (a static collider, a plain Xform) is the world, placed by the target's transform. A
target that does not exist, or whose rigid body was not loaded, skips the joint with a warning.

The anchor is body0's frame (its world transform: translation, rotation and scale, in metres and
the builder's axes) applied to ``physics:localPos0``; a revolute or prismatic joint's axis is
body0's rotation times ``physics:localRot0`` applied to its ``physics:axis``. body1's frame and
``localPos1`` / ``localRot1`` only check that the stage agrees (a warning when not; a prismatic
joint's two anchors may lie apart along its axis). simkit's child must be a body: a joint whose
body1 is the world is added with the world as parent and body0 as child.

Coordinates: USD's joint angle [degrees] / position [stage units] is body1's joint frame relative
to body0's about / along the axis; simkit's is 0 at the initial pose, in radians / metres, and
negated when the ends were swapped. So ``physics:lowerLimit`` / ``upperLimit`` and a drive's
``targetPosition`` become USD's value minus the initial one, converted (a revolute target wrapped
into the angle's window around the limits' middle). Limits are held by the joint's own penalty
springs: ``angular_ke`` / ``angular_kd`` for a revolute joint, ``ke`` / ``kd`` for a prismatic one.

Drives: USD gives angular ``stiffness`` per degree and ``damping`` per degree per second, in stage
units (torque: ``kilogramsPerUnit * metersPerUnit^2`` N m); simkit's ``target_ke`` [N m/rad] and
``target_kd`` [N m s/rad] are those times ``180 / pi`` and the units. Linear ``stiffness`` and
``damping`` are per stage unit (force ``kilogramsPerUnit * metersPerUnit`` N per ``metersPerUnit``
m): times ``kilogramsPerUnit`` in [N/m], [N s/m]. An ``"acceleration"`` drive's gains are multiplied
by the effective moment of inertia of the two bodies about the hinge (their effective mass for a
slide).
"""
from __future__ import annotations

import math
import warnings

import numpy as np

from .usd_loader import (
    _body_motion,
    _get,
    _quat,
    _rigid_body_of,
    _rotation_part,
    _world,
)

BALL, REVOLUTE, PRISMATIC, FIXED = "ball", "revolute", "prismatic", "fixed"
ANCHOR_TOLERANCE = 1.0e-4        # [m] plus 1e-5 of the anchor's distance from the origin
ANGLE_TOLERANCE = 1.0e-3         # [rad] between body0's and body1's copies of an axis / frame


def _warn(msg, depth=0):
    warnings.warn(f"load_usd: {msg}", stacklevel=4 + depth)        # the caller of load_usd


def _matrix(q) -> np.ndarray:
    """Rotation matrix (column vectors) of a quaternion (x, y, z, w), normalised; identity for 0."""
    x, y, z, w = (float(c) for c in q)
    n = math.sqrt(w * w + x * x + y * y + z * z)
    if n == 0.0:
        return np.eye(3)
    x, y, z, w = x / n, y / n, z / n, w / n
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                     [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                     [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]])


def _gf_matrix(q) -> np.ndarray:
    """Rotation matrix of a ``Gf.Quat*`` (identity for None)."""
    return np.eye(3) if q is None else _matrix((*q.GetImaginary(), q.GetReal()))


def _rotation_angle(R: np.ndarray) -> float:
    return math.acos(max(-1.0, min(1.0, 0.5 * (np.trace(R) - 1.0))))


def _twist(R: np.ndarray, axis: np.ndarray) -> float:
    """The angle [rad] of rotation ``R`` about the unit ``axis`` (its twist part), in [-pi, pi]."""
    x, y, z, w = _quat(R)                                                  # w >= 0
    return 2.0 * math.atan2(x * axis[0] + y * axis[1] + z * axis[2], w)


class _End:
    """One end of a joint: ``index`` (a body index, -1 the world), ``A``, ``t`` (the frame's world map
    in the builder's frame [m]: 3x3 for column vectors with scale, translation), ``R`` (its rotation)."""

    def __init__(self, index, A, t):
        self.index, self.A, self.t, self.R = index, A, t, _rotation_part(A)


def _resolve(stage, rel, result, cache, conv, time):
    """The ``_End`` of ``rel`` (``physics:body0`` or ``body1``), or a reason to skip the joint."""
    name = rel.GetName().split(":")[-1]
    targets = rel.GetTargets() if rel else []
    if not targets:
        return _End(-1, conv, np.zeros(3))
    if len(targets) > 1:
        return f"its {name} has {len(targets)} targets (one is allowed)"
    prim = stage.GetPrimAtPath(targets[0])
    if not prim:
        return f"its {name} '{targets[0]}' does not exist"
    A, t = _world(cache, prim, conv)
    body = _rigid_body_of(prim)
    if body is None or _body_motion(body, time) is None:
        return _End(-1, A, t)                                          # static: the world, at the prim's frame
    path = str(body.GetPath())
    if path not in result.bodies:
        why = result.skipped.get(path)
        return f"its {name} '{targets[0]}' belongs to the rigid body '{path}', which was not loaded" + \
            (f" ({why})" if why else "")
    return _End(result.bodies[path], A, t)


def _effective_inertia(builder, ends, anchor, axis, props, linear=False) -> float:
    """The moment of inertia [kg m^2] of the two bodies about the hinge (``linear``: their mass
    [kg] along the slide), combined in series (a body of zero mass, or the world, counts as
    infinitely heavy)."""
    if props[0] is None:
        props[0] = builder.body_mass_properties()
    mass, com, inertia = props[0]
    inv = 0.0
    for end in ends:
        b = end.index
        if b < 0 or mass[b] <= 0.0:
            continue
        if linear:
            inv += 1.0 / mass[b]
            continue
        pos, R = np.asarray(builder.body_q[b][:3], dtype=np.float64), _matrix(builder.body_q[b][3:])
        d = pos + R @ com[b] - anchor
        d = d - np.dot(d, axis) * axis
        a = R.T @ axis
        inv += 1.0 / (float(a @ inertia[b] @ a) + mass[b] * float(d @ d))
    return 1.0 / inv if inv > 0.0 else 0.0


def _drive(prim, name, dof, time, mpu, kpu):
    """(stiffness, damping, target, acceleration?) of the ``dof`` ("angular" or "linear") drive, in
    simkit's units: [N m/rad], [N m s/rad], [rad] or [N/m], [N s/m], [stage units] (or, for an
    "acceleration" drive, per unit of inertia / mass)."""
    from pxr import UsdPhysics

    drive = UsdPhysics.DriveAPI(prim, dof)
    values = {}
    for attr, getter in (("stiffness", drive.GetStiffnessAttr), ("damping", drive.GetDampingAttr)):
        v = float(getter().Get(time) or 0.0)
        if not (v >= 0.0 and math.isfinite(v)):
            raise ValueError(f"{name}: drive:{dof}:physics:{attr} must be a finite number >= 0, got {v}")
        values[attr] = v
    target = float(drive.GetTargetPositionAttr().Get(time) or 0.0)
    if not math.isfinite(target):
        raise ValueError(f"{name}: drive:{dof}:physics:targetPosition must be finite, got {target}")
    unit = "degrees" if dof == "angular" else "units"
    velocity = float(drive.GetTargetVelocityAttr().Get(time) or 0.0)
    if velocity != 0.0:
        _warn(f"joint '{name}': its drive's targetVelocity ({velocity} {unit}/s) is not supported (ignored: "
              "simkit's drive damps the joint's rate towards 0)", 1)
    max_force = drive.GetMaxForceAttr().Get(time)
    if max_force is not None and math.isfinite(max_force):
        _warn(f"joint '{name}': its drive's maxForce ({max_force}) is not supported (ignored: the drive's force "
              "is unbounded)", 1)
    acceleration = str(drive.GetTypeAttr().Get(time)) == "acceleration"
    if dof == "angular":       # [.../degree] -> [N m/rad]: torque in kpu mpu^2 N m
        per_unit, target = 180.0 / math.pi * (1.0 if acceleration else kpu * mpu * mpu), math.radians(target)
    else:                      # [.../unit] -> [N/m]: force in kpu mpu N per mpu m
        per_unit = 1.0 if acceleration else kpu
    return values["stiffness"] * per_unit, values["damping"] * per_unit, target, acceleration


def _limits(prim, name, kind, time):
    """(lower, upper) of a revolute [rad] or prismatic [stage units] joint's ``physics:lowerLimit``
    / ``upperLimit`` (-inf / inf: unlimited)."""
    lower = float(_get(prim, "physics:lowerLimit", time, -math.inf))
    upper = float(_get(prim, "physics:upperLimit", time, math.inf))
    if not lower <= upper:
        _warn(f"joint '{name}': its limits [{lower}, {upper}] are empty (ignored: the joint is unlimited)", 1)
        return -math.inf, math.inf
    return (math.radians(lower), math.radians(upper)) if kind == REVOLUTE else (lower, upper)


def add_joints(builder, stage, joint_prims, result, *, cache, conv, mpu, kpu, time, gains):
    """Add the joints ``joint_prims`` (prims that are ``UsdPhysics.Joint``) between the bodies in
    ``result.bodies`` to ``builder``; records them in ``result.joints`` / ``joint_targets`` /
    ``skipped``. ``gains``: the penalty springs' ``ke``, ``kd``, ``angular_ke``, ``angular_kd``."""
    from pxr import UsdPhysics

    props = [None]                                                 # the bodies' mass properties, on demand
    plan = []                                                      # check every joint before adding any
    for prim in joint_prims:
        name = str(prim.GetPath())
        if not _get(prim, "physics:jointEnabled", time, True):
            result.skipped[name] = "joint disabled"
            continue
        kind = BALL if prim.IsA(UsdPhysics.SphericalJoint) else REVOLUTE if prim.IsA(UsdPhysics.RevoluteJoint) \
            else PRISMATIC if prim.IsA(UsdPhysics.PrismaticJoint) else FIXED if prim.IsA(UsdPhysics.FixedJoint) \
            else None
        if kind is None:
            what = prim.GetTypeName() or "untyped"
            _warn(f"skipping the joint '{name}' ({what}): only SphericalJoint, RevoluteJoint, PrismaticJoint and "
                  "FixedJoint are supported")
            result.skipped[name] = f"{what} (not supported)"
            continue
        joint = UsdPhysics.Joint(prim)
        ends = [_resolve(stage, rel, result, cache, conv, time) for rel in (joint.GetBody0Rel(), joint.GetBody1Rel())]
        reason = next((e for e in ends if isinstance(e, str)), None)
        if reason is None and ends[0].index < 0 and ends[1].index < 0:
            reason = "it connects no loaded rigid body (both ends are the world or static)"
        if reason is None and ends[0].index == ends[1].index:
            reason = f"it connects the rigid body {ends[0].index} to itself"
        if reason is not None:
            _warn(f"skipping the joint '{name}': {reason}")
            result.skipped[name] = reason
            continue

        pos = [np.asarray(_get(prim, f"physics:localPos{k}", time, (0.0, 0.0, 0.0)), dtype=np.float64)
               for k in (0, 1)]
        frames = [end.R @ _gf_matrix(_get(prim, f"physics:localRot{k}", time)) for k, end in enumerate(ends)]
        points = [end.A @ p + end.t for end, p in zip(ends, pos)]
        anchor = points[0]
        dof = {REVOLUTE: "angular", PRISMATIC: "linear"}.get(kind)      # its coordinate's drive
        axis = np.array([1.0, 0.0, 0.0])
        if dof is not None:
            schema = UsdPhysics.RevoluteJoint if kind == REVOLUTE else UsdPhysics.PrismaticJoint
            token = str(schema(prim).GetAxisAttr().Get(time)).upper()
            if token not in ("X", "Y", "Z"):
                raise ValueError(f"{name}: physics:axis must be \"X\", \"Y\" or \"Z\", got {token!r}")
            axis = np.eye(3)["XYZ".index(token)]
        world_axis = frames[0] @ axis
        apart = points[1] - points[0]
        if kind == PRISMATIC:                                          # the slide along the axis is free
            apart = apart - np.dot(apart, world_axis) * world_axis
        gap = float(np.linalg.norm(apart))
        if gap > ANCHOR_TOLERANCE + 1.0e-5 * max(np.linalg.norm(points[0]), np.linalg.norm(points[1])):
            across = " across the axis" if kind == PRISMATIC else ""
            _warn(f"joint '{name}': localPos0 (in body0's frame) and localPos1 (in body1's) are {gap:.3g} m apart"
                  f"{across}; using localPos0")
        if kind == REVOLUTE:
            off = math.acos(max(-1.0, min(1.0, float(np.dot(world_axis, frames[1] @ axis)))))
            if off > ANGLE_TOLERANCE:
                _warn(f"joint '{name}': its axis in body0's frame (localRot0) and in body1's (localRot1) are "
                      f"{math.degrees(off):.3g} degrees apart; using body0's")
        elif kind == BALL:
            cones = [_get(prim, f"physics:coneAngle{k}Limit", time, -1.0) for k in (0, 1)]
            if any(c >= 0.0 for c in cones):
                _warn(f"joint '{name}': its cone limits {cones} degrees are not supported (ignored)")
        else:
            off = _rotation_angle(frames[0].T @ frames[1])
            if off > ANGLE_TOLERANCE:
                _warn(f"joint '{name}': its frames in body0 (localRot0) and body1 (localRot1) are turned "
                      f"{math.degrees(off):.3g} degrees apart; simkit keeps the bodies' initial relative rotation")
        drives = [s.split(":", 1)[1] for s in prim.GetAppliedSchemas() if s.startswith("PhysicsDriveAPI:")]
        ignored = [d for d in drives if d != dof]
        if ignored:
            _warn(f"joint '{name}': its drive(s) {ignored} are not supported on a {kind} joint (ignored; simkit "
                  "drives revolute joints through PhysicsDriveAPI:angular and prismatic joints through "
                  "PhysicsDriveAPI:linear)")

        swap = ends[1].index < 0                                   # simkit's child must be a body
        parent, child = (ends[1].index, ends[0].index) if swap else (ends[0].index, ends[1].index)
        drive, target, limits = (0.0, 0.0), None, (-math.inf, math.inf)
        if dof is not None:
            # simkit's coordinate: USD's (body1's joint frame relative to body0's) [rad or m] minus its
            # initial value, negated when the ends are swapped
            if kind == REVOLUTE:
                unit, start = 1.0, _twist(frames[0].T @ frames[1], axis)
            else:
                unit, start = result.meters_per_unit, float(np.dot(points[1] - points[0], world_axis))
            sign = -1.0 if swap else 1.0
            limits = tuple(sorted(sign * (u * unit - start) for u in _limits(prim, name, kind, time)))
            if dof in drives:
                target_ke, target_kd, target, acceleration = _drive(prim, name, dof, time, mpu, kpu)
                if acceleration:
                    inertia = _effective_inertia(builder, ends, anchor, world_axis, props, linear=kind == PRISMATIC)
                    target_ke, target_kd = target_ke * inertia, target_kd * inertia
                drive = (target_ke, target_kd)
                target = sign * (target * unit - start)
                if kind == REVOLUTE:                                # into the angle's window around the limits
                    mid = 0.5 * (limits[0] + limits[1]) if all(map(math.isfinite, limits)) else 0.0
                    target = mid + math.remainder(target - mid, 2.0 * math.pi)
        plan.append((name, kind, parent, child, anchor, world_axis, drive, target, limits))

    ke, kd, angular_ke, angular_kd = gains
    for name, kind, parent, child, anchor, axis, (target_ke, target_kd), target, (lower, upper) in plan:
        if kind == BALL:
            index = builder.add_joint_ball(parent, child, anchor=anchor, ke=ke, kd=kd)
        elif kind == FIXED:
            index = builder.add_joint_fixed(parent, child, anchor=anchor, ke=ke, kd=kd, angular_ke=angular_ke,
                                            angular_kd=angular_kd)
        else:                                                      # the limits held by the joint's own springs
            slides = kind == PRISMATIC
            add = builder.add_joint_prismatic if slides else builder.add_joint_revolute
            index = add(parent, child, anchor=anchor, axis=axis, ke=ke, kd=kd, angular_ke=angular_ke,
                        angular_kd=angular_kd, target_ke=target_ke, target_kd=target_kd, limit_lower=lower,
                        limit_upper=upper, limit_ke=ke if slides else angular_ke,
                        limit_kd=kd if slides else angular_kd)
        result.joints[name] = index
        if target is not None:
            result.joint_targets[name] = target

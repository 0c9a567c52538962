"""Joint wrenches: penalty springs that hold ball, revolute, prismatic and fixed joints; drives and limits.

For joint ``j`` between ``parent`` (a body, or -1: the world) and ``child``, with anchors and axes
stored in each body's frame: the force ``ke (a_p - a_c) + kd (v_p - v_c)`` pulls the child's anchor
point towards the parent's (and the parent's back); a revolute joint adds the torque
``angular_ke (axis_c x axis_p) + angular_kd (w_p - w_c)_perp`` that aligns the child's copy of the
axis with the parent's; a fixed joint pulls the relative rotation back to its rest value with
``angular_ke`` times its rotation vector and damps the relative angular velocity. A prismatic
joint holds the rotation like a fixed joint and keeps only the anchor force's part across the
parent's axis, applied to both bodies at the child's anchor (the slide's contact point).

A revolute joint's coordinate is its twist angle, in the window (mid - pi, mid + pi] around the
middle of its limits (0 unless both are finite), a prismatic joint's the child's anchor from the
parent's along the parent's axis (both 0 at rest); along the axis they get the drive
``target_ke (target - x) - target_kd rate`` and the limit penalty (``limit_force``). Every wrench
acts on the child and, opposite, on the parent, so joints conserve momentum.
"""
from __future__ import annotations

from ...kernels import func, kernel
from ...kernels import lang as sk
from ...kernels.types import Any
from ...runtime import array
from .kernels import point_velocity


@func
def body_frame(body_q: Any, b: int, like: Any):
    """Body ``b``'s frame, or the world's (identity) for ``b`` < 0; ``like``: any body frame."""
    xf = like
    if b >= 0:
        xf = body_q[b]
    else:
        r = sk.transform_get_rotation(like) * 0.0
        r[3] = r[3] + 1.0
        xf = type(like)(sk.transform_get_translation(like) * 0.0, r)
    return xf


@func
def body_angular_velocity(body_qd: Any, b: int, like: Any):
    w = like * 0.0
    if b >= 0:
        w = sk.spatial_top(body_qd[b])
    return w


@func
def twist_angle(e: Any, axis: Any):
    """The angle [rad] of rotation ``e`` about the unit ``axis`` (its twist), in (-pi, pi]."""
    q = e
    if q[3] < 0.0:
        q = -q
    return 2.0 * sk.atan2(q[0] * axis[0] + q[1] * axis[1] + q[2] * axis[2], q[3])


@func
def limit_force(x: Any, rate: Any, lower: Any, upper: Any, ke: Any, kd: Any):
    """The limit's force on a joint coordinate ``x`` moving at ``rate``: ``ke`` times its distance
    outside [``lower``, ``upper``], plus ``kd`` times its rate while it moves further out (0 inside)."""
    f = x * 0.0
    if x < lower:
        f = (lower - x) * ke
        if rate < 0.0:
            f = f - rate * kd
    elif x > upper:
        f = (upper - x) * ke
        if rate > 0.0:
            f = f - rate * kd
    return f


@func
def coordinate_force(x: Any, rate: Any, j: int, target: Any, target_ke: Any, target_kd: Any, limit_lower: Any,
                     limit_upper: Any, limit_ke: Any, limit_kd: Any):
    """Joint ``j``'s drive and limit force (torque) along its axis, at coordinate ``x`` and ``rate``."""
    return target_ke[j] * (target[j] - x) - target_kd[j] * rate + limit_force(
        x, rate, limit_lower[j], limit_upper[j], limit_ke[j], limit_kd[j])


@kernel
def eval_joints(body_q: array(dtype=Any), body_qd: array(dtype=Any), body_com: array(dtype=Any),
                joint_type: array(dtype=int), joint_parent: array(dtype=int), joint_child: array(dtype=int),
                anchor_parent: array(dtype=Any), anchor_child: array(dtype=Any), axis_parent: array(dtype=Any),
                axis_child: array(dtype=Any), rest_rotation: array(dtype=Any), ke: array(dtype=Any),
                kd: array(dtype=Any), angular_ke: array(dtype=Any), angular_kd: array(dtype=Any),
                target_ke: array(dtype=Any), target_kd: array(dtype=Any), target: array(dtype=Any),
                limit_lower: array(dtype=Any), limit_upper: array(dtype=Any), limit_ke: array(dtype=Any),
                limit_kd: array(dtype=Any), f: array(dtype=Any)):
    j = sk.tid()
    p = joint_parent[j]
    c = joint_child[j]
    kind = joint_type[j]
    xc = body_q[c]
    xp = body_frame(body_q, p, xc)
    ap = sk.transform_point(xp, anchor_parent[j])
    ac = sk.transform_point(xc, anchor_child[j])
    at = ap                                                  # where the parent gets the force
    if kind == 3:
        at = ac
    vp, cp = point_velocity(body_q, body_qd, body_com, p, at)
    vc, cc = point_velocity(body_q, body_qd, body_com, c, ac)
    rp = sk.transform_get_rotation(xp)
    rc = sk.transform_get_rotation(xc)
    axp = sk.quat_rotate(rp, axis_parent[j])
    force = (ap - ac) * ke[j] + (vp - vc) * kd[j]          # on the child, at its anchor
    if kind == 3:                                           # slide: x along the axis, rate its exact derivative
        x = sk.dot(ac - ap, axp)
        rate = sk.dot(vc - vp, axp)
        force = force - axp * sk.dot(force, axp) + axp * coordinate_force(
            x, rate, j, target, target_ke, target_kd, limit_lower, limit_upper, limit_ke, limit_kd)
    wc = sk.spatial_top(body_qd[c])
    dw = body_angular_velocity(body_qd, p, wc) - wc         # parent relative to child
    torque = wc * 0.0                                        # on the child (the parent gets -torque)
    e = sk.quat_inverse(rest_rotation[j]) * (sk.quat_inverse(rp) * rc)
    if kind == 1:
        axc = sk.quat_rotate(rc, axis_child[j])
        torque = sk.cross(axc, axp) * angular_ke[j] + (dw - axp * sk.dot(dw, axp)) * angular_kd[j]
        mid = limit_ke[j] * 0.0                             # the angle's window: (mid - pi, mid + pi]
        if sk.isfinite(limit_lower[j]) and sk.isfinite(limit_upper[j]):
            mid = (limit_lower[j] + limit_upper[j]) * 0.5
        angle = mid + twist_angle(e * sk.quat_from_axis_angle(axis_child[j], -mid), axis_child[j])
        torque = torque + axp * coordinate_force(angle, -sk.dot(dw, axp), j, target, target_ke, target_kd,
                                                 limit_lower, limit_upper, limit_ke, limit_kd)
    elif kind == 2 or kind == 3:
        if e[3] < 0.0:
            e = -e
        rotvec = sk.quat_rotate(rc, type(wc)(e[0], e[1], e[2]) * 2.0)
        torque = rotvec * (-angular_ke[j]) + dw * angular_kd[j]
    sk.atomic_add(f, c, type(body_qd[c])(sk.cross(ac - cc, force) + torque, force))
    if p >= 0:
        sk.atomic_sub(f, p, type(body_qd[c])(sk.cross(at - cp, force) + torque, force))

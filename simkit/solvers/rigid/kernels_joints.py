"""Joint wrenches: penalty springs that hold ball, revolute and fixed joints, and revolute drives.

For joint ``j`` between ``parent`` (a body, or -1: the world) and ``child``, with anchors and axes
stored in each body's frame: the force ``ke (a_p - a_c) + kd (v_p - v_c)`` pulls the child's anchor
point towards the parent's (and the parent's back); a revolute joint adds the torque
``angular_ke (axis_c x axis_p) + angular_kd (w_p - w_c)_perp`` that aligns the child's copy of the
axis with the parent's, and the drive ``target_ke (target - angle) - target_kd angle_rate`` about
it; a fixed joint pulls the relative rotation back to its rest value with ``angular_ke`` times
its rotation vector and damps the relative angular velocity. Every wrench acts on the child and,
opposite, on the parent, so joints conserve momentum.
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


@kernel
def eval_joints(body_q: array(dtype=Any), body_qd: array(dtype=Any), body_com: array(dtype=Any),
                joint_type: array(dtype=int), joint_parent: array(dtype=int), joint_child: array(dtype=int),
                anchor_parent: array(dtype=Any), anchor_child: array(dtype=Any), axis_parent: array(dtype=Any),
                axis_child: array(dtype=Any), rest_rotation: array(dtype=Any), ke: array(dtype=Any),
                kd: array(dtype=Any), angular_ke: array(dtype=Any), angular_kd: array(dtype=Any),
                target_ke: array(dtype=Any), target_kd: array(dtype=Any), target: array(dtype=Any),
                f: array(dtype=Any)):
    j = sk.tid()
    p = joint_parent[j]
    c = joint_child[j]
    xc = body_q[c]
    xp = body_frame(body_q, p, xc)
    ap = sk.transform_point(xp, anchor_parent[j])
    ac = sk.transform_point(xc, anchor_child[j])
    vp, cp = point_velocity(body_q, body_qd, body_com, p, ap)
    vc, cc = point_velocity(body_q, body_qd, body_com, c, ac)
    force = (ap - ac) * ke[j] + (vp - vc) * kd[j]          # on the child, at its anchor
    wc = sk.spatial_top(body_qd[c])
    dw = body_angular_velocity(body_qd, p, wc) - wc         # parent relative to child
    rp = sk.transform_get_rotation(xp)
    rc = sk.transform_get_rotation(xc)
    torque = wc * 0.0                                        # on the child (the parent gets -torque)
    kind = joint_type[j]
    if kind == 1:
        axp = sk.quat_rotate(rp, axis_parent[j])
        axc = sk.quat_rotate(rc, axis_child[j])
        torque = sk.cross(axc, axp) * angular_ke[j] + (dw - axp * sk.dot(dw, axp)) * angular_kd[j]
        e = sk.quat_inverse(rest_rotation[j]) * (sk.quat_inverse(rp) * rc)
        angle = twist_angle(e, axis_child[j])
        torque = torque + axp * (target_ke[j] * (target[j] - angle) + target_kd[j] * sk.dot(dw, axp))
    elif kind == 2:
        e = sk.quat_inverse(rest_rotation[j]) * (sk.quat_inverse(rp) * rc)
        if e[3] < 0.0:
            e = -e
        rotvec = sk.quat_rotate(rc, type(wc)(e[0], e[1], e[2]) * 2.0)
        torque = rotvec * (-angular_ke[j]) + dw * angular_kd[j]
    sk.atomic_add(f, c, type(body_qd[c])(sk.cross(ac - cc, force) + torque, force))
    if p >= 0:
        sk.atomic_sub(f, p, type(body_qd[c])(sk.cross(ap - cp, force) + torque, force))

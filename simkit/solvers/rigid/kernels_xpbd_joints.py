"""XPBD joints: the projections that hold ball, revolute, fixed and prismatic joints, their drives
(compliant) and limits (hard).

One thread per joint works on copies of its two bodies' poses, in order: the joint's coordinate
(a revolute joint's twist angle, a prismatic joint's slide: the drive ``target_ke``, ``target_kd``
as a compliant constraint towards ``target``, then the limits), then the attachment: the anchors
together (a prismatic joint's across its axis only) and the rotation (a revolute joint's axes
aligned, a fixed or prismatic joint's relative rotation at rest), solved as one linear system
(``attachment_impulse``), so a joint whose anchor is far from a light body's centre holds in one
pass. Each correction sees the poses the previous one left; the joint's change of each pose goes
into ``delta``. Joints are launched one colour at a time (``coloring.py``): no two in a launch
share a movable body.

The drive is the XPBD compliant constraint with damping, written so that ``target_ke`` = 0 (pure
damping) needs no division: ``dlambda = (-ke dt^2 C - lambda - kd dt (x - x_0)) / ((ke dt^2 + kd dt) w + 1)``
for the coordinate ``x`` (``x_0`` at the step's start), ``C = x - target``, ``w`` the generalized
inverse mass along it. The attachment itself is hard (``joint_ke``, ``joint_kd``,
``joint_angular_*`` are the penalty solvers' and play no part here), as are the limits.
"""
from __future__ import annotations

from ...kernels import func, kernel
from ...kernels import lang as sk
from ...kernels import types as T
from ...kernels.types import Any
from ...runtime import array
from .kernels_joints import body_frame, twist_angle
from .kernels_xpbd import angular_weight, point_weight, pose_delta, turn, world_inverse_inertia


@func
def attachment_impulse(cp: Any, rp: Any, mp: Any, ip: Any, at: Any, cc: Any, rc: Any, mc: Any, ic: Any, ac: Any,
                       gap: Any, err: Any, pos: Any, rot: Any):
    """(linear impulse at the anchors, angular impulse) on the child (the parent gets the opposite)
    that moves the child's anchor ``ac`` by ``gap`` and turns it by ``err`` relative to the
    parent's, to first order, restricted to the subspaces ``pos`` and ``rot`` (projectors; the
    other directions are free). The 6x6 system [[A, B], [B^T, D]] is solved through its Schur
    complement on 3x3 blocks: A = sum m^-1 I - [r] I^-1 [r], B = -sum [r] I^-1, D = sum I^-1 over
    the two bodies (``r`` from each centre of mass to its anchor, I^-1 in world axes)."""
    eye = pos * 0.0 + sk.diag(type(gap)(1.0, 1.0, 1.0))
    wp = world_inverse_inertia(rp, ip)
    wc = world_inverse_inertia(rc, ic)
    sp = sk.skew(at - cp)
    sc = sk.skew(ac - cc)
    a = eye * (mp + mc) - sp * wp * sp - sc * wc * sc
    b = -(sp * wp + sc * wc)
    dm = wp + wc
    a = pos * a * pos + (eye - pos)
    b = pos * b * rot
    dm = rot * dm * rot + (eye - rot)
    lin = gap * 0.0
    ang = gap * 0.0
    if sk.determinant(dm) > 0.0:
        dinv = sk.inverse(dm)
        schur = a - b * dinv * sk.transpose(b)
        if sk.determinant(schur) > 0.0:
            lin = sk.inverse(schur) * (gap - b * (dinv * err))
            ang = dinv * (err - sk.transpose(b) * lin)
    return lin, ang


@func
def coordinate(kind: int, rp: Any, rc: Any, ap: Any, ac: Any, axp: Any, rest: Any, axis_c: Any, lower: Any,
               upper: Any):
    """A revolute joint's twist angle (window (mid - pi, mid + pi], mid the middle of finite limits),
    a prismatic joint's slide along the parent's axis."""
    x = sk.dot(ac - ap, axp)
    if kind == 1:
        mid = x * 0.0
        if sk.isfinite(lower) and sk.isfinite(upper):
            mid = (lower + upper) * 0.5
        e = sk.quat_inverse(rest) * (sk.quat_inverse(rp) * rc)
        x = mid + twist_angle(e * sk.quat_from_axis_angle(axis_c, -mid), axis_c)
    return x


@kernel
def solve_joints_xpbd(body_q: array(dtype=Any), body_q0: array(dtype=Any), body_com: array(dtype=Any),
                      inv_mass: array(dtype=Any), inv_inertia: array(dtype=Any), joint_type: array(dtype=int),
                      joint_parent: array(dtype=int), joint_child: array(dtype=int),
                      anchor_parent: array(dtype=Any), anchor_child: array(dtype=Any),
                      axis_parent: array(dtype=Any), axis_child: array(dtype=Any), rest_rotation: array(dtype=Any),
                      target_ke: array(dtype=Any), target_kd: array(dtype=Any), target: array(dtype=Any),
                      limit_lower: array(dtype=Any), limit_upper: array(dtype=Any), joints: array(dtype=int),
                      lambda_in: array(dtype=Any), dt: Any, delta: array(dtype=Any), count: array(dtype=Any),
                      lambda_out: array(dtype=Any)):
    # (the joints of one colour: no two share a movable body; lambda is indexed per launch)
    tid = sk.tid()
    j = joints[tid]
    p = joint_parent[j]
    c = joint_child[j]
    kind = joint_type[j]
    xc = body_q[c]
    xp = body_frame(body_q, p, xc)
    lc = body_com[c]
    mc = inv_mass[c]
    ic = inv_inertia[c]
    lp = lc * 0.0
    mp = mc * 0.0
    ip = ic * 0.0
    if p >= 0:
        lp = body_com[p]
        mp = inv_mass[p]
        ip = inv_inertia[p]
    rc = sk.transform_get_rotation(xc)
    rp = sk.transform_get_rotation(xp)
    cc = sk.transform_point(xc, lc)
    cp = sk.transform_point(xp, lp)
    cc0 = cc
    cp0 = cp
    rc0 = rc
    rp0 = rp

    # 1. the coordinate (a revolute joint's angle, a prismatic joint's slide): drive, then limits
    lam = lambda_in[tid]
    dlam = lam * 0.0
    if kind == 1 or kind == 3:
        axp = sk.quat_rotate(rp, axis_parent[j])
        ap = cp + sk.quat_rotate(rp, anchor_parent[j] - lp)
        ac = cc + sk.quat_rotate(rc, anchor_child[j] - lc)
        x = coordinate(kind, rp, rc, ap, ac, axp, rest_rotation[j], axis_child[j], limit_lower[j], limit_upper[j])
        # the same at the step's start
        xc0 = body_q0[c]
        xp0 = body_frame(body_q0, p, xc0)
        rp0 = sk.transform_get_rotation(xp0)
        x0 = coordinate(kind, rp0, sk.transform_get_rotation(xc0), sk.transform_point(xp0, anchor_parent[j]),
                        sk.transform_point(xc0, anchor_child[j]), sk.quat_rotate(rp0, axis_parent[j]),
                        rest_rotation[j], axis_child[j], limit_lower[j], limit_upper[j])
        w = angular_weight(rp, ip, axp) + angular_weight(rc, ic, axp)
        if kind == 3:
            w = point_weight(cp, rp, mp, ip, ac, axp) + point_weight(cc, rc, mc, ic, ac, axp)
        if w > 0.0:
            k2 = target_ke[j] * dt * dt
            k1 = target_kd[j] * dt
            dlam = (-k2 * (x - target[j]) - lam - k1 * (x - x0)) / ((k2 + k1) * w + 1.0)
            x = x + dlam * w
            g = dlam
            if x < limit_lower[j]:
                g = g + (limit_lower[j] - x) / w
            elif x > limit_upper[j]:
                g = g + (limit_upper[j] - x) / w
            if kind == 1:
                rc = turn(rc, ic, axp * g)
                rp = turn(rp, ip, axp * (-g))
            else:
                rc = turn(rc, ic, sk.cross(ac - cc, axp * g))
                cc = cc + axp * (g * mc)
                rp = turn(rp, ip, sk.cross(ac - cp, axp * (-g)))
                cp = cp - axp * (g * mp)

    # 2. the attachment: anchors together (a prismatic joint's across its axis, the parent's side at
    # the child's anchor) and the rotation (a revolute joint's axes aligned, a fixed or prismatic
    # joint's relative rotation at rest), solved together
    ap = cp + sk.quat_rotate(rp, anchor_parent[j] - lp)
    ac = cc + sk.quat_rotate(rc, anchor_child[j] - lc)
    axp = sk.quat_rotate(rp, axis_parent[j])
    eye = sk.diag(type(lc)(1.0, 1.0, 1.0))
    axial = sk.outer(axp, axp)
    at = ap
    pos = eye
    rot = eye
    err = lc * 0.0              # the world rotation vector the child must turn by, relative to the parent
    if kind == 0:
        rot = eye * 0.0
    elif kind == 1:
        rot = eye - axial
        axc = sk.quat_rotate(rc, axis_child[j])
        u = sk.cross(axc, axp)
        s = sk.length(u)
        if s > 0.0:
            err = u * (sk.atan2(s, sk.dot(axc, axp)) / s)
    else:
        if kind == 3:
            pos = eye - axial
            at = ac
        e = sk.quat_inverse(rest_rotation[j]) * (sk.quat_inverse(rp) * rc)
        if e[3] < 0.0:
            e = -e
        v = type(lc)(e[0], e[1], e[2])
        s = sk.length(v)
        if s > 0.0:
            err = sk.quat_rotate(rc, v) * (-2.0 * sk.atan2(s, e[3]) / s)
    lin, ang = attachment_impulse(cp, rp, mp, ip, at, cc, rc, mc, ic, ac, pos * (ap - ac), rot * err, pos, rot)
    rc = turn(rc, ic, sk.cross(ac - cc, lin) + ang)
    cc = cc + lin * mc
    rp = turn(rp, ip, -(sk.cross(at - cp, lin) + ang))
    cp = cp - lin * mp

    sk.atomic_add(delta, c, pose_delta(cc, rc, cc0, rc0))
    sk.atomic_add(count, c, count.dtype(1.0))
    if p >= 0:
        sk.atomic_add(delta, p, pose_delta(cp, rp, cp0, rp0))
        sk.atomic_add(count, p, count.dtype(1.0))
    lambda_out[tid] = lam + dlam

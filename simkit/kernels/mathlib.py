"""Vector norms, Euler angles and 4x4 transform matrices, as Warp names them (``sk.norm_huber``,
``sk.quat_to_rpy``, ``sk.transform_compose``, ...): written in the kernel language as ``@func``s,
so they work on float32 and float64 alike and their adjoints come from the compiler.

    @sk.kernel
    def k(v: sk.array(dtype=sk.vec3), out: sk.array(dtype=float)):
        i = sk.tid()
        out[i] = sk.norm_huber(v[i], 0.5)
"""
from __future__ import annotations

from . import lang as sk
from .decorators import func
from . import types as T
from .types import Any


@func
def norm_l1(v: Any):
    """The sum of the absolute values of ``v``'s components."""
    n = sk.abs(v[0])
    for i in range(1, len(v)):
        n = n + sk.abs(v[i])
    return n


@func
def norm_l2(v: Any):
    """The Euclidean length of ``v``."""
    return sk.length(v)


@func
def norm_huber(v: Any, delta: Any = 1.0):
    """Huber's norm: |v|^2 / 2 within ``delta`` of zero, ``delta (|v| - delta / 2)`` beyond
    (continuous, with a continuous gradient)."""
    a = sk.dot(v, v)
    d = type(a)(delta)
    out = a * 0.5
    if a > d * d:
        out = d * (sk.sqrt(a) - d * 0.5)
    return out


@func
def norm_pseudo_huber(v: Any, delta: Any = 1.0):
    """``delta sqrt(1 + |v|^2 / delta^2)``: smooth everywhere, ~|v| far from zero."""
    a = sk.dot(v, v)
    d = type(a)(delta)
    return d * sk.sqrt(a / (d * d) + 1.0)


@func
def smooth_normalize(v: Any, delta: Any = 1.0):
    """``v / norm_pseudo_huber(v, delta)``: a unit vector far from zero, smooth (and zero) at zero."""
    return v / norm_pseudo_huber(v, delta)


@func
def quat_to_rpy(q: Any):
    """(roll, pitch, yaw) [rad] of the unit quaternion ``q``: the inverse of ``quat_rpy`` (rotations
    about the fixed x, y and z axes, in that order). Pitch is in [-pi/2, pi/2]; near +-pi/2 (gimbal
    lock) roll and yaw are not unique."""
    x = q[0]
    y = q[1]
    z = q[2]
    w = q[3]
    roll = sk.atan2((w * x + y * z) * 2.0, 1.0 - (x * x + y * y) * 2.0)
    pitch = sk.asin(sk.clamp((w * y - z * x) * 2.0, -1.0, 1.0))
    yaw = sk.atan2((w * z + x * y) * 2.0, 1.0 - (y * y + z * z) * 2.0)
    return T.vector(roll, pitch, yaw)


@func
def unit_axis(i: int, like: Any):
    """The unit vector of axis ``i`` (0, 1, 2), of ``like``'s scalar type."""
    one = like * 0.0 + 1.0
    zero = like * 0.0
    return T.vector(sk.where(i == 0, one, zero), sk.where(i == 1, one, zero), sk.where(i == 2, one, zero))


@func
def quat_from_euler(e: Any, i: int, j: int, k: int):
    """The rotation by ``e[i]`` about the fixed axis ``i``, then ``e[j]`` about ``j``, then ``e[k]``
    about ``k`` (extrinsic; the same as the intrinsic rotations in the order k, j, i): the quaternion
    ``q_k q_j q_i``. ``e`` is indexed by axis (``e[0]`` is about x); for a proper Euler sequence
    (``i == k``) ``e[i]`` turns about that axis both times. ``quat_from_euler(e, 0, 1, 2)`` is
    ``quat_rpy(e[0], e[1], e[2])``."""
    qi = sk.quat_from_axis_angle(unit_axis(i, e[0]), e[i])
    qj = sk.quat_from_axis_angle(unit_axis(j, e[0]), e[j])
    qk = sk.quat_from_axis_angle(unit_axis(k, e[0]), e[k])
    return qk * qj * qi


@func
def imaginary(q: Any, axis: int):
    """Component ``axis`` (0, 1, 2) of the vector part of ``q``."""
    return sk.where(axis == 0, q[0], sk.where(axis == 1, q[1], q[2]))


@func
def quat_to_euler(q: Any, i: int, j: int, k: int):
    """Euler angles [rad] of the unit quaternion ``q`` for the axis sequence i, j, k (the inverse of
    ``quat_from_euler`` for Tait-Bryan sequences, gimbal lock included), by Bernardes and Viollet's
    general method (2022). Tait-Bryan: indexed by axis, the second angle in [-pi/2, pi/2]; proper
    Euler (``i == k``): ``e[i]`` the first angle, ``e[j]`` the second (in [0, pi]), ``e[3 - i - j]``
    the third (about axis ``i`` again). At gimbal lock the first angle is 0."""
    third = k
    proper = i == k
    if proper:
        third = 3 - i - j
    one = q[3] * 0.0 + 1.0
    sign = type(one)((i - j) * (j - third) * (third - i)) * 0.5      # (the permutation's parity)
    w = q[3]
    qi = imaginary(q, i)
    qj = imaginary(q, j)
    qk = imaginary(q, third)
    a = w
    b = qi
    c = qj
    d = qk * sign
    if not proper:
        a = w - qj
        b = qi + qk * sign
        c = qj + w
        d = qk * sign - qi
    n = a * a + b * b
    t2 = sk.acos(sk.clamp(n * 2.0 / (n + c * c + d * d) - 1.0, -one, one))
    tp = sk.atan2(b, a)
    tm = sk.atan2(d, c)
    t1 = one * 0.0
    t3 = t1
    if sk.abs(t2) < 1.0e-6:
        t3 = tp * 2.0
    elif sk.abs(t2 - 3.141592653589793) < 1.0e-6:
        t3 = tm * 2.0
    else:
        t1 = tp - tm
        t3 = tp + tm
    if not proper:
        t2 = t2 - 1.5707963267948966
        t3 = t3 * sign
    return (unit_axis(i, one) * t1 + unit_axis(j, one) * t2 + unit_axis(third, one) * t3)


@func
def quat_twist(axis: Any, q: Any):
    """The twist of ``q`` about the unit ``axis`` (its swing-twist decomposition's rotation about it)."""
    v = axis * (q[0] * axis[0] + q[1] * axis[1] + q[2] * axis[2])
    return sk.normalize(type(q)(v[0], v[1], v[2], q[3]))


@func
def quat_twist_angle(axis: Any, q: Any):
    """The magnitude [rad] of ``q``'s twist about the unit ``axis``: ``2 atan2(|axis . v|, w)``."""
    return sk.atan2(sk.abs(q[0] * axis[0] + q[1] * axis[1] + q[2] * axis[2]), q[3]) * 2.0


@func
def quat_twist_angle_signed(axis: Any, q: Any):
    """The signed angle [rad] of ``q``'s twist about the unit ``axis`` (right-hand rule)."""
    return sk.atan2(q[0] * axis[0] + q[1] * axis[1] + q[2] * axis[2], q[3]) * 2.0


@func
def quat_between_vectors(a: Any, b: Any):
    """The shortest rotation taking the direction of ``a`` to that of ``b`` (for opposite directions,
    a half turn about an axis normal to ``a``)."""
    ua = sk.normalize(a)
    ub = sk.normalize(b)
    c = sk.cross(ua, ub)
    d = sk.dot(ua, ub)
    q = T.quaternion(c[0], c[1], c[2], d + 1.0)
    if d < -0.999999:
        n = sk.cross(ua, unit_axis(0, d))
        if sk.length(n) < 1.0e-3:
            n = sk.cross(ua, unit_axis(1, d))
        n = sk.normalize(n)
        q = T.quaternion(n[0], n[1], n[2], d * 0.0)
    return sk.normalize(q)


@func
def transform_compose(position: Any, rotation: Any, scale: Any):
    """The 4x4 matrix that scales by ``scale`` (per axis), then rotates by ``rotation``, then moves by
    ``position``: columns ``s_x R[:, 0]``, ``s_y R[:, 1]``, ``s_z R[:, 2]``, and ``(p, 1)``."""
    r = sk.quat_to_matrix(rotation)
    zero = position[0] * 0.0
    return T.matrix(r[0, 0] * scale[0], r[0, 1] * scale[1], r[0, 2] * scale[2], position[0],
                     r[1, 0] * scale[0], r[1, 1] * scale[1], r[1, 2] * scale[2], position[1],
                     r[2, 0] * scale[0], r[2, 1] * scale[1], r[2, 2] * scale[2], position[2],
                     zero, zero, zero, zero + 1.0, shape=(4, 4))


@func
def transform_decompose(m: Any):
    """(position, rotation, scale) of a 4x4 matrix made by ``transform_compose`` (positive scales):
    the scales are the lengths of the first three columns, the rotation that of the columns
    divided by them."""
    position = T.vector(m[0, 3], m[1, 3], m[2, 3])
    c0 = T.vector(m[0, 0], m[1, 0], m[2, 0])
    c1 = T.vector(m[0, 1], m[1, 1], m[2, 1])
    c2 = T.vector(m[0, 2], m[1, 2], m[2, 2])
    scale = T.vector(sk.length(c0), sk.length(c1), sk.length(c2))
    r = sk.matrix_from_cols(c0 / scale[0], c1 / scale[1], c2 / scale[2])
    return position, sk.quat_from_matrix(r), scale


__all__ = ["norm_l1", "norm_l2", "norm_huber", "norm_pseudo_huber", "smooth_normalize", "quat_to_rpy",
           "quat_from_euler", "quat_to_euler", "quat_twist", "quat_twist_angle", "quat_twist_angle_signed",
           "quat_between_vectors", "transform_compose", "transform_decompose"]

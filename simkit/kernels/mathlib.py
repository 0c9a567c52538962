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
           "quat_from_euler", "transform_compose", "transform_decompose"]

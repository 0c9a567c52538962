"""Quaternion builtins: constructors, component access, operators and rotations.

Native code: ``native/quat.h``. Semantics are Warp's: a quaternion is
``(x, y, z, w)`` with ``w`` the real part; ``quat()`` is all zeros (use
``quat_identity()``); ``a * b`` is the Hamilton product, which applies ``b``
first; ``quat_rotate(q, v) == quat_to_matrix(q) @ v``; ``normalize`` of the zero
quaternion is the identity; ``quat_to_axis_angle`` returns ``(axis, angle)``
with ``angle`` in ``[0, pi]``; ``quat_slerp`` follows the shortest arc.
Constructing from the four components (``quat(x, y, z, w)``) is done by the
compiler. Example::

    @sk.kernel
    def spin(q: sk.array(dtype=sk.quat), v: sk.array(dtype=sk.vec3)):
        i = sk.tid()
        r = sk.quat_from_axis_angle(sk.vec3(0.0, 0.0, 1.0), 0.5) * q[i]
        v[i] = sk.quat_rotate(r, v[i])
"""
from __future__ import annotations

from .. import types as T
from ..registry import add_builtin, same_as
from .helpers import bool_result as _bool
from .helpers import ctor_native as _ctor_native
from .helpers import dtype_arg as _dtype_arg
from .helpers import int_index as _int_index
from .helpers import named as _named
from .helpers import scalar0 as _scalar0
from .helpers import target as _target
from ..types import Any, Float, matrix, quaternion, vector

QF = quaternion(Float)
V3F = vector(3, Float)
_G = "quaternion"


def _quat_of(i):
    @_named("quaternion")
    def f(info):
        return quaternion(T.scalar_of(info.arg_types[i]))

    return f


def _identity_native(info, ret):
    # the dtype argument is a type, which code generation drops: the call is sk::quat_identity<S>()
    return f"sk::quat_identity<{_dtype_arg(info)._ctype}>"


# ---------------------------------------------------------------------------
# Constructors: quat(), quat(xyz, w), quatd(q). quat(x, y, z, w) is built by the compiler.

add_builtin("quaternion", {}, _target, native=_ctor_native("quaternion"), constructor=True,
            differentiable=False, group=_G,
            doc="The zero quaternion (0, 0, 0, 0), as in Warp; use quat_identity() for the identity.")
add_builtin("quaternion", {"ijk": V3F, "real": Float}, _target, native=_ctor_native("quaternion"),
            constructor=True, group=_G,
            match=lambda info: T.scalar_of(info.arg_types[0]) is info.target._dtype,
            doc="The quaternion (ijk[0], ijk[1], ijk[2], real) from its vector and real parts.")
add_builtin("quaternion", {"quat": QF}, _target, native=_ctor_native("quaternion"), constructor=True,
            match=lambda info: T.is_float(info.target._dtype), group=_G,
            doc="Quaternion quat converted component by component to another dtype: quatd(q).")

add_builtin("quat_identity", {"dtype": Any}, _named("quaternion")(lambda info: quaternion(_dtype_arg(info))),
            native=_identity_native, defaults={"dtype": T.float32}, differentiable=False,
            group=_G, doc="The identity quaternion (0, 0, 0, 1) of dtype (float32 by default).")

# ---------------------------------------------------------------------------
# Component access: q[i], q.x .. q.w (extract) and q[i] = value (assign, functional)

add_builtin("extract", {"a": QF, "i": Any}, _scalar0, match=_int_index, hidden=True, group=_G,
            doc="Component i of quaternion a (a[i], a.x .. a.w); negative i counts from the end.")
add_builtin("assign", {"a": QF, "i": Any, "value": Float}, same_as(0), match=_int_index, hidden=True,
            group=_G, doc="A copy of quaternion a with component i set to value (a[i] = value).")

# ---------------------------------------------------------------------------
# Operators

add_builtin("add", {"a": QF, "b": QF}, same_as(0), group="operator", doc="Component-wise a + b.")
add_builtin("sub", {"a": QF, "b": QF}, same_as(0), group="operator", doc="Component-wise a - b.")
for _key, _sym in (("eq", "=="), ("ne", "!=")):
    add_builtin(_key, {"a": QF, "b": QF}, _bool, differentiable=False, hidden=True, group="operator",
                doc=f"a {_sym} b: compares every component exactly.")
add_builtin("neg", {"x": QF}, same_as(0), group="operator", doc="-x, component-wise.")
add_builtin("pos", {"x": QF}, same_as(0), group="operator", doc="+x.")
add_builtin("mul", {"a": QF, "b": QF}, same_as(0), group="operator",
            doc="Hamilton product a * b: as rotations, b is applied first, then a, so "
                "quat_rotate(a * b, v) == quat_rotate(a, quat_rotate(b, v)).")
add_builtin("mul", {"a": QF, "b": Float}, same_as(0), group="operator", doc="Quaternion a scaled by b.")
add_builtin("mul", {"a": Float, "b": QF}, same_as(1), group="operator", doc="Quaternion b scaled by a.")
add_builtin("div", {"a": QF, "b": Float}, same_as(0), group="operator",
            doc="Quaternion a divided by scalar b (the result is not normalized).")
add_builtin("div", {"a": Float, "b": QF}, same_as(1), group="operator",
            doc="Scalar a divided by each component of quaternion b.")

# ---------------------------------------------------------------------------
# Functions

add_builtin("dot", {"a": QF, "b": QF}, _scalar0, group=_G,
            doc="Dot product of the four components. For unit quaternions, abs(dot(a, b)) is the "
                "cosine of half the angle between the rotations.")
add_builtin("length", {"a": QF}, _scalar0, group=_G,
            doc="Euclidean length of the four components (zero gradient at zero).")
add_builtin("length_sq", {"a": QF}, _scalar0, group=_G, doc="Squared length dot(a, a).")
add_builtin("normalize", {"a": QF}, same_as(0), group=_G,
            doc="a / length(a); the zero quaternion gives the identity (0, 0, 0, 1), as in Warp.")
add_builtin("lerp", {"a": QF, "b": QF, "t": Float}, same_as(0), group=_G,
            doc="Component-wise linear interpolation a * (1 - t) + b * t (not normalized; see quat_slerp).")
for _key, _what in (("isfinite", "all components are finite"), ("isnan", "any component is NaN"),
                    ("isinf", "any component is infinite")):
    add_builtin(_key, {"a": QF}, T.bool, differentiable=False, group=_G, doc=f"True if {_what}.")

add_builtin("quat_from_axis_angle", {"axis": V3F, "angle": Float}, _quat_of(0), group=_G,
            doc="The rotation of angle radians about the unit vector axis (right-hand rule): "
                "(axis * sin(angle / 2), cos(angle / 2)).")


@_named("(vec3, scalar)")
def _axis_angle_type(info):
    s = T.scalar_of(info.arg_types[0])
    return (vector(3, s), s)


add_builtin("quat_to_axis_angle", {"quat": QF}, _axis_angle_type, group=_G,
            doc="The tuple (axis, angle) of the rotation quat: axis = normalize(quat.xyz) (negated when "
                "quat.w < 0), angle = 2 atan2(|quat.xyz|, |quat.w|) in [0, pi]; "
                "quat_from_axis_angle(axis, angle) == +-normalize(quat). The axis is zero (and gets "
                "no gradient) when angle is zero.")
add_builtin("quat_rpy", {"roll": Float, "pitch": Float, "yaw": Float}, _quat_of(0), group=_G,
            doc="Rotation by roll about x, then pitch about y, then yaw about z (fixed axes): "
                "qz * qy * qx. Angles in radians.")
add_builtin("quat_inverse", {"quat": QF}, same_as(0), group=_G,
            doc="The conjugate (-x, -y, -z, w): the inverse rotation of a unit quaternion.")
add_builtin("quat_rotate", {"quat": QF, "vec": V3F}, same_as(1), group=_G,
            doc="vec rotated by unit quaternion quat (== quat_to_matrix(quat) @ vec).")
add_builtin("quat_rotate_inv", {"quat": QF, "vec": V3F}, same_as(1), group=_G,
            doc="vec rotated by the inverse of unit quaternion quat (world to local frame).")
add_builtin("quat_slerp", {"a": QF, "b": QF, "t": Float}, same_as(0), group=_G,
            doc="Spherical linear interpolation from rotation a (t = 0) to rotation b (t = 1) along the "
                "shortest arc (b and -b give the same result). a must have unit length.")
add_builtin("quat_to_matrix", {"quat": QF}, _named("mat33")(lambda info: matrix((3, 3), _scalar0(info))),
            group=_G, doc="The 3x3 rotation matrix R of unit quaternion quat: R @ v == quat_rotate(quat, v).")
for _n in (3, 4):
    add_builtin("quat_from_matrix", {"mat": matrix((_n, _n), Float)}, _quat_of(0), group=_G,
                doc=f"The unit quaternion of the rotation in the top-left 3x3 block of a {_n}x{_n} matrix "
                    "(rotating column vectors); its sign is unspecified.")

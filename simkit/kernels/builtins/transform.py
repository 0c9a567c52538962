"""Rigid-transform builtins: constructors, parts, composition and application.

Native code: ``native/transform.h``. Semantics are Warp's: a transform is
``(p, q)`` (translation then rotation, 7 scalars ``px py pz qx qy qz qw``) and
maps ``x`` to ``quat_rotate(q, x) + p``; ``a * b`` (``transform_multiply``)
applies ``b`` first; ``transform()`` is all zeros (use
``transform_identity()``); ``transform(p)`` has the identity rotation.
``t.p`` / ``t.q`` read the parts; ``t.p = v`` / ``t.q = r`` are compiled to the
functional setters ``transform_set_translation`` / ``transform_set_rotation``.
Constructing from the seven components is done by the compiler. Example::

    @sk.kernel
    def move(xf: sk.transform, pts: sk.array(dtype=sk.vec3)):
        i = sk.tid()
        pts[i] = sk.transform_point(xf, pts[i])
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
from ..types import Any, Float, matrix, quaternion, transformation, vector

TF = transformation(Float)
QF = quaternion(Float)
V3F = vector(3, Float)
M44F = matrix((4, 4), Float)
_G = "transform"


def _target_dtype_is_args(info) -> bool:
    return T.scalar_of(info.arg_types[0]) is info.target._dtype


def _identity_native(info, ret):
    return f"sk::transform_identity<{_dtype_arg(info)._ctype}>"


def _of(kind, i):
    names = {"v3": "vec3", "q": "quaternion", "t": "transformation", "m44": "mat44"}

    @_named(names[kind])
    def f(info):
        s = T.scalar_of(info.arg_types[i])
        return {"v3": vector(3, s), "q": quaternion(s), "t": transformation(s), "m44": matrix((4, 4), s)}[kind]

    return f


# ---------------------------------------------------------------------------
# Constructors: transform(), transform(p, q), transform(p), transform(s), transformd(t).

add_builtin("transformation", {}, _target, native=_ctor_native("transformation"), constructor=True,
            differentiable=False, group=_G,
            doc="The all-zero transform (its quaternion is zero too), as in Warp; use transform_identity().")
add_builtin("transformation", {"p": V3F, "q": QF}, _target, native=_ctor_native("transformation"),
            constructor=True, match=_target_dtype_is_args, group=_G,
            doc="The transform with translation p and rotation q (not normalized), mapping x to "
                "quat_rotate(q, x) + p.")
add_builtin("transformation", {"p": V3F}, _target, native=_ctor_native("transformation"), constructor=True,
            match=_target_dtype_is_args, group=_G, doc="The transform with translation p and no rotation.")
add_builtin("transformation", {"xform": TF}, _target, native=_ctor_native("transformation"),
            constructor=True, match=lambda info: T.is_float(info.target._dtype), group=_G,
            doc="Transform xform converted component by component to another dtype: transformd(t).")
add_builtin("transformation", {"value": Float}, _target, native=_ctor_native("transformation_fill"),
            constructor=True, group=_G, doc="A transform with all seven components equal to value.")

add_builtin("transform_identity", {"dtype": Any},
            _named("transformation")(lambda info: transformation(_dtype_arg(info))), native=_identity_native,
            defaults={"dtype": T.float32}, differentiable=False, group=_G,
            doc="The identity transform: zero translation, rotation (0, 0, 0, 1); dtype float32 by default.")

# ---------------------------------------------------------------------------
# Parts and component access

add_builtin("transform_get_translation", {"xform": TF}, _of("v3", 0), group=_G,
            doc="The translation p of xform (xform.p).")
add_builtin("transform_get_rotation", {"xform": TF}, _of("q", 0), group=_G,
            doc="The rotation quaternion q of xform (xform.q), as stored (not normalized).")
add_builtin("transform_set_translation", {"xform": TF, "p": V3F}, same_as(0), group=_G,
            doc="A copy of xform with its translation replaced by p (what xform.p = p compiles to).")
add_builtin("transform_set_rotation", {"xform": TF, "q": QF}, same_as(0), group=_G,
            doc="A copy of xform with its rotation replaced by q (what xform.q = q compiles to).")
add_builtin("extract", {"a": TF, "i": Any}, _scalar0, match=_int_index, hidden=True, group=_G,
            doc="Scalar i of the 7 (px, py, pz, qx, qy, qz, qw) of transform a; negative i counts from the end.")
add_builtin("assign", {"a": TF, "i": Any, "value": Float}, same_as(0), match=_int_index, hidden=True,
            group=_G, doc="A copy of transform a with scalar i of its 7 set to value (a[i] = value).")

# ---------------------------------------------------------------------------
# Composition and application

add_builtin("transform_multiply", {"a": TF, "b": TF}, same_as(0), group=_G,
            doc="The composition a * b, applying b first: translation a.p + quat_rotate(a.q, b.p), "
                "rotation a.q * b.q.")
add_builtin("mul", {"a": TF, "b": TF}, same_as(0), group="operator",
            doc="Composition of transforms (transform_multiply): b is applied first, then a.")
add_builtin("transform_inverse", {"xform": TF}, same_as(0), group=_G,
            doc="The inverse transform: rotation quat_inverse(q), translation -quat_rotate(quat_inverse(q), p) "
                "(q must have unit length).")
add_builtin("transform_point", {"xform": TF, "point": V3F}, same_as(1), group=_G,
            doc="point mapped by xform: quat_rotate(xform.q, point) + xform.p.")
add_builtin("transform_point", {"mat": M44F, "point": V3F}, same_as(1), group=_G,
            doc="point mapped by a 4x4 matrix acting on column vectors, with w = 1 (no perspective divide).")
add_builtin("transform_vector", {"xform": TF, "vec": V3F}, same_as(1), group=_G,
            doc="vec rotated by xform, ignoring the translation: quat_rotate(xform.q, vec).")
add_builtin("transform_vector", {"mat": M44F, "vec": V3F}, same_as(1), group=_G,
            doc="vec mapped by the 4x4 matrix with w = 0 (the translation column is ignored).")
add_builtin("transform_from_matrix", {"mat": M44F}, _of("t", 0), group=_G,
            doc="The transform of a 4x4 rigid matrix [[R, p], [0, 1]]: translation p, rotation "
                "quat_from_matrix(R).")
add_builtin("transform_to_matrix", {"xform": TF}, _of("m44", 0), group=_G,
            doc="The 4x4 matrix [[quat_to_matrix(q), p], [0, 0, 0, 1]] of xform.")

# ---------------------------------------------------------------------------
# Component-wise arithmetic (as in Warp; the quaternion part is not renormalized)

for _key, _sym in (("eq", "=="), ("ne", "!=")):
    add_builtin(_key, {"a": TF, "b": TF}, _bool, differentiable=False, hidden=True, group="operator",
                doc=f"a {_sym} b: compares all 7 components exactly.")
add_builtin("add", {"a": TF, "b": TF}, same_as(0), group="operator",
            doc="Component-wise a + b of the 7 scalars.")
add_builtin("sub", {"a": TF, "b": TF}, same_as(0), group="operator",
            doc="Component-wise a - b of the 7 scalars.")
add_builtin("mul", {"a": TF, "b": Float}, same_as(0), group="operator",
            doc="All 7 scalars of transform a scaled by b.")
add_builtin("mul", {"a": Float, "b": TF}, same_as(1), group="operator",
            doc="All 7 scalars of transform b scaled by a.")
add_builtin("lerp", {"a": TF, "b": TF, "t": Float}, same_as(0), group=_G,
            doc="Component-wise linear interpolation a * (1 - t) + b * t of the 7 scalars.")
for _key, _what in (("isfinite", "all components are finite"), ("isnan", "any component is NaN"),
                    ("isinf", "any component is infinite")):
    add_builtin(_key, {"a": TF}, T.bool, differentiable=False, group=_G, doc=f"True if {_what}.")

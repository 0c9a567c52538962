"""Vector builtins: operators, constructors, component access and vector functions.

Native code: ``native/vec.h``. Semantics are Warp's: ``vec3(1.0)`` fills every
component, ``vec3d(v)`` converts the components, ``normalize`` of the zero
vector is the zero vector (with a zero gradient, as for ``length``), ``sign(0)``
is 1, ``argmin``/``argmax`` return the first extreme index as ``uint32`` and
``min(v)``/``max(v)`` reduce over the components. Component indices may be
runtime values; negative ones count from the end.

Float overloads are differentiable; integer overloads are not. ``where`` and
``select`` on vectors are the generic overloads of ``scalar.py``; constructing
from the full list of components (``vec3(x, y, z)``) is done by the compiler.
"""
from __future__ import annotations

import functools

from .. import types as T
from .helpers import bool_result as _bool
from .helpers import float_int
from .helpers import target as _target
from ..registry import add_builtin, same_as, scalar_of_arg
from ..types import Any, Float, Int, Scalar, vector

VF = vector(Any, Float)
VI = vector(Any, Int)
VS = vector(Any, Scalar)
VA = vector(Any, Any)  # any dtype, bool included (component access)
V3F = vector(3, Float)
V3I = vector(3, Int)

_G = "vector"


# ---------------------------------------------------------------------------
# Match predicates and result types


def _same_vectors(info) -> bool:
    """All vector arguments have one type (same length and dtype)."""
    vs = [t for t in info.arg_types if T.is_vector(t)]
    return all(t is vs[0] for t in vs)


def _int_index(*positions):
    def f(info) -> bool:
        return all(T.is_int(info.arg_types[p]) for p in positions if p < len(info.arg_types))

    return f


def _and(*preds):
    def f(info) -> bool:
        return all(p(info) for p in preds)

    return f


_float_int = functools.partial(float_int, group=_G)  # this module's default group

# ---------------------------------------------------------------------------
# Operators

_float_int("add", {"a": VF, "b": VF}, {"a": VI, "b": VI}, same_as(0),
           "Component-wise a + b of two vectors of one type.", group="operator", match=_same_vectors)
_float_int("sub", {"a": VF, "b": VF}, {"a": VI, "b": VI}, same_as(0),
           "Component-wise a - b of two vectors of one type.", group="operator", match=_same_vectors)
_float_int("neg", {"x": VF}, {"x": VI}, same_as(0), "-x, component-wise.", group="operator")
_float_int("pos", {"x": VF}, {"x": VI}, same_as(0), "+x.", group="operator")
_float_int("mul", {"a": VF, "b": Float}, {"a": VI, "b": Int}, same_as(0),
           "Vector a scaled by scalar b.", group="operator")
_float_int("mul", {"a": Float, "b": VF}, {"a": Int, "b": VI}, same_as(1),
           "Vector b scaled by scalar a.", group="operator")
_float_int("div", {"a": VF, "b": Float}, {"a": VI, "b": Int}, same_as(0),
           "Vector a divided by scalar b, component-wise (integers truncate; division by zero gives 0).",
           group="operator")
_float_int("div", {"a": Float, "b": VF}, {"a": Int, "b": VI}, same_as(1),
           "Scalar a divided by each component of vector b (integers truncate; division by zero gives 0).",
           group="operator")
add_builtin("mod", {"a": VS, "b": VS}, same_as(0), differentiable=False, match=_same_vectors, group="operator",
            doc="Component-wise a % b: the remainder takes the sign of a (floats use fmod); "
                "integer modulo by zero gives 0.")
for _key, _sym in (("bit_and", "&"), ("bit_or", "|"), ("bit_xor", "^"), ("lshift", "<<"), ("rshift", ">>")):
    add_builtin(_key, {"a": VI, "b": VI}, same_as(0), differentiable=False, match=_same_vectors, group="operator",
                doc=f"Component-wise a {_sym} b of two integer vectors of one type (as for scalars).")
add_builtin("invert", {"a": VI}, same_as(0), differentiable=False, group="operator",
            doc="Component-wise bitwise complement ~a of an integer vector.")
for _key, _what in (("isfinite", "all components are finite"), ("isnan", "any component is NaN"),
                    ("isinf", "any component is infinite")):
    add_builtin(_key, {"a": VS}, T.bool, differentiable=False, group=_G,
                doc=f"True if {_what}.")
for _key, _sym in (("eq", "=="), ("ne", "!=")):
    add_builtin(_key, {"a": VA, "b": VA}, _bool, differentiable=False, match=_same_vectors, hidden=True,
                group="operator", doc=f"a {_sym} b: compares every component exactly.")

# ---------------------------------------------------------------------------
# Constructors: vec3(), vec3(1.0), vec3d(v). vec3(x, y, z) is built by the compiler.


def _ctor_native(name):
    """``sk::vec_<name><N, T>``: the target's length and dtype as template arguments."""

    def f(info, ret):
        t = info.target
        return f"sk::vec_{name}<{t._shape[0]}, {t._dtype._ctype}>"

    f.__name__ = f"native_vec_{name}"
    return f


def _same_length_as_target(info) -> bool:
    t = info.target
    return t is not None and T.is_vector(info.arg_types[0]) and info.arg_types[0]._shape == t._shape


add_builtin("vector", {}, _target, native=_ctor_native("zero"), constructor=True, differentiable=False,
            group=_G, doc="The zero vector: vec3() == vec3(0.0, 0.0, 0.0).")
add_builtin("vector", {"value": Float}, _target, native=_ctor_native("fill"), constructor=True,
            group=_G, doc="A vector with every component equal to value, converted to the vector's dtype: "
                          "vec3(1.0) == vec3(1.0, 1.0, 1.0).")
add_builtin("vector", {"value": Int}, _target, native=_ctor_native("fill"), constructor=True,
            differentiable=False, group=_G,
            doc="A vector with every component equal to value, converted to the vector's dtype.")
add_builtin("vector", {"v": VF}, _target, native=_ctor_native("cast"), constructor=True,
            match=lambda info: _same_length_as_target(info) and T.is_float(info.target._dtype), group=_G,
            doc="Vector v converted component by component to another dtype: vec3d(v).")
add_builtin("vector", {"v": VA}, _target, native=_ctor_native("cast"), constructor=True,
            differentiable=False, match=_same_length_as_target, group=_G,
            doc="Vector v converted component by component to another dtype (floats truncate toward "
                "zero when converted to integers).")

# ---------------------------------------------------------------------------
# Component access: v[i], v.x (extract) and v[i] = x (assign, functional)

_ACCESS = dict(hidden=True, checked=True, group=_G)  # checked: debug builds report out-of-range indices
add_builtin("extract", {"a": VF, "i": Any}, scalar_of_arg(0), match=_int_index(1), **_ACCESS,
            doc="Component i of vector a (a[i]); negative i counts from the end.")
add_builtin("extract", {"a": VA, "i": Any}, scalar_of_arg(0), differentiable=False, match=_int_index(1), **_ACCESS,
            doc="Component i of vector a (a[i]); negative i counts from the end.")
add_builtin("assign", {"a": VF, "i": Any, "value": Float}, same_as(0), match=_int_index(1), **_ACCESS,
            doc="A copy of vector a with component i set to value (a[i] = value).")
add_builtin("assign", {"a": VA, "i": Any, "value": Any}, same_as(0), differentiable=False, **_ACCESS,
            match=lambda info: _int_index(1)(info) and info.arg_types[2] is T.scalar_of(info.arg_types[0]),
            doc="A copy of vector a with component i set to value (a[i] = value).")

# ---------------------------------------------------------------------------
# Functions


def _scalar0(info):
    return T.scalar_of(info.arg_types[0])


_float_int("dot", {"a": VF, "b": VF}, {"a": VI, "b": VI}, _scalar0, "Dot product of a and b.",
           match=_same_vectors)
_float_int("cw_mul", {"a": VF, "b": VF}, {"a": VI, "b": VI}, same_as(0),
           "Component-wise product of a and b.", match=_same_vectors)
_float_int("cw_div", {"a": VF, "b": VF}, {"a": VI, "b": VI}, same_as(0),
           "Component-wise quotient a / b (integer division by zero gives 0).", match=_same_vectors)
_float_int("cross", {"a": V3F, "b": V3F}, {"a": V3I, "b": V3I}, same_as(0),
           "Cross product of two 3D vectors.", match=_same_vectors)
add_builtin("length", {"a": VF}, _scalar0, group=_G,
            doc="Euclidean length of a. Its gradient at the zero vector is zero.")
_float_int("length_sq", {"a": VF}, {"a": VI}, _scalar0, "Squared Euclidean length dot(a, a).")
add_builtin("normalize", {"a": VF}, same_as(0), group=_G,
            doc="a / length(a); the zero vector stays zero (with a zero gradient).")
_float_int("min", {"a": VF, "b": VF}, {"a": VI, "b": VI}, same_as(0),
           "Component-wise minimum of a and b (a NaN component is ignored).", match=_same_vectors)
_float_int("max", {"a": VF, "b": VF}, {"a": VI, "b": VI}, same_as(0),
           "Component-wise maximum of a and b (a NaN component is ignored).", match=_same_vectors)
_float_int("min", {"a": VF}, {"a": VI}, _scalar0,
           "Smallest component of a; the gradient goes to that component (argmin).")
_float_int("max", {"a": VF}, {"a": VI}, _scalar0,
           "Largest component of a; the gradient goes to that component (argmax).")
add_builtin("argmin", {"a": VS}, T.uint32, differentiable=False, group=_G,
            doc="Index of the first smallest component of a (NaN components are skipped).")
add_builtin("argmax", {"a": VS}, T.uint32, differentiable=False, group=_G,
            doc="Index of the first largest component of a (NaN components are skipped).")
_float_int("abs", {"x": VF}, {"x": VI}, same_as(0), "Component-wise absolute value.")
add_builtin("sign", {"x": VS}, same_as(0), differentiable=False, group=_G,
            doc="Component-wise sign: -1 where x < 0, else 1 (so sign(0) == 1).")
add_builtin("lerp", {"a": VF, "b": VF, "t": Float}, same_as(0), match=_same_vectors, group=_G,
            doc="Linear interpolation a * (1 - t) + b * t.")

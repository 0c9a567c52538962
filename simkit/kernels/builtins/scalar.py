"""Scalar builtins: arithmetic, comparison and bitwise operators, math
functions, casts (``float32(x)``, ``int(x)``...) and ``where``/``select``.

Native code: ``native/scalar.h``. Semantics are Warp's; in particular
integer ``/`` truncates toward zero, ``//`` floors, ``%`` takes the sign of
the dividend, integer division or modulo by zero gives 0, ``sign(0) == 1``
and ``select(cond, a, b)`` returns ``b`` when ``cond`` is true.

Float overloads are differentiable; integer overloads are not.
"""
from __future__ import annotations

from .. import types as T
from ..registry import add_builtin, same_as
from ..types import Any, Float, Int, Scalar

_bool = T.bool

# ---------------------------------------------------------------------------
# Operators


def _float_int(key, names, doc, *, float_diff=True, group="operator", hidden=False):
    """One differentiable Float overload and one non-differentiable Int overload."""
    add_builtin(key, {n: Float for n in names}, same_as(0), differentiable=float_diff, doc=doc,
                group=group, hidden=hidden)
    add_builtin(key, {n: Int for n in names}, same_as(0), differentiable=False, doc=doc,
                group=group, hidden=hidden)


_float_int("add", ("a", "b"), "a + b (integers wrap around).")
_float_int("sub", ("a", "b"), "a - b (integers wrap around).")
_float_int("mul", ("a", "b"), "a * b (integers wrap around).")
_float_int("div", ("a", "b"), "a / b. Integers truncate toward zero (-7 / 3 == -2); division by zero gives 0.")
add_builtin("floordiv", {"a": Scalar, "b": Scalar}, same_as(0), differentiable=False, group="operator",
            doc="a // b: floor(a / b). Integers round toward -infinity (-7 // 3 == -3); "
                "integer division by zero gives 0.")
_float_int("mod", ("a", "b"), "a % b: the remainder takes the sign of a (-7 % 3 == -1); floats use fmod. "
                        "Integer modulo by zero gives 0.")
_float_int("pow", ("x", "y"), "x ** y. Integer powers wrap around; a negative integer exponent gives 0 "
                        "unless |x| == 1.")
_float_int("neg", ("x",), "-x (integers wrap around).")
_float_int("pos", ("x",), "+x.")

for _key, _sym in (("lt", "<"), ("le", "<="), ("gt", ">"), ("ge", ">="), ("eq", "=="), ("ne", "!=")):
    add_builtin(_key, {"a": Scalar, "b": Scalar}, _bool, differentiable=False, hidden=True,
                group="operator", doc=f"a {_sym} b.")
for _key, _sym in (("lt", "<"), ("le", "<="), ("gt", ">"), ("ge", ">="), ("eq", "=="), ("ne", "!=")):
    add_builtin(_key, {"a": _bool, "b": _bool}, _bool, differentiable=False, hidden=True,
                group="operator", doc=f"a {_sym} b.")

for _key, _doc in (("bit_and", "a & b."), ("bit_or", "a | b."), ("bit_xor", "a ^ b.")):
    add_builtin(_key, {"a": Int, "b": Int}, same_as(0), differentiable=False, group="operator",
                doc=f"Bitwise {_doc}")
    add_builtin(_key, {"a": _bool, "b": _bool}, _bool, differentiable=False, group="operator",
                doc=f"Logical {_doc}")
add_builtin("lshift", {"a": Int, "b": Int}, same_as(0), differentiable=False, group="operator",
            doc="a << b. Shifting by a negative amount or by the bit width or more gives 0.")
add_builtin("rshift", {"a": Int, "b": Int}, same_as(0), differentiable=False, group="operator",
            doc="a >> b (arithmetic for signed types). Shifting by a negative amount or by the bit "
                "width or more gives 0 (or -1 for negative a).")
add_builtin("invert", {"a": Int}, same_as(0), differentiable=False, group="operator",
            doc="Bitwise complement ~a.")
add_builtin("bit_count", {"x": Int}, T.int32, differentiable=False, group="scalar",
            doc="The number of set bits of x (of a negative x's two's complement: bit_count(int8(-1)) == 8).")

# ---------------------------------------------------------------------------
# Functions of ints and floats

_float_int("abs", ("x",), "Absolute value of x.", group="scalar")
_float_int("min", ("a", "b"), "The smaller of a and b. For floats, a NaN operand is ignored (fmin).",
           group="scalar")
_float_int("max", ("a", "b"), "The larger of a and b. For floats, a NaN operand is ignored (fmax).",
           group="scalar")
add_builtin("clamp", {"x": Float, "low": Float, "high": Float}, same_as(0), group="scalar",
            doc="x clamped to [low, high]: min(max(low, x), high).")
add_builtin("clamp", {"x": Int, "low": Int, "high": Int}, same_as(0), differentiable=False,
            group="scalar", doc="x clamped to [low, high]: min(max(low, x), high).")
add_builtin("sign", {"x": Scalar}, same_as(0), differentiable=False, group="scalar",
            doc="-1 if x < 0, else 1 (so sign(0) == 1).")
add_builtin("step", {"x": Scalar}, same_as(0), differentiable=False, group="scalar",
            doc="1 if x < 0, else 0.")
add_builtin("nonzero", {"x": Scalar}, same_as(0), differentiable=False, group="scalar",
            doc="0 if x == 0, else 1.")
add_builtin("isfinite", {"a": Scalar}, _bool, differentiable=False, group="scalar",
            doc="True if a is neither infinite nor NaN (always true for integers).")
add_builtin("isnan", {"a": Scalar}, _bool, differentiable=False, group="scalar",
            doc="True if a is NaN.")
add_builtin("isinf", {"a": Scalar}, _bool, differentiable=False, group="scalar",
            doc="True if a is positive or negative infinity.")

# ---------------------------------------------------------------------------
# Float functions

_UNARY = {
    "sin": "Sine of x [rad].",
    "cos": "Cosine of x [rad].",
    "tan": "Tangent of x [rad].",
    "asin": "Arcsine of x [rad]; x is clamped to [-1, 1].",
    "acos": "Arccosine of x [rad]; x is clamped to [-1, 1].",
    "atan": "Arctangent of x [rad].",
    "sinh": "Hyperbolic sine of x.",
    "cosh": "Hyperbolic cosine of x.",
    "tanh": "Hyperbolic tangent of x.",
    "exp": "e ** x.",
    "log": "Natural logarithm of x.",
    "log2": "Base-2 logarithm of x.",
    "log10": "Base-10 logarithm of x.",
    "sqrt": "Square root of x.",
    "cbrt": "Cube root of x.",
    "degrees": "x converted from radians to degrees.",
    "radians": "x converted from degrees to radians.",
    "erf": "Error function of x.",
    "erfc": "Complementary error function 1 - erf(x).",
    "erfinv": "Inverse error function: erf(erfinv(x)) == x for x in [-1, 1].",
    "erfcinv": "Inverse complementary error function, x in [0, 2].",
    "frac": "Fractional part x - trunc(x) (same sign as x).",
}
for _key, _doc in _UNARY.items():
    add_builtin(_key, {"x": Float}, same_as(0), doc=_doc, group="scalar")

_ROUNDING = {
    "floor": "Largest integer value <= x.",
    "ceil": "Smallest integer value >= x.",
    "trunc": "x rounded toward zero.",
    "round": "x rounded to the nearest integer value, halves away from zero (round(2.5) == 3).",
    "rint": "x rounded to the nearest integer value, halves to even (rint(2.5) == 2).",
}
for _key, _doc in _ROUNDING.items():
    add_builtin(_key, {"x": Float}, same_as(0), differentiable=False, doc=_doc, group="scalar")

add_builtin("atan2", {"y": Float, "x": Float}, same_as(0), group="scalar",
            doc="Angle [rad] of the point (x, y), in [-pi, pi].")
add_builtin("copysign", {"x": Float, "y": Float}, same_as(0), group="scalar",
            doc="|x| with the sign of y.")
add_builtin("lerp", {"a": Float, "b": Float, "t": Float}, same_as(0), group="scalar",
            doc="Linear interpolation a * (1 - t) + b * t.")
add_builtin("smoothstep", {"a": Float, "b": Float, "x": Float}, same_as(0), group="scalar",
            doc="Smooth Hermite step from 0 (x <= a) to 1 (x >= b): t * t * (3 - 2 * t) with "
                "t = clamp((x - a) / (b - a), 0, 1).")

# ---------------------------------------------------------------------------
# where / select: any value type, the two values of one type


def _same_values(info) -> bool:
    a, b = info.arg_types[1], info.arg_types[2]
    return a is b or a == b


def _plain(info) -> bool:
    t = info.arg_types[1]
    return _same_values(info) and not isinstance(t, T.ArrayType) and not T.is_struct(t)


def _aggregate(info) -> bool:
    return _same_values(info) and not _plain(info)


_WHERE_DOC = "value_if_true if cond else value_if_false (cond: bool or any integer)."
_SELECT_DOC = ("value_if_true if cond else value_if_false: note the order (Warp's legacy select; "
               "prefer where).")
for _cond in (_bool, Int):
    for _match, _diff in ((_plain, True), (_aggregate, False)):
        add_builtin("where", {"cond": _cond, "value_if_true": Any, "value_if_false": Any}, same_as(1),
                    differentiable=_diff, match=_match, doc=_WHERE_DOC, group="scalar")
        add_builtin("select", {"cond": _cond, "value_if_false": Any, "value_if_true": Any}, same_as(1),
                    differentiable=_diff, match=_match, doc=_SELECT_DOC, group="scalar")

# ---------------------------------------------------------------------------
# Casts: float32(x), int(x), uint8(x), bool(x)... (info.target: the scalar type built)


def _target(info):
    return T.normalize_dtype(info.target)


def _to_scalar(info) -> bool:
    return T.is_scalar(_target(info))


def _float_to_float(info) -> bool:
    return T.is_float(_target(info))


def _cast_native(info, ret):
    return f"sk::cast<{ret}>"


_CAST_DOC = ("Convert x to the scalar type called (float32(x), int(x), uint8(x), bool(x), ...). "
             "Floats convert to integers by truncation toward zero; integers wrap around. "
             "cast(a, dtype) instead reinterprets the bits of a as dtype (same size).")
add_builtin("cast", {"x": Float}, _target, native=_cast_native, constructor=True,
            match=_float_to_float, doc=_CAST_DOC, group="scalar")
add_builtin("cast", {"x": Scalar}, _target, native=_cast_native, constructor=True, differentiable=False,
            match=_to_scalar, doc=_CAST_DOC, group="scalar")
add_builtin("cast", {"x": _bool}, _target, native=_cast_native, constructor=True, differentiable=False,
            match=_to_scalar, doc=_CAST_DOC, group="scalar")

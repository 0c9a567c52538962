"""Result-type and native-name helpers shared by the builtin declaration modules."""
from __future__ import annotations

from .. import types as T


def named(name):
    """Give a result-type function the name the generated docs show."""

    def deco(f):
        f.__name__ = name
        return f

    return deco


@named("scalar")
def scalar0(info):
    return T.scalar_of(info.arg_types[0])


def int_index(info) -> bool:
    return T.is_int(info.arg_types[1])


@named("the constructed type")
def target(info):
    return info.target


def ctor_native(name):
    """``sk::name<S>`` with S the target's scalar type (template args stay plain names)."""

    def f(info, ret):
        return f"sk::{name}<{info.target._dtype._ctype}>"

    f.__name__ = f"native_{name}"
    return f


def dtype_arg(info):
    """The optional ``dtype`` argument (a compile-time type), float32 by default."""
    if not info.arg_types:
        return T.float32
    d = T.normalize_dtype(info.const_values[0]) if info.const_values[0] is not None else None
    if not T.is_float(d):
        raise TypeError("dtype must be a float type (float16, float32 or float64)")
    return d


@named("bool")
def bool_result(info):
    return T.bool


def float_int(key, specs_f, specs_i, value_type, doc, *, group, match=None, hidden=False, variadic=False):
    """Declare a differentiable Float overload and a non-differentiable Int overload of ``key``."""
    from ..registry import add_builtin

    add_builtin(key, specs_f, value_type, doc=doc, group=group, match=match, hidden=hidden, variadic=variadic)
    add_builtin(key, specs_i, value_type, differentiable=False, doc=doc, group=group, match=match,
                hidden=hidden, variadic=variadic)

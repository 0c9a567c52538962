"""Function-valued parameters of @funcs (Warp's ``g: wp.Function``).

A parameter annotated ``Function`` takes a @func or a kernel builtin (``sk.sin``) at the call site::

    @sk.func
    def apply(g: sk.Function, x: float):
        return g(x)

    @sk.kernel
    def k(out: sk.array(dtype=float)):
        out[0] = apply(double_it, 3.0) + apply(sk.sin, 0.5)

The function is a compile-time constant: each distinct function value gives its own specialisation of
the @func (its C++ name spells the function), and the parameter is no runtime argument. Inside the body
the name stands for the function itself, so it can be called, passed on to another @func, bound to a
local (``f = g``), or given as a default (``g: sk.Function = double_it``).
"""
from __future__ import annotations

from .builder import Py

#: builtins that are statements or need the call's own syntax, not functions to pass around
_SPECIAL_BUILTINS = ("tid", "printf", "print", "adjoint", "grad")


def is_function_param(spec) -> bool:
    """Is ``spec`` (a declared parameter type) the ``Function`` annotation?"""
    from ..decorators import Function

    return spec is Function


def function_target(obj):
    """``obj`` when it is something a Function parameter takes (a @func, a kernel builtin), else None."""
    from ..decorators import Function
    from .. import registry as R

    if isinstance(obj, Function):
        return obj
    key = getattr(obj, "_simkit_builtin", None)
    if isinstance(key, str) and key not in _SPECIAL_BUILTINS and R.overloads(key):
        return obj
    return None


class FunctionArg:
    """The concrete 'type' of a Function parameter in one specialisation: the function it is bound to.

    Equal for the same function; its repr (part of the specialisation's C++ name) is stable across
    processes: the @func's module, qualified name and instance, or the builtin's name."""

    __slots__ = ("target",)

    def __init__(self, target):
        self.target = target

    def __eq__(self, other):
        return isinstance(other, FunctionArg) and other.target is self.target

    def __hash__(self):
        return hash(("FunctionArg", id(self.target)))

    def __repr__(self):
        t = self.target
        key = getattr(t, "_simkit_builtin", None)
        if key is not None:
            return f"Function(builtin {key})"
        pyfunc = t.overloads[0][0]
        return f"Function({pyfunc.__module__}.{t.qualname}#{t.instance})"

    @property
    def name(self) -> str:
        return getattr(self.target, "__name__", repr(self.target))


def bind_function_arg(spec, a):
    """Match call argument ``a`` against a declared parameter type ``spec``.

    Returns (matched, concrete type): a Function parameter takes a function value (a ``Py``) and binds a
    ``FunctionArg``; a function value never matches another parameter type. (None, None): not a function
    case, type matching proceeds as usual."""
    if is_function_param(spec):
        target = function_target(a.obj) if isinstance(a, Py) else None
        return (True, FunctionArg(target)) if target is not None else (False, None)
    if isinstance(a, Py):
        return False, None
    return None, None


def describe_arg(a) -> str:
    """An argument as error messages name it: its type, or the Python object it is."""
    from .. import types as T

    if isinstance(a, Py):
        obj = a.obj
        if isinstance(obj, FunctionArg):
            return repr(obj)
        name = getattr(obj, "__name__", None)
        return f"{type(obj).__name__} {name}" if name else repr(obj)
    return T.type_name(a.type)


def mismatch_hint(types: dict, args: list) -> str:
    """Why these arguments do not fit an overload's Function parameters (empty: they do)."""
    for (pname, spec), a in zip(types.items(), args):
        if is_function_param(spec) and not (isinstance(a, Py) and function_target(a.obj) is not None):
            key = getattr(a.obj, "_simkit_builtin", None) if isinstance(a, Py) else None
            got = f"unsupported built-in function '{key}'" if key is not None else describe_arg(a)
            return f" (parameter '{pname}' is a Function: it takes a @func or a simkit builtin, got {got})"
        if not is_function_param(spec) and isinstance(a, Py):
            return f" (parameter '{pname}' takes a value, got {describe_arg(a)}; annotate it sk.Function)"
    return ""

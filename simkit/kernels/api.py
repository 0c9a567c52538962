"""Python-side handles for kernel builtins: ``simkit.sin``, ``simkit.tid`` ...

Each handle names a registry entry; the compiler recognises it in kernels.
Calling one from plain Python raises a clear error.
"""
from __future__ import annotations

import numpy as np

from . import builtins as _builtins  # noqa: F401 - fills the registry
from . import registry


# builtins that set part of their first argument (called as statements, in kernels as from Python)
IN_PLACE = ("transform_set_translation", "transform_set_rotation")

# set by simkit.runtime: evaluates a builtin from Python by compiling a one-thread kernel
PYTHON_SCOPE = None


class BuiltinFunction:
    """A kernel builtin, usable inside @kernel / @func code."""

    def __init__(self, key: str, doc: str = ""):
        self._simkit_builtin = key
        self.__name__ = key
        self.__doc__ = doc

    def __call__(self, *args, **kwargs):
        if PYTHON_SCOPE is None or self.__name__ in ("tid", "printf", "adjoint"):
            raise RuntimeError(f"simkit.{self.__name__}() can only be called inside a @kernel or @func")
        result = PYTHON_SCOPE(self.__name__, args, kwargs=kwargs) if kwargs else PYTHON_SCOPE(self.__name__, args)
        if self.__name__ in IN_PLACE and isinstance(args[0], np.ndarray):
            args[0][...] = result       # Warp's setters change their first argument
            return None
        return result

    def __repr__(self):
        return f"<simkit builtin {self.__name__}>"


class GradOf:
    """``grad(f)`` in a kernel: ``grad(f)(x, y)`` is the gradient of ``f``'s one scalar result with respect to
    each argument (a tuple for several), computed by ``f``'s adjoint (frontend/grad.py). ``f``: a builtin
    or a @func."""

    def __init__(self, fn):
        self.fn = fn
        self.__name__ = f"grad({getattr(fn, '__name__', fn)})"

    def __call__(self, *args):
        raise RuntimeError("simkit.grad(f)(...) can only be called inside a @kernel or @func")


# names that exist as types/factories in Python and must not be shadowed
_RESERVED = {"vector", "matrix", "quaternion", "transformation", "bool", "int", "float"}


def builtin_functions() -> dict:
    out = {}
    for key, ovs in registry.all_builtins().items():
        if key in _RESERVED or all(b.hidden or b.constructor for b in ovs):
            continue
        out[key] = BuiltinFunction(key, ovs[0].doc)
    out["tid"] = BuiltinFunction("tid", "Thread index: `i = tid()` (1D) or `i, j = tid()` (2D...).")
    out["printf"] = BuiltinFunction("printf", "C-style formatted print from a kernel.")
    out["grad"] = GradOf
    out["adjoint"] = BuiltinFunction("adjoint", "`adjoint[x] += v` in a @func_grad function accumulates into "
                                                "the adjoint of argument x.")
    return out

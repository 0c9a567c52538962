"""Kernel identity: an identical kernel definition made again returns the kernel made first.

A kernel made in a loop or a factory (``module="unique"``, or a closure) is the same kernel each time its
definition is met with the same values around it, as in Warp: ``@kernel`` then returns the existing
``Kernel`` object, which is already specialised and compiled, instead of building (and compiling) a new one.

Two definitions are the same when all of these are equal:

- the function's code (bytecode, constants, names, file; not its lines: an identical definition written
  at another place in the file is the same kernel, whose errors then name the first place's lines);
- the values it can read: each closure cell, each global its code names, each attribute chain it reads
  off those (``cfg.n``, ``wp.vec3``), and the ``static(...)`` values resolved at its declaration;
- the decorator's arguments (key, module, options, ``enable_backward``, hints).

Values are compared by content when they are plain data (numbers, strings, tuples, lists, dicts, numpy
arrays and simkit vectors), by identity otherwise (modules, types, Python functions). A ``@func`` it reads
counts by identity *and* by the same rules applied to its own code, so a helper reading a changed global
gives a new kernel. A value that can be compared neither way, or an empty closure cell (a name bound after
the kernel), makes the kernel new each time: reuse is only ever an optimisation of a definition whose
every input is known.
"""
from __future__ import annotations

import ast
import dis
import hashlib
import inspect
import types
import weakref

import numpy as np

#: the most bytes of a numpy array compared by content (a larger one makes the kernel not reusable)
MAX_ARRAY_BYTES = 1 << 20

_kernels: weakref.WeakValueDictionary = weakref.WeakValueDictionary()


class Unkeyable(Exception):
    """A value the key cannot represent: the kernel is made anew."""


def lookup(key):
    """The live kernel made with this key, or None."""
    return _kernels.get(key) if key is not None else None


def remember(key, kernel) -> None:
    if key is not None:
        _kernels[key] = kernel


def kernel_key(pyfunc, src, decorator: tuple):
    """The identity of a kernel definition (see the module doc), or None when it cannot be reused."""
    try:
        key = ("kernel", decorator, _function_key(pyfunc, src, {}))
        hash(key)
    except (Unkeyable, RecursionError, TypeError):
        return None
    return key


def _function_key(pyfunc, src, seen: dict):
    code = pyfunc.__code__
    cells = {}
    for name, cell in zip(code.co_freevars, pyfunc.__closure__ or ()):
        try:
            cells[name] = cell.cell_contents
        except ValueError:  # bound after the definition: its value is unknown now
            raise Unkeyable(name) from None
    g = pyfunc.__globals__
    return (_code_key(code),
            tuple((n, _fp(v, seen)) for n, v in cells.items()),
            tuple((n, _fp(g[n], seen)) for n in sorted(_global_names(code)) if n in g),
            tuple((c, _fp(v, seen)) for c, v in _attribute_chains(code, g, cells)),
            _statics_key(src, seen),
            _fp(pyfunc.__defaults__, seen),
            tuple((n, _annotation_fp(a, seen)) for n, a in (getattr(pyfunc, "__annotations__", None) or {}).items()))


def _annotation_fp(ann, seen: dict):
    """A parameter annotation as the kernel type it names (``array(dtype=float)`` is made anew each time)."""
    from . import types as kernel_types

    try:
        t = kernel_types.as_kernel_type(ann)
        hash(t)
    except Exception:  # noqa: BLE001 - not a kernel type (a string, a Function parameter ...)
        return _fp(ann, seen)
    return ("type", t)


def _code_key(code) -> tuple:
    consts = tuple(_code_key(c) if isinstance(c, types.CodeType) else (type(c).__name__, repr(c))
                   for c in code.co_consts)
    return (code.co_code, consts, code.co_names, code.co_varnames, code.co_freevars, code.co_filename)


def _global_names(code) -> set:
    out = set(code.co_names)
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            out |= _global_names(c)
    return out


_LOADS = ("LOAD_GLOBAL", "LOAD_DEREF", "LOAD_NAME", "LOAD_CLASSDEREF")


def _attribute_chains(code, g: dict, cells: dict):
    """``(dotted name, value)`` of each ``name.attr[.attr...]`` the code reads off a global or a closure."""
    out = {}
    for c in [code] + [k for k in code.co_consts if isinstance(k, types.CodeType)]:
        chain = None
        for ins in dis.get_instructions(c):
            if ins.opname in _LOADS:
                chain = [ins.argval]
                continue
            if ins.opname in ("LOAD_ATTR", "LOAD_METHOD") and chain is not None:
                chain.append(ins.argval)
                out.setdefault(".".join(chain), tuple(chain))
                continue
            chain = None
    result = []
    for dotted, chain in sorted(out.items()):
        scope = cells if chain[0] in cells else g
        if chain[0] not in scope:
            continue
        value = scope[chain[0]]
        for a in chain[1:]:
            value = _read_attribute(value, a)
            if value is _Missing:
                break
        result.append((dotted, value))
    return result


_PLAIN = (types.FunctionType, types.BuiltinFunctionType, types.MethodType, type, staticmethod, classmethod)


def _read_attribute(obj, name: str):
    """``obj.name`` without running code (a property, ``__getattr__``): such a value cannot be known without
    reading it (reading may have side effects, or give another value each time), so it is Unkeyable."""
    try:
        value = inspect.getattr_static(obj, name)
    except AttributeError:
        if hasattr(type(obj), "__getattr__"):
            raise Unkeyable(name) from None
        return _Missing  # (a missing attribute is part of the definition's state too)
    if hasattr(type(value), "__get__") and not isinstance(value, _PLAIN):
        raise Unkeyable(name)  # a property or another descriptor
    if isinstance(value, (staticmethod, classmethod)):
        return value.__func__
    return value


class _Missing:
    """The value of an attribute chain that does not resolve."""


def _statics_key(src, seen: dict) -> tuple:
    """The ``static(...)`` values resolved at declaration (frontend/statics.py), in source order."""
    if src is None:
        return ()
    from .frontend.statics import RESOLVED

    out = []
    for node in ast.walk(src.node):
        found = getattr(node, RESOLVED, None)
        if found is not None:
            out.append((getattr(node, "lineno", 0), getattr(node, "col_offset", 0), found[0],
                        _fp(found[1], seen) if found[0] == "value" else repr(found[1])))
    return tuple(out)


_SCALARS = (type(None), bool, int, float, complex, str, bytes)


def _fp(x, seen: dict):
    """A hashable stand-in for ``x``: its content for plain data, itself (identity) for other objects."""
    if isinstance(x, _SCALARS):
        return (type(x).__name__, repr(x))  # (repr: -0.0 and 0.0 differ, as the code they give does)
    if isinstance(x, np.generic):
        return ("np", x.dtype.str, x.tobytes())
    if isinstance(x, np.ndarray):
        if x.nbytes > MAX_ARRAY_BYTES or x.dtype.hasobject:
            raise Unkeyable("array")
        return ("nd", type(x), x.dtype.str, x.shape, hashlib.sha256(np.ascontiguousarray(x).tobytes()).digest())
    if id(x) in seen:
        return ("cycle", seen[id(x)])
    if isinstance(x, (tuple, list)):
        seen[id(x)] = len(seen)
        return (type(x), tuple(_fp(v, seen) for v in x))
    if isinstance(x, dict):
        seen[id(x)] = len(seen)
        return (type(x), tuple((_fp(k, seen), _fp(v, seen)) for k, v in x.items()))
    if isinstance(x, (set, frozenset)):
        return (type(x), tuple(sorted(repr(_fp(v, seen)) for v in x)))
    from .decorators import Function

    if isinstance(x, Function):
        seen[id(x)] = len(seen)
        return (x, _function_content(x, seen))
    if type(x).__hash__ is None:
        raise Unkeyable(type(x).__name__)
    try:
        hash(x)
    except TypeError:
        raise Unkeyable(type(x).__name__) from None
    return (type(x), x)


def _function_content(fn, seen: dict) -> tuple:
    """A @func's state that the code of a kernel calling it depends on."""
    parts = []
    for pyfunc, _types, src in fn.overloads:
        parts.append(_function_key(pyfunc, src, seen))
    for g in list(fn.custom_grads) + list(fn.custom_replays):
        parts.append(_function_key(g, None, seen))
    parts.append(repr(getattr(fn, "native", None)))
    return tuple(parts)

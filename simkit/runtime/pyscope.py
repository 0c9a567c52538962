"""Kernel builtins called from plain Python (``sk.quat_from_axis_angle(axis, 0.5)`` in scene setup).

Each distinct (builtin, argument types) is compiled once into a one-thread kernel
(cached on disk like any module) and run on the CPU; the result comes back as a
numpy scalar or a simkit vector/matrix value. The first call of a signature pays
a compile (about a second); later calls cost a launch.
"""
from __future__ import annotations

import hashlib
import importlib.util
import os
import sys

import numpy as np

from ..kernels import ir, registry
from ..kernels import types as T
from ..kernels.backends.cpu import cache_root
from ..kernels.errors import CompileError

_cache: dict = {}


def _type_of(v, function=None):
    """The kernel type of an argument; a @func's function-valued argument (to a Function parameter) is a
    compile-time constant: its FunctionArg."""
    if function is not None:
        from ..kernels.frontend.funcargs import FunctionArg, function_target

        if function_target(v) is not None:
            return FunctionArg(v)
        if callable(v) and not isinstance(v, type):
            raise TypeError(f"@func '{function.key}' takes simkit functions (a @func or a builtin), not "
                            f"{type(v).__name__} {getattr(v, '__name__', '')}".rstrip())
    from .array import array

    if isinstance(v, array):  # passed as it is: the kernel's parameter
        return T.ArrayType(v.dtype, v.ndim)
    t = T.type_of_value(v)
    if t is None:
        raise TypeError(f"cannot pass {type(v).__name__} to a builtin from Python")
    return t


def _type_id(t) -> str:
    """A type's name in a generated file's comment (a struct's or a function's with its identity, so that
    the file's hash tells apart structs or functions of one name)."""
    if T.is_struct(t):
        return f"{t.__module__}.{t.__qualname__}@{id(t):x}"
    if isinstance(t, _function_arg()):
        return f"{t!r}@{id(t.target):x}"
    return T.type_name(t)


def _function_arg():
    from ..kernels.frontend.funcargs import FunctionArg

    return FunctionArg


def _compile(key: str, types: tuple, function=None):
    """A one-thread kernel calling builtin ``key`` (or the @func ``function``) on ``types``: the values come
    in one-element arrays of types ``A[k]``, results go out in arrays of types ``R[k]`` (set as globals
    of the generated file, as structs have no source name); function values are globals ``F<k>``."""
    rets = result_types(key, types, function)
    if function is None:
        callee = f"B = BuiltinFunction({key!r})"
    else:
        callee = "B = None  # the @func, set below"
    fa = _function_arg()
    params = [f"a{k}: A[{k}]" if isinstance(t, T.ArrayType) else f"a{k}: sk.array(dtype=A[{k}])"
              for k, t in enumerate(types) if not isinstance(t, fa)]
    params += [f"r{k}: sk.array(dtype=R[{k}])" for k, t in enumerate(rets)]
    call = f"B({', '.join(_arg(k, t, fa) for k, t in enumerate(types))})"
    body = [f"    {', '.join(f'v{k}' for k in range(len(rets)))} = {call}"] if rets else [f"    {call}"]
    body += [f"    r{k}[0] = v{k}" for k in range(len(rets))]
    src = "\n".join(["import simkit as sk", "from simkit.kernels.api import BuiltinFunction", callee,
                     f"# A: {', '.join(_type_id(t) for t in types)}", f"# R: {', '.join(_type_id(t) for t in rets)}",
                     "A, R = PYSCOPE_TYPES  # (set by runtime/pyscope.py before this runs, with F<k>)",
                     "@sk.kernel", f"def k({', '.join(params)}):"] + body) + "\n"
    preset = {f"F{k}": t.target for k, t in enumerate(types) if isinstance(t, fa)}
    mod = import_generated(src, f"simkit_pyscope_{key}", "pyscope", function,
                           {"PYSCOPE_TYPES": (types, tuple(rets)), **preset})
    if function is not None:
        mod.B = function  # (kernels resolve globals when they compile, at the first launch)
    return mod.k, rets


def import_generated(src: str, prefix: str, folder: str, function=None, preset: dict | None = None):
    """Write generated kernel source into the cache folder (named by its hash, so the disk cache of its
    compiled module works across runs) and import it. ``function``: a @func the source calls as its
    global (one module each: the same file may serve several); ``preset``: globals set before it runs."""
    tag = hashlib.sha256(src.encode()).hexdigest()[:16]
    name = f"{prefix}_{tag}"
    d = os.path.join(cache_root(), folder)
    os.makedirs(d, exist_ok=True)
    path = os.path.join(d, name + ".py")
    if not os.path.exists(path):
        tmp = path + f".{os.getpid()}.tmp"
        with open(tmp, "w") as f:
            f.write(src)
        os.replace(tmp, path)
    if function is not None:
        name = f"{name}_{id(function):x}"
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    mod.__dict__.update(preset or {})
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


def result_types(key: str | None, types: tuple, function=None) -> list:
    """The result types of the overload of builtin ``key`` (or of the @func ``function``) that a kernel
    would call with arguments of these types (TypeError: none takes them)."""
    if function is not None:
        from ..kernels.frontend.builder import Py

        fa = _function_arg()
        args = [Py(t.target) if isinstance(t, fa) else ir.Var(f"a{k}", t) for k, t in enumerate(types)]
        spec, _ = function.specialize(args, None)
        return list(spec.return_types)
    info = registry.CallInfo(list(types), [], [None] * len(types))
    b = registry.resolve(key, info)
    if b is None:
        from ..kernels.frontend.builder import no_overload_message

        raise TypeError(no_overload_message(key, list(types)))
    ret = b.result_type(info)
    return list(ret) if isinstance(ret, tuple) else ([] if ret is None else [ret])


def _constant(v) -> bool:
    """An argument that is a compile-time constant of the kernel (a type: ``quat_identity(sk.float64)``)."""
    return isinstance(v, type)


def _constant_beside_one(v) -> bool:
    """In a call with a constant or a keyword, Python ints are constants too (``identity(3, sk.float64)``)."""
    return _constant(v) or type(v) is int


def _with_constants(key: str, args: tuple, kwargs: dict):
    """A @func calling builtin ``key`` with the type-valued positional arguments and every keyword argument as
    compile-time constants (``sk.identity(n=3, dtype=sk.float64)``), the other positional arguments as its
    parameters: (the @func, those arguments). Each set of constant values is one @func (and kernel)."""
    names = sorted(kwargs)
    const = {k: v for k, v in enumerate(args) if _constant_beside_one(v)}  # positional constants, by index
    ident = tuple((n, _type_id(v) if isinstance(v, type) or T.is_struct(v) else f"{type(v).__name__}:{v!r}")
                  for n, v in [*const.items(), *((n, kwargs[n]) for n in names)])
    runtime = tuple(a for k, a in enumerate(args) if k not in const)
    types = tuple(_type_of(a) for a in runtime)
    entry = _cache.get((key, types, ident))
    if entry is None:
        params = [f"a{j}: A[{j}]" for j in range(len(runtime))]
        j = iter(range(len(runtime)))
        call = [f"K{k}" if k in const else f"a{next(j)}" for k in range(len(args))] + [f"{n}=K_{n}" for n in names]
        src = "\n".join(["import simkit as sk", "from simkit.kernels.api import BuiltinFunction",
                         f"B = BuiltinFunction({key!r})", f"# A: {', '.join(_type_id(t) for t in types)}",
                         f"# constants: {ident!r}", "A = PYSCOPE_TYPES  # (set with the K globals by pyscope.py)",
                         "@sk.func", f"def f({', '.join(params)}):", f"    return B({', '.join(call)})"]) + "\n"
        preset = {"PYSCOPE_TYPES": types, **{f"K{k}": v for k, v in const.items()},
                  **{f"K_{n}": kwargs[n] for n in names}}
        entry = _cache[(key, types, ident)] = import_generated(src, f"simkit_pyscope_kw_{key}", "pyscope",
                                                               None, preset).f
    return entry, runtime


def evaluate(key: str, args: tuple, function=None, kwargs: dict | None = None):
    """Builtin ``key`` (or the @func ``function``) applied to ``args`` (and, for a builtin, keyword arguments
    ``kwargs``: compile-time constants), computed by a one-thread kernel."""
    from .array import array, zeros
    from .launch import launch

    if function is None and (kwargs or any(map(_constant, args))):
        function, args = _with_constants(key, args, {n: v for n, v in (kwargs or {}).items() if v is not None})
        try:
            return evaluate(key, args, function)
        except CompileError as e:  # (the generated @func's location means nothing to the caller)
            raise TypeError(f"simkit.{key}(): {e.message}") from None
    types = tuple(_type_of(a, function) for a in args)
    cache_key = (key if function is None else function, types)
    entry = _cache.get(cache_key)
    if entry is None:
        entry = _cache[cache_key] = _compile(key, types, function)
    kernel, rets = entry
    fa = _function_arg()
    ins = [_one(a, t, array) for a, t in zip(args, types) if not isinstance(t, fa)]
    outs = [zeros(1, dtype=t, device="cpu") for t in rets]
    launch(kernel, 1, inputs=ins + outs, device="cpu", record_tape=False)
    vals = []
    for o, t in zip(outs, rets):
        v = o.numpy()[0]
        if T.is_struct(t):
            vals.append(t._simkit_struct.unpack(v))
        else:
            vals.append(t(*np.asarray(v).reshape(-1)) if T.is_value(t) else v)
    if not vals:
        return None
    return vals[0] if len(vals) == 1 else tuple(vals)


def _arg(k: int, t, fa) -> str:
    """Argument ``k`` in the generated call: a function value's global, an array parameter, or the one
    element of the array holding a value."""
    return f"F{k}" if isinstance(t, fa) else (f"a{k}" if isinstance(t, T.ArrayType) else f"a{k}[0]")


def _one(a, t, array):
    """A one-element CPU array holding argument ``a`` of type ``t`` (an array argument: itself)."""
    if isinstance(t, T.ArrayType):
        return a
    if T.is_struct(t):
        return array([a], dtype=t, device="cpu")
    return array(np.asarray(a).reshape((1,) + tuple(getattr(t, "_shape", ()))), dtype=t, device="cpu")

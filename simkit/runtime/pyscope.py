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

_cache: dict = {}


def _type_of(v):
    t = T.type_of_value(v)
    if t is None or T.is_struct(t):
        raise TypeError(f"cannot pass {type(v).__name__} to a builtin from Python")
    return t


def type_expr(t) -> str:
    """Python source naming type ``t`` (``T`` being simkit.kernels.types) in a generated kernel file."""
    if T.is_scalar(t):
        return f"T.{t._type_name}"
    if t._kind == "vector":
        return f"T.vector({t._shape[0]}, T.{t._dtype._type_name})"
    if t._kind == "matrix":
        return f"T.matrix({t._shape}, T.{t._dtype._type_name})"
    if t._kind == "quaternion":
        return f"T.quaternion(T.{t._dtype._type_name})"
    return f"T.transformation(T.{t._dtype._type_name})"


def _compile(key: str, types: tuple, function=None):
    """A one-thread kernel calling builtin ``key`` (or the @func ``function``) on ``types``."""
    rets = result_types(key, types, function)
    if function is None:
        callee = f"B = BuiltinFunction({key!r})"
    else:
        callee = "B = None  # the @func, set below"
    params = [f"a{k}: sk.array(dtype={type_expr(t)})" for k, t in enumerate(types)]
    params += [f"r{k}: sk.array(dtype={type_expr(t)})" for k, t in enumerate(rets)]
    call = f"B({', '.join(f'a{k}[0]' for k in range(len(types)))})"
    body = [f"    {', '.join(f'v{k}' for k in range(len(rets)))} = {call}"] if rets else [f"    {call}"]
    body += [f"    r{k}[0] = v{k}" for k in range(len(rets))]
    src = "\n".join(["import simkit as sk", "from simkit.kernels import types as T",
                     "from simkit.kernels.api import BuiltinFunction", callee,
                     "@sk.kernel", f"def k({', '.join(params)}):"] + body) + "\n"
    mod = import_generated(src, f"simkit_pyscope_{key}", "pyscope", function)
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
        spec, _ = function.specialize([ir.Var(f"a{k}", t) for k, t in enumerate(types)], None)
        return list(spec.return_types)
    info = registry.CallInfo(list(types), [], [None] * len(types))
    b = registry.resolve(key, info)
    if b is None:
        from ..kernels.frontend.builder import no_overload_message

        raise TypeError(no_overload_message(key, list(types)))
    ret = b.result_type(info)
    return list(ret) if isinstance(ret, tuple) else ([] if ret is None else [ret])


def evaluate(key: str, args: tuple, function=None):
    """Builtin ``key`` (or the @func ``function``) applied to ``args``, computed by a one-thread kernel."""
    from .array import array, zeros
    from .launch import launch

    types = tuple(_type_of(a) for a in args)
    cache_key = (key if function is None else function, types)
    entry = _cache.get(cache_key)
    if entry is None:
        entry = _cache[cache_key] = _compile(key, types, function)
    kernel, rets = entry
    ins = [array(np.asarray(a).reshape((1,) + tuple(getattr(t, "_shape", ()))), dtype=t, device="cpu")
           for a, t in zip(args, types)]
    outs = [zeros(1, dtype=t, device="cpu") for t in rets]
    launch(kernel, 1, inputs=ins + outs, device="cpu", record_tape=False)
    vals = []
    for o, t in zip(outs, rets):
        v = o.numpy()[0]
        vals.append(t(*np.asarray(v).reshape(-1)) if T.is_value(t) else v)
    if not vals:
        return None
    return vals[0] if len(vals) == 1 else tuple(vals)

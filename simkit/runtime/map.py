"""``sk.map``: apply a builtin, a @func, a Python function or a lambda to every element of arrays (as
Warp's ``wp.map``), and the arithmetic operators of arrays built on it (``a + b``, ``2.0 * a``, ``a **= 2``).

Example::

    c = sk.map(lambda x, y: x + 2.0 * y, a, b)          # a new array
    sk.map(sk.clamp, xs, -0.5, 0.5, out=xs)              # in place
    moved = sk.map(sk.transform_point, tf, points)       # one value, an array of vec3

Arrays broadcast against each other as in numpy (shapes aligned on their last dimension, a dimension of
1 repeats); every other input is passed to each call as it is. A Python number takes the scalar type
of the first array (``a + 1.5`` on a float64 array adds a float64). The function runs in a kernel
generated for the inputs' types and broadcast pattern (compiled once, cached on disk like any module),
so a Tape records it and gradients flow through it. Outputs get the function's result types; they
carry gradients when an input array does and the result type is a float type.
"""
from __future__ import annotations

import ast
import inspect
import linecache
import os
import re

import numpy as np

from ..kernels import types as T
from ..kernels.api import BuiltinFunction
from ..kernels.decorators import Function, func
from ..kernels.errors import CompileError
from . import pyscope
from .indexedarray import indexedarray

_kernels: dict = {}  # (callee, types, broadcast pattern, results, ndim, aliases) -> generated kernel
map_cache = _kernels  # (Warp's name)
_funcs: dict = {}
_bodies: dict = {}  # a lambda's code -> the source of its expression
_arity: dict = {}   # @func -> its number of parameters (-1: *args)
_results: dict = {}  # (callee, argument types) -> result types


def map(fn, *inputs, out=None, return_kernel: bool = False, block_dim: int | None = None, device=None):
    """``fn`` applied to every element of the input arrays; returns the output array (a list for a
    function with several results), or with ``return_kernel=True`` the generated kernel."""
    from .array import array
    from .device import get_device
    from .launch import launch

    callee = _callee(fn)
    arrays = [x for x in inputs if _is_array(x)]
    outs = None if out is None else (list(out) if isinstance(out, (list, tuple)) else [out])
    if not arrays:
        raise ValueError("map requires at least one simkit array input")
    _check_arity(fn, callee, len(inputs))
    devices = {a.device for a in arrays + (outs or [])}
    if device is None:
        if len(devices) > 1:
            raise ValueError(f"map() inputs are on different devices: {sorted(str(d) for d in devices)}")
        device = next(iter(devices))
    device = get_device(device)
    shape = arrays[0].shape
    for a in arrays[1:]:
        try:
            shape = tuple(np.broadcast_shapes(shape, a.shape))
        except ValueError:
            raise ValueError(f"Shapes {shape} and {a.shape} are not broadcastable") from None
    if len(shape) > 4:
        raise ValueError(f"map(): the inputs broadcast to shape {shape}; arrays have at most 4 dimensions")
    values = [x if _is_array(x) else _value(x, arrays) for x in inputs]
    types = tuple(_type_of(v, k) for k, v in enumerate(values))
    rets = _returns(callee, types, fn)
    if not rets:
        raise TypeError(f"map(): {_name(fn)} returns nothing. The provided function must return a value")
    pattern = tuple(_pattern(v, shape) for v in values)
    if return_kernel and outs is None:
        kinds = tuple(isinstance(x, indexedarray) for x in values) + (False,) * len(rets)
        return _kernel(callee, types, pattern, rets, len(shape), (), kinds)
    if outs is None:
        grad = any(a.requires_grad for a in arrays)
        outs = [array(shape=shape, dtype=r, device=device, requires_grad=grad and _differentiable(r), _zero=False)
                for r in rets]  # (not zeroed: the kernel writes every element)
    else:
        _check_outputs(outs, rets, shape, out)
    # an output that is one of the inputs (not broadcast) is written through that parameter: an in-place
    # update, which a Tape records with the input's values from before (see runtime/tape.py)
    alias = tuple((k, j) for k, o in enumerate(outs) for j, v in enumerate(values)
                  if v is o and pattern[j] == (True,) * len(shape) + (0,))
    # any other input that shares memory with an output (an overlapping view, a broadcast input also
    # written) is read from a copy first, as numpy does: threads would otherwise read each other's results
    aliased_inputs = {j for _, j in alias}
    for j, v in enumerate(values):
        if _is_array(v) and j not in aliased_inputs and any(_ver(v) is _ver(o) for o in outs):
            from .array_create import clone

            values[j] = clone(v) if isinstance(v, array) else v.contiguous()
    kinds = tuple(isinstance(x, indexedarray) for x in values + outs)  # indexed arrays: their own parameters
    kernel = _kernel(callee, types, pattern, rets, len(shape), alias, kinds)
    if return_kernel:
        return kernel
    aliased = {k for k, _ in alias}
    launch(kernel, shape, inputs=values, outputs=[o for k, o in enumerate(outs) if k not in aliased], device=device,
           block_dim=block_dim if block_dim is not None else 256)
    return outs[0] if len(outs) == 1 else outs


def _name(fn) -> str:
    return getattr(fn, "__name__", None) or type(fn).__name__


def _check_arity(fn, callee, n: int):
    if isinstance(callee, str):
        return  # a builtin's overloads say (through result_types)
    m = _arity.get(callee)
    if m is None:
        pyfunc = fn if inspect.isfunction(fn) else callee.overloads[0][0]
        params = inspect.signature(pyfunc).parameters.values()
        m = _arity[callee] = -1 if any(p.kind == p.VAR_POSITIONAL for p in params) else len(params)
    if m >= 0 and m != n:
        raise TypeError(f"map(): {_name(fn)} takes {m} argument(s). Number of input arguments ({n}) does not "
                        f"match expected number of function arguments ({m})")


def _check_outputs(outs, rets, shape, given):
    from .array import array

    names = ", ".join(T.type_name(r) for r in rets)
    if len(rets) > 1 and not isinstance(given, (list, tuple)):
        raise TypeError(f"Invalid output provided, expected {len(rets)} simkit arrays with shape {shape} and dtypes "
                        f"({names})")
    if len(outs) != len(rets):
        raise TypeError(f"Number of provided output arrays ({len(outs)}) does not match expected number of "
                        f"function outputs ({len(rets)})")
    for k, (o, r) in enumerate(zip(outs, rets)):
        which = "Output array" if len(rets) == 1 else f"Output array {k}"
        if not _is_array(o):
            raise TypeError(f"{which} must be a simkit array, got {type(o).__name__}")
        if o.dtype is not r:
            raise TypeError(f"{which} dtype {T.type_name(o.dtype)} does not match expected dtype {T.type_name(r)}")
        if o.shape != shape:
            raise TypeError(f"{which} shape {o.shape} does not match expected shape {shape}")


def _callee(fn):
    """A builtin's key (str) or a @func for ``fn`` (Python functions and lambdas become @funcs)."""
    if isinstance(fn, BuiltinFunction):
        return fn.__name__
    if isinstance(fn, Function):
        return fn
    if not inspect.isfunction(fn):
        raise TypeError(f"map() applies a builtin, a @func, a Python function or a lambda; got "
                        f"{type(fn).__name__}")
    closure = {}
    for name, cell in zip(fn.__code__.co_freevars, fn.__closure__ or ()):
        closure[name] = cell.cell_contents  # (compiled as constants)
    body = _lambda_body(fn) if fn.__name__ == "<lambda>" else None
    try:  # the same source with the same captured values is the same function (a lambda in a loop)
        key = (body or fn.__code__, id(fn.__globals__), tuple(sorted(closure.items())))
        hash(key)
    except TypeError:
        key = fn
    f = _funcs.get(key)
    if f is None:
        f = _funcs[key] = func(fn if body is None else _lambda_as_function(fn, body, closure))
    return f


def _lambda_body(fn) -> str:
    """The source of a lambda's expression (found on its lines by its parameter names; cached)."""
    body = _bodies.get(fn.__code__)
    if body is not None:
        return body
    names = list(fn.__code__.co_varnames[:fn.__code__.co_argcount])
    try:
        lines, _ = inspect.getsourcelines(fn)
    except (OSError, TypeError):
        lines = []
    text = "".join(lines)  # (inside a lambda's parentheses, newlines, comments and continuations parse)
    bodies = set()
    for m in re.finditer(r"\blambda\b", text):  # each lambda: the longest text from it that parses as one
        for end in range(len(text), m.start(), -1):
            try:
                node = ast.parse(text[m.start():end], mode="eval").body
            except SyntaxError:
                continue
            if isinstance(node, ast.Lambda):
                if [a.arg for a in node.args.args] == names:
                    bodies.add(ast.unparse(node.body))
                break
    if len(bodies) != 1:
        why = "not found" if not bodies else "ambiguous (several lambdas with these parameters on its line)"
        raise ValueError(f"map(): the source of the lambda ({', '.join(names)}) at {fn.__code__.co_filename}:"
                         f"{fn.__code__.co_firstlineno} is {why}; define the function with def or @sk.func")
    body = _bodies[fn.__code__] = bodies.pop()
    return body


def _lambda_as_function(fn, body: str, closure: dict):
    """A lambda rewritten as a ``def`` for the compiler, with its globals and captured values."""
    names = list(fn.__code__.co_varnames[:fn.__code__.co_argcount])
    fname = f"_lambda{len(_funcs)}"  # (unique: a @func of a module's name adds an overload to it)
    src = f"def {fname}({', '.join(names)}):\n    return {body}\n"
    filename = f"<lambda at {os.path.basename(fn.__code__.co_filename)}:{fn.__code__.co_firstlineno}>"
    linecache.cache[filename] = (len(src), None, src.splitlines(True), filename)
    ns = dict(fn.__globals__)
    ns.update(closure)
    exec(compile(src, filename, "exec"), ns)
    return ns[fname]


def _value(x, arrays):
    """A non-array input; a Python number takes the scalar type of the first array's elements."""
    if isinstance(x, (int, float)) and not isinstance(x, bool) and arrays:
        scalar = _scalar_or_none(arrays[0].dtype)
        if scalar is not None and (T.is_float(scalar) or isinstance(x, int)):
            return scalar(x)
    return x


def _type_of(v, k: int):
    if _is_array(v):
        return v.dtype
    t = T.type_of_value(v)
    if t is None:
        raise TypeError(f"map(): input {k} ({type(v).__name__}) is not an array, a number or a simkit value")
    return t


def _returns(callee, types: tuple, fn) -> list:
    rets = _results.get((callee, types))
    if rets is not None:
        return rets
    try:
        rets = _results[(callee, types)] = pyscope.result_types(callee if isinstance(callee, str) else None, types,
                                                              callee if not isinstance(callee, str) else None)
    except (TypeError, CompileError) as e:
        raise TypeError(f"map(): {_name(fn)} cannot take arguments of types "
                        f"({', '.join(T.type_name(t) for t in types)}): {e}") from None
    return rets


def _pattern(v, shape):
    """How an input is indexed: None (a value), else per output dimension True (the thread's index),
    False (0: a broadcast dimension of 1), or absent (leading dimensions it lacks)."""
    if not _is_array(v):
        return None
    lead = len(shape) - v.ndim
    return tuple(n == shape[lead + d] for d, n in enumerate(v.shape)) + (lead,)


def _scalar_or_none(t):
    """The scalar type of a scalar or value type (``T.scalar_of``); None for a struct."""
    return T.scalar_of(t) if T.is_scalar(t) or T.is_value(t) else None


def _differentiable(t) -> bool:
    s = _scalar_or_none(t)
    return s is not None and T.is_float(s)


def _kernel(callee, types, pattern, rets, ndim, alias, kinds):
    key = (callee, types, pattern, tuple(rets), ndim, alias, kinds)
    k = _kernels.get(key)
    if k is None:
        k = _kernels[key] = _generate(callee, types, pattern, rets, ndim, dict(alias), kinds)
    return k


def _is_array(x) -> bool:
    from .array import array

    return isinstance(x, (array, indexedarray))


def _ver(x):
    """The version counter an array shares with every view of its memory (an indexed array: its data's)."""
    return x.data._ver if isinstance(x, indexedarray) else x._ver


def _generate(callee, types, pattern, rets, ndim, alias: dict, kinds: tuple):
    """Write the map kernel's source into the cache folder and import it (as pyscope does)."""
    tids = [f"i{d}" for d in range(ndim)]
    params, args = [], []
    for k, (t, p) in enumerate(zip(types, pattern)):
        if p is None:
            params.append(f"a{k}: A[{k}]")
            args.append(f"a{k}")
        else:
            *flags, lead = p
            params.append(f"a{k}: sk.{'indexedarray' if kinds[k] else 'array'}(dtype=A[{k}], ndim={len(flags)})")
            idx = [tids[lead + d] if f else "0" for d, f in enumerate(flags)]
            args.append(f"a{k}[{', '.join(idx)}]")
    params += [f"r{k}: sk.{'indexedarray' if kinds[len(types) + k] else 'array'}(dtype=R[{k}], ndim={ndim})"
               for k, t in enumerate(rets) if k not in alias]
    results = [f"v{k}" for k in range(len(rets))]
    body = [f"    {', '.join(tids)} = sk.tid()" if ndim > 1 else "    i0 = sk.tid()",
            f"    {', '.join(results)} = F({', '.join(args)})"]
    body += [f"    {'a' if k in alias else 'r'}{alias.get(k, k)}[{', '.join(tids)}] = v{k}" for k in range(len(rets))]
    head = f"F = BuiltinFunction({callee!r})" if isinstance(callee, str) else "F = None  # the @func, set below"
    src = "\n".join(["import simkit as sk", "from simkit.kernels.api import BuiltinFunction", head,
                     f"# A: {', '.join(_type_id(t) for t in types)}", f"# R: {', '.join(_type_id(t) for t in rets)}",
                     "A, R = MAP_TYPES  # (set by runtime/map.py before this runs)", "",
                     "@sk.kernel", f"def map_kernel({', '.join(params)}):"] + body) + "\n"
    fname = callee if isinstance(callee, str) else callee.key.strip("<>_")
    mod = pyscope.import_generated(src, f"simkit_map_{fname}", "map", None if isinstance(callee, str) else callee,
                                   {"MAP_TYPES": (types, tuple(rets))})
    if not isinstance(callee, str):
        mod.F = callee  # (kernels resolve globals when they compile, at the first launch)
    return mod.map_kernel


def _type_id(t) -> str:
    """A type's name in a generated file (a struct's with its module and identity: the file's hash tells
    structs of one name apart)."""
    if T.is_struct(t):
        return f"{t.__module__}.{t.__qualname__}@{id(t):x}"
    return T.type_name(t)


# ---------------------------------------------------------------------------
# array operators (installed on simkit.array by runtime/__init__.py)

def _binary(builtin: str, reflected: bool = False, inplace: bool = False):
    b = BuiltinFunction(builtin)

    def op(self, other):
        if inplace:
            map(b, self, other, out=self)
            return self
        return map(b, other, self) if reflected else map(b, self, other)
    op.__name__ = f"__{'i' if inplace else 'r' if reflected else ''}{builtin}__"
    return op


def _unary(builtin: str):
    b = BuiltinFunction(builtin)

    def op(self):
        return map(b, self)
    return op


OPERATORS = {}
for _py, _b in (("add", "add"), ("sub", "sub"), ("mul", "mul"), ("truediv", "div"), ("floordiv", "floordiv"),
                ("mod", "mod"), ("pow", "pow")):
    OPERATORS[f"__{_py}__"] = _binary(_b)
    OPERATORS[f"__r{_py}__"] = _binary(_b, reflected=True)
    OPERATORS[f"__i{_py}__"] = _binary(_b, inplace=True)
OPERATORS["__neg__"] = _unary("neg")
OPERATORS["__pos__"] = _unary("pos")

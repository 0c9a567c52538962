"""``@func_native``: a @func whose body is a C++ snippet (Warp's ``func_native``).

::

    @sk.func_native("out[tid] = a * x[tid] + y[tid];",
                    adj_snippet="adj_a += x[tid] * adj_out[tid]; adj_x[tid] += a * adj_out[tid];")
    def saxpy(a: float, x: sk.array(dtype=float), out: sk.array(dtype=float), tid: int): ...

The snippet is the body of a C++ function of the annotated parameters, named as in Python; a return
annotation gives it a result (``return`` in the snippet). It is compiled for the CPU and the GPU
alike (``SK_CUDA`` tells them apart; ``__shared__`` and ``__syncthreads()`` exist on the GPU only).
Arrays index as ``x[i]`` (1-d) and convert to a pointer to their data (``atomicAdd(counter, 1)``);
types are simkit's (``sk::float32``, ``sk::vec_t<3, float>``); ``wp::`` has them too, with Warp's names and
constructors where they differ (``wp::vec3(x, y, z)``, ``wp::mat_t<2, 2, wp::float32>(a, b, c, d)``,
``wp::fixedarray_t<3, wp::float32>``; kernels/native/warp_names.h).

``adj_snippet`` is the body of the adjoint: ``adj_<param>`` accumulates a value parameter's
adjoint, ``adj_<array>`` is the array's gradient (same indexing), ``adj_ret`` the result's adjoint.
Without it the function passes no gradient. The adjoint's forward replay runs ``replay_snippet``
(default: the snippet again; ``""`` for a snippet that must not run twice).

The tape cannot see which arrays a snippet reads or writes: its overwrite and in-place checks skip
them, as Warp's do.
"""
from __future__ import annotations

import inspect
import sys

from . import ir
from . import types as T


class Snippets:
    def __init__(self, forward: str, adjoint: str | None, replay: str | None):
        for what, text in (("snippet", forward), ("adj_snippet", adjoint), ("replay_snippet", replay)):
            if text is not None and not isinstance(text, str):
                raise TypeError(f"func_native: {what} must be a string of C++ code, got {type(text).__name__}")
        self.forward, self.adjoint = forward, adjoint
        self.replay = forward if replay is None else replay


def func_native(snippet: str, adj_snippet: str | None = None, replay_snippet: str | None = None):
    """Decorate a Python stub (annotated parameters, body ``...``) whose body is ``snippet``, C++ code."""
    snippets = Snippets(snippet, adj_snippet, replay_snippet)

    def deco(f):
        from .decorators import declare_native

        _return_types(f)  # (a bad return annotation is refused here, where it is written)
        return declare_native(f, sys._getframe(1).f_locals, snippets)  # (a redefinition replaces, as in Warp)

    return deco


def _return_types(pyfunc) -> list:
    ann = inspect.signature(pyfunc).return_annotation
    if ann is inspect.Signature.empty or ann is None:
        return []
    if isinstance(ann, str):
        ann = eval(ann, dict(pyfunc.__globals__))  # noqa: S307 - the user's own annotation
    try:
        t = T.as_kernel_type(ann)
    except TypeError as e:
        raise TypeError(f"@func_native '{pyfunc.__qualname__}': return annotation: {e}") from None
    if T.is_generic(t):
        raise TypeError(f"@func_native '{pyfunc.__qualname__}': the return annotation must be a concrete type, "
                        f"got {T.type_name(t)} (parameters may be generic)")
    return [t]


def build(spec, pyfunc, text: str, name: str) -> ir.Function:
    """The ``ir.Function`` of one specialisation: parameters and result, no statements; ``native``
    holds the C++ body. Seen as writing arrays (so its adjoint always runs) and as needing no replay
    variant (its replay is the replay snippet)."""
    from .codegen import CPP_KEYWORDS

    params, structs = [], []
    for pname, ptype in spec.param_types.items():
        if pname in CPP_KEYWORDS or pname.startswith("_"):
            raise TypeError(f"@func_native '{pyfunc.__qualname__}': parameter '{pname}' is not a name the "
                            f"C++ snippet can use")
        params.append(ir.Var(pname, ptype, label=pname, is_param=True))
        for t in (ptype, getattr(ptype, "dtype", None)):
            if t is not None and T.is_struct(t) and t not in structs:
                structs.append(t)
    code = pyfunc.__code__
    fn = ir.Function(name=name, params=params, body=[], vars=[], return_types=_return_types(pyfunc),
                     is_kernel=False, filename=code.co_filename, first_line=code.co_firstlineno,
                     source_lines=[], structs=structs)
    fn.native = text
    fn._writes_arrays = True
    fn._side_effects = False
    return fn


def specialize(function, spec, pyfunc):
    """Fill ``spec`` (a FuncSpec) of a ``@func_native``: its function and its replay."""
    snippets = function.native
    spec.ir = build(spec, pyfunc, snippets.forward, spec.cname)
    spec.ir.native_adjoint = snippets.adjoint
    spec.return_types = spec.ir.return_types
    spec.replay_ir = build(spec, pyfunc, snippets.replay, f"{spec.cname}_replay")
    spec.replay_ir.no_adjoint = True


def _signature(fn: ir.Function, name: str, params: list) -> list:
    from .codegen import return_ctype

    return [f"// {fn.filename}:{fn.first_line}: @func_native {name}",
            f"template <bool SKC>\nstatic SK_INLINE {return_ctype(fn)} {name}({', '.join(params)}) {{"]


def gen_forward(fn: ir.Function) -> str:
    from .codegen import ctype

    params = [f"{ctype(p.type)} {p.name}" for p in fn.params]
    return "\n".join(_signature(fn, fn.name, params) + [fn.native, "}"])


def gen_adjoint(fn: ir.Function) -> str:
    """``adj_<name>(params..., adj_params&..., adj_ret)`` (the signature of every func's adjoint) around
    the adjoint snippet: value adjoints by reference, arrays' as their gradient arrays."""
    from .adjoint import adj_func_signature
    from .codegen import ctype

    head = adj_func_signature(fn)
    arrays = [p for p in fn.params if isinstance(p.type, T.ArrayType)]
    for p in arrays:  # (the caller's adjoint of an array argument is unused: rename it away)
        head = head.replace(f"{ctype(p.type)}& adj_{p.name}", f"{ctype(p.type)}& _sk_adj_{p.name}", 1)
    body = [f"    const {ctype(p.type)} adj_{p.name} = sk::grad_array({p.name});" for p in arrays]
    return "\n".join([f"// {fn.filename}:{fn.first_line}: adjoint of @func_native {fn.name}", head + " {"]
                     + body + ["{", fn.native_adjoint or "", "}", "}"])

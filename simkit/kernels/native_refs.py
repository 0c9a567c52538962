"""ref[T] parameters of @func_native functions (refs.py: copy-in/copy-out).

The snippet writes its ref parameters in place, so it becomes the body of a function taking them as C++
references; the function the kernels call wraps it and returns the final ref values after the result::

    static T_ret f(float x, float y) { f_body(x, y); return {x}; }      // snippet: x = y * 2.0f;

The adjoint snippet sees ``adj_x`` as Warp gives it: on entry the adjoint of x's final value, on exit that
of its initial value (``adj_y += 2.0f * adj_x; adj_x = 0.0f;``). A native function with ref parameters
and no adjoint snippet cannot be differentiated: building an adjoint that calls it is refused.
"""
from __future__ import annotations

import copy


def setup(spec):
    """After ``native_func.specialize``: the ref parameters' values follow the result (forward, replay)."""
    extra = [spec.param_types[n] for n in spec.ref_params]
    for fn in (spec.ir, spec.replay_ir):
        fn.ref_params = list(spec.ref_params)
        fn.user_return_types = list(fn.return_types)
        fn.return_types = list(fn.return_types) + extra
    spec.return_types = spec.ir.return_types


def _body(fn):
    """``fn`` as the snippet's own function: named ``<name>_body``, returning the snippet's result."""
    body = copy.copy(fn)
    body.name = f"{fn.name}_body"
    body.return_types = fn.user_return_types
    return body


def gen_forward(fn) -> str:
    from .codegen import ctype, return_ctype

    body = _body(fn)
    refs = fn.ref_params
    params = [f"{ctype(p.type)}{'&' if p.name in refs else ''} {p.name}" for p in fn.params]
    user_ret = return_ctype(body)
    out = [f"// {fn.filename}:{fn.first_line}: @func_native {fn.name} (ref parameters: {', '.join(refs)})",
           f"template <bool SKC>\nstatic SK_INLINE {user_ret} {body.name}({', '.join(params)}) {{", fn.native, "}"]
    if len(fn.return_types) > 1:
        fields = " ".join(f"{ctype(t)} r{k};" for k, t in enumerate(fn.return_types))
        out.append(f"struct {fn.name}_ret {{ {fields} }};")
    args = ", ".join(p.name for p in fn.params)
    values = (["_r"] if fn.user_return_types else []) + list(refs)
    call = f"{body.name}<SKC>({args});"
    out.append(f"template <bool SKC>\nstatic SK_INLINE {return_ctype(fn)} {fn.name}("
               f"{', '.join(f'{ctype(p.type)} {p.name}' for p in fn.params)}) {{")
    out.append(f"    {'auto _r = ' if fn.user_return_types else ''}{call}")
    out.append(f"    return {values[0]};" if len(values) == 1 else f"    return {{{', '.join(values)}}};")
    out.append("}")
    return "\n".join(out)


def gen_adjoint(fn) -> str:
    """``adj_<name>``: the adjoint snippet's function with each ref adjoint seeded from ``adj_ret`` and
    accumulated into the caller's adjoint of the argument."""
    from .adjoint import adj_func_signature
    from .codegen import ctype
    from .native_func import gen_adjoint as gen_snippet_adjoint

    if fn.native_adjoint is None:  # only kernels that are never differentiated call it (check_differentiable)
        return (f"// {fn.filename}:{fn.first_line}: @func_native {fn.name} has no adjoint\n"
                + adj_func_signature(fn) + " {}")
    body = _body(fn)
    refs = fn.ref_params
    n_user = len(fn.user_return_types)
    many = len(fn.return_types) > 1
    lines = [gen_snippet_adjoint(body), adj_func_signature(fn) + " {"]
    args = [p.name for p in fn.params]
    for k, name in enumerate(refs):
        p = next(q for q in fn.params if q.name == name)
        seed = f"adj_ret.r{n_user + k}" if many else "adj_ret"
        lines.append(f"    {ctype(p.type)} _sk_io_{name} = {seed};")
    adj_args = [f"_sk_io_{p.name}" if p.name in refs else f"adj_{p.name}" for p in fn.params]
    if n_user:
        adj_args.append("adj_ret.r0" if many else "adj_ret")
    lines.append(f"    adj_{body.name}<SKC>({', '.join(args + adj_args)});")
    for name in refs:
        lines.append(f"    sk::accum(adj_{name}, _sk_io_{name});")
    lines.append("}")
    return "\n".join(lines)


def check_differentiable(spec, where):
    """A differentiable kernel calls ``spec``: a CompileError (``where(message)``) when it reaches a
    native function with ref parameters and no adjoint snippet, directly or through other funcs."""
    seen, todo = set(), [spec]
    while todo:
        s = todo.pop()
        fn = s.ir
        if id(s) in seen or fn is None:
            continue
        seen.add(id(s))
        if has_refs(fn) and getattr(fn, "native_adjoint", None) is None:
            via = "" if s is spec else f" (through '{spec.function.key}')"
            raise where(f"Cannot call '{s.function.key}' with wp.ref[T] parameters ({', '.join(fn.ref_params)})"
                        f"{via} from a differentiable kernel: it is a @func_native with no adj_snippet, so it has "
                        f"no gradient. Give it an adj_snippet (adj_<param> of a ref parameter is its adjoint, "
                        f"in and out), or declare the kernel with enable_backward=False")
        todo.extend(getattr(fn, "funcs", None) or [])


def has_refs(fn) -> bool:
    return bool(getattr(fn, "ref_params", None)) and getattr(fn, "native", None) is not None


__all__ = ["setup", "gen_forward", "gen_adjoint", "has_refs", "check_differentiable"]

"""``@func_grad`` and ``@func_replay``: user-written adjoints and replays of a ``@func``.

A custom adjoint takes the function's arguments and then the adjoint of each result (``adj_ret``
for one; any names), and accumulates into ``adjoint[arg]`` (Warp's spelling)::

    @sk.func
    def safe_sqrt(x: float):
        return sk.sqrt(sk.max(x, 0.0))

    @sk.func_grad(safe_sqrt)
    def adj_safe_sqrt(x: float, adj_ret: float):
        if x > 0.0:
            sk.adjoint[x] += adj_ret / (2.0 * sk.sqrt(x))

It is compiled as an ordinary function returning one adjoint per argument: each
``adjoint[x] += e`` becomes ``_sk_adj_x += e`` on a local that starts at zero.
"""
from __future__ import annotations

import ast
import copy

from .frontend import SourceInfo, build


def _is_adjoint_target(node) -> str | None:
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Name):
        base = node.value
        if (isinstance(base, ast.Attribute) and base.attr == "adjoint") or (
                isinstance(base, ast.Name) and base.id == "adjoint"):
            return node.slice.id
    return None


class _Rewrite(ast.NodeTransformer):
    def __init__(self, params):
        self.params = params

    def visit_AugAssign(self, node):
        name = _is_adjoint_target(node.target)
        if name is None:
            return self.generic_visit(node)
        if name not in self.params:
            raise SyntaxError(f"adjoint[{name}]: '{name}' is not a parameter of the function")
        node.target = ast.copy_location(ast.Name(id=f"_sk_adj_{name}", ctx=ast.Store()), node.target)
        node.value = self.visit(node.value)
        return node


def build_custom_grad(function, spec):
    """An ``ir.Function`` returning the adjoint of each argument of ``spec`` (a FuncSpec)."""
    g = function.custom_grad
    src = SourceInfo(g)
    src.node = copy.deepcopy(src.node)
    params = list(spec.param_types)
    _Rewrite(params).visit(src.node)
    body = src.node.body
    line = body[0] if body else src.node
    init = [ast.copy_location(ast.Assign(targets=[ast.Name(id=f"_sk_adj_{p}", ctx=ast.Store())],
                                         value=ast.Call(func=ast.Name(id="_sk_zero_like", ctx=ast.Load()),
                                                        args=[ast.Name(id=p, ctx=ast.Load())], keywords=[])), line)
            for p in params]
    ret_vals = [ast.Name(id=f"_sk_adj_{p}", ctx=ast.Load()) for p in params]
    ret = ast.Return(value=ast.Tuple(elts=ret_vals, ctx=ast.Load()) if len(ret_vals) > 1 else ret_vals[0])
    src.node.body = init + body + [ast.copy_location(ret, body[-1] if body else src.node)]
    for n in src.node.body:
        ast.fix_missing_locations(n)
    from .api import BuiltinFunction

    src.closure = dict(src.closure, _sk_zero_like=BuiltinFunction("zero_like"))
    types = dict(spec.param_types)
    names = list(g.__code__.co_varnames[:g.__code__.co_argcount])
    n_ret = len(spec.return_types)
    if n_ret == 0:
        raise TypeError(f"@func_grad({function.key}): the function returns nothing to differentiate")
    if names[:len(params)] != params or len(names) != len(params) + n_ret:
        outs = ["adj_ret"] if n_ret == 1 else [f"adj_ret{k}" for k in range(n_ret)]
        raise TypeError(f"@func_grad({function.key}) must take its arguments and then the adjoint of each "
                        f"result: ({', '.join(params + outs)}), got ({', '.join(names)})")
    for name, t in zip(names[len(params):], spec.return_types):
        types[name] = t
    fn = build(g, types, is_kernel=False, name=f"{spec.cname}_grad", src=src)
    fn.no_adjoint = True  # it *is* an adjoint
    return fn


def build_replay(function, spec):
    r = function.custom_replay
    fn = build(r, dict(spec.param_types), is_kernel=False, name=f"{spec.cname}_replay")
    fn.no_adjoint = True  # only used in the forward replay
    return fn

"""``@func_grad`` and ``@func_replay``: user-written adjoints and replays of a ``@func``.

A custom adjoint takes the function's arguments and then the adjoint of each result (``adj_ret``
for one; any names), and accumulates into ``adjoint[arg]`` (Warp's spelling; ``adjoint[s.field]`` and
``adjoint[v][0]`` for parts of a struct or a vector)::

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
import itertools

from .frontend import SourceInfo, build


def _adjoint_of(node):
    """``E`` of ``adjoint[E]`` (``wp.adjoint[E]``), else None."""
    if isinstance(node, ast.Subscript):
        base = node.value
        if (isinstance(base, ast.Attribute) and base.attr == "adjoint") or (
                isinstance(base, ast.Name) and base.id == "adjoint"):
            return node.slice
    return None


def _root(node):
    """The parameter name a target such as ``x``, ``x.vec`` or ``x.vec[0]`` starts from, else None."""
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def _is_array_path(node, types: dict) -> bool:
    """Is ``node`` (``x`` or ``x.f.g``, from parameter ``x``) an array: a parameter or a struct field that is one?"""
    from . import types as T

    fields = []
    while isinstance(node, ast.Attribute):
        fields.append(node.attr)
        node = node.value
    t = types.get(node.id) if isinstance(node, ast.Name) else None
    for f in reversed(fields):
        t = t._simkit_struct.fields.get(f) if t is not None and T.is_struct(t) else None
    return isinstance(t, T.ArrayType)


class _AdjointTarget(ast.NodeTransformer):
    """``adjoint[x.f]`` inside a target becomes ``_sk_adj_x.f``: the adjoint of part of a parameter. The adjoint of
    an array that is not a parameter (a struct parameter's array field, an array local) is its gradient array:
    ``adjoint[s.values][i]`` becomes ``_sk_grad_<k>[i]``, with ``(_sk_grad_<k>, s.values)`` in ``grads``."""

    def __init__(self, params, types: dict, counter):
        self.params, self.types, self.counter, self.found, self.grads = params, types, counter, False, []

    def visit_Subscript(self, node):
        inner = _adjoint_of(node)
        if inner is None:
            return self.generic_visit(node)
        name = _root(inner)
        self.found = True
        inner = copy.deepcopy(inner)
        if name not in self.params or (not isinstance(inner, ast.Name) and _is_array_path(inner, self.types)):
            if not isinstance(inner, (ast.Name, ast.Attribute)):
                raise SyntaxError(f"adjoint[{ast.unparse(inner)}]: not a parameter, a part of one, or an array")
            local = f"_sk_grad_{next(self.counter)}"
            self.grads.append((local, inner))
            return ast.Name(id=local, ctx=ast.Load())
        leaf = inner
        while not isinstance(leaf, ast.Name):
            leaf = leaf.value
        leaf.id = f"_sk_adj_{name}"
        return inner


class _Rewrite(ast.NodeTransformer):
    def __init__(self, params, arrays=(), types=None):
        self.params, self.arrays, self.types = params, set(arrays), types or {}
        self.counter = itertools.count()  # (the gradient-array locals of this function: _sk_grad_0, _sk_grad_1, ...)

    def _target(self, target):
        """``target`` with its ``adjoint[E]`` made the adjoint local (or gradient array), and the arrays whose
        gradients it writes; else None."""
        found = _AdjointTarget(self.params, self.types, self.counter)
        root = _root(_adjoint_of_target(target))
        new = found.visit(copy.deepcopy(target))
        if not found.found:
            return None
        new = ast.copy_location(new, target)
        for n in ast.walk(new):
            if hasattr(n, "ctx"):
                n.ctx = ast.Load()
        new.ctx = ast.Store()
        arrays = [(None, ast.Name(id=root, ctx=ast.Load()))] if root in self.arrays else []
        return new, arrays + found.grads

    def _guard(self, node, arrays):
        """``node`` run only when each array it writes the gradient of has one (adjoint[a][i] += v), after
        the gradient arrays it names are bound to their locals (a local: its writes are atomic)."""
        for local, a in arrays:
            body = [node]
            if local is not None:
                grad = ast.Call(func=ast.Name(id="_sk_grad_array", ctx=ast.Load()), args=[copy.deepcopy(a)],
                                keywords=[])
                body.insert(0, ast.copy_location(ast.Assign(targets=[ast.Name(id=local, ctx=ast.Store())],
                                                            value=grad), node))
            test = ast.Call(func=ast.Name(id="_sk_has_grad", ctx=ast.Load()), args=[copy.deepcopy(a)], keywords=[])
            node = ast.copy_location(ast.If(test=test, body=body, orelse=[]), node)
        return node

    def visit_Assign(self, node):  # adjoint[x.v].y = e: sets that part of x's adjoint (which starts at zero)
        found = self._target(node.targets[0]) if len(node.targets) == 1 else None
        if found is None:
            return self.generic_visit(node)
        node.targets = [found[0]]
        node.value = self.visit(node.value)
        return self._guard(node, found[1])

    def visit_AugAssign(self, node):
        found = self._target(node.target)
        if found is None:
            return self.generic_visit(node)
        node.target = found[0]
        node.value = self.visit(node.value)
        return self._guard(node, found[1])


def _adjoint_of_target(node):
    """The ``E`` of the ``adjoint[E]`` inside an augmented-assignment target, else None."""
    for n in ast.walk(node):
        inner = _adjoint_of(n)
        if inner is not None:
            return inner
    return None


def build_custom_grad(function, spec, g):
    """An ``ir.Function`` returning the adjoint of each argument of ``spec`` (a FuncSpec), from ``g``."""
    src = SourceInfo(g)
    src.node = copy.deepcopy(src.node)
    params = list(spec.param_types)
    from . import types as T

    # an array's adjoint is its gradient array (adjoint[a][i] += v accumulates into a.grad); others start at zero
    arrays = [p for p, t in spec.param_types.items() if isinstance(t, T.ArrayType)]
    _Rewrite(params, arrays, spec.param_types).visit(src.node)
    body = src.node.body
    line = body[0] if body else src.node
    init = [ast.copy_location(ast.Assign(targets=[ast.Name(id=f"_sk_adj_{p}", ctx=ast.Store())],
                                         value=ast.Call(func=ast.Name(id="_sk_grad_array" if p in arrays
                                                                      else "_sk_zero_like", ctx=ast.Load()),
                                                        args=[ast.Name(id=p, ctx=ast.Load())], keywords=[])), line)
            for p in params]
    ret_vals = [ast.Name(id=f"_sk_adj_{p}", ctx=ast.Load()) for p in params]
    ret = ast.Return(value=ast.Tuple(elts=ret_vals, ctx=ast.Load()) if len(ret_vals) > 1 else ret_vals[0])
    src.node.body = init + body + [ast.copy_location(ret, body[-1] if body else src.node)]
    for n in src.node.body:
        ast.fix_missing_locations(n)
    from .api import BuiltinFunction

    src.closure = dict(src.closure, _sk_zero_like=BuiltinFunction("zero_like"),
                       _sk_grad_array=BuiltinFunction("grad_array"), _sk_has_grad=BuiltinFunction("has_grad"))
    types = dict(spec.param_types)
    names = list(g.__code__.co_varnames[:g.__code__.co_argcount])
    n_ret = len(spec.return_types)  # (0: a function that writes arrays; its adjoint takes only the arguments)
    if names[:len(params)] != params or len(names) != len(params) + n_ret:
        outs = ["adj_ret"] if n_ret == 1 else [f"adj_ret{k}" for k in range(n_ret)]
        raise TypeError(f"@func_grad({function.key}) must take its arguments and then the adjoint of each "
                        f"result: ({', '.join(params + outs)}), got ({', '.join(names)})")
    for name, t in zip(names[len(params):], spec.return_types):
        types[name] = t
    fn = build(g, types, is_kernel=False, name=f"{spec.cname}_grad", src=src)
    fn.no_adjoint = True  # it *is* an adjoint
    return fn


def build_replay(spec, r):
    fn = build(r, dict(spec.param_types), is_kernel=False, name=f"{spec.cname}_replay")
    fn.no_adjoint = True  # only used in the forward replay
    return fn

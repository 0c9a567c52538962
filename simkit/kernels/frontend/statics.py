"""``static(expr)`` resolved when a kernel or @func is declared, as Warp does.

Each ``static(...)`` whose expression reads no name the function binds (its parameters, its assigned
names, its loop variables) is evaluated once, right at declaration, in the function's global and closure
scope; its value (or the exception it raised) is kept on the ``ast.Call`` node as ``_sk_static``. A
build then uses that value: the expression is never evaluated again (side effects run once; rebinding
the ``static`` alias or the globals it read after the declaration changes nothing). A ``static(...)``
that reads a local of the function is evaluated when the function is built, at each place it is
reached (an unrolled loop's iterations each give theirs); any static nested in it that could be
resolved at declaration enters it as its value.

Example::

    @sk.kernel
    def k(out: sk.array(dtype=float)):
        out[0] = sk.static(table["gain"] * 2.0)   # read once, when k is declared
"""
from __future__ import annotations

import ast
import builtins as pybuiltins

#: the attribute of an ``ast.Call`` that holds its resolved static value: ("value", v) or ("error", exc)
RESOLVED = "_sk_static"


class StaticError(Exception):
    """A ``static(...)`` expression raised when it was evaluated."""


def may_use_static(pyfunc) -> bool:
    """Cheap test before parsing: can the function's code reach the ``static`` function at all?"""
    code = getattr(pyfunc, "__code__", None)
    if code is None:
        return False
    if "static" in code.co_names or "static" in code.co_freevars:
        return True
    g = pyfunc.__globals__
    if any(is_static_function(g.get(n)) for n in code.co_names):  # (an alias: s = sk.static)
        return True
    for cell in pyfunc.__closure__ or ():
        try:
            if is_static_function(cell.cell_contents):
                return True
        except ValueError:  # an empty cell
            pass
    return False


def is_static_function(obj) -> bool:
    return getattr(obj, "_simkit_static", False) is True


def _scope(pyfunc) -> dict:
    scope = dict(pyfunc.__globals__)
    if pyfunc.__closure__:
        for name, cell in zip(pyfunc.__code__.co_freevars, pyfunc.__closure__):
            try:
                scope[name] = cell.cell_contents
            except ValueError:  # an empty cell
                pass
    return scope


def function_locals(fn_node) -> set:
    """Names the function binds: its parameters and every name it assigns or loops over."""
    from .statements import assigned_names  # (statements imports expressions, which imports this module)

    a = fn_node.args
    params = [p.arg for p in a.posonlyargs + a.args + a.kwonlyargs]
    params += [p.arg for p in (a.vararg, a.kwarg) if p is not None]
    return set(params) | set(assigned_names(fn_node.body))


def free_names(expr) -> set:
    return {n.id for n in ast.walk(expr) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def callee(func_node, scope: dict, local: set):
    """The object a call's function expression names (``static``, ``wp.static``), or None when it goes
    through a local or cannot be looked up without running code."""
    if isinstance(func_node, ast.Name):
        if func_node.id in local:
            return None
        if func_node.id in scope:
            return scope[func_node.id]
        return getattr(pybuiltins, func_node.id, None)
    if isinstance(func_node, ast.Attribute):
        owner = callee(func_node.value, scope, local)
        return getattr(owner, func_node.attr, None) if owner is not None else None
    return None


def static_calls(node, scope: dict, local: set):
    """The outermost ``static(...)`` calls under ``node`` (the nested ones: see ``resolve_declared``)."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.Call) and is_static_function(callee(child.func, scope, local)):
            yield child
        else:
            yield from static_calls(child, scope, local)


def declare(pyfunc, src=None):
    """At the declaration of a kernel or @func: its SourceInfo with its statics resolved, or None when it
    uses no ``static`` (or its source cannot be read: building it reports that)."""
    if not may_use_static(pyfunc):
        return src
    from ..errors import CompileError
    from .builder import SourceInfo

    try:
        src = src or SourceInfo(pyfunc)
    except CompileError:
        return None
    resolve_declared(src, pyfunc)
    return src


def resolve_declared(src, pyfunc) -> None:
    """Evaluate, once, every ``static(...)`` of ``src`` that reads no local of the function."""
    scope = _scope(pyfunc)
    local = function_locals(src.node)
    todo = list(static_calls(src.node, scope, local))  # (in source order: side effects run in that order)
    while todo:
        call = todo.pop(0)
        if len(call.args) == 1 and not call.keywords and not (free_names(call.args[0]) & local):
            try:
                value = evaluate(call.args[0], scope, src.filename)
            except NameError:  # (a global defined after the function: looked up again at build)
                todo[:0] = static_calls(call, scope, local)
                continue
            except Exception as e:  # reported when the function is built, where it is used
                setattr(call, RESOLVED, ("error", e))
                continue
            setattr(call, RESOLVED, ("value", value))
        else:  # reads a local: evaluated at build; statics nested in it may be resolved now
            todo[:0] = static_calls(call, scope, local)


def evaluate(expr, scope: dict, filename: str):
    """Evaluate ``expr``, its already resolved nested statics taken as their values."""
    expr, values = substitute(expr)
    if values:
        scope = {**scope, **values}
    code = compile(ast.fix_missing_locations(ast.Expression(expr)), filename, "eval")
    return eval(code, scope)  # noqa: S307 - the user's own compile-time expression


def substitute(expr):
    """``expr`` with each nested static call that already has a value replaced by a hidden name, and those
    names' values (a copy: the function's own tree is left as it is)."""
    values = {}

    def rebuild(node):
        if not isinstance(node, ast.AST):
            return node
        found = getattr(node, RESOLVED, None)
        if found is not None and found[0] == "value":
            name = f"__sk_static_{len(values)}"
            values[name] = found[1]
            return ast.copy_location(ast.Name(id=name, ctx=ast.Load()), node)
        fields = {f: ([rebuild(x) for x in v] if isinstance(v, list) else rebuild(v))
                  for f, v in ast.iter_fields(node)}
        return ast.copy_location(type(node)(**fields), node)

    if not any(getattr(n, RESOLVED, None) for n in ast.walk(expr)):
        return expr, values
    return rebuild(expr), values

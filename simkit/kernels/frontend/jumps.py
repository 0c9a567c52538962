"""Lower ``break``, ``continue`` and early ``return`` to flag variables (an AST pass).

After this pass a function body has no jumps: a jump sets a flag, the rest of
its block runs under ``if not flag:``, and loops also stop on the flag. The
IR is then purely structured, which is what lets the adjoint pass replay and
reverse any loop iteration by iteration (a jump in the middle of a replayed
body would otherwise skip or repeat reverse statements).

    for i in range(n):            _sk_brk1 = False
        if x[i] < 0:              for i in range(n):        # also stops when _sk_brk1
            break                     if x[i] < 0:
        s += x[i]          ->             _sk_brk1 = True
                                      if not _sk_brk1:
                                          s += x[i]
"""
from __future__ import annotations

import ast
import itertools

RET = "_sk_ret"
RETVAL = "_sk_retval"


def _name(id_, ctx=ast.Load):
    return ast.Name(id=id_, ctx=ctx())


def _assign(id_, value):
    return ast.Assign(targets=[_name(id_, ast.Store)], value=value, lineno=0)


def _const(v):
    return ast.Constant(value=v)


def _not_any(flags):
    if len(flags) == 1:
        return ast.UnaryOp(op=ast.Not(), operand=_name(flags[0]))
    return ast.UnaryOp(op=ast.Not(), operand=ast.BoolOp(op=ast.Or(), values=[_name(f) for f in flags]))


def _jumps(stmts, loop_level=True):
    """(has break/continue for this loop, has return) among these statements."""
    brk = ret = False
    for s in stmts:
        for node in _walk_no_nested_loops(s) if loop_level else ast.walk(s):
            if isinstance(node, (ast.Break, ast.Continue)):
                brk = True
            elif isinstance(node, ast.Return):
                ret = True
    return brk, ret


def _walk_no_nested_loops(node):
    """ast.walk that does not enter nested loops (their break/continue are their own; their returns are
    yielded). node is a statement of a loop's body, and may be a loop itself."""
    if isinstance(node, (ast.For, ast.While)):
        yield from (n for n in ast.walk(node) if isinstance(n, ast.Return))
        return
    yield node
    for child in ast.iter_child_nodes(node):
        if isinstance(child, (ast.For, ast.While)):
            for n in ast.walk(child):
                if isinstance(n, ast.Return):
                    yield n
            continue
        yield from _walk_no_nested_loops(child)


def _has_return(stmts):
    return any(isinstance(n, ast.Return) for s in stmts for n in ast.walk(s))


class _Lowerer:
    def __init__(self, returns_value: bool, nvalues: int):
        self.counter = itertools.count(1)
        self.returns_value = returns_value
        self.nvalues = nvalues
        self.used_ret = False

    def block(self, stmts, flags, loop):
        out = []
        for i, s in enumerate(stmts):
            new, may_jump = self.stmt(s, flags, loop)
            out.extend(new)
            if may_jump:
                rest = self.block(stmts[i + 1:], flags, loop)
                if rest and flags:
                    guard = ast.If(test=_not_any(flags), body=rest, orelse=[])
                    ast.copy_location(guard, stmts[i + 1])
                    out.append(guard)
                return out
        return out

    def stmt(self, s, flags, loop):
        if isinstance(s, ast.Return):
            self.used_ret = True
            new = []
            if s.value is not None and self.returns_value:
                if self.nvalues > 1:
                    targets = ast.Tuple(elts=[_name(f"{RETVAL}{k}", ast.Store) for k in range(self.nvalues)],
                                        ctx=ast.Store())
                    new.append(ast.Assign(targets=[targets], value=s.value))
                else:
                    new.append(_assign(RETVAL, s.value))
            new.append(_assign(RET, _const(True)))
            for n in new:
                ast.copy_location(n, s)
                ast.fix_missing_locations(n)
            return new, True
        if isinstance(s, (ast.Break, ast.Continue)):
            if loop is None:
                return [s], False  # reported by the frontend ('break' outside a loop)
            flag = loop["brk"] if isinstance(s, ast.Break) else loop["cont"]
            a = ast.copy_location(_assign(flag, _const(True)), s)
            return [a], True
        if isinstance(s, ast.If):
            brk, ret = _jumps([s]) if loop is not None else (False, _has_return([s]))
            # (the branches are lowered even without a jump of this level: a loop in them may have its own)
            s.body = self.block(s.body, flags, loop) or [ast.Pass()]
            s.orelse = self.block(s.orelse, flags, loop)
            return [s], brk or ret
        if isinstance(s, (ast.For, ast.While)):
            return self.loop(s, flags)
        return [s], False

    def loop(self, s, flags):
        has_brk = any(isinstance(n, ast.Break) for b in s.body for n in _walk_no_nested_loops(b))
        has_cont = any(isinstance(n, ast.Continue) for b in s.body for n in _walk_no_nested_loops(b))
        ret_inside = _has_return(s.body)
        if not (has_brk or has_cont or ret_inside):
            s.body = self.block(s.body, [], None)  # (loops inside may have jumps of their own)
            return [s], False
        n = next(self.counter)
        info = {"brk": f"_sk_brk{n}", "cont": f"_sk_cont{n}"}
        inner_flags = []
        pre = []
        if has_brk:
            inner_flags.append(info["brk"])
            pre.append(ast.copy_location(_assign(info["brk"], _const(False)), s))
        if has_cont:
            inner_flags.append(info["cont"])
        if ret_inside:
            inner_flags.append(RET)
        body = self.block(s.body, inner_flags, info)
        if has_cont:
            body.insert(0, ast.copy_location(_assign(info["cont"], _const(False)), s))
        s.body = body
        stop = [f for f in (info["brk"] if has_brk else None, RET if ret_inside else None) if f]
        if isinstance(s, ast.While):
            s.test = ast.BoolOp(op=ast.And(), values=[ast.UnaryOp(op=ast.Not(), operand=_name(f)) for f in stop]
                                + [s.test]) if stop else s.test
        else:
            s._sk_stop = stop  # the frontend adds these flags to the loop condition
        s._sk_had_jump = True  # never unrolled
        for node in pre + [s]:
            ast.fix_missing_locations(node)
        return pre + [s], ret_inside


def lower_jumps(fn: ast.FunctionDef, is_kernel: bool) -> ast.FunctionDef:
    """Rewrite ``fn`` in place so that it contains no break/continue/return except one final return."""
    body = fn.body
    # fast path: no loops with jumps and at most one return, as the last statement
    returns = [n for s in body for n in ast.walk(s) if isinstance(n, ast.Return)]
    jumps = [n for s in body for n in ast.walk(s) if isinstance(n, (ast.Break, ast.Continue))]
    if not jumps and (not returns or (len(returns) == 1 and body and body[-1] is returns[0])):
        if is_kernel and returns:
            fn.body = body[:-1] or [ast.Pass()]
        return fn
    values = [r.value for r in returns if r.value is not None]
    nvalues = len(values[0].elts) if values and isinstance(values[0], ast.Tuple) else (1 if values else 0)
    low = _Lowerer(returns_value=bool(values) and not is_kernel, nvalues=nvalues)
    new_body = low.block(body, [RET] if returns else [], None)
    if low.used_ret:
        first = body[0] if body else fn
        new_body.insert(0, ast.copy_location(_assign(RET, _const(False)), first))
        if values and not is_kernel:
            last = body[-1]
            if nvalues > 1:
                ret = ast.Return(value=ast.Tuple(elts=[_name(f"{RETVAL}{k}") for k in range(nvalues)],
                                                 ctx=ast.Load()))
            else:
                ret = ast.Return(value=_name(RETVAL))
            new_body.append(ast.copy_location(ret, last))
    for s in new_body:
        ast.fix_missing_locations(s)
    fn.body = new_body
    return fn

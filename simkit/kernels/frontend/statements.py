"""Statement translation: one ``stmt_<NodeType>`` method per AST statement node.

Control flow keeps Python's semantics with SSA values: names assigned in the
branches of an ``if`` merge through a mutable phi var, and names assigned in a
loop body that existed before the loop become loop-carried mutable vars
(written back at the end of each iteration and before ``break``/``continue``).
"""
from __future__ import annotations

import ast

from .. import ir, lang
from ..api import IN_PLACE
from .. import registry as R
from .. import types as T
from ..errors import CompileError, CompileTypeError
from .builder import Py, TupleValue, describe
from .jumps import RETVAL

MAX_UNROLL = 16


#: what advances each geometry query in ``for i in query:`` loops
QUERY_NEXT = ("hash_grid_query_next", "bvh_query_next", "mesh_query_next")


def assigned_names(stmts) -> list:
    """Names bound anywhere in these statements (including nested blocks), in order."""
    out = []
    for s in stmts:
        for node in ast.walk(s):
            targets = []
            if isinstance(node, ast.Assign):
                targets = node.targets
            elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
                targets = [node.target]
            elif isinstance(node, ast.For):
                targets = [node.target]
            elif isinstance(node, ast.Call):
                targets = inout_targets(node)
            for t in targets:
                for n in _bound_names(t):
                    if n not in out:
                        out.append(n)
    return out


def _bound_names(target):
    """Names a target rebinds: `x`, `a, b`, and the root of `v[i] = ...` / `s.f = ...` (not the indices)."""
    if isinstance(target, ast.Name):
        yield target.id
    elif isinstance(target, (ast.Tuple, ast.List)):
        for e in target.elts:
            yield from _bound_names(e)
    elif isinstance(target, (ast.Subscript, ast.Attribute)):
        yield from _bound_names(target.value)
    elif isinstance(target, ast.Starred):
        yield from _bound_names(target.value)


def inout_targets(call) -> list:
    """Argument expressions of a call to a builtin that updates them in place (see registry ``inout``)."""
    f = call.func
    key = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else None
    if key not in R.inout_keys():
        return []
    out = []
    for b in R.overloads(key):
        names = list(b.input_types)
        for name in b.inout:
            i = names.index(name)
            if i < len(call.args):
                out.append(call.args[i])
        out += [k.value for k in call.keywords if k.arg in b.inout]
    return out


def has_jump(stmts) -> bool:
    """Does this loop body contain a break/continue that belongs to it?"""
    for s in stmts:
        for node in ast.walk(s):
            if isinstance(node, (ast.Break, ast.Continue)):
                return True
    return False


def static_reads(stmts, name: str) -> bool:
    """Does a ``static(...)`` in these statements read the variable ``name``?"""
    for s in stmts:
        for node in ast.walk(s):
            if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", None)) == "static" \
                    and any(isinstance(n, ast.Name) and n.id == name for a in node.args for n in ast.walk(a)):
                return True
    return False


def indexes_tuple(stmts, name: str, tuples: set) -> bool:
    """Do these statements index one of the tuples named ``tuples`` with the variable ``name``?"""
    return any(isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and node.value.id in tuples
               and any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(node.slice))
               for s in stmts for node in ast.walk(s))


def carried_vars_of(pairs) -> list:
    """The Vars a loop carries, from its (name, value) pairs (a tuple carries one per element)."""
    return [v for _, m in pairs for v in (m.flat() if isinstance(m, TupleValue) else [m])]


class StatementMixin:
    terminated = False
    loop_carried: list = []
    loop_locals: set = frozenset()
    loop_local_types: dict = None

    def exec_block(self, stmts):
        for s in stmts:
            if self.terminated:
                break  # unreachable code after return/break/continue
            self.exec_stmt(s)

    def exec_stmt(self, node):
        method = getattr(self, "stmt_" + type(node).__name__, None)
        if method is None:
            raise self.error(f"unsupported statement '{type(node).__name__}' in a kernel", node)
        prev, self.cur_node = self.cur_node, node
        try:
            method(node)
        except CompileError:
            raise
        except Exception as e:  # a compiler bug: still point at the user's line
            raise self.error(f"internal compiler error: {type(e).__name__}: {e}", node) from e
        finally:
            self.cur_node = prev

    # ------------------------------------------------------------------ simple statements

    def stmt_Pass(self, node):
        pass


    # builtins that Warp also takes with output arguments, and how many inputs come first:
    # `svd3(A, U, sigma, V)` is `U, sigma, V = svd3(A)`
    OUTPUT_ARGS = {"svd3": 1, "svd2": 1, "qr3": 1, "eig3": 1, "quat_to_axis_angle": 1}

    def stmt_Expr(self, node):
        if isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            return  # docstring
        v = node.value
        if isinstance(v, ast.Call) and v.args and not v.keywords:
            fn = self.eval(v.func)
            obj = fn.obj if isinstance(fn, Py) else None
            if getattr(obj, "_simkit_builtin", None) in IN_PLACE and isinstance(v.args[0], ast.Name):
                self.assign_to(ast.Name(id=v.args[0].id, ctx=ast.Store()), self.eval(v))
                return
            name = self.output_args_name(obj)
            if name is not None and len(v.args) > self.OUTPUT_ARGS[name]:
                return self.call_with_outputs(name, v)
        self.eval(node.value)

    def output_args_name(self, obj):
        from .. import decompositions

        name = getattr(obj, "_simkit_builtin", None) or getattr(obj, "key", None)
        if name in self.OUTPUT_ARGS and (name == "quat_to_axis_angle" or obj is getattr(decompositions, name)):
            return name
        return None

    def call_with_outputs(self, name, call):
        """``f(inputs..., out0, out1, ...)``: the results of ``f(inputs...)`` assigned to the outputs, which
        must be local variables (Warp passes them by reference)."""
        n_in = self.OUTPUT_ARGS[name]
        outs = call.args[n_in:]
        for o in outs:
            if not isinstance(o, ast.Name):
                raise self.error(f"the output arguments of {name}() must be local variables, got "
                                 f"'{ast.unparse(o)}'", o)
        result = self.eval(ast.copy_location(ast.Call(func=call.func, args=call.args[:n_in], keywords=[]), call))
        values = result if isinstance(result, tuple) else (result,)
        if len(values) != len(outs):
            raise self.error(f"{name}() gives {len(values)} results, {len(outs)} output arguments given", call)
        for o, value in zip(outs, values):
            self.assign_to(ast.Name(id=o.id, ctx=ast.Store()), value)

    # ------------------------------------------------------------------ control flow

    def stmt_If(self, node):
        cond = self.to_bool(self.eval_value(node.test), node)
        if cond.is_const:  # static condition: only the taken branch exists
            self.exec_block(node.body if cond.const else node.orelse)
            return
        before = dict(self.symbols)
        self.push_block()
        self.exec_block(node.body)
        body_syms, body_term = self.symbols, self.terminated
        body = self.pop_block()
        self.symbols, self.terminated = dict(before), False
        self.push_block()
        self.exec_block(node.orelse)
        else_syms, else_term = self.symbols, self.terminated
        orelse = self.pop_block()
        self.terminated = False
        if body_term and else_term:
            self.symbols = before
            self.terminated = True
        elif body_term:
            self.symbols = else_syms
        elif else_term:
            self.symbols = body_syms
        else:
            self.symbols = self.merge(before, body_syms, body, else_syms, orelse, node)
        self.emit(ir.If(cond=cond, body=body, orelse=orelse))

    def merge(self, before, a_syms, a_block, b_syms, b_block, node):
        merged = {}
        for name in list(a_syms) + [n for n in b_syms if n not in a_syms]:
            merged[name] = self.merge_value(name, a_syms.get(name), b_syms.get(name), a_block, b_block, node)
        return merged

    def merge_value(self, name, a, b, a_block, b_block, node):
        """The value of ``name`` after an if/else that left it ``a`` in one branch and ``b`` in the other
        (None: unset there): a phi var both branches copy into; of a tuple, one per element."""
        if a is b:
            return a
        if isinstance(a, TupleValue) or isinstance(b, TupleValue):
            n = len(a if isinstance(a, TupleValue) else b)
            if all(isinstance(x, TupleValue) and len(x) == n or x is None for x in (a, b)):
                return TupleValue(self.merge_value(f"{name}[{k}]", None if a is None else a[k],
                                                   None if b is None else b[k], a_block, b_block, node)
                                  for k in range(n))
            if isinstance(a, TupleValue) and isinstance(b, TupleValue):
                raise self.error(f"'{name}' is a tuple of {len(a)} values in one branch and of {len(b)} in the "
                                 f"other", node)
        if not isinstance(a, (ir.Var, type(None))) or not isinstance(b, (ir.Var, type(None))):
            raise self.error(f"'{name}' refers to different objects in the two branches", node)
        if a is not None and b is not None and a.type is not b.type:
            a, b = self.unify_literals(a, b)
            if a.type is not b.type and name.startswith(RETVAL):  # see jumps.py
                raise self.error(f"return statements return different types ({T.type_name(a.type)} and "
                                 f"{T.type_name(b.type)}); convert explicitly", node)
            if a.type is not b.type:
                raise self.error(f"'{name}' is {T.type_name(a.type)} in one branch and "
                                 f"{T.type_name(b.type)} in the other", node)
        line = self.src.line_of(node)
        phi = self.new_var((a or b).type, label=name, mutable=True)
        if a is not None:
            a_block.append(ir.Copy(line=line, out=phi, src=a))
        if b is not None:
            b_block.append(ir.Copy(line=line, out=phi, src=b))
        return phi

    def range_args(self, node):
        """(start, end, step) of ``for i in range(...)``; "static" for ``static(...)``, "query" else."""
        it = node.iter
        if not (isinstance(it, ast.Call)):
            return "query"
        if getattr(it, "_sk_static", None) is not None:  # static(...) resolved at declaration (statics.py)
            return "static"
        fn = self.eval(it.func)
        if isinstance(fn, Py) and getattr(fn.obj, "_simkit_static", False):
            return "static"  # static() iterable: handled by caller
        import builtins as pybuiltins

        if isinstance(fn, Py) and fn.obj is pybuiltins.reversed:
            inner = it.args[0] if len(it.args) == 1 and isinstance(it.args[0], ast.Call) else None
            inner_fn = self.eval(inner.func) if inner is not None else None
            if not (isinstance(inner_fn, Py) and inner_fn.obj is pybuiltins.range):
                raise self.error("reversed() in a for loop takes a range(...)", it)
            return self.reversed_range(self.range_args(ast.copy_location(ast.For(target=node.target, iter=inner,
                                                                                  body=[], orelse=[]), node)), it)
        if not (isinstance(fn, Py) and fn.obj is pybuiltins.range):
            return "query"
        args = [self.eval_value(a) for a in it.args]
        if not 1 <= len(args) <= 3:
            raise self.error("range() takes 1 to 3 arguments", it)
        args = [self.call_builtin("cast", [a], it, target=T.int32) if a.type is T.bool else a for a in args]
        for a in args:
            if not T.is_int(a.type):
                raise self.error(f"range() arguments must be integers, got {T.type_name(a.type)}", it)
        if len(args) == 1:
            args = [self.const(0)] + args
        if len(args) == 2:
            args = args + [self.const(1)]
        out = []
        for a in args:
            if a.type is not T.int32:
                a = self.const(a.const, T.int32) if a.is_const else self.call_builtin("cast", [a], it,
                                                                                      target=T.int32)
            out.append(a)
        return out

    def reversed_range(self, rng, node):
        """(start, end, step) of ``reversed(range(a, b, s))``: ``range(last, a - s, -s)`` with
        ``last = a + (n - 1) s`` and ``n = max(0, (b - a + s - sign(s)) // s)`` iterations."""
        a, b, st = rng
        if a.is_const and b.is_const and st.is_const:
            if st.const == 0:
                raise self.error("range() step must not be zero", node)
            r = range(a.const, b.const, st.const)[::-1]
            return [self.const(r.start, T.int32), self.const(r.stop, T.int32), self.const(r.step, T.int32)]

        def op(key, x, y):
            return self.call_builtin(key, [x, y], node)

        sign = self.const(1 if st.const > 0 else -1, T.int32) if st.is_const else self.call_builtin("sign", [st], node)
        n = op("max", op("floordiv", op("sub", op("add", op("sub", b, a), st), sign), st), self.const(0, T.int32))
        last = op("add", a, op("mul", op("sub", n, self.const(1, T.int32)), st))
        return [last, op("sub", a, st), self.call_builtin("neg", [st], node)]

    def stmt_For(self, node):
        if node.orelse:
            raise self.error("for ... else is not supported in kernels", node)
        rng = self.range_args(node)
        if rng == "static":
            self.static_for(node)
            return
        if rng == "query":
            self.query_for(node)
            return
        if not isinstance(node.target, ast.Name):
            raise self.error("the loop variable must be a single name", node.target)
        start, end, step = rng
        name = node.target.id
        if start.is_const and end.is_const and step.is_const:
            if step.const == 0:
                raise self.error("range() step must not be zero", node.iter)
            trip = len(range(start.const, end.const, step.const))
            # unrolled: short loops (up to max_unroll) and, as in Warp, any loop whose body takes static() of
            # its variable (or indexes a tuple with it); not loops that can stop early (break, return: a flag
            # ends them)
            tuples = {n for n, v in self.symbols.items() if isinstance(v, TupleValue)}
            forced = static_reads(node.body, name) or indexes_tuple(node.body, name, tuples)
            if ((trip <= self.options.get("max_unroll", MAX_UNROLL) or forced) and not has_jump(node.body)
                    and not getattr(node, "_sk_stop", ())):
                for i in range(start.const, end.const, step.const):
                    self.symbols[name] = self.const(i, T.int32)
                    self.exec_block(node.body)
                return
        loop_var = self.new_var(T.int32, label=name, mutable=True)
        stmts, extra = node.body, {name: loop_var}
        if name in self.symbols:  # the name is read after the loop (or set before): as in Python, it keeps
            hidden = f"_sk_range_{name}"  # the last value the loop gave it, so each iteration assigns it
            assign = ast.Assign(targets=[ast.Name(id=name, ctx=ast.Store())], value=ast.Name(id=hidden, ctx=ast.Load()))
            stmts, extra = [ast.fix_missing_locations(ast.copy_location(assign, node))] + node.body, {hidden: loop_var}
        carried, body, before = self.loop_body(stmts, extra)
        carried_vars = dict(carried)
        stop = [carried_vars[f] for f in getattr(node, "_sk_stop", ()) if f in carried_vars]
        self.emit(ir.For(var=loop_var, start=start, end=end, step=step, body=body,
                         carried=carried_vars_of(carried), stop=stop))
        self.after_loop(before, carried)

    def query_for(self, node):
        """``for i in query:`` over a geometry query (``hash_grid_query``, ``bvh_query_aabb`` or
        ``_ray``, ``mesh_query_aabb``), as in Warp: ``i`` takes each item the query finds, as
        ``while <query>_next(query, i):`` would give it (the same loop is built, with its batching)."""
        q = self.eval(node.iter)
        key = None
        if isinstance(q, ir.Var):
            key = next((k for k in QUERY_NEXT for b in R.overloads(k)
                        if T.types_match(next(iter(b.input_types.values())), q.type)), None)
        if key is None:
            raise self.error("for loops iterate over range(...), static(...) or a geometry query (hash_grid_query, "
                             f"bvh_query_aabb, bvh_query_ray, mesh_query_aabb), not {describe(q)}", node.iter)
        if not isinstance(node.target, ast.Name):
            raise self.error("the loop variable must be a single name", node.target)
        self.query_loops += 1
        query = f"_sk_query{self.query_loops}"
        self.symbols[query] = q
        self.symbols[node.target.id] = self.const(0, T.int32)
        self.symbols["_sk_lang"] = Py(lang)
        test = ast.Call(func=ast.Attribute(value=ast.Name(id="_sk_lang", ctx=ast.Load()), attr=key, ctx=ast.Load()),
                        args=[ast.Name(id=query, ctx=ast.Load()), ast.Name(id=node.target.id, ctx=ast.Load())],
                        keywords=[])
        stop = getattr(node, "_sk_stop", ())   # (break / return flags: jumps.py)
        if stop:
            test = ast.BoolOp(op=ast.And(), values=[ast.UnaryOp(op=ast.Not(), operand=ast.Name(id=f, ctx=ast.Load()))
                                                    for f in stop] + [test])
        loop = ast.While(test=test, body=node.body, orelse=[])
        self.stmt_While(ast.fix_missing_locations(ast.copy_location(loop, node)))

    def static_for(self, node):
        """``for x in static(iterable)``: unrolled over the Python values of the iterable."""
        try:
            values = list(self.static_value(node.iter))
        except TypeError as e:
            raise self.error(f"static() loop over a non-iterable: {e}", node.iter) from None
        stop = getattr(node, "_sk_stop", ())  # break/return flags (see jumps.py): skip later iterations
        for k, value in enumerate(values):
            self.bind_static(node.target, value)
            if stop and k > 0:
                guard = ast.If(test=ast.UnaryOp(op=ast.Not(), operand=ast.BoolOp(
                    op=ast.Or(), values=[ast.Name(id=f, ctx=ast.Load()) for f in stop])), body=node.body, orelse=[])
                self.exec_stmt(ast.fix_missing_locations(ast.copy_location(guard, node)))
            else:
                self.exec_block(node.body)

    def bind_static(self, target, value):
        if isinstance(target, (ast.Tuple, ast.List)):
            items = list(value) if isinstance(value, (tuple, list)) else None
            if items is None or len(items) != len(target.elts):
                raise self.error(f"cannot unpack {value!r} into {len(target.elts)} names", target)
            for t, v in zip(target.elts, items):
                self.bind_static(t, v)
            return
        if not isinstance(target, ast.Name):
            raise self.error("the loop variable must be a name or a tuple of names", target)
        v = self.to_value(value)
        self.symbols[target.id] = self.materialise(v) if isinstance(v, ir.Var) and v.is_const and \
            not T.is_scalar(v.type) else v

    def stmt_Assert(self, node):
        """``assert cond``: checked in debug mode (an error raised after the launch), a no-op in release."""
        self.call_builtin("assert_true", [self.to_bool(self.eval_value(node.test), node)], node)

    def stmt_While(self, node):
        if node.orelse:
            raise self.error("while ... else is not supported in kernels", node)
        carried_pairs, before = self.enter_loop(node.body + [ast.Expr(node.test)])
        self.push_block()
        saved, self.inplace_vars = self.inplace_vars, frozenset(carried_vars_of(carried_pairs))
        try:
            cond = self.to_bool(self.eval_value(node.test), node)
        finally:
            self.inplace_vars = saved
        cond_block = self.pop_block()
        body = self.run_loop_body(node.body, carried_pairs)
        self.emit(ir.While(cond_block=cond_block, cond=cond, body=body, carried=carried_vars_of(carried_pairs)))
        self.after_loop(before, carried_pairs)

    def loop_body(self, stmts, extra):
        carried_pairs, before = self.enter_loop(stmts)
        self.symbols.update(extra)
        body = self.run_loop_body(stmts, carried_pairs)
        return carried_pairs, body, before

    def enter_loop(self, stmts):
        before = dict(self.symbols)
        pairs = []
        for n in assigned_names(stmts):
            v = self.symbols.get(n)
            if isinstance(v, ir.Var) or isinstance(v, TupleValue) and v.is_values():
                m = self.symbols[n] = self.carried_copy(n, v)
                pairs.append((n, m))
        return pairs, before

    def carried_copy(self, name, v):
        """A mutable copy of ``v`` that a loop carries (of a tuple: one per element)."""
        if isinstance(v, TupleValue):
            return TupleValue(self.carried_copy(f"{name}[{k}]", x) for k, x in enumerate(v))
        if v.is_const and not T.is_scalar(v.type):
            v = self.materialise(v)
        m = self.new_var(v.type, label=name, mutable=True)
        self.emit(ir.Copy(out=m, src=v))
        return m

    def run_loop_body(self, stmts, carried_pairs):
        saved = (self.loop_carried, self.terminated)
        self.loop_carried, self.terminated = carried_pairs, False
        self.loop_depth += 1
        entry = dict(self.symbols)
        self.push_block()
        self.exec_block(stmts)
        if not self.terminated:
            self.check_objects_kept(entry)
            self.write_back()
            self.export_return_values(entry, carried_pairs)
        body = self.pop_block()
        self.loop_depth -= 1
        self.loop_carried, self.terminated = saved
        return body

    def check_objects_kept(self, entry):
        """A name bound to a compile-time object (a function, a module, a type) keeps it through a dynamic loop:
        the body is compiled once, so a rebinding inside it cannot take effect from the next iteration on."""
        for n, v in entry.items():
            cur = self.symbols.get(n)
            if isinstance(v, Py) and cur is not v and not (isinstance(cur, Py) and cur.obj is v.obj):
                raise self.error(f"'{n}' is {describe(v)} (a compile-time object) and is rebound inside a dynamic "
                                 f"loop to {describe(cur)}; the loop body is compiled once, so this cannot work: "
                                 f"bind it before the loop, or use a separate name")

    def write_back(self):
        for n, m in self.loop_carried:
            self.write_back_value(n, m, self.symbols.get(n))

    def write_back_value(self, n, m, cur):
        if cur is m or cur is None:
            return
        if isinstance(m, TupleValue):
            if not isinstance(cur, TupleValue) or len(cur) != len(m):
                raise self.error(f"'{n}' must stay a tuple of {len(m)} values inside the loop, got {describe(cur)}")
            for k, (x, y) in enumerate(zip(m, cur)):
                self.write_back_value(f"{n}[{k}]", x, y)
            return
        if not isinstance(cur, ir.Var):
            raise self.error(f"'{n}' must stay a value inside the loop, got {describe(cur)}")
        if cur.type is not m.type:
            cur = self.literal_as(cur, m.type)
            if cur.type is not m.type:
                raise self.error(f"'{n}' changes type inside the loop ({T.type_name(m.type)} -> "
                                 f"{T.type_name(cur.type)}); convert it explicitly")
        self.emit(ir.Copy(out=m, src=cur))

    def export_return_values(self, entry, carried_pairs):
        """A value returned from inside a loop (see jumps.py) is first assigned there: carry it out."""
        for n, v in list(self.symbols.items()):
            if n not in entry and n.startswith(RETVAL) and (isinstance(v, ir.Var) or isinstance(v, TupleValue)
                                                            and v.is_values()):
                carried_pairs.append((n, self.carried_copy(n, v)))

    def after_loop(self, before, carried_pairs):
        new_locals = {n for n in self.symbols if n not in before}
        for n in new_locals:          # (their types, should the code after the loop use them: frontend.build)
            if isinstance(self.symbols[n], ir.Var):
                self.loop_local_types.setdefault(n, self.symbols[n].type)
        self.symbols = dict(before)
        for n, m in carried_pairs:
            self.symbols[n] = m
        self.loop_locals = set(self.loop_locals) | new_locals
        self.terminated = False

    def stmt_Break(self, node):
        if self.loop_depth == 0:
            raise self.error("'break' outside a loop", node)
        self.write_back()
        self.emit(ir.Break())
        self.terminated = True

    def stmt_Continue(self, node):
        if self.loop_depth == 0:
            raise self.error("'continue' outside a loop", node)
        self.write_back()
        self.emit(ir.Continue())
        self.terminated = True

    declared_returns = None  # a @func's return annotation: its types (frontend.return_annotation)

    def declared_return_values(self, values, node):
        """The returned values as the return annotation declares them (untyped literals take its types), or a
        CompileTypeError naming what the annotation says and what the code returns."""
        want = self.declared_returns
        ann = ", ".join(map(T.type_name, want))
        ann = f"tuple[{ann}]" if len(want) > 1 else ann
        fname = self.src.pyfunc.__name__
        if len(values) != len(want):
            raise self.error(f"@func '{fname}' is annotated to return {ann} ({len(want)} value(s)) but this "
                             f"returns {len(values)} value(s)", node, CompileTypeError)
        values = [self.literal_as(v, t) for v, t in zip(values, want)]
        if any(v.type != t for v, t in zip(values, want)):
            got = ", ".join(T.type_name(v.type) for v in values)
            raise self.error(f"@func '{fname}' is annotated to return {ann} but this returns "
                             f"{got if len(values) == 1 else f'tuple[{got}]'}", node, CompileTypeError)
        return values

    def ref_values(self, node) -> list:
        """The current values of the ref[T] parameters, returned after the results (refs.py)."""
        out = []
        for name in self.ref_params:
            v, want = self.symbols.get(name), self.declared_params[name]
            if isinstance(v, ir.Var):
                v = self.literal_as(v, want)
            if not isinstance(v, ir.Var) or v.type != want:
                raise self.error(f"ref parameter '{name}' is {T.type_name(want)} but holds "
                                 f"{describe(v) if not isinstance(v, ir.Var) else T.type_name(v.type)} here; "
                                 f"assign it a {T.type_name(want)} (augmented assignment to ref parameter "
                                 f"'{name}' must keep its type)", node, CompileTypeError)
            out.append(v)
        return out

    def stmt_Return(self, node):
        if self.is_kernel:
            if node.value is not None:
                raise self.error("kernels cannot return a value; write results to an output array", node)
            self.emit(ir.Return())
            self.terminated = True
            return
        if node.value is None:
            values = []
        else:
            v = self.eval(node.value)
            values = list(v) if isinstance(v, TupleValue) else [v]
        for v in values:
            if not isinstance(v, ir.Var):
                raise self.error(f"cannot return {describe(v)}", node)
            if isinstance(v.type, T.LocalArrayType) and not isinstance(v.type, T.FixedArrayType):
                raise self.error("a @func cannot return a view of a fixed-size array (it may live in the function); "
                                 "return the whole array, or copy the view into a new one", node, CompileTypeError)
        if len(values) > 1 and any(isinstance(v.type, T.FixedArrayType) for v in values):
            raise self.error("a @func returning several values cannot return a fixed-size array among them: return "
                             "it alone, or pass it to the function to fill", node, CompileTypeError)
        if self.declared_returns is not None:
            values = self.declared_return_values(values, node)
        values = values + self.ref_values(node)
        types = [v.type for v in values]
        if self.return_types is None:
            # weak literals returned first fix the type as written (1.0 -> float32)
            self.return_types = types
        elif types != self.return_types:
            if len(values) == len(self.return_types):
                values = [self.literal_as(v, t) for v, t in zip(values, self.return_types)]
            if [v.type for v in values] != self.return_types:
                raise self.error("all return statements must return the same types: "
                                 f"({', '.join(map(T.type_name, self.return_types))}) vs "
                                 f"({', '.join(map(T.type_name, types))})", node)
        self.emit(ir.Return(values=values))
        self.terminated = True

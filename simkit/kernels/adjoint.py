"""Reverse-mode code generation: the adjoint of every kernel and @func.

An adjoint body first replays the forward statements (array writes, atomics
and prints excepted), then runs the reverse statements in reverse order. Every
value ``v`` has an adjoint ``adj_v``; adjoints accumulate, and an assignment's
reverse consumes (zeroes) the adjoint of what it defined, so values assigned
once per loop iteration start each reversed iteration clean.

Dynamic loops (the mechanism, and its cost): in the replay, the outermost loop
at each level *records* — at the start of every iteration it pushes the loop
index and the loop-carried values onto a per-thread stack (``native/stack.h``).
Its reverse pops them iteration by iteration (last first), restores that
iteration's starting state, replays the body once more to recompute the
iteration's intermediate values (nested loops record at this point), restores
the state again and runs the body's reverse statements. Memory: the carried
values of every iteration (e.g. 8 bytes per iteration for ``prod *= x[i]``);
time: a loop at nesting depth d replays its body d + 1 times. This gives exact
gradients for loop-carried state, where Warp's replay is documented wrong.
Loops whose carried values are only sums, unread after the loop (a neighbour
loop summing forces into an atomic add, a func returning such a sum, a sum over
images of such a loop), skip all this: see ``AdjointEmitter.order_free``.
"""
from __future__ import annotations

from . import ir
from . import types as T
from .activity import Activity
from .analysis import has_side_effects
from .codegen import Emitter, ctype, fixed_ctype, func_qualifier, iterator_call, ref, replay_skips, return_ctype
from .fixed_arrays import writes_local
from .registry import adjoint_name


def adj(v: ir.Var) -> str:
    return f"adj_{v.name}"


def _opaque(v) -> bool:
    """A native opaque value (a query's traversal state): it carries no gradient."""
    return getattr(v.type, "_simkit_opaque", None) is not None


def _reads(stmts, v) -> bool:
    """Does any statement in ``stmts`` (nested blocks included) read variable ``v``?"""
    return any(x is v or getattr(x, "name", None) == v.name
               for s in ir.walk(stmts) for x in ir.reads(s) if x is not None)


# Builtins whose adjoint reads no primal value (adj_a += adj_ret and the like): a value that only
# flows through these (and copies) is never read by the reverse pass.
_VALUE_FREE_ADJOINTS = frozenset({"add", "sub", "neg", "pos"})


def _value_read_in_reverse(body, v) -> bool:
    """Does the reverse pass of a loop with this body read the value of carried variable ``v``, or of
    anything computed from it? No only when every value derived from ``v`` flows through copies and
    builtins whose adjoints read no values (+, -) -- into the carried variables, say, as in a sum
    ``f = f + g(j)``, also through nested loops that sum it. Conservative: break or return says yes."""
    if any(isinstance(s, (ir.Break, ir.Return)) for s in ir.walk(body)):
        return True
    return not _values_unread_after(body, [v.name], sinks=frozenset(), loop=True)


# Builtins whose adjoint reads nothing of the value they store or add: the value's adjoint is the
# array's gradient at the element.
_VALUE_FREE_SINKS = frozenset({"store", "atomic_add", "atomic_sub"})


def _values_unread_after(rest, names, sinks=_VALUE_FREE_SINKS, loop=False) -> bool:
    """Are the values of the variables ``names`` after a loop, and everything computed from them,
    unread by the statements ``rest`` that follow it (their replay and their reverse)? Yes when they
    only flow through copies, +, - and into stores, atomic adds or a function's return value (all
    adjoints that read no value), as a sum of forces into ``atomic_add(f, i, fi)``; also through
    later loops whose headers and conditions they do not reach. ``loop``: ``rest`` is a loop body
    (a value derived late in it reaches its start again). Conservative: any other use says no."""
    tainted = set(names)

    def derived(x) -> bool:
        return x is not None and getattr(x, "name", None) in tainted

    def visit_loop(s, blocks) -> bool:
        for _ in range(2):  # twice: what an iteration derives reaches the next one
            if not all(visit(b) for b in blocks):
                return False
        return not any(derived(x) for x in ir.reads(s))

    def visit(stmts) -> bool:
        for s in stmts:
            if isinstance(s, ir.For):
                if not visit_loop(s, [s.body]):
                    return False
                continue
            if isinstance(s, ir.While):
                if not visit_loop(s, [s.cond_block, s.body]):
                    return False
                continue
            if isinstance(s, ir.Copy):
                if derived(s.src):
                    tainted.add(s.out.name)
                continue
            if isinstance(s, ir.Return) and sinks:
                continue
            if isinstance(s, ir.Call) and s.kind == "builtin" and s.builtin is not None and not s.outs:
                key = s.builtin.key
                if key in _VALUE_FREE_ADJOINTS and s.out is not None:
                    if any(derived(a) for a in s.args):
                        tainted.add(s.out.name)
                    continue
                if (key in sinks and not any(derived(a) for a in s.args[:-1])
                        and (s.out is None or not _reads(rest, s.out))):
                    continue
            if any(derived(x) for x in ir.reads(s)):
                return False
            if isinstance(s, ir.If) and not (visit(s.body) and visit(s.orelse)):
                return False
        return True

    return visit(rest) and (not loop or visit(rest))


def _path_to(block, s):
    """[(block, index)] from the function body down to loop ``s`` through if/else blocks and loop
    bodies (None when ``s`` is not in ``block``)."""
    for k, x in enumerate(block):
        if x is s:
            return [(block, k)]
        subs = (x.body, x.orelse) if isinstance(x, ir.If) else (x.body,) if isinstance(x, (ir.For, ir.While)) else ()
        for sub in subs:
            p = _path_to(sub, s)
            if p is not None:
                return [(block, k)] + p
    return None


class AdjointEmitter(Emitter):
    replay = True  # its forward statements are a replay

    def __init__(self, fn: ir.Function, options: dict, returns: tuple | None = None, variants: dict | None = None):
        super().__init__(fn, options)
        self.loop_ids: dict = {}
        self.loop_vars: list = []  # (decl) for loop counters and snapshots
        self.shortcuts = options.get("shortcuts", True)
        self.returns = returns  # a variant's used results (see used_results)
        self.variants = variants  # {(callee, used results): func IR}: the variants calls asked for

    # ------------------------------------------------------------------ declarations

    def declarations(self, depth: int):
        for v in self.fn.vars:  # (a fixed-size array here has gradient storage: fixed_arrays.py)
            t = fixed_ctype(v.type, grads=True) if isinstance(v.type, T.FixedArrayType) else ctype(v.type)
            self.w(f"{t} {v.name}{{}};", depth)

    def adj_declarations(self, depth: int):
        for v in self.fn.vars:  # (a fixed-size array's gradient is its own storage's: the adjoint is unused)
            t = f"sk::array_t<{ctype(v.type.dtype)}>" if isinstance(v.type, T.FixedArrayType) else ctype(v.type)
            self.w(f"{t} {adj(v)}{{}};", depth)
        for l_id in sorted(self.loop_ids.values()):
            self.w(f"sk::int64 _n_{l_id} = 0;", depth)
        for decl in self.loop_vars:
            self.w(decl, depth)

    def loop_id(self, s) -> int:
        if id(s) not in self.loop_ids:
            self.loop_ids[id(s)] = len(self.loop_ids) + 1
        return self.loop_ids[id(s)]

    def state_of(self, s) -> list:
        """Values saved per iteration: the loop index (for loops whose body reads it) and the carried
        values, except sums (``saved_once``). A query's traversal state (an opaque, non-differentiable
        value such as a hash-grid or BVH query) that only the loop condition reads is left out: the
        reverse pass replays the body, never the condition, so saving it would only copy it (88 to
        500 bytes) once per iteration."""
        state = [v for v in s.carried if not (_opaque(v) and not _reads(s.body, v)) and v not in self.saved_once(s)]
        if isinstance(s, ir.For) and _reads(s.body, s.var):  # an index the body never reads is not needed
            state = [s.var] + state
        return state

    def saved_once(self, s) -> list:
        """Carried values whose per-iteration values the reverse pass never reads (a running sum, say):
        pushed once before the loop instead of every iteration, and restored after its reverse pass
        for the statements before the loop (their adjoints may read the value the loop started from)."""
        return [v for v in s.carried if not _opaque(v) and not _value_read_in_reverse(s.body, v)]

    def activity(self) -> Activity:
        act = self.__dict__.get("_activity")
        if act is None:
            act = self._activity = Activity(self.fn, self.returns)
        return act

    def inactive(self, s) -> bool:
        """A loop that defines no value whose adjoint can reach anything (see ``activity``): the replay
        runs it plainly, the reverse pass skips it."""
        return self.shortcuts and self.activity().inactive_loop(s)

    def dead(self, s) -> bool:
        """A statement whose results are not active (their adjoints are zero): no reverse statement."""
        return self.shortcuts and self.activity().dead(s)

    def order_free(self, s) -> bool:
        """A loop whose reverse pass may run its iterations in forward order, with no replay before it and
        nothing saved: a loop over an iterator (a neighbour query) or a range whose carried values are
        all sums whose values after the loop nobody reads (see :func:`_values_unread_after`), with no
        break or return, and a body that changes nothing the iteration depends on. A sum's adjoint is
        the same for every iteration, so the order does not matter; the loop then runs once in the
        adjoint instead of twice, and its indices are not pushed. Its values as the loop started are
        kept in locals for the statements before it. Nested loops decide together: a nest (a loop
        outside any other, and the loops in it) is order-free when every loop in it is, e.g. a sum over
        mirror images of a sum over neighbours. Kernels and @funcs alike (a func's ``return`` of a sum
        reads no value in reverse). If/else blocks around a loop are fine, as after an early
        ``if inv_mass[i] == 0.0: return``."""
        memo = self.__dict__.setdefault("_order_free_memo", {})
        if id(s) not in memo:
            path = _path_to(self.fn.body, s)
            outer = next((b[k] for b, k in path if isinstance(b[k], (ir.For, ir.While))), s) if path else None
            nest = [] if outer is None else [outer] + [t for t in ir.walk(outer.body)
                                                       if isinstance(t, (ir.For, ir.While))]
            free = self.shortcuts and bool(nest) and all(self._order_free_alone(x) for x in nest)
            for x in nest or [s]:
                memo[id(x)] = free
        return memo[id(s)]

    def _order_free_alone(self, s) -> bool:
        """``order_free`` for loop ``s`` by itself (its nest decides together)."""
        if self.inactive(s):  # recomputed wherever its nest's body is replayed
            return True
        path = _path_to(self.fn.body, s)
        body = list(ir.walk(s.body))
        if any(isinstance(t, (ir.Break, ir.Return)) for t in body):
            return False
        advance = {id(t) for w in body if isinstance(w, ir.While) and iterator_call(w) is not None
                   for t in ir.walk(w.cond_block)}  # nested iterator loops advance their own queries
        if any(isinstance(t, ir.Call) and t.builtin is not None and t.builtin.inout and id(t) not in advance
               for t in body):
            return False
        if isinstance(s, ir.While):
            c = iterator_call(s)
            if c is None or _reads(s.body, c.args[0]):
                return False
            drivers = [a for a in c.args if not a.is_const]
            moved = drivers  # what the loop itself advances
        else:
            if s.stop or not s.step.is_const:
                return False
            drivers = [a for a in (s.start, s.end, s.var) if not a.is_const]
            moved = [s.var]
        written = {o.name for t in body for o in ir.defines(t)}
        if any(a.name in written for a in drivers):
            return False
        driver_names = {a.name for a in drivers}
        sums = self.saved_once(s)
        if any(v not in sums and v.name not in driver_names for v in s.carried):
            return False
        rest = [x for block, k in reversed(path) for x in block[k + 1:]]  # what runs after the loop, in order
        return _values_unread_after(rest, [v.name for v in s.carried] + sorted({a.name for a in moved}))

    def result_unread(self, s: ir.Call) -> bool:
        """A func call whose results nothing after it reads, in the replay or in the reverse pass
        (``f[i] = force(...)``: the adjoints of a store and of the call itself read no result): the
        forward replay skips it. Statements of the enclosing loops count as after it (the next
        iteration). Not for calls without results (their replay is already empty)."""
        memo = self.__dict__.setdefault("_unread_memo", {})
        if id(s) not in memo:
            outs = ir.defines(s)
            path = _path_to(self.fn.body, s)
            rest = []
            for block, k in reversed(path or []):
                rest += ([block[k]] if isinstance(block[k], (ir.For, ir.While)) else []) + block[k + 1:]
            memo[id(s)] = bool(outs) and path is not None and _values_unread_after(rest, [o.name for o in outs])
        return memo[id(s)]

    def used_results(self, s: ir.Call, outs: list) -> tuple | None:
        """For a call of a func with several results of which this function uses only some (the others'
        adjoints are zero): which, and the variant of the func's adjoint that skips the reverse of
        what only feeds the unused ones is requested (``gen_module`` generates it). None: all used."""
        fn = s.func.ir if s.func is not None else None
        if not self.shortcuts or self.variants is None or fn is None or fn.name != s.callee \
                or getattr(fn, "no_adjoint", False) or len(outs) < 2 or getattr(fn, "native", None) is not None:
            return None  # (a native function's adjoint is its snippet: no variants)
        used = tuple(self.activity().active(o) for o in outs)
        if all(used):
            return None
        self.variants.setdefault((s.callee, used), fn)
        return used

    def snapshot(self, s) -> list:
        """(variable, local) pairs: an order-free loop's carried values as the loop started."""
        memo = self.__dict__.setdefault("_snapshot_memo", {})
        if id(s) not in memo:
            k = len(memo) + 1
            memo[id(s)] = [(v, f"_e{k}_{v.name}") for v in s.carried]
            self.loop_vars.extend(f"{ctype(v.type)} {name}{{}};" for v, name in memo[id(s)])
        return memo[id(s)]

    # ------------------------------------------------------------------ forward replay

    def fwd(self, stmts, depth: int, record: bool):
        for s in stmts:
            if isinstance(s, ir.Call) and replay_skips(s):
                continue
            if isinstance(s, ir.Return):
                continue
            if isinstance(s, ir.Call) and s.kind == "func" and self.result_unread(s) and not writes_local(s):
                continue  # nothing in the replay or the reverse pass reads what it returns
            if isinstance(s, ir.Call) and s.kind == "func" and not ir.defines(s) and s.func.replay_ir is None \
                    and has_side_effects(s.func.ir) and not writes_local(s):
                continue  # a call for its writes only: the replay writes nothing
            if isinstance(s, ir.Call) and s.kind == "func" and s.func.replay_ir is not None:
                self.comment(s.line, depth)
                call = f"{s.func.replay_ir.name}<SKC>({', '.join(ref(a) for a in s.args)})"
                if s.outs:  # several results (a native function's ref parameters: native_refs.py)
                    self.w(f"{{ auto _ret_{s.out.name} = {call};", depth)
                    for k, o in enumerate([s.out] + s.outs):
                        self.w(f"  {o.name} = _ret_{s.out.name}.r{k};", depth)
                    self.w("}", depth)
                else:
                    self.w(f"{s.out.name} = {call};" if s.out is not None else f"{call};", depth)
                continue
            if isinstance(s, ir.If):
                self.comment(s.line, depth)
                self.w(f"if ({ref(s.cond)}) {{", depth)
                self.fwd(s.body, depth + 1, record)
                if s.orelse:
                    self.w("} else {", depth)
                    self.fwd(s.orelse, depth + 1, record)
                self.w("}", depth)
            elif isinstance(s, (ir.For, ir.While)):
                self.fwd_loop(s, depth, record)
            else:
                self.stmt(s, depth)

    def fwd_loop(self, s, depth: int, record: bool):
        self.comment(s.line, depth)
        if self.inactive(s):
            record = False  # nothing of it is reversed: just run it
        if record and self.order_free(s):  # it runs in the reverse pass only
            for v, name in self.snapshot(s):
                self.w(f"{name} = {v.name};", depth)
            return
        l_id = self.loop_id(s)
        pushes = [f"sk::push(_stk, {v.name});" for v in self.state_of(s)] + [f"++_n_{l_id};"] if record else []
        if record:
            for v in self.saved_once(s):
                self.w(f"sk::push(_stk, {v.name});", depth)
            self.w(f"_n_{l_id} = 0;", depth)
        if isinstance(s, ir.For):
            self.w(self.for_header(s), depth)
            for p in pushes:
                self.w(p, depth + 1)
            self.fwd(s.body, depth + 1, False)
            self.w("}", depth)
        else:
            def body(d):
                for p in pushes:
                    self.w(p, d)
                self.fwd(s.body, d, False)

            if self.batched_while(s, depth, body):  # an iterator loop: nested loops, as in the forward kernel
                return
            self.w("while (true) {", depth)
            self.fwd(s.cond_block, depth + 1, False)
            self.w(f"if (!({ref(s.cond)})) break;", depth + 1)
            body(depth + 1)
            self.w("}", depth)

    def for_header(self, s) -> str:
        v, st = s.var.name, s.step
        if st.is_const:
            cond = f"{v} < {ref(s.end)}" if st.const > 0 else f"{v} > {ref(s.end)}"
        else:
            cond = f"({ref(st)} > 0) ? ({v} < {ref(s.end)}) : ({v} > {ref(s.end)})"
        if s.stop:
            cond = f"({cond})" + "".join(f" && !{f.name}" for f in s.stop)
        return f"for ({v} = {ref(s.start)}; {cond}; {v} += {ref(st)}) {{"

    # ------------------------------------------------------------------ reverse

    def refuse_second_order(self, s: ir.Call, depth: int):
        """A grad(f)(...) whose arguments vary with the inputs and whose results reach the outputs needs
        its own derivative (f's second derivative), which is not computed: the backward pass raises
        (runtime/launch.py, error 8) when it gets here, rather than leave that term out."""
        act = self.activity()
        if any(a.name in act.varied for a in s.args) and any(o.name in act.useful for o in [s.out] + s.outs):
            self.w(f"sk::report_error(SK_ERR_SECOND_ORDER, {s.line}, 0, 0, 0);", depth)

    def rev(self, stmts, depth: int):
        for s in reversed(stmts):
            self.rev_stmt(s, depth)

    def rev_stmt(self, s, depth: int):
        if isinstance(s, ir.If):
            self.w(f"if ({ref(s.cond)}) {{", depth)
            self.rev(s.body, depth + 1)
            if s.orelse:
                self.w("} else {", depth)
                self.rev(s.orelse, depth + 1)
            self.w("}", depth)
            return
        if isinstance(s, (ir.For, ir.While)):
            self.rev_loop(s, depth)
            return
        if isinstance(s, ir.Call) and s.kind == "grad":
            self.refuse_second_order(s, depth)
        if self.dead(s):
            return
        if isinstance(s, ir.Call):
            self.rev_call(s, depth)
        elif isinstance(s, ir.Copy) and isinstance(s.out.type, T.FixedArrayType):  # (a copy of the elements)
            self.w(f"sk::fixed_accum_grad({s.src.name}, {s.out.name});", depth)
            self.w(f"sk::fixed_clear_grad({s.out.name});", depth)
        elif isinstance(s, ir.Copy):
            if not s.src.is_const:
                self.w(f"sk::accum({adj(s.src)}, {adj(s.out)});", depth)
            self.w(f"{adj(s.out)} = {{}};", depth)
        elif isinstance(s, ir.GetField):
            self.w(f"sk::accum({adj(s.src)}.{s.field}, {adj(s.out)});", depth)
            self.w(f"{adj(s.out)} = {{}};", depth)
        elif isinstance(s, ir.SetField):
            if not s.value.is_const:
                self.w(f"sk::accum({adj(s.value)}, {adj(s.out)}.{s.field});", depth)
            self.w(f"{adj(s.out)}.{s.field} = {{}};", depth)
            if not s.src.is_const:
                self.w(f"sk::accum({adj(s.src)}, {adj(s.out)});", depth)
            self.w(f"{adj(s.out)} = {{}};", depth)
        elif isinstance(s, ir.Return):
            if len(s.values) == 1 and isinstance(s.values[0].type, T.FixedArrayType):  # (the caller's gradient)
                self.w(f"sk::fixed_accum_grad({s.values[0].name}, adj_ret);", depth)
            elif len(s.values) == 1 and not s.values[0].is_const:
                self.w(f"sk::accum({adj(s.values[0])}, adj_ret);", depth)
            elif len(s.values) > 1:
                for k, v in enumerate(s.values):
                    if not v.is_const:
                        self.w(f"sk::accum({adj(v)}, adj_ret.r{k});", depth)

    def rev_loop(self, s, depth: int):
        if self.inactive(s):
            return
        if self.order_free(s):
            snap = self.snapshot(s)
            for v, name in snap:
                self.w(f"{v.name} = {name};", depth)

            def body(d):
                self.fwd(s.body, d, True)  # this iteration's values (its nested loops keep their start)
                self.rev(s.body, d)

            if isinstance(s, ir.While):
                if not self.batched_while(s, depth, body):
                    raise AssertionError("an order-free while loop is an iterator loop")
            else:
                self.w(self.for_header(s), depth)
                body(depth + 1)
                self.w("}", depth)
            for v, name in snap:  # the values the statements before the loop saw
                self.w(f"{v.name} = {name};", depth)
            return
        l_id = self.loop_id(s)
        state = self.state_of(s)
        self.w(f"for (sk::int64 _k_{l_id} = _n_{l_id}; _k_{l_id} > 0; --_k_{l_id}) {{", depth)
        d = depth + 1
        for v in reversed(state):
            self.w(f"sk::pop(_stk, {v.name});", d)
        for v in state:
            self.w(f"const {ctype(v.type)} _s_{v.name} = {v.name};", d)
        self.fwd(s.body, d, True)  # recompute this iteration's values (nested loops record)
        for v in state:
            self.w(f"{v.name} = _s_{v.name};", d)
        self.rev(s.body, d)
        self.w("}", depth)
        for v in reversed(self.saved_once(s)):
            self.w(f"sk::pop(_stk, {v.name});", depth)

    def unique_arrays(self) -> set:
        """Array parameters read only at the thread's own launch index (and only written otherwise):
        their gradient elements belong to one thread each, so accumulation needs no atomics."""
        ok = self.__dict__.get("_unique")
        if ok is not None:
            return ok
        ok = {p.name for p in self.fn.params if isinstance(p.type, T.ArrayType)} if self.fn.is_kernel else set()
        writes = {"store", "store_component", "atomic_add", "atomic_sub", "atomic_min", "atomic_max",
                  "atomic_exch", "atomic_cas", "atomic_and", "atomic_or", "atomic_xor", "array_shape"}
        for s in ir.walk(self.fn.body):
            if isinstance(s, ir.Call):
                key = s.builtin.key if s.builtin is not None else None
                for k, a in enumerate(s.args):
                    if a.is_const or a.name not in ok:
                        continue
                    if k == 0 and (key in writes or (key == "load" and self.tid_indexed(s.args[1:]))):
                        continue
                    ok.discard(a.name)
            elif isinstance(s, (ir.Copy, ir.GetField, ir.SetField)):
                ok.discard(s.src.name)
        self._unique = ok
        return ok

    def tid_indexed(self, idx) -> bool:
        """Are these indices exactly the thread's launch indices (each thread its own element)?"""
        if not self.fn.is_kernel or not idx or any(v.is_const for v in idx):
            return False
        tids = self.__dict__.get("_tid_outs")
        if tids is None:
            tids = self._tid_outs = [list(s.outs) for s in ir.walk(self.fn.body) if isinstance(s, ir.Tid)]
        return any(outs == list(idx) for outs in tids)

    def rev_call(self, s: ir.Call, depth: int):
        if s.kind == "printf":
            return
        outs = ir.defines(s)
        if s.kind == "make" and isinstance(s.out.type, T.FixedArrayType):  # zeros() / empty() (fixed_arrays.py)
            self.w(f"sk::fixed_clear_grad({s.out.name});", depth)
            return
        if s.kind == "make":
            for k, a in enumerate(s.args):
                if not a.is_const:
                    self.w(f"sk::adj_make_component({adj(a)}, {adj(s.out)}, {k});", depth)
            self.w(f"{adj(s.out)} = {{}};", depth)
            return
        b = s.builtin
        if s.kind == "grad" or (s.kind == "builtin" and (b is None or not b.differentiable)):  # (no 2nd order)
            for o in outs:
                self.w(f"{adj(o)} = {{}};", depth)
            return
        args = [a for a in s.args if not (a.is_const and a.type is T.Any)]
        pre, adj_args = [], []
        for k, a in enumerate(args):
            if a.is_const:
                pre.append(f"{ctype(a.type)} _c{k}{{}};")
                adj_args.append(f"_c{k}")
            else:
                adj_args.append(adj(a))
        call_args = [ref(a) for a in args] + adj_args
        if s.kind == "func" and s.func.grad_ir is not None:  # @func_grad: returns the argument adjoints
            grad = s.func.grad_ir
            res = f"_g_{outs[0].name}" if outs else "_g_"  # (a function that returns nothing; the block scopes it)
            self.w(f"{{ auto {res} = {grad.name}<SKC>({', '.join([ref(a) for a in args] + [adj(o) for o in outs])});",
                   depth)
            for k, a in enumerate(args):
                if not a.is_const:
                    field = f"{res}.r{k}" if len(args) > 1 else res
                    self.w(f"  sk::accum({adj(a)}, {field});", depth)
            self.w("}", depth)
            for o in outs:
                self.w(f"{adj(o)} = {{}};", depth)
            return
        if s.kind == "func":
            used = self.used_results(s, outs)
            callee = f"adj_{s.callee}{variant_suffix(used)}<SKC>"
            if len(outs) > 1:
                call_args.append(f"{s.func.ir.name}_ret{{{', '.join(adj(o) for o in outs)}}}")
            elif outs and isinstance(outs[0].type, T.FixedArrayType):  # its gradient: the array's own
                call_args.append(outs[0].name)
            elif outs:
                call_args.append(adj(outs[0]))
        else:
            callee = adjoint_name(s.callee)
            call_args += [adj(o) for o in outs]  # several results: one adjoint argument each
            if b.key == "load":
                # plain adds where no other thread can touch the element, atomics otherwise (a func
                # knows only whether one CPU thread runs the whole launch: _serial)
                serial = "(_bounds.flags & SK_BOUNDS_SERIAL)" if self.fn.is_kernel else "_serial"
                cond = serial
                if self.fn.is_kernel and args[0].name in self.unique_arrays() and self.tid_indexed(args[1:]):
                    cond = f"({serial} || (_bounds.ndim == {len(args) - 1} && (_bounds.flags & SK_BOUNDS_NO_ALIAS)))"
                if isinstance(args[0].type, T.LocalArrayType):  # the thread's own array: no other thread adds
                    cond = "true"
                callee = "sk::adj_load_unique<SKC>"
                call_args.insert(0, cond)
        text = f"{callee}({', '.join(call_args)});"
        if pre:
            self.w("{ " + " ".join(pre) + " " + text + " }", depth)
        else:
            self.w(text, depth)
        for o in outs:
            self.w(f"sk::fixed_clear_grad({o.name});" if isinstance(o.type, T.FixedArrayType) else f"{adj(o)} = {{}};",
                   depth)


def variant_suffix(used: tuple | None) -> str:
    """The name suffix of a func adjoint's variant for the results ``used`` (a call uses only some)."""
    return "" if used is None else "__u" + "".join("1" if u else "0" for u in used)


def adj_func_signature(fn: ir.Function, used: tuple | None = None) -> str:
    params = [f"{ctype(p.type)} {p.name}" for p in fn.params]
    params += [f"{ctype(p.type)}& {adj(p)}" for p in fn.params]
    if fn.return_types:  # (a fixed-size array's: the caller's array, whose gradient storage is its adjoint)
        rt = fn.return_types[0]
        ret = f"sk::array_t<{ctype(rt.dtype)}>" if isinstance(rt, T.FixedArrayType) else return_ctype(fn)
        params.append(f"const {ret}& adj_ret")
    return (f"template <bool SKC>\nstatic {func_qualifier(fn)} void adj_{fn.name}{variant_suffix(used)}"
            f"({', '.join(params)})")


def gen_adj_func(fn: ir.Function, options: dict, used: tuple | None = None, variants: dict | None = None) -> str:
    """``adj_<name>(params..., adj_params&..., adj_ret)``: replay, then reverse. ``used``: the variant
    for callers that use only these results (the others' adjoints are zero)."""
    if getattr(fn, "native", None) is not None and getattr(fn, "ref_params", None):  # (native_refs.py)
        from .native_refs import gen_adjoint

        return gen_adjoint(fn)
    if getattr(fn, "native", None) is not None:  # @func_native: the adjoint snippet
        from .native_func import gen_adjoint

        return gen_adjoint(fn)
    e = AdjointEmitter(fn, options, used, variants)
    body = AdjointEmitter(fn, options, used, variants)
    body.loop_ids, body.loop_vars = e.loop_ids, e.loop_vars
    body.fwd(fn.body, 1, True)
    body.w("// reverse", 1)
    body.rev(fn.body, 1)
    e.declarations(1)
    e.adj_declarations(1)
    if body.loop_ids:
        e.w("auto&& _stk = sk::tape_stack();", 1)
    if any("_serial" in line for line in body.lines):
        e.w("const bool _serial = sk::serial_launch();", 1)
    out = [adj_func_signature(fn, used) + " {"]
    out += e.lines + body.lines + ["}"]
    return "\n".join(out)


def gen_adj_kernel(fn: ir.Function, options: dict, variants: dict | None = None) -> str:
    """The adjoint kernel body and its CPU/CUDA entries (``<name>_cpu_bwd`` / ``<name>_cuda_bwd``)."""
    from .analysis import uses_array_slices
    from .codegen import body_params, cpu_entry, cuda_entry

    name = fn.name
    e = AdjointEmitter(fn, options, variants=variants)
    body = AdjointEmitter(fn, options, variants=variants)
    body.loop_ids, body.loop_vars = e.loop_ids, e.loop_vars
    body.fwd(fn.body, 1, True)
    body.w("// reverse", 1)
    body.rev(fn.body, 1)
    out = ["template <bool SKC>",
           f"static SK_INLINE void {name}_bwd(const {name}_args& _args, {body_params(fn)}) {{"]
    for p in fn.params:
        e.w(f"{ctype(p.type)} {p.name} = _args.{p.name};", 1)
        e.w(f"{ctype(p.type)} {adj(p)}{{}};", 1)
    e.w("sk::stack_reset();", 1)
    if body.loop_ids:
        e.w("auto&& _stk = sk::tape_stack();", 1)
    e.declarations(1)
    e.adj_declarations(1)
    enter = "sk::det_enter(_i); " if options.get("det_grad") else ""  # (native/det_grad.h)
    out += e.lines + body.lines + ["}", cpu_entry(name, "bwd", uses_array_slices(fn), tids=fn.uses_tid),
                                   cuda_entry(name, "bwd", enter, tids=fn.uses_tid > 1)]
    return "\n".join(out)


def gen_adjoints(kernels: list, funcs: list, options: dict) -> list:
    """The adjoint unit's functions: each func's adjoint, the variants calls asked for (declared first:
    a variant may be asked for by a func defined before it), then each kernel's backward entry."""
    from .codegen import args_struct, gen_func

    variants: dict = {}
    replays = [gen_func(f, options, replay=True) for f in funcs if has_side_effects(f)]
    defaults = [gen_adj_func(f, options, variants=variants) for f in funcs if not getattr(f, "no_adjoint", False)]
    kernel_parts = [args_struct(k) + "\n" + gen_adj_kernel(k, options, variants) for k in kernels]
    done: dict = {}
    while len(done) < len(variants):  # a variant may ask for variants of its own callees
        for key, fn in list(variants.items()):
            if key not in done:
                done[key] = gen_adj_func(fn, options, key[1], variants)
    decls = [adj_func_signature(variants[key], key[1]) + ";" for key in done]
    return replays + decls + defaults + list(done.values()) + kernel_parts


def gen_struct_accum(t) -> str:
    """sk::accum overload for a struct: adds every non-array field."""
    st = t._simkit_struct
    lines = [f"namespace sk {{ SK_INLINE void accum({st.cname}& a, const {st.cname}& b) {{"]
    for fname, ft in st.fields.items():
        if not isinstance(ft, T.ArrayType):
            lines.append(f"    accum(a.{fname}, b.{fname});")
    lines.append("} }")
    # gradient accumulation into arrays of this struct, field by field (found by ADL from array.h)
    lines.append(f"SK_INLINE void atomic_accumulate({st.cname}* p, const {st.cname}& v) {{")
    lines.append("    using sk::atomic_accumulate;")
    for fname, ft in st.fields.items():
        if not isinstance(ft, T.ArrayType):
            lines.append(f"    atomic_accumulate(&p->{fname}, v.{fname});")
    lines.append("}")
    lines.append(f"SK_INLINE {st.cname}& operator+=({st.cname}& a, const {st.cname}& b) {{ sk::accum(a, b); "
                 f"return a; }}")
    return "\n".join(lines)

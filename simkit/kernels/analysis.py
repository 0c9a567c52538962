"""Static analysis of kernel IR: which array parameters a kernel reads and writes.

The tape uses it to (1) bump the version of every array a launch writes, (2)
check at ``backward()`` that arrays a launch read were not overwritten since,
and (3) handle kernels that read and write the same array (``load_order``):
the adjoint kernel replays the forward without its stores, so a load must see
in the replay what it saw in the launch. Loads that precede every write see
the launch's input values (the tape keeps a copy of them); loads that follow
every write see what the launch left; any other order is refused.
"""
from __future__ import annotations

from . import ir
from . import types as T

WRITE_KEYS = {"store", "store_component", "atomic_add", "atomic_sub", "atomic_min", "atomic_max", "atomic_exch",
              "atomic_cas", "atomic_and", "atomic_or", "atomic_xor"}
ACCUMULATE_KEYS = {"atomic_add", "atomic_sub"}  # commutative updates: not overwrites
VIEW_KEYS = {"view", "array_slice"}  # results name (part of) their first argument's memory


class Access:
    def __init__(self):
        self.reads: dict = {}  # path (tuple of names) -> first line
        self.writes: dict = {}

    @property
    def stores(self) -> set:
        """Paths overwritten (stores, exch/cas/min/max), as opposed to accumulated into."""
        return self._stores


def _call_path(s: ir.Call, origin: dict):
    """(builtin key, the array path its first argument names, or None) of a call."""
    key = s.builtin.key if s.builtin is not None else None
    a0 = s.args[0] if s.args else None
    return key, (origin.get(a0.name) if a0 is not None and not a0.is_const else None)


def _alias(s, origin: dict) -> bool:
    """A view, struct field or copy of an array path: record the path its result names (True)."""
    if isinstance(s, ir.Call):
        key, path = _call_path(s, origin)
        if key in VIEW_KEYS and path is not None and s.out is not None:
            origin[s.out.name] = path
            return True
    elif isinstance(s, ir.GetField):
        if s.src.name in origin and _has_arrays(s.out.type):
            origin[s.out.name] = origin[s.src.name] + (s.field,)
            return True
    elif isinstance(s, ir.Copy) and s.src.name in origin and not s.src.is_const:
        origin[s.out.name] = origin[s.src.name]
        return True
    return False


def analyze(fn: ir.Function) -> Access:
    acc = Access()
    acc._stores = set()
    origin = {p.name: (p.label,) for p in fn.params if _has_arrays(p.type)}

    def visit(stmts):
        for s in stmts:
            if _alias(s, origin):
                continue
            if isinstance(s, ir.Call):
                key, path = _call_path(s, origin)
                if key == "load" and path is not None:
                    acc.reads.setdefault(path, s.line)
                elif key in WRITE_KEYS and path is not None:
                    acc.writes.setdefault(path, s.line)
                    if key not in ACCUMULATE_KEYS:
                        acc._stores.add(path)
                elif s.kind == "func":
                    _through_func(s, origin, acc)
            elif isinstance(s, ir.If):
                visit(s.body)
                visit(s.orelse)
            elif isinstance(s, ir.For):
                visit(s.body)
            elif isinstance(s, ir.While):
                visit(s.cond_block)
                visit(s.body)

    visit(fn.body)
    return acc


def _through_func(s: ir.Call, origin: dict, acc: Access):
    """Arrays passed to a @func: its own accesses map back to the caller's parameters."""
    inner = analyze(s.func.ir)
    params = s.func.ir.params
    for a, p in zip(s.args, params):
        path = origin.get(a.name) if not a.is_const else None
        if path is None:
            continue
        for sub, line in inner.reads.items():
            if sub[0] == p.label:
                acc.reads.setdefault(path + sub[1:], s.line)
        for sub, line in inner.writes.items():
            if sub[0] == p.label:
                acc.writes.setdefault(path + sub[1:], s.line)
                if sub in inner._stores:
                    acc._stores.add(path + sub[1:])


BEFORE, AFTER, MIXED = "before", "after", "mixed"


def load_order(fn: ir.Function) -> dict:
    """{path: (order, line)} for each array path a kernel both loads and writes (atomic adds included).

    ``order`` is BEFORE when no write of the path can precede any of its loads in a thread (the loads
    see the launch's input values), AFTER when writes can precede every load and none can follow one
    (the loads see what the launch leaves), MIXED otherwise; ``line``: a load that breaks the other
    orders (or the first load). Branches are exclusive; a loop body counts twice (its back edge)."""
    loads = {}  # key -> [path, line, a write may precede it, a write may follow it]

    def visit(stmts, origin, state, chain):
        written, pending = state  # paths a write may have touched; load keys that may have run
        for s in stmts:
            if _alias(s, origin):
                continue
            if isinstance(s, ir.Call):
                key, path = _call_path(s, origin)
                if key == "load" and path is not None:
                    k = chain + (id(s),)
                    rec = loads.setdefault(k, [path, s.line, False, False])
                    rec[2] = rec[2] or path in written
                    pending.add(k)
                elif key in WRITE_KEYS and path is not None:
                    written.add(path)
                    for k in pending:
                        if loads[k][0] == path:
                            loads[k][3] = True
                elif s.kind == "func":
                    inner = {p.name: origin[a.name] for a, p in zip(s.args, s.func.ir.params)
                             if not a.is_const and a.name in origin}
                    visit(s.func.ir.body, inner, state, chain + (id(s),))
            elif isinstance(s, ir.If):
                other = (set(written), set(pending))
                visit(s.body, origin, state, chain)
                visit(s.orelse, origin, other, chain)
                written |= other[0]
                pending |= other[1]
            elif isinstance(s, (ir.For, ir.While)):
                for _ in range(2):
                    if isinstance(s, ir.While):
                        visit(s.cond_block, origin, state, chain)
                    visit(s.body, origin, state, chain)

    origin = {p.name: (p.label,) for p in fn.params if _has_arrays(p.type)}
    state = (set(), set())
    visit(fn.body, origin, state, ())
    out = {}
    for path, line, prior, follows in loads.values():
        if path not in state[0]:
            continue
        order = BEFORE if not prior else AFTER if not follows else MIXED
        have = out.get(path)
        if have is None:
            out[path] = (order, line)
        elif have[0] != order and have[0] != MIXED:
            out[path] = (MIXED, line)
    return out


def _has_arrays(t) -> bool:
    if isinstance(t, T.ArrayType):
        return True
    if T.is_struct(t):
        return any(_has_arrays(f) for f in t._simkit_struct.fields.values())
    return False


def resolve(path: tuple, args_by_name: dict):
    """The runtime array object a path names for one launch (or None)."""
    v = args_by_name.get(path[0])
    for field in path[1:]:
        if v is None:
            return None
        v = getattr(v, field, None)
    return v


def _calls(fn: ir.Function, pred) -> bool:
    """Does ``fn`` or a function it calls call a builtin for which ``pred(builtin)`` holds?"""
    def calls(f, seen):
        for s in ir.walk(f.body):
            if isinstance(s, ir.Call):
                if s.builtin is not None and pred(s.builtin):
                    return True
                if s.kind == "func" and id(s.func) not in seen:
                    seen.add(id(s.func))
                    if calls(s.func.ir, seen):
                        return True
        return False

    return calls(fn, set())


def has_side_effects(fn: ir.Function) -> bool:
    """Does a @func write arrays or print (itself or through its callees)? The adjoints' forward
    replays call its ``replay_`` variant, which does neither (codegen.gen_func)."""
    v = fn.__dict__.get("_side_effects")
    if v is None:
        v = fn._side_effects = any(
            isinstance(s, ir.Call) and (s.kind == "printf" or (s.builtin is not None and not s.builtin.replay)
                                        or (s.kind == "func" and has_side_effects(s.func.ir)))
            for s in ir.walk(fn.body))
    return v


def may_report_errors(fn: ir.Function) -> bool:
    """Does the kernel call builtins that report errors in release mode (expect_*), or take grad(f) (its
    backward pass may report one; adjoint.refuse_second_order)?"""
    return _calls(fn, lambda b: b.needs_line) or _uses_grad(fn, set())


def _uses_grad(fn: ir.Function, seen: set) -> bool:
    if getattr(fn, "uses_grad", False):
        return True
    for s in ir.walk(fn.body):
        if isinstance(s, ir.Call) and s.kind == "func" and id(s.func) not in seen:
            seen.add(id(s.func))
            if _uses_grad(s.func.ir, seen):
                return True
    return False


def uses_array_slices(fn: ir.Function) -> bool:
    """Does the kernel slice arrays (``a[1:3]``)? Its views are strided, so it always runs the strided
    addressing of its body, never the contiguous one (``SKC``)."""
    return _calls(fn, lambda b: b.key == "array_slice")

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
        # it writes an array it cannot trace to a parameter (one a builtin made: a Mesh's points through mesh_get;
        # one a struct it built holds); its thread-local arrays do not count
        self.untraced = False

    @property
    def stores(self) -> set:
        """Paths overwritten (stores, exch/cas/min/max), as opposed to accumulated into."""
        return self._stores


def _local(v: ir.Var) -> bool:
    """A thread's own fixed-size array (``sk.zeros(shape=...)`` in a kernel)."""
    from .types_local import LocalArrayType

    return isinstance(v.type, LocalArrayType)


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
                elif key in WRITE_KEYS and not _local(s.args[0]):
                    acc.untraced = True
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
    acc.untraced = acc.untraced or inner.untraced
    for a, p in zip(s.args, params):
        path = origin.get(a.name) if not a.is_const else None
        if path is None:
            if not a.is_const and not _local(a) and any(sub[0] == p.label for sub in inner.writes):
                acc.untraced = True  # (it writes an array the caller cannot trace)
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
    orders (or the first load). Branches are exclusive; a loop body counts twice (its back edge).
    Writes of one part of an element (``y[i].x = v``) order only the loads whose used parts overlap it:
    ``y[i].x *= a; y[i].y *= a`` reads each part before writing it (BEFORE)."""
    loads = {}  # key -> [path, line, a write may precede it, a write may follow it, the parts it uses]

    def visit(stmts, origin, state, chain, uses):
        written, pending = state  # {path: parts a write may have touched}; load keys that may have run
        for s in stmts:
            if _alias(s, origin):
                continue
            if isinstance(s, ir.Call):
                key, path = _call_path(s, origin)
                if key == "load" and path is not None:
                    k = chain + (id(s),)
                    parts = _used_parts(s.out, uses) if s.out is not None else None
                    rec = loads.setdefault(k, [path, s.line, False, False, parts])
                    rec[2] = rec[2] or any(_overlap(parts, w) for w in written.get(path, ()))
                    pending.add(k)
                elif key in WRITE_KEYS and path is not None:
                    part = _written_part(s)
                    written.setdefault(path, set()).add(part)
                    for k in pending:
                        if loads[k][0] == path and _overlap(loads[k][4], part):
                            loads[k][3] = True
                elif s.kind == "func":
                    inner = {p.name: origin[a.name] for a, p in zip(s.args, s.func.ir.params)
                             if not a.is_const and a.name in origin}
                    visit(s.func.ir.body, inner, state, chain + (id(s),), value_uses(s.func.ir))
            elif isinstance(s, ir.If):
                other = ({p: set(w) for p, w in written.items()}, set(pending))
                visit(s.body, origin, state, chain, uses)
                visit(s.orelse, origin, other, chain, uses)
                for p, w in other[0].items():
                    written.setdefault(p, set()).update(w)
                pending |= other[1]
            elif isinstance(s, (ir.For, ir.While)):
                for _ in range(2):
                    if isinstance(s, ir.While):
                        visit(s.cond_block, origin, state, chain, uses)
                    visit(s.body, origin, state, chain, uses)

    origin = {p.name: (p.label,) for p in fn.params if _has_arrays(p.type)}
    state = ({}, set())
    visit(fn.body, origin, state, (), value_uses(fn))
    out = {}
    for path, line, prior, follows, _parts in loads.values():
        if path not in state[0]:
            continue
        order = BEFORE if not prior else AFTER if not follows else MIXED
        have = out.get(path)
        if have is None:
            out[path] = (order, line)
        elif have[0] != order and have[0] != MIXED:
            out[path] = (MIXED, line)
    return out


# Parts of an array element, as lists of byte ranges [lo, hi); None: the whole element.

def value_uses(fn: ir.Function) -> dict:
    """{value name: the statements of ``fn`` that read it}."""
    uses: dict = {}
    for s in ir.walk(fn.body):
        for a in ir.reads(s):
            if a is not None:
                uses.setdefault(a.name, []).append(s)
    return uses


def _used_parts(v: ir.Var, uses: dict):
    """The parts of a loaded element that are used: each use a component (``extract`` with constant
    indices) or a struct field; otherwise the whole element."""
    parts = []
    for s in uses.get(v.name, ()):
        part = _part_read(s, v)
        if part is None:
            return None
        parts.append(part)
    return parts


def _part_read(s, v: ir.Var):
    t = v.type
    if isinstance(s, ir.GetField) and s.src is v and T.is_struct(t):
        lo = t._simkit_struct.offsets[s.field]
        return (lo, lo + T.sizeof(t._simkit_struct.fields[s.field]))
    if not (isinstance(s, ir.Call) and s.builtin is not None and s.builtin.key == "extract" and s.args[0] is v
            and all(a.is_const for a in s.args[1:]) and T.is_value(t)):
        return None
    size = T.sizeof(T.scalar_of(t))
    ks = [int(a.const) for a in s.args[1:]]
    if T.is_matrix(t):
        rows, cols = t._shape
        if len(ks) == 2:
            lo = ((ks[0] % rows) * cols + ks[1] % cols) * size
            return (lo, lo + size)
        if len(ks) == 1:
            lo = (ks[0] % rows) * cols * size
            return (lo, lo + cols * size)
        return None
    if len(ks) != 1:
        return None
    lo = (ks[0] % t._length) * size
    return (lo, lo + size)


def _written_part(s: ir.Call):
    """The part a write touches: a slot write's (``store_component``, atomics of a part), else the whole."""
    slot = next((a.const for a in s.args if a.is_const and type(a.const).__name__ == "Slot"), None)
    if slot is None:
        return None
    size = T.sizeof(slot.part)
    i = [a.const for a in s.args].index(slot)
    k1, k2 = s.args[i - 2], s.args[i - 1]
    if k1.is_const and k2.is_const:
        lo = slot.offset + (int(k1.const) * slot.n2 + int(k2.const)) * size
        return ((lo, lo + size),)
    return ((slot.offset, slot.offset + slot.n1 * slot.n2 * size),)


def _overlap(a, b) -> bool:
    if a is None or b is None:
        return True
    return any(lo < hi2 and lo2 < hi for lo, hi in a for lo2, hi2 in b)


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

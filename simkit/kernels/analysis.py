"""Static analysis of kernel IR: which array parameters a kernel reads and writes.

The tape uses it to (1) bump the version of every array a launch writes, (2)
check at ``backward()`` that arrays a launch read were not overwritten since,
and (3) refuse to record kernels that read and overwrite the same array, whose
gradients would silently be wrong.
"""
from __future__ import annotations

from . import ir
from . import types as T

WRITE_KEYS = {"store", "store_component", "atomic_add", "atomic_sub", "atomic_min", "atomic_max", "atomic_exch",
              "atomic_cas", "atomic_and", "atomic_or", "atomic_xor"}
ACCUMULATE_KEYS = {"atomic_add", "atomic_sub"}  # commutative updates: not overwrites


class Access:
    def __init__(self):
        self.reads: dict = {}  # path (tuple of names) -> first line
        self.writes: dict = {}

    @property
    def stores(self) -> set:
        """Paths overwritten (stores, exch/cas/min/max), as opposed to accumulated into."""
        return self._stores

    @property
    def inplace(self) -> dict:
        """Paths both read (plain loads) and overwritten, with the line of the write."""
        return {p: line for p, line in self.writes.items() if p in self.reads and p in self._stores}


def analyze(fn: ir.Function) -> Access:
    acc = Access()
    acc._stores = set()
    origin = {p.name: (p.label,) for p in fn.params if _has_arrays(p.type)}

    def visit(stmts):
        for s in stmts:
            if isinstance(s, ir.Call):
                key = s.builtin.key if s.builtin is not None else None
                a0 = s.args[0] if s.args else None
                path = origin.get(a0.name) if a0 is not None and not a0.is_const else None
                if key == "view" and path is not None and s.out is not None:
                    origin[s.out.name] = path
                elif key == "load" and path is not None:
                    acc.reads.setdefault(path, s.line)
                elif key in WRITE_KEYS and path is not None:
                    acc.writes.setdefault(path, s.line)
                    if key not in ACCUMULATE_KEYS:
                        acc._stores.add(path)
                elif s.kind == "func":
                    _through_func(s, origin, acc)
            elif isinstance(s, ir.GetField):
                path = origin.get(s.src.name)
                if path is not None and _has_arrays(s.out.type):
                    origin[s.out.name] = path + (s.field,)
            elif isinstance(s, ir.Copy) and s.src.name in origin and not s.src.is_const:
                origin[s.out.name] = origin[s.src.name]
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


def may_report_errors(fn: ir.Function) -> bool:
    """Does the kernel call builtins that report errors in release mode (expect_*)?"""
    return _calls(fn, lambda b: b.needs_line)


def uses_array_slices(fn: ir.Function) -> bool:
    """Does the kernel slice arrays (``a[1:3]``)? Its views are strided, so it always runs the strided
    addressing of its body, never the contiguous one (``SKC``)."""
    return _calls(fn, lambda b: b.key == "array_slice")

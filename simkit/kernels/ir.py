"""The compiler's intermediate representation.

A function body is a list of statements over typed values (``Var``). Straight
-line code is SSA: a Python local that is reassigned becomes a new ``Var``.
Control flow stays structured (``If``, ``For``, ``While``) so that the adjoint
pass can reverse loops iteration by iteration. Values that flow out of a branch
or around a loop live in *mutable* vars, written by ``Copy``.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from . import types as T


class Var:
    """A typed value. ``const`` holds the Python value of compile-time constants."""

    __slots__ = ("name", "type", "const", "is_const", "weak", "mutable", "label", "is_param", "ref")

    def __init__(self, name, type, *, const=None, is_const=False, weak=False, mutable=False,
                 label=None, is_param=False):
        self.name = name
        self.type = type
        self.const = const
        self.is_const = is_const
        self.weak = weak  # an untyped Python literal (adapts to the other operand)
        self.mutable = mutable  # assigned more than once (phi, loop-carried, loop index)
        self.label = label  # the Python name it came from
        self.is_param = is_param
        self.ref = False  # passed by reference to a mutating builtin (random state)

    def __repr__(self):
        return f"{self.name}:{T.type_name(self.type)}"


@dataclass
class Stmt:
    line: int = 0  # Python source line (absolute in the file)


@dataclass
class Call(Stmt):
    """out = callee(args). ``builtin`` is a registry entry (or None for internal ops)."""

    out: Var | None = None
    builtin: object = None
    args: list = field(default_factory=list)
    callee: str = ""
    # 'builtin' | 'make' (construct from components) | 'func' (user function)
    kind: str = "builtin"
    func: object = None  # FunctionSpec for kind == 'func'
    outs: list = field(default_factory=list)  # extra outputs (tuple-returning funcs)


@dataclass
class Copy(Stmt):
    """out = src (out is a mutable var: phi, loop-carried value)."""

    out: Var = None
    src: Var = None


@dataclass
class GetField(Stmt):
    out: Var = None
    src: Var = None
    field: str = ""


@dataclass
class SetField(Stmt):
    """out = src with field replaced by value (functional update)."""

    out: Var = None
    src: Var = None
    field: str = ""
    value: Var = None


@dataclass
class Tid(Stmt):
    outs: list = field(default_factory=list)


@dataclass
class If(Stmt):
    cond: Var = None
    body: list = field(default_factory=list)
    orelse: list = field(default_factory=list)


@dataclass
class For(Stmt):
    """for var in range(start, end, step): body. ``carried``: mutable vars written by the body."""

    var: Var = None
    start: Var = None
    end: Var = None
    step: Var = None
    body: list = field(default_factory=list)
    carried: list = field(default_factory=list)
    stop: list = field(default_factory=list)  # bool flags (break/return lowered): the loop ends when one is set


@dataclass
class While(Stmt):
    """while True: cond_block; if not cond: break; body."""

    cond_block: list = field(default_factory=list)
    cond: Var = None
    body: list = field(default_factory=list)
    carried: list = field(default_factory=list)


@dataclass
class Break(Stmt):
    pass


@dataclass
class Continue(Stmt):
    pass


@dataclass
class Return(Stmt):
    values: list = field(default_factory=list)


@dataclass
class Function:
    """A typed function body: a kernel or one specialisation of a @func."""

    name: str  # C++ name
    params: list  # Vars
    body: list  # Stmts
    vars: list  # every Var declared in the body (not params)
    return_types: list  # [] for kernels/void funcs
    is_kernel: bool
    filename: str
    first_line: int
    source_lines: list  # the Python source, for comments
    uses_tid: int = 0  # number of tid() components used (0: none)
    funcs: list = field(default_factory=list)  # FunctionSpecs called (transitively collected later)
    structs: list = field(default_factory=list)  # struct types used


def walk(stmts):
    """Every statement, depth first."""
    for s in stmts:
        yield s
        if isinstance(s, If):
            yield from walk(s.body)
            yield from walk(s.orelse)
        elif isinstance(s, For):
            yield from walk(s.body)
        elif isinstance(s, While):
            yield from walk(s.cond_block)
            yield from walk(s.body)


def defines(s) -> list:
    """The variables statement ``s`` itself assigns: its result and any further results."""
    out = getattr(s, "out", None)
    return ([out] if out is not None else []) + list(getattr(s, "outs", None) or [])


def reads(s) -> list:
    """The variables statement ``s`` itself reads (not those of nested blocks)."""
    if isinstance(s, Call):
        return list(s.args)
    if isinstance(s, (Copy, GetField)):
        return [s.src]
    if isinstance(s, SetField):
        return [s.src, s.value]
    if isinstance(s, (If, While)):
        return [s.cond]
    if isinstance(s, For):
        return [s.start, s.end, s.step, *s.stop]
    if isinstance(s, Return):
        return list(s.values)
    return []

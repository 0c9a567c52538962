"""Random kernels in Warp's language, for differential testing (tests/test_kernel_fuzz.py, tools/fuzz_kernels.py).

``generate(seed)`` writes the source of one module: a few ``@wp.func`` and ``@wp.kernel`` definitions made of
random statements over floats, vec3, mat33, quat, int32 and bool locals: arithmetic and ~60 builtins,
component reads and writes, ``if``/``elif``/``else``, ternaries, static and dynamic ``for`` loops, ``while``
loops, ``break``/``continue``, calls of the module's funcs (with early returns and tuple results). The same
text runs under ``import simkit as wp`` and ``import warp as wp``.

Every kernel has the same signature: thread ``t`` reads ``xf[t * NF:(t + 1) * NF]`` (floats), ``xv[t * NV:...]``
(vec3) and ``xi[t * NI:...]`` (int32), and writes every live local to ``out_f[t * n_out_f:...]`` and
``out_i[t * n_out_i:...]``. Threads share nothing, so a thread's outputs depend only on its own inputs (which
makes per-thread finite differences possible).

Jumps get an offset (comparisons, floor and the other rounding functions, step, argmin, float-to-int): an
expression that is constant in exact arithmetic (the determinant of a skew matrix, cross(u, u)) is rounding
noise in floating point, and two compilers' noise may fall on either side of a jump at zero for every input.
Values stay bounded by construction, so no overflow, NaN or undefined behaviour can make the two compilers
disagree: inputs lie in [-2, 2] (ints in [-50, 50]); an assignment that multiplies or nests squashes its value
(tanh, sin, clamp, x / (1 + |x|), ...); integers are reduced modulo a small prime after products; divisors are
bounded away from zero; loops run at most a few iterations.
"""
from __future__ import annotations

import random
from dataclasses import dataclass, field

NF, NV, NI = 4, 2, 3  # inputs per thread: floats, vec3s, ints
FLOAT_TYPES = ("f", "v", "m", "q")  # float-valued kinds (written to out_f)
CONSTANTS = {"f": "C_F", "i": "C_I", "v": "C_V"}  # module-level wp.constant values
STRUCT_FIELDS = {"a": "f", "v": "v", "i": "i"}  # the module's @wp.struct S (kind "s")
SMALL_INTS = ("int8", "uint8", "int16", "uint16", "uint32", "int64", "uint64")
UNARY = ("sin", "cos", "tanh", "atan", "abs", "floor", "ceil", "trunc", "frac", "sign", "round", "rint", "degrees",
         "radians")


@dataclass
class KernelInfo:
    name: str
    n_out_f: int
    n_out_i: int
    rows: int = 0  # a 2D launch of (n / rows, rows) indices (i, j), thread t = i * rows + j; 0: 1D


@dataclass
class Module:
    source: str  # without the import line: prepend "import warp as wp" or "import simkit as wp"
    precision: str  # "float32" or "float64"
    kernels: list = field(default_factory=list)


class _Names:
    def __init__(self):
        self.n = 0

    def __call__(self, kind: str) -> str:
        self.n += 1
        return f"{kind}{self.n}"


class _Scope:
    """The locals visible at a point: {name: kind}; which may be reassigned (not loop variables or params)."""

    def __init__(self, parent: _Scope | None = None):
        self.vars = dict(parent.vars) if parent else {}
        self.fixed = set(parent.fixed) if parent else set()

    def of(self, kind):
        return [n for n, k in self.vars.items() if k == kind]

    def mutable(self, kind):
        return [n for n, k in self.vars.items() if k == kind and n not in self.fixed]


class Generator:
    def __init__(self, seed: int, precision: str | None = None):
        self.rng = random.Random(seed)
        self.precision = precision or self.rng.choice(("float64", "float64", "float32"))
        d = self.precision == "float64"
        self.F = "wp.float64" if d else "wp.float32"
        self.V = "wp.vec3d" if d else "wp.vec3"
        self.M = "wp.mat33d" if d else "wp.mat33"
        self.Q = "wp.quatd" if d else "wp.quat"
        self.W = "wp." + self.rng.choice(SMALL_INTS)  # the module's other integer type (kind "w")
        self.unsigned = self.W.startswith("wp.u")
        self.names = _Names()
        self.funcs = []  # (name, [param kinds], return kinds tuple)
        self.depth_limit = 3
        self.in_loop = 0
        self.in_func = False
        self.straight = False  # a small straight-line kernel (GPUs run those interleaved: kernels/interleave.py)

    # ---- literals and leaves -------------------------------------------------------------------------------
    def lit(self, lo=-2.0, hi=2.0) -> str:
        return f"{self.F}({self.rng.uniform(lo, hi):.3f})"

    def bare_lit(self, lo=0.1, hi=1.5) -> str:
        """A Python float literal: next to a float32 value (Warp refuses one next to a float64)."""
        v = f"{self.rng.uniform(lo, hi):.3f}"
        return v if self.precision == "float32" else f"{self.F}({v})"

    def ilit(self, lo=-9, hi=9) -> str:
        return str(self.rng.randint(lo, hi))

    def leaf(self, kind, scope):
        if kind == "f" and not (self.in_func or self.straight) and self.rng.random() < 0.08:
            return self.array_read(scope)
        if kind in CONSTANTS and self.rng.random() < 0.05:
            return CONSTANTS[kind]
        structs = scope.of("s")
        if kind in STRUCT_FIELDS.values() and structs and self.rng.random() < 0.15:
            field = self.rng.choice([f for f, k in STRUCT_FIELDS.items() if k == kind])
            return f"{self.rng.choice(structs)}.{field}"
        names = scope.of(kind)
        if names and self.rng.random() < 0.85:
            return self.rng.choice(names)
        return self.const(kind)

    def array_read(self, scope):
        """One of the thread's float inputs, at an index computed from an int local (a loop's index, say)."""
        ints = scope.of("i")
        k = self.rng.choice(ints) if ints else self.ilit()
        return f"xf[t * {NF} + wp.abs({k}) % {NF}]"

    def const(self, kind):
        r = self.rng
        if kind == "f":
            return self.lit()
        if kind == "i":
            return f"wp.int32({self.ilit()})"
        if kind == "w":
            return f"{self.W}({self.ilit(0, 9) if self.unsigned else self.ilit()})"
        if kind == "s":
            return "S()"
        if kind == "b":  # (Warp refuses to reassign a local made from a bare literal in a dynamic loop)
            return f"wp.bool({r.choice(('True', 'False'))})"
        if kind == "v":
            return f"{self.V}({self.lit()}, {self.lit()}, {self.lit()})"
        if kind == "m":
            entries = ", ".join(self.lit(-1, 1) for _ in range(9))
            return r.choice((f"wp.identity(n=3, dtype={self.F})", f"{self.M}({entries})"))
        return f"wp.quat_identity(dtype={self.F})" if r.random() < 0.3 else \
            f"wp.normalize({self.Q}({self.lit()}, {self.lit()}, {self.lit()}, {self.lit(1.0, 2.0)}))"

    # ---- expressions: each returns source text of the kind asked for -------------------------------------------
    def expr(self, kind, scope, depth=0):
        if depth >= self.depth_limit or self.rng.random() < 0.25 * depth:
            return self.leaf(kind, scope)
        return getattr(self, "expr_" + kind)(scope, depth + 1)

    def squash(self, kind, e):
        """Bound the value of e (any size) to about [-2, 2] per component; e is a name (it is read more than once)."""
        r = self.rng
        if kind == "f":
            return r.choice((f"wp.tanh({e})", f"wp.sin({e})", f"wp.clamp({e}, {self.lit(-3, -1)}, {self.lit(1, 3)})",
                             f"wp.atan({e})", f"({e}) / ({self.F}(1.0) + wp.abs({e}))", f"wp.cos({e})"))
        if kind == "v":
            return r.choice((f"({e}) / ({self.F}(1.0) + wp.length({e}))",
                             f"{self.V}(wp.tanh(({e})[0]), wp.sin(({e})[1]), wp.atan(({e})[2]))",
                             f"wp.normalize({e})" if r.random() < 0.3 else f"({e}) * {self.F}(0.25) / "
                             f"({self.F}(1.0) + wp.length_sq({e}))"))
        if kind == "m":
            return f"({e}) * ({self.F}(1.0) / ({self.F}(1.0) + wp.ddot({e}, {e})))"
        if kind == "q":
            return f"wp.normalize({e})"
        if kind == "i":
            return f"(({e}) % {r.choice((7, 13, 31, 97))})"
        if kind == "w":
            return f"(({e}) % {self.W}({r.choice((7, 13, 31, 97))}))"
        return e

    def expr_f(self, scope, depth):
        r = self.rng
        e = lambda k="f": self.expr(k, scope, depth)  # noqa: E731
        choice = r.randrange(34)
        if choice < 4:
            op = r.choice("+-*")
            return f"({e()} {op} {e()})"
        if choice == 4:
            return f"({e()} * {self.bare_lit()})"  # a bare Python literal next to a typed value
        if choice == 5:
            return f"({e()} / ({self.F}(1.5) + wp.abs({e()})))"
        if choice == 6:
            return f"(-{e()})"
        if choice == 7:
            return f"wp.{r.choice(UNARY)}({e()} + {self.lit(0.05, 0.5)})"  # (offset: module docstring)
        if choice == 8:
            x = self.leaf("f", scope)
            return f"wp.sqrt({x} * {x} + {self.F}(0.5))" if r.random() < 0.5 else f"wp.exp(wp.tanh({e()}))"
        if choice == 9:
            x = self.leaf("f", scope)
            return r.choice((f"wp.log({self.F}(1.0) + {x} * {x})", f"wp.log2(wp.abs({e()}) + {self.F}(0.5))",
                             f"wp.log10({self.F}(2.0) + wp.sin({e()}))"))
        if choice == 10:
            return f"wp.{r.choice(('min', 'max'))}({e()}, {e()})"
        if choice == 11:
            return f"wp.clamp({e()}, {self.lit(-2, 0)}, {self.lit(0, 2)})"
        if choice == 12:  # (offsets: the sign of a zero differs, -x being 0 - x in Warp: docs/warp.md)
            return f"wp.atan2({e()} + {self.lit(0.05, 0.5)}, {e()})"
        if choice == 13:
            return f"wp.pow(wp.abs({e()}) + {self.F}(0.5), wp.sin({e()}))"
        if choice == 14:
            return f"wp.{r.choice(('asin', 'acos'))}(wp.tanh({e()}) * {self.F}(0.9))"
        if choice == 15:
            return f"wp.{r.choice(('sinh', 'cosh', 'tan'))}(wp.tanh({e()}))"
        if choice == 16:
            return f"wp.lerp({e()}, {e()}, wp.sin({e()}))"
        if choice == 17:
            return f"wp.smoothstep({self.F}(-1.0), {self.F}(1.0), {e()})"
        if choice == 18:
            return f"wp.step({e()} + {self.lit(0.05, 0.5)})"
        if choice == 19:
            return f"wp.copysign({e()}, {e()} + {self.lit(0.05, 0.5)})"
        if choice == 20:
            return f"wp.cbrt({e()} * {e()} + {self.F}(0.25))"
        if choice == 21:
            return f"wp.dot({e('v')}, {e('v')})"
        if choice == 22:
            return f"wp.{r.choice(('length', 'length_sq'))}({e('v')})"
        if choice == 23:
            return f"{e('v')}[{r.randrange(3)}]" if r.random() < 0.6 else f"{self.leaf('v', scope)}.{r.choice('xyz')}"
        if choice == 24:
            return r.choice((f"{e('m')}[{r.randrange(3)}, {r.randrange(3)}]", f"wp.trace({e('m')})",
                             f"wp.determinant({e('m')})", f"wp.ddot({e('m')}, {e('m')})"))
        if choice == 25:
            return f"{e('q')}[{r.randrange(4)}]"
        if choice == 26:  # (w reduced: a float of 2**64 - 7 times 3 would not fit an int32 later, undefined in C++)
            return f"{self.F}({e('i')})" if r.random() < 0.5 else f"{self.F}({e('w')} % {self.W}(97))"
        if choice == 27:
            return self.ternary(e(), e('b'), e())
        if choice == 28:
            return f"wp.where({e('b')}, {e()}, {e()})"
        if choice == 29:
            if r.random() < 0.5:
                return f"wp.{r.choice(('min', 'max'))}({e('v')})"
            ties = f"{self.V}({self.F}(0.1), {self.F}(0.3), {self.F}(0.5))"  # (no exact ties: module docstring)
            return f"{self.F}(wp.{r.choice(('argmin', 'argmax'))}({e('v')} + {ties}))"
        if choice == 30 and self.funcs:
            return self.call("f", scope, depth)
        if choice == 31:
            if r.random() < 0.5:  # (Warp refuses an int exponent)
                return f"({e()} ** {self.F}({r.choice(('2.0', '3.0'))}))"
            return f"({e()} % {self.F}(0.7))"
        if choice == 32:
            return f"wp.sqrt(wp.abs({e()}) + {self.F}(0.01))"  # (finite slope at 0: see kernel_fuzz_check)
        return self.leaf("f", scope)

    def expr_v(self, scope, depth):
        r = self.rng
        e = lambda k="v": self.expr(k, scope, depth)  # noqa: E731
        choice = r.randrange(16)
        if choice < 3:
            return f"({e()} {r.choice('+-')} {e()})"
        if choice == 3:
            return f"({e()} * {e('f')})" if r.random() < 0.5 else f"({e('f')} * {e()})"
        if choice == 4:
            return f"({e()} / ({self.F}(1.5) + wp.abs({e('f')})))"
        if choice == 5:
            return f"wp.cross({e()}, {e()})"
        if choice == 6:
            return f"{self.V}({e('f')}, {e('f')}, {e('f')})"
        if choice == 7:
            return f"wp.{r.choice(('cw_mul', 'min', 'max'))}({e()}, {e()})"
        if choice == 8:
            w = self.leaf("v", scope)
            return f"wp.cw_div({e()}, {self.V}({self.F}(1.5), {self.F}(2.0), {self.F}(1.7)) + wp.cw_mul({w}, {w}))"
        if choice == 9:
            return f"({e('m')} @ {e()})" if r.random() < 0.5 else f"wp.mul({e('m')}, {e()})"
        if choice == 10:
            return f"wp.quat_{r.choice(('rotate', 'rotate_inv'))}({e('q')}, {e()})"
        if choice == 11:
            return f"wp.get_diag({e('m')})" if r.random() < 0.5 else f"{e('m')}[{r.randrange(3)}]"
        if choice == 12:
            return f"(-{e()})"
        if choice == 13:
            return self.ternary(e(), e('b'), e())
        if choice == 14 and self.funcs:
            return self.call("v", scope, depth)
        return f"wp.abs({e()})" if r.random() < 0.3 else self.leaf("v", scope)

    def expr_m(self, scope, depth):
        r = self.rng
        e = lambda k="m": self.expr(k, scope, depth)  # noqa: E731
        choice = r.randrange(10)
        if choice < 2:
            return f"({e()} {r.choice('+-')} {e()})"
        if choice == 2:
            return f"({e()} @ {e()})"
        if choice == 3:
            return f"wp.transpose({e()})"
        if choice == 4:
            return f"wp.outer({e('v')}, {e('v')})"
        if choice == 5:
            return f"({e()} * {e('f')})"
        if choice == 6:
            return f"wp.inverse(wp.identity(n=3, dtype={self.F}) * {self.F}(4.0) + {self.leaf('m', scope)})"
        if choice == 7:
            return f"wp.{r.choice(('skew', 'diag'))}({e('v')})"
        if choice == 8:
            return f"wp.quat_to_matrix({e('q')})"
        return f"wp.matrix_from_{r.choice(('rows', 'cols'))}({e('v')}, {e('v')}, {e('v')})"

    def expr_q(self, scope, depth):
        r = self.rng
        e = lambda k="q": self.expr(k, scope, depth)  # noqa: E731
        choice = r.randrange(6)
        if choice == 0:
            return f"({e()} * {e()})"
        if choice == 1:
            return f"wp.quat_inverse({e()})"
        if choice == 2:
            axis = f"wp.normalize({e('v')} + {self.V}({self.F}(3.0), {self.F}(0.0), {self.F}(0.0)))"
            return f"wp.quat_from_axis_angle({axis}, {e('f')})"
        if choice == 3:
            return f"wp.quat_slerp({e()}, {e()}, {self.F}(0.3))"
        if choice == 4:
            return f"{self.Q}({e('f')}, {e('f')}, {e('f')}, {self.F}(2.5) + wp.abs({e('f')}))"
        return self.leaf("q", scope)

    def expr_s(self, scope, depth):
        return self.leaf("s", scope)

    def expr_w(self, scope, depth):
        """The module's other integer type: wrap-around, promotion and unsigned semantics."""
        r, W = self.rng, self.W
        e = lambda k="w": self.expr(k, scope, depth)  # noqa: E731
        choice = r.randrange(11)
        if choice < 3:
            return f"({e()} {r.choice(('+', '-', '*'))} {e()})"
        if choice == 3:
            return f"({e()} {r.choice(('//', '%'))} ({e()} % {W}(7) + {W}(8)))"
        if choice == 4:
            return f"({e()} {r.choice('&|^')} {e()})"
        if choice == 5:
            if self.unsigned and r.random() < 0.5:  # (a left shift of a negative value is undefined in C++17)
                return f"({e()} << ({e()} & {W}(7)))"
            return f"({e()} >> ({e()} & {W}(3)))"
        if choice == 6:
            return f"(~{e()})"
        if choice == 7:
            return f"{W}({e('i')})"
        if choice == 8:
            return f"wp.{r.choice(('min', 'max'))}({e()}, {e()})"
        if choice == 9:
            return self.ternary(e(), e('b'), e())
        return self.leaf("w", scope)

    def expr_i(self, scope, depth):
        r = self.rng
        e = lambda k="i": self.expr(k, scope, depth)  # noqa: E731
        choice = r.randrange(14)
        if choice < 3:
            return f"({e()} {r.choice(('+', '-', '*'))} {e()})"
        if choice == 3:
            return f"({e()} {r.choice(('//', '%'))} ({e()} % 7 + 8))"
        if choice == 4:
            return f"({e()} {r.choice('&|^')} {e()})"
        if choice == 5:
            return f"(({e()} & 255) << ({e()} & 7))" if r.random() < 0.5 else f"({e()} >> ({e()} & 3))"
        if choice == 6:
            return f"(~{e()})"
        if choice == 7:
            if r.random() < 0.5:
                return f"wp.{r.choice(('abs', 'sign'))}({e()})"
            return f"wp.{r.choice(('min', 'max'))}({e()}, {e()})"
        if choice == 8:
            return f"wp.int32({e('f')} * {self.F}(3.0) + {self.lit(0.05, 0.5)})"
        if choice == 9:
            return f"wp.clamp({e()}, -5, 5)"
        if choice == 10:
            return self.ternary(e(), e('b'), e())
        if choice == 11 and self.funcs:
            return self.call("i", scope, depth)
        if choice == 12:
            return f"(-{e()})"
        if choice == 13:  # (bounded: int32 products must not overflow, which C++ leaves undefined)
            return f"wp.int32({e('w')} % {self.W}(97))"
        return self.leaf("i", scope)

    def expr_b(self, scope, depth):
        r = self.rng
        e = lambda k: self.expr(k, scope, depth)  # noqa: E731
        choice = r.randrange(7)
        if choice < 2:
            # (offset: sides that are equal in exact arithmetic, lerp(a, a, s) and a, may differ in the last
            # bit between compilers (contracted multiply-adds), whatever the inputs)
            return f"({e('f')} {r.choice(('<', '>', '<=', '>='))} {e('f')} + {self.lit(0.05, 0.5)})"
        if choice == 2:
            k = r.choice("iw")
            return f"({e(k)} {r.choice(('==', '!=', '<', '>='))} {e(k)})"
        if choice == 3:
            return f"({e('b')} {r.choice(('and', 'or'))} {e('b')})"
        if choice == 4:
            return f"(not {e('b')})"
        if choice == 5:
            return f"(({e('i')} & 1) == 0)"
        return self.leaf("b", scope)

    def ternary(self, a, cond, b):
        """a if cond else b; a where() in straight-line kernels (a ternary is a branch)."""
        return f"wp.where({cond}, {a}, {b})" if self.straight else f"({a} if {cond} else {b})"

    def call(self, kind, scope, depth):
        matches = [f for f in self.funcs if f[2] == (kind,)]
        if not matches:
            return self.leaf(kind, scope)
        name, params, rets = self.rng.choice(matches)
        args = ", ".join(self.expr(k, scope, depth + 1) for k in params)
        return f"{name}({args})"

    # ---- statements ---------------------------------------------------------------------------------------------
    def value(self, kind, scope, lines, pad):
        """A bounded value of kind for an assignment (a raw value that needs bounding goes to a temporary)."""
        e = self.expr(kind, scope)
        if self.straight:  # (shallow: bounded without squashing, and few locals, as interleaving needs)
            return e
        if kind in ("f", "v", "m", "q", "i") and (self.rng.random() < 0.8 or "(" in e):
            tmp = self.names("tmp")
            lines.append(f"{pad}{tmp} = {e}")
            return self.squash(kind, tmp)
        return e

    def block(self, scope, lines, indent, n, level):
        for _ in range(n):
            self.statement(scope, lines, indent, level)

    def statement(self, scope, lines, indent, level):
        r = self.rng
        pad = "    " * indent
        if not (self.in_func or self.straight) and r.random() < 0.06:
            # slot 0 of the thread's outputs accumulates, from anywhere in the kernel (loops, branches)
            op = r.choice(("atomic_add", "atomic_add", "atomic_sub"))
            lines.append(f"{pad}wp.{op}(out_f, t * N_OUT_F, {self.value('f', scope, lines, pad)})")
            return
        if not self.straight and r.random() < 0.05:
            self.struct_statement(scope, lines, pad)
            return
        choice = r.randrange(11 if self.straight else 20)
        kinds = ("f", "f", "f", "v", "v", "i", "b") if self.straight else ("f", "f", "f", "v", "v", "m", "q", "i", "i",
                                                                          "w", "b")
        if choice < 6 or not scope.vars:
            kind = r.choice(kinds)
            name = self.names(kind)
            lines.append(f"{pad}{name} = {self.value(kind, scope, lines, pad)}")
            scope.vars[name] = kind
            return
        if choice < 9:
            kind = r.choice(kinds)
            targets = scope.mutable(kind)
            if targets:
                t = r.choice(targets)
                if kind in ("f", "v") and r.random() < 0.4:
                    op = r.choice(("+=", "-=", "*="))
                    rhs = self.value(kind, scope, lines, pad) if op != "*=" else f"{self.F}({r.uniform(-0.9, 0.9):.3f})"
                    lines.append(f"{pad}{t} {op} {rhs}")
                    if op != "*=" and not (self.in_loop and r.random() < 0.5):  # keep it bounded
                        lines.append(f"{pad}{t} = {self.squash(kind, t)}")  # (a sum over a loop is bounded)
                else:
                    lines.append(f"{pad}{t} = {self.value(kind, scope, lines, pad)}")
            return
        if choice < 11:
            self.component_write(scope, lines, pad, ("v",) if self.straight else ("v", "m", "q"))
            return
        if level >= 2:
            return
        if choice < 14:
            self.if_block(scope, lines, indent, level)
        elif choice < 17:
            self.for_block(scope, lines, indent, level)
        elif choice < 18 and not self.in_func:
            self.while_block(scope, lines, indent, level)
        elif self.funcs:
            self.tuple_call(scope, lines, pad)

    def struct_statement(self, scope, lines, pad):
        """A new struct with its fields set, a copy of one (a value: later writes to either leave the other), or
        a write to a field (the vector field's components too)."""
        r = self.rng
        mutable = scope.mutable("s")
        if mutable and r.random() < 0.5:
            t = r.choice(mutable)
            field = r.choice(("a", "v", "i", "v[]"))
            if field == "v[]":
                lines.append(f"{pad}{t}.v[{r.randrange(3)}] = {self.value('f', scope, lines, pad)}")
            else:
                lines.append(f"{pad}{t}.{field} = {self.value(STRUCT_FIELDS[field], scope, lines, pad)}")
            return
        name = self.names("s")
        structs = scope.of("s")
        if structs and r.random() < 0.4:
            lines.append(f"{pad}{name} = {r.choice(structs)}")
        else:
            lines.append(f"{pad}{name} = S()")
            for field, kind in STRUCT_FIELDS.items():
                if r.random() < 0.8:  # (a field left unset is zero)
                    lines.append(f"{pad}{name}.{field} = {self.value(kind, scope, lines, pad)}")
        scope.vars[name] = "s"

    def component_write(self, scope, lines, pad, kinds):
        r = self.rng
        kind = r.choice(kinds)
        targets = scope.mutable(kind)
        if not targets:
            return
        t = r.choice(targets)
        if kind == "v":
            target = f"{t}[{r.randrange(3)}]" if r.random() < 0.6 else f"{t}.{r.choice('xyz')}"
            lines.append(f"{pad}{target} = {self.value('f', scope, lines, pad)}")
        elif kind == "m":
            if r.random() < 0.5:
                lines.append(f"{pad}{t}[{r.randrange(3)}, {r.randrange(3)}] = {self.value('f', scope, lines, pad)}")
            else:
                lines.append(f"{pad}{t}[{r.randrange(3)}] = {self.value('v', scope, lines, pad)}")
            lines.append(f"{pad}{t} = {self.squash('m', t)}")
        else:
            lines.append(f"{pad}{t}[{r.randrange(4)}] = {self.value('f', scope, lines, pad)}")
            lines.append(f"{pad}{t} = wp.normalize({t} + {self.Q}({self.F}(0.0), {self.F}(0.0), {self.F}(0.0), "
                         f"{self.F}(3.0)))")

    def inner(self, scope, lines, indent, level, n=None):
        """A nested block; its new locals end with it."""
        inner = _Scope(scope)
        start = len(lines)
        self.block(inner, lines, indent, n or self.rng.randint(1, 3), level + 1)
        if len(lines) == start:
            lines.append("    " * indent + "pass")

    def if_block(self, scope, lines, indent, level):
        pad = "    " * indent
        lines.append(f"{pad}if {self.expr('b', scope)}:")
        self.inner(scope, lines, indent + 1, level)
        for _ in range(self.rng.choice((0, 0, 1))):
            lines.append(f"{pad}elif {self.expr('b', scope)}:")
            self.inner(scope, lines, indent + 1, level)
        if self.rng.random() < 0.6:
            lines.append(f"{pad}else:")
            self.inner(scope, lines, indent + 1, level)

    def loop_body(self, scope, lines, indent, level, loop_var=None):
        inner = _Scope(scope)
        if loop_var:
            inner.vars[loop_var] = "i"
            inner.fixed.add(loop_var)
        self.in_loop += 1
        start = len(lines)
        pad = "    " * indent
        for _ in range(self.rng.randint(1, 3)):
            if self.rng.random() < 0.15:
                lines.append(f"{pad}if {self.expr('b', inner)}:")
                lines.append(f"{pad}    {self.rng.choice(('break', 'continue'))}")
            self.statement(inner, lines, indent, level + 1)
        if len(lines) == start:
            lines.append(f"{pad}pass")
        self.in_loop -= 1

    def for_block(self, scope, lines, indent, level):
        r = self.rng
        pad = "    " * indent
        j = self.names("j")
        ints = scope.of("i")
        if r.random() < 0.5 or not ints:
            rng = r.choice((f"range({r.randint(1, 4)})", f"range({r.randint(-2, 1)}, {r.randint(2, 4)})",
                            f"range({r.randint(4, 6)}, {r.randint(0, 2)}, -{r.randint(1, 2)})"))
        else:
            n = r.choice(ints)
            rng = r.choice((f"range(wp.abs({n}) % 4)", f"range({n} % 3, 3)", f"range(0, wp.abs({n}) % 5, 2)"))
        lines.append(f"{pad}for {j} in {rng}:")
        self.loop_body(scope, lines, indent + 1, level, loop_var=j)

    def while_block(self, scope, lines, indent, level):
        pad = "    " * indent
        w = self.names("w")
        limit = self.expr("i", scope, 2)
        lines.append(f"{pad}{w} = wp.int32(0)")
        lines.append(f"{pad}while {w} < wp.abs({limit}) % 4:")
        lines.append(f"{pad}    {w} = {w} + 1")
        self.loop_body(scope, lines, indent + 1, level)
        scope.vars[w] = "i"
        scope.fixed.add(w)

    def tuple_call(self, scope, lines, pad):
        multi = [f for f in self.funcs if len(f[2]) > 1]
        if not multi:
            return
        name, params, rets = self.rng.choice(multi)
        args = ", ".join(self.expr(k, scope, 1) for k in params)
        outs = [self.names(k) for k in rets]
        lines.append(f"{pad}{', '.join(outs)} = {name}({args})")
        for o, k in zip(outs, rets):
            scope.vars[o] = k

    # ---- definitions ---------------------------------------------------------------------------------------------
    def func(self) -> str:
        r = self.rng
        name = f"fn{len(self.funcs)}"
        params = [r.choice(("f", "f", "v", "i", "m", "q", "s")) for _ in range(r.randint(1, 3))]
        rets = tuple(r.choice(("f", "v", "i")) for _ in range(r.choice((1, 1, 1, 2))))
        ann = {"f": self.F, "v": self.V, "i": "wp.int32", "m": self.M, "q": self.Q, "s": "S"}
        pnames = [f"p{k}{i}" for i, k in enumerate(params)]
        scope = _Scope()
        for p, k in zip(pnames, params):
            scope.vars[p] = k
            scope.fixed.add(p)
        self.in_func = True
        lines = ["@wp.func", f"def {name}({', '.join(f'{p}: {ann[k]}' for p, k in zip(pnames, params))}):"]
        self.block(scope, lines, 1, r.randint(1, 4), 1)
        if r.random() < 0.4:
            lines.append(f"    if {self.expr('b', scope)}:")
            values = [self.value(k, scope, lines, "        ") for k in rets]
            lines.append(f"        return {', '.join(values)}")
            self.block(scope, lines, 1, r.randint(0, 2), 1)
        values = [self.value(k, scope, lines, "    ") for k in rets]
        lines.append(f"    return {', '.join(values)}")
        self.in_func = False
        self.funcs.append((name, params, rets))
        return "\n".join(lines)

    def straight_next(self) -> bool:
        """Is the kernel being written a small straight-line one (decided before its launch's shape)?"""
        self._straight_next = self.rng.random() < 0.3
        return self._straight_next

    def kernel(self, name: str) -> tuple:
        r = self.rng
        scope = _Scope()
        lines = ["@wp.kernel",
                 f"def {name}(xf: wp.array(dtype={self.F}), xv: wp.array(dtype={self.V}), "  # (one line: see
                 f"xi: wp.array(dtype=wp.int32), out_f: wp.array(dtype={self.F}), "  # tools/fuzz_kernels.py's
                 "out_i: wp.array(dtype=wp.int32)):",  # reduce, which removes indented lines)
                 "    t = wp.tid()"]
        rows = 0 if self.straight_next() else r.choice((0, 0, 0, 2, 4))
        if rows:
            lines[-1:] = ["    i, j = wp.tid()", f"    t = i * {rows} + j"]
        self.straight = self._straight_next
        # (a straight-line kernel interleaves only with few locals: 32 words, and a vec3d takes 6)
        counts = ((2, 1 if self.precision == "float32" else 0, 1) if self.straight else (NF, NV, NI))
        for k in range(counts[0]):
            lines.append(f"    a{k} = xf[t * {NF} + {k}]")
            scope.vars[f"a{k}"] = "f"
        for k in range(counts[1]):
            lines.append(f"    u{k} = xv[t * {NV} + {k}]")
            scope.vars[f"u{k}"] = "v"
        for k in range(counts[2]):
            lines.append(f"    n{k} = xi[t * {NI} + {k}]")
            scope.vars[f"n{k}"] = "i"
        inputs = set(scope.vars)
        if self.straight:  # inputs stay as read and are not written out (fewer locals, see value())
            scope.fixed |= inputs
        depth, self.depth_limit = self.depth_limit, (2 if self.straight else self.depth_limit)
        self.block(scope, lines, 1, r.randint(1, 3) if self.straight else r.randint(4, 10), 0)
        self.depth_limit = depth
        nf, ni = (0 if self.straight else 1), 0  # (out_f's slot 0: the atomics' sum)
        for v, k in scope.vars.items():
            if self.straight and v in inputs:
                continue
            if k == "s":
                parts = [f"{v}.a"] + [f"{v}.v[{c}]" for c in range(3)]
                for p in parts:
                    lines.append(f"    out_f[t * N_OUT_F + {nf}] = {p}")
                    nf += 1
                lines.append(f"    out_i[t * N_OUT_I + {ni}] = {v}.i")
                ni += 1
            elif k in FLOAT_TYPES:
                parts = [v] if k == "f" else [f"{v}[{c}]" for c in range(3 if k == "v" else 4)] if k != "m" else \
                    [f"{v}[{a}, {b}]" for a in range(3) for b in range(3)]
                for p in parts:
                    lines.append(f"    out_f[t * N_OUT_F + {nf}] = {p}")
                    nf += 1
            else:
                value = {"i": v, "w": f"wp.int32({v})", "b": f"wp.where({v}, 1, 0)"}[k]  # (w: wraps, as in C++)
                lines.append(f"    out_i[t * N_OUT_I + {ni}] = {value}")
                ni += 1
        src = "\n".join(lines).replace("N_OUT_F", str(nf)).replace("N_OUT_I", str(ni))
        self.straight = False
        return src, KernelInfo(name, nf, ni, rows)


def generate(seed: int, n_kernels: int = 4, n_funcs: int = 3, precision: str | None = None) -> Module:
    """One module of n_funcs @funcs and n_kernels kernels, the same for the same seed."""
    g = Generator(seed, precision)
    fields = "\n".join(f"    {f}: {dict(f=g.F, v=g.V, i='wp.int32')[k]}" for f, k in STRUCT_FIELDS.items())
    consts = (f"C_F = wp.constant({g.F}({g.rng.uniform(-2, 2):.4f}))\nC_I = wp.constant({g.rng.randint(-9, 9)})\n"
              f"C_V = wp.constant({g.V}({', '.join(f'{g.rng.uniform(-2, 2):.3f}' for _ in range(3))}))")
    parts = [consts, f"@wp.struct\nclass S:\n{fields}"] + [g.func() for _ in range(n_funcs)]
    mod = Module("", g.precision)
    for k in range(n_kernels):
        src, info = g.kernel(f"k{seed}_{k}")
        parts.append(src)
        mod.kernels.append(info)
    mod.source = "\n\n\n".join(parts) + "\n"
    return mod

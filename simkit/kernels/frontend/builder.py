"""FunctionBuilder: the state of translating one Python function to IR.

Holds the symbol table (Python name -> current SSA value), the statement
list being filled, name resolution (locals, closure, globals), and the single
place where calls are resolved against the builtin registry.
"""
from __future__ import annotations

import ast
import builtins as pybuiltins
import inspect
import textwrap

import numpy as np

from .. import ir
from .. import registry as R
from .. import types as T
from ..errors import CompileError, CompileTypeError


class CompileNameError(CompileError, KeyError):
    """A kernel reads a name that is defined nowhere (also a ``KeyError``, as Warp raises)."""

    __str__ = CompileError.__str__  # (not KeyError's repr of the message)


class Py:
    """A compile-time Python object met while evaluating an expression (module, function, type)."""

    __slots__ = ("obj",)

    def __init__(self, obj):
        self.obj = obj

    def __repr__(self):
        return f"Py({self.obj!r})"


class TupleValue(tuple):
    """Several values (a tuple expression, a tuple-returning function, a tuple parameter). A compile-time
    group of SSA values: indexing it takes one (with a constant index), a call passes its values one by
    one. To match a @func parameter it answers ``type``, ``weak`` and ``is_const`` as a Var does."""

    weak = False
    is_const = False
    const = None

    @property
    def type(self) -> T.TupleType:
        return T.TupleType(x.type for x in self)

    def is_values(self) -> bool:
        """Holds only values (Vars, or tuples of them): something a func can take."""
        return all(isinstance(x, ir.Var) or (isinstance(x, TupleValue) and x.is_values()) for x in self)

    def flat(self) -> list:
        """Its Vars in order, nested tuples flattened (as a func takes them)."""
        return [v for x in self for v in (x.flat() if isinstance(x, TupleValue) else [x])]


class ShapeOf:
    """``arr.shape`` in a kernel: only indexable with a constant."""

    __slots__ = ("array",)

    def __init__(self, array):
        self.array = array


class SourceInfo:
    """Source text, AST and scopes of one Python function."""

    def __init__(self, pyfunc):
        self.pyfunc = pyfunc
        try:
            lines, first = inspect.getsourcelines(pyfunc)
        except (OSError, TypeError) as e:
            raise CompileError(f"cannot read the source of '{pyfunc.__qualname__}': {e}") from None
        self.filename = inspect.getsourcefile(pyfunc) or "<unknown>"
        self.first_line = first
        self.lines = lines
        self.source = textwrap.dedent("".join(lines))
        self.indent = len(lines[0]) - len(lines[0].lstrip())
        tree = ast.parse(self.source)
        node = tree.body[0]
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            raise CompileError(f"'{pyfunc.__qualname__}' is not a function definition")
        self.node = node
        self.globals = pyfunc.__globals__
        self.closure = {}
        self.stale = False  # read the closure again before the next build (a @func it names was redefined)
        self.read_closure()

    def read_closure(self) -> None:
        """Read the closure's values (made: now; again by ``Module.mark_modified`` and after a redefinition of a
        @func that the function calls)."""
        self.stale = False
        if not self.pyfunc.__closure__:
            return
        for name, cell in zip(self.pyfunc.__code__.co_freevars, self.pyfunc.__closure__):
            try:
                self.closure[name] = cell.cell_contents
            except ValueError:  # empty cell
                self.closure.pop(name, None)

    def line_of(self, node) -> int:
        return self.first_line + getattr(node, "lineno", 1) - 1

    def text_of_line(self, abs_line: int) -> str:
        i = abs_line - self.first_line
        return self.lines[i] if 0 <= i < len(self.lines) else ""


# builtins that reach an indexed array's elements (through_indexed maps their indices)
INDEXED_ACCESS = {"load", "store", "store_component", "atomic_add", "atomic_sub", "atomic_min", "atomic_max",
                  "atomic_exch", "atomic_cas", "atomic_and", "atomic_or", "atomic_xor"}


class FunctionBuilder:
    """Translates one function (kernel body or @func specialisation) into ``ir.Function``."""

    def __init__(self, src: SourceInfo, *, name: str, is_kernel: bool, param_types: dict,
                 options: dict | None = None):
        self.src = src
        self.name = name
        self.is_kernel = is_kernel
        self.options = options or {}
        self.symbols: dict = {}
        self.blocks: list = [[]]
        self.vars: list = []
        self.params: list = []
        self.return_types: list | None = None
        self.uses_tid = 0
        self.funcs: list = []
        self.structs: list = []
        self.loop_depth = 0
        self.query_loops = 0   # (for-in-query loops: names of their hidden query variables)
        self.cur_node = src.node
        self._count = 0
        self.static_values: list = []  # evaluated static() expressions (hashed via codegen output)
        self.uses_grad = False  # grad(f)(...) in forward code (frontend/grad.py)
        self.declared_params = dict(param_types)
        self.ref_params: list = []  # ref[T] parameters (refs.py): returned after the results
        from ..codegen import cname

        for pname, ptype in param_types.items():
            self.symbols[pname] = self.param_value(cname(pname), pname, ptype)

    def param_value(self, cname: str, label: str, ptype):
        """The value of a parameter: a Var, or for a tuple a TupleValue of one parameter per element
        (``values_0``, ``values_1``...: a tuple is passed as its values)."""
        if isinstance(ptype, T.TupleType):
            return TupleValue(self.param_value(f"{cname}_{k}", f"{label}[{k}]", t) for k, t in enumerate(ptype.types))
        from .funcargs import FunctionArg  # (local: funcargs imports this module)

        if isinstance(ptype, FunctionArg):  # a Function parameter: the function itself, no runtime value
            return Py(ptype.target)
        v = ir.Var(cname, ptype, label=label, is_param=True)
        self.params.append(v)
        self.note_type(ptype)
        return v

    # ------------------------------------------------------------------ errors

    def error(self, message: str, node=None, cls=CompileError) -> CompileError:
        """The error to raise at ``node`` (``cls``: CompileError or its TypeError/ValueError forms)."""
        node = node or self.cur_node
        line = self.src.line_of(node)
        col = getattr(node, "col_offset", 0) + self.src.indent
        return cls(message, self.src.filename, line, col, self.src.text_of_line(line),
                   function=self.src.pyfunc.__qualname__)

    # ------------------------------------------------------------------ vars & statements

    def new_var(self, type, label=None, mutable=False) -> ir.Var:
        self._count += 1
        base = label if label and label.isidentifier() else "var"
        v = ir.Var(f"{base}_{self._count}", type, label=label, mutable=mutable)
        self.vars.append(v)
        self.note_type(type)
        return v

    def const(self, value, type=None, weak=False) -> ir.Var:
        if type is None:
            type, weak = const_type(value)
        if T.is_scalar(type):
            value = scalar_value(value, type, exact=weak)
        return ir.Var("const", type, const=value, is_const=True, weak=weak)

    def emit(self, stmt):
        stmt.line = self.src.line_of(self.cur_node)
        self.blocks[-1].append(stmt)
        return stmt

    def push_block(self):
        self.blocks.append([])

    def pop_block(self) -> list:
        return self.blocks.pop()

    def note_type(self, t):
        if T.is_struct(t) and t not in self.structs:
            for ft in t._simkit_struct.fields.values():
                self.note_type(ft)
            self.structs.append(t)
        elif isinstance(t, T.ArrayType) and T.is_struct(t.dtype):
            self.note_type(t.dtype)

    # ------------------------------------------------------------------ names

    def lookup(self, name: str, node):
        if name in self.symbols:
            return self.symbols[name]
        if name in self.src.closure:
            return self.to_value(self.src.closure[name])
        if name in self.src.globals:
            return self.to_value(self.src.globals[name])
        if hasattr(pybuiltins, name):
            return Py(getattr(pybuiltins, name))
        found = _language_name(name)
        if found is not None:  # a builtin or type named bare (``vec3(...)``, ``expect_eq``), as Warp allows
            return self.to_value(found)
        raise self.error(f"unknown name '{name}'", node, CompileNameError)

    def to_value(self, obj):
        """A Python object referenced from a kernel: constants become Vars, the rest stays Py."""
        if isinstance(obj, (bool, int, float, np.generic)) and not isinstance(obj, np.ndarray):
            # a Python number (a module constant like sk.pi) acts as a literal: it takes the precision of
            # what it meets (vec3d(sk.pi) keeps every digit); numpy scalars keep their own type
            t, weak = const_type(obj)
            return self.const(obj, t, weak=weak and not isinstance(obj, np.generic))
        if isinstance(obj, T.value_base):
            return self.const(tuple(np.asarray(obj).reshape(-1).tolist()), type(obj))
        return Py(obj)

    # ------------------------------------------------------------------ calls

    def through_indexed(self, key: str, args: list, node) -> list:
        """An element access of an indexed array: the same access of its data at the mapped indices."""
        a = args[0]
        if key in ("array_shape", "array_nonnull") and len(args) <= 2:
            return args
        if key not in INDEXED_ACCESS or not isinstance(a.type, T.IndexedArrayType) or any(
                isinstance(b.type, T.IndexedArrayType) for b in args[1:]):
            raise self.error(f"'{key}' does not take an indexed array: index one with all its indices (a[i, j]) to "
                             f"load, store or add atomically", node)
        n = a.type.ndim
        if len(args) <= n:
            raise self.error(f"an indexed array is indexed with all its {n} indices", node)
        data = self.new_var(T.ArrayType(a.type.dtype, n))
        self.emit(ir.GetField(out=data, src=a, field="data"))
        mapped = [self.call_builtin("indexed_index", [a, self.const(d, T.int32), i], node)
                  for d, i in enumerate(args[1:n + 1])]
        return [data] + mapped + args[n + 1:]

    def call_builtin(self, key: str, args: list, node=None, target=None, kw: dict | None = None):
        """Resolve ``key`` for these argument values, emit the call, return the result Var."""
        node = node or self.cur_node
        args = list(args)
        if kw:
            args = self._bind_kwargs(key, args, kw, node)
        for a in args:
            if not isinstance(a, ir.Var):
                raise self.error(f"'{key}' got an argument that is not a value: {describe(a)}", node)
        if key == "view" and isinstance(args[0].type, T.IndexedArrayType):
            key = "indexed_view"  # a[i] of a 2D indexed array: a 1D indexed array
        elif key not in ("indexed_index", "indexed_view") and any(
                isinstance(a.type, T.IndexedArrayType) for a in args):
            args = self.through_indexed(key, args, node)
        info = R.CallInfo([a.type for a in args], [], [a.const if a.is_const else None for a in args],
                          target)
        b = R.resolve(key, info)
        if b is None and any(a.weak for a in args):
            args = self.coerce_weak(args)
            info = R.CallInfo([a.type for a in args], [], [a.const if a.is_const else None for a in args],
                              target)
            b = R.resolve(key, info)
        if b is None:
            raise self.error(no_overload_message(key, info.arg_types), node, CompileTypeError)
        if len(args) < len(b.input_types) and all(  # trailing number defaults (expect_near's tolerance)
                isinstance(b.defaults.get(n), (int, float)) for n in list(b.input_types)[len(args):]):
            args = args + self._defaults(b, args)
            info = R.CallInfo([a.type for a in args], [], [a.const if a.is_const else None for a in args], target)
        try:
            ret = b.result_type(info)
        except TypeError as e:
            raise self.error(f"{key}: {e}", node) from None
        folded = self.fold(key, args, ret)
        if folded is not None:
            return folded
        if b.inout:
            args = self.inout_args(b, args, node, kw)
        if isinstance(ret, tuple):  # several results: the native function returns a struct {r0, r1, ...}
            outs = [self.new_var(t) for t in ret]
            self.emit(ir.Call(out=outs[0], outs=outs[1:], builtin=b, args=args, callee=b.callee(info, "auto"),
                              kind="builtin"))
            return TupleValue(outs)
        out = self.new_var(ret) if ret is not None else None
        callee = b.callee(info, ctype_or_void(ret))
        self.emit(ir.Call(out=out, builtin=b, args=args, callee=callee, kind="builtin"))
        if b.side_effects:
            for a in args:
                if not a.is_const and not a.is_param and T.is_scalar(a.type) and a.type is T.uint32:
                    a.ref = True
        return out

    # names whose current values a `while` condition may update in place (the loop's carried vars)
    inplace_vars: frozenset = frozenset()

    def inout_args(self, b, args, node, kw):
        """Arguments a builtin updates in place (``bvh_query_next(query, index)``) act as assignments.

        Each one is passed as a fresh mutable copy and the Python name it came from is rebound to
        that copy, so SSA values stay immutable (the adjoint's replay and loop restores rely on it).
        Inside a ``while`` condition a loop-carried var is updated in place instead: the adjoint
        records carried values after the condition, so the body sees the updated values."""
        names = list(b.input_types)
        nodes = list(node.args) if isinstance(node, ast.Call) else []
        if isinstance(node, ast.Call):
            nodes += [None] * (len(names) - len(nodes))
            for k in node.keywords:
                if k.arg in names:
                    nodes[names.index(k.arg)] = k.value
        args = list(args)
        for name in b.inout:
            i = names.index(name)
            if i >= len(args):
                continue
            a = args[i]
            if a.mutable and a in self.inplace_vars:
                continue
            m = self.new_var(a.type, label=a.label, mutable=True)
            self.emit(ir.Copy(out=m, src=a))
            args[i] = m
            src = nodes[i] if i < len(nodes) else None
            if isinstance(src, ast.Name) and src.id in self.symbols:
                self.symbols[src.id] = m
        return args

    def _defaults(self, b, args) -> list:
        """The values of the parameters after ``args`` that the call leaves out: their defaults, a float
        literal taking the floating type of the arguments before it."""
        floats = [T.scalar_of(a.type) for a in args if T.is_value(a.type) or T.is_float(a.type)]
        out = []
        for name in list(b.input_types)[len(args):]:
            v = self.to_value(b.defaults[name])
            out.append(self.literal_as(v, floats[0]) if floats and isinstance(v, ir.Var) else v)
        return out

    def _bind_kwargs(self, key, args, kw, node):
        ovs = R.overloads(key)
        if not ovs:
            raise self.error(f"'{key}' takes no keyword arguments", node)
        names = list(ovs[0].input_types)
        out = list(args) + [None] * max(0, len(names) - len(args))
        for k, v in kw.items():
            if k not in names:
                raise self.error(f"'{key}' has no argument '{k}' (arguments: {', '.join(names)})", node)
            out[names.index(k)] = v
        while out and out[-1] is None:
            out.pop()
        for i, v in enumerate(out):
            if v is None:
                d = ovs[0].defaults.get(names[i])
                if d is None:
                    raise self.error(f"'{key}' is missing argument '{names[i]}'", node)
                out[i] = self.to_value(d) if not isinstance(d, ir.Var) else d
        return out

    def literal_as(self, v, t):
        """``v`` as type ``t`` when it is an untyped literal that may take that type, else ``v`` unchanged.

        An int literal may become any int or float type; a float literal only a float type."""
        if (isinstance(v, ir.Var) and v.is_const and v.weak and T.is_scalar(v.type) and T.is_scalar(t)
                and t is not T.bool and (T.is_float(t) or not T.is_float(v.type))):
            return self.const(v.const, t)
        return v

    def unify_literals(self, a, b):
        """Two values of one type where an untyped literal can adapt to the other (``1.0`` / ``2``: float32)."""
        a = self.literal_as(a, b.type)
        return a, self.literal_as(b, a.type)

    def coerce_weak(self, args):
        """Give untyped literals the scalar type of the first typed operand (an array's: of its elements)."""
        target = None
        for a in args:
            if not a.weak and a.type is not T.bool:
                try:
                    target = T.scalar_of(a.type.dtype if isinstance(a.type, T.ArrayType) else a.type)
                except TypeError:
                    continue
                break
        if target is None or target is T.bool:
            return args
        out = []
        for a in args:
            if a.weak and T.is_scalar(a.type) and (T.is_float(target) or a.type is not T.float32):
                out.append(self.const(a.const, target))
            else:
                out.append(a)
        return out

    def fold(self, key, args, ret):
        """Constant-fold integer/float arithmetic on constants (needed for static loop bounds)."""
        if not args or not all(a.is_const and T.is_scalar(a.type) for a in args) or not T.is_scalar(ret):
            return None
        vals = [a.const for a in args]
        isint = T.is_int(ret)
        try:
            if key == "add":
                r = vals[0] + vals[1]
            elif key == "sub":
                r = vals[0] - vals[1]
            elif key == "mul":
                r = vals[0] * vals[1]
            elif key == "neg":
                r = -vals[0]
            elif key == "floordiv" and isint and vals[1] != 0:
                r = vals[0] // vals[1]
            elif key == "mod" and isint and vals[1] != 0:
                r = int(np.fmod(vals[0], vals[1]))
            elif key == "div" and isint and vals[1] != 0:
                r = int(vals[0] / vals[1]) if abs(vals[0]) < 2**52 else None
            elif key == "div" and not isint:
                r = vals[0] / vals[1] if vals[1] != 0 else None
            else:
                return None
        except Exception:
            return None
        if r is None:
            return None
        weak = all(a.weak for a in args)
        return self.const(r, ret, weak=weak)


def scalar_value(value, t, exact=False):
    """``value`` as a Python number of scalar type ``t``: integers wrap like C casts, floats round.

    ``exact`` keeps a float literal's full precision (an untyped literal may still become float64).
    """
    if t is T.bool:
        return bool(value)
    if T.is_int(t):
        bits = 8 * t._size
        if isinstance(value, (int, np.integer)):  # (a folded uint64 may pass 2**64: np.isfinite refuses it)
            v = int(value)
        else:
            v = int(value) if np.isfinite(value) else 0
        v &= (1 << bits) - 1
        return v - (1 << bits) if t._kind == "i" and v >= 1 << (bits - 1) else v
    if exact and isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    return float(np.float16(value)) if t is T.float16 else t(value).item()  # (bfloat16: types_bf16.scalar)


def const_type(value):
    """(type, weak) of a Python constant."""
    if isinstance(value, (bool, np.bool_)):
        return T.bool, False
    if isinstance(value, np.generic):
        return T.scalar_from_numpy(value.dtype), False
    if isinstance(value, int):
        if -(2**31) <= value < 2**31:
            return T.int32, True
        return T.int64, False
    if isinstance(value, float):
        return T.float32, True
    raise TypeError(f"unsupported constant {value!r}")


def ctype_or_void(t) -> str:
    from ..codegen import ctype

    return "void" if t is None else ctype(t)


def describe(a) -> str:
    if isinstance(a, ir.Var):
        return T.type_name(a.type)
    if isinstance(a, Py):
        return repr(a.obj)
    return type(a).__name__


OPERATOR_SYMBOLS = {"add": "+", "sub": "-", "mul": "*", "div": "/", "floordiv": "//", "mod": "%", "pow": "**",
                    "lt": "<", "le": "<=", "gt": ">", "ge": ">=", "eq": "==", "ne": "!=", "bit_and": "&",
                    "bit_or": "|", "bit_xor": "^", "lshift": "<<", "rshift": ">>"}


def no_overload_message(key, arg_types) -> str:
    got = ", ".join(T.type_name(t) for t in arg_types)
    if key in OPERATOR_SYMBOLS and len(arg_types) == 2:
        a, b = (T.type_name(t) for t in arg_types)
        hint = "; convert one operand explicitly, e.g. float(x)" if a != b else ""
        return f"operator {OPERATOR_SYMBOLS[key]} is not defined for {a} and {b}{hint}"
    ovs = R.overloads(key)
    if not ovs:
        return f"'{key}' is not a builtin"
    sigs = []
    for b in ovs[:6]:
        sigs.append(f"{key}(" + ", ".join(f"{n}: {T.type_name(t)}" for n, t in b.input_types.items()) + ")")
    more = f" (and {len(ovs) - 6} more)" if len(ovs) > 6 else ""
    return f"no overload of '{key}' takes ({got}); candidates: " + "; ".join(sigs) + more


def _language_name(name: str):
    """The kernel builtin or type that ``name`` stands for when a kernel uses it unqualified."""
    from .. import api
    from .. import types as T

    fn = api.builtin_functions().get(name)
    if fn is not None:
        return fn
    t = getattr(T, name, None)
    return t if isinstance(t, type) and (T.is_value(t) or T.is_scalar(t)) else None

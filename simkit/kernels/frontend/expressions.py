"""Expression translation: one ``expr_<NodeType>`` method per AST expression node."""
from __future__ import annotations

import ast
import builtins as pybuiltins
import enum
import operator

import numpy as np

from .. import ir
from .. import registry as R
from .. import types as T
from ..api import GradOf
from ..errors import CompileLimitError, CompileTypeError, CompileValueError
from .builder import Py, ShapeOf, TupleValue, describe
from .slices import has_slice
from .refargs import takes_refs
from .statics import RESOLVED, evaluate as evaluate_static

BINOPS = {
    ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.Div: "div", ast.FloorDiv: "floordiv",
    ast.Mod: "mod", ast.Pow: "pow", ast.MatMult: "mul", ast.BitAnd: "bit_and", ast.BitOr: "bit_or",
    ast.BitXor: "bit_xor", ast.LShift: "lshift", ast.RShift: "rshift",
}
UNARYOPS = {ast.USub: "neg", ast.UAdd: "pos", ast.Invert: "invert"}
CMPOPS = {ast.Lt: "lt", ast.LtE: "le", ast.Gt: "gt", ast.GtE: "ge", ast.Eq: "eq", ast.NotEq: "ne"}

# Python builtins usable in kernels, mapped to registry keys
PY_BUILTINS = {pybuiltins.abs: "abs", pybuiltins.min: "min", pybuiltins.max: "max",
               pybuiltins.round: "round", pybuiltins.pow: "pow", pybuiltins.print: "print"}
PY_TYPES = {pybuiltins.int: T.int32, pybuiltins.float: T.float32, pybuiltins.bool: T.bool}

COMPONENTS = {"x": 0, "y": 1, "z": 2, "w": 3}

STATIC_CMP = {ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt, ast.LtE: operator.le,
              ast.Gt: operator.gt, ast.GtE: operator.ge, ast.Is: operator.is_, ast.IsNot: operator.is_not,
              ast.In: lambda a, b: a in b, ast.NotIn: lambda a, b: a not in b}


class ExpressionMixin:
    def eval(self, node):
        method = getattr(self, "expr_" + type(node).__name__, None)
        if method is None:
            raise self.error(f"unsupported expression '{type(node).__name__}' in a kernel", node)
        prev, self.cur_node = self.cur_node, node
        try:
            return method(node)
        finally:
            self.cur_node = prev

    def eval_value(self, node) -> ir.Var:
        """Evaluate to a single runtime value (Var) or raise a CompileError."""
        v = self.eval(node)
        if isinstance(v, ir.Var):
            return v
        if isinstance(v, Py):
            raise self.error(f"'{ast.unparse(node)}' is {describe(v)}, not a value usable here", node)
        raise self.error(f"'{ast.unparse(node)}' is not a single value", node)

    # ------------------------------------------------------------------ leaves

    def expr_Constant(self, node):
        if isinstance(node.value, (bool, int, float)):
            return self.const(node.value)
        if isinstance(node.value, str):
            return Py(node.value)
        if node.value is None:
            return Py(None)
        raise self.error(f"unsupported constant {node.value!r}", node)

    def expr_Name(self, node):
        return self.lookup(node.id, node)

    def expr_Tuple(self, node):
        return TupleValue(self.eval(e) for e in node.elts)

    expr_List = expr_Tuple

    def expr_Attribute(self, node):
        attr = node.attr
        if attr == "value" and isinstance(node.value, ast.Attribute):    # an Enum member's .value
            owner = self.eval(node.value.value)
            member = getattr(owner.obj, node.value.attr, None) if isinstance(owner, Py) else None
            if isinstance(member, enum.Enum):
                return self.to_value(member.value)
        base = self.eval(node.value)
        if isinstance(base, Py):
            if T.is_value(base.obj) and attr in self.TYPE_ATTRIBUTES:
                return self.type_attribute(base.obj, attr)
            try:
                return self.to_value(getattr(base.obj, attr))
            except AttributeError:
                py = getattr(pybuiltins, attr, None)
                if getattr(base.obj, "__name__", None) == "simkit" and py is not None and py in PY_TYPES:
                    return Py(py)  # wp.float(x) / wp.int(x) in kernels: Warp's builtin casts (not module names)
                raise self.error(f"'{ast.unparse(node.value)}' has no attribute '{attr}'", node) from None
        if isinstance(base, ir.Var):
            t = base.type
            if isinstance(t, T.ArrayType):
                if attr == "shape":
                    return ShapeOf(base)
                if attr == "ndim":
                    return self.const(t.ndim)
                if attr == "dtype":
                    return Py(t.dtype)
                if attr == "ptr":  # the address of its first element (array(ptr=...) views memory anew)
                    return self.call_builtin("array_ptr", [base], node)
                raise self.error(f"arrays have no attribute '{attr}' in kernels (use .shape, .ndim, .dtype, .ptr)",
                                 node)
            if T.is_struct(t):
                fields = t._simkit_struct.fields
                if attr not in fields:
                    raise self.error(f"struct '{t.__name__}' has no field '{attr}' "
                                     f"(fields: {', '.join(fields)})", node)
                out = self.new_var(fields[attr])
                self.emit(ir.GetField(out=out, src=base, field=attr))
                return out
            if T.is_transform(t) and attr in ("p", "q"):
                key = "transform_get_translation" if attr == "p" else "transform_get_rotation"
                return self.call_builtin(key, [base], node)
            if T.is_value(t) and attr in self.TYPE_ATTRIBUTES:
                return self.type_attribute(t, attr)
            if (T.is_vector(t) or T.is_quat(t)) and attr in COMPONENTS:
                i = COMPONENTS[attr]
                if i >= t._length:
                    raise self.error(f"{T.type_name(t)} has no component '{attr}'", node)
                return self.call_builtin("extract", [base, self.const(i)], node)
        raise self.error(f"'{ast.unparse(node.value)}' ({describe(base)}) has no attribute '{attr}'", node)

    TYPE_ATTRIBUTES = ("dtype", "length", "shape")

    def type_attribute(self, t, attr):
        """``v.dtype``, ``v.length``, ``m.shape`` of a vector/matrix/quaternion/transform value or type:
        compile-time constants (generic code builds other types from them)."""
        if attr == "dtype":
            return Py(t._dtype)
        if attr == "shape":
            return TupleValue(self.const(n) for n in t._shape)
        return self.const(t._shape[0] if len(t._shape) == 1 else t._shape[0] * t._shape[1])

    # ------------------------------------------------------------------ operators

    def expr_BinOp(self, node):
        key = BINOPS.get(type(node.op))
        if key is None:
            raise self.error(f"unsupported operator {type(node.op).__name__}", node)
        return self.call_operator(key, [self.eval_value(node.left), self.eval_value(node.right)], node)

    def call_operator(self, key, args, node):
        """An operator: the builtin ``key``, or for structs (as in Warp) the @func named ``key`` (``add`` for
        ``+``, ``mul`` for ``*``, ``neg``, ``lt``...) in the function's scope."""
        from ..decorators import Function  # local: decorators import the compiler

        structs = [a.type for a in args if T.is_struct(a.type)]
        if not structs:
            return self.call_builtin(key, args, node)
        fn = self.src.closure.get(key, self.src.globals.get(key))
        if not isinstance(fn, Function):
            raise self.error(f"operator '{key}' on struct '{structs[0].__name__}': define a @func named '{key}' "
                             f"taking it", node)
        return self.call_func(fn, args, {}, node)

    def expr_UnaryOp(self, node):
        if isinstance(node.op, ast.Not):
            v = self.eval_value(node.operand)
            return self.call_builtin("logical_not", [self.to_bool(v, node) if isinstance(v.type, T.ArrayType) else v],
                                     node)
        return self.call_operator(UNARYOPS[type(node.op)], [self.eval_value(node.operand)], node)

    def expr_Compare(self, node):
        operands = [self.eval(node.left)] + [self.eval(c) for c in node.comparators]
        if any(isinstance(o, Py) for o in operands):
            return self.compare_static(node, operands)
        for o, n in zip(operands, [node.left] + node.comparators):
            if not isinstance(o, ir.Var):
                raise self.error(f"'{ast.unparse(n)}' is not a single value", n)
        result = None
        for op, left, right in zip(node.ops, operands, operands[1:]):
            key = CMPOPS.get(type(op))
            if key is None:
                raise self.error(f"unsupported comparison {type(op).__name__}", node)
            r = self.call_operator(key, self.comparable(left, right, node), node)
            result = r if result is None else self.call_builtin("logical_and", [result, r], node)
        return result

    def comparable(self, left, right, node):
        """``[left, right]`` in one scalar type: comparisons of different scalar types (``d < radius``
        with a float and an int) compare as Warp's generated C++ does, in C's common type of the two
        (an int with a float as that float; int32 with uint32 as uint32)."""
        lt, rt = left.type, right.type
        if lt is rt or left.weak or right.weak or not (T.is_scalar(lt) and T.is_scalar(rt)) or T.bool in (lt, rt):
            return [left, right]
        common = c_common_type(lt, rt)
        return [v if v.type is common else self.call_builtin("cast", [v], node, target=common) for v in (left, right)]

    def compare_static(self, node, operands):
        """Comparisons of compile-time Python objects (``type(x) == float``, ``static(mode) == "fast"``,
        ``x is None``) are evaluated now, to a constant bool."""
        for o, n in zip(operands, [node.left] + node.comparators):
            if isinstance(o, ir.Var) and not o.is_const:
                raise self.error(f"'{ast.unparse(n)}' is a runtime value; it cannot be compared with a "
                                 f"compile-time object", n)
        py = [o.obj if isinstance(o, Py) else o.const for o in operands]
        py = [PY_TYPES.get(o, o) if isinstance(o, type) else o for o in py]  # float is float32 in kernels
        try:
            result = all(STATIC_CMP[type(op)](a, b) for op, a, b in zip(node.ops, py, py[1:]))
        except Exception as e:
            raise self.error(f"cannot compare {py[0]!r} at compile time: {type(e).__name__}: {e}", node) from None
        return self.const(bool(result))

    def expr_BoolOp(self, node):
        # short-circuit: later operands are evaluated only when needed
        is_and = isinstance(node.op, ast.And)
        first = self.to_bool(self.eval_value(node.values[0]), node)
        if len(node.values) == 1:
            return first
        rest = ast.BoolOp(op=node.op, values=node.values[1:])
        ast.copy_location(rest, node.values[1])
        phi = self.new_var(T.bool, mutable=True)
        self.emit(ir.Copy(out=phi, src=first))
        self.push_block()
        self.emit(ir.Copy(out=phi, src=self.to_bool(self.eval_value(rest), node)))
        body = self.pop_block()
        cond = phi if is_and else self.call_builtin("logical_not", [phi], node)
        self.emit(ir.If(cond=cond, body=body, orelse=[]))
        return phi

    def to_bool(self, v, node):
        if v.type is T.bool:
            return v
        if isinstance(v.type, T.ArrayType):     # `if arr:` an array is true unless it is None (null)
            return self.call_builtin("array_nonnull", [v], node)
        return self.call_builtin("nonzero_bool", [v], node)

    def expr_IfExp(self, node):
        cond = self.to_bool(self.eval_value(node.test), node)
        self.push_block()
        a = self.eval_value(node.body)
        body = self.pop_block()
        self.push_block()
        b = self.eval_value(node.orelse)
        orelse = self.pop_block()
        if a.type is not b.type:
            a, b = self.unify_literals(a, b)
            if a.type is not b.type:
                raise self.error(f"the two branches of this conditional expression have different types "
                                 f"({T.type_name(a.type)} and {T.type_name(b.type)})", node)
        phi = self.new_var(a.type, mutable=True)
        body.append(ir.Copy(line=self.src.line_of(node), out=phi, src=a))
        orelse.append(ir.Copy(line=self.src.line_of(node), out=phi, src=b))
        self.emit(ir.If(cond=cond, body=body, orelse=orelse))
        return phi

    # ------------------------------------------------------------------ indexing

    def index_values(self, slice_node):
        if isinstance(slice_node, ast.Slice):
            raise self.error("slices are not supported inside kernels; index with integers", slice_node)
        if isinstance(slice_node, ast.Tuple):
            idx = [self.eval_value(e) for e in slice_node.elts]
        else:
            v = self.eval(slice_node)
            idx = list(v) if isinstance(v, TupleValue) else [v]
        for i, v in enumerate(idx):
            if not isinstance(v, ir.Var) or not (T.is_int(v.type)):
                raise self.error(f"index {i} is {describe(v)}; indices must be integers", slice_node)
        return idx

    def expr_Subscript(self, node):
        base = self.eval(node.value)
        if isinstance(base, ShapeOf):
            idx = self.index_values(node.slice)
            if len(idx) != 1:
                raise self.error("shape takes one index", node)
            return self.call_builtin("array_shape", [base.array, idx[0]], node)
        if isinstance(base, TupleValue):
            k = self.eval_value(node.slice)
            if not k.is_const:
                raise self.error("tuples can only be indexed with constants", node)
            if not -len(base) <= k.const < len(base):
                raise self.error(f"tuple index {k.const} is out of range for a tuple of {len(base)} values", node)
            return base[k.const]
        if isinstance(base, Py):
            # generic type subscript in kernels is not supported; static indexing of Python sequences is
            k = self.eval_value(node.slice)
            if k.is_const and isinstance(base.obj, (list, tuple)):
                return self.to_value(base.obj[k.const])
            raise self.error(f"cannot index {describe(base)} in a kernel", node)
        if isinstance(base, ir.Var) and T.is_value(base.type) and has_slice(node.slice):
            return self.read_slice(base, node.slice, node)
        if isinstance(base, ir.Var) and isinstance(base.type, T.ArrayType) and has_slice(node.slice):
            return self.array_slice(base, node.slice, node)
        idx = self.index_values(node.slice)
        t = base.type
        if isinstance(t, T.ArrayType):
            if len(idx) > t.ndim:
                raise self.error(f"too many indices ({len(idx)}) for a {t.ndim}D array", node)
            if len(idx) == t.ndim:
                return self.call_builtin("load", [base] + idx, node)
            return self.call_builtin("view", [base] + idx, node)
        if T.is_value(t):
            return self.call_builtin("extract", [base] + idx, node)
        raise self.error(f"cannot index a value of type {T.type_name(t)}", node)

    SLICE_NONE = -(2**31)   # an omitted slice bound (native/array.h SK_SLICE_NONE)

    def array_slice(self, base, slice_node, node):
        """``a[1:3]``, ``a[:, 0]``, ``a[::-2, i]``: a strided view of the array (its kernel is then built
        for strided addressing: ``analysis.uses_array_slices``)."""
        items = slice_node.elts if isinstance(slice_node, ast.Tuple) else [slice_node]
        if len(items) > base.type.ndim:
            raise self.error(f"too many indices ({len(items)}) for a {base.type.ndim}D array", node)
        code, vals = 0, []
        for d, item in enumerate(items):
            if isinstance(item, ast.Slice):
                code |= 2 << (2 * d)
                step = self.slice_int(item.step, 1)
                if step.is_const and step.const == 0:
                    raise self.error("slice step cannot be zero", item, CompileValueError)
                vals += [self.slice_int(item.lower, self.SLICE_NONE), self.slice_int(item.upper, self.SLICE_NONE), step]
            else:
                code |= 1 << (2 * d)
                vals += [self.slice_int(item, None), self.const(0, T.int32), self.const(0, T.int32)]
        return self.call_builtin("array_slice", [base, self.const(code, T.int32)] + vals, node)

    def slice_int(self, item, default):
        if item is None:
            return self.const(default, T.int32)
        v = self.eval_value(item)
        if not T.is_int(v.type):
            raise self.error(f"array slice bounds and indices must be integers, got {T.type_name(v.type)}", item)
        if v.is_const:
            return self.const(int(v.const), T.int32)
        return v if v.type is T.int32 else self.call_builtin("cast", [v], item, target=T.int32)

    # ------------------------------------------------------------------ calls

    def expr_Call(self, node):
        if getattr(node, RESOLVED, None) is not None:  # static(...) resolved at declaration (statics.py)
            return self.eval_static(node)
        fn = self.eval(node.func)
        if not isinstance(fn, Py):
            raise self.error(f"'{ast.unparse(node.func)}' is not callable", node)
        obj = fn.obj
        from ..decorators import Function, Kernel  # local: decorators import the compiler

        name = getattr(obj, "__name__", repr(obj))
        if isinstance(obj, Kernel):
            raise self.error(f"kernel '{name}' cannot be called from a kernel; make it a @func", node)
        if getattr(obj, "_simkit_static", False):
            return self.eval_static(node)
        if obj is pybuiltins.len:
            return self.eval_len(node)
        if obj is pybuiltins.type:  # type(x): the type of a value, usable as a constructor (generic code)
            if len(node.args) != 1 or node.keywords:
                raise self.error("type() takes one argument in kernels", node)
            return Py(self.eval_value(node.args[0]).type)
        if obj is pybuiltins.range:
            raise self.error("range() is only allowed as a for-loop iterator", node)
        if getattr(obj, "_simkit_address_of", False):  # address_of(storage) (refargs.py)
            return self.eval_address_of(node)
        if isinstance(obj, Function) and takes_refs(obj):  # ref[T] parameters (refargs.py)
            return self.call_ref_func(obj, node)
        args = [v for a in node.args
                for v in (self.unpack_starred(a) if isinstance(a, ast.Starred) else [self.eval(a)])]
        kw = {k.arg: self.eval(k.value) for k in node.keywords}
        args = [self.type_arg(a) for a in args]
        kw = {k: self.type_arg(v) for k, v in kw.items()}
        if isinstance(obj, Function):
            return self.call_func(obj, args, kw, node)
        if obj is GradOf:  # grad(f): a callable for the gradient of f (frontend/grad.py)
            if len(args) != 1 or kw or not isinstance(args[0], Py):
                raise self.error("grad() takes one function: grad(f)(x, ...)", node)
            return Py(GradOf(args[0].obj))
        if isinstance(obj, GradOf):
            return self.call_grad(obj.fn, args, node)
        key = getattr(obj, "_simkit_builtin", None)
        if key == "tid":
            return self.eval_tid(node)
        if key == "printf":
            return self.eval_printf(args, node)
        if (key == "print" or obj is pybuiltins.print) and len(args) == 1 and isinstance(args[0], Py) and \
                isinstance(args[0].obj, str):  # print("text"): the text and a newline
            return self.eval_printf([Py(args[0].obj.replace("%", "%%") + "\n")], node)
        if key is not None:
            return self.call_builtin(key, args, node, kw=kw)
        in_kernel = getattr(obj, "_simkit_in_kernel", None)
        if in_kernel is not None:  # zeros / empty: a fixed-size array (fixed_arrays.py)
            return self.eval_fixed_array(in_kernel, args, kw, node)
        if obj in PY_BUILTINS:
            return self.call_builtin(PY_BUILTINS[obj], args, node, kw=kw)
        if obj in (T.vector, T.matrix, T.quaternion, T.transformation):
            return self.generic_construct(obj, args, kw, node)
        target = PY_TYPES.get(obj, obj)
        if T.is_scalar(target) or T.is_value(target) or T.is_struct(target):
            return self.construct(target, args, kw, node)
        raise self.error(f"'{ast.unparse(node.func)}' ({describe(fn)}) cannot be called in a kernel", node)

    def unpack_starred(self, node) -> list:
        """``f(*v)``: the components of a vector or quaternion, the rows of a matrix, the values of a tuple,
        or the elements of an array slice with constant bounds (``*arr[:3]``)."""
        inner = node.value
        if isinstance(inner, ast.Subscript) and isinstance(inner.slice, ast.Slice):
            base = self.eval(inner.value)
            if isinstance(base, ir.Var) and isinstance(base.type, T.ArrayType):
                if base.type.ndim != 1:
                    raise self.error("*arr[a:b] unpacks slices of 1D arrays only", node)
                bounds = [self.slice_int(b, None) if b is not None else None
                          for b in (inner.slice.lower, inner.slice.upper, inner.slice.step)]
                if any(b is not None and not b.is_const for b in bounds):
                    raise self.error("*arr[a:b]: each slice component must be a compile-time constant", node,
                                     CompileValueError)
                start, stop, step = (b.const if b is not None else None for b in bounds)
                if stop is None:
                    raise self.error("*arr[a:b]: unpacking an array slice requires explicit upper bound (the "
                                     "array's length is not known at compile time)", node, CompileValueError)
                if stop < 0 or (start or 0) < 0:
                    raise self.error("*arr[a:b]: slice bounds cannot be negative for arrays (their length is not "
                                     "known at compile time)", node, CompileValueError)
                if (step or 1) < 0:
                    raise self.error("*arr[a:b]: the slice step cannot be negative", node, CompileValueError)
                if step == 0:
                    raise self.error("slice step cannot be zero", node, CompileValueError)
                return [self.call_builtin("load", [base, self.const(i, T.int32)], node)
                        for i in range(start or 0, stop, step or 1)]
        v = self.eval(inner)
        if isinstance(v, TupleValue):
            return list(v)
        if isinstance(v, ir.Var) and T.is_value(v.type):
            n = v.type._shape[0]
            return [self.call_builtin("extract", [v, self.const(i, T.int32)], node) for i in range(n)]
        raise self.error(f"cannot unpack {describe(v)}: Starred expressions are only supported for vectors, "
                         f"quaternions, matrices (their rows), tuples and array slices", node, CompileTypeError)

    def type_arg(self, a):
        """Types passed as arguments (``dtype=float``) become compile-time constants."""
        if isinstance(a, Py):
            t = PY_TYPES.get(a.obj, a.obj)
            if T.is_scalar(t) or T.is_value(t) or T.is_struct(t):
                return ir.Var("type", T.Any, const=t, is_const=True)
        return a

    def construct(self, target, args, kw, node):
        if T.is_struct(target):
            return self.construct_struct(target, args, kw, node)
        if kw:
            args = self.constructor_keywords(target, list(args), dict(kw), node)
        for a in args:
            if not isinstance(a, ir.Var):
                raise self.error(f"{T.type_name(target)}() argument is {describe(a)}", node)
        if T.is_value(target) and target._generic:
            raise self.error(f"cannot construct generic type {T.type_name(target)}", node)
        if T.is_value(target) and len(args) == target._length and len(args) > 1 and all(
                T.is_scalar(a.type) for a in args):
            s = target._dtype
            comps = [self.const(a.const, s) if a.is_const else a for a in args]
            for i, a in enumerate(comps):
                if a.type is not s:
                    comps[i] = self.call_builtin("cast", [a], node, target=s)
            out = self.new_var(target)
            self.emit(ir.Call(out=out, args=comps, callee=f"sk::make<{self.ctype(target)}>", kind="make"))
            return out
        key = "cast" if T.is_scalar(target) else target._kind
        if key == "cast" and len(args) == 1 and args[0].is_const and T.is_scalar(args[0].type):
            return self.const(args[0].const, target)
        if T.is_value(target):  # literals take the target's precision (vec3d(1.00000005) keeps its digits)
            args = [self.const(a.const, target._dtype) if a.is_const and a.weak and T.is_scalar(a.type) else a
                    for a in args]
        return self.call_builtin(key, args, node, target=target)

    def constructor_keywords(self, target, args, kw, node):
        """Keywords of a typed constructor: ``shape=`` / ``length=`` / ``dtype=`` (which must agree with the
        type) and a transform's ``p=`` and ``q=`` (q defaults to the identity rotation)."""
        name = T.type_name(target)
        if T.is_value(target):
            for key, have in (("shape", target._shape), ("length", target._shape[0]), ("dtype", target._dtype)):
                if key not in kw or (key == "length" and target._kind != "vector"):
                    continue
                v = kw.pop(key)
                want = tuple(x.const for x in v) if isinstance(v, TupleValue) else getattr(v, "const", v)
                want = PY_TYPES.get(want, want)
                if want != have:
                    raise self.error(f"{name}(): {key}={want!r} does not match the type's {have!r}", node)
        if T.is_value(target) and target._kind == "transformation" and ("p" in kw or "q" in kw or len(args) == 1):
            if len(args) == 1 and T.is_value(args[0].type) and args[0].type._kind == "transformation":
                pass                                          # a copy / conversion
            elif len(args) > 2 or (args and "p" in kw) or (len(args) > 1 and "q" in kw):
                raise self.error(f"{name}(p, q): p and q given twice", node)
            else:
                p = args[0] if args else kw.pop("p", None)
                q = args[1] if len(args) > 1 else kw.pop("q", None)
                if p is None:
                    p = self.construct(T.vector(3, target._dtype), [], {}, node)
                if q is None:
                    q = self.call_builtin("quat_identity", [self.type_arg(Py(target._dtype))], node)
                args = [p, q]
        if kw:
            raise self.error(f"{name}() got unexpected keyword arguments: {', '.join(kw)}", node)
        return args

    def construct_struct(self, target, args, kw, node):
        """``S()`` is zero-initialised; ``S(a, b=...)`` sets fields in declaration order / by name."""
        fields = target._simkit_struct.fields
        names = list(fields)
        if len(args) > len(names):
            raise self.error(f"struct '{target.__name__}' has {len(names)} fields, got {len(args)} arguments", node)
        values = dict(zip(names, args))
        for k, v in kw.items():
            if k not in fields:
                raise self.error(f"struct '{target.__name__}' has no field '{k}' (fields: {', '.join(names)})", node)
            if k in values:
                raise self.error(f"field '{k}' of struct '{target.__name__}' given twice", node)
            values[k] = v
        out = self.new_var(target)
        self.emit(ir.Call(out=out, args=[], callee=f"sk::zero<{self.ctype(target)}>", kind="make"))
        for name, v in values.items():
            if not isinstance(v, ir.Var):
                raise self.error(f"field '{name}' of struct '{target.__name__}' got {describe(v)}", node)
            ft = fields[name]
            if v.type != ft:
                v = self.literal_as(v, ft)
                if v.type != ft:  # (array types are equal, not identical)
                    raise self.error(f"field '{name}' is {T.type_name(ft)}, got {T.type_name(v.type)}", node)
            new = self.new_var(target)
            self.emit(ir.SetField(out=new, src=out, field=name, value=v))
            out = new
        return out

    def generic_construct(self, factory, args, kw, node):
        """``vector(x, y, z)``, ``vector(length=3, dtype=float)``, ``matrix(..., shape=(2, 2))``."""
        def const_kw(name):
            v = kw.pop(name, None)
            if v is None:
                return None
            if isinstance(v, TupleValue) and all(isinstance(x, ir.Var) and x.is_const for x in v):
                return tuple(x.const for x in v)
            if not (isinstance(v, ir.Var) and v.is_const):
                raise self.error(f"{factory.__name__}(): '{name}' must be a compile-time constant", node)
            return v.const
        dtype = const_kw("dtype")
        pq = {k: kw.pop(k) for k in ("p", "q") if k in kw} if factory is T.transformation else {}
        if kw and factory is T.vector:
            length = const_kw("length")
        elif kw and factory is T.matrix:
            length = const_kw("shape")
        else:
            length = None
        if kw:
            raise self.error(f"{factory.__name__}() got unexpected arguments: {', '.join(kw)}", node)
        values = [a for a in args if isinstance(a, ir.Var)]
        if len(values) != len(args) or not all(isinstance(a, ir.Var) for a in pq.values()):
            raise self.error(f"{factory.__name__}() arguments must be values", node)
        if dtype is None:
            typed = [a.type for a in values + list(pq.values()) if not a.weak]
            dtype = T.scalar_of(typed[0]) if typed else T.float32
        dtype = PY_TYPES.get(dtype, dtype)
        like = values[0].type if len(values) == 1 and T.is_value(values[0].type) else None
        if factory is T.vector:
            n = length if length is not None else (len(values) if len(values) > 1 else None)
            if n is None and like is not None and like._kind == "vector":
                n = like._length                              # vector(v): a copy / conversion
            if n is None:
                raise self.error("vector(x) needs length=: vector(x, length=3)", node)
            target = T.vector(n, dtype)
        elif factory is T.matrix:
            if length is None and like is not None and like._kind == "matrix":
                length = like._shape
            if length is None:
                raise self.error("matrix(...) needs shape=(rows, cols)", node)
            target = T.matrix(tuple(length), dtype)
        else:
            target = factory(dtype)
        return self.construct(target, values, pq, node)

    def eval_len(self, node):
        if len(node.args) != 1:
            raise self.error("len() takes one argument", node)
        v = self.eval(node.args[0])
        if isinstance(v, TupleValue):
            return self.const(len(v))
        v = self.eval_value(node.args[0])
        if T.is_value(v.type):
            return self.const(v.type._shape[0])
        if isinstance(v.type, T.ArrayType):
            return self.call_builtin("array_shape", [v, self.const(0)], node)
        raise self.error(f"len() of {T.type_name(v.type)}", node)

    def eval_static(self, node):
        value = self.static_value(node)
        if T.is_struct(type(value)):
            return self.static_struct(value, type(value).__name__, node)
        return self.to_value(value)

    def static_struct(self, value, path, node):
        """A struct instance that ``static(...)`` returned, built in the kernel field by field."""
        t = type(value)
        values = {}
        for name, ft in t._simkit_struct.fields.items():
            f = getattr(value, name)
            if isinstance(ft, T.ArrayType):
                if f is None:
                    continue  # (a null array, as a zeroed struct holds)
                raise self.error(f"static() returned a struct holding an array ({path}.{name}); arrays cannot be "
                                 f"created inside kernels: pass the struct as a kernel argument", node)
            if T.is_struct(ft):
                values[name] = self.static_struct(f, f"{path}.{name}", node)
            elif T.is_scalar(ft):
                values[name] = self.const(f.value if hasattr(f, "value") else f, ft)
            else:
                values[name] = self.const(tuple(float(x) if T.is_float(ft._dtype) else int(x)
                                                for x in np.asarray(f).reshape(-1).tolist()), ft)
        return self.construct_struct(t, [], values, node)

    def static_value(self, node):
        """The Python value of ``static(expr)``: the one found when the function was declared, else (it reads
        a local) evaluated now, in the function's global/closure scope and its locals (see statics.py)."""
        if len(node.args) != 1 or node.keywords:
            raise self.error("static() takes one expression", node)
        expr = ast.unparse(node.args[0])
        found = getattr(node, RESOLVED, None)
        if found is not None:
            kind, value = found
            if kind == "error":
                raise self.error(f"static({expr}) failed: {type(value).__name__}: {value}", node)
        else:
            scope = dict(self.src.globals)
            scope.update(self.src.closure)
            for name, v in self.symbols.items():  # locals, as Warp sees them: constants by value, others by type
                if isinstance(v, (Py, TupleValue, ir.Var)):
                    scope[name] = _static_local(name, v)
            try:
                value = evaluate_static(node.args[0], scope, self.src.filename)
            except Exception as e:  # pragma: no cover - message path
                raise self.error(f"static({expr}) failed: {type(e).__name__}: {e}", node) from None
        self.static_values.append((expr, repr(value)))
        return value

    def eval_tid(self, node):
        target_count = getattr(self, "_tid_targets", 1)
        outs = [self.new_var(T.int32, label="tid") for _ in range(target_count)]
        self.uses_tid = max(self.uses_tid, target_count)
        if not self.is_kernel:
            raise self.error("tid() can only be called in a kernel", node)
        self.emit(ir.Tid(outs=outs))
        return outs[0] if target_count == 1 else TupleValue(outs)

    #: CUDA's printf takes at most this many values after the format (it drops the rest silently)
    PRINTF_MAX_ARGS = 32

    def eval_printf(self, args, node):
        if not args or not isinstance(args[0], Py) or not isinstance(args[0].obj, str):
            raise self.error("printf() needs a format string literal first", node)
        if len(args) - 1 > self.PRINTF_MAX_ARGS:
            raise self.error(f"the maximum number of variadic arguments that can be passed to `printf` is "
                             f"{self.PRINTF_MAX_ARGS}", node, CompileLimitError)
        vals = []
        for a in args[1:]:
            if not isinstance(a, ir.Var) or not T.is_scalar(a.type):
                raise self.error(f"printf() arguments must be scalars, got {describe(a)}", node)
            vals.append(a)
        fmt = '"' + args[0].obj.encode("unicode_escape").decode().replace('"', '\\"') + '"'
        self.emit(ir.Call(out=None, args=vals, callee=fmt, kind="printf"))
        return None

    def ctype(self, t):
        from ..codegen import ctype

        return ctype(t)


def is_builtin_key(key: str) -> bool:
    return R.is_builtin(key)


def c_common_type(a, b):
    """C's usual arithmetic conversions of two scalar types (what a comparison of them computes in)."""
    if T.is_float(a) or T.is_float(b):
        return max([t for t in (a, b) if T.is_float(t)], key=T.sizeof)

    def promoted(t):   # (rank, signed): types narrower than int become int
        return (4, True) if T.sizeof(t) < 4 else (T.sizeof(t), t in SIGNED_INTS)

    (ra, sa), (rb, sb) = promoted(a), promoted(b)
    rank = max(ra, rb)
    signed = (sa and sb) if ra == rb else (sa if ra > rb else sb)   # (int64 holds every uint32: signed)
    return {(4, True): T.int32, (4, False): T.uint32, (8, True): T.int64, (8, False): T.uint64}[(rank, signed)]


SIGNED_INTS = (T.int8, T.int16, T.int32, T.int64)


def _static_local(name, v):
    """What ``static(...)`` sees of a local: a constant's value, a runtime value's type, a tuple's items."""
    if isinstance(v, Py):
        return v.obj
    if isinstance(v, TupleValue):
        return tuple(_static_local(f"{name}[{k}]", x) for k, x in enumerate(v))
    if isinstance(v, ir.Var):
        return v.const if v.is_const and v.const is not None else _LocalOfType(name, v.type)
    return v


class _LocalOfType:
    """A kernel variable inside ``static(...)``: only its type is known then (``len(v)`` works)."""

    def __init__(self, name, t):
        self._name, self._type = name, t

    def __len__(self):
        t = self._type
        if T.is_value(t):
            return t._shape[0]
        raise TypeError(f"len() of kernel variable '{self._name}' ({T.type_name(t)}) is not known at compile time")

    def __getattr__(self, attr):
        raise NameError(f"'{self._name}' is a kernel variable; static() sees its value only if it is a constant")

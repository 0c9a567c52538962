"""Assignments: ``x = v``, ``x: T = v``, ``target op= v`` and the targets they write (names, components of
locals, array elements and their components or fields, struct fields).

Values are SSA: writing a component of a local vector or a struct field makes a new value bound to the
name; writing into an array element is a store (``arr[i] += x``: an atomic add, as in Warp). An augmented
assignment evaluates its target's index expressions once, before its right-hand side, as Python does.
"""
from __future__ import annotations

import ast

from .. import ir
from .. import types as T
from .builder import Py, TupleValue, describe
from .expressions import BINOPS
from .jumps import RETVAL
from .slices import has_slice
from .slots import SlotMixin

#: ``arr[i] op= x`` on an array element: the atomic builtin it calls (as in Warp)
ATOMIC_AUGMENTED = {"add": "atomic_add", "sub": "atomic_sub", "bit_and": "atomic_and", "bit_or": "atomic_or",
                    "bit_xor": "atomic_xor"}


class AssignMixin(SlotMixin):
    def stmt_Assign(self, node):
        if len(node.targets) != 1:  # a = b = value: one value, several names
            value = self.eval(node.value)
            for target in node.targets:
                if not isinstance(target, ast.Name):
                    raise self.error("chained assignment (a = b = c) only assigns names in kernels", target)
                self.assign_to(target, value)
            return
        target = node.targets[0]
        if isinstance(target, (ast.Tuple, ast.List)):
            self._tid_targets = len(target.elts)
            try:
                value = self.eval(node.value)
            finally:
                self._tid_targets = 1
            if not isinstance(value, TupleValue) or len(value) != len(target.elts):
                n = len(value) if isinstance(value, TupleValue) else 1
                raise self.error(f"cannot unpack {n} value(s) into {len(target.elts)} names", node)
            for t, v in zip(target.elts, value):
                self.assign_hoisted(t, v)
            return
        self.assign_hoisted(target, self.eval(node.value))

    def assign_hoisted(self, target, value):
        """``target = value`` (the value already evaluated, as Python does first), the target's index
        expressions evaluated once (a part of an array element resolves them once more: frontend/slots.py)."""
        hidden = []
        try:
            self.assign_to(self.hoist_target(target, hidden), value)
        finally:
            for name in hidden:
                self.symbols.pop(name, None)

    def stmt_AnnAssign(self, node):
        if node.value is None:
            raise self.error("a declaration needs a value: x: float = 0.0", node)
        try:
            ann = T.as_kernel_type(self.eval_annotation(node.annotation))
        except TypeError as e:
            raise self.error(str(e), node.annotation) from None
        v = self.eval_value(node.value)
        if v.type is not ann:
            v = self.construct(ann, [v], {}, node)
        self.assign_to(node.target, v)

    def eval_annotation(self, node):
        v = self.eval(node)
        if isinstance(v, Py):
            return v.obj
        raise self.error(f"'{ast.unparse(node)}' is not a type", node)

    def stmt_AugAssign(self, node):
        """``target op= value`` as Python runs it: the target's index expressions once, then its current
        value, then the right-hand side once, then the store (``arr[i] += x``: one atomic add, as Warp)."""
        key = BINOPS.get(type(node.op))
        if key is None:
            raise self.error(f"unsupported operator {type(node.op).__name__}=", node)
        hidden = []
        try:
            target = self.hoist_target(node.target, hidden)
            self.aug_assign(key, target, node)
        finally:
            for name in hidden:
                self.symbols.pop(name, None)

    def aug_assign(self, key, target, node):
        if key in ATOMIC_AUGMENTED and self.slot_update(key, target, node):
            return  # (a part of an array element: frontend/slots.py)
        if isinstance(target, ast.Subscript):
            base = self.eval(target.value)
            if isinstance(base, ir.Var) and isinstance(base.type, T.ArrayType):
                idx = self.index_values(target.slice)
                if len(idx) == base.type.ndim and key in ATOMIC_AUGMENTED:
                    # Warp semantics: arr[i] += x is an atomic add (&=, |=, ^= atomic bitwise ops)
                    rhs = self.eval_value(node.value)
                    self.call_builtin(ATOMIC_AUGMENTED[key], [base] + idx + [self.match_weak(rhs, base.type.dtype)],
                                      node)
                    return
        cur = self.eval_value(target)
        rhs = self.eval_value(node.value)
        self.assign_to(target, self.call_operator(key, [cur, rhs], node))

    def hoist_target(self, target, hidden: list):
        """``target`` with each index expression that is not a name or a literal evaluated now, once, into a
        hidden local (``a[f(i)].x += v`` reads and writes ``a[f(i)]`` but must call ``f`` once)."""
        if isinstance(target, ast.Attribute):
            new = ast.Attribute(value=self.hoist_target(target.value, hidden), attr=target.attr, ctx=target.ctx)
        elif isinstance(target, ast.Subscript):
            value = self.hoist_target(target.value, hidden)
            new = ast.Subscript(value=value, slice=self.hoist_index(target.slice, hidden), ctx=target.ctx)
        else:
            return target
        return ast.copy_location(new, target)

    def hoist_index(self, node, hidden: list):
        if node is None or isinstance(node, (ast.Name, ast.Constant)):
            return node
        if isinstance(node, ast.Tuple):
            new = ast.Tuple(elts=[self.hoist_index(e, hidden) for e in node.elts], ctx=node.ctx)
        elif isinstance(node, ast.Slice):
            new = ast.Slice(*(self.hoist_index(e, hidden) for e in (node.lower, node.upper, node.step)))
        else:
            name = f"_sk_aug{len(hidden)}_{self.loop_depth}"
            while name in self.symbols:
                name += "_"
            self.symbols[name] = self.eval(node)
            hidden.append(name)
            new = ast.Name(id=name, ctx=ast.Load())
        return ast.copy_location(new, node)

    def match_weak(self, v, t):
        return self.literal_as(v, t)

    # ------------------------------------------------------------------ assignment targets

    def assign_to(self, target, value):
        if isinstance(target, (ast.Attribute, ast.Subscript)) and isinstance(value, ir.Var) and \
                self.slot_store(target, value):
            return  # (a part of an array element: frontend/slots.py)
        if isinstance(target, ast.Name):
            if self.declared_returns is not None and target.id.startswith(RETVAL):  # an early return (jumps.py)
                k, want = target.id[len(RETVAL):], self.declared_returns
                t = want[int(k)] if k.isdigit() and int(k) < len(want) else (want[0] if len(want) == 1 else None)
                value = self.literal_as(value, t) if t is not None else value
            if isinstance(value, ir.Var) and value.is_const and not T.is_scalar(value.type):
                value = self.materialise(value)
            self.symbols[target.id] = value
            if isinstance(value, ir.Var) and value.label is None and not value.is_const:
                value.label = target.id
            return
        if not isinstance(value, ir.Var):
            raise self.error(f"cannot assign {describe(value)} here", target)
        if isinstance(target, ast.Subscript):
            base = self.eval(target.value)
            if isinstance(base, ir.Var) and isinstance(base.type, T.ArrayType):
                idx = self.index_values(target.slice)
                if len(idx) != base.type.ndim:
                    raise self.error(f"a {base.type.ndim}D array needs {base.type.ndim} indices to be "
                                     f"assigned, got {len(idx)}", target)
                value = self.match_weak(value, base.type.dtype)
                if value.type is not base.type.dtype:
                    raise self.error(f"cannot store a {T.type_name(value.type)} value in an array of "
                                     f"{T.type_name(base.type.dtype)}; convert it explicitly", target)
                self.call_builtin("store", [base] + idx + [value], target)
                return
            if isinstance(base, ir.Var) and T.is_value(base.type) and has_slice(target.slice):
                self.assign_slice(target, value, target)
                return
            if isinstance(base, ir.Var) and T.is_value(base.type):
                idx = self.index_values(target.slice)
                value = self.match_weak(value, base.type._dtype)
                new = self.call_builtin("assign", [base] + idx + [value], target)
                self.assign_to(target.value, new)
                return
            raise self.error(f"cannot assign into {describe(base)}", target)
        if isinstance(target, ast.Attribute):
            base = self.eval_value(target.value)
            t = base.type
            from .expressions import COMPONENTS

            if T.is_struct(t):
                fields = t._simkit_struct.fields
                if target.attr not in fields:
                    raise self.error(f"struct '{t.__name__}' has no field '{target.attr}'", target)
                ft = fields[target.attr]
                value = self.match_weak(value, ft)
                if value.type != ft:  # (array types are equal, not identical)
                    raise self.error(f"field '{target.attr}' is {T.type_name(ft)}, "
                                     f"got {T.type_name(value.type)}", target)
                new = self.new_var(t)
                self.emit(ir.SetField(out=new, src=base, field=target.attr, value=value))
            elif T.is_transform(t) and target.attr in ("p", "q"):
                key = "transform_set_translation" if target.attr == "p" else "transform_set_rotation"
                new = self.call_builtin(key, [base, value], target)
            elif (T.is_vector(t) or T.is_quat(t)) and target.attr in COMPONENTS:
                value = self.match_weak(value, t._dtype)
                new = self.call_builtin("assign", [base, self.const(COMPONENTS[target.attr]), value], target)
            else:
                raise self.error(f"cannot assign attribute '{target.attr}' of {T.type_name(t)}", target)
            self.assign_to(target.value, new)
            return
        raise self.error(f"cannot assign to '{ast.unparse(target)}'", target)

    def materialise(self, v):
        """A named copy of a constant vector/matrix (so component writes have a variable)."""
        out = self.new_var(v.type)
        self.emit(ir.Call(out=out, args=[self.const(c, v.type._dtype) for c in v.const],
                          callee=f"sk::make<{self.ctype(v.type)}>", kind="make"))
        return out

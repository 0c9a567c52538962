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

#: ``arr[i] op= x`` on an array element: the atomic builtin it calls (as in Warp)
ATOMIC_AUGMENTED = {"add": "atomic_add", "sub": "atomic_sub", "bit_and": "atomic_and", "bit_or": "atomic_or",
                    "bit_xor": "atomic_xor"}

#: element scalar types whose atomic add/sub (or bitwise op) ``arr[i].x op= v`` uses (others: read, update, store)
_ADD_SCALARS = (T.int32, T.uint32, T.int64, T.uint64, T.float16, T.bfloat16, T.float32, T.float64)
ATOMIC_SCALARS = {"add": _ADD_SCALARS, "sub": _ADD_SCALARS, "bit_and": _ADD_SCALARS[:4], "bit_or": _ADD_SCALARS[:4],
                  "bit_xor": _ADD_SCALARS[:4]}


class AssignMixin:
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
                self.assign_to(t, v)
            return
        self.assign_to(target, self.eval(node.value))

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
        if key in ATOMIC_AUGMENTED and (self.atomic_slot_update(key, target, node) or
                                        self.atomic_field_update(key, target, node)):
            return
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

    def atomic_slot_update(self, key, target, node) -> bool:
        """``arr[i].x += v``, ``arr[i][k] -= v``, ``arr[i][r] += row``, ``arr[i][r, c] |= v``: an atomic update of
        a component (or matrix row) of an array element, as Warp does: the atomic op of the whole element with
        a value that holds ``v`` there and the op's identity elsewhere (no read of the element, so threads
        updating one element never race and the gradient is the component's). Element types without atomics
        of their scalar type (int8, int16, ...) are read, updated and stored instead."""
        from .expressions import COMPONENTS

        comp_node = target.slice if isinstance(target, ast.Subscript) else None
        if comp_node is not None and has_slice(comp_node):
            return False
        elem = target.value if isinstance(target, (ast.Attribute, ast.Subscript)) else None
        if not isinstance(elem, ast.Subscript) or has_slice(elem.slice):
            return False
        arr = self.eval(elem.value)
        if not (isinstance(arr, ir.Var) and isinstance(arr.type, T.ArrayType)):
            return False
        dt = arr.type.dtype
        if not (T.is_vector(dt) or T.is_quat(dt) or T.is_matrix(dt)) or dt._dtype not in ATOMIC_SCALARS[key]:
            return False
        idx = self.index_values(elem.slice)
        if len(idx) != arr.type.ndim:
            return False
        if comp_node is None:
            if target.attr not in COMPONENTS or T.is_matrix(dt) or COMPONENTS[target.attr] >= dt._length:
                return False
            where = [self.const(COMPONENTS[target.attr])]
        else:
            where = self.index_values(comp_node)
            if len(where) > (2 if T.is_matrix(dt) else 1):
                return False
        rhs = self.eval_value(node.value)
        part_type = T.vector(dt._shape[1], dt._dtype) if T.is_matrix(dt) and len(where) == 1 else dt._dtype
        rhs = self.match_weak(rhs, part_type)
        if rhs.type is not part_type:  # (the read-update-store path converts it or reports the mismatch)
            self.assign_to(target, self.call_operator(key, [self.eval_value(target), rhs], node))
            return True
        identity = -1 if key == "bit_and" else 0  # (all bits set: AND's identity)
        n = dt._shape[0] * (dt._shape[1] if T.is_matrix(dt) else 1)
        fill = self.materialise(self.const(tuple([identity] * n), dt))
        delta = self.call_builtin("assign", [fill] + where + [rhs], node)
        self.call_builtin(ATOMIC_AUGMENTED[key], [arr] + idx + [delta], node)
        return True

    def atomic_field_update(self, key, target, node) -> bool:
        """``arr[i].f op= v``, ``arr[i].f.g.x op= v``, ``arr[i].m[r, c] op= v``: one atomic op on a field of a struct
        element (fields of any depth; a component or matrix row of a value field last, updated as the whole field
        with the op's identity elsewhere), at the field's byte offset in the element, as Warp does: threads
        updating one element never race, and the gradient is the field's. Fields of types without atomics
        (int8, bool, arrays...) are read, updated and stored instead."""
        from ..builtins.atomic import FieldOffset
        from .expressions import COMPONENTS

        chain, cur = [], target
        while isinstance(cur, (ast.Attribute, ast.Subscript)):
            chain.append(cur)
            cur = cur.value
        chain.reverse()  # innermost first: ... the element's subscript, then the field path
        k = next((k for k, n in enumerate(chain) if isinstance(n, ast.Subscript)), None)
        if k is None or k + 1 >= len(chain) or has_slice(chain[k].slice) or not isinstance(chain[k + 1], ast.Attribute):
            return False
        arr = self.eval(chain[k].value)
        if not (isinstance(arr, ir.Var) and isinstance(arr.type, T.ArrayType) and T.is_struct(arr.type.dtype)):
            return False
        idx = self.index_values(chain[k].slice)
        if len(idx) != arr.type.ndim:
            return False
        offset, t, where = 0, arr.type.dtype, None
        for j, n in enumerate(chain[k + 1:], start=k + 1):
            last = j == len(chain) - 1
            if T.is_struct(t) and isinstance(n, ast.Attribute) and n.attr in t._simkit_struct.fields:
                offset += t._simkit_struct.offsets[n.attr]
                t = t._simkit_struct.fields[n.attr]
            elif last and isinstance(n, ast.Attribute) and (T.is_vector(t) or T.is_quat(t)) and \
                    COMPONENTS.get(n.attr, 99) < t._length:
                where = [self.const(COMPONENTS[n.attr])]
            elif last and isinstance(n, ast.Subscript) and T.is_value(t) and not T.is_transform(t) and \
                    not has_slice(n.slice):
                where = self.index_values(n.slice)
                if len(where) > (2 if T.is_matrix(t) else 1):
                    return False
            else:
                return False
        if not (T.is_scalar(t) or T.is_value(t)) or T.scalar_of(t) not in ATOMIC_SCALARS[key]:
            return False
        part = t
        if where is not None:
            part = T.vector(t._shape[1], t._dtype) if T.is_matrix(t) and len(where) == 1 else t._dtype
        rhs = self.match_weak(self.eval_value(node.value), part)
        if rhs.type is not part:  # (the read-update-store path converts it or reports the mismatch)
            self.assign_to(target, self.call_operator(key, [self.eval_value(target), rhs], node))
            return True
        if where is not None:  # the whole field: the value at the component, the op's identity elsewhere
            n = t._shape[0] * (t._shape[1] if T.is_matrix(t) else 1)
            fill = self.materialise(self.const(tuple([-1 if key == "bit_and" else 0] * n), t))
            rhs = self.call_builtin("assign", [fill] + where + [rhs], node)
        slot = ir.Var("offset", T.Any, const=FieldOffset(offset), is_const=True)
        self.call_builtin(ATOMIC_AUGMENTED[key], [arr] + idx + [rhs, slot], node)
        return True

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

    def element_component_store(self, target, value) -> bool:
        """``arr[i].x = v`` / ``arr[i][k] = v``: write one component of an array element in place.

        Lowered to ``store_component`` (no read of the element), so it is not an in-place
        read-modify-write and its gradient is exact."""
        from .expressions import COMPONENTS

        if isinstance(target, ast.Attribute):
            elem, comp_node = target.value, None
        elif isinstance(target, ast.Subscript):
            elem, comp_node = target.value, target.slice
        else:
            return False
        if not isinstance(elem, ast.Subscript) or (comp_node is not None and has_slice(comp_node)):
            return False
        arr = self.eval(elem.value)
        if not (isinstance(arr, ir.Var) and isinstance(arr.type, T.ArrayType)):
            return False
        dt = arr.type.dtype
        idx = self.index_values(elem.slice)
        if len(idx) != arr.type.ndim or not T.is_value(dt):
            return False
        if T.is_transform(dt) and comp_node is None:  # t.p / t.q: components 0-2 / 3-6, one by one
            first, n = {"p": (0, 3), "q": (3, 4)}.get(target.attr, (None, 0))
            if first is None or not (T.is_value(value.type) and value.type._length == n):
                return False
            for k in range(n):
                part = self.call_builtin("extract", [value, self.const(k)], target)
                part = self.match_weak(part, dt._dtype)
                self.call_builtin("store_component", [arr] + idx + [self.const(first + k), part], target)
            return True
        if comp_node is None:
            if target.attr not in COMPONENTS or COMPONENTS[target.attr] >= dt._length or T.is_matrix(dt):
                return False
            comp = self.const(COMPONENTS[target.attr])
        else:
            cidx = self.index_values(comp_node)
            if T.is_matrix(dt):
                if len(cidx) != 2:
                    return False
                ncols = self.const(dt._shape[1])
                comp = self.call_builtin("add", [self.call_builtin("mul", [cidx[0], ncols], target), cidx[1]], target)
            elif len(cidx) == 1:
                comp = cidx[0]
            else:
                return False
        value = self.match_weak(value, dt._dtype)
        self.call_builtin("store_component", [arr] + idx + [comp, value], target)
        return True

    def assign_to(self, target, value):
        if isinstance(target, (ast.Attribute, ast.Subscript)) and isinstance(value, ir.Var) and \
                self.element_component_store(target, value):
            return
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

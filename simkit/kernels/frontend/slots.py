"""Writes to part of an array element: ``arr[i].x = v``, ``arr[i][r, c] = v``, ``arr[i][r][c] = v``, ``arr[i][r] =
row``, ``arr[i].p = t``, ``arr[i].q.w = v``, ``arr[i].body.vel.y = v`` (a field of a struct element, at any
depth), and their ``+=``, ``-=``, ``&=``, ``|=``, ``^=`` forms.

As in Warp, the part is written in place: a store of just that part (or an atomic op of just that part),
with no read of the element. So threads writing different parts of one element never race, the tape sees
no read of the array (a kernel writing several fields of an element one after the other is not a read
after a write), and the gradient is exact: the store's adjoint takes (and consumes) that part of the
element's gradient; an atomic add's adjoint reads it. ``*=``, ``/=`` and the other operators read the
part, compute, then store the part.

The target is resolved to a :class:`~simkit.kernels.builtins.slots.Slot` (builtins/slots.py): a byte
offset in the element (constant indices folded in) and up to two runtime indices into the innermost
vector, matrix, quaternion or transform, which wrap when negative as local component indices do.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass

from .. import ir
from .. import types as T
from ..builtins.slots import ATOMIC_SLOT_SCALARS, Slot
from ..errors import CompileTypeError
from .builder import TupleValue
from .expressions import COMPONENTS
from .slices import has_slice


@dataclass
class SlotTarget:
    arr: ir.Var      # the array whose element is written
    idx: list        # the element's indices
    slot: Slot
    k1: ir.Var       # runtime (or constant) indices into the innermost value
    k2: ir.Var

    @property
    def part(self):
        return self.slot.part


def _chain(node) -> list:
    """``a.b[i].c`` as [a, a.b, a.b[i], a.b[i].c] (innermost first)."""
    out = []
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        out.append(node)
        node = node.value
    out.append(node)
    out.reverse()
    return out


class SlotMixin:
    # ------------------------------------------------------------------ resolving a target

    def _index_count(self, node) -> int | None:
        if isinstance(node, ast.Tuple):
            return len(node.elts)
        if isinstance(node, ast.Name) and isinstance(self.symbols.get(node.id), TupleValue):
            return len(self.symbols[node.id])
        return 1

    def _element_split(self, chain) -> int | None:
        """The position in ``chain`` of the last full index of an array (``arr[i]``) after which only
        struct fields and value components follow, found from the types alone (nothing evaluated)."""
        root = chain[0]
        v = self.symbols.get(root.id) if isinstance(root, ast.Name) else None
        if not isinstance(v, ir.Var):
            return None
        t, split = v.type, None
        for k, node in enumerate(chain[1:], start=1):
            if isinstance(t, T.ArrayType):
                if not isinstance(node, ast.Subscript):
                    return None
                items = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
                if has_slice(node.slice):
                    nd = t.ndim - sum(1 for it in items if not isinstance(it, ast.Slice))
                    t = T.ArrayType(t.dtype, nd) if nd > 0 else None
                else:
                    n = self._index_count(node.slice)
                    if n == t.ndim:
                        t, split = t.dtype, k
                    else:
                        t = T.ArrayType(t.dtype, t.ndim - n) if n < t.ndim else None
                if t is None:
                    return None
            elif T.is_struct(t):
                if not isinstance(node, ast.Attribute) or node.attr not in t._simkit_struct.fields:
                    return None
                t = t._simkit_struct.fields[node.attr]
            else:  # a value or scalar: no array can follow
                break
        if split is None or split == len(chain) - 1 or isinstance(t, T.ArrayType):
            return None
        return split

    def element_slot(self, target) -> SlotTarget | None:
        """The part of an array element that ``target`` names, else None (not such a target). Evaluates the
        array and the indices; ``target``'s index expressions must be names or literals (hoisted)."""
        if not isinstance(target, (ast.Attribute, ast.Subscript)):
            return None
        chain = _chain(target)
        split = self._element_split(chain)
        if split is None:
            return None
        arr = self.eval(chain[split].value)
        if not (isinstance(arr, ir.Var) and isinstance(arr.type, T.ArrayType)):
            return None
        idx = self.index_values(chain[split].slice)
        if len(idx) != arr.type.ndim:
            return None
        return self._resolve(arr, idx, chain[split + 1:], target)

    def _resolve(self, arr, idx, path, target) -> SlotTarget | None:
        t, off = arr.type.dtype, 0
        dims: list = []  # [(size, index Var)] into the innermost value: at most two
        for node in path:
            if T.is_struct(t):
                fields = t._simkit_struct.fields
                if not isinstance(node, ast.Attribute) or node.attr not in fields:
                    return None
                off += t._simkit_struct.offsets[node.attr]
                t = fields[node.attr]
                continue
            if T.is_transform(t) and isinstance(node, ast.Attribute) and not dims:
                if node.attr not in ("p", "q"):
                    return None
                off += 0 if node.attr == "p" else 3 * t._dtype._size
                t = T.vector(3, t._dtype) if node.attr == "p" else T.quaternion(t._dtype)
                continue
            if not T.is_value(t):
                return None
            if isinstance(node, ast.Attribute):
                if T.is_matrix(t) or T.is_transform(t) or COMPONENTS.get(node.attr, 99) >= t._length:
                    return None
                ks = [self.const(COMPONENTS[node.attr])]
            elif has_slice(node.slice):
                return None
            else:
                ks = self.index_values(node.slice)
            if T.is_matrix(t) and len(ks) == 2:
                dims += [(t._shape[0], ks[0]), (t._shape[1], ks[1])]
                t = t._dtype
            elif T.is_matrix(t) and len(ks) == 1:
                dims.append((t._shape[0], ks[0]))
                t = T.vector(t._shape[1], t._dtype)
            elif len(ks) == 1:  # a component of a vector, quaternion, transform or matrix row
                dims.append((t._length, ks[0]))
                t = t._dtype
            else:
                return None
        return self._fold(arr, idx, t, off, dims, target)

    def _fold(self, arr, idx, part, off, dims, target) -> SlotTarget:
        """Constant indices folded into the offset (checked here); runtime ones kept as k1, k2."""
        size = T.sizeof(part)
        for n, k in dims:
            if k.is_const and not -n <= int(k.const) < n:
                raise self.error(f"index {int(k.const)} is out of range for {n} components in "
                                 f"'{ast.unparse(target)}'", target)
        if all(k.is_const for _, k in dims):
            flat = 0
            for n, k in dims:
                flat = flat * n + int(k.const) % n
            return SlotTarget(arr, idx, Slot(off + flat * size, 1, 1, part), self.const(0), self.const(0))
        (n1, k1), (n2, k2) = (dims + [(1, self.const(0))])[:2]
        return SlotTarget(arr, idx, Slot(off, n1, n2, part), k1, k2)

    def _slot_var(self, s: SlotTarget) -> ir.Var:
        return ir.Var("slot", T.Any, const=s.slot, is_const=True)

    # ------------------------------------------------------------------ writes

    def slot_store(self, target, value) -> bool:
        """``target = value`` for a part of an array element: a store of that part (True), else False."""
        s = self.element_slot(target)
        if s is None:
            return False
        value = self.match_weak(value, s.part)
        if value.type is not s.part:
            raise self.error(f"cannot assign a {T.type_name(value.type)} value to '{ast.unparse(target)}', which is "
                             f"a {T.type_name(s.part)}; convert it explicitly", target, CompileTypeError)
        self.call_builtin("store_component", [s.arr] + s.idx + [s.k1, s.k2, self._slot_var(s), value], target)
        return True

    def slot_update(self, key, target, node) -> bool:
        """``target op= value`` (add, sub, bit_and, bit_or, bit_xor) for a part of an array element: one
        atomic op of that part (True). Parts of scalar types without atomics (int8, int16, bool...) are read,
        updated and stored (True); False: not such a target."""
        from .assign import ATOMIC_AUGMENTED

        s = self.element_slot(target)
        if s is None:
            return False
        scalar = T.scalar_of(s.part) if (T.is_scalar(s.part) or T.is_value(s.part)) else None
        if scalar in ATOMIC_SLOT_SCALARS[ATOMIC_AUGMENTED[key]]:
            rhs = self.match_weak(self.eval_value(node.value), s.part)
            if rhs.type is s.part:
                self.call_builtin(ATOMIC_AUGMENTED[key], [s.arr] + s.idx + [s.k1, s.k2, self._slot_var(s), rhs],
                                  node)
                return True
            cur = self.eval_value(target)  # (the read-update-store path converts it or reports the mismatch)
        else:
            cur = self.eval_value(target)
            rhs = self.eval_value(node.value)
        self.assign_to(target, self.call_operator(key, [cur, rhs], node))
        return True

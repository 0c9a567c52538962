"""Slot writes: part of an array element written in place, without reading the element (native/slots.h).

``arr[i].x = v``, ``arr[i][r, c] = v``, ``arr[i][r] = row``, ``arr[i].p = t``, ``arr[i].body.vel.y = v`` (a
field of a struct element, any depth) and their ``+=``, ``-=``, ``&=``, ``|=``, ``^=`` forms
(frontend/slots.py). The frontend resolves the target to a :class:`Slot`: a byte offset in the element,
the part's type, and the sizes of the up to two runtime indices into the innermost vector, matrix,
quaternion or transform. These are overloads of ``store_component`` and of the atomics, taking the two
indices, the Slot (a compile-time argument only the compiler makes) and the value, so the tape's
analysis of array writes sees them as such.
"""
from __future__ import annotations

from .. import types as T
from ..registry import add_builtin
from ..types import Any, ArrayType, Int


class Slot:
    """A part of type ``part`` at byte ``offset`` of an array element, shifted by ``k1 * n2 + k2`` parts
    (``k1`` < ``n1``, ``k2`` < ``n2``: the runtime indices)."""

    def __init__(self, offset: int, n1: int, n2: int, part):
        self.offset, self.n1, self.n2, self.part = int(offset), int(n1), int(n2), part

    def __repr__(self):
        return f"Slot({self.offset}, {self.n1}, {self.n2}, {T.type_name(self.part)})"

    def __eq__(self, other):
        return isinstance(other, Slot) and repr(self) == repr(other)

    def __hash__(self):
        return hash(repr(self))


#: the scalar types each atomic slot op takes (as the atomics of whole elements)
_ADD = (T.int32, T.uint32, T.int64, T.uint64, T.float16, T.bfloat16, T.float32, T.float64)
ATOMIC_SLOT_SCALARS = {"atomic_add": _ADD, "atomic_sub": _ADD, "atomic_and": _ADD[:4], "atomic_or": _ADD[:4],
                       "atomic_xor": _ADD[:4]}
_OPS = {"atomic_add": 0, "atomic_sub": 1, "atomic_and": 2, "atomic_or": 3, "atomic_xor": 4}


def _slot(info):
    s = info.const_values[-2] if len(info.const_values) >= 2 else None
    return s if isinstance(s, Slot) else None


def _store_matches(info) -> bool:
    s = _slot(info)
    return s is not None and info.arg_types[-1] is s.part


def _atomic_matches(key):
    def match(info) -> bool:
        s = _slot(info)
        if s is None or info.arg_types[-1] is not s.part:
            return False
        scalar = s.part if T.is_scalar(s.part) else (s.part._dtype if T.is_value(s.part) else None)
        return scalar in ATOMIC_SLOT_SCALARS[key]
    return match


def _template(s: Slot) -> str:
    return f"{s.offset}, {s.n1}, {s.n2}"


def _part_type(info):
    return info.arg_types[-1]


for _nd in (1, 2, 3, 4):
    _params = {"a": ArrayType(Any, _nd), **{"ijkl"[d]: Int for d in range(_nd)}, "k1": Int, "k2": Int,
               "slot": Any, "value": Any}
    add_builtin("store_component", _params, None, checked=True,
                native=lambda info, ret: f"sk::store_slot<SKC, {_template(_slot(info))}>",
                side_effects=True, replay=False, match=_store_matches, hidden=True, group="array",
                doc="Write part of an element in place (``a[i].f.x = value``, ``a[i][r] = row``).")
    for _key, _op in _OPS.items():
        add_builtin(_key, _params, _part_type, checked=True, side_effects=True, replay=False, hidden=True,
                    native=lambda info, ret, _op=_op: f"sk::atomic_slot<SKC, {_op}, {_template(_slot(info))}>",
                    differentiable=_op < 2, match=_atomic_matches(_key), group="atomic",
                    doc="``a[i].f.x op= value``: the atomic op on part of an element (one atomic per scalar); "
                        "returns the part's old value.")

"""Atomic read-modify-write on array elements. Each returns the element's old value.

``arr[i] += v`` in a kernel is ``atomic_add(arr, i, v)`` (Warp semantics).
"""
from .. import types as T
from ..registry import add_builtin
from ..types import Any, ArrayType, Int


def _dtype(info):
    return info.arg_types[0].dtype


def _value_matches(info):
    return all(t is info.arg_types[0].dtype for t in info.arg_types[1 + info.arg_types[0].ndim:])


def _int_value_matches(info):
    """Bitwise atomics: integer elements (scalars, or vectors / matrices of integers) only."""
    dtype = info.arg_types[0].dtype
    return (T.is_int(dtype) or (T.is_vector(dtype) or T.is_matrix(dtype)) and T.is_int(dtype._dtype)) \
        and _value_matches(info)


def _scalar_value_matches(info):
    """atomic_cas compares whole elements: scalar element types only."""
    return T.is_scalar(info.arg_types[0].dtype) and _value_matches(info)


_DOCS = {
    "atomic_add": "Atomically add value to a[i...]; returns the old value.",
    "atomic_sub": "Atomically subtract value from a[i...]; returns the old value.",
    "atomic_min": "Atomically store min(a[i...], value); returns the old value.",
    "atomic_max": "Atomically store max(a[i...], value); returns the old value.",
    "atomic_exch": "Atomically replace a[i...] with value (vectors/matrices component by component); returns "
                   "the old value.",
}

for _nd in (1, 2, 3, 4):
    _idx = {"ijkl"[d]: Int for d in range(_nd)}
    for _key, _doc in _DOCS.items():
        add_builtin(_key, {"a": ArrayType(Any, _nd), **_idx, "value": Any}, _dtype, native=f"sk::{_key}<SKC>",
                    checked=True, side_effects=True, replay=False, match=_value_matches, doc=_doc,
                    group="atomic")
    for _key, _op in (("atomic_and", "AND"), ("atomic_or", "OR"), ("atomic_xor", "XOR")):
        add_builtin(_key, {"a": ArrayType(Any, _nd), **_idx, "value": Any}, _dtype, native=f"sk::{_key}<SKC>",
                    checked=True, side_effects=True, replay=False, differentiable=False, match=_int_value_matches,
                    doc=f"Atomically store a[i...] {_op} value (bitwise; integer elements, integer vectors and "
                        f"matrices component by component); returns the old value. "
                        f"``a[i] {dict(AND='&', OR='|', XOR='^')[_op]}= value`` in a kernel calls it.",
                    group="atomic")
    add_builtin("atomic_cas", {"a": ArrayType(Any, _nd), **_idx, "compare": Any, "value": Any}, _dtype,
                native="sk::atomic_cas<SKC>", checked=True, side_effects=True, replay=False,
                differentiable=False, match=_scalar_value_matches,
                doc="Atomically set a[i...] = value if it equals compare (scalar elements); returns the old "
                    "value.",
                group="atomic")


# ``arr[i].f.g op= v`` (frontend/assign.py): the op's overloads taking the field's byte offset in the element
# as a last, compile-time argument (a FieldOffset, which only the compiler makes: users call these builtins
# on whole elements). The native function gets the offset as a template argument (native/atomic.h).
class FieldOffset(int):
    """The byte offset of a struct field (or a component of one) in an array element."""

    def __repr__(self):
        return f"FieldOffset({int(self)})"


_FIELD_OPS = {"atomic_add": 0, "atomic_sub": 1, "atomic_and": 2, "atomic_or": 3, "atomic_xor": 4}
_FIELD_SCALARS = {"atomic_add": (T.int32, T.uint32, T.int64, T.uint64, T.float16, T.float32, T.float64)}
_FIELD_SCALARS["atomic_sub"] = _FIELD_SCALARS["atomic_add"]
for _key in ("atomic_and", "atomic_or", "atomic_xor"):
    _FIELD_SCALARS[_key] = (T.int32, T.uint32, T.int64, T.uint64)


def _field_matcher(key):
    def match(info) -> bool:
        v = info.arg_types[-2]
        s = v if T.is_scalar(v) else (v._dtype if T.is_value(v) else None)
        return T.is_struct(info.arg_types[0].dtype) and isinstance(info.const_values[-1], FieldOffset) \
            and s in _FIELD_SCALARS[key]
    return match


def _field_native(op):
    def native(info, ret):
        return f"sk::atomic_field<SKC, {op}, {int(info.const_values[-1])}>"
    return native


def _field_type(info):
    return info.arg_types[-2]


for _nd in (1, 2, 3, 4):
    _idx = {"ijkl"[d]: Int for d in range(_nd)}
    for _key, _op in _FIELD_OPS.items():
        add_builtin(_key, {"a": ArrayType(Any, _nd), **_idx, "value": Any, "offset": Any}, _field_type,
                    native=_field_native(_op), checked=True, side_effects=True, replay=False, hidden=True,
                    differentiable=_op < 2, match=_field_matcher(_key), group="atomic",
                    doc="``a[i].field op= value``: the atomic op on a field of a struct element (at its byte "
                        "offset); returns the field's old value.")

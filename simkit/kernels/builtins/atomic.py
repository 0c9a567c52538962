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

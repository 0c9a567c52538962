"""Array builtins: element load/store, sub-array views, shape queries.

The compiler maps ``a[i, j]`` to ``load``, ``a[i, j] = v`` to ``store`` and
``a[i]`` on a 2D array to ``view``. ``SKC`` is the generated code's template
flag for contiguous arrays (see native/array.h).
"""
from ..registry import add_builtin
from ..types import Any, ArrayType, IndexedArrayType, Int, int32, is_scalar, is_struct, is_value, uint64, view_type
from ..types import bool as bool_


def _dtype(info):
    return info.arg_types[0].dtype


def _value_matches(info):
    return info.arg_types[-1] is info.arg_types[0].dtype


def _component_matches(info):
    dt = info.arg_types[0].dtype
    return is_value(dt) and info.arg_types[-1] is dt._dtype


def _view_type(info):
    a = info.arg_types[0]
    return view_type(a, a.ndim - (len(info.arg_types) - 1))


for _nd in (1, 2, 3, 4):
    _idx = {"ijkl"[d]: Int for d in range(_nd)}
    add_builtin("load", {"a": ArrayType(Any, _nd), **_idx}, _dtype, native="sk::load<SKC>", checked=True,
                doc="Read an array element (``a[i, j]``).", group="array", hidden=True)
    add_builtin("store", {"a": ArrayType(Any, _nd), **_idx, "value": Any}, None, native="sk::store<SKC>",
                checked=True, side_effects=True, replay=False, match=_value_matches,
                doc="Write an array element (``a[i, j] = value``).", group="array", hidden=True)
    for _k in range(1, _nd):
        add_builtin("view", {"a": ArrayType(Any, _nd), **{"ijkl"[d]: Int for d in range(_k)}}, _view_type,
                    native="sk::view<SKC>", checked=True,
                    doc="Sub-array ``a[i]`` of an n-D array (shares memory).", group="array", hidden=True)
    add_builtin("store_component", {"a": ArrayType(Any, _nd), **_idx, "comp": Int, "value": Any}, None,
                native="sk::store_component<SKC>", checked=True, side_effects=True, replay=False,
                match=_component_matches, doc="Write one component of an element (``a[i].x = value``).",
                group="array", hidden=True)
    add_builtin("array_shape", {"a": ArrayType(Any, _nd), "dim": Int}, int32, native="sk::array_shape",
                differentiable=False, doc="``a.shape[dim]``.", group="array", hidden=True)
    add_builtin("array_nonnull", {"a": ArrayType(Any, _nd)}, bool_, native="sk::array_nonnull",
                differentiable=False, doc="``if a:``: the array is not None.", group="array", hidden=True)

    add_builtin("array_ptr", {"a": ArrayType(Any, _nd)}, uint64, native="sk::array_ptr", differentiable=False,
                doc="``a.ptr``: the address of the array's first element.", group="array", hidden=True)


def _from_ptr_type(info):
    dtype = info.const_values[1]
    if not (is_scalar(dtype) or is_value(dtype) or is_struct(dtype)):
        raise TypeError(f"dtype must be a scalar, vector, matrix or struct type, got {dtype!r}")
    return ArrayType(dtype, len(info.arg_types) - 2)


for _nd in (1, 2, 3, 4):  # array(ptr=p, shape=(n, m), dtype=T) in kernels (frontend/expressions.py)
    add_builtin("array_from_ptr", {"ptr": uint64, "dtype": Any, **{f"d{d}": Int for d in range(_nd)}}, _from_ptr_type,
                native=lambda info, rct: f"sk::array_from_ptr<{rct}>", differentiable=False,
                doc="A contiguous array of ``shape`` over the memory at ``ptr`` (no gradient).", group="array",
                hidden=True)


def _indexed_view_type(info):
    a = info.arg_types[0]
    return IndexedArrayType(a.dtype, a.ndim - (len(info.arg_types) - 1))


for _nd in (2, 3, 4):
    for _k in range(1, _nd):
        add_builtin("indexed_view", {"a": IndexedArrayType(Any, _nd), **{"ijkl"[d]: Int for d in range(_k)}},
                    _indexed_view_type, native="sk::indexed_view", checked=True,
                    doc="Sub-array ``a[i]`` of an n-D indexed array (shares memory).", group="array", hidden=True)
add_builtin("indexed_index", {"a": Any, "axis": int32, "i": Int}, int32, native="sk::indexed_index", checked=True,
            differentiable=False, doc="The index into an indexed array's data along ``axis`` for index ``i`` "
            "(the frontend maps ``a[i, j]`` through it).", group="array", hidden=True)


def _slice_type(info):
    a, code = info.arg_types[0], info.const_values[1]
    if not isinstance(code, int):
        raise TypeError("array_slice: the slice layout must be a compile-time constant")
    dropped = sum(1 for d in range(a.ndim) if (code >> (2 * d)) & 3 == 1)
    return view_type(a, a.ndim - dropped)


# a[1:3], a[:, 0], a[::-2, 1:]: the frontend passes a layout code (2 bits per given axis: 1 an index,
# 2 a slice) and start, stop, step per given axis (SK_SLICE_NONE for an omitted bound)
for _nd in (1, 2, 3, 4):
    for _k in range(1, _nd + 1):
        add_builtin("array_slice", {"a": ArrayType(Any, _nd), "code": Int, **{f"v{n}": Int for n in range(3 * _k)}},
                    _slice_type, native="sk::array_slice", needs_line=True,
                    doc="Sub-array of ``a`` by slices and indices (``a[1:3, 0]``; shares memory and grad).",
                    group="array", hidden=True)


def _sorted_scalars(info):
    dt = info.arg_types[0].dtype
    return not is_value(dt) and info.arg_types[-1] is dt


add_builtin("lower_bound", {"arr": ArrayType(Any, 1), "value": Any}, int32, native="sk::lower_bound<SKC>",
            checked=True, differentiable=False, match=_sorted_scalars,
            doc="The first index of the sorted 1D array ``arr`` whose element is not less than ``value``: a "
                "binary search. As in Warp, a value above every element gives the last index, "
                "``arr.shape[0] - 1``.", group="array")
add_builtin("lower_bound", {"arr": ArrayType(Any, 1), "arr_begin": int32, "arr_end": int32, "value": Any}, int32,
            native="sk::lower_bound<SKC>", checked=True, differentiable=False, match=_sorted_scalars,
            doc="The first index in ``[arr_begin, arr_end)`` of the sorted 1D array ``arr`` whose element is not "
                "less than ``value``; as in Warp, ``arr_end - 1`` if none is (``arr_begin`` for an empty range).",
            group="array")

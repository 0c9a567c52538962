"""``cast(a, dtype)``: the bits of ``a`` read as a value of type ``dtype`` (Warp's ``wp.cast``).

Both types must have the same size in bytes (scalars, vectors, matrices, quaternions, transforms, structs)::

    x = sk.cast(sk.int32(0x3FA00000), sk.float32)   # 1.25
"""
from .. import types as T
from ..registry import add_builtin
from ..types import Any
from .helpers import named


def _dtype(info):
    d = info.const_values[1] if len(info.const_values) > 1 else None
    d = T.normalize_dtype(d) if d is not None else None
    if not (T.is_scalar(d) or T.is_value(d) or T.is_struct(d)) or (T.is_value(d) and d._generic):
        raise TypeError(f"cast(a, dtype): dtype must be a concrete scalar, vector, matrix, quaternion, transform "
                        f"or struct type, got {d!r}")
    return d


def _same_size(info) -> bool:
    """The value is a plain value and the dtype argument a type (the size check reports mismatches)."""
    a = info.arg_types[0]
    return (T.is_scalar(a) or T.is_value(a) or T.is_struct(a)) and info.const_values[1] is not None \
        and info.arg_types[1] is T.Any


@named("dtype")
def _result(info):
    d, a = _dtype(info), info.arg_types[0]
    if T.sizeof(d) != T.sizeof(a):
        raise TypeError(f"cast(a, dtype) reinterprets bits: a ({T.type_name(a)}, {T.sizeof(a)} bytes) and dtype "
                        f"({T.type_name(d)}, {T.sizeof(d)} bytes) must have the same size")
    return d


def _native(info, ret):
    return f"sk::bit_cast<{ret}>"


add_builtin("cast", {"a": Any, "dtype": Any}, _result, native=_native, match=_same_size, differentiable=False,
            doc="cast(a, dtype): the bits of a read as a value of type dtype (of the same size in bytes).",
            group="scalar")

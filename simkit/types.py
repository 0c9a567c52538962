"""Type helpers under Warp's names (``wp.types``), for code written against Warp.

Example::

    import simkit as sk

    vec5 = sk.types.vector(length=5, dtype=sk.float64)
    assert sk.types.type_size(vec5) == 5 and sk.types.type_size_in_bytes(vec5) == 40
    assert sk.types.type_repr(sk.vec3) == "vec3f"
    assert sk.types.types_equal(sk.vec3, sk.types.vector(3, sk.float32))
"""
from __future__ import annotations

from .kernels import types as _T
from .kernels.types import (Float, Int, Scalar, float_types, int_types, matrix, quaternion,  # noqa: F401
                            transformation, vector)

# the numeric scalar types (Warp's: bool is not one of them)
scalar_types = int_types + float_types
# numpy scalar types and dtypes -> simkit scalar types (bool included), as Warp's table of the same name
# (which has no bfloat16: numpy has none; reading its dtype would also import ml_dtypes, types_bf16.host)
np_dtype_to_warp_type = {**{t._np.type: t for t in _T.scalar_types if t is not _T.bfloat16},
                         **{t._np: t for t in _T.scalar_types if t is not _T.bfloat16}}
vector_types = tuple(getattr(_T, n) for n in sorted(dir(_T)) if n[:3] in ("vec", "mat", "qua", "tra", "spa")
                     and n[-1] in "bshilfd" and _T.is_value(getattr(_T, n)))


def is_scalar(t) -> bool:
    return _T.is_scalar(t) or t in (int, float)


def is_float(t) -> bool:
    return _T.is_float(t) or t is float


def is_int(t) -> bool:
    return _T.is_int(t) or t is int


def is_value(t) -> bool:
    return is_scalar(t) or _T.is_value(t) or t is bool


def is_vector(t) -> bool:
    return _T.is_vector(t)


def is_matrix(t) -> bool:
    return _T.is_matrix(t)


def is_quaternion(t) -> bool:
    return _T.is_quat(t)


def is_transformation(t) -> bool:
    return _T.is_transform(t)


def is_composite(t) -> bool:
    return _T.is_value(t)


def is_array(a) -> bool:
    from .runtime.array import array

    return isinstance(a, (array, _T.ArrayType))


def is_struct(t) -> bool:
    return _T.is_struct(t)


def is_tile(t) -> bool:
    return False  # simkit has no tiles


# Warp's older spellings of the same predicates
type_is_int, type_is_float, type_is_value, type_is_vector = is_int, is_float, is_value, is_vector
type_is_matrix, type_is_quaternion, type_is_transformation = is_matrix, is_quaternion, is_transformation
type_is_composite, type_is_array, type_is_struct, type_is_tile = is_composite, is_array, is_struct, is_tile
type_is_scalar = is_scalar


def type_scalar_type(t):
    """The scalar type of ``t`` (``vec3d`` -> ``float64``)."""
    return _T.scalar_of(_T.normalize_dtype(t))


def type_size(t) -> int:
    """Number of scalars in a value of type ``t`` (1 for scalars)."""
    t = _T.normalize_dtype(t)
    return t._length if _T.is_value(t) else 1


def type_size_in_bytes(t) -> int:
    return _T.sizeof(_T.normalize_dtype(t))


def types_equal(a, b, match_generic: bool = False) -> bool:
    """Same type: ``float`` and ``float32`` are one type, as are two spellings of one vector."""
    a, b = _T.normalize_dtype(a), _T.normalize_dtype(b)
    if a is b:
        return True
    if match_generic:
        return _T.types_match(a, b) or _T.types_match(b, a)
    if _T.is_value(a) and _T.is_value(b):
        return (a._kind, a._shape, a._dtype) == (b._kind, b._shape, b._dtype)
    if isinstance(a, _T.ArrayType) and isinstance(b, _T.ArrayType):
        return a.ndim == b.ndim and types_equal(a.dtype, b.dtype)
    return False


_SUFFIX = {"float16": "h", "bfloat16": "bf", "float32": "f", "float64": "d", "int8": "b", "uint8": "ub", "int16": "s",
           "uint16": "us", "int32": "i", "uint32": "ui", "int64": "l", "uint64": "ul"}


def type_repr(t) -> str:
    """Warp's name of a type: ``vec3f``, ``mat22d``, ``float32``, ``array(ndim=1, dtype=float32)``."""
    t = _T.normalize_dtype(t)
    if is_array(t):
        return f"array(ndim={t.ndim}, dtype={type_repr(t.dtype)})"
    if _T.is_value(t) and not t._generic:
        sfx = _SUFFIX[t._dtype._type_name]
        if t._kind == "vector":
            return f"vec{t._length}{sfx}"
        if t._kind == "matrix":
            return f"mat{t._shape[0]}{t._shape[1]}{sfx}"
        return {"quaternion": "quat", "transformation": "transform"}[t._kind] + sfx
    return _T.type_name(t)

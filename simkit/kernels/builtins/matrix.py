"""Matrix builtins: operators, constructors, component access and matrix functions.

Native code: ``native/mat.h``. Matrices are row-major: ``m[i, j]`` is row i,
column j and ``m[i]`` is row i. Semantics are Warp's: ``mat33(2.0)`` fills
every element, ``mat33(v0, v1, v2)`` is an error (use ``matrix_from_rows`` or
``matrix_from_cols``), ``inverse`` of a singular matrix is the zero matrix.
``determinant`` and ``inverse`` work for every square size (Warp: 2, 3, 4).

Float overloads are differentiable; integer overloads are not. ``where`` and
``select`` on matrices are the generic overloads of ``scalar.py``; constructing
from the full list of elements (``mat22(a, b, c, d)``) is done by the compiler.
"""
from __future__ import annotations

import functools

import operator

from .. import types as T
from .helpers import bool_result as _bool
from .helpers import float_int
from .helpers import target as _target
from ..registry import add_builtin, same_as
from ..types import Any, Float, Int, Scalar, matrix, vector

MF = matrix((Any, Any), Float)
MI = matrix((Any, Any), Int)
MS = matrix((Any, Any), Scalar)
MA = matrix((Any, Any), Any)
VF = vector(Any, Float)
VI = vector(Any, Int)
VS = vector(Any, Scalar)
VA = vector(Any, Any)
V3F = vector(3, Float)
V3I = vector(3, Int)

_G = "matrix"


# ---------------------------------------------------------------------------
# Match predicates and result types


def _same_matrices(info) -> bool:
    ms = [t for t in info.arg_types if T.is_matrix(t)]
    return all(t is ms[0] for t in ms)


def _same_vectors(info) -> bool:
    vs = [t for t in info.arg_types if T.is_vector(t)]
    return bool(vs) and all(t is vs[0] for t in vs)


def _int_args(*positions):
    def f(info) -> bool:
        return all(T.is_int(info.arg_types[p]) for p in positions if p < len(info.arg_types))

    return f


def _shape(t):
    return t._shape


def _scalar0(info):
    return T.scalar_of(info.arg_types[0])


def _square(name):
    """Result-type guard: the first argument must be a square matrix."""

    def check(info):
        r, c = _shape(info.arg_types[0])
        if r != c:
            raise TypeError(f"{name}() needs a square matrix, got shape ({r}, {c})")

    return check


def _square_then(name, value_type):
    check = _square(name)

    def f(info):
        check(info)
        return value_type(info)

    f.__name__ = f"{name}_value_type"
    return f


def _mat(rows, cols, dtype):
    return matrix((rows, cols), dtype)


_float_int = functools.partial(float_int, group=_G)  # this module's default group

# ---------------------------------------------------------------------------
# Operators

_float_int("add", {"a": MF, "b": MF}, {"a": MI, "b": MI}, same_as(0),
           "Element-wise a + b of two matrices of one shape.", group="operator", match=_same_matrices)
_float_int("sub", {"a": MF, "b": MF}, {"a": MI, "b": MI}, same_as(0),
           "Element-wise a - b of two matrices of one shape.", group="operator", match=_same_matrices)
_float_int("neg", {"x": MF}, {"x": MI}, same_as(0), "-x, element-wise.", group="operator")
_float_int("pos", {"x": MF}, {"x": MI}, same_as(0), "+x.", group="operator")
_float_int("mul", {"a": MF, "b": Float}, {"a": MI, "b": Int}, same_as(0),
           "Matrix a scaled by scalar b.", group="operator")
_float_int("mul", {"a": Float, "b": MF}, {"a": Int, "b": MI}, same_as(1),
           "Matrix b scaled by scalar a.", group="operator")
_float_int("div", {"a": MF, "b": Float}, {"a": MI, "b": Int}, same_as(0),
           "Matrix a divided by scalar b, element-wise.", group="operator")
_float_int("div", {"a": Float, "b": MF}, {"a": Int, "b": MI}, same_as(1),
           "Scalar a divided by each element of matrix b.", group="operator")
for _key, _sym in (("bit_and", "&"), ("bit_or", "|"), ("bit_xor", "^"), ("lshift", "<<"), ("rshift", ">>")):
    add_builtin(_key, {"a": MI, "b": MI}, same_as(0), differentiable=False, match=_same_matrices, group="operator",
                doc=f"Element-wise a {_sym} b of two integer matrices of one shape (as for scalars).")
add_builtin("invert", {"a": MI}, same_as(0), differentiable=False, group="operator",
            doc="Element-wise bitwise complement ~a of an integer matrix.")


def _mat_vec_ok(info) -> bool:
    m, v = info.arg_types
    return _shape(m)[1] == _shape(v)[0]


def _mat_vec_type(info):
    m = info.arg_types[0]
    return vector(_shape(m)[0], m._dtype)


def _vec_mat_ok(info) -> bool:
    v, m = info.arg_types
    return _shape(v)[0] == _shape(m)[0]


def _vec_mat_type(info):
    m = info.arg_types[1]
    return vector(_shape(m)[1], m._dtype)


def _mat_mat_ok(info) -> bool:
    a, b = info.arg_types
    return _shape(a)[1] == _shape(b)[0]


def _mat_mat_type(info):
    a, b = info.arg_types
    return _mat(_shape(a)[0], _shape(b)[1], a._dtype)


_float_int("mul", {"a": MF, "b": VF}, {"a": MI, "b": VI}, _mat_vec_type,
           "Matrix times column vector (a @ b): an (R, C) matrix and a length-C vector give a length-R "
           "vector.", group="operator", match=_mat_vec_ok)
_float_int("mul", {"a": VF, "b": MF}, {"a": VI, "b": MI}, _vec_mat_type,
           "Row vector times matrix (a @ b): a length-R vector and an (R, C) matrix give a length-C "
           "vector.", group="operator", match=_vec_mat_ok)
_float_int("mul", {"a": MF, "b": MF}, {"a": MI, "b": MI}, _mat_mat_type,
           "Matrix product (a @ b) of an (R, K) and a (K, C) matrix.", group="operator", match=_mat_mat_ok)
for _key, _what in (("isfinite", "all elements are finite"), ("isnan", "any element is NaN"),
                    ("isinf", "any element is infinite")):
    add_builtin(_key, {"a": MS}, T.bool, differentiable=False, group=_G,
                doc=f"True if {_what}.")
for _key, _sym in (("eq", "=="), ("ne", "!=")):
    add_builtin(_key, {"a": MA, "b": MA}, _bool, differentiable=False, match=_same_matrices, hidden=True,
                group="operator", doc=f"a {_sym} b: compares every element exactly.")

# ---------------------------------------------------------------------------
# Constructors: mat33(), mat33(2.0), mat33d(m). mat22(a, b, c, d) is built by the compiler.


def _ctor_native(name):
    """``sk::mat_<name><R, C, T>``: the target's shape and dtype as template arguments."""

    def f(info, ret):
        t = info.target
        return f"sk::mat_{name}<{t._shape[0]}, {t._shape[1]}, {t._dtype._ctype}>"

    f.__name__ = f"native_mat_{name}"
    return f


def _same_shape_as_target(info) -> bool:
    t = info.target
    return t is not None and T.is_matrix(info.arg_types[0]) and _shape(info.arg_types[0]) == t._shape


def _from_vectors_error(info):
    raise TypeError("Passing vectors to a matrix constructor isn't supported (as in Warp): use "
                    "matrix_from_rows() or matrix_from_cols() instead.")


add_builtin("matrix", {}, _target, native=_ctor_native("zero"), constructor=True, differentiable=False,
            group=_G, doc="The zero matrix: mat33().")
add_builtin("matrix", {"value": Float}, _target, native=_ctor_native("fill"), constructor=True,
            group=_G, doc="A matrix with every element equal to value (not only the diagonal): "
                          "mat33(2.0).")
add_builtin("matrix", {"value": Int}, _target, native=_ctor_native("fill"), constructor=True,
            differentiable=False, group=_G, doc="A matrix with every element equal to value.")
add_builtin("matrix", {"m": MF}, _target, native=_ctor_native("cast"), constructor=True,
            match=lambda info: _same_shape_as_target(info) and T.is_float(info.target._dtype), group=_G,
            doc="Matrix m converted element by element to another dtype: mat33d(m).")
add_builtin("matrix", {"m": MA}, _target, native=_ctor_native("cast"), constructor=True,
            differentiable=False, match=_same_shape_as_target, group=_G,
            doc="Matrix m converted element by element to another dtype.")
add_builtin("matrix", {"rows": VA}, _from_vectors_error, native="sk::matrix_from_rows", constructor=True,
            variadic=True, differentiable=False, match=lambda info: len(info.arg_types) > 0, hidden=True,
            group=_G, doc="Not supported, as in Warp: use matrix_from_rows() or matrix_from_cols().")


def _identity_type(info):
    n = info.const_values[0] if info.const_values else None
    try:
        n = None if isinstance(n, bool) else operator.index(n)
    except TypeError:
        n = None
    if n is None or n < 1:
        raise TypeError("identity(n, dtype): n must be a positive integer known at compile time")
    dtype = T.float32
    if len(info.arg_types) > 1:
        d = info.const_values[1] if len(info.const_values) > 1 else None
        dtype = T.normalize_dtype(d) if d is not None else None
        if not T.is_scalar(dtype) or dtype is T.bool:
            raise TypeError("identity(n, dtype): dtype must be a scalar type such as float32 or float64")
    return _mat(n, n, dtype)


def _identity_native(info, ret):
    t = _identity_type(info)
    return f"sk::mat_identity<{t._shape[0]}, {t._dtype._ctype}>"


_IDENTITY_DOC = ("The n x n identity matrix of dtype (float32 by default): identity(n=3, dtype=float64). "
                 "n and dtype must be compile-time constants.")
# (n, dtype) first: keyword arguments bind by the first overload's names. The dtype argument
# is a type, which code generation drops: the C++ call is sk::mat_identity<n, T>(n).
add_builtin("identity", {"n": Any, "dtype": Any}, _identity_type, native=_identity_native,
            differentiable=False, group=_G, match=_int_args(0), doc=_IDENTITY_DOC)
add_builtin("identity", {"n": Any}, _identity_type, native=_identity_native, differentiable=False, group=_G,
            match=_int_args(0), doc=_IDENTITY_DOC)


def _from_cols_type(info):
    v = info.arg_types[0]
    return _mat(_shape(v)[0], len(info.arg_types), v._dtype)


def _from_rows_type(info):
    v = info.arg_types[0]
    return _mat(len(info.arg_types), _shape(v)[0], v._dtype)


_float_int("matrix_from_cols", {"cols": VF}, {"cols": VI}, _from_cols_type,
           "The matrix whose columns are the given vectors (all of one type).", match=_same_vectors,
           variadic=True)
_float_int("matrix_from_rows", {"rows": VF}, {"rows": VI}, _from_rows_type,
           "The matrix whose rows are the given vectors (all of one type).", match=_same_vectors,
           variadic=True)


def _diag_type(info):
    v = info.arg_types[0]
    return _mat(_shape(v)[0], _shape(v)[0], v._dtype)


_float_int("diag", {"vec": VF}, {"vec": VI}, _diag_type, "The square matrix with vec on its diagonal.")
_float_int("get_diag", {"mat": MF}, {"mat": MI},
           _square_then("get_diag", lambda info: vector(_shape(info.arg_types[0])[0], info.arg_types[0]._dtype)),
           "The diagonal of a square matrix, as a vector.")

# ---------------------------------------------------------------------------
# Component access: m[i, j], m[i] (extract) and m[i, j] = x, m[i] = row (assign)


def _row_type(info):
    m = info.arg_types[0]
    return vector(_shape(m)[1], m._dtype)


def _row_ok(info) -> bool:
    m, _, v = info.arg_types
    return T.is_vector(v) and v is _row_type(info)


_ACCESS = dict(hidden=True, checked=True, group=_G)  # checked: debug builds report out-of-range indices
add_builtin("extract", {"a": MF, "i": Any}, _row_type, match=_int_args(1), **_ACCESS,
            doc="Row i of matrix a (a[i]), as a vector; negative i counts from the end.")
add_builtin("extract", {"a": MA, "i": Any}, _row_type, differentiable=False, match=_int_args(1), **_ACCESS,
            doc="Row i of matrix a (a[i]), as a vector; negative i counts from the end.")
add_builtin("extract", {"a": MF, "i": Any, "j": Any}, _scalar0, match=_int_args(1, 2), **_ACCESS,
            doc="Element a[i, j] (row i, column j).")
add_builtin("extract", {"a": MA, "i": Any, "j": Any}, _scalar0, differentiable=False, match=_int_args(1, 2),
            **_ACCESS, doc="Element a[i, j] (row i, column j).")
add_builtin("assign", {"a": MF, "i": Any, "j": Any, "value": Float}, same_as(0), match=_int_args(1, 2), **_ACCESS,
            doc="A copy of matrix a with element [i, j] set to value.")
add_builtin("assign", {"a": MA, "i": Any, "j": Any, "value": Any}, same_as(0), differentiable=False, **_ACCESS,
            match=lambda info: _int_args(1, 2)(info) and info.arg_types[3] is T.scalar_of(info.arg_types[0]),
            doc="A copy of matrix a with element [i, j] set to value.")
add_builtin("assign", {"a": MF, "i": Any, "value": VF}, same_as(0), **_ACCESS,
            match=lambda info: _int_args(1)(info) and _row_ok(info),
            doc="A copy of matrix a with row i set to vector value.")
add_builtin("assign", {"a": MA, "i": Any, "value": VA}, same_as(0), differentiable=False, **_ACCESS,
            match=lambda info: _int_args(1)(info) and _row_ok(info),
            doc="A copy of matrix a with row i set to vector value.")

# ---------------------------------------------------------------------------
# Functions


def _outer_type(info):
    a, b = info.arg_types
    return _mat(_shape(a)[0], _shape(b)[0], a._dtype)


def _transpose_type(info):
    m = info.arg_types[0]
    r, c = _shape(m)
    return _mat(c, r, m._dtype)


_float_int("outer", {"a": VF, "b": VF}, {"a": VI, "b": VI}, _outer_type,
           "Outer product a b^T: outer(a, b)[i, j] == a[i] * b[j].")
_float_int("skew", {"vec": V3F}, {"vec": V3I}, lambda info: _mat(3, 3, info.arg_types[0]._dtype),
           "The 3x3 skew-symmetric matrix of vec: skew(a) @ b == cross(a, b).")
_float_int("transpose", {"a": MF}, {"a": MI}, _transpose_type, "Transpose of a.")
_float_int("trace", {"a": MF}, {"a": MI}, _square_then("trace", _scalar0),
           "Sum of the diagonal of a square matrix.")
_float_int("ddot", {"a": MF, "b": MF}, {"a": MI, "b": MI}, _scalar0,
           "Double dot product sum_ij a[i, j] * b[i, j] of two matrices of one shape.", match=_same_matrices)
_float_int("cw_mul", {"a": MF, "b": MF}, {"a": MI, "b": MI}, same_as(0),
           "Element-wise product of a and b.", match=_same_matrices)
_float_int("cw_div", {"a": MF, "b": MF}, {"a": MI, "b": MI}, same_as(0),
           "Element-wise quotient a / b (integer division by zero gives 0).", match=_same_matrices)
add_builtin("determinant", {"a": MF}, _square_then("determinant", _scalar0), group=_G,
            doc="Determinant of a square matrix (any size; closed forms up to 4x4). Its gradient is the "
                "cofactor matrix (det(a) * inverse(a)^T), exact for singular matrices too.")
add_builtin("inverse", {"a": MF}, _square_then("inverse", same_as(0)), group=_G,
            doc="Inverse of a square matrix (any size); a singular matrix gives the zero matrix and a zero "
                "gradient. Closed forms up to 3x3; from 4x4 Gauss-Jordan elimination with partial pivoting, "
                "which leaves a smaller residual than the adjugate (float32 4x4: about a third).")
add_builtin("lerp", {"a": MF, "b": MF, "t": Float}, same_as(0), match=_same_matrices, group=_G,
            doc="Linear interpolation a * (1 - t) + b * t, element-wise.")

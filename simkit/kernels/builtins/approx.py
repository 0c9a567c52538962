"""``div_approx`` and ``inverse_approx``: Warp's forms of ``/`` and ``inverse`` that may use approximate GPU
intrinsics. simkit never computes approximately (its results stay IEEE on every device, as with fast math
off), so they are ``div`` and ``inverse`` themselves, exact, with their exact gradients.
"""
from ..registry import add_builtin, same_as
from ..types import Any, Float, matrix, quaternion, vector

_VF = vector(Any, Float)
_MF = matrix((Any, Any), Float)
_QF = quaternion(Float)

_NOTE = " Exact on every device in simkit (Warp may use an approximate GPU intrinsic)."
for _a, _b, _ret, _doc in ((Float, Float, 0, "a / b."),
                           (_VF, Float, 0, "Vector a divided by scalar b."),
                           (Float, _VF, 1, "Scalar a divided by each component of vector b."),
                           (_MF, Float, 0, "Matrix a divided by scalar b."),
                           (Float, _MF, 1, "Scalar a divided by each element of matrix b."),
                           (_QF, Float, 0, "Quaternion a divided by scalar b (the result is not normalized)."),
                           (Float, _QF, 1, "Scalar a divided by each component of quaternion b.")):
    add_builtin("div_approx", {"a": _a, "b": _b}, same_as(_ret), native="sk::div", group="operator",
                doc=_doc + _NOTE)

for _n in (2, 3, 4):
    add_builtin("inverse_approx", {"a": matrix((_n, _n), Float)}, same_as(0), native="sk::inverse", group="matrix",
                doc="Inverse of a 2x2, 3x3 or 4x4 matrix, as ``inverse`` (a singular matrix gives the zero "
                    "matrix)." + _NOTE)

"""Array constructors: ``zeros``, ``empty``, ``ones``, ``full`` (and their ``_like`` forms), ``clone``
and ``from_numpy``. Shapes are checked (non-negative), ``full`` infers the element type from its
value as Warp does, and ``retain_grad`` keeps an array's gradient through a backward pass."""
from __future__ import annotations

import numpy as np

from ..kernels import types as T
from .array import array, check_shape, copy


def _shape(shape, n=None) -> tuple:
    """A constructor's shape: an int or a sequence; ``n=`` is Warp's older keyword for a 1D length."""
    if n is not None:
        if shape is not None:
            raise TypeError("give either shape or n (Warp's older keyword for a 1D length), not both")
        shape = n
    if shape is None:
        shape = 0  # Warp: an empty array
    shape = (int(shape),) if isinstance(shape, (int, np.integer)) else tuple(int(s) for s in shape)
    check_shape(shape)
    return shape


def zeros(shape=None, dtype=float, device=None, requires_grad=False, pinned=False, retain_grad=False, *,
          n=None) -> array:
    """A zero-filled array. ``zeros(10, dtype=sk.vec3)``. ``pinned=True``: a CPU array in page-locked
    memory, which copies to and from a GPU do asynchronously (ignored for GPU arrays, as in Warp)."""
    return array(shape=_shape(shape, n), dtype=dtype, device=device, requires_grad=requires_grad, pinned=pinned,
                 retain_grad=retain_grad)


def empty(shape=None, dtype=float, device=None, requires_grad=False, pinned=False, retain_grad=False, *,
          n=None) -> array:
    return array(shape=_shape(shape, n), dtype=dtype, device=device, requires_grad=requires_grad, pinned=pinned,
                 retain_grad=retain_grad)  # (zeroed all the same: never uninitialised memory)


zeros._simkit_in_kernel = "zeros"  # in a kernel: a fixed-size array (kernels/fixed_arrays.py)
empty._simkit_in_kernel = "empty"
array._simkit_in_kernel = "array"  # array(ptr=..., shape=..., dtype=...) in a kernel: a view of that memory


def ones(shape=None, dtype=float, device=None, requires_grad=False, pinned=False, retain_grad=False, *,
         n=None) -> array:
    return full(_shape(shape, n), 1, dtype, device, requires_grad, pinned, retain_grad)


def full(shape=None, value=0, dtype=None, device=None, requires_grad=False, pinned=False, retain_grad=False, *,
         n=None) -> array:
    """An array of ``value``. Without ``dtype``, the type is the value's: int32 for an int, float32 for a
    float, bool, a vector/matrix/struct value's type, a vector (matrix) for a 1D (2D) sequence."""
    dtype = fill_dtype(value) if dtype is None else dtype
    a = array(shape=_shape(shape, n), dtype=dtype, device=device, requires_grad=requires_grad, pinned=pinned,
              retain_grad=retain_grad, _zero=False)  # (not zeroed first: fill_ writes every element)
    a.fill_(value)
    return a


def fill_dtype(value):
    """The element type ``full`` gives ``value`` (as Warp's)."""
    t = T.type_of_value(value)
    if t is not None:
        return t
    v = np.asarray(value)
    scalar = {"i": T.int32, "u": T.int32, "f": T.float32, "b": T.bool}.get(v.dtype.kind)
    if isinstance(value, np.ndarray) and v.dtype.kind in "iufb":
        scalar = T.scalar_from_numpy(v.dtype)
    if scalar is None or v.ndim not in (1, 2) or v.size == 0:
        raise TypeError(f"full(): cannot infer an element type from {type(value).__name__} {value!r}; give dtype=")
    return T.vector(v.shape[0], scalar) if v.ndim == 1 else T.matrix(v.shape, scalar)


def zeros_like(a: array, device=None, requires_grad=None, pinned=None) -> array:
    """Zeros of ``a``'s shape and dtype, on ``a``'s device unless ``device`` is given (Warp's order of
    arguments)."""
    return zeros(a.shape, dtype=a.dtype, device=a.device if device is None else device,
                 requires_grad=a.requires_grad if requires_grad is None else requires_grad,
                 pinned=a.pinned if pinned is None else pinned)


def empty_like(a: array, device=None, requires_grad=None, pinned=None) -> array:
    return zeros_like(a, device, requires_grad, pinned)


def ones_like(a: array, device=None, requires_grad=None, pinned=None) -> array:
    return full_like(a, 1, device, requires_grad, pinned)


def full_like(a: array, value, device=None, requires_grad=None, pinned=None) -> array:
    out = zeros_like(a, device, requires_grad, pinned)
    out.fill_(value)
    return out


def clone(a: array, device=None, requires_grad=None, pinned=False) -> array:
    out = array(shape=a.shape, dtype=a.dtype, device=device or a.device, pinned=pinned, _zero=False,
                requires_grad=a.requires_grad if requires_grad is None else requires_grad)
    copy(out, a)  # (writes every element: not zeroed first)
    return out


def from_numpy(arr, dtype=None, shape=None, device=None, requires_grad=False) -> array:
    a = array(arr, dtype=dtype if dtype is not None else T.Any, device=device, requires_grad=requires_grad)
    return a.reshape(shape) if shape is not None else a

"""Element-wise conversion between arrays: ``array_cast`` (Warp's ``wp.utils.array_cast``)."""
from __future__ import annotations

from ..kernels import kernel
from ..kernels import lang as sk
from ..kernels import types as T
from ..runtime import array, copy
from ._common import run, scalar_type, type_size


@kernel
def _cast_1d(dest: array(dtype=T.Any), src: array(dtype=T.Any)):
    i = sk.tid()
    dest[i] = dest.dtype(src[i])


@kernel
def _cast_2d(dest: array(dtype=T.Any, ndim=2), src: array(dtype=T.Any, ndim=2)):
    i, j = sk.tid()
    dest[i, j] = dest.dtype(src[i, j])


@kernel
def _cast_3d(dest: array(dtype=T.Any, ndim=3), src: array(dtype=T.Any, ndim=3)):
    i, j, k = sk.tid()
    dest[i, j, k] = dest.dtype(src[i, j, k])


@kernel
def _cast_4d(dest: array(dtype=T.Any, ndim=4), src: array(dtype=T.Any, ndim=4)):
    i, j, k, m = sk.tid()
    dest[i, j, k, m] = dest.dtype(src[i, j, k, m])


_CAST = {1: _cast_1d, 2: _cast_2d, 3: _cast_3d, 4: _cast_4d}


def _scalars(a: array) -> array:
    """A contiguous array as a flat array of its scalars (sharing memory)."""
    a = a.flatten()
    return a if T.is_scalar(a.dtype) else a.view(scalar_type(a.dtype)).flatten()


def array_cast(in_array: array, out_array: array, count: int | None = None) -> None:
    """Convert ``in_array``'s elements into ``out_array``'s dtype (Warp's ``wp.utils.array_cast``).

    With the same number of dimensions and the same element shape, element ``i`` of ``out_array`` is
    ``in_array[i]`` converted; otherwise both arrays are cast as flat sequences of scalars (``count`` then
    counts ``in_array`` elements). ``count`` (default all) is only for 1D casts; equal dtypes copy.

    >>> import simkit as sk
    >>> out = sk.zeros(2, dtype=int)
    >>> sk.utils.array_cast(sk.array([1.5, 2.5]), out)
    >>> out.numpy().tolist()
    [1, 2]
    """
    if in_array.device != out_array.device:
        raise RuntimeError(f"Array storage devices do not match ({in_array.device} vs {out_array.device})")
    in_shape = getattr(in_array.dtype, "_shape_", ())
    out_shape = getattr(out_array.dtype, "_shape_", ())
    if in_array.ndim != out_array.ndim or in_shape != out_shape:
        # different layouts: cast scalar by scalar
        comps = type_size(in_array.dtype)
        in_array, out_array = _scalars(in_array), _scalars(out_array)
        if count is not None:
            count *= comps
    if count is None:
        count = in_array.size
    if in_array.ndim == 1:
        dim = count
    elif count < in_array.size:
        raise RuntimeError("Partial cast is not supported for arrays with more than one dimension")
    else:
        dim = in_array.shape
    if in_array.dtype == out_array.dtype:
        copy(out_array, in_array, count=count)
        return
    if in_array.ndim > 1 and in_array.shape != out_array.shape:
        raise RuntimeError(f"Array shapes do not match ({in_array.shape} vs {out_array.shape})")
    if count > in_array.size or count > out_array.size:
        raise RuntimeError(f"Cast count ({count}) exceeds the input size ({in_array.size}) or output size "
                           f"({out_array.size})")
    run(_CAST[in_array.ndim], dim, [out_array, in_array], out_array.device)

"""``config.verify_fp``: after each launch, look for NaN and infinity in the arrays the kernel wrote.

A debugging mode (Warp's option of that name): each launch is followed by a synchronisation and a read of
every floating-point array the kernel can write (struct fields and vector / matrix components included).
The first non-finite value of each array is reported as a ``NonFiniteWarning`` naming the kernel, the
array, the element's index and the value; Python's warning filters then decide (``-W error`` stops at it).

Example::

    sk.config.verify_fp = True
    sk.launch(divide, n, inputs=[x, zeros])   # NonFiniteWarning: kernel 'divide' wrote nan to array 'x' at [0]
"""
from __future__ import annotations

import warnings

import numpy as np

from ..kernels import analysis
from ..kernels import types as T


class NonFiniteWarning(RuntimeWarning):
    """A launch wrote NaN or infinity into an array (``config.verify_fp``)."""


def _first_bad(values: np.ndarray):
    """(index, value, field) of the first non-finite float in ``values`` (a structured array's fields
    searched in order), or None."""
    if values.dtype.names:
        for name in values.dtype.names:
            found = _first_bad(values[name])
            if found is not None:
                index, value, field = found
                return index, value, name + (f".{field}" if field else "")
        return None
    if values.dtype.kind not in "fc" or values.size == 0:
        return None
    bad = ~np.isfinite(values)
    if not bad.any():
        return None
    flat = int(np.flatnonzero(bad)[0])
    return tuple(int(i) for i in np.unravel_index(flat, values.shape)), values.flat[flat], ""


def check(kernel, spec, args, access) -> None:
    """After ``kernel`` ran with ``args``: warn for each written array holding a non-finite value."""
    by_name = dict(zip(kernel.param_names, args))
    for path in access.writes:
        a = analysis.resolve(path, by_name)
        if a is None or getattr(a, "is_type", False) or not a.size:
            continue
        dtype = a.dtype
        if not (T.is_struct(dtype) or T.is_float(getattr(dtype, "_dtype", dtype))):
            continue
        found = _first_bad(a.numpy())
        if found is None:
            continue
        index, value, field = found
        where = f"[{', '.join(map(str, index[:a.ndim]))}]" + (f".{field}" if field else "")
        if len(index) > a.ndim:  # a component of a vector or matrix element
            where += f" component {index[a.ndim:] if len(index) > a.ndim + 1 else index[a.ndim]}"
        src = kernel.source()
        warnings.warn(f"kernel '{kernel.key}' ({src.filename}:{src.first_line}) wrote {value} to array "
                      f"'{'.'.join(path)}' at {where}", NonFiniteWarning, stacklevel=3)

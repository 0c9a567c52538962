"""bfloat16 ("brain" floating point) on the host: its numpy dtype and its bit conversions.

A bfloat16 is the upper half of a float32: 1 sign bit, 8 exponent bits (float32's range), 7 mantissa
bits (about 3 significant decimal digits). Kernels compute with it in float32 and store results rounded
to the nearest bfloat16, ties to even, as Warp does (native/bfloat16.h).

numpy has no bfloat16 of its own. Where the ``ml_dtypes`` package is installed (it comes with JAX), the
host side of ``sk.bfloat16`` is ``ml_dtypes.bfloat16``: ``array.numpy()`` of a bfloat16 array has that
dtype (its values print and compute as numbers), ``np.dtype(sk.bfloat16)`` and
``sk.dtype_to_numpy(sk.bfloat16)`` name it, and ``sk.bfloat16(3.14)`` is an ``ml_dtypes.bfloat16`` scalar.
Without ``ml_dtypes``, host data is the raw bit patterns as ``np.uint16`` (Warp's own fallback):
``.numpy()`` returns them, and :func:`bits_to_float32` reads them::

    >>> import simkit as sk
    >>> from simkit.kernels.types_bf16 import as_bits, bits_to_float32
    >>> a = sk.array([1.0, 3.14159, -2.5], dtype=sk.bfloat16, device="cpu")
    >>> bits_to_float32(as_bits(a.numpy())).tolist()
    [1.0, 3.140625, -2.5]

Either way an array of bfloat16 made from data converts numbers (through float32, rounded to nearest
even) and takes ``np.uint16`` data as bit patterns, unchanged (as Warp does); an ``ml_dtypes.bfloat16``
array is taken as it is.
"""
from __future__ import annotations

import numpy as np

_host: tuple | None = None  # (has ml_dtypes, the host dtype), once asked for


def host() -> tuple:
    """``(HAS_ML_DTYPES, NP_DTYPE)``. ``ml_dtypes`` is imported on first use, not with simkit: its import took
    0.59 s, 60% of ``import simkit`` (2026-12-07, 2-core CI machine). Also ``types_bf16.HAS_ML_DTYPES`` and
    ``types_bf16.NP_DTYPE``."""
    global _host
    if _host is None:
        try:  # (optional: JAX depends on it)
            import ml_dtypes

            _host = (True, np.dtype(ml_dtypes.bfloat16))
        except ImportError:  # pragma: no cover - exercised by tests/test_bfloat16.py in a subprocess
            _host = (False, np.dtype(np.uint16))
    return _host


def __getattr__(name):
    if name == "HAS_ML_DTYPES":
        return host()[0]
    if name == "NP_DTYPE":
        return host()[1]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

# the typestr of bfloat16 data in array interfaces (numpy's for ml_dtypes.bfloat16 is an anonymous '<V2')
TYPESTR = "<u2"


def float32_to_bits(values) -> np.ndarray:
    """float32 values -> bfloat16 bit patterns (np.uint16), rounded to nearest, ties to even; a NaN stays a
    (quiet) NaN and values past the largest bfloat16 become infinities."""
    u = np.asarray(values, dtype=np.float32).view(np.uint32).astype(np.uint64)
    rounded = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    nan = (u & 0x7FFFFFFF) > 0x7F800000
    return np.where(nan, ((u >> 16) | 0x40).astype(np.uint16), rounded)


def bits_to_float32(bits) -> np.ndarray:
    """bfloat16 bit patterns (np.uint16) -> their float32 values (exact)."""
    return (np.asarray(bits, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32)


def as_bits(a: np.ndarray) -> np.ndarray:
    """The bit patterns (np.uint16 view) of host bfloat16 data (``ml_dtypes.bfloat16`` or already uint16)."""
    a = np.asarray(a)
    NP_DTYPE = host()[1]
    if a.dtype == NP_DTYPE or a.dtype == np.uint16:
        return a.view(np.uint16)
    raise TypeError(f"expected bfloat16 data (dtype {NP_DTYPE} or uint16 bit patterns), got dtype {a.dtype}")


def host_data(data) -> np.ndarray:
    """``data`` as a numpy array of the bfloat16 host dtype: uint16 arrays are bit patterns (kept), arrays of
    the host dtype are kept, anything else is converted to float32, then rounded to bfloat16."""
    NP_DTYPE = host()[1]
    if isinstance(data, np.ndarray) and data.dtype in (NP_DTYPE, np.dtype(np.uint16)):
        return data if data.dtype == NP_DTYPE else data.view(NP_DTYPE)
    if isinstance(data, np.ndarray) and data.dtype.kind == "V" and data.dtype.itemsize == 2:  # other bf16 dtypes
        return data.view(NP_DTYPE)
    return float32_to_bits(np.asarray(data, dtype=np.float32)).view(NP_DTYPE)


def scalar(value=0):
    """``sk.bfloat16(value)``: an ``ml_dtypes.bfloat16`` scalar; without ml_dtypes, a np.float32 holding the
    rounded value (the host has no bfloat16 scalar then)."""
    rounded = float32_to_bits(np.float32(value))
    HAS_ML_DTYPES, NP_DTYPE = host()
    return rounded.view(NP_DTYPE)[()] if HAS_ML_DTYPES else bits_to_float32(rounded)[()]


def to_bytes(value) -> bytes:
    """The 2 bytes of ``value`` as a bfloat16 (a kernel argument, a struct field)."""
    if isinstance(value, np.generic) and value.dtype == host()[1] and host()[0]:
        return value.tobytes()
    return float32_to_bits(np.float32(value)).tobytes()


def is_bf16_dtype(dt) -> bool:
    """Is numpy dtype ``dt`` the bfloat16 host dtype (``ml_dtypes.bfloat16``; never uint16)?"""
    HAS_ML_DTYPES, NP_DTYPE = host()
    return HAS_ML_DTYPES and np.dtype(dt) == NP_DTYPE

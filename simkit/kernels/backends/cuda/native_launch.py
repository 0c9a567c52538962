"""A GPU launch in one C call: the context check and ``cuLaunchKernel`` without Python in between.

Launch overhead is a target (``benchmarks/gpu.py``: <= 10 us per launch). Through cuda-python a
launch costs two binding calls (``cuCtxSetCurrent``, ``cuLaunchKernel``, with their result tuples
and enum conversions) and a ctypes ``void*[2]`` built for ``kernelParams``. Here the same two driver
functions are called from a few lines of C (``native_call.cuda_launch``, a fast-call builtin): one
call per launch, which makes the context current only when it is not (another library, or another
device's launch, may have changed it on this thread).

The driver's function pointers come from cuda-python (``cuGetProcAddress``), so the launch goes to
the same driver library the rest of the backend talks to. Where that is not possible (no compiler,
an emulated driver without ``cuGetProcAddress``, or ``simkit.config.native_calls = False``)
:func:`launcher` returns None and launches go through cuda-python.
"""
from __future__ import annotations

import ctypes

from .. import native_call

SYMBOLS = ("cuLaunchKernel", "cuCtxGetCurrent", "cuCtxSetCurrent")
_ABI_VERSION = 12000  # the CUDA version whose signatures of SYMBOLS native_call's C source declares


class Launcher:
    """``fn(driver, ctx, func, grid, block, stream, args, bounds) -> CUresult`` (an int), with ``driver``
    the address of this launcher's table of the driver functions at ``addresses`` (of :data:`SYMBOLS`)."""

    __slots__ = ("fn", "table", "driver")

    def __init__(self, fn, addresses):
        self.fn = fn
        self.table = (ctypes.c_void_p * 3)(*addresses)  # kept alive with the launcher
        self.driver = ctypes.addressof(self.table)


def driver_addresses(api) -> tuple | None:
    """Addresses of :data:`SYMBOLS` in the driver behind cuda-python binding ``api``, or None."""
    version = int(api.cuDriverGetVersion()[1])
    out = []
    for name in SYMBOLS:
        r = api.cuGetProcAddress(name.encode(), min(version, _ABI_VERSION), 0)
        if int(r[0]) != 0 or not int(r[1]):
            return None
        out.append(int(r[1]))
    return tuple(out)


def launcher(api) -> Launcher | None:
    """A :class:`Launcher` for driver binding ``api``, or None (see the module docstring)."""
    fn = native_call.cuda_launch()
    if fn is None:
        return None
    try:
        addresses = driver_addresses(api)
    except Exception:  # noqa: BLE001  (a driver binding without cuGetProcAddress)
        return None
    return Launcher(fn, addresses) if addresses is not None else None

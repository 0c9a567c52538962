"""A GPU launch in one C call: the context check and ``cuLaunchKernel`` without Python in between.

Launch overhead is a target (``benchmarks/gpu.py``: <= 10 us per launch). Through cuda-python a
launch costs two binding calls (``cuCtxSetCurrent``, ``cuLaunchKernel``, with their result tuples
and enum conversions) and a ctypes ``void*[2]`` built for ``kernelParams``. Here the same two driver
functions are called from a few lines of C, built once with the system compiler (like the CPU
kernels) and cached: one ctypes call per launch, which makes the context current only when it is
not (another library, or another device's launch, may have changed it on this thread).

The driver's function pointers come from cuda-python (``cuGetProcAddress``), so the launch goes to
the same driver library the rest of the backend talks to. Where that is not possible (no compiler,
an emulated driver without ``cuGetProcAddress``, or ``simkit.config.cuda_native_launch = False``)
:func:`launcher` returns None and launches go through cuda-python as before.
"""
from __future__ import annotations

import ctypes
import hashlib
import os

from .... import config

_SOURCE = r"""
// simkit: one-call CUDA kernel launch (the driver's entry points are passed in: no CUDA headers needed)
typedef int (*launch_t)(void*, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, void*,
                        void**, void**);
typedef int (*get_ctx_t)(void**);
typedef int (*set_ctx_t)(void*);

// driver[0..2]: cuLaunchKernel, cuCtxGetCurrent, cuCtxSetCurrent. Launches func over grid x block threads
// on stream, ctx made current first if it is not; the driver copies both parameters (the packed argument
// struct and the launch bounds) during the call. Returns a CUresult.
extern "C" __attribute__((visibility("default"))) int sk_cuda_launch(void* const* driver, void* ctx, void* func,
                                                                     unsigned grid, unsigned block, void* stream,
                                                                     const char* args, const char* bounds) {
    void* current = 0;
    int r = ((get_ctx_t)driver[1])(&current);
    if (r != 0) return r;
    if (current != ctx) {
        r = ((set_ctx_t)driver[2])(ctx);
        if (r != 0) return r;
    }
    void* params[2] = {(void*)args, (void*)bounds};
    return ((launch_t)driver[0])(func, grid, 1, 1, block, 1, 1, 0, stream, params, 0);
}
"""

_ARGTYPES = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_uint, ctypes.c_uint, ctypes.c_void_p,
             ctypes.c_char_p, ctypes.c_char_p]
SYMBOLS = ("cuLaunchKernel", "cuCtxGetCurrent", "cuCtxSetCurrent")
_ABI_VERSION = 12000  # the CUDA version whose signatures of SYMBOLS the C source declares

_library: list = []  # the loaded library, once built


def build(tag: str = "") -> ctypes.CDLL:
    """Compile (or take from the cache) the launch library; ``tag`` names a separate copy (tests)."""
    from .. import cpu

    key = hashlib.sha256(_SOURCE.encode()).hexdigest()[:16]
    path = os.path.join(cpu.cache_root(), "native", f"cuda_launch_{key}{tag}", "module.so")
    if not os.path.exists(path):
        cpu.build(_SOURCE, path, flags=["-O2", "-shared", "-fPIC", "-w"])
    return ctypes.CDLL(path)


class Launcher:
    """``launcher(ctx, func, grid, block, stream, args, bounds) -> CUresult`` (an int) through the driver
    functions at ``addresses`` (of :data:`SYMBOLS`, in that order)."""

    __slots__ = ("fn", "table", "driver")

    def __init__(self, lib: ctypes.CDLL, addresses):
        fn = lib.sk_cuda_launch
        fn.argtypes = _ARGTYPES
        fn.restype = ctypes.c_int
        self.fn = fn
        self.table = (ctypes.c_void_p * 3)(*addresses)  # kept alive with the launcher
        self.driver = ctypes.addressof(self.table)

    def __call__(self, ctx: int, func: int, grid: int, block: int, stream: int, args: bytes, bounds: bytes) -> int:
        return self.fn(self.driver, ctx, func, grid, block, stream, args, bounds)


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
    if not getattr(config, "cuda_native_launch", True):
        return None
    try:
        addresses = driver_addresses(api)
        if addresses is None:
            return None
        if not _library:
            _library.append(build())
        return Launcher(_library[0], addresses)
    except Exception:  # noqa: BLE001  (no compiler, no writable cache, a driver without cuGetProcAddress)
        return None

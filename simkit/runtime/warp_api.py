"""Small runtime functions under Warp's names, for Warp scripts that call them.

    wp.clear_kernel_cache()              # empty the compiled-kernel cache (what `simkit cache clear` does)
    wp.get_cuda_devices()                # the CUDA devices ([] without a GPU)
    wp.dtype_from_numpy(np.float64)      # simkit's float64
"""
from __future__ import annotations

import os
import shutil

import numpy as np

from ..kernels import types as T
from .device import Device, cuda_devices, get_device, is_cuda_available


def clear_kernel_cache() -> None:
    """Delete every compiled kernel library in the cache directory (kernels compile again on their next
    load in a new process; modules loaded in this one stay loaded)."""
    from ..kernels.backends.cpu import cache_root

    root = cache_root()
    for entry in os.listdir(root):
        path = os.path.join(root, entry)
        shutil.rmtree(path, ignore_errors=True) if os.path.isdir(path) else os.unlink(path)


def is_cpu_available() -> bool:
    """True: simkit always has the CPU device (it compiles with the system's C++ compiler)."""
    return True


def is_device_available(device) -> bool:
    """Whether ``device`` (a Device or a name such as "cuda:1") exists on this machine."""
    try:
        get_device(device)
    except (RuntimeError, ValueError):
        return False
    return True


def get_cuda_devices() -> list:
    """The CUDA devices (an empty list without a GPU or driver)."""
    return list(cuda_devices()) if is_cuda_available() else []


def get_cuda_device(ordinal: int | None = None) -> Device:
    """CUDA device ``ordinal`` (None: the current CUDA device, else cuda:0); RuntimeError without one."""
    if ordinal is None:
        current = get_device(None)
        return current if current.is_cuda else get_device("cuda:0")
    return get_device(f"cuda:{int(ordinal)}")


def get_cuda_supported_archs() -> list:
    """The GPU compute capabilities NVRTC compiles for, as ints (e.g. [75, 80, 86, 89, 90, ...]); [] where
    cuda-python's NVRTC is not installed. A GPU is not needed."""
    try:
        from ..kernels.backends.cuda.module import supported_archs
    except ImportError:
        return []
    return list(supported_archs())


def get_preferred_device() -> Device:
    """cuda:0 where a GPU is present, else the CPU."""
    return get_device("cuda:0") if is_cuda_available() else get_device("cpu")


def dtype_from_numpy(numpy_dtype) -> type:
    """The simkit scalar type of a numpy dtype (TypeError for one simkit has not)."""
    return T.scalar_from_numpy(numpy_dtype)


def dtype_to_numpy(simkit_dtype) -> np.dtype:
    """The numpy dtype of a simkit scalar type (a vector or matrix type: its scalar's)."""
    t = T.normalize_dtype(simkit_dtype)
    if T.is_value(t):
        t = t._dtype
    if not T.is_scalar(t):
        raise TypeError(f"dtype_to_numpy: {T.type_name(t)} has no numpy dtype")
    return np.dtype(t._np)


def transform_expand(t):
    """A transform from a flat sequence of 7 numbers: position (3), then quaternion (x, y, z, w)."""
    from ..kernels import types as T

    if len(t) != 7:
        raise ValueError(f"transform_expand takes 7 numbers (position, then quaternion x, y, z, w), got {len(t)}")
    return T.transform(tuple(t[0:3]), tuple(t[3:7]))


__all__ = ["clear_kernel_cache", "is_cpu_available", "is_device_available", "get_cuda_devices",
           "get_cuda_device", "get_cuda_supported_archs", "get_preferred_device", "dtype_from_numpy", "dtype_to_numpy",
           "transform_expand"]

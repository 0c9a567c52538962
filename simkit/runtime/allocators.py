"""Custom GPU memory allocators (Warp's ``set_device_allocator`` ... ``ScopedAllocator``).

Any object with ``allocate(size_in_bytes) -> int`` (a device pointer) and ``deallocate(ptr, size_in_bytes)``
can make a GPU's array memory, for example to take it from PyTorch's caching allocator or from RMM::

    class Logging:
        def __init__(self, inner):
            self.inner = inner
        def allocate(self, n):
            print("alloc", n)
            return self.inner.allocate(n)
        def deallocate(self, ptr, n):
            print("free", n)
            self.inner.deallocate(ptr, n)

    sk.set_device_allocator("cuda:0", Logging(sk.get_device("cuda:0").default_allocator))
    with sk.ScopedAllocator("cuda:0", None):        # the built-in allocator again, inside the block
        ...

It is called with the device's context current; while a graph is being captured it is called outside the
capture, and the graph keeps the memory. An array's memory goes back through the allocator that made it,
whatever is set when the array is collected. Only GPUs take custom allocators (as in Warp); the CPU's arrays
are numpy's memory.
"""
from __future__ import annotations

import ctypes
from typing import Protocol, runtime_checkable

from ..kernels.backends.cuda import allocators as _cuda
from ..kernels.backends.cuda import driver
from .device import cuda_devices, get_device


@runtime_checkable
class Allocator(Protocol):
    """What a memory allocator has (Warp's ``Allocator``): ``allocate(size_in_bytes) -> int`` and
    ``deallocate(ptr, size_in_bytes)``."""

    def allocate(self, size_in_bytes: int) -> int: ...

    def deallocate(self, ptr: int, size_in_bytes: int) -> None: ...


class HostAllocator:
    """Host memory from the C library (``aligned_alloc``, 64-byte aligned; ``free``): what
    ``get_device_allocator("cpu")`` gives. simkit's CPU arrays are numpy's memory, not this allocator's."""

    ALIGN = 64

    def __init__(self):
        libc = ctypes.CDLL(None)
        self._alloc, self._free = libc.aligned_alloc, libc.free
        self._alloc.restype, self._alloc.argtypes = ctypes.c_void_p, [ctypes.c_size_t, ctypes.c_size_t]
        self._free.argtypes = [ctypes.c_void_p]

    def allocate(self, size_in_bytes: int) -> int:
        n = max(1, -(-int(size_in_bytes) // self.ALIGN) * self.ALIGN)
        ptr = self._alloc(self.ALIGN, n)
        if not ptr:
            raise MemoryError(f"could not allocate {size_in_bytes} bytes of host memory")
        return ptr

    def deallocate(self, ptr: int, size_in_bytes: int) -> None:
        self._free(ptr)

    def __repr__(self):
        return "HostAllocator()"


_host = None


def _gpu(device, who: str):
    d = get_device(device)
    if not d.is_cuda:
        raise RuntimeError(f"{who}: custom allocators are only supported on CUDA devices, not on {d.alias}")
    return d


def set_device_allocator(device, allocator) -> None:
    """Make ``device``'s (a GPU's) array memory with ``allocator`` from now on; None: the built-in allocator
    again. A RuntimeError for the CPU, a TypeError for an object without ``allocate`` and ``deallocate``."""
    _cuda.check_allocator(allocator)
    d = _gpu(device, "set_device_allocator")
    st = driver.state(d)
    with st.lock:
        st.allocator = allocator


def set_cuda_allocator(allocator) -> None:
    """:func:`set_device_allocator` for every GPU (None: their built-in allocators again)."""
    _cuda.check_allocator(allocator)
    for d in cuda_devices():
        set_device_allocator(d, allocator)


def get_device_allocator(device=None):
    """The allocator ``device``'s arrays use now: a GPU's custom allocator, else its built-in one (its memory
    pool's or plain ``cuMemAlloc``); for the CPU, a :class:`HostAllocator`."""
    global _host
    d = get_device(device)
    if d.is_cpu:
        if _host is None:
            _host = HostAllocator()
        return _host
    st = driver.state(d)
    return st.allocator if st.allocator is not None else _cuda.builtin(d.ordinal)


class ScopedAllocator:
    """Within the block, ``device``'s arrays are made with ``allocator`` (None: the built-in one); the
    allocator set before comes back after."""

    def __init__(self, device, allocator):
        _cuda.check_allocator(allocator)
        self.device = _gpu(device, "ScopedAllocator")
        self.allocator = allocator
        self._saved = None

    def __enter__(self):
        st = driver.state(self.device)
        with st.lock:
            self._saved, st.allocator = st.allocator, self.allocator
        return self

    def __exit__(self, *exc):
        st = driver.state(self.device)
        with st.lock:
            st.allocator = self._saved
        return False


__all__ = ["Allocator", "HostAllocator", "set_device_allocator", "set_cuda_allocator", "get_device_allocator",
           "ScopedAllocator"]

"""Allocators of GPU memory: the built-in ones as objects, and allocations made by a user's allocator.

An allocator is any object with ``allocate(size_in_bytes) -> int`` (a device pointer) and ``deallocate(ptr,
size_in_bytes)`` (Warp's ``Allocator`` protocol). A device whose state holds one (``_DeviceState.allocator``,
set by ``sk.set_device_allocator``: runtime/allocators.py) makes every array's memory with it
(``driver.alloc``): called with the device's context current, and, while a graph is being captured, outside
the capture (as the built-in allocation is then). Its memory goes back through ``deallocate`` when the array
is collected (deferred past a capture, as other frees).
"""
from __future__ import annotations

import operator

from . import driver


class CudaDefaultAllocator:
    """Plain ``cuMemAlloc`` / ``cuMemFree`` on one GPU (Warp's ``device.default_allocator``)."""

    def __init__(self, ordinal: int):
        self.ordinal = ordinal

    def allocate(self, size_in_bytes: int) -> int:
        st = driver.state(self.ordinal)
        with st.pushed():
            return int(driver.check(st.api.cuMemAlloc(int(size_in_bytes)), f"cuMemAlloc({size_in_bytes} bytes)"))

    def deallocate(self, ptr: int, size_in_bytes: int) -> None:
        driver._free(driver.state(self.ordinal), int(ptr), False)  # (as an array's memory: deferred past a capture)

    def __repr__(self):
        return f"CudaDefaultAllocator(cuda:{self.ordinal})"


class CudaMempoolAllocator:
    """Stream-ordered ``cuMemAllocAsync`` from the GPU's default pool, on its current stream; freed ordered
    after the work of its blocking streams (what simkit's arrays use where pools are enabled)."""

    def __init__(self, ordinal: int):
        self.ordinal = ordinal

    def allocate(self, size_in_bytes: int) -> int:
        st = driver.state(self.ordinal)
        with st.pushed():
            return int(driver.check(st.api.cuMemAllocAsync(int(size_in_bytes), st.stream()),
                                    f"cuMemAllocAsync({size_in_bytes} bytes)"))

    def deallocate(self, ptr: int, size_in_bytes: int) -> None:
        driver._free(driver.state(self.ordinal), int(ptr), True)

    def __repr__(self):
        return f"CudaMempoolAllocator(cuda:{self.ordinal})"


_builtin: dict = {}  # (class, ordinal) -> the one instance (an allocator is compared by identity)


def builtin(ordinal: int, pooled: bool | None = None):
    """A GPU's built-in allocator: its pool's (``pooled``), plain ``cuMemAlloc`` (not ``pooled``), or the one its
    arrays use now (None). One instance of each per GPU."""
    if pooled is None:
        pooled = bool(driver.state(ordinal).pools)
    cls = CudaMempoolAllocator if pooled else CudaDefaultAllocator
    a = _builtin.get((cls, ordinal))
    if a is None:
        a = _builtin[(cls, ordinal)] = cls(ordinal)
    return a


def check_allocator(allocator) -> None:
    """A TypeError unless ``allocator`` is None or has callable ``allocate`` and ``deallocate``."""
    if allocator is None:
        return
    missing = [m for m in ("allocate", "deallocate") if not callable(getattr(allocator, m, None))]
    if missing:
        raise TypeError(f"an allocator needs allocate(size_in_bytes) -> int and deallocate(ptr, size_in_bytes) "
                        f"methods; {type(allocator).__name__} has no {' and no '.join(missing)}")


class CustomAllocation(driver.DeviceAllocation):
    """Memory from a user's allocator: its ``deallocate`` returns it."""

    def __init__(self, ptr: int, nbytes: int, st, allocator):
        super().__init__(ptr, nbytes, st, False)
        self.allocator = allocator

    def free(self):
        ptr, self.ptr = self.ptr, 0
        if ptr:
            allocator, nbytes = self.allocator, self.nbytes
            driver._free(self.state, ptr, lambda: allocator.deallocate(ptr, nbytes))


def allocate(st, allocator, nbytes: int) -> tuple:
    """``(ptr, owner)`` of ``nbytes`` from ``allocator`` on the device of ``st`` (caller holds ``st.lock``)."""
    with st.pushed():
        ptr = allocator.allocate(nbytes)
    try:
        value = 0 if isinstance(ptr, bool) else operator.index(ptr)
    except TypeError:
        value = 0
    if value <= 0:
        raise RuntimeError(f"the allocator {allocator!r} of cuda:{st.ordinal} returned {ptr!r} for {nbytes} bytes: "
                           f"allocate(size_in_bytes) must return a device pointer, a positive int")
    return value, CustomAllocation(value, nbytes, st, allocator)

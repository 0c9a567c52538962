"""Custom GPU memory allocators (runtime/allocators.py): arrays made and freed through a user's allocator,
``ScopedAllocator``, the built-in allocators as objects, and the errors for the CPU and for bad allocators.
On the emulated GPU without a real one (tests/cuda_emulator.py)."""
import gc

import numpy as np
import pytest

import simkit as sk


class Logging:
    """Warp's example allocator: the built-in one, with a log of what it made and freed."""

    def __init__(self, inner):
        self.inner = inner
        self.made, self.freed = {}, []

    def allocate(self, size_in_bytes):
        ptr = self.inner.allocate(size_in_bytes)
        self.made[ptr] = size_in_bytes
        return ptr

    def deallocate(self, ptr, size_in_bytes):
        self.freed.append((ptr, size_in_bytes))
        self.inner.deallocate(ptr, size_in_bytes)


@sk.kernel
def axpy(a: float, x: sk.array(dtype=float), y: sk.array(dtype=float)):
    i = sk.tid()
    y[i] = a * x[i] + y[i]


def test_arrays_are_made_and_freed_by_the_custom_allocator(cuda_device):
    dev = sk.get_device(cuda_device)
    log = Logging(dev.default_allocator)
    sk.set_device_allocator(dev, log)
    try:
        assert sk.get_device_allocator(dev) is log and dev.get_allocator() is log
        x = sk.array(np.arange(1000, dtype=np.float32), device=dev)
        y = sk.ones(1000, dtype=float, device=dev)
        assert sorted(log.made.values()) == [4000, 4000] and {x.ptr, y.ptr} == set(log.made)
        sk.launch(axpy, 1000, inputs=[2.0, x, y], device=dev)
        np.testing.assert_array_equal(y.numpy(), 2.0 * np.arange(1000) + 1.0)
        with sk.ScopedAllocator(dev, None):             # the built-in allocator inside the block
            z = sk.zeros(100, dtype=float, device=dev)
            assert z.ptr not in log.made and sk.get_device_allocator(dev) is not log
        assert sk.get_device_allocator(dev) is log
        made = dict(log.made)
        del x, y
        gc.collect()
        sk.synchronize_device(dev)
        assert sorted(log.freed) == sorted(made.items())   # (the same pointers and sizes)
        del z
        gc.collect()
        assert len(log.freed) == 2                          # (z went back to the built-in allocator)
    finally:
        sk.set_device_allocator(dev, None)
    w = sk.zeros(10, dtype=float, device=dev)
    assert w.ptr not in log.made and len(log.made) == 2


def test_memory_allocated_in_a_capture_comes_from_the_allocator_and_stays_with_the_graph(cuda_device):
    dev = sk.get_device(cuda_device)
    log = Logging(dev.default_allocator)
    x = sk.array(np.arange(64, dtype=np.float32), device=dev)
    with sk.ScopedAllocator(dev, log):
        with sk.ScopedCapture(dev) as cap:
            y = sk.zeros(64, dtype=float, device=dev)
            sk.launch(axpy, 64, inputs=[3.0, x, y], device=dev)
    assert list(log.made.values()) == [256]
    sk.capture_launch(cap.graph)
    np.testing.assert_array_equal(y.numpy(), 3.0 * np.arange(64))
    del y, cap
    gc.collect()
    sk.synchronize_device(dev)
    assert log.freed == list(log.made.items())


def test_builtin_allocators_as_objects(cuda_device):
    dev = sk.get_device(cuda_device)
    for allocator in (dev.default_allocator, sk.get_device_allocator(dev)):
        ptr = allocator.allocate(256)
        assert isinstance(ptr, int) and ptr > 0
        a = sk.array(ptr=ptr, shape=(64,), dtype=float, device=dev)   # (not owned: freed below)
        a.fill_(2.5)
        np.testing.assert_array_equal(a.numpy(), np.full(64, 2.5, np.float32))
        del a
        sk.synchronize_device(dev)
        allocator.deallocate(ptr, 256)


def test_set_cuda_allocator_sets_every_gpu(cuda_device):
    dev = sk.get_device(cuda_device)
    log = Logging(dev.default_allocator)
    sk.set_cuda_allocator(log)
    try:
        assert all(sk.get_device_allocator(d) is log for d in sk.get_cuda_devices())
    finally:
        sk.set_cuda_allocator(None)
    assert sk.get_device_allocator(dev) is not log


class ReturnsZero:
    def allocate(self, n):
        return 0

    def deallocate(self, ptr, n):
        raise AssertionError("never called")


def test_errors_name_what_is_wrong(cuda_device):
    with pytest.raises(RuntimeError, match="custom allocators are only supported on CUDA devices, not on cpu"):
        sk.set_device_allocator("cpu", Logging(None))
    with pytest.raises(RuntimeError, match="only supported on CUDA devices"):
        sk.ScopedAllocator("cpu", None)
    with pytest.raises(TypeError, match="has no deallocate"):
        sk.set_device_allocator(cuda_device, type("OnlyAllocate", (), {"allocate": lambda self, n: 1})())
    with sk.ScopedAllocator(cuda_device, ReturnsZero()):
        with pytest.raises(RuntimeError, match=r"returned 0 for 40 bytes: allocate\(size_in_bytes\) must return"):
            sk.zeros(10, dtype=float, device=cuda_device)


def test_host_allocator():
    a = sk.get_device_allocator("cpu")
    assert isinstance(a, sk.Allocator) and sk.get_device("cpu").default_allocator is a
    ptr = a.allocate(1000)
    assert ptr % 64 == 0
    view = np.ctypeslib.as_array((np.ctypeslib.ctypes.c_float * 250).from_address(ptr))
    view[:] = np.arange(250)
    assert view.sum() == 250 * 249 / 2
    a.deallocate(ptr, 1000)

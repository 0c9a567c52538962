"""Pinned (page-locked) host arrays: ``sk.zeros(..., device="cpu", pinned=True)`` and friends.

Copies from a GPU into pinned memory return at once (the copy completes in order on the device's
stream: synchronize before reading, as in Warp); into ordinary memory they wait. Without a GPU,
``pinned=True`` gives ordinary memory and ``.pinned`` says so.
"""
import numpy as np
import pytest
from cuda_emulator import FakeDriver

import simkit as sk
from simkit.kernels.backends.cuda import driver


@sk.kernel
def twice(x: sk.array(dtype=float), y: sk.array(dtype=float)):
    i = sk.tid()
    y[i] = 2.0 * x[i]


def test_pinned_request_without_gpu_is_ordinary_memory():
    a = sk.ones(8, device="cpu", pinned=True)
    assert a.pinned == sk.is_cuda_available()
    b = sk.zeros(8, device="cpu")
    sk.launch(twice, 8, inputs=[a, b])
    np.testing.assert_array_equal(b.numpy(), np.full(8, 2.0, np.float32))


def test_pinned_constructors_and_views(cuda_device):
    n = 1000
    a = sk.zeros(n, device="cpu", pinned=True)
    assert a.pinned and a.ptr % 64 == 0 and not a.numpy().any()  # (CPU_ALIGN, as other arrays)
    assert sk.ones(3, dtype=sk.vec3, device="cpu", pinned=True).numpy().tolist() == [[1.0] * 3] * 3
    assert sk.full(4, 7, dtype=int, device="cpu", pinned=True).numpy().tolist() == [7] * 4
    data = sk.array(np.arange(5.0), dtype=float, device="cpu", pinned=True)
    assert data.pinned and data.numpy().tolist() == [0.0, 1.0, 2.0, 3.0, 4.0]
    assert a[10:20].pinned and sk.zeros_like(a).pinned and not sk.zeros_like(a, pinned=False).pinned
    assert not sk.zeros(4, device="cpu").pinned
    assert not sk.zeros(4, device=cuda_device, pinned=True).pinned  # (GPU memory: ignored, as in Warp)
    c = sk.clone(data, device="cpu", pinned=True)
    assert c.pinned and c.ptr != data.ptr and c.numpy().tolist() == data.numpy().tolist()


def test_copies_through_pinned_memory(cuda_device):
    n = 4096
    x0 = np.random.default_rng(0).normal(size=n).astype(np.float32)
    host = sk.array(x0, device="cpu", pinned=True)
    gpu, back = sk.zeros(n, device=cuda_device), sk.zeros(n, device=cuda_device)
    sk.copy(gpu, host)  # host -> device from pinned memory
    sk.launch(twice, n, inputs=[gpu, back])
    out = sk.empty(n, device="cpu", pinned=True)
    fake = driver.cu() if isinstance(driver.cu(), FakeDriver) else None
    syncs = fake.calls["cuStreamSynchronize"] if fake else 0
    sk.copy(out, back)  # device -> pinned host: returns before the copy is known to be done
    if fake:
        assert fake.calls["cuStreamSynchronize"] == syncs
    sk.synchronize_device(cuda_device)
    np.testing.assert_array_equal(out.numpy(), 2.0 * x0)
    plain = sk.zeros(n, device="cpu")
    sk.copy(plain, back)  # into ordinary memory: waits
    if fake:
        assert fake.calls["cuStreamSynchronize"] == syncs + 1
    np.testing.assert_array_equal(plain.numpy(), 2.0 * x0)


def test_freeing_pinned_memory_waits_for_copies(cuda_device):
    fake = driver.cu()
    if not isinstance(fake, FakeDriver):
        pytest.skip("counts the calls of the emulated driver")
    a = sk.ones(256, device="cpu", pinned=True)
    sk.copy(sk.zeros(256, device=cuda_device), a)
    before = (fake.calls["cuCtxSynchronize"], fake.calls["cuMemFreeHost"])
    del a
    import gc

    gc.collect()
    assert fake.calls["cuCtxSynchronize"] > before[0] and fake.calls["cuMemFreeHost"] == before[1] + 1

"""Memory pool and peer access queries (Warp's ``wp.is_mempool_enabled`` ... ``wp.set_peer_access_enabled``):
the CPU never takes part, a GPU with pools allocates from its pool, and switching the pool off
falls back to plain allocations."""
import numpy as np
import pytest

import simkit as sk
from simkit.runtime import memory_pools as mp


def test_cpu_takes_no_part():
    assert not mp.is_mempool_supported("cpu") and not mp.is_mempool_enabled("cpu")
    assert not mp.is_peer_access_supported("cpu", "cpu") and not mp.is_peer_access_enabled("cpu", "cpu")
    assert not mp.is_mempool_access_supported("cpu", "cpu") and not mp.is_mempool_access_enabled("cpu", "cpu")
    # disabling what the CPU cannot do is a no-op; enabling it is an error naming the device
    mp.set_mempool_enabled("cpu", False)
    mp.set_peer_access_enabled("cpu", "cpu", False)
    mp.set_mempool_access_enabled("cpu", "cpu", False)
    with pytest.raises(ValueError, match="only supported on CUDA devices, not on cpu"):
        mp.set_mempool_enabled("cpu", True)
    with pytest.raises(ValueError, match="between CUDA devices, not cpu and cpu"):
        mp.set_peer_access_enabled("cpu", "cpu", True)
    with pytest.raises(ValueError, match="between CUDA devices"):
        mp.set_mempool_access_enabled("cpu", "cpu", True)
    for f in (mp.get_mempool_release_threshold, mp.get_mempool_used_mem_current, mp.get_mempool_used_mem_high):
        with pytest.raises(ValueError, match="only supported on CUDA devices"):
            f("cpu")
    with pytest.raises(ValueError, match="set_mempool_release_threshold"):
        mp.set_mempool_release_threshold("cpu", 0.5)


def test_same_as_warp_on_the_cpu():
    wp = pytest.importorskip("warp")
    wp.config.quiet = True
    for name in ("is_mempool_supported", "is_mempool_enabled"):
        assert getattr(mp, name)("cpu") == getattr(wp, name)("cpu")
    for name in ("is_peer_access_supported", "is_peer_access_enabled", "is_mempool_access_supported",
                 "is_mempool_access_enabled"):
        assert getattr(mp, name)("cpu", "cpu") == getattr(wp, name)("cpu", "cpu")


def test_gpu_pool_switch(cuda_device):
    assert mp.is_mempool_supported(cuda_device) and mp.is_mempool_enabled(cuda_device)
    assert mp.is_peer_access_supported(cuda_device, cuda_device) and mp.is_peer_access_enabled(cuda_device,
                                                                                                 cuda_device)
    assert mp.is_mempool_access_enabled(cuda_device, cuda_device)
    assert not mp.is_peer_access_supported(cuda_device, "cpu")
    mp.set_peer_access_enabled(cuda_device, cuda_device, True)  # (a GPU always reaches its own memory)
    pooled = sk.full(1000, 2.0, dtype=float, device=cuda_device)
    try:
        mp.set_mempool_enabled(cuda_device, False)
        assert not mp.is_mempool_enabled(cuda_device) and mp.is_mempool_supported(cuda_device)
        plain = sk.full(1000, 3.0, dtype=float, device=cuda_device)
        np.testing.assert_array_equal((pooled.numpy() + plain.numpy()), 5.0)
    finally:
        mp.set_mempool_enabled(cuda_device, True)
    assert mp.is_mempool_enabled(cuda_device)
    del plain, pooled  # each freed the way it was allocated
    sk.synchronize_device(cuda_device)


@sk.kernel
def _accumulate(a: sk.array(dtype=float), b: sk.array(dtype=float)):
    i = sk.tid()
    a[i] = a[i] + b[i]


def test_arrays_of_a_temporary_stream_in_a_capture_are_freed_in_its_order(cuda_device):
    """Warp's test_cuda_graph_alloc_transient_stream at 4096 elements (its 64M take a minute on the emulated
    GPU): arrays made on side streams that end inside the capture, one freed before the graph's later work
    allocates, come back with the values of every launch (a free on the wrong stream would hand ``b``'s memory
    to ``c`` while the launches still read it)."""
    n, launches = 4096, 20
    c_h = sk.full(n, 42.0, dtype=float, device="cpu", pinned=True)
    with sk.ScopedDevice(cuda_device):
        sk.load_module(device=cuda_device)
        with sk.ScopedCapture(force_module_load=False) as capture:
            with sk.ScopedStream(sk.Stream()):
                a = sk.zeros(n, dtype=float)
                b = sk.ones(n, dtype=float)
                for _ in range(launches):
                    sk.launch(_accumulate, n, inputs=[a, b])
            del b
            with sk.ScopedStream(sk.Stream()):
                c = sk.empty(n, dtype=float)
                sk.copy(c, c_h)
        sk.capture_launch(capture.graph)
        np.testing.assert_array_equal(a.numpy(), np.full(n, launches, dtype=np.float32))
        np.testing.assert_array_equal(c.numpy(), np.full(n, 42.0, dtype=np.float32))

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

"""Warp's small CUDA utilities (runtime/cuda_utils.py): versions, profiler control, scoped memory-pool settings and
the occupancy-based block size, on the GPU (the emulated one without a GPU)."""
from typing import Any

import numpy as np
import pytest

import simkit as sk
from simkit.kernels.backends.cuda import driver, nvrtc


@sk.kernel
def ramp(a: sk.array(dtype=float)):
    i = sk.tid()
    a[i] = float(i)


@sk.kernel(launch_bounds=128)
def bounded_ramp(a: sk.array(dtype=float)):
    i = sk.tid()
    a[i] = float(i) + 1.0


@sk.kernel
def generic_copy(a: sk.array(dtype=Any)):
    i = sk.tid()
    a[i] = a[i]


def test_suggested_block_size_is_a_usable_occupancy_choice(cuda_device):
    block, min_grid = sk.get_suggested_block_size(ramp, cuda_device)
    assert 32 <= block <= 1024 and block % 32 == 0 and min_grid > 0
    assert sk.get_suggested_block_size(ramp, cuda_device) == (block, min_grid)
    bounded, _ = sk.get_suggested_block_size(bounded_ramp, cuda_device)
    assert 0 < bounded <= 128
    a = sk.zeros(300, device=cuda_device)
    sk.launch(ramp, 300, inputs=[a], block_dim=block, device=cuda_device)
    np.testing.assert_array_equal(a.numpy(), np.arange(300, dtype=np.float32))
    with pytest.raises(RuntimeError, match="generic_copy.*concrete overload"):
        sk.get_suggested_block_size(generic_copy, cuda_device)


def test_kernel_properties_are_the_compiled_entrys(cuda_device):
    props = sk.get_cuda_kernel_properties(ramp, cuda_device, block_dim=128)
    assert set(props) == {"register_count", "local_memory_size"}
    assert 0 < props["register_count"] <= 255 and props["local_memory_size"] >= 0
    with pytest.raises(ValueError, match="positive integer"):
        sk.get_cuda_kernel_properties(ramp, cuda_device, block_dim=0)
    with pytest.raises(RuntimeError, match="needs a CUDA device"):
        sk.get_cuda_kernel_properties(ramp, "cpu")
    with pytest.raises(RuntimeError, match="generic"):
        sk.get_cuda_kernel_properties(generic_copy, cuda_device)


def test_suggested_block_size_on_the_cpu_is_one():
    assert sk.get_suggested_block_size(ramp, "cpu") == (1, 1)
    assert sk.get_suggested_block_size(generic_copy, "cpu") == (1, 1)


def test_scoped_mempool_restores_the_setting(cuda_device):
    before = sk.is_mempool_enabled(cuda_device)
    with sk.ScopedMempool(cuda_device, not before):
        assert sk.is_mempool_enabled(cuda_device) == (not before)
        a = sk.full(16, 2.0, device=cuda_device)  # allocates either way
    assert sk.is_mempool_enabled(cuda_device) == before
    with pytest.raises(ValueError):
        with sk.ScopedMempool(cuda_device, not before):
            raise ValueError("inside")
    assert sk.is_mempool_enabled(cuda_device) == before
    np.testing.assert_array_equal(a.numpy(), np.full(16, 2.0, np.float32))


def test_profiler_control_reaches_the_driver(cuda_device):
    fake = driver._api
    with sk.ScopedCudaProfiler(cuda_device):
        if hasattr(fake, "profiling"):  # (the emulated GPU records it)
            assert fake.profiling
    if hasattr(fake, "profiling"):
        assert not fake.profiling
    with pytest.raises(RuntimeError, match="needs a CUDA device"):
        sk.cuda_profiler_start("cpu")


def test_versions(cuda_device):
    v = driver.driver_version()
    assert sk.get_cuda_driver_version() == (v // 1000, v % 1000 // 10)
    if nvrtc.is_available():
        major, minor = sk.get_cuda_toolkit_version()
        assert f"{major}.{minor}" == nvrtc.version()

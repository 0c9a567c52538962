"""CUDA backend: driver (memory, copies), module loading/launch, streams, events, graphs.

Three kinds of tests:

* ``backend``-parametrized tests run twice: on a real GPU (``gpu``, skipped without
  one) and on ``fake``: an emulated GPU (``tests/cuda_emulator.py``) where device
  memory is host memory, kernels run their CUDA entry points compiled for the host,
  and streams/graphs are queues of operations. Where the NVIDIA driver is absent,
  every call the backend makes is also passed to the real cuda-python binding
  first, which converts (type-checks) the arguments before it fails to load
  libcuda: a wrong argument type fails the test here, not on the first GPU.
* tests that check behaviour without a GPU (clear errors, no crash);
* NVRTC compilation of representative modules for sm_80 and sm_90.
"""
from __future__ import annotations

import gc

import numpy as np
import pytest
from cuda_emulator import FAKE_ARCH, FakeDriver, _real_libcuda_missing
from cuda_emulator_world import EmulatedWorld
from cuda_emulator_build import emulated_library

import simkit as sk
from simkit.kernels import codegen, interleave
from simkit.kernels import module as kmodule
from simkit.kernels import types as T
from simkit.kernels.backends import cpu as cpu_backend
from simkit.kernels.backends.cuda import driver, memops, nvrtc
from simkit.kernels.backends.cuda import module as cmodule
from simkit.kernels.backends.cuda import stream as cstream
from simkit.runtime import device as devmod
from simkit.version import __version__

if driver._runtime_get_device is None:  # until simkit.runtime.device installs the hooks itself
    driver.set_runtime_hooks(devmod.get_device, devmod.ScopedDevice)

HAS_GPU = sk.is_cuda_available()
HAS_NVRTC = nvrtc.is_available()
try:
    cpu_backend.find_compiler()
    HAS_CXX = True
except Exception:  # pragma: no cover
    HAS_CXX = False

# ---------------------------------------------------------------------------
# Kernels


@sk.kernel
def saxpy(a: float, x: sk.array(dtype=float), y: sk.array(dtype=float)):
    i = sk.tid()
    y[i] = a * x[i] + y[i]


@sk.kernel
def grid2d(out: sk.array(dtype=float, ndim=2)):
    i, j = sk.tid()
    out[i, j] = float(i) * 10.0 + float(j)


@sk.kernel
def vec_kernel(v: sk.array(dtype=sk.vec3), m: sk.array(dtype=sk.mat33), out: sk.array(dtype=sk.vec3)):
    i = sk.tid()
    out[i] = m[i] @ v[i] + sk.vec3(1.0, 2.0, 3.0)


@sk.kernel
def heavy_write(n: int, value: float, out: sk.array(dtype=float)):
    i = sk.tid()
    s = float(0.0)
    for k in range(n):
        s = s * 0.5 + value
    out[i] = s * 0.0 + value


@sk.kernel
def copy_kernel(src: sk.array(dtype=float), dst: sk.array(dtype=float)):
    i = sk.tid()
    dst[i] = src[i]


@sk.kernel
def integrate(x: sk.array(dtype=float), v: sk.array(dtype=float), dt: float):
    i = sk.tid()
    x[i] = x[i] + v[i] * dt


@sk.kernel
def out_of_bounds(a: sk.array(dtype=float)):
    i = sk.tid()
    a[i + 1] = 1.0


@sk.kernel
def expect_zero(a: sk.array(dtype=int)):
    i = sk.tid()
    sk.expect_eq(a[i], 0)


@sk.kernel
def prod_loop(x: sk.array(dtype=sk.float64), n: int, out: sk.array(dtype=sk.float64)):
    i = sk.tid()
    p = sk.float64(1.0)
    for k in range(n):
        p = p * x[i]
    out[i] = p


@pytest.fixture
def fake_cuda():
    """A fresh emulated machine with 2 GPUs of FAKE_ARCH, swapped in for the test (tests/cuda_emulator.py)."""
    if not HAS_CXX:
        pytest.skip("the emulated CUDA backend needs a C++ compiler")
    fake = FakeDriver(ndev=2)
    world = EmulatedWorld(fake)
    with world:
        yield fake
        world.close()  # drop what the fake devices hold, while the fake is installed
        gc.collect()
    assert not fake.violations, "driver rules broken:\n" + "\n".join(fake.violations)


@pytest.fixture(params=["gpu", "fake"])
def backend(request):
    """'cuda:0' on a real GPU, or on the fake driver."""
    if request.param == "gpu":
        if not HAS_GPU:
            pytest.skip("no CUDA GPU")
        yield "cuda:0"
        sk.synchronize()
    else:
        request.getfixturevalue("fake_cuda")
        yield "cuda:0"


def _fake_of(_backend):
    """The FakeDriver when ``backend`` runs on it, else None."""
    return driver._api if isinstance(driver._api, FakeDriver) else None


# ---------------------------------------------------------------------------
# Memory and copies


DTYPES = [sk.bool, sk.int8, sk.uint8, sk.int16, sk.uint16, sk.int32, sk.uint32, sk.int64, sk.uint64, sk.float16,
          sk.float32, sk.float64, sk.vec3, sk.vec2d, sk.vec4h, sk.mat22, sk.mat33, sk.mat44d, sk.quat, sk.transform,
          sk.spatial_vector]


def _random(dtype, n, rng):
    from simkit.runtime.array import np_dtype_of

    nd, esh = np_dtype_of(dtype)
    shape = (n,) + esh
    if nd == np.bool_:
        return rng.integers(0, 2, shape).astype(np.bool_)
    if np.issubdtype(nd, np.integer):
        info = np.iinfo(nd)
        return rng.integers(info.min, info.max, shape, dtype=nd, endpoint=True)
    return rng.standard_normal(shape).astype(nd)


@pytest.mark.parametrize("dtype", DTYPES, ids=T.type_name)
def test_roundtrip_each_dtype(backend, dtype):
    rng = np.random.default_rng(0)
    host = _random(dtype, 37, rng)
    a = sk.array(host, dtype=dtype, device=backend)
    assert a.device == backend
    np.testing.assert_array_equal(a.numpy(), host)
    z = sk.zeros(37, dtype=dtype, device=backend)
    assert not np.asarray(z.numpy(), dtype=np.float64).any()
    # device -> device, device -> host array, host array -> device
    b = sk.clone(a)
    np.testing.assert_array_equal(b.numpy(), host)
    c = a.to("cpu")
    np.testing.assert_array_equal(c.numpy(), host)
    d = sk.zeros(37, dtype=dtype, device=backend)
    sk.copy(d, c)
    np.testing.assert_array_equal(d.numpy(), host)
    host2 = _random(dtype, 37, rng)
    d.assign(host2)
    np.testing.assert_array_equal(d.numpy(), host2)


@pytest.mark.parametrize("dtype,value", [(sk.float32, 1.5), (sk.float64, -2.25), (sk.int16, -3), (sk.uint8, 7),
                                         (sk.int64, 1 << 40), (sk.vec3, (1.0, 2.0, 3.0)), (sk.vec3, 0.5),
                                         (sk.mat22, ((1.0, 2.0), (3.0, 4.0))), (sk.bool, True), (sk.float16, 0.5),
                                         (sk.vec3h, (1.0, -1.0, 2.0))])
def test_fill(backend, dtype, value):
    a = sk.zeros(101, dtype=dtype, device=backend)
    a.fill_(value)
    ref = sk.zeros(101, dtype=dtype, device="cpu")
    ref.fill_(value)
    np.testing.assert_array_equal(a.numpy(), ref.numpy())
    b = sk.full(5, value, dtype=dtype, device=backend)
    np.testing.assert_array_equal(b.numpy(), ref.numpy()[:5])


def _strided(base, step):
    """A non-contiguous 1D view of every ``step``-th element of a contiguous CUDA array."""
    n = (base.shape[0] + step - 1) // step
    return sk.array(ptr=base.ptr, dtype=base.dtype, shape=(n,), strides=(base.strides[0] * step,),
                    device=base.device, _owner=base)


@pytest.mark.parametrize("dtype", [sk.float32, sk.vec3, sk.uint8, sk.float64])
def test_strided_copies_and_fill(backend, dtype):
    rng = np.random.default_rng(1)
    host = _random(dtype, 20, rng)
    base = sk.array(host, dtype=dtype, device=backend)
    view = _strided(base, 3)  # elements 0, 3, 6, ...
    assert not view.is_contiguous
    np.testing.assert_array_equal(view.numpy(), host[::3])  # strided -> host
    contiguous = sk.clone(view)  # strided -> contiguous on the device
    assert contiguous.is_contiguous
    np.testing.assert_array_equal(contiguous.numpy(), host[::3])
    new = _random(dtype, view.shape[0], rng)
    view.assign(new)  # host -> strided
    expect = host.copy()
    expect[::3] = new
    np.testing.assert_array_equal(base.numpy(), expect)
    src = sk.array(_random(dtype, view.shape[0], rng), dtype=dtype, device=backend)
    sk.copy(view, src)  # contiguous -> strided on the device
    expect[::3] = src.numpy()
    np.testing.assert_array_equal(base.numpy(), expect)
    view.zero_()  # strided fill
    expect[::3] = 0
    np.testing.assert_array_equal(base.numpy(), expect)
    cpu_strided = sk.array(host, dtype=dtype, device="cpu")[::2]
    dst = sk.zeros(cpu_strided.shape[0], dtype=dtype, device=backend)
    sk.copy(dst, cpu_strided)  # strided host -> device
    np.testing.assert_array_equal(dst.numpy(), host[::2])


def test_device_properties(fake_cuda):
    """Counts from the driver's attributes (the emulated GPU: 4 SMs, 48 KiB); the CPU reports 0."""
    gpu, cpu = sk.get_device("cuda:1"), sk.get_device("cpu")
    assert (gpu.sm_count, gpu.max_shared_memory_per_block) == (4, 48 * 1024)
    assert (cpu.sm_count, cpu.max_shared_memory_per_block) == (0, 0)


def test_warp_device_attributes(fake_cuda):
    """Warp's Device attributes: arch as an int (the kind keeps "sm_87"), memory from cuMemGetInfo (an allocation
    takes its bytes), identity, streams (the CPU has none: RuntimeError), and which memory each device reaches."""
    gpu, other, cpu = sk.get_device("cuda:1"), sk.get_device("cuda:0"), sk.get_device("cpu")
    assert (gpu.arch, gpu.kind, cpu.arch, cpu.kind) == (int(FAKE_ARCH[3:]), FAKE_ARCH, 0, "cpu")
    free = gpu.free_memory
    a = sk.zeros(1 << 20, dtype=sk.float32, device=gpu)
    assert gpu.free_memory == free - (4 << 20) and gpu.total_memory == FakeDriver.TOTAL_MEMORY
    assert other.free_memory == other.total_memory  # (nothing allocated there)
    assert cpu.total_memory >= cpu.free_memory > 0
    assert gpu.uuid == "GPU-" + "e1e1e1e1-e1e1-e1e1-e1e1-e1e1e1e1e1e1" and cpu.uuid is None
    assert gpu.pci_bus_id == "0000:66:00" and cpu.pci_bus_id is None
    assert (gpu.is_uva, gpu.is_mempool_supported, gpu.is_primary, gpu.has_stream) == (True, True, True, True)
    assert (cpu.is_uva, cpu.is_mempool_supported, cpu.is_primary, cpu.has_stream) == (False, False, False, False)
    assert gpu.get_cuda_output_format() in ("cubin", "ptx") and cpu.get_cuda_output_format() is None
    assert cpu.get_cuda_compile_arch() is None and gpu.get_cuda_compile_arch() <= gpu.arch
    s = sk.Stream(gpu)
    gpu.stream = s
    assert gpu.stream == s and sk.get_stream(gpu) == s
    gpu.set_stream(sk.Stream(gpu), sync=True)
    assert gpu.stream != s and not gpu.is_capturing
    with pytest.raises(RuntimeError, match="not a CUDA device"):
        cpu.stream
    assert gpu.can_access(gpu) and cpu.can_access(cpu) and not cpu.can_access(gpu)
    assert gpu.can_access(cpu) == gpu.is_cpu_memory_access_from_gpu_supported
    assert not gpu.can_access(other)
    sk.set_mempool_access_enabled(other, gpu, True)
    assert gpu.can_access(other) and not other.can_access(gpu)
    sk.set_mempool_access_enabled(other, gpu, False)
    assert not gpu.can_access(other)
    del a


def test_copy_between_devices(fake_cuda):
    host = np.arange(50, dtype=np.float32)
    a = sk.array(host, device="cuda:0")
    b = sk.zeros(50, device="cuda:1")
    sk.copy(b, a)
    np.testing.assert_array_equal(b.numpy(), host)
    c = _strided(b, 2)  # strided on the destination device, gathered from a strided source
    sk.copy(c, _strided(a, 2))
    np.testing.assert_array_equal(c.numpy(), host[::2])
    assert fake_cuda.calls["cuMemcpyPeerAsync"] == 2


@pytest.mark.skipif(not (HAS_GPU and sk.get_cuda_device_count() > 1), reason="needs two GPUs")
def test_copy_between_gpus():
    host = np.arange(1000, dtype=np.float32)
    b = sk.array(host, device="cuda:0").to("cuda:1")
    np.testing.assert_array_equal(b.numpy(), host)


def test_unit_loads_lazily_on_a_second_device(fake_cuda):
    from simkit.runtime.launch import bounds_bytes

    x0, y0 = sk.ones(8, device="cuda:0"), sk.zeros(8, device="cuda:0")
    sk.launch(saxpy, dim=8, inputs=[2.0, x0, y0], device="cuda:0")
    entry, unit = saxpy.specs[None].native[FAKE_ARCH]
    loads = fake_cuda.calls["cuModuleLoadData"]
    dev1 = sk.get_device("cuda:1")
    x1, y1 = sk.ones(8, device=dev1), sk.zeros(8, device=dev1)
    assert unit.launch(entry, _packed_saxpy(x1, y1), bounds_bytes((8,))[0], 8, 256, None, device=dev1) is None
    assert fake_cuda.calls["cuModuleLoadData"] == loads + 1  # the same CUBIN, loaded into cuda:1's context
    np.testing.assert_array_equal(y1.numpy(), np.full(8, 1.0, np.float32))  # _packed_saxpy: a = 1


def test_launch_on_two_devices_of_one_arch(fake_cuda):
    try:
        for dev in ("cuda:0", "cuda:1"):
            x, y = sk.ones(8, device=dev), sk.zeros(8, device=dev)
            sk.launch(saxpy, dim=8, inputs=[2.0, x, y], device=dev)
            np.testing.assert_array_equal(y.numpy(), np.full(8, 2.0, np.float32))
    finally:
        fake_cuda.violations.clear()


def test_pinned_memory(backend):
    buf = driver.alloc_pinned(0, dtype=np.float32, shape=(64,))
    buf[:] = np.arange(64)
    a = sk.array(buf, dtype=float, device=backend)
    out = driver.alloc_pinned(256, dtype=np.float32)
    sk.synchronize()
    driver.copy_dtoh(out, a)
    np.testing.assert_array_equal(out, np.arange(64))


def test_allocations_are_freed(fake_cuda):
    a = sk.zeros(1000, device="cuda:0")
    ptr = a.ptr
    assert ptr in fake_cuda.mem
    del a
    gc.collect()
    assert ptr in fake_cuda.freed and ptr not in fake_cuda.mem


# ---------------------------------------------------------------------------
# Launches


def test_launch_matches_numpy(backend):
    n = 1000
    x = sk.array(np.arange(n, dtype=np.float32), device=backend)
    y = sk.ones(n, device=backend)
    sk.launch(saxpy, dim=n, inputs=[2.0, x, y], device=backend)
    np.testing.assert_allclose(y.numpy(), 2 * np.arange(n) + 1)
    g = sk.zeros((7, 9), device=backend)
    sk.launch(grid2d, dim=(7, 9), inputs=[g], device=backend)
    np.testing.assert_allclose(g.numpy(), np.arange(7)[:, None] * 10.0 + np.arange(9)[None, :])
    rng = np.random.default_rng(2)
    v, m = rng.standard_normal((33, 3)).astype(np.float32), rng.standard_normal((33, 3, 3)).astype(np.float32)
    out = sk.zeros(33, dtype=sk.vec3, device=backend)
    sk.launch(vec_kernel, dim=33, inputs=[sk.array(v, dtype=sk.vec3, device=backend),
                                          sk.array(m, dtype=sk.mat33, device=backend), out], device=backend)
    np.testing.assert_allclose(out.numpy(), np.einsum("nij,nj->ni", m, v) + [1, 2, 3], rtol=1e-5, atol=1e-5)


def test_launch_block_and_grid(backend):
    n = 5000
    y = sk.zeros(n, device=backend)
    x = sk.ones(n, device=backend)
    sk.launch(saxpy, dim=n, inputs=[1.0, x, y], device=backend, block_dim=1024)  # clamped to the kernel limit
    sk.launch(saxpy, dim=n, inputs=[1.0, x, y], device=backend, block_dim=32)
    np.testing.assert_array_equal(y.numpy(), np.full(n, 2.0, np.float32))
    fake = _fake_of(backend)
    if fake is not None:
        blocks = [(g, b) for name, g, b, _s in fake.launches if name.startswith("saxpy")]
        assert blocks[-2] == ((n + 767) // 768, 768) and blocks[-1] == ((n + 31) // 32, 32)


def test_grid_is_capped(fake_cuda):
    from simkit.runtime.launch import bounds_bytes

    x, y = sk.ones(8, device="cuda:0"), sk.zeros(8, device="cuda:0")
    sk.launch(saxpy, dim=8, inputs=[1.0, x, y], device="cuda:0")
    entry, unit = saxpy.specs[None].native[FAKE_ARCH]
    # more threads than the cap: the grid is capped, the grid-stride loop covers the rest (the bounds passed
    # to the kernel say 8, so the simulated run stays inside the arrays)
    # (saxpy runs interleave.WAYS launch indices per CUDA thread in launches that fill the GPU)
    size = driver.GRID_CAP * 256 * interleave.WAYS + 1000
    unit.launch(entry, _packed_saxpy(x, y), bounds_bytes((8,))[0], size, 256, None)
    assert fake_cuda.launches[-1][1:3] == (driver.GRID_CAP, 256)
    np.testing.assert_array_equal(y.numpy(), np.full(8, 2.0, np.float32))
    # below the cap: WAYS indices per thread once the launch fills the (4-SM) fake GPU, one below that
    full = 4 * 2048 * interleave.WAYS
    for size, grid in ((full, full // (256 * interleave.WAYS)), (full - 1, (full - 1 + 255) // 256)):
        unit.launch(entry, _packed_saxpy(x, y), bounds_bytes((8,))[0], size, 256, None)
        assert fake_cuda.launches[-1][1:3] == (grid, 256)
    # launch(max_blocks=...) caps it lower (as in Warp); every element is still done once
    x, y = sk.ones(1000, device="cuda:0"), sk.zeros(1000, device="cuda:0")
    sk.launch(saxpy, dim=1000, inputs=[3.0, x, y], device="cuda:0", block_dim=64, max_blocks=2)
    assert fake_cuda.launches[-1][1:3] == (2, 64)
    np.testing.assert_array_equal(y.numpy(), np.full(1000, 3.0, np.float32))


def _packed_saxpy(x, y):
    from simkit.runtime.launch import _check_and_pack

    packed, _ = _check_and_pack(saxpy, saxpy.specs[None], [1.0, x, y], x.device)
    return packed


def test_debug_mode_bounds_error_raises_index_error(backend, monkeypatch):
    monkeypatch.setattr(sk.config, "mode", "debug")
    a = sk.zeros(16, device=backend)
    with pytest.raises(IndexError, match="out of bounds"):
        sk.launch(out_of_bounds, dim=16, inputs=[a], device=backend)
    # the error state was cleared: an in-bounds launch of the same unit passes
    x, y = sk.ones(4, device=backend), sk.zeros(4, device=backend)
    sk.launch(saxpy, dim=4, inputs=[3.0, x, y], device=backend)
    np.testing.assert_array_equal(y.numpy(), [3, 3, 3, 3])


def test_expect_reports_in_release_mode(backend):
    a = sk.zeros(8, dtype=int, device=backend)
    sk.launch(expect_zero, dim=8, inputs=[a], device=backend)
    a.fill_(3)
    with pytest.raises(RuntimeError, match="expect"):
        sk.launch(expect_zero, dim=8, inputs=[a], device=backend)
    a.zero_()
    sk.launch(expect_zero, dim=8, inputs=[a], device=backend)  # the error state was reset


def test_release_launches_do_not_synchronize(fake_cuda):
    x, y = sk.ones(64, device="cuda:0"), sk.zeros(64, device="cuda:0")
    sk.launch(saxpy, dim=64, inputs=[2.0, x, y], device="cuda:0")  # compiles and loads
    before = dict(fake_cuda.calls)
    for _ in range(3):
        sk.launch(saxpy, dim=64, inputs=[2.0, x, y], device="cuda:0")
    new = {k: v - before.get(k, 0) for k, v in fake_cuda.calls.items() if v != before.get(k, 0)}
    assert new.get("cuLaunchKernel") == 3
    assert not {"cuStreamSynchronize", "cuCtxSynchronize", "cuMemcpyDtoHAsync"} & set(new), new


def test_adjoint_loop_on_gpu(backend):
    x = sk.array(np.array([2.0, 3.0, 0.5]), dtype=sk.float64, requires_grad=True, device=backend)
    out = sk.zeros(3, dtype=sk.float64, requires_grad=True, device=backend)
    tape = sk.Tape()
    with tape:
        sk.launch(prod_loop, dim=3, inputs=[x, 4], outputs=[out], device=backend)
    tape.backward(grads={out: np.ones(3)})
    xv = np.array([2.0, 3.0, 0.5])
    np.testing.assert_allclose(out.numpy(), xv ** 4)
    np.testing.assert_allclose(x.grad.numpy(), 4 * xv ** 3)


# ---------------------------------------------------------------------------
# Streams and events


def test_streams_and_events_ordering(backend):
    n = 1 << 16
    s1, s2 = cstream.Stream(backend), cstream.Stream(backend, priority=-1)
    a, b = sk.zeros(n, device=backend), sk.zeros(n, device=backend)
    sk.synchronize()
    start, end = cstream.Event(backend, enable_timing=True), cstream.Event(backend, enable_timing=True)
    with cstream.ScopedStream(s1):
        assert cstream.get_stream(backend) == s1
        s1.record_event(start)
        sk.launch(heavy_write, dim=n, inputs=[2000, 5.0, a], device=backend)  # slow writer on s1
        s1.record_event(end)
    assert cstream.get_stream(backend) != s1
    s2.wait_stream(s1)  # s2 must see a == 5 everywhere
    sk.launch(copy_kernel, dim=n, inputs=[a, b], device=backend, stream=s2)
    s2.synchronize()
    assert s2.is_complete and s1.is_complete and s1.is_blocking
    assert s1.__cuda_stream__() == (0, s1.cuda_stream) and s2.priority <= s1.priority
    np.testing.assert_array_equal(b.numpy(), np.full(n, 5.0, np.float32))
    assert cstream.get_event_elapsed_time(start, end) >= 0.0
    ev = cstream.record_event()
    cstream.wait_event(ev)
    ev.synchronize()
    assert ev.is_complete


def test_stream_priorities_and_the_null_stream(backend):
    """Warp's two priority levels (-1 high, 0 default; others clamped), TypeError for a non-int; the legacy NULL
    stream blocks; synchronizing during a capture raises Warp's "Cannot synchronize ..." (device, stream,
    event) and ends nothing but the capture."""
    hi, lo, std = cstream.Stream(backend, priority=-100), cstream.Stream(backend, priority=100), cstream.Stream(backend)
    assert (hi.priority, lo.priority, std.priority) == (-1, 0, 0)
    with pytest.raises(TypeError, match="priority must be an int"):
        cstream.Stream(backend, priority=0.5)
    dev = sk.get_device(backend)
    assert dev.null_stream.cuda_stream == 0 and dev.null_stream.is_blocking and dev.stream.is_blocking
    wrapped = cstream.Stream(backend, cuda_stream=std.cuda_stream)
    assert wrapped.is_blocking and wrapped.priority == 0
    ev = cstream.Event(backend)
    for what, call in (("device", lambda: sk.synchronize_device(backend)), ("stream", lambda: sk.synchronize_stream()),
                       ("event", lambda: ev.synchronize())):
        with sk.ScopedDevice(backend):
            with pytest.raises(RuntimeError, match=f"Cannot synchronize {what}"):
                with sk.ScopedCapture(force_module_load=False):
                    call()
        assert not dev.is_capturing


def test_set_stream_and_sync(backend):
    s = cstream.Stream(backend)
    default = cstream.get_stream(backend)
    cstream.set_stream(s, sync=True)
    try:
        x = sk.full(100, 2.0, device=backend)  # allocated and filled on s
        assert cstream.get_stream(backend) == s
    finally:
        cstream.set_stream(default)
    cstream.wait_stream(s)
    np.testing.assert_array_equal(x.numpy(), np.full(100, 2.0, np.float32))
    with pytest.raises(ValueError, match="timing"):
        cstream.get_event_elapsed_time(cstream.Event(backend), cstream.Event(backend))


# ---------------------------------------------------------------------------
# Graph capture


def test_graph_capture_replays_a_step(backend):
    n = 256
    x = sk.zeros(n, device=backend)
    v = sk.array(np.linspace(0, 1, n, dtype=np.float32), device=backend)
    sk.launch(integrate, dim=n, inputs=[x, v, 0.0], device=backend)  # compile/load before capture
    sk.synchronize()
    with cstream.ScopedCapture(backend) as cap:
        assert cstream.is_capturing(backend)
        tmp = sk.zeros(n, device=backend)  # allocated outside the graph, zeroed inside it
        sk.launch(integrate, dim=n, inputs=[tmp, v, 1.0], device=backend)
        sk.launch(integrate, dim=n, inputs=[x, tmp, 0.5], device=backend)
    assert not cstream.is_capturing(backend) and cap.graph is not None
    del tmp  # the graph keeps its allocations alive
    gc.collect()
    np.testing.assert_array_equal(x.numpy(), np.zeros(n, np.float32))  # capturing does not execute
    for _ in range(4):
        cstream.capture_launch(cap.graph)
    sk.synchronize()
    np.testing.assert_allclose(x.numpy(), 4 * 0.5 * np.linspace(0, 1, n), rtol=1e-6)


def test_graph_capture_rules(backend, tmp_path):
    a = sk.ones(64, device=backend)
    before = sk.ones(64, device=backend)
    sk.launch(copy_kernel, dim=64, inputs=[a, before], device=backend)
    sk.synchronize()
    cstream.capture_begin(backend)
    try:
        with pytest.raises(RuntimeError, match="graph"):
            a.numpy()  # device -> host needs a synchronization
        with pytest.raises(RuntimeError, match="graph"):
            a.assign(np.zeros(64))
        with pytest.raises(RuntimeError, match="graph"):
            sk.synchronize()
        del before  # freed during capture: deferred, the graph owns it
        gc.collect()
        sk.launch(copy_kernel, dim=64, inputs=[a, a], device=backend)
    finally:
        graph = cstream.capture_end(backend)
    cstream.capture_launch(graph)
    cstream.capture_debug_dot_print(graph, str(tmp_path / "g.dot"))
    assert (tmp_path / "g.dot").exists()
    del graph
    gc.collect()
    sk.synchronize()
    np.testing.assert_array_equal(a.numpy(), np.ones(64, np.float32))


def test_scoped_capture_error_inside_block_ends_capture(backend):
    a = sk.ones(8, device=backend)
    sk.synchronize()
    with pytest.raises(ZeroDivisionError):
        with cstream.ScopedCapture(backend):
            1 / 0
    assert not cstream.is_capturing(backend)
    np.testing.assert_array_equal(a.numpy(), np.ones(8, np.float32))


def test_invalidated_capture_is_reported_and_cleaned_up(fake_cuda):
    a = sk.ones(16, device="cuda:0")
    doomed = sk.ones(16, device="cuda:0")
    doomed_ptr = doomed.ptr
    cstream.capture_begin("cuda:0")
    del doomed  # deferred while capturing
    gc.collect()
    fake_cuda.cuMemsetD8Async(a.ptr, 0, 4, 0)  # other code touches the legacy stream: invalidates the capture
    with pytest.raises(driver.CudaError, match="INVALIDATED"):
        cstream.capture_end("cuda:0")
    assert not cstream.is_capturing("cuda:0") and not driver.state(0).deferred
    assert doomed_ptr in fake_cuda.freed  # released once the capture was over
    sk.synchronize()
    np.testing.assert_array_equal(a.numpy(), np.ones(16, np.float32))


# ---------------------------------------------------------------------------
# Without a GPU: clear errors, never a crash


@pytest.mark.skipif(HAS_GPU, reason="checks the behaviour without a GPU")
def test_cuda_device_without_gpu_raises_runtime_error():
    with pytest.raises(RuntimeError, match="CUDA"):
        sk.get_device("cuda:0")
    with pytest.raises(RuntimeError, match="CUDA"):
        sk.zeros(4, device="cuda:0")
    with pytest.raises(RuntimeError):
        driver.alloc(0, 16)
    with pytest.raises(RuntimeError, match="CUDA"):
        cstream.Stream("cuda:0")


@pytest.mark.skipif(HAS_GPU, reason="checks the behaviour without a GPU")
def test_enumerate_devices_without_gpu():
    assert driver.enumerate_devices() == []
    reason = driver.unavailable_reason()
    assert isinstance(reason, str) and reason
    assert not driver.is_available()
    sk.synchronize()  # a no-op, not an error


def test_nvrtc_target_arch():
    if not HAS_NVRTC:
        pytest.skip("NVRTC is not installed")
    assert cmodule.target_arch("sm_90") == "sm_90"
    newest = max(cmodule.supported_archs())
    assert cmodule.target_arch("sm_999") == f"compute_{newest}"  # future GPU: PTX, JIT-compiled by the driver
    with pytest.raises(RuntimeError, match="older"):
        cmodule.target_arch("sm_30")


def _module_source(kernels, mode="release", adjoint=False):
    options = dict(kmodule.compile_options(), mode=mode)
    specs = [k.specs[None] for k in kernels]
    for s in specs:
        s.build_ir(options)
    funcs, structs = kmodule.collect(specs)
    return codegen.gen_module("test_cuda_backend", [s.ir for s in specs], funcs, structs, options, __version__,
                              adjoint=adjoint)


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_nvrtc_compiles_representative_module(arch):
    if not HAS_NVRTC:
        pytest.skip("NVRTC is not installed")
    kernels = [saxpy, grid2d, vec_kernel, heavy_write, integrate, out_of_bounds, expect_zero, prod_loop]
    for mode, adjoint in [("release", False), ("debug", False), ("release", True)]:
        src = _module_source(kernels, mode, adjoint)
        image = nvrtc.compile_source(src, arch, "test_cuda_backend")
        assert image[:4] == b"\x7fELF"
        for k in kernels:
            assert f"{k.specs[None].cname}_cuda_{'bwd' if adjoint else 'fwd'}".encode() in image
        if mode == "debug":
            assert b"_ZN2sk14sk_error_stateE" in image  # read by Unit after debug launches
        if adjoint:
            assert b"_ZN2sk13sk_stack_baseE" in image and b"_ZN2sk17sk_stack_capacityE" in image
    rt = nvrtc.compile_source(memops.RUNTIME_SOURCE, arch, "simkit_runtime")
    assert rt[:4] == b"\x7fELF" and b"sk_rt_fill" in rt and b"sk_rt_copy" in rt


def test_runtime_kernels_layout_matches_python():
    """RUNTIME_SOURCE's static_asserts hold on the host compiler too, and its parameters are the sizes
    memops packs."""
    if not HAS_CXX:
        pytest.skip("no C++ compiler")
    _lib, kernels = emulated_library(memops.RUNTIME_SOURCE, 0)
    assert memops._VIEW.size == 80
    assert kernels["sk_rt_fill"].params == [(memops._VIEW.size + memops._FILL_TAIL.size, 8)] == [(352, 8)]
    assert kernels["sk_rt_copy"].params == [(2 * memops._VIEW.size + memops._COPY_TAIL.size, 8)] == [(176, 8)]


def test_fake_driver_type_checks_arguments():
    """The fake rejects calls cuda-python would reject (only meaningful without libcuda)."""
    fake = FakeDriver(validate=True)
    if not fake.validate or not _real_libcuda_missing():
        pytest.skip("needs cuda-python without the NVIDIA driver")
    with pytest.raises(AssertionError, match="rejects"):
        fake.cuMemFreeAsync("not a pointer", 0)

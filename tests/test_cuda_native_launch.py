"""The one-call C launch (simkit/kernels/backends/cuda/native_launch.py), against cuda-python's path.

On a real GPU these check that the native launch is the one taken and gives the same results; on the
emulated GPU (whose cuGetProcAddress hands out C callbacks into the fake driver) they also count the
driver calls it makes and check that a driver error reaches Python with the kernel's name.
"""
import numpy as np
import pytest
from cuda_emulator import FakeDriver
from cuda_emulator_world import EmulatedWorld

import simkit as sk
from simkit.kernels.backends import native_call
from simkit.kernels.backends.cuda import driver, native_launch


@sk.kernel
def scale_add(a: float, x: sk.array(dtype=float), y: sk.array(dtype=sk.float64), out: sk.array(dtype=float)):
    i = sk.tid()
    out[i] = a * x[i] + sk.float32(y[i])


def _arrays(device, n=1000):
    x = np.arange(n, dtype=np.float32)
    y = np.linspace(-1.0, 1.0, n)
    return [3.0, sk.array(x, device=device), sk.array(y, device=device)], sk.zeros(n, device=device)


def _run(device, n=1000):
    inputs, out = _arrays(device, n)
    sk.launch(scale_add, n, inputs=inputs, outputs=[out])
    x, y = inputs[1].numpy(), inputs[2].numpy()
    np.testing.assert_allclose(out.numpy(), 3.0 * x + y.astype(np.float32), rtol=1e-6)


def test_native_launch_is_used_and_correct(cuda_device):
    _run(cuda_device)
    st = driver.state(sk.get_device(cuda_device).ordinal)
    assert isinstance(st.launcher, native_launch.Launcher), "GPU launches should go through the C launcher"


def _fake(cuda_device):
    if not isinstance(driver.cu(), FakeDriver):
        pytest.skip("counts the calls of the emulated driver")
    return driver.cu()


def test_context_set_only_when_not_current(cuda_device):
    fake = _fake(cuda_device)
    _run(cuda_device)
    st = driver.state(0)
    inputs, out = _arrays(cuda_device)
    fake.cuCtxSetCurrent(fake.real.CUcontext(0))  # e.g. another library left no context current
    calls = dict(fake.calls)
    sk.launch(scale_add, 1000, inputs=inputs, outputs=[out])
    sk.launch(scale_add, 1000, inputs=inputs, outputs=[out])
    made = {k: fake.calls[k] - calls.get(k, 0) for k in ("cuLaunchKernel", "cuCtxGetCurrent", "cuCtxSetCurrent")}
    assert made["cuLaunchKernel"] == 2 and made["cuCtxGetCurrent"] == 2
    assert made["cuCtxSetCurrent"] == 1, made  # the first launch made it current again; the second found it
    assert fake.ctx() == int(st.ctx)


def test_driver_error_names_the_kernel(cuda_device, monkeypatch):
    fake = _fake(cuda_device)
    _run(cuda_device)
    monkeypatch.setattr(fake, "cuLaunchKernel", lambda *args: fake.err(701))  # CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES
    with pytest.raises(driver.CudaError, match="launch of kernel scale_add.*CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES"):
        _run(cuda_device)
    monkeypatch.setattr(fake, "cuLaunchKernel", lambda *args: (123456,))  # a code this binding does not know
    with pytest.raises(driver.CudaError, match="launch of kernel scale_add.*123456") as e:
        _run(cuda_device)
    assert e.value.code == 123456


def test_cuda_python_path_without_entry_points():
    """A driver that gives no C entry points (and config.native_calls = False) launches through
    cuda-python, with the same results."""
    with EmulatedWorld(FakeDriver(arch="sm_90")) as fake:
        _run("cuda:0")
        assert driver.state(0).launcher is None
        assert fake.calls["cuLaunchKernel"] >= 1 and fake.calls["cuCtxGetCurrent"] == 0
    assert native_launch.launcher(FakeDriver(native_launch=True)) is not None
    sk.config.native_calls = False
    try:
        assert native_launch.launcher(FakeDriver(native_launch=True)) is None
    finally:
        sk.config.native_calls = True


def test_launcher_passes_arguments_through():
    """The C launcher hands the driver exactly what it was given (a fake driver made of callbacks)."""
    seen = {}

    def launch(f, gx, gy, gz, bx, by, bz, shmem, s, params, extra):
        import ctypes

        ptrs = (ctypes.c_void_p * 2).from_address(params)
        seen.update(f=f, grid=(gx, gy, gz), block=(bx, by, bz), shmem=shmem, stream=s, extra=extra,
                    args=ctypes.string_at(ptrs[0], 5), bounds=ctypes.string_at(ptrs[1], 3))
        return 0

    fake = FakeDriver(native_launch=True)
    points = fake._entry_points()
    import ctypes

    u = ctypes.c_uint
    cb = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, u, u, u, u, u, u, u, ctypes.c_void_p, ctypes.c_void_p,
                          ctypes.c_void_p)(launch)
    addresses = [ctypes.cast(cb, ctypes.c_void_p).value] + \
        [ctypes.cast(points[n], ctypes.c_void_p).value for n in native_launch.SYMBOLS[1:]]
    go = native_launch.Launcher(native_call.cuda_launch(), addresses)
    fake.tls.ctx = 0xC000
    assert go.fn(go.driver, 0xC000, 0x1234, 7, 96, 0x5678, b"ARGS!", b"BND") == 0
    assert seen == {"f": 0x1234, "grid": (7, 1, 1), "block": (96, 1, 1), "shmem": 0, "stream": 0x5678,
                    "extra": None, "args": b"ARGS!", "bounds": b"BND"}
    assert fake.calls["cuCtxSetCurrent"] == 0

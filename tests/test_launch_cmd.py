"""``sk.launch(..., record_cmd=True)`` returns a ``Launch`` replayed with ``.launch()`` (as in Warp)."""
import numpy as np
import pytest

import simkit as sk


@sk.kernel
def axpy_into(a: float, x: sk.array(dtype=float), y: sk.array(dtype=float)):
    i = sk.tid()
    y[i] = y[i] + a * x[i]


@sk.kernel
def fill_2d(value: float, out: sk.array(dtype=float, ndim=2)):
    i, j = sk.tid()
    out[i, j] = value + float(i * 10 + j)


@sk.kernel
def scale_any(a: sk.Any, x: sk.array(dtype=sk.Any)):
    i = sk.tid()
    x[i] = x[i] * a


def test_recorded_launch_runs_only_when_launched(device):
    n = 300
    x = sk.array(np.arange(n, dtype=np.float32), device=device)
    y = sk.zeros(n, device=device)
    cmd = sk.launch(axpy_into, n, inputs=[2.0, x, y], record_cmd=True)
    assert isinstance(cmd, sk.Launch) and cmd.bounds == (n,) and cmd.device == sk.get_device(device)
    assert not y.numpy().any()  # recorded, not run
    for _ in range(3):
        cmd.launch()
    np.testing.assert_allclose(y.numpy(), 6.0 * np.arange(n))


def test_parameters_and_dimensions_change(device):
    n = 64
    x = sk.ones(n, device=device)
    y, z = sk.zeros(n, device=device), sk.zeros(n, device=device)
    cmd = sk.launch(axpy_into, n, inputs=[1.0, x, y], record_cmd=True)
    cmd.set_param_by_name("a", 3.0)
    cmd.set_param_at_index(2, z)
    cmd.set_dim(10)  # only the first 10 elements
    cmd.launch()
    assert not y.numpy().any()
    np.testing.assert_array_equal(z.numpy(), np.r_[np.full(10, 3.0), np.zeros(n - 10)].astype(np.float32))
    cmd.set_params([0.5, x, y])
    cmd.set_dim(n)
    cmd.launch()
    np.testing.assert_array_equal(y.numpy(), np.full(n, 0.5, np.float32))
    grid = sk.zeros((3, 4), device=device)
    cmd2 = sk.launch(fill_2d, (3, 4), inputs=[1.0, grid], record_cmd=True)
    cmd2.launch()
    np.testing.assert_array_equal(grid.numpy(), 1.0 + np.add.outer(np.arange(3) * 10, np.arange(4)))
    cmd2.set_dim(3)  # fewer dimensions than tid() unpacks: the missing extents are 1, as in Warp
    cmd2.set_params([5.0, grid])
    cmd2.launch()
    expect = 1.0 + np.add.outer(np.arange(3) * 10, np.arange(4))
    expect[:, 0] = 5.0 + np.arange(3) * 10
    np.testing.assert_array_equal(grid.numpy(), expect)


def test_bad_parameters_are_named():
    x, y = sk.ones(4, device="cpu"), sk.zeros(4, device="cpu")
    cmd = sk.launch(axpy_into, 4, inputs=[1.0, x, y], record_cmd=True)
    with pytest.raises(TypeError, match="argument 'x'"):
        cmd.set_param_by_name("x", sk.zeros(4, dtype=int, device="cpu"))
    with pytest.raises(ValueError, match="no parameter 'b'.*a, x, y"):
        cmd.set_param_by_name("b", 1.0)
    with pytest.raises(IndexError, match="no index 3"):
        cmd.set_param_at_index(3, 1.0)
    with pytest.raises(TypeError, match="takes 3 arguments"):
        cmd.set_params([1.0, x])
    with pytest.raises(ValueError, match="runs kernel 'axpy_into' forward.*adjoint=True"):
        cmd.set_param_by_name("x", x, adjoint=True)
    cmd.launch()  # the failed changes left the recorded arguments as they were
    np.testing.assert_array_equal(y.numpy(), np.ones(4, np.float32))


def test_generic_kernel_and_debug_bounds_check(monkeypatch):
    x = sk.array(np.arange(5.0), dtype=sk.float64, device="cpu")
    cmd = sk.launch(scale_any, 5, inputs=[sk.float64(2.0), x], record_cmd=True)
    cmd.launch()
    np.testing.assert_array_equal(x.numpy(), 2.0 * np.arange(5.0))
    monkeypatch.setattr(sk.config, "mode", "debug")
    y = sk.zeros(4, device="cpu")
    cmd = sk.launch(axpy_into, 5, inputs=[1.0, sk.ones(5, device="cpu"), y], record_cmd=True)
    with pytest.raises(IndexError, match="out of bounds"):
        cmd.launch()


def test_replays_are_not_taped_but_count_as_overwrites():
    x = sk.ones(8, device="cpu", requires_grad=True)
    y = sk.zeros(8, device="cpu", requires_grad=True)
    cmd = sk.launch(axpy_into, 8, inputs=[1.0, x, y], record_cmd=True)
    tape = sk.Tape()
    with tape:
        cmd.launch()
    assert tape.ops == []  # nothing recorded
    np.testing.assert_array_equal(y.numpy(), np.ones(8, np.float32))
    before = y._version
    cmd.launch()
    assert y._version > before

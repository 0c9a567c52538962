"""One CPU thread or all, measured per kernel for kernels whose atomics contend (runtime/cpu_tuning.py)."""
import numpy as np
import pytest

import simkit as sk
from simkit.runtime import cpu_tuning


@sk.kernel
def scatter(idx: sk.array(dtype=int), d: sk.array(dtype=float), out: sk.array(dtype=float)):
    i = sk.tid()
    sk.atomic_add(out, idx[i], d[i])


@sk.kernel
def gather(idx: sk.array(dtype=int), x: sk.array(dtype=float), y: sk.array(dtype=float)):
    i = sk.tid()
    y[i] = x[idx[i]] * x[idx[i]]


@sk.kernel
def axpy(a: float, x: sk.array(dtype=float), y: sk.array(dtype=float)):
    i = sk.tid()
    y[i] = a * x[i] + y[i]


@pytest.fixture
def tuning_on():
    old, threads = sk.config.cpu_atomic_tuning, sk.config.cpu_threads
    sk.config.cpu_atomic_tuning, sk.config.cpu_threads = True, 2  # (measured even on a one-core machine)
    cpu_tuning.reset()
    yield
    sk.config.cpu_atomic_tuning, sk.config.cpu_threads = old, threads
    cpu_tuning.reset()


def _entry(name, adjoint=False):
    found = [c for c in cpu_tuning.choices() if c[0] == name and c[1] == adjoint]
    assert len(found) == 1, cpu_tuning.choices()
    return found[0]


def test_choice_is_the_faster_of_the_measured():
    t = cpu_tuning.Tuning()
    for threads, seconds in ((4, 9.0), (1, 2.0), (4, 8.0), (1, 3.0)):
        assert t.serial is None and t.threads(4) == threads
        t.record(threads, seconds)
    assert (t.serial, t.parallel, t.serial_time) == (True, 8.0, 2.0)
    assert t.threads(4) == 1 and t.threads(8) == 1
    t = cpu_tuning.Tuning()
    for threads, seconds in ((4, 1.0), (1, 2.0), (4, 1.5), (1, 1.8)):
        t.record(threads, seconds)
    assert t.serial is False and t.threads(4) == 4 and t.threads(8) == 8  # (all threads: config may change)


def test_contended_scatter_is_measured_and_every_launch_is_right(tuning_on):
    rng = np.random.default_rng(0)
    n, bins = 50_000, 4
    idx_np, d_np = rng.integers(0, bins, n), rng.uniform(0.0, 1.0, n).astype(np.float32)
    idx, d = sk.array(idx_np, dtype=int, device="cpu"), sk.array(d_np, dtype=float, device="cpu")
    want = np.bincount(idx_np, weights=d_np.astype(np.float64), minlength=bins)
    for k in range(2 * cpu_tuning.ROUNDS + 2):  # the timed launches, then the chosen way
        out = sk.zeros(bins, dtype=float, device="cpu")
        sk.launch(scatter, n, inputs=[idx, d, out], device="cpu")
        np.testing.assert_allclose(out.numpy(), want, rtol=1e-4)
    name, adjoint, size, par, ser, serial = _entry("scatter")
    assert size == 1 << (n.bit_length() - 1) and par < np.inf and ser < np.inf
    assert serial == (ser < par)
    sk.launch(scatter, 100, inputs=[idx, d, out], device="cpu")  # a small launch: one thread, not measured
    assert len([c for c in cpu_tuning.choices() if c[0] == "scatter"]) == 1


def test_kernels_without_contending_atomics_are_not_measured(tuning_on):
    x, y = sk.ones(4096, dtype=float, device="cpu"), sk.zeros(4096, dtype=float, device="cpu")
    for _ in range(5):
        sk.launch(axpy, 4096, inputs=[2.0, x, y], device="cpu")
    np.testing.assert_array_equal(y.numpy(), np.full(4096, 10.0, np.float32))
    assert not cpu_tuning.choices()


def test_adjoint_launches_are_measured_and_their_gradients_right(tuning_on):
    """The adjoint of a gather adds into x.grad with atomics; every backward pass gives the same gradient."""
    rng = np.random.default_rng(1)
    n, m = 20_000, 16
    idx_np = rng.integers(0, m, n)
    xs = rng.uniform(-1.0, 1.0, m).astype(np.float32)
    want = 2.0 * xs * np.bincount(idx_np, minlength=m)
    idx = sk.array(idx_np, dtype=int, device="cpu")
    for _ in range(2 * cpu_tuning.ROUNDS + 1):
        x = sk.array(xs, dtype=float, device="cpu", requires_grad=True)
        y = sk.zeros(n, dtype=float, device="cpu", requires_grad=True)
        tape = sk.Tape()
        with tape:
            sk.launch(gather, n, inputs=[idx, x, y], device="cpu")
        tape.backward(grads={y: sk.ones(n, dtype=float, device="cpu")})
        np.testing.assert_allclose(x.grad.numpy(), want, rtol=1e-4)
    assert _entry("gather", adjoint=True)[5] in (True, False)


def test_tuning_off_runs_all_threads(tuning_on):
    sk.config.cpu_atomic_tuning = False
    idx, d = sk.zeros(5000, dtype=int, device="cpu"), sk.ones(5000, dtype=float, device="cpu")
    out = sk.zeros(1, dtype=float, device="cpu")
    for _ in range(5):
        sk.launch(scatter, 5000, inputs=[idx, d, out], device="cpu")
    assert out.numpy()[0] == 25000.0
    assert not cpu_tuning.choices()

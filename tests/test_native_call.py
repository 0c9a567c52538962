"""Kernel entries called through fast-call builtins (simkit/kernels/backends/native_call.py).

They must behave as the ctypes functions they replace: the same results, a TypeError (never a
crash) for arguments of the wrong kind, the GIL released while a kernel runs, and no reference
leaked or lost per call. ``config.native_calls = False`` falls back to ctypes.
"""
import ctypes
import sys
import threading
import time

import numpy as np
import pytest

import simkit as sk
from simkit.kernels.backends import native_call


@sk.kernel
def add_one(x: sk.array(dtype=float)):
    i = sk.tid()
    x[i] = x[i] + 1.0


@sk.kernel
def spin(n: int, out: sk.array(dtype=sk.float64)):
    s = sk.float64(0.0)
    for k in range(n):
        s = s + sk.sin(sk.float64(k))
    out[0] = s


def _entry(kernel):
    spec = kernel.specs[None]
    return spec.native[sk.get_device("cpu").kind][0]


def test_cpu_entries_are_fast_calls_with_ctypes_results():
    x = sk.zeros(100, device="cpu")
    sk.launch(add_one, 100, inputs=[x])
    entry = _entry(add_one)
    assert type(entry).__name__ == "builtin_function_or_method", type(entry)
    sk.launch(add_one, 100, inputs=[x])
    np.testing.assert_array_equal(x.numpy(), np.full(100, 2.0, np.float32))


def test_wrong_arguments_raise_type_error():
    x = sk.zeros(4, device="cpu")
    sk.launch(add_one, 4, inputs=[x])
    entry = _entry(add_one)
    with pytest.raises(TypeError, match="4 arguments"):
        entry(b"", b"")
    with pytest.raises(TypeError):
        entry("not bytes", b"", 1, 1)
    with pytest.raises(TypeError):
        entry(b"", b"", "one", 1)
    launch = native_call.cuda_launch()
    with pytest.raises(TypeError, match="8 arguments"):
        launch(1, 2, 3)
    with pytest.raises(TypeError, match="no driver table"):
        launch(0, 0, 0, 1, 256, 0, b"a", b"b")


def test_no_reference_lost_per_call():
    x = sk.zeros(4, device="cpu")
    sk.launch(add_one, 4, inputs=[x])
    before = sys.getrefcount(None)
    for _ in range(2000):
        sk.launch(add_one, 4, inputs=[x])
    assert sys.getrefcount(None) >= before - 50  # (a missing Py_None incref would lose 2000)
    np.testing.assert_array_equal(x.numpy(), np.full(4, 2001.0, np.float32))


def _spin_count(seconds: float) -> int:
    count, end = 0, time.perf_counter() + seconds
    while time.perf_counter() < end:
        count += 1
    return count


def test_gil_released_while_a_kernel_runs():
    out = sk.zeros(1, dtype=sk.float64, device="cpu")
    sk.launch(spin, 1, inputs=[10, out])  # compiled and loaded
    n = 10_000_000
    t0 = time.perf_counter()
    sk.launch(spin, 1, inputs=[n, out])
    alone = time.perf_counter() - t0
    assert alone > 0.05, alone  # (the kernel runs long enough to tell)
    rate = _spin_count(0.02) / 0.02  # this thread's loop iterations per second, alone
    done = threading.Event()
    worker = threading.Thread(target=lambda: (sk.launch(spin, 1, inputs=[n, out]), done.set()))
    count = 0
    worker.start()
    while not done.is_set():
        count += 1
        time.perf_counter()  # (the same loop body as _spin_count)
    worker.join()
    # with the GIL held by the kernel this thread would run for one switch interval (5 ms) at most
    assert count > 0.2 * rate * alone, (count, rate * alone)


def test_ctypes_fallback(monkeypatch):
    monkeypatch.setattr(sk.config, "native_calls", False)

    @sk.kernel
    def add_two(x: sk.array(dtype=float)):
        i = sk.tid()
        x[i] = x[i] + 2.0

    x = sk.zeros(10, device="cpu")
    sk.launch(add_two, 10, inputs=[x])
    assert isinstance(_entry(add_two), ctypes._CFuncPtr)
    np.testing.assert_array_equal(x.numpy(), np.full(10, 2.0, np.float32))
    assert native_call.cuda_launch() is None

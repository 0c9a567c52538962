"""Timing of CUDA activities (kernels/backends/cuda/timing.py): timing_begin / timing_end / timing_print and
ScopedTimer(cuda_filter=...), on the GPU (the emulated one without a GPU)."""
import contextlib
import io

import numpy as np
import pytest

import simkit as sk
from simkit.kernels.backends.cuda import timing


@sk.kernel
def scale(x: sk.array(dtype=float), y: sk.array(dtype=float), s: float):
    i = sk.tid()
    y[i] = x[i] * s


def _activities(results):
    return [(r.name, r.filter) for r in results]


def test_each_activity_is_timed_with_its_name_and_flag(cuda_device):
    x = sk.array(np.arange(8, dtype=np.float32), device=cuda_device, requires_grad=True)
    y = sk.zeros(8, device=cuda_device, requires_grad=True)
    sk.launch(scale, 8, inputs=[x, y, 2.0], device=cuda_device)  # (compiled and loaded before timing)
    with sk.ScopedCapture(cuda_device) as cap:
        sk.launch(scale, 8, inputs=[x, y, 3.0], device=cuda_device)
    sk.timing_begin()
    tape = sk.Tape()
    with tape:
        sk.launch(scale, 8, inputs=[x, y, 2.0], device=cuda_device)
    y.grad.fill_(1.0)          # a memset (a pattern of equal words)
    tape.backward()
    y[::2].fill_(5.0)          # a strided fill: the runtime's fill kernel
    z = sk.clone(y)            # a device-to-device copy (and the zeroing of its gradient)
    host = z.numpy()           # a copy to the host
    sk.capture_launch(cap.graph)
    results = sk.timing_end()
    assert _activities(results) == [
        ("forward kernel scale", sk.TIMING_KERNEL), ("memset", sk.TIMING_MEMSET),
        ("backward kernel scale", sk.TIMING_KERNEL), ("builtin kernel sk_rt_fill", sk.TIMING_KERNEL_BUILTIN),
        ("memset", sk.TIMING_MEMSET), ("memcpy DtoD", sk.TIMING_MEMCPY), ("memcpy DtoH", sk.TIMING_MEMCPY), ("graph", sk.TIMING_GRAPH)]
    assert all(r.device == sk.get_device(cuda_device) and r.elapsed >= 0.0 for r in results)
    np.testing.assert_array_equal(host, np.where(np.arange(8) % 2 == 0, 5.0, 2.0 * np.arange(8)))
    np.testing.assert_array_equal(x.grad.numpy(), np.full(8, 2.0))
    assert sk.timing_end() == []  # (timing is off again, and nothing is left over)


def test_the_filter_selects_activities_and_captures_are_not_timed(cuda_device):
    x = sk.ones(4, device=cuda_device)
    y = sk.zeros(4, device=cuda_device)
    sk.launch(scale, 4, inputs=[x, y, 2.0], device=cuda_device)
    sk.timing_begin(cuda_filter=sk.TIMING_MEMCPY | sk.TIMING_GRAPH)
    sk.launch(scale, 4, inputs=[x, y, 2.0], device=cuda_device)  # (a kernel: not selected)
    sk.copy(y, x)
    with sk.ScopedCapture(cuda_device) as cap:                   # (recorded, not run: not timed)
        sk.copy(x, y)
    sk.capture_launch(cap.graph)
    assert _activities(sk.timing_end()) == [("memcpy DtoD", sk.TIMING_MEMCPY), ("graph", sk.TIMING_GRAPH)]


def test_timing_events_are_released(cuda_device):
    fake = sk.kernels.backends.cuda.driver._api
    if not hasattr(fake, "events"):
        pytest.skip("counts the emulated GPU's events")
    x = sk.ones(4, device=cuda_device)
    before = len(fake.events)
    sk.timing_begin()
    for _ in range(5):
        x.fill_(2.0)
    assert len(fake.events) == before + 10
    assert len(sk.timing_end()) == 5
    assert len(fake.events) == before
    sk.timing_begin()
    x.fill_(3.0)
    sk.timing_begin()  # (a new begin drops what the last one recorded)
    assert len(fake.events) == before and sk.timing_end() == []


def test_scoped_timer_reports_the_blocks_activities(cuda_device):
    x = sk.ones(4, device=cuda_device)
    y = sk.zeros(4, device=cuda_device)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        with sk.ScopedTimer("copy", synchronize=True, cuda_filter=sk.TIMING_MEMCPY) as timer:
            sk.copy(y, x)
            y.fill_(0.0)
    assert _activities(timer.timing_results) == [("memcpy DtoD", sk.TIMING_MEMCPY)]
    text = out.getvalue()
    assert "copy took" in text and "CUDA timeline" in text and "memcpy DtoD" in text
    assert "CUDA device summary" in text and f"{sk.get_device(cuda_device).alias}" in text
    seen = []
    with sk.ScopedTimer("quiet", cuda_filter=sk.TIMING_ALL, report_func=lambda r, indent: seen.append(r)):
        y.fill_(1.0)
    assert [_activities(r) for r in seen] == [[("memset", sk.TIMING_MEMSET)]]


def test_timing_print_without_results_and_on_the_cpu():
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        sk.timing_print([])
    assert out.getvalue() == "No activity\n"
    sk.timing_begin()
    sk.zeros(4, device="cpu").fill_(1.0)  # (CPU work: no CUDA activity)
    assert sk.timing_end() == []
    assert timing.FILTER == 0

"""``sk.CapturedStep`` (a frame's launches replayed as a CUDA graph, or a CPU graph) and what a capture may copy from
the host: arrays made from data (re-made by every replay), pinned arrays (read live, as in Warp);
pageable host memory raises.

GPU tests run on the real GPU, else on the emulated one (tests/cuda_emulator.py), whose driver
refuses a captured copy from pageable memory as the real one does.
"""
import numpy as np
import pytest

import simkit as sk
import simkit.runtime.captured_step as captured_step


@sk.kernel
def advance(x: sk.array(dtype=float), v: sk.array(dtype=float), dt: float):
    i = sk.tid()
    x[i] = x[i] + v[i] * dt


@sk.kernel
def accumulate(acc: sk.array(dtype=float), x: sk.array(dtype=float)):
    i = sk.tid()
    acc[i] = acc[i] + x[i]


@sk.kernel
def add_into(dst: sk.array(dtype=float), src: sk.array(dtype=float)):
    i = sk.tid()
    dst[i] = dst[i] + src[i]


@pytest.fixture
def graph_launches(monkeypatch):
    """How many times CapturedStep launched its graph."""
    count = [0]
    real = captured_step.capture_launch

    def counting(graph):
        count[0] += 1
        real(graph)

    monkeypatch.setattr(captured_step, "capture_launch", counting)
    return count


def _two_state_frame(device, substeps):
    """A frame of ``substeps`` steps alternating two position arrays (as solvers alternate states)."""
    n = 100
    v = sk.array(np.linspace(-1.0, 1.0, n), dtype=float, device=device)
    xs = [sk.zeros(n, device=device), sk.zeros(n, device=device)]

    def frame():
        for _ in range(substeps):
            sk.launch(advance, n, inputs=[xs[0], v, 0.1], device=device)
            sk.launch(add_into, n, inputs=[xs[1], xs[0]], device=device)
            xs.reverse()

    return frame, xs, v.numpy()


def test_on_the_cpu_frames_replay_as_cpu_graphs(graph_launches):
    frame, xs, v = _two_state_frame("cpu", 2)
    step = sk.CapturedStep(frame, "cpu", enabled=True)
    for _ in range(4):
        step()
    assert isinstance(step.graph, sk.CpuGraph) and len(step.graph) == 4 and graph_launches[0] == 3
    expected_frame, expected, _ = _two_state_frame("cpu", 2)
    for _ in range(4):
        expected_frame()
    np.testing.assert_array_equal(xs[0].numpy(), expected[0].numpy())
    assert "captured" in repr(step)
    direct = sk.CapturedStep(frame, "cpu", enabled=False)
    for _ in range(3):
        direct()
    assert direct.graph is None and graph_launches[0] == 3 and "not captured" in repr(direct)


@pytest.mark.parametrize("graph_faster", [True, False])
def test_on_the_cpu_the_graph_stays_only_if_replays_are_faster(graph_launches, monkeypatch, graph_faster):
    # by default the 2nd call runs directly and the 3rd and 4th replay the graph, all timed
    clock = iter([0.0, 1.0, 10.0, 10.5, 20.0, 20.5] if graph_faster else [0.0, 1.0, 10.0, 12.0, 20.0, 22.0])
    monkeypatch.setattr(captured_step.time, "perf_counter", lambda: next(clock))
    frame, xs, _ = _two_state_frame("cpu", 2)
    step = sk.CapturedStep(frame, "cpu")
    for _ in range(6):
        step()
    assert graph_launches[0] == (4 if graph_faster else 2)
    assert (step.graph is not None) == graph_faster and step.enabled == graph_faster
    expected_frame, expected, _ = _two_state_frame("cpu", 2)
    for _ in range(6):
        expected_frame()
    np.testing.assert_array_equal(xs[0].numpy(), expected[0].numpy())


def test_on_a_gpu_the_second_call_captures_and_later_calls_replay(cuda_device, graph_launches):
    frame, xs, _ = _two_state_frame(cuda_device, 4)
    step = sk.CapturedStep(frame, cuda_device)
    assert step.enabled and step.graph is None
    step()                                   # runs the function: compiles, loads
    assert step.graph is None and graph_launches[0] == 0
    for _ in range(4):
        step()
    assert step.graph is not None and graph_launches[0] == 4 and "captured" in repr(step)
    ref_frame, ref, _ = _two_state_frame("cpu", 4)
    for _ in range(5):
        ref_frame()
    np.testing.assert_allclose(xs[0].numpy(), ref[0].numpy(), rtol=1e-6)
    np.testing.assert_allclose(xs[1].numpy(), ref[1].numpy(), rtol=1e-6)


def test_disabled_on_a_gpu_runs_the_function(cuda_device, graph_launches):
    frame, xs, v = _two_state_frame(cuda_device, 1)          # (an odd number of swaps: not replayable)
    step = sk.CapturedStep(frame, cuda_device, enabled=False)
    for _ in range(3):
        step()
    assert step.graph is None and graph_launches[0] == 0
    ref_frame, ref, _ = _two_state_frame("cpu", 1)
    for _ in range(3):
        ref_frame()
    np.testing.assert_allclose(xs[0].numpy(), ref[0].numpy(), rtol=1e-6)


def test_bad_arguments():
    with pytest.raises(TypeError, match="fn must be callable"):
        sk.CapturedStep(3, "cpu")
    with pytest.raises(TypeError, match="enabled must be None, True or False"):
        sk.CapturedStep(lambda: None, "cpu", enabled="yes")


def test_an_array_made_from_data_in_a_capture_is_made_again_by_every_replay(cuda_device):
    n = 64
    data = np.arange(n, dtype=np.float32)
    out = sk.zeros(n, device=cuda_device)
    sk.launch(accumulate, n, inputs=[out, out], device=cuda_device)      # (loaded before the capture)
    sk.synchronize()
    with sk.ScopedCapture(cuda_device) as cap:
        tmp = sk.array(data, dtype=float, device=cuda_device)          # uploaded by the graph
        sk.launch(accumulate, n, inputs=[tmp, tmp], device=cuda_device)  # tmp = 2 * data
        sk.launch(accumulate, n, inputs=[out, tmp], device=cuda_device)
    data[:] = -1.0                           # the graph keeps the data as it was when captured
    for _ in range(3):
        sk.capture_launch(cap.graph)
    sk.synchronize()
    np.testing.assert_array_equal(out.numpy(), 3 * 2 * np.arange(n, dtype=np.float32))


def test_a_pinned_array_is_read_live_by_every_replay(cuda_device):
    n = 32
    host = sk.zeros(n, device="cpu", pinned=True)
    dev = sk.zeros(n, device=cuda_device)
    out = sk.zeros(n, device=cuda_device)
    sk.launch(accumulate, n, inputs=[out, dev], device=cuda_device)
    sk.synchronize()
    with sk.ScopedCapture(cuda_device) as cap:
        sk.copy(dev, host)
        sk.launch(accumulate, n, inputs=[out, dev], device=cuda_device)
    total = np.zeros(n, np.float32)
    for k in range(3):
        host.numpy()[:] = np.arange(n) * (k + 1)   # new input for each replay, as in Warp
        total += np.arange(n, dtype=np.float32) * (k + 1)
        sk.capture_launch(cap.graph)
        sk.synchronize()                         # (the copy reads the pinned memory when it runs)
    np.testing.assert_array_equal(out.numpy(), total)


def test_pageable_host_memory_cannot_be_copied_in_a_capture(cuda_device):
    dev = sk.zeros(8, device=cuda_device)
    sk.synchronize()
    with sk.ScopedCapture(cuda_device):
        with pytest.raises(RuntimeError, match=r"pageable host memory .* pinned array"):
            sk.copy(dev, sk.ones(8, device="cpu"))
        with pytest.raises(RuntimeError, match="pageable host memory"):
            dev.assign(np.ones(8))
    np.testing.assert_array_equal(dev.numpy(), np.zeros(8, np.float32))


def test_fill_with_large_elements_in_a_capture(cuda_device):
    mat = sk.matrix((9, 9), dtype=sk.float64)   # 648-byte elements: filled from the host
    a = sk.zeros(5, dtype=mat, device=cuda_device)
    sk.synchronize()
    with sk.ScopedCapture(cuda_device) as cap:
        a.fill_(2.5)
    assert not a.numpy().any()
    sk.capture_launch(cap.graph)
    sk.synchronize()
    np.testing.assert_array_equal(a.numpy(), np.full((5, 9, 9), 2.5))

"""capture_if / capture_while (runtime/capture_conditional.py): at once, recorded in a CPU capture, and as conditional
nodes of a CUDA graph (on the emulated GPU without one); capture_pause / capture_resume; CaptureMode; what a CPU
capture records of strided and indexed fills and copies."""
import gc
import weakref

import numpy as np
import pytest

import simkit as sk
from simkit.kernels.backends.cuda import conditional, nvrtc


@sk.kernel
def double_until(x: sk.array(dtype=float), cond: sk.array(dtype=sk.int32), limit: float):
    i = sk.tid()
    x[i] = x[i] * 2.0
    if i == 0 and x[0] >= limit:
        cond[0] = 0


@sk.kernel
def add_value(x: sk.array(dtype=float), v: float):
    i = sk.tid()
    x[i] = x[i] + v


@sk.kernel
def count_down(c: sk.array(dtype=sk.int32), n: sk.array(dtype=sk.int32)):
    sk.atomic_sub(c, 0, 1)
    sk.atomic_add(n, 0, 1)


@sk.kernel
def accumulate(x: sk.array(dtype=float), y: sk.array(dtype=float)):
    i = sk.tid()
    sk.atomic_add(y, i, x[i])


@sk.kernel
def set_value(a: sk.array(dtype=sk.int32), v: int):
    a[0] = v


def _doubling(x0: float, limit: float) -> float:
    x = x0
    while True:
        x *= 2.0
        if x >= limit:
            return x


def _program(x, cond, dev, limit):
    """While cond[0]: double x (cond[0] = 0 once x[0] >= limit); then x - 1 if cond[0] is still set, else x + 1."""
    sk.capture_while(cond, lambda: sk.launch(double_until, dim=x.size, inputs=[x, cond, limit], device=dev))
    sk.capture_if(cond, on_true=lambda: sk.launch(add_value, dim=x.size, inputs=[x, -1.0], device=dev),
                  on_false=lambda: sk.launch(add_value, dim=x.size, inputs=[x, 1.0], device=dev))


def test_at_once_the_loop_and_the_branches_run_now(device):
    x = sk.array(np.ones(5, np.float32), device=device)
    cond = sk.array(np.array([1], np.int32), device=device)
    _program(x, cond, device, 100.0)
    np.testing.assert_array_equal(x.numpy(), np.full(5, _doubling(1.0, 100.0) + 1.0, np.float32))
    assert cond.numpy()[0] == 0


def test_captured_graph_decides_at_each_replay(device):
    x = sk.array(np.ones(5, np.float32), device=device)
    cond = sk.array(np.array([1], np.int32), device=device)
    with sk.ScopedCapture(device) as cap:
        _program(x, cond, device, 1000.0)
    np.testing.assert_array_equal(x.numpy(), np.ones(5, np.float32))  # nothing ran while capturing
    for x0, c0 in [(1.0, 1), (3.0, 1), (3.0, 0), (200.0, 1), (1.0, 1)]:
        x.fill_(x0)
        cond.fill_(c0)
        sk.capture_launch(cap.graph)
        expected = (_doubling(x0, 1000.0) if c0 else x0) + 1.0
        np.testing.assert_array_equal(x.numpy(), np.full(5, expected, np.float32), err_msg=f"x0={x0}, cond={c0}")


def test_a_branch_that_changes_the_condition_does_not_run_the_other(device):
    cond = sk.array(np.array([1], np.int32), device=device)
    x = sk.zeros(3, dtype=float, device=device)

    def on_true():
        sk.launch(add_value, dim=3, inputs=[x, 10.0], device=device)
        sk.launch(set_value, dim=1, inputs=[cond, 0], device=device)

    with sk.ScopedCapture(device) as cap:
        sk.capture_if(cond, on_true=on_true,
                      on_false=lambda: sk.launch(add_value, dim=3, inputs=[x, 100.0], device=device))
    sk.capture_launch(cap.graph)
    np.testing.assert_array_equal(x.numpy(), np.full(3, 10.0, np.float32))
    sk.capture_launch(cap.graph)  # cond is 0 now: the else branch only
    np.testing.assert_array_equal(x.numpy(), np.full(3, 110.0, np.float32))


def test_graphs_as_branches_and_nested_conditionals(device):
    counter = sk.zeros(1, dtype=sk.int32, device=device)
    total = sk.zeros(1, dtype=sk.int32, device=device)
    outer = sk.array(np.array([1], np.int32), device=device)
    with sk.ScopedCapture(device) as body:
        sk.launch(count_down, dim=1, inputs=[counter, total], device=device)
    with sk.ScopedCapture(device) as cap:
        counter.fill_(4)  # (a fill in the graph resets the loop counter at every replay)
        sk.capture_if(outer, on_true=lambda: sk.capture_while(counter, body.graph))
    for replays in range(1, 4):
        sk.capture_launch(cap.graph)
        assert total.numpy()[0] == 4 * replays and counter.numpy()[0] == 0
    outer.fill_(0)
    sk.capture_launch(cap.graph)
    assert total.numpy()[0] == 12 and counter.numpy()[0] == 4  # the fill ran, the loop did not


def test_keyword_arguments_reach_the_callables(device):
    x = sk.zeros(2, dtype=float, device=device)
    cond = sk.array(np.array([1], np.int32), device=device)
    seen = []

    def branch(arr, v):
        seen.append(v)
        sk.launch(add_value, dim=2, inputs=[arr, v], device=device)

    sk.capture_if(cond, on_true=branch, arr=x, v=2.5)
    np.testing.assert_array_equal(x.numpy(), [2.5, 2.5])
    assert seen == [2.5]


def test_bad_conditions_and_branches_are_refused(device):
    with pytest.raises(TypeError, match="array of int32.*float32"):
        sk.capture_if(sk.zeros(1, dtype=float, device=device), on_true=lambda: None)
    with pytest.raises(TypeError, match="array of int32.*list"):
        sk.capture_while([1], lambda: None)
    with pytest.raises(ValueError, match="empty"):
        sk.capture_while(sk.zeros(0, dtype=sk.int32, device=device), lambda: None)
    cond = sk.ones(1, dtype=sk.int32, device=device)
    with pytest.raises(TypeError, match="on_false must be a callable or a captured graph, got int"):
        sk.capture_if(cond, on_true=lambda: None, on_false=3)
    with pytest.raises(TypeError, match="while_body"):
        sk.capture_while(cond, None)
    sk.capture_if(cond)  # no branch: nothing to do


def test_conditional_nodes_on_the_gpu(cuda_device):
    """Inside a CUDA capture each conditional is a graph node (the setter kernel is captured, not run), and a
    capture's mode reaches the driver."""
    fake = getattr(sk.kernels.backends.cuda.driver, "_api")
    assert sk.is_conditional_graph_supported()
    cond = sk.ones(1, dtype=sk.int32, device=cuda_device)
    x = sk.zeros(1, dtype=float, device=cuda_device)
    stream = sk.get_stream(cuda_device)
    with sk.ScopedCapture(cuda_device, capture_mode=sk.CaptureMode.RELAXED) as cap:
        if hasattr(fake, "streams"):  # (the emulated GPU records the mode each capture began with)
            assert fake.streams[stream.handle].capture_mode == int(fake.CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_RELAXED)
        # (a launch given the capturing stream explicitly goes into the branch too: it is captured on that stream)
        sk.capture_if(cond, on_true=lambda: sk.launch(add_value, dim=1, inputs=[x, 1.0], device=cuda_device,
                                                      stream=stream))
    assert x.numpy()[0] == 0.0
    sk.capture_launch(cap.graph)
    sk.capture_launch(cap.graph)
    assert x.numpy()[0] == 2.0
    cond.zero_()
    sk.capture_launch(cap.graph)
    assert x.numpy()[0] == 2.0


def test_conditional_setter_compiles_with_nvrtc():
    """The setter kernel compiles to PTX for sm_80 and sm_90, calling the device runtime's builtin (the driver resolves
    it when it loads the PTX)."""
    if not nvrtc.is_available():
        pytest.skip("NVRTC is not installed")
    for arch in ("compute_80", "compute_90"):
        ptx = nvrtc.compile_source(conditional.CONDITION_SOURCE, arch, "simkit_conditional").decode()
        assert ".entry sk_rt_set_condition" in ptx and ".extern .func cudaGraphSetConditional" in ptx


def test_capture_modes_are_cudas():
    from cuda.bindings import driver

    for mode in sk.CaptureMode:
        assert int(mode) == int(getattr(driver.CUstreamCaptureMode, f"CU_STREAM_CAPTURE_MODE_{mode.name}"))
    with pytest.raises(NotImplementedError, match="apic"):
        sk.capture_begin("cpu", apic=True)


def test_a_cpu_capture_replays_strided_and_indexed_fills_and_copies():
    a = sk.zeros((4, 4), dtype=sk.int32, device="cpu")
    src = sk.array(np.arange(16, dtype=np.int32).reshape(4, 4), device="cpu")
    dst = sk.zeros((4, 4), dtype=sk.int32, device="cpu")
    b = sk.zeros(8, dtype=sk.int32, device="cpu")
    indexed = sk.indexedarray(b, [sk.array([0, 2, 4, 6], dtype=sk.int32, device="cpu")])
    with sk.ScopedCapture("cpu") as cap:
        a[:, 1].fill_(7)
        sk.copy(dst[:, 0], src[:, 2])
        indexed.fill_(5)
    assert not a.numpy().any() and not dst.numpy().any() and not b.numpy().any()
    sk.capture_launch(cap.graph)
    expect_a = np.zeros((4, 4), np.int32)
    expect_a[:, 1] = 7
    expect_dst = np.zeros((4, 4), np.int32)
    expect_dst[:, 0] = np.arange(16).reshape(4, 4)[:, 2]
    np.testing.assert_array_equal(a.numpy(), expect_a)
    np.testing.assert_array_equal(dst.numpy(), expect_dst)
    np.testing.assert_array_equal(b.numpy(), [5, 0, 5, 0, 5, 0, 5, 0])


def test_a_paused_capture_runs_work_at_once_and_resumes(device):
    x = sk.zeros(3, dtype=float, device=device)
    y = sk.zeros(3, dtype=float, device=device)
    with sk.ScopedCapture(device) as cap:
        sk.launch(add_value, 3, inputs=[x, 1.0], device=device)
        paused = sk.capture_pause(device)
        sk.launch(add_value, 3, inputs=[y, 5.0], device=device)  # runs now, outside the graph
        np.testing.assert_array_equal(y.numpy(), [5.0, 5.0, 5.0])
        sk.capture_resume(paused, device)
        sk.launch(add_value, 3, inputs=[x, 10.0], device=device)
        with pytest.raises(RuntimeError, match="capture_resume"):
            sk.capture_resume(paused, device)  # (once)
    np.testing.assert_array_equal(x.numpy(), [0.0, 0.0, 0.0])
    for _ in range(2):
        sk.capture_launch(cap.graph)
    np.testing.assert_array_equal(x.numpy(), [22.0, 22.0, 22.0])
    np.testing.assert_array_equal(y.numpy(), [5.0, 5.0, 5.0])


def test_a_tape_records_conditionals_run_at_once_and_refuses_captured_ones(device):
    """Run at once, each iteration's launches are on the Tape (the gradient is the loop's); in a capture the Tape
    could not know how often the body runs, so recording it is refused."""
    x = sk.array(np.array([1.5, -2.0], np.float32), dtype=float, device=device, requires_grad=True)
    y = sk.zeros(2, dtype=float, device=device, requires_grad=True)
    counter = sk.array(np.array([3], np.int32), device=device)
    iterations = sk.zeros(1, dtype=sk.int32, device=device)

    def body():
        sk.launch(accumulate, dim=2, inputs=[x, y], device=device)
        sk.launch(count_down, dim=1, inputs=[counter, iterations], device=device)

    tape = sk.Tape()
    with tape:
        sk.capture_while(counter, body)
    np.testing.assert_array_equal(y.numpy(), [4.5, -6.0])  # three iterations: y = 3 x
    y.grad.fill_(1.0)
    tape.backward()
    np.testing.assert_array_equal(x.grad.numpy(), [3.0, 3.0])
    with sk.ScopedCapture(device):
        with sk.Tape(), pytest.raises(RuntimeError, match="Tape records"):
            sk.capture_while(counter, body)


def test_without_conditional_nodes_a_capture_refuses_and_at_once_still_works(cuda_device, monkeypatch):
    """A driver older than CUDA 12.4 has no conditional nodes: inside a capture the error says so; outside, the loop
    runs as before."""
    monkeypatch.setattr(conditional.driver, "driver_version", lambda: 12030)
    assert not sk.is_conditional_graph_supported()
    counter = sk.array(np.array([2], np.int32), device=cuda_device)
    total = sk.zeros(1, dtype=sk.int32, device=cuda_device)
    body = lambda: sk.launch(count_down, dim=1, inputs=[counter, total], device=cuda_device)  # noqa: E731
    with sk.ScopedCapture(cuda_device):
        with pytest.raises(RuntimeError, match=r"CUDA 12\.4 or newer.*12030"):
            sk.capture_while(counter, body)
    sk.capture_while(counter, body)
    assert total.numpy()[0] == 2 and counter.numpy()[0] == 0


def test_a_graph_keeps_its_condition_alive(cuda_device):
    x = sk.zeros(1, dtype=float, device=cuda_device)
    cond = sk.ones(1, dtype=sk.int32, device=cuda_device)
    with sk.ScopedCapture(cuda_device) as cap:
        sk.capture_if(cond, on_true=lambda: sk.launch(add_value, dim=1, inputs=[x, 1.0], device=cuda_device))
    ref = weakref.ref(cond)
    del cond
    gc.collect()
    assert ref() is not None  # (held by the graph)
    sk.capture_launch(cap.graph)
    assert x.numpy()[0] == 1.0
    del cap
    gc.collect()
    assert ref() is None

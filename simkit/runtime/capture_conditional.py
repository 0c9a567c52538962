"""Branches and loops on values the device computes: ``capture_if`` and ``capture_while`` (as in NVIDIA Warp).

    done = sk.zeros(1, dtype=sk.int32)                 # the condition: its first element, non-zero = true
    def iterate():
        sk.launch(relax, dim=n, inputs=[x, residual])
        sk.launch(check_converged, dim=1, inputs=[residual, tol, done])   # writes done[0]
    with sk.ScopedCapture() as cap:
        sk.capture_while(done, iterate)                  # loops on the GPU, in the graph
    sk.capture_launch(cap.graph)

Outside a capture they run at once: the condition is read (copied to the host on a GPU) and the branch or the
loop body is called. Inside a CUDA graph capture they insert conditional nodes (CUDA 12.4+,
kernels/backends/cuda/conditional.py), so each replay of the graph decides on the GPU, with the values of that
replay. Inside a CPU capture (kernels/backends/cpu_graph.py) the branches are recorded and each replay reads
the condition when it gets there. Branches are callables (called with ``**kwargs``) or captured graphs.

A Tape records launches made at once (each iteration of a loop run outside a capture), but not conditionals
inside a capture: how often each launch runs is only known at replay, so that raises rather than give a wrong
backward pass.
"""
from __future__ import annotations

import ctypes

from ..kernels import types as T
from ..kernels.backends import cpu_graph
from ..kernels.backends.cuda import conditional, driver
from ..kernels.backends.cuda import stream as cstream


def is_conditional_graph_supported() -> bool:
    """Whether CUDA graph captures can hold ``capture_if``/``capture_while`` (driver and NVRTC: CUDA 12.4+)."""
    return conditional.is_supported()


def _check_condition(condition) -> None:
    from .array import array

    if not isinstance(condition, array) or condition.dtype is not T.int32:
        raise TypeError("the condition of capture_if/capture_while must be an array of int32 whose first element "
                        f"holds the condition, got {type(condition).__name__}"
                        f"{'' if not isinstance(condition, array) else ' of ' + condition.dtype.__name__}")
    if condition.size < 1:
        raise ValueError("the condition array of capture_if/capture_while is empty")


def _check_branch(branch, name: str) -> None:
    if branch is not None and not (callable(branch) or _is_graph(branch)):
        raise TypeError(f"{name} must be a callable or a captured graph, got {type(branch).__name__}")


def _is_graph(obj) -> bool:
    return isinstance(obj, (cstream.Graph, cpu_graph.CpuGraph))


def _refuse_tape(what: str) -> None:
    from .tape import active_tape

    if active_tape() is not None:
        raise RuntimeError(f"{what} inside a graph capture while a Tape records: the Tape would record the launches "
                           "of every branch once, whatever runs at each replay, and its backward pass would be "
                           "wrong; record outside the capture, or call it outside the Tape")


def _where(condition, stream, what: str) -> tuple:
    """``(where, stream)``: "cuda" (a capture is active on the CUDA stream the condition was written on, ``stream``),
    "cpu" (a CPU capture records) or "now"; a Tape may not record the first two."""
    where = "now"
    if condition.device.is_cuda:
        stream = cstream.get_stream(condition.device) if stream is None else stream
        if any(s == stream for s, _external in cstream._captures.get(condition.device.ordinal) or []):
            where = "cuda"
    elif cpu_graph.active:
        where = "cpu"
    if where != "now":
        _refuse_tape(what)
    return where, stream


# ---------------------------------------------------------------------------
# At once (no capture)


def _value(condition, stream) -> bool:
    if condition.device.is_cuda:
        with cstream.ScopedStream(stream, sync_enter=False):
            return bool(condition[:1].numpy()[0])
    return bool(ctypes.c_int32.from_address(condition.ptr).value)


def _run(branch, stream, kwargs) -> None:
    if _is_graph(branch):
        cstream.capture_launch(branch, stream=stream if isinstance(branch, cstream.Graph) else None)
    else:
        branch(**kwargs)


# ---------------------------------------------------------------------------
# Recorded on the CPU


def _record_cpu(branch, kwargs) -> list:
    """The operations a CPU branch records (run now into a list of their own)."""
    cap = cpu_graph.active[-1]
    saved, cap.ops = cap.ops, []
    try:
        if isinstance(branch, cpu_graph.CpuGraph):
            cap.ops.extend(branch.ops)
        elif _is_graph(branch):
            raise TypeError("a CUDA graph cannot be a branch of a CPU capture")
        else:
            branch(**kwargs)
        return cap.ops
    finally:
        cap.ops = saved


def _cpu_if(condition, on_true, on_false, kwargs) -> None:
    ops_true = _record_cpu(on_true, kwargs) if on_true is not None else []
    ops_false = _record_cpu(on_false, kwargs) if on_false is not None else []
    value = ctypes.c_int32.from_address(condition.ptr)

    def op(condition=condition):  # (the graph keeps the condition alive)
        for o in (ops_true if value.value else ops_false):
            o()

    cpu_graph.record(op)


def _cpu_while(condition, body, kwargs) -> None:
    ops = _record_cpu(body, kwargs)
    value = ctypes.c_int32.from_address(condition.ptr)

    def op(condition=condition):
        while value.value:
            for o in ops:
                o()

    cpu_graph.record(op)


# ---------------------------------------------------------------------------
# Captured on a GPU: conditional nodes


def _capture_body(st, stream, body_graph, branch, kwargs, after=None) -> None:
    """Capture ``branch`` (then ``after(stream)``) into the body graph of a conditional node, on the capturing stream
    itself (so launches given that stream explicitly go into the body too); the capture's bookkeeping (memory kept,
    frees deferred) continues."""
    mode = cstream._capture_modes.get(stream.handle, cstream.CaptureMode.THREAD_LOCAL)
    with conditional.capturing_body(st, stream.handle, body_graph, int(mode)):
        if isinstance(branch, cstream.Graph):
            conditional.add_child_graph(stream.handle, branch.graph)
            st.capture_keep.append(branch)  # (its memory lives as long as the outer graph)
        elif _is_graph(branch):
            raise TypeError("a CPU graph cannot be a branch of a CUDA capture")
        else:
            with cstream.ScopedStream(stream, sync_enter=False):  # (the condition's stream: the current one)
                branch(**kwargs)
        if after is not None:
            after(stream.handle)


def _cuda_if(condition, on_true, on_false, stream, kwargs) -> None:
    conditional.require_support()
    st = driver.state(condition.device)
    st.capture_keep.append(condition)  # (the graph reads it at every replay: alive as long as the graph)
    h_true = conditional.make_handle(st, stream.handle) if on_true is not None else None
    h_false = conditional.make_handle(st, stream.handle) if on_false is not None else None
    # one kernel sets both handles before either branch runs (a branch may change the condition)
    conditional.set_condition(st, stream.handle, condition.ptr, h_true, h_false)
    for handle, branch in ((h_true, on_true), (h_false, on_false)):
        if handle is not None:
            body = conditional.add_node(st, stream.handle, handle, "IF")
            _capture_body(st, stream, body, branch, kwargs)


def _cuda_while(condition, body_fn, stream, kwargs) -> None:
    conditional.require_support()
    st = driver.state(condition.device)
    st.capture_keep.append(condition)  # (the graph reads it at every replay: alive as long as the graph)
    handle = conditional.make_handle(st, stream.handle)
    conditional.set_condition(st, stream.handle, condition.ptr, handle)
    body = conditional.add_node(st, stream.handle, handle, "WHILE")
    _capture_body(st, stream, body, body_fn, kwargs,
                  after=lambda s: conditional.set_condition(st, s, condition.ptr, handle))


# ---------------------------------------------------------------------------
# The API


def capture_if(condition, on_true=None, on_false=None, stream=None, **kwargs) -> None:
    """Run ``on_true`` if ``condition[0]`` is non-zero, else ``on_false`` (either may be None).

    ``condition``: an int32 array; ``on_true``/``on_false``: callables (called with ``**kwargs``) or captured graphs;
    ``stream``: the CUDA stream the condition was written on (default: its device's current stream). Inside a
    graph capture the choice is made at each replay, on the device (see the module's documentation).
    """
    if on_true is None and on_false is None:
        return
    _check_condition(condition)
    _check_branch(on_true, "on_true")
    _check_branch(on_false, "on_false")
    where, stream = _where(condition, stream, "capture_if")
    if where == "cuda":
        _cuda_if(condition, on_true, on_false, stream, kwargs)
    elif where == "cpu":
        _cpu_if(condition, on_true, on_false, kwargs)
    else:
        branch = on_true if _value(condition, stream) else on_false
        if branch is not None:
            _run(branch, stream, kwargs)


def capture_while(condition, while_body, stream=None, **kwargs) -> None:
    """Run ``while_body`` as long as ``condition[0]`` is non-zero (the body updates the condition).

    Arguments as :func:`capture_if`'s. Inside a CUDA graph capture the loop runs on the device at each replay,
    without the host.
    """
    _check_condition(condition)
    if while_body is None:
        raise TypeError("while_body must be a callable or a captured graph, got None")
    _check_branch(while_body, "while_body")
    where, stream = _where(condition, stream, "capture_while")
    if where == "cuda":
        _cuda_while(condition, while_body, stream, kwargs)
    elif where == "cpu":
        _cpu_while(condition, while_body, kwargs)
    else:
        while _value(condition, stream):
            _run(while_body, stream, kwargs)

"""CUDA streams, events and graph capture (names and semantics as in NVIDIA Warp).

Example::

    s = sk.Stream("cuda:0")
    with sk.ScopedStream(s):            # launches and copies on cuda:0 go to s
        sk.launch(k, dim=n, inputs=[a])
    sk.wait_stream(s)                   # the current stream waits for s

    with sk.ScopedCapture("cuda:0") as cap:   # record a CUDA graph
        sk.launch(step, dim=n, inputs=[state])
    for _ in range(100):
        sk.capture_launch(cap.graph)    # replay it with one call

Each device has a default stream (created by simkit, blocking with respect to
the legacy NULL stream) and a *current* stream (the default one unless
changed with :func:`set_stream` / :class:`ScopedStream`). Graph capture runs in
thread-local capture mode by default (Warp's default): other threads keep working.
"""
from __future__ import annotations

import enum

from . import driver, timing
from .. import cpu_graph
from .conditional import capture_to, suspend

_default_streams: dict = {}  # ordinal -> Stream wrapping the device's default stream
_captures: dict = {}  # ordinal -> list of (Stream, external)
_capture_modes: dict = {}  # stream handle -> CaptureMode of the capture begun on it


class CaptureMode(enum.IntEnum):
    """Which CUDA calls a graph capture forbids meanwhile (CUDA's stream capture modes, as Warp's).

    ``GLOBAL``: unsafe calls (e.g. ``cudaMalloc``) from any thread invalidate it; ``THREAD_LOCAL`` (the default):
    from this thread only; ``RELAXED``: none (for libraries that still make such calls lazily).
    """

    GLOBAL = 0
    THREAD_LOCAL = 1
    RELAXED = 2


def _cuda_device(device=None):
    """Resolve ``device`` (None: the default device) to a CUDA Device, or raise a clear error."""
    dev = driver.resolve_device(device)
    if not dev.is_cuda:
        raise RuntimeError(f"streams, events and graph capture need a CUDA device, got '{dev.alias}'")
    return dev


def _api():
    return driver.cu()


class Stream:
    """A CUDA stream on one device. ``Stream("cuda:0", priority=-1)`` creates a high-priority stream: as in Warp,
    priorities are -1 (high: the device's highest) and 0 (the default); other values are clamped to them."""

    def __init__(self, device=None, priority: int = 0, *, cuda_stream=None):
        self.device = _cuda_device(device)
        st = self._st = driver.state(self.device)  # bound state (context + driver API)
        self._owner = cuda_stream is None
        self._cached_event = None
        self._is_blocking = None  # (read from the driver when first asked, for a wrapped handle)
        if cuda_stream is not None:  # wrap an external handle (e.g. torch.cuda.Stream.cuda_stream); not destroyed
            self.handle = int(cuda_stream)
            return
        if not isinstance(priority, int):
            raise TypeError(f"Stream: priority must be an int (-1: high, 0: default), got {type(priority).__name__}")
        api = _api()
        st.make_current()
        least, greatest = driver.check(api.cuCtxGetStreamPriorityRange(), "cuCtxGetStreamPriorityRange")
        prio = int(greatest) if priority < 0 else int(least)  # numerically lower = higher priority
        self.handle = int(driver.check(api.cuStreamCreateWithPriority(0, prio), "cuStreamCreateWithPriority"))
        self._is_blocking = True  # (flags 0: it synchronizes with the legacy NULL stream)

    @classmethod
    def _wrap(cls, device, handle: int) -> Stream:
        s = cls.__new__(cls)
        s.device = device
        s._st = driver.state(device)
        s.handle = int(handle)
        s._owner = False
        s._cached_event = None
        s._is_blocking = None
        return s

    @property
    def cuda_stream(self) -> int:
        """The raw ``CUstream`` handle as an int (for interop)."""
        return self.handle

    def __cuda_stream__(self):
        """CUDA stream protocol (cuda.core, CuPy, ...): (version, handle)."""
        return (0, self.handle)

    @property
    def is_blocking(self) -> bool:
        """False for streams created non-blocking with respect to the legacy NULL stream."""
        if self._is_blocking is None:
            self._st.make_current()
            flags = int(driver.check(_api().cuStreamGetFlags(self.handle), "cuStreamGetFlags"))
            self._is_blocking = not flags & 1  # CU_STREAM_NON_BLOCKING
        return self._is_blocking

    @property
    def priority(self) -> int:
        """-1 for a stream of higher priority than the default, else 0 (Warp's two levels)."""
        self._st.make_current()
        api = _api()
        least, _greatest = driver.check(api.cuCtxGetStreamPriorityRange(), "cuCtxGetStreamPriorityRange")
        return -1 if int(driver.check(api.cuStreamGetPriority(self.handle), "cuStreamGetPriority")) < int(least) else 0

    @property
    def cached_event(self) -> Event:
        if self._cached_event is None:
            self._cached_event = Event(self.device)
        return self._cached_event

    def record_event(self, event: Event | None = None, external: bool = False) -> Event:
        """Record ``event`` (a new one if None) on this stream; returns it."""
        if event is None:
            event = Event(self.device)
        elif event.device != self.device:
            raise ValueError(f"event is on {event.device.alias}, stream is on {self.device.alias}")
        self._st.make_current()
        driver.check(_api().cuEventRecord(event.handle, self.handle), "cuEventRecord")
        return event

    def wait_event(self, event: Event, external: bool = False) -> None:
        """Work issued to this stream from now on waits until ``event`` has completed (any device)."""
        self._st.make_current()
        driver.check(_api().cuStreamWaitEvent(self.handle, event.handle, 0), "cuStreamWaitEvent")

    def wait_stream(self, other_stream: Stream, event: Event | None = None, external: bool = False) -> None:
        """This stream waits for the work issued so far on ``other_stream``."""
        if event is None:
            event = other_stream.cached_event
        other_stream.record_event(event)
        self.wait_event(event)

    @property
    def is_complete(self) -> bool:
        """True when all work issued to the stream has finished."""
        self._st.make_current()
        err = _api().cuStreamQuery(self.handle)[0]
        if int(err) == 600:  # CUDA_ERROR_NOT_READY
            return False
        driver.check((err,), "cuStreamQuery")
        return True

    @property
    def is_capturing(self) -> bool:
        self._st.make_current()
        status = driver.check(_api().cuStreamIsCapturing(self.handle), "cuStreamIsCapturing")
        return int(status) == 1  # CU_STREAM_CAPTURE_STATUS_ACTIVE

    def synchronize(self) -> None:
        """Block the host until all work issued to the stream has finished."""
        st = driver.state(self.device)
        if st.capturing and st.capture_stream == self.handle:
            driver.refuse_sync_in_capture(st, "stream")
        driver.synchronize_stream_handle(self.device, self.handle)

    def __eq__(self, other):
        return isinstance(other, Stream) and other.handle == self.handle and other.device == self.device

    def __hash__(self):
        return hash((self.device.alias, self.handle))

    def __repr__(self):
        return f"Stream({self.device.alias}, 0x{self.handle:x})"

    def __del__(self):
        if getattr(self, "_owner", False) and getattr(self, "handle", 0):  # (not made: __init__ raised)
            h, self.handle = self.handle, 0
            try:
                with self._st.pushed():
                    self._st.api.cuStreamDestroy(h)  # pending work still completes; resources released after
            except Exception:  # pragma: no cover - interpreter shutdown
                pass


class Event:
    """A CUDA event. ``enable_timing=True`` allows :func:`get_event_elapsed_time`.

    ``cuda_event``: wrap an existing ``CUevent`` handle (not destroyed by simkit).
    """

    def __init__(self, device=None, cuda_event=None, enable_timing: bool = False, interprocess: bool = False):
        self.device = _cuda_device(device)
        if interprocess and enable_timing:
            raise ValueError("interprocess events cannot record timing (CUDA restriction)")
        self.enable_timing = enable_timing
        self._st = driver.state(self.device)
        self._owner = cuda_event is None
        if cuda_event is not None:
            self.handle = int(cuda_event)
            return
        api = _api()
        flags = 0 if enable_timing else int(api.CUevent_flags.CU_EVENT_DISABLE_TIMING)
        if interprocess:
            flags |= int(api.CUevent_flags.CU_EVENT_INTERPROCESS)
        self._st.make_current()
        self.handle = int(driver.check(api.cuEventCreate(flags), "cuEventCreate"))

    @property
    def cuda_event(self) -> int:
        return self.handle

    def record(self, stream: Stream | None = None) -> Event:
        """Record on ``stream`` (default: the device's current stream)."""
        (stream or get_stream(self.device)).record_event(self)
        return self

    @property
    def is_complete(self) -> bool:
        self._st.make_current()
        err = _api().cuEventQuery(self.handle)[0]
        if int(err) == 600:
            return False
        driver.check((err,), "cuEventQuery")
        return True

    def synchronize(self) -> None:
        driver.refuse_sync_in_capture(self._st, "event")
        self._st.make_current()
        driver.check(_api().cuEventSynchronize(self.handle), "cuEventSynchronize")

    def __repr__(self):
        return f"Event({self.device.alias}, 0x{self.handle:x})"

    def __del__(self):
        h, self.handle = getattr(self, "handle", 0), 0
        if h and getattr(self, "_owner", False):
            try:
                with self._st.pushed():
                    self._st.api.cuEventDestroy(h)
            except Exception:  # pragma: no cover
                pass


# ---------------------------------------------------------------------------
# Current stream


def get_stream(device=None) -> Stream:
    """The current stream of ``device`` (default: the default device, which must be a GPU)."""
    dev = _cuda_device(device)
    st = driver.state(dev)
    if st.current is not None:
        return st.current
    s = _default_streams.get(dev.ordinal)
    if s is None:
        s = _default_streams[dev.ordinal] = Stream._wrap(dev, st.default_stream)
    return s


def null_stream(device) -> Stream:
    """The legacy NULL stream of a GPU's context (handle 0: it waits for, and blocks, every blocking stream)."""
    dev = _cuda_device(device)
    s = _null_streams.get(dev.ordinal)
    if s is None:
        s = _null_streams[dev.ordinal] = Stream._wrap(dev, 0)
    return s


_null_streams: dict = {}


def set_stream(stream: Stream, device=None, sync: bool = False) -> None:
    """Make ``stream`` the current stream of its device. ``sync``: it first waits for the previous stream."""
    dev = stream.device if device is None else _cuda_device(device)
    if dev != stream.device:
        raise ValueError(f"stream is on {stream.device.alias}, not {dev.alias}")
    st = driver.state(dev)
    if sync:
        prev = get_stream(dev)
        if prev != stream:
            stream.wait_stream(prev)
    st.current = None if stream.handle == st.default_stream else stream


def _calling_stream(fallback_device) -> Stream:
    dev = driver.resolve_device(None)
    return get_stream(dev if dev.is_cuda else fallback_device)


def wait_stream(other_stream: Stream, event: Event | None = None, external: bool = False) -> None:
    """The current stream (of the default device) waits for the work issued so far on ``other_stream``."""
    _calling_stream(other_stream.device).wait_stream(other_stream, event)


def wait_event(event: Event, external: bool = False) -> None:
    """The current stream (of the default device) waits for ``event``."""
    _calling_stream(event.device).wait_event(event)


def record_event(event: Event | None = None, external: bool = False) -> Event:
    """Record ``event`` (a new one if None) on the current stream of the default device."""
    return _calling_stream(event.device if event is not None else None).record_event(event)


def synchronize_stream(stream_or_device=None) -> None:
    """Wait for a stream (or the current stream of a device) to finish its work; the CPU's work is synchronous (a
    no-op, as ``synchronize_device``)."""
    if not isinstance(stream_or_device, Stream) and _cpu(stream_or_device) is not None:
        return
    s = stream_or_device if isinstance(stream_or_device, Stream) else get_stream(stream_or_device)
    s.synchronize()


def synchronize_event(event: Event) -> None:
    event.synchronize()


def synchronize_device(device=None) -> None:
    """Wait for all work on ``device`` (None: the default device); CPU work is synchronous (a no-op)."""
    if _cpu(device) is None:
        driver.synchronize_device(_cuda_device(device))


def get_event_elapsed_time(start_event: Event, end_event: Event, synchronize: bool = True) -> float:
    """Milliseconds between two recorded events (both created with ``enable_timing=True``)."""
    if not (start_event.enable_timing and end_event.enable_timing):
        raise ValueError("get_event_elapsed_time needs events created with enable_timing=True")
    if synchronize:
        end_event.synchronize()
    driver.state(start_event.device).make_current()
    return float(driver.check(_api().cuEventElapsedTime(start_event.handle, end_event.handle),
                              "cuEventElapsedTime"))


class ScopedStream:
    """``with ScopedStream(s):`` makes ``s`` the current stream of its device (and that device the default).

    ``sync_enter``: ``s`` first waits for the previous current stream; ``sync_exit``: on exit the previous
    stream waits for ``s``.
    """

    def __init__(self, stream: Stream | None, sync_enter: bool = True, sync_exit: bool = False):
        self.stream = stream
        self.sync_enter = sync_enter
        self.sync_exit = sync_exit

    def __enter__(self):
        if self.stream is None:
            return None
        scoped = driver._runtime_scoped_device
        self._scoped_device = scoped(self.stream.device) if scoped is not None else None
        if self._scoped_device is not None:
            self._scoped_device.__enter__()
        st = driver.state(self.stream.device)
        self._saved = st.current
        self._prev = get_stream(self.stream.device)
        set_stream(self.stream, sync=self.sync_enter)
        return self.stream

    def __exit__(self, *exc):
        if self.stream is None:
            return False
        if self.sync_exit and self._prev != self.stream:
            self._prev.wait_stream(self.stream)
        driver.state(self.stream.device).current = self._saved
        if self._scoped_device is not None:
            self._scoped_device.__exit__(*exc)
        return False


# ---------------------------------------------------------------------------
# CUDA graphs


class Graph:
    """An instantiated CUDA graph (from :func:`capture_end`); replay it with :func:`capture_launch`.

    It keeps alive the memory allocated during its capture and the memory released during it (the graph may
    still reference it) until it is itself garbage collected.
    """

    def __init__(self, device, graph, graph_exec, keep: list, deferred: list):
        self.device = device
        self._st = driver.state(device)
        self.graph = graph
        self.graph_exec = graph_exec
        self._keep = keep
        self._deferred = deferred

    def launch(self, stream: Stream | None = None) -> None:
        capture_launch(self, stream)

    def __del__(self):
        try:
            api = self._st.api
            with self._st.pushed():
                if self.graph_exec is not None:
                    api.cuGraphExecDestroy(self.graph_exec)  # freed asynchronously if still running
                if self.graph is not None:
                    api.cuGraphDestroy(self.graph)
            self.graph_exec = self.graph = None
            self._keep = []
            driver.release_deferred(self._st, self._deferred)
            self._deferred = []
        except Exception:  # pragma: no cover - interpreter shutdown
            pass


def _cpu(device):
    """The CPU Device if ``device`` (None: the default device) is the CPU, else None."""
    dev = driver.resolve_device(device)
    return dev if dev.is_cpu else None


def is_capturing(device=None) -> bool:
    """True while a graph capture started by :func:`capture_begin` is active on ``device``."""
    if _cpu(device) is not None:
        return bool(cpu_graph.active)
    dev = _cuda_device(device)
    return bool(_captures.get(dev.ordinal))


def capture_begin(device=None, stream: Stream | None = None, force_module_load=None, external: bool = False,
                  apic: bool = False, capture_mode: CaptureMode = CaptureMode.THREAD_LOCAL):
    """Start capturing the work issued to ``stream`` (default: the device's current stream) into a graph.

    Kernels not yet compiled are compiled and loaded during capture (CUDA drivers >= 12.3 allow module loading
    while capturing; on older drivers launch every kernel once before capturing). ``force_module_load`` is
    accepted for Warp compatibility. ``external``: the capture was begun by other code on ``stream``.
    ``capture_mode``: a :class:`CaptureMode`. Host<->device copies and synchronizations are not allowed until
    :func:`capture_end`. On the CPU, launches and array operations are recorded instead
    (kernels/backends/cpu_graph.py). ``apic`` (Warp's saveable graphs) is not supported.
    """
    if apic:
        raise NotImplementedError("capture_begin(apic=True): saveable graph capture (Warp's APIC) is not supported")
    capture_mode = CaptureMode(capture_mode)
    if stream is None and _cpu(device) is not None:
        if external:
            raise ValueError("capture_begin(external=True) joins a CUDA stream's capture: not on the CPU")
        cpu_graph.begin(_cpu(device))
        return
    if stream is not None:
        dev = stream.device
    else:
        dev = _cuda_device(device)
        stream = get_stream(dev)
    st = driver.state(dev)
    api = _api()
    if not external:
        st.make_current()
        driver.check(api.cuStreamBeginCapture(stream.handle, api.CUstreamCaptureMode(int(capture_mode))),
                     "cuStreamBeginCapture")
    _capture_modes[stream.handle] = capture_mode
    driver._capture_started(st, stream.handle)
    _captures.setdefault(dev.ordinal, []).append((stream, external))


def _take_capture(device, stream, what: str) -> tuple:
    """(device, stream, external) of the innermost capture on ``stream`` (None: on ``device``), no longer active."""
    dev = stream.device if stream is not None else _cuda_device(device)
    active = _captures.get(dev.ordinal) or []
    for i in range(len(active) - 1, -1, -1):
        if stream is None or active[i][0] == stream:
            stream, external = active.pop(i)
            return dev, stream, external
    raise RuntimeError(f"{what}: no graph capture is active on {dev.alias}")


def capture_end(device=None, stream: Stream | None = None) -> Graph | None:
    """End the capture begun by :func:`capture_begin`; returns the instantiated :class:`Graph`.

    Returns None for an ``external`` capture (its owner ends it). On the CPU: a ``CpuGraph``.
    """
    if stream is None and _cpu(device) is not None:
        return cpu_graph.end()
    dev, stream, external = _take_capture(device, stream, "capture_end")
    _capture_modes.pop(stream.handle, None)
    st = driver.state(dev)
    api = _api()
    graph = None
    try:
        if not external:
            st.make_current()
            graph = driver.check(api.cuStreamEndCapture(stream.handle), "cuStreamEndCapture")
    except Exception:  # e.g. the capture was invalidated: nothing references the deferred memory now
        _keep, deferred = driver._capture_finished(st)
        driver.release_deferred(st, deferred)
        raise
    keep, deferred = driver._capture_finished(st)
    if external:
        driver.release_deferred(st, deferred)
        return None
    try:
        graph_exec = driver.check(api.cuGraphInstantiate(graph, 0), "cuGraphInstantiate")
    except Exception:
        api.cuGraphDestroy(graph)
        driver.release_deferred(st, deferred)
        raise
    return Graph(dev, graph, graph_exec, keep, deferred)


def capture_pause(device=None, stream: Stream | None = None):
    """Suspend the capture on ``stream`` (default: the device's current stream): work issued until
    :func:`capture_resume` runs at once, outside the graph. Returns the graph so far, to pass to ``capture_resume``.
    On the CPU: the CPU capture's recording."""
    if stream is None and _cpu(device) is not None:
        return cpu_graph.pause()
    dev, stream, external = _take_capture(device, stream, "capture_pause")
    if external:
        _captures[dev.ordinal].append((stream, external))
        raise RuntimeError("capture_pause: the capture on this stream was begun by other code (external=True)")
    st = driver.state(dev)
    st.make_current()
    graph, frontier = suspend(stream.handle)
    keep, deferred = driver._capture_finished(st)
    paused = Graph(dev, graph, None, keep, deferred)
    paused._resume = (frontier, _capture_modes.pop(stream.handle, CaptureMode.THREAD_LOCAL))
    return paused


def capture_resume(graph, device=None, stream: Stream | None = None) -> None:
    """Continue, on ``stream`` (default: the device's current stream), the capture :func:`capture_pause` suspended;
    ``graph`` is what it returned. The work issued meanwhile stays out of the graph."""
    if isinstance(graph, cpu_graph.CpuCapture):
        cpu_graph.resume(graph)
        return
    resume = getattr(graph, "_resume", None)
    if resume is None:
        raise RuntimeError("capture_resume takes the graph capture_pause() returned (once)")
    stream = get_stream(graph.device) if stream is None else stream
    st = driver.state(graph.device)
    frontier, mode = resume
    st.make_current()
    capture_to(stream.handle, graph.graph, frontier, mode)
    driver._capture_started(st, stream.handle)
    st.capture_keep.extend(graph._keep)
    st.deferred.extend(graph._deferred)
    graph.graph, graph._keep, graph._deferred, graph._resume = None, [], [], None  # (the capture owns them again)
    _capture_modes[stream.handle] = mode
    _captures.setdefault(graph.device.ordinal, []).append((stream, False))


def capture_launch(graph: Graph, stream: Stream | None = None) -> None:
    """Replay a captured graph on ``stream`` (default: the current stream of the graph's device)."""
    if isinstance(graph, cpu_graph.CpuGraph):
        if cpu_graph.active:
            raise RuntimeError("capture_launch of a CPU graph during a capture on the CPU: graphs do not nest")
        graph.launch()
        return
    if stream is None:
        stream = get_stream(graph.device)
    elif stream.device != graph.device:
        raise ValueError(f"graph was captured on {graph.device.alias}, stream is on {stream.device.alias}")
    st = driver.state(graph.device)
    st.make_current()
    timed = timing.start(st, stream.handle, timing.TIMING_GRAPH, "graph") if timing.FILTER else None
    driver.check(_api().cuGraphLaunch(graph.graph_exec, stream.handle), "cuGraphLaunch")
    if timed is not None:
        timing.stop(timed)


def capture_debug_dot_print(graph: Graph, path: str, verbose: bool = False) -> None:
    """Write the graph's structure as a Graphviz DOT file."""
    api = _api()
    flags = int(api.CUgraphDebugDot_flags.CU_GRAPH_DEBUG_DOT_FLAGS_VERBOSE) if verbose else 0
    driver.state(graph.device).make_current()
    driver.check(api.cuGraphDebugDotPrint(graph.graph, path.encode(), flags), "cuGraphDebugDotPrint")


class ScopedCapture:
    """``with ScopedCapture() as cap: ...`` captures the block into ``cap.graph`` (see :func:`capture_begin`)."""

    def __init__(self, device=None, stream: Stream | None = None, force_module_load=None, external: bool = False,
                 apic: bool = False, capture_mode: CaptureMode = CaptureMode.THREAD_LOCAL):
        if apic:  # Warp's saveable (APIC) graphs
            raise NotImplementedError("ScopedCapture(apic=True): saveable graph capture is not supported")
        self.capture_mode = CaptureMode(capture_mode)
        self.device = device
        self.stream = stream
        self.force_module_load = force_module_load
        self.external = external
        self.graph = None
        self.active = False

    def __enter__(self):
        if self.stream is not None:
            self.device = self.stream.device
        elif _cpu(self.device) is not None:
            self.device = _cpu(self.device)
            capture_begin(self.device, None, self.force_module_load, self.external, capture_mode=self.capture_mode)
            self.active = True
            return self
        else:
            self.device = _cuda_device(self.device)
            self.stream = get_stream(self.device)
        capture_begin(self.device, self.stream, self.force_module_load, self.external,
                      capture_mode=self.capture_mode)
        self.active = True
        return self

    def __exit__(self, exc_type, exc, tb):
        if not self.active:
            return False
        self.active = False
        try:
            graph = capture_end(self.device, self.stream)
        except Exception:
            if exc_type is None:
                raise
            return False  # the error raised inside the block is the one to report
        if exc_type is None:
            self.graph = graph
        return False

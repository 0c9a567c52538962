"""Conditional nodes of CUDA graphs (CUDA 12.4+): what ``capture_if`` / ``capture_while`` insert into a capture.

A conditional node runs its body graph (IF: once when its handle is non-zero; WHILE: as long as it is non-zero).
The handle is set on the GPU, by a one-thread kernel that reads the condition array (``cudaGraphSetConditional``),
so a replayed graph branches on values the GPU computed in the same replay, without the host.

    handle <- (cond != 0)            setter kernel, captured in the parent graph
    [IF/WHILE node(handle)]          cuGraphAddNode; the stream's capture continues after it
        body ...                     the same stream, its capture suspended meanwhile: captured into the body
        handle <- (cond != 0)        WHILE only: the body's last node decides the next iteration

An IF with an else branch is two IF nodes, one after the other, whose handles one setter kernel sets before
either runs (``handle_false <- (cond == 0)``), so a branch that changes the condition does not run the other
branch too; this needs no CUDA 12.8 (IF nodes of size 2).

``suspend`` / ``capture_to`` (end a capture keeping its graph and frontier; capture into an existing graph after
given nodes) also make ``capture_pause`` / ``capture_resume``.
"""
from __future__ import annotations

import contextlib
import ctypes
import struct

from . import driver

#: the setter kernel; compiled once per device with NVRTC. ``cudaGraphSetConditional`` is a device runtime
#: builtin that the driver resolves when it loads the module (CUDA 12.4+ drivers; never loaded on older ones).
CONDITION_SOURCE = r"""
// simkit runtime kernel: set the handles of conditional graph nodes from a condition array
// (tests compile it for the host with cuda_emu.h included first, which defines cudaGraphSetConditional)
#define SK_RT_KERNEL(name, T) extern "C" __global__ void name(T a)
#ifndef SK_CUDA_EMU
typedef __device_builtin__ unsigned long long cudaGraphConditionalHandle;
extern "C" __device__ __cudart_builtin__ void cudaGraphSetConditional(cudaGraphConditionalHandle handle,
                                                                      unsigned int value);
#endif

struct sk_rt_condition_args {
    unsigned long long handle_true;   // set to (cond != 0); 0: none
    unsigned long long handle_false;  // set to (cond == 0); 0: none
    const int* cond;
};

SK_RT_KERNEL(sk_rt_set_condition, sk_rt_condition_args) {
    int c = *a.cond;
    if (a.handle_true) cudaGraphSetConditional(a.handle_true, c != 0);
    if (a.handle_false) cudaGraphSetConditional(a.handle_false, c == 0);
}
"""

_ARGS = struct.Struct("<QQQ")
MIN_DRIVER = 12040  # conditional nodes: CUDA 12.4


def is_supported() -> bool:
    """Whether this machine's CUDA driver and NVRTC build conditional graph nodes (both CUDA 12.4 or newer)."""
    from . import nvrtc

    if driver.driver_version() < MIN_DRIVER or not nvrtc.is_available():
        return False
    major, minor = (int(v) for v in nvrtc.version().split(".")[:2])
    return (major, minor) >= (12, 4)


def require_support() -> None:
    if not is_supported():
        from . import nvrtc

        nv = nvrtc.version() if nvrtc.is_available() else "missing"
        raise RuntimeError(f"capture_if/capture_while inside a CUDA graph capture need conditional graph nodes: "
                           f"CUDA 12.4 or newer for both the driver (this one: {driver.driver_version()}) and "
                           f"NVRTC ({nv}); call them outside a capture, or update")


def capture_info(stream: int) -> tuple:
    """(graph, dependencies) of the capture in progress on ``stream``."""
    r = driver.check(driver.cu().cuStreamGetCaptureInfo(stream), "cuStreamGetCaptureInfo")
    status, graph, deps = r[0], r[2], r[3]
    if int(status) != 1:  # CU_STREAM_CAPTURE_STATUS_ACTIVE
        raise RuntimeError("the stream's graph capture is not active (invalidated?)")
    return graph, list(deps or [])


def make_handle(st, stream: int):
    """A conditional handle of the graph being captured on ``stream`` (its value is set before every use)."""
    graph, _ = capture_info(stream)
    return driver.check(driver.cu().cuGraphConditionalHandleCreate(graph, st.ctx, 0, 0),
                        "cuGraphConditionalHandleCreate")


def _setter(st):
    """The setter kernel on ``st``'s device. Loaded as PTX: the driver compiles it and resolves the device runtime's
    ``cudaGraphSetConditional`` then, the way other users of conditional nodes through NVRTC load it."""
    f = st.rt_funcs.get("sk_rt_set_condition")
    if f is None:
        from . import module as cuda_module

        with st.lock:
            mod = cuda_module.load_module(st.ordinal, CONDITION_SOURCE, "simkit_conditional", ptx=True)
            f = st.rt_funcs["sk_rt_set_condition"] = driver.check(
                driver.cu().cuModuleGetFunction(mod, b"sk_rt_set_condition"), "cuModuleGetFunction")
    return f


def set_condition(st, stream: int, cond_ptr: int, handle_true=None, handle_false=None) -> None:
    """Capture, on ``stream``, the kernel setting ``handle_true`` to (cond != 0) and ``handle_false`` to
    (cond == 0) (None: no such handle)."""
    f = _setter(st)
    params = ctypes.create_string_buffer(_ARGS.pack(*(0 if h is None else int(h) for h in (handle_true, handle_false)),
                                                    int(cond_ptr)))
    argv = (ctypes.c_void_p * 1)(ctypes.addressof(params))
    st.make_current()
    driver.check(driver.cu().cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, stream, ctypes.addressof(argv), 0),
                 "cuLaunchKernel(sk_rt_set_condition)")


def add_node(st, stream: int, handle, kind: str):
    """Add an IF or WHILE node on ``handle`` after the work captured so far on ``stream`` (which continues after
    the node); returns the node's body graph."""
    api = driver.cu()
    graph, deps = capture_info(stream)
    params = api.CUgraphNodeParams()
    params.type = api.CUgraphNodeType.CU_GRAPH_NODE_TYPE_CONDITIONAL
    params.conditional.handle = handle
    params.conditional.type = getattr(api.CUgraphConditionalNodeType, f"CU_GRAPH_COND_TYPE_{kind}")
    params.conditional.size = 1
    params.conditional.ctx = st.ctx
    node = driver.check(api.cuGraphAddNode(graph, deps, None, len(deps), params), "cuGraphAddNode(conditional)")
    body = params.conditional.phGraph_out[0]  # (filled in by the driver: read only after its success)
    driver.check(api.cuStreamUpdateCaptureDependencies(
        stream, [node], None, 1, api.CUstreamUpdateCaptureDependencies_flags.CU_STREAM_SET_CAPTURE_DEPENDENCIES),
        "cuStreamUpdateCaptureDependencies")
    return body


def suspend(stream: int) -> tuple:
    """End the capture on ``stream`` for now: (the graph so far, the nodes that work captured later depends on)."""
    _graph, frontier = capture_info(stream)
    graph = driver.check(driver.cu().cuStreamEndCapture(stream), "cuStreamEndCapture")
    return graph, frontier


def capture_to(stream: int, graph, frontier: list, mode: int) -> None:
    """Capture the work issued to ``stream`` into ``graph`` (existing), after the nodes ``frontier``."""
    api = driver.cu()
    driver.check(api.cuStreamBeginCaptureToGraph(stream, graph, frontier, None, len(frontier),
                                                 api.CUstreamCaptureMode(int(mode))), "cuStreamBeginCaptureToGraph")


@contextlib.contextmanager
def capturing_body(st, stream: int, body_graph, mode: int):
    """Inside: the work issued to ``stream`` (capturing) goes into ``body_graph`` (a conditional node's body) on
    the same stream, as in Warp; after, the stream's capture continues after the node."""
    st.make_current()
    outer, frontier = suspend(stream)
    capture_to(stream, body_graph, [], mode)
    try:
        yield
    finally:
        st.make_current()
        try:
            driver.check(driver.cu().cuStreamEndCapture(stream), "cuStreamEndCapture(conditional body)")
        finally:
            capture_to(stream, outer, frontier, mode)


def add_child_graph(stream: int, child) -> None:
    """Capture ``child`` (a CUgraph) as a child-graph node on ``stream``."""
    api = driver.cu()
    graph, deps = capture_info(stream)
    node = driver.check(api.cuGraphAddChildGraphNode(graph, deps, len(deps), child), "cuGraphAddChildGraphNode")
    driver.check(api.cuStreamUpdateCaptureDependencies(
        stream, [node], None, 1, api.CUstreamUpdateCaptureDependencies_flags.CU_STREAM_SET_CAPTURE_DEPENDENCIES),
        "cuStreamUpdateCaptureDependencies")


"""The emulated GPU's CUDA graphs (a part of tests/cuda_emulator.py's FakeDriver): stream capture, conditional nodes,
instantiation and replay.

A graph is the list of the operations captured into it, in issue order (which respects every dependency, so
dependencies are not modelled: capture info reports none). A conditional node is an operation running its body's
list once (IF) or while its handle is non-zero (WHILE); a handle is the address of its value, which the setter
kernel writes through ``cudaGraphSetConditional`` (native/cuda_emu.h).
"""
from __future__ import annotations

import ctypes

from cuda_emulator_fake import _fake


class GraphCalls:
    """Graph entry points of the fake driver (mixed into FakeDriver: ``self`` has its streams, ids and graphs)."""

    def _graph_handle(self, ops: list) -> int:
        """The handle of a graph (the list of its operations), made on first use."""
        for h, g in self.graphs.items():
            if g is ops:
                return h
        h = next(self.ids)
        self.graphs[h] = ops
        return h

    @_fake
    def cuStreamBeginCapture(self, s, mode):
        st = self.streams.get(int(s))
        if st is None or st.ctx is None or st.capture is not None:
            return self.err(1)
        st.capture, st.invalidated, st.capture_mode = [], False, int(mode)
        return self.ok()

    @_fake
    def cuStreamBeginCaptureToGraph(self, s, g, deps, edge_data, n, mode):
        st = self.streams.get(int(s))
        ops = self.graphs.get(int(g))
        if st is None or st.ctx is None or st.capture is not None or ops is None:
            return self.err(1)
        st.capture, st.invalidated, st.capture_mode = ops, False, int(mode)
        return self.ok()

    @_fake
    def cuStreamEndCapture(self, s):
        st = self.streams.get(int(s))
        if st is None or st.capture is None:
            return self.err(1, 1)
        if getattr(st, "joined", False):
            return self.err(1, 1)  # (a stream that joined a capture does not end it: its origin does)
        ops, st.capture = st.capture, None
        for x in self.streams.values():  # (the streams that joined it leave with it; CUDA requires them joined back)
            if x.capture is ops:
                x.capture, x.joined = None, False
        if st.invalidated:
            return self.err(901, 1)  # CUDA_ERROR_STREAM_CAPTURE_INVALIDATED
        return self.ok(self.real.CUgraph(self._graph_handle(ops)))

    @_fake
    def cuStreamGetCaptureInfo(self, s):
        st = self.streams.get(int(s))
        if st is None:
            return self.err(400, 6)
        if st.capture is None:
            return self.ok(self.real.CUstreamCaptureStatus(0), 0, None, [], [], 0)
        graph = self.real.CUgraph(self._graph_handle(st.capture))
        return self.ok(self.real.CUstreamCaptureStatus(1), self._graph_handle(st.capture), graph, [], [], 0)

    @_fake
    def cuStreamUpdateCaptureDependencies(self, s, deps, edge_data, n, flags):
        st = self.streams.get(int(s))
        return self.ok() if st is not None and st.capture is not None else self.err(1)

    # -- conditional nodes -------------------------------------------------------

    @_fake
    def cuGraphConditionalHandleCreate(self, g, ctx, default, flags):
        if int(g) not in self.graphs or int(ctx) != self.ctx():
            return self.err(1, 1)
        cell = ctypes.c_uint(int(default))
        self.handles.append(cell)  # (lives as long as the driver)
        return self.ok(self.real.CUgraphConditionalHandle(ctypes.addressof(cell)))

    @_fake
    def cuGraphAddNode(self, g, deps, edge_data, n, params):
        ops = self.graphs.get(int(g))
        types = self.real.CUgraphNodeType
        if ops is None or params.type != types.CU_GRAPH_NODE_TYPE_CONDITIONAL:
            return self.err(1, 1)
        cond = params.conditional
        kinds = self.real.CUgraphConditionalNodeType
        if cond.type not in (kinds.CU_GRAPH_COND_TYPE_IF, kinds.CU_GRAPH_COND_TYPE_WHILE) or cond.size != 1:
            return self.err(1, 1)
        value = ctypes.c_uint.from_address(int(cond.handle))
        body: list = []
        handle = self._graph_handle(body)
        out = (ctypes.c_void_p * 1)(handle)
        self.handles.append(out)
        ctypes.c_uint64.from_address(cond.getPtr() + 16).value = ctypes.addressof(out)  # phGraph_out, as the driver

        def run_if():
            if value.value:
                for op in body:
                    op()

        def run_while():
            while value.value:
                for op in body:
                    op()

        ops.append(run_while if cond.type == kinds.CU_GRAPH_COND_TYPE_WHILE else run_if)
        return self.ok(self.real.CUgraphNode(next(self.ids)))

    @_fake
    def cuGraphAddChildGraphNode(self, g, deps, n, child):
        ops, body = self.graphs.get(int(g)), self.graphs.get(int(child))
        if ops is None or body is None:
            return self.err(1, 1)
        body = list(body)  # (the node holds a copy of the child graph)

        def run():
            for op in body:
                op()

        ops.append(run)
        return self.ok(self.real.CUgraphNode(next(self.ids)))

    # -- graphs ----------------------------------------------------------------

    @_fake
    def cuGraphInstantiate(self, g, flags):
        h = next(self.ids)
        self.execs[h] = list(self.graphs[int(g)])
        return self.ok(self.real.CUgraphExec(h))

    @_fake
    def cuGraphLaunch(self, e, s):
        ops = self.execs.get(int(e))
        if ops is None:
            return self.err(400)

        def run():
            for op in ops:
                op()

        return self.err(self.enqueue(s, run))

    @_fake
    def cuGraphExecDestroy(self, e):
        return self.ok() if self.execs.pop(int(e), None) is not None else self.err(400)

    @_fake
    def cuGraphDestroy(self, g):
        return self.ok() if self.graphs.pop(int(g), None) is not None else self.err(400)

    @_fake
    def cuGraphDebugDotPrint(self, g, path, flags):
        with open(bytes(path).decode(), "w") as f:
            f.write(f"digraph G {{ // {len(self.graphs[int(g)])} nodes\n}}\n")
        return self.ok()

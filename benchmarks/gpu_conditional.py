"""A loop that runs until the GPU says it converged: the host deciding each iteration, against a CUDA graph
deciding on the GPU (``sk.capture_while``: a conditional node, CUDA 12.4+). Run by tools/gpu_check.sh.

The loop: Jacobi iterations of a 1D Poisson system (n unknowns) until no unknown moves more than a tolerance,
each iteration two small kernels and a reset of the flag. Side by side, in one run:

- host loop: after each iteration the host reads the flag back (a synchronization) and decides;
- capture_while: the whole solve is one graph launch; the GPU decides after each iteration;
- fixed graph: the same number of iterations captured without conditions (the lower bound: what the
  decisions cost is the difference);
- warp-lang's capture_while, when installed.

Each row: microseconds per solve and per iteration (median of rounds), and the speedup over the host loop.

    python benchmarks/gpu_conditional.py [--quick] [--markdown out.md]

Without a GPU it prints a notice and exits 0.
"""
from __future__ import annotations

import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402
from gpu import median_synced, run_report  # noqa: E402

import simkit as sk  # noqa: E402

N = 4096
TOL = 1.0e-4


@sk.kernel
def jacobi(x: sk.array(dtype=float), b: sk.array(dtype=float), x_new: sk.array(dtype=float)):
    i = sk.tid()
    n = x.shape[0]
    s = b[i]
    if i > 0:
        s += x[i - 1]
    if i < n - 1:
        s += x[i + 1]
    x_new[i] = s / 4.0


@sk.kernel
def accept(x: sk.array(dtype=float), x_new: sk.array(dtype=float), tol: float, go_on: sk.array(dtype=sk.int32)):
    i = sk.tid()
    if sk.abs(x_new[i] - x[i]) > tol:
        go_on[0] = 1
    x[i] = x_new[i]


class Solve:
    def __init__(self, device, n):
        self.device, self.n = device, n
        rhs = np.sin(np.linspace(0.0, 3.0, n)).astype(np.float32)
        self.b = sk.array(rhs, dtype=float, device=device)
        self.x, self.x_new = sk.zeros(n, device=device), sk.zeros(n, device=device)
        self.go_on = sk.zeros(1, dtype=sk.int32, device=device)
        self.iterations = 0

    def reset(self):
        self.x.zero_()
        self.go_on.fill_(1)

    def iteration(self):
        self.go_on.zero_()
        sk.launch(jacobi, self.n, inputs=[self.x, self.b, self.x_new], device=self.device)
        sk.launch(accept, self.n, inputs=[self.x, self.x_new, TOL, self.go_on], device=self.device)

    def host_loop(self):
        self.reset()
        k = 0
        while self.go_on.numpy()[0]:  # (a copy to the host and a synchronization per iteration)
            self.iteration()
            k += 1
        return k


def simkit_rows(device, quick):
    rounds = 3 if quick else 7
    s = Solve(device, N)
    k = s.host_loop()  # (compiles and loads the kernels; the iteration count)
    host = median_synced(s.host_loop, device, rounds)
    with sk.ScopedCapture(device) as cap:
        s.reset()
        sk.capture_while(s.go_on, s.iteration)
    sk.capture_launch(cap.graph)
    x_host = s.x.numpy().copy()
    graph = median_synced(lambda: sk.capture_launch(cap.graph), device, rounds)
    if not np.array_equal(s.x.numpy(), x_host):
        raise AssertionError("capture_while's solve differs from the host loop's")
    with sk.ScopedCapture(device) as fixed:
        s.reset()
        for _ in range(k):
            s.iteration()
    fixed_s = median_synced(lambda: sk.capture_launch(fixed.graph), device, rounds)
    return k, {"host loop (reads the flag back)": host, "capture_while graph": graph,
               "fixed graph (same iterations, no decisions)": fixed_s}


def warpmedian_synced(quick, n):
    try:
        import warp as wp
    except ImportError:
        return None
    wp.config.quiet = True
    wp.init()
    if not wp.is_cuda_available() or not wp.is_conditional_graph_supported():
        return None

    @wp.kernel
    def wjacobi(x: wp.array(dtype=float), b: wp.array(dtype=float), x_new: wp.array(dtype=float)):
        i = wp.tid()
        s = b[i]
        if i > 0:
            s += x[i - 1]
        if i < x.shape[0] - 1:
            s += x[i + 1]
        x_new[i] = s / 4.0

    @wp.kernel
    def waccept(x: wp.array(dtype=float), x_new: wp.array(dtype=float), tol: float, go_on: wp.array(dtype=wp.int32)):
        i = wp.tid()
        if wp.abs(x_new[i] - x[i]) > tol:
            go_on[0] = 1
        x[i] = x_new[i]

    dev = "cuda:0"
    b = wp.array(np.sin(np.linspace(0.0, 3.0, n)).astype(np.float32), dtype=float, device=dev)
    x, x_new = wp.zeros(n, dtype=float, device=dev), wp.zeros(n, dtype=float, device=dev)
    go_on = wp.zeros(1, dtype=wp.int32, device=dev)

    def iteration():
        go_on.zero_()
        wp.launch(wjacobi, n, inputs=[x, b, x_new], device=dev)
        wp.launch(waccept, n, inputs=[x, x_new, TOL, go_on], device=dev)

    wp.load_module(device=dev)
    with wp.ScopedCapture(dev) as cap:
        x.zero_()
        go_on.fill_(1)
        wp.capture_while(go_on, iteration)
    samples = []
    for _ in range(3 if quick else 7):
        wp.synchronize_device(dev)
        t0 = time.perf_counter()
        wp.capture_launch(cap.graph)
        wp.synchronize_device(dev)
        samples.append(time.perf_counter() - t0)
    return statistics.median(samples)


def report(device, quick: bool) -> list:
    common.progress(f"simkit on {device.name} ({device.kind}): a Jacobi solve of {N} unknowns")
    if not sk.is_conditional_graph_supported():
        return ["conditional graph nodes need CUDA 12.4+ (driver and NVRTC): nothing measured"]
    k, rows = simkit_rows(device, quick)
    w = warpmedian_synced(quick, N)
    if w is not None:
        rows["warp-lang capture_while graph"] = w
    host = rows["host loop (reads the flag back)"]
    lines = [f"{k} iterations per solve", "", "| loop | us per solve | us per iteration | vs host loop |",
             "|---|---|---|---|"]
    for name, sec in rows.items():
        lines.append(f"| {name} | {sec * 1e6:.1f} | {sec * 1e6 / k:.2f} | {host / sec:.2f}x |")
    return lines


def main(argv=None):
    return run_report(argv, __doc__, "gpu_conditional.py", report)


if __name__ == "__main__":
    sys.exit(main())

"""GPU benchmark (run by tools/gpu_check.sh on a machine with an NVIDIA GPU):

- saxpy bandwidth as a fraction of the device's measured copy bandwidth (target >= 85%)
- launch overhead with and without CUDA graphs (targets <= 5 us and <= 10 us)
- O(N^2) n-body GFLOP/s
- the same against warp-lang when installed

    python benchmarks/gpu.py [--quick] [--markdown out.md]

Without a GPU it prints a notice and exits 0 (nothing to measure).
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # numpy's idle BLAS threads spin on the timed cores
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

import simkit as sk  # noqa: E402

N_SAXPY = 1 << 26  # 64M floats: 768 MB moved per saxpy
N_BODY = 16384


@sk.kernel
def saxpy(a: float, x: sk.array(dtype=float), y: sk.array(dtype=float)):
    i = sk.tid()
    y[i] = a * x[i] + y[i]


@sk.kernel
def tiny(a: float, x: sk.array(dtype=float)):
    x[0] = a


@sk.kernel
def nbody(p: sk.array(dtype=sk.vec3), acc: sk.array(dtype=sk.vec3), n: int):
    i = sk.tid()
    pi = p[i]
    a = sk.vec3(0.0, 0.0, 0.0)
    for j in range(n):
        d = p[j] - pi
        r2 = sk.dot(d, d) + 0.01
        inv = 1.0 / (r2 * sk.sqrt(r2))
        a = a + d * inv
    acc[i] = a


NBODY_FLOPS = 20  # per interaction: 3 sub, 6 dot/add, sqrt, mul, div, 6 fma/add (as commonly counted)


def time_gpu(fn, device, repeat, batch=10):
    """Median seconds of one fn() on the GPU, measured with CUDA events on the device's current stream
    around ``batch`` calls at a time: the host enqueues the next call while the GPU runs one, so the
    time is the device's and not the host's launch latency (which a lone call would add to it)."""
    start, end = sk.Event(device, enable_timing=True), sk.Event(device, enable_timing=True)
    fn()
    sk.synchronize_device(device)
    samples = []
    for _ in range(repeat):
        sk.record_event(start)
        for _ in range(batch):
            fn()
        sk.record_event(end)
        samples.append(sk.get_event_elapsed_time(start, end) / 1000.0 / batch)
    return float(np.median(samples))


def median_synced(fn, device, rounds: int) -> float:
    """Median seconds of ``fn()`` alone, the device synchronized before and after each call (the whole
    operation, host decisions included; time_gpu times the GPU's work in batches)."""
    samples = []
    for _ in range(rounds):
        sk.synchronize_device(device)
        t0 = time.perf_counter()
        fn()
        sk.synchronize_device(device)
        samples.append(time.perf_counter() - t0)
    return statistics.median(samples)


def check_nbody(p: np.ndarray, acc: np.ndarray, rows: int = 64) -> None:
    """The timed n-body kernel computed the right thing (float64 numpy reference for the first rows)."""
    p = p.astype(np.float64)
    d = p[None, :, :] - p[:rows, None, :]
    r2 = (d * d).sum(-1) + 0.01
    ref = (d / (r2 * np.sqrt(r2))[..., None]).sum(1)
    err = np.abs(acc[:rows] - ref).max() / np.abs(ref).max()
    if not err < 1e-4:
        raise AssertionError(f"n-body accelerations are wrong (relative error {err:.2e})")


def simkit_results(device, quick):
    repeat = 5 if quick else 20
    n = N_SAXPY // (8 if quick else 1)
    x = sk.ones(n, device=device)
    y = sk.ones(n, device=device)
    z = sk.zeros(n, device=device)
    copy_s = time_gpu(lambda: sk.copy(z, x), device, repeat)
    copy_bw = 2 * 4 * n / copy_s
    sax_s = time_gpu(lambda: sk.launch(saxpy, n, inputs=[2.0, x, y], device=device), device, repeat)
    sax_bw = 3 * 4 * n / sax_s
    t = sk.zeros(1, device=device)
    sk.launch(tiny, 1, inputs=[1.0, t], device=device)
    sk.synchronize_device(device)
    k = 2000 if quick else 20000
    t0 = time.perf_counter()
    for _ in range(k):
        sk.launch(tiny, 1, inputs=[1.0, t], device=device)
    sk.synchronize_device(device)
    launch_us = (time.perf_counter() - t0) / k * 1e6
    with sk.ScopedCapture(device) as cap:
        for _ in range(100):
            sk.launch(tiny, 1, inputs=[1.0, t], device=device)
    reps = k // 100
    t0 = time.perf_counter()
    for _ in range(reps):
        sk.capture_launch(cap.graph)
    sk.synchronize_device(device)
    graph_us = (time.perf_counter() - t0) / (reps * 100) * 1e6
    nb = N_BODY // (4 if quick else 1)
    p = sk.array(np.random.default_rng(0).uniform(-1, 1, (nb, 3)), dtype=sk.vec3, device=device)
    acc = sk.zeros(nb, dtype=sk.vec3, device=device)
    nb_s = time_gpu(lambda: sk.launch(nbody, nb, inputs=[p, acc, nb], device=device), device, max(3, repeat // 4))
    check_nbody(p.numpy(), acc.numpy())
    return {"copy GB/s": copy_bw / 1e9, "saxpy GB/s": sax_bw / 1e9, "saxpy / copy": sax_bw / copy_bw,
            "launch us": launch_us, "graph launch us": graph_us, "n-body GFLOP/s": NBODY_FLOPS * nb * nb / nb_s / 1e9}


def warp_results(quick):
    try:
        import warp as wp
    except ImportError:
        return None
    wp.config.quiet = True
    wp.init()
    if not wp.is_cuda_available():
        return None

    @wp.kernel
    def wsaxpy(a: float, x: wp.array(dtype=float), y: wp.array(dtype=float)):
        i = wp.tid()
        y[i] = a * x[i] + y[i]

    @wp.kernel
    def wtiny(a: float, x: wp.array(dtype=float)):
        x[0] = a

    dev = "cuda:0"
    n = N_SAXPY // (8 if quick else 1)
    x = wp.ones(n, dtype=float, device=dev)
    y = wp.ones(n, dtype=float, device=dev)
    wp.launch(wsaxpy, n, inputs=[2.0, x, y], device=dev)
    wp.synchronize()
    reps = 5 if quick else 20
    t0 = time.perf_counter()
    for _ in range(reps):
        wp.launch(wsaxpy, n, inputs=[2.0, x, y], device=dev)
    wp.synchronize()
    sax = 3 * 4 * n / ((time.perf_counter() - t0) / reps)
    t = wp.zeros(1, dtype=float, device=dev)
    k = 2000 if quick else 20000
    wp.launch(wtiny, 1, inputs=[1.0, t], device=dev)
    wp.synchronize()
    t0 = time.perf_counter()
    for _ in range(k):
        wp.launch(wtiny, 1, inputs=[1.0, t], device=dev)
    wp.synchronize()
    return {"saxpy GB/s": sax / 1e9, "launch us": (time.perf_counter() - t0) / k * 1e6}


def run_report(argv, description: str, script: str, report, device: str = "cuda:0") -> int:
    """The command line of the GPU benchmarks: ``--quick``, ``--markdown FILE``; ``report(device,
    quick)`` measures and returns the table's lines. Without a GPU: a notice, and 0 (unless
    ``device`` is "cpu")."""
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--markdown")
    a = ap.parse_args(argv)
    if device != "cpu" and not sk.is_cuda_available():
        print(f"benchmarks/{script}: no CUDA GPU available; nothing measured")
        return 0
    device = sk.get_device(device)
    head = (f"GPU: {device.name} ({device.kind})" if device.is_cuda else
            f"CPU: {common.cpu_model()}, {common.core_count()} cores; simkit {common.git_revision()}")
    text = "\n".join([head, ""] + report(device, a.quick))
    print(text)
    if a.markdown:
        with open(a.markdown, "w") as f:
            f.write(text + "\n")
    return 0


def report(device, quick: bool) -> list:
    common.progress(f"simkit on {device.name} ({device.kind})")
    s = simkit_results(device, quick)
    w = warp_results(quick)
    lines = ["| metric | simkit | warp-lang | target |", "|---|---|---|---|"]
    targets = {"saxpy / copy": ">= 0.85", "launch us": "<= 10", "graph launch us": "<= 5"}
    for key, val in s.items():
        wv = f"{w[key]:.3g}" if w and key in w else "-"
        lines.append(f"| {key} | {val:.3g} | {wv} | {targets.get(key, '')} |")
    return lines


def main(argv=None):
    return run_report(argv, __doc__, "gpu.py", report)


if __name__ == "__main__":
    sys.exit(main())

"""Deterministic float sums on a GPU: atomics in any order (the default), deterministic mode recorded and applied in
launch order (utils/deterministic_gpu.py, and for backward launches utils/deterministic_grad.py), deterministic mode
on one GPU thread (what any launch that cannot be recorded gets), and warp-lang's deterministic mode (record and
sort) where installed, in one run. Run by tools/gpu_check.sh.

    python benchmarks/gpu_deterministic.py [--quick] [--markdown out.md]

Forward: ``out[idx[i]] += d[i]`` over ``N`` float32 values into 4 bins (contended) and into 65536 (spread).
Backward: the adjoint launch of ``y[i] = x[idx[i]]`` over ``N`` reads of 4 or 65536 elements, whose gradients
``x.grad[idx[i]] += y.grad[i]`` are the same sums. Each deterministic result is checked bit for bit against
numpy's ``add.at`` (the sequential loop), the one-thread one timed on ``N_SERIAL`` values (it is a thousand times
slower). Each row: milliseconds per launch (median), and the time of atomics in any order over it.
A scene: ``SCENE_ITERS`` iterations of the ball's trajectory optimization (scenes/ball_trajectory.py: a particle
rollout with ground contact, its backward pass, the optimizer's steps) by default (a CUDA graph per iteration),
deterministic (recorded, run directly) and deterministic with every backward launch on one GPU thread; the two
deterministic runs must end on the same bits. Without a GPU it prints a notice and exits 0.
"""
from __future__ import annotations

import contextlib
import importlib
import os
import statistics
import sys
import time
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402
from gpu import median_synced, run_report  # noqa: E402

import simkit as sk  # noqa: E402
from simkit.kernels.deterministic import DeterminismWarning  # noqa: E402

N = 1 << 22
N_SERIAL = 1 << 14
SCENE_ITERS = 5
BINS = (4, 65536)
_launch = importlib.import_module("simkit.runtime.launch")


@sk.kernel
def scatter(d: sk.array(dtype=float), idx: sk.array(dtype=int), out: sk.array(dtype=float)):
    i = sk.tid()
    sk.atomic_add(out, idx[i], d[i])


@sk.kernel
def gather(x: sk.array(dtype=float), idx: sk.array(dtype=int), y: sk.array(dtype=float)):
    i = sk.tid()
    y[i] = x[idx[i]]


def _time(fn, device, rounds: int) -> float:
    fn()  # (compiles, loads, allocates)
    return median_synced(fn, device, rounds)


def _inputs(n: int, bins: int, seed: int = 1):
    rng = np.random.default_rng(seed)
    d = (rng.standard_normal(n) * 10.0 ** rng.integers(-3, 4, n)).astype(np.float32)
    return d, rng.integers(0, bins, n).astype(np.int32)


@contextlib.contextmanager
def _mode(mode, recorded: bool = True):
    """``config.deterministic = mode`` inside; ``recorded=False``: as a kernel that cannot be recorded (one GPU
    thread, its warning silenced)."""
    old, recorders = sk.config.deterministic, (_launch.recorded_launch, _launch.recorded_backward)
    sk.config.deterministic = mode
    if not recorded:
        _launch.recorded_launch = _launch.recorded_backward = None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeterminismWarning)
            yield
    finally:
        sk.config.deterministic, (_launch.recorded_launch, _launch.recorded_backward) = old, recorders


def simkit_rows(device, n: int, bins: int, rounds: int, backward: bool = False) -> dict:
    d, idx = _inputs(n, bins)
    out = sk.zeros(bins, device=device)
    x = sk.zeros(bins, device=device)

    def scatter_rows(count: int, mode, recorded: bool = True, rounds: int = rounds) -> float:
        """Seconds per launch over the first ``count`` values, checked against the sequential sum."""
        dd, di = sk.array(d[:count], device=device), sk.array(idx[:count], device=device)
        y = sk.zeros(count, device=device)

        def go():
            out.zero_()
            with _mode(mode, recorded):
                if backward:  # x.grad[idx[i]] += y.grad[i], into out
                    sk.launch(gather, count, inputs=[x, di], outputs=[y], adjoint=True, adj_inputs=[out, None],
                              adj_outputs=[dd], device=device)
                else:
                    sk.launch(scatter, count, inputs=[dd, di, out], device=device)

        t = _time(go, device, rounds)
        if mode != sk.DeterministicMode.NOT_GUARANTEED:
            ref = np.zeros(bins, np.float32)
            np.add.at(ref, idx[:count], d[:count])
            if not np.array_equal(out.numpy(), ref):
                raise AssertionError(f"the deterministic scatter ({'recorded' if recorded else 'one GPU thread'}) "
                                     "differs from the sequential sum")
        return t

    det = sk.DeterministicMode.RUN_TO_RUN
    serial = scatter_rows(N_SERIAL, det, recorded=False, rounds=max(1, rounds // 3))
    return {"atomics in any order (default)": scatter_rows(n, sk.DeterministicMode.NOT_GUARANTEED),
            "deterministic, recorded (whole GPU)": scatter_rows(n, det),
            f"deterministic, one GPU thread (per {n} values, timed on {N_SERIAL})": serial * n / N_SERIAL}


def warp_row(n: int, bins: int, rounds: int, backward: bool = False) -> float | None:
    try:
        import warp as wp
    except ImportError:
        return None
    wp.config.quiet = True
    wp.init()
    if not wp.is_cuda_available() or not hasattr(wp, "DeterministicMode"):
        return None

    @wp.kernel(module_options={"deterministic": wp.DeterministicMode.RUN_TO_RUN}, module="unique")
    def wscatter(d: wp.array(dtype=float), idx: wp.array(dtype=int), out: wp.array(dtype=float)):
        i = wp.tid()
        wp.atomic_add(out, idx[i], d[i])

    @wp.kernel(module_options={"deterministic": wp.DeterministicMode.RUN_TO_RUN}, module="unique")
    def wgather(x: wp.array(dtype=float), idx: wp.array(dtype=int), y: wp.array(dtype=float)):
        i = wp.tid()
        y[i] = x[idx[i]]

    d, idx = _inputs(n, bins)
    dd, di = wp.array(d, device="cuda:0"), wp.array(idx, device="cuda:0")
    out = wp.zeros(bins, dtype=float, device="cuda:0")
    x, y = wp.zeros(bins, dtype=float, device="cuda:0"), wp.zeros(n, dtype=float, device="cuda:0")

    def go():
        out.zero_()
        if backward:
            wp.launch(wgather, n, inputs=[x, di], outputs=[y], adj_inputs=[out, None], adj_outputs=[dd], adjoint=True,
                      device="cuda:0")
        else:
            wp.launch(wscatter, n, inputs=[dd, di, out], device="cuda:0")

    go()
    samples = []
    for _ in range(rounds):
        wp.synchronize_device("cuda:0")
        t0 = time.perf_counter()
        go()
        wp.synchronize_device("cuda:0")
        samples.append(time.perf_counter() - t0)
    return statistics.median(samples)


def report(device, quick: bool) -> list:
    rounds = 3 if quick else 9
    common.progress(f"simkit on {device.name}: the ball's optimization")
    rows = scene_rows(device)
    base = next(iter(rows.values()))
    lines = ["", "the ball's trajectory optimization (scenes/ball_trajectory.py), per iteration", "",
             "| run | ms | vs default |", "|---|---|---|"]
    lines += [f"| {name} | {sec * 1e3:.1f} | {sec / base:.1f}x |" for name, sec in rows.items()]
    for backward in (False, True):
        for bins in BINS:
            title = (f"gradients of {N} reads of {bins} float32 elements (backward launch)" if backward else
                     f"{N} float32 values into {bins} bins")
            common.progress(f"simkit on {device.name}: {title}")
            rows = simkit_rows(device, N, bins, rounds, backward)
            w = warp_row(N, bins, rounds, backward)
            if w is not None:
                rows["warp-lang deterministic (RUN_TO_RUN)"] = w
            base = rows["atomics in any order (default)"]
            lines += ["", title, "", "| launch | ms | vs atomics in any order |", "|---|---|---|"]
            lines += [f"| {name} | {sec * 1e3:.3f} | {sec / base:.1f}x |" for name, sec in rows.items()]
    return lines


def scene_rows(device) -> dict:
    """Seconds per iteration of the ball's optimization, three ways (see the module's text)."""
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    from scenes import ball_trajectory

    rows, ends = {}, {}
    det = sk.DeterministicMode.RUN_TO_RUN
    for name, mode, recorded in (("default (atomics in any order, a CUDA graph per iteration)",
                                  sk.DeterministicMode.NOT_GUARANTEED, True),
                                 ("deterministic, recorded (whole GPU)", det, True),
                                 ("deterministic, backward launches on one GPU thread", det, False)):
        with _mode(mode, recorded):
            ball_trajectory.optimize(iters=1, device=device)  # (compiles, loads)
            sk.synchronize_device(device)
            t0 = time.perf_counter()
            r = ball_trajectory.optimize(iters=SCENE_ITERS, device=device, tol=0.0)
            sk.synchronize_device(device)
            rows[name] = (time.perf_counter() - t0) / SCENE_ITERS
        ends[recorded, mode] = np.asarray(r.velocity, np.float32), np.asarray(r.distances, np.float64)
    for a, b in zip(ends[True, det], ends[False, det]):
        if not np.array_equal(a, b):
            raise AssertionError("the recorded deterministic optimization differs from the one-thread one")
    return rows


def main(argv=None):
    return run_report(argv, __doc__, "gpu_deterministic.py", report)


if __name__ == "__main__":
    sys.exit(main())

"""Where a GPU launch's time goes, and what saxpy's bandwidth depends on (run by tools/gpu_check.sh
after benchmarks/gpu.py, whose two targets it explains):

- launch overhead taken apart: ``sk.launch`` (through the native C launcher, and through
  cuda-python), the CUDA unit's launch alone (argument checks and packing done), the native
  launcher's one C call, the argument buffer the cuda-python path builds, and each driver call
  through cuda-python (``cuCtxSetCurrent``, ``cuLaunchKernel`` with ready arguments);
- saxpy bandwidth over block sizes, with the grid capped (grid-stride loop) or not; with its launch
  indices interleaved four per CUDA thread (the default, ``simkit/kernels/interleave.py``) and one
  per thread; and a hand-written saxpy of four elements per launch index; as fractions of the copy
  bandwidth;
- the same copy and saxpy through PyTorch, where it has CUDA (what the card gives a tuned library).

    python benchmarks/gpu_breakdown.py [--quick] [--markdown out.md]

Without a GPU it prints a notice and exits 0.
"""
from __future__ import annotations

import ctypes
import os
import sys
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402
from gpu import run_report, saxpy, time_gpu, tiny  # noqa: E402

import simkit as sk  # noqa: E402
from simkit.kernels.backends.cuda import driver  # noqa: E402
from simkit.kernels.backends.cuda import module as cuda_module  # noqa: E402
from simkit.runtime.launch import _check_and_pack, bounds_bytes  # noqa: E402

N_SAXPY = 1 << 26


@sk.kernel
def saxpy4(a: float, x: sk.array(dtype=float), y: sk.array(dtype=float), q: int):
    """saxpy over 4 q elements, four per launch index (i, i + q, ...): all eight loads before any store."""
    i = sk.tid()
    x0, x1, x2, x3 = x[i], x[i + q], x[i + 2 * q], x[i + 3 * q]
    y0, y1, y2, y3 = y[i], y[i + q], y[i + 2 * q], y[i + 3 * q]
    y[i] = a * x0 + y0
    y[i + q] = a * x1 + y1
    y[i + 2 * q] = a * x2 + y2
    y[i + 3 * q] = a * x3 + y3


def per_call_us(fn, k: int, device) -> float:
    fn()
    sk.synchronize_device(device)
    t0 = time.perf_counter()
    for _ in range(k):
        fn()
    sk.synchronize_device(device)
    return (time.perf_counter() - t0) / k * 1e6


def launch_rows(device, k: int) -> list:
    """(what, microseconds per call) for each part of a launch of a one-thread kernel."""
    t = sk.zeros(1, device=device)
    sk.launch(tiny, 1, inputs=[1.0, t], device=device)
    spec = tiny.specs[None]
    entry, unit = spec.native[device.kind]
    packed, _ = _check_and_pack(tiny, spec, [1.0, t], device)
    bounds = bounds_bytes((1,))[0]
    st = driver.state(device.ordinal)
    api = st.api
    fn = unit._loaded[device.ordinal].funcs[entry.name]
    off = (len(packed) + 15) & ~15

    def argument_buffer():
        buf = ctypes.create_string_buffer(packed.ljust(off, b"\0") + bounds)
        addr = ctypes.addressof(buf)
        return buf, cuda_module._ARGV(addr, addr + off)

    def through_cuda_python():  # sk.launch with the native launcher switched off for this kernel
        native = fn.native
        fn.native = None
        try:
            return per_call_us(lambda: sk.launch(tiny, 1, inputs=[1.0, t], device=device), k, device)
        finally:
            fn.native = native

    keep, argv = argument_buffer()
    params = ctypes.addressof(argv)
    stream = st.default_stream
    rows = [
        ("sk.launch (device given)", per_call_us(lambda: sk.launch(tiny, 1, inputs=[1.0, t], device=device),
                                                 k, device)),
        ("sk.launch (device inferred)", per_call_us(lambda: sk.launch(tiny, 1, inputs=[1.0, t]), k, device)),
        ("sk.launch through cuda-python (no native launcher)", through_cuda_python()),
        ("Launch.launch() (recorded with record_cmd=True)", per_call_us(
            sk.launch(tiny, 1, inputs=[1.0, t], device=device, record_cmd=True).launch, k, device)),
        ("unit launch alone (packed arguments)", per_call_us(lambda: unit.launch(entry, packed, bounds, 1),
                                                             k, device)),
    ]
    if fn.native is not None:
        rows.append(("native launcher alone (one C call, ready arguments)", per_call_us(
            lambda: fn.native(fn.driver, fn.ctx, fn.handle, 1, 256, stream, packed, bounds), k, device)))
    return rows + [
        ("argument buffer (ctypes)", per_call_us(argument_buffer, k, device)),
        ("cuCtxSetCurrent (cuda-python)", per_call_us(lambda: api.cuCtxSetCurrent(st.ctx), k, device)),
        ("cuLaunchKernel (cuda-python, ready arguments)",
         per_call_us(lambda: api.cuLaunchKernel(fn.func, 1, 1, 1, 256, 1, 1, 0, stream, params, 0), k, device)),
    ]


def bandwidth_rows(device, n: int, repeat: int) -> list:
    """(what, GB/s, fraction of the copy bandwidth): bytes read plus written per second."""
    x, y, z = sk.ones(n, device=device), sk.ones(n, device=device), sk.zeros(n, device=device)
    copy = 8 * n / time_gpu(lambda: sk.copy(z, x), device, repeat)
    rows = [("sk.copy", copy, 1.0)]
    saved = driver.GRID_CAP
    try:
        for block in (128, 256, 512, 1024):
            for cap in (saved, 2**31 - 1):
                driver.GRID_CAP = cap
                s = 12 * n / time_gpu(lambda: sk.launch(saxpy, n, inputs=[2.0, x, y], device=device,
                                                        block_dim=block), device, repeat)
                rows.append((f"saxpy, block {block}, grid {'capped' if cap == saved else 'full'}", s, s / copy))
    finally:
        driver.GRID_CAP = saved
    entry, unit = saxpy.specs[None].native[device.kind]
    fn = unit._loaded[device.ordinal].funcs[entry.name]
    ways = fn.ways
    try:  # saxpy's forward runs `ways` launch indices per CUDA thread (kernels/interleave.py); here one
        fn.ways = 1
        for cap in (saved, 2**31 - 1):
            driver.GRID_CAP = cap
            s = 12 * n / time_gpu(lambda: sk.launch(saxpy, n, inputs=[2.0, x, y], device=device), device, repeat)
            rows.append((f"saxpy, block 256, grid {'capped' if cap == saved else 'full'}, one index per thread "
                         f"(not interleaved)", s, s / copy))
    finally:
        fn.ways = ways
        driver.GRID_CAP = saved
    q = n // 4
    s = 12 * 4 * q / time_gpu(lambda: sk.launch(saxpy4, q, inputs=[2.0, x, y, q], device=device), device, repeat)
    rows.append(("saxpy4: 4 elements per launch index, hand-written", s, s / copy))
    return rows + torch_rows(n, repeat, copy)


def torch_rows(n: int, repeat: int, copy: float) -> list:
    try:
        import torch
    except ImportError:
        return []
    if not torch.cuda.is_available():
        return []
    x, y, z = (torch.ones(n, device="cuda") for _ in range(3))

    def timed(fn, batch=10):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        fn()
        samples = []
        for _ in range(repeat):
            s.record()
            for _ in range(batch):
                fn()
            e.record()
            e.synchronize()
            samples.append(s.elapsed_time(e) / 1000.0 / batch)
        return float(np.median(samples))

    c = 8 * n / timed(lambda: z.copy_(x))
    s = 12 * n / timed(lambda: y.add_(x, alpha=2.0))
    return [("torch copy_", c, c / copy), ("torch add_ (saxpy)", s, s / copy)]


def report(device, quick: bool) -> list:
    common.progress(f"launch overhead on {device.name}")
    launches = launch_rows(device, 1000 if quick else 20000)
    common.progress("bandwidth")
    bandwidth = bandwidth_rows(device, N_SAXPY // (8 if quick else 1), 5 if quick else 15)
    lines = ["| launch, one thread | us per call |", "|---|---|"]
    lines += [f"| {what} | {us:.2f} |" for what, us in launches]
    lines += ["", "| bandwidth (bytes read + written) | GB/s | of sk.copy |", "|---|---|---|"]
    return lines + [f"| {what} | {gbs / 1e9:.0f} | {frac:.3f} |" for what, gbs, frac in bandwidth]


def main(argv=None):
    return run_report(argv, __doc__, "gpu_breakdown.py", report)


if __name__ == "__main__":
    sys.exit(main())

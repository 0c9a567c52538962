"""The C++ compiler's optimisation level for simkit's CPU modules: build time and run time, -O2 against -O3.

    python benchmarks/opt_levels.py [--quick] [--levels 2 3] [--markdown out.md]

simkit builds its generated CPU modules at ``-O3`` unless ``config.optimization_level`` or a module's
``optimization_level`` option says otherwise; Warp's CPU default is ``-O2``. This script measures what the level
changes, on what users run:

- kernels: saxpy (4M float32) and softened n-body (4096 bodies), checked against numpy;
- the engine, through the scenes' own entry points: ``cloth_on_sphere`` (XPBD cloth on a mesh),
  ``dam_break`` (SPH), ``rigid_pile`` (penalty rigid bodies), ``billiards`` (an optimization: Tape, backward
  kernels, Adam).

Build: for each level, in an empty kernel cache, the seconds spent in the C++ compiler (``cpu.build``: the
precompiled header and every module a workload loads) while running each workload once; the levels take turns
(level order alternates by repetition). Run: the workloads with warm caches, the levels interleaved
(``common.bench_interleaved``); the level is switched with every simkit module's ``optimization_level`` option, so
each call's untimed warm-up loads that level's libraries from the cache. Every level's result is checked against
the first level's (kernels: against numpy too).
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

import simkit as sk  # noqa: E402
from simkit.cli import load_scene  # noqa: E402
from simkit.kernels.backends import cpu  # noqa: E402
from simkit.kernels.module import _modules  # noqa: E402

N_SAXPY = 1 << 22
N_BODY = 4096
#: (scene, entry point, keyword arguments): full run, --quick
SCENES = {
    "cloth_on_sphere": ("run", dict(steps=20), dict(steps=2, size=8)),
    "dam_break": ("run", dict(steps=2), dict(steps=1, spacing=0.024)),
    "rigid_pile": ("run", dict(steps=30), dict(steps=2, rows=1)),
    "billiards": ("optimize", dict(iters=4), dict(iters=1)),
}


@sk.kernel
def saxpy(a: float, x: sk.array(dtype=float), y: sk.array(dtype=float)):
    i = sk.tid()
    y[i] = a * x[i] + y[i]


@sk.kernel
def nbody(p: sk.array(dtype=sk.vec3), acc: sk.array(dtype=sk.vec3)):
    i = sk.tid()
    pi = p[i]
    a = sk.vec3()
    for j in range(p.shape[0]):
        d = p[j] - pi
        r2 = sk.dot(d, d) + 0.01
        a += d / (r2 * sk.sqrt(r2))
    acc[i] = a


def set_level(level: int) -> None:
    """Every simkit module's ``optimization_level`` (a module changed reloads at its next launch)."""
    for m in list(_modules.values()):
        sk.set_module_options({"optimization_level": level}, module=m)


def kernel_workloads(quick: bool) -> dict:
    """{name: (fn returning its result, numpy's result)}."""
    rng = np.random.default_rng(0)
    n = N_SAXPY >> 6 if quick else N_SAXPY
    x = sk.array(rng.random(n, dtype=np.float32), device="cpu")
    y0 = rng.random(n, dtype=np.float32)
    y = sk.array(y0, device="cpu")

    def run_saxpy():
        y.numpy()[:] = y0
        sk.launch(saxpy, n, inputs=[2.0, x, y], device="cpu")
        return y.numpy().copy()

    nb = N_BODY >> 3 if quick else N_BODY
    p_np = rng.uniform(-1.0, 1.0, (nb, 3)).astype(np.float32)
    p, acc = sk.array(p_np, dtype=sk.vec3, device="cpu"), sk.zeros(nb, dtype=sk.vec3, device="cpu")

    def run_nbody():
        sk.launch(nbody, nb, inputs=[p, acc], device="cpu")
        return acc.numpy().copy()

    d = p_np[None].astype(np.float64) - p_np[:, None]
    r2 = (d * d).sum(-1) + 0.01
    return {f"saxpy, {n} float32": (run_saxpy, 2.0 * x.numpy() + y0),
            f"n-body, {nb} bodies": (run_nbody, (d / (r2 * np.sqrt(r2))[..., None]).sum(1))}


def scene_workloads(quick: bool, names) -> dict:
    out = {}
    for name in names:
        entry, full, small = SCENES[name]
        fn, kwargs = getattr(load_scene(name), entry), small if quick else full
        label = f"{name}.{entry}(" + ", ".join(f"{k}={v}" for k, v in kwargs.items()) + ")"

        def call(fn=fn, kwargs=kwargs, entry=entry):
            r = fn(device="cpu", **kwargs)
            return np.asarray(r.distances if entry == "optimize" else r, dtype=np.float64)
        out[label] = (call, None)
    return out


def measure_builds(workloads: dict, levels: list, repeats: int) -> dict:
    """{(workload, level): [C++ compile seconds]}, each level in an empty cache, levels alternating in order."""
    spent = {"s": 0.0}
    original = cpu.build

    def timed_build(*args, **kwargs):
        t0 = time.perf_counter()
        try:
            return original(*args, **kwargs)
        finally:
            spent["s"] += time.perf_counter() - t0

    out = {}
    cpu.build = timed_build
    cache = sk.config.cache_dir
    try:
        for r in range(repeats):
            for level in (levels if r % 2 == 0 else levels[::-1]):
                with tempfile.TemporaryDirectory() as d:
                    sk.config.cache_dir = d
                    set_level(level)
                    for name, (fn, _) in workloads.items():
                        common.progress(f"build at -O{level}: {name}")
                        spent["s"] = 0.0
                        set_level(level)  # (a scene's modules, imported just now)
                        fn()
                        out.setdefault((name, level), []).append(spent["s"])
                    for m in list(_modules.values()):
                        m.unload()  # (its libraries are in the cache about to go)
    finally:
        cpu.build = original
        sk.config.cache_dir = cache
    return out


def check(workloads: dict, levels: list) -> list:
    """Each workload's result at each level: against numpy where there is one, else against the first level's."""
    rows = []
    for name, (fn, reference) in workloads.items():
        first = None
        for level in levels:
            set_level(level)
            result = fn()
            expect = reference if reference is not None else first
            if expect is not None:
                err = float(np.max(np.abs(result - expect)) / max(1.0, float(np.max(np.abs(expect)))))
                # (a scene's contacts amplify the last-bit differences of the levels' instruction choices)
                if not np.all(np.isfinite(result)) or err > (1e-4 if reference is not None else 1e-2):
                    raise AssertionError(f"{name} at -O{level}: relative difference {err:.3g} from "
                                         f"{'numpy' if reference is not None else f'-O{levels[0]}'}")
                rows.append((name, level, err))
            first = result if first is None else first
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="small sizes, few samples (a smoke test)")
    ap.add_argument("--levels", type=int, nargs="+", default=[2, 3])
    ap.add_argument("--scenes", nargs="*", default=list(SCENES), choices=list(SCENES))
    ap.add_argument("--markdown", default=None)
    args = ap.parse_args(argv)
    before = {m: m.options.get("optimization_level") for m in list(_modules.values())}
    try:
        return report(args)
    finally:  # (the modules' own levels back: this may run inside another program, the tests)
        for m in list(_modules.values()):
            sk.set_module_options({"optimization_level": before.get(m)}, module=m)


def report(args) -> int:
    levels = args.levels
    workloads = {**kernel_workloads(args.quick), **scene_workloads(args.quick, args.scenes)}
    threads = sk.config.cpu_threads or common.core_count()
    lines = ["### C++ optimisation level: -O" + " vs -O".join(map(str, levels)), "",
             common.kv_markdown(common.machine_info(threads)), ""]
    builds = measure_builds(workloads, levels, 1 if args.quick else 2)
    check(workloads, levels)
    fns = {}
    for name, (fn, _) in workloads.items():
        for level in levels:
            def call(fn=fn, level=level):
                set_level(level)
                fn()
            fns[(name, level)] = call
    rounds = 2 if args.quick else 5
    times = {}
    for name in workloads:
        common.progress(f"run: {name}")
        times.update(common.bench_interleaved({k: v for k, v in fns.items() if k[0] == name}, rounds=rounds,
                                              block=1 if args.quick else 3))
    base = levels[0]
    table = common.Table("Build and run time by level", ["workload", "level", "C++ build", "build / -O%d" % base,
                                                         "run (median)", "run min", "run / -O%d" % base])
    for name in workloads:
        for level in levels:
            b, t = min(builds[(name, level)]), times[(name, level)]
            b0, t0 = min(builds[(name, base)]), times[(name, base)]
            table.add(name, f"-O{level}", common.fmt_time(b), f"{b / b0:.2f}x" if b0 > 0 else "n/a",
                      common.fmt_time(t.median), common.fmt_time(t.min), f"{t.median / t0.median:.2f}x")
    table.note = (f"C++ build: seconds in the compiler while the workload ran once in an empty cache (the least of "
                  f"{1 if args.quick else 2}; a workload's modules already built by an earlier one are not counted "
                  f"again). Run: {rounds} rounds of {1 if args.quick else 3} calls per level, interleaved. Results of "
                  f"every level agree (kernels with numpy to 1e-4 relative; scenes with -O{base}'s, to 1e-2: contacts "
                  f"amplify the last-bit differences between levels).")
    lines.append(table.markdown())
    common.write_report(lines, args.markdown)
    return 0


if __name__ == "__main__":
    sys.exit(main())

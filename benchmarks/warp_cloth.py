"""warp-lang's own cloth benchmark (``warp/examples/benchmarks/benchmark_cloth*.py``), unchanged, under simkit
and under warp-lang, in one run.

    python benchmarks/warp_cloth.py [--quick] [--markdown out.md]

warp-lang ships a mass-spring cloth benchmark: a grid of particles joined by stretch, shear and bend springs,
16 substeps of two kernels per frame (``eval_springs``: the spring forces, scattered with ``atomic_add`` /
``atomic_sub`` on vec3 arrays; ``integrate_particles``), and the same integrator in numpy. This script reads
those files from the installed warp-lang, runs its Warp integrator once as it is and once with ``import warp
as wp`` read as ``import simkit as wp`` (the only change), and its numpy one, on grids of 32^2, 64^2 and 128^2
particles. Per frame, median of interleaved blocks; simkit on all cores (its atomic tuning picks one thread or
all per kernel: runtime/cpu_tuning.py) and on one thread; warp-lang's CPU backend runs each kernel on one
thread. Every implementation's positions after the timed frames are checked against warp-lang's.

Needs warp-lang (the benchmark's source is its own); without it the script says so and exits.
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import sys
import types

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

import simkit as sk  # noqa: E402
from simkit.runtime import cpu_tuning  # noqa: E402

DIMS = (32, 64, 128)
SUBSTEPS = 16  # (benchmark_cloth.py's)


def _bench_dir() -> str | None:
    spec = importlib.util.find_spec("warp")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = os.path.join(list(spec.submodule_search_locations)[0], "examples", "benchmarks")
    return path if os.path.isfile(os.path.join(path, "benchmark_cloth_warp.py")) else None


def _load(path: str, name: str, simkit: bool) -> types.ModuleType:
    """The file at ``path`` as module ``name``; ``simkit``: importing simkit as ``wp``. Its kernel-cache clearing
    at import is skipped (both frameworks' caches are left alone)."""
    with open(path) as f:
        src = f.read()
    src = src.replace("wp.clear_kernel_cache()\n", "\n")
    if simkit:
        src = src.replace("import warp as wp\n", "import simkit as wp\n")
    mod = types.ModuleType(name)
    mod.__file__ = path
    sys.modules[name] = mod
    exec(compile(src, path, "exec"), mod.__dict__)  # noqa: S102 - warp-lang's own benchmark file
    return mod


def cloth_class(directory: str):
    """benchmark_cloth.py's ``Cloth`` (its file without the part that runs the benchmark, and without USD)."""
    with open(os.path.join(directory, "benchmark_cloth.py")) as f:
        src = f.read()
    src = src[:src.index("# record profiling information")].replace("from pxr import Usd, UsdGeom\n", "\n")
    ns = {"__file__": os.path.join(directory, "benchmark_cloth.py"), "__name__": "warp_benchmark_cloth"}
    exec(compile(src, ns["__file__"], "exec"), ns)  # noqa: S102
    return ns["Cloth"]


def make_cloth(Cloth, dim: int):
    # (benchmark_cloth.py's run_benchmark parameters)
    return Cloth(lower=(0.0, 0.0, 0.0), dx=dim, dy=dim, radius=0.1, stretch_stiffness=1000.0,
                 bend_stiffness=1000.0, shear_stiffness=1000.0, mass=0.1, fix_corners=True)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer frames")
    ap.add_argument("--markdown", metavar="FILE", help="also write the report as markdown")
    args = ap.parse_args(argv)
    directory = _bench_dir()
    if directory is None:
        print("warp_cloth.py: warp-lang (with its examples) is not installed; nothing to run")
        return 0
    import warp

    warp.config.quiet = True
    Cloth = cloth_class(directory)
    sk_mod = _load(os.path.join(directory, "benchmark_cloth_warp.py"), "warp_cloth_simkit", simkit=True)
    wp_mod = _load(os.path.join(directory, "benchmark_cloth_warp.py"), "warp_cloth_warp", simkit=False)
    np_mod = _load(os.path.join(directory, "benchmark_cloth_numpy.py"), "warp_cloth_numpy", simkit=False)
    rounds, block = (3, 3) if args.quick else (5, 6)
    dt = 1.0 / 60.0
    threads = common.core_count()
    lines = ["# warp-lang's cloth benchmark under simkit", "", common.kv_markdown(common.machine_info(threads)), ""]
    table = common.Table("Time per frame (16 substeps of `eval_springs` + `integrate_particles`)",
                         ["particles", "springs", f"simkit ({threads} threads, tuned)", "simkit (1 thread)",
                          "warp-lang (1 thread)", "numpy", "warp-lang / simkit"],
                         note="Median per frame of interleaved blocks; simkit's best of its two rows is compared.")
    for dim in DIMS:
        common.progress(f"cloth {dim}x{dim}")
        runs = {"simkit": sk_mod.WpIntegrator(make_cloth(Cloth, dim), "cpu"),
                "simkit1": sk_mod.WpIntegrator(make_cloth(Cloth, dim), "cpu"),
                "warp": wp_mod.WpIntegrator(make_cloth(Cloth, dim), "cpu"),
                "numpy": np_mod.NpIntegrator(make_cloth(Cloth, dim))}

        def one_thread(integ=runs["simkit1"]):
            saved, sk.config.cpu_threads = sk.config.cpu_threads, 1
            try:
                return integ.simulate(dt, SUBSTEPS)
            finally:
                sk.config.cpu_threads = saved

        fns = {"simkit": lambda: runs["simkit"].simulate(dt, SUBSTEPS), "simkit1": one_thread,
               "warp": lambda: runs["warp"].simulate(dt, SUBSTEPS),
               "numpy": lambda: runs["numpy"].simulate(dt, SUBSTEPS)}
        if dim == DIMS[-1] and not args.quick:
            fns.pop("numpy")  # (128^2 takes numpy ~0.4 s a frame)
        times = common.bench_interleaved(fns, rounds=rounds, block=block, warmup=1)
        # every implementation has run the same number of frames from the same state: positions agree
        want = np.asarray(runs["warp"].simulate(dt, SUBSTEPS))
        for key in [k for k in fns if k != "warp"]:
            got = np.asarray(fns[key]())
            scale = max(float(np.abs(want).max()), 1.0)
            assert np.abs(got - want).max() <= 2e-3 * scale, f"{key} {dim}: positions differ from warp-lang's"
        best = min(times["simkit"].median, times["simkit1"].median)
        cloth = runs["warp"].cloth
        table.add(cloth.num_particles, cloth.num_springs, common.fmt_time(times["simkit"].median),
                  common.fmt_time(times["simkit1"].median), common.fmt_time(times["warp"].median),
                  common.fmt_time(times["numpy"].median) if "numpy" in times else "-",
                  f"{times['warp'].median / best:.2f}x")
    lines += [table.markdown(2), "", "simkit's choices of threads (runtime/cpu_tuning.py): " + ", ".join(
        f"`{name}` at {size}+ threads: {'one' if serial else 'all'} ({common.fmt_time(par)} on all, {common.fmt_time(one)} on "
        f"one)" for name, _adj, size, par, one, serial in cpu_tuning.choices())]
    common.write_report(lines, args.markdown)
    return 0


if __name__ == "__main__":
    sys.exit(main())

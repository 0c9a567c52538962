"""Differential fuzzing of the kernel compiler: random kernels run under simkit and warp-lang, gradients checked
against finite differences (the generator is tests/kernel_fuzz.py, the checks tests/kernel_fuzz_check.py).

    python tools/fuzz_kernels.py run --seeds 0:200 --out fuzz_findings [--device emulated]
    python tools/fuzz_kernels.py reduce fuzz_findings/fuzz_110_float64_simkit.py k110_0 --seed 110

``run`` checks one generated module per seed (a progress bar on stderr) and copies the source of every module
with a simkit finding into ``--out``. ``reduce`` shrinks such a module, removing lines and whole blocks while
the finding (the same kind, in the same kernel) remains, and prints the smallest source it reached.
"""
from __future__ import annotations

import argparse
import itertools
import os
import re
import shutil
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests"))

import kernel_fuzz  # noqa: E402
import kernel_fuzz_check as check  # noqa: E402


def _quiet_warp():
    import warp

    warp.config.log_level = warp.LOG_ERROR  # (warp-lang 1.19: no module-load lines)


def cmd_run(args) -> int:
    from simkit.cli import ProgressBar

    _quiet_warp()
    lo, hi = (int(v) for v in args.seeds.split(":"))
    os.makedirs(args.out, exist_ok=True)
    work = tempfile.mkdtemp(prefix="simkit_fuzz_")
    progress = ProgressBar("fuzz")
    found = warp_only = 0
    device = "cuda:0" if args.device == "emulated" else args.device
    if args.device == "emulated":  # the tests' emulated GPU (tests/cuda_emulator.py): CUDA code on this CPU
        from cuda_emulator_world import shared_world

        shared_world().__enter__()
    for k, seed in enumerate(range(lo, hi)):
        for f in check.check(seed, work, n_threads=args.threads, device=device, mode=args.mode):
            if f.kind in check.SIMKIT_FAILURES:
                found += 1
                print(f, flush=True)
                for name in os.listdir(work):
                    if name.startswith(f"fuzz_{seed}_"):
                        shutil.copy(os.path.join(work, name), args.out)
            else:
                warp_only += 1
        progress(k + 1, hi - lo)
    print(f"{hi - lo} modules: {found} simkit findings, {warp_only} warp-lang errors; sources in {args.out}")
    return 1 if found else 0


_CANDIDATES = itertools.count(1)


def _kernel_info(source: str, name: str) -> kernel_fuzz.KernelInfo:
    """The kernel's output strides and launch shape, read from the generated module (its unreduced text: the
    arrays must keep their size while lines go, or a remaining atomic_add would write past them)."""
    seg = source[source.index(f"def {name}("):]
    seg = seg[:seg.find("\n@wp.") if "\n@wp." in seg else len(seg)]
    strides = {arr: max([int(v) for v in re.findall(rf"{arr}(?:\[|, )t \* (\d+)", seg)], default=0)
               for arr in ("out_f", "out_i")}
    rows = re.search(r"t = i \* (\d+) \+ j", seg)
    return kernel_fuzz.KernelInfo(name, strides["out_f"], strides["out_i"], int(rows.group(1)) if rows else 0)


def _finding(source: str, name: str, info, seed: int, precision: str, kind: str, work: str, n: int = 16) -> bool:
    """Does the kernel `name` of this module text (simkit) still show a finding of `kind`?"""
    import numpy as np
    import simkit
    import warp

    tag = f"{seed}_r{next(_CANDIDATES)}"  # (each candidate is a module of its own)
    mod = kernel_fuzz.Module(source.split("\n", 3)[3], precision, [info])
    try:
        sk_mod = check.load(mod, "simkit", tag, work)
        sk_kernel = getattr(sk_mod, name)
        x = check.inputs(seed, n, precision)
        rng = np.random.default_rng(seed + 1)
        sk_run = check.Runner(simkit, precision)
        if kind == "gradient":
            sk_run.forward(sk_kernel, info, x, n)
            return bool(check.check_gradient(seed, info, sk_run, sk_kernel, x, n, rng))
        wp_mod = check.load(mod, "warp", tag, work)
        return bool(check.check_forward(seed, info, sk_run, check.Runner(warp, precision), sk_kernel,
                                        getattr(wp_mod, name), x, n, precision, rng))
    except Exception:  # noqa: BLE001 - a candidate that does not compile or run is not the finding
        return kind == "simkit-error"


def _units(lines: list) -> list:
    """(start, end) of each removable unit, last first: a body line with the lines indented under it, or a
    whole kernel other than the one reduced."""
    units = []
    for i, line in enumerate(lines):
        if not line.startswith("    ") or line.lstrip().startswith("def "):
            continue
        indent = len(line) - len(line.lstrip())
        j = i + 1
        while j < len(lines) and (len(lines[j]) - len(lines[j].lstrip()) > indent or not lines[j].strip()):
            j += 1
        units.append((i, j))
    return sorted(units, reverse=True)


def _without(lines: list, units: list) -> list:
    drop = set()
    for start, end in units:
        drop.update(range(start, end))
    return [line for i, line in enumerate(lines) if i not in drop]


def _other_kernels(lines: list, keep: str) -> list:
    out, skipping = [], False
    for i, line in enumerate(lines):
        if line == "@wp.kernel":
            skipping = not lines[i + 1].startswith(f"def {keep}(")
        elif line.startswith("@wp."):
            skipping = False
        if not skipping:
            out.append(line)
    return out


def cmd_reduce(args) -> int:
    _quiet_warp()
    source = open(args.file).read()
    if not source.startswith("import simkit"):
        raise SystemExit("reduce: give the simkit copy of the module (its first line imports simkit)")
    precision = "float64" if "float64" in os.path.basename(args.file) else "float32"
    work = tempfile.mkdtemp(prefix="simkit_reduce_")
    info = _kernel_info(source, args.kernel)
    holds = lambda ls: _finding("\n".join(ls), args.kernel, info, args.seed, precision, args.kind,  # noqa: E731
                                work, args.threads)
    lines = source.split("\n")
    if not holds(lines):
        raise SystemExit(f"reduce: no {args.kind} finding in {args.kernel} of {args.file}")
    if holds(_other_kernels(lines, args.kernel)):
        lines = _other_kernels(lines, args.kernel)
    size = 16
    while size >= 1:  # remove chunks of `size` units, halving the size when none goes
        changed = False
        units = _units(lines)
        k = 0
        while k < len(units):
            chunk = units[k:k + size]
            candidate = _without(lines, chunk)
            if holds(candidate):
                lines, changed = candidate, True
                print(f"reduce: {len(lines)} lines", file=sys.stderr)
                units = _units(lines)
                k = sum(1 for u in units if u[0] > chunk[0][0])  # go on below what was removed
            else:
                k += size
        if not changed:
            size //= 2
    print("\n".join(lines))
    return 0


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run", help="check the modules of a range of seeds")
    r.add_argument("--seeds", default="0:100", help="A:B, the seeds A .. B-1")
    r.add_argument("--threads", type=int, default=None, help="launch size of each kernel (16 on the CPU, 1024 on "
                   "a GPU)")
    r.add_argument("--device", default="cpu", help="simkit's device: cpu, cuda:N, or emulated (the tests' "
                   "emulated GPU, which runs the CUDA code on this machine)")
    r.add_argument("--out", default="fuzz_findings", help="where sources with findings are copied")
    r.add_argument("--mode", choices=["release", "debug"], default=None, help="simkit's config.mode (debug: "
                   "bounds checks, -O1)")
    d = sub.add_parser("reduce", help="shrink a module while its finding remains")
    d.add_argument("file", help="the simkit copy of the module (fuzz_<seed>_<precision>_simkit.py)")
    d.add_argument("kernel")
    d.add_argument("--seed", type=int, required=True, help="the module's seed (it chose the inputs)")
    d.add_argument("--kind", default="gradient", choices=["gradient", "forward", "simkit-error"])
    d.add_argument("--threads", type=int, default=16, help="launch size (the run's: 1024 for a GPU's finding)")
    args = p.parse_args(argv)
    return cmd_run(args) if args.cmd == "run" else cmd_reduce(args)


if __name__ == "__main__":
    sys.exit(main())

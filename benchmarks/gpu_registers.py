"""Registers, local memory and spills per GPU thread of the same kernels under simkit, warp-lang and hand-written
CUDA, as the GPU assembler reports them (NVRTC's ``ptxas -v``, for ``--arch``, sm_90 by default): no GPU needed.

A thread's registers bound how many threads a multiprocessor holds at once (65536 registers: 64 a thread keep
1024 threads resident, 128 keep 512, 255 only 256); what does not fit spills to local memory (off-chip,
cached). A GPU hides memory latency with resident threads, so these counts are the first thing to compare
between two compilers of the same kernel, and the only one a machine without a GPU can measure.

Side by side, in one run:

- the kernels of ``benchmarks/particles_kernels.py``, ``sph_kernels.py``, ``spatial_kernels.py`` and
  ``adjoint_loops_kernels.py`` (written once in Warp's language), forward and adjoint, compiled by simkit
  (``sk.get_kernel_resource_usage``: its own NVRTC options) and by warp-lang when installed (its generated
  source, from ``wp.compile_aot_module``, compiled with the options of Warp's release builds: ``NDEBUG``,
  ``--fmad=true``, ``--extra-device-vectorization``, ``--restrict``), both by the NVRTC installed here;
- three of them written by hand in CUDA (``benchmarks/native/registers_ref.cu``, forward only);
- ``--scenes``: every kernel the shipped scenes build, found by running each a few steps (and an
  optimization iteration) on the CPU: the ones above 128 registers.

simkit runs straight-line forward kernels four launch indices per CUDA thread (kernels/interleave.py): their
rows say ``x4``, and their registers serve four indices.

    python benchmarks/gpu_registers.py [--arch sm_90] [--no-warp] [--scenes] [--markdown out.md]
"""
from __future__ import annotations

import argparse
import glob
import importlib.util
import os
import re
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

import simkit as sk  # noqa: E402
from simkit.kernels import interleave  # noqa: E402
from simkit.kernels.backends.cuda import nvrtc  # noqa: E402
from simkit.kernels.decorators import Kernel  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCES = ["particles_kernels.py", "sph_kernels.py", "spatial_kernels.py", "adjoint_loops_kernels.py"]
#: NVRTC options of Warp's release builds (read from its library; the architecture is added)
WARP_OPTIONS = ["--std=c++17", "--define-macro=NDEBUG", "--device-as-default-execution-space", "--fmad=true",
                "--extra-device-vectorization", "--restrict", "--diag-suppress=177,550"]
#: the scenes --scenes runs, and how (a short run of each: what matters is which kernels they build)
SCENES = ["run cloth_on_sphere --steps 2", "run dam_break --steps 2", "run rigid_pile --steps 2",
          "run seesaw --steps 2", "optimize ball_trajectory --iters 1", "optimize soft_body_walker --iters 1",
          "optimize arm_reach --iters 1", "optimize cartpole --iters 1"]


def load(backend, filename: str):
    """Import one of the same-source kernel files with ``wp`` bound to ``backend``."""
    spec = importlib.util.spec_from_file_location(f"regs_{filename[:-3]}", os.path.join(HERE, filename))
    mod = importlib.util.module_from_spec(spec)
    mod.wp = backend
    spec.loader.exec_module(mod)
    return mod


def kernels_of(mod) -> dict:
    return {k.key: k for k in vars(mod).values() if isinstance(k, Kernel)}


def simkit_usage(mod, arch: str) -> dict:
    """{(kernel, "fwd"/"bwd"): usage} of simkit's code, and the names of the interleaved kernels."""
    out, interleaved = {}, set()
    for key, k in kernels_of(mod).items():
        for adjoint in (False, True):
            out[key, "bwd" if adjoint else "fwd"] = sk.get_kernel_resource_usage(k, arch, adjoint=adjoint)
        if interleave.eligible(k.specs[None].ir):
            interleaved.add(key)
    return out, interleaved


_WARP_ENTRY = re.compile(r"^(\w+)_[0-9a-f]+_cuda_kernel_(forward|backward)$")


def warp_usage(filename: str, arch: str, tmp: str) -> dict | None:
    """{(kernel, "fwd"/"bwd"): usage} of warp-lang's code for the same file; None without warp-lang."""
    try:
        import warp as wp
    except ImportError:
        return None
    wp.config.quiet = True
    mod = load(wp, filename)
    out_dir = os.path.join(tmp, filename[:-3])
    wp.compile_aot_module(mod.__name__, arch=int(arch[3:]), module_dir=out_dir, use_ptx=True)
    (source,) = glob.glob(os.path.join(out_dir, "*.cu"))
    with open(source) as f:
        text = f.read()
    opts = WARP_OPTIONS + [f"--include-path={os.path.join(os.path.dirname(wp.__file__), 'native')}"]
    out = {}
    for entry, usage in nvrtc.resource_usage(text, arch, opts=opts, name=filename).items():
        m = _WARP_ENTRY.match(entry)
        if m:
            out[m.group(1), "fwd" if m.group(2) == "forward" else "bwd"] = usage
    return out


def handwritten_usage(arch: str) -> dict:
    with open(os.path.join(HERE, "native", "registers_ref.cu")) as f:
        usage = nvrtc.resource_usage(f.read(), arch, opts=["--std=c++17"], name="registers_ref")
    return {(k, "fwd"): v for k, v in usage.items()}


def cell(u: dict | None) -> str:
    """'40' or '96, 560 B stack' or '255, 2.7 KB spilled'."""
    if u is None:
        return "-"
    text = str(u["registers"])
    if u["spill_stores"]:
        text += f", {u['spill_stores']} B spilled"
    elif u["stack"]:
        text += f", {u['stack']} B stack"
    if u["smem"]:
        text += f", {u['smem']} B smem"
    return text


def same_source_table(arch: str, warp: bool = True) -> list:
    lines = ["", f"### Same source, {arch}: registers per thread (and local memory)", "",
             "| kernel | pass | simkit | warp-lang | hand-written CUDA | simkit / warp-lang |", "|---|---|---|---|---|---|"]
    hand = handwritten_usage(arch)
    totals = [0, 0]
    with tempfile.TemporaryDirectory() as tmp:
        for filename in SOURCES:
            common.progress(filename)
            ours, interleaved = simkit_usage(load(sk, filename), arch)
            theirs = (warp_usage(filename, arch, tmp) if warp else None) or {}
            for (key, which), u in ours.items():
                w = theirs.get((key, which))
                h = hand.get((key, which)) if filename == "particles_kernels.py" else None
                name = f"{filename[:-11]}.{key}" + (" (x4)" if which == "fwd" and key in interleaved else "")
                ratio = f"{u['registers'] / w['registers']:.2f}" if w else "-"
                if w:
                    totals[0] += u["registers"]
                    totals[1] += w["registers"]
                lines.append(f"| {name} | {which} | {cell(u)} | {cell(w)} | {cell(h)} | {ratio} |")
    if totals[1]:
        lines += ["", f"All rows with both: simkit {totals[0]} registers, warp-lang {totals[1]} "
                      f"({totals[0] / totals[1]:.2f}x)."]
    return lines


def scene_kernels(arch: str, limit: int = 128) -> list:
    """Run the scenes briefly, then measure every kernel specialisation they built."""
    from simkit import cli
    from simkit.kernels import module as kmodule

    with tempfile.TemporaryDirectory() as tmp:
        cwd = os.getcwd()
        os.chdir(tmp)
        try:
            for args in SCENES:
                common.progress(args)
                argv = args.split() + ["--usd", "out.usda"]
                try:
                    cli.main(argv)
                except SystemExit:
                    pass
        finally:
            os.chdir(cwd)
    rows, seen = [], set()
    for m in list(kmodule._modules.values()):
        if m.name.startswith("regs_"):
            continue  # (the same-source files of the first table)
        for k in m.kernels:
            for spec in k.specs.values():
                if spec.ir is None:
                    continue
                for adjoint in (False, True):
                    if adjoint and k.enable_backward is False:
                        continue
                    source = m.spec_source(spec, adjoint)
                    if source in seen:
                        continue
                    seen.add(source)
                    entry = f"{spec.cname}_cuda_{'bwd' if adjoint else 'fwd'}"
                    u = nvrtc.resource_usage(source, arch, name=k.key)[entry]
                    rows.append((u["registers"], u["spill_stores"], k.key, "bwd" if adjoint else "fwd", u))
    rows.sort(key=lambda r: (-r[0], -r[1], r[2]))
    heavy = [r for r in rows if r[0] > limit]
    lines = ["", f"### Kernels of the shipped scenes, {arch}: {len(rows)} entries, {len(heavy)} above {limit} "
                 f"registers, {sum(r[1] > 0 for r in rows)} spilling", "",
             "| kernel | pass | registers (and local memory) |", "|---|---|---|"]
    return lines + [f"| {key} | {which} | {cell(u)} |" for _r, _s, key, which, u in heavy]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--arch", default="sm_90", help="GPU architecture (sm_XX)")
    ap.add_argument("--no-warp", action="store_true", help="leave warp-lang out")
    ap.add_argument("--scenes", action="store_true", help="also the kernels of the shipped scenes (minutes)")
    ap.add_argument("--markdown", help="write the report to this file too")
    args = ap.parse_args(argv)
    if not nvrtc.is_available():
        print("NVRTC is not available (pip install 'simkit[cuda]'): nothing to measure")
        return 0
    lines = ["## GPU registers per thread (NVRTC, no GPU)", "", common.kv_markdown(
        common.machine_info(1)[5:] + [("NVRTC", nvrtc.version()), ("architecture", args.arch)])]
    lines += same_source_table(args.arch, warp=not args.no_warp)
    if args.scenes:
        lines += scene_kernels(args.arch)
    common.write_report(lines, args.markdown)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Scene frames on the GPU: each frame's launches issued one by one, and the frame replayed as one
CUDA graph (``sk.CapturedStep``, what ``simkit run <scene> --device cuda:0`` does), side by side in
one run. Run by tools/gpu_check.sh after benchmarks/gpu_breakdown.py.

- cloth: ``scenes/cloth_on_sphere.py`` (XPBD, 10 iterations, 2 substeps per frame), 32 x 32 cells;
- dam break: ``scenes/dam_break.py`` (SPH, its substeps per frame), particle spacing 2 cm;
- rigid pile: ``scenes/rigid_pile.py`` (penalty contacts, 40 substeps per frame), 3 rows; and the
  same with XPBD (two steps of 2 substeps per frame; contacts coloured on the device);
- seesaw: ``scenes/seesaw.py`` (XPBD particles and a hinged plank coupled, 4 substeps), 216 particles.

Each row: ms per frame both ways (median of rounds of ``frames`` frames, the GPU synchronized at
the end of each round), and the speedup. Small scenes are bound by the host's launches, which
the graph removes; large ones by the GPU, where the two agree.

    python benchmarks/gpu_frames.py [--quick] [--markdown out.md]
    python benchmarks/gpu_frames.py --cpu [--quick] [--markdown out.md]   # CPU graphs, on the CPU

Without a GPU (and without ``--cpu``) it prints a notice and exits 0. With ``--cpu`` the same
frames run on the CPU, launched one by one and replayed from a CPU graph (docs/warp.md), plus an
8 x 8 cloth, where Python's work per launch is most of a frame.
"""
from __future__ import annotations

import importlib.util
import math
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402
from gpu import run_report  # noqa: E402

import simkit as sk  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CLOTH_SIZE = 32
DAM_SPACING = 0.02
PILE_ROWS = 3
SEESAW_HEAP = 6


def scene(name: str):
    spec = importlib.util.spec_from_file_location(f"scene_{name}", os.path.join(ROOT, "scenes", f"{name}.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def stepper(model, solver, substeps: int, dt: float):
    """A frame of ``substeps`` steps alternating two states (an even number: it ends in the first)."""
    states = [model.state(), model.state()]

    def frame():
        for _ in range(substeps):
            solver.step(model, states[0], states[1], None, dt)
            states.reverse()

    return frame


def frames(device, cloth_sizes=(CLOTH_SIZE,)) -> list:
    """(name, frame function, substeps) of each scene on ``device``."""
    out = []
    if importlib.util.find_spec("trimesh") is not None:   # (the cloth's sphere is a trimesh icosphere)
        for size in cloth_sizes:
            model, _ = scene("cloth_on_sphere").build(size, device)
            out.append((f"cloth {size}x{size} cells, XPBD", stepper(model, sk.XPBDSolver(iterations=10), 2,
                                                                  1.0 / 120.0), 2))
    else:
        common.progress("no trimesh: no cloth row")
    dam = scene("dam_break")
    model, solver = dam.build(DAM_SPACING, device)
    n = math.ceil(1.0 / 60.0 / solver.max_time_step(model, max_speed=2.0 * math.sqrt(dam.GRAVITY * dam.COLUMN)))
    n += n % 2
    out.append((f"dam break, {model.particle_count} particles, SPH", stepper(model, solver, n, 1.0 / 60.0 / n), n))
    pile = scene("rigid_pile")
    model = pile.build(PILE_ROWS, device)
    out.append((f"rigid pile, {model.body_count} bodies, penalty", stepper(model, sk.RigidBodySolver(), 40,
                                                                          1.0 / 60.0 / 40), 40))
    out.append((f"rigid pile, {model.body_count} bodies, XPBD", stepper(model, sk.XPBDSolver(iterations=2, substeps=2),
                                                                       2, 1.0 / 120.0), 2))
    model = scene("seesaw").build(device, SEESAW_HEAP)
    out.append((f"seesaw, {model.particle_count} particles on a hinged plank, XPBD coupled",
                stepper(model, sk.XPBDSolver(iterations=8), 4, 1.0 / 240.0), 4))
    return out


def ms_per_frame(step, device, count: int, rounds: int) -> float:
    for _ in range(2):   # (compiles and loads; a CapturedStep captures on its second call)
        step()
    sk.synchronize_device(device)
    samples = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(count):
            step()
        sk.synchronize_device(device)
        samples.append((time.perf_counter() - t0) / count * 1e3)
    return statistics.median(samples)


def report(device, quick: bool) -> list:
    count, rounds = (5, 2) if quick else (30, 5)
    kind = "CPU" if device.is_cpu else "CUDA"
    lines = [f"| scene (frame of substeps) | substeps | launches one by one, ms/frame | one {kind} graph, ms/frame "
             "| speedup |", "|---|---|---|---|---|"]
    for name, frame, substeps in frames(device, (8, CLOTH_SIZE) if device.is_cpu else (CLOTH_SIZE,)):
        common.progress(name)
        direct = ms_per_frame(frame, device, count, rounds)
        graph = ms_per_frame(sk.CapturedStep(frame, device, enabled=True), device, count, rounds)
        lines.append(f"| {name} | {substeps} | {direct:.3g} | {graph:.3g} | {direct / graph:.3g} |")
    return lines


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    if "--cpu" in argv:
        argv.remove("--cpu")
        return run_report(argv, __doc__, "gpu_frames.py", report, device="cpu")
    return run_report(argv, __doc__, "gpu_frames.py", report)


if __name__ == "__main__":
    sys.exit(main())

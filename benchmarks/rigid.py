"""Rigid-body step cost: all-pairs narrow phase against the Bvh broad phase, by scene size.

    python benchmarks/rigid.py [--quick] [--threads N] [--markdown out.md]

A cubic lattice of n bodies (spheres, boxes, capsules in turn, 15 cm apart, spinning) above the
ground; ``RigidBodySolver`` steps it with ``broad_phase="all_pairs"`` (every pair of shapes
tested at its contact candidates, n (n - 1) / 2 pairs) and ``"bvh"`` (a Bvh over the shapes'
boxes, refitted every step, rebuilt every 20, pair count read back). Forward steps per second,
the two interleaved in one run; and forward + backward of a 20-step taped rollout for the Bvh.
Then the cost of one simulated second of the lattice falling onto the ground and settling:
``RigidBodySolver`` at 1/2400 s (its stable step for these contacts, ~0.4 ms) against
``XPBDSolver`` at 1/60 s with 10 iterations and at 1/120 s with 5, interleaved, with the fastest
body's centre speed at the end (how settled the pile is). Last, how still a stack of 8 cubes
rests over 5 s by solver settings (the top cube's drift, the largest tilt).
warp-lang 1.19 has no rigid-body simulator (``warp.sim`` moved out of the package), so there is
no warp-lang column.
"""
from __future__ import annotations

import argparse
import os
import sys

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

import simkit as sk  # noqa: E402

DT = 5.0e-4


def lattice(n: int, requires_grad: bool = False):
    rng = np.random.default_rng(1)
    b = sk.ModelBuilder()
    side = int(np.ceil(n ** (1.0 / 3.0)))
    for k in range(n):
        i, j, l = k % side, (k // side) % side, k // side // side
        body = b.add_body(pos=(0.15 * i, 0.1 + 0.15 * l, 0.15 * j), ang_vel=tuple(rng.normal(size=3)))
        if k % 3 == 0:
            b.add_shape_sphere(body, radius=0.06)
        elif k % 3 == 1:
            b.add_shape_box(body, hx=0.06, hy=0.04, hz=0.05)
        else:
            b.add_shape_capsule(body, radius=0.03, half_height=0.05)
    b.add_ground_plane()
    return b.finalize(device="cpu", requires_grad=requires_grad)


def stepper(model, mode: str, steps: int):
    solver = sk.RigidBodySolver(broad_phase=mode)
    states = [model.state(), model.state()]

    def run():
        for _ in range(steps):
            solver.step(model, states[0], states[1], None, DT)
            states.reverse()
    return run


def rollout(model, steps: int):
    solver = sk.RigidBodySolver(broad_phase="bvh")
    loss = sk.zeros(1, requires_grad=True, device=model.device)

    @sk.kernel
    def height(q: sk.array(dtype=sk.transform), loss: sk.array(dtype=float)):
        i = sk.tid()
        sk.atomic_add(loss, 0, sk.transform_get_translation(q[i])[1])

    def run():
        tape = sk.Tape()
        with tape:
            state = model.state()
            for _ in range(steps):
                nxt = model.state()
                solver.step(model, state, nxt, None, DT)
                state = nxt
            sk.launch(height, model.body_count, inputs=[state.body_q], outputs=[loss])
        tape.backward(loss=loss)
    return run


def settle(model, solver, dt: float, seconds: float):
    def run():
        states = [model.state(), model.state()]
        for _ in range(int(round(seconds / dt))):
            solver.step(model, states[0], states[1], None, dt)
            states.reverse()
        run.end = states[0]
    return run


def solver_table(sizes, seconds: float, rounds: int):
    contenders = {"RigidBodySolver, dt 1/2400 s": (sk.RigidBodySolver, 1.0 / 2400.0),
                  "XPBDSolver, dt 1/60 s, 10 iterations": (lambda: sk.XPBDSolver(iterations=10), 1.0 / 60.0),
                  "XPBDSolver, dt 1/120 s, 5 iterations": (lambda: sk.XPBDSolver(iterations=5), 1.0 / 120.0),
                  "XPBDSolver, dt 1/60 s, 4 substeps of 2 iterations":
                      (lambda: sk.XPBDSolver(iterations=2, substeps=4), 1.0 / 60.0)}
    table = common.Table(f"Rigid bodies: wall time per simulated second, a lattice falling and settling ({seconds} s "
                         f"simulated)", ["bodies", "solver", "wall s / simulated s", "vs penalty",
                                         "fastest centre at the end [m/s]"])
    for n in sizes:
        model = lattice(n)
        runs = {k: settle(model, make(), dt, seconds) for k, (make, dt) in contenders.items()}
        for run in runs.values():        # compile and warm up
            run()
        t = common.bench_interleaved(runs, rounds=rounds, warmup=0)
        base = t[next(iter(contenders))].median
        for k in contenders:
            speed = np.linalg.norm(runs[k].end.body_qd.numpy()[:, 3:], axis=1).max()
            table.add(n, k, f"{t[k].median / seconds:.3f}", f"{base / t[k].median:.1f}x", f"{speed:.3f}")
        common.progress(f"solvers: {n} bodies done")
    return table


def cube_stack(n: int):
    """``n`` cubes of 10 cm, one size, stacked on the ground, each turned 1 degree more and shifted
    1 mm along x from the one below."""
    b = sk.ModelBuilder()
    for k in range(n):
        t = np.radians(1.0) * k / 2
        body = b.add_body(pos=(0.001 * k, 0.05 + 0.1 * k, 0.0), rot=(0.0, np.sin(t), 0.0, np.cos(t)))
        b.add_shape_box(body, hx=0.05, hy=0.05, hz=0.05, mu=0.6)
    b.add_ground_plane()
    return b.finalize(device="cpu")


def stack_table(n: int, seconds: float):
    """How still a stack of ``n`` cubes rests, by solver settings: the top cube's drift and the
    largest tilt after ``seconds``, and the wall time per simulated second."""
    contenders = {"RigidBodySolver, dt 1/2400 s": (sk.RigidBodySolver, 1.0 / 2400.0),
                  "XPBDSolver, dt 1/60 s, 16 iterations": (lambda: sk.XPBDSolver(iterations=16), 1.0 / 60.0),
                  "XPBDSolver, dt 1/60 s, 8 substeps of 2 iterations":
                      (lambda: sk.XPBDSolver(iterations=2, substeps=8), 1.0 / 60.0),
                  "XPBDSolver, dt 1/60 s, 16 substeps of 1 iteration":
                      (lambda: sk.XPBDSolver(iterations=1, substeps=16), 1.0 / 60.0)}
    table = common.Table(f"Rigid bodies: a stack of {n} 10 cm cubes resting for {seconds} s (float32)",
                         ["solver", "wall s / simulated s", "top cube's drift [mm]", "largest tilt [deg]"])
    for name, (make, dt) in contenders.items():
        model = cube_stack(n)
        run = settle(model, make(), dt, seconds)
        t = common.bench(run, repeat=1)
        q = run.end.body_q.numpy()
        drift = np.linalg.norm(q[-1, [0, 2]] - model.body_q.numpy()[-1, [0, 2]]) * 1000.0
        tilt = np.degrees(2.0 * np.arcsin(np.minimum(np.linalg.norm(q[:, [3, 5]], axis=1), 1.0))).max()
        table.add(name, f"{t.median / seconds:.3f}", f"{drift:.2f}", f"{tilt:.2f}")
        common.progress(f"stack: {name} done")
    return table


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true")
    p.add_argument("--threads", type=int, default=0)
    p.add_argument("--markdown", default=None)
    a = p.parse_args(argv)
    if a.threads:
        sk.config.cpu_threads = a.threads
    sizes = [8, 27, 64, 216] if a.quick else [8, 27, 64, 216, 1000]
    rounds = 3 if a.quick else 7
    table = common.Table("Rigid bodies: steps per second (CPU)",
                         ["bodies", "shape pairs", "all pairs steps/s", "bvh steps/s", "bvh / all pairs",
                          "bvh fwd+bwd steps/s", "backward cost"])
    for n in sizes:
        model = lattice(n)
        steps = 20 if n <= 216 else 4
        t = common.bench_interleaved({m: stepper(model, m, steps) for m in ("all_pairs", "bvh")}, rounds=rounds)
        rate = {m: steps / t[m].median for m in t}
        k = 20
        fb = common.bench(rollout(lattice(n, requires_grad=True), k), repeat=3 if a.quick else 5)
        fb_rate = k / fb.median
        table.add(n, model.rigid_pair_count, f"{rate['all_pairs']:.0f}", f"{rate['bvh']:.0f}",
                  f"{rate['bvh'] / rate['all_pairs']:.1f}x", f"{fb_rate:.0f}", f"{rate['bvh'] / fb_rate:.1f}x")
        common.progress(f"{n} bodies done")
    solvers = solver_table([27] if a.quick else [27, 216], 0.5 if a.quick else 1.0, 1 if a.quick else 3)
    stacks = stack_table(8, 1.0 if a.quick else 5.0)
    info = common.machine_info(sk.config.cpu_threads or common.core_count())
    print(common.kv_text(info))
    for t in (table, solvers, stacks):
        print(t.text())
    if a.markdown:
        with open(a.markdown, "w") as f:
            f.write(common.kv_markdown(info) + "\n\n" + "\n\n".join(t.markdown() for t in (table, solvers, stacks))
                    + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

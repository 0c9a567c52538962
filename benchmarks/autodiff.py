"""Autodiff cost: forward vs forward+backward of a 100-step rollout of 64k particles.

Each step integrates particles under gravity, a spring to their anchor and a
ground penalty (semi-implicit Euler), writing a new state (as a differentiable
simulation must); the loss is the mean squared final position. Measured side
by side in one run for simkit and warp-lang (when installed), CPU.

A second table times a small rollout, 1000 steps of 16 particles, each step making its new state's
arrays as it goes (as the example scenes do): what the Python side of a launch, an array's creation, the
Tape's record and its backward pass cost per step, where the kernels themselves take almost nothing.

    python benchmarks/autodiff.py [--quick] [--markdown out.md]
"""
from __future__ import annotations

import argparse
import os
import sys

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # numpy's idle BLAS threads spin on the timed cores
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

import simkit as sk  # noqa: E402

STEPS, N, DT = 100, 65536, 1.0 / 240.0


@sk.kernel
def step(x: sk.array(dtype=sk.vec3), v: sk.array(dtype=sk.vec3), anchor: sk.array(dtype=sk.vec3), dt: float,
         x_out: sk.array(dtype=sk.vec3), v_out: sk.array(dtype=sk.vec3)):
    i = sk.tid()
    p = x[i]
    f = sk.vec3(0.0, -9.8, 0.0) + (anchor[i] - p) * 20.0 - v[i] * 0.5
    if p[1] < 0.0:
        f = f + sk.vec3(0.0, -p[1] * 1000.0, 0.0)
    vn = v[i] + f * dt
    x_out[i] = p + vn * dt
    v_out[i] = vn


@sk.kernel
def loss_kernel(x: sk.array(dtype=sk.vec3), loss: sk.array(dtype=float)):
    i = sk.tid()
    sk.atomic_add(loss, 0, sk.dot(x[i], x[i]) / 65536.0)


def simkit_rollout(steps, backward, n=N, fresh=False):
    """``fresh``: each run makes its states' arrays step by step (else they are made once, beforehand)."""
    rng = np.random.default_rng(0)
    x0 = sk.array(rng.uniform(-1, 1, (n, 3)), dtype=sk.vec3, requires_grad=backward)
    v0 = sk.zeros(n, dtype=sk.vec3, requires_grad=backward)
    anchor = sk.array(rng.uniform(-1, 1, (n, 3)), dtype=sk.vec3, requires_grad=backward)

    def states():
        return [sk.zeros(n, dtype=sk.vec3, requires_grad=backward) for _ in range(steps)]

    xs, vs = [x0] + states(), [v0] + states()
    loss = sk.zeros(1, requires_grad=backward)
    N = n  # noqa: N806 (the launches' size)

    def run():
        loss.zero_()
        tape = sk.Tape() if backward else None
        if tape is not None:
            tape.__enter__()
        if fresh:
            xs[1:], vs[1:] = states(), states()
        for s in range(steps):
            sk.launch(step, N, inputs=[xs[s], vs[s], anchor, DT], outputs=[xs[s + 1], vs[s + 1]])
        sk.launch(loss_kernel, N, inputs=[xs[-1]], outputs=[loss])
        if tape is not None:
            tape.__exit__(None, None, None)
            tape.backward(loss=loss)
            tape.zero()
    return run


def warp_rollout(steps, backward, n=N, fresh=False):
    import warp as wp

    wp.config.quiet = True
    wp.init()

    @wp.kernel
    def wstep(x: wp.array(dtype=wp.vec3), v: wp.array(dtype=wp.vec3), anchor: wp.array(dtype=wp.vec3), dt: float,
              x_out: wp.array(dtype=wp.vec3), v_out: wp.array(dtype=wp.vec3)):
        i = wp.tid()
        p = x[i]
        f = wp.vec3(0.0, -9.8, 0.0) + (anchor[i] - p) * 20.0 - v[i] * 0.5
        if p[1] < 0.0:
            f = f + wp.vec3(0.0, -p[1] * 1000.0, 0.0)
        vn = v[i] + f * dt
        x_out[i] = p + vn * dt
        v_out[i] = vn

    @wp.kernel
    def wloss(x: wp.array(dtype=wp.vec3), loss: wp.array(dtype=float)):
        i = wp.tid()
        wp.atomic_add(loss, 0, wp.dot(x[i], x[i]) / 65536.0)

    rng = np.random.default_rng(0)
    dev = "cpu"
    x0 = wp.array(rng.uniform(-1, 1, (n, 3)), dtype=wp.vec3, requires_grad=backward, device=dev)
    anchor = wp.array(rng.uniform(-1, 1, (n, 3)), dtype=wp.vec3, requires_grad=backward, device=dev)

    def states():
        return [wp.zeros(n, dtype=wp.vec3, requires_grad=backward, device=dev) for _ in range(steps)]

    xs, vs = [x0] + states(), [wp.zeros(n, dtype=wp.vec3, requires_grad=backward, device=dev)] + states()
    loss = wp.zeros(1, dtype=float, requires_grad=backward, device=dev)
    N = n  # noqa: N806

    def run():
        loss.zero_()
        tape = wp.Tape() if backward else None
        if tape is not None:
            tape.__enter__()
        if fresh:
            xs[1:], vs[1:] = states(), states()
        for s in range(steps):
            wp.launch(wstep, N, inputs=[xs[s], vs[s], anchor, DT], outputs=[xs[s + 1], vs[s + 1]], device=dev)
        wp.launch(wloss, N, inputs=[xs[-1]], outputs=[loss], device=dev)
        if tape is not None:
            tape.__exit__(None, None, None)
            tape.backward(loss=loss)
            tape.zero()
    return run


def small_rollout(contenders, steps, repeat) -> list:
    """Table lines: the small rollout's time per step, forward alone, recorded on a Tape, and with the backward
    pass, each step making its state's arrays (Python-bound: 16 particles)."""
    lines = [f"Small rollout, Python-bound: {steps} steps x 16 particles, each step's state made as it goes "
             "(time per step)", "", "| implementation | forward | forward, taped | taped + backward |",
             "|---|---|---|---|"]
    for name, make in contenders.items():
        common.progress(f"{name}: small rollout ({steps} steps x 16 particles)")
        plain = common.bench(make(steps, False, 16, True), repeat=repeat, warmup=1)
        both = common.bench(make(steps, True, 16, True), repeat=repeat, warmup=1)
        run = make(steps, True, 16, True)  # (recorded without the backward pass: how much of it is the record)
        taped = common.bench(_taped_only(run, name), repeat=repeat, warmup=1)
        lines.append(f"| {name} | {common.fmt_time(plain.median / steps)} | {common.fmt_time(taped.median / steps)} "
                     f"| {common.fmt_time(both.median / steps)} |")
    return lines


def _taped_only(run, name):
    """``run`` with its Tape's backward pass and zeroing made no-ops (the recording alone is timed)."""
    mod = sk if name == "simkit" else __import__("warp")
    cls = mod.Tape

    def once():
        saved = cls.backward, cls.zero
        cls.backward = cls.zero = lambda self, *a, **k: None
        try:
            run()
        finally:
            cls.backward, cls.zero = saved
    return once


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--quick", action="store_true", help="10 steps, fewer repeats")
    p.add_argument("--markdown", help="write the table as markdown to this file")
    a = p.parse_args(argv)
    steps = 10 if a.quick else STEPS
    repeat = 2 if a.quick else 5
    rows = []
    contenders = {"simkit": simkit_rollout}
    try:
        import warp  # noqa: F401

        contenders["warp-lang"] = warp_rollout
    except ImportError:
        common.progress("warp-lang not installed: simkit only")
    results = {}
    for name, make in contenders.items():
        common.progress(f"{name}: forward ({steps} steps x {N} particles)")
        fwd = common.bench(make(steps, False), repeat=repeat, warmup=1)
        common.progress(f"{name}: forward + backward")
        both = common.bench(make(steps, True), repeat=repeat, warmup=1)
        results[name] = (fwd.median, both.median)
        rows.append((name, fwd.median, both.median, (both.median - fwd.median) / fwd.median))
    lines = [f"Autodiff rollout: {steps} steps x {N} particles (vec3, float32), CPU, "
             f"{common.core_count()} threads", "",
             "| implementation | forward | forward + backward | backward / forward |", "|---|---|---|---|"]
    for name, f, b, r in rows:
        lines.append(f"| {name} | {common.fmt_time(f)} | {common.fmt_time(b)} | {r:.2f}x |")
    if "warp-lang" in results:
        s, w = results["simkit"], results["warp-lang"]
        lines.append("")
        lines.append(f"warp/simkit: forward {w[0] / s[0]:.2f}x, forward+backward {w[1] / s[1]:.2f}x "
                     "(higher: simkit faster)")
    lines += ["", *small_rollout(contenders, 100 if a.quick else 1000, repeat)]
    text = "\n".join(lines)
    print("\n" + common.kv_text(common.machine_info(common.core_count())))
    print(text)
    if a.markdown:
        with open(a.markdown, "w") as f:
            f.write(text + "\n")


if __name__ == "__main__":
    main()

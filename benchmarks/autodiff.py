"""Autodiff cost: forward vs forward+backward of a 100-step rollout of 64k particles.

Each step integrates particles under gravity, a spring to their anchor and a
ground penalty (semi-implicit Euler), writing a new state (as a differentiable
simulation must); the loss is the mean squared final position. Measured side
by side in one run for simkit and warp-lang (when installed), CPU:

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


def simkit_rollout(steps, backward):
    rng = np.random.default_rng(0)
    x0 = sk.array(rng.uniform(-1, 1, (N, 3)), dtype=sk.vec3, requires_grad=backward)
    v0 = sk.zeros(N, dtype=sk.vec3, requires_grad=backward)
    anchor = sk.array(rng.uniform(-1, 1, (N, 3)), dtype=sk.vec3, requires_grad=backward)
    xs = [x0] + [sk.zeros(N, dtype=sk.vec3, requires_grad=backward) for _ in range(steps)]
    vs = [v0] + [sk.zeros(N, dtype=sk.vec3, requires_grad=backward) for _ in range(steps)]
    loss = sk.zeros(1, requires_grad=backward)

    def run():
        loss.zero_()
        tape = sk.Tape() if backward else None
        if tape is not None:
            tape.__enter__()
        for s in range(steps):
            sk.launch(step, N, inputs=[xs[s], vs[s], anchor, DT], outputs=[xs[s + 1], vs[s + 1]])
        sk.launch(loss_kernel, N, inputs=[xs[-1]], outputs=[loss])
        if tape is not None:
            tape.__exit__(None, None, None)
            tape.backward(loss=loss)
            tape.zero()
    return run


def warp_rollout(steps, backward):
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
    x0 = wp.array(rng.uniform(-1, 1, (N, 3)), dtype=wp.vec3, requires_grad=backward, device=dev)
    anchor = wp.array(rng.uniform(-1, 1, (N, 3)), dtype=wp.vec3, requires_grad=backward, device=dev)
    xs = [x0] + [wp.zeros(N, dtype=wp.vec3, requires_grad=backward, device=dev) for _ in range(steps)]
    vs = [wp.zeros(N, dtype=wp.vec3, requires_grad=backward, device=dev) for _ in range(steps + 1)]
    loss = wp.zeros(1, dtype=float, requires_grad=backward, device=dev)

    def run():
        loss.zero_()
        tape = wp.Tape() if backward else None
        if tape is not None:
            tape.__enter__()
        for s in range(steps):
            wp.launch(wstep, N, inputs=[xs[s], vs[s], anchor, DT], outputs=[xs[s + 1], vs[s + 1]], device=dev)
        wp.launch(wloss, N, inputs=[xs[-1]], outputs=[loss], device=dev)
        if tape is not None:
            tape.__exit__(None, None, None)
            tape.backward(loss=loss)
            tape.zero()
    return run


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
    text = "\n".join(lines)
    print("\n" + common.kv_text(common.machine_info(common.core_count())))
    print(text)
    if a.markdown:
        with open(a.markdown, "w") as f:
            f.write(text + "\n")


if __name__ == "__main__":
    main()

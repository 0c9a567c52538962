"""Adjoint cost of sum loops beyond a kernel's top level: a nest (a loop over periodic images around
a hash-grid neighbour loop) and a neighbour loop inside a @func.

Side by side in one run, the same source (``benchmarks/adjoint_loops_kernels.py``) compiled by:
simkit as it is (such sum loops run once in the adjoint, saving nothing), simkit with
``config.adjoint_shortcuts = False`` (every loop on the per-iteration stack, as before session 7),
and warp-lang when installed. Every contender runs on one CPU thread (warp-lang's CPU backend has
one). Before timing, the gradients are compared. Each sample: record one launch on a Tape, then
``backward()``; the forward launch alone is timed too.

    python benchmarks/adjoint_loops.py [--quick] [--n 32768] [--markdown out.md]
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import sys
import tempfile

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

import simkit as sk  # noqa: E402

try:
    import warp as wp
except ImportError:  # pragma: no cover
    wp = None

HERE = os.path.dirname(os.path.abspath(__file__))
SHIFTS = np.array([[0, 0, 0], [1, 0, 0], [-1, 0, 0], [0, 1, 0], [0, -1, 0], [0, 0, 1], [0, 0, -1]], np.float32)


def load(backend, name: str):
    """Import adjoint_loops_kernels.py with ``wp`` bound to ``backend``."""
    spec = importlib.util.spec_from_file_location(name, os.path.join(HERE, "adjoint_loops_kernels.py"))
    mod = importlib.util.module_from_spec(spec)
    mod.wp = backend
    spec.loader.exec_module(mod)
    return mod


class Case:
    """Both kernels of one contender over the same points (unit box, radius ``r``)."""

    def __init__(self, lib, kernels, pts, r, shortcuts=True):
        self.L, self.K, self.r, self.n, self.shortcuts = lib, kernels, r, len(pts), shortcuts
        self.x = lib.array(pts, dtype=lib.vec3, device="cpu", requires_grad=True)
        self.shifts = lib.array(SHIFTS, dtype=lib.vec3, device="cpu")
        self.grid = lib.HashGrid(32, 32, 32, device="cpu")
        self.grid.build(self.x, r)
        self.e = lib.zeros(1, dtype=float, device="cpu", requires_grad=True)
        self.f = lib.zeros(self.n, dtype=lib.vec3, device="cpu", requires_grad=True)
        # random weights of the forces (a sum of all pair forces would be zero)
        w = np.random.default_rng(1).normal(size=(self.n, 3)).astype(np.float32)
        self.seed = lib.array(w, dtype=lib.vec3, device="cpu")

    def launch(self, which):
        L, K = self.L, self.K
        if which == "images":
            L.launch(K.image_energy, self.n, inputs=[self.grid.id, self.x, self.shifts, len(SHIFTS), self.r],
                     outputs=[self.e], device="cpu")
        else:
            L.launch(K.func_forces, self.n, inputs=[self.grid.id, self.x, self.r], outputs=[self.f], device="cpu")

    def forward(self, which):
        return lambda: self.launch(which)

    def forward_backward(self, which):
        def run():
            self.x.grad.zero_()
            tape = self.L.Tape()
            with tape:
                self.launch(which)
            if which == "images":
                tape.backward(loss=self.e)
            else:
                tape.backward(grads={self.f: self.seed})
        return run

    def gradient(self, which):
        if self.shortcuts is False:
            sk.config.adjoint_shortcuts = False  # this module's adjoints are compiled now
        try:
            self.forward_backward(which)()
        finally:
            sk.config.adjoint_shortcuts = True
        return self.x.grad.numpy().copy()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="fewer points and rounds")
    ap.add_argument("--n", type=int, help="points in the unit box (default 32768; 4096 with --quick)")
    ap.add_argument("--no-warp", action="store_true", help="skip warp-lang")
    ap.add_argument("--markdown", help="also write the table as markdown here")
    args = ap.parse_args(argv)
    n = args.n or (4096 if args.quick else 32768)
    rounds = 3 if args.quick else 9
    r = float(0.9 * (20.0 / n) ** (1.0 / 3.0))  # about 15 neighbours within r
    pts = np.random.default_rng(0).random((n, 3)).astype(np.float32)
    sk.config.cpu_threads = 1
    info = common.machine_info(1)
    print(common.kv_text(info) + "\n")

    cases = {"simkit": Case(sk, load(sk, "adjoint_loops_simkit"), pts, r),
             "simkit, stack": Case(sk, load(sk, "adjoint_loops_simkit_stack"), pts, r, shortcuts=False)}
    if wp is not None and not args.no_warp:
        wp.config.quiet = True
        wp.config.kernel_cache_dir = os.path.join(tempfile.mkdtemp(prefix="sk_adjl_"), "warp_cache")
        wp.init()
        cases["warp-lang"] = Case(wp, load(wp, "adjoint_loops_warp"), pts, r)
    table = common.Table(f"Adjoints of nested and in-func sum loops, {n} points, ~15 neighbours, 1 thread",
                         ["kernel", "implementation", "forward (median)", "fwd+bwd (median)", "backward cost",
                          "fwd+bwd vs simkit", "max gradient difference"])
    worst = 0.0
    for which, label in (("images", f"sum over {len(SHIFTS)} images of a neighbour sum"),
                         ("func", "neighbour sum in a @func")):
        common.progress(f"{which}: compiling and comparing gradients")
        grads = {k: c.gradient(which) for k, c in cases.items()}
        scale = np.abs(grads["simkit"]).max()
        fwd = common.bench_interleaved({k: c.forward(which) for k, c in cases.items()}, rounds=rounds)
        fb = common.bench_interleaved({k: c.forward_backward(which) for k, c in cases.items()}, rounds=rounds)
        for k in cases:
            diff = np.abs(grads[k] - grads["simkit"]).max() / scale
            worst = max(worst, diff)
            table.add(label, k, common.fmt_time(fwd[k].median), common.fmt_time(fb[k].median),
                      f"{fb[k].median / fwd[k].median:.1f}x", f"{fb[k].median / fb['simkit'].median:.2f}x",
                      f"{diff:.1e}")
    table.note = (f"Interleaved samples ({rounds} rounds). 'simkit, stack': the same source with "
                  f"config.adjoint_shortcuts = False. Gradient differences relative to simkit's largest entry.")
    print(table.text())
    if args.markdown:
        with open(args.markdown, "w") as fh:
            fh.write(common.kv_markdown(info) + "\n\n" + table.markdown() + "\n")
    if not worst < 1e-5:
        print(f"FAILED: the gradients disagree by {worst:.1e} of the largest entry", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

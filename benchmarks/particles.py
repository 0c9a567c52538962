"""Particle simulation benchmark: steps per second, forward and forward + backward, simkit vs warp-lang.

    python benchmarks/particles.py [--quick] [--threads N] [--no-warp] [--markdown out.md] [--json out.json]

Two scenes, each measured three ways:

1. **cloth**: a 64 x 64-cell cloth (4225 particles) draped over a sphere mesh (5120-triangle
   icosphere, ``scenes/cloth_on_sphere.py``) above the ground. The cloth starts already wrapped
   around the sphere (an equidistant projection of the flat grid onto it, the rest hanging
   straight down), so every step does the contact work of the resting phase.
   - simkit ``XPBDSolver`` (10 iterations) on the scene's model: what ``simkit run
     cloth_on_sphere`` runs (membrane triangles, bending springs, mesh and ground contact);
   - simkit ``SemiImplicitEulerSolver`` on the same model;
   - the same-source scene (``benchmarks/particles_kernels.py``): a mass-spring cloth
     (structural, shear, bending springs) with sphere-mesh and ground penalty contact, semi-implicit
     Euler, compiled by simkit and by warp-lang from one source.
2. **particles**: 64000 particles (a 40^3 block, radius 1 cm, neighbours overlapping by 1%) on the
   ground, particle-particle contact through a 128^3 HashGrid rebuilt every step.
   - simkit ``SemiImplicitEulerSolver`` (``ModelBuilder.add_particle_grid``);
   - the same-source scene, simkit and warp-lang.

Forward: ``steps`` steps ping-ponging two states (median of rounds). Forward + backward: a
rollout of ``k`` steps recorded on a Tape (every step writes new arrays), a scalar loss of the
final positions, ``backward()``; steps/s = k / (forward + backward time). For the HashGrid scenes,
the backward pass rebuilds the grid from the recorded positions in both libraries (simkit's Tape
records ``HashGrid.build`` itself; for warp-lang, ``Tape.record_func``). simkit runs on all cores and on one; warp-lang's CPU backend runs kernels on one thread.
OpenMP idle threads are set to sleep (``OMP_WAIT_POLICY=PASSIVE``, as ``simkit`` the command
does) unless the environment says otherwise: spinning threads starve the Python thread that
issues the launches on a small, busy machine.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import sys
import tempfile
import time

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # before any kernel library loads libgomp

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # numpy's idle BLAS threads spin on the timed cores
import numpy as np  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))
import common  # noqa: E402

import simkit as sk  # noqa: E402
from scenes import cloth_on_sphere  # noqa: E402

try:
    import warp as wp
except Exception:  # warp-lang is optional
    wp = None


def load(backend, name: str):
    """Import benchmarks/particles_kernels.py with ``wp`` bound to ``backend`` (simkit or warp)."""
    spec = importlib.util.spec_from_file_location(name, os.path.join(HERE, "particles_kernels.py"))
    mod = importlib.util.module_from_spec(spec)
    mod.wp = backend
    spec.loader.exec_module(mod)
    return mod


# ----------------------------------------------------------------------------- scene data (numpy)

def draped_cloth(size: int) -> tuple:
    """The cloth grid of cloth_on_sphere (same particle order) wrapped onto the sphere: returns
    (rest positions (n, 3) flat, draped positions (n, 3))."""
    width, r = cloth_on_sphere.CLOTH_WIDTH, cloth_on_sphere.SPHERE_RADIUS + cloth_on_sphere.PARTICLE_RADIUS
    center = np.asarray(cloth_on_sphere.SPHERE_CENTER)
    cell = width / size
    ij = np.stack(np.meshgrid(np.arange(size + 1), np.arange(size + 1)), axis=-1).reshape(-1, 2)  # (x, y) rows
    u = ij[:, 0] * cell - width / 2          # grid x -> world x
    v = -(ij[:, 1] * cell - width / 2)       # grid y -> world -z (the scene's rotation)
    flat = np.stack([u, np.full_like(u, cloth_on_sphere.CLOTH_HEIGHT), v], axis=1)
    rho = np.hypot(u, v)
    phi = np.arctan2(v, u)
    theta = np.minimum(rho / r, np.pi / 2)
    hang = np.maximum(rho - r * np.pi / 2, 0.0)
    draped = center + np.stack([r * np.sin(theta) * np.cos(phi), r * np.cos(theta) - hang,
                                r * np.sin(theta) * np.sin(phi)], axis=1)
    draped[:, 1] = np.maximum(draped[:, 1], cloth_on_sphere.PARTICLE_RADIUS)
    return flat, draped


def cloth_springs(size: int, flat: np.ndarray) -> tuple:
    """Structural, shear and bending springs of a (size+1)^2 grid: (indices (2s,), rest lengths (s,))."""
    n = size + 1
    idx = np.arange(n * n).reshape(n, n)  # [y, x]
    pairs = [(idx[:, :-1], idx[:, 1:]), (idx[:-1, :], idx[1:, :]), (idx[:-1, :-1], idx[1:, 1:]),
             (idx[:-1, 1:], idx[1:, :-1]), (idx[:, :-2], idx[:, 2:]), (idx[:-2, :], idx[2:, :])]
    a = np.concatenate([p[0].ravel() for p in pairs])
    b = np.concatenate([p[1].ravel() for p in pairs])
    rest = np.linalg.norm(flat[a] - flat[b], axis=1)
    return np.stack([a, b], axis=1).reshape(-1).astype(np.int32), rest.astype(np.float32)


def particle_block(dim: int, radius: float) -> np.ndarray:
    spacing = 2.0 * radius * 0.99
    g = np.stack(np.meshgrid(*[np.arange(dim)] * 3, indexing="ij"), axis=-1).reshape(-1, 3) * spacing
    return (g + np.array([-dim * spacing / 2, radius, -dim * spacing / 2])).astype(np.float32)


# ----------------------------------------------------------------------------- same-source scenes

class SameSource:
    """One scene built from particles_kernels.py with either library (``lib`` = simkit or warp)."""

    def __init__(self, lib, kernels, scene: str, size: int):
        self.lib, self.K, self.scene = lib, kernels, scene
        L, dev = lib, "cpu"
        self.dev = dev
        if scene == "cloth":
            flat, draped = draped_cloth(size)
            springs, rest = cloth_springs(size, flat)
            pts, tris = cloth_on_sphere.sphere_mesh()
            self.mesh = L.Mesh(L.array(pts + np.asarray(cloth_on_sphere.SPHERE_CENTER, np.float32), dtype=L.vec3,
                                       device=dev), L.array(tris, dtype=L.int32, device=dev))
            self.springs = L.array(springs, dtype=L.int32, device=dev)
            self.rest = L.array(rest, dtype=L.float32, device=dev)
            self.q0 = draped.astype(np.float32)
            self.mass = 1.0 / len(draped)
            self.dt = 2.0e-4
        else:
            self.q0 = particle_block(size, 0.01)
            self.grid = L.HashGrid(128, 128, 128, device=dev)
            self.mass = 1.0e-3
            self.dt = 5.0e-4
        self.n = len(self.q0)
        self.inv_mass = L.array(np.full(self.n, 1.0 / self.mass, np.float32), dtype=L.float32, device=dev)

    def state(self, grad: bool):
        L = self.lib
        return (L.array(self.q0, dtype=L.vec3, device=self.dev, requires_grad=grad),
                L.zeros(self.n, dtype=L.vec3, device=self.dev, requires_grad=grad))

    def step(self, x, v, x_out, v_out, f, tape=None):
        L, K = self.lib, self.K
        if self.scene == "cloth":
            L.launch(K.eval_springs, len(self.rest), inputs=[x, v, self.springs, self.rest, 20.0, 0.01], outputs=[f],
                     device=self.dev)
            L.launch(K.eval_mesh_ground, self.n, inputs=[x, v, self.mesh.id, 0.01, 1.0e2, 0.05, 0.05, 0.5],
                     outputs=[f], device=self.dev)
        else:
            self.grid.build(x, 0.02)
            L.launch(K.eval_particle_contacts, self.n, inputs=[self.grid.id, x, v, 0.01, 1.0e2, 0.1, 0.1, 0.5],
                     outputs=[f], device=self.dev)
            if tape is not None and L.__name__ != "simkit":  # (simkit's Tape restores the grid itself)
                grid = self.grid
                tape.record_func(lambda: grid.build(x, 0.02), arrays=[x])
        L.launch(K.integrate, self.n, inputs=[x, v, f, self.inv_mass, L.vec3(0.0, -9.81, 0.0), self.dt],
                 outputs=[x_out, v_out], device=self.dev)

    def forward(self, steps: int):
        """A function running ``steps`` forward steps (ping-pong states, forces zeroed per step)."""
        L = self.lib
        a, b = self.state(False), self.state(False)
        f = L.zeros(self.n, dtype=L.vec3, device=self.dev)

        def run():
            nonlocal a, b
            for _ in range(steps):
                f.zero_()
                self.step(a[0], a[1], b[0], b[1], f)
                a, b = b, a
        return run

    def forward_backward(self, steps: int):
        L, K = self.lib, self.K

        def run():
            x, v = self.state(True)
            x_start = x
            loss = L.zeros(1, dtype=L.float32, device=self.dev, requires_grad=True)
            tape = L.Tape()
            with tape:
                for _ in range(steps):
                    f = L.zeros(self.n, dtype=L.vec3, device=self.dev, requires_grad=True)
                    xo = L.zeros(self.n, dtype=L.vec3, device=self.dev, requires_grad=True)
                    vo = L.zeros(self.n, dtype=L.vec3, device=self.dev, requires_grad=True)
                    self.step(x, v, xo, vo, f, tape)
                    x, v = xo, vo
                L.launch(K.weighted_sum, self.n, inputs=[x], outputs=[loss], device=self.dev)
            tape.backward(loss=loss)
            return x_start.grad.numpy()
        return run

    def final_positions(self, steps: int) -> np.ndarray:
        a = self.state(False)
        b = self.state(False)
        f = self.lib.zeros(self.n, dtype=self.lib.vec3, device=self.dev)
        for _ in range(steps):
            f.zero_()
            self.step(a[0], a[1], b[0], b[1], f)
            a, b = b, a
        return a[0].numpy()


# ----------------------------------------------------------------------------- simkit solvers

class SimkitSolverScene:
    """simkit's own solvers on a ModelBuilder model (the cloth scene, or a particle block)."""

    def __init__(self, scene: str, size: int, solver: str):
        self.scene, self.solver_name = scene, solver
        if scene == "cloth":
            self.model = cloth_on_sphere.build(size)[0]
            self.q0 = draped_cloth(size)[1].astype(np.float32)
            self.dt = 1.0 / 120.0 if solver == "xpbd" else 2.0e-4
        else:
            b = sk.ModelBuilder()
            b.add_particle_grid(pos=(0.0, 0.0, 0.0), dim_x=size, dim_y=size, dim_z=size, cell_x=0.0198,
                                cell_y=0.0198, cell_z=0.0198, mass=1.0e-3, radius_mean=0.01)
            b.particle_ke, b.particle_kd, b.particle_kf, b.particle_mu = 1.0e2, 0.1, 0.1, 0.5
            b.add_ground_plane(ke=1.0e2, kd=0.1, kf=0.1, mu=0.5)
            self.model = b.finalize(device="cpu")
            self.q0 = particle_block(size, 0.01)
            self.dt = 5.0e-4
        self.model.particle_q.assign(self.q0)

    def make_solver(self):
        return sk.XPBDSolver(iterations=10) if self.solver_name == "xpbd" else sk.SemiImplicitEulerSolver()

    def forward(self, steps: int):
        self.model.requires_grad = False
        solver = self.make_solver()
        a, b = self.model.state(), self.model.state()

        def run():
            nonlocal a, b
            for _ in range(steps):
                solver.step(self.model, a, b, None, self.dt)
                a, b = b, a
        return run

    def forward_backward(self, steps: int):
        solver = self.make_solver()
        m = self.model

        def run():
            m.requires_grad = True
            s = m.state()
            loss = sk.zeros(1, dtype=float, requires_grad=True, device=m.device)
            tape = sk.Tape()
            with tape:
                for _ in range(steps):
                    nxt = m.state()
                    solver.step(m, s, nxt, None, self.dt)
                    s = nxt
                sk.launch(SIMKIT_KERNELS.weighted_sum, m.particle_count, inputs=[s.particle_q], outputs=[loss])
            tape.backward(loss=loss)
            m.requires_grad = False
        return run


SIMKIT_KERNELS = None


# ----------------------------------------------------------------------------- timing

def time_steps(fn, steps: int, rounds: int) -> tuple:
    """(median, best) steps per second of ``fn`` (which runs ``steps`` steps), after one warm-up call."""
    fn()
    samples = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - t0)
    return steps / statistics.median(samples), steps / min(samples)


def fmt_rate(r: float) -> str:
    return f"{r:,.0f}" if r >= 100 else f"{r:.1f}"


def main(argv=None) -> int:
    global SIMKIT_KERNELS
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="fewer steps and rounds")
    ap.add_argument("--threads", type=int, default=0, help="simkit CPU threads (default: all cores)")
    ap.add_argument("--no-warp", action="store_true", help="skip warp-lang")
    ap.add_argument("--cloth-size", type=int, default=64, help="cloth cells per side")
    ap.add_argument("--block", type=int, default=40, help="particles per side of the block (40: 64000)")
    ap.add_argument("--markdown", help="also write the tables as markdown here")
    ap.add_argument("--json", help="also write the results as JSON here")
    args = ap.parse_args(argv)
    threads = args.threads or common.core_count()
    rounds = 3 if args.quick else 7
    SIMKIT_KERNELS = load(sk, "particles_kernels_simkit")
    warp_k = None
    if wp is not None and not args.no_warp:
        try:
            wp.config.quiet = True
            wp.config.kernel_cache_dir = os.path.join(tempfile.mkdtemp(prefix="sk_particles_"), "warp_cache")
            wp.init()
            warp_k = load(wp, "particles_kernels_warp")
        except Exception as e:  # pragma: no cover
            common.progress(f"warp-lang unavailable: {e}")
    info = common.machine_info(threads) + [("OMP_WAIT_POLICY", os.environ.get("OMP_WAIT_POLICY", ""))]
    print(common.kv_text(info) + "\n")

    plans = {  # scene: (size, forward steps, backward rollout steps)
        "cloth": (args.cloth_size, 10 if args.quick else 20, 5 if args.quick else 10),
        "particles": (args.block, 5 if args.quick else 10, 3 if args.quick else 5),
    }
    n_cloth = (args.cloth_size + 1) ** 2
    titles = {"cloth": f"Cloth {args.cloth_size}x{args.cloth_size} on a sphere mesh ({n_cloth} particles)",
              "particles": f"{args.block ** 3} particles with particle and ground contact"}
    tables, results, checks = [], [], []
    for scene, (size, fsteps, bsteps) in plans.items():
        table = common.Table(titles[scene], ["implementation", "threads", "forward steps/s (median)", "best",
                                             "fwd+bwd steps/s (median)", "best", "backward cost"])
        contenders = []  # (label, threads, forward fn, fwd+bwd fn)
        if scene == "cloth":
            for solver in ("xpbd", "euler"):
                s = SimkitSolverScene(scene, size, solver)
                name = "XPBDSolver (10 iterations)" if solver == "xpbd" else "SemiImplicitEulerSolver"
                contenders.append((f"simkit {name}", threads, s.forward(fsteps), s.forward_backward(bsteps)))
        else:
            s = SimkitSolverScene(scene, size, "euler")
            contenders.append(("simkit SemiImplicitEulerSolver", threads, s.forward(fsteps),
                               s.forward_backward(bsteps)))
        sk_same = SameSource(sk, SIMKIT_KERNELS, scene, size)
        contenders.append(("simkit, same-source kernels", threads, sk_same.forward(fsteps),
                           sk_same.forward_backward(bsteps)))
        if threads > 1:
            contenders.append(("simkit, same-source kernels", 1, sk_same.forward(fsteps),
                               sk_same.forward_backward(bsteps)))
        if warp_k is not None:
            wp_same = SameSource(wp, warp_k, scene, size)
            a, b = sk_same.final_positions(5), wp_same.final_positions(5)
            err = float(np.abs(a - b).max())
            ga, gb = sk_same.forward_backward(3)(), wp_same.forward_backward(3)()
            gerr = float(np.abs(ga - gb).max() / max(np.abs(gb).max(), 1e-30))
            common.progress(f"{scene}: simkit vs warp-lang after 5 steps: max |dx| = {err:.1e} m; gradients of a "
                            f"3-step rollout: max relative difference {gerr:.1e}")
            if not (err < 1.0e-4 and gerr < 1.0e-3):
                common.progress(f"{scene}: WARNING: simkit and warp-lang disagree")
            checks.append(f"{scene}: positions after 5 steps agree to {err:.1e} m, gradients of a 3-step rollout "
                          f"to {gerr:.1e} (relative)")
            contenders.append(("warp-lang, same-source kernels", 1, wp_same.forward(fsteps),
                               wp_same.forward_backward(bsteps)))
        for label, nthreads, fwd, fb in contenders:
            common.progress(f"{scene}: {label}, {nthreads} thread(s)")
            sk.config.cpu_threads = nthreads
            f_med, f_best = time_steps(fwd, fsteps, rounds)
            b_med, b_best = time_steps(fb, bsteps, max(2, rounds // 2))
            table.add(label, nthreads, fmt_rate(f_med), fmt_rate(f_best), fmt_rate(b_med), fmt_rate(b_best),
                      f"{f_med / b_med:.1f}x")
            results.append({"scene": scene, "implementation": label, "threads": nthreads, "forward_median": f_med,
                            "forward_best": f_best, "fwd_bwd_median": b_med, "fwd_bwd_best": b_best})
        sk.config.cpu_threads = threads
        table.note = (f"Forward: {fsteps} steps per sample, {rounds} samples. Fwd+bwd: a taped rollout of {bsteps} "
                      f"steps + backward per sample. Backward cost = forward rate / fwd+bwd rate.")
        tables.append(table)
        print(table.text() + "\n", flush=True)
    if checks:
        print("simkit vs warp-lang (same-source kernels):\n" + "\n".join("  " + c for c in checks))
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write("### Machine\n\n" + common.kv_markdown(info) + "\n\n")
            f.write("\n\n".join(t.markdown() for t in tables) + "\n")
            if checks:
                f.write("\nChecked before timing (simkit vs warp-lang, same-source kernels):\n\n"
                        + "\n".join(f"- {c}" for c in checks) + "\n")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"machine": dict(info), "results": results}, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())

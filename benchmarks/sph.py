"""SPH benchmark: steps per second of a dam break, forward and forward + backward, simkit vs warp-lang vs numpy.

    python benchmarks/sph.py [--quick] [--threads N] [--no-warp] [--no-numpy] [--block N]
                             [--markdown out.md] [--json out.json]

The scene: a ``block``^3 column of water (default 20^3 = 8000 particles, spacing 2 cm, 1000 kg/m^3,
``ModelBuilder.add_fluid_block``, jittered by up to 10% of the spacing) in the corner of a tank
twice as wide as the column, 1.5x as high and as deep (``bounds`` = (0, 0, 0)-(0.8, 0.6, 0.404) m),
simkit's ``SPHSolver`` with its default parameters (h = 2 spacings = 4 cm, c = 20 m/s, mu = 8 Pa s),
``dt = solver.max_time_step(model)`` (0.8 ms). Every timed sample restarts from the still column,
so every implementation pays for the same steps: the first milliseconds of the collapse, with 26
neighbours per particle and 35% of the particles within h of a wall (they also see the mirror
images of their neighbours). Measured:

- simkit ``SPHSolver`` (all cores, one thread);
- the same-source step (``benchmarks/sph_kernels.py``: the solver's four kernels for float32 vec3,
  HashGrid of 128^3 cells rebuilt every step), compiled by simkit (all cores, one thread) and by
  warp-lang (CPU: one thread);
- numpy: the same step vectorized over neighbour pairs (scipy's ``cKDTree.query_pairs`` when
  scipy is installed, else a sorted-cell search in numpy), mirror images included; forward only.

Forward: ``steps`` steps per sample, two states ping-ponged. Forward + backward: a rollout of
``k`` steps recorded on a Tape (every step writes new arrays), a scalar loss of the final
positions, ``backward()``; steps/s = k / (forward + backward time); the HashGrid is rebuilt from
the recorded positions during the backward pass (simkit's Tape records ``HashGrid.build`` itself;
for warp-lang, ``Tape.record_func``). Samples of all the
contenders are interleaved (``common.bench_interleaved``). Before timing, the implementations are
checked against each other (densities, positions after 5 steps, gradients of a 3-step rollout).
A second table splits the same-source forward step into its launches, and times the density and
force kernels without mirror walls (an empty plane list: the walls' share of the step).
OpenMP idle threads sleep (``OMP_WAIT_POLICY=PASSIVE``) unless the environment says otherwise.
"""
from __future__ import annotations

import argparse
import importlib.util
import itertools
import json
import math
import os
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

try:
    import warp as wp
except Exception:  # warp-lang is optional
    wp = None

try:
    from scipy.spatial import cKDTree
except Exception:  # scipy is optional: numpy's own sorted-cell pair search instead
    cKDTree = None

SPACING = 0.02  # [m]
# The column is jittered: on a perfect lattice, pairs sit exactly at r = h and particles exactly one
# radius from the walls, on kinks of the viscosity kernel and the penalty contacts; float32 round-off
# (which differs between libraries: neighbour order) then picks different one-sided derivatives there.
JITTER = 0.1  # [spacings]
TOLERANCES = {"density": 1.0e-5, "positions": 1.0e-6, "gradient": 1.0e-3, "numpy positions": 1.0e-5}


def load(backend, name: str):
    """Import benchmarks/sph_kernels.py with ``wp`` bound to ``backend`` (simkit or warp)."""
    spec = importlib.util.spec_from_file_location(name, os.path.join(HERE, "sph_kernels.py"))
    mod = importlib.util.module_from_spec(spec)
    mod.wp = backend
    spec.loader.exec_module(mod)
    return mod


# ----------------------------------------------------------------------------- the scene

class Scene:
    """The dam break's model, solver and every parameter the same-source and numpy steps need,
    taken from the model and the solver (so all implementations simulate the same thing)."""

    def __init__(self, block: int):
        jitter = JITTER * SPACING  # no particle starts closer to a wall than its radius
        self.tank = (2 * block * SPACING, 1.5 * block * SPACING, block * SPACING + 2 * jitter)
        b = sk.ModelBuilder()  # gravity -9.81 m/s^2 along y, no ground plane: the tank's floor is a wall
        b.add_fluid_block(pos=(SPACING / 2 + jitter,) * 3, dim_x=block, dim_y=block, dim_z=block, spacing=SPACING,
                          jitter=jitter)
        self.model = b.finalize(device="cpu")
        self.solver = sk.SPHSolver(bounds=((0.0, 0.0, 0.0), self.tank))
        m, s = self.model, self.solver
        self.dt = s.max_time_step(m)
        self.n = m.particle_count
        self.q0 = m.particle_q.numpy().astype(np.float32)
        self.mass = m.particle_mass.numpy()
        self.inv_mass = m.particle_inv_mass.numpy()
        self.radius = m.particle_radius.numpy()
        self.h = s.support(m)
        self.poly6, self.spiky = 315.0 / (64.0 * math.pi * self.h ** 9), 45.0 / (math.pi * self.h ** 6)
        self.rest_density, self.stiffness, self.viscosity = s.rest_density, s.stiffness, s.viscosity
        self.walls = (s.wall_ke, s.wall_kd, s.wall_kf, s.wall_mu)
        plane_n, plane_d = s.planes(m)
        self.plane_n, self.plane_d = plane_n.numpy(), plane_d.numpy()
        self.gravity = tuple(float(g) for g in m.gravity)
        self.damping, self.max_velocity = float(m.particle_damping), float(m.particle_max_velocity)
        self.grid_dims = (128, 128, 128)  # as the model's particle_grid (ModelBuilder.grid_dims)


# ----------------------------------------------------------------------------- same-source step

class SameSource:
    """The SPH step of sph_kernels.py with either library (``lib`` = simkit or warp)."""

    def __init__(self, lib, kernels, scene: Scene):
        L, S, dev = lib, scene, "cpu"
        self.lib, self.K, self.S, self.dev = lib, kernels, scene, dev
        self.n = S.n
        self.grid = L.HashGrid(*S.grid_dims, device=dev)
        f32 = L.float32
        self.mass = L.array(S.mass.astype(np.float32), dtype=f32, device=dev)
        self.inv_mass = L.array(S.inv_mass.astype(np.float32), dtype=f32, device=dev)
        self.radius = L.array(S.radius.astype(np.float32), dtype=f32, device=dev)
        self.plane_n = L.array(S.plane_n.astype(np.float32).reshape(-1, 3), dtype=L.vec3, device=dev)
        self.plane_d = L.array(S.plane_d.astype(np.float32), dtype=f32, device=dev)
        self.no_planes = (L.zeros(0, dtype=L.vec3, device=dev), L.zeros(0, dtype=f32, device=dev))
        self.gravity = L.vec3(*S.gravity)
        self._unwalled = None  # (rho, f) outputs of the unwalled kernels timed by breakdown()
        self._keep = []  # the HashGrids of adjoints()

    def state(self, grad: bool):
        L = self.lib
        return (L.array(self.S.q0, dtype=L.vec3, device=self.dev, requires_grad=grad),
                L.zeros(self.n, dtype=L.vec3, device=self.dev, requires_grad=grad))

    def work(self, grad: bool):
        """(rho, p, f) arrays of one step."""
        L = self.lib
        return (L.zeros(self.n, dtype=L.float32, device=self.dev, requires_grad=grad),
                L.zeros(self.n, dtype=L.float32, device=self.dev, requires_grad=grad),
                L.zeros(self.n, dtype=L.vec3, device=self.dev, requires_grad=grad))

    def step(self, x, v, x_out, v_out, rho, p, f, tape=None, clock=None):
        """One step; ``clock`` (a dict) accumulates the seconds of each launch."""
        L, K, S, dev, n = self.lib, self.K, self.S, self.dev, self.n
        h = S.h
        phases = [
            ("grid build", lambda: self.grid.build(x, h)),
            ("density", lambda: L.launch(K.eval_density, n, inputs=[self.grid.id, x, self.mass, self.plane_n,
                                                                    self.plane_d, h, S.poly6], outputs=[rho],
                                         device=dev)),
            ("pressure", lambda: L.launch(K.eval_pressure, n, inputs=[rho, S.rest_density, S.stiffness], outputs=[p],
                                          device=dev)),
            ("forces", lambda: L.launch(K.eval_forces, n, inputs=[self.grid.id, x, v, self.mass, self.inv_mass,
                                                                  self.radius, rho, p, self.plane_n, self.plane_d, h,
                                                                  S.spiky, S.viscosity, *S.walls], outputs=[f],
                                        device=dev)),
            ("integrate", lambda: L.launch(K.integrate, n, inputs=[x, v, f, self.inv_mass, self.gravity, S.damping,
                                                                   S.max_velocity, S.dt], outputs=[x_out, v_out],
                                           device=dev)),
        ]
        if clock is not None:  # the unwalled density and force kernels, timed apart (not part of the step)
            none_n, none_d = self.no_planes
            if self._unwalled is None:
                self._unwalled = self.work(False)[::2]
            rho2, f2 = self._unwalled
            phases[2:2] = [("density, no walls", lambda: L.launch(
                K.eval_density, n, inputs=[self.grid.id, x, self.mass, none_n, none_d, h, S.poly6], outputs=[rho2],
                device=dev))]
            phases.insert(5, ("forces, no walls", lambda: L.launch(
                K.eval_forces, n, inputs=[self.grid.id, x, v, self.mass, self.inv_mass, self.radius, rho, p, none_n,
                                          none_d, h, S.spiky, S.viscosity, *S.walls], outputs=[f2], device=dev)))
        for name, fn in phases:
            t0 = time.perf_counter()
            fn()
            if clock is not None:
                clock[name] = clock.get(name, 0.0) + time.perf_counter() - t0
            # the adjoints above query the grid of x (simkit's Tape restores it by itself)
            if name == "forces" and tape is not None and L.__name__ != "simkit":
                tape.record_func(lambda grid=self.grid: grid.build(x, h), arrays=[x])

    def forward(self, steps: int):
        """A function running ``steps`` forward steps from the initial state (ping-pong states)."""
        a, b = self.state(False), self.state(False)
        work = self.work(False)
        q0 = self.S.q0

        def run(clock=None):
            nonlocal a, b
            a[0].assign(q0)
            a[1].zero_()
            for _ in range(steps):
                self.step(a[0], a[1], b[0], b[1], *work, clock=clock)
                a, b = b, a
            return a[0]
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
                    xo, vo = (L.zeros(self.n, dtype=L.vec3, device=self.dev, requires_grad=True) for _ in range(2))
                    self.step(x, v, xo, vo, *self.work(True), tape)
                    x, v = xo, vo
                L.launch(K.weighted_sum, self.n, inputs=[x], outputs=[loss], device=self.dev)
            tape.backward(loss=loss)
            return x_start.grad.numpy()
        return run

    def adjoints(self) -> dict:
        """{name: a function running backward() once through a Tape of one launch}: the density and
        force kernels, with and without walls, at the initial state (own HashGrid)."""
        L, K, S, dev, n = self.lib, self.K, self.S, self.dev, self.n
        grid = L.HashGrid(*S.grid_dims, device=dev)
        self._keep.append(grid)  # the tapes below hold only its id
        x, v = self.state(True)
        rho, p, _ = self.work(True)
        grid.build(x, S.h)
        L.launch(K.eval_density, n, inputs=[grid.id, x, self.mass, self.plane_n, self.plane_d, S.h, S.poly6],
                 outputs=[rho], device=dev)
        L.launch(K.eval_pressure, n, inputs=[rho, S.rest_density, S.stiffness], outputs=[p], device=dev)
        fns = {}
        for suffix, (pn, pd) in (("", (self.plane_n, self.plane_d)), (", no walls", self.no_planes)):
            for name in ("density", "forces"):
                out = self.work(True)[0 if name == "density" else 2]
                if name == "density":
                    kernel, inputs = K.eval_density, [grid.id, x, self.mass, pn, pd, S.h, S.poly6]
                else:
                    kernel, inputs = K.eval_forces, [grid.id, x, v, self.mass, self.inv_mass, self.radius, rho, p,
                                                     pn, pd, S.h, S.spiky, S.viscosity, *S.walls]
                tape = L.Tape()
                with tape:
                    L.launch(kernel, n, inputs=inputs, outputs=[out], device=dev)
                seed = L.array(np.ones((n, 3) if name == "forces" else n, np.float32), dtype=out.dtype, device=dev)
                fns[name + suffix] = lambda tape=tape, out=out, seed=seed: tape.backward(grads={out: seed})
        return fns

    def densities(self) -> np.ndarray:
        """Densities of the initial state (one step's first kernels)."""
        x, v = self.state(False)
        xo, vo = self.state(False)
        rho, p, f = self.work(False)
        self.step(x, v, xo, vo, rho, p, f)
        return rho.numpy()


# ----------------------------------------------------------------------------- simkit SPHSolver

class SolverScene:
    """simkit's ``SPHSolver`` on the scene's model."""

    def __init__(self, scene: Scene, loss_kernel):
        self.S, self.loss_kernel = scene, loss_kernel

    def forward(self, steps: int):
        m, solver, dt = self.S.model, self.S.solver, self.S.dt
        a, b = m.state(requires_grad=False), m.state(requires_grad=False)

        def run():
            nonlocal a, b
            m.requires_grad = False
            a.particle_q.assign(self.S.q0)
            a.particle_qd.zero_()
            for _ in range(steps):
                solver.step(m, a, b, None, dt)
                a, b = b, a
            return a.particle_q
        return run

    def forward_backward(self, steps: int):
        m, solver, dt = self.S.model, self.S.solver, self.S.dt

        def run():
            m.requires_grad = True
            s = m.state()
            start = s.particle_q
            loss = sk.zeros(1, dtype=sk.float32, requires_grad=True, device=m.device)
            tape = sk.Tape()
            with tape:
                for _ in range(steps):
                    nxt = m.state()
                    solver.step(m, s, nxt, None, dt)
                    s = nxt
                sk.launch(self.loss_kernel, m.particle_count, inputs=[s.particle_q], outputs=[loss])
            tape.backward(loss=loss)
            m.requires_grad = False
            return start.grad.numpy()
        return run


# ----------------------------------------------------------------------------- numpy reference

def scatter(idx: np.ndarray, values: np.ndarray, n: int) -> np.ndarray:
    """Sum ``values`` (k,) or (k, 3) into ``n`` rows by ``idx``."""
    if values.ndim == 1:
        return np.bincount(idx, values, n)
    return np.stack([np.bincount(idx, values[:, c], n) for c in range(values.shape[1])], axis=1)


def cell_pairs(x: np.ndarray, h: float) -> tuple:
    """Ordered pairs (i, j), i != j, |x_i - x_j| < h, with numpy only: sort the particles by cells of
    width h, then look up the 27 cells around each particle with ``searchsorted``."""
    n = len(x)
    c = np.floor(x / h).astype(np.int64)
    c -= c.min(axis=0) - 1
    dims = c.max(axis=0) + 2
    key = (c[:, 0] * dims[1] + c[:, 1]) * dims[2] + c[:, 2]
    order = np.argsort(key, kind="stable")
    sorted_key = key[order]
    I, J = [], []
    for dx, dy, dz in itertools.product((-1, 0, 1), repeat=3):
        k = key + (dx * dims[1] + dy) * dims[2] + dz
        lo = np.searchsorted(sorted_key, k, "left")
        cnt = np.searchsorted(sorted_key, k, "right") - lo
        i = np.repeat(np.arange(n), cnt)
        j = order[np.arange(cnt.sum()) + np.repeat(lo - (np.cumsum(cnt) - cnt), cnt)]
        d = x[i] - x[j]
        keep = (np.einsum("ij,ij->i", d, d) < h * h) & (i != j)
        I.append(i[keep])
        J.append(j[keep])
    return np.concatenate(I), np.concatenate(J)


def tree_pairs(x: np.ndarray, h: float) -> tuple:
    """Ordered pairs (i, j), i != j, |x_i - x_j| <= h, from scipy's ``cKDTree.query_pairs``."""
    p = cKDTree(x).query_pairs(h, output_type="ndarray")
    return np.concatenate([p[:, 0], p[:, 1]]), np.concatenate([p[:, 1], p[:, 0]])


class NumpySPH:
    """The step vectorized over neighbour pairs and their mirror images (float64)."""

    def __init__(self, scene: Scene, pairs=None):
        self.S = scene
        self.pairs = pairs or (tree_pairs if cKDTree is not None else cell_pairs)
        self.label = "numpy + scipy cKDTree" if self.pairs is tree_pairs else "numpy (sorted cells)"

    def images(self, ii, jj, near_i, x, v):
        """[(rows, y, vy)]: the mirror images of x[jj[rows]] in every increasing sequence of at most 3
        of the walls near x[ii[rows]], as the kernels enumerate them."""
        S, out = self.S, []

        def visit(rows, y, vy, first, depth):
            for k in range(first, len(S.plane_d)):
                sel = (near_i[rows] >> k) & 1 == 1
                if not sel.any():
                    continue
                nk = S.plane_n[k]
                yk = y[sel] - np.outer(2.0 * np.abs(y[sel] @ nk - S.plane_d[k]), nk)
                vk = vy[sel] - np.outer(2.0 * (vy[sel] @ nk), nk)
                out.append((rows[sel], yk, vk))
                if depth < 3:
                    visit(rows[sel], yk, vk, k + 1, depth + 1)

        visit(np.arange(len(ii)), x[jj], v[jj], 0, 1)
        return out

    def pair_force(self, xi, vi, y, vy, cp, cv):
        S = self.S
        d = xi - y
        r2 = np.einsum("ij,ij->i", d, d)
        ok = (r2 < S.h * S.h) & (r2 > 0.0)
        r = np.sqrt(np.where(ok, r2, 1.0))
        q = np.where(ok, S.h - r, 0.0)
        return d * (cp * q * q / r)[:, None] + (vy - vi) * (cv * q)[:, None]

    def neighbours(self, x, v) -> tuple:
        """(i, j, ii, jj, images): the ordered neighbour pairs (i != j, closer than h) and the image
        pairs (every particle near a wall with itself and its neighbours) with their images."""
        S, n = self.S, len(x)
        i, j = self.pairs(x, S.h)
        near = np.zeros(n, np.int64)
        for k in range(len(S.plane_d)):
            near |= ((x @ S.plane_n[k] - S.plane_d[k]) < S.h).astype(np.int64) << k
        walled = np.flatnonzero(near)
        on = near[i] != 0
        ii, jj = np.concatenate([walled, i[on]]), np.concatenate([walled, j[on]])
        return i, j, ii, jj, self.images(ii, jj, near[ii], x, v)

    def density(self, x, nb) -> np.ndarray:
        S = self.S
        i, j, ii, jj, images = nb
        h2, m = S.h * S.h, S.mass.astype(np.float64)

        def w(a, b):
            return S.poly6 * np.maximum(h2 - np.einsum("ij,ij->i", a - b, a - b), 0.0) ** 3

        rho = m * (S.poly6 * h2 ** 3) + scatter(i, m[j] * w(x[i], x[j]), len(x))
        for rows, y, _ in images:
            rho += scatter(ii[rows], m[jj[rows]] * w(x[ii[rows]], y), len(x))
        return rho

    def pressure(self, rho) -> np.ndarray:
        return np.maximum(self.S.stiffness * ((rho / self.S.rest_density) ** 7 - 1.0), 0.0)

    def forces(self, x, v, rho, p, nb) -> np.ndarray:
        S, n = self.S, len(x)
        i, j, ii, jj, images = nb
        m = S.mass.astype(np.float64)

        def coefficients(a, b):
            mij = m[a] * m[b] * S.spiky
            return mij * (p[a] / rho[a] ** 2 + p[b] / rho[b] ** 2), mij * S.viscosity / (rho[a] * rho[b])

        cp, cv = coefficients(i, j)
        f = scatter(i, self.pair_force(x[i], v[i], x[j], v[j], cp, cv), n)
        cp, cv = coefficients(ii, jj)
        for rows, y, vy in images:
            a = ii[rows]
            f += scatter(a, self.pair_force(x[a], v[a], y, vy, cp[rows], cv[rows]), n)
        ke, kd, kf, mu = S.walls
        for k in range(len(S.plane_d)):  # the walls' penalty contacts
            nk = S.plane_n[k]
            c = x @ nk - S.plane_d[k] - S.radius
            a = np.flatnonzero(c < 0.0)
            if a.size:
                vn = v[a] @ nk
                fn = c[a] * ke + np.minimum(vn, 0.0) * kd
                vt = v[a] - np.outer(vn, nk)
                lt = np.linalg.norm(vt, axis=1)
                ft = np.minimum(lt * kf, mu * np.abs(fn))
                f[a] += -np.outer(fn, nk) - vt * (ft / np.where(lt > 0.0, lt, 1.0))[:, None]
        return f

    def step(self, x, v):
        """(x', v', rho) after one step from (x, v) (float64 (n, 3) arrays)."""
        S = self.S
        nb = self.neighbours(x, v)
        rho = self.density(x, nb)
        f = self.forces(x, v, rho, self.pressure(rho), nb)
        w_inv = S.inv_mass.astype(np.float64)[:, None]
        v1 = v + (f * w_inv + np.asarray(S.gravity) * (w_inv > 0) - v * S.damping * (w_inv > 0)) * S.dt
        speed = np.linalg.norm(v1, axis=1)
        v1 *= np.minimum(1.0, S.max_velocity / np.maximum(speed, 1e-300))[:, None]
        return x + v1 * S.dt, v1, rho

    def forward(self, steps: int):
        def run():
            x, v = self.S.q0.astype(np.float64), np.zeros((self.S.n, 3))
            for _ in range(steps):
                x, v, _ = self.step(x, v)
            return x
        return run


# ----------------------------------------------------------------------------- checks

def rel(a, b) -> float:
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return float(np.abs(a - b).max() / max(np.abs(b).max(), 1e-30))


def absdiff(a, b) -> float:
    return float(np.abs(np.asarray(a, np.float64) - np.asarray(b, np.float64)).max())


def run_checks(scene: Scene, solver_scene: SolverScene, sk_same: SameSource, wp_same, numpy_sph) -> list:
    """[(description, value, tolerance)] of every agreement check; prints each."""
    S, checks = scene, []

    def check(what, value, tol):
        checks.append((what, value, tol))
        common.progress(f"check: {what}: {value:.1e} (tolerance {tol:.0e}){'' if value <= tol else '  FAILED'}")

    solver_scene.forward(1)()
    rho_solver = S.solver.density.numpy().copy()  # numpy() is a view of the solver's buffer
    x_solver = solver_scene.forward(5)().numpy()
    check("SPHSolver vs same-source simkit: densities (max relative difference)",
          rel(sk_same.densities(), rho_solver), TOLERANCES["density"])
    check("SPHSolver vs same-source simkit: positions after 5 steps (max |dx| m)",
          absdiff(sk_same.forward(5)().numpy(), x_solver), TOLERANCES["positions"])
    g_same = sk_same.forward_backward(3)()
    check("SPHSolver vs same-source simkit: gradient of a 3-step rollout (max relative difference)",
          rel(g_same, solver_scene.forward_backward(3)()), TOLERANCES["gradient"])
    if wp_same is not None:
        check("same-source simkit vs warp-lang: densities (max relative difference)",
              rel(sk_same.densities(), wp_same.densities()), TOLERANCES["density"])
        check("same-source simkit vs warp-lang: positions after 5 steps (max |dx| m)",
              absdiff(sk_same.forward(5)().numpy(), wp_same.forward(5)().numpy()), TOLERANCES["positions"])
        check("same-source simkit vs warp-lang: gradient of a 3-step rollout (max relative difference)",
              rel(g_same, wp_same.forward_backward(3)()), TOLERANCES["gradient"])
    if numpy_sph is not None:
        x0 = S.q0.astype(np.float64)
        check(f"{numpy_sph.label} vs SPHSolver: densities (max relative difference)",
              rel(numpy_sph.step(x0, np.zeros_like(x0))[2], rho_solver), TOLERANCES["density"])
        check(f"{numpy_sph.label} vs SPHSolver: positions after 5 steps (max |dx| m)",
              absdiff(numpy_sph.forward(5)(), x_solver), TOLERANCES["numpy positions"])
    return checks


# ----------------------------------------------------------------------------- timing and tables

def timed(fns: dict, steps: dict, rounds: int) -> dict:
    """{name: (median, best) steps/s}: one warm-up call each, then ``rounds`` interleaved samples."""
    for fn in fns.values():
        fn()
    t = common.bench_interleaved(fns, rounds=rounds, warmup=0)
    return {k: (steps[k] / v.median, steps[k] / v.min) for k, v in t.items()}


def fmt_rate(r: float) -> str:
    return f"{r:,.0f}" if r >= 100 else f"{r:.1f}"


def with_threads(fn, threads: int):
    def run():
        sk.config.cpu_threads = threads
        return fn()
    return run


def breakdown(contenders: list, steps: int, rounds: int) -> tuple:
    """Two tables of milliseconds per launch (medians; contenders interleaved round by round): the
    launches of the same-source forward step, and the adjoints of its two neighbour kernels."""
    fwd_names = ["grid build", "density", "density, no walls", "pressure", "forces", "forces, no walls",
                 "integrate"]
    adj_names = ["density", "density, no walls", "forces", "forces, no walls"]
    runs = [(label, threads, same.forward(steps), same.adjoints()) for label, threads, same in contenders]
    fwd = [{k: [] for k in fwd_names} for _ in runs]
    adj = [{k: [] for k in adj_names} for _ in runs]
    for r in range(rounds + 1):  # round 0 warms up
        for c in list(range(len(runs)))[r % len(runs):] + list(range(len(runs)))[:r % len(runs)]:
            _, threads, run, adjoints = runs[c]
            sk.config.cpu_threads = threads
            clock = {}
            run(clock)
            for name, fn in adjoints.items():
                t0 = time.perf_counter()
                fn()
                clock["adj " + name] = time.perf_counter() - t0
            if r:
                for k in fwd_names:
                    fwd[c][k].append(1e3 * clock[k] / steps)
                for k in adj_names:
                    adj[c][k].append(1e3 * clock["adj " + k])
    t_fwd = common.Table("Same-source forward step, ms per launch (median)",
                         ["implementation", "threads", *fwd_names, "step (walled)"])
    t_adj = common.Table("Same-source adjoint kernels, ms per launch (median)",
                         ["implementation", "threads", *(f"adjoint: {k}" for k in adj_names)])
    for c, (label, threads, _, _) in enumerate(runs):
        med = {k: float(np.median(v)) for k, v in fwd[c].items()}
        total = sum(v for k, v in med.items() if "no walls" not in k)
        t_fwd.add(label, threads, *(f"{med[k]:.2f}" for k in fwd_names), f"{total:.2f}")
        t_adj.add(label, threads, *(f"{float(np.median(adj[c][k])):.2f}" for k in adj_names))
    t_fwd.note = (f"{steps} steps per sample, {rounds} samples; each launch timed on the host (CPU launches are "
                  f"synchronous). 'no walls': the same kernel with an empty plane list (no mirror images, no "
                  f"wall contacts), run in the same steps but not part of them.")
    t_adj.note = (f"One Tape per kernel, recorded once at the initial state; each sample times one "
                  f"backward() through it ({rounds} samples).")
    return t_fwd, t_adj


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="fewer steps and rounds")
    ap.add_argument("--threads", type=int, default=0, help="simkit CPU threads (default: all cores)")
    ap.add_argument("--no-warp", action="store_true", help="skip warp-lang")
    ap.add_argument("--no-numpy", action="store_true", help="skip the numpy implementation")
    ap.add_argument("--block", type=int, default=20, help="particles per side of the water column (20: 8000)")
    ap.add_argument("--markdown", help="also write the tables as markdown here")
    ap.add_argument("--json", help="also write the results as JSON here")
    args = ap.parse_args(argv)
    threads = args.threads or common.core_count()
    rounds = 3 if args.quick else 7
    fsteps, bsteps, nsteps = (5, 3, 2) if args.quick else (10, 5, 3)
    fb_rounds = max(2, (rounds + 1) // 2)
    sk_k = load(sk, "sph_kernels_simkit")
    warp_k = None
    if wp is not None and not args.no_warp:
        try:
            wp.config.quiet = True
            wp.config.kernel_cache_dir = os.path.join(tempfile.mkdtemp(prefix="sk_sph_"), "warp_cache")
            wp.init()
            warp_k = load(wp, "sph_kernels_warp")
        except Exception as e:  # pragma: no cover
            common.progress(f"warp-lang unavailable: {e}")
    info = common.machine_info(threads) + [("OMP_WAIT_POLICY", os.environ.get("OMP_WAIT_POLICY", ""))]
    print(common.kv_text(info) + "\n")

    scene = Scene(args.block)
    sk.config.cpu_threads = threads
    solver_scene = SolverScene(scene, sk_k.weighted_sum)
    sk_same = SameSource(sk, sk_k, scene)
    wp_same = SameSource(wp, warp_k, scene) if warp_k is not None else None
    numpy_sph = None if args.no_numpy else NumpySPH(scene)
    t0 = time.perf_counter()
    checks = run_checks(scene, solver_scene, sk_same, wp_same, numpy_sph)
    common.progress(f"checks (and first compilations) took {time.perf_counter() - t0:.1f} s")

    # (label, threads, forward fn, forward steps, fwd+bwd fn or None)
    contenders = [("simkit SPHSolver", threads, solver_scene.forward(fsteps), fsteps,
                   solver_scene.forward_backward(bsteps))]
    if threads > 1:
        contenders.append(("simkit SPHSolver", 1, solver_scene.forward(fsteps), fsteps,
                           solver_scene.forward_backward(bsteps)))
    contenders.append(("simkit, same-source kernels", threads, sk_same.forward(fsteps), fsteps,
                       sk_same.forward_backward(bsteps)))
    if threads > 1:
        contenders.append(("simkit, same-source kernels", 1, sk_same.forward(fsteps), fsteps,
                           sk_same.forward_backward(bsteps)))
    if wp_same is not None:
        contenders.append(("warp-lang, same-source kernels", 1, wp_same.forward(fsteps), fsteps,
                           wp_same.forward_backward(bsteps)))
    if numpy_sph is not None:
        contenders.append((numpy_sph.label, 1, numpy_sph.forward(nsteps), nsteps, None))
    keys = [f"{label} ({t})" for label, t, *_ in contenders]
    common.progress(f"timing forward: {len(contenders)} contenders, {rounds} interleaved rounds")
    fwd = timed({k: with_threads(c[2], c[1]) for k, c in zip(keys, contenders)},
                {k: c[3] for k, c in zip(keys, contenders)}, rounds)
    common.progress("timing forward + backward")
    fb_keys = [k for k, c in zip(keys, contenders) if c[4] is not None]
    fb = timed({k: with_threads(c[4], c[1]) for k, c in zip(keys, contenders) if c[4] is not None},
               {k: bsteps for k in fb_keys}, fb_rounds)
    sk.config.cpu_threads = threads

    title = (f"Dam break, {scene.n} particles (SPH, h = {scene.h * 100:.0f} cm, dt = {scene.dt * 1e3:.2f} ms, "
             f"mirror walls)")
    table = common.Table(title, ["implementation", "threads", "forward steps/s (median)", "best",
                                 "fwd+bwd steps/s (median)", "best", "backward cost", "forward vs warp-lang"])
    warp_key = next((k for k in keys if k.startswith("warp-lang")), None)
    results = []
    for k, (label, nthreads, *_rest) in zip(keys, contenders):
        f_med, f_best = fwd[k]
        b_med, b_best = fb.get(k, (None, None))
        vs = f"{f_med / fwd[warp_key][0]:.2f}x" if warp_key else "-"
        table.add(label, nthreads, fmt_rate(f_med), fmt_rate(f_best),
                  fmt_rate(b_med) if b_med else "-", fmt_rate(b_best) if b_best else "-",
                  f"{f_med / b_med:.1f}x" if b_med else "-", vs)
        results.append({"implementation": label, "threads": nthreads, "forward_median": f_med, "forward_best": f_best,
                        "fwd_bwd_median": b_med, "fwd_bwd_best": b_best})
    table.note = (f"Forward: {fsteps} steps per sample ({nsteps} for numpy) from the still column, {rounds} "
                  f"interleaved samples. Fwd+bwd: a taped rollout of {bsteps} steps + backward per sample, "
                  f"{fb_rounds} samples. Backward cost = forward rate / fwd+bwd rate.")
    print(table.text() + "\n", flush=True)

    common.progress("per-launch breakdown")
    parts = [("simkit, same-source kernels", threads, sk_same)]
    if threads > 1:
        parts.append(("simkit, same-source kernels", 1, sk_same))
    if wp_same is not None:
        parts.append(("warp-lang, same-source kernels", 1, wp_same))
    split, split_adj = breakdown(parts, fsteps, rounds)
    sk.config.cpu_threads = threads
    print(split.text() + "\n\n" + split_adj.text() + "\n", flush=True)

    ok = all(v <= tol for _, v, tol in checks)
    check_lines = [f"{what}: {v:.1e} (tolerance {tol:.0e}){'' if v <= tol else ' FAILED'}" for what, v, tol in checks]
    print("Checked before timing:\n" + "\n".join("  " + c for c in check_lines))
    if not ok:
        common.progress("WARNING: some implementations disagree (see above)")
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write("#### Machine\n\n" + common.kv_markdown(info) + "\n\n")
            f.write("\n\n".join(t.markdown() for t in (table, split, split_adj)) + "\n")
            f.write("\nChecked before timing:\n\n" + "\n".join(f"- {c}" for c in check_lines) + "\n")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"machine": dict(info), "particles": scene.n, "dt": scene.dt, "results": results,
                       "breakdown_ms": [dict(zip(t.columns, r)) for t in (split, split_adj) for r in t.rows],
                       "checks": [{"check": w, "value": v, "tolerance": t, "passed": v <= t} for w, v, t in checks]},
                      f, indent=2)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

"""``SPHSolver``: weakly compressible smoothed-particle hydrodynamics for liquids.

Example::

    b = sk.ModelBuilder()
    b.add_fluid_block(pos=(0.0, 0.0, 0.0), dim_x=10, dim_y=20, dim_z=10, spacing=0.02)
    model = b.finalize(device="cpu")
    solver = sk.SPHSolver(bounds=((0.0, 0.0, 0.0), (0.6, 0.6, 0.2)))
    dt = solver.max_time_step(model)
    s0, s1 = model.state(), model.state()
    for _ in range(100):
        solver.step(model, s0, s1, None, dt)
        s0, s1 = s1, s0

Every particle of the model is fluid. Per step: bucket the particles into ``model.particle_grid``
(cell width ``h``), sum each particle's density over its neighbours, turn densities into pressures
with Tait's equation ``p = B ((rho / rho0)^7 - 1)`` (``B = rho0 c^2 / 7``, clamped at 0), add
pressure and viscosity forces (``kernels.py``), the walls' (the faces of ``bounds`` and the model's
ground plane: mirrors, which reflect the fluid near them, so particles next to them see full
density and a balanced pressure) and penalty contacts with the static meshes, then integrate with
semi-implicit Euler. Rigid bodies in the model are stepped alongside, pushed by the fluid
through penalty contacts with their shapes (a coarse coupling: no mirror images at bodies). ``c``
is an artificial speed of sound: about 10x the fastest flow keeps density within ~1% of rest.

Differentiable through the Tape like the particle solvers: with gradients wanted every step writes
new arrays and the grid is rebuilt from the recorded positions for the backward pass.
"""
from __future__ import annotations

import math

import numpy as np

from ...model import Control, Model, State
from ...collision import HashGrid
from ...runtime import array, launch
from ..particle.kernels_forces import integrate_particles
from ..particle.solver_euler import launch_shape_contacts
from ..rigid.solver import begin_body_step, end_body_step, launch_particle_body_contacts
from ..solver import Solver
from .kernels import eval_density, eval_pressure, eval_sph_forces, smoothing_constants


def _positive(value, name) -> float:
    value = float(value)
    if not (value > 0.0 and math.isfinite(value)):
        raise ValueError(f"SPHSolver: {name} must be a finite number > 0, got {value}")
    return value


class SPHSolver(Solver):
    """Options (keyword-only):

    - ``smoothing_length`` ``h`` [m]: the kernels' support radius; default ``4 *
      model.particle_max_radius`` (two particle spacings for ``ModelBuilder.add_fluid_block``,
      about 30 neighbours per particle).
    - ``rest_density`` ``rho0`` [kg/m^3] (1000, water) and ``sound_speed`` ``c`` [m/s] (20).
    - ``viscosity`` ``mu`` [Pa s]: dynamic viscosity (8: an artificial viscosity, about
      ``0.1 rho0 c h / 10`` at h = 4 cm; real water's 1e-3 Pa s leaves a coarse weakly compressible
      fluid sloshing without end).
    - ``bounds``: ``(lower, upper)`` corners [m] of an axis-aligned box that holds the fluid, or
      None. Walls (these and the ground) also stop particles closer than their radius with a
      penalty contact: stiffness ``wall_ke`` [N/m], damping ``wall_kd`` [N s/m], friction
      ``wall_kf`` [N s/m], ``wall_mu`` (0: free slip).

    After a step, ``density`` [kg/m^3] and ``pressure`` [Pa] hold the values computed at the
    positions of the step's ``state_in``.
    """

    def __init__(self, *, smoothing_length: float | None = None, rest_density: float = 1000.0,
                 sound_speed: float = 20.0, viscosity: float = 8.0, bounds=None, wall_ke: float = 1.0e3,
                 wall_kd: float = 1.0, wall_kf: float = 0.0, wall_mu: float = 0.0):
        super().__init__()
        self.smoothing_length = None if smoothing_length is None else _positive(smoothing_length, "smoothing_length")
        self.rest_density = _positive(rest_density, "rest_density")
        self.sound_speed = _positive(sound_speed, "sound_speed")
        self.viscosity = float(viscosity)
        if not (self.viscosity >= 0.0 and math.isfinite(self.viscosity)):
            raise ValueError(f"SPHSolver: viscosity must be a finite number >= 0, got {viscosity}")
        self.bounds = None
        if bounds is not None:
            lo, hi = (np.asarray(c, dtype=np.float64).reshape(-1) for c in bounds)
            if lo.shape != (3,) or hi.shape != (3,) or not np.all(hi > lo):
                raise ValueError(f"SPHSolver: bounds must be (lower, upper) 3-vectors with upper > lower, got {bounds}")
            self.bounds = (tuple(lo), tuple(hi))
        self.wall_ke, self.wall_kd, self.wall_kf, self.wall_mu = (float(k) for k in (wall_ke, wall_kd, wall_kf, wall_mu))
        self.density = self.pressure = None
        self._plane_cache: dict = {}
        self._lone_grid: dict = {}

    def planes(self, model: Model) -> tuple:
        """The walls as (inward unit normals, offsets) arrays: a particle at ``x`` is
        ``dot(x, n) - offset`` [m] inside. The six faces of ``bounds``, then the model's ground."""
        h = self.support(model)
        key = (self.bounds, model.ground, model.ground_height, model.up_vector, h)
        cached = self._plane_cache.get(id(model))
        if cached is not None and cached[0] == key:
            return cached[1]
        normals, offsets = [], []
        if self.bounds is not None:
            for k in range(3):
                e = np.eye(3)[k]
                normals += [e, -e]
                offsets += [self.bounds[0][k], -self.bounds[1][k]]
        if model.ground:  # unless a face of the box lies in the ground plane (it would mirror twice)
            up = np.asarray(model.up_vector, dtype=np.float64)
            if not any(np.allclose(n, up) and abs(o - model.ground_height) < 1e-9 for n, o in zip(normals, offsets)):
                normals.append(up)
                offsets.append(model.ground_height)
        names = ["-x face", "+x face", "-y face", "+y face", "-z face", "+z face"][:len(normals)] + ["ground"]
        for i in range(len(normals)):   # a particle sees at most three walls: no two parallel ones within 2 h
            for j in range(i + 1, len(normals)):
                c = float(np.dot(normals[i], normals[j]))
                if abs(abs(c) - 1.0) < 1e-9:
                    gap = abs(offsets[i] - offsets[j]) if c > 0 else abs(offsets[i] + offsets[j])
                    if gap < 2.0 * h:
                        raise ValueError(f"SPHSolver: the walls {names[i]} and {names[j]} are {gap:.4g} m apart, "
                                         f"less than twice the smoothing length ({2 * h:.4g} m): widen bounds or "
                                         f"use a smaller smoothing_length")
        arrays = (array(np.asarray(normals, dtype=model.np_dtype).reshape(-1, 3), dtype=model.vec_type,
                        device=model.device),
                  array(np.asarray(offsets, dtype=model.np_dtype), dtype=model.dtype, device=model.device))
        self._plane_cache[id(model)] = (key, arrays)
        return arrays

    @property
    def stiffness(self) -> float:
        """Tait's ``B = rho0 c^2 / 7`` [Pa]."""
        return self.rest_density * self.sound_speed ** 2 / 7.0

    def support(self, model: Model) -> float:
        """The smoothing length ``h`` [m] used for ``model``."""
        if self.smoothing_length is not None:
            return self.smoothing_length
        if model.particle_max_radius <= 0.0:
            raise ValueError("SPHSolver: the model's particles have no radius; give smoothing_length=")
        return 4.0 * model.particle_max_radius

    def max_time_step(self, model: Model, max_speed: float = 0.0) -> float:
        """A stable ``dt`` [s]: the smallest of the acoustic CFL bound ``0.4 h / (c + max_speed)``,
        the viscous bound ``0.125 h^2 rho0 / mu`` and the wall contacts' bounds ``0.5 sqrt(m /
        wall_ke)`` and ``0.5 m / wall_kd`` for the lightest particle's mass ``m``."""
        h = self.support(model)
        bounds = [0.4 * h / (self.sound_speed + float(max_speed))]
        if self.viscosity > 0.0:
            bounds.append(0.125 * h * h * self.rest_density / self.viscosity)
        mass = model.particle_mass.numpy() if model.particle_count else np.zeros(0)
        mass = mass[mass > 0.0]
        if mass.size:
            m = float(mass.min())
            if self.wall_ke > 0.0:
                bounds.append(0.5 * math.sqrt(m / self.wall_ke))
            if self.wall_kd > 0.0:
                bounds.append(0.5 * m / self.wall_kd)
        return min(bounds)

    def step(self, model: Model, state_in: State, state_out: State, control: Control | None, dt: float) -> None:
        n = model.particle_count
        if model.spring_count or model.tri_count:
            raise ValueError(f"SPHSolver simulates fluid particles only; the model has {model.spring_count} "
                             f"springs and {model.tri_count} triangles (use SemiImplicitEulerSolver or XPBDSolver)")
        self.declare_once(model, lambda: self.step(model, state_in, state_out, control, dt))  # (solver.py)
        fb = begin_body_step(self, model, state_in, control)   # rigid bodies, if any: stepped alongside
        if n == 0:
            if fb is not None:
                end_body_step(model, state_in, state_out, fb, dt)
            return
        s, dev = model.scalar, model.device
        fresh = self.differentiable(model, state_in)
        h = self.support(model)
        poly6, spiky = smoothing_constants(h)
        q, qd = state_in.particle_q, state_in.particle_qd
        rho = self.scratch(model, "rho", n, model.dtype, fresh=fresh, zero=False)
        p = self.scratch(model, "p", n, model.dtype, fresh=fresh, zero=False)
        f = self.scratch(model, "f", n, model.vec_type, fresh=fresh)

        plane_n, plane_d = self.planes(model)
        if model.particle_grid is not None:
            grid = self.build_particle_grid(model, q, h)
        else:  # a lone particle: a one-cell grid of its own
            grid = self._lone_grid.get(id(model))
            if grid is None:
                grid = self._lone_grid[id(model)] = HashGrid(1, 1, 1, device=dev, dtype=model.dtype)
            grid.build(q, h)
        launch(eval_density, n, device=dev,
               inputs=[grid.id, q, model.particle_mass, plane_n, plane_d, s(h), s(poly6)],
               outputs=[rho])
        launch(eval_pressure, n, device=dev, inputs=[rho, s(self.rest_density), s(self.stiffness)], outputs=[p])
        launch(eval_sph_forces, n, device=dev,
               inputs=[grid.id, q, qd, model.particle_mass, model.particle_inv_mass, model.particle_radius, rho, p,
                       plane_n, plane_d, s(h), s(spiky), s(self.viscosity), s(self.wall_ke),
                       s(self.wall_kd), s(self.wall_kf), s(self.wall_mu)],
               outputs=[f])
        launch_shape_contacts(model, q, qd, f, ground=False)
        if fb is not None:
            launch_particle_body_contacts(model, state_in, q, qd, f, fb)
        launch(integrate_particles, n, device=dev,
               inputs=[q, qd, state_in.particle_f, f, model.particle_inv_mass, model.vector(model.gravity),
                       s(model.particle_damping), s(model.particle_max_velocity), s(dt)],
               outputs=[state_out.particle_q, state_out.particle_qd])
        self.density, self.pressure = rho, p
        if fb is not None:
            end_body_step(model, state_in, state_out, fb, dt)

"""``XPBDSolver``: extended position-based dynamics with Jacobi iterations.

Example::

    solver = sk.XPBDSolver(iterations=10)
    solver.step(model, state_0, state_1, None, dt=1.0 / 60.0)

Per step: predict positions from velocities, gravity and external forces; then ``iterations``
times: project springs and membrane triangles (stretch, shear, area) and apply their averaged
corrections, then project contacts (ground, particles through ``model.particle_grid``, static
meshes) and apply theirs, so every iteration ends without penetration. Velocities are the
displacement over ``dt``.

Springs and triangles are compliant (compliance 1 / stiffness, so a converged step is an implicit
Euler step whatever the iteration count) with Lagrange multipliers carried across iterations;
contacts are hard, with position-level Coulomb friction. When gradients are wanted every
iteration writes new arrays, so the Tape differentiates the whole solve.

Rigid bodies (``model.body_*``) are stepped by ``rigid/xpbd.py``: hard contacts and joints in
coloured Gauss-Seidel sweeps (see docs/engine.md).
Particles and rigid shapes are coupled both ways: the particles step first against the bodies'
predicted shapes, and what they push the bodies by becomes a wrench in the body step
(``kernels_xpbd_coupling.py``).
"""
from __future__ import annotations

import numpy as np

from ...model import Control, Model, State
from ...runtime import array, launch
from ..rigid.kernels import integrate_bodies
from ..rigid.xpbd import xpbd_body_step
from ..solver import Solver
from .kernels_xpbd import (apply_deltas, predict_positions, solve_ground, solve_mesh_contacts,
                           solve_particle_contacts, solve_springs, solve_triangles, update_velocities)
from .kernels_xpbd_coupling import (count_particle_body_contacts, coupling_wrench, move_bodies, shape_bounds,
                                    solve_particle_body_contacts)


class XPBDSolver(Solver):
    """``iterations``: constraint passes per (sub)step; ``substeps``: steps of ``dt / substeps`` each
    ``step`` takes (rigid contacts are gathered once per step; tall stacks rest still at 16
    substeps of one iteration, where more iterations of one step do not converge); ``relaxation``:
    scale of the averaged spring and triangle corrections (1: plain averaging; 1.5 converges
    faster); ``contact_margin``: extra search distance for particle-particle contacts, as a
    fraction of the largest radius (particles move during the iterations, the grid is built once
    per step). Rigid bodies:
    ``rigid_contact_margin`` [m]: contacts closer than this now or at the step's end are gathered;
    ``max_depenetration_velocity`` [m/s]: shapes found overlapping at a (sub)step's start are pushed
    apart at most this fast (the push becomes velocity);
    ``broad_phase``: as ``RigidBodySolver``'s."""

    def __init__(self, iterations: int = 10, *, substeps: int = 1, relaxation: float = 1.0,
                 contact_margin: float = 0.5, rigid_contact_margin: float = 0.005,
                 max_depenetration_velocity: float = 1.0, broad_phase: str = "auto"):
        super().__init__()
        if int(iterations) < 0:
            raise ValueError(f"iterations must be >= 0, got {iterations}")
        if int(substeps) < 1:
            raise ValueError(f"substeps must be >= 1, got {substeps}")
        self.substeps = int(substeps)
        if broad_phase not in ("auto", "all_pairs", "bvh"):
            raise ValueError(f"XPBDSolver: broad_phase must be 'auto', 'all_pairs' or 'bvh', got {broad_phase!r}")
        self.iterations = int(iterations)
        self.relaxation = float(relaxation)
        self.contact_margin = float(contact_margin)
        self.rigid_contact_margin = float(rigid_contact_margin)
        if not float(max_depenetration_velocity) > 0.0:
            raise ValueError(f"max_depenetration_velocity must be > 0, got {max_depenetration_velocity}")
        self.max_depenetration_velocity = float(max_depenetration_velocity)
        self.broad_phase = broad_phase
        self._counts: dict = {}

    def step(self, model: Model, state_in: State, state_out: State, control: Control | None, dt: float) -> None:
        self.declare_once(model, lambda: self.step(model, state_in, state_out, control, dt))  # (solver.py)
        n = model.particle_count
        fresh = self.differentiable(model, state_in)
        f_coupling = None
        if n:
            coupled = model.rigid_shape_count > 0      # (shapes on bodies, or static ones: body -1)
            bodies = None
            if coupled:
                bodies = self._predict_bodies(model, state_in, dt, fresh) if model.body_count else \
                    (model.body_q, model.body_qd)
                predicted = bodies[0]
            particle_control = self.default_control(model, control)
            x, v = state_in.particle_q, state_in.particle_qd
            for sub in range(self.substeps):
                last = sub == self.substeps - 1
                x_out = state_out.particle_q if last else self.scratch(model, f"x_end{sub % 2}", n, model.vec_type,
                                                                        fresh=fresh, zero=False)
                v_out = state_out.particle_qd if last else self.scratch(model, f"v_end{sub % 2}", n, model.vec_type,
                                                                         fresh=fresh, zero=False)
                pushed = self._particle_step(model, x, v, state_in.particle_f, x_out, v_out, particle_control,
                                             dt / self.substeps, fresh, bodies)
                x, v = x_out, v_out
                bodies = (pushed, bodies[1]) if coupled else None
            if coupled and model.body_count:
                f_coupling = self.scratch(model, "xc_f", model.body_count, model.body_qd.dtype, fresh=fresh,
                                          zero=False)
                launch(coupling_wrench, model.body_count, device=model.device,
                       inputs=[predicted, bodies[0], model.body_com, model.body_inv_mass, model.body_inertia,
                               model.scalar(dt)], outputs=[f_coupling])
        if model.body_count:
            xpbd_body_step(self, model, state_in, state_out, control, dt, f_coupling)

    def _predict_bodies(self, model: Model, state: State, dt: float, fresh: bool) -> tuple:
        """The bodies' (poses, velocities) at the step's end if they kept their velocities: the
        particles' contacts meet their shapes there (not with gravity: a body at rest on the ground
        stays where it is, and so the load on it rests on its true top)."""
        nb, s = model.body_count, model.scalar
        q = self.scratch(model, "xc_qp", nb, state.body_q.dtype, fresh=fresh, zero=False)
        qd = self.scratch(model, "xc_qdp", nb, state.body_qd.dtype, fresh=fresh, zero=False)
        none = self.scratch(model, "xc_f0", nb, state.body_qd.dtype, fresh=fresh)
        launch(integrate_bodies, nb, device=model.device,
               inputs=[state.body_q, state.body_qd, none, none, model.body_com, model.body_inv_mass,
                       model.body_inertia, model.body_inv_inertia, model.vector((0.0, 0.0, 0.0)),
                       s(model.body_angular_damping), s(dt)], outputs=[q, qd])
        return q, qd

    def _particle_step(self, model: Model, x0, v0, f, x_out, v_out, control: Control, dt: float, fresh: bool,
                       bodies=None):
        """One (sub)step of the particles from positions ``x0`` and velocities ``v0`` into ``x_out``,
        ``v_out``. ``bodies``: the (poses, velocities) of the bodies the particles' contacts meet;
        returns the poses they pushed them to (kernels_xpbd_coupling.py), or None."""
        n = model.particle_count
        s, dev, vec = model.scalar, model.device, model.vec_type
        w = model.particle_inv_mass

        x_pred = x = self.scratch(model, "x_pred", n, vec, fresh=fresh, zero=False)
        launch(predict_positions, n, device=dev,
               inputs=[x0, v0, f, w, model.vector(model.gravity),
                       s(model.particle_damping), s(model.particle_max_velocity), s(dt)],
               outputs=[x_pred])
        grid = None
        if self.particle_contact_enabled(model):
            reach = model.particle_max_radius * (1.0 + self.contact_margin)
            width = model.particle_max_radius + reach
            grid = self.build_particle_grid(model, x, width)
        lam_springs = self.scratch(model, "lambda_s", model.spring_count, model.dtype, fresh=fresh)
        lam_tris = self.scratch(model, "lambda_t", model.tri_count * 4, model.dtype, fresh=fresh)

        contacts = grid is not None or model.ground or model.shape_count or bodies is not None
        q_b = None
        if bodies is not None:
            q_b, qd_b = bodies
        if model.spring_count or model.tri_count:
            counts, ones = self._constraint_counts(model)
            relax = s(self.relaxation)
        for it in range(self.iterations):
            tag = str(it % 2)
            if model.spring_count or model.tri_count:  # elastic constraints, then their averaged update
                delta = self.scratch(model, "delta", n, vec, fresh=fresh)
                if model.spring_count:
                    lam_next = self.scratch(model, "lambda_s" + tag, model.spring_count, model.dtype, fresh=fresh,
                                            zero=False)
                    launch(solve_springs, model.spring_count, device=dev,
                           inputs=[x, x0, w, model.spring_indices, model.spring_rest_length, model.spring_stiffness,
                                   model.spring_damping, control.spring_activation, lam_springs, counts, relax, s(dt)],
                           outputs=[delta, lam_next])
                    lam_springs = lam_next
                if model.tri_count:
                    lam_next = self.scratch(model, "lambda_t" + tag, model.tri_count * 4, model.dtype, fresh=fresh,
                                            zero=False)
                    launch(solve_triangles, model.tri_count, device=dev,
                           inputs=[x, x0, w, model.tri_indices, model.tri_poses, model.tri_areas,
                                   model.tri_materials, lam_tris, counts, relax, s(dt)],
                           outputs=[delta, lam_next])
                    lam_tris = lam_next
                x_next = self.scratch(model, "x" + tag, n, vec, fresh=fresh, zero=False)
                launch(apply_deltas, n, device=dev, inputs=[x, delta, ones], outputs=[x_next])
                x = x_next
            if contacts:  # hard contacts last, so each iteration ends without penetration
                delta = self.scratch(model, "delta_c", n, vec, fresh=fresh)
                count = self.scratch(model, "count_c", n, model.dtype, fresh=fresh, requires_grad=False)
                if grid is not None:
                    launch(solve_particle_contacts, n, device=dev,
                           inputs=[grid.id, x, x0, w, model.particle_radius, s(reach), s(model.particle_mu)],
                           outputs=[delta, count])
                if model.ground:
                    launch(solve_ground, n, device=dev,
                           inputs=[x, x0, w, model.particle_radius, model.vector(model.up_vector),
                                   s(model.ground_height), s(model.ground_mu)],
                           outputs=[delta, count])
                if model.shape_count:
                    launch(solve_mesh_contacts, (n, model.shape_count), device=dev,
                           inputs=[x, x0, w, model.particle_radius, model.shape_mesh_id, model.shape_mu,
                                   s(model.soft_contact_margin)],
                           outputs=[delta, count])
                if bodies is not None:
                    q_b = self._body_contacts(model, x, x0, q_b, qd_b, delta, count, tag, dt, fresh)
                x_next = self.scratch(model, "xc" + tag, n, vec, fresh=fresh, zero=False)
                launch(apply_deltas, n, device=dev, inputs=[x, delta, count], outputs=[x_next])
                x = x_next

        launch(update_velocities, n, device=dev, inputs=[x0, x, s(dt)], outputs=[x_out, v_out])
        return q_b

    def _body_contacts(self, model: Model, x, x0, q, qd, delta, count, tag: str, dt: float, fresh: bool):
        """The particles' contacts with the rigid shapes (after every other contact of the iteration):
        their corrections into ``delta``/``count``, the bodies' applied to their poses ``q``; returns
        the new poses."""
        nb, s, dev = model.body_count, model.scalar, model.device
        shapes = [model.rigid_shape_body, model.rigid_shape_type, model.rigid_shape_xform, model.rigid_shape_size]
        dims = (model.particle_count, model.rigid_shape_count)
        ns = model.rigid_shape_count
        bounds = [self.scratch(model, "xc_center", ns, model.vec_type, fresh=fresh, zero=False, requires_grad=False),
                  self.scratch(model, "xc_bound", ns, model.dtype, fresh=fresh, zero=False, requires_grad=False)]
        launch(shape_bounds, ns, device=dev, inputs=[q] + shapes, outputs=bounds)
        shapes = shapes + bounds
        contacts = self.scratch(model, "xc_bcount", nb, model.dtype, fresh=fresh, requires_grad=False)
        launch(count_particle_body_contacts, dims, device=dev,
               inputs=[x, model.particle_inv_mass, model.particle_radius, q, model.body_inv_mass] + shapes,
               outputs=[count, contacts])
        body_delta = self.scratch(model, "xc_bdelta", nb, model.body_qd.dtype, fresh=fresh)
        launch(solve_particle_body_contacts, dims, device=dev,
               inputs=[x, x0, model.particle_inv_mass, model.particle_radius, s(model.particle_mu), q, qd,
                       model.body_com, model.body_inv_mass, model.body_inv_inertia] + shapes +
                      [model.rigid_shape_material, count, contacts, s(dt)],
               outputs=[delta, body_delta])
        q_next = self.scratch(model, "xc_qi" + tag, nb, q.dtype, fresh=fresh, zero=False)
        launch(move_bodies, nb, device=dev, inputs=[q, model.body_com, body_delta], outputs=[q_next])
        return q_next

    def _constraint_counts(self, model: Model):
        """Springs and triangles on each particle (at least 1), and ones: constant per model."""
        key = id(model)
        cached = self._counts.get(key)
        if cached is None or cached[0].shape[0] != model.particle_count:
            c = np.zeros(model.particle_count)
            np.add.at(c, model.spring_indices.numpy().reshape(-1), 1.0)
            np.add.at(c, model.tri_indices.numpy().reshape(-1), 1.0)
            cached = self._counts[key] = (
                array(np.maximum(c, 1.0).astype(model.np_dtype), dtype=model.dtype, device=model.device),
                array(np.ones(model.particle_count, model.np_dtype), dtype=model.dtype, device=model.device))
        return cached

"""``RigidBodySolver``: rigid bodies (spheres, boxes, capsules) with penalty contacts and joints, semi-implicit Euler.

Example::

    b = sk.ModelBuilder()
    body = b.add_body(pos=(0.0, 0.5, 0.0), ang_vel=(0.0, 0.0, 3.0))
    b.add_shape_box(body, hx=0.1, hy=0.1, hz=0.1)
    b.add_ground_plane()
    model = b.finalize(device="cpu")
    solver = sk.RigidBodySolver()
    s0, s1 = model.state(), model.state()
    for _ in range(1000):
        solver.step(model, s0, s1, None, 1.0e-3)
        s0, s1 = s1, s0
    print(s0.body_q.numpy())     # the box at rest on the ground

Per step: the contact wrenches of the shape pairs that may touch (shapes of different bodies not
joined by a joint, or a body's and a static one: ``model.rigid_pairs``, or past ~32 shapes the
pairs whose bounding boxes overlap, from a Bvh broad phase) and of every body shape against the
ground plane and the static triangle meshes (``collision/rigid_contacts.py``; penalty forces
``contact_force``: normal stiffness ``ke``, damping ``kd`` while approaching, friction ``min(kf
|v_t|, mu f_n)``, a pair using the mean of its shapes' materials), the joints' wrenches
(``kernels_joints.py``), then semi-implicit Euler with an explicit gyroscopic term. Explicit: ``dt``
must resolve the stiffest contact or joint (``max_time_step``). Differentiable through the Tape
(every step writes new arrays when gradients are wanted).
"""
from __future__ import annotations

import math

import numpy as np

from ...collision.rigid_broadphase import RigidBroadPhase
from ...kernels import types as T
from ...model import Control, Model, State
from ...runtime import declare, is_capturing, launch, zeros_like
from ..solver import Solver
from .kernels import eval_rigid_ground_contacts, eval_rigid_mesh_contacts, eval_rigid_pair_contacts, integrate_bodies
from .kernels_coupling import eval_particle_body_contacts
from .kernels_joints import eval_joints


BROAD_PHASE_PAIRS = 512    # "auto": past this many possible shape pairs (~32 shapes), find the touching ones with a Bvh


class RigidBodySolver(Solver):
    """Steps the model's rigid bodies (``model.body_*``); its particles, if any, are an error.

    ``broad_phase``: "all_pairs" tests every pair of shapes that may touch (``model.rigid_pairs``)
    each step; "bvh" first finds the pairs whose bounding boxes overlap (``RigidBroadPhase``: a
    Bvh refitted every step, one read-back of the pair count); "auto" (default) uses the Bvh past
    512 possible pairs (~32 shapes), where it starts to pay (``benchmarks/rigid.py``), except inside
    a CUDA graph capture (no read-back there: all pairs).
    """

    def __init__(self, *, broad_phase: str = "auto"):
        super().__init__()
        if broad_phase not in ("auto", "all_pairs", "bvh"):
            raise ValueError(f"RigidBodySolver: broad_phase must be 'auto', 'all_pairs' or 'bvh', got {broad_phase!r}")
        self.broad_phase = broad_phase

    def max_time_step(self, model: Model) -> float:
        """A stable explicit ``dt`` [s] for the model's bodies (``body_time_step``)."""
        return body_time_step(model)

    def step(self, model: Model, state_in: State, state_out: State, control: Control | None, dt: float) -> None:
        if model.particle_count:
            raise ValueError(f"RigidBodySolver steps rigid bodies only; the model has {model.particle_count} "
                             f"particles (SemiImplicitEulerSolver and SPHSolver step particles and bodies together)")
        self.declare_once(model, lambda: self.step(model, state_in, state_out, control, dt))  # (solver.py)
        f = begin_body_step(self, model, state_in, control)
        if f is not None:
            end_body_step(model, state_in, state_out, f, dt)


def body_time_step(model: Model) -> float:
    """A stable explicit ``dt`` [s]: the smallest ``0.3 sqrt(m / k)`` and ``0.3 m / c`` over
    contacts (the lightest body against the stiffest material; ``c`` = normal damping + viscous
    friction) and joints (each against its bodies: ``ke``, ``kd`` against their masses,
    ``angular_ke``, ``angular_kd`` against their smallest principal inertias, a drive's gains plus
    a limit's (when it has a finite bound) against their inertias about the joint axis, or their
    masses for a prismatic joint)."""
    if not model.body_count:
        return math.inf
    mass = model.body_mass.numpy()
    dynamic = mass > 0.0
    if not dynamic.any():
        return math.inf
    m = float(mass[dynamic].min())
    linear = []
    if model.rigid_shape_count:   # damping: normal (kd) and viscous friction (kf)
        mat = model.rigid_shape_material.numpy()
        linear.append((mat[:, 0].max(), (mat[:, 1] + mat[:, 2]).max()))
    if model.shape_count and model.rigid_shape_count:
        linear.append((model.shape_ke.numpy().max(), (model.shape_kd.numpy() + model.shape_kf.numpy()).max()))
    bounds = [math.inf]

    def add(inert, k, c):
        if k > 0.0:
            bounds.append(0.3 * math.sqrt(inert / k))
        if c > 0.0:
            bounds.append(0.3 * inert / c)

    for k, c in linear:
        add(m, k, c)
    if model.joint_count:   # per joint, against its own bodies; a drive and limit along / about its axis
        inertias = model.body_inertia.numpy()
        g = {k: getattr(model, f"joint_{k}").numpy() for k in ("ke", "kd", "angular_ke", "angular_kd", "target_ke",
                                                               "target_kd", "limit_lower", "limit_upper",
                                                               "limit_ke", "limit_kd")}
        limited = np.isfinite(g["limit_lower"]) | np.isfinite(g["limit_upper"])
        axial = (g["target_ke"] + np.where(limited, g["limit_ke"], 0.0),
                 g["target_kd"] + np.where(limited, g["limit_kd"], 0.0))
        axes, kinds = (model.joint_axis_parent.numpy(), model.joint_axis_child.numpy()), model.joint_type.numpy()
        for j, bodies in enumerate(zip(model.joint_parent.numpy(), model.joint_child.numpy())):
            for side, b in enumerate(bodies):
                if b < 0 or mass[b] <= 0.0:
                    continue
                add(float(mass[b]), g["ke"][j], g["kd"][j])
                add(float(np.linalg.eigvalsh(inertias[b]).min()), g["angular_ke"][j], g["angular_kd"][j])
                a = axes[side][j]
                slide = kinds[j] == 3                              # prismatic: a force, against the mass
                add(float(mass[b]) if slide else float(a @ inertias[b] @ a), axial[0][j], axial[1][j])
    return min(bounds)


def begin_body_step(solver: Solver, model: Model, state_in: State, control: Control | None):
    """The wrench array of this step's bodies, holding their contacts' and joints' wrenches (None
    without bodies). Particle solvers add the particles' reactions, then call ``end_body_step``."""
    n = model.body_count
    if n == 0:
        return None
    if state_in.body_q is None:
        raise ValueError("the state has no bodies; make states with model.state()")
    s, dev = model.scalar, model.device
    fresh = solver.differentiable(model, state_in)
    wrench_t = T.spatial_vector if model.dtype is T.float32 else T.spatial_vectord
    f = solver.scratch(model, "body_f", n, wrench_t, fresh=fresh)
    shape_args = [state_in.body_q, state_in.body_qd, model.body_com, model.rigid_shape_body,
                  model.rigid_shape_type, model.rigid_shape_xform, model.rigid_shape_size,
                  model.rigid_shape_material]
    pairs, pair_count = shape_pairs(solver, model, state_in.body_q, fresh)
    if pair_count:
        launch(eval_rigid_pair_contacts, pair_count, device=dev,
               inputs=shape_args + [pairs], outputs=[f])
    if model.ground and model.rigid_shape_count:
        launch(eval_rigid_ground_contacts, (model.rigid_shape_count, 8), device=dev,
               inputs=shape_args + [model.vector(model.up_vector), s(model.ground_height)], outputs=[f])
    if model.shape_count and model.rigid_shape_count:
        launch(eval_rigid_mesh_contacts, (model.rigid_shape_count, model.shape_count, 8), device=dev,
               inputs=shape_args[:-1] + [model.shape_mesh_id, model.shape_ke, model.shape_kd, model.shape_kf,
                                         model.shape_mu],
               outputs=[f])
    if model.joint_count:
        control = solver.default_control(model, control)
        if control.joint_target is None or control.joint_target.shape[0] != model.joint_count:
            raise ValueError(f"control.joint_target must hold {model.joint_count} targets "
                             f"(make the control with model.control())")
        launch(eval_joints, model.joint_count, device=dev,
               inputs=[state_in.body_q, state_in.body_qd, model.body_com, model.joint_type, model.joint_parent,
                       model.joint_child, model.joint_anchor_parent, model.joint_anchor_child,
                       model.joint_axis_parent, model.joint_axis_child, model.joint_rest_rotation, model.joint_ke,
                       model.joint_kd, model.joint_angular_ke, model.joint_angular_kd, model.joint_target_ke,
                       model.joint_target_kd, control.joint_target, model.joint_limit_lower,
                       model.joint_limit_upper, model.joint_limit_ke, model.joint_limit_kd],
               outputs=[f])
    return f


def shape_pairs(solver: Solver, model: Model, body_q, fresh: bool):
    """(pair array, count): the shape pairs to test at the frames ``body_q``, all of
    ``model.rigid_pairs`` or those a Bvh finds overlapping (``solver.broad_phase``; a new pair
    array when ``fresh``)."""
    pairs, pair_count = model.rigid_pairs, model.rigid_pair_count
    if declare.active:  # (a solver's dry run, solver.py: the same kernels, and nothing read back)
        return pairs, pair_count
    mode = getattr(solver, "broad_phase", "auto")
    dev = model.device
    capturing = is_capturing(dev)
    if capturing and mode == "bvh":
        raise RuntimeError("the Bvh broad phase reads its pair count back to the host, which a CUDA graph "
                           "capture cannot do: use broad_phase='all_pairs' in captured steps")
    if pair_count and not capturing and (mode == "bvh" or (mode == "auto" and pair_count > BROAD_PHASE_PAIRS)):
        cache = solver.__dict__.setdefault("_broad_phases", {})   # per model, like the scratch arrays
        bp = cache.get(id(model))
        if bp is None or bp.model is not model:
            bp = cache[id(model)] = RigidBroadPhase(model)
        pairs, pair_count = bp.find(body_q, reuse=not fresh)
    return pairs, pair_count


def launch_particle_body_contacts(model: Model, state_in: State, q, qd, f_particles, f_bodies) -> None:
    """Penalty contacts of particles (``q``, ``qd``) with every rigid shape, into both force arrays."""
    if model.particle_count and model.rigid_shape_count:
        launch(eval_particle_body_contacts, (model.particle_count, model.rigid_shape_count), device=model.device,
               inputs=[q, qd, model.particle_radius, model.particle_inv_mass, state_in.body_q, state_in.body_qd,
                       model.body_com, model.rigid_shape_body, model.rigid_shape_type, model.rigid_shape_xform,
                       model.rigid_shape_size, model.rigid_shape_material],
               outputs=[f_particles, f_bodies])


def end_body_step(model: Model, state_in: State, state_out: State, f, dt: float) -> None:
    """Integrate the bodies with the wrenches ``f`` plus ``state_in.body_f`` (semi-implicit Euler)."""
    s = model.scalar
    f_ext = state_in.body_f if state_in.body_f is not None else zeros_like(f)
    launch(integrate_bodies, model.body_count, device=model.device,
           inputs=[state_in.body_q, state_in.body_qd, f_ext, f, model.body_com, model.body_inv_mass,
                   model.body_inertia, model.body_inv_inertia, model.vector(model.gravity),
                   s(model.body_angular_damping), s(dt)],
           outputs=[state_out.body_q, state_out.body_qd])

"""The rigid-body half of ``XPBDSolver``: one step of extended position-based dynamics for
``model.body_*`` (kernels in ``kernels_xpbd.py`` and ``kernels_xpbd_joints.py``).

Per step: predict every pose from its velocity, gravity and ``state.body_f`` (semi-implicit Euler,
``integrate_bodies``); gather the contacts at the predicted poses (the candidates of the penalty
solver: shape pairs, the ground, static meshes; those deeper than ``-rigid_contact_margin``); then
``iterations`` Gauss-Seidel sweeps: the joints, then the contact groups, one colour at a time
(``coloring.py``: constraints of a colour share no movable body, so each launch is exact for its
bodies and the next colour sees the result). The velocities are those that carry the start pose
to the end pose (contacts are inelastic; friction, static and sliding, acts at the position level
within mu times the normal impulse). Contacts are coloured from
the gathered slots (one read-back per step); inside a CUDA graph capture all groups form one
colour and bodies average their groups' corrections (Jacobi: converges more slowly).
"""
from __future__ import annotations

import numpy as np

from ...kernels import types as T
from ...model import Control, Model, State
from ...runtime import array, is_capturing, launch
from .coloring import color_lists
from .kernels import integrate_bodies
from .kernels_xpbd import apply_body_deltas, body_velocities, solve_contact_groups
from .kernels_xpbd_gather import gather_ground_contacts, gather_mesh_contacts, gather_pair_contacts
from .kernels_xpbd_joints import solve_joints_xpbd
from .solver import shape_pairs


def xpbd_body_step(solver, model: Model, state_in: State, state_out: State, control: Control | None,
                   dt: float) -> None:
    """Advance ``state_in``'s bodies by ``dt`` into ``state_out`` (``solver``: an ``XPBDSolver``)."""
    n = model.body_count
    if state_in.body_q is None:
        raise ValueError("the state has no bodies; make states with model.state()")
    s, dev = model.scalar, model.device
    fresh = solver.differentiable(model, state_in)
    wrench_t = T.spatial_vector if model.dtype is T.float32 else T.spatial_vectord
    q0 = state_in.body_q
    q = solver.scratch(model, "xb_q", n, q0.dtype, fresh=fresh, zero=False)
    qd = solver.scratch(model, "xb_qd", n, wrench_t, fresh=fresh, zero=False)
    none = solver.scratch(model, "xb_f0", n, wrench_t, fresh=fresh)
    f_ext = state_in.body_f if state_in.body_f is not None else none
    launch(integrate_bodies, n, device=dev,
           inputs=[q0, state_in.body_qd, f_ext, none, model.body_com, model.body_inv_mass, model.body_inertia,
                   model.body_inv_inertia, model.vector(model.gravity), s(model.body_angular_damping), s(dt)],
           outputs=[q, qd])
    bodies = [q0, model.body_com, model.body_inv_mass, model.body_inv_inertia]
    sweeps = []   # per colour: (kernel, threads, inputs before lambda, lambda rows, lambda key)
    if model.joint_count:
        control = solver.default_control(model, control)
        if control.joint_target is None or control.joint_target.shape[0] != model.joint_count:
            raise ValueError(f"control.joint_target must hold {model.joint_count} targets "
                             f"(make the control with model.control())")
        joint_args = bodies + [model.joint_type, model.joint_parent, model.joint_child, model.joint_anchor_parent,
                               model.joint_anchor_child, model.joint_axis_parent, model.joint_axis_child,
                               model.joint_rest_rotation, model.joint_target_ke, model.joint_target_kd,
                               control.joint_target, model.joint_limit_lower, model.joint_limit_upper]
        for c, idx in enumerate(joint_colors(solver, model)):
            sweeps.append([(solve_joints_xpbd, idx.shape[0], joint_args + [idx], idx.shape[0], f"j{c}")])
    contacts = gather_contacts(solver, model, q0, qd, q, s(dt), fresh)
    if contacts:
        for c, parts in enumerate(contact_colors(solver, model, contacts)):
            sweeps.append([(solve_contact_groups, idx.shape[0], bodies + [idx, size] + slots, idx.shape[0] * size,
                            f"c{c}_{k}") for k, (size, slots, idx) in parts])
    lams = {}
    for it in range(solver.iterations):
        tag = str(it % 2)
        for c, sweep in enumerate(sweeps):
            delta = solver.scratch(model, "xb_delta", n, wrench_t, fresh=fresh)
            count = solver.scratch(model, "xb_count", n, model.dtype, fresh=fresh, requires_grad=False)
            for kern, threads, args, rows, key in sweep:
                shape = rows if kern is solve_joints_xpbd else (rows, 4)
                lam = lams.get(key)
                if lam is None:
                    lam = solver.scratch(model, "xb_l" + key, shape, model.dtype, fresh=fresh)
                lams[key] = solver.scratch(model, f"xb_l{key}_{tag}", shape, model.dtype, fresh=fresh)
                tail = [lam, s(dt)] if kern is solve_joints_xpbd else [it % 2, lam]    # (odd sweeps backwards)
                launch(kern, threads, device=dev, inputs=[q] + args + tail, outputs=[delta, count, lams[key]])
            q_next = solver.scratch(model, f"xb_q{c}_{tag}", n, q0.dtype, fresh=fresh, zero=False)
            launch(apply_body_deltas, n, device=dev, inputs=[q, model.body_com, delta, count], outputs=[q_next])
            q = q_next
    launch(body_velocities, n, device=dev, inputs=[q0, q, model.body_com, s(dt)],
           outputs=[state_out.body_q, state_out.body_qd])


def movable(solver, model: Model) -> np.ndarray:
    """Per body: can it move (inverse mass > 0)? Read once per model."""
    cache = solver.__dict__.setdefault("_movable", {})
    got = cache.get(id(model))
    if got is None or got[0] is not model.body_inv_mass:
        got = cache[id(model)] = (model.body_inv_mass, model.body_inv_mass.numpy() > 0.0)
    return got[1]


def joint_colors(solver, model: Model) -> list:
    """The joints of each colour, as int32 arrays on the model's device. Constant per model."""
    cache = solver.__dict__.setdefault("_joint_colors", {})
    got = cache.get(id(model))
    if got is None or got[0] is not model.joint_parent:
        lists = color_lists(model.joint_parent.numpy(), model.joint_child.numpy(), movable(solver, model))
        got = cache[id(model)] = (model.joint_parent, [array(i.astype(np.int32), dtype=T.int32, device=model.device)
                                                       for i in lists])
    return got[1]


def can_read_back(device) -> bool:
    """False inside a CUDA graph capture (nothing can be read back to the host there)."""
    return device.is_cpu or not is_capturing(device)


def contact_colors(solver, model: Model, contacts: list) -> list:
    """The active contact groups of each colour: per colour, [(set, (size, slots, group indices))].
    The groups' bodies are read back to colour them; inside a CUDA graph capture (no read-back)
    every group is in one colour, and bodies average what their groups push (Jacobi)."""
    dev = model.device
    if not can_read_back(dev):
        return [[(k, (size, slots, array(np.arange(slots[0].shape[0] // size, dtype=np.int32), dtype=T.int32,
                                         device=dev))) for k, (size, slots) in enumerate(contacts)]]
    a, b, where = [], [], []
    for k, (size, slots) in enumerate(contacts):
        ends = slots[0].numpy().reshape(-1, size, 2).max(axis=1)       # empty slots hold -1, -1
        active = np.nonzero((ends >= 0).any(axis=1))[0]
        a.append(ends[active, 0])
        b.append(ends[active, 1])
        where.append(np.stack([np.full(active.shape, k), active], axis=1))
    if not sum(len(x) for x in a):
        return []
    where = np.concatenate(where)
    out = []
    for idx in color_lists(np.concatenate(a), np.concatenate(b), movable(solver, model)):
        parts = []
        mine = where[idx]                                  # (set, group) of this colour's groups
        for k, (size, slots) in enumerate(contacts):
            groups = mine[mine[:, 0] == k, 1]
            if groups.size:
                parts.append((k, (size, slots, array(groups.astype(np.int32), dtype=T.int32, device=dev))))
        out.append(parts)
    return out


def gather_contacts(solver, model: Model, q0, qd, q_pred, dt, fresh: bool) -> list:
    """The contact slots (bodies, points on each, normal, friction): (group size, arrays) for the
    shape pairs, the ground and the static meshes each (a Tape needs each array written by one
    launch). A group holds the slots of one shape pair, or of one shape against the ground or a
    mesh: contacts between the same two bodies. Taken at the step's start ``q0`` with the predicted
    velocities ``qd`` (speculative: within the margin now or at the step's end), where the nearest
    feature of a resting contact is the one it rests on; a box's edges and peaks against meshes at
    the predicted poses ``q_pred``."""
    shapes = model.rigid_shape_count
    if not shapes:
        return []
    s, dev, vec = model.scalar, model.device, model.vec_type
    shape_args = [q0, qd, model.body_com, model.rigid_shape_body, model.rigid_shape_type, model.rigid_shape_xform,
                  model.rigid_shape_size]
    margin = s(solver.rigid_contact_margin)

    def slots(key, total):
        return [solver.scratch(model, f"xb_{key}_body", (total, 2), T.int32, fresh=fresh, zero=False,
                               requires_grad=False)] + [
            solver.scratch(model, f"xb_{key}_{k}", total, t, fresh=fresh, zero=False)
            for k, t in (("pa", vec), ("pb", vec), ("n", vec), ("mu", model.dtype))]

    out = []
    pairs, pair_count = shape_pairs(solver, model, q0, fresh)
    if pair_count:
        cand = model.rigid_pair_candidates
        out.append((cand, slots("pairs", pair_count * cand)))
        launch(gather_pair_contacts, (pair_count, cand), device=dev,
               inputs=shape_args + [model.rigid_shape_material, pairs, cand, margin, dt], outputs=out[-1][1])
    if model.ground:
        out.append((8, slots("ground", shapes * 8)))
        launch(gather_ground_contacts, (shapes, 8), device=dev,
               inputs=shape_args + [model.rigid_shape_material, model.vector(model.up_vector),
                                    s(model.ground_height), margin, dt],
               outputs=out[-1][1])
    if model.shape_count:
        out.append((32, slots("meshes", shapes * model.shape_count * 32)))
        launch(gather_mesh_contacts, (shapes, model.shape_count, 8), device=dev,
               inputs=shape_args + [model.shape_mesh_id, model.shape_mu, margin, dt, q_pred], outputs=out[-1][1])
    return out

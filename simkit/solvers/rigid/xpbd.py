"""The rigid-body half of ``XPBDSolver``: one step of extended position-based dynamics for
``model.body_*`` (kernels in ``kernels_xpbd.py`` and ``kernels_xpbd_joints.py``).

Per step: predict every pose from its velocity, gravity and ``state.body_f`` (semi-implicit Euler,
``integrate_bodies``); gather the contacts at the step's start with the predicted velocities (the
candidates of the penalty solver: shape pairs, the ground, static meshes; those deeper than
``-rigid_contact_margin`` now or at the step's end); colour them. Then ``substeps`` times, over
``dt / substeps``: predict, ``iterations`` Gauss-Seidel sweeps (the joints, then the contact groups,
one colour at a time: ``coloring.py``, constraints of a colour share no movable body, so each
launch is exact for its bodies and the next colour sees the result), and the velocities that carry
the substep's start pose to its end pose (inelastic: friction, static and sliding, acts at the
position level within mu times the normal impulse), then, for shapes with restitution, the
velocity pass that bounces the contacts that hit (``kernels_xpbd_restitution.py``). An impact
(a body pair's penetrating contacts approaching faster than a resting contact, ``resting_speed``)
is first met by its contacts as one push (``solve_contact_groups``), a body resting more directly
on the world taking it as if fixed (``mark_support``).

Contacts persist: each keeps its final impulses and, when it holds, the slip the sweeps left over
(``state_out.contact_impulses``). The next (sub)step's contact at the nearest point of the same
two bodies starts from its normal impulse and a share of the pair's net friction (its first sweep
applies them: a resting stack begins already carrying its weight) and undoes that slip. Without
them, what Gauss-Seidel leaves unconverged each step turned into velocity: a box on the ground at
two iterations walked 15 mm/s, stacks crept and rocked over. Contacts are coloured on the device
(``contact_coloring.py``: nothing read back, so a CUDA graph captures the step as it runs).
"""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from ...kernels import types as T
from ...model import Control, Model, State
from ...runtime import array, is_capturing, launch, zeros
from .coloring import color_lists
from .contact_coloring import contact_colors
from .kernels import integrate_bodies
from .kernels_xpbd import (apply_body_deltas, body_velocities, count_up, keep_contacts, mark_support,
                           solve_contact_groups, warm_contacts)
from .kernels_xpbd_gather import gather_ground_contacts, gather_mesh_contacts, gather_pair_contacts
from .kernels_xpbd_joints import solve_joints_xpbd
from .kernels_xpbd_restitution import apply_velocity_deltas, restitute_contact_groups
from .solver import shape_pairs


def xpbd_body_step(solver, model: Model, state_in: State, state_out: State, control: Control | None,
                   dt: float, f_coupling=None) -> None:
    """Advance ``state_in``'s bodies by ``dt`` into ``state_out`` (``solver``: an ``XPBDSolver``) in
    ``solver.substeps`` substeps on the contacts gathered once. ``f_coupling``: a wrench per body
    added to ``state_in.body_f`` (the particles' pushes, particle/solver_xpbd.py)."""
    n = model.body_count
    if state_in.body_q is None:
        raise ValueError("the state has no bodies; make states with model.state()")
    s, dev = model.scalar, model.device
    fresh = solver.differentiable(model, state_in)
    wrench_t = T.spatial_vector if model.dtype is T.float32 else T.spatial_vectord
    none = solver.scratch(model, "xb_f0", n, wrench_t, fresh=fresh)
    f_ext = state_in.body_f if state_in.body_f is not None else none
    f_int = f_coupling if f_coupling is not None else none

    def predict(q_from, qd_from, step: float, tag: str):
        q = solver.scratch(model, "xb_q" + tag, n, q_from.dtype, fresh=fresh, zero=False)
        qd = solver.scratch(model, "xb_qd" + tag, n, wrench_t, fresh=fresh, zero=False)
        launch(integrate_bodies, n, device=dev,
               inputs=[q_from, qd_from, f_ext, f_int, model.body_com, model.body_inv_mass, model.body_inertia,
                       model.body_inv_inertia, model.vector(model.gravity), s(model.body_angular_damping), s(step)],
               outputs=[q, qd])
        return q, qd

    q0, subs = state_in.body_q, solver.substeps
    h = dt / subs
    q_pred, qd_pred = predict(q0, state_in.body_qd, dt, "")
    sweeps = joint_sweeps(solver, model, control)
    contacts = gather_contacts(solver, model, q0, qd_pred, q_pred, s(dt), fresh)
    colors = []  # per colour, (set, group indices, key) of each contact launch
    if contacts:
        for c, parts in enumerate(contact_colors(solver, model, contacts, fresh)):
            sweeps.append([(solve_contact_groups, idx.shape[0], [idx, size] + slots, idx.shape[0] * size,
                            f"c{c}_{k}") for k, (size, slots, idx) in parts])
            colors.append([(k, idx, f"c{c}_{k}") for k, (size, slots, idx) in parts])
    kept = [launch_ for color in colors for launch_ in color]
    bounce = bounces(solver, model) and bool(colors)  # (read once per model: before a graph capture)
    rest = resting_speed(model, h)
    q_start, qd_start, before = q0, state_in.body_qd, state_in
    for sub in range(subs):
        last = sub == subs - 1
        q, qd_bar = (q_pred, qd_pred) if subs == 1 else predict(q_start, qd_start, h, "s")
        q, lams, held = solve_sweeps(solver, model, sweeps, contacts, kept, before, q_start, q, qd_bar, h, fresh)
        after = state_out if last else substep_holder(solver, model, fresh)
        q_out, qd_out = state_out.body_q, state_out.body_qd
        if not last:                  # (two pairs in turn: a substep's start is the one before's end)
            q_out = solver.scratch(model, f"xb_qe{sub % 2}", n, q0.dtype, fresh=fresh, zero=False)
            qd_out = solver.scratch(model, f"xb_qde{sub % 2}", n, wrench_t, fresh=fresh, zero=False)
        qd_solved = solver.scratch(model, "xb_qdv", n, wrench_t, fresh=fresh, zero=False) if bounce else qd_out
        launch(body_velocities, n, device=dev, inputs=[q_start, q, model.body_com, s(h)], outputs=[q_out, qd_solved])
        if bounce:
            restitute(solver, model, contacts, colors, q_out, qd_solved, qd_bar, h, qd_out, fresh)
        keep_impulses(model, after, contacts, kept, lams, held, q_start, q, s(1.0 / (h * h)), qd_bar, s(rest),
                      fresh)
        q_start, qd_start, before = q_out, qd_out, after


#: passes of ``mark_support`` per (sub)step: piles up to this many bodies deep know what rests on what
SUPPORT_PASSES = 4


def resting_speed(model: Model, h: float) -> float:
    """Contacts approaching slower than this before a (sub)step of ``h`` are resting ones (2 |g| h):
    they neither bounce nor count as impacts."""
    return 2.0 * float(np.linalg.norm(np.asarray(model.gravity, dtype=np.float64))) * h


def bounces(solver, model: Model) -> bool:
    """Does any shape have a coefficient of restitution above zero? Read once per model."""
    cache = solver.__dict__.setdefault("_bounces", {})
    got = cache.get(id(model))
    e = model.rigid_shape_restitution
    if got is None or got[0] is not e:
        got = cache[id(model)] = (e, e is not None and bool((e.numpy() > 0.0).any()))
    return got[1]


def restitute(solver, model: Model, contacts: list, colors: list, q, qd, qd_pre, h: float, qd_out,
              fresh: bool) -> None:
    """The velocity pass (``kernels_xpbd_restitution.py``): from the velocities ``qd`` the solved
    poses ``q`` give and those predicted before the solve, ``qd_pre``, the contacts of each body
    pair that hit leave at their restitution times their approach speed; one colour at a time, into
    ``qd_out``."""
    n, dev = model.body_count, model.device
    threshold = model.scalar(resting_speed(model, h))
    bodies = [model.body_com, model.body_inv_mass, model.body_inv_inertia]
    for c, launches in enumerate(colors):
        delta = solver.scratch(model, "xb_vdelta", n, qd.dtype, fresh=fresh)
        count = solver.scratch(model, "xb_vcount", n, model.dtype, fresh=fresh, requires_grad=False)
        for k, idx, key in launches:
            size, slots, _ = contacts[k]
            launch(restitute_contact_groups, idx.shape[0], device=dev,
                   inputs=[q, qd, qd_pre] + bodies + [idx, size] + slots + [threshold, model.scalar(h)],
                   outputs=[delta, count])
        nxt = qd_out if c == len(colors) - 1 else solver.scratch(model, f"xb_qdr{c % 2}", n, qd.dtype, fresh=fresh,
                                                                 zero=False)
        launch(apply_velocity_deltas, n, device=dev, inputs=[qd, delta, count], outputs=[nxt])
        qd = nxt


def joint_sweeps(solver, model: Model, control: Control | None) -> list:
    """Per joint colour, the sweep launching ``solve_joints_xpbd`` (``solve_sweeps``' entries)."""
    if not model.joint_count:
        return []
    control = solver.default_control(model, control)
    if control.joint_target is None or control.joint_target.shape[0] != model.joint_count:
        raise ValueError(f"control.joint_target must hold {model.joint_count} targets "
                         f"(make the control with model.control())")
    args = [model.joint_type, model.joint_parent, model.joint_child, model.joint_anchor_parent,
            model.joint_anchor_child, model.joint_axis_parent, model.joint_axis_child, model.joint_rest_rotation,
            model.joint_target_ke, model.joint_target_kd, control.joint_target, model.joint_limit_lower,
            model.joint_limit_upper]
    return [[(solve_joints_xpbd, idx.shape[0], args + [idx], idx.shape[0], f"j{c}")]
            for c, idx in enumerate(joint_colors(solver, model))]


def substep_holder(solver, model: Model, fresh: bool):
    """Where a substep that is not the last keeps its contact impulses for the next one."""
    if fresh:
        return SimpleNamespace(contact_impulses=None)
    return solver.__dict__.setdefault("_substep_holders", {}).setdefault(id(model), SimpleNamespace(
        contact_impulses=None))


def solve_sweeps(solver, model: Model, sweeps: list, contacts: list, kept: list, before, q_start, q, qd_pre,
                 h: float, fresh: bool):
    """``solver.iterations`` Gauss-Seidel sweeps over the colours of ``sweeps`` (per colour: kernel,
    threads, arguments, lambda rows, key) from the predicted poses ``q`` of a (sub)step of ``h``
    that began at ``q_start``; the contacts start from the impulses ``before`` kept
    (``warm_impulses``). Returns the poses, each launch's final impulses and held slips."""
    n, s, dev = model.body_count, model.scalar, model.device
    wrench_t = T.spatial_vector if model.dtype is T.float32 else T.spatial_vectord
    bodies = [q_start, model.body_com, model.body_inv_mass, model.body_inv_inertia]
    warm = warm_impulses(solver, model, before, contacts, fresh) if solver.iterations else [None] * len(contacts)
    lams, held, warmed = {}, {}, set()
    for k, idx, key in kept:         # each contact's impulses and slip left over from before
        size, slots, _ = contacts[k]
        held[key] = solver.scratch(model, "xb_h" + key, idx.shape[0] * size, model.vec_type, fresh=fresh,
                                   zero=warm[k] is None)
        if warm[k] is not None:
            warmed.add(key)
            lams[key] = solver.scratch(model, "xb_l" + key, (idx.shape[0] * size, 4), model.dtype, fresh=fresh,
                                       zero=False)
            launch(warm_contacts, (idx.shape[0], size), device=dev,
                   inputs=[idx, size, slots[0], slots[1], slots[3]] + list(warm[k]) +
                          [s(h * h), s(solver.rigid_contact_margin)],
                   outputs=[lams[key], held[key]])
    support = solver.scratch(model, "xb_support", n, T.int32, fresh=fresh, requires_grad=False)
    up = model.vector(model.up_vector)
    impact = s(resting_speed(model, h))
    for _ in range(SUPPORT_PASSES):   # (integers that choose, not values to differentiate: not taped)
        for kept_set in getattr(before, "contact_impulses", None) or []:
            launch(mark_support, kept_set[0].shape[0], device=dev,
                   inputs=[kept_set[0], kept_set[2], q_start, model.body_com, up], outputs=[support],
                   record_tape=False)
    for it in range(solver.iterations):
        tag = str(it % 2)
        for c, sweep in enumerate(sweeps):
            delta = solver.scratch(model, "xb_delta", n, wrench_t, fresh=fresh)
            count = solver.scratch(model, "xb_count", n, model.dtype, fresh=fresh, requires_grad=False)
            for kern, threads, args, rows, key in sweep:
                joint = kern is solve_joints_xpbd
                shape = rows if joint else (rows, 4)
                lam = lams.get(key)
                if lam is None:
                    lam = solver.scratch(model, "xb_l" + key, shape, model.dtype, fresh=fresh)
                lams[key] = solver.scratch(model, f"xb_l{key}_{tag}", shape, model.dtype, fresh=fresh)
                # (odd sweeps run a group's contacts backwards; the first one applies the warm start)
                tail = [lam, s(h)] if joint else [qd_pre, it % 2, int(it == 0 and key in warmed), held[key],
                                                     s(solver.max_depenetration_velocity * h),
                                                     impact if it == 0 else s(-1.0), support,
                                                     up, lam]
                launch(kern, threads, device=dev, inputs=[q] + bodies + args + tail, outputs=[delta, count, lams[key]])
            q_next = solver.scratch(model, f"xb_q{c}_{tag}", n, q.dtype, fresh=fresh, zero=False)
            launch(apply_body_deltas, n, device=dev, inputs=[q, model.body_com, delta, count], outputs=[q_next])
            q = q_next
    return q, lams, held


def warm_impulses(solver, model: Model, state, contacts: list, fresh: bool) -> list:
    """Per contact set, what ``state`` kept (``keep_impulses``) with, per group now, the group it
    was then (an int32 array, -1: none), or None (a new state, a set it did not have: a cold
    start). The ground's and the meshes' groups keep their places; shape pairs are found again by
    their shapes (``ids``), as the broad phase may find other pairs in another order."""
    got = getattr(state, "contact_impulses", None) or []
    was = getattr(state, "contact_ids", None) or []
    out = []
    for k, (size, slots, ids) in enumerate(contacts):
        groups = slots[0].shape[0] // size
        if k >= len(got) or k >= len(was) or got[k] is None or got[k][0].shape[0] // size == 0:
            out.append(None)
            continue
        old_ids = was[k]
        if ids is None and old_ids is None:
            if got[k][0].shape != slots[0].shape:
                out.append(None)
                continue
            # (each group is the one it was: filled on the device, which a graph capture allows)
            prev = solver.scratch(model, f"xb_same{k}", groups, T.int32, fresh=fresh, zero=False,
                                  requires_grad=False)
            launch(count_up, groups, device=model.device, inputs=[], outputs=[prev])
        elif ids is not None and old_ids is not None:
            at = np.minimum(np.searchsorted(old_ids, ids), len(old_ids) - 1)
            prev = array(np.where(old_ids[at] == ids, at, -1).astype(np.int32), dtype=T.int32, device=model.device)
        else:
            out.append(None)
            continue
        out.append(tuple(got[k]) + (prev,))
    return out


def keep_impulses(model: Model, state, contacts: list, kept: list, lams: dict, held: dict, q0, q, inv_dt2,
                  qd_pre, threshold, fresh: bool) -> None:
    """Store in ``state.contact_impulses``, per contact set, each slot's (bodies, point on the first
    body, final impulses per dt^2 (normal, friction vector), slip left over when it holds) after a
    (sub)step from ``q0`` to ``q``; ``kept``: (set, group indices, key) of each contact launch, whose
    final impulses are ``lams[key]`` and slips carried in ``held[key]``."""
    if not contacts:   # (no contact set at all; with sets but none active, the slots are kept empty, so
        # that a step captured later in a graph starts warm as the steps before it did)
        state.contact_impulses = state.contact_ids = None
        return
    old = getattr(state, "contact_impulses", None) or []
    out = []
    for k, (size, slots, _) in enumerate(contacts):
        total = slots[0].shape[0]
        arrays = old[k] if k < len(old) and not fresh else None     # (reused between steps)
        if arrays is None or arrays[0].shape != (total, 2) or arrays[2].dtype is not model.dtype:
            arrays = (zeros((total, 2), dtype=T.int32, device=model.device).fill_(-1),
                      zeros(total, dtype=model.vec_type, device=model.device),
                      zeros((total, 4), dtype=model.dtype, device=model.device, requires_grad=fresh),
                      zeros(total, dtype=model.vec_type, device=model.device, requires_grad=fresh))
        else:
            arrays[0].fill_(-1)
            for a in arrays[2:]:
                a.zero_()
        out.append(arrays)
    for k, idx, key in kept:
        size, slots, _ = contacts[k]
        launch(keep_contacts, (idx.shape[0], size), device=model.device,
               inputs=[q, q0, idx, size] + slots + [held[key], lams[key], inv_dt2, qd_pre, model.body_com, threshold],
               outputs=list(out[k]))
    state.contact_impulses = out
    state.contact_ids = [ids for _, _, ids in contacts]


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
    """False inside a graph capture (nothing can be read back to the host there)."""
    return not is_capturing(device)


def gather_contacts(solver, model: Model, q0, qd, q_pred, dt, fresh: bool) -> list:
    """The contact slots (bodies, points on each, normal, friction, the radii of round features):
    (group size, arrays) for the shape pairs, the ground and the static meshes each (a Tape needs
    each array written by one launch). A group holds the slots of one shape pair, or of one shape
    against the ground or a mesh: contacts between the same two bodies. Taken at the step's start
    ``q0`` with the predicted velocities ``qd`` (speculative: within the margin now or at the step's
    end), where the nearest feature of a resting contact is the one it rests on; a box's edges and
    peaks against meshes at the predicted poses ``q_pred``."""
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
            for k, t in (("pa", vec), ("pb", vec), ("n", vec))] + [
            solver.scratch(model, f"xb_{key}_{k}", (total, 2), model.dtype, fresh=fresh, zero=False)
            for k in ("mu", "rad")]     # (friction and restitution; the radii of round features)

    out = []
    pairs, pair_count = shape_pairs(solver, model, q0, fresh)
    if pair_count:
        cand = model.rigid_pair_candidates
        ids = None             # (all pairs: each keeps its place)
        if pairs is not model.rigid_pairs and can_read_back(dev):
            # the Bvh's pairs come in any order: sort them, and name each by its shapes, so that the
            # next step finds its contacts again (warm_impulses)
            found = pairs.numpy()
            ab = found[:2 * pair_count].reshape(-1, 2).astype(np.int64)
            ab = ab[np.lexsort((ab[:, 1], ab[:, 0]))]
            found[:2 * pair_count] = ab.ravel()
            pairs.assign(found)
            ids = ab[:, 0] * shapes + ab[:, 1]
        out.append((cand, slots("pairs", pair_count * cand), ids))
        launch(gather_pair_contacts, pair_count, device=dev,
               inputs=shape_args + [model.rigid_shape_material, model.rigid_shape_restitution, pairs, cand, margin, dt],
               outputs=out[-1][1])
    if model.ground:
        out.append((8, slots("ground", shapes * 8), None))
        launch(gather_ground_contacts, (shapes, 8), device=dev,
               inputs=shape_args + [model.rigid_shape_material, model.rigid_shape_restitution,
                                    model.vector(model.up_vector), s(model.ground_height), margin, dt],
               outputs=out[-1][1])
    if model.shape_count:
        out.append((32, slots("meshes", shapes * model.shape_count * 32), None))
        launch(gather_mesh_contacts, (shapes, model.shape_count, 8), device=dev,
               inputs=shape_args + [model.rigid_shape_restitution, model.shape_mesh_id, model.shape_mu, margin, dt,
                                    q_pred], outputs=out[-1][1])
    return out

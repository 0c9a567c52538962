"""Rigid-body kernels: penalty contact wrenches (shape pairs, ground) and semi-implicit Euler.

Velocities are world-frame spatial vectors ``(angular, linear of the centre of mass)``; wrenches
``(torque about the centre of mass, force)``. A contact force ``f`` at point ``p`` adds
``((p - c_a) x f, f)`` to body a and the opposite to body b (``c`` the centres of mass), so
contacts conserve linear and angular momentum.
"""
from __future__ import annotations

from ...collision.rigid_contacts import ground_candidate, ground_candidate_count, pair_candidate, \
    pair_candidate_count, point_candidate
from ...kernels import func, kernel
from ...kernels import lang as sk
from ...kernels import types as T
from ...kernels.types import Any
from ...runtime import array
from ..particle.kernels_contact import contact_force, mesh_contact


@func
def shape_frame(body_q: Any, shape_body: Any, shape_xform: Any, s: int):
    """Shape ``s``'s frame in world coordinates (static shapes are placed in the world already)."""
    xf = shape_xform[s]
    b = shape_body[s]
    if b >= 0:
        xf = sk.transform_multiply(body_q[b], xf)
    return xf


@func
def point_velocity(body_q: Any, body_qd: Any, body_com: Any, b: int, p: Any):
    """Velocity of the material point of body ``b`` at ``p`` (zero for the world, ``b`` < 0), and
    the body's centre of mass."""
    v = p * 0.0
    c = p * 1.0
    if b >= 0:
        c = sk.transform_point(body_q[b], body_com[b])
        qd = body_qd[b]
        v = sk.spatial_bottom(qd) + sk.cross(sk.spatial_top(qd), p - c)
    return v, c


@kernel
def eval_rigid_pair_contacts(body_q: array(dtype=Any), body_qd: array(dtype=Any), body_com: array(dtype=Any),
                             shape_body: array(dtype=int), shape_type: array(dtype=int),
                             shape_xform: array(dtype=Any), shape_size: array(dtype=Any),
                             shape_material: array(dtype=Any), pairs: array(dtype=int), f: array(dtype=Any)):
    pair, k = sk.tid()
    a = pairs[2 * pair]
    b = pairs[2 * pair + 1]
    ta = shape_type[a]
    tb = shape_type[b]
    if k >= pair_candidate_count(ta, tb):
        return
    depth, n, p = pair_candidate(ta, shape_frame(body_q, shape_body, shape_xform, a), shape_size[a], tb,
                                 shape_frame(body_q, shape_body, shape_xform, b), shape_size[b], k)
    if depth <= 0.0:
        return
    ba = shape_body[a]
    bb = shape_body[b]
    va, ca = point_velocity(body_q, body_qd, body_com, ba, p)
    vb, cb = point_velocity(body_q, body_qd, body_com, bb, p)
    mat = (shape_material[a] + shape_material[b]) * 0.5
    fc = contact_force(n, va - vb, -depth, mat[0], mat[1], mat[2], mat[3])
    if ba >= 0:
        sk.atomic_add(f, ba, type(body_qd[ba])(sk.cross(p - ca, fc), fc))
    if bb >= 0:
        sk.atomic_sub(f, bb, type(body_qd[bb])(sk.cross(p - cb, fc), fc))


@kernel
def eval_rigid_ground_contacts(body_q: array(dtype=Any), body_qd: array(dtype=Any), body_com: array(dtype=Any),
                               shape_body: array(dtype=int), shape_type: array(dtype=int),
                               shape_xform: array(dtype=Any), shape_size: array(dtype=Any),
                               shape_material: array(dtype=Any), up: Any, height: Any, f: array(dtype=Any)):
    # every shape of a body against the ground plane, with the shape's contact material
    s, k = sk.tid()
    b = shape_body[s]
    kind = shape_type[s]
    if b < 0 or k >= ground_candidate_count(kind):
        return
    depth, p = ground_candidate(kind, shape_frame(body_q, shape_body, shape_xform, s), shape_size[s], k, up, height)
    if depth <= 0.0:
        return
    v, c = point_velocity(body_q, body_qd, body_com, b, p)
    mat = shape_material[s]
    fc = contact_force(up, v, -depth, mat[0], mat[1], mat[2], mat[3])
    sk.atomic_add(f, b, type(body_qd[b])(sk.cross(p - c, fc), fc))


@kernel
def eval_rigid_mesh_contacts(body_q: array(dtype=Any), body_qd: array(dtype=Any), body_com: array(dtype=Any),
                             shape_body: array(dtype=int), shape_type: array(dtype=int),
                             shape_xform: array(dtype=Any), shape_size: array(dtype=Any),
                             mesh_id: array(dtype=T.uint64), mesh_ke: array(dtype=Any), mesh_kd: array(dtype=Any),
                             mesh_kf: array(dtype=Any), mesh_mu: array(dtype=Any), f: array(dtype=Any)):
    # every body shape's candidate points against every static triangle mesh, with the mesh's material
    s, m, k = sk.tid()
    b = shape_body[s]
    kind = shape_type[s]
    if b < 0 or k >= ground_candidate_count(kind):
        return
    size = shape_size[s]
    c, r = point_candidate(kind, shape_frame(body_q, shape_body, shape_xform, s), size, k)
    # look as deep as the shape is large: a box corner (radius 0) inside the mesh is found too
    gap, n = mesh_contact(mesh_id[m], c, r, sk.max(size[0], sk.max(size[1], size[2])))
    if gap >= 0.0:
        return
    p = c - n * r
    v, com = point_velocity(body_q, body_qd, body_com, b, p)
    fc = contact_force(n, v, gap, mesh_ke[m], mesh_kd[m], mesh_kf[m], mesh_mu[m])
    sk.atomic_add(f, b, type(body_qd[b])(sk.cross(p - com, fc), fc))


@kernel
def integrate_bodies(body_q: array(dtype=Any), body_qd: array(dtype=Any), f_ext: array(dtype=Any),
                     f_int: array(dtype=Any), body_com: array(dtype=Any), inv_mass: array(dtype=Any),
                     inertia: array(dtype=Any), inv_inertia: array(dtype=Any), gravity: Any, angular_damping: Any,
                     dt: Any, q_out: array(dtype=Any), qd_out: array(dtype=Any)):
    # semi-implicit Euler: v' = v + (f / m + g) dt; in the body frame w' = w + I^-1 (tau - w x I w) dt
    # (gyroscopic term explicit); the centre of mass moves with v', the rotation with w'
    i = sk.tid()
    q = body_q[i]
    qd = body_qd[i]
    wrench = f_ext[i] + f_int[i]
    x0 = sk.transform_get_translation(q)
    r0 = sk.transform_get_rotation(q)
    w0 = sk.spatial_top(qd)
    v0 = sk.spatial_bottom(qd)
    com = x0 + sk.quat_rotate(r0, body_com[i])
    w1 = w0
    v1 = v0
    if inv_mass[i] > 0.0:
        v1 = v0 + (sk.spatial_bottom(wrench) * inv_mass[i] + gravity) * dt
        wb = sk.quat_rotate_inv(r0, w0)
        tb = sk.quat_rotate_inv(r0, sk.spatial_top(wrench)) - sk.cross(wb, inertia[i] * wb)
        w1 = sk.quat_rotate(r0, wb + inv_inertia[i] * tb * dt) * (1.0 - angular_damping * dt)
    r1 = sk.normalize(r0 + type(r0)(w1, dt * 0.0) * r0 * (0.5 * dt))
    com1 = com + v1 * dt
    q_out[i] = type(q)(com1 - sk.quat_rotate(r1, body_com[i]), r1)
    qd_out[i] = type(qd)(w1, v1)

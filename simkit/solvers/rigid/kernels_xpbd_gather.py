"""XPBD contact gathering: the penalty solver's contact candidates (``collision/rigid_contacts.py``)
at the predicted poses, into fixed slots that ``kernels_xpbd.solve_contact_groups`` projects.

Each active slot keeps its two bodies (-1: the world), the contact's point on each in that body's
frame (``p`` on the first, ``p + n depth`` on the second), the world normal pushing the first body,
the friction coefficient and the coefficient of restitution (``c_mu``'s two columns), and the
radii of round features; an empty slot holds bodies (-1, -1). Slots come in groups of one
body pair: a shape pair's candidates, a shape's 8 ground candidates, a shape's 32 candidates
against one static mesh.
"""
from __future__ import annotations

from ... import collision  # noqa: F401 - registers the mesh builtins
from ...collision.rigid_contacts import box_pair_mode, ground_candidate, ground_candidate_count, \
    pair_candidate_count, pair_candidate_in_mode, point_candidate
from ...kernels import func, kernel
from ...kernels import lang as sk
from ...kernels import types as T
from ...kernels.types import Any
from ...runtime import array, array2d
from ..particle.kernels_contact import mesh_contact
from .kernels import mesh_box_edge, mesh_box_vertex, mesh_face_plane, point_velocity, shape_frame


@func
def write_contact(slot: int, depth: Any, n: Any, p: Any, ba: int, bb: int, mu: Any, bounce: Any, margin: Any,
                  dt: Any, body_q: Any, body_qd: Any, body_com: Any, c_body: Any, c_pa: Any, c_pb: Any, c_n: Any,
                  c_mu: Any, c_rad: Any, rad_a: Any, rad_b: Any):
    """Fill contact ``slot`` if it touches within ``margin`` now or after ``dt`` at the bodies'
    velocities ``body_qd`` (speculative: depth - dt n . (v_a - v_b)), or mark it empty. ``rad_a``,
    ``rad_b``: the radius of a round feature (sphere, capsule) at the contact on a, b (0: a corner,
    an edge, a face): its point is kept as the sphere's centre, so that rolling keeps the contact
    at the bottom of the sphere (a point fixed to the body would turn away with it)."""
    va, ca = point_velocity(body_q, body_qd, body_com, ba, p)
    vb, cb = point_velocity(body_q, body_qd, body_com, bb, p)
    ahead = depth - sk.dot(n, va - vb) * dt
    if sk.max(depth, ahead) > -margin and sk.length(n) > 0.0:
        pa = p + n * rad_a
        pb = p + n * (depth - rad_b)
        c_rad[slot, 0] = rad_a
        c_rad[slot, 1] = rad_b
        if ba >= 0:
            pa = sk.transform_point(sk.transform_inverse(body_q[ba]), pa)
        if bb >= 0:
            pb = sk.transform_point(sk.transform_inverse(body_q[bb]), pb)
        c_body[slot, 0] = ba
        c_body[slot, 1] = bb
        c_pa[slot] = pa
        c_pb[slot] = pb
        c_n[slot] = n
        c_mu[slot, 0] = mu
        c_mu[slot, 1] = bounce
    else:
        c_body[slot, 0] = -1
        c_body[slot, 1] = -1


@kernel
def gather_pair_contacts(body_q: array(dtype=Any), body_qd: array(dtype=Any), body_com: array(dtype=Any),
                         shape_body: array(dtype=int), shape_type: array(dtype=int), shape_xform: array(dtype=Any),
                         shape_size: array(dtype=Any), shape_material: array(dtype=Any),
                         shape_restitution: array(dtype=Any), pairs: array(dtype=int), candidates: int, margin: Any,
                         dt: Any,
                         c_body: array2d(dtype=int), c_pa: array(dtype=Any), c_pb: array(dtype=Any),
                         c_n: array(dtype=Any), c_mu: array2d(dtype=Any), c_rad: array2d(dtype=Any)):
    # one thread per pair: two boxes' separating-axis test serves all 25 of their candidates
    pair = sk.tid()
    a = pairs[2 * pair]
    b = pairs[2 * pair + 1]
    ta = shape_type[a]
    tb = shape_type[b]
    xa = shape_frame(body_q, shape_body, shape_xform, a)
    xb = shape_frame(body_q, shape_body, shape_xform, b)
    sa = shape_size[a]
    sb = shape_size[b]
    face, fi, edge, ea, eb, u, edge_mode = box_pair_mode(ta, xa, sa, tb, xb, sb)
    mu = (shape_material[a][3] + shape_material[b][3]) * 0.5
    bounce = (shape_restitution[a] + shape_restitution[b]) * 0.5
    rad_a = sa[0] * 0.0          # (spheres and capsules are round: their size[0] is the radius)
    rad_b = rad_a
    if ta != 1:
        rad_a = sa[0]
    if tb != 1:
        rad_b = sb[0]
    for k in range(candidates):
        depth = margin * -2.0
        n = sk.transform_get_translation(shape_xform[a]) * 0.0
        p = n
        if k < pair_candidate_count(ta, tb):
            depth, n, p = pair_candidate_in_mode(ta, xa, sa, tb, xb, sb, k, face, fi, edge, ea, eb, u, edge_mode)
        write_contact(pair * candidates + k, depth, n, p, shape_body[a], shape_body[b], mu, bounce, margin, dt, body_q,
                      body_qd, body_com, c_body, c_pa, c_pb, c_n, c_mu, c_rad, rad_a, rad_b)


@kernel
def gather_ground_contacts(body_q: array(dtype=Any), body_qd: array(dtype=Any), body_com: array(dtype=Any),
                           shape_body: array(dtype=int), shape_type: array(dtype=int), shape_xform: array(dtype=Any),
                           shape_size: array(dtype=Any), shape_material: array(dtype=Any),
                           shape_restitution: array(dtype=Any), up: Any, height: Any, margin: Any, dt: Any,
                           c_body: array2d(dtype=int), c_pa: array(dtype=Any), c_pb: array(dtype=Any),
                           c_n: array(dtype=Any), c_mu: array2d(dtype=Any), c_rad: array2d(dtype=Any)):
    s, k = sk.tid()
    b = shape_body[s]
    kind = shape_type[s]
    depth = margin * -2.0
    p = up * 0.0
    n = up * 0.0           # (no candidate k: a zero normal marks the slot empty, however fast the body turns)
    if b >= 0 and k < ground_candidate_count(kind):
        depth, p = ground_candidate(kind, shape_frame(body_q, shape_body, shape_xform, s), shape_size[s], k, up,
                                    height)
        n = up
    rad = shape_size[s][0] * 0.0
    if kind != 1:
        rad = shape_size[s][0]
    write_contact(s * 8 + k, depth, n, p, b, -1, shape_material[s][3], shape_restitution[s], margin, dt, body_q,
                  body_qd, body_com, c_body, c_pa, c_pb, c_n, c_mu, c_rad, rad, rad * 0.0)


@kernel
def gather_mesh_contacts(body_q: array(dtype=Any), body_qd: array(dtype=Any), body_com: array(dtype=Any),
                         shape_body: array(dtype=int), shape_type: array(dtype=int), shape_xform: array(dtype=Any),
                         shape_size: array(dtype=Any), shape_restitution: array(dtype=Any),
                         mesh_id: array(dtype=T.uint64), mesh_mu: array(dtype=Any), margin: Any, dt: Any,
                         body_q_pred: array(dtype=Any), c_body: array2d(dtype=int), c_pa: array(dtype=Any),
                         c_pb: array(dtype=Any), c_n: array(dtype=Any), c_mu: array2d(dtype=Any),
                         c_rad: array2d(dtype=Any)):
    # slots (shape, mesh, k, j): j = 0 the candidate point k (at the step's start, speculative); at
    # the predicted poses, touching only: j = 1, 2 a box's edges k and k + 8 across mesh ridges, j = 3
    # the deepest mesh peak in the box's octant k
    s, m, k = sk.tid()
    slot = ((s * mesh_id.shape[0] + m) * 8 + k) * 4
    b = shape_body[s]
    kind = shape_type[s]
    size = shape_size[s]
    xf = shape_frame(body_q, shape_body, shape_xform, s)
    depth = margin * -2.0
    n = size * 0.0
    p = n
    rad = size[0] * 0.0
    if b >= 0 and k < ground_candidate_count(kind):
        c, r = point_candidate(kind, xf, size, k)
        rad = r
        reach = sk.max(margin, sk.max(size[0], sk.max(size[1], size[2])))
        gap, n = mesh_contact(mesh_id[m], c, r, reach)
        if sk.abs(gap + r) < 1.0e-3:
            # within 1 mm of the surface the closest point's direction is float32 noise (a corner
            # resting on a face): the nearest face's plane and normal instead
            h, nf = mesh_face_plane(mesh_id[m], c, reach)
            if sk.length(nf) > 0.0:
                gap = h - r
                n = nf
        depth = -gap
        p = c - n * r
    write_contact(slot, depth, n, p, b, -1, mesh_mu[m], shape_restitution[s], margin, dt, body_q, body_qd, body_com,
                  c_body, c_pa, c_pb, c_n, c_mu, c_rad, rad, rad * 0.0)
    xf = shape_frame(body_q_pred, shape_body, shape_xform, s)
    for j in range(1, 4):
        e = k + (j - 1) * 8
        depth = margin * -2.0
        if b >= 0 and kind == 1:
            if j == 3:
                depth, n, p = mesh_box_vertex(mesh_id[m], xf, size, k)
            elif e < 12:
                depth, n, p = mesh_box_edge(mesh_id[m], xf, size, e)
            if depth <= 0.0:   # (no ridge or peak: no contact, not a nearby one)
                depth = margin * -2.0
        write_contact(slot + j, depth, n, p, b, -1, mesh_mu[m], shape_restitution[s], margin, dt * 0.0, body_q_pred,
                      body_qd, body_com, c_body, c_pa, c_pb, c_n, c_mu, c_rad, rad * 0.0, rad * 0.0)

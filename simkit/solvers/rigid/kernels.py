"""Rigid-body kernels: penalty contact wrenches (shape pairs, ground) and semi-implicit Euler.

Velocities are world-frame spatial vectors ``(angular, linear of the centre of mass)``; wrenches
``(torque about the centre of mass, force)``. A contact force ``f`` at point ``p`` adds
``((p - c_a) x f, f)`` to body a and the opposite to body b (``c`` the centres of mass), so
contacts conserve linear and angular momentum.
"""
from __future__ import annotations

from ...collision.rigid_contacts import (
    box_corner,
    box_edge,
    box_pair_mode,
    ground_candidate,
    ground_candidate_count,
    nearest_face,
    pair_candidate_count,
    pair_candidate_in_mode,
    point_candidate,
)
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
    ba = shape_body[a]
    bb = shape_body[b]
    mat = (shape_material[a] + shape_material[b]) * 0.5
    for k in range(pair_candidate_count(ta, tb)):
        depth, n, p = pair_candidate_in_mode(ta, xa, sa, tb, xb, sb, k, face, fi, edge, ea, eb, u, edge_mode)
        if depth > 0.0:
            va, ca = point_velocity(body_q, body_qd, body_com, ba, p)
            vb, cb = point_velocity(body_q, body_qd, body_com, bb, p)
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


@func
def mesh_face_plane(mesh: T.uint64, x: Any, max_dist: Any):
    """(signed distance of ``x`` to the plane of the mesh face nearest to it, that face's normal);
    ``max_dist`` and a zero normal when no face is that close."""
    q = sk.mesh_query_point_sign_normal(mesh, T.vec3(x), T.float32(max_dist))
    h = max_dist * 1.0
    n = x * 0.0
    if q.result:
        n = type(x)(sk.mesh_eval_face_normal(mesh, q.face))
        h = sk.dot(n, x - type(x)(sk.mesh_eval_position(mesh, q.face, q.u, q.v)))
    return h, n


@func
def mesh_box_edge(mesh: T.uint64, xf: Any, size: Any, e: int):
    """(depth [m], unit normal pushing the box, point) of edge ``e`` (0-11) of a box (frame ``xf``,
    half extents ``size``) across a ridge of a static triangle mesh (a convex crease, between the
    box's corners): the edge's deepest point in the mesh (a golden-section search of the mesh's
    signed distance along it, skipped when its middle is further from the mesh than half its
    length); the planes of the faces nearest to the points just before and after it, if they meet
    at more than 3 degrees, make the ridge: the depth of the edge below the ridge line, along their
    common normal (``box_box_edges``' measure). A depth <= 0 otherwise (the deepest point at an end
    of the edge, on a face, or in a valley: the corners have it)."""
    a, b = box_edge(xf, size, e)
    d = b - a
    length = sk.length(d)
    u = d / length
    far = sk.max(size[0], sk.max(size[1], size[2])) * 2.0
    zero = length * 0.0
    depth = -length
    n = d * 0.0
    p = a
    mid, nm = mesh_contact(mesh, a + d * 0.5, zero, length * 0.5)
    if mid < length * 0.5:
        lo = zero
        hi = zero + 1.0
        for _ in range(28):    # (a dynamic loop) the bracket shrinks to 0.618^28 = 1.4e-6
            m1 = lo + (hi - lo) * 0.381966
            m2 = lo + (hi - lo) * 0.618034
            g1, n1 = mesh_contact(mesh, a + d * m1, zero, far)
            g2, n2 = mesh_contact(mesh, a + d * m2, zero, far)
            if g1 <= g2:
                hi = m2
            else:
                lo = m1
        t = (lo + hi) * 0.5
        eps = length * 1.0e-3
        if t * length > eps * 2.0 and (1.0 - t) * length > eps * 2.0:
            c = a + d * t
            h1, n1 = mesh_face_plane(mesh, c - u * eps, far)
            h2, n2 = mesh_face_plane(mesh, c + u * eps, far)
            h1 = h1 + eps * sk.dot(n1, u)      # the planes' distances at c
            h2 = h2 - eps * sk.dot(n2, u)
            ridge = sk.cross(n1, n2)
            c12 = sk.dot(n1, n2)
            axis = sk.cross(u, ridge)
            la = sk.length(axis)
            if sk.length(ridge) > 0.05 and la > 1.0e-3 * sk.length(ridge):
                axis = axis / la
                if sk.dot(axis, n1 + n2) < 0.0:
                    axis = -axis
                # the ridge's point w from c in the planes' span: n1.w = -h1, n2.w = -h2
                det = 1.0 - c12 * c12
                al = (-h1 + h2 * c12) / det
                be = (-h2 + h1 * c12) / det
                w = n1 * al + n2 * be
                depth = sk.dot(w, axis)
                n = axis
                p = c + w * 0.5
    return depth, n, p


@func
def mesh_vertex_peak(mesh: T.uint64, x: T.vec3):
    """Whether the static triangle mesh's vertex at ``x`` is a peak (a convex corner): every mesh
    edge from it descends more than 1.5 degrees (sin 0.026) below the plane through it square to
    its angle-weighted normal. Its faces are those with a corner at ``x`` (split vertices count as
    one) among a box query at ``x``. Not a peak: a vertex of a flat region, of a straight crease or
    boundary, of a valley or a saddle."""
    e = (sk.abs(x[0]) + sk.abs(x[1]) + sk.abs(x[2]) + 1.0) * 1.0e-6
    pad = T.vec3(e, e, e)
    nv = x * 0.0
    q = sk.mesh_query_aabb(mesh, x - pad, x + pad)
    f = int(0)
    while sk.mesh_query_aabb_next(q, f):
        for j in range(3):
            if sk.mesh_get_point(mesh, 3 * f + j) == x:
                a = sk.normalize(sk.mesh_get_point(mesh, 3 * f + (j + 1) % 3) - x)
                b = sk.normalize(sk.mesh_get_point(mesh, 3 * f + (j + 2) % 3) - x)
                nv = nv + sk.mesh_eval_face_normal(mesh, f) * sk.acos(sk.dot(a, b))
    peak = sk.length(nv) > 0.0
    nv = sk.normalize(nv)
    q2 = sk.mesh_query_aabb(mesh, x - pad, x + pad)
    while sk.mesh_query_aabb_next(q2, f):
        for j in range(3):
            if sk.mesh_get_point(mesh, 3 * f + j) == x:
                for o in range(1, 3):
                    w = sk.mesh_get_point(mesh, 3 * f + (j + o) % 3) - x
                    if sk.dot(nv, w) > -0.026 * sk.length(w):
                        peak = False
    return peak


@func
def mesh_box_vertex(mesh: T.uint64, xf: Any, size: Any, k: int):
    """(depth [m], unit normal pushing the box, point) of the deepest peak (``mesh_vertex_peak``) of a
    static triangle mesh inside a box (frame ``xf``, half extents ``size``) in the box's octant ``k``
    (the octant of corner ``k``: bits -x, -y, -z of the vertex's box coordinates), pushed out
    through the box face nearest to it, as deep as it is below that face; the point is the vertex.
    A depth <= 0 if none. The mesh's convex corners inside the box are corners of the overlap, like
    the box's corners inside the mesh (``point_candidate``) and its edges across the mesh's ridges
    (``mesh_box_edge``): a pyramid's apex, a spike's tip, a block's or a step's corners (one per
    octant: a box lying on a small block gets its 4). Vertices of flat regions and straight creases
    are no peaks, so a box lying on a tessellated plane or across a ridge gets no extra contact.
    The faces overlapping the octant's bounding box are scanned; a vertex deeper than the best peak so
    far is tested (at most 8 tests per call; a vertex is not tested when seen through a face lying
    within 0.5 degrees flat against the box face nearest to it: a peak has faces that do not, so a
    box lying level on a tessellated plane tests nothing). The search carries no gradient: the
    depth is recomputed from the vertex found, so it and the normal are differentiable with respect
    to the box's frame (the vertex is static)."""
    inv = sk.transform_inverse(xf)
    rot = sk.transform_get_rotation(xf)
    r = sk.quat_to_matrix(rot)
    c = sk.transform_get_translation(xf)
    half = size * 0.5          # the octant: half extents size / 2 around the middle of corner k and the centre
    oc = box_corner(xf, half, k)
    ext = size * 0.0
    for i in range(3):
        for j in range(3):
            ext[i] = ext[i] + sk.abs(r[i, j]) * half[j]
    pad = (sk.abs(oc[0]) + sk.abs(oc[1]) + sk.abs(oc[2])) * 1.0e-6     # (float32 rounding)
    ext = ext * 1.00001 + type(size)(pad, pad, pad)
    best = int(-1)
    bd = size[0] * 0.0
    bv = int(-1)
    rejected = int(-1)
    budget = int(8)
    q = sk.mesh_query_aabb(mesh, T.vec3(oc - ext), T.vec3(oc + ext))
    f = int(0)
    while sk.mesh_query_aabb_next(q, f):
        nf = sk.quat_rotate_inv(rot, type(size)(sk.mesh_eval_face_normal(mesh, f)))    # box coordinates
        for j in range(3):
            v = sk.mesh_get_index(mesh, 3 * f + j)
            x = sk.mesh_get_point(mesh, 3 * f + j)
            local = sk.transform_point(inv, type(size)(x))
            gap, out = nearest_face(local, size)
            octant = int(0)
            if local[0] < 0.0:
                octant = octant + 1
            if local[1] < 0.0:
                octant = octant + 2
            if local[2] < 0.0:
                octant = octant + 4
            deeper = gap > bd or (best >= 0 and gap == bd and v > bv)
            if octant == k and deeper and v != rejected and budget > 0 and sk.dot(nf, out) > -0.99996:
                budget = budget - 1
                if mesh_vertex_peak(mesh, x):
                    best = 3 * f + j
                    bd = gap
                    bv = v
                else:
                    rejected = v
    depth = size[0] * -1.0
    n = size * 0.0
    p = c * 1.0
    if best >= 0:
        p = type(size)(sk.mesh_get_point(mesh, best))
        gap, out = nearest_face(sk.transform_point(inv, p), size)
        depth = gap
        n = -sk.transform_vector(xf, out)
    return depth, n, p


@func
def add_mesh_contact(body_q: Any, body_qd: Any, body_com: Any, b: int, depth: Any, n: Any, p: Any, ke: Any,
                     kd: Any, kf: Any, mu: Any, f: Any):
    """The penalty wrench on body ``b`` of a contact ``depth`` deep at ``p``, normal ``n`` (> 0: touching)."""
    if depth > 0.0:
        v, com = point_velocity(body_q, body_qd, body_com, b, p)
        fc = contact_force(n, v, -depth, ke, kd, kf, mu)
        sk.atomic_add(f, b, type(body_qd[b])(sk.cross(p - com, fc), fc))


@kernel
def eval_rigid_mesh_contacts(body_q: array(dtype=Any), body_qd: array(dtype=Any), body_com: array(dtype=Any),
                             shape_body: array(dtype=int), shape_type: array(dtype=int),
                             shape_xform: array(dtype=Any), shape_size: array(dtype=Any),
                             mesh_id: array(dtype=T.uint64), mesh_ke: array(dtype=Any), mesh_kd: array(dtype=Any),
                             mesh_kf: array(dtype=Any), mesh_mu: array(dtype=Any), f: array(dtype=Any)):
    # every body shape's candidate points against every static triangle mesh, with the mesh's material;
    # a box's thread k also has its edge k (and k + 8 for k < 4) against mesh ridges, and the mesh's
    # deepest peak in its octant k
    s, m, k = sk.tid()
    b = shape_body[s]
    kind = shape_type[s]
    if b < 0 or k >= ground_candidate_count(kind):
        return
    size = shape_size[s]
    xf = shape_frame(body_q, shape_body, shape_xform, s)
    c, r = point_candidate(kind, xf, size, k)
    # look as deep as the shape is large: a box corner (radius 0) inside the mesh is found too
    gap, n = mesh_contact(mesh_id[m], c, r, sk.max(size[0], sk.max(size[1], size[2])))
    add_mesh_contact(body_q, body_qd, body_com, b, -gap, n, c - n * r, mesh_ke[m], mesh_kd[m], mesh_kf[m],
                     mesh_mu[m], f)
    if kind == 1:
        for e in range(k, 12, 8):
            depth, ne, p = mesh_box_edge(mesh_id[m], xf, size, e)
            add_mesh_contact(body_q, body_qd, body_com, b, depth, ne, p, mesh_ke[m], mesh_kd[m], mesh_kf[m],
                             mesh_mu[m], f)
        depth, nv, pv = mesh_box_vertex(mesh_id[m], xf, size, k)
        add_mesh_contact(body_q, body_qd, body_com, b, depth, nv, pv, mesh_ke[m], mesh_kd[m], mesh_kf[m],
                         mesh_mu[m], f)


@func
def turned(r: Any, w: Any, dt: Any):
    """The rotation ``r`` turned by ``w`` [rad/s] (world) over ``dt``: by the angle |w| dt about w,
    exactly (the first-order update r + dt/2 (w, 0) r turns by 2 atan(|w| dt / 2), short by
    (|w| dt)^3 / 12: XPBD, which takes velocities back from poses, lost 40% of a free spin at 20
    rad/s in a second). Smooth at w = 0 (a series below a 1e-4 rad half angle, no square root)."""
    ww = sk.dot(w, w)
    half2 = ww * dt * dt * 0.25
    s = dt * 0.5 * (1.0 - half2 / 6.0)          # sin(half) / |w|
    c = 1.0 - half2 * 0.5                       # cos(half)
    if half2 > 1.0e-8:
        lw = sk.sqrt(ww)
        s = sk.sin(lw * dt * 0.5) / lw
        c = sk.cos(lw * dt * 0.5)
    return sk.normalize(type(r)(w * s, c) * r)


@func
def rotation_rate(v: Any, c: Any, dt: Any):
    """The angular velocity [rad/s] that turns by the unit quaternion (``v``, ``c``), c >= 0, in
    ``dt``: 2 atan2(|v|, c) / dt about v, exactly (``turned``'s inverse; smooth at no turn)."""
    vv = sk.dot(v, v)
    f = (1.0 - vv / (3.0 * c * c)) / c          # atan2(|v|, c) / |v|, a series
    if vv > 1.0e-8:
        lv = sk.sqrt(vv)
        f = sk.atan2(lv, c) / lv
    return v * (2.0 * f / dt)


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
    r1 = turned(r0, w1, dt)
    com1 = com + v1 * dt
    q_out[i] = type(q)(com1 - sk.quat_rotate(r1, body_com[i]), r1)
    qd_out[i] = type(qd)(w1, v1)

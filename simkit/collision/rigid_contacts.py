"""Narrow phase for rigid shapes (spheres, boxes, capsules): contact candidates as kernel functions.

A pair of shapes (or a shape and the ground plane) is tested at a fixed number of candidate points
``k``, so a kernel launched over (pairs, candidates) handles every pair in parallel without
allocating. Each candidate gives a penetration depth (> 0: touching), the unit normal along which
the first shape is pushed, and the contact point, all in world coordinates:

- sphere / capsule against sphere / capsule (both are points within a radius of a segment; a
  sphere's segment has length 0): one candidate, the closest points of the two segments
  (``closest_point_edge_edge``);
- box against sphere: one candidate, the sphere's centre against the box (closest point on the box,
  or, for a centre inside, the nearest face);
- box against capsule: two spheres on the capsule's segment (``box_segment``), the ends of the
  stretch of it that lies over the box face nearest to its deepest point, widened to include that
  point. Lying on a face, these are the capsule's end spheres; lying across a face, the points
  above the face's edges; across a box edge (or a box edge pushed into its middle), the deepest
  point, found by a golden-section search of the box's signed distance (convex along a segment);
- box against box: the 8 corners of each inside the other (``k`` < 8: a's corners in b, else b's
  in a), pushed out through the nearest face (face contacts and stacking), and one edge-edge
  candidate (``box_box_edges``): when the separating-axis test's axis of least overlap is the cross
  product of an edge of each (face axes win ties, so boxes lying face on face keep their corner
  contacts only), the midpoint of the two supporting edges' closest points, that overlap deep;
- against the ground plane and static triangle meshes: a sphere's centre, a capsule's two end
  spheres, a box's 8 corners (a mesh edge or vertex poking into a box face between corners is
  missed).

All are differentiable almost everywhere (the kinks are where the nearest feature changes; the
searched deepest point carries no gradient itself, as the depth is stationary there).
"""
from __future__ import annotations

from ..kernels import func
from ..kernels import lang as sk
from ..kernels.types import Any

SPHERE, BOX, CAPSULE = 0, 1, 2


@func
def pair_candidate_count(ta: int, tb: int):
    """Candidates of a pair of shape types (the box first, as ``ModelBuilder`` orders pairs)."""
    if ta == 1:
        if tb == 1:
            return 17
        if tb == 2:
            return 2
    return 1


@func
def ground_candidate_count(kind: int):
    """Candidates of a shape against the ground: 1 (sphere), 8 (box corners), 2 (capsule ends)."""
    if kind == 1:
        return 8
    if kind == 2:
        return 2
    return 1


@func
def segment_end(kind: int, xf: Any, size: Any, end: int):
    """End ``end`` (0 or 1) of a sphere's (its centre) or a capsule's segment, world coordinates."""
    e = size * 0.0
    if kind == 2:
        e[1] = size[1]
        if end == 0:
            e[1] = -size[1]
    return sk.transform_point(xf, e)


@func
def box_corner(xf: Any, size: Any, k: int):
    """Corner ``k`` (bits: -x, -y, -z) of a box of half extents ``size``, world coordinates."""
    c = size * 1.0
    if k & 1 != 0:
        c[0] = -c[0]
    if k & 2 != 0:
        c[1] = -c[1]
    if k & 4 != 0:
        c[2] = -c[2]
    return sk.transform_point(xf, c)


@func
def sphere_sphere(ca: Any, ra: Any, cb: Any, rb: Any):
    """(depth, normal pushing a, midpoint of the overlap) of spheres a and b."""
    d = ca - cb
    dist = sk.length(d)
    n = d * 0.0
    n[1] = n[1] + 1.0                      # coincident centres: push along +y
    if dist > 0.0:
        n = d / dist
    depth = ra + rb - dist
    return depth, n, (ca - n * ra + cb + n * rb) * 0.5


@func
def clamp_to_box(local: Any, half: Any):
    """The point of a box (half extents ``half``) nearest to ``local`` (box coordinates)."""
    q = local * 1.0
    for i in range(3):
        q[i] = sk.clamp(local[i], -half[i], half[i])
    return q


@func
def box_sphere(xa: Any, ha: Any, c: Any, r: Any):
    """(depth, normal pushing the box, point) of a box (frame ``xa``, half extents ``ha``) and a
    sphere (centre ``c``, radius ``r``)."""
    local = sk.transform_point(sk.transform_inverse(xa), c)
    q = clamp_to_box(local, ha)
    d = local - q
    dist = sk.length(d)
    n = d * 0.0
    depth = r - dist
    p = q * 1.0
    if dist > 0.0:
        n = -d / dist
        p = (q + local + n * r) * 0.5
    else:  # the centre is inside: out through the nearest face
        gap, out = nearest_face(local, ha)
        n = -out
        depth = r + gap
        p = local
    return depth, sk.transform_vector(xa, n), sk.transform_point(xa, p)


@func
def nearest_face(local: Any, half: Any):
    """(depth below it, outward normal) of the face of a box (half extents ``half``) nearest to
    ``local`` (box coordinates; a negative depth: outside that face)."""
    axis = int(0)
    gap = half[0] - sk.abs(local[0])
    for i in range(1, 3):
        g = half[i] - sk.abs(local[i])
        if g < gap:
            gap = g
            axis = i
    n = local * 0.0
    n[axis] = sk.sign(local[axis])              # sign(0) = 1
    return gap, n


@func
def point_in_box(xb: Any, hb: Any, c: Any):
    """(depth, normal, point) of a point ``c`` inside a box (frame ``xb``, half extents ``hb``): the
    depth below the nearest face (<= 0: outside) and that face's outward normal."""
    gap, n = nearest_face(sk.transform_point(sk.transform_inverse(xb), c), hb)
    return gap, sk.transform_vector(xb, n), c


@func
def box_distance(local: Any, half: Any):
    """Signed distance [m] of ``local`` (box coordinates) to a box of half extents ``half`` (< 0:
    inside, minus the depth below the nearest face)."""
    dist = sk.length(local - clamp_to_box(local, half))
    if dist > 0.0:
        return dist
    gap, n = nearest_face(local, half)
    return -gap


@func
def box_segment(xa: Any, ha: Any, b0: Any, b1: Any, r: Any, k: int):
    """Candidate ``k`` (0, 1) of a box (frame ``xa``, half extents ``ha``) and a capsule (segment
    ``b0``-``b1``, world coordinates, radius ``r``): (depth, normal pushing the box, point) of the
    sphere at one end of the stretch of the segment over the box face nearest to the segment's
    deepest point, the stretch widened to include that point."""
    inv = sk.transform_inverse(xa)
    p0 = sk.transform_point(inv, b0)
    d = sk.transform_point(inv, b1) - p0
    # the deepest point: the signed distance to a box is convex, and so along a segment
    lo = ha[0] * 0.0
    hi = lo + 1.0
    for _ in range(40):        # (a dynamic loop) the bracket shrinks to 0.618^40 = 4e-9
        m1 = lo + (hi - lo) * 0.381966
        m2 = lo + (hi - lo) * 0.618034
        if box_distance(p0 + d * m1, ha) <= box_distance(p0 + d * m2, ha):
            hi = m2
        else:
            lo = m1
    deepest = (lo + hi) * 0.5
    c = p0 + d * deepest
    # its face: the axis along which it lies furthest out (or least deep), then the stretch of the
    # segment within the other two slabs of the box
    axis = int(0)
    for i in range(1, 3):
        if sk.abs(c[i]) - ha[i] > sk.abs(c[axis]) - ha[axis]:
            axis = i
    s0 = ha[0] * 0.0
    s1 = s0 + 1.0
    for i in range(3):
        if i != axis:
            if sk.abs(d[i]) > 1.0e-9 * (sk.abs(p0[i]) + ha[i]):
                t0 = (-ha[i] - p0[i]) / d[i]
                t1 = (ha[i] - p0[i]) / d[i]
                s0 = sk.max(s0, sk.min(t0, t1))
                s1 = sk.min(s1, sk.max(t0, t1))
            elif sk.abs(p0[i]) > ha[i]:
                s0 = s1 + 1.0
    t = deepest
    if s0 <= s1:
        t = sk.min(s0, deepest)
        if k == 1:
            t = sk.max(s1, deepest)
    depth, n, p = box_sphere(xa, ha, b0 + (b1 - b0) * t, r)
    if k == 1 and s0 > s1:     # the stretch is the deepest point alone: candidate 0 has it
        depth = -r
    return depth, n, p


@func
def box_axis(xf: Any, half: Any, k: int):
    """Unit axis ``k`` of a box's frame, world coordinates."""
    e = half * 0.0
    e[k] = e[k] + 1.0
    return sk.transform_vector(xf, e)


@func
def box_extent(xf: Any, half: Any, u: Any):
    """Half the extent of a box along the unit direction ``u``."""
    e = half[0] * 0.0
    for i in range(3):
        e = e + half[i] * sk.abs(sk.dot(box_axis(xf, half, i), u))
    return e


@func
def sat_overlap(xa: Any, ha: Any, xb: Any, hb: Any, u: Any):
    """Overlap [m] of the projections of boxes a and b on the unit axis ``u`` (< 0: separated)."""
    t = sk.transform_get_translation(xb) - sk.transform_get_translation(xa)
    return box_extent(xa, ha, u) + box_extent(xb, hb, u) - sk.abs(sk.dot(t, u))


@func
def support_edge(xf: Any, half: Any, k: int, u: Any):
    """Ends of the edge along axis ``k`` of a box furthest along the direction ``u``."""
    c = sk.transform_get_translation(xf)
    for i in range(3):
        if i != k:
            a = box_axis(xf, half, i)
            c = c + a * (half[i] * sk.sign(sk.dot(a, u)))
    e = box_axis(xf, half, k) * half[k]
    return c - e, c + e


@func
def box_box_edges(xa: Any, ha: Any, xb: Any, hb: Any):
    """(depth, normal pushing a, point) of boxes a and b touching edge to edge: the separating-axis
    test over the 15 axes; when the axis of least overlap is the cross product of an edge of each
    (by a margin: 95% of the least face overlap, less 1e-6 of the sizes), the midpoint of the
    supporting edges' closest points, that overlap deep; otherwise a depth <= 0 (< 0: separated)."""
    face = sat_overlap(xa, ha, xb, hb, box_axis(xa, ha, 0))
    for i in range(3):
        face = sk.min(face, sat_overlap(xa, ha, xb, hb, box_axis(xa, ha, i)))
        face = sk.min(face, sat_overlap(xa, ha, xb, hb, box_axis(xb, hb, i)))
    edge = face
    ea = int(-1)
    eb = int(-1)
    u = ha * 0.0
    for i in range(3):
        for j in range(3):
            c = sk.cross(box_axis(xa, ha, i), box_axis(xb, hb, j))
            lc = sk.length(c)
            if lc > 1.0e-3:         # not (nearly) parallel edges
                o = sat_overlap(xa, ha, xb, hb, c / lc)
                if ea < 0 or o < edge:
                    edge = o
                    ea = i
                    eb = j
                    u = c / lc
    tol = (ha[0] + ha[1] + ha[2] + hb[0] + hb[1] + hb[2]) * 1.0e-6
    depth = sk.min(face, face * 0.0)
    n = u * 0.0
    p = sk.transform_get_translation(xa)
    if ea >= 0 and edge < face * 0.95 - tol:
        t = sk.transform_get_translation(xb) - sk.transform_get_translation(xa)
        if sk.dot(t, u) < 0.0:     # u from a towards b
            u = -u
        a0, a1 = support_edge(xa, ha, ea, u)
        b0, b1 = support_edge(xb, hb, eb, -u)
        st = sk.closest_point_edge_edge(a0, a1, b0, b1, ha[0] * 0.0 + 1.0e-12)
        depth = edge
        n = -u
        p = (a0 + (a1 - a0) * st[0] + b0 + (b1 - b0) * st[1]) * 0.5
    return depth, n, p


@func
def pair_candidate(ta: int, xa: Any, sa: Any, tb: int, xb: Any, sb: Any, k: int):
    """Candidate ``k`` of shapes a and b (world frames ``xa``, ``xb``; sizes ``sa``, ``sb``; the box
    first): (depth [m], unit normal pushing a away from b, contact point)."""
    depth = sa[0] * 0.0
    n = sa * 0.0
    p = sa * 0.0
    if ta == 1 and tb == 1:
        if k < 8:
            depth, n, p = point_in_box(xb, sb, box_corner(xa, sa, k))
        elif k < 16:
            depth, n, p = point_in_box(xa, sa, box_corner(xb, sb, k - 8))
            n = -n
        else:
            depth, n, p = box_box_edges(xa, sa, xb, sb)
    elif ta == 1 and tb == 2:
        depth, n, p = box_segment(xa, sa, segment_end(tb, xb, sb, 0), segment_end(tb, xb, sb, 1), sb[0], k)
    elif ta == 1:
        depth, n, p = box_sphere(xa, sa, segment_end(tb, xb, sb, k), sb[0])
    else:
        a0 = segment_end(ta, xa, sa, 0)
        a1 = segment_end(ta, xa, sa, 1)
        b0 = segment_end(tb, xb, sb, 0)
        b1 = segment_end(tb, xb, sb, 1)
        st = sk.closest_point_edge_edge(a0, a1, b0, b1, sa[0] * 0.0 + 1.0e-12)
        depth, n, p = sphere_sphere(a0 + (a1 - a0) * st[0], sa[0], b0 + (b1 - b0) * st[1], sb[0])
    return depth, n, p


@func
def point_candidate(kind: int, xf: Any, size: Any, k: int):
    """Candidate point ``k`` of a shape against a surface, with its radius: a sphere's centre or a
    capsule's end (radius ``size[0]``), a box's corner (radius 0)."""
    c = sk.transform_get_translation(xf)
    r = size[0] * 0.0
    if kind == 1:
        c = box_corner(xf, size, k)
    else:
        c = segment_end(kind, xf, size, k)
        r = size[0]
    return c, r


@func
def ground_candidate(kind: int, xf: Any, size: Any, k: int, up: Any, height: Any):
    """Candidate ``k`` of a shape against the plane ``dot(x, up) = height``: (depth [m], point)."""
    c, r = point_candidate(kind, xf, size, k)
    return r - (sk.dot(c, up) - height), c - up * r

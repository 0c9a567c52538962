"""Narrow phase for rigid shapes (spheres, boxes, capsules): contact candidates as kernel functions.

A pair of shapes (or a shape and the ground plane) is tested at a fixed number of candidate points
``k``, so a kernel launched over (pairs, candidates) handles every pair in parallel without
allocating. Each candidate gives a penetration depth (> 0: touching), the unit normal along which
the first shape is pushed, and the contact point, all in world coordinates:

- sphere / capsule against sphere / capsule (both are points within a radius of a segment; a
  sphere's segment has length 0): one candidate, the closest points of the two segments
  (``closest_point_edge_edge``);
- box against sphere: one candidate, the sphere's centre against the box (closest point on the box,
  or, for a centre inside, the nearest face); box against capsule: the capsule's two end spheres
  (a capsule lying on a box face; a capsule crossing a box edge between its ends is missed);
- box against box: the 8 corners of each inside the other (``k`` < 8: a's corners in b, else b's
  in a), pushed out through the nearest face (face contacts and stacking; edge-edge crossings
  without a corner inside are missed);
- against the ground plane and static triangle meshes: a sphere's centre, a capsule's two end
  spheres, a box's 8 corners (a mesh edge or vertex poking into a box face between corners is
  missed).

All are differentiable almost everywhere (the kinks are where the nearest feature changes).
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
            return 16
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
def box_sphere(xa: Any, ha: Any, c: Any, r: Any):
    """(depth, normal pushing the box, point) of a box (frame ``xa``, half extents ``ha``) and a
    sphere (centre ``c``, radius ``r``)."""
    local = sk.transform_point(sk.transform_inverse(xa), c)
    q = local * 1.0
    for i in range(3):
        q[i] = sk.clamp(local[i], -ha[i], ha[i])
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
def pair_candidate(ta: int, xa: Any, sa: Any, tb: int, xb: Any, sb: Any, k: int):
    """Candidate ``k`` of shapes a and b (world frames ``xa``, ``xb``; sizes ``sa``, ``sb``; the box
    first): (depth [m], unit normal pushing a away from b, contact point)."""
    depth = sa[0] * 0.0
    n = sa * 0.0
    p = sa * 0.0
    if ta == 1 and tb == 1:
        if k < 8:
            depth, n, p = point_in_box(xb, sb, box_corner(xa, sa, k))
        else:
            depth, n, p = point_in_box(xa, sa, box_corner(xb, sb, k - 8))
            n = -n
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

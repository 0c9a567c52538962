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
- box against box (25): first the separating-axis test (``box_box_sat_mode``: the least overlap
  along the 6 face axes, b's beating a's only by a hair more, and the 9 edge-edge axes) tells edge
  to edge from face. Face contact (the least overlapping face is the reference, the other box's
  face most turned against it the incident face): the corners of the faces' overlap, deep as they
  are below the other face, along the reference normal: ``k`` < 16 (a's corners, then b's,
  ``box_box_corner``) an incident face's corner within the reference face's slabs or a reference
  face's corner within the incident face's, 17-24 (``box_box_face``) the ends of the incident
  face's 4 edges clipped to the reference box's slabs that are not the edge's own ends nor a
  reference corner (a box edge across a face between its corners: a bar lying across a box, an
  edge across a narrow face, a box across a beam). Boxes of one size stacked have their corners on
  the border of the other's face: a border counts (within 1e-6 of the sizes), and each point is
  found once. Edge to edge, when the least overlap is along the cross product of an edge of each
  by a margin under the face contact's depth: ``k`` = 16 (``box_box_edges``), the midpoint of the
  two supporting edges' closest points, that overlap deep, and corners inside the other box
  through its nearest face;
- against the ground plane: a sphere's centre, a capsule's two end spheres, a box's 8 corners;
- against static triangle meshes, the same, a box's 12 edges across mesh ridges
  (``mesh_box_edge`` in ``solvers/rigid/kernels.py``: the deepest point of the edge, the crease of
  the faces on either side of it) and the mesh's peaks inside a box (``mesh_box_vertex``: per
  octant of the box, the deepest mesh vertex inside it that is a convex corner of the mesh, every
  mesh edge from it descending more than 1.5 degrees below the plane square to its angle-weighted
  normal, pushed out through the nearest box face: a pyramid's apex, a spike's tip, a block's or a
  step's corners poking into a box face; vertices of flat regions and straight creases are not
  peaks, so faces lying on faces and edges across ridges keep the corner and edge contacts only).
  Missed: a ridge poking into a box face that neither reaches a box edge nor ends in a peak inside
  the box (one fading out into a flat region), and all but the deepest peak in an octant.

All are differentiable almost everywhere (the kinks are where the nearest feature or the reference
face changes; a searched deepest point carries no gradient itself, as the depth is stationary there
or, at a mesh ridge, measured square to the box edge).
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
            return 25
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
def box_edge(xf: Any, size: Any, e: int):
    """Ends of edge ``e`` (0-11) of a box, world coordinates: along axis ``e // 4``, its bits 0 and 1
    the signs (-) of the next two axes."""
    axis = e // 4
    c = size * 1.0
    if e & 1 != 0:
        c[(axis + 1) % 3] = -c[(axis + 1) % 3]
    if e & 2 != 0:
        c[(axis + 2) % 3] = -c[(axis + 2) % 3]
    c0 = c * 1.0
    c0[axis] = -c[axis]
    return sk.transform_point(xf, c0), sk.transform_point(xf, c)


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
    s0, s1 = slab_stretch(p0, d, ha, axis)
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
def sat_overlap(ra: Any, ha: Any, rb: Any, hb: Any, t: Any, u: Any):
    """Overlap [m] along the unit axis ``u`` of the projections of boxes a and b (rows of ``ra``,
    ``rb``: their axes; ``t``: b's centre from a's), < 0: separated."""
    e = sk.abs(sk.dot(t, u)) * -1.0
    for i in range(3):
        e = e + ha[i] * sk.abs(sk.dot(ra[i], u)) + hb[i] * sk.abs(sk.dot(rb[i], u))
    return e


@func
def box_box_sat(xa: Any, ha: Any, xb: Any, hb: Any):
    """The separating-axis test of boxes a and b over their 15 axes: (least overlap along a face
    axis, that axis (0-2: a's, 3-5: b's), least along an edge-edge axis, its edges ``ea`` of a and
    ``eb`` of b (-1: all edges nearly parallel), that unit axis)."""
    ra = sk.transpose(sk.quat_to_matrix(sk.transform_get_rotation(xa)))     # rows: the axes
    rb = sk.transpose(sk.quat_to_matrix(sk.transform_get_rotation(xb)))
    t = sk.transform_get_translation(xb) - sk.transform_get_translation(xa)
    tie = (ha[0] + ha[1] + ha[2] + hb[0] + hb[1] + hb[2]) * 1.0e-5
    face = sat_overlap(ra, ha, rb, hb, t, ra[0])
    fi = int(0)
    for i in range(1, 6):
        o = face
        bias = tie * 0.0
        if i < 3:
            o = sat_overlap(ra, ha, rb, hb, t, ra[i])
        else:
            o = sat_overlap(ra, ha, rb, hb, t, rb[i - 3])
            bias = tie              # (b's faces beat a's by a margin: ties stay a's)
        if o + bias < face:
            face = o
            fi = i
    edge = face
    ea = int(-1)
    eb = int(-1)
    u = t * 0.0
    for i in range(3):
        for j in range(3):
            c = sk.cross(ra[i], rb[j])
            lc = sk.length(c)
            if lc > 1.0e-3:         # not (nearly) parallel edges
                o = sat_overlap(ra, ha, rb, hb, t, c / lc)
                if ea < 0 or o < edge:
                    edge = o
                    ea = i
                    eb = j
                    u = c / lc
    return face, fi, edge, ea, eb, u


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
def slab_stretch(p0: Any, d: Any, half: Any, axis: int):
    """(s0, s1): the stretch of the segment ``p0 + s d``, s in [0, 1] (box coordinates), within the
    two slabs of a box (half extents ``half``) across the axes other than ``axis``; s0 > s1: none."""
    s0 = half[0] * 0.0
    s1 = s0 + 1.0
    for i in range(3):
        if i != axis:
            if sk.abs(d[i]) > 1.0e-9 * (sk.abs(p0[i]) + half[i]):
                t0 = (-half[i] - p0[i]) / d[i]
                t1 = (half[i] - p0[i]) / d[i]
                s0 = sk.max(s0, sk.min(t0, t1))
                s1 = sk.min(s1, sk.max(t0, t1))
            elif sk.abs(p0[i]) > half[i]:
                s0 = s1 + 1.0
    return s0, s1


@func
def reference_frames(xa: Any, ha: Any, xb: Any, hb: Any, fi: int):
    """The face of axis ``fi`` (0-2: a's, 3-5: b's) facing the other box, the reference, and the
    face of that other box most turned against it, the incident face: (reference frame, half
    extents, axis, side (+-1), outward normal; incident frame, half extents, axis, and its face's
    side; the sign turning the reference normal into the one pushing a)."""
    xr = xb
    hr = hb
    xi = xa
    hi = ha
    r = fi - 3
    flip = ha[0] * 0.0 + 1.0
    if fi < 3:
        xr = xa
        hr = ha
        xi = xb
        hi = hb
        r = fi
        flip = -flip
    side = sk.sign(sk.transform_point(sk.transform_inverse(xr), sk.transform_get_translation(xi))[r])
    nr = box_axis(xr, hr, r) * side
    ia = int(0)
    best = sk.abs(sk.dot(box_axis(xi, hi, 0), nr))
    for i in range(1, 3):
        c = sk.abs(sk.dot(box_axis(xi, hi, i), nr))
        if c > best:
            best = c
            ia = i
    iside = -sk.sign(sk.dot(box_axis(xi, hi, ia), nr))
    return xr, hr, r, side, nr, xi, hi, ia, iside, flip


@func
def incident_edge(xr: Any, hr: Any, r: int, side: Any, xi: Any, hi: Any, ia: int, iside: Any, e: int):
    """Edge ``e`` (0-3) of the incident face clipped to the reference box's slabs across its face:
    (start, direction in the reference frame, the stretch s0, s1; the depth below the reference face
    of the stretch's ends)."""
    ja = (ia + 1 + e // 2) % 3           # edges 0, 1 along one axis, 2, 3 along the other
    oa = (ia + 2 - e // 2) % 3           # the third axis, fixing the edge's place
    e1 = hi * 1.0
    e1[ia] = hi[ia] * iside
    if e % 2 == 1:
        e1[oa] = -hi[oa]
    e0 = e1 * 1.0
    e0[ja] = -hi[ja]
    inv = sk.transform_inverse(xr)
    p0 = sk.transform_point(inv, sk.transform_point(xi, e0))
    d = sk.transform_point(inv, sk.transform_point(xi, e1)) - p0
    s0, s1 = slab_stretch(p0, d, hr, r)
    return p0, d, s0, s1, hr[r] - side * (p0[r] + d[r] * s0), hr[r] - side * (p0[r] + d[r] * s1)


@func
def box_box_sat_mode(xa: Any, ha: Any, xb: Any, hb: Any):
    """The separating-axis test (``box_box_sat``) and whether the contact is edge to edge: the least
    overlap is along an edge-edge axis, by a margin (5% of it, and 1e-4 of the sizes; boxes a hair
    apart, speculative contacts, have negative depths) under the depth of the incident face's
    edges clipped to the reference face (the least overlapping face's) below it, or under the face
    overlap if none reaches over the reference face. Boxes lying face on face (whose edge axes tie)
    and a bar lying across a face, slightly tilted (whose hanging ends deepen the face overlap, not
    the contact), are face contacts."""
    face, fi, edge, ea, eb, u = box_box_sat(xa, ha, xb, hb)
    xr, hr, r, side, nr, xi, hi, ia, iside, flip = reference_frames(xa, ha, xb, hb, fi)
    deepest = face
    found = False
    for e in range(4):
        p0, d, s0, s1, d0, d1 = incident_edge(xr, hr, r, side, xi, hi, ia, iside, e)
        if s0 <= s1:
            if not found:
                deepest = sk.max(d0, d1)
            deepest = sk.max(deepest, sk.max(d0, d1))
            found = True
    tol = (ha[0] + ha[1] + ha[2] + hb[0] + hb[1] + hb[2]) * 1.0e-4
    edge_mode = ea >= 0 and edge < deepest - sk.abs(deepest) * 0.05 - tol
    return face, fi, edge, ea, eb, u, edge_mode


@func
def box_box_edges(xa: Any, ha: Any, xb: Any, hb: Any, face: Any, edge: Any, ea: int, eb: int, u: Any,
                  edge_mode: bool):
    """(depth, normal pushing a, point) of boxes a and b touching edge to edge (``box_pair_mode``'s
    test): the midpoint of the supporting edges' closest points, the least overlap deep; otherwise
    a depth <= 0 (< 0: separated)."""
    t = sk.transform_get_translation(xb) - sk.transform_get_translation(xa)
    gap = sk.length(t) - sk.length(ha) - sk.length(hb)
    if gap > 0.0:              # the bounding spheres apart: skip the test
        return -gap, t * 0.0, t
    depth = sk.min(face, face * 0.0)
    n = u * 0.0
    p = sk.transform_get_translation(xa)
    if edge_mode:
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
def box_box_face(xa: Any, ha: Any, xb: Any, hb: Any, k: int, face: Any, fi: int, edge_mode: bool):
    """Candidate ``k`` (0-7) of boxes a and b touching face to edge (not ``box_box_sat_mode``'s edge
    to edge): (depth, normal pushing a, point) of end ``k % 2`` of incident edge ``k // 2`` clipped
    to the reference box's slabs, its depth below the reference face. An end that is the edge's own
    (a corner: the corner candidates have it) gives a depth <= 0."""
    t = sk.transform_get_translation(xb) - sk.transform_get_translation(xa)
    gap = sk.length(t) - sk.length(ha) - sk.length(hb)
    if gap > 0.0:              # the bounding spheres apart: skip the test
        return -gap, t * 0.0, t
    xr, hr, r, side, nr, xi, hi, ia, iside, flip = reference_frames(xa, ha, xb, hb, fi)
    p0, d, s0, s1, d0, d1 = incident_edge(xr, hr, r, side, xi, hi, ia, iside, k // 2)
    s = s0
    depth = d0
    inner = s0 > 0.0
    if k % 2 == 1:
        s = s1
        depth = d1
        inner = s1 < 1.0
    at = p0 + d * s
    tol = (hr[0] + hr[1] + hr[2]) * 1.0e-6
    rim = 0                   # (an end on a corner of the reference face: the corner candidates have it)
    for i in range(3):
        if i != r and sk.abs(at[i]) >= hr[i] - tol:
            rim = rim + 1
    if s0 > s1 or not inner or edge_mode or rim == 2:
        depth = sk.min(face, face * 0.0) - hr[r]
    return depth, nr * flip, sk.transform_point(xr, at)


@func
def box_box_corner(xa: Any, ha: Any, xb: Any, hb: Any, k: int, face: Any, fi: int, edge_mode: bool):
    """Candidate ``k`` (0-7: a's corners, 8-15: b's) of boxes a and b: (depth, normal pushing a,
    point). Face to face or edge (``box_box_sat_mode``): a corner of the incident face within the
    reference face's slabs, or of the reference face within the incident face's (1e-6 of the sizes
    over their border counts: boxes of one size stacked have their corners on it), as deep as it is
    below the other face, along the reference face's normal (with the clipped incident edges'
    ends, ``box_box_face``, these are the corners of the faces' overlap); other corners give a
    depth below -(the reference box's half extent). Edge to edge: a corner inside the other box,
    through its nearest face (``point_in_box``)."""
    c = box_corner(xa, ha, k)
    if k >= 8:
        c = box_corner(xb, hb, k - 8)
    t = sk.transform_get_translation(xb) - sk.transform_get_translation(xa)
    gap = sk.length(t) - sk.length(ha) - sk.length(hb)
    if gap > 0.0:              # the bounding spheres apart: skip the test
        return -gap, t * 0.0, c
    xr, hr, r, side, nr, xi, hi, ia, iside, flip = reference_frames(xa, ha, xb, hb, fi)
    depth = sk.min(face, face * 0.0) - hr[r]
    n = nr * flip
    if edge_mode:
        if k < 8:
            depth, n, c = point_in_box(xb, hb, c)
        else:
            depth, n, c = point_in_box(xa, ha, c)
            n = -n
        if depth <= 0.0:
            depth = sk.min(face, face * 0.0) - hr[r]
    else:
        # the corner's box, as the face's (frame, half extents, axis, side), and the other one's
        xo = xr
        ho = hr
        ao = r
        so = side
        xc = xi
        hc = hi
        ac = ia
        sc = iside
        of_reference = (k < 8) == (fi < 3)
        if of_reference:
            xo = xi
            ho = hi
            ao = ia
            so = iside
            xc = xr
            hc = hr
            ac = r
            sc = side
        if sk.transform_point(sk.transform_inverse(xc), c)[ac] * sc > 0.0:     # on its face
            lo = sk.transform_point(sk.transform_inverse(xo), c)
            tol = (ho[0] + ho[1] + ho[2]) * 1.0e-6
            inside = True
            rim = 0                  # (a reference corner on an incident one: that one has it)
            for i in range(3):
                if i != ao:
                    if sk.abs(lo[i]) > ho[i] + tol:
                        inside = False
                    if sk.abs(lo[i]) >= ho[i] - tol:
                        rim = rim + 1
            if inside and (not of_reference or rim < 2):
                depth = ho[ao] - so * lo[ao]
    return depth, n, c


@func
def box_pair_mode(ta: int, xa: Any, sa: Any, tb: int, xb: Any, sb: Any):
    """For two boxes whose bounding spheres meet, their separating-axis test (``box_box_sat_mode``:
    face overlap, its axis, edge overlap, the edges, their axis, edge to edge?), which every one of
    their 25 candidates needs (run it once per pair); placeholders otherwise."""
    face = sa[0] * 0.0
    fi = int(0)
    edge = face
    ea = int(-1)
    eb = int(-1)
    u = sa * 0.0
    edge_mode = False
    if ta == 1 and tb == 1:
        t = sk.transform_get_translation(xb) - sk.transform_get_translation(xa)
        if sk.length(t) - sk.length(sa) - sk.length(sb) <= 0.0:
            face, fi, edge, ea, eb, u, edge_mode = box_box_sat_mode(xa, sa, xb, sb)
    return face, fi, edge, ea, eb, u, edge_mode


@func
def pair_candidate_in_mode(ta: int, xa: Any, sa: Any, tb: int, xb: Any, sb: Any, k: int, face: Any, fi: int,
                           edge: Any, ea: int, eb: int, u: Any, edge_mode: bool):
    """``pair_candidate`` given the pair's ``box_pair_mode``."""
    depth = sa[0] * 0.0
    n = sa * 0.0
    p = sa * 0.0
    if ta == 1 and tb == 1:
        if k < 16:
            depth, n, p = box_box_corner(xa, sa, xb, sb, k, face, fi, edge_mode)
        elif k == 16:
            depth, n, p = box_box_edges(xa, sa, xb, sb, face, edge, ea, eb, u, edge_mode)
        else:
            depth, n, p = box_box_face(xa, sa, xb, sb, k - 17, face, fi, edge_mode)
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
def pair_candidate(ta: int, xa: Any, sa: Any, tb: int, xb: Any, sb: Any, k: int):
    """Candidate ``k`` of shapes a and b (world frames ``xa``, ``xb``; sizes ``sa``, ``sb``; the box
    first): (depth [m], unit normal pushing a away from b, contact point). A kernel testing all of a
    pair's candidates runs ``box_pair_mode`` once and ``pair_candidate_in_mode`` per candidate."""
    face, fi, edge, ea, eb, u, edge_mode = box_pair_mode(ta, xa, sa, tb, xb, sb)
    return pair_candidate_in_mode(ta, xa, sa, tb, xb, sb, k, face, fi, edge, ea, eb, u, edge_mode)


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

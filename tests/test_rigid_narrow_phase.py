"""The rigid narrow phase's edge candidates against analytic geometry: box edge across box edge
(separating-axis test), a box edge across a box face (clipped to the face), a capsule across a box
edge or face (its deepest point, the stretch over a face), a box edge across a triangle mesh's ridge,
a mesh's peak (a pyramid's apex, a block's corners) inside a box; no extra contact for faces lying on
faces (tessellated or not), for vertices of ridges and valleys, none for separated shapes; their
depths' gradients against central finite differences; and bodies that rest on such contacts instead
of sinking through."""
import math

import numpy as np
import pytest
from fd_helpers import central_differences

import simkit as sk
from simkit.collision.rigid_contacts import pair_candidate
from simkit.solvers.rigid.kernels import mesh_box_edge, mesh_box_vertex

f64 = sk.float64
BOX, CAPSULE = 1, 2
EDGE = 16                      # the box-box edge candidate (0-15: corners)
FACE = slice(17, 25)           # the box-box face candidates


def about(axis, angle):
    """Quaternion (x, y, z, w) of a rotation by ``angle`` about the unit vector ``axis``."""
    return tuple(np.sin(angle / 2) * np.asarray(axis, dtype=float)) + (math.cos(angle / 2),)


def rotate(q, v):
    """``v`` rotated by the unit quaternion ``q`` (x, y, z, w)."""
    u, w = np.asarray(q[:3]), q[3]
    return v + 2.0 * w * np.cross(u, v) + 2.0 * np.cross(u, np.cross(u, v))


X_TO_Y = about((0, 0, 1), -math.pi / 2)       # a capsule's axis (y) turned to lie along x


def qmul(p, q):
    """The quaternion product ``p q`` (rotate by q, then by p), both (x, y, z, w)."""
    pv, qv = np.asarray(p[:3]), np.asarray(q[:3])
    v = p[3] * qv + q[3] * pv + np.cross(pv, qv)
    return tuple(v) + (p[3] * q[3] - pv @ qv,)


@sk.kernel
def candidates_kernel(ta: int, xa: sk.array(dtype=sk.transformd), sa: sk.vec3d, tb: int,
                      xb: sk.array(dtype=sk.transformd), sb: sk.vec3d, out: sk.array(dtype=sk.float64, ndim=2)):
    k = sk.tid()
    depth, n, p = pair_candidate(ta, xa[0], sa, tb, xb[0], sb, k)
    out[k, 0] = depth
    for c in range(3):
        out[k, 1 + c] = n[c]
        out[k, 4 + c] = p[c]


@sk.kernel
def depth_kernel(ta: int, xa: sk.array(dtype=sk.transformd), sa: sk.vec3d, tb: int,
                 xb: sk.array(dtype=sk.transformd), sb: sk.vec3d, k: int, out: sk.array(dtype=sk.float64)):
    i = sk.tid()
    depth, n, p = pair_candidate(ta, xa[i], sa, tb, xb[i], sb, k)
    out[i] = depth


def candidates(device, ta, xa, sa, tb, xb, sb):
    """(depth, normal, point) of every candidate of a pair: arrays [k], [k, 3], [k, 3]."""
    count = {(BOX, BOX): 25, (BOX, CAPSULE): 2}[ta, tb]
    out = sk.zeros((count, 7), dtype=f64, device=device)
    frames = [sk.array(np.array([x], dtype=np.float64), dtype=sk.transformd, device=device) for x in (xa, xb)]
    sk.launch(candidates_kernel, count, inputs=[ta, frames[0], sk.vec3d(*sa), tb, frames[1], sk.vec3d(*sb)],
              outputs=[out], device=device)
    o = out.numpy()
    return o[:, 0], o[:, 1:4], o[:, 4:]


# ----------------------------------------------------------------------------- box - box

H = 0.1                         # cubes of half extent H: turned 45 degrees, an edge sticks out by H sqrt 2


@pytest.mark.parametrize("a_above", [True, False])
def test_crossing_box_edges_touch_at_their_crossing_by_the_overlap(device, a_above):
    # a turned 45 deg about z (an edge along z at its bottom), b 45 deg about x (an edge along x on
    # top), a's edge 4 mm into b's; a is off-centre, so the edges cross at (0.03, ., 0)
    top = H * math.sqrt(2)
    xa = (0.03, 2 * top - 0.004, -0.02) + about((0, 0, 1), math.pi / 4)
    xb = (0.0, 0.0, 0.0) + about((1, 0, 0), math.pi / 4)
    if a_above:
        depth, n, p = candidates(device, BOX, xa, (H, H, H), BOX, xb, (H, H, H))
    else:
        depth, n, p = candidates(device, BOX, xb, (H, H, H), BOX, xa, (H, H, H))
    assert np.all(depth[:EDGE] < 0.0)                  # no corner is inside the other box
    assert depth[EDGE] == pytest.approx(0.004, abs=1e-12)
    np.testing.assert_allclose(n[EDGE], [0.0, 1.0 if a_above else -1.0, 0.0], atol=1e-12)
    np.testing.assert_allclose(p[EDGE], [0.03, top - 0.002, 0.0], atol=1e-12)   # mid-overlap


def test_tilted_crossing_edges_match_the_distance_of_the_edge_lines(device):
    # b's top edge along x, a's bottom edge turned 60 deg off z about y: the overlap is the distance
    # between the two (infinite) edge lines, pushed along their common normal (world y)
    top = H * math.sqrt(2)
    rot = about((0, 1, 0), math.pi / 3)
    qa = about((0, 0, 1), math.pi / 4)
    x, y, z, w = rot                                      # rot * qa, a turned about y after
    a, b, c, d = qa
    q = (w * a + x * d + y * c - z * b, w * b - x * c + y * d + z * a, w * c + x * b - y * a + z * d,
         w * d - x * a - y * b - z * c)
    depth, n, p = candidates(device, BOX, (0.0, 2 * top - 0.003, 0.01) + q, (H, H, H), BOX,
                             (0.0, 0.0, 0.0) + about((1, 0, 0), math.pi / 4), (H, H, H))
    assert depth[EDGE] == pytest.approx(0.003, abs=1e-12)
    np.testing.assert_allclose(n[EDGE], [0.0, 1.0, 0.0], atol=1e-12)
    # a's edge: through (0, ., 0.01) along (sin 60, 0, cos 60); it crosses b's (z = 0) at x = -0.01 tan 60
    np.testing.assert_allclose(p[EDGE], [-0.01 * math.tan(math.pi / 3), top - 0.0015, 0.0], atol=1e-12)


@pytest.mark.parametrize("turn", [0.0, math.radians(15.0), math.radians(45.0)])
def test_a_box_lying_on_a_box_has_corner_contacts_only(device, turn):
    # a flat box on a larger one, turned about y: its 4 bottom corners 1 mm deep, the edge candidate
    # silent (the least overlap is along b's face normal, and edge axes that are parallel to it tie)
    depth, n, p = candidates(device, BOX, (0.03, 0.159, -0.02) + about((0, 1, 0), turn), (0.1, 0.06, 0.1), BOX,
                             (0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0), (0.2, 0.1, 0.2))
    assert np.sum(depth[:8] > 0) == 4
    np.testing.assert_allclose(depth[:8][depth[:8] > 0], 0.001, atol=1e-12)
    assert np.all(depth[8:16] <= 0.0)
    assert np.all(depth[EDGE:] <= 0.0)              # neither the edge candidate nor the face ones


@pytest.mark.parametrize("shift", [0.0, 0.004])
def test_boxes_of_one_size_stacked_touch_at_the_corners_of_their_overlap(device, shift):
    # b's top corners lie on the border of a's bottom face (equal boxes): they count (a's, on them, do
    # not), 1 mm deep along the normal; shifted along x, two of a's corners and two of b's bound the
    # overlap, nothing else (not the clipped edges' ends on them)
    depth, n, p = candidates(device, BOX, (shift, 0.199, 0.0, 0.0, 0.0, 0.0, 1.0), (0.1, 0.1, 0.1), BOX,
                             (0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0), (0.1, 0.1, 0.1))
    touching = np.nonzero(depth > 0.0)[0]
    assert len(touching) == 4 and touching.max() < 16
    np.testing.assert_allclose(depth[touching], 0.001, atol=1e-12)
    np.testing.assert_allclose(n[touching], [[0.0, 1.0, 0.0]] * 4, atol=1e-12)
    corners = p[touching]
    np.testing.assert_allclose(np.sort(corners[:, 0]), [-0.1 + shift] * 2 + [0.1] * 2, atol=1e-12)
    np.testing.assert_allclose(np.sort(corners[:, 2]), [-0.1] * 2 + [0.1] * 2, atol=1e-12)
    assert (touching >= 8).sum() == (4 if shift == 0.0 else 2)


def test_separated_boxes_report_no_contact(device):
    top = H * math.sqrt(2)
    for lift in (0.001, 0.05):
        depth, _, _ = candidates(device, BOX, (0.03, 2 * top + lift, -0.02) + about((0, 0, 1), math.pi / 4),
                                 (H, H, H), BOX, (0.0, 0.0, 0.0) + about((1, 0, 0), math.pi / 4), (H, H, H))
        assert np.all(depth <= 0.0)
        assert depth[EDGE] < 0.0


# ----------------------------------------------------------------------------- box edge - box face

BAR = (0.5, 0.03, 0.03)          # a long bar along x; turned 45 deg about x, an edge at its bottom
WIDE = (0.3, 0.1, 0.3)           # a wide box at the origin, its top face at y = 0.1
R2 = math.sqrt(2)


def lowest_edge(x, half):
    """Ends of the edge along x of a box (frame ``x``) lowest in y, world coordinates."""
    ends = [[np.asarray(x[:3]) + rotate(x[3:], np.array([sx * half[0], sy * half[1], sz * half[2]])) for sx in (-1, 1)]
            for sy in (-1, 1) for sz in (-1, 1)]
    return min(ends, key=lambda e: e[0][1] + e[1][1])


def pair(device, a_first, xa, sa, xb, sb):
    """Candidates of boxes a, b in either order, the normals as pushing a."""
    if a_first:
        return candidates(device, BOX, xa, sa, BOX, xb, sb)
    depth, n, p = candidates(device, BOX, xb, sb, BOX, xa, sa)
    return depth, -n, p


@pytest.mark.parametrize("a_first", [True, False])
@pytest.mark.parametrize("tilt", [0.0, math.radians(0.2)])
def test_a_bar_across_a_box_face_touches_above_the_faces_edges(device, a_first, tilt):
    # the bar's lower edge 2 mm (at its centre) into the wide box's top face, its ends far past it, tilted
    # about z: no corner of either box inside the other; two contacts where the edge passes over the face's
    # edges (x = +-0.3), as deep as the edge is there, pushing the bar up
    xa = (0.04, 0.1 + BAR[1] * R2 - 0.002, 0.05) + qmul(about((0, 0, 1), tilt), about((1, 0, 0), math.pi / 4))
    depth, n, p = pair(device, a_first, xa, BAR, (0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0), WIDE)
    assert np.all(depth[:FACE.start] <= 0.0)            # corners and the edge-edge candidate
    touching = np.nonzero(depth > 0.0)[0]
    assert len(touching) == 2
    e0, e1 = lowest_edge(xa, BAR)
    for k, x in zip(sorted(touching, key=lambda k: p[k, 0]), (-0.3, 0.3)):
        q = e0 + (e1 - e0) * (x - e0[0]) / (e1[0] - e0[0])     # the edge over x
        assert depth[k] == pytest.approx(0.1 - q[1], abs=1e-12)
        np.testing.assert_allclose(n[k], [0.0, 1.0, 0.0], atol=1e-12)
        np.testing.assert_allclose(p[k], q, atol=1e-12)
    if tilt:
        assert depth[touching].max() - depth[touching].min() > 0.002


@pytest.mark.parametrize("a_first", [True, False])
def test_a_cube_pressed_edge_first_into_a_narrow_face_touches_at_its_sides(device, a_first):
    # a cube turned 45 deg about z, its lower edge (along z, 0.2 long) 3 mm into the middle of a box's top
    # face only 0.1 wide in z: its corners hang out past the face; contacts where the edge leaves the face
    narrow = (0.3, 0.1, 0.05)
    xa = (0.02, 0.1 + H * R2 - 0.003, 0.01) + about((0, 0, 1), math.pi / 4)
    depth, n, p = pair(device, a_first, xa, (H, H, H), (0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0), narrow)
    touching = np.nonzero(depth > 0.0)[0]
    assert len(touching) == 2 and np.all(touching >= FACE.start)
    np.testing.assert_allclose(depth[touching], 0.003, atol=1e-12)
    np.testing.assert_allclose(n[touching], [[0.0, 1.0, 0.0]] * 2, atol=1e-12)
    np.testing.assert_allclose(sorted(p[touching, 2]), [-0.05, 0.05], atol=1e-12)
    np.testing.assert_allclose(p[touching, :2], [[0.02, 0.097]] * 2, atol=1e-12)


def test_a_bar_half_on_a_box_face_touches_at_its_corner_and_the_faces_edge(device):
    # the bar's left end over the face: its corner there (a corner candidate) and the point over the face's
    # edge x = 0.3 (a face candidate); the clipped stretch's other end is that corner, left to it
    xa = (0.3, 0.1 + BAR[1] * R2 - 0.002, 0.05) + about((1, 0, 0), math.pi / 4)
    for a_first in (True, False):
        depth, n, p = pair(device, a_first, xa, BAR, (0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0), WIDE)
        touching = np.nonzero(depth > 0.0)[0]
        assert len(touching) == 2
        assert sum(k < 16 for k in touching) == 1 and sum(k >= FACE.start for k in touching) == 1
        np.testing.assert_allclose(depth[touching], 0.002, atol=1e-12)
        np.testing.assert_allclose(sorted(p[touching, 0]), [-0.2, 0.3], atol=1e-12)
        np.testing.assert_allclose(n[touching], [[0.0, 1.0, 0.0]] * 2, atol=1e-12)


def test_a_box_lying_across_a_narrow_beam_touches_at_the_crossing_corners(device):
    # face on face, but neither box's corners over the other: a flat box across a beam (0.04 wide, along z),
    # 1 mm deep; the four corners of the crossing rectangle, from the face candidates alone
    xa = (0.01, 0.05 + 0.03 - 0.001, 0.02, 0.0, 0.0, 0.0, 1.0)
    for a_first in (True, False):
        depth, n, p = pair(device, a_first, xa, (0.1, 0.03, 0.1), (0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0), (0.02, 0.05, 0.4))
        touching = np.nonzero(depth > 0.0)[0]
        assert len(touching) == 4 and np.all(touching >= FACE.start)
        np.testing.assert_allclose(depth[touching], 0.001, atol=1e-12)
        np.testing.assert_allclose(n[touching], [[0.0, 1.0, 0.0]] * 4, atol=1e-12)
        xz = sorted(map(tuple, np.round(p[touching][:, [0, 2]], 12)))
        np.testing.assert_allclose(xz, [(-0.02, -0.08), (-0.02, 0.12), (0.02, -0.08), (0.02, 0.12)], atol=1e-12)
        assert np.all((p[touching, 1] >= 0.049 - 1e-12) & (p[touching, 1] <= 0.05 + 1e-12))   # on either face


def test_a_box_pressed_into_a_face_keeps_its_corner_contacts_only(device):
    # the cube edge-first into the wide face: its edge's ends (corners) are inside, so the face candidates
    # (whose clipped stretch is the whole edge) stay silent
    xa = (0.02, 0.1 + H * R2 - 0.003, 0.01) + about((0, 0, 1), math.pi / 4)
    depth, n, p = candidates(device, BOX, xa, (H, H, H), BOX, (0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0), WIDE)
    assert np.sum(depth[:8] > 0) == 2
    np.testing.assert_allclose(depth[:8][depth[:8] > 0], 0.003, atol=1e-12)
    assert np.all(depth[8:] <= 0.0)


def test_a_bar_above_a_box_face_reports_no_contact(device):
    for lift in (0.001, 0.05):
        xa = (0.04, 0.1 + BAR[1] * R2 + lift, 0.05) + about((1, 0, 0), math.pi / 4)
        for a_first in (True, False):
            depth, _, _ = pair(device, a_first, xa, BAR, (0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0), WIDE)
            assert np.all(depth <= 0.0)


# ----------------------------------------------------------------------------- box - capsule

@pytest.mark.parametrize("turn", [math.radians(45.0), math.radians(30.0)])
def test_a_capsule_across_a_box_edge_touches_its_deepest_point(device, turn):
    # a box turned about z: its highest edge (corner (h, h) of its cross-section) along z at
    # x = h (cos - sin), y = h (sin + cos); a capsule along x lies across it 6 mm deep
    h, r = 0.1, 0.05
    ex, ey = h * (math.cos(turn) - math.sin(turn)), h * (math.sin(turn) + math.cos(turn))
    depth, n, p = candidates(device, BOX, (0.0, 0.0, 0.0) + about((0, 0, 1), turn), (h, h, h), CAPSULE,
                             (0.05, ey + r - 0.006, 0.02) + X_TO_Y, (r, 0.5, 0.0))
    touching = depth > 0.0
    assert touching.sum() == 1                          # the other end of the stretch is far above the box
    assert depth[touching][0] == pytest.approx(0.006, abs=1e-9)
    np.testing.assert_allclose(n[touching][0], [0.0, -1.0, 0.0], atol=1e-7)     # pushes the box down
    np.testing.assert_allclose(p[touching][0], [ex, ey - 0.003, 0.02], atol=1e-7)


def test_a_capsule_across_a_box_face_touches_above_the_faces_edges(device):
    # lying across the top face (ends hanging), tilted by 1 degree: the point above the face's
    # higher edge (x = h), as deep as the capsule is there, and the deepest point, just past the lower
    # edge (x = -h), as deep as the capsule's distance from that edge; the ends themselves are far off
    h, r, hh = 0.1, 0.05, 0.5
    tilt = math.radians(1.0)
    y0 = h + r - 0.002
    depth, n, p = candidates(device, BOX, (0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0), (h, h, h), CAPSULE,
                             (0.0, y0, 0.0) + about((0, 0, 1), -math.pi / 2 + tilt), (r, hh, 0.0))
    axis_y = y0 + h * math.tan(tilt)                    # the segment's height above x = h
    assert depth[1] == pytest.approx(h + r - axis_y, abs=1e-12)
    np.testing.assert_allclose(n[1], [0.0, -1.0, 0.0], atol=1e-12)
    np.testing.assert_allclose(p[1], [h, (h + axis_y - r) / 2, 0.0], atol=1e-12)
    u = np.array([-math.sin(tilt), math.cos(tilt), 0.0])       # the segment's normal
    dist = (y0 - h) * math.cos(tilt) - h * math.sin(tilt)       # of the edge (-h, h) from the segment
    assert depth[0] == pytest.approx(r - dist, abs=1e-12)
    assert depth[0] > 0.002 > depth[1]                 # the lower side is the deeper
    np.testing.assert_allclose(n[0], -u, atol=1e-7)
    np.testing.assert_allclose(p[0], np.array([-h, h, 0.0]) + u * (dist - r) / 2, atol=1e-7)


def test_a_capsule_lying_on_a_box_face_touches_at_its_end_spheres_only(device):
    # the whole capsule above a large face: its two end spheres, as before (no third contact)
    h, r, hh = 0.1, 0.05, 0.3
    depth, n, p = candidates(device, BOX, (0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0), (1.0, h, 1.0), CAPSULE,
                             (0.1, h + r - 0.002, 0.2) + X_TO_Y, (r, hh, 0.0))
    np.testing.assert_allclose(depth, [0.002, 0.002], atol=1e-12)
    np.testing.assert_allclose(p[:, 0], [0.1 - hh, 0.1 + hh], atol=1e-12)
    np.testing.assert_allclose(n, [[0.0, -1.0, 0.0]] * 2, atol=1e-12)


def test_a_separated_capsule_reports_no_contact(device):
    h, r = 0.1, 0.05
    for where in ((0.05, h * math.sqrt(2) + r + 0.001, 0.02), (0.3, -0.2, 0.0), (0.0, 0.0, h + r + 0.01)):
        depth, _, _ = candidates(device, BOX, (0.0, 0.0, 0.0) + about((0, 0, 1), math.pi / 4), (h, h, h), CAPSULE,
                                 where + X_TO_Y, (r, 0.5, 0.0))
        assert np.all(depth <= 0.0)


# ----------------------------------------------------------------------------- gradients

@pytest.mark.parametrize("case", ["edge_edge", "capsule_edge", "edge_face"])
def test_edge_candidate_depths_match_finite_differences(case):
    # d depth / d (both frames, all 7 components), generic poses away from feature changes; the
    # capsule's candidate is its searched deepest point, against an edge of the box (the normal is
    # along none of the box's axes), whose own gradient is nil: the depth is stationary there
    if case == "edge_edge":
        ta, sa, tb, sb, k = BOX, (0.1, 0.12, 0.09), BOX, (0.11, 0.1, 0.13), EDGE
        xa = (0.02, 0.31, -0.01) + about(np.array([0.1, 0.2, 1.0]) / np.linalg.norm([0.1, 0.2, 1.0]), 0.8)
        xb = (0.0, 0.0, 0.01) + about(np.array([1.0, 0.1, -0.2]) / np.linalg.norm([1.0, 0.1, -0.2]), 0.7)
    elif case == "capsule_edge":
        ta, sa, tb, sb, k = BOX, (0.1, 0.08, 0.12), CAPSULE, (0.05, 0.4, 0.0), 1
        xa = (0.0, 0.0, 0.0) + about(np.array([0.1, 0.0, 1.0]) / np.linalg.norm([0.1, 0.0, 1.0]), 0.6)
        xb = (0.07, 0.16, 0.03) + about(np.array([0.2, 0.1, 1.0]) / np.linalg.norm([0.2, 0.1, 1.0]), -1.4)
    else:   # a tilted bar's edge across a turned box's top face, over the face's edge near x = -0.3
        ta, sa, tb, sb, k = BOX, BAR, BOX, (0.3, 0.1, 0.3), 21
        xa = (0.02, 0.1 + BAR[1] * math.sqrt(2) - 0.003, 0.05) + qmul(about((0, 0, 1), 0.02), about((1, 0, 0), 0.7))
        xb = (0.0, 0.0, 0.0) + about(np.array([0.3, 1.0, 0.2]) / np.linalg.norm([0.3, 1.0, 0.2]), 0.1)

    def depth(x, requires_grad=False):
        xs = [sk.array(x[key][0], dtype=sk.transformd, requires_grad=requires_grad) for key in ("xa", "xb")]
        out = sk.zeros(len(x["xa"][0]), dtype=f64, requires_grad=requires_grad)
        tape = sk.Tape()
        with tape:
            sk.launch(depth_kernel, len(x["xa"][0]), inputs=[ta, xs[0], sk.vec3d(*sa), tb, xs[1], sk.vec3d(*sb), k],
                      outputs=[out])
        return out, xs, tape

    x = {"xa": np.array([[xa]], dtype=np.float64), "xb": np.array([[xb]], dtype=np.float64)}
    out, xs, tape = depth(x, requires_grad=True)
    assert 0.0 < out.numpy()[0] < 0.05                  # touching, through the candidate under test
    normal = candidates("cpu", ta, xa, sa, tb, xb, sb)[1][k]
    axes = np.array([rotate(x[3:], e) for x in (xa, xb) for e in np.eye(3)])
    if case != "edge_face":                           # (a face candidate's normal is the face's)
        assert np.abs(axes @ normal).max() < 0.99
    tape.backward(grads={out: sk.ones(1, dtype=f64)})
    fds = central_differences(x, ["xa", "xb"], lambda y: depth(y)[0].numpy()[None, :])
    for arr, fd in zip(xs, fds):
        np.testing.assert_allclose(arr.grad.numpy(), fd[0], rtol=1e-6, atol=1e-8)
        assert np.abs(fd).max() > 0.1


# ----------------------------------------------------------------------------- dynamics

def simulate(model, steps, dt):
    solver = sk.RigidBodySolver()
    s0, s1 = model.state(), model.state()
    for _ in range(steps):
        solver.step(model, s0, s1, None, dt)
        s0, s1 = s1, s0
    return s0


def test_a_box_dropped_edge_first_rests_on_a_box_edge(device):
    # a cube turned 45 deg about z falls 1 cm onto a static cube turned 45 deg about x, edge across
    # edge: it stops one penalty depth (m g / ke) below touching, where corners alone would have let it
    # sink by H (its corners reach the lower cube only there)
    top = H * math.sqrt(2)
    b = sk.ModelBuilder()
    b.add_shape_box(-1, hx=H, hy=H, hz=H, rot=about((1, 0, 0), math.pi / 4), ke=1e4, kd=100.0)
    body = b.add_body(pos=(0.0, 2 * top + 0.01, 0.0), rot=about((0, 0, 1), math.pi / 4))
    b.add_shape_box(body, hx=H, hy=H, hz=H, density=100.0, ke=1e4, kd=100.0)
    model = b.finalize(device=device, dtype=f64)
    end = simulate(model, 1200, 5.0e-4)
    m = model.body_mass.numpy()[0]
    np.testing.assert_allclose(end.body_q.numpy()[0, :3], [0.0, 2 * top - m * 9.81 / 1e4, 0.0], atol=1e-5)
    np.testing.assert_allclose(end.body_qd.numpy()[0], 0.0, atol=1e-3)


@pytest.mark.parametrize("turn", [math.radians(45.0), 0.0])
def test_a_capsule_dropped_across_a_box_rests_on_it(device, turn):
    # a long capsule falls 1 cm across a small static box: on its top edge (box turned 45 deg, one
    # contact) or across its top face (two contacts, above the face's edges); its end spheres never
    # reach the box, so it rests only through the new candidates, m g / (n ke) deep
    h, r = 0.1, 0.05
    top, contacts = (h * math.sqrt(2), 1) if turn else (h, 2)
    b = sk.ModelBuilder()
    b.add_shape_box(-1, hx=h, hy=h, hz=h, rot=about((0, 0, 1), turn), ke=1e4, kd=100.0)
    body = b.add_body(pos=(0.0, top + r + 0.01, 0.02))
    b.add_shape_capsule(body, radius=r, half_height=0.4, rot=X_TO_Y, density=100.0, ke=1e4, kd=100.0)
    model = b.finalize(device=device, dtype=f64)
    end = simulate(model, 1200, 5.0e-4)
    m = model.body_mass.numpy()[0]
    np.testing.assert_allclose(end.body_q.numpy()[0, :3], [0.0, top + r - m * 9.81 / (contacts * 1e4), 0.02],
                               atol=1e-5)
    np.testing.assert_allclose(end.body_qd.numpy()[0], 0.0, atol=1e-3)


def test_a_bar_dropped_across_a_box_face_rests_on_it(device):
    # the bar (turned 45 deg about its axis) falls 1 cm across the wide static box: it rests on the two points
    # above the face's edges, m g / (2 ke) deep, where its corners alone (far past the face) let it fall through
    b = sk.ModelBuilder()
    b.add_shape_box(-1, hx=WIDE[0], hy=WIDE[1], hz=WIDE[2], ke=1e4, kd=100.0)
    body = b.add_body(pos=(0.0, 0.1 + BAR[1] * R2 + 0.01, 0.05), rot=about((1, 0, 0), math.pi / 4))
    b.add_shape_box(body, hx=BAR[0], hy=BAR[1], hz=BAR[2], density=500.0, ke=1e4, kd=100.0)
    model = b.finalize(device=device, dtype=f64)
    end = simulate(model, 1200, 5.0e-4)
    m = model.body_mass.numpy()[0]
    np.testing.assert_allclose(end.body_q.numpy()[0, :3], [0.0, 0.1 + BAR[1] * R2 - m * 9.81 / 2e4, 0.05], atol=1e-5)
    np.testing.assert_allclose(end.body_qd.numpy()[0], 0.0, atol=1e-3)


# ----------------------------------------------------------------------------- box edge - mesh ridge

ROOF = (np.array([[-1.0, -0.5, -1.0], [-1.0, -0.5, 1.0], [0.0, 0.0, -1.0], [0.0, 0.0, 1.0], [1.0, -0.5, -1.0],
                  [1.0, -0.5, 1.0]]), np.array([0, 1, 3, 0, 3, 2, 2, 3, 5, 2, 5, 4]))     # a ridge along z at y = 0
FLAT = (0.2, 0.05, 0.1)


@sk.kernel
def mesh_feature_kernel(mesh: sk.uint64, xf: sk.array(dtype=sk.transformd), size: sk.vec3d, slots: int,
                        out: sk.array(dtype=sk.float64, ndim=2)):
    # slots 12: a box's edges across mesh ridges (mesh_box_edge); 8: the peaks in its octants
    i, k = sk.tid()
    depth, n, p = mesh_box_edge(mesh, xf[i], size, k)
    if slots == 8:
        depth, n, p = mesh_box_vertex(mesh, xf[i], size, k)
    out[i * slots + k, 0] = depth
    for c in range(3):
        out[i * slots + k, 1 + c] = n[c]
        out[i * slots + k, 4 + c] = p[c]


def mesh_features(mesh, frames, device, size, slots, requires_grad=False):
    xf = sk.array(np.asarray(frames, dtype=np.float64).reshape(-1, 7), dtype=sk.transformd, device=device,
                  requires_grad=requires_grad)
    out = sk.zeros((xf.shape[0] * slots, 7), dtype=f64, device=device, requires_grad=requires_grad)
    tape = sk.Tape()
    with tape:
        sk.launch(mesh_feature_kernel, (xf.shape[0], slots), inputs=[mesh.id, xf, sk.vec3d(*size), slots],
                  outputs=[out], device=device)
    return out, xf, tape


def roof_mesh(device):
    return sk.Mesh(sk.array(ROOF[0], dtype=sk.vec3, device=device),
                   sk.array(ROOF[1].astype(np.int32), dtype=sk.int32, device=device))


def mesh_edges(mesh, frames, device, requires_grad=False):
    return mesh_features(mesh, frames, device, FLAT, 12, requires_grad)


@pytest.mark.parametrize("turn", [0.0, math.radians(30.0)])
def test_box_edges_across_a_mesh_ridge_touch_it_between_the_corners(device, turn):
    # a flat box on the ridge, its bottom face 2 mm below it, turned about y: its corners are far above the
    # roof's slopes; the two bottom edges crossing the ridge touch it there, 2 mm deep, pushed straight up
    mesh = roof_mesh(device)
    x = (0.01, FLAT[1] - 0.002, 0.0) + about((0, 1, 0), turn)
    o = mesh_edges(mesh, [x], device)[0].numpy()
    touching = np.nonzero(o[:, 0] > 0.0)[0]
    assert list(touching) == [1, 3]           # the bottom edges along x (y and z bits: -y, +-z)
    np.testing.assert_allclose(o[touching, 0], 0.002, atol=2e-7)                # (float32 mesh)
    np.testing.assert_allclose(o[touching, 1:4], [[0.0, 1.0, 0.0]] * 2, atol=1e-6)
    for k in touching:     # mid-overlap, on the ridge (x = 0), on the box's edge
        p = o[k, 4:]
        assert p[0] == pytest.approx(0.0, abs=1e-6) and p[1] == pytest.approx(-0.001, abs=2e-7)
        local = rotate(about((0, 1, 0), -turn), p - np.asarray(x[:3]))
        assert abs(abs(local[2]) - FLAT[2]) < 1e-6
    for lift in (0.001, 0.05):   # above it: nothing
        o = mesh_edges(mesh, [(0.01, FLAT[1] + lift, 0.0) + about((0, 1, 0), turn)], device)[0].numpy()
        assert np.all(o[:, 0] <= 0.0)


def test_box_edges_lying_on_a_flat_mesh_give_no_extra_contact(device):
    # the box 1 mm into a flat square of two triangles: its corners have the contact, no edge does
    square = (np.array([[-1.0, 0.0, -1.0], [1.0, 0.0, -1.0], [1.0, 0.0, 1.0], [-1.0, 0.0, 1.0]]), np.array([0, 2, 1, 0, 3, 2]))
    mesh = sk.Mesh(sk.array(square[0], dtype=sk.vec3, device=device),
                   sk.array(square[1].astype(np.int32), dtype=sk.int32, device=device))
    for turn in (0.0, 0.3):
        o = mesh_edges(mesh, [(0.01, FLAT[1] - 0.001, 0.02) + about((0, 1, 0), turn)], device)[0].numpy()
        assert np.all(o[:, 0] <= 0.0)


def test_the_mesh_ridge_depth_matches_finite_differences():
    # d depth / d (the box's frame) of a bottom edge across the ridge, the box turned generically; the
    # mesh is float32, so the differences step 1e-4
    mesh = roof_mesh("cpu")
    x = np.array([[(0.02, FLAT[1] - 0.003, 0.01) + about(np.array([0.2, 1.0, 0.1]) / np.linalg.norm([0.2, 1.0, 0.1]), 0.4)]])
    out, xf, tape = mesh_edges(mesh, x[0], "cpu", requires_grad=True)
    k = int(np.argmax(out.numpy()[:, 0]))
    assert 0.0 < out.numpy()[k, 0] < 0.03
    seed = np.zeros((12, 7))
    seed[k, 0] = 1.0
    tape.backward(grads={out: sk.array(seed, dtype=f64)})
    fd = central_differences({"x": x}, ["x"], lambda y: mesh_edges(mesh, y["x"][0], "cpu")[0].numpy()[None, k:k + 1, 0],
                             h=1e-4)[0]
    np.testing.assert_allclose(xf.grad.numpy(), fd[0], rtol=1e-3, atol=1e-3)
    assert np.abs(fd).max() > 0.5


def drop_flat_box(mesh, device):
    """The final state of the FLAT box (density 200) dropped from 5 mm onto a static mesh (ke 1e4), 0.6 s; its mass."""
    b = sk.ModelBuilder()
    b.add_shape_mesh(mesh, ke=1e4, kd=100.0, kf=100.0, mu=0.5)
    body = b.add_body(pos=(0.0, FLAT[1] + 0.005, 0.0))
    b.add_shape_box(body, hx=FLAT[0], hy=FLAT[1], hz=FLAT[2], density=200.0)
    model = b.finalize(device=device, dtype=f64)
    return simulate(model, 1200, 5.0e-4), model.body_mass.numpy()[0]


def test_a_box_dropped_on_a_mesh_ridge_rests_on_it(device):
    # the flat box falls 5 mm onto the ridge (its corners far above the slopes): it rests on the two points
    # where its bottom edges cross the ridge, m g / (2 ke) deep, instead of sinking through
    end, m = drop_flat_box(ROOF, device)
    np.testing.assert_allclose(end.body_q.numpy()[0, :3], [0.0, FLAT[1] - m * 9.81 / 2e4, 0.0], atol=1e-5)
    np.testing.assert_allclose(end.body_q.numpy()[0, 3:], [0.0, 0.0, 0.0, 1.0], atol=1e-4)
    np.testing.assert_allclose(end.body_qd.numpy()[0], 0.0, atol=1e-3)


# ----------------------------------------------------------------------------- mesh peak - box face

def oriented(points, tris, outward):
    """(points, indices) with each triangle wound so that its normal points along ``outward(centroid)``."""
    points = np.asarray(points, dtype=float)
    tris = np.asarray(tris).reshape(-1, 3).copy()
    for t in tris:
        a, b, c = points[t]
        if np.cross(b - a, c - a) @ outward((a + b + c) / 3) < 0.0:
            t[1], t[2] = t[2], t[1]
    return points, tris.reshape(-1)


def convex(points, tris):
    """A closed convex mesh, wound outwards (from its vertices' centroid)."""
    centre = np.mean(points, axis=0)
    return oriented(points, tris, lambda c: c - centre)


def up(points, tris):
    """An open mesh, wound with its normals up (+y)."""
    return oriented(points, tris, lambda c: np.array([0.0, 1.0, 0.0]))


# a square pyramid, apex at the origin, 45 degree faces, closed by its base
PYRAMID = convex([[-0.5, -0.5, -0.5], [0.5, -0.5, -0.5], [0.5, -0.5, 0.5], [-0.5, -0.5, 0.5], [0.0, 0.0, 0.0]],
                 [0, 1, 4, 1, 2, 4, 2, 3, 4, 3, 0, 4, 0, 1, 2, 0, 2, 3])


def block(lo, hi):
    """A closed box mesh: 8 corners shared by 12 faces."""
    corners = [[(lo, hi)[i & 1][0], (lo, hi)[i >> 1 & 1][1], (lo, hi)[i >> 2 & 1][2]] for i in range(8)]
    quads = [(0, 2, 6, 4), (1, 3, 7, 5), (0, 1, 5, 4), (2, 3, 7, 6), (0, 1, 3, 2), (4, 5, 7, 6)]
    return convex(corners, [i for a, b, c, d in quads for i in (a, b, c, a, c, d)])


def soup(mesh):
    """The same triangles, each with its own 3 vertices (split vertices)."""
    points, indices = mesh
    return points[indices], np.arange(len(indices))


def grid(n, height):
    """An open square [-1, 1]^2 of n x n vertices at y = height(x, z), wound up."""
    g = np.linspace(-1.0, 1.0, n)
    points = [[x, height(x, z), z] for x in g for z in g]
    tris = [i for a in range(n - 1) for b in range(n - 1)
            for i in (a * n + b, a * n + b + 1, (a + 1) * n + b + 1, a * n + b, (a + 1) * n + b + 1, (a + 1) * n + b)]
    return up(points, tris)


BLOCK = block((-0.1, -0.2, -0.05), (0.1, 0.0, 0.05))          # its top face at y = 0, inside FLAT's footprint


def make_mesh(mesh, device):
    return sk.Mesh(sk.array(mesh[0], dtype=sk.vec3, device=device),
                   sk.array(np.asarray(mesh[1]).astype(np.int32), dtype=sk.int32, device=device))


def mesh_vertices(mesh, frames, device, size=FLAT, requires_grad=False):
    return mesh_features(mesh, frames, device, size, 8, requires_grad)


def octant(local):
    """The box octant (bits -x, -y, -z) of a point in box coordinates."""
    return int(local[0] < 0) + 2 * int(local[1] < 0) + 4 * int(local[2] < 0)


TILT = about(np.array([0.3, 0.4, 1.0]) / np.linalg.norm([0.3, 0.4, 1.0]), 0.5)


@pytest.mark.parametrize("rot", [(0.0, 0.0, 0.0, 1.0), about((0, 1, 0), math.radians(30.0)), TILT])
@pytest.mark.parametrize("local", [(0.03, -0.046, 0.02), (-0.15, -0.03, 0.07), (0.19, -0.02, -0.01)])
def test_a_pyramid_apex_inside_a_box_pushes_it_out_of_the_nearest_face(device, rot, local):
    # the box placed so that the apex (the origin) lies at ``local`` in its coordinates: one slot (the
    # apex's octant) touches, as deep as the apex is below its nearest face (y, y, then the +x side face),
    # pushing the box along that face's inward normal, at the apex; the corners and edges are far off
    mesh = make_mesh(PYRAMID, device)
    local = np.asarray(local)
    x = tuple(-rotate(rot, local)) + tuple(rot)
    o = mesh_vertices(mesh, [x], device)[0].numpy()
    touching = np.nonzero(o[:, 0] > 0.0)[0]
    assert list(touching) == [octant(local)]
    gaps = np.asarray(FLAT) - np.abs(local)
    axis = int(np.argmin(gaps))
    k = touching[0]
    assert o[k, 0] == pytest.approx(gaps[axis], abs=1e-12)
    np.testing.assert_allclose(o[k, 1:4], -np.sign(local[axis]) * rotate(rot, np.eye(3)[axis]), atol=1e-12)
    np.testing.assert_allclose(o[k, 4:], 0.0, atol=1e-12)
    for lift in (0.001, 0.05):   # the apex just outside that face: nothing
        out = local.copy()
        out[axis] = np.sign(local[axis]) * (FLAT[axis] + lift)
        o = mesh_vertices(mesh, [tuple(-rotate(rot, out)) + tuple(rot)], device)[0].numpy()
        assert np.all(o[:, 0] <= 0.0)


@pytest.mark.parametrize("split", [False, True])
def test_a_box_on_a_small_block_touches_its_four_top_corners(device, split):
    # a flat box 2 mm into the top of a smaller block (turned 20 deg about y and tilted by 0.3 deg: the
    # block's top corners one per octant, at their own depths): its corners and edges are in the air,
    # the block's 4 top corners are peaks; with split vertices (a triangle soup) too
    mesh = make_mesh(soup(BLOCK) if split else BLOCK, device)
    rot = qmul(about((1, 0, 0), math.radians(0.3)), about((0, 1, 0), math.radians(20.0)))
    x = (0.01, FLAT[1] - 0.002, 0.005) + rot
    o = mesh_vertices(mesh, [x], device)[0].numpy()
    touching = np.nonzero(o[:, 0] > 0.0)[0]
    assert list(touching) == [2, 3, 6, 7]                  # the octants below the box's middle
    for k in touching:
        p = o[k, 4:]
        assert abs(abs(p[0]) - 0.1) < 1e-7 and abs(p[1]) < 1e-7 and abs(abs(p[2]) - 0.05) < 1e-7
        local = rotate(tuple(-np.asarray(rot[:3])) + (rot[3],), p - np.asarray(x[:3]))
        assert octant(local) == k
        assert o[k, 0] == pytest.approx(FLAT[1] + local[1], abs=1e-12)
        np.testing.assert_allclose(o[k, 1:4], rotate(rot, np.array([0.0, 1.0, 0.0])), atol=1e-12)
    assert o[touching, 0].max() - o[touching, 0].min() > 1e-4      # the tilt shows


@pytest.mark.parametrize("case", ["flat", "flat_tilted", "ridge", "valley"])
def test_no_peak_in_flat_regions_straight_creases_or_valleys(device, case):
    # vertices inside the box that are no convex corners: a tessellated plane under a box lying 1 mm deep
    # (level, or tilted 2 deg so that its lower side digs in), the middle of a tessellated roof's ridge
    # under a box 2 mm into it, the bottom of a valley (an upside-down pyramid) 5 mm into a box
    x = (0.01, FLAT[1] - 0.001, 0.02, 0.0, 0.0, 0.0, 1.0)
    if case.startswith("flat"):
        mesh = grid(21, lambda x, z: 0.0)
        if case == "flat_tilted":
            x = (0.01, FLAT[1] - 0.001, 0.02) + about((0, 0, 1), math.radians(2.0))
    elif case == "ridge":
        mesh = grid(21, lambda x, z: -0.5 * abs(x))
        x = (0.01, FLAT[1] - 0.002, 0.02, 0.0, 0.0, 0.0, 1.0)
    else:
        mesh = grid(21, lambda x, z: 0.5 * max(abs(x), abs(z)))
        x = (0.0, FLAT[1] - 0.005, 0.0, 0.0, 0.0, 0.0, 1.0)
    o = mesh_vertices(make_mesh(mesh, device), [x], device)[0].numpy()
    local = [rotate(tuple(-np.asarray(x[3:6])) + (x[6],), p - np.asarray(x[:3])) for p in mesh[0]]
    assert np.sum(np.all(np.abs(local) < FLAT, axis=1)) >= 2        # vertices inside the box
    assert np.all(o[:, 0] <= 0.0)


def test_the_mesh_peak_depth_matches_finite_differences():
    # d depth / d (the box's frame) of the pyramid's apex inside a generically turned box (float64 frame,
    # static float32 vertex: the depth is exact, so the differences step 1e-6)
    mesh = make_mesh(PYRAMID, "cpu")
    local = np.array([0.03, -0.046, 0.02])
    x = np.array([[tuple(-rotate(TILT, local)) + TILT]])
    out, xf, tape = mesh_vertices(mesh, x[0], "cpu", requires_grad=True)
    k = octant(local)
    assert out.numpy()[k, 0] == pytest.approx(0.004, abs=1e-12)
    seed = np.zeros((8, 7))
    seed[k, 0] = 1.0
    tape.backward(grads={out: sk.array(seed, dtype=f64)})
    fd = central_differences({"x": x}, ["x"],
                             lambda y: mesh_vertices(mesh, y["x"][0], "cpu")[0].numpy()[None, k:k + 1, 0])[0]
    np.testing.assert_allclose(xf.grad.numpy(), fd[0], rtol=1e-6, atol=1e-8)
    assert np.abs(fd).max() > 0.5


@pytest.mark.parametrize("case", ["pyramid", "block", "flat"])
def test_a_box_dropped_on_a_mesh_peak_rests_on_it(device, case):
    # the flat box falls 5 mm onto a pyramid's apex (under its centre: one contact), onto a smaller block
    # (its 4 top corners), or onto a tessellated plane (its own 4 corners, no extra contact from the plane's
    # vertices under it): it rests m g / (n ke) deep instead of sinking through the peaks
    mesh, contacts = {"pyramid": (PYRAMID, 1), "block": (BLOCK, 4), "flat": (grid(21, lambda x, z: 0.0), 4)}[case]
    end, m = drop_flat_box(mesh, device)
    np.testing.assert_allclose(end.body_q.numpy()[0, :3], [0.0, FLAT[1] - m * 9.81 / (contacts * 1e4), 0.0], atol=1e-5)
    np.testing.assert_allclose(end.body_q.numpy()[0, 3:], [0.0, 0.0, 0.0, 1.0], atol=1e-6)
    np.testing.assert_allclose(end.body_qd.numpy()[0], 0.0, atol=1e-3)

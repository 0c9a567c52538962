"""simkit.geometry swept volumes (Warp 1.19's swept_volume_*): the field against analytic signed distances (a box
swept through rotations, a sphere swept along a line is a capsule), the extracted mesh (watertight, capsule volume),
bounds against numpy, warp-lang side by side, the kernel API inside a user kernel, and errors."""
import numpy as np
import pytest

import simkit as wp
import simkit.geometry as geo

SIGN = geo.SweptVolumeSignMode


def icosphere(radius=1.0, subdivisions=2):
    """(points float32 (n, 3), faces int32 (m, 3)) of a subdivided icosahedron, counter-clockwise from outside."""
    t = (1.0 + 5.0**0.5) / 2.0
    v = [(-1, t, 0), (1, t, 0), (-1, -t, 0), (1, -t, 0), (0, -1, t), (0, 1, t), (0, -1, -t), (0, 1, -t),
         (t, 0, -1), (t, 0, 1), (-t, 0, -1), (-t, 0, 1)]
    f = [(0, 11, 5), (0, 5, 1), (0, 1, 7), (0, 7, 10), (0, 10, 11), (1, 5, 9), (5, 11, 4), (11, 10, 2), (10, 7, 6),
         (7, 1, 8), (3, 9, 4), (3, 4, 2), (3, 2, 6), (3, 6, 8), (3, 8, 9), (4, 9, 5), (2, 4, 11), (6, 2, 10),
         (8, 6, 7), (9, 8, 1)]
    pts = [np.array(p, dtype=np.float64) / np.linalg.norm(p) for p in v]
    for _ in range(subdivisions):
        mid, nf = {}, []
        for a, b, c in f:
            ids = []
            for i, j in ((a, b), (b, c), (c, a)):
                key = (min(i, j), max(i, j))
                if key not in mid:
                    m = pts[i] + pts[j]
                    pts.append(m / np.linalg.norm(m))
                    mid[key] = len(pts) - 1
                ids.append(mid[key])
            ab, bc, ca = ids
            nf += [(a, ab, ca), (b, bc, ab), (c, ca, bc), (ab, bc, ca)]
        f = nf
    return (np.array(pts) * radius).astype(np.float32), np.array(f, dtype=np.int32)


def box_mesh(half):
    """A closed box [-half, half], counter-clockwise from outside."""
    h = np.asarray(half, dtype=np.float32)
    corners = np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)], dtype=np.float32) * h
    quads = [(0, 1, 3, 2), (4, 6, 7, 5), (0, 4, 5, 1), (2, 3, 7, 6), (0, 2, 6, 4), (1, 5, 7, 3)]
    faces = [t for a, b, c, d in quads for t in ((a, b, c), (a, c, d))]
    return corners, np.array(faces, dtype=np.int32)


def make_mesh(points, faces, device, winding=True):
    return wp.Mesh(wp.array(points, dtype=wp.vec3, device=device), wp.array(faces.ravel(), dtype=wp.int32,
                                                                               device=device),
                   support_winding_number=winding)


def poses(translations, angles=None):
    """(1, S, 7) poses: translations and rotations about z by ``angles``."""
    translations = np.asarray(translations, dtype=np.float32)
    tr = np.zeros((1, len(translations), 7), dtype=np.float32)
    tr[0, :, :3] = translations
    angles = np.zeros(len(translations)) if angles is None else np.asarray(angles)
    tr[0, :, 5] = np.sin(angles / 2)
    tr[0, :, 6] = np.cos(angles / 2)
    return tr


def quat_rotate_inv(q, v):
    """Rotate the rows of ``v`` by the inverse of quaternion q = (x, y, z, w)."""
    u, w = -np.asarray(q[:3], dtype=np.float64), float(q[3])
    return v + 2.0 * w * np.cross(u, v) + 2.0 * np.cross(u, np.cross(u, v))


def box_sdf(p, half):
    q = np.abs(p) - half
    return np.linalg.norm(np.maximum(q, 0.0), axis=-1) + np.minimum(q.max(axis=-1), 0.0)


def grid_points(lower, upper, shape):
    axes = [np.linspace(lower[a], upper[a], shape[a]) for a in range(3)]
    return np.stack(np.meshgrid(*axes, indexing="ij"), axis=-1)


def capsule_sdf(p, a, b, r):
    a, b = np.asarray(a, float), np.asarray(b, float)
    h = np.clip(((p - a) @ (b - a)) / ((b - a) @ (b - a)), 0.0, 1.0)
    return np.linalg.norm(p - a - h[..., None] * (b - a), axis=-1) - r


@wp.kernel
def sdf_at_points(xs: wp.array(dtype=wp.vec3), ids: wp.array(dtype=wp.uint64),
                  transforms: wp.array2d(dtype=wp.transform), max_dist: float, mode: int, out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = geo.swept_volume_sdf(xs[i], ids, transforms, max_dist, mode)


def test_namespace_and_sign_modes():
    assert [(m.name, int(m)) for m in SIGN] == [("NORMAL", 0), ("WINDING_NUMBER", 1), ("PARITY", 2), ("NO_SIGN", 3)]
    for name in ("swept_volume_sdf", "swept_volume_field", "swept_volume_bounds", "swept_volume_mesh"):
        assert name in geo.__all__ and callable(getattr(geo, name))


@pytest.mark.parametrize("mode", [SIGN.WINDING_NUMBER, SIGN.NORMAL, SIGN.PARITY, SIGN.NO_SIGN])
def test_sdf_kernel_api_rotating_boxes(device, mode):
    """Two boxes (the second offset and rotating about z): swept_volume_sdf in a user kernel equals the minimum
    over meshes and poses of the exact box distance in each rest frame."""
    half0, half1 = np.array([0.5, 0.2, 0.3]), np.array([0.2, 0.2, 0.2])
    meshes = [make_mesh(*box_mesh(half0), device), make_mesh(*box_mesh(half1), device)]
    rng = np.random.default_rng(0)
    angles = np.linspace(0.0, np.pi / 2, 5)
    tr = np.concatenate([poses(np.stack([np.linspace(0, 1, 5), np.zeros(5), np.zeros(5)], 1), angles),
                         poses(np.tile([1.0, 1.0, 0.0], (5, 1)), -angles)])
    xs = np.concatenate([rng.uniform(-1.0, 2.0, size=(200, 3)), rng.uniform([-0.5, -0.3, -0.3], [1.5, 1.3, 0.3],
                                                                            size=(200, 3))])
    ref = np.full(len(xs), np.inf)
    for m, half in enumerate((half0, half1)):
        for s in range(tr.shape[1]):
            local = quat_rotate_inv(tr[m, s, 3:], xs - tr[m, s, :3])
            ref = np.minimum(ref, box_sdf(local, half))
    out = wp.zeros(len(xs), dtype=float, device=device)
    ids = wp.array([m.id for m in meshes], dtype=wp.uint64, device=device)
    wp.launch(sdf_at_points, dim=len(xs), inputs=[wp.array(xs, dtype=wp.vec3, device=device), ids,
                                                   wp.array(tr, dtype=wp.transform, device=device), 10.0, int(mode),
                                                   out], device=device)
    got = out.numpy()
    if mode == SIGN.NO_SIGN:  # unsigned: the distance to the nearest posed surface (inside points too)
        assert (got >= 0).all() and (ref < 0).sum() > 30
        ref_unsigned = np.full(len(xs), np.inf)
        for m, half in enumerate((half0, half1)):
            for s in range(tr.shape[1]):
                local = quat_rotate_inv(tr[m, s, 3:], xs - tr[m, s, :3])
                ref_unsigned = np.minimum(ref_unsigned, np.abs(box_sdf(local, half)))
        np.testing.assert_allclose(got, ref_unsigned, atol=1e-4)
    else:
        np.testing.assert_allclose(got, ref, atol=1e-4)


def test_sdf_max_dist_plateau(device):
    """No face within max_dist: +max_dist, far outside and deep inside alike."""
    mesh = make_mesh(*box_mesh([2.0, 2.0, 2.0]), device)
    ids = wp.array([mesh.id], dtype=wp.uint64, device=device)
    xs = wp.array([[0.0, 0.0, 0.0], [10.0, 0.0, 0.0], [1.9, 0.0, 0.0]], dtype=wp.vec3, device=device)
    out = wp.zeros(3, dtype=float, device=device)
    wp.launch(sdf_at_points, dim=3, inputs=[xs, ids, wp.array(poses([[0, 0, 0]]), dtype=wp.transform, device=device),
                                            0.5, int(SIGN.WINDING_NUMBER), out], device=device)
    np.testing.assert_allclose(out.numpy(), [0.5, 0.5, -0.1], atol=1e-5)


def test_field_sphere_along_line_is_capsule(device):
    r = 0.5
    mesh = make_mesh(*icosphere(r, 2), device)
    tr = poses([[x, 0.0, 0.0] for x in np.linspace(-1.0, 1.0, 21)])
    field, lower, upper = geo.swept_volume_field([mesh], tr, voxel_size=0.1, device=device)
    f = field.numpy()
    assert field.device == mesh.device and field.dtype is wp.float32
    np.testing.assert_allclose((np.array(upper) - np.array(lower)) / (np.array(f.shape) - 1), 0.1, rtol=1e-5)
    # the grid covers the capsule's box plus about two cells on each side
    assert np.all(np.array(lower) <= [-1.5 - 0.19, -0.69, -0.69]) and np.all(np.array(upper) >= [1.69, 0.69, 0.69])
    ref = capsule_sdf(grid_points(lower, upper, f.shape), (-1, 0, 0), (1, 0, 0), r)
    band = np.abs(ref) < 0.3
    # the icosphere (80 faces per octant) lies inside the sphere by up to ~0.015; 21 poses, 0.1 apart
    np.testing.assert_allclose(f[band], ref[band], atol=0.025)
    assert (f[ref < -0.05] < 0).all() and (f[ref > 0.05] > 0).all()


def mesh_volume_and_edges(v, tris):
    v = v.astype(np.float64)
    vol = np.einsum("ij,ij->i", v[tris[:, 0]], np.cross(v[tris[:, 1]], v[tris[:, 2]])).sum() / 6.0
    directed = np.concatenate([tris[:, [0, 1]], tris[:, [1, 2]], tris[:, [2, 0]]])
    return vol, directed


def test_mesh_capsule_watertight_and_volume(device):
    r, half_len = 0.4, 0.8
    mesh = make_mesh(*icosphere(r, 3), device)
    tr = poses([[x, 0.0, 0.0] for x in np.linspace(-half_len, half_len, 17)])
    verts, indices = geo.swept_volume_mesh([mesh], tr, voxel_size=0.05, device=device)
    assert verts.dtype is wp.vec3 and indices.dtype is wp.int32 and verts.device == mesh.device
    v, tris = verts.numpy(), indices.numpy().reshape(-1, 3)
    vol, directed = mesh_volume_and_edges(v, tris)
    # every directed edge appears once and its reverse once: closed, consistently wound (outward: volume > 0)
    keys = directed[:, 0].astype(np.int64) * len(v) + directed[:, 1]
    rev = directed[:, 1].astype(np.int64) * len(v) + directed[:, 0]
    assert len(np.unique(keys)) == len(keys) and set(keys.tolist()) == set(rev.tolist())
    capsule = np.pi * r**2 * 2 * half_len + 4.0 / 3.0 * np.pi * r**3
    assert abs(vol / capsule - 1) < 0.03, (vol, capsule)
    d = capsule_sdf(v.astype(np.float64), (-half_len, 0, 0), (half_len, 0, 0), r)
    assert np.abs(d).max() < 0.03
    np.testing.assert_allclose(v.min(axis=0), [-half_len - r, -r, -r], atol=0.03)
    np.testing.assert_allclose(v.max(axis=0), [half_len + r, r, r], atol=0.03)


def test_mesh_threshold_dilates_and_no_sign(device):
    r, t = 0.4, 0.2
    mesh = make_mesh(*icosphere(r, 2), device, winding=False)  # NORMAL / NO_SIGN need no winding data
    tr = poses([[0.0, 0.0, 0.0]])
    v = geo.swept_volume_mesh([mesh], tr, voxel_size=0.05, threshold=t, sign_mode=SIGN.NORMAL)[0].numpy()
    radii = np.linalg.norm(v, axis=1)
    assert abs(radii.mean() - (r + t)) < 0.02 and radii.std() < 0.01  # not clipped by the grid
    field, _, _ = geo.swept_volume_field([mesh], tr, voxel_size=0.05, sign_mode=SIGN.NO_SIGN)
    assert field.numpy().min() >= 0.0
    v = geo.swept_volume_mesh([mesh], tr, voxel_size=0.05, threshold=t, sign_mode=SIGN.NO_SIGN)[0].numpy()
    radii = np.linalg.norm(v, axis=1)  # the shell r +- t: an outer and an inner sheet
    assert np.all(np.minimum(np.abs(radii - (r + t)), np.abs(radii - (r - t))) < 0.02)
    assert (np.abs(radii - (r - t)) < 0.02).sum() > 50 and (np.abs(radii - (r + t)) < 0.02).sum() > 50
    with pytest.raises(ValueError, match="NO_SIGN.*positive threshold"):
        geo.swept_volume_mesh([mesh], tr, voxel_size=0.05, sign_mode=SIGN.NO_SIGN)


def test_bounds_against_numpy(device):
    pts0, f0 = box_mesh([0.5, 0.2, 0.1])
    pts1, f1 = icosphere(0.3, 1)
    pts1 = pts1 + np.float32([0.5, 0.0, 0.0])
    meshes = [make_mesh(pts0, f0, device), make_mesh(pts1, f1, device)]
    rng = np.random.default_rng(3)
    q = rng.standard_normal((2, 4, 4))
    q /= np.linalg.norm(q, axis=-1, keepdims=True)
    tr = np.concatenate([rng.uniform(-1, 1, (2, 4, 3)), q], axis=-1).astype(np.float32)
    lower, upper = geo.swept_volume_bounds(meshes, wp.array(tr, dtype=wp.transform, device=device), padding=0.25)
    corners = []
    for m, pts in enumerate((pts0, pts1)):
        lo, hi = pts.min(0), pts.max(0)
        box = np.array([[x, y, z] for x in (lo[0], hi[0]) for y in (lo[1], hi[1]) for z in (lo[2], hi[2])])
        for s in range(4):
            qv = tr[m, s, 3:]
            rot = quat_rotate_inv(np.concatenate([-qv[:3], qv[3:]]), box)  # rotate by q
            corners.append(rot + tr[m, s, :3])
    corners = np.concatenate(corners)
    np.testing.assert_allclose(np.array(lower), corners.min(0) - 0.25, atol=1e-5)
    np.testing.assert_allclose(np.array(upper), corners.max(0) + 0.25, atol=1e-5)


def test_explicit_domain_resolution_and_inside_sign(device):
    pts, faces = icosphere(5.0, 1)
    mesh = make_mesh(pts, faces, device)
    a, b, c = (pts[faces[:, i]].astype(np.float64) for i in range(3))
    normals = np.cross(b - a, c - a)
    inradius = np.abs(np.einsum("ij,ij->i", normals / np.linalg.norm(normals, axis=1, keepdims=True), a)).min()
    tr = poses([[0.0, 0.0, 0.0]])
    field, lo, hi = geo.swept_volume_field([mesh], tr, resolution=(5, 6, 7), lower=(-1, -1, -1), upper=(1, 1.5, 2))
    assert field.shape == (5, 6, 7) and tuple(lo) == (-1, -1, -1) and tuple(hi) == (1, 1.5, 2)
    f = field.numpy()  # the whole domain lies deep inside the sphere (further than its own diagonal): negative
    p = grid_points(lo, hi, f.shape)
    assert abs(f[2, 2, 2] + inradius) < 1e-4  # node (2, 2, 2) is the centre, nearest to the face centres
    assert np.all(f <= -(inradius - np.linalg.norm(p, axis=-1)) + 1e-4)
    field, lo, hi = geo.swept_volume_field([mesh], tr, resolution=(9, 10, 11))  # default domain, padded
    assert field.shape == (9, 10, 11) and np.all(np.array(lo) < -5.0) and np.all(np.array(hi) > 5.0)


def test_flat_mesh_default_domains(device):
    """A flat square (no extent along z): both sizings still give the grid a positive extent on every axis."""
    pts = np.array([[0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0]], dtype=np.float32)
    mesh = make_mesh(pts, np.array([[0, 1, 2], [0, 2, 3]], dtype=np.int32), device, winding=False)
    tr = poses([[0.0, 0.0, 0.0]])
    for kw in (dict(resolution=(6, 6, 2)), dict(resolution=(6, 6, 5)), dict(voxel_size=0.25)):
        field, lo, hi = geo.swept_volume_field([mesh], tr, sign_mode=SIGN.NO_SIGN, **kw)
        assert np.all(np.array(lo) < [0.0, 0.0, 0.0]) and np.all(np.array(hi) > [1.0, 1.0, 0.0]), kw
        p = grid_points(lo, hi, field.shape)  # unsigned distance to the unit square in the plane z = 0
        ref = np.linalg.norm(p - np.clip(p, [0, 0, 0], [1, 1, 0]), axis=-1)
        np.testing.assert_allclose(field.numpy(), ref, atol=1e-5)


def test_against_warp_lang(device):
    """The same meshes, poses and grid through warp-lang: the same field."""
    warp = pytest.importorskip("warp")
    import warp.geometry as wgeo

    warp.config.quiet = True
    pts, faces = icosphere(0.4, 1)
    tr = poses([[x, 0.1 * x, 0.0] for x in np.linspace(-0.5, 0.5, 4)], np.linspace(0, 1.0, 4))
    kw = dict(resolution=(12, 9, 8), lower=(-1.0, -0.6, -0.5), upper=(1.0, 0.6, 0.5))
    wmesh = warp.Mesh(warp.array(pts, dtype=warp.vec3, device="cpu"), warp.array(faces.ravel(), dtype=warp.int32,
                                                                                  device="cpu"),
                      support_winding_number=True)
    ref = wgeo.swept_volume_field([wmesh], tr, device="cpu", **kw)[0].numpy()
    got = geo.swept_volume_field([make_mesh(pts, faces, device)], tr, **kw)[0].numpy()
    np.testing.assert_allclose(got, ref, atol=1e-5)


def test_bad_arguments(device):
    mesh = make_mesh(*icosphere(0.5, 1), device)
    plain = make_mesh(*icosphere(0.5, 1), device, winding=False)
    tr = poses([[0.0, 0.0, 0.0]])
    field = geo.swept_volume_field
    cases = [
        (ValueError, "meshes is empty", lambda: field([], tr, voxel_size=0.1)),
        (TypeError, r"meshes\[0\] must be a simkit Mesh", lambda: field([object()], tr, voxel_size=0.1)),
        (TypeError, "wrap a single mesh in a list", lambda: field(mesh, tr, voxel_size=0.1)),
        (ValueError, "pass voxel_size .* or resolution", lambda: field([mesh], tr)),
        (ValueError, "not both", lambda: field([mesh], tr, voxel_size=0.1, resolution=(4, 4, 4))),
        (ValueError, "voxel_size must be a positive", lambda: field([mesh], tr, voxel_size=0.0)),
        (ValueError, "voxel_size must be a positive", lambda: field([mesh], tr, voxel_size=-0.1)),
        (ValueError, "resolution must be 3 integers", lambda: field([mesh], tr, resolution=(4, 4))),
        (ValueError, "at least 2 nodes", lambda: field([mesh], tr, resolution=(4, 4, 1))),
        (ValueError, "both lower and upper", lambda: field([mesh], tr, resolution=(4, 4, 4), lower=(0, 0, 0))),
        (ValueError, "voxel_size cannot be combined", lambda: field([mesh], tr, voxel_size=0.1, lower=(0, 0, 0),
                                                                   upper=(1, 1, 1))),
        (ValueError, "upper must exceed lower", lambda: field([mesh], tr, resolution=(4, 4, 4), lower=(0, 0, 0),
                                                             upper=(1, 0, 1))),
        (ValueError, "one per mesh", lambda: field([mesh], poses([[0, 0, 0]] * 2).repeat(2, 0), voxel_size=0.1)),
        (ValueError, "one per mesh", lambda: geo.swept_volume_mesh([mesh], np.zeros((2, 1, 7)), voxel_size=0.1)),
        (ValueError, "one per mesh", lambda: geo.swept_volume_bounds([mesh], np.zeros((2, 1, 7)))),
        (ValueError, "no pose samples", lambda: field([mesh], np.zeros((1, 0, 7)), voxel_size=0.1)),
        (ValueError, r"shape \(num_meshes, num_samples, 7\)", lambda: field([mesh], np.zeros((1, 3)),
                                                                            voxel_size=0.1)),
        (ValueError, "non-finite", lambda: field([mesh], tr * np.nan, voxel_size=0.1)),
        (ValueError, "support_winding_number=True", lambda: field([plain], tr, voxel_size=0.1)),
        (ValueError, "sign_mode must be", lambda: field([mesh], tr, voxel_size=0.1, sign_mode=7)),
        (ValueError, "padding must be", lambda: geo.swept_volume_bounds([mesh], tr, padding=float("nan"))),
        (ValueError, "threshold must be", lambda: geo.swept_volume_mesh([mesh], tr, voxel_size=0.1,
                                                                        threshold=float("inf"))),
    ]
    for exc, match, call in cases:
        with pytest.raises(exc, match=match):
            call()
    if device != "cpu":
        with pytest.raises(ValueError, match="only be queried on its own device"):
            field([mesh], tr, voxel_size=0.1, device="cpu")

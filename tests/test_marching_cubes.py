"""MarchingCubes: watertight meshes, analytic area and volume, every case, gradients, errors."""
import numpy as np
import pytest

import simkit as wp
from simkit.collision.marching_cubes import case_tables

trimesh = pytest.importorskip("trimesh")


@wp.kernel
def weighted_sum(verts: wp.array(dtype=wp.vec3), w: wp.array(dtype=wp.vec3), out: wp.array(dtype=float)):
    i = wp.tid()
    wp.atomic_add(out, 0, wp.dot(verts[i], w[i]))


def grid_coords(n, lo, hi):
    x = np.linspace(lo, hi, n)
    return np.meshgrid(x, x, x, indexing="ij")


def extract(field_np, device, threshold=0.0, **bounds):
    field = wp.array(field_np.astype(np.float32), dtype=float, device=device)
    mc = wp.MarchingCubes(*field_np.shape, device=device, **bounds)
    verts, indices = mc.surface(field, threshold)
    assert mc.verts is verts and mc.indices is indices
    assert verts.dtype is wp.vec3 and indices.dtype is wp.int32
    return verts.numpy(), indices.numpy().reshape(-1, 3)


def mesh(v, f):
    return trimesh.Trimesh(v, f, process=False)


def test_sphere_watertight_area_volume(device):
    n, r = 96, 1.0
    X, Y, Z = grid_coords(n, -1.25, 1.25)
    v, f = extract(np.sqrt(X**2 + Y**2 + Z**2) - r, device, lower=(-1.25,) * 3, upper=(1.25,) * 3)
    m = mesh(v, f)
    assert m.is_watertight and m.is_winding_consistent
    assert m.euler_number == 2
    assert abs(m.volume / (4.0 / 3.0 * np.pi * r**3) - 1.0) < 0.01  # positive: normals point outwards
    assert abs(m.area / (4.0 * np.pi * r**2) - 1.0) < 0.01
    assert np.abs(np.linalg.norm(v, axis=1) - r).max() < 2.5 / (n - 1)
    assert len(np.unique(f)) == len(v)  # every vertex used, none duplicated on shared edges


def test_default_coordinates_are_grid_indices(device):
    n = 40
    X, Y, Z = np.meshgrid(*(np.arange(n, dtype=np.float64),) * 3, indexing="ij")
    c, r = 19.5, 12.0
    v, f = extract(np.sqrt((X - c)**2 + (Y - c)**2 + (Z - c)**2) - r, device)
    np.testing.assert_allclose(np.linalg.norm(v - c, axis=1), r, atol=0.1)


def test_torus_and_disjoint_components(device):
    n = 80
    X, Y, Z = grid_coords(n, -2.0, 2.0)
    torus = np.sqrt((np.sqrt(X**2 + Y**2) - 1.0)**2 + Z**2) - 0.35
    balls = np.minimum(np.sqrt((X - 1.3)**2 + Y**2 + Z**2), np.sqrt((X + 1.3)**2 + Y**2 + Z**2)) - 0.5
    vt, ft = extract(torus, device)
    mt = mesh(vt, ft)
    assert mt.is_watertight and mt.euler_number == 0
    vb, fb = extract(balls, device)
    mb = mesh(vb, fb)
    assert mb.is_watertight and mb.euler_number == 4 and len(mb.split(only_watertight=False)) == 2


@pytest.mark.parametrize("seed", [0, 1])
def test_random_field_closed_surface_is_watertight(device, seed):
    # noise with every ambiguous face and cube configuration; a positive border closes the surface
    rng = np.random.default_rng(seed)
    f = rng.standard_normal((20, 17, 23))
    f[[0, -1], :, :] = f[:, [0, -1], :] = f[:, :, [0, -1]] = 1.0
    v, tris = extract(f, device, threshold=0.2)
    m = mesh(v, tris)
    assert m.is_watertight and m.is_winding_consistent
    assert m.volume > 0  # normals point out of the region below the threshold


def test_every_case_is_closed(device):
    # all 256 cases side by side, one cube each, separated by a positive (outside) layer
    f = np.ones((3 * 16 + 1, 3 * 16 + 1, 4), dtype=np.float32)
    for case in range(256):
        a, b = divmod(case, 16)
        for c in range(8):
            if not (case >> c) & 1:
                f[3 * a + 1 + (c & 1), 3 * b + 1 + ((c >> 1) & 1), 1 + ((c >> 2) & 1)] = -1.0
    v, tris = extract(f, device)
    m = mesh(v, tris)
    assert m.is_watertight and m.is_winding_consistent


def test_ties_count_as_inside(device):
    f = np.zeros((6, 6, 6), dtype=np.float32)
    f[2:4, 2:4, 2:4] = -1.0  # values equal to the threshold are ">= threshold"
    v, tris = extract(f, device, threshold=0.0)
    m = mesh(v, tris)
    assert m.is_watertight and m.volume > 0


def test_case_tables():
    start, edges, info = case_tables()
    assert start[0] == 0 and start[256] * 3 == len(edges)
    assert info.shape == (12, 4)
    corner = list(wp.MarchingCubes.CUBE_CORNER_OFFSETS)
    for case in range(256):
        used = set(edges[3 * start[case]:3 * start[case + 1]].tolist())
        crossing = set()
        for e, (x, y, z, axis) in enumerate(info):
            a = corner.index((x, y, z))
            b = corner.index(tuple(v + (axis == d) for d, v in enumerate((x, y, z))))
            assert {a, b} == set(wp.MarchingCubes.EDGE_TO_CORNERS[e])
            if (case >> a) & 1 != (case >> b) & 1:
                crossing.add(e)
        assert used == crossing, case  # a vertex on every crossing edge, none elsewhere


def test_empty_surface(device):
    v, tris = extract(np.ones((5, 6, 7)), device)
    assert v.shape == (0, 3) and tris.shape == (0, 3)


def test_matches_warp(device):
    warp = pytest.importorskip("warp")
    n = 32
    X, Y, Z = grid_coords(n, -1.3, 1.3)
    f = (np.sqrt(X**2 + 0.7 * Y**2 + Z**2) - 1.0).astype(np.float32)
    v, tris = extract(f, device)
    warp.config.quiet = True
    mc = warp.MarchingCubes(n, n, n)
    mc.surface(warp.array(f, dtype=float, device="cpu"), 0.0)
    wv = mc.verts.numpy()
    assert len(wv) == len(v) and len(mc.indices.numpy()) == 3 * len(tris)
    np.testing.assert_allclose(np.unique(np.round(v, 4), axis=0), np.unique(np.round(wv, 4), axis=0), atol=2e-4)


def test_vertex_gradient_wrt_field(device):
    n = 10
    X, Y, Z = grid_coords(n, -1.0, 1.0)
    f0 = (np.sqrt(X**2 + Y**2 + Z**2) - 0.7).astype(np.float64)
    rng = np.random.default_rng(2)
    mc = wp.MarchingCubes(n, n, n, device=device)

    def loss(fnp, w, tape=None):
        field = wp.array(fnp.astype(np.float32), dtype=float, device=device, requires_grad=tape is not None)
        out = wp.zeros(1, dtype=float, device=device, requires_grad=True)
        if tape is None:  # summed in float64 on the host: a GPU's float32 atomic sum, in any order, is
            verts, _ = mc.surface(field, 0.0)  # a few ulp off from run to run, which eps amplifies
            return float(np.sum(verts.numpy().astype(np.float64) * w.numpy()))
        with tape:
            verts, _ = mc.surface(field, 0.0)
            wp.launch(weighted_sum, dim=len(verts), inputs=[verts, w, out], device=device)
        tape.backward(out)
        return field.grad.numpy()

    nverts = len(extract(f0, device)[0])
    w = wp.array(rng.standard_normal((nverts, 3)).astype(np.float32), dtype=wp.vec3, device=device)
    grad = loss(f0, w, wp.Tape())
    assert np.abs(grad).max() > 0
    eps = 1e-3
    idx = np.argwhere(np.abs(f0) < 0.25)[::7][:12]
    for i, j, k in idx:
        fp, fm = f0.copy(), f0.copy()
        fp[i, j, k] += eps
        fm[i, j, k] -= eps
        fd = (loss(fp, w) - loss(fm, w)) / (2 * eps)
        assert abs(fd - grad[i, j, k]) < 2e-2 * max(1.0, abs(fd)), (i, j, k, fd, grad[i, j, k])


# ---------------------------------------------------------------------------
# errors


@pytest.mark.parametrize("dims, exc", [((4, -1, 4), ValueError), ((4.0, 4, 4), TypeError)])
def test_bad_dimensions(dims, exc):
    with pytest.raises(exc, match="MarchingCubes"):
        wp.MarchingCubes(*dims, device="cpu")


def test_bad_field(device):
    mc = wp.MarchingCubes(4, 5, 6, device=device)
    with pytest.raises(ValueError, match=r"shape \(4, 5, 7\)"):
        mc.surface(wp.zeros((4, 5, 7), dtype=float, device=device), 0.0)
    with pytest.raises(TypeError, match="float32"):
        mc.surface(wp.zeros((4, 5, 6), dtype=wp.float64, device=device), 0.0)
    with pytest.raises(ValueError, match=r"shape \(120,\) does not match"):
        mc.surface(wp.zeros(120, dtype=float, device=device), 0.0)
    with pytest.raises(ValueError, match="3 dimensions"):
        wp.geometry.IsoSurfaceMarchingCubes.extract(wp.zeros(120, dtype=float, device=device), 0.0)
    with pytest.raises(TypeError, match="simkit array3d"):
        mc.surface(np.zeros((4, 5, 6), dtype=np.float32), 0.0)

"""simkit.geometry.IsoSurfaceMarchingCubes (Warp 1.19's API): extract(), bounds, public case tables
against a numpy marching cubes, gradients, deprecated names, errors."""
import contextlib
import inspect
import warnings

import numpy as np
import pytest

import simkit as wp
from geometry_kernels import sphere_sdf, surface_area

trimesh = pytest.importorskip("trimesh")

ISO = wp.geometry.IsoSurfaceMarchingCubes


def sphere_field(shape, lower, upper, r, center=(0.0, 0.0, 0.0)):
    axes = [np.linspace(lo, hi, n) - c for n, lo, hi, c in zip(shape, lower, upper, center)]
    X, Y, Z = np.meshgrid(*axes, indexing="ij")
    return (np.sqrt(X**2 + Y**2 + Z**2) - r).astype(np.float32)


def host_area(v, f):
    v = v.astype(np.float64)
    return 0.5 * np.linalg.norm(np.cross(v[f[:, 1]] - v[f[:, 0]], v[f[:, 2]] - v[f[:, 0]]), axis=1).sum()


def test_namespace():
    assert ISO is wp.MarchingCubes is wp.collision.MarchingCubes
    assert issubclass(ISO, wp.geometry.IsoSurfaceBase)
    assert isinstance(ISO(4, 4, 4), wp.MarchingCubes)
    with pytest.raises(TypeError):
        wp.geometry.IsoSurfaceBase(4, 4, 4)  # abstract


def test_extract_sphere_matches_surface(device):
    n, r, lo, hi = 48, 0.8, (-1.0,) * 3, (1.0,) * 3
    field = wp.array(sphere_field((n,) * 3, lo, hi, r), dtype=float, device=device)
    verts, faces = ISO.extract(field, 0.0, lower=lo, upper=hi)
    assert verts.device == field.device and verts.dtype is wp.vec3 and faces.dtype is wp.int32
    v, f = verts.numpy(), faces.numpy().reshape(-1, 3)
    m = trimesh.Trimesh(v, f, process=False)
    assert m.is_watertight and m.is_winding_consistent and m.volume > 0  # counter-clockwise seen from outside
    assert abs(m.area / (4 * np.pi * r**2) - 1) < 0.01
    assert np.abs(np.linalg.norm(v, axis=1) - r).max() < 0.1 * (hi[0] - lo[0]) / (n - 1)
    iso = ISO(n, n, n, lower=wp.vec3(lo), upper=wp.vec3(hi))  # vec3 bounds as well as tuples
    sv, sf = iso.surface(field, 0.0)
    assert iso.verts is sv and iso.indices is sf
    np.testing.assert_array_equal(sv.numpy(), v)
    np.testing.assert_array_equal(sf.numpy(), faces.numpy())


def test_nonuniform_grid_and_default_bounds(device):
    shape, lo, hi, r = (30, 22, 37), (-1.0, -0.7, -1.3), (1.1, 0.8, 1.2), 0.6
    f = sphere_field(shape, lo, hi, r)
    field = wp.array(f, dtype=float, device=device)
    v, tris = (a.numpy() for a in ISO.extract(field, lower=lo, upper=hi))  # threshold defaults to 0
    spacing = (np.array(hi) - lo) / (np.array(shape) - 1)
    assert np.abs(np.linalg.norm(v, axis=1) - r).max() < 0.1 * spacing.max()
    assert trimesh.Trimesh(v, tris.reshape(-1, 3), process=False).is_watertight
    vi, ti = (a.numpy() for a in ISO.extract(field))  # default: node (i, j, k) at (i, j, k)
    np.testing.assert_array_equal(ti, tris)
    np.testing.assert_allclose(lo + vi * spacing, v, atol=1e-5)


def reference_marching_cubes(f, threshold):
    """Marching cubes in numpy from the public tables only: ({triangle as 3 edge keys, rotated so that the
    smallest comes first: the winding is kept}, {edge key: vertex position}); an edge key is its lower
    node and its axis."""
    corners, edges = ISO.CUBE_CORNER_OFFSETS, ISO.EDGE_TO_CORNERS
    ranges, local = ISO.CASE_TO_TRI_RANGE, ISO.TRI_LOCAL_INDICES
    tris, where = set(), {}
    for cell in np.ndindex(*(n - 1 for n in f.shape)):
        pos = [np.add(cell, c) for c in corners]
        val = [float(f[tuple(p)]) for p in pos]
        case = sum(1 << c for c in range(8) if val[c] >= threshold)
        for t in range(ranges[case], ranges[case + 1], 3):
            tri = []
            for e in local[t:t + 3]:
                a, b = edges[e]
                key = tuple(np.minimum(pos[a], pos[b])) + (int(np.argmax(pos[a] != pos[b])),)
                s = (threshold - val[a]) / (val[b] - val[a])
                where[key] = pos[a] + s * (pos[b] - pos[a])
                tri.append(key)
            k = tri.index(min(tri))
            tris.add(tuple(tri[k:] + tri[:k]))
    return tris, where


@pytest.mark.parametrize("seed", [0, 1])
def test_public_tables_reproduce_extract(device, seed):
    rng = np.random.default_rng(seed)
    f = rng.standard_normal((7, 6, 8)).astype(np.float32)
    verts, faces = ISO.extract(wp.array(f, dtype=float, device=device), 0.1)
    v, tris = verts.numpy(), faces.numpy().reshape(-1, 3)
    ref_tris, where = reference_marching_cubes(f, 0.1)
    keys = list(where)
    pts = np.array([where[k] for k in keys])
    dist = np.linalg.norm(v[:, None, :] - pts[None, :, :], axis=2)
    assert len(v) == len(keys) and dist.min(axis=1).max() < 1e-5  # one vertex on each crossed edge
    key_of = [keys[i] for i in dist.argmin(axis=1)]
    got = set()
    for t in tris:
        tri = [key_of[i] for i in t]
        k = tri.index(min(tri))
        got.add(tuple(tri[k:] + tri[:k]))
    assert len(got) == len(tris) and got == ref_tris


def test_public_tables_structure():
    corners, edges = ISO.CUBE_CORNER_OFFSETS, ISO.EDGE_TO_CORNERS
    ranges, local = ISO.CASE_TO_TRI_RANGE, ISO.TRI_LOCAL_INDICES
    assert sorted(corners) == sorted((x, y, z) for x in (0, 1) for y in (0, 1) for z in (0, 1))
    assert all(np.abs(np.subtract(corners[b], corners[a])).sum() == 1 for a, b in edges)
    assert len({frozenset(e) for e in edges}) == 12
    assert len(ranges) == 257 and ranges[0] == 0 and ranges[-1] == len(local) == 2460
    assert all(b >= a and (b - a) % 3 == 0 for a, b in zip(ranges, ranges[1:]))
    assert ranges[1] == ranges[0] and ranges[256] == ranges[255] and min(local) >= 0 and max(local) <= 11
    assert ISO.CASE_TO_TRI_RANGE is ISO.CASE_TO_TRI_RANGE  # derived once
    arr = wp.array(corners, dtype=wp.vec3ub, device="cpu")
    assert arr.shape == (8,) and tuple(arr.numpy()[1]) == (1, 0, 0)


def test_area_gradient_wrt_radius(device):
    """d(area)/d(radius) through the field kernel, extract() and the area: analytic 8 pi r, and central
    differences of the area summed in float64 on the host."""
    n, r = 40, 0.55
    lo, hi = wp.vec3(-1.0, -1.0, -1.0), wp.vec3(1.0, 1.0, 1.0)
    delta = wp.vec3(*([2.0 / (n - 1)] * 3))

    def area_of(radius, tape=None):
        rad = wp.array([radius], dtype=float, device=device, requires_grad=True)
        field = wp.zeros((n, n, n), dtype=float, device=device, requires_grad=True)
        area = wp.zeros(1, dtype=float, device=device, requires_grad=True)
        with tape if tape is not None else contextlib.nullcontext():
            wp.launch(sphere_sdf, dim=field.shape, inputs=[field, lo, delta, rad], device=device)
            verts, faces = ISO.extract(field, 0.0, lower=lo, upper=hi)
            wp.launch(surface_area, dim=len(faces) // 3, inputs=[verts, faces, area], device=device)
        return rad, area, host_area(verts.numpy(), faces.numpy().reshape(-1, 3))

    tape = wp.Tape()
    rad, area, a0 = area_of(r, tape)
    tape.backward(area)
    grad = float(rad.grad.numpy()[0])
    assert abs(a0 / (4 * np.pi * r**2) - 1) < 0.01
    assert abs(grad / (8 * np.pi * r) - 1) < 0.02
    eps = 2e-3  # no node within eps of the surface: the mesh's connectivity does not change
    fd = (area_of(r + eps)[2] - area_of(r - eps)[2]) / (2 * eps)
    assert abs(grad - fd) < 2e-3 * abs(fd), (grad, fd)


def test_deprecated_bound_names():
    with pytest.warns(DeprecationWarning, match=r"`domain_bounds_\w+_corner` is deprecated") as rec:
        line = inspect.currentframe().f_lineno + 1
        iso = ISO(8, 8, 8, domain_bounds_lower_corner=(-1.0, -2.0, -3.0), domain_bounds_upper_corner=None)
    assert iso.lower == (-1.0, -2.0, -3.0) and iso.upper is None
    assert any("domain_bounds_upper_corner" in str(w.message) for w in rec)
    assert all(w.filename == __file__ and w.lineno == line for w in rec)  # the caller's line
    with pytest.warns(DeprecationWarning, match="Use `upper` instead"):
        iso.domain_bounds_upper_corner = (1.0, 2.0, 3.0)
    assert iso.upper == (1.0, 2.0, 3.0)
    with pytest.warns(DeprecationWarning, match="domain_bounds_lower_corner is deprecated"):
        assert iso.domain_bounds_lower_corner == (-1.0, -2.0, -3.0)
    for args in ({"lower": (0, 0, 0), "domain_bounds_lower_corner": (1, 1, 1)},
                 {"upper": (1, 1, 1), "domain_bounds_upper_corner": (2, 2, 2)}):
        with pytest.raises(TypeError, match="Cannot specify both"):
            ISO(8, 8, 8, **args)


def test_deprecated_extract_alias(device):
    f = wp.array(sphere_field((12, 12, 12), (0, 0, 0), (11, 11, 11), 4.0, center=(5.5,) * 3), dtype=float,
                 device=device)
    with pytest.warns(DeprecationWarning, match="extract_surface_marching_cubes"):
        v, t = ISO.extract_surface_marching_cubes(f, 0.0, (0, 0, 0), (1, 1, 1))
    ev, et = ISO.extract(f, 0.0, lower=(0, 0, 0), upper=(1, 1, 1))
    np.testing.assert_array_equal(v.numpy(), ev.numpy())
    np.testing.assert_array_equal(t.numpy(), et.numpy())


def test_simkit_names_do_not_warn():
    f = wp.array(sphere_field((8, 8, 8), (-1,) * 3, (1,) * 3, 0.5), dtype=float, device="cpu")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        mc = wp.MarchingCubes(8, 8, 8, device="cpu", lower=(-1, -1, -1), upper=(1, 1, 1))
        assert len(mc.surface(f, 0.0)[0]) > 0
        legacy = wp.MarchingCubes(8, 8, 8, 1000, 2000, "cpu")  # Warp <= 1.18: max_verts, max_tris, device
        assert legacy.lower is None and legacy.upper is None and (legacy.max_verts, legacy.max_tris) == (1000, 2000)
        assert legacy.device.alias == "cpu" and len(legacy.surface(f, 0.0)[1]) > 0
        wp.geometry.IsoSurfaceMarchingCubes.extract(f)
    assert wp.config.verbose_warnings in (False, True)


def test_degenerate_and_bad_input(device):
    for shape in ((1, 8, 8), (8, 1, 8), (8, 8, 1), (0, 8, 8)):
        field = wp.zeros(shape, dtype=float, device=device)
        with pytest.raises(ValueError, match="at least 2 nodes on each axis"):
            ISO.extract(field)
        iso = ISO(*shape)  # accepted until a field is extracted (as in Warp)
        with pytest.raises(ValueError, match="at least 2 nodes on each axis"):
            iso.surface(field, 0.0)
    v, t = ISO.extract(wp.full((2, 2, 2), -1.0, dtype=float, device=device))
    assert len(v) == 0 and len(t) == 0
    field = wp.zeros((4, 4, 4), dtype=float, device=device)
    with pytest.raises(ValueError, match="lower must be 3 finite numbers"):
        ISO.extract(field, lower=(0.0, 0.0))
    with pytest.raises(ValueError, match="upper must be 3 finite numbers"):
        ISO(4, 4, 4, upper=(1.0, float("nan"), 1.0)).surface(field, 0.0)
    with pytest.raises(ValueError, match="upper must be 3 finite numbers"):
        ISO(4, 4, 4, upper=3).surface(field, 0.0)  # (two integers are Warp <= 1.18's max_verts, max_tris)
    with pytest.raises(TypeError, match="float32"):
        ISO.extract(wp.zeros((4, 4, 4), dtype=wp.float64, device=device))
    with pytest.raises(TypeError, match="simkit array3d"):
        ISO.extract(np.zeros((4, 4, 4), dtype=np.float32))


def test_device_and_resize(device):
    f16 = wp.array(sphere_field((16,) * 3, (-1,) * 3, (1,) * 3, 0.6), dtype=float, device=device)
    f24 = wp.array(sphere_field((24,) * 3, (-1,) * 3, (1,) * 3, 0.6), dtype=float, device=device)
    iso = ISO(16, 16, 16, lower=(-1, -1, -1), upper=(1, 1, 1))  # no device: the field's
    v16 = iso.surface(f16, 0.0)[0]
    assert v16.device == f16.device
    with pytest.raises(ValueError, match=r"does not match the grid \(16, 16, 16\)"):
        iso.surface(f24, 0.0)
    iso.resize(24, 24, 24)
    v24, t24 = iso.surface(f24, 0.0)
    np.testing.assert_array_equal(v24.numpy(), ISO.extract(f24, lower=(-1, -1, -1), upper=(1, 1, 1))[0].numpy())
    assert len(v24) > len(v16)
    other = "cpu" if f16.device.alias != "cpu" else None
    if other is not None:
        with pytest.raises(TypeError, match="field is on"):
            ISO(16, 16, 16, device=other).surface(f16, 0.0)

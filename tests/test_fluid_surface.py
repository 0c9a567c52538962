"""FluidSurface: the surface of SPH particles as a mesh, against analytic shapes (a sphere's radius and
volume, a block's extents), closed and outward, empty input, and time-sampled export to USD (the
exporter's varying topology, and the dam break scene's surface)."""
import numpy as np
import pytest

import simkit as sk
from simkit.cli import load_scene
from simkit.solvers.sph import FluidSurface

S = 0.02   # particle spacing [m]


def lattice(lo, hi, s=S):
    """Points of a cubic lattice of spacing ``s`` with coordinates in [lo, hi] on every axis."""
    g = np.arange(lo, hi + 1e-9, s)
    return np.stack(np.meshgrid(g, g, g, indexing="ij"), axis=-1).reshape(-1, 3)


def ball(radius, centre=(0.0, 0.0, 0.0)):
    """Lattice particles (centres on the lattice k * S) within ``radius`` of the origin, moved by ``centre``."""
    n = int(radius / S) + 1
    p = lattice(-n * S, n * S)
    return (p[np.linalg.norm(p, axis=1) <= radius + 1e-9] + centre).astype(np.float32)


def block(lo, dims):
    """``dims`` particles from ``lo`` [m], ``S`` apart: they stand for the box [lo - S/2, lo + (dims - 1/2) S]."""
    idx = np.stack(np.meshgrid(*(np.arange(d) for d in dims), indexing="ij"), axis=-1).reshape(-1, 3)
    return (np.asarray(lo) + idx * S).astype(np.float32)


def extract(points, lower, upper, device, spacing=S / 2):
    surface = FluidSurface(lower, upper, spacing, device=device, particle_spacing=S)
    verts, indices = surface.extract(points)
    assert surface.verts is verts and surface.indices is indices
    assert verts.dtype is sk.vec3 and indices.dtype is sk.int32
    return verts.numpy(), indices.numpy().reshape(-1, 3)


def volume(v, f):
    """Enclosed volume (divergence theorem over the triangles; > 0 for outward normals)."""
    return float(np.einsum("ij,ij->i", v[f[:, 0]], np.cross(v[f[:, 1]], v[f[:, 2]])).sum() / 6.0)


def assert_closed_and_oriented(f):
    """Every edge is in exactly two triangles, which run along it in opposite directions."""
    directed = np.concatenate([f[:, [0, 1]], f[:, [1, 2]], f[:, [2, 0]]])
    assert np.all(directed[:, 0] != directed[:, 1]), "degenerate triangle"
    pairs, counts = np.unique(directed, axis=0, return_counts=True)
    assert counts.max() == 1, "a directed edge is used twice: inconsistent orientation or a non-manifold edge"
    forward = {tuple(e) for e in pairs}
    assert all((b, a) in forward for a, b in pairs), "an edge with a single triangle: the mesh is open"


def test_sphere_of_particles_has_the_sphere_radius_and_volume(device):
    # particles on a lattice filling a sphere of radius R: the outermost ones lie on average half a
    # spacing inside R, so the surface (half a spacing outside them) is the sphere of radius R
    R = 8 * S
    q = ball(R, centre=(0.003, -0.004, 0.002))
    v, f = extract(q, (-R - 3 * S,) * 3, (R + 3 * S,) * 3, device)
    r = np.linalg.norm(v - (0.003, -0.004, 0.002), axis=1)
    assert len(f) > 2000
    assert np.all(np.abs(r - R) < 0.5 * S), (r.min() / S, r.max() / S)            # 0.35 S measured
    assert abs(r.mean() - R) < 0.15 * S
    vol = volume(v, f)
    assert vol == pytest.approx(4.0 / 3.0 * np.pi * R ** 3, rel=0.05)          # -3.7% measured
    assert vol == pytest.approx(len(q) * S ** 3, rel=0.03)                       # the particles' volume: -2.1%


def test_block_surface_spans_the_block_plus_half_a_spacing(device):
    lo, dims = np.array([0.013, -0.031, 0.007]), np.array([7, 5, 4])
    q = block(lo, dims)
    v, f = extract(q, lo - 4 * S, lo + (dims + 3) * S, device)
    np.testing.assert_allclose(v.min(axis=0), lo - S / 2, atol=0.02 * S)            # 0.005 S measured
    np.testing.assert_allclose(v.max(axis=0), lo + (dims - 0.5) * S, atol=0.02 * S)
    # a face's middle is flat, on the plane half a spacing out (the rounding stays near the edges)
    top = lo[1] + (dims[1] - 0.5) * S
    mid = (np.abs(v[:, 0] - (lo[0] + 3 * S)) < 1.5 * S) & (np.abs(v[:, 2] - (lo[2] + 1.5 * S)) < 0.6 * S) \
        & (v[:, 1] > top - S)
    assert mid.sum() >= 4 and np.all(np.abs(v[mid, 1] - top) < 0.05 * S)
    box = np.prod(dims) * S ** 3
    assert 0.85 * box < volume(v, f) < box                          # edges and corners rounded: 0.867


@pytest.mark.parametrize("shape", ["sphere", "block", "capped", "drops"])
def test_surface_is_closed_and_outward(device, shape):
    lower, upper = np.full(3, -0.2), np.full(3, 0.2)
    if shape == "sphere":
        q = ball(5 * S)
    elif shape == "block":
        q = block((-0.05, -0.03, -0.04), (6, 3, 5))
    elif shape == "capped":   # reaches past the grid: closed by the grid's outer faces
        q = block((-0.25, -0.05, -0.05), (10, 5, 5))
    else:                     # two droplets, a pair of particles (below the iso level: no surface), a ring
        ring = [(0.12 + 0.04 * np.cos(a), 0.0, 0.04 * np.sin(a)) for a in np.linspace(0, 2 * np.pi, 20, endpoint=False)]
        q = np.concatenate([ball(2 * S, (-0.1, 0.1, 0.0)), block((0.05, 0.1, 0.0), (2, 2, 2)),
                            [(-0.1, -0.1, 0.0), (-0.1 + S, -0.1, 0.0)], ring]).astype(np.float32)
    v, f = extract(q, lower, upper, device)
    assert len(f) > 50
    assert_closed_and_oriented(f)
    assert volume(v, f) > 0.0
    if shape == "sphere":   # every triangle faces away from the centre
        n = np.cross(v[f[:, 1]] - v[f[:, 0]], v[f[:, 2]] - v[f[:, 0]])
        assert np.all(np.einsum("ij,ij->i", n, v[f].mean(axis=1)) > 0.0)
    if shape == "capped":
        assert lower[0] < v[:, 0].min() < lower[0] + S / 2            # capped in the grid's first cell
    if shape == "drops":    # the pair is too thin to show: no vertex near it
        assert np.linalg.norm(v - (-0.1, -0.1, 0.0), axis=1).min() > 2 * S


def test_empty_particle_set_gives_an_empty_mesh(device):
    surface = FluidSurface((0.0, 0.0, 0.0), (0.2, 0.2, 0.2), S / 2, device=device, particle_spacing=S)
    for points in (np.zeros((0, 3)), sk.zeros(0, dtype=sk.vec3, device=device), block((0.05,) * 3, (3, 3, 3)), []):
        verts, indices = surface.extract(points)
        expected = 0 if len(points) == 0 else 1
        assert (verts.shape[0] > 0) == expected and (indices.shape[0] > 0) == expected
    assert np.all(surface.field.numpy() == 0.0)


def test_points_in_any_form_give_the_same_mesh(device):
    q = ball(3 * S, centre=(0.01, 0.0, -0.01))
    surface = FluidSurface((-0.1,) * 3, (0.1,) * 3, S / 2, device=device, particle_spacing=S)
    ref_v, ref_i = (a.numpy() for a in surface.extract(q))
    for points in (q.astype(np.float64), sk.array(q, dtype=sk.vec3, device=device),
                   sk.array(q, dtype=sk.vec3d, device=device), sk.array(q, dtype=sk.vec3, device="cpu")):
        v, i = surface.extract(points)
        np.testing.assert_array_equal(v.numpy(), ref_v)
        np.testing.assert_array_equal(i.numpy(), ref_i)


def test_fluid_surface_errors():
    with pytest.raises(ValueError, match="upper > lower"):
        FluidSurface((0, 0, 0), (0.1, 0.0, 0.1), 0.01, particle_spacing=S)
    with pytest.raises(ValueError, match="spacing must be"):
        FluidSurface((0, 0, 0), (0.1, 0.1, 0.1), 0.0, particle_spacing=S)
    surface = FluidSurface((0, 0, 0), (0.1, 0.1, 0.1), 0.01, particle_spacing=S)
    assert surface.dims == (11, 11, 11)
    with pytest.raises(ValueError, match=r"shape \(n, 3\)"):
        surface.extract(np.zeros((4, 2)))


# ----------------------------------------------------------------------------- export

def pxr_usd():
    """(Usd, UsdGeom), or skip without usd-core."""
    pytest.importorskip("pxr")
    from pxr import Usd, UsdGeom
    return Usd, UsdGeom


def test_exported_surfaces_are_time_sampled_with_their_topology(tmp_path):
    Usd, UsdGeom = pxr_usd()
    path = tmp_path / "surface.usda"
    surface = FluidSurface((-0.15,) * 3, (0.15,) * 3, S / 2, particle_spacing=S)
    frames = []
    with sk.io.UsdExporter(path, fps=30) as usd:
        usd.render_mesh("static", np.eye(3), [0, 1, 2])
        for k, radius in enumerate([2 * S, 4 * S, 4 * S, 0.0, 3 * S]):   # grows, moves, vanishes, returns
            q = ball(radius, centre=(0.01 * k, 0.0, 0.0)) if radius else np.zeros((0, 3))
            v, i = surface.extract(q)
            frames.append((v.numpy(), i.numpy()))
            usd.begin_frame(k / 30)
            usd.render_mesh("water", *frames[-1])
            usd.render_mesh("static", np.eye(3), [0, 1, 2])
            usd.end_frame()
    stage = Usd.Stage.Open(str(path))
    mesh = UsdGeom.Mesh(stage.GetPrimAtPath("/World/water"))
    assert mesh.GetFaceVertexIndicesAttr().GetTimeSamples() == [0, 1, 2, 3, 4]
    assert mesh.GetPointsAttr().GetTimeSamples() == [0, 1, 2, 3, 4]
    for k, (v, i) in enumerate(frames):
        assert (len(v) == 0) == (k == 3)
        np.testing.assert_array_equal(np.array(mesh.GetPointsAttr().Get(k)).reshape(-1, 3), v)
        assert list(mesh.GetFaceVertexIndicesAttr().Get(k)) == i.tolist()
        assert list(mesh.GetFaceVertexCountsAttr().Get(k)) == [3] * (len(i) // 3)
        if len(i):
            assert_closed_and_oriented(np.array(mesh.GetFaceVertexIndicesAttr().Get(k)).reshape(-1, 3))
    static = UsdGeom.Mesh(stage.GetPrimAtPath("/World/static"))
    assert static.GetFaceVertexIndicesAttr().GetNumTimeSamples() == 0                # unchanged: written once
    assert static.GetPointsAttr().GetNumTimeSamples() == 0


def test_exporter_topology_changes_and_errors(tmp_path):
    Usd, UsdGeom = pxr_usd()
    with sk.io.UsdExporter(tmp_path / "m.usda") as usd:
        usd.begin_frame()
        usd.render_mesh("m", np.eye(3), [0, 1, 2])
        usd.end_frame()
        usd.begin_frame()
        usd.render_mesh("m", np.eye(3))                               # same topology
        with pytest.raises(ValueError, match="4 points, the topology has 3"):
            usd.render_mesh("m", np.zeros((4, 3)))
        with pytest.raises(ValueError, match="positive multiple of 3"):
            usd.render_mesh("m", np.eye(3), [])
        usd.end_frame()
        usd.begin_frame()
        usd.render_mesh("m", np.zeros((4, 3)), [0, 1, 2, 0, 2, 3])    # new topology
        usd.end_frame()
    stage = Usd.Stage.Open(str(tmp_path / "m.usda"))
    attr = UsdGeom.Mesh(stage.GetPrimAtPath("/World/m")).GetFaceVertexIndicesAttr()
    assert [len(attr.Get(t)) for t in range(3)] == [3, 3, 6]


def test_dam_break_writes_its_surface(tmp_path):
    Usd, UsdGeom = pxr_usd()
    dam = load_scene("dam_break")
    out = tmp_path / "dam.usda"
    q = dam.run(steps=2, usd=str(out), spacing=S)
    stage = Usd.Stage.Open(str(out))
    mesh = UsdGeom.Mesh(stage.GetPrimAtPath("/World/water_surface"))
    assert mesh.GetPointsAttr().GetTimeSamples() == [0, 1, 2]
    v = np.array(mesh.GetPointsAttr().Get(2))
    f = np.array(mesh.GetFaceVertexIndicesAttr().Get(2)).reshape(-1, 3)
    assert_closed_and_oriented(f)
    # the surface wraps the particles, half a spacing out (the water against the walls: on the walls)
    np.testing.assert_allclose(v.min(axis=0), q.min(axis=0) - S / 2, atol=0.3 * S)
    np.testing.assert_allclose(v.max(axis=0), q.max(axis=0) + S / 2, atol=0.3 * S)
    assert volume(v, f) == pytest.approx(len(q) * S ** 3, rel=0.1)
    dam.run(steps=1, usd=str(tmp_path / "points.usda"), spacing=S, surface=False)
    assert not Usd.Stage.Open(str(tmp_path / "points.usda")).GetPrimAtPath("/World/water_surface").IsValid()

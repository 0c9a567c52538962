"""simkit.io: USD export re-read with usd-core, mesh files round-tripped through trimesh, plots."""

import numpy as np
import pytest

import simkit as sk

pxr = pytest.importorskip("pxr")
trimesh = pytest.importorskip("trimesh")
from pxr import Usd, UsdGeom  # noqa: E402


def _cloth(n=4):
    """An n x n grid: points (n*n, 3) and triangle indices (2*(n-1)^2*3,)."""
    xs, zs = np.meshgrid(np.arange(n, dtype=np.float32), np.arange(n, dtype=np.float32))
    pts = np.stack([xs.ravel(), np.zeros(n * n, np.float32), zs.ravel()], axis=1) * 0.1
    tris = []
    for j in range(n - 1):
        for i in range(n - 1):
            a = j * n + i
            tris += [a, a + n, a + 1, a + 1, a + n, a + n + 1]
    return pts, np.array(tris, np.int32)


@pytest.mark.parametrize("ext", ["usda", "usd"])
@pytest.mark.parametrize("up_axis", ["Y", "Z"])
def test_exported_stage_reads_back(tmp_path, ext, up_axis):
    path = tmp_path / f"out.{ext}"
    cloth, tris = _cloth(4)
    sphere = trimesh.creation.icosphere(subdivisions=1)
    frames, fps = 5, 30
    traj = [np.random.default_rng(f).random((7, 3)).astype(np.float32) for f in range(frames)]
    with sk.io.UsdExporter(path, fps=fps, up_axis=up_axis) as usd:
        usd.render_mesh("sphere", sphere.vertices, sphere.faces)                     # static
        for f in range(frames):
            usd.begin_frame(f / fps)
            usd.render_points("particles", traj[f], radius=0.05)
            usd.render_mesh("cloth", cloth + [0.0, -0.1 * f, 0.0], tris)            # deforming
            usd.render_transform("ball", pos=(f, 0.0, 0.0), rot=(0.0, 0.0, np.sin(0.1 * f), np.cos(0.1 * f)))
            usd.render_mesh("ball/geom", sphere.vertices * 0.1, sphere.faces)       # rigid, under the xform
            usd.end_frame()
    assert usd.frame_count == frames

    stage = Usd.Stage.Open(str(path))
    assert UsdGeom.GetStageUpAxis(stage) == up_axis
    assert stage.GetStartTimeCode() == 0 and stage.GetEndTimeCode() == frames - 1
    assert stage.GetTimeCodesPerSecond() == fps
    assert stage.GetDefaultPrim().GetPath() == "/World"

    pts = UsdGeom.Points(stage.GetPrimAtPath("/World/particles"))
    assert pts.GetPointsAttr().GetTimeSamples() == list(range(frames))
    for f in range(frames):
        np.testing.assert_allclose(np.array(pts.GetPointsAttr().Get(f)), traj[f], rtol=1e-6)
    np.testing.assert_allclose(np.array(pts.GetWidthsAttr().Get(0)), np.full(7, 0.1), rtol=1e-6)

    cm = UsdGeom.Mesh(stage.GetPrimAtPath("/World/cloth"))
    assert len(cm.GetPointsAttr().GetTimeSamples()) == frames
    assert len(cm.GetPointsAttr().Get(3)) == 16
    np.testing.assert_allclose(np.array(cm.GetPointsAttr().Get(3))[:, 1], -0.3, rtol=1e-6)
    assert list(cm.GetFaceVertexIndicesAttr().Get()) == tris.tolist()
    assert set(cm.GetFaceVertexCountsAttr().Get()) == {3}

    sm = UsdGeom.Mesh(stage.GetPrimAtPath("/World/sphere"))
    assert sm.GetPointsAttr().GetNumTimeSamples() == 0                    # static
    assert len(sm.GetPointsAttr().Get()) == len(sphere.vertices)

    ball = UsdGeom.Xformable(stage.GetPrimAtPath("/World/ball"))
    m = ball.ComputeLocalToWorldTransform(3)
    np.testing.assert_allclose(np.array(m.ExtractTranslation()), [3.0, 0.0, 0.0], atol=1e-6)
    geom = UsdGeom.Mesh(stage.GetPrimAtPath("/World/ball/geom"))
    assert geom.GetPointsAttr().GetNumTimeSamples() <= 1                  # unchanged samples are skipped


def test_held_value_is_not_interpolated(tmp_path):
    """A value that stays put for frames then changes must not be linearly interpolated over the pause."""
    path = tmp_path / "held.usda"
    with sk.io.UsdExporter(path) as usd:
        for f in range(6):
            usd.begin_frame()
            usd.render_points("p", [[0.0, 0.0 if f < 4 else 1.0, 0.0]], radius=0.1)
            usd.end_frame()
    stage = Usd.Stage.Open(str(path))
    attr = UsdGeom.Points(stage.GetPrimAtPath("/World/p")).GetPointsAttr()
    assert [attr.Get(f)[0][1] for f in range(6)] == [0, 0, 0, 0, 1, 1]


def test_fallback_writer_without_usd_core(tmp_path):
    path = tmp_path / "fallback.usda"
    with sk.io.UsdExporter(path, fps=24, backend="usda") as usd:
        for f in range(3):
            usd.begin_frame()
            usd.render_points("a/particles", np.full((4, 3), f, np.float32), radius=0.5)
            usd.render_points("b", np.zeros((2, 3)), radius=0.1)
            usd.end_frame()
        with pytest.raises(ImportError, match="usd-core"):
            usd.render_mesh("m", np.zeros((3, 3)), [0, 1, 2])
    stage = Usd.Stage.Open(str(path))
    assert stage.GetEndTimeCode() == 2 and stage.GetTimeCodesPerSecond() == 24
    a = UsdGeom.Points(stage.GetPrimAtPath("/World/a/particles"))
    assert a.GetPointsAttr().GetTimeSamples() == [0, 1, 2]
    assert np.array(a.GetPointsAttr().Get(2)).tolist() == [[2.0] * 3] * 4
    assert len(UsdGeom.Points(stage.GetPrimAtPath("/World/b")).GetPointsAttr().Get(1)) == 2


def test_exporter_errors(tmp_path):
    with pytest.raises(OSError, match="cannot write '/nonexistent_dir/x.usda'"):
        sk.io.UsdExporter("/nonexistent_dir/x.usda")
    with pytest.raises(ValueError, match="extension"):
        sk.io.UsdExporter(tmp_path / "x.txt")
    with pytest.raises(ValueError, match="up_axis"):
        sk.io.UsdExporter(tmp_path / "x.usda", up_axis="X")
    usd = sk.io.UsdExporter(tmp_path / "x.usda")
    with pytest.raises(ValueError, match=r"shape \(n, 3\)"):
        usd.render_points("p", np.zeros((4, 2)))
    with pytest.raises(ValueError, match="indices out of range"):
        usd.render_mesh("m", np.zeros((3, 3)), [0, 1, 5])
    usd.begin_frame(0.5)
    usd.end_frame()
    with pytest.raises(ValueError, match="not after the previous frame"):
        usd.begin_frame(0.2)


# ----------------------------------------------------------------------------- meshes


@pytest.mark.parametrize("fmt", ["obj", "stl", "ply"])
def test_mesh_files_round_trip(tmp_path, fmt):
    src = trimesh.creation.icosphere(subdivisions=2, radius=0.7)
    path = tmp_path / f"sphere.{fmt}"
    src.export(path)
    points, indices = sk.io.load_mesh(path, scale=2.0)
    assert points.dtype == np.float32 and points.shape == (len(src.vertices), 3)
    assert indices.dtype == np.int32 and indices.shape == (src.faces.size,)
    np.testing.assert_allclose(np.linalg.norm(points, axis=1), 1.4, rtol=1e-5)
    # same triangles with the same winding, whatever the vertex order: map every loaded vertex to
    # the source vertex at its position, then compare triangles rotated to start at their lowest index
    d = np.linalg.norm(points[:, None, :] - 2.0 * src.vertices[None, :, :], axis=2)
    assert d.min(axis=1).max() < 1e-5
    to_src = d.argmin(axis=1)
    canon = lambda t: {tuple(np.roll(r, -int(np.argmin(r)))) for r in t}  # noqa: E731
    assert canon(to_src[indices.reshape(-1, 3)]) == canon(src.faces)
    tri = points[indices.reshape(-1, 3)]
    # outward (counter-clockwise) winding survives: the signed volume is positive
    a, b, c = (tri[:, k].astype(np.float64) for k in range(3))
    assert np.einsum("ij,ij->i", a, np.cross(b, c)).sum() / 6 > 0


def test_obj_quads_are_triangulated(tmp_path):
    path = tmp_path / "quad.obj"
    path.write_text("v 0 0 0\nv 1 0 0\nv 1 1 0\nv 0 1 0\nf 1 2 3 4\n")
    points, indices = sk.io.load_mesh(path)
    assert len(points) == 4 and len(indices) == 6


def test_mesh_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="mesh file not found"):
        sk.io.load_mesh(tmp_path / "missing.obj")
    cloud = tmp_path / "cloud.ply"
    trimesh.PointCloud(np.random.default_rng(0).random((10, 3))).export(cloud)
    with pytest.raises(ValueError, match="no faces|no triangle"):
        sk.io.load_mesh(cloud)
    empty = tmp_path / "empty.obj"
    empty.write_text("# nothing\n")
    with pytest.raises(ValueError, match=str(empty)):
        sk.io.load_mesh(empty)
    with pytest.raises(ValueError, match="only triangles"):
        sk.io.mesh_arrays((np.zeros((4, 3)), np.array([[0, 1, 2, 3]])))
    with pytest.raises(ValueError, match="out of range"):
        sk.io.mesh_arrays((np.zeros((3, 3)), np.array([0, 1, 3])))


def test_add_mesh_to_builder_passes_arrays():
    class Builder:
        def add_shape_mesh(self, mesh, **kw):
            self.mesh, self.kw = mesh, kw
            return 0

    b = Builder()
    sphere = trimesh.creation.icosphere(subdivisions=1)
    assert sk.io.add_mesh_to_builder(b, sphere, scale=0.5, pos=(0.0, 1.0, 0.0)) == 0
    points, indices = b.mesh
    np.testing.assert_allclose(np.linalg.norm(points, axis=1), 0.5, rtol=1e-5)
    assert indices.size == sphere.faces.size and b.kw["pos"] == (0.0, 1.0, 0.0)


def test_plot_curves(tmp_path):
    pytest.importorskip("matplotlib")
    out = sk.io.plot_curves({"loss": [3.0, 2.0, 1.0]}, tmp_path / "loss.png", logy=True)
    assert open(out, "rb").read(8) == b"\x89PNG\r\n\x1a\n"
    with pytest.raises(OSError, match="cannot write"):
        sk.io.plot_curves({"loss": [1.0]}, "/nonexistent_dir/loss.png")


@pytest.mark.parametrize("kind,size,volume", [(0, (0.3, 0, 0), 4 / 3 * np.pi * 0.027), (1, (0.1, 0.2, 0.3), 0.048),
                                              (2, (0.1, 0.25, 0), np.pi * 0.01 * 0.5 + 4 / 3 * np.pi * 0.001)])
def test_rigid_shape_meshes_are_closed_outward_and_of_the_right_volume(kind, size, volume):
    from simkit.io.shape_meshes import shape_mesh

    points, indices = shape_mesh(kind, size)
    tris = points.astype(np.float64)[indices.reshape(-1, 3)]
    edges = {}
    for t in indices.reshape(-1, 3):
        for a, b in ((t[0], t[1]), (t[1], t[2]), (t[2], t[0])):
            edges[(a, b)] = edges.get((a, b), 0) + 1
    assert all(n == 1 and edges.get((b, a)) == 1 for (a, b), n in edges.items())   # closed, consistently wound
    v = np.einsum("ij,ij->i", tris[:, 0], np.cross(tris[:, 1], tris[:, 2])).sum() / 6.0   # > 0: outward
    assert v == pytest.approx(volume, rel=0.07 if kind != 1 else 1e-6)


def test_body_motion_is_exported_at_the_stage_frame_rate(tmp_path):
    # a box body recorded every 10 ms, exported at 50 fps: every second record, at its own time
    b = sk.ModelBuilder()
    body = b.add_body(pos=(0.0, 1.0, 0.0))
    b.add_shape_box(body, hx=0.1, hy=0.2, hz=0.3)
    model = b.finalize(device="cpu")
    frames = [np.array([[0.1 * k, 1.0, 0.0, 0.0, 0.0, np.sin(0.05 * k), np.cos(0.05 * k)]]) for k in range(11)]
    path = str(tmp_path / "motion.usda")
    with sk.io.UsdExporter(path, fps=50.0) as usd:
        usd.render_body_motion(model, frames, dt=0.01)
    stage = Usd.Stage.Open(path)
    xf = UsdGeom.Xformable(stage.GetPrimAtPath("/World/bodies/body0"))
    assert stage.GetPrimAtPath("/World/bodies/body0/shape0").IsA(UsdGeom.Mesh)
    for code in range(6):
        m = np.array(xf.ComputeLocalToWorldTransform(float(code)))
        np.testing.assert_allclose(m[3, :3], [0.2 * code, 1.0, 0.0], atol=1e-6)  # record 2 * code
    assert stage.GetEndTimeCode() == 5.0

"""``simkit.render.UsdRenderer`` (Warp's ``warp.render.UsdRenderer`` over io/usd_exporter.py): what it writes,
read back with usd-core, and warp-lang's examples writing their stages under simkit, compared with the stages
they write under warp-lang."""
import numpy as np
import pytest

import simkit as sk

pxr = pytest.importorskip("pxr")
from pxr import Usd, UsdGeom  # noqa: E402


def _points(stage, path, t):
    return np.asarray(UsdGeom.PointBased(stage.GetPrimAtPath(path)).GetPointsAttr().Get(t), dtype=np.float64)


def test_frames_shapes_and_colors_read_back(tmp_path):
    path = str(tmp_path / "r.usda")
    r = sk.render.UsdRenderer(path, fps=10, scaling=2.0)
    r.render_ground(size=4.0)
    x = np.arange(12, dtype=np.float32).reshape(4, 3)
    for f in range(3):
        r.begin_frame(f / 10)
        r.render_points("pts", x + f, radius=0.1, colors=(0.8, 0.3, 0.2))
        r.render_box("box", pos=(0.0, float(f), 0.0), rot=(0.0, 0.0, 0.0, 1.0), extents=(1.0, 2.0, 3.0))
        r.render_capsule("cap", pos=(0.0, 0.0, 0.0), rot=(0.0, 0.0, 0.0, 1.0), radius=0.5, half_height=2.0, up_axis=0)
        r.end_frame()
    r.begin_frame(0.2)                                     # the same time again: continues the last frame
    r.render_sphere("ball", (1.0, 0.0, 0.0), (0.0, 0.0, 0.0, 1.0), 0.25)
    r.end_frame()
    assert r.save() == path
    st = Usd.Stage.Open(path)
    assert (st.GetStartTimeCode(), st.GetEndTimeCode(), st.GetTimeCodesPerSecond()) == (0, 2, 10)
    assert UsdGeom.GetStageUpAxis(st) == "Y"
    np.testing.assert_array_equal(_points(st, "/root/pts", 2), x + 2)
    assert list(UsdGeom.Points(st.GetPrimAtPath("/root/pts")).GetWidthsAttr().Get(2)) == pytest.approx([0.2] * 4)
    color = UsdGeom.Gprim(st.GetPrimAtPath("/root/pts")).GetDisplayColorAttr().Get()
    np.testing.assert_allclose(np.asarray(color), [[0.8, 0.3, 0.2]], rtol=1e-6)
    np.testing.assert_array_equal(np.abs(_points(st, "/root/box", 0)).max(axis=0), [1, 2, 3])
    box_at = UsdGeom.Xformable(st.GetPrimAtPath("/root/box")).ComputeLocalToWorldTransform(2)
    assert tuple(box_at.ExtractTranslation()) == pytest.approx((0.0, 4.0, 0.0))    # (the root's scale 2)
    np.testing.assert_allclose(np.abs(_points(st, "/root/cap", 0)).max(axis=0), [2.5, 0.5, 0.5], rtol=1e-6)
    assert np.linalg.norm(_points(st, "/root/ball", 2), axis=1) == pytest.approx(np.full(114, 0.25), rel=1e-6)
    ground = _points(st, "/root/ground", Usd.TimeCode.Default())
    np.testing.assert_array_equal(ground[:, 1], 0.0)
    assert np.abs(ground).max() == 2.0


def test_errors():
    with pytest.raises(TypeError, match="stage must be a file path"):
        sk.render.UsdRenderer(object())
    with pytest.raises(ValueError, match="up_axis must be 0, 1 or 2"):
        sk.render.UsdRenderer("/tmp/x.usda").render_capsule("c", (0, 0, 0), (0, 0, 0, 1), 1.0, 1.0, up_axis=3)


def _stage_of(name, backend, path):
    import warp_examples

    ex = warp_examples.build(name, backend, stage_path=str(path))
    for _ in range(2):
        if hasattr(ex, "step"):
            ex.step()
        ex.render()
    ex.renderer.save()
    return Usd.Stage.Open(str(path))


@pytest.mark.parametrize("name", ["wave", "mesh", "mesh_intersect"])
def test_warp_examples_write_the_stages_warp_lang_writes(name, tmp_path, warp_cpu, capsys):
    import warp_examples

    if warp_examples.examples_dir() is None:
        pytest.skip("warp-lang's examples are not installed")
    got = _stage_of(name, "simkit", tmp_path / "simkit.usd")
    want = _stage_of(name, "warp", tmp_path / "warp.usd")
    assert (got.GetStartTimeCode(), got.GetEndTimeCode()) == (want.GetStartTimeCode(), want.GetEndTimeCode())
    t = want.GetEndTimeCode()
    meshes = {str(p.GetPath()) for p in want.Traverse() if p.GetTypeName() == "Mesh"}
    assert meshes and meshes <= {str(p.GetPath()) for p in got.Traverse() if p.GetTypeName() == "Mesh"}
    for path in meshes:
        w, g = _points(want, path, t), _points(got, path, t)
        assert g.shape == w.shape, path
        np.testing.assert_allclose(g, w, atol=1e-4 * max(1.0, np.abs(w).max()), err_msg=path)
    if name == "mesh_intersect":  # (a box over each pair of meshes that intersect: the same pairs)
        boxes = {str(p.GetPath()) for p in want.Traverse() if "result_" in str(p.GetPath())}
        assert boxes == {str(p.GetPath()) for p in got.Traverse() if "result_" in str(p.GetPath())}

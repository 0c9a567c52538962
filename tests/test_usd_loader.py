"""simkit.io.load_usd: USD stages (built with pxr or UsdExporter) into a ModelBuilder, in numbers."""
import math

import numpy as np
import pytest

import simkit as sk

pxr = pytest.importorskip("pxr")
from pxr import Gf, Usd, UsdGeom, UsdPhysics, Vt


def _stage(tmp_path, name="s.usda", up="Y", mpu=1.0):
    stage = Usd.Stage.CreateNew(str(tmp_path / name))
    UsdGeom.SetStageUpAxis(stage, UsdGeom.Tokens.y if up == "Y" else UsdGeom.Tokens.z)
    UsdGeom.SetStageMetersPerUnit(stage, mpu)
    return stage


def _points(stage, path, pts, widths=None, vel=None, mass=None, density=None):
    p = UsdGeom.Points.Define(stage, path)
    p.GetPointsAttr().Set(Vt.Vec3fArray.FromNumpy(np.asarray(pts, np.float32)))
    if widths is not None:
        p.GetWidthsAttr().Set(Vt.FloatArray.FromNumpy(np.atleast_1d(np.asarray(widths, np.float32))))
    if vel is not None:
        p.GetVelocitiesAttr().Set(Vt.Vec3fArray.FromNumpy(np.asarray(vel, np.float32)))
    if mass is not None or density is not None:
        api = UsdPhysics.MassAPI.Apply(p.GetPrim())
        if mass is not None:
            api.CreateMassAttr(mass)
        if density is not None:
            api.CreateDensityAttr(density)
    return p


def _mesh(stage, path, pts, counts, indices):
    m = UsdGeom.Mesh.Define(stage, path)
    m.GetPointsAttr().Set(Vt.Vec3fArray.FromNumpy(np.asarray(pts, np.float32)))
    m.GetFaceVertexCountsAttr().Set(Vt.IntArray(list(counts)))
    m.GetFaceVertexIndicesAttr().Set(Vt.IntArray(list(indices)))
    return m


def _quat_matrix(axis, angle):
    """Rotation matrix about a unit axis (column vectors), independent of simkit and pxr."""
    x, y, z = np.asarray(axis, float) / np.linalg.norm(axis)
    c, s = math.cos(angle), math.sin(angle)
    K = np.array([[0, -z, y], [z, 0, -x], [-y, x, 0]])
    return np.eye(3) + s * K + (1 - c) * K @ K


def test_points_under_translated_rotated_scaled_xform(tmp_path):
    stage = _stage(tmp_path)
    axis, angle, T, s = np.array([1.0, 2.0, 2.0]) / 3.0, 0.7, np.array([1.0, -2.0, 0.5]), 2.0
    xf = UsdGeom.Xform.Define(stage, "/World/body")
    xf.AddTranslateOp().Set(Gf.Vec3d(*T))
    h = math.sin(angle / 2)
    xf.AddOrientOp().Set(Gf.Quatf(math.cos(angle / 2), *(h * axis)))
    xf.AddScaleOp().Set(Gf.Vec3f(s, s, s))
    pts = np.array([[0.1, 0.2, 0.3], [-0.4, 0.0, 0.5], [0.0, 1.0, 0.0]])
    vel = np.array([[1.0, 0.0, 0.0], [0.0, 2.0, 0.0], [0.0, 0.0, -3.0]])
    _points(stage, "/World/body/p", pts, widths=[0.02, 0.04, 0.06], vel=vel, mass=0.3)
    stage.Save()

    builder = sk.ModelBuilder()
    info = sk.io.load_usd(tmp_path / "s.usda", builder)
    assert info.particles == {"/World/body/p": range(3)} and info.shapes == {} and info.gravity is None
    R = _quat_matrix(axis, angle)
    np.testing.assert_allclose(builder.particle_q, (s * pts) @ R.T + T, atol=1e-6)
    np.testing.assert_allclose(builder.particle_qd, (s * vel) @ R.T, atol=1e-6)
    np.testing.assert_allclose(builder.particle_radius, [0.02, 0.04, 0.06], rtol=1e-6)   # widths / 2 * scale
    np.testing.assert_allclose(builder.particle_mass, [0.1, 0.1, 0.1], rtol=1e-6)         # total over points


def test_z_up_centimetre_stage_into_y_up_builder(tmp_path):
    stage = _stage(tmp_path, up="Z", mpu=0.01)
    _points(stage, "/World/p", [[100.0, 200.0, 300.0], [0.0, 0.0, 50.0]], widths=10.0,
            vel=[[0.0, 0.0, -100.0], [0.0, 100.0, 0.0]], density=0.001)       # 0.001 kg/cm^3 = 1000 kg/m^3
    scene = UsdPhysics.Scene.Define(stage, "/physicsScene")
    scene.CreateGravityDirectionAttr(Gf.Vec3f(0.0, 0.0, -1.0))
    scene.CreateGravityMagnitudeAttr(490.5)                                   # [cm/s^2]
    builder = sk.ModelBuilder(up_axis="y")
    info = sk.io.load_usd(stage, builder)
    assert info.up_axis == "Z" and info.meters_per_unit == pytest.approx(0.01)
    np.testing.assert_allclose(builder.particle_q, [[1.0, 3.0, -2.0], [0.0, 0.5, 0.0]], atol=1e-6)  # (x, z, -y)
    np.testing.assert_allclose(builder.particle_qd, [[0.0, -1.0, 0.0], [0.0, 0.0, -1.0]], atol=1e-6)
    np.testing.assert_allclose(builder.particle_radius, [0.05, 0.05], rtol=1e-6)
    np.testing.assert_allclose(builder.particle_mass, 1000.0 * 4.0 / 3.0 * math.pi * 0.05 ** 3, rtol=1e-5)
    np.testing.assert_allclose(builder.gravity, [0.0, -4.905, 0.0], atol=1e-9)
    assert info.gravity == builder.gravity


def test_default_scene_gravity_y_up_stage_into_z_up_builder(tmp_path):
    stage = _stage(tmp_path, up="Y")
    UsdPhysics.Scene.Define(stage, "/physicsScene")                            # default: -up, 9.81 m/s^2
    _points(stage, "/p", [[0.0, 1.0, 2.0]], mass=1.0)
    builder = sk.ModelBuilder(up_axis="z", gravity=-1.0)
    sk.io.load_usd(stage, builder)
    np.testing.assert_allclose(builder.gravity, [0.0, 0.0, -9.81], atol=1e-9)
    np.testing.assert_allclose(builder.particle_q, [[0.0, -2.0, 1.0]], atol=1e-6)  # (x, -z, y)
    assert builder.particle_radius == [builder.default_particle_radius]
    builder = sk.ModelBuilder(gravity=-1.0)
    sk.io.load_usd(stage, builder, gravity=False)
    assert builder.gravity == (0.0, -1.0, 0.0)


def test_polygons_are_fan_triangulated(tmp_path):
    stage = _stage(tmp_path, mpu=0.5)
    quad = [[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [1.0, 0.0, -1.0], [0.0, 0.0, -1.0]]
    _mesh(stage, "/World/quad", quad, [4], [0, 1, 2, 3])
    pent = [[math.cos(a), math.sin(a), 0.0] for a in np.linspace(0, 2 * math.pi, 6)[:5]] + [[0.0, 0.0, 0.0]]
    m = _mesh(stage, "/World/pent", pent, [5, 3, 2], [0, 1, 2, 3, 4, 0, 1, 5, 4, 5])   # + a tri, a degenerate
    UsdGeom.Xformable(m.GetPrim()).AddTranslateOp().Set(Gf.Vec3d(0.0, 4.0, 0.0))
    left = _mesh(stage, "/World/left", quad, [4], [0, 1, 2, 3])
    left.GetOrientationAttr().Set(UsdGeom.Tokens.leftHanded)
    builder = sk.ModelBuilder()
    info = sk.io.load_usd(stage, builder, collider_mu=0.25)
    assert info.shapes == {"/World/quad": 0, "/World/pent": 1, "/World/left": 2}
    model = builder.finalize(device="cpu")
    assert model.shape_count == 3 and all(isinstance(mesh, sk.Mesh) for mesh in model.shape_mesh)
    np.testing.assert_allclose(model.shape_mesh[0].points.numpy(), 0.5 * np.array(quad), atol=1e-7)
    assert model.shape_mesh[0].indices.numpy().tolist() == [0, 1, 2, 0, 2, 3]          # a quad -> 2 triangles
    np.testing.assert_allclose(model.shape_mesh[1].points.numpy(), 0.5 * (np.array(pent) + [0.0, 4.0, 0.0]),
                               atol=1e-6)
    assert model.shape_mesh[1].indices.numpy().tolist() == [0, 1, 2, 0, 2, 3, 0, 3, 4, 0, 1, 5]
    assert model.shape_mesh[2].indices.numpy().tolist() == [0, 2, 1, 0, 3, 2]          # left-handed: flipped
    np.testing.assert_allclose(model.shape_mu.numpy(), 0.25)


def test_time_samples(tmp_path):
    stage = _stage(tmp_path)
    p = _points(stage, "/p", [[0.0, 0.0, 0.0]], widths=0.2, mass=1.0)
    attr = p.GetPointsAttr()
    attr.Clear()
    for t in (0.0, 10.0, 20.0):
        attr.Set(Vt.Vec3fArray([Gf.Vec3f(t, 1.0, 0.0)]), t)

    def x_at(**kw):
        b = sk.ModelBuilder()
        info = sk.io.load_usd(stage, b, **kw)
        return b.particle_q[0][0], info.time

    assert x_at() == (0.0, None)                                   # no time range: the first sample
    assert x_at(time=10) == (10.0, 10.0)
    assert x_at(time=Usd.TimeCode(15.0)) == (15.0, 15.0)           # USD interpolates linearly
    stage.SetStartTimeCode(20.0)
    stage.SetEndTimeCode(20.0)
    assert x_at() == (20.0, 20.0)                                  # the stage's start time code


def test_exporter_round_trip(tmp_path):
    path = tmp_path / "out.usd"
    traj = [np.random.default_rng(f).random((5, 3)).astype(np.float32) for f in range(4)]
    ground = np.array([[-1, 0, 1], [1, 0, 1], [1, 0, -1], [-1, 0, -1]], np.float32)
    with sk.io.UsdExporter(path, fps=30, up_axis="Z") as usd:
        usd.render_mesh("ground", ground, [0, 1, 2, 0, 2, 3])
        for f in range(4):
            usd.begin_frame(f / 30)
            usd.render_points("particles", traj[f], radius=0.05)
            usd.end_frame()
    for t in (0, 2, 3):
        builder = sk.ModelBuilder(up_axis="z")
        info = sk.io.load_usd(path, builder, time=t, particle_mass=0.01)
        assert info.path == str(path) and info.particles == {"/World/particles": range(5)}
        np.testing.assert_allclose(builder.particle_q, traj[t], rtol=1e-6)
        np.testing.assert_allclose(builder.particle_radius, 0.05, rtol=1e-6)
        np.testing.assert_allclose(builder.particle_mass, 0.01)
    np.testing.assert_allclose(builder.shape_geo[info.shapes["/World/ground"]][0], ground)


def test_skipped_prims(tmp_path):
    stage = _stage(tmp_path)
    quad = [[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [1.0, 0.0, -1.0], [0.0, 0.0, -1.0]]
    _mesh(stage, "/World/hidden", quad, [4], [0, 1, 2, 3]).MakeInvisible()
    proxy = _mesh(stage, "/World/proxy", quad, [4], [0, 1, 2, 3])               # hidden collision proxy: kept
    proxy.MakeInvisible()
    UsdPhysics.CollisionAPI.Apply(proxy.GetPrim())
    body = UsdGeom.Xform.Define(stage, "/World/box")
    UsdPhysics.RigidBodyAPI.Apply(body.GetPrim())
    _mesh(stage, "/World/box/geom", quad, [4], [0, 1, 2, 3])
    kin = _mesh(stage, "/World/kinematic", quad, [4], [0, 1, 2, 3])
    UsdPhysics.RigidBodyAPI.Apply(kin.GetPrim()).CreateKinematicEnabledAttr(True)
    UsdGeom.Cube.Define(stage, "/World/cube")                                    # not a mesh: ignored
    builder = sk.ModelBuilder()
    with pytest.warns(UserWarning, match="/World/box/geom.*rigid bod"):
        info = sk.io.load_usd(stage, builder)
    assert info.shapes == {"/World/proxy": 0, "/World/kinematic": 1}
    assert set(info.skipped) == {"/World/hidden", "/World/box/geom"}


def test_errors(tmp_path, monkeypatch):
    with pytest.raises(FileNotFoundError, match="nope.usda"):
        sk.io.load_usd(tmp_path / "nope.usda", sk.ModelBuilder())
    (tmp_path / "a.txt").write_text("hello")
    with pytest.raises(ValueError, match="not a readable USD file"):
        sk.io.load_usd(tmp_path / "a.txt", sk.ModelBuilder())
    (tmp_path / "bad.usda").write_text("#usda 1.0\ngarbage {")
    with pytest.raises(ValueError, match="bad.usda"):
        sk.io.load_usd(tmp_path / "bad.usda", sk.ModelBuilder())
    stage = _stage(tmp_path)
    _points(stage, "/World/sand", [[0.0, 0.0, 0.0]] * 3)
    with pytest.raises(ValueError, match=r"/World/sand.*PhysicsMassAPI.*particle_mass"):
        sk.io.load_usd(stage, sk.ModelBuilder())
    _points(stage, "/World/sand", [[0.0, 0.0, 0.0]] * 3, widths=[0.1, 0.2])
    with pytest.raises(ValueError, match="2 widths for 3 points"):
        sk.io.load_usd(stage, sk.ModelBuilder(), particle_mass=1.0)
    monkeypatch.setattr("simkit.io.usd_loader.have_pxr", lambda: False)
    with pytest.raises(ImportError, match=r"pip install -e '\.\[io\]'"):
        sk.io.load_usd(stage, sk.ModelBuilder())


def test_particles_come_to_rest_on_loaded_mesh(tmp_path):
    """A loaded ground quad (lifted to y = 0.2 by its parent) holds loaded particles at 0.2 + radius."""
    stage = _stage(tmp_path, up="Z")
    ground = UsdGeom.Xform.Define(stage, "/World/ground")
    ground.AddTranslateOp().Set(Gf.Vec3d(0.0, 0.0, 0.2))
    m = _mesh(stage, "/World/ground/quad", [[-5, -5, 0], [5, -5, 0], [5, 5, 0], [-5, 5, 0]], [4], [0, 1, 2, 3])
    UsdPhysics.CollisionAPI.Apply(m.GetPrim())
    xs = np.linspace(-0.3, 0.3, 3)
    pts = [[x, y, 0.5] for x in xs for y in xs]
    _points(stage, "/World/sand", pts, widths=0.1, mass=9.0)                       # 1 kg each
    UsdPhysics.Scene.Define(stage, "/physicsScene")
    stage.Save()

    builder = sk.ModelBuilder()                                                 # y up, no ground plane
    # contact stiff enough for mm sag (m g / ke); friction damping kf stable at dt (kf dt / m < 1)
    info = sk.io.load_usd(tmp_path / "s.usda", builder, collider_ke=1.0e4, collider_kd=100.0, collider_kf=100.0)
    assert info.shapes == {"/World/ground/quad": 0} and info.particles == {"/World/sand": range(9)}
    model = builder.finalize(device="cpu")
    solver = sk.SemiImplicitEulerSolver()
    s0, s1 = model.state(), model.state()
    for _ in range(800):
        solver.step(model, s0, s1, None, 1.0e-3)
        s0, s1 = s1, s0
    q, qd = s0.particle_q.numpy(), s0.particle_qd.numpy()
    np.testing.assert_allclose(q[:, 1], 0.2 + 0.05, atol=2e-3)                  # resting on the quad
    np.testing.assert_allclose(q[:, [0, 2]], np.array(pts)[:, [0, 1]] * [1, -1], atol=1e-3)
    assert np.abs(qd).max() < 0.05

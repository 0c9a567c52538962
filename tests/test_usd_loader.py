"""simkit.io.load_usd: USD stages (built with pxr or UsdExporter) into a ModelBuilder, in numbers."""
import math

import numpy as np
import pytest

import simkit as sk

pxr = pytest.importorskip("pxr")
from pxr import Gf, Sdf, Usd, UsdGeom, UsdPhysics, Vt


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
    UsdGeom.Cube.Define(stage, "/World/cube")                                    # no collision API: ignored
    off = UsdGeom.Cube.Define(stage, "/World/off")
    UsdPhysics.CollisionAPI.Apply(off.GetPrim()).CreateCollisionEnabledAttr(False)
    UsdPhysics.CollisionAPI.Apply(UsdGeom.Cylinder.Define(stage, "/World/can").GetPrim())
    builder = sk.ModelBuilder()
    with pytest.warns(UserWarning) as record:
        info = sk.io.load_usd(stage, builder)
    messages = "\n".join(str(w.message) for w in record)
    assert "mesh '/World/box/geom' of the dynamic rigid body '/World/box'" in messages
    assert "rigid body '/World/box': it has no Sphere, Cube or Capsule" in messages          # would be massless
    assert "collision Cylinder '/World/can' (static)" in messages
    assert info.shapes == {"/World/proxy": 0, "/World/kinematic": 1}
    assert info.bodies == {} and info.rigid_shapes == {} and builder.body_count == 0
    assert set(info.skipped) == {"/World/hidden", "/World/box/geom", "/World/box", "/World/off", "/World/can"}


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


# ----------------------------------------------------------------------------- rigid bodies

def _q_matrix(q):
    """Rotation matrix (column vectors) of a quaternion (x, y, z, w), independent of simkit."""
    x, y, z, w = np.asarray(q, float) / np.linalg.norm(q)
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                     [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                     [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]])


def _place(prim, pos=None, axis=None, angle=0.0, scale=None):
    xf = UsdGeom.Xformable(prim)
    if pos is not None:
        xf.AddTranslateOp().Set(Gf.Vec3d(*pos))
    if axis is not None:
        a = np.asarray(axis, float) / np.linalg.norm(axis) * math.sin(angle / 2)
        xf.AddOrientOp().Set(Gf.Quatf(math.cos(angle / 2), *a))
    if scale is not None:
        xf.AddScaleOp().Set(Gf.Vec3f(*scale))
    return prim


def _geom(stage, path, kind, collide=True, **attrs):
    g = {"sphere": UsdGeom.Sphere, "cube": UsdGeom.Cube, "capsule": UsdGeom.Capsule}[kind].Define(stage, path)
    for k, v in attrs.items():
        g.GetPrim().GetAttribute(k).Set(v)
    if collide:
        UsdPhysics.CollisionAPI.Apply(g.GetPrim())
    return g.GetPrim()


def _rigid(prim, vel=None, ang_vel=None, mass=None, density=None, kinematic=False):
    api = UsdPhysics.RigidBodyAPI.Apply(prim)
    if vel is not None:
        api.CreateVelocityAttr(Gf.Vec3f(*vel))
    if ang_vel is not None:
        api.CreateAngularVelocityAttr(Gf.Vec3f(*ang_vel))                  # [degrees/s]
    if kinematic:
        api.CreateKinematicEnabledAttr(True)
    if mass is not None or density is not None:
        m = UsdPhysics.MassAPI.Apply(prim)
        if mass is not None:
            m.CreateMassAttr(mass)
        if density is not None:
            m.CreateDensityAttr(density)
    return prim


def test_sphere_and_box_bodies_with_velocities(tmp_path):
    stage = _stage(tmp_path)
    ball = _geom(stage, "/World/ball", "sphere", radius=0.1)
    _rigid(_place(ball, (0.5, 1.0, -0.3), (0.0, 0.0, 1.0), 0.5), vel=(1.0, 2.0, 3.0), ang_vel=(90.0, 0.0, -45.0))
    axis, angle = np.array([1.0, 2.0, 2.0]) / 3.0, 0.7
    crate = _rigid(_place(UsdGeom.Xform.Define(stage, "/World/crate").GetPrim(), (-1.0, 0.5, 0.0), axis, angle),
                   vel=(0.0, 0.0, -1.0), ang_vel=(0.0, 360.0, 0.0))
    crate.CreateAttribute("physxRigidBody:localSpaceVelocities", Sdf.ValueTypeNames.Bool).Set(True)
    _place(_geom(stage, "/World/crate/geom", "cube", size=0.4), (0.1, 0.0, 0.0))       # off the body's origin
    _geom(stage, "/World/crate/look", "sphere", collide=False)                          # visual only: ignored
    builder = sk.ModelBuilder()
    info = sk.io.load_usd(stage, builder)
    assert info.bodies == {"/World/ball": 0, "/World/crate": 1}
    assert info.rigid_shapes == {"/World/ball": 0, "/World/crate/geom": 1} and info.skipped == {}
    model = builder.finalize(device="cpu", dtype=sk.float64)
    q, qd = model.body_q.numpy(), model.body_qd.numpy()
    R = _quat_matrix(axis, angle)
    np.testing.assert_allclose(q[:, :3], [[0.5, 1.0, -0.3], [-1.0, 0.5, 0.0]], atol=1e-12)
    np.testing.assert_allclose(_q_matrix(q[0, 3:]), _quat_matrix((0.0, 0.0, 1.0), 0.5), atol=1e-6)
    np.testing.assert_allclose(_q_matrix(q[1, 3:]), R, atol=1e-6)
    np.testing.assert_allclose(qd[0], [math.pi / 2, 0.0, -math.pi / 4, 1.0, 2.0, 3.0], atol=1e-6)  # (w [rad/s], v)
    np.testing.assert_allclose(qd[1], np.r_[R @ [0.0, 2 * math.pi, 0.0], R @ [0.0, 0.0, -1.0]], atol=1e-6)  # local
    np.testing.assert_allclose(model.rigid_shape_xform.numpy()[1], [0.1, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0], atol=1e-6)
    m_ball, m_crate = 1000.0 * 4.0 / 3.0 * math.pi * 0.1 ** 3, 1000.0 * 0.4 ** 3       # default 1000 kg/m^3
    np.testing.assert_allclose(model.body_mass.numpy(), [m_ball, m_crate], rtol=1e-6)
    np.testing.assert_allclose(model.body_com.numpy(), [[0.0, 0.0, 0.0], [0.1, 0.0, 0.0]], atol=1e-7)
    np.testing.assert_allclose(model.body_inertia.numpy()[1], np.eye(3) * m_crate * 2 * 0.4 ** 2 / 12,
                               rtol=1e-6, atol=1e-12)
    np.testing.assert_allclose(model.body_inertia.numpy()[0], np.eye(3) * 0.4 * m_ball * 0.01, rtol=1e-6,
                               atol=1e-12)


def test_capsule_along_x_and_scale_baked_into_shapes(tmp_path):
    stage = _stage(tmp_path)
    pill = _rigid(_geom(stage, "/pill", "capsule", radius=0.1, height=0.4, axis="X"))
    _place(pill, (0.0, 1.0, 0.0))
    _rigid(_place(UsdGeom.Xform.Define(stage, "/scaled").GetPrim(), (2.0, 0.0, 0.0), (0.0, 1.0, 0.0), math.pi / 2,
                  scale=(2.0, 3.0, 4.0)))
    _place(_geom(stage, "/scaled/box", "cube", size=1.0), (0.1, 0.0, 0.0))
    _place(_geom(stage, "/scaled/ball", "sphere", radius=0.1), (0.0, 0.2, 0.0), scale=(1.5, 1.0, 0.75))  # 3 x 3 x 3
    _place(_geom(stage, "/scaled/rod", "capsule", radius=0.1, height=0.2, axis="Y"), scale=(0.5, 1.0, 0.25))
    builder = sk.ModelBuilder()
    info = sk.io.load_usd(stage, builder)
    assert info.bodies == {"/pill": 0, "/scaled": 1} and list(info.rigid_shapes.values()) == [0, 1, 2, 3]
    np.testing.assert_allclose(builder.rigid_shape_size, [(0.1, 0.2, 0.0), (1.0, 1.5, 2.0), (0.3, 0.0, 0.0),
                                                          (0.1, 0.3, 0.0)], rtol=1e-6)
    xf = np.asarray(builder.rigid_shape_xform)
    np.testing.assert_allclose(_q_matrix(xf[0, 3:]) @ [0.0, 1.0, 0.0], [1.0, 0.0, 0.0], atol=1e-6)  # simkit y -> X
    np.testing.assert_allclose(xf[1:, :3], [[0.2, 0.0, 0.0], [0.0, 0.6, 0.0], [0.0, 0.0, 0.0]], atol=1e-6)
    np.testing.assert_allclose(np.abs(xf[1:, 3:]), [[0.0, 0.0, 0.0, 1.0]] * 3, atol=1e-6)   # unrotated in the body
    np.testing.assert_allclose(_q_matrix(builder.body_q[1][3:]), _quat_matrix((0.0, 1.0, 0.0), math.pi / 2),
                               atol=1e-6)
    model = builder.finalize(device="cpu", dtype=sk.float64)
    r, hh = 0.1, 0.2
    mc, ms = 1000.0 * math.pi * r * r * 2 * hh, 1000.0 * 4.0 / 3.0 * math.pi * r ** 3
    assert model.body_mass.numpy()[0] == pytest.approx(mc + ms)
    i_axis = mc * r * r / 2 + 0.4 * ms * r * r                                          # about the capsule's axis
    i_across = mc * (r * r / 4 + hh * hh / 3) + ms * (0.4 * r * r + hh * hh + 0.75 * hh * r)
    np.testing.assert_allclose(model.body_inertia.numpy()[0], np.diag([i_axis, i_across, i_across]), rtol=1e-6,
                               atol=1e-9)


def test_mass_api_mass_and_densities(tmp_path):
    stage = _stage(tmp_path)
    _rigid(UsdGeom.Xform.Define(stage, "/a").GetPrim(), mass=10.0)                   # the total, by volume
    _geom(stage, "/a/ball", "sphere", radius=0.1)
    _place(_geom(stage, "/a/box", "cube", size=0.2), (0.3, 0.0, 0.0))
    UsdPhysics.MassAPI.Apply(stage.GetPrimAtPath("/a/box")).CreateMassAttr(99.0)        # the body's mass wins
    _rigid(UsdGeom.Xform.Define(stage, "/b").GetPrim(), density=500.0)             # for shapes without theirs
    _geom(stage, "/b/ball", "sphere", radius=0.1)
    box = _geom(stage, "/b/box", "cube", size=0.2)
    UsdPhysics.MassAPI.Apply(box).CreateDensityAttr(2000.0)
    cap = _geom(stage, "/b/cap", "capsule", radius=0.05, height=0.1)
    UsdPhysics.MassAPI.Apply(cap).CreateMassAttr(0.7)
    _geom(stage, "/c", "cube", size=0.2)
    _rigid(stage.GetPrimAtPath("/c"))                                                   # body_density
    _rigid(_geom(stage, "/k", "sphere", radius=0.1), vel=(1.0, 0.0, 0.0), kinematic=True)
    builder = sk.ModelBuilder()
    info = sk.io.load_usd(stage, builder, body_density=300.0)
    assert info.bodies == {"/a": 0, "/b": 1, "/c": 2, "/k": 3}
    v_ball, v_box = 4.0 / 3.0 * math.pi * 0.1 ** 3, 0.2 ** 3
    rho = np.asarray(builder.rigid_shape_density)
    np.testing.assert_allclose(rho[:2], 10.0 / (v_ball + v_box), rtol=1e-9)
    v_cap = math.pi * 0.05 ** 2 * 0.1 + 4.0 / 3.0 * math.pi * 0.05 ** 3
    np.testing.assert_allclose(rho[2:], [500.0, 2000.0, 0.7 / v_cap, 300.0, 0.0], rtol=1e-6)   # float 0.7
    model = builder.finalize(device="cpu", dtype=sk.float64)
    np.testing.assert_allclose(model.body_mass.numpy(),
                               [10.0, 500.0 * v_ball + 2000.0 * v_box + 0.7, 300.0 * v_box, 0.0], rtol=1e-6)
    # the kinematic body keeps its velocity: no gravity, no mass
    s0, s1 = model.state(), model.state()
    for _ in range(10):
        sk.RigidBodySolver().step(model, s0, s1, None, 0.01)
        s0, s1 = s1, s0
    np.testing.assert_allclose(s0.body_q.numpy()[3, :3], [0.1, 0.0, 0.0], atol=1e-12)


def test_units_and_up_axis_apply_to_bodies(tmp_path):
    stage = _stage(tmp_path, up="Z", mpu=0.01)                                      # centimetres, grams, Z up
    UsdPhysics.SetStageKilogramsPerUnit(stage, 0.001)
    ball = _rigid(_geom(stage, "/World/ball", "sphere", radius=10.0), vel=(0.0, 0.0, -100.0), ang_vel=(0.0, 0.0, 90.0),
                  density=1.0)                                                         # 1 g/cm^3 = 1000 kg/m^3
    _place(ball, (100.0, 200.0, 300.0), (0.0, 0.0, 1.0), math.pi / 2)
    _rigid(_place(UsdGeom.Xform.Define(stage, "/World/box").GetPrim(), (0.0, 0.0, 50.0)), mass=2000.0)
    _place(_geom(stage, "/World/box/geom", "cube", size=20.0), (0.0, 30.0, 0.0))
    builder = sk.ModelBuilder(up_axis="y")
    info = sk.io.load_usd(stage, builder)
    assert info.bodies == {"/World/ball": 0, "/World/box": 1}
    rot = np.array([[1.0, 0.0, 0.0], [0.0, 0.0, 1.0], [0.0, -1.0, 0.0]])               # (x, y, z) -> (x, z, -y)
    q, qd = np.asarray(builder.body_q), np.asarray(builder.body_qd)
    np.testing.assert_allclose(q[:, :3], [[1.0, 3.0, -2.0], [0.0, 0.5, 0.0]], atol=1e-9)
    np.testing.assert_allclose(_q_matrix(q[0, 3:]), rot @ _quat_matrix((0.0, 0.0, 1.0), math.pi / 2), atol=1e-6)
    np.testing.assert_allclose(_q_matrix(q[1, 3:]), rot, atol=1e-6)
    np.testing.assert_allclose(qd[0], [0.0, math.pi / 2, 0.0, 0.0, -1.0, 0.0], atol=1e-9)
    np.testing.assert_allclose(builder.rigid_shape_size, [(0.1, 0.0, 0.0), (0.1, 0.1, 0.1)], rtol=1e-6)
    # the box's shape sits 30 cm along the stage's y, in the body's (rotated) frame: its y -> -z in the builder
    np.testing.assert_allclose(_q_matrix(q[1, 3:]) @ builder.rigid_shape_xform[1][:3], [0.0, 0.0, -0.3], atol=1e-9)
    model = builder.finalize(device="cpu", dtype=sk.float64)
    np.testing.assert_allclose(model.body_mass.numpy(), [1000.0 * 4.0 / 3.0 * math.pi * 0.1 ** 3, 2.0], rtol=1e-6)


def test_sphere_body_comes_to_rest_on_a_static_cube(tmp_path):
    """A static Cube collider (top at y = 0.2) holds a dynamic sphere (r = 0.1) at 0.3 - m g / ke."""
    stage = _stage(tmp_path)
    UsdPhysics.Scene.Define(stage, "/physicsScene")
    _place(_geom(stage, "/World/table", "cube", size=0.2), (0.0, 0.1, 0.0))
    ball = _rigid(_geom(stage, "/World/ball", "sphere", radius=0.1))
    _place(ball, (0.0, 0.32, 0.0))                                                 # dropped from 2 cm
    builder = sk.ModelBuilder()                                                    # no ground plane
    builder.rigid_contact_ke, builder.rigid_contact_kd = 1.0e4, 400.0             # ~critically damped
    info = sk.io.load_usd(stage, builder)
    assert info.bodies == {"/World/ball": 0} and info.rigid_shapes == {"/World/table": 1, "/World/ball": 0}
    assert builder.rigid_shape_body == [0, -1] and info.gravity == (0.0, -9.81, 0.0)
    model = builder.finalize(device="cpu", dtype=sk.float64)
    solver = sk.RigidBodySolver()
    s0, s1 = model.state(), model.state()
    for _ in range(3000):
        solver.step(model, s0, s1, None, 5.0e-4)
        s0, s1 = s1, s0
    m = model.body_mass.numpy()[0]
    np.testing.assert_allclose(s0.body_q.numpy()[0, :3], [0.0, 0.2 + 0.1 - m * 9.81 / 1.0e4, 0.0], atol=1e-6)
    np.testing.assert_allclose(s0.body_qd.numpy()[0], 0.0, atol=1e-4)


def test_rigid_body_errors_name_the_prim(tmp_path):
    def load(stage):
        return sk.io.load_usd(stage, sk.ModelBuilder())

    stage = _stage(tmp_path)
    _rigid(_place(_geom(stage, "/World/egg", "sphere", radius=0.1), scale=(1.0, 2.0, 1.0)))
    with pytest.raises(ValueError, match=r"/World/egg: a collision Sphere needs a uniform scale.*\(1\.0, 2\.0, 1\.0\)"):
        load(stage)
    stage.RemovePrim("/World/egg")
    _rigid(_geom(stage, "/World/pill", "capsule", axis="Y"))
    _place(stage.GetPrimAtPath("/World/pill"), scale=(1.0, 1.0, 3.0))
    with pytest.raises(ValueError, match=r"/World/pill: a collision Capsule needs the same scale across its axis"):
        load(stage)
    stage.RemovePrim("/World/pill")
    parent = _place(UsdGeom.Xform.Define(stage, "/World/sheared").GetPrim(), scale=(1.0, 3.0, 1.0))
    _place(_geom(stage, "/World/sheared/box", "cube"), axis=(0.0, 0.0, 1.0), angle=0.5)
    with pytest.raises(ValueError, match="/World/sheared/box: its transform shears it"):
        load(stage)
    stage.RemovePrim(parent.GetPath())
    _rigid(_geom(stage, "/World/neg", "cube"), mass=-1.0)
    with pytest.raises(ValueError, match="/World/neg: physics:mass must be a finite number >= 0"):
        load(stage)
    stage.RemovePrim("/World/neg")
    _rigid(_geom(stage, "/World/flat", "capsule", height=0.0))
    with pytest.raises(ValueError, match=r"/World/flat: a collision Capsule needs its sizes"):
        load(stage)
    with pytest.raises(ValueError, match="body_density"):
        sk.io.load_usd(stage, sk.ModelBuilder(), body_density=-1.0)

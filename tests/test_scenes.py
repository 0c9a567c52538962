"""The example scenes: cloth on a sphere (USD export, resting without penetration), ball trajectory
optimization (reaches its target), soft-body walker (walks further after optimization), dam break
(SPH surge front against Martin & Moyce's experiment), rigid pile (bodies on a ramp, USD transforms),
seesaw (XPBD particles tipping a hinged plank),
and the `simkit optimize` command. Small sizes keep this file to well under a minute on two cores."""
import math
import os
import subprocess
import sys

import numpy as np
import pytest

from simkit.cli import load_scene

pytest.importorskip("pxr")
pytest.importorskip("trimesh")
from pxr import Usd, UsdGeom  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture(scope="module")
def cloth():
    return load_scene("cloth_on_sphere")


def test_cloth_scene_writes_usd(tmp_path, cloth):
    out = tmp_path / "cloth.usda"
    calls = []
    cloth.run(steps=3, usd=str(out), size=8, progress=lambda done, total: calls.append((done, total)))
    assert calls[-1] == (3, 3)
    stage = Usd.Stage.Open(str(out))
    assert stage.GetStartTimeCode() == 0 and stage.GetEndTimeCode() == 3     # the initial state + 3 frames
    assert UsdGeom.GetStageUpAxis(stage) == "Y"
    mesh = UsdGeom.Mesh(stage.GetPrimAtPath("/World/cloth"))
    assert mesh.GetPointsAttr().GetTimeSamples() == [0, 1, 2, 3]
    assert len(mesh.GetPointsAttr().Get(3)) == 9 * 9
    assert len(mesh.GetFaceVertexIndicesAttr().Get()) == 8 * 8 * 2 * 3
    sphere = UsdGeom.Mesh(stage.GetPrimAtPath("/World/sphere"))
    assert sphere.GetPointsAttr().GetNumTimeSamples() == 0 and len(sphere.GetPointsAttr().Get()) > 100


def test_cloth_comes_to_rest_on_the_sphere_without_penetrating(cloth):
    size, frames = 16, 180
    q = cloth.run(steps=frames, size=size)
    assert np.all(np.isfinite(q))
    gap = cloth.clearance(q)  # to the mesh's inscribed sphere: negative would be a penetration
    assert -1.0e-3 < gap < 2.0e-3, gap
    middle = q[(size + 1) * (size // 2) + size // 2]
    top = cloth.SPHERE_CENTER[1] + cloth.SPHERE_RADIUS
    assert abs(middle[0]) < 0.02 and abs(middle[2]) < 0.02 and top < middle[1] < top + 0.02  # draped on top
    assert q[:, 1].min() < cloth.SPHERE_CENTER[1]                 # the edges hang down the sides
    # at rest: ten more frames move no particle by more than 2 mm
    q2 = cloth.run(steps=frames + 10, size=size)
    assert np.abs(q2 - q).max() < 2.0e-3


def test_ball_reaches_the_target_within_1cm_in_100_iterations():
    ball = load_scene("ball_trajectory")
    r = ball.optimize(iters=100, tol=0.01)
    assert r.distance < 0.01 and r.iterations <= 100, r.summary()
    assert r.distances[0] > 1.0                  # it started far away
    assert r.bounces >= 1                        # and the throw that hits the target bounces
    np.testing.assert_allclose(ball.trajectory(r.velocity)[-1], r.target, atol=0.01)


def test_ball_checkpointed_rollout_gives_the_same_gradient_steps():
    ball = load_scene("ball_trajectory")
    plain = ball.optimize(iters=3, tol=0.0)
    ckpt = ball.optimize(iters=3, tol=0.0, checkpoint_every=100)
    np.testing.assert_allclose(ckpt.distances, plain.distances, rtol=1e-6)
    np.testing.assert_allclose(ckpt.velocity, plain.velocity, rtol=1e-6)


def test_walker_walks_further_after_optimization():
    # contact makes the rollout chaotic: single Adam steps may go downhill, and the last iterate hangs on
    # float rounding (14.2 cm after 10 iterations, 20.2 cm at the 8th, in one run; 4.5 cm before): within
    # 10 iterations the best gait must have gained 10 cm, and be the one returned
    walker = load_scene("soft_body_walker")
    r = walker.optimize(iters=10)
    assert r.displacement_after > r.displacement_before + 0.10, r.summary()
    assert r.displacement_after == max(r.displacements)
    again = walker.displacement(r.weights, r.bias)
    assert abs(again - r.displacement_after) < 0.01, (again, r.summary())


def _simkit(*args):
    return subprocess.run([sys.executable, "-m", "simkit.cli", *args], capture_output=True, text=True, cwd=ROOT)


def test_dam_break_surge_front_follows_martin_and_moyce(tmp_path):
    # a square water column (a = 0.2 m) collapses; Martin & Moyce (1952) measured its surge front at
    # z / a = 3.0 at T = t sqrt(2 g / a) = 2.5. At 0.25 s (T = 2.48), 2 cm particles, within 15%.
    dam = load_scene("dam_break")
    out = tmp_path / "dam.usda"
    q = dam.run(steps=15, usd=str(out), spacing=0.02)
    a, r = dam.COLUMN, 0.01
    assert (dam.front(q) + r) / a == pytest.approx(3.0, rel=0.15)
    assert np.all(q >= 0.0) and np.all(q <= np.array(dam.TANK))                    # all in the tank
    assert np.percentile(q[:, 1], 90) < 0.6 * a                                    # the column fell
    stage = Usd.Stage.Open(str(out))
    water = UsdGeom.Points(stage.GetPrimAtPath("/World/water"))
    assert water.GetPointsAttr().GetTimeSamples() == list(range(16))
    np.testing.assert_allclose(np.array(water.GetPointsAttr().Get(15)), q, atol=1e-6)
    assert len(UsdGeom.Mesh(stage.GetPrimAtPath("/World/tank")).GetFaceVertexIndicesAttr().Get()) == 30


@pytest.mark.parametrize("solver", ["penalty", "xpbd"])
def test_rigid_pile_lands_on_the_ramp_and_ground(tmp_path, solver):
    pile = load_scene("rigid_pile")
    out = tmp_path / "pile.usda"
    q = pile.run(steps=60, usd=str(out), rows=1, solver=solver)
    assert q.shape == (9, 7) and np.all(np.isfinite(q))
    # nothing sank into the ground or the ramp (its top face: y = 0.3 + 0.05 / cos(a) - x tan(a))
    a = pile.RAMP_ANGLE
    ramp_top = 0.3 + 0.05 / math.cos(a) - q[:, 0] * math.tan(a)
    over_ramp = (np.abs(q[:, 0]) < 0.9) & (np.abs(q[:, 2]) < 0.55)
    assert np.all(q[:, 1] > 0.03) and over_ramp.sum() >= 2
    assert np.all(q[over_ramp, 1] > ramp_top[over_ramp] + 0.03)
    assert np.all(q[:, 1] < 0.8)                                                  # everything fell
    stage = Usd.Stage.Open(str(out))
    body = UsdGeom.Xformable(stage.GetPrimAtPath("/World/bodies/body4"))
    assert len(body.GetOrderedXformOps()[0].GetAttr().GetTimeSamples()) == 61
    world = np.array(body.ComputeLocalToWorldTransform(60))
    np.testing.assert_allclose(world[3, :3], q[4, :3], atol=1e-5)
    assert stage.GetPrimAtPath("/World/bodies/static/shape0").IsA(UsdGeom.Mesh)


def test_billiards_shot_is_found_through_the_collision(tmp_path):
    # gradients through 1200 rigid-body steps, a ball-ball collision and rolling friction: Adam finds
    # the cue ball velocity that sends the object ball to the target (48.9 cm away at the start)
    billiards = load_scene("billiards")
    r = billiards.optimize(iters=25, tol=0.01)
    assert r.distance < 0.01 and r.distances[0] > 0.4, r.summary()
    np.testing.assert_allclose(r.velocity[[0, 2]], np.array(billiards.REFERENCE_VELOCITY)[[0, 2]], atol=0.1)
    np.testing.assert_allclose(billiards.final_position(r.velocity)[[0, 2]], r.target[[0, 2]], atol=0.011)


def test_arm_reach_brings_the_tip_to_the_target():
    # gradients through 600 steps of a driven three-link arm (joint springs, PD drives, gravity) with
    # respect to 3 x 3 piecewise-constant joint targets: the tip reaches the target (49.6 cm away)
    arm = load_scene("arm_reach")
    r = arm.optimize(iters=30, tol=0.01)
    assert r.distance < 0.01 and r.distances[0] > 0.45, r.summary()
    assert r.iterations < 30


def test_cli_optimize_writes_a_plot(tmp_path):
    pytest.importorskip("matplotlib")
    out, usd = tmp_path / "loss.png", tmp_path / "ball.usda"
    r = _simkit("optimize", "ball_trajectory", "--iters", "3", "--plot", str(out), "--usd", str(usd))
    assert r.returncode == 0, r.stderr
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "3/3" in r.stderr and "from the target" in r.stdout
    assert f"wrote {usd}" in r.stdout and usd.read_text().startswith("#usda")


def test_cli_optimize_errors(tmp_path):
    r = _simkit("optimize", "no_such_scene")
    assert r.returncode != 0 and "unknown scene 'no_such_scene'" in r.stderr
    r = _simkit("optimize", "ball_trajectory", "--plot", "/nonexistent_dir/loss.png")
    assert r.returncode != 0 and "cannot write '/nonexistent_dir/loss.png'" in r.stderr
    r = _simkit("optimize", "ball_trajectory", "--usd", "/nonexistent_dir/ball.usda")
    assert r.returncode != 0 and "cannot write '/nonexistent_dir/ball.usda'" in r.stderr
    r = _simkit("optimize", "bouncing_particles")
    assert r.returncode != 0 and "not an optimization scene" in r.stderr


@pytest.fixture
def graph_launches(monkeypatch):
    """How many CUDA graphs the scenes launched (sk.CapturedStep's frames, sk.optim.minimize's iterations;
    not the CPU graphs of their CPU runs)."""
    import simkit.optim as optim
    import simkit.runtime.captured_step as captured_step
    from simkit import CpuGraph

    count = [0]
    for module in (captured_step, optim):
        monkeypatch.setattr(module, "capture_launch", lambda graph, real=module.capture_launch: (
            count.__setitem__(0, count[0] + (not isinstance(graph, CpuGraph))), real(graph)))
    return count


def test_scenes_run_on_the_gpu(tmp_path, cuda_device, cloth, graph_launches):
    """The demo scene (its frames replayed as CUDA graphs) and the trajectory optimization (its
    iterations too) on a GPU (the real one, else the emulated one) follow their CPU runs."""
    out = tmp_path / "cloth_gpu.usda"
    q_gpu = cloth.run(steps=30, usd=str(out), size=8, device=cuda_device)
    assert graph_launches[0] == 29                        # (the first frame runs directly: it compiles)
    q_cpu = cloth.run(steps=30, size=8)
    np.testing.assert_allclose(q_gpu, q_cpu, atol=1.0e-4)
    assert len(UsdGeom.Mesh(Usd.Stage.Open(str(out)).GetPrimAtPath("/World/cloth")).GetPointsAttr().Get(30)) == 81
    ball = load_scene("ball_trajectory")
    gpu, cpu = (ball.optimize(iters=3, tol=0.0, device=d) for d in (cuda_device, "cpu"))
    assert graph_launches[0] == 29 + 2 * 2                 # iterations 2 and 3: forward + backward, zeroing
    np.testing.assert_allclose(gpu.distances, cpu.distances, rtol=1e-5)
    np.testing.assert_allclose(gpu.velocity, cpu.velocity, rtol=1e-5)


@pytest.mark.parametrize("name, kw", [("bouncing_particles", dict(steps=6, count=64)),
                                      ("rigid_pile", dict(steps=4, rows=2)), ("dam_break", dict(steps=3)),
                                      ("rigid_pile", dict(steps=4, rows=2, solver="xpbd"))])
def test_scene_frames_replay_as_cuda_graphs(cuda_device, graph_launches, name, kw):
    """Each frame after the first is one CUDA graph launch, and it computes what the frame's launches
    issued one by one compute."""
    scene = load_scene(name)
    q = scene.run(device=cuda_device, **kw)
    assert graph_launches[0] == kw["steps"] - 1
    q_direct = scene.run(device=cuda_device, graph=False, **kw)
    assert graph_launches[0] == kw["steps"] - 1
    np.testing.assert_allclose(q, q_direct, atol=1e-5)
    assert not np.allclose(q, scene.run(device=cuda_device, graph=False, **dict(kw, steps=1)), atol=1e-3)


def test_seesaw_tips_under_the_heap_until_its_end_meets_the_ground(tmp_path):
    # XPBD particles and a hinged plank, coupled both ways: the heap lands on the +x end, which goes
    # down until the plank's corner touches the ground, asin((0.25 - 0.02 cos a) / 0.5) ~ 27.7 degrees
    seesaw = load_scene("seesaw")
    out = tmp_path / "seesaw.usda"
    q, plank = seesaw.run(steps=60, usd=str(out), heap=4)
    angle = math.degrees(seesaw.plank_angle(plank[None]))
    assert angle == pytest.approx(-27.7, abs=1.0)
    np.testing.assert_allclose(plank[:3], seesaw.PIVOT, atol=2e-3)        # held by its hinge
    assert q[:, 1].min() > seesaw.RADIUS - 2e-3 and len(q) == 64           # nothing through the ground
    stage = Usd.Stage.Open(str(out))
    assert len(UsdGeom.Points(stage.GetPrimAtPath("/World/heap")).GetPointsAttr().Get(60)) == 64


@pytest.mark.parametrize("name", ["billiards", "arm_reach"])
def test_rigid_optimizations_replay_iterations_as_cuda_graphs(cuda_device, graph_launches, name):
    scene = load_scene(name)
    gpu = scene.optimize(iters=3, tol=0.0, device=cuda_device)
    assert graph_launches[0] == 2 * 2
    cpu = scene.optimize(iters=3, tol=0.0)
    np.testing.assert_allclose(gpu.distances, cpu.distances, rtol=1e-4)
    assert gpu.distances[-1] < gpu.distances[0]


def test_cartpole_swings_the_pole_up():
    # Adam through 750 steps (1.5 s) of a cart on a limited prismatic joint, driven to 8 piecewise-linear
    # targets, and an undriven pole on a revolute joint: 15 iterations bring the hanging pole (loss 2.02)
    # near upright (measured: loss 0.11, tip 47.9 cm above the pivot of a 50 cm pole, 164 deg from hanging)
    cp = load_scene("cartpole")
    r = cp.optimize(iters=15, tol=0.0)
    assert r.losses[0] > 1.9 and r.heights[0] < -0.95 * cp.POLE, r.summary()      # it started hanging
    assert r.loss < 0.1 * r.losses[0], r.summary()
    # checked on a fresh rollout of the returned targets: the tip (from the final body frames) is within
    # 37 degrees of upright, and the cart stayed on its track
    q = r.frames[-1]
    cart, pole = q[0], q[1]
    x, y, z, w = pole[3:]
    down = -np.array([2.0 * (x * y - w * z), 1.0 - 2.0 * (x * x + z * z), 2.0 * (y * z + w * x)])  # R (0, -1, 0)
    tip = pole[:3] + 0.5 * cp.POLE * down
    assert tip[1] - cart[1] > 0.8 * cp.POLE, r.summary()
    assert tip[1] - cart[1] == pytest.approx(r.tip_height, abs=1e-6)
    assert np.abs(r.frames[:, 0, 0]).max() <= cp.TRACK + 0.01 and np.all(np.isfinite(r.frames))
    # the track's ends are real: targets 0.5 m past the end press the cart onto the limit, which holds it
    # within the penalty's give (3.5 cm overshoot, at rest target_ke / (target_ke + limit_ke) * 0.5 m)
    _, _, pressed = cp.evaluate(np.full(cp.SEGMENTS, cp.TRACK + 0.5))
    xs = pressed[:, 0, 0]
    assert cp.TRACK - 0.01 < xs.max() < cp.TRACK + 0.05 and xs[-1] < cp.TRACK + 0.015, xs.max()


def test_cartpole_gradient_matches_finite_differences():
    # float64, 150 steps (the first two knots act): the Tape's gradient of the loss with respect to
    # knots 0 and 1 against central differences; later knots have not acted yet (zero gradient)
    import simkit as sk

    cp = load_scene("cartpole")
    knots, steps, eps = cp.initial_knots(), 150, 1.0e-6
    _, grad, _ = cp.evaluate(knots, dtype=sk.float64, steps=steps, gradient=True)
    for j in (0, 1):
        plus, minus = knots.copy(), knots.copy()
        plus[j] += eps
        minus[j] -= eps
        fd = (cp.evaluate(plus, dtype=sk.float64, steps=steps)[0]
              - cp.evaluate(minus, dtype=sk.float64, steps=steps)[0]) / (2.0 * eps)
        assert grad[j] == pytest.approx(fd, rel=1e-5) and abs(fd) > 1e-2
    assert np.all(grad[2:] == 0.0)

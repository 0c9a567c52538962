"""Library code puts what it makes on the device of its inputs, never on the default device.

Where a GPU is present the default device is ``cuda:0``, so an array made without a device beside
a CPU model breaks the step with a device mismatch, which a machine without a GPU never sees (the
first H200 run found nine such places in the tests and benchmarks). Here every scene and solver
runs on the CPU while the default device is a GPU: the real one, else the emulated one."""
import numpy as np
import pytest

import simkit as sk
from simkit.cli import load_scene

SIMULATIONS = [  # (scene, run's keyword arguments): a few frames, small sizes
    ("cloth_on_sphere", dict(steps=2, size=6)),
    ("cloth_on_sphere", dict(steps=2, size=6, solver="euler")),
    ("bouncing_particles", dict(steps=2, count=16)),
    ("dam_break", dict(steps=1, spacing=0.02, surface=True)),
    ("rigid_pile", dict(steps=2, rows=2)),
    ("rigid_pile", dict(steps=2, rows=2, solver="xpbd")),
]
OPTIMIZATIONS = ["ball_trajectory", "billiards", "arm_reach", "cartpole", "soft_body_walker"]


@pytest.fixture
def gpu_default(cuda_device):
    with sk.ScopedDevice(cuda_device):
        assert not sk.get_device().is_cpu
        yield


@pytest.mark.parametrize("scene,kwargs", SIMULATIONS, ids=[f"{s}-{k.get('solver', '')}" for s, k in SIMULATIONS])
def test_scenes_run_on_the_cpu_while_a_gpu_is_the_default(scene, kwargs, cuda_device):
    mod = load_scene(scene)
    expected = mod.run(device="cpu", **kwargs)
    with sk.ScopedDevice(cuda_device):
        out = mod.run(device="cpu", **kwargs)
    assert np.all(np.isfinite(out))
    np.testing.assert_array_equal(out, expected)


@pytest.mark.parametrize("scene", OPTIMIZATIONS)
def test_optimizations_run_on_the_cpu_while_a_gpu_is_the_default(scene, gpu_default):
    summary = load_scene(scene).optimize(iters=1, device="cpu").summary()
    assert "nan" not in summary.lower(), summary


def test_collision_structures_follow_their_inputs(gpu_default):
    rng = np.random.default_rng(0)
    points = sk.array(rng.uniform(0, 1, (64, 3)), dtype=sk.vec3, device="cpu")
    grid = sk.HashGrid(8, 8, 8, device="cpu")
    grid.build(points, 0.2)
    lo = sk.array(rng.uniform(0, 1, (16, 3)), dtype=sk.vec3, device="cpu")
    bvh = sk.Bvh(lo, sk.array(lo.numpy() + 0.1, dtype=sk.vec3, device="cpu"))
    assert bvh.device.is_cpu
    tri = sk.array(np.array([0, 1, 2], np.int32), dtype=sk.int32, device="cpu")
    verts = sk.array(np.eye(3, dtype=np.float32), dtype=sk.vec3, device="cpu")
    mesh = sk.Mesh(verts, tri)
    assert mesh.device.is_cpu
    mc = sk.MarchingCubes(8, 8, 8, device="cpu")
    x = np.linspace(-1, 1, 8)
    field = np.sqrt(x[:, None, None] ** 2 + x[None, :, None] ** 2 + x[None, None, :] ** 2) - 0.6
    v, _ = mc.surface(sk.array(field.astype(np.float32), dtype=float, device="cpu"), 0.0)
    assert v.device.is_cpu and len(v) > 0

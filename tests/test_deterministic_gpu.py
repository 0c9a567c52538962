"""Deterministic mode on a GPU in parallel (utils/deterministic_gpu.py): a kernel whose float atomic_add/atomic_sub
depend on the order of threads runs on the whole GPU, records its contributions, and applies them in launch order:
the result is the sequential loop's bit for bit (as on the CPU), and kernels it cannot record keep one GPU thread."""
import warnings

import numpy as np
import pytest

import simkit as sk
from simkit.kernels.deterministic import DeterminismWarning, record_plan

RUN_TO_RUN = sk.DeterministicMode.RUN_TO_RUN


@sk.kernel
def springs(x: sk.array(dtype=sk.vec3), pairs: sk.array(dtype=int), f: sk.array(dtype=sk.vec3),
            energy: sk.array(dtype=float)):
    s = sk.tid()
    i = pairs[2 * s]
    j = pairs[2 * s + 1]
    d = x[i] - x[j]
    sk.atomic_sub(f, i, d)
    f[j] += d                              # (atomic_add)
    if sk.length(d) > 1.0:                 # a site some indices skip
        sk.atomic_add(energy, s % 3, sk.dot(d, d))


@sk.kernel
def tiles(v: sk.array2d(dtype=sk.mat22d), idx: sk.array(dtype=int), out: sk.array2d(dtype=sk.mat22d)):
    i, j = sk.tid()
    sk.atomic_add(out, idx[i] % 2, -1 - j, v[i, j])  # 2D target, negative index: the last columns


@sk.kernel
def reads_its_target(d: sk.array(dtype=float), idx: sk.array(dtype=int), out: sk.array(dtype=float)):
    i = sk.tid()
    sk.atomic_add(out, idx[i], d[i] + out[0] * 0.0)


@sk.kernel
def in_a_loop(d: sk.array(dtype=float), idx: sk.array(dtype=int), out: sk.array(dtype=float)):
    i = sk.tid()
    for k in range(idx[i] % 3):  # (a loop of a constant count is unrolled: its atomics are separate sites)
        sk.atomic_add(out, (idx[i] + k) % 7, d[i] * float(k + 1))


@sk.kernel
def in_a_loop_and_writes(d: sk.array(dtype=float), idx: sk.array(dtype=int), out: sk.array(dtype=float),
                         seen: sk.array(dtype=int)):
    i = sk.tid()
    seen[i] = 1  # (a counting launch would write it too: this kernel cannot be launched twice)
    for k in range(idx[i] % 3):
        sk.atomic_add(out, (idx[i] + k) % 7, d[i])


@sk.kernel
def scatter(d: sk.array(dtype=float), idx: sk.array(dtype=int), out: sk.array(dtype=float)):
    i = sk.tid()
    sk.atomic_add(out, idx[i], d[i])


@pytest.fixture
def deterministic():
    old = sk.config.deterministic
    sk.config.deterministic = RUN_TO_RUN
    yield
    sk.config.deterministic = old


def _values(rng, shape, dtype=np.float32):
    return (rng.standard_normal(shape) * 10.0 ** rng.integers(-3, 4, shape)).astype(dtype)  # rounding-sensitive


def _scatter_inputs(device, n: int, seed: int):
    """Rounding-sensitive float32 values and bins 0..6, on the host and on ``device``."""
    rng = np.random.default_rng(seed)
    d = _values(rng, n)
    idx = rng.integers(0, 7, n).astype(np.int32)
    return d, idx, sk.array(d, device=device), sk.array(idx, device=device)


def _springs_reference(x, pairs, f, energy):
    """The sequential loop over the launch indices, statement by statement, in float32."""
    f, energy = f.copy(), energy.copy()
    for s in range(len(pairs) // 2):
        i, j = pairs[2 * s], pairs[2 * s + 1]
        d = x[i] - x[j]
        f[i] = f[i] - d
        f[j] = f[j] + d
        if np.sqrt(np.float32(np.dot(d, d))) > 1.0:
            energy[s % 3] = energy[s % 3] + np.float32(d[0] * d[0] + d[1] * d[1] + d[2] * d[2])
    return f, energy


def _launches(world):
    return list(world.fake.launches) if world is not None else []


def test_a_scatter_runs_in_parallel_and_gives_the_sequential_bits(cuda_device, cuda_emulated_world, deterministic):
    rng = np.random.default_rng(3)
    x = _values(rng, (40, 3))
    pairs = rng.integers(0, 40, 2 * 3000).astype(np.int32)
    f0 = _values(rng, (40, 3))
    e0 = np.zeros(3, np.float32)
    ref_f, ref_e = _springs_reference(x, pairs, f0, e0)
    results = {}
    for device in ("cpu", cuda_device):
        f, energy = sk.array(f0, dtype=sk.vec3, device=device), sk.array(e0, device=device)
        with warnings.catch_warnings():
            warnings.simplefilter("error", DeterminismWarning)  # (no launch on one GPU thread)
            if cuda_emulated_world is not None:
                cuda_emulated_world.fake.launches.clear()  # (a deque of the latest 4096)
            sk.launch(springs, 3000, inputs=[sk.array(x, dtype=sk.vec3, device=device),
                                             sk.array(pairs, device=device), f, energy], device=device)
        results[device] = f.numpy(), energy.numpy()
        grids = [(name, grid) for name, grid, _block, _s in _launches(cuda_emulated_world)]
        if device != "cpu" and grids:  # (on the emulated GPU: a real one leaves the emulator's list empty)
            assert any(name.startswith("springs") and grid > 1 for name, grid in grids), grids
    for f, energy in results.values():
        np.testing.assert_array_equal(f.view(np.uint32), ref_f.view(np.uint32))
        np.testing.assert_array_equal(energy.view(np.uint32), ref_e.view(np.uint32))
    assert ref_e[0] != 0.0  # (the conditional site ran)


def test_matrices_in_a_2d_array_at_negative_indices(cuda_device, deterministic):
    rng = np.random.default_rng(5)
    v = _values(rng, (500, 3, 2, 2), np.float64)
    idx = rng.integers(0, 9, 500).astype(np.int32)
    out = sk.zeros((2, 4), dtype=sk.mat22d, device=cuda_device)
    sk.launch(tiles, (500, 3), inputs=[sk.array(v, dtype=sk.mat22d, device=cuda_device),
                                       sk.array(idx, device=cuda_device), out], device=cuda_device)
    ref = np.zeros((2, 4, 2, 2))
    for i in range(500):
        for j in range(3):
            ref[idx[i] % 2, 4 - 1 - j] += v[i, j]
    np.testing.assert_array_equal(out.numpy(), ref)


@pytest.mark.parametrize("case", ["reads_its_target", "in_a_loop_and_writes", "passed_twice", "overlapping_view",
                                  "strided"])
def test_what_it_cannot_record_runs_on_one_gpu_thread(cuda_device, deterministic, case):
    d, idx, dd, di = _scatter_inputs(cuda_device, 2000, 7)
    kernel = {"reads_its_target": reads_its_target, "in_a_loop_and_writes": in_a_loop_and_writes}.get(case, scatter)
    if case in ("passed_twice", "overlapping_view"):  # scatter(d=a, idx, out=a): each index reads what the
        a = sk.array(d, device=cuda_device)                 # earlier ones added
        inputs, result = [a, di, a if case == "passed_twice" else a[:7]], a
    else:
        big = sk.zeros(14, device=cuda_device)
        result = big[::2] if case == "strided" else sk.zeros(7, device=cuda_device)
        inputs = [dd, di, result] + ([sk.zeros(2000, dtype=int, device=cuda_device)] if kernel is in_a_loop_and_writes
                                     else [])
    kernel.__dict__.pop("_ordered_warned", None)
    why = {"reads_its_target": "line 3[0-9]: the kernel also reads or writes 'out'",
           "in_a_loop_and_writes": "in a loop .* writes other arrays", "passed_twice": "overlaps 'out'",
           "overlapping_view": "overlaps 'out'", "strided": "'out' is not a contiguous array"}[case]
    with pytest.warns(DeterminismWarning, match=f"kernel '{kernel.key}' runs on one GPU thread .*{why}"):
        sk.launch(kernel, 2000, inputs=inputs, device=cuda_device)
    if case in ("passed_twice", "overlapping_view"):
        ref = d.copy()
        for i in range(2000):
            ref[idx[i]] += ref[i]
    elif case == "in_a_loop_and_writes":
        ref = np.zeros(7, np.float32)
        for i in range(2000):
            for k in range(idx[i] % 3):
                ref[(idx[i] + k) % 7] += d[i]
    else:
        ref = np.zeros(7, np.float32)
        np.add.at(ref, idx, d)
    np.testing.assert_array_equal(result.numpy(), ref)


@sk.kernel
def uses_the_old_value(d: sk.array(dtype=float), idx: sk.array(dtype=int), out: sk.array(dtype=float),
                       before: sk.array(dtype=float)):
    i = sk.tid()
    before[i] = sk.atomic_add(out, idx[i], d[i])


def test_an_atomic_whose_old_value_is_used_is_not_recorded(cuda_device, deterministic):
    d, idx, dd, di = _scatter_inputs(cuda_device, 500, 19)
    out, before = sk.zeros(7, device=cuda_device), sk.zeros(500, device=cuda_device)
    with pytest.warns(DeterminismWarning, match="the old value atomic_add returns is used"):
        sk.launch(uses_the_old_value, 500, inputs=[dd, di, out, before], device=cuda_device)
    ref, ref_before = np.zeros(7, np.float32), np.zeros(500, np.float32)
    for i in range(500):
        ref_before[i] = ref[idx[i]]
        ref[idx[i]] += d[i]
    np.testing.assert_array_equal(before.numpy(), ref_before)
    np.testing.assert_array_equal(out.numpy(), ref)


def _loop_reference(d, idx):
    ref = np.zeros(7, np.float32)
    for i in range(len(d)):
        for k in range(idx[i] % 3):
            ref[(idx[i] + k) % 7] += d[i] * np.float32(k + 1)
    return ref


def test_atomics_in_a_loop_are_counted_then_recorded(cuda_device, deterministic):
    d, idx, dd, di = _scatter_inputs(cuda_device, 3000, 17)
    out = sk.zeros(7, device=cuda_device)
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeterminismWarning)  # (two launches on the whole GPU)
        sk.launch(in_a_loop, 3000, inputs=[dd, di, out], device=cuda_device)
    np.testing.assert_array_equal(out.numpy(), _loop_reference(d, idx))
    out.zero_()  # inside a graph capture the slot count cannot be read back: one GPU thread, the same bits
    in_a_loop.__dict__.pop("_ordered_warned", None)
    with pytest.warns(DeterminismWarning, match="'in_a_loop' runs on one GPU thread"):
        with sk.ScopedCapture(device=cuda_device) as capture:
            sk.launch(in_a_loop, 3000, inputs=[dd, di, out], device=cuda_device)
    sk.capture_launch(capture.graph)
    np.testing.assert_array_equal(out.numpy(), _loop_reference(d, idx))


def test_the_plan_names_sites_slots_and_targets():
    spec = springs.specs[None]
    spec.build_ir({"mode": "release", "max_unroll": 16, "shortcuts": True})
    plan = record_plan(spec.ir)
    assert plan.per_thread == 3 + 3 + 1 and plan.targets == [2, 3]  # f (two vec3 sites), energy
    assert sorted(plan.sites.values()) == [(0, 0), (3, 0), (6, 1)]
    assert not plan.counted
    for kernel in (reads_its_target, in_a_loop_and_writes, in_a_loop):
        kernel.specs[None].build_ir({"mode": "release", "max_unroll": 16, "shortcuts": True})
    assert record_plan(reads_its_target.specs[None].ir) is None
    assert record_plan(in_a_loop_and_writes.specs[None].ir) is None
    assert record_plan(in_a_loop.specs[None].ir).counted


def test_debug_mode_reports_an_index_out_of_bounds(cuda_device, deterministic):
    old = sk.config.mode
    sk.config.mode = "debug"
    try:
        idx = np.zeros(100, np.int32)
        idx[37] = 7  # out of the 7 elements
        out = sk.zeros(7, device=cuda_device)
        with pytest.raises(Exception, match="out of bounds|index"):
            sk.launch(scatter, 100, inputs=[sk.ones(100, device=cuda_device), sk.array(idx, device=cuda_device),
                                            out], device=cuda_device)
    finally:
        sk.config.mode = old


def test_a_captured_graph_replays_the_recorded_launch(cuda_device, deterministic):
    d, idx, dd, di = _scatter_inputs(cuda_device, 5000, 11)
    out = sk.zeros(7, device=cuda_device)
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeterminismWarning)  # (recorded, not on one GPU thread)
        with sk.ScopedCapture(device=cuda_device) as capture:
            sk.launch(scatter, 5000, inputs=[dd, di, out], device=cuda_device)
    ref = np.zeros(7, np.float32)
    for _ in range(3):
        sk.capture_launch(capture.graph)
        np.add.at(ref, idx, d)
        np.testing.assert_array_equal(out.numpy(), ref)


def test_gradients_through_a_recorded_launch(cuda_device, deterministic):
    rng = np.random.default_rng(13)
    d = _values(rng, 300)
    idx = rng.integers(0, 7, 300).astype(np.int32)
    dd = sk.array(d, device=cuda_device, requires_grad=True)
    out = sk.zeros(7, device=cuda_device, requires_grad=True)
    w = rng.standard_normal(7).astype(np.float32)
    tape = sk.Tape()
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeterminismWarning)  # (the backward pass is recorded too: deterministic_grad.py)
        with tape:
            sk.launch(scatter, 300, inputs=[dd, sk.array(idx, device=cuda_device), out], device=cuda_device)
        tape.backward(grads={out: sk.array(w, device=cuda_device)})
    np.testing.assert_array_equal(dd.grad.numpy(), w[idx])  # d out[idx[i]] / d d[i] = 1


@pytest.mark.parametrize("solver", ["xpbd", "euler"])
def test_the_cloth_scene_steps_on_the_whole_gpu_to_the_one_thread_bits(cuda_device, deterministic, solver):
    """Every forward kernel of the README's scene (springs, triangles, contacts: float sums into particles) is
    recorded, and the frames are bit for bit those of the launches on one GPU thread."""
    import importlib

    from scenes import cloth_on_sphere

    runtime_launch = importlib.import_module("simkit.runtime.launch")
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeterminismWarning)
        recorded = cloth_on_sphere.run(steps=3, device=cuda_device, size=8, solver=solver, graph=False)
    recorder, runtime_launch.recorded_launch = runtime_launch.recorded_launch, None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeterminismWarning)
            serial = cloth_on_sphere.run(steps=3, device=cuda_device, size=8, solver=solver, graph=False)
    finally:
        runtime_launch.recorded_launch = recorder
    np.testing.assert_array_equal(recorded.view(np.uint32), serial.view(np.uint32))


def test_a_hash_grid_build_keeps_the_whole_gpu(cuda_device, deterministic):
    """The GPU build's counting sort lets points arrive in any order (its atomic counter is exempt) and then
    sorts each cell by index: the same ids as the stable sort, in deterministic mode without one GPU thread."""
    rng = np.random.default_rng(5)
    pts = (rng.random((3000, 3)) * 3.0).astype(np.float32)
    grid = sk.HashGrid(6, 6, 6, device=cuda_device, _counting_sort=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeterminismWarning)
        grid.build(sk.array(pts, dtype=sk.vec3, device=cuda_device), 0.5)
    c = np.floor(pts.astype(np.float64) / 0.5).astype(np.int64) % 6
    cell = (c[:, 2] * 6 + c[:, 1]) * 6 + c[:, 0]
    expected = np.argsort(cell, kind="stable")
    got = _sorted_ids(grid, cuda_device, 3000)
    np.testing.assert_array_equal(got, expected)


@sk.kernel
def _ids_of(grid: sk.uint64, out: sk.array(dtype=int)):
    i = sk.tid()
    out[i] = sk.hash_grid_point_id(grid, i)


def _sorted_ids(grid, device, n):
    out = sk.zeros(n, dtype=int, device=device)
    sk.launch(_ids_of, n, inputs=[grid.id, out], device=device)
    return out.numpy()


def test_a_recorded_command_is_recorded_too(cuda_device, deterministic):
    """sk.launch(..., record_cmd=True).launch() in deterministic mode: recorded, also after set_param."""
    d, idx, dd, di = _scatter_inputs(cuda_device, 4000, 23)
    out = sk.zeros(7, device=cuda_device)
    cmd = sk.launch(scatter, 4000, inputs=[dd, di, out], device=cuda_device, record_cmd=True)
    ref = np.zeros(7, np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeterminismWarning)
        cmd.launch()
        np.add.at(ref, idx, d)
        np.testing.assert_array_equal(out.numpy(), ref)
        other = sk.zeros(7, device=cuda_device)
        cmd.set_param_by_name("out", other)
        cmd.launch()
    np.testing.assert_array_equal(other.numpy(), ref)


@pytest.mark.parametrize("kernel", ["scatter", "in_a_loop"])
def test_a_captured_step_keeps_its_graph_unless_a_capture_would_serialise_a_launch(cuda_device, deterministic, kernel):
    """CapturedStep in deterministic mode: a frame whose atomics are recorded inside a capture too (fixed slots)
    is replayed as a graph; one whose looped atomics are recorded only outside (counted, the count read back) runs
    directly from the second frame on, on the whole GPU, with no DeterminismWarning."""
    d, idx, dd, di = _scatter_inputs(cuda_device, 3000, 29)
    out = sk.zeros(7, device=cuda_device)
    k = {"scatter": scatter, "in_a_loop": in_a_loop}[kernel]
    step = sk.CapturedStep(lambda: sk.launch(k, 3000, inputs=[dd, di, out], device=cuda_device), cuda_device)
    ref = np.zeros(7, np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeterminismWarning)
        for _ in range(3):
            step()
            if kernel == "scatter":
                np.add.at(ref, idx, d)
    assert (step.graph is not None) == (kernel == "scatter")
    if kernel == "scatter":
        np.testing.assert_array_equal(out.numpy(), ref)
    else:
        seq = np.zeros(7, np.float32)
        for _ in range(3):
            for i in range(3000):
                for j in range(idx[i] % 3):
                    seq[(idx[i] + j) % 7] += d[i] * np.float32(j + 1)
        np.testing.assert_array_equal(out.numpy(), seq)


@sk.kernel
def add_to_mesh_points(mesh: sk.uint64, d: sk.array(dtype=sk.vec3), idx: sk.array(dtype=int),
                       points: sk.array(dtype=sk.vec3), seen: sk.array(dtype=sk.vec3)):
    i = sk.tid()
    seen[i] = sk.mesh_get(mesh).points[idx[i]]  # reads what the atomics add to, through the mesh
    sk.atomic_add(points, idx[i], d[i])


def test_a_target_read_through_a_mesh_is_not_recorded(cuda_device, deterministic):
    """The points of a Mesh passed by handle are an argument's memory too: adding to them while reading them through
    mesh_get keeps the launch on one GPU thread, where each index reads the sums of the indices before it."""
    rng = np.random.default_rng(31)
    pts = rng.standard_normal((3, 3)).astype(np.float32)
    points = sk.array(pts, dtype=sk.vec3, device=cuda_device)
    mesh = sk.Mesh(points=points, indices=sk.array(np.array([0, 1, 2], np.int32), device=cuda_device))
    d = _values(rng, (200, 3))
    idx = rng.integers(0, 3, 200).astype(np.int32)
    seen = sk.zeros(200, dtype=sk.vec3, device=cuda_device)
    with pytest.warns(DeterminismWarning, match="overlaps 'points'"):
        sk.launch(add_to_mesh_points, 200, inputs=[mesh.id, sk.array(d, dtype=sk.vec3, device=cuda_device),
                                                   sk.array(idx, device=cuda_device), points, seen],
                  device=cuda_device)
    ref, ref_seen = pts.copy(), np.zeros((200, 3), np.float32)
    for i in range(200):
        ref_seen[i] = ref[idx[i]]
        ref[idx[i]] += d[i]
    np.testing.assert_array_equal(seen.numpy(), ref_seen)
    np.testing.assert_array_equal(points.numpy(), ref)

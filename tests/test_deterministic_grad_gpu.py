"""Deterministic backward launches on a GPU in parallel (utils/deterministic_grad.py): the gradient accumulations
threads share are recorded, sorted and added in launch-index order, so the gradients are the sequential loop's bit
for bit (numpy's loop, the CPU's deterministic launch, the one-GPU-thread launch), and what cannot be recorded
keeps one GPU thread, with the reason in its warning."""
import importlib
import warnings

import numpy as np
import pytest

import simkit as sk
from simkit.kernels.deterministic import DeterminismWarning, grad_record_refusal
from test_deterministic_gpu import _values, deterministic  # noqa: F401  (a fixture)

_launch = importlib.import_module("simkit.runtime.launch")


@sk.kernel
def gather(x: sk.array(dtype=float), idx: sk.array(dtype=int), w: sk.array(dtype=sk.vec3), y: sk.array(dtype=float)):
    i = sk.tid()
    a = x[idx[i]]
    b = w[idx[i] % 5]
    y[i] = a * b[0] + b[1]


@sk.kernel
def neighbours(x: sk.array(dtype=float), start: sk.array(dtype=int), nbrs: sk.array(dtype=int),
               y: sk.array(dtype=float)):
    i = sk.tid()
    s = float(0.0)
    for k in range(start[i], start[i + 1]):  # (a dynamic loop: its reverse pass runs from the adjoint's stack)
        s = s * 0.5 + x[nbrs[k]] * float(k - start[i] + 1)
    y[i] = s


@sk.kernel
def scale_in_place(x: sk.array(dtype=float), s: sk.array(dtype=float), idx: sk.array(dtype=int)):
    i = sk.tid()
    x[i] = x[i] * s[idx[i]]  # x: each thread its own element (a plain add); s: shared (recorded)


@sk.func_native("return x[i] * 2.0f;", adj_snippet="adj_x[i] += 2.0f * adj_ret;")
def twice(x: sk.array(dtype=float), i: int) -> float: ...


@sk.kernel
def calls_native(x: sk.array(dtype=float), idx: sk.array(dtype=int), y: sk.array(dtype=float)):
    i = sk.tid()
    y[i] = twice(x, idx[i])


def _backward(kernel, inputs, outputs, out_grads, device, recorder=True, dim=None):
    """Launch ``kernel`` (over ``dim``, else one index per element of the first output gradient) on a tape, seed its
    outputs' gradients and run the backward pass; returns the DeterminismWarnings it raised (``recorder=False``: as
    before this module, one GPU thread)."""
    saved = _launch.recorded_backward
    _launch.recorded_backward = saved if recorder else None
    kernel.__dict__.pop("_ordered_warned", None)
    try:
        tape = sk.Tape()
        with tape:
            sk.launch(kernel, dim or len(out_grads[0]), inputs=inputs, outputs=outputs, device=device)
        for a, g in zip(outputs, out_grads):
            a.grad = sk.array(g, dtype=a.dtype, device=device)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", DeterminismWarning)
            tape.backward()
        return [str(w.message) for w in caught if issubclass(w.category, DeterminismWarning)]
    finally:
        _launch.recorded_backward = saved


def _gather_run(device, x0, idx0, w0, g0, recorder=True):
    x = sk.array(x0, device=device, requires_grad=True)
    w = sk.array(w0, dtype=sk.vec3, device=device, requires_grad=True)
    y = sk.zeros(len(g0), device=device, requires_grad=True)
    warned = _backward(gather, [x, sk.array(idx0, device=device), w], [y], [g0], device, recorder)
    return x.grad.numpy(), w.grad.numpy(), warned


@pytest.mark.parametrize("mode", ["release", "debug"])
def test_a_gather_gives_the_sequential_gradients_on_the_whole_gpu(cuda_device, cuda_emulated_world, deterministic,
                                                                   mode, monkeypatch):
    monkeypatch.setattr(sk.config, "mode", mode)
    rng = np.random.default_rng(1)
    n = 3000
    x0, w0 = _values(rng, 7), _values(rng, (5, 3))
    idx0 = rng.integers(0, 7, n).astype(np.int32)
    g0 = _values(rng, n)
    ref_x, ref_w = np.zeros(7, np.float32), np.zeros((5, 3), np.float32)
    for i in range(n):  # the sequential loop, in float32: y = a * b[0] + b[1]
        a, b = x0[idx0[i]], w0[idx0[i] % 5]
        ref_x[idx0[i]] += g0[i] * b[0]
        ref_w[idx0[i] % 5, 0] += g0[i] * a
        ref_w[idx0[i] % 5, 1] += g0[i]
    if cuda_emulated_world is not None:
        cuda_emulated_world.fake.launches.clear()
    gx, gw, warned = _gather_run(cuda_device, x0, idx0, w0, g0)
    assert warned == []
    np.testing.assert_array_equal(gx.view(np.uint32), ref_x.view(np.uint32))
    np.testing.assert_array_equal(gw.view(np.uint32), ref_w.view(np.uint32))
    cx, cw, _ = _gather_run("cpu", x0, idx0, w0, g0)
    np.testing.assert_array_equal(cx.view(np.uint32), ref_x.view(np.uint32))
    if cuda_emulated_world is not None:  # (the recording variant ran on many threads: twice, counting then recording)
        bwd = [grid * block for name, grid, block, _s in cuda_emulated_world.fake.launches if name.startswith("gather")]
        assert len(bwd) >= 2 and min(bwd) > 1, bwd


def test_accumulations_in_a_dynamic_loop_keep_their_order(cuda_device, deterministic):
    rng = np.random.default_rng(2)
    n = 800
    counts = rng.integers(0, 6, n)
    start = np.concatenate([[0], np.cumsum(counts)]).astype(np.int32)
    nbrs = rng.integers(0, 9, int(start[-1])).astype(np.int32)
    x0, g0 = _values(rng, 9), _values(rng, n)
    grads = {}
    for device, recorder in (("cpu", True), (cuda_device, False), (cuda_device, True)):
        x = sk.array(x0, device=device, requires_grad=True)
        y = sk.zeros(n, device=device, requires_grad=True)
        warned = _backward(neighbours, [x, sk.array(start, device=device), sk.array(nbrs, device=device)], [y], [g0],
                           device, recorder)
        assert (warned != []) == (device != "cpu" and not recorder), warned
        grads[device, recorder] = x.grad.numpy()
    ref = grads["cpu", True]
    assert np.any(ref != 0.0)
    for g in grads.values():
        np.testing.assert_array_equal(g.view(np.uint32), ref.view(np.uint32))


def test_an_in_place_update_takes_its_own_gradient_and_records_the_shared_one(cuda_device, deterministic):
    rng = np.random.default_rng(4)
    n = 1500
    x0, s0, g0 = _values(rng, n), _values(rng, 11), _values(rng, n)
    idx0 = rng.integers(0, 11, n).astype(np.int32)
    ref_x, ref_s = np.zeros(n, np.float32), np.zeros(11, np.float32)
    for i in range(n):  # x[i] = x[i] * s[idx[i]]: x's gradient is taken, then its own read adds to it
        ref_x[i] = g0[i] * s0[idx0[i]]
        ref_s[idx0[i]] += g0[i] * x0[i]
    x = sk.array(x0, device=cuda_device, requires_grad=True)
    s = sk.array(s0, device=cuda_device, requires_grad=True)
    tape = sk.Tape()
    with tape:
        sk.launch(scale_in_place, n, inputs=[x, s, sk.array(idx0, device=cuda_device)], device=cuda_device)
    x.grad = sk.array(g0, device=cuda_device)
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeterminismWarning)
        tape.backward()
    np.testing.assert_array_equal(x.grad.numpy().view(np.uint32), ref_x.view(np.uint32))
    np.testing.assert_array_equal(s.grad.numpy().view(np.uint32), ref_s.view(np.uint32))


def test_an_explicit_adjoint_launch_is_recorded_and_one_that_reads_its_own_adds_is_not(cuda_device, deterministic):
    rng = np.random.default_rng(6)
    n = 1000
    x0, w0, g0 = _values(rng, 7), _values(rng, (5, 3)), _values(rng, n)
    idx0 = rng.integers(0, 7, n).astype(np.int32)
    results = {}
    for device in ("cpu", cuda_device):
        gx, gw = sk.zeros(7, device=device), sk.zeros(5, dtype=sk.vec3, device=device)
        inputs = [sk.array(x0, device=device), sk.array(idx0, device=device), sk.array(w0, dtype=sk.vec3, device=device)]
        gather.__dict__.pop("_ordered_warned", None)
        with warnings.catch_warnings():
            warnings.simplefilter("error", DeterminismWarning)
            sk.launch(gather, n, inputs=inputs, outputs=[sk.zeros(n, device=device)], adjoint=True,
                      adj_inputs=[gx, None, gw], adj_outputs=[sk.array(g0, device=device)], device=device)
        results[device] = gx.numpy(), gw.numpy()
        if device != "cpu":  # the same as a recorded command (launch_cmd.py)
            gx2, gw2 = sk.zeros(7, device=device), sk.zeros(5, dtype=sk.vec3, device=device)
            cmd = sk.launch(gather, n, inputs=inputs, outputs=[sk.zeros(n, device=device)], adjoint=True,
                            adj_inputs=[gx2, None, gw2], adj_outputs=[sk.array(g0, device=device)], device=device,
                            record_cmd=True)
            with warnings.catch_warnings():
                warnings.simplefilter("error", DeterminismWarning)
                cmd.launch()
            results["cmd"] = gx2.numpy(), gw2.numpy()
    for other in (cuda_device, "cmd"):
        for a, b in zip(results["cpu"], results[other]):
            np.testing.assert_array_equal(a.view(np.uint32), b.view(np.uint32))
    # the output's gradient is also x's: the launch consumes what its reads add to, so it keeps one GPU thread
    shared = {}
    for device in ("cpu", cuda_device):
        g = sk.array(g0[:7], device=device)
        x = sk.array(x0, device=device)
        gather.__dict__.pop("_ordered_warned", None)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", DeterminismWarning)
            sk.launch(gather, 7, inputs=[x, sk.array(idx0[:7], device=device), sk.array(w0, dtype=sk.vec3, device=device)],
                      outputs=[x], adjoint=True, adj_inputs=[g, None, None], adj_outputs=[g], device=device)
        if device != "cpu":
            assert any("cannot be recorded: a gradient it accumulates" in str(w.message) for w in caught), caught
        shared[device] = g.numpy()
    np.testing.assert_array_equal(shared["cpu"].view(np.uint32), shared[cuda_device].view(np.uint32))


def test_a_kernel_calling_native_code_keeps_one_gpu_thread(cuda_device, deterministic):
    assert "@func_native 'twice'" in grad_record_refusal(_ir(calls_native))
    rng = np.random.default_rng(8)
    x0, g0 = _values(rng, 5), _values(rng, 300)
    idx0 = rng.integers(0, 5, 300).astype(np.int32)
    grads = {}
    for device in ("cpu", cuda_device):
        x = sk.array(x0, device=device, requires_grad=True)
        y = sk.zeros(300, device=device, requires_grad=True)
        warned = _backward(calls_native, [x, sk.array(idx0, device=device)], [y], [g0], device)
        if device != "cpu":
            assert len(warned) == 1 and "@func_native 'twice'" in warned[0], warned
        grads[device] = x.grad.numpy()
    ref = np.zeros(5, np.float32)
    for i in range(300):
        ref[idx0[i]] += np.float32(2.0) * g0[i]
    for g in grads.values():
        np.testing.assert_array_equal(g.view(np.uint32), ref.view(np.uint32))


def _ir(kernel):
    spec = kernel.specs[None]
    spec.build_ir(kernel.module.compile_options())
    return spec.ir


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_the_recording_variants_compile_for_the_gpu(arch):
    """NVRTC compiles each backward recording variant (no GPU needed): the entry keeps its block's launch indices
    in 8 KB of shared memory (native/det_grad.h), which the plain backward entry does not use."""
    from simkit.kernels.backends.cuda import nvrtc

    if not nvrtc.is_available():
        pytest.skip("NVRTC is not installed")
    for kernel in (gather, neighbours, scale_in_place):
        spec = kernel.specs[None]
        _ir(kernel)
        entry = f"{spec.cname}_cuda_bwd"
        recording = nvrtc.resource_usage(kernel.module.spec_source(spec, adjoint=True, det_plan=True), arch)[entry]
        plain = nvrtc.resource_usage(kernel.module.spec_source(spec, adjoint=True), arch)[entry]
        assert recording["smem"] == plain["smem"] + 8 * 1024, (kernel.key, recording, plain)


@sk.kernel
def sum_of_squares(y: sk.array(dtype=float), loss: sk.array(dtype=float)):
    i = sk.tid()
    sk.atomic_add(loss, 0, y[i] * y[i])


def test_minimize_runs_directly_where_a_capture_would_put_the_backward_on_one_thread(cuda_device, deterministic):
    """sk.optim.minimize's default graph: in deterministic mode the capture of the backward pass is discarded (its
    launches would run on one GPU thread inside it) and the iterations run directly, recorded on the whole GPU;
    the parameters come out bit for bit as with graph=False, and as with every launch on one GPU thread (the
    optimizer's update may round differently on the CPU: contracted multiply-adds)."""
    rng = np.random.default_rng(10)
    n = 2000
    x0, w0 = _values(rng, 7) * np.float32(1e-2), _values(rng, (5, 3)) * np.float32(1e-2)
    idx = rng.integers(0, 7, n).astype(np.int32)
    results = {}
    for device, graph in (("one thread", False), (cuda_device, False), (cuda_device, None)):
        recorder = device != "one thread"
        device = cuda_device
        x = sk.array(x0, device=device, requires_grad=True)
        di, w = sk.array(idx, device=device), sk.array(w0, dtype=sk.vec3, device=device)

        def forward():
            y = sk.zeros(n, device=device, requires_grad=True)
            loss = sk.zeros(1, device=device, requires_grad=True)
            sk.launch(gather, n, inputs=[x, di, w], outputs=[y], device=device)
            sk.launch(sum_of_squares, n, inputs=[y], outputs=[loss], device=device)
            return loss, lambda: float(loss.numpy()[0])

        gather.__dict__.pop("_ordered_warned", None)
        saved = _launch.recorded_backward
        _launch.recorded_backward = saved if recorder else None
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("error" if recorder else "ignore", DeterminismWarning)
                metrics = sk.optim.minimize(forward, sk.optim.SGD([x], lr=1e-4), iters=4, graph=graph)
        finally:
            _launch.recorded_backward = saved
        results[recorder, graph] = np.array(metrics, np.float64), x.numpy()
    ref_metrics, ref_x = results[False, False]
    assert not np.array_equal(ref_x, x0)
    for metrics, x in results.values():
        np.testing.assert_array_equal(x.view(np.uint32), ref_x.view(np.uint32))
        np.testing.assert_array_equal(metrics, ref_metrics)


def test_the_ball_optimization_ends_on_the_one_thread_bits(cuda_device, deterministic):
    """A scene's gradient descent (scenes/ball_trajectory.py: a rollout of particle steps with ground contact, its
    backward pass and the optimizer's updates): every backward launch is recorded, and the velocities and distances
    are bit for bit those of the run with every backward launch on one GPU thread."""
    from scenes import ball_trajectory

    runs = {}
    for recorder in (True, False):
        saved = _launch.recorded_backward
        _launch.recorded_backward = saved if recorder else None
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("error" if recorder else "ignore", DeterminismWarning)
                r = ball_trajectory.optimize(iters=2, device=cuda_device)
        finally:
            _launch.recorded_backward = saved
        runs[recorder] = np.asarray(r.velocity, np.float32), np.asarray(r.distances, np.float64)
    assert runs[True][1][1] != runs[True][1][0]  # (a step was taken)
    for a, b in zip(runs[True], runs[False]):
        np.testing.assert_array_equal(a, b)


@sk.func
def _face_area(mesh: sk.uint64, f: int):
    m = sk.mesh_get(mesh)
    a = m.points[m.indices[3 * f]]
    return 0.5 * sk.length(sk.cross(m.points[m.indices[3 * f + 1]] - a, m.points[m.indices[3 * f + 2]] - a))


@sk.kernel
def mesh_area(mesh: sk.uint64, out: sk.array(dtype=float)):
    sk.atomic_add(out, 0, _face_area(mesh, sk.tid()))


@sk.kernel
def mesh_area_and_flatten(mesh: sk.uint64, out: sk.array(dtype=float)):
    f = sk.tid()
    sk.atomic_add(out, 0, _face_area(mesh, f))
    m = sk.mesh_get(mesh)
    if f == 0:
        m.points[0] = m.points[0] * 0.5  # (a write through mesh_get: its gradient is read here)


def _grid_mesh(device, n: int = 12):
    rng = np.random.default_rng(12)
    u, v = np.meshgrid(np.arange(n), np.arange(n), indexing="ij")
    pts = np.stack([u, v, rng.standard_normal((n, n)) * 0.3], axis=-1).reshape(-1, 3).astype(np.float32)
    q = (u[:-1, :-1] * n + v[:-1, :-1]).reshape(-1)
    faces = np.concatenate([np.stack([q, q + n, q + 1], 1), np.stack([q + 1, q + n, q + n + 1], 1)])
    points = sk.array(pts, dtype=sk.vec3, device=device, requires_grad=True)
    return sk.Mesh(points=points, indices=sk.array(faces.reshape(-1).astype(np.int32), device=device)), len(faces)


@pytest.mark.parametrize("kernel", ["mesh_area", "mesh_area_and_flatten"])
def test_a_mesh_points_gradient_is_recorded_unless_the_kernel_writes_through_mesh_get(cuda_device, deterministic,
                                                                                   kernel):
    k = {"mesh_area": mesh_area, "mesh_area_and_flatten": mesh_area_and_flatten}[kernel]
    grads = {}
    for recorder in (True, False):
        mesh, faces = _grid_mesh(cuda_device)
        out = sk.zeros(1, device=cuda_device, requires_grad=True)
        warned = _backward(k, [mesh.id], [out], [np.ones(1, np.float32)], cuda_device, recorder, dim=faces)
        if recorder:
            assert (warned == []) == (kernel == "mesh_area"), warned
        grads[recorder] = mesh.points.grad.numpy()
    assert np.abs(grads[True]).max() > 0
    np.testing.assert_array_equal(grads[True].view(np.uint32), grads[False].view(np.uint32))


@sk.struct
class Holder:
    a: sk.array(dtype=float)


@sk.kernel
def through_a_struct_it_made(x: sk.array(dtype=float), y: sk.array(dtype=float), z: sk.array(dtype=float)):
    i = sk.tid()
    h = Holder(y)
    h.a[i] = x[i] * 2.0  # (a write the analysis cannot trace to y)
    z[i] = h.a[i] * 3.0  # its read's gradient goes to y.grad, which the write's adjoint then takes


def test_a_write_it_cannot_trace_keeps_every_gradient_in_order(cuda_device, deterministic):
    """A kernel writing through a struct it made may read, in its backward pass, any gradient it adds to (as warp-lang's
    test_struct step_grad does): its backward launch is not recorded, and the gradients stay exact."""
    x = sk.array(np.arange(1.0, 401.0, dtype=np.float32), device=cuda_device, requires_grad=True)
    y = sk.zeros(400, device=cuda_device, requires_grad=True)
    z = sk.zeros(400, device=cuda_device, requires_grad=True)
    warned = _backward(through_a_struct_it_made, [x, y], [z], [np.ones(400, np.float32)], cuda_device)
    assert len(warned) == 1 and "cannot be recorded: a gradient it accumulates" in warned[0], warned
    np.testing.assert_array_equal(x.grad.numpy(), np.full(400, 6.0, np.float32))

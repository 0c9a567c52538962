"""Deterministic mode (Warp's ``DeterministicMode``, ``config.deterministic`` and the module option): launches
whose atomics depend on the order of threads, and backward launches, run their threads in launch-index order,
so results are bit-identical from run to run and equal to a sequential loop (numpy's ``add.at``).

The emulated GPU runs each launch's threads last to first, so there an unordered launch would give the
reversed order: the comparisons with the sequential loop fail unless the launch is ordered."""
import contextlib
import warnings

import numpy as np
import pytest

import simkit as sk
from simkit.kernels import interleave
from simkit.kernels.deterministic import DeterminismWarning, ordered_atomic

RUN_TO_RUN = sk.DeterministicMode.RUN_TO_RUN


@sk.kernel
def scatter(d: sk.array(dtype=float), idx: sk.array(dtype=int), out: sk.array(dtype=float)):
    i = sk.tid()
    sk.atomic_add(out, idx[i], d[i])


@sk.kernel
def scatter_augassign(d: sk.array(dtype=float), idx: sk.array(dtype=int), out: sk.array(dtype=float)):
    i = sk.tid()
    out[idx[i]] += d[i]


@sk.kernel
def take_slots(counter: sk.array(dtype=int), slots: sk.array(dtype=int)):
    i = sk.tid()
    slots[sk.atomic_add(counter, 0, 1)] = i


@sk.kernel
def count_bins(idx: sk.array(dtype=int), counts: sk.array(dtype=int)):
    sk.atomic_add(counts, idx[sk.tid()], 1)  # integer sums: the same in any order


@sk.func
def deposit(out: sk.array(dtype=sk.vec3), k: int, v: sk.vec3):
    sk.atomic_sub(out, k, v)


@sk.kernel
def scatter_vec_in_func(v: sk.array(dtype=sk.vec3), idx: sk.array(dtype=int), out: sk.array(dtype=sk.vec3)):
    i = sk.tid()
    deposit(out, idx[i], v[i])


@sk.kernel
def local_histogram(idx: sk.array(dtype=int), out: sk.array(dtype=float)):
    h = sk.zeros(shape=4, dtype=float)
    sk.atomic_add(h, idx[sk.tid()] % 4, 1.5)  # the thread's own array: no other thread sees it
    out[sk.tid()] = h[0]


@sk.kernel
def gather(x: sk.array(dtype=float), idx: sk.array(dtype=int), w: float, y: sk.array(dtype=float)):
    i = sk.tid()
    y[i] = x[idx[i]] * w


@sk.kernel
def sum_squares(y: sk.array(dtype=float), loss: sk.array(dtype=float)):
    sk.atomic_add(loss, 0, y[sk.tid()] * y[sk.tid()])


@contextlib.contextmanager
def deterministic(mode=RUN_TO_RUN, threads=2):
    """config.deterministic set (and the CPU's thread count fixed, so that unordered launches run in parallel)."""
    old = sk.config.deterministic, sk.config.cpu_threads, sk.config.cpu_parallel_min
    sk.config.deterministic, sk.config.cpu_threads, sk.config.cpu_parallel_min = mode, threads, 1
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeterminismWarning)  # (one GPU thread: tested below)
            yield
    finally:
        sk.config.deterministic, sk.config.cpu_threads, sk.config.cpu_parallel_min = old


def _scatter_inputs(device, n=20000, bins=7, seed=1):
    rng = np.random.default_rng(seed)
    d = (rng.standard_normal(n) * 10.0 ** rng.integers(-3, 4, n)).astype(np.float32)  # rounding-sensitive sums
    idx = rng.integers(0, bins, n).astype(np.int32)
    return d, idx, sk.array(d, device=device), sk.array(idx, device=device)


def _sequential_sum(idx, values, bins):
    ref = np.zeros((bins,) + values.shape[1:], dtype=values.dtype)
    np.add.at(ref, idx, values)  # unbuffered, in index order, in the arrays' precision
    return ref


@pytest.mark.parametrize("kernel", [scatter, scatter_augassign])
def test_float_scatter_equals_the_sequential_sum_bit_for_bit(device, kernel):
    d, idx, dd, di = _scatter_inputs(device)
    ref = _sequential_sum(idx, d, 7)
    with deterministic():
        for _ in range(3):
            out = sk.zeros(7, device=device)
            sk.launch(kernel, len(d), inputs=[dd, di, out], device=device)
            np.testing.assert_array_equal(out.numpy().view(np.uint32), ref.view(np.uint32))


def test_gpu_to_gpu_gives_the_canonical_order_of_warps_test(device):
    # warp's test_gpu_to_gpu_matches_canonical_float32_reference: cancellations make every order differ
    d = np.array([1e20, 1.0, -1e20, 3.5, -2.25, 2.0 ** -20, 1e10, -1e10, 7.0, -7.0, 9.0, 1e-7], np.float32)
    idx = np.array([0, 0, 0, 1, 1, 1, 0, 0, 1, 1, 2, 2], np.int32)
    with deterministic(sk.DeterministicMode.GPU_TO_GPU):
        out = sk.zeros(3, device=device)
        sk.launch(scatter, len(d), inputs=[sk.array(d, device=device), sk.array(idx, device=device), out],
                  device=device)
    np.testing.assert_array_equal(out.numpy(), _sequential_sum(idx, d, 3))
    assert out.numpy()[0] == 0.0  # (1e20 + 1 - 1e20 + 1e10 - 1e10 in this order)


def test_counter_slots_follow_the_launch_index(device):
    n = 5000
    with deterministic():
        counter, slots = sk.zeros(1, dtype=int, device=device), sk.zeros(n, dtype=int, device=device)
        sk.launch(take_slots, n, inputs=[counter, slots], device=device)
    np.testing.assert_array_equal(slots.numpy(), np.arange(n))


def test_vector_atomics_in_a_func(device):
    rng = np.random.default_rng(4)
    v = (rng.standard_normal((3000, 3)) * 10.0 ** rng.integers(-3, 4, (3000, 1))).astype(np.float32)
    idx = rng.integers(0, 5, 3000).astype(np.int32)
    with deterministic():
        out = sk.zeros(5, dtype=sk.vec3, device=device)
        sk.launch(scatter_vec_in_func, 3000, inputs=[sk.array(v, dtype=sk.vec3, device=device),
                                                     sk.array(idx, device=device), out], device=device)
    np.testing.assert_array_equal(out.numpy(), _sequential_sum(idx, -v, 5))


def test_backward_accumulates_gradients_in_launch_order(device):
    rng = np.random.default_rng(7)
    n, m = 6000, 9
    x_np = rng.standard_normal(m).astype(np.float32)
    idx = rng.integers(0, m, n).astype(np.int32)
    with deterministic():
        grads = []
        for _ in range(2):
            x = sk.array(x_np, device=device, requires_grad=True)
            y = sk.zeros(n, device=device, requires_grad=True)
            loss = sk.zeros(1, device=device, requires_grad=True)
            tape = sk.Tape()
            with tape:
                sk.launch(gather, n, inputs=[x, sk.array(idx, device=device), 0.37, y], device=device)
                sk.launch(sum_squares, n, inputs=[y, loss], device=device)
            tape.backward(loss)
            grads.append(x.grad.numpy().copy())
    adj_y = 2.0 * y.numpy()
    expected = _sequential_sum(idx, (adj_y * np.float32(0.37)).astype(np.float32), m)
    np.testing.assert_array_equal(grads[0], grads[1])
    np.testing.assert_allclose(grads[0], expected, rtol=1e-5)
    # (y = x[idx] * w: the exact gradient of sum(y^2) is 2 w^2 x times the count of each index)
    np.testing.assert_allclose(grads[0], 2 * 0.37 ** 2 * x_np * np.bincount(idx, minlength=m), rtol=1e-4)


def test_the_module_option_overrides_the_config(device):
    @sk.kernel(module="unique", module_options={"deterministic": RUN_TO_RUN})
    def ordered_slots(counter: sk.array(dtype=int), slots: sk.array(dtype=int)):
        slots[sk.atomic_add(counter, 0, 1)] = sk.tid()

    assert sk.get_module_options(ordered_slots.module)["deterministic"] is RUN_TO_RUN
    with deterministic(sk.DeterministicMode.NOT_GUARANTEED):
        counter, slots = sk.zeros(1, dtype=int, device=device), sk.zeros(4000, dtype=int, device=device)
        sk.launch(ordered_slots, 4000, inputs=[counter, slots], device=device)
    np.testing.assert_array_equal(slots.numpy(), np.arange(4000))


def test_which_atomics_depend_on_the_order_of_threads():
    def line(kernel):
        spec = next(iter(kernel.specs.values()))
        spec.build_ir({"mode": "release"})
        return spec.ordered_atomic

    import inspect
    src, first = inspect.getsourcelines(scatter.func)
    assert line(scatter) == first + src.index(next(s for s in src if "atomic_add" in s))
    for kernel in (scatter_augassign, take_slots, scatter_vec_in_func, sum_squares):
        assert line(kernel) is not None, kernel.key
    for kernel in (count_bins, local_histogram, gather):  # order-free, or no atomics at all
        assert line(kernel) is None, kernel.key
    assert ordered_atomic(scatter.specs[None].ir) == line(scatter)


def test_ordered_kernels_keep_one_index_per_gpu_thread():
    @sk.kernel(module="unique", module_options={"deterministic": RUN_TO_RUN})
    def ordered_scatter(d: sk.array(dtype=float), idx: sk.array(dtype=int), out: sk.array(dtype=float)):
        sk.atomic_add(out, idx[sk.tid()], d[sk.tid()])

    @sk.kernel(module="unique")
    def unordered_scatter(d: sk.array(dtype=float), idx: sk.array(dtype=int), out: sk.array(dtype=float)):
        sk.atomic_add(out, idx[sk.tid()], d[sk.tid()])

    for kernel, interleaved in ((ordered_scatter, False), (unordered_scatter, True)):
        spec = kernel.specs[None]
        spec.build_ir({"mode": "release"})
        assert interleave.eligible(spec.ir) is interleaved


def test_one_gpu_thread_runs_an_ordered_launch_and_says_so(cuda_device, cuda_emulated_world):
    # (float atomic_max cannot be recorded and applied after the launch: utils/deterministic_gpu.py)
    @sk.kernel(module="unique")
    def keep_max(d: sk.array(dtype=float), idx: sk.array(dtype=int), out: sk.array(dtype=float)):
        sk.atomic_max(out, idx[sk.tid()], d[sk.tid()])

    d, idx, dd, di = _scatter_inputs(cuda_device, n=3000)
    old = sk.config.deterministic
    sk.config.deterministic = RUN_TO_RUN
    try:
        out = sk.zeros(7, device=cuda_device)
        with pytest.warns(DeterminismWarning, match="kernel 'keep_max' runs on one GPU thread"):
            sk.launch(keep_max, len(d), inputs=[dd, di, out], device=cuda_device)
        with warnings.catch_warnings():
            warnings.simplefilter("error", DeterminismWarning)  # once per kernel
            sk.launch(keep_max, len(d), inputs=[dd, di, out], device=cuda_device)
    finally:
        sk.config.deterministic = old
    if cuda_device == "cuda:0" and cuda_emulated_world.fake.launches:
        name, grid, block, _ = cuda_emulated_world.fake.launches[-1]
        assert (grid, block) == (1, 1)
    ref = np.zeros(7, np.float32)
    np.maximum.at(ref, idx, d)
    np.testing.assert_array_equal(out.numpy(), ref)


def test_the_enum_and_the_options():
    assert [(m.name, int(m)) for m in sk.DeterministicMode] == [
        ("NOT_GUARANTEED", 0), ("RUN_TO_RUN", 1), ("GPU_TO_GPU", 2)]
    assert sk.get_module_options()["deterministic"] == sk.DeterministicMode(sk.config.deterministic)
    for mode in sk.DeterministicMode:
        @sk.kernel(module="unique", module_options={"deterministic": mode, "deterministic_max_records": 4})
        def k(x: sk.array(dtype=float)):
            pass
        assert sk.get_module_options(k.module)["deterministic"] is mode


@pytest.mark.parametrize("value", [True, 1, "RUN_TO_RUN", None])
def test_other_values_are_refused(value):
    with pytest.raises(ValueError, match="deterministic must be a simkit.DeterministicMode value"):
        sk.set_module_options({"deterministic": value})


def test_max_records_must_be_a_count():
    with pytest.raises(ValueError, match="deterministic_max_records must be an int >= 0"):
        sk.set_module_options({"deterministic_max_records": -1})


def test_a_scene_steps_bit_identically_run_after_run():
    pytest.importorskip("trimesh")
    from simkit.cli import load_scene

    cloth = load_scene("cloth_on_sphere")  # XPBD: constraint corrections summed with atomics
    with deterministic():
        runs = [cloth.run(steps=12, size=8) for _ in range(2)]
    np.testing.assert_array_equal(runs[0].view(np.uint32), runs[1].view(np.uint32))

"""Warp kernel idioms that warp-lang's own examples use (tests/test_warp_examples.py found them
missing): ``for i in query`` over geometry queries, values first assigned in a loop and read after
it, comparisons of mixed scalar types, ``lower_bound``, the math constants, ``array2d[float]``
annotations, ``ScopedTimer``, graph capture on the CPU, and enum members (``.value``). Checked against numpy, brute force and
warp-lang."""
import enum
import math
from typing import Any

import numpy as np
import pytest

import simkit as wp

try:
    import warp
except ImportError:                                    # pragma: no cover - warp-lang is a test extra
    warp = None

needs_warp = pytest.mark.skipif(warp is None, reason="warp-lang is not installed")


# ----------------------------------------------------------------------------- for i in query

@wp.kernel
def count_neighbours(grid: wp.uint64, x: wp.array[wp.vec3], radius: float, skip_odd: int,
                     count: wp.array[int], first_far: wp.array[int]):
    tid = wp.tid()
    p = x[tid]
    n = int(0)
    for j in wp.hash_grid_query(grid, p, radius):
        if skip_odd != 0 and j % 2 == 1:
            continue
        if wp.length(x[j] - p) <= radius:
            n += 1
    count[tid] = n
    first_far[tid] = -1
    for j in wp.hash_grid_query(grid, p, radius * 2.0):   # (break: the loop stops at the first)
        if wp.length(x[j] - p) > radius:
            first_far[tid] = j
            break


def test_for_over_a_hash_grid_query_visits_every_neighbour(device):
    rng = np.random.default_rng(0)
    pts = rng.random((300, 3)).astype(np.float32)
    x = wp.array(pts, dtype=wp.vec3, device=device)
    grid = wp.HashGrid(16, 16, 16, device=device)
    grid.build(x, 0.1)
    for skip in (0, 1):
        count, far = wp.zeros(300, dtype=int, device=device), wp.zeros(300, dtype=int, device=device)
        wp.launch(count_neighbours, 300, inputs=[grid.id, x, 0.1, skip], outputs=[count, far], device=device)
        d = np.linalg.norm(pts[:, None] - pts[None], axis=2)
        near = d <= 0.1
        if skip:
            near[:, 1::2] = False
        np.testing.assert_array_equal(count.numpy(), near.sum(axis=1))
    f = far.numpy()
    found = f >= 0
    assert found.any()
    assert np.all(d[np.nonzero(found)[0], f[found]] > 0.1)   # the first neighbour past the radius


@wp.kernel
def faces_near(mesh: wp.uint64, lo: wp.array[wp.vec3], hi: wp.array[wp.vec3], out: wp.array2d[int]):
    tid = wp.tid()
    for f in wp.mesh_query_aabb(mesh, lo[tid], hi[tid]):
        out[tid, f] = 1


@wp.kernel
def boxes_hit(bvh: wp.uint64, lo: wp.array[wp.vec3], hi: wp.array[wp.vec3], out: wp.array2d[int]):
    tid = wp.tid()
    for b in wp.bvh_query_aabb(bvh, lo[tid], hi[tid]):
        out[tid, b] = 1


def test_for_over_mesh_and_bvh_queries(device):
    rng = np.random.default_rng(1)
    tris = rng.random((40, 3, 3)).astype(np.float32)
    mesh = wp.Mesh(wp.array(tris.reshape(-1, 3), dtype=wp.vec3, device=device),
                   wp.array(np.arange(120, dtype=np.int32), dtype=int, device=device))
    lo_np = (rng.random((8, 3)) * 0.8).astype(np.float32)
    hi_np = lo_np + 0.2
    lo, hi = wp.array(lo_np, dtype=wp.vec3, device=device), wp.array(hi_np, dtype=wp.vec3, device=device)
    out = wp.zeros((8, 40), dtype=int, device=device)
    wp.launch(faces_near, 8, inputs=[mesh.id, lo, hi], outputs=[out], device=device)
    overlap = np.all((tris.min(1)[None] <= hi_np[:, None]) & (tris.max(1)[None] >= lo_np[:, None]), axis=2)
    np.testing.assert_array_equal(out.numpy(), overlap)
    bvh = wp.Bvh(wp.array(tris.min(1), dtype=wp.vec3, device=device), wp.array(tris.max(1), dtype=wp.vec3,
                                                                              device=device))
    out.zero_()
    wp.launch(boxes_hit, 8, inputs=[bvh.id, lo, hi], outputs=[out], device=device)
    np.testing.assert_array_equal(out.numpy(), overlap)


def test_for_over_anything_else_is_a_clear_error():
    @wp.kernel
    def over_a_float(x: wp.array[float]):
        for v in x[0]:
            x[0] = v

    with pytest.raises(wp.CompileError, match=r"range\(...\), static\(...\) or a geometry query.*float32"):
        wp.launch(over_a_float, 1, inputs=[wp.zeros(1)])


# ----------------------------------------------------------------------------- values after loops

@wp.kernel
def last_of_loop(n: int, x: wp.array[float], out: wp.array[float], out_v: wp.array[wp.vec3]):
    t = float(0.0)
    for i in range(n):
        d = x[i] * x[i]
        v = wp.vec3(d, float(i), 1.0)
        t = t + d
    out[0] = d * 3.0 + t
    out_v[0] = v


def test_a_value_first_assigned_in_a_loop_is_read_after_it():
    # as in Warp (every variable declared at the top, zeroed): the last iteration's value, or zero when
    # the loop did not run; gradients flow through it
    x = wp.array([0.5, -1.5, 2.0, 0.25], dtype=float, requires_grad=True)
    out, out_v = wp.zeros(1, requires_grad=True), wp.zeros(1, dtype=wp.vec3)
    tape = wp.Tape()
    with tape:
        wp.launch(last_of_loop, 1, inputs=[4, x], outputs=[out, out_v])
    xs = x.numpy()
    assert out.numpy()[0] == pytest.approx(3 * xs[3] ** 2 + (xs ** 2).sum(), rel=1e-6)
    np.testing.assert_allclose(out_v.numpy()[0], [xs[3] ** 2, 3.0, 1.0], rtol=1e-6)
    tape.backward(out)
    np.testing.assert_allclose(x.grad.numpy(), 2 * xs * np.array([1, 1, 1, 4]), rtol=1e-6)
    wp.launch(last_of_loop, 1, inputs=[0, x], outputs=[out, out_v])
    assert out.numpy()[0] == 0.0 and not out_v.numpy().any()


# ----------------------------------------------------------------------------- mixed comparisons

@wp.kernel
def compare_mixed(f: float, i: int, u: wp.uint32, l: wp.int64, d: wp.float64, out: wp.array[int]):
    out[0] = int(f < i)
    out[1] = int(i <= f)
    out[2] = int(f == i)
    out[3] = int(u < i)          # (C: int32 with uint32 compares as uint32, as warp-lang's C++ does)
    out[4] = int(l > u)          # (int64 holds every uint32: signed)
    out[5] = int(d > f)
    out[6] = int(i >= l)


MIXED = [(2.5, 3, 2, 5, 2.5), (3.0, 3, 7, -1, 3.0000001), (-1.5, -1, 2, 2, -1.5)]


@pytest.mark.parametrize("f, i, u, l, d", MIXED)
def test_comparisons_of_mixed_scalar_types(f, i, u, l, d):
    out = wp.zeros(7, dtype=int)
    wp.launch(compare_mixed, 1, inputs=[f, i, u, l, d], outputs=[out])
    f32 = float(np.float32(f))
    want = [f32 < i, i <= f32, f32 == i, u < (i % 2**32), l > u, d > f32, i >= l]
    np.testing.assert_array_equal(out.numpy(), np.array(want, dtype=int))
    if warp is not None:
        w = warp_compare(f, i, u, l, d)
        np.testing.assert_array_equal(out.numpy(), w)


def warp_compare(*args):
    global _warp_compare
    if "_warp_compare" not in globals():
        @warp.kernel
        def k(f: float, i: int, u: warp.uint32, l: warp.int64, d: warp.float64, out: warp.array(dtype=int)):
            out[0] = int(f < i)
            out[1] = int(i <= f)
            out[2] = int(f == i)
            out[3] = int(u < i)
            out[4] = int(l > u)
            out[5] = int(d > f)
            out[6] = int(i >= l)
        _warp_compare = k
    out = warp.zeros(7, dtype=int, device="cpu")
    warp.launch(_warp_compare, 1, inputs=[*args, out], device="cpu")
    return out.numpy()


# ----------------------------------------------------------------------------- lower_bound, constants

@wp.kernel
def search(cdf: wp.array[Any], q: wp.array[Any], lo: int, hi: int, out: wp.array2d[int]):
    i = wp.tid()
    out[i, 0] = wp.lower_bound(cdf, q[i])
    out[i, 1] = wp.lower_bound(cdf, lo, hi, q[i])


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32])
def test_lower_bound_is_numpys_searchsorted_left_within_the_range(device, dtype):
    rng = np.random.default_rng(2)
    cdf = np.sort(rng.integers(0, 50, 30)).astype(dtype)              # (repeated values: the first)
    q = np.concatenate([cdf[::3], rng.integers(-5, 60, 20).astype(dtype)])
    out = wp.zeros((len(q), 2), dtype=int, device=device)
    wp.launch(search, len(q), inputs=[wp.array(cdf, device=device), wp.array(q, device=device), 4, 17],
              outputs=[out], device=device)
    # as in Warp, a value above every element gives the range's last index, not its end
    np.testing.assert_array_equal(out.numpy()[:, 0], np.minimum(np.searchsorted(cdf, q, side="left"), 29))
    np.testing.assert_array_equal(out.numpy()[:, 1], 4 + np.minimum(np.searchsorted(cdf[4:17], q, side="left"), 12))
    assert (q > cdf[-1]).any() and (q < cdf[0]).any()  # (both ends are exercised)


def test_lower_bound_past_the_array_is_caught_in_debug_mode(monkeypatch):
    monkeypatch.setattr(wp.config, "mode", "debug")
    out = wp.zeros((1, 2), dtype=int)
    with pytest.raises(IndexError, match="out of bounds"):
        wp.launch(search, 1, inputs=[wp.zeros(4), wp.ones(1), 0, 9], outputs=[out])


@wp.kernel
def constants(out: wp.array[wp.float64]):
    out[0] = wp.float64(wp.pi)
    out[1] = wp.float64(wp.tau - wp.half_pi)
    out[2] = wp.float64(wp.e * wp.ln2 * wp.log2e)
    out[3] = wp.float64(wp.phi * wp.ln10 * wp.log10e)
    out[4] = wp.float64(wp.isinf(wp.inf) and wp.isnan(wp.nan))


def test_math_constants():
    assert (wp.pi, wp.tau, wp.half_pi, wp.e) == (math.pi, 2 * math.pi, math.pi / 2, math.e)
    if warp is not None:
        for name in ("pi", "tau", "half_pi", "e", "phi", "ln2", "ln10", "log2e", "log10e"):
            assert getattr(wp, name) == pytest.approx(getattr(warp, name), rel=1e-15), name
    out = wp.zeros(5, dtype=wp.float64)
    wp.launch(constants, 1, outputs=[out])
    want = [math.pi, 1.5 * math.pi, math.e, (1 + 5 ** 0.5) / 2, 1.0]
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-6)          # (float32 in the kernel)


# ----------------------------------------------------------------------------- array2d[float], ScopedTimer

@wp.kernel
def transpose(a: wp.array2d[float], b: wp.array3d[wp.vec2]):
    i, j = wp.tid()
    b[j, i, 0] = wp.vec2(a[i, j], -a[i, j])


def test_fixed_dimension_array_annotations_take_a_dtype_index():
    assert wp.array2d[float].ndim == 2 and wp.array3d[wp.vec2].dtype is wp.vec2
    assert wp.array2d(np.ones((2, 3)), dtype=float).shape == (2, 3)
    with pytest.raises(ValueError, match="ndim=2"):
        wp.array2d(np.ones(3), dtype=float)
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    b = wp.zeros((3, 2, 1), dtype=wp.vec2)
    wp.launch(transpose, (2, 3), inputs=[wp.array(a)], outputs=[b])
    np.testing.assert_array_equal(b.numpy()[:, :, 0, 0], a.T)


def test_scoped_timer_prints_and_collects(capsys):
    times = {}
    with wp.ScopedTimer("outer", dict=times) as outer:
        with wp.ScopedTimer("inner", dict=times, synchronize=True):
            sum(range(10000))
        with wp.ScopedTimer("quiet", print=False, dict=times):
            pass
        with wp.ScopedTimer("off", active=False, dict=times):
            pass
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("  inner took ") and out[0].endswith(" ms")
    assert out[1].startswith("outer took ") and len(out) == 2
    assert len(times["outer"]) == len(times["inner"]) == len(times["quiet"]) == 1 and times["off"] == []
    assert times["outer"][0] == outer.elapsed >= times["inner"][0] > 0.0


# ----------------------------------------------------------------------------- graph capture on the CPU

@wp.kernel
def fall(x: wp.array[float], v: wp.array[float], dt: float):
    i = wp.tid()
    v[i] = v[i] - 9.8 * dt
    x[i] = x[i] + v[i] * dt


@wp.kernel
def energy(x: wp.array[float], v: wp.array[float], e: wp.array[float]):
    i = wp.tid()
    wp.atomic_add(e, 0, 0.5 * v[i] * v[i] + 9.8 * x[i])


def test_cpu_graph_capture_records_and_replays():
    x, v = wp.zeros(16), wp.array(np.linspace(0.0, 1.0, 16), dtype=float)
    start = wp.array(np.full(16, 2.0), dtype=float)
    with wp.ScopedCapture("cpu") as cap:
        assert wp.is_capturing("cpu")
        wp.copy(x, start)                      # (recorded: every replay starts from 2 m)
        made = wp.zeros(16)                    # (zeroed by every replay, as a CUDA graph does)
        for _ in range(4):
            wp.launch(fall, 16, inputs=[x, v, 0.01])
        wp.launch(fall, 16, inputs=[made, v, 0.0])
        with pytest.raises(RuntimeError, match="graph capture on the CPU"):
            x.numpy()
        with pytest.raises(RuntimeError, match="graph capture on the CPU"):
            _ = x[0]
    assert not wp.is_capturing("cpu") and len(cap.graph) == 7
    np.testing.assert_array_equal(x.numpy(), 0.0)               # nothing ran during the capture
    x_ref, v_ref = np.zeros(16), np.linspace(0.0, 1.0, 16)
    for frame in range(3):
        made.fill_(5.0)
        wp.capture_launch(cap.graph)
        x_ref[:] = 2.0
        for _ in range(4):
            v_ref = v_ref - 9.8 * 0.01
            x_ref = x_ref + v_ref * 0.01
        np.testing.assert_allclose(x.numpy(), x_ref, rtol=1e-6)
        np.testing.assert_array_equal(made.numpy(), 0.0)


@wp.kernel
def fall_to(x: wp.array[float], v: wp.array[float], dt: float, x_out: wp.array[float], v_out: wp.array[float]):
    i = wp.tid()
    vn = v[i] - 9.8 * dt
    v_out[i] = vn
    x_out[i] = x[i] + vn * dt


def test_cpu_graph_captures_a_tape_backward_pass():
    x0, v0 = np.linspace(0.0, 1.0, 8), np.linspace(1.0, 2.0, 8)
    x, v = wp.array(x0, dtype=float, requires_grad=True), wp.array(v0, dtype=float, requires_grad=True)
    x1, v1 = wp.zeros(8, requires_grad=True), wp.zeros(8, requires_grad=True)
    e = wp.zeros(1, requires_grad=True)
    tape = wp.Tape()
    with wp.ScopedCapture() as cap:            # (the default device: the CPU here)
        with tape:
            wp.launch(fall_to, 8, inputs=[x, v, 0.1], outputs=[x1, v1])
            wp.launch(energy, 8, inputs=[x1, v1], outputs=[e])
        tape.backward(e)
    assert not x.grad.numpy().any()            # (recorded, not run)
    for _ in range(2):                         # (each replay zeroes nothing: gradients add up, as eager)
        tape.zero()
        e.zero_()
        wp.capture_launch(cap.graph)
        # e = sum((v0 - 0.98)^2 / 2 + 9.8 (x0 + 0.1 (v0 - 0.98)))
        assert e.numpy()[0] == pytest.approx(np.sum((v0 - 0.98) ** 2 / 2 + 9.8 * (x0 + 0.1 * (v0 - 0.98))), rel=1e-5)
        np.testing.assert_allclose(x.grad.numpy(), 9.8, rtol=1e-6)
        np.testing.assert_allclose(v.grad.numpy(), (v0 - 0.98) + 0.98, rtol=1e-5)


def test_cpu_graph_reports_kernel_errors_at_replay(monkeypatch):
    monkeypatch.setattr(wp.config, "mode", "debug")
    a = wp.zeros(4)
    with wp.ScopedCapture("cpu") as cap:
        wp.launch(fall, 8, inputs=[a, wp.zeros(8), 0.1])       # (8 threads, 4 elements)
    with pytest.raises(IndexError, match="out of bounds"):
        wp.capture_launch(cap.graph)
    with wp.ScopedCapture("cpu"):
        with pytest.raises(RuntimeError, match="do not nest"):
            wp.capture_begin("cpu")
        with pytest.raises(RuntimeError, match="nest"):
            wp.capture_launch(cap.graph)


# ----------------------------------------------------------------------------- bitwise atomics, bit_count

@wp.kernel
def bitwise(x: wp.array[int], acc: wp.array[int], old: wp.array[int], bits: wp.array[int]):
    i = wp.tid()
    wp.atomic_or(acc, 0, x[i])
    acc[1] &= x[i]                      # (as in Warp: an atomic and)
    acc[2] ^= x[i]
    old[i] = wp.atomic_and(acc, 3, -1)  # (leaves it: returns it)
    bits[i] = wp.bit_count(x[i])


@wp.kernel
def set_bits(x: wp.array[wp.int8], bits: wp.array[int], flags: wp.array[wp.uint64]):
    i = wp.tid()
    bits[i] = wp.bit_count(x[i])
    flags[0] |= wp.uint64(1) << wp.uint64(i * 7)


def test_bitwise_atomics_and_bit_count(device):
    x = np.random.default_rng(3).integers(-2 ** 31, 2 ** 31, 500).astype(np.int32)
    acc = wp.array(np.array([0, -1, 0, 12345], np.int32), device=device)
    old, bits = wp.zeros(500, dtype=int, device=device), wp.zeros(500, dtype=int, device=device)
    wp.launch(bitwise, 500, inputs=[wp.array(x, device=device), acc], outputs=[old, bits], device=device)
    np.testing.assert_array_equal(acc.numpy(), [np.bitwise_or.reduce(x), np.bitwise_and.reduce(x),
                                                np.bitwise_xor.reduce(x), 12345])
    assert (old.numpy() == 12345).all()
    np.testing.assert_array_equal(bits.numpy(), [bin(int(v) & 0xFFFFFFFF).count("1") for v in x])
    x8 = np.array([-1, 0, 5, -128, 127, 64, 3, -2, 9], np.int8)
    bits8, flags = wp.zeros(9, dtype=int, device=device), wp.zeros(1, dtype=wp.uint64, device=device)
    wp.launch(set_bits, 9, inputs=[wp.array(x8, device=device)], outputs=[bits8, flags], device=device)
    np.testing.assert_array_equal(bits8.numpy(), [bin(int(v) & 0xFF).count("1") for v in x8])
    assert int(flags.numpy()[0]) == sum(1 << (7 * i) for i in range(9))


def test_bitwise_atomics_take_integers_only():
    @wp.kernel
    def on_floats(a: wp.array[float]):
        wp.atomic_or(a, 0, 1.0)

    with pytest.raises(wp.CompileError, match="atomic_or"):
        wp.launch(on_floats, 1, inputs=[wp.zeros(1)])


# ----------------------------------------------------------------------------- module options, runtime helpers

def test_module_options_switch_off_the_backward_pass_and_set_unrolling(tmp_path, monkeypatch):
    src = tmp_path / "opts_module.py"
    src.write_text(
        "import simkit as wp\n"
        "wp.set_module_options({'enable_backward': False, 'max_unroll': 2, 'fast_math': True})\n"
        "@wp.kernel\n"
        "def square(x: wp.array(dtype=float), y: wp.array(dtype=float)):\n"
        "    i = wp.tid()\n"
        "    s = float(0.0)\n"
        "    for k in range(4):\n"
        "        s += x[i]\n"
        "    y[i] = s * x[i]\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    import opts_module

    assert wp.get_module_options(opts_module) == {"enable_backward": False, "max_unroll": 2, "fast_math": True,
                                                  "deterministic": wp.DeterministicMode.NOT_GUARANTEED,
                                                  "optimization_level": None}
    assert opts_module.square.enable_backward is False
    x = wp.array([1.0, 2.0], dtype=float, requires_grad=True)
    y = wp.zeros(2, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(opts_module.square, 2, inputs=[x], outputs=[y])
    np.testing.assert_allclose(y.numpy(), [4.0, 16.0])
    from simkit.kernels import ir

    loops = [s for s in ir.walk(opts_module.square.specs[None].ir.body) if isinstance(s, ir.For)]
    assert len(loops) == 1          # range(4) kept as a loop: max_unroll 2 (the default unrolls it)
    with pytest.raises(wp.TapeError, match="enable_backward=False"):
        tape.backward(grads={y: wp.ones(2)})
    with pytest.raises(ValueError, match="not mode"):
        wp.set_module_options({"mode": "debug"})


def test_runtime_helpers():
    assert wp.PI == math.pi and wp.LOG2E == 1.0 / math.log(2.0)
    assert wp.is_cpu_available() and wp.is_device_available("cpu") and not wp.is_device_available("cuda:99")
    assert wp.get_cuda_devices() == ([d for d in wp.get_devices() if d.is_cuda] if wp.is_cuda_available() else [])
    assert wp.get_preferred_device() == wp.get_device("cuda:0" if wp.is_cuda_available() else "cpu")
    archs = wp.get_cuda_supported_archs()  # (NVRTC's list; cuda-python is a test dependency)
    assert 80 in archs and 90 in archs and archs == sorted(archs) and all(isinstance(a, int) for a in archs)
    assert wp.dtype_from_numpy(np.float64) is wp.float64 and wp.dtype_from_numpy(np.uint8) is wp.uint8
    assert wp.dtype_to_numpy(wp.vec3d) == np.float64 and wp.dtype_to_numpy(wp.int16) == np.int16
    with pytest.raises(TypeError):
        wp.dtype_from_numpy(np.complex64)


def test_clear_kernel_cache(tmp_path, monkeypatch):
    monkeypatch.setattr(wp.config, "cache_dir", str(tmp_path))
    (tmp_path / "unit.so").write_bytes(b"x")
    (tmp_path / "sub").mkdir()
    wp.clear_kernel_cache()
    assert list(tmp_path.iterdir()) == []


# ----------------------------------------------------------------------------- reversed(range(...))

@wp.kernel
def visit_reversed(x: wp.array[float], n: int, a: int, b: int, step: int, order: wp.array[int],
                   horner: wp.array[float]):
    c = int(0)
    for i in reversed(range(a, b, step)):
        order[c] = i
        c += 1
    for i in reversed(range(1, 10, 3)):         # (constant bounds: unrolled)
        order[c] = i
        c += 1
    order[31] = c
    h = float(0.0)
    for i in reversed(range(n)):                # Horner: sum of x[i] 0.5^i
        h = h * 0.5 + x[i]
    horner[0] = h


@pytest.mark.parametrize("a, b, step", [(3, 17, 5), (5, 3, 1), (10, -3, -4), (0, 7, 3), (-2, 9, 1)])
def test_reversed_range_loops(device, a, b, step):
    x = wp.array(np.linspace(1.0, 2.0, 6), dtype=float, device=device, requires_grad=True)
    order = wp.zeros(32, dtype=int, device=device)
    horner = wp.zeros(1, device=device, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(visit_reversed, 1, inputs=[x, 6, a, b, step], outputs=[order, horner], device=device)
    got = order.numpy()
    assert got[:got[31]].tolist() == list(reversed(range(a, b, step))) + [7, 4, 1]
    weights = 0.5 ** np.arange(6)
    assert horner.numpy()[0] == pytest.approx(np.dot(np.linspace(1.0, 2.0, 6), weights), rel=1e-6)
    tape.backward(horner)
    np.testing.assert_allclose(x.grad.numpy(), weights, rtol=1e-6)


def test_reversed_of_anything_but_a_range_is_an_error():
    @wp.kernel
    def bad(x: wp.array[float]):
        for i in reversed(x):
            x[0] = 1.0

    with pytest.raises(wp.CompileError, match=r"reversed\(\) in a for loop takes a range"):
        wp.launch(bad, 1, inputs=[wp.zeros(1)])


# ----------------------------------------------------------------------------- array.transpose, Tape.get_adjoint

@wp.kernel
def weigh(a: wp.array2d[float], w: wp.array2d[float], out: wp.array[float]):
    i, j = wp.tid()
    wp.atomic_add(out, 0, a[i, j] * w[i, j] * float(i + 1))


def test_transposed_views_in_kernels_and_their_gradients(device):
    a_np = np.arange(12, dtype=np.float32).reshape(3, 4)
    a = wp.array(a_np, device=device, requires_grad=True)
    t = a.transpose()
    assert t.shape == (4, 3) and not t.is_contiguous
    np.testing.assert_array_equal(t.numpy(), a_np.T)
    w = wp.array(np.linspace(0.5, 1.5, 12, dtype=np.float32).reshape(4, 3), device=device)
    out = wp.zeros(1, device=device, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(weigh, (4, 3), inputs=[t, w], outputs=[out], device=device)
    rows = np.arange(1, 5, dtype=np.float32)[:, None]
    assert out.numpy()[0] == pytest.approx(float((a_np.T * w.numpy() * rows).sum()), rel=1e-6)
    tape.backward(out)
    np.testing.assert_allclose(tape.get_adjoint(a).numpy(), (w.numpy() * rows).T, rtol=1e-6)
    assert tape.get_adjoint(w) is None
    with pytest.raises(ValueError, match="permutation"):
        a.transpose((0, 0))


# ----------------------------------------------------------------------------- enums

class Phase(enum.IntEnum):
    SOLID = 1
    LIQUID = 2


class Flags(enum.IntFlag):
    FIXED = 1
    VISIBLE = 4


@wp.kernel
def classify(phase: wp.array[int], out: wp.array[int]):
    i = wp.tid()
    f = int(Flags.FIXED.value) | Flags.VISIBLE
    if phase[i] == Phase.LIQUID.value:
        out[i] = f * 10 + int(Phase.SOLID) + wp.static(Phase.LIQUID.value)
    else:
        out[i] = Flags.VISIBLE.value


def test_enum_members_and_their_values_in_kernels(device):
    out = wp.zeros(3, dtype=int, device=device)
    wp.launch(classify, 3, inputs=[wp.array([2, 1, 2], dtype=int, device=device)], outputs=[out], device=device)
    np.testing.assert_array_equal(out.numpy(), [53, 4, 53])


@wp.kernel
def optional_weights(x: wp.array[float], w: wp.array[float], out: wp.array[float]):
    i = wp.tid()
    s = x[i]
    if w and i < w.shape[0]:          # an array is true unless it is None
        s *= w[i]
    if not w:
        s += 100.0
    out[i] = s


def test_arrays_as_conditions_test_for_none(device):
    x = wp.array([1.0, 2.0, 3.0], dtype=float, device=device)
    out = wp.zeros(3, dtype=float, device=device)
    wp.launch(optional_weights, 3, inputs=[x, wp.array([2.0, 3.0], dtype=float, device=device)], outputs=[out],
              device=device)
    np.testing.assert_array_equal(out.numpy(), [2.0, 6.0, 3.0])
    wp.launch(optional_weights, 3, inputs=[x, None], outputs=[out], device=device)
    np.testing.assert_array_equal(out.numpy(), [101.0, 102.0, 103.0])


def test_transform_expand_reads_position_then_quaternion():
    t = wp.transform_expand([1.0, 2.0, 3.0, 0.0, 0.0, np.sin(0.25), np.cos(0.25)])
    np.testing.assert_allclose(np.asarray(wp.transform_get_translation(t)), [1.0, 2.0, 3.0])
    np.testing.assert_allclose(np.asarray(wp.transform_get_rotation(t)), [0.0, 0.0, np.sin(0.25), np.cos(0.25)],
                               rtol=1e-6)
    with pytest.raises(ValueError, match="7 numbers"):
        wp.transform_expand([1.0, 2.0])


def test_debug_log_level_prints_builds_and_cache_hits(monkeypatch, capsys):
    assert (wp.LOG_DEBUG, wp.LOG_INFO, wp.LOG_WARNING, wp.LOG_ERROR) == (10, 20, 30, 40)
    assert wp.config.log_level == wp.LOG_INFO

    @wp.kernel(module="unique")
    def logged(a: wp.array(dtype=float)):
        a[wp.tid()] = 2.0

    monkeypatch.setattr(wp.config, "log_level", wp.LOG_DEBUG)
    a = wp.zeros(3, device="cpu")
    wp.launch(logged, 3, inputs=[a], device="cpu")
    out = capsys.readouterr().out
    assert "simkit: " in out and ("cache hit" in out or "-o" in out)
    np.testing.assert_array_equal(a.numpy(), [2.0, 2.0, 2.0])

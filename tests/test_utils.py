"""``sk.utils`` (Warp's ``wp.utils``): reductions, prefix sums, sorts, casts and run-length encoding against
numpy for every dtype family they take, on every device; the errors Warp raises; gradients of
``array_sum``/``array_inner`` on a Tape against central finite differences (Warp's are not differentiable)."""
import numpy as np
import pytest

import simkit as sk

RNG = np.random.default_rng(7)


def _stable_order(keys):
    return np.argsort(keys, kind="stable")


# --- array_scan ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [sk.int32, sk.int64, sk.float32, sk.float64, sk.vec3i, sk.vec3d])
def test_array_scan_against_cumsum(device, dtype):
    scalar = sk.types.type_scalar_type(dtype)
    np_t = {sk.int32: np.int32, sk.int64: np.int64, sk.float32: np.float32, sk.float64: np.float64}[scalar]
    comps = sk.types.type_size(dtype)
    for n in (1, 1000, 100_003):
        shape = (n, comps) if comps > 1 else (n,)
        x = RNG.integers(-100, 100, size=shape).astype(np_t)
        a = sk.array(x, dtype=dtype, device=device)
        inc, exc = sk.zeros_like(a), sk.zeros_like(a)
        sk.utils.array_scan(a, inc, True)
        sk.utils.array_scan(a, exc, inclusive=False)
        expected = np.cumsum(x, axis=0, dtype=np.float64 if np_t in (np.float32,) else np_t)
        np.testing.assert_allclose(inc.numpy(), expected, rtol=1e-5)
        np.testing.assert_allclose(exc.numpy()[1:], expected[:-1], rtol=1e-5)
        assert not exc.numpy()[0].any()


def test_array_scan_views_and_in_place(device):
    base = sk.array(np.arange(40, dtype=np.int64), device=device)
    out = sk.full(40, -1, dtype=sk.int64, device=device)
    sk.utils.array_scan(base[1::2], out[::2], True)  # strided 1D input and output
    got = out.numpy()
    np.testing.assert_array_equal(got[::2], np.cumsum(np.arange(40)[1::2]))
    assert (got[1::2] == -1).all()
    grid = sk.array(np.ones((30, 50), dtype=np.float32), device=device)  # contiguous 2D: scanned flat
    sk.utils.array_scan(grid, grid, False)  # in place
    np.testing.assert_array_equal(grid.numpy().ravel(), np.arange(1500))


def test_array_scan_errors():
    a = sk.zeros(4, dtype=int)
    with pytest.raises(RuntimeError, match=r"sizes do not match \(4 vs 5\)"):
        sk.utils.array_scan(a, sk.zeros(5, dtype=int))
    with pytest.raises(RuntimeError, match=r"data types do not match \(int32 vs float32\)"):
        sk.utils.array_scan(a, sk.zeros(4, dtype=float))
    with pytest.raises(RuntimeError, match=r"Unsupported data type: uint8"):
        sk.utils.array_scan(sk.zeros(4, dtype=sk.uint8), sk.zeros(4, dtype=sk.uint8))
    m = sk.zeros((4, 4), dtype=int)
    with pytest.raises(RuntimeError, match="contiguous or one-dimensional"):
        sk.utils.array_scan(m[:, 1:], sk.zeros((4, 3), dtype=int))


# --- radix_sort_pairs / segmented_sort_pairs ----------------------------------------------------------------

def _keys(dtype, n):
    if dtype in (sk.float32, sk.float64):
        k = RNG.normal(size=n) * 1e3
        k[k == 0] = 1.0  # -0.0 and 0.0: numpy ties them, the radix sort puts -0.0 first (as CUB)
        return k
    lo, hi = {sk.int32: (-2**31, 2**31 - 1), sk.uint32: (0, 2**32 - 1), sk.int64: (-2**62, 2**62),
              sk.uint64: (0, 2**63)}[dtype]
    k = RNG.integers(lo, hi, size=n, dtype=np.int64 if dtype != sk.uint64 else np.uint64)
    k[: n // 3] = k[n // 3: 2 * (n // 3)]  # duplicates, to check stability
    return k


@pytest.mark.parametrize("key_dtype", [sk.int32, sk.uint32, sk.float32, sk.int64, sk.uint64, sk.float64])
@pytest.mark.parametrize("value_dtype", [sk.int32, sk.float64])
def test_radix_sort_pairs_against_argsort(device, key_dtype, value_dtype):
    for n in (1, 7, 50_000):
        k = _keys(key_dtype, n)
        keys = sk.zeros(2 * n, dtype=key_dtype, device=device)
        keys.assign(np.concatenate([k, k]).astype(keys.numpy().dtype))
        k = keys.numpy()[:n].copy()  # (a CPU array's numpy() shares its memory)
        v = np.arange(n)
        values = sk.array(np.concatenate([v, v]), dtype=value_dtype, device=device)
        sk.utils.radix_sort_pairs(keys, values, n)
        order = _stable_order(k)
        np.testing.assert_array_equal(keys.numpy()[:n], k[order])
        np.testing.assert_array_equal(values.numpy()[:n], v[order])


def test_radix_sort_pairs_bit_range_and_4_byte_vector_values(device):
    n = 5000
    k = RNG.integers(0, 2**32, size=n, dtype=np.uint64).astype(np.uint32)
    keys = sk.array(np.concatenate([k, k]), dtype=sk.uint32, device=device)
    v = RNG.normal(size=(2 * n, 2)).astype(np.float16)
    values = sk.array(v, dtype=sk.vec2h, device=device)
    sk.utils.radix_sort_pairs(keys, values, n, begin_bit=4, end_bit=19)
    order = _stable_order((k >> 4) & ((1 << 15) - 1))
    np.testing.assert_array_equal(keys.numpy()[:n], k[order])
    np.testing.assert_array_equal(values.numpy()[:n], v[:n][order])


def test_radix_sort_pairs_errors():
    keys, values = sk.zeros(6, dtype=int), sk.zeros(6, dtype=int)
    with pytest.raises(RuntimeError, match=r"2\*count elements"):
        sk.utils.radix_sort_pairs(keys, values, 4)
    with pytest.raises(RuntimeError, match=r"Unsupported keys and values data types: int32, float16"):
        sk.utils.radix_sort_pairs(keys, sk.zeros(6, dtype=sk.float16), 3)
    with pytest.raises(RuntimeError, match=r"Unsupported keys and values data types: int16, int32"):
        sk.utils.radix_sort_pairs(sk.zeros(6, dtype=sk.int16), values, 3)
    with pytest.raises(RuntimeError, match=r"contiguous keys array"):
        sk.utils.radix_sort_pairs(sk.zeros(12, dtype=int)[::2], values, 3)
    with pytest.raises(RuntimeError, match=r"Invalid radix sort bit range \[0, 40\) for 32-bit keys"):
        sk.utils.radix_sort_pairs(keys, values, 3, end_bit=40)


@pytest.mark.parametrize("key_dtype", [sk.int32, sk.float32])
def test_segmented_sort_pairs_against_numpy(device, key_dtype):
    n = 20_000
    k = RNG.integers(-50, 50, size=n).astype(np.float32 if key_dtype == sk.float32 else np.int32)
    v = np.arange(n, dtype=np.int32)
    # segments in shuffled order, with gaps between some of them (elements there must not move)
    cuts = np.sort(RNG.choice(np.arange(1, n), size=40, replace=False))
    bounds = np.concatenate([[0], cuts, [n]])
    segs = [(a, b) for a, b in zip(bounds[:-1], bounds[1:]) if RNG.random() < 0.8]
    RNG.shuffle(segs)
    starts = np.array([s for s, _ in segs], dtype=np.int32)
    ends = np.array([e for _, e in segs], dtype=np.int32)
    keys = sk.array(np.concatenate([k, k]), dtype=key_dtype, device=device)
    values = sk.array(np.concatenate([v, v]), dtype=int, device=device)
    sk.utils.segmented_sort_pairs(keys, values, n, sk.array(starts, device=device), sk.array(ends, device=device))
    ek, ev = k.copy(), v.copy()
    for s, e in segs:
        o = _stable_order(k[s:e])
        ek[s:e], ev[s:e] = k[s:e][o], v[s:e][o]
    np.testing.assert_array_equal(keys.numpy()[:n], ek)
    np.testing.assert_array_equal(values.numpy()[:n], ev)
    # adjacent offsets (no end indices)
    keys = sk.array(np.concatenate([k, k]), dtype=key_dtype, device=device)
    values = sk.array(np.concatenate([v, v]), dtype=int, device=device)
    sk.utils.segmented_sort_pairs(keys, values, n, sk.array(bounds.astype(np.int32), device=device))
    for s, e in zip(bounds[:-1], bounds[1:]):
        o = _stable_order(k[s:e])
        np.testing.assert_array_equal(values.numpy()[s:e], v[s:e][o])


def test_segmented_sort_pairs_errors():
    keys, values = sk.zeros(8, dtype=int), sk.zeros(8, dtype=int)
    with pytest.raises(ValueError, match=r"Invalid segment range at index 1"):
        sk.utils.segmented_sort_pairs(keys, values, 4, sk.array([0, 2], dtype=int), sk.array([2, 5], dtype=int))
    with pytest.raises(TypeError, match="count must be an integer"):
        sk.utils.segmented_sort_pairs(keys, values, 1.5, sk.array([0], dtype=int))
    with pytest.raises(RuntimeError, match="Unsupported data type: float64"):
        sk.utils.segmented_sort_pairs(sk.zeros(8, dtype=sk.float64), values, 4, sk.array([0, 4], dtype=int))


# --- array_sum / array_inner --------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [sk.float32, sk.float64, sk.vec3, sk.mat22d])
def test_array_sum_and_inner_against_numpy(device, dtype):
    esh = getattr(dtype, "_shape_", ())
    tol = 1e-5 if sk.types.type_scalar_type(dtype) == sk.float32 else 1e-12
    for shape in ((100_000,), (7, 300, 5)):
        x = RNG.random(shape + esh)
        y = RNG.random(shape + esh)
        a = sk.array(x, dtype=dtype, device=device)
        b = sk.array(y, dtype=dtype, device=device)
        np.testing.assert_allclose(sk.utils.array_sum(a), x.reshape((-1,) + esh).sum(axis=0), rtol=tol)
        np.testing.assert_allclose(sk.utils.array_inner(a, b), np.sum(x * y), rtol=tol)
        for axis in range(-len(shape), len(shape)):
            s = sk.utils.array_sum(a, axis=axis)
            ax = axis % len(shape)
            np.testing.assert_allclose(s.numpy(), x.sum(axis=ax, keepdims=True), rtol=tol)
            d = sk.utils.array_inner(a, b, axis=axis)
            xy = (x * y).reshape(shape + (-1,)).sum(axis=-1)
            np.testing.assert_allclose(d.numpy(), xy.sum(axis=ax, keepdims=True), rtol=tol)
    # value_count, out=, and a non-contiguous input
    x = RNG.random((6, 40) + esh)
    a = sk.array(x, dtype=dtype, device=device)
    out = sk.empty((6, 1), dtype=dtype, device=device)
    assert sk.utils.array_sum(a, out=out, value_count=25, axis=1) is out
    np.testing.assert_allclose(out.numpy(), x[:, :25].sum(axis=1, keepdims=True), rtol=tol)
    np.testing.assert_allclose(sk.utils.array_sum(a[:, ::3], axis=0).numpy(),
                               x[:, ::3].sum(axis=0, keepdims=True), rtol=tol)
    np.testing.assert_allclose(sk.utils.array_sum(a[::2]), x[::2].reshape((-1,) + esh).sum(axis=0), rtol=tol)


def test_array_sum_inner_errors():
    a = sk.zeros(3, dtype=float)
    with pytest.raises(RuntimeError, match="Unsupported data type: int32"):
        sk.utils.array_sum(sk.zeros(3, dtype=int))
    with pytest.raises(RuntimeError, match=r"out array should have shape \(1,\)"):
        sk.utils.array_sum(a, out=sk.zeros(2, dtype=float))
    with pytest.raises(RuntimeError, match="out array should have type float32"):
        sk.utils.array_inner(a, a, out=sk.zeros(1, dtype=sk.float64))
    with pytest.raises(ValueError, match=r"same shape, got \(3,\) and \(4,\)"):
        sk.utils.array_inner(a, sk.zeros(4, dtype=float))
    with pytest.raises(IndexError, match=r"array_sum\(\) axis 1 is out of bounds"):
        sk.utils.array_sum(a, axis=1)


def _fd(f, x, h=1e-6):
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        xp, xm = x.copy(), x.copy()
        xp[i] += h
        xm[i] -= h
        g[i] = (f(xp) - f(xm)) / (2 * h)
    return g


@pytest.mark.parametrize("dtype", [sk.float64, sk.vec2d])
@pytest.mark.parametrize("axis", [None, 0, 1])
def test_array_sum_inner_gradients_against_finite_differences(device, axis, dtype):
    esh = getattr(dtype, "_shape_", ())
    x = RNG.random((4, 5) + esh)
    y = RNG.random((4, 5) + esh)
    w = RNG.random((4, 1) if axis == 1 else (1, 5) if axis == 0 else (1,))
    ws_np = np.broadcast_to(w.reshape(w.shape + (1,) * len(esh)), w.shape + esh).copy()

    def run(xv, yv, grads):
        a = sk.array(xv, dtype=dtype, device=device, requires_grad=grads)
        b = sk.array(yv, dtype=dtype, device=device, requires_grad=grads)
        s = sk.zeros(w.shape, dtype=dtype, device=device, requires_grad=grads)
        d = sk.zeros(w.shape, dtype=sk.float64, device=device, requires_grad=grads)
        tape = sk.Tape()
        with tape:
            sk.utils.array_sum(a, out=s, axis=axis)
            sk.utils.array_inner(a, b, out=d, axis=axis)
        return a, b, s, d, tape

    def loss(xv, yv):
        _, _, s, d, _ = run(xv, yv, False)
        return float(np.sum(ws_np * s.numpy()) + np.sum(w * d.numpy() ** 2))

    a, b, s, d, tape = run(x, y, True)
    tape.backward(grads={s: sk.array(ws_np, dtype=dtype, device=device),
                         d: sk.array(2 * w * d.numpy(), dtype=sk.float64, device=device)})
    np.testing.assert_allclose(a.grad.numpy(), _fd(lambda v: loss(v, y), x), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(b.grad.numpy(), _fd(lambda v: loss(x, v), y), rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("dtype", [sk.float32, sk.float64])
def test_array_sum_inner_long_arrays_exact(device, dtype):
    """Whole-array reductions long enough for several blocks (on the CPU: the vectorized lane path of
    utils/reduce_lanes.py, whose last vector is partial or absent): integer-valued data, so every summation
    order gives numpy's exact result."""
    np_t = np.float32 if dtype == sk.float32 else np.float64
    for n in (8192, 8193, 8192 + 31, 100_003, 1 << 18):
        x = RNG.integers(-50, 50, size=n).astype(np_t)
        y = RNG.integers(-3, 4, size=n).astype(np_t)
        a, b = sk.array(x, dtype=dtype, device=device), sk.array(y, dtype=dtype, device=device)
        assert float(sk.utils.array_sum(a)) == float(x.astype(np.float64).sum())
        assert float(sk.utils.array_inner(a, b)) == float(np.dot(x.astype(np.float64), y))
        for count in (n - 1, 8191, 10_000):
            count = min(count, n)
            out = sk.zeros(1, dtype=dtype, device=device)
            sk.utils.array_sum(a, out=out, value_count=count)
            assert out.numpy()[0] == x[:count].astype(np.float64).sum(), (n, count)
            sk.utils.array_inner(a, b, out=out, count=count)
            assert out.numpy()[0] == np.dot(x[:count].astype(np.float64), y[:count]), (n, count)
    # an axis along which everything lies, 2-D outputs, and an out that is a strided view
    x = RNG.integers(-50, 50, size=(1, 20_000)).astype(np_t)
    a = sk.array(x, dtype=dtype, device=device)
    for axis in (1, -1):
        np.testing.assert_array_equal(sk.utils.array_sum(a, axis=axis).numpy(), x.sum(axis=1, keepdims=True))
    big = sk.zeros((1, 4), dtype=dtype, device=device)
    sk.utils.array_sum(a, out=big[:, ::4], axis=1)
    assert big.numpy()[0, 0] == x.sum() and not big.numpy()[0, 1:].any()
    np.testing.assert_array_equal(sk.utils.array_inner(a, a, axis=1).numpy(), (x * x).sum(axis=1, keepdims=True))


def test_array_sum_lanes_float32_accuracy():
    """float32 sums of a million values keep many partial sums (lanes, blocks, accumulators per thread): far
    closer to the float64 sum than one running float32 total (numpy's cumsum: about 2e-5 off here)."""
    x = RNG.random(1 << 20).astype(np.float32)
    exact = x.astype(np.float64).sum()
    running = float(np.cumsum(x)[-1])
    got = float(sk.utils.array_sum(sk.array(x, dtype=sk.float32)))
    assert abs(got - exact) < abs(running - exact) / 10
    assert abs(got - exact) / exact < 1e-6


@pytest.mark.parametrize("axis", [None, 0, 1])
def test_array_sum_inner_gradients_of_long_arrays(device, axis):
    """Reductions recorded on a Tape over axes long enough for several blocks per output and a partial last
    group of four: d sum(w * s) / dx = w broadcast, d sum(w * inner(a, b)) / da = w * b."""
    shape = (9000, 3) if axis != 1 else (3, 9000)
    x, y = RNG.random(shape), RNG.random(shape)
    oshape = (1,) if axis is None else tuple(1 if d == axis else n for d, n in enumerate(shape))
    w = RNG.random(oshape)
    a = sk.array(x, dtype=sk.float64, device=device, requires_grad=True)
    b = sk.array(y, dtype=sk.float64, device=device, requires_grad=True)
    s = sk.zeros(oshape, dtype=sk.float64, device=device, requires_grad=True)
    d = sk.zeros(oshape, dtype=sk.float64, device=device, requires_grad=True)
    tape = sk.Tape()
    with tape:
        sk.utils.array_sum(a, out=s, axis=axis)
        sk.utils.array_inner(a, b, out=d, axis=axis)
    np.testing.assert_allclose(s.numpy(), x.sum(axis=axis, keepdims=axis is not None).reshape(oshape), rtol=1e-12)
    tape.backward(grads={s: sk.array(w, dtype=sk.float64, device=device),
                         d: sk.array(w, dtype=sk.float64, device=device)})
    wb = np.broadcast_to(w.reshape(w.shape if axis is not None else (1, 1)), shape)
    np.testing.assert_allclose(a.grad.numpy(), wb + wb * y, rtol=1e-12)
    np.testing.assert_allclose(b.grad.numpy(), wb * x, rtol=1e-12)


def test_array_sum_lanes_graph_capture():
    """A captured whole-array CPU sum on the lane path replays on new data, while calls outside the graph
    (which reuse their partial sums' storage) run in between."""
    n = 50_000
    x, total, other = sk.zeros(n, dtype=float), sk.zeros(1, dtype=float), sk.zeros(1, dtype=float)
    sk.utils.array_sum(x, out=total)
    with sk.ScopedCapture("cpu", force_module_load=False) as cap:
        sk.utils.array_sum(x, out=total)
    rng = np.random.default_rng(3)
    for _ in range(2):
        xv = rng.integers(-9, 9, size=n).astype(np.float32)
        x.assign(xv)
        sk.utils.array_sum(sk.array(-xv, dtype=float), out=other)
        sk.capture_launch(cap.graph)
        assert total.numpy()[0] == xv.astype(np.float64).sum() == -other.numpy()[0]


# --- array_cast / runlength_encode --------------------------------------------------------------------------

def test_array_cast(device):
    x = RNG.normal(size=(30, 4)) * 100
    a = sk.array(x, dtype=sk.float64, device=device)
    out = sk.zeros((30, 4), dtype=sk.int32, device=device)
    sk.utils.array_cast(a, out)  # 2D, element by element (C truncation toward zero)
    np.testing.assert_array_equal(out.numpy(), np.trunc(x).astype(np.int32))
    v = sk.array(x[:, :3], dtype=sk.vec3d, device=device)
    vf = sk.zeros(30, dtype=sk.vec3, device=device)
    sk.utils.array_cast(v, vf)  # vector to vector
    np.testing.assert_allclose(vf.numpy(), x[:, :3].astype(np.float32))
    flat = sk.zeros(90, dtype=sk.float32, device=device)
    sk.utils.array_cast(v, flat, count=10)  # different layouts: scalar by scalar, count in vectors
    np.testing.assert_allclose(flat.numpy()[:30], x[:10, :3].ravel().astype(np.float32))
    assert not flat.numpy()[30:].any()
    with pytest.raises(RuntimeError, match=r"Cast count \(5\) exceeds the input size \(3\)"):
        sk.utils.array_cast(a.flatten()[:3], flat, count=5)


def test_runlength_encode(device):
    for n in (1, 1000, 100_000):
        x = np.sort(RNG.integers(-300, 300, size=n)).astype(np.int32)
        u, c = np.unique(x, return_counts=True)
        values = sk.array(x, dtype=int, device=device)
        rv, rl = sk.empty(n, dtype=int, device=device), sk.empty(n, dtype=int, device=device)
        count = sk.utils.runlength_encode(values, rv, rl)
        assert count == len(u)
        np.testing.assert_array_equal(rv.numpy()[:count], u)
        np.testing.assert_array_equal(rl.numpy()[:count], c)
        rc = sk.zeros(1, dtype=int, device=device)
        assert sk.utils.runlength_encode(values, rv, rl, run_count=rc, value_count=n // 2 + 1) is rc
        u2, c2 = np.unique(x[: n // 2 + 1], return_counts=True)
        assert rc.numpy()[0] == len(u2)
        np.testing.assert_array_equal(rl.numpy()[:len(u2)], c2)
    with pytest.raises(RuntimeError, match="Unsupported data type: float32"):
        sk.utils.runlength_encode(sk.zeros(3), sk.zeros(3), sk.zeros(3, dtype=int))


def test_graph_capture_replays(device):
    """Captured (CPU graph or CUDA graph) sorts, scans and reductions replay on new data; results that would
    go back to the host are refused while capturing."""
    n = 5000
    rng = np.random.default_rng(1)
    keys = sk.zeros(2 * n, dtype=sk.int64, device=device)
    vals = sk.zeros(2 * n, dtype=int, device=device)
    seg_keys = sk.zeros(2 * n, dtype=sk.float32, device=device)
    seg_vals = sk.zeros(2 * n, dtype=int, device=device)
    offsets = sk.array([0, n // 3, n], dtype=int, device=device)
    x = sk.zeros(n, dtype=float, device=device)
    scanned, total = sk.zeros(n, dtype=float, device=device), sk.zeros(1, dtype=float, device=device)
    sk.utils.radix_sort_pairs(keys, vals, n)  # compile everything before capturing
    sk.utils.segmented_sort_pairs(seg_keys, seg_vals, n, offsets)
    sk.utils.array_scan(x, scanned)
    sk.utils.array_sum(x, out=total)
    with sk.ScopedCapture(device, force_module_load=False) as cap:
        sk.utils.radix_sort_pairs(keys, vals, n)
        sk.utils.segmented_sort_pairs(seg_keys, seg_vals, n, offsets)
        sk.utils.array_scan(x, scanned)
        sk.utils.array_sum(x, out=total)
        with pytest.raises(NotImplementedError, match="pass an out array"):
            sk.utils.array_sum(x)
    for _ in range(2):
        k = rng.integers(0, 2**40, size=n)
        sk_ = rng.random(n).astype(np.float32)
        xv = rng.random(n)
        keys.assign(np.concatenate([k, k]))
        vals.assign(np.arange(2 * n, dtype=np.int32))
        seg_keys.assign(np.concatenate([sk_, sk_]))
        seg_vals.assign(np.arange(2 * n, dtype=np.int32))
        x.assign(xv)
        sk.capture_launch(cap.graph)
        order = _stable_order(k)
        np.testing.assert_array_equal(keys.numpy()[:n], k[order])
        np.testing.assert_array_equal(vals.numpy()[:n], order)
        for s, e in ((0, n // 3), (n // 3, n)):
            np.testing.assert_array_equal(seg_vals.numpy()[s:e], s + _stable_order(sk_[s:e]))
        np.testing.assert_allclose(scanned.numpy(), np.cumsum(xv), rtol=1e-5)
        np.testing.assert_allclose(total.numpy()[0], xv.sum(), rtol=1e-5)

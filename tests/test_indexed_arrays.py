"""Indexed arrays (a[idx], sk.indexedarray): kernels read, write and add through them into the indexed array,
gradients reach its gradient; Python-side gathers, fills and copies. Against numpy's fancy indexing, and
gradients against central finite differences (float64)."""
import numpy as np
import pytest

import simkit as sk

f64 = sk.float64


@sk.kernel
def through_1d(v: sk.indexedarray(dtype=f64), out: sk.array(dtype=f64)):
    i = sk.tid()
    out[i] = v[i] * v[i]
    v[i] = v[i] + 1.0
    sk.atomic_add(v, i, 0.5)


@sk.kernel
def through_2d(v: sk.indexedarray2d(dtype=sk.vec2d), out: sk.array(dtype=f64, ndim=2)):
    i, j = sk.tid()
    row = v[i]                                   # a 1D indexed array
    out[i, j] = row[j][1] + f64(v.shape[1]) * 100.0
    v[i, j] = sk.vec2d(f64(i), f64(j))


def test_kernels_reach_the_indexed_elements(device):
    base = np.arange(10.0)
    a = sk.array(base, dtype=f64, device=device)
    idx = sk.array([8, 1, 5], dtype=sk.int32, device=device)
    v = a[idx]
    assert isinstance(v, sk.indexedarray) and v.shape == (3,)
    out = sk.zeros(3, dtype=f64, device=device)
    sk.launch(through_1d, 3, inputs=[v, out], device=device)
    np.testing.assert_array_equal(out.numpy(), base[[8, 1, 5]] ** 2)
    want = base.copy()
    want[[8, 1, 5]] += 1.5
    np.testing.assert_array_equal(a.numpy(), want)

    m = np.arange(40.0).reshape(4, 5, 2)
    ma = sk.array(m, dtype=sk.vec2d, device=device)
    rows, cols = [3, 0], [4, 1, 2]
    vi = ma[sk.array(rows, dtype=sk.int32, device=device), sk.array(cols, dtype=sk.int32, device=device)]
    np.testing.assert_array_equal(vi.numpy(), m[np.ix_(rows, cols)])
    out2 = sk.zeros((2, 3), dtype=f64, device=device)
    sk.launch(through_2d, (2, 3), inputs=[vi, out2], device=device)
    np.testing.assert_array_equal(out2.numpy(), m[np.ix_(rows, cols)][..., 1] + 300.0)
    m[np.ix_(rows, cols)] = np.stack(np.meshgrid(np.arange(2.0), np.arange(3.0), indexing="ij"), axis=-1)
    np.testing.assert_array_equal(ma.numpy(), m)


@sk.kernel
def energy(v: sk.indexedarray(dtype=f64), w: sk.array(dtype=f64), out: sk.array(dtype=f64)):
    i = sk.tid()
    sk.atomic_add(out, 0, w[i] * v[i] * v[i] * v[i])


def test_gradients_reach_the_indexed_array():
    rng = np.random.default_rng(1)
    base, w = rng.normal(size=6), rng.normal(size=4)
    idx = [4, 0, 4, 2]  # (index 4 twice: its gradient adds up)

    def loss(x):
        out = sk.zeros(1, dtype=f64)
        sk.launch(energy, 4, inputs=[sk.array(x, dtype=f64)[sk.array(idx, dtype=sk.int32)], sk.array(w), out])
        return out.numpy()[0]

    a = sk.array(base, dtype=f64, requires_grad=True)
    out = sk.zeros(1, dtype=f64, requires_grad=True)
    with sk.Tape() as tape:
        sk.launch(energy, 4, inputs=[a[sk.array(idx, dtype=sk.int32)], sk.array(w), out])
    tape.backward(loss=out)
    fd = np.zeros(6)
    for k in range(6):
        plus, minus = base.copy(), base.copy()
        plus[k] += 1e-6
        minus[k] -= 1e-6
        fd[k] = (loss(plus) - loss(minus)) / 2e-6
    np.testing.assert_allclose(a.grad.numpy(), fd, rtol=1e-6, atol=1e-9)
    assert np.count_nonzero(fd) == 3
    # a gather on a Tape is a recorded kernel: its gradient scatters back (adding up repeated indices)
    a.grad.zero_()
    with sk.Tape() as tape:
        dense = a[sk.array(idx, dtype=sk.int32)].contiguous()
    tape.backward(grads={dense: np.array([1.0, 2.0, 3.0, 4.0])})
    np.testing.assert_array_equal(a.grad.numpy(), [2.0, 0.0, 4.0, 0.0, 4.0, 0.0])


def test_python_side_reads_writes_and_copies(device):
    data = np.arange(24.0, dtype=np.float32).reshape(4, 6)
    a = sk.array(data, device=device)
    idx = sk.array([3, 1], dtype=sk.int32, device=device)
    v = a[idx, 1:4]                                  # slices apply first, as views
    np.testing.assert_array_equal(v.numpy(), data[[3, 1]][:, 1:4])
    dense = sk.zeros((2, 3), device=device)
    sk.copy(dense, v)
    np.testing.assert_array_equal(dense.numpy(), data[[3, 1]][:, 1:4])
    v.fill_(-1.0)
    data[np.ix_([3, 1], [1, 2, 3])] = -1.0
    np.testing.assert_array_equal(a.numpy(), data)
    v.assign(np.full((2, 3), 7.0))
    data[np.ix_([3, 1], [1, 2, 3])] = 7.0
    np.testing.assert_array_equal(a.numpy(), data)
    doubled = 2.0 * v                                # operators and map take indexed arrays
    np.testing.assert_array_equal(doubled.numpy(), np.full((2, 3), 14.0))
    v += 1.0
    data[np.ix_([3, 1], [1, 2, 3])] = 8.0
    np.testing.assert_array_equal(a.numpy(), data)
    np.testing.assert_array_equal(sk.clone(v).numpy(), np.full((2, 3), 8.0))


def test_indexed_array_errors_name_the_problem():
    a = sk.zeros(5)
    with pytest.raises(IndexError, match="index 7 of axis 0 is out of range for an axis of 5"):
        a[sk.array([1, 7], dtype=sk.int32)]
    with pytest.raises(TypeError, match="1D int32 array"):
        sk.indexedarray(a, [sk.array([1.0])])
    with pytest.raises(IndexError, match="combine only with slices"):
        sk.zeros((3, 3))[sk.array([1], dtype=sk.int32), 2]
    with pytest.raises(ValueError, match="not supported for indexed arrays"):
        sk.copy(a[sk.array([1], dtype=sk.int32)], sk.zeros(1), count=1)

    @sk.kernel(module="unique")
    def slices(v: sk.indexedarray(dtype=float)):
        w = v[1:3]
        w[0] = 1.0

    with pytest.raises(sk.CompileError, match="'array_slice' does not take an indexed array"):
        sk.launch(slices, 1, inputs=[a[sk.array([1], dtype=sk.int32)]])

    @sk.kernel(module="unique")
    def wrong(v: sk.indexedarray(dtype=float)):
        v[sk.tid()] = 1.0

    with pytest.raises(TypeError, match="expected indexedarray\\(dtype=float32, ndim=1\\), got indexedarray"):
        sk.launch(wrong, 1, inputs=[sk.zeros((2, 2))[sk.array([1], dtype=sk.int32)]])


def test_debug_mode_checks_indexed_bounds(monkeypatch):
    monkeypatch.setattr(sk.config, "mode", "debug")

    @sk.kernel(module="unique")
    def past_the_end(v: sk.indexedarray(dtype=float)):
        v[sk.tid() + 1] = 1.0

    with pytest.raises(IndexError):
        sk.launch(past_the_end, 2, inputs=[sk.zeros(4)[sk.array([0, 2], dtype=sk.int32)]])
        sk.synchronize()


@sk.kernel
def k_indexed_from_the_end(a: sk.indexedarray(dtype=float), out: sk.array(dtype=float)):
    i = sk.tid()
    out[i] = a[-1 - i]


def test_indexed_arrays_take_negative_indices(device):
    """As arrays do (and Warp's): a[-1] is the last element the indices pick."""
    data = sk.array(np.arange(10.0, dtype=np.float32), device=device)
    a = sk.indexedarray(data, [sk.array([3, 1, 7], dtype=int, device=device)])
    out = sk.zeros(3, device=device)
    sk.launch(k_indexed_from_the_end, 3, inputs=[a, out], device=device)
    np.testing.assert_array_equal(out.numpy(), [7.0, 1.0, 3.0])

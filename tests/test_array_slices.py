"""Slices of arrays inside kernels (``a[1:3]``, ``a[:, 0]``, ``a[::-2, i]``, runtime bounds): strided
views that share memory and gradient, as numpy slices do. Checked against numpy's slicing, analytic
gradients, and the errors for a zero step and an index out of range."""
import numpy as np
import pytest

import simkit as sk


@sk.kernel
def slice_sums(a: sk.array2d(dtype=sk.float64), lo: int, hi: int, step: int, out: sk.array(dtype=sk.float64)):
    rows = a[1:3]                    # 2 x n
    col = a[:, 2]                    # column 2
    back = a[::-2, 1:]               # every other row from the last, columns 1..
    dyn = a[lo:hi:step, 0]           # runtime bounds and step
    neg = a[-1, :-1]                 # negative index and bound
    out[0] = sk.float64(rows.shape[0] * 10 + rows.shape[1]) + sk.float64(rows.ndim) * 0.5
    out[1] = rows[1, 3]
    s = sk.float64(0.0)
    for i in range(col.shape[0]):
        s += col[i]
    out[2] = s
    s = sk.float64(0.0)
    for i in range(back.shape[0]):
        for j in range(back.shape[1]):
            s += back[i, j] * sk.float64(i + 1)
    out[3] = s
    s = sk.float64(0.0)
    for i in range(dyn.shape[0]):
        s += dyn[i] * sk.float64(i + 1)
    out[4] = s
    out[5] = sk.float64(dyn.shape[0])
    s = sk.float64(0.0)
    for i in range(neg.shape[0]):
        s += neg[i]
    out[6] = s
    out[7] = sk.float64(col.shape[1])     # past ndim: 0, as Warp gives


@pytest.mark.parametrize("lo, hi, step", [(0, 5, 1), (4, -7, -2), (1, 100, 3), (3, 1, 1)])
def test_slices_match_numpy(lo, hi, step, device):
    A = np.arange(30.0).reshape(5, 6) ** 1.5
    out = sk.zeros(8, dtype=sk.float64, device=device)
    sk.launch(slice_sums, 1, inputs=[sk.array(A, dtype=sk.float64, device=device), lo, hi, step], outputs=[out],
              device=device)
    back, dyn = A[::-2, 1:], A[lo:hi:step, 0]
    w = np.arange(1, back.shape[0] + 1)[:, None]
    expect = [2 * 10 + 6 + 1.0, A[1:3][1, 3], A[:, 2].sum(), (back * w).sum(),
              (dyn * np.arange(1, len(dyn) + 1)).sum(), len(dyn), A[-1, :-1].sum(), 0.0]
    np.testing.assert_allclose(out.numpy(), expect)


@sk.kernel
def scale_window(x: sk.array2d(dtype=sk.float64), y: sk.array2d(dtype=sk.float64)):
    i, j = sk.tid()
    src = x[1:, ::2]                 # rows 1.., even columns
    dst = y[:, 1:]
    dst[i, j] = src[i, j] * src[i, j] * 3.0


def test_gradients_flow_through_slice_views(device):
    X = np.arange(1.0, 13.0).reshape(3, 4)
    x = sk.array(X, dtype=sk.float64, requires_grad=True, device=device)
    y = sk.zeros((2, 3), dtype=sk.float64, requires_grad=True, device=device)
    with sk.Tape() as tape:
        sk.launch(scale_window, (2, 2), inputs=[x], outputs=[y], device=device)
    Y = np.zeros((2, 3))
    Y[:, 1:] = 3 * X[1:, ::2] ** 2
    np.testing.assert_allclose(y.numpy(), Y)
    seed = np.arange(1.0, 7.0).reshape(2, 3)
    tape.backward(grads={y: seed})
    G = np.zeros_like(X)
    G[1:, ::2] = 6 * X[1:, ::2] * seed[:, 1:]
    np.testing.assert_allclose(x.grad.numpy(), G)


@sk.kernel
def bad_index(a: sk.array2d(dtype=float), i: int, step: int, out: sk.array(dtype=float)):
    r = a[i, ::step]
    out[0] = r[0]


def test_runtime_slice_errors():
    a = sk.zeros((3, 4))
    out = sk.zeros(1)
    with pytest.raises(IndexError, match="index 5 is out of bounds for axis 0 with size 3"):
        sk.launch(bad_index, 1, inputs=[a, 5, 1, out])
    with pytest.raises(RuntimeError, match="slice step cannot be zero \\(axis 1\\)"):
        sk.launch(bad_index, 1, inputs=[a, 0, 0, out])


def test_a_literal_zero_step_is_a_compile_error():
    @sk.kernel
    def k(a: sk.array(dtype=float)):
        b = a[::0]

    with pytest.raises(sk.CompileError, match="slice step cannot be zero"):
        sk.launch(k, 1, inputs=[sk.zeros(3)])

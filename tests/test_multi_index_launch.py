"""Kernels that read tid() as several indices: the CPU's range loops step them as nested loops
(native/cpu_launch.h, sk::tid_loop), whatever share of a launch a thread runs (shares begin and end inside
rows), for launches of as many dimensions as tid() reads and of more (tid() then gives the leading ones)."""
import numpy as np
import pytest

import simkit as sk


@sk.kernel
def mark2(out: sk.array2d(dtype=int)):
    i, j = sk.tid()
    out[i, j] = out[i, j] + i * 1000 + j + 1


@sk.kernel
def mark3(out: sk.array3d(dtype=int)):
    i, j, k = sk.tid()
    out[i, j, k] = out[i, j, k] + i * 10000 + j * 100 + k + 1


@sk.kernel
def mark4(out: sk.array4d(dtype=int)):
    i, j, k, l = sk.tid()
    out[i, j, k, l] = out[i, j, k, l] + i * 1000 + j * 100 + k * 10 + l + 1


@sk.kernel
def count_leading(count: sk.array2d(dtype=int)):
    i, j = sk.tid()  # (of a 3D launch: its first two indices)
    sk.atomic_add(count, i, j, 1)


@sk.kernel
def scale_cols(x: sk.array2d(dtype=sk.float64), w: sk.array(dtype=sk.float64), y: sk.array2d(dtype=sk.float64)):
    i, j = sk.tid()
    y[i, j] = x[i, j] * w[j] * sk.float64(i + 1)


@pytest.fixture(params=[1, 3, 4])
def threads(request, monkeypatch):
    """Each launch split into ``threads`` shares, however small (shares start and end inside rows)."""
    monkeypatch.setattr(sk.config, "cpu_threads", request.param)
    monkeypatch.setattr(sk.config, "cpu_parallel_min", 1)
    return request.param


@pytest.mark.parametrize("shape", [(3, 7), (5, 1), (1, 9), (2, 3, 5), (1, 4, 1), (2, 2, 2, 3), (3, 1, 2, 5)])
def test_every_index_once_with_its_indices(shape, threads):
    kernel = {2: mark2, 3: mark3, 4: mark4}[len(shape)]
    out = sk.zeros(shape, dtype=int, device="cpu")
    sk.launch(kernel, shape, inputs=[out], device="cpu")
    idx = np.indices(shape)
    weights = {2: (1000, 1), 3: (10000, 100, 1), 4: (1000, 100, 10, 1)}[len(shape)]
    want = sum(w * ix for w, ix in zip(weights, idx)) + 1
    np.testing.assert_array_equal(out.numpy(), want)


def test_leading_indices_of_a_launch_of_more_dimensions(threads):
    count = sk.zeros((3, 4), dtype=int, device="cpu")
    sk.launch(count_leading, (3, 4, 5), inputs=[count], device="cpu")
    np.testing.assert_array_equal(count.numpy(), np.full((3, 4), 5))
    out = sk.zeros((2, 3), dtype=int, device="cpu")
    sk.launch(mark2, (2, 3, 1, 1), inputs=[out], device="cpu")
    np.testing.assert_array_equal(out.numpy(), np.indices((2, 3))[0] * 1000 + np.indices((2, 3))[1] + 1)


def test_gradient_of_a_2d_launch(threads):
    rng = np.random.default_rng(1)
    xn, wn = rng.normal(size=(4, 6)), rng.normal(size=6)
    x = sk.array(xn, dtype=sk.float64, requires_grad=True, device="cpu")
    w = sk.array(wn, dtype=sk.float64, requires_grad=True, device="cpu")
    y = sk.zeros((4, 6), dtype=sk.float64, requires_grad=True, device="cpu")
    tape = sk.Tape()
    with tape:
        sk.launch(scale_cols, (4, 6), inputs=[x, w, y], device="cpu")
    g = rng.normal(size=(4, 6))
    tape.backward(grads={y: g})
    rows = np.arange(1, 5)[:, None]
    np.testing.assert_allclose(y.numpy(), xn * wn * rows, rtol=1e-14)
    np.testing.assert_allclose(x.grad.numpy(), g * wn * rows, rtol=1e-14)
    np.testing.assert_allclose(w.grad.numpy(), (g * xn * rows).sum(axis=0), rtol=1e-13)

"""End-to-end: a func, a 1D and a 2D kernel with a dynamic loop, values against numpy."""
import numpy as np

import simkit as sk


@sk.func
def scaled(x: float, s: float):
    return x * s


@sk.kernel
def saxpy(a: float, x: sk.array(dtype=float), y: sk.array(dtype=float)):
    i = sk.tid()
    y[i] = scaled(x[i], a) + y[i]


@sk.kernel
def grid2d(out: sk.array(dtype=float, ndim=2)):
    i, j = sk.tid()
    total = float(0.0)
    for k in range(j):
        total += 1.0
    out[i, j] = float(i) * 10.0 + total


def test_saxpy(device):
    n = 1000
    x = sk.array(np.arange(n, dtype=np.float32), device=device)
    y = sk.ones(n, device=device)
    sk.launch(saxpy, dim=n, inputs=[2.0, x, y], device=device)
    np.testing.assert_allclose(y.numpy(), 2 * np.arange(n) + 1)


def test_grid2d(device):
    g = sk.zeros((3, 4), device=device)
    sk.launch(grid2d, dim=(3, 4), inputs=[g], device=device)
    np.testing.assert_allclose(g.numpy(), np.arange(3)[:, None] * 10.0 + np.arange(4)[None, :])

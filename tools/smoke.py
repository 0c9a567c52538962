"""Smoke check: compile and run a few kernels on the CPU; prints SMOKE OK on success."""
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


def main():
    n = 1000
    x = sk.array(np.arange(n, dtype=np.float32), device="cpu")
    y = sk.ones(n, device="cpu")
    sk.launch(saxpy, dim=n, inputs=[2.0, x, y], device="cpu")
    assert np.allclose(y.numpy(), 2 * np.arange(n) + 1)
    g = sk.zeros((3, 4), device="cpu")
    sk.launch(grid2d, dim=(3, 4), inputs=[g], device="cpu")
    assert np.allclose(g.numpy(), np.arange(3)[:, None] * 10.0 + np.arange(4)[None, :])
    print("SMOKE OK")


if __name__ == "__main__":
    main()

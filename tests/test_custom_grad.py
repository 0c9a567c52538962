"""@func_grad custom adjoints and @func_replay, against analytic gradients."""
import numpy as np

import simkit as sk

f64 = sk.float64


@sk.func
def clipped_sqrt(x: f64):
    return sk.sqrt(sk.max(x, f64(0.0)))


@sk.func_grad(clipped_sqrt)
def adj_clipped_sqrt(x: f64, adj_ret: f64):
    # a deliberately distinctive adjoint: the true derivative, doubled, so the test sees it is used
    if x > 0.0:
        sk.adjoint[x] += 2.0 * adj_ret / (2.0 * sk.sqrt(x))


@sk.func
def two_args(a: f64, b: f64):
    return a * b


@sk.func_grad(two_args)
def adj_two_args(a: f64, b: f64, adj_ret: f64):
    sk.adjoint[a] += b * adj_ret
    sk.adjoint[b] += 10.0 * a * adj_ret


@sk.func
def noisy(x: f64):
    return x * 3.0


@sk.func_replay(noisy)
def noisy_replay(x: f64):
    return x * 3.0


@sk.kernel
def use_custom(x: sk.array(dtype=f64), y: sk.array(dtype=f64), out: sk.array(dtype=f64)):
    i = sk.tid()
    out[i] = clipped_sqrt(x[i]) + two_args(x[i], y[i]) + noisy(x[i])


def test_custom_adjoints_are_used(device):
    xv, yv = np.array([0.25, 4.0, -1.0]), np.array([2.0, 3.0, 5.0])
    x = sk.array(xv, dtype=f64, requires_grad=True, device=device)
    y = sk.array(yv, dtype=f64, requires_grad=True, device=device)
    out = sk.zeros(3, dtype=f64, requires_grad=True, device=device)
    tape = sk.Tape()
    with tape:
        sk.launch(use_custom, 3, inputs=[x, y], outputs=[out], device=device)
    np.testing.assert_allclose(out.numpy(), np.sqrt(np.maximum(xv, 0)) + xv * yv + 3 * xv)
    tape.backward(grads={out: np.ones(3)})
    dsqrt = np.where(xv > 0, 1.0 / np.sqrt(np.abs(xv)), 0.0)  # the custom (doubled) derivative
    np.testing.assert_allclose(x.grad.numpy(), dsqrt + yv + 3.0)
    np.testing.assert_allclose(y.grad.numpy(), 10.0 * xv)

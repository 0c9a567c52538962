"""grad(f)(...) inside kernels (Warp's wp.grad): derivatives of builtins and @funcs in forward code, against
analytic derivatives and central finite differences (float64); second order is refused, not zero."""
import numpy as np
import pytest

import simkit as sk

f64 = sk.float64


@sk.func
def poly(x: f64, y: f64):
    return x * x * y + 3.0 * y


@sk.func
def shifted(x: f64):
    return sk.exp(x) - x


@sk.func_grad(shifted)
def adj_shifted(x: f64, adj_ret: f64):
    sk.adjoint[x] += 10.0 * adj_ret  # (not the derivative: the test sees that grad() uses it)


@sk.func
def slope(x: f64):
    return sk.grad(sk.sin)(x) + x  # (grad inside a @func)


@sk.kernel
def derivatives(x: sk.array(dtype=f64), y: sk.array(dtype=f64), out: sk.array(dtype=f64, ndim=2)):
    i = sk.tid()
    dpx, dpy = sk.grad(poly)(x[i], y[i])
    out[i, 0] = dpx
    out[i, 1] = dpy
    g = sk.grad(sk.atan2)
    da, db = g(y[i], x[i])
    out[i, 2] = da
    out[i, 3] = db
    out[i, 4] = sk.grad(shifted)(x[i])
    out[i, 5] = slope(x[i])


def test_grad_of_builtins_and_funcs(device):
    x, y = np.array([0.5, -1.25, 2.0]), np.array([1.5, 0.25, -3.0])
    out = sk.zeros((3, 6), dtype=f64, device=device)
    sk.launch(derivatives, 3, inputs=[sk.array(x, device=device), sk.array(y, device=device), out], device=device)
    want = np.stack([2 * x * y, x * x + 3.0, x / (x * x + y * y), -y / (x * x + y * y), np.full(3, 10.0),
                     np.cos(x) + x], axis=1)
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-14)
    h = 1e-6  # and poly's against central differences
    fd = (x * x * (y + h) + 3 * (y + h) - (x * x * (y - h) + 3 * (y - h))) / (2 * h)
    np.testing.assert_allclose(out.numpy()[:, 1], fd, rtol=1e-8)


@sk.kernel
def curvature(x: sk.array(dtype=f64), out: sk.array(dtype=f64)):
    i = sk.tid()
    out[i] = sk.grad(sk.sin)(x[i]) * 2.0


@sk.kernel
def constant_slope(x: sk.array(dtype=f64), k: f64, out: sk.array(dtype=f64)):
    i = sk.tid()
    out[i] = x[i] * sk.grad(sk.sin)(k)


def test_second_order_is_refused_and_constants_differentiate():
    x = sk.array([0.5, 1.0], dtype=f64, requires_grad=True)
    out = sk.zeros(2, dtype=f64, requires_grad=True)
    with sk.Tape() as tape:
        sk.launch(curvature, 2, inputs=[x, out])
    with pytest.raises(RuntimeError, match="second derivative"):
        tape.backward(grads={out: np.ones(2)})
        sk.synchronize()
    tape = sk.Tape()
    out2 = sk.zeros(2, dtype=f64, requires_grad=True)
    with tape:
        sk.launch(constant_slope, 2, inputs=[x, 0.25, out2])
    tape.backward(grads={out2: np.ones(2)})
    np.testing.assert_allclose(x.grad.numpy(), np.full(2, np.cos(0.25)), rtol=1e-14)


def test_grad_errors_name_the_problem():
    @sk.kernel(module="unique")
    def of_vector(v: sk.array(dtype=sk.vec3), out: sk.array(dtype=float)):
        out[0] = sk.grad(sk.normalize)(v[0])[0]

    with pytest.raises(sk.CompileError, match="result must be one floating-point scalar, got vec3"):
        sk.launch(of_vector, 1, inputs=[sk.zeros(1, dtype=sk.vec3), sk.zeros(1)])
    with pytest.raises(RuntimeError, match="only be called inside"):
        sk.grad(sk.sin)(1.0)


@sk.func
def split_sum(x: f64):
    return x * x, 3.0 * x  # (two results: a struct of them in C++)


@sk.kernel
def tuple_and_grad(x: sk.array(dtype=f64), out: sk.array(dtype=f64, ndim=2)):
    i = sk.tid()
    a, b = split_sum(x[i])
    out[i, 0] = a + b
    out[i, 1] = sk.grad(poly)(x[i], 2.0)[0]


def test_a_module_with_grad_and_a_func_of_several_results(device):
    # grad() declares every func's adjoint before the funcs: the results' struct of a func returning two values
    # must come first (it was defined with the func, after the declaration that names it: no compile)
    x = np.array([0.5, -1.5, 2.0])
    out = sk.zeros((3, 2), dtype=f64, device=device)
    sk.launch(tuple_and_grad, 3, inputs=[sk.array(x, device=device), out], device=device)
    np.testing.assert_allclose(out.numpy(), np.stack([x * x + 3 * x, 4 * x], axis=1), rtol=1e-14)

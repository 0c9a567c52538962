"""Function-valued parameters of @funcs (Warp's ``g: wp.Function``): a @func or a builtin passed as an
argument is a compile-time constant, and the @func is specialised per function value. Calls with @funcs and
builtins, keywords, defaults, generic parameters, local aliases, passing on, Python-scope calls, gradients
(against finite differences) and the errors of misuse."""
from typing import Any

import numpy as np
import pytest

import simkit as sk
from simkit.kernels import ir
from simkit.kernels.frontend.builder import Py


@sk.func
def double_it(x: float):
    return x * 2.0


@sk.func
def triple_it(x: float):
    return x * 3.0


@sk.func
def cube_it(x: float):
    return x * x * x


@sk.func
def apply(g: sk.Function, x: float):
    return g(x)


@sk.func
def apply_any(g: sk.Function, x: Any):
    return g(x)


@sk.func
def apply_default(g: sk.Function = double_it, x: float = 3.0):
    return g(x)


@sk.func
def apply_builtin_default(g: sk.Function = sk.sin, x: float = 0.5):
    return g(x)


@sk.func
def apply_twice(g: sk.Function, x: float):
    return apply(g, apply(g, x))  # passes its Function parameter on


@sk.func
def apply_alias(g: sk.Function, x: float):
    f = g
    return f(x) + 1.0


@sk.func
def apply2(g: sk.Function, x: float, y: float):
    return g(x, y)


@sk.func
def compose(f: sk.Function, g: sk.Function, x: float):
    return f(g(x))


@sk.kernel
def calls(out: sk.array(dtype=float)):
    out[0] = apply(double_it, 3.0)
    out[1] = apply(triple_it, 4.0)
    out[2] = apply(g=triple_it, x=8.0)
    out[3] = apply_default()
    out[4] = apply_default(triple_it)
    out[5] = apply_any(double_it, 11.0)
    out[6] = apply(sk.sin, 0.5)
    out[7] = apply_builtin_default()
    out[8] = apply_twice(triple_it, 2.0)
    out[9] = apply_alias(double_it, 2.0)
    out[10] = apply2(sk.min, 7.0, 4.0)
    out[11] = compose(sk.sqrt, double_it, 8.0)
    h = cube_it
    out[12] = apply(h, 2.0)


def test_function_arguments(device):
    out = sk.zeros(13, dtype=float, device=device)
    sk.launch(calls, 1, inputs=[out], device=device)
    want = [6, 12, 24, 6, 9, 22, np.sin(0.5), np.sin(0.5), 18, 5, 4, 4, 8]
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-6)


@sk.func
def apply_vec(g: sk.Function, v: Any):
    return g(v)


@sk.func
def halve(v: sk.vec3):
    return v * 0.5


@sk.kernel
def generic_calls(out: sk.array(dtype=sk.vec3), lens: sk.array(dtype=float)):
    out[0] = apply_vec(halve, sk.vec3(2.0, 4.0, 6.0))
    lens[0] = apply_vec(sk.length, sk.vec3(3.0, 4.0, 0.0))
    lens[1] = apply_any(sk.abs, -2.5)


def test_generic_parameters_beside_a_function(device):
    out = sk.zeros(1, dtype=sk.vec3, device=device)
    lens = sk.zeros(2, dtype=float, device=device)
    sk.launch(generic_calls, 1, inputs=[out, lens], device=device)
    np.testing.assert_allclose(out.numpy()[0], [1, 2, 3])
    np.testing.assert_allclose(lens.numpy(), [5.0, 2.5])


@sk.kernel
def through_functions(x: sk.array(dtype=float), y: sk.array(dtype=float)):
    i = sk.tid()
    y[i] = apply(cube_it, x[i]) + apply_twice(sk.sin, x[i]) + compose(sk.exp, double_it, x[i])


@sk.kernel
def grad_in_kernel(x: sk.array(dtype=float), y: sk.array(dtype=float)):
    i = sk.tid()
    y[i] = sk.grad(apply)(cube_it, x[i]) + sk.grad(apply)(sk.cos, x[i])


def f_np(x):
    return x ** 3 + np.sin(np.sin(x)) + np.exp(2 * x)


def test_gradients_through_function_arguments(device):
    xs = np.array([0.3, -0.8, 1.2], dtype=np.float32)
    x = sk.array(xs, dtype=float, requires_grad=True, device=device)
    y = sk.zeros(3, dtype=float, requires_grad=True, device=device)
    tape = sk.Tape()
    with tape:
        sk.launch(through_functions, 3, inputs=[x, y], device=device)
    np.testing.assert_allclose(y.numpy(), f_np(xs.astype(np.float64)), rtol=1e-5)
    tape.backward(grads={y: sk.array(np.ones(3, dtype=np.float32), dtype=float, device=device)})
    x64, h = xs.astype(np.float64), 1e-6
    fd = (f_np(x64 + h) - f_np(x64 - h)) / (2 * h)
    np.testing.assert_allclose(x.grad.numpy(), fd, rtol=1e-4)
    g = sk.zeros(3, dtype=float, device=device)
    sk.launch(grad_in_kernel, 3, inputs=[x, g], device=device)
    np.testing.assert_allclose(g.numpy(), 3 * x64 ** 2 - np.sin(x64), rtol=1e-5)


def test_one_specialisation_per_function_value():
    x = ir.Var("x", sk.float32)
    a, b = apply.specialize([Py(double_it), x], None)[0], apply.specialize([Py(triple_it), x], None)[0]
    assert a is not b and a.cname != b.cname
    assert apply.specialize([Py(double_it), x], None)[0] is a
    assert [p.name for p in a.ir.params] == ["x"]  # the function is no runtime parameter


def test_python_scope_calls():
    assert apply(double_it, 3.0) == pytest.approx(6.0)
    assert apply(g=triple_it, x=8.0) == pytest.approx(24.0)
    assert apply_default() == pytest.approx(6.0)
    assert apply(sk.sin, 0.5) == pytest.approx(np.sin(0.5), rel=1e-6)
    assert apply_twice(double_it, 1.5) == pytest.approx(6.0)
    with pytest.raises(TypeError, match="takes simkit functions.*lambda"):
        apply(lambda x: x, 3.0)


@sk.kernel
def given_a_number(out: sk.array(dtype=float)):
    out[0] = apply(1.0, 2.0)


@sk.kernel
def given_printf(out: sk.array(dtype=float)):
    out[0] = apply(sk.printf, 2.0)


@sk.kernel
def given_to_a_value_param(out: sk.array(dtype=float)):
    out[0] = double_it(triple_it)


def test_errors():
    out = sk.zeros(1, dtype=float)
    with pytest.raises(sk.CompileError, match=r"test_function_params.py:\d+.*parameter 'g' is a Function: "
                                              r"it takes a @func or a simkit builtin, got float32"):
        sk.launch(given_a_number, 1, inputs=[out])
    with pytest.raises(sk.CompileError, match="unsupported built-in function 'printf'"):
        sk.launch(given_printf, 1, inputs=[out])
    with pytest.raises(sk.CompileError, match="argument of 'double_it' is not a value: Function triple_it"):
        sk.launch(given_to_a_value_param, 1, inputs=[out])
    with pytest.raises(sk.CompileError, match="kernel parameters cannot be Functions"):
        @sk.kernel
        def takes_function(g: sk.Function, out: sk.array(dtype=float)):
            out[0] = g(1.0)


@sk.func
def custom(g: sk.Function, x: float):
    return g(x)


@sk.func_grad(custom)
def adj_custom(g: sk.Function, x: float, adj_ret: float):
    sk.adjoint[x] += adj_ret


@sk.kernel
def uses_custom(out: sk.array(dtype=float)):
    out[0] = custom(double_it, 2.0)


def test_custom_gradient_with_function_parameter_is_refused():
    with pytest.raises(sk.CompileError, match="Function parameters.*custom gradients"):
        sk.launch(uses_custom, 1, inputs=[sk.zeros(1, dtype=float)])

"""Kernel-language rules checked by the compiler: kernels return nothing (no value, no return annotation but
``None``), unknown names, compile-time objects rebound in dynamic loops, ``transformation(p=, q=)``."""
import types

import numpy as np
import pytest

import simkit as sk
from simkit.kernels.errors import CompileError, CompileTypeError


def test_kernels_may_say_they_return_none():
    @sk.kernel(module="unique")
    def a(x: float, out: sk.array(dtype=float)) -> None:
        out[0] = x
        return

    @sk.kernel(module="unique")
    def b(x: float, out: sk.array(dtype=float)) -> types.NoneType:
        out[1] = x

    out = sk.zeros(2, dtype=float)
    sk.launch(a, 1, inputs=[1.5, out])
    sk.launch(b, 1, inputs=[2.5, out])
    np.testing.assert_array_equal(out.numpy(), [1.5, 2.5])


def _returning_kernels():
    def ret_none(x: float):
        return None

    def ret_value(x: float):
        return x

    def annotated(x: float) -> float:
        return

    def annotated_generic(x: sk.Any) -> sk.vec3:
        pass

    return [ret_none, ret_value, annotated, annotated_generic]


@pytest.mark.parametrize("fn", _returning_kernels(), ids=lambda f: f.__name__)
def test_kernels_cannot_return_values(fn):
    k = sk.kernel(fn, module="unique")
    with pytest.raises(CompileTypeError, match=r"kernels cannot return a value.*`-> None`") as e:
        sk.launch(k, 1, inputs=[3.0])
    assert "test_codegen_semantics.py" in str(e.value)


def test_unknown_name_is_a_compile_error_and_a_key_error():
    @sk.kernel(module="unique")
    def k(out: sk.array(dtype=float)):
        out[0] = not_defined_anywhere  # noqa: F821

    with pytest.raises(KeyError) as e:
        sk.launch(k, 1, inputs=[sk.zeros(1, dtype=float)])
    assert isinstance(e.value, CompileError)
    assert "unknown name 'not_defined_anywhere'" in str(e.value) and "\n" in str(e.value)


@sk.func
def double(a: float):
    return a * 2.0


@sk.func
def halve(a: float):
    return a * 0.5


def test_function_locals_follow_python_order():
    @sk.kernel(module="unique")
    def k(n: int, out: sk.array(dtype=float)):
        f = double
        out[0] = f(3.0)
        f = halve
        out[1] = f(3.0)
        for i in range(n):
            g = double  # bound anew in each iteration: fine
            out[2 + i] = g(float(i))

    out = sk.zeros(4, dtype=float)
    sk.launch(k, 1, inputs=[2, out])
    np.testing.assert_array_equal(out.numpy(), [6.0, 1.5, 0.0, 2.0])


def test_function_local_rebound_in_a_dynamic_loop_is_an_error():
    @sk.kernel(module="unique")
    def k(n: int, out: sk.array(dtype=float)):
        f = double
        for i in range(n):
            out[i] = f(1.0)
            f = halve

    with pytest.raises(CompileError, match=r"'f' is .*double.* rebound inside a dynamic loop"):
        sk.launch(k, 1, inputs=[2, sk.zeros(2, dtype=float)])


def test_function_local_rebound_in_an_unrolled_loop():
    @sk.kernel(module="unique")
    def k(out: sk.array(dtype=float)):
        f = double
        for i in range(2):
            out[i] = f(1.0)
            f = halve
        out[2] = f(1.0)

    out = sk.zeros(3, dtype=float)
    sk.launch(k, 1, inputs=[out])
    np.testing.assert_array_equal(out.numpy(), [2.0, 0.5, 0.5])


def test_transformation_keywords():
    @sk.kernel(module="unique")
    def k(v: sk.array(dtype=sk.vec3), q: sk.array(dtype=sk.quat), out: sk.array(dtype=sk.transform)):
        out[0] = sk.transformation(p=v[0], q=q[0])
        out[1] = sk.transformation(v[0], q=q[0], dtype=float)
        out[2] = sk.transformation(p=v[0], dtype=float)

    out = sk.zeros(3, dtype=sk.transform)
    sk.launch(k, 1, inputs=[sk.array([sk.vec3(1.0, 2.0, 3.0)], dtype=sk.vec3),
                            sk.array([sk.quat(0.0, 0.0, 0.6, 0.8)], dtype=sk.quat), out])
    want = [1.0, 2.0, 3.0, 0.0, 0.0, 0.6, 0.8]
    np.testing.assert_allclose(out.numpy(), [want, want, [1.0, 2.0, 3.0, 0.0, 0.0, 0.0, 1.0]], rtol=1e-7)


def test_module_qualified_python_casts_in_kernels():
    """``wp.float(x)`` / ``wp.int(x)`` / ``wp.bool(x)`` in a kernel are Warp's casts (float32, int32, bool),
    though ``simkit.float`` does not exist in Python."""
    @sk.kernel(module="unique")
    def casts(x: sk.array(dtype=sk.float64), f: sk.array(dtype=float), i: sk.array(dtype=int),
              b: sk.array(dtype=sk.bool)):
        t = sk.tid()
        f[t] = sk.float(x[t]) * 2.0
        i[t] = sk.int(x[t])
        b[t] = sk.bool(sk.int(x[t]))

    x = np.array([1.25, -2.75, 0.5])
    f, i, b = sk.zeros(3, dtype=float), sk.zeros(3, dtype=int), sk.zeros(3, dtype=sk.bool)
    sk.launch(casts, 3, inputs=[sk.array(x, dtype=sk.float64), f, i, b])
    np.testing.assert_array_equal(f.numpy(), (x * 2).astype(np.float32))
    np.testing.assert_array_equal(i.numpy(), x.astype(np.int32))  # (truncation, as a C cast)
    np.testing.assert_array_equal(b.numpy(), x.astype(np.int32) != 0)
    assert not hasattr(sk, "float")

"""``@func(inline=True / False)`` (Warp's hint): the function and its adjoint are declared forced inline or
never inline in the generated C++ (CPU and CUDA), and compute the same values and gradients either way."""
import numpy as np
import pytest

import simkit as sk
from simkit.kernels import codegen
from simkit.kernels.module import collect


@sk.func(inline=False)
def twice_sin(x: float):
    return sk.sin(x) * 2.0


@sk.func(inline=True)
def plus_x(x: float):
    return twice_sin(x) + x


@sk.func
def plain(x: float):
    return x


@sk.kernel
def apply(a: sk.array(dtype=float), b: sk.array(dtype=float)):
    i = sk.tid()
    b[i] = plus_x(a[i]) + plain(0.0)


def test_values_and_gradients(device):
    x = np.linspace(-1.0, 1.0, 33).astype(np.float32)
    a = sk.array(x, device=device, requires_grad=True)
    b = sk.zeros(33, device=device, requires_grad=True)
    tape = sk.Tape()
    with tape:
        sk.launch(apply, 33, inputs=[a, b], device=device)
    tape.backward(grads={b: sk.ones(33, device=device)})
    np.testing.assert_allclose(b.numpy(), 2 * np.sin(x) + x, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(a.grad.numpy(), 2 * np.cos(x) + 1, rtol=1e-6, atol=1e-6)


def test_the_declarations_carry_the_hint():
    spec = apply.specs[None]
    spec.build_ir({"mode": "release"})
    funcs, structs = collect([spec])
    by_name = {f.name.rsplit("_", 1)[0]: f for f in funcs}
    assert codegen.func_qualifier(by_name["twice_sin"]) == "SK_NOINLINE_FN"
    assert codegen.func_qualifier(by_name["plus_x"]) == "SK_FORCEINLINE_FN"
    assert codegen.func_qualifier(by_name["plain"]) == "SK_INLINE"
    src = codegen.gen_module("m", [spec.ir], funcs, structs, {}, "0", adjoint=True)
    assert "static SK_NOINLINE_FN sk::float32 twice_sin_" in src
    assert "static SK_FORCEINLINE_FN sk::float32 plus_x_" in src
    assert "static SK_NOINLINE_FN void adj_twice_sin_" in src and "static SK_FORCEINLINE_FN void adj_plus_x_" in src


@pytest.mark.parametrize("value", [1, 1.5, "yes"])
def test_a_hint_must_be_a_bool(value):
    with pytest.raises(TypeError, match="inline must be a bool or None"):
        @sk.func(inline=value)
        def f(x: float):
            return x

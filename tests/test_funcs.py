"""User @funcs: overloads, nesting, tuple returns, generic ``Any`` parameters, closures,
``constant`` and ``static``. Values against Python/numpy."""
import typing

import numpy as np

import simkit as sk
from simkit.kernels.types import Any

SCALE = sk.constant(3.0)
OFFSET = sk.constant(7)
TABLE = (1.0, 4.0, 9.0)


# ---------------------------------------------------------------------------- overloads


@sk.func
def describe(x: float):
    return x * 2.0


@sk.func
def describe(x: int):  # noqa: F811 - an overload
    return x * 3


@sk.func
def describe(x: sk.vec3):  # noqa: F811
    return sk.length(x)


@sk.func
def describe(x: float, y: float):  # noqa: F811
    return x - y


@sk.kernel
def k_overloads(out_f: sk.array(dtype=float), out_i: sk.array(dtype=int)):
    out_f[0] = describe(1.5)
    out_i[0] = describe(5)
    out_f[1] = describe(sk.vec3(3.0, 4.0, 0.0))
    out_f[2] = describe(10.0, 4.0)
    out_f[3] = describe(float(2))


def test_overloads(device):
    f = sk.zeros(4, device=device)
    i = sk.zeros(1, dtype=int, device=device)
    sk.launch(k_overloads, dim=1, inputs=[f, i], device=device)
    np.testing.assert_allclose(f.numpy(), [3.0, 5.0, 6.0, 4.0])
    assert i.numpy()[0] == 15


# ---------------------------------------------------------------------------- nesting, tuples


@sk.func
def sq(x: float):
    return x * x


@sk.func
def sum_sq(x: float, y: float):
    return sq(x) + sq(y)


@sk.func
def hyp(x: float, y: float):
    return sk.sqrt(sum_sq(x, y))


@sk.func
def divmod_i(a: int, b: int):
    return a // b, a % b


@sk.func
def min_max_sum(a: float, b: float, c: float):
    lo = sk.min(a, sk.min(b, c))
    hi = sk.max(a, sk.max(b, c))
    return lo, hi, a + b + c


@sk.func
def make_vec(x: float):
    return sk.vec3(x, x + 1.0, x + 2.0), x * 10.0


@sk.func
def no_return(a: sk.array(dtype=float), i: int, v: float):
    a[i] = v


@sk.func
def accumulate(a: sk.array(dtype=float), n: int):
    s = float(0.0)
    for k in range(n):
        s += a[k]
    return s


@sk.kernel
def k_nest(a: sk.array(dtype=float), out: sk.array(dtype=float), outi: sk.array(dtype=int)):
    i = sk.tid()
    out[0] = hyp(3.0, 4.0)
    q, r = divmod_i(17, 5)
    outi[0] = q
    outi[1] = r
    lo, hi, s = min_max_sum(2.0, -1.0, 5.0)
    out[1] = lo
    out[2] = hi
    out[3] = s
    v, w = make_vec(1.0)
    out[4] = v[2]
    out[5] = w
    no_return(out, 6, 42.0)
    out[7] = accumulate(a, 4)
    t = divmod_i(-7, 2)  # a tuple result kept whole, then indexed
    outi[2] = t[0]
    outi[3] = t[1]


def test_nested_and_tuple_returns(device):
    a = sk.array(np.array([1, 2, 3, 4, 5], dtype=np.float32), device=device)
    out = sk.zeros(8, device=device)
    outi = sk.zeros(4, dtype=int, device=device)
    sk.launch(k_nest, dim=1, inputs=[a, out, outi], device=device)
    np.testing.assert_allclose(out.numpy(), [5.0, -1.0, 5.0, 6.0, 3.0, 10.0, 42.0, 10.0])
    # Warp semantics: // floors, % takes the dividend's sign
    np.testing.assert_array_equal(outi.numpy(), [3, 2, -4, -1])


# ---------------------------------------------------------------------------- generic Any arguments


@sk.func
def twice(x: Any):
    return x + x


@sk.func
def untyped_square(x):  # no annotation: generic
    return x * x


@sk.func
def first_elem(a: sk.array(dtype=Any)):
    return a[0]


@sk.kernel
def k_generic(af: sk.array(dtype=float), ad: sk.array(dtype=sk.float64), ai: sk.array(dtype=int),
              av: sk.array(dtype=sk.vec3), outf: sk.array(dtype=float), outd: sk.array(dtype=sk.float64),
              outi: sk.array(dtype=int), outv: sk.array(dtype=sk.vec3)):
    outf[0] = twice(af[0])
    outd[0] = twice(ad[0])
    outi[0] = twice(ai[0])
    outv[0] = twice(av[0])
    outf[1] = untyped_square(af[0])
    outd[1] = untyped_square(ad[0])
    outi[1] = untyped_square(ai[0])
    outf[2] = first_elem(af)
    outd[2] = first_elem(ad)
    outi[2] = first_elem(ai)
    outv[1] = first_elem(av)
    outi[3] = twice(7)  # a literal specialises as int32


def test_generic_any(device):
    af = sk.array(np.array([1.25], dtype=np.float32), device=device)
    ad = sk.array(np.array([1.0 + 1e-12], dtype=np.float64), device=device)
    ai = sk.array(np.array([-6], dtype=np.int32), device=device)
    av = sk.array(np.array([[1, 2, 3]], dtype=np.float32), dtype=sk.vec3, device=device)
    outf, outd = sk.zeros(3, device=device), sk.zeros(3, dtype=sk.float64, device=device)
    outi, outv = sk.zeros(4, dtype=int, device=device), sk.zeros(2, dtype=sk.vec3, device=device)
    sk.launch(k_generic, dim=1, inputs=[af, ad, ai, av, outf, outd, outi, outv], device=device)
    np.testing.assert_allclose(outf.numpy(), [2.5, 1.5625, 1.25])
    # float64 precision is kept: the func was specialised, not routed through float32
    d = outd.numpy()
    assert d[0] == 2.0 + 2e-12 and d[1] == (1.0 + 1e-12) ** 2 and d[2] == 1.0 + 1e-12
    np.testing.assert_array_equal(outi.numpy(), [-12, 36, -6, 14])
    np.testing.assert_allclose(outv.numpy(), [[2, 4, 6], [1, 2, 3]])


# ---------------------------------------------------------------------------- constants and static


@sk.kernel
def k_constants(out: sk.array(dtype=float), outi: sk.array(dtype=int)):
    i = sk.tid()
    out[i] = float(i) * SCALE
    outi[i] = i + OFFSET
    if i == 0:
        out[0] = sk.static(TABLE[2] + 1.0)
        s = float(0.0)
        for k in range(sk.static(len(TABLE))):
            s += sk.static(TABLE)[k]
        outi[0] = int(s)


def test_constant_and_static(device):
    out = sk.zeros(5, device=device)
    outi = sk.zeros(5, dtype=int, device=device)
    sk.launch(k_constants, dim=5, inputs=[out, outi], device=device)
    np.testing.assert_allclose(out.numpy(), [10.0, 3.0, 6.0, 9.0, 12.0])
    np.testing.assert_array_equal(outi.numpy(), [14, 8, 9, 10, 11])


# ---------------------------------------------------------------------------- closures


def make_scaler(factor: float, bias: int):
    @sk.func
    def scale(x: float):
        return x * factor

    @sk.kernel
    def k(a: sk.array(dtype=float), out: sk.array(dtype=float)):
        i = sk.tid()
        out[i] = scale(a[i]) + float(bias)

    return k


_scaler_2 = make_scaler(2.0, 1)
_scaler_5 = make_scaler(5.0, -1)


def test_closures_capture_locals(device):
    a = sk.array(np.arange(4, dtype=np.float32), device=device)
    o2, o5 = sk.zeros(4, device=device), sk.zeros(4, device=device)
    sk.launch(_scaler_2, dim=4, inputs=[a, o2], device=device)
    sk.launch(_scaler_5, dim=4, inputs=[a, o5], device=device)
    np.testing.assert_allclose(o2.numpy(), np.arange(4) * 2.0 + 1)
    np.testing.assert_allclose(o5.numpy(), np.arange(4) * 5.0 - 1)


def test_kernel_defined_in_test(device):
    n = 3

    @sk.func
    def add_n(x: int):
        return x + n

    @sk.kernel
    def k(out: sk.array(dtype=int)):
        i = sk.tid()
        out[i] = add_n(i) * sk.static(n * 2)

    out = sk.zeros(4, dtype=int, device=device)
    sk.launch(k, dim=4, inputs=[out], device=device)
    np.testing.assert_array_equal(out.numpy(), (np.arange(4) + 3) * 6)


# ---------------------------------------------------------------------------- funcs mutating arrays, recursion-free chains


@sk.func
def bump(a: sk.array(dtype=int), i: int):
    sk.atomic_add(a, i, 1)
    return a[i]


@sk.func
def chain3(x: int):
    return bump_helper(bump_helper(bump_helper(x)))


@sk.func
def bump_helper(x: int):
    return x * 2 + 1


@sk.kernel
def k_side_effects(a: sk.array(dtype=int), out: sk.array(dtype=int)):
    i = sk.tid()
    bump(a, i % 4)
    out[i] = chain3(i)


def test_func_side_effects_and_late_definition(device):
    a = sk.zeros(4, dtype=int, device=device)
    out = sk.zeros(40, dtype=int, device=device)
    sk.launch(k_side_effects, dim=40, inputs=[a, out], device=device)
    np.testing.assert_array_equal(a.numpy(), [10, 10, 10, 10])
    np.testing.assert_array_equal(out.numpy(), [((i * 2 + 1) * 2 + 1) * 2 + 1 for i in range(40)])


@sk.func
def weak_literal_arg(x: float, n: int):
    return x * float(n)


@sk.kernel
def k_literal_args(out: sk.array(dtype=float)):
    out[0] = weak_literal_arg(2, 3)  # int literal passed for a float parameter
    out[1] = weak_literal_arg(0.5, 4)


def test_literal_arguments_convert(device):
    out = sk.zeros(2, device=device)
    sk.launch(k_literal_args, dim=1, inputs=[out], device=device)
    np.testing.assert_allclose(out.numpy(), [6.0, 2.0])


@sk.func
def with_default(x: float, y: float = 2.0, n: int = 3):
    return x * y + float(n)


@sk.kernel
def k_defaults_kwargs(out: sk.array(dtype=float)):
    out[0] = with_default(1.0)
    out[1] = with_default(1.0, 4.0)
    out[2] = with_default(1.0, n=10)
    out[3] = with_default(y=0.5, x=6.0)
    out[4] = with_default(2.0, 3.0, 4)


def test_defaults_and_keyword_arguments(device):
    out = sk.zeros(5, device=device)
    sk.launch(k_defaults_kwargs, dim=1, inputs=[out], device=device)
    np.testing.assert_allclose(out.numpy(), [5.0, 7.0, 12.0, 6.0, 10.0])


@sk.kernel
def k_generic_kernel(a: sk.array(dtype=Any), out: sk.array(dtype=Any), s: Any):
    i = sk.tid()
    out[i] = twice(a[i]) * s


def test_generic_kernel_specialised_per_launch(device):
    for dt, npdt, s in ((sk.float32, np.float32, np.float32(1.5)), (sk.int32, np.int32, 3),
                        (sk.float64, np.float64, np.float64(0.25)), (sk.int64, np.int64, np.int64(-2))):
        a = sk.array(np.arange(5, dtype=npdt), device=device)
        out = sk.zeros(5, dtype=dt, device=device)
        sk.launch(k_generic_kernel, dim=5, inputs=[a, out, s], device=device)
        assert out.numpy().dtype == npdt
        np.testing.assert_array_equal(out.numpy(), np.arange(5, dtype=npdt) * 2 * s)


@sk.func
def plus_one_generic(x: Any):
    return x + type(x)(1)


@sk.kernel
def k_type_of(a: sk.array(dtype=Any), out: sk.array(dtype=Any)):
    i = sk.tid()
    out[i] = plus_one_generic(a[i]) * a.dtype(2)


@sk.kernel
def k_type_of_vec(a: sk.array(dtype=sk.vec3), out: sk.array(dtype=sk.vec3)):
    i = sk.tid()
    v = a[i]
    z = type(v)()  # zero vector of v's type
    out[i] = plus_one_generic(v) + z


def test_type_of_value_and_array_dtype(device):
    for dt, npt in ((sk.float32, np.float32), (sk.int32, np.int32), (sk.float64, np.float64), (sk.uint8, np.uint8)):
        a = sk.array(np.arange(4, dtype=npt), device=device)
        out = sk.zeros(4, dtype=dt, device=device)
        sk.launch(k_type_of, dim=4, inputs=[a, out], device=device)
        np.testing.assert_array_equal(out.numpy(), (np.arange(4, dtype=npt) + 1) * 2)
    av = sk.array(np.arange(6, dtype=np.float32), dtype=sk.vec3, device=device)
    ov = sk.zeros(2, dtype=sk.vec3, device=device)
    sk.launch(k_type_of_vec, dim=2, inputs=[av, ov], device=device)
    np.testing.assert_array_equal(ov.numpy(), np.arange(6).reshape(2, 3) + 1)


WEIGHTS = [0.5, 0.25, 2.0]
PAIRS = ((1, 10), (2, 20), (3, 30))


@sk.kernel
def k_static_loops(out: sk.array(dtype=float)):
    s = float(0.0)
    for w in sk.static(WEIGHTS):  # unrolled over Python values
        s += w
    out[0] = s
    t = int(0)
    for a, b in sk.static(PAIRS):
        t += a * b
    out[1] = float(t)
    u = int(0)
    for k in sk.static(range(40)):  # longer than max_unroll: static() still unrolls
        if k == 7:
            break
        u += k
    out[2] = float(u)
    v = sk.static(sk.vec3(1.0, 2.0, 3.0))
    for k in sk.static(range(3)):
        v[k] = v[k] * float(k)
    out[3] = v[0] + v[1] + v[2]


def test_static_for_loops(device):
    out = sk.zeros(4, device=device)
    sk.launch(k_static_loops, dim=1, inputs=[out], device=device)
    np.testing.assert_allclose(out.numpy(), [2.75, 140.0, 21.0, 8.0])


@sk.func
def positive_only(x: float):
    if x > 0.0:
        return x * 2.0
    # falls off the end: the zero value of the return type, as in Warp


@sk.kernel
def k_fall_off(a: sk.array(dtype=float), out: sk.array(dtype=float)):
    i = sk.tid()
    out[i] = positive_only(a[i]) + 1.0


def test_func_falling_off_the_end_returns_zero(device):
    a = sk.array(np.array([1.5, -1.0, 0.0], np.float32), device=device)
    out = sk.zeros(3, device=device)
    sk.launch(k_fall_off, dim=3, inputs=[a, out], device=device)
    np.testing.assert_array_equal(out.numpy(), [4.0, 1.0, 1.0])


@sk.kernel
def k_typing_any_arrays(a: sk.array(dtype=typing.Any), out: sk.array(dtype=typing.Any)):
    i = sk.tid()
    out[i] = a[i] + a[i]


def test_typing_any_array_annotations(device):
    # Warp code writes `from typing import Any`; array(dtype=typing.Any) is generic
    for npt in (np.float32, np.int64, np.float64):
        a = sk.array(np.arange(3, dtype=npt), device=device)
        out = sk.zeros_like(a)
        sk.launch(k_typing_any_arrays, dim=3, inputs=[a, out], device=device)
        np.testing.assert_array_equal(out.numpy(), np.arange(3, dtype=npt) * 2)

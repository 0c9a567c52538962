"""``sk.map`` (Warp's ``wp.map``) and the arithmetic operators of arrays built on it: values against
numpy, broadcasting, lambdas with captured values, @funcs with several results, gradients against
analytic values and central finite differences (float64), in-place updates on a Tape, and errors."""
import numpy as np
import pytest

import simkit as sk

f64 = sk.float64


@sk.func
def polar(x: f64, y: f64):
    return sk.sqrt(x * x + y * y), sk.atan2(y, x)


@sk.struct
class Pair:
    a: float
    b: float


@sk.func
def make_pair(a: float, b: float):
    p = Pair()
    p.a = a
    p.b = b * 2.0
    return p


def test_builtins_lambdas_and_funcs_against_numpy(device):
    a = sk.array(np.arange(6.0).reshape(2, 3), dtype=float, device=device)
    b = sk.array(np.linspace(1, 2, 6).reshape(2, 3), dtype=float, device=device)
    np.testing.assert_allclose(sk.map(sk.mul, a, b).numpy(), a.numpy() * b.numpy())
    scale = 3.0
    out = sk.map(lambda x, y: sk.sin(x) * y + scale, a, b)  # a captured local, compiled as a constant
    assert out.shape == (2, 3) and out.dtype is sk.float32
    np.testing.assert_allclose(out.numpy(), np.sin(a.numpy()) * b.numpy() + 3.0, rtol=1e-6)
    out = sk.map(lambda x, y: (  # a lambda over several lines, with comments and a continuation
        x * 2.0  # twice x
        + y \
        - 1.0), a, b)
    np.testing.assert_allclose(out.numpy(), 2 * a.numpy() + b.numpy() - 1, rtol=1e-6)
    r, th = sk.map(polar, sk.array([3.0, 0.0], dtype=f64, device=device), sk.array([4.0, 2.0], dtype=f64,
                                                                                  device=device))
    np.testing.assert_allclose(r.numpy(), [5.0, 2.0])
    np.testing.assert_allclose(th.numpy(), [np.arctan2(4, 3), np.pi / 2])
    pairs = sk.map(make_pair, a[0], 1.5).list()
    assert [(p.a, p.b) for p in pairs] == [(0.0, 3.0), (1.0, 3.0), (2.0, 3.0)]


def test_a_value_and_an_array_of_vectors(device):
    tf = sk.transform(sk.vec3(1.0, 2.0, 3.0), sk.quat_from_axis_angle(sk.vec3(0.0, 0.0, 1.0), 0.5 * np.pi))
    pts = sk.array([[1.0, 0.0, 0.0], [0.0, 2.0, 1.0]], dtype=sk.vec3, device=device)
    moved = sk.map(sk.transform_point, tf, pts)
    assert moved.dtype is sk.vec3
    np.testing.assert_allclose(moved.numpy(), [[1.0, 3.0, 3.0], [-1.0, 2.0, 4.0]], atol=1e-6)


def test_broadcasting_follows_numpy(device):
    col = np.arange(3.0).reshape(3, 1)
    row = np.arange(4.0) * 10
    cube = np.ones((2, 1, 4))
    a, b, c = (sk.array(v, dtype=f64, device=device) for v in (col, row, cube))
    np.testing.assert_array_equal(sk.map(sk.add, a, b).numpy(), col + row)
    np.testing.assert_array_equal(sk.map(lambda x, y, z: x * y + z, a, b, c).numpy(), col * row + cube)
    assert sk.map(sk.add, a, sk.zeros(5, dtype=f64, device=device)).shape == (3, 5)
    with pytest.raises(ValueError, match=r"Shapes \(3, 1\) and \(2, 4\) are not broadcastable"):
        sk.map(sk.add, a, sk.zeros((2, 4), dtype=f64, device=device))


def test_operators(device):
    x = sk.array([1.0, 2.0, 4.0], dtype=f64, device=device)
    y = sk.array([2.0, 3.0, 5.0], dtype=f64, device=device)
    xn, yn = x.numpy().copy(), y.numpy().copy()
    for got, want in (((x + y), xn + yn), ((x - 1.5), xn - 1.5), ((2.0 * x), 2 * xn), ((x / y), xn / yn),
                      ((1.0 / x), 1 / xn), ((x ** 2.0), xn ** 2), ((-x), -xn), ((y % x), yn % xn),
                      ((x // y), xn // yn), ((np.float64(3.0) - x), 3 - xn)):
        assert isinstance(got, sk.array)
        np.testing.assert_allclose(got.numpy(), want)
    assert (x + 1).dtype is f64  # a Python number takes the array's scalar type
    ints = sk.array([7, 8, 9], dtype=sk.int32, device=device)
    np.testing.assert_array_equal((ints % 4).numpy(), [3, 0, 1])
    x += y
    x *= 2.0
    np.testing.assert_allclose(x.numpy(), (xn + yn) * 2)


def _loss(xv, yv):
    x = sk.array(xv, dtype=f64, requires_grad=True)
    y = sk.array(yv, dtype=f64, requires_grad=True)
    tape = sk.Tape()
    with tape:
        z = sk.map(lambda a, b: sk.sin(a) * b, x, y)  # an output carries a gradient when an input does
        w = z * z + x
        w *= y               # in place: recorded with w's values from before
    tape.backward(grads={w: np.ones(len(xv))})
    return w.numpy().sum(), x.grad.numpy(), y.grad.numpy(), z.requires_grad


def test_gradients_through_map_and_operators_match_finite_differences():
    xv, yv = np.array([0.3, -1.2, 2.0]), np.array([1.5, 0.5, -2.0])
    _, gx, gy, z_grad = _loss(xv, yv)
    assert z_grad
    s = np.sin(xv) * yv
    np.testing.assert_allclose(gx, (2 * s * np.cos(xv) * yv + 1) * yv, rtol=1e-12)
    np.testing.assert_allclose(gy, 2 * s * np.sin(xv) * yv + (s * s + xv), rtol=1e-12)
    eps = 1e-6
    for k in range(3):
        e = np.zeros(3)
        e[k] = eps
        assert gx[k] == pytest.approx((_loss(xv + e, yv)[0] - _loss(xv - e, yv)[0]) / (2 * eps), rel=1e-6)
        assert gy[k] == pytest.approx((_loss(xv, yv + e)[0] - _loss(xv, yv - e)[0]) / (2 * eps), rel=1e-6)


def test_out_in_place_and_kernel_reuse(device):
    xs = sk.array([-1.0, 0.0, 1.0], dtype=float, device=device)
    assert sk.map(sk.clamp, xs, -0.5, 0.5, out=xs) is xs
    np.testing.assert_array_equal(xs.numpy(), [-0.5, 0.0, 0.5])
    k1 = sk.map(lambda v: v * 2.0, xs, return_kernel=True)
    for _ in range(2):  # the same lambda source and types: the same kernel
        assert sk.map(lambda v: v * 2.0, xs, return_kernel=True) is k1
    assert sk.map(lambda v: v * 2.0, sk.zeros(7, device=device), return_kernel=True) is k1  # another length


def test_errors_name_what_is_wrong():
    x = sk.zeros(3)

    @sk.func
    def nothing(v: float):
        pass

    @sk.func
    def one(v: float):
        return v

    with pytest.raises(TypeError, match="must return a value"):
        sk.map(nothing, x)
    with pytest.raises(TypeError, match=r"Number of input arguments \(2\) does not match expected number of "
                                        r"function arguments \(1\)"):
        sk.map(one, x, x)
    with pytest.raises(TypeError, match=r"map\(\): one cannot take arguments of types \(vec3\)"):
        sk.map(one, sk.zeros(3, dtype=sk.vec3))
    with pytest.raises(TypeError, match="Output array dtype int32 does not match expected dtype float32"):
        sk.map(sk.add, x, x, out=sk.zeros(3, dtype=sk.int32))
    with pytest.raises(TypeError, match=r"Output array shape \(4,\) does not match expected shape \(3,\)"):
        sk.map(sk.add, x, x, out=sk.zeros(4))
    with pytest.raises(ValueError, match="at least one simkit array"):
        sk.map(sk.add, 1.0, 2.0)
    with pytest.raises(TypeError, match="applies a builtin, a @func, a Python function or a lambda"):
        sk.map(3, x)


def test_an_output_overlapping_an_input_reads_a_copy_as_numpy_does():
    a = sk.array(np.arange(6.0), dtype=f64)
    sk.map(sk.add, a[:-1], a[1:], out=a[1:])
    an = np.arange(6.0)
    an[1:] = an[:-1] + an[1:]
    np.testing.assert_array_equal(a.numpy(), an)
    # on a Tape: the copies are recorded, and the overwrite of their source after them is exact
    x = sk.array(np.arange(4.0), dtype=f64, requires_grad=True)
    tape = sk.Tape()
    with tape:
        y = x * 1.0
        sk.map(sk.mul, y[:-1], y[1:], out=y[1:])   # y = (x0, x0 x1, x1 x2, x2 x3)
    tape.backward(grads={y: np.ones(4)})
    xv = np.arange(4.0)
    np.testing.assert_allclose(x.grad.numpy(), [1 + xv[1], xv[0] + xv[2], xv[1] + xv[3], xv[2]])

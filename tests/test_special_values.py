"""NaN and infinity in kernels: constants of every float type, isnan/isinf/isfinite of values, and atomic
min/max, which take a NaN as missing as numpy's fmin/fmax do. Checked against numpy."""
import numpy as np
import pytest

import simkit as sk

nan, inf = float("nan"), float("inf")
vec2h = sk.types.vector(2, sk.float16)


@pytest.mark.parametrize("dtype", [sk.float16, sk.float32, sk.float64])
def test_special_constants_of_each_float_type(device, dtype):
    @sk.kernel(module="unique")
    def constants(out: sk.array(dtype=dtype)):
        out[0] = dtype(sk.inf)
        out[1] = dtype(-sk.inf)
        out[2] = dtype(sk.nan)

    out = sk.zeros(3, dtype=dtype, device=device)
    sk.launch(constants, 1, inputs=[out], device=device)
    got = out.numpy()
    assert got[0] == np.inf and got[1] == -np.inf and np.isnan(got[2])


@sk.kernel
def classify(v: sk.array(dtype=sk.vec3), m: sk.array(dtype=sk.mat22d), h: sk.array(dtype=vec2h),
             out: sk.array(dtype=int, ndim=2)):
    i = sk.tid()
    out[i, 0] = int(sk.isfinite(v[i])) + 2 * int(sk.isnan(v[i])) + 4 * int(sk.isinf(v[i]))
    out[i, 1] = int(sk.isfinite(m[i])) + 2 * int(sk.isnan(m[i])) + 4 * int(sk.isinf(m[i]))
    out[i, 2] = int(sk.isfinite(h[i])) + 2 * int(sk.isnan(h[i])) + 4 * int(sk.isinf(h[i]))


def test_vector_and_matrix_classification(device):
    rows = [[1.0, 2.0, 3.0, 4.0], [1.0, nan, 3.0, 4.0], [1.0, 2.0, -inf, 4.0], [nan, 2.0, inf, 4.0]]
    rows = np.array(rows)
    out = sk.zeros((4, 3), dtype=int, device=device)
    sk.launch(classify, 4, inputs=[sk.array(rows[:, 1:], dtype=sk.vec3, device=device),
                                   sk.array(rows.reshape(4, 2, 2), dtype=sk.mat22d, device=device),
                                   sk.array(rows[:, 2:], dtype=vec2h, device=device), out],
              device=device)

    def code(x):
        return int(np.all(np.isfinite(x))) + 2 * int(np.any(np.isnan(x))) + 4 * int(np.any(np.isinf(x)))

    want = [[code(r[1:]), code(r), code(r[2:])] for r in rows]
    np.testing.assert_array_equal(out.numpy(), want)


@sk.kernel
def min_max(a: sk.array(dtype=sk.float64), b: sk.array(dtype=sk.float64), lo: sk.array(dtype=sk.float64),
            hi: sk.array(dtype=sk.float64), old: sk.array(dtype=sk.float64)):
    i = sk.tid()
    lo[i] = a[i]
    hi[i] = a[i]
    old[i] = sk.atomic_min(lo, i, b[i])
    sk.atomic_max(hi, i, b[i])


@sk.kernel
def atomic_min_of(slot: sk.array(dtype=sk.float64), value: sk.array(dtype=sk.float64), out: sk.array(dtype=sk.float64)):
    i = sk.tid()
    out[i] = sk.atomic_min(slot, i, value[i])


def test_atomic_min_max_take_nan_as_missing(device):
    a = np.array([-1.0, nan, nan, -1.0, nan, 2.0])
    b = np.array([nan, -1.0, nan, 2.0, 2.0, nan])
    lo, hi, old = (sk.zeros(6, dtype=sk.float64, device=device) for _ in range(3))
    sk.launch(min_max, 6, inputs=[sk.array(a, device=device), sk.array(b, device=device), lo, hi, old],
              device=device)
    np.testing.assert_array_equal(lo.numpy(), np.fmin(a, b))
    np.testing.assert_array_equal(hi.numpy(), np.fmax(a, b))
    np.testing.assert_array_equal(old.numpy(), a)
    # the gradient reaches the value where the value was written (a NaN over a NaN included)
    slot = sk.array([nan, nan, 2.0, 5.0, 2.0], dtype=sk.float64, device=device, requires_grad=True)
    value = sk.array([nan, 2.0, nan, 2.0, 5.0], dtype=sk.float64, device=device, requires_grad=True)
    out = sk.zeros(5, dtype=sk.float64, device=device, requires_grad=True)
    tape = sk.Tape()
    with tape:
        sk.launch(atomic_min_of, 5, inputs=[slot, value, out], device=device)
    tape.backward(grads={slot: np.ones(5)})
    np.testing.assert_array_equal(value.grad.numpy(), [1.0, 1.0, 0.0, 1.0, 0.0])

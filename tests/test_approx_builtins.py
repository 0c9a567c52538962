"""``div_approx`` and ``inverse_approx`` (Warp's approximate-intrinsic forms): exact in simkit on every device,
equal to ``/`` and ``inverse``, with their exact gradients (central finite differences, float64)."""
import numpy as np
import pytest

import simkit as sk


@sk.kernel
def divide(a: sk.array(dtype=sk.float64), b: sk.array(dtype=sk.float64), v: sk.array(dtype=sk.vec3d),
           q: sk.array(dtype=sk.quatd), m: sk.array(dtype=sk.mat22d), out: sk.array(dtype=sk.float64)):
    i = sk.tid()
    s = sk.div_approx(a[i], b[i])
    w = sk.div_approx(v[i], b[i]) + sk.div_approx(a[i], v[i])
    r = sk.div_approx(q[i], b[i]) + sk.div_approx(a[i], q[i])
    n = sk.div_approx(m[i], b[i]) + sk.div_approx(a[i], m[i])
    out[i] = s + w[0] * 2.0 + w[2] + r[1] - r[3] * 0.5 + n[0, 1] + n[1, 0] * 3.0


@sk.kernel
def invert(m2: sk.array(dtype=sk.mat22d), m3: sk.array(dtype=sk.mat33d), m4: sk.array(dtype=sk.mat44d),
           out: sk.array(dtype=sk.float64)):
    i = sk.tid()
    out[i] = sk.ddot(sk.inverse_approx(m2[i]), sk.inverse_approx(m2[i])) + sk.trace(sk.inverse_approx(m3[i])) \
        + sk.inverse_approx(m4[i])[1, 2]


def _expected_divide(a, b, v, q, m):
    w = v / b[:, None] + a[:, None] / v
    r = q / b[:, None] + a[:, None] / q
    n = m / b[:, None, None] + a[:, None, None] / m
    return a / b + w[:, 0] * 2.0 + w[:, 2] + r[:, 1] - r[:, 3] * 0.5 + n[:, 0, 1] + n[:, 1, 0] * 3.0


def _expected_invert(m2, m3, m4):
    i2, i3, i4 = np.linalg.inv(m2), np.linalg.inv(m3), np.linalg.inv(m4)
    return np.sum(i2 * i2, axis=(1, 2)) + np.trace(i3, axis1=1, axis2=2) + i4[:, 1, 2]


def _inputs(rng, n=4):
    return {"divide": [rng.uniform(1.0, 2.0, n), rng.uniform(1.0, 2.0, n), rng.uniform(1.0, 2.0, (n, 3)),
                       rng.uniform(1.0, 2.0, (n, 4)), rng.uniform(1.0, 2.0, (n, 2, 2))],
            "invert": [rng.uniform(1.0, 2.0, (n, k, k)) + 3 * np.eye(k) for k in (2, 3, 4)]}


KERNELS = {"divide": (divide, [sk.float64, sk.float64, sk.vec3d, sk.quatd, sk.mat22d], _expected_divide),
           "invert": (invert, [sk.mat22d, sk.mat33d, sk.mat44d], _expected_invert)}


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_values_and_gradients(name, device):
    kernel, dtypes, expected = KERNELS[name]
    values = _inputs(np.random.default_rng(5))[name]
    weights = np.random.default_rng(6).uniform(-1.0, 1.0, 4)

    def run(vals, tape=None):
        arrs = [sk.array(v, dtype=t, requires_grad=True, device=device) for v, t in zip(vals, dtypes)]
        out = sk.zeros(4, dtype=sk.float64, requires_grad=True, device=device)
        if tape is None:
            sk.launch(kernel, 4, inputs=arrs + [out], device=device)
        else:
            with tape:
                sk.launch(kernel, 4, inputs=arrs + [out], device=device)
        return arrs, out

    arrs, out = run(values)
    np.testing.assert_allclose(out.numpy(), expected(*values), rtol=1e-12)
    tape = sk.Tape()
    arrs, out = run(values, tape)
    tape.backward(grads={out: sk.array(weights, dtype=sk.float64, device=device)})
    h = 1e-6
    for k, v in enumerate(values):
        fd = np.zeros(v.shape)
        for idx in np.ndindex(*v.shape):
            p, m = [x.copy() for x in values], [x.copy() for x in values]
            p[k][idx] += h
            m[k][idx] -= h
            fd[idx] = (weights @ run(p)[1].numpy() - weights @ run(m)[1].numpy()) / (2 * h)
        np.testing.assert_allclose(arrs[k].grad.numpy().reshape(v.shape), fd, rtol=1e-6, atol=1e-8)


@sk.kernel
def half_precision(a: sk.array(dtype=sk.float16), b: sk.array(dtype=sk.float16), out: sk.array(dtype=sk.float16)):
    i = sk.tid()
    out[i] = sk.div_approx(a[i], b[i])


def test_float16_is_exact_division():
    rng = np.random.default_rng(42)
    a, b = rng.uniform(0.1, 100.0, 64).astype(np.float16), rng.uniform(0.1, 100.0, 64).astype(np.float16)
    out = sk.zeros(64, dtype=sk.float16, device="cpu")
    sk.launch(half_precision, 64, inputs=[sk.array(a, device="cpu"), sk.array(b, device="cpu"), out], device="cpu")
    np.testing.assert_array_equal(out.numpy(), a / b)

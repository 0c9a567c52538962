"""bfloat16 (``sk.bfloat16``): host conversions, arrays, kernel arithmetic (float32, rounded to nearest even),
conversions, atomics, adjoints, vectors/matrices, numpy / torch / DLPack interop, printing."""
from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

import simkit as sk
from simkit.kernels import types_bf16 as B

ml_dtypes = pytest.importorskip("ml_dtypes")
BF = np.dtype(ml_dtypes.bfloat16)


def rnd(x) -> np.ndarray:
    """float32 values rounded to bfloat16 (ml_dtypes' round to nearest even), as float32."""
    return np.asarray(x, dtype=np.float32).astype(BF).astype(np.float32)


def f32(a) -> np.ndarray:
    return np.asarray(a.numpy(), dtype=np.float32)


# every kind of float32: ties (both parities), just off ties, subnormals, huge, inf, nan
TRICKY = np.array([0.0, -0.0, 1.0, -2.5, 1.0 + 2**-8, 1.0 + 3 * 2**-8, 1.0 + 2**-8 + 2**-20, 1.0 + 2**-9,
                   3.14159265, 1e-40, -1e-41, 3.3e38, 3.39e38, -3.4e38, np.inf, -np.inf, 65504.0, 1e-3],
                  dtype=np.float32)


# ---------------------------------------------------------------------------
# host side


def test_host_bit_conversions_round_to_nearest_even():
    rng = np.random.default_rng(0)
    scaled = (rng.standard_normal(2000) * 10.0 ** rng.integers(-30, 30, 2000)).astype(np.float32)
    raw = rng.integers(0, 2**32, 2000, dtype=np.uint64).astype(np.uint32).view(np.float32)
    x = np.concatenate([TRICKY, scaled, raw[~np.isnan(raw)]])
    assert x.dtype == np.float32
    bits = B.float32_to_bits(x)
    assert bits.dtype == np.uint16
    np.testing.assert_array_equal(bits, x.astype(BF).view(np.uint16))
    np.testing.assert_array_equal(B.bits_to_float32(bits), x.astype(BF).astype(np.float32))
    assert B.float32_to_bits(np.float32(1.0 + 2**-8)) == 0x3F80          # tie: to even (down)
    assert B.float32_to_bits(np.float32(1.0 + 3 * 2**-8)) == 0x3F82      # tie: to even (up)
    assert B.float32_to_bits(np.float32(3.39e38)) == 0x7F7F              # the largest finite bfloat16
    assert B.float32_to_bits(np.float32(3.4e38)) == 0x7F80               # past it (and its half ulp): inf
    nan = B.float32_to_bits(np.array([np.nan, -np.nan], dtype=np.float32))
    assert np.all((nan & 0x7FFF) > 0x7F80) and np.all(nan & 0x40)        # a quiet NaN, sign kept
    assert np.isnan(B.bits_to_float32(nan)).all()


def test_scalar_type_and_numpy_dtype():
    x = sk.bfloat16(3.14159)
    assert isinstance(x, ml_dtypes.bfloat16) and isinstance(x, sk.bfloat16) and not isinstance(x, sk.float16)
    assert float(x) == 3.140625
    assert float(sk.bfloat16(1.0 + 2**-8 + 2**-30)) == 1.0    # rounded through float32, as kernels do
    assert np.dtype(sk.bfloat16) == BF
    assert sk.dtype_to_numpy(sk.bfloat16) == BF and sk.dtype_to_numpy(sk.vector(3, sk.bfloat16)) == BF
    assert sk.dtype_from_numpy(BF) is sk.bfloat16 and sk.dtype_from_numpy(ml_dtypes.bfloat16) is sk.bfloat16
    assert sk.dtype_from_numpy(np.uint16) is sk.uint16
    assert sk.bfloat16 in sk.types.float_types and sk.types.is_float(sk.bfloat16)
    assert sk.types.type_size_in_bytes(sk.bfloat16) == 2
    assert sk.types.type_repr(sk.vector(3, sk.bfloat16)) == "vec3bf"
    assert sk.types.type_repr(sk.matrix((2, 2), sk.bfloat16)) == "mat22bf"


def test_arrays_from_data():
    a = sk.array([1.0, 3.14159, -2.5, 1e30], dtype=sk.bfloat16, device="cpu")
    n = a.numpy()
    assert n.dtype == BF and a.dtype is sk.bfloat16 and a.itemsize == 2
    np.testing.assert_array_equal(n.astype(np.float32), rnd([1.0, 3.14159, -2.5, 1e30]))
    assert np.asarray(a).dtype == BF                                   # (through __array__, not a V2 typestr)
    np.asarray(a)[0] = 7.0
    assert float(a.numpy()[0]) == 7.0                                  # a view of the memory
    bits = np.array([0x3F80, 0x4000, 0x4049], dtype=np.uint16)         # uint16 data: bit patterns, as Warp
    np.testing.assert_array_equal(f32(sk.array(bits, dtype=sk.bfloat16)), [1.0, 2.0, 3.140625])
    ml = np.array([1.5, -2.0], dtype=BF)
    c = sk.array(ml)                                                   # dtype inferred
    assert c.dtype is sk.bfloat16 and np.array_equal(c.numpy(), ml)
    a.fill_(1.0 + 3 * 2**-8)
    assert np.all(f32(a) == 1.0 + 2**-6)
    a.assign([0.1, 0.2, 0.3, 0.4])
    np.testing.assert_array_equal(f32(a), rnd([0.1, 0.2, 0.3, 0.4]))
    assert str(sk.array([1.5, 2.0], dtype=sk.bfloat16)) == "[1.5 2]"
    v = sk.array(np.arange(6.0), dtype=sk.vector(3, sk.bfloat16))
    assert v.shape == (2,) and v.numpy().shape == (2, 3) and v.numpy().dtype == BF
    z = sk.zeros((2, 3), dtype=sk.bfloat16)
    assert z.numpy().dtype == BF and not z.numpy().astype(np.float32).any()


def test_vector_and_matrix_values_on_the_host():
    v3 = sk.vector(3, sk.bfloat16)
    v = v3(1.0, 2.5, 3.3)
    assert v.dtype == BF and float(v[2]) == 3.296875
    m = sk.matrix((2, 2), sk.bfloat16)(1.0, 2.0, 3.0, 4.0)
    assert m.shape == (2, 2) and m.dtype == BF


# ---------------------------------------------------------------------------
# kernels


@sk.kernel
def k_arith(a: sk.array(dtype=sk.bfloat16), b: sk.array(dtype=sk.bfloat16), x: sk.bfloat16,
            out: sk.array(dtype=sk.bfloat16, ndim=2)):
    i = sk.tid()
    out[i, 0] = a[i] + b[i]
    out[i, 1] = a[i] - b[i]
    out[i, 2] = a[i] * b[i]
    out[i, 3] = a[i] / b[i]
    out[i, 4] = a[i] * b[i] + x
    out[i, 5] = sk.sqrt(sk.abs(a[i]))
    out[i, 6] = sk.sin(a[i])
    out[i, 7] = sk.min(a[i], b[i])
    out[i, 8] = -a[i]
    out[i, 9] = a[i] * 2.0 + sk.bfloat16(0.1)


def test_arithmetic_in_float32_rounded_to_bfloat16(device):
    rng = np.random.default_rng(1)
    an, bn = rnd(rng.uniform(-4, 4, 64)), rnd(rng.uniform(0.5, 4, 64))
    a = sk.array(an, dtype=sk.bfloat16, device=device)
    b = sk.array(bn, dtype=sk.bfloat16, device=device)
    out = sk.zeros((64, 10), dtype=sk.bfloat16, device=device)
    sk.launch(k_arith, dim=64, inputs=[a, b, sk.bfloat16(0.3), out], device=device)
    x = rnd(0.3)
    want = np.stack([rnd(an + bn), rnd(an - bn), rnd(an * bn), rnd(an / bn), rnd(rnd(an * bn) + x),
                     rnd(np.sqrt(np.abs(an))), rnd(np.sin(an)), np.minimum(an, bn), -an,
                     rnd(rnd(an * 2.0) + rnd(0.1))], axis=1)
    got = f32(out)
    np.testing.assert_array_equal(got[:, [0, 1, 2, 3, 4, 7, 8, 9]], want[:, [0, 1, 2, 3, 4, 7, 8, 9]])
    # libm results may differ from numpy's by a float32 ulp, which can move a bfloat16 rounding by one
    np.testing.assert_allclose(got[:, 5:7], want[:, 5:7], rtol=2**-7, atol=1e-6)


@sk.kernel
def k_convert(x: sk.array(dtype=float), bf: sk.array(dtype=sk.bfloat16), back: sk.array(dtype=float),
              i: sk.array(dtype=int), h: sk.array(dtype=sk.float16), d: sk.array(dtype=sk.float64),
              cls: sk.array(dtype=int)):
    t = sk.tid()
    v = sk.bfloat16(x[t])
    bf[t] = v
    back[t] = sk.float32(v)
    i[t] = int(v)
    h[t] = sk.float16(v)
    d[t] = sk.float64(v)
    cls[t] = int(sk.isnan(v)) + 2 * int(sk.isinf(v)) + 4 * int(sk.isfinite(v))


def test_conversions_round_to_nearest_even_and_keep_nan_inf(device):
    xs = np.concatenate([TRICKY, [np.nan]]).astype(np.float32)
    n = len(xs)
    x = sk.array(xs, dtype=float, device=device)
    bf, back = sk.zeros(n, dtype=sk.bfloat16, device=device), sk.zeros(n, dtype=float, device=device)
    i, h = sk.zeros(n, dtype=int, device=device), sk.zeros(n, dtype=sk.float16, device=device)
    d, cls = sk.zeros(n, dtype=sk.float64, device=device), sk.zeros(n, dtype=int, device=device)
    sk.launch(k_convert, dim=n, inputs=[x, bf, back, i, h, d, cls], device=device)
    want = xs.astype(BF)
    np.testing.assert_array_equal(B.as_bits(bf.numpy())[:-1], want.view(np.uint16)[:-1])
    assert np.isnan(f32(bf)[-1]) and np.isnan(back.numpy()[-1])
    np.testing.assert_array_equal(back.numpy()[:-1], want.astype(np.float32)[:-1])
    np.testing.assert_array_equal(d.numpy()[:-1], want.astype(np.float64)[:-1])
    finite = np.isfinite(want.astype(np.float32)) & (np.abs(want.astype(np.float32)) < 2**31)
    np.testing.assert_array_equal(i.numpy()[finite], np.trunc(want.astype(np.float32)[finite]).astype(np.int32))
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(h.numpy()[:-1], want.astype(np.float32).astype(np.float16)[:-1])
    w = want.astype(np.float32)
    np.testing.assert_array_equal(cls.numpy(), np.isnan(w) + 2 * np.isinf(w) + 4 * np.isfinite(w))


@sk.kernel
def k_atomics(vals: sk.array(dtype=sk.bfloat16), acc: sk.array(dtype=sk.bfloat16),
              vacc: sk.array(dtype=sk.vector(3, sk.bfloat16)), olds: sk.array(dtype=sk.bfloat16)):
    i = sk.tid()
    v = vals[i]
    one = sk.bfloat16(1.0)
    olds[i] = sk.atomic_add(acc, 0, one)
    sk.atomic_sub(acc, 1, one)
    sk.atomic_min(acc, 2, v)
    sk.atomic_max(acc, 3, v)
    sk.atomic_add(vacc, 0, sk.vector(one, one * 2.0, one * 0.5, dtype=sk.bfloat16))
    acc[4 + i % 2] += one


def test_atomics(device):
    n = 64  # every partial sum (of ones, twos, halves) is exact in bfloat16, whatever the order
    vn = np.arange(1, n + 1, dtype=np.float32)
    vals = sk.array(vn, dtype=sk.bfloat16, device=device)
    acc = sk.array([0.0, 0.0, 1e9, -1e9, 0.0, 0.0], dtype=sk.bfloat16, device=device)
    vacc = sk.zeros(1, dtype=sk.vector(3, sk.bfloat16), device=device)
    olds = sk.zeros(n, dtype=sk.bfloat16, device=device)
    sk.launch(k_atomics, dim=n, inputs=[vals, acc, vacc, olds], device=device)
    got = f32(acc)
    np.testing.assert_array_equal(got, [n, -n, 1.0, 64.0, n / 2, n / 2])
    np.testing.assert_array_equal(f32(vacc)[0], [n, 2 * n, n / 2])
    np.testing.assert_array_equal(np.sort(f32(olds)), np.arange(n))     # each old value once


@sk.kernel
def k_atomic_round(acc: sk.array(dtype=sk.bfloat16)):
    sk.atomic_add(acc, 0, sk.bfloat16(1.0))


def test_atomic_add_rounds_each_sum(device):
    acc = sk.array([256.0], dtype=sk.bfloat16, device=device)    # 256 + 1 = 257 rounds back to 256 (even)
    sk.launch(k_atomic_round, dim=10, inputs=[acc], device=device)
    assert f32(acc)[0] == 256.0


@sk.kernel
def k_loss(x: sk.array(dtype=sk.bfloat16), w: sk.array(dtype=sk.bfloat16), loss: sk.array(dtype=float)):
    i = sk.tid()
    y = sk.sin(x[i]) * w[i] + x[i] * x[i]
    sk.atomic_add(loss, 0, sk.float32(y))


def test_gradients_match_finite_differences(device):
    rng = np.random.default_rng(3)
    xn, wn = rnd(rng.uniform(-2, 2, 16)), rnd(rng.uniform(-1, 1, 16))
    x = sk.array(xn, dtype=sk.bfloat16, device=device, requires_grad=True)
    w = sk.array(wn, dtype=sk.bfloat16, device=device, requires_grad=True)
    loss = sk.zeros(1, dtype=float, device=device, requires_grad=True)
    tape = sk.Tape()
    with tape:
        sk.launch(k_loss, dim=16, inputs=[x, w, loss], device=device)
    tape.backward(loss)
    assert x.grad.dtype is sk.bfloat16

    def f(xv, wv):  # the float32 computation, in float64
        return np.sin(xv) * wv + xv * xv

    eps = 1e-6
    x64, w64 = xn.astype(np.float64), wn.astype(np.float64)
    gx = (f(x64 + eps, w64) - f(x64 - eps, w64)) / (2 * eps)
    gw = (f(x64, w64 + eps) - f(x64, w64 - eps)) / (2 * eps)
    # each adjoint is accumulated in bfloat16: a few roundings of 2**-8 relative error
    np.testing.assert_allclose(f32(x.grad), gx, rtol=2**-6, atol=2**-6)
    np.testing.assert_allclose(f32(w.grad), gw, rtol=2**-6, atol=2**-6)


@sk.kernel
def k_values(v: sk.array(dtype=sk.vector(3, sk.bfloat16)), m: sk.array(dtype=sk.matrix((3, 3), sk.bfloat16)),
             out: sk.array(dtype=sk.vector(3, sk.bfloat16)), dots: sk.array(dtype=sk.bfloat16)):
    i = sk.tid()
    out[i] = m[i] @ v[i] + v[i] * sk.bfloat16(0.5)
    dots[i] = sk.dot(v[i], v[i])


def test_vectors_and_matrices(device):
    rng = np.random.default_rng(4)
    vn, mn = rnd(rng.uniform(-2, 2, (8, 3))), rnd(rng.uniform(-2, 2, (8, 3, 3)))
    v = sk.array(vn, dtype=sk.vector(3, sk.bfloat16), device=device)
    m = sk.array(mn, dtype=sk.matrix((3, 3), sk.bfloat16), device=device)
    out = sk.zeros(8, dtype=sk.vector(3, sk.bfloat16), device=device)
    dots = sk.zeros(8, dtype=sk.bfloat16, device=device)
    sk.launch(k_values, dim=8, inputs=[v, m, out, dots], device=device)
    want = np.einsum("nij,nj->ni", mn.astype(np.float64), vn) + vn * 0.5
    np.testing.assert_allclose(f32(out), want, rtol=2**-6, atol=2**-6)
    np.testing.assert_allclose(f32(dots), (vn.astype(np.float64) ** 2).sum(1), rtol=2**-7)


@sk.kernel
def k_print_bf(x: sk.bfloat16, v: sk.vector(2, sk.bfloat16)):
    print(x)
    print(v)


def test_print(capfd):
    capfd.readouterr()
    sk.launch(k_print_bf, dim=1, inputs=[sk.bfloat16(1.5), sk.vector(2, sk.bfloat16)(0.25, -3.0)], device="cpu")
    sk.synchronize()
    assert capfd.readouterr().out == "1.5\n0.25 -3 \n"


# ---------------------------------------------------------------------------
# interop


def test_dlpack_and_numpy_views():
    from simkit.runtime import interop
    from simkit.runtime.interop import from_numpy_view

    assert interop.dl_dtype(sk.bfloat16) == (4, 16) and interop.scalar_from_dl(4, 16) is sk.bfloat16
    assert interop.scalar_from_dl(2, 16) is sk.float16
    bits = np.array([[0x3F80, 0x4000, 0xC020]], dtype=np.uint16)
    a = from_numpy_view(bits, dtype=sk.vector(3, sk.bfloat16))     # uint16 bits viewed as bfloat16
    assert a.shape == (1,) and a.dtype is sk.vector(3, sk.bfloat16)
    np.testing.assert_array_equal(f32(a), [[1.0, 2.0, -2.5]])
    bits[0, 0] = 0x4040
    assert float(a.numpy()[0, 0]) == 3.0                                # shares memory


def test_torch_round_trip():
    torch = pytest.importorskip("torch")
    t = torch.tensor([1.0, 2.5, -3.140625], dtype=torch.bfloat16)
    a = sk.from_torch(t)
    assert a.dtype is sk.bfloat16
    np.testing.assert_array_equal(f32(a), [1.0, 2.5, -3.140625])
    t[0] = 4.0
    assert float(a.numpy()[0]) == 4.0                                   # zero copy
    b = sk.to_torch(sk.array([0.5, 1.5], dtype=sk.bfloat16, device="cpu"))
    assert b.dtype == torch.bfloat16 and b.tolist() == [0.5, 1.5]
    v = sk.from_torch(torch.ones(4, 3, dtype=torch.bfloat16), dtype=sk.vector(3, sk.bfloat16))
    assert v.shape == (4,)


def test_without_ml_dtypes_host_data_is_raw_bits(tmp_path):
    script = tmp_path / "no_ml_dtypes.py"
    script.write_text("""
import sys
sys.modules["ml_dtypes"] = None
import numpy as np, simkit as sk
from simkit.kernels import types_bf16 as B
assert not B.HAS_ML_DTYPES and np.dtype(sk.bfloat16) == np.dtype(object)
assert sk.dtype_from_numpy(np.uint16) is sk.uint16 and sk.dtype_to_numpy(sk.bfloat16) == np.uint16
a = sk.array([1.0, 3.14159, -2.5], dtype=sk.bfloat16, device="cpu")
assert a.numpy().dtype == np.uint16 and a.numpy().tolist() == [0x3F80, 0x4049, 0xC020]
assert float(sk.bfloat16(3.14159)) == 3.140625
a.fill_(1.5)
assert a.numpy().tolist() == [0x3FC0] * 3
V = sk.vector(2, sk.bfloat16)
assert V(1.5, 2.0).tolist() == [0x3FC0, 0x4000]

@sk.kernel
def k(v: V, x: sk.bfloat16, a: sk.array(dtype=sk.bfloat16), out: sk.array(dtype=float)):
    out[0] = sk.float32(v[0]) + sk.float32(v[1]) * 10.0 + sk.float32(x) * 100.0 + sk.float32(a[0]) * 1000.0

out = sk.zeros(1, dtype=float, device="cpu")
sk.launch(k, dim=1, inputs=[[1.5, 2.0], 3.0, a, out], device="cpu")
assert out.numpy()[0] == 1821.5, out.numpy()
print("ok")
""")
    r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=dict(os.environ),
                       timeout=300)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr[-2000:]


def test_ml_dtypes_is_imported_on_first_use_not_with_simkit():
    """(its import was 60% of ``import simkit``): a bfloat16 array, an ml_dtypes scalar meeting isinstance,
    or np.dtype(sk.bfloat16) brings it in, with the same results as at import."""
    script = """
import sys
import numpy as np, simkit as sk
assert "ml_dtypes" not in sys.modules
assert sk.float32(2.0) == 2.0 and np.dtype(sk.float16) == np.float16 and not isinstance(np.uint16(1), sk.bfloat16)
assert "ml_dtypes" not in sys.modules
a = sk.array([1.0, 3.14159], dtype=sk.bfloat16, device="cpu")
assert "ml_dtypes" in sys.modules
import ml_dtypes
assert a.numpy().dtype == np.dtype(ml_dtypes.bfloat16) == np.dtype(sk.bfloat16)
assert isinstance(ml_dtypes.bfloat16(1), sk.bfloat16) and isinstance(ml_dtypes.bfloat16(1), sk.kernels.types.scalar_base)
assert sk.dtype_from_numpy(ml_dtypes.bfloat16) is sk.bfloat16
print("ok")
"""
    for first in ("", "import ml_dtypes\n"):  # (ml_dtypes already imported: an array of its dtype converts)
        extra = "b = sk.array(np.ones(2, ml_dtypes.bfloat16), device='cpu'); assert b.dtype is sk.bfloat16\n"
        code = script if not first else first + "import numpy as np, simkit as sk\n" + extra + "print('ok')\n"
        r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
        assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr[-2000:]


@sk.struct
class Sample:
    w: sk.bfloat16
    p: sk.vector(2, sk.bfloat16)


@sk.kernel
def k_struct(s: Sample, out: sk.array(dtype=Sample), f: sk.array(dtype=float)):
    r = Sample()
    r.w = s.w * 2.0
    r.p = s.p + sk.vector(s.w, s.w, dtype=sk.bfloat16)
    out[0] = r
    f[0] = sk.float32(s.w)


def test_struct_fields(device):
    s = Sample()
    s.w = 1.0 + 3 * 2**-8                                   # rounds (to even) to 1 + 2**-6
    s.p = sk.vector(2, sk.bfloat16)(0.5, -1.0)
    out = sk.zeros(1, dtype=Sample, device=device)
    f = sk.zeros(1, dtype=float, device=device)
    sk.launch(k_struct, dim=1, inputs=[s, out, f], device=device)
    assert f.numpy()[0] == 1.0 + 2**-6
    rec = out.numpy()[0]
    assert float(rec["w"]) == rnd(2 * (1.0 + 2**-6)) and rec["w"].dtype == BF
    np.testing.assert_array_equal(rec["p"].astype(np.float32), rnd([0.5 + 1.0 + 2**-6, -1.0 + 1.0 + 2**-6]))


def test_jax_round_trip():
    jnp = pytest.importorskip("jax.numpy")
    x = jnp.array([1.0, -2.5, 3.140625], dtype=jnp.bfloat16)
    a = sk.from_jax(x)
    assert a.dtype is sk.bfloat16
    np.testing.assert_array_equal(f32(a), [1.0, -2.5, 3.140625])
    y = sk.to_jax(sk.array([0.25, 8.0], dtype=sk.bfloat16, device="cpu"))
    assert y.dtype == jnp.bfloat16 and np.asarray(y, dtype=np.float32).tolist() == [0.25, 8.0]


@sk.kernel
def bf16_component_add(v: sk.array(dtype=sk.vector(3, sk.bfloat16)), out: sk.array(dtype=float)):
    i = sk.tid()
    v[0].y += sk.bfloat16(1.0)  # every thread on one element (the atomic component update, as float16's)
    out[i] = 1.0


def test_component_update_of_a_bfloat16_vector_element():
    v = sk.zeros(1, dtype=sk.vector(3, sk.bfloat16))
    out = sk.zeros(200, dtype=float)
    sk.launch(bf16_component_add, 200, inputs=[v, out])  # 200 is exact in bfloat16 (8 bits of mantissa)
    np.testing.assert_array_equal(np.asarray(v.numpy(), dtype=np.float32)[0], [0.0, 200.0, 0.0])

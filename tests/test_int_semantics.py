"""Integer and float semantics against Python/numpy (and Warp's documented rules):
integer ``/`` truncates, ``//`` floors, ``%`` takes the dividend's sign; int32 arithmetic wraps;
casts truncate toward zero and wrap; untyped literals adopt the other operand's type."""
import numpy as np
import pytest

import simkit as sk


def trunc_div(a, b):
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def floor_div(a, b):
    return a // b


def c_mod(a, b):  # the sign of the dividend (C's %)
    return a - trunc_div(a, b) * b


def wrap32(x):
    return int(np.array(x & 0xFFFFFFFF, dtype=np.uint32).astype(np.int32))


@sk.kernel
def k_int_ops(a: sk.array(dtype=int), b: sk.array(dtype=int), out: sk.array(dtype=int, ndim=2)):
    i = sk.tid()
    x = a[i]
    y = b[i]
    out[i, 0] = x / y
    out[i, 1] = x // y
    out[i, 2] = x % y
    out[i, 3] = x * 2147483647  # wraps
    out[i, 4] = x + 2147483647  # wraps
    out[i, 5] = -x
    out[i, 6] = x >> 1  # arithmetic shift
    out[i, 7] = x << 30
    out[i, 8] = x & y
    out[i, 9] = x | y
    out[i, 10] = x ^ y
    out[i, 11] = ~x
    out[i, 12] = x // 2  # with a literal
    out[i, 13] = x % 2
    out[i, 14] = x / 2
    out[i, 15] = sk.abs(x)
    out[i, 16] = sk.min(x, y)
    out[i, 17] = sk.max(x, y)
    out[i, 18] = sk.sign(x)  # Warp: sign(0) == 1
    out[i, 19] = sk.clamp(x, -3, 3)
    z = x
    z //= y
    out[i, 20] = z
    w = x
    w %= y
    out[i, 21] = w


A = np.array([7, -7, 7, -7, 0, 1, -1, 5, 2147483647, -2147483648, 13, -13, -2147483648], np.int32)
B = np.array([2, 2, -2, -2, 3, 1, 3, -5, 3, 3, 4, 4, 1], np.int32)


def test_int32_ops(device):
    n = len(A)
    out = sk.zeros((n, 22), dtype=int, device=device)
    sk.launch(k_int_ops, dim=n, inputs=[sk.array(A, device=device), sk.array(B, device=device), out], device=device)
    o = out.numpy()
    for i, (x, y) in enumerate(zip(A.tolist(), B.tolist())):
        ref = [wrap32(trunc_div(x, y)), wrap32(floor_div(x, y)), wrap32(c_mod(x, y)), wrap32(x * 2147483647),
               wrap32(x + 2147483647), wrap32(-x), x >> 1, wrap32(x << 30), x & y, x | y, x ^ y, ~x,
               x // 2, c_mod(x, 2), trunc_div(x, 2), wrap32(abs(x)), min(x, y), max(x, y),
               -1 if x < 0 else 1, min(max(x, -3), 3), wrap32(floor_div(x, y)), wrap32(c_mod(x, y))]
        assert o[i].tolist() == ref, (x, y)


def test_documented_examples(device):
    # DESIGN.md: -7/3 == -2, -7//3 == -3, -7%3 == -1
    a = sk.array(np.array([-7], np.int32), device=device)
    b = sk.array(np.array([3], np.int32), device=device)
    out = sk.zeros((1, 22), dtype=int, device=device)
    sk.launch(k_int_ops, dim=1, inputs=[a, b, out], device=device)
    assert out.numpy()[0, :3].tolist() == [-2, -3, -1]


@sk.kernel
def k_const_fold(out: sk.array(dtype=int)):
    # constant operands are folded at compile time: must agree with the runtime rules
    out[0] = -7 / 3
    out[1] = -7 // 3
    out[2] = -7 % 3
    out[3] = 7 % -3
    out[4] = 7 // -3
    out[5] = 7 / -3
    out[6] = 2147483647 + 1  # wraps like int32 at runtime
    out[7] = 65536 * 65536
    out[8] = 1 << 31


def test_constant_folding_matches_runtime(device):
    out = sk.zeros(9, dtype=int, device=device)
    sk.launch(k_const_fold, dim=1, inputs=[out], device=device)
    assert out.numpy().tolist() == [-2, -3, -1, 1, -3, -2, -2147483648, 0, -2147483648]


@sk.kernel
def k_unsigned_const_fold(x: sk.array(dtype=sk.uint64), out: sk.array(dtype=sk.uint64)):
    # folded constants that wrap below zero and back (the compiler failed on them: "isfinite not supported";
    # found by tools/fuzz_kernels.py), and the same arithmetic at run time
    out[0] = (sk.uint64(2) - sk.uint64(4)) + sk.uint64(7)
    out[1] = (x[0] - x[1]) + x[2]
    out[2] = sk.uint64(sk.uint8(3) - sk.uint8(5) + sk.uint8(9))
    out[3] = sk.uint64(0) - sk.uint64(1) - sk.uint64(1)


def test_folded_unsigned_constants_wrap_as_at_run_time(device):
    x = sk.array(np.array([2, 4, 7], dtype=np.uint64), dtype=sk.uint64, device=device)
    out = sk.zeros(4, dtype=sk.uint64, device=device)
    sk.launch(k_unsigned_const_fold, dim=1, inputs=[x, out], device=device)
    with np.errstate(over="ignore"):
        expected = [np.uint64(2) - np.uint64(4) + np.uint64(7), np.uint64(5),
                    np.uint64(np.uint8(3) - np.uint8(5) + np.uint8(9)), np.uint64(0) - np.uint64(2)]
    assert out.numpy().tolist() == [int(v) for v in expected]


@sk.kernel
def k_zero_div(a: sk.array(dtype=int), out: sk.array(dtype=int)):
    i = sk.tid()
    z = a[i] * 0
    out[i * 3 + 0] = a[i] / z
    out[i * 3 + 1] = a[i] // z
    out[i * 3 + 2] = a[i] % z


def test_integer_division_by_zero_is_zero(device):
    # docs/internals.md: integer division and modulo by zero return 0 (never a crash)
    a = sk.array(np.array([5, -5], np.int32), device=device)
    out = sk.full(6, 99, dtype=int, device=device)
    sk.launch(k_zero_div, dim=2, inputs=[a, out], device=device)
    assert out.numpy().tolist() == [0] * 6


@sk.kernel
def k_unsigned_and_wide(a: sk.array(dtype=int), out_u: sk.array(dtype=sk.uint32, ndim=2),
                        out_l: sk.array(dtype=sk.int64, ndim=2), out_s: sk.array(dtype=int, ndim=2)):
    i = sk.tid()
    x = a[i]
    u = sk.uint32(x)  # wraps mod 2**32
    out_u[i, 0] = u
    out_u[i, 1] = u / sk.uint32(3)
    out_u[i, 2] = u % sk.uint32(5)
    out_u[i, 3] = u >> sk.uint32(28)  # logical shift
    out_u[i, 4] = u * sk.uint32(3)
    out_u[i, 5] = u - sk.uint32(10)
    big = sk.int64(x)
    out_l[i, 0] = big * sk.int64(3000000000)
    out_l[i, 1] = big * sk.int64(3000000000) / sk.int64(7)
    out_l[i, 2] = big * sk.int64(3000000000) // sk.int64(-7)
    out_l[i, 3] = big * sk.int64(3000000000) % sk.int64(-7)
    out_l[i, 4] = big << sk.int64(33)
    out_s[i, 0] = int(sk.int8(x * 37))  # narrowing casts wrap
    out_s[i, 1] = int(sk.uint8(x * 37))
    out_s[i, 2] = int(sk.int16(x * 1000))
    out_s[i, 3] = int(sk.uint16(x))
    out_s[i, 4] = int(big * sk.int64(4))  # int64 -> int32 wraps


def test_unsigned_int64_and_narrowing(device):
    vals = np.array([7, -7, 0, 1, -1, 2147483647, -2147483648, 123456], np.int32)
    n = len(vals)
    ou = sk.zeros((n, 6), dtype=sk.uint32, device=device)
    ol = sk.zeros((n, 5), dtype=sk.int64, device=device)
    os_ = sk.zeros((n, 5), dtype=int, device=device)
    sk.launch(k_unsigned_and_wide, dim=n, inputs=[sk.array(vals, device=device), ou, ol, os_], device=device)
    for i, x in enumerate(vals.tolist()):
        u = x & 0xFFFFFFFF
        assert ou.numpy()[i].tolist() == [u, u // 3, u % 5, u >> 28, (u * 3) & 0xFFFFFFFF,
                                          (u - 10) & 0xFFFFFFFF], x
        p = x * 3000000000
        assert ol.numpy()[i].tolist() == [p, trunc_div(p, 7), floor_div(p, -7), c_mod(p, -7),
                                          int(np.int64(x) << np.int64(33))], x
        assert os_.numpy()[i].tolist() == [int(np.array(x * 37).astype(np.int8)),
                                           int(np.array(x * 37).astype(np.uint8)),
                                           int(np.array(x * 1000).astype(np.int16)),
                                           x & 0xFFFF, wrap32(x * 4)], x


@sk.kernel
def k_casts(f: sk.array(dtype=float), d: sk.array(dtype=sk.float64), out_i: sk.array(dtype=int, ndim=2),
            out_f: sk.array(dtype=float, ndim=2)):
    i = sk.tid()
    x = f[i]
    out_i[i, 0] = int(x)  # truncates toward zero
    out_i[i, 1] = int(sk.round(x))  # half away from zero
    out_i[i, 2] = int(sk.floor(x))
    out_i[i, 3] = int(sk.ceil(x))
    out_i[i, 4] = int(d[i])
    out_i[i, 5] = int(sk.int64(d[i]) / sk.int64(1000))
    out_i[i, 6] = int(sk.rint(x))  # half to even
    out_f[i, 0] = float(d[i])  # float64 -> float32 rounds
    out_f[i, 1] = float(int(x))
    out_f[i, 2] = float(sk.float16(x))
    out_f[i, 3] = sk.trunc(x)
    out_f[i, 4] = float(sk.uint32(sk.int64(d[i])))


def test_casts(device):
    fv = np.array([2.5, -2.5, 3.7, -3.7, 0.5, -0.5, 1.5, -1.5, 1000.25, -0.0], np.float32)
    dv = np.array([1.0 + 1e-9, -123456.789, 3e9, -1e9, 0.1, 2.5, -2.5, 7.0, 1e6, 65504.0], np.float64)
    dv[2] = 2147483647.0  # keep int() of float64 in int32 range
    n = len(fv)
    oi = sk.zeros((n, 7), dtype=int, device=device)
    of = sk.zeros((n, 5), device=device)
    sk.launch(k_casts, dim=n, inputs=[sk.array(fv, device=device), sk.array(dv, device=device), oi, of],
              device=device)
    for i in range(n):
        x, dd = float(fv[i]), float(dv[i])
        rnd = int(np.sign(x) * np.floor(abs(x) + 0.5))
        assert oi.numpy()[i].tolist() == [int(x), rnd, int(np.floor(x)), int(np.ceil(x)), int(dd),
                                          trunc_div(int(dd), 1000), int(np.rint(x))], x
        ref = [np.float32(dd), float(int(x)), float(np.float16(x)), float(np.trunc(x)),
               float(np.float32(int(dd) & 0xFFFFFFFF))]
        np.testing.assert_array_equal(of.numpy()[i], np.array(ref, np.float32))


@sk.kernel
def k_float_ops(f: sk.array(dtype=float), out: sk.array(dtype=float, ndim=2)):
    i = sk.tid()
    x = f[i]
    out[i, 0] = x / 2.0
    out[i, 1] = x // 2.0  # floor division of floats
    out[i, 2] = x % 2.0  # fmod: sign of the dividend (Warp semantics)
    out[i, 3] = x // -2.0
    out[i, 4] = x % -2.0
    out[i, 5] = x ** 2.0
    out[i, 6] = -x


def test_float_division_and_mod(device):
    fv = np.array([7.5, -7.5, 3.0, -3.0, 0.25, -0.25, 1e9, -1e9], np.float32)
    n = len(fv)
    out = sk.zeros((n, 7), device=device)
    sk.launch(k_float_ops, dim=n, inputs=[sk.array(fv, device=device), out], device=device)
    ref = np.stack([fv / 2, np.floor(fv / 2), np.fmod(fv, 2), np.floor(fv / -2), np.fmod(fv, -2),
                    fv ** 2, -fv], axis=1).astype(np.float32)
    np.testing.assert_allclose(out.numpy(), ref, rtol=1e-7)


@sk.kernel
def k_literal_promotion(f: sk.array(dtype=float), d: sk.array(dtype=sk.float64), h: sk.array(dtype=sk.float16),
                        out_f: sk.array(dtype=float), out_d: sk.array(dtype=sk.float64),
                        out_h: sk.array(dtype=sk.float16), out_i: sk.array(dtype=sk.int64)):
    x = f[0]
    out_f[0] = x * 2  # an int literal becomes float32
    out_f[1] = 2 + x
    out_f[2] = x / 4
    out_f[3] = 1 - x
    out_f[4] = sk.max(x, 3)
    out_f[5] = x * 0.1  # a float literal takes the operand's type
    y = d[0]
    out_d[0] = y * 0.1  # float64: the literal is float64, not a rounded float32
    out_d[1] = y + 1
    out_d[2] = y / 3
    out_d[3] = 0.1 * y
    z = h[0]
    out_h[0] = z * 2
    out_h[1] = z + 0.5
    k = sk.int64(3000000000)
    out_i[0] = k * 2  # an int literal adopts int64
    out_i[1] = k + 3000000000  # a literal outside int32 is int64
    s = float(0.0)
    s += 1  # augmented assignment with an int literal keeps float32
    s *= 3
    out_f[6] = s
    t = float(5.0)
    t = t - 1
    out_f[7] = t


def test_literal_promotion(device):
    f = sk.array(np.array([1.5], np.float32), device=device)
    d = sk.array(np.array([3.0], np.float64), device=device)
    h = sk.array(np.array([1.25], np.float16), device=device)
    of, od = sk.zeros(8, device=device), sk.zeros(4, dtype=sk.float64, device=device)
    oh, oi = sk.zeros(2, dtype=sk.float16, device=device), sk.zeros(2, dtype=sk.int64, device=device)
    sk.launch(k_literal_promotion, dim=1, inputs=[f, d, h, of, od, oh, oi], device=device)
    np.testing.assert_array_equal(of.numpy(), np.array([3.0, 3.5, 0.375, -0.5, 3.0, np.float32(1.5) *
                                                        np.float32(0.1), 3.0, 4.0], np.float32))
    np.testing.assert_array_equal(od.numpy(), [3.0 * 0.1, 4.0, 1.0, 0.1 * 3.0])
    np.testing.assert_array_equal(oh.numpy(), np.array([2.5, 1.75], np.float16))
    np.testing.assert_array_equal(oi.numpy(), [6000000000, 6000000000])


@sk.kernel
def k_comparisons(a: sk.array(dtype=int), f: sk.array(dtype=float), out: sk.array(dtype=int, ndim=2)):
    i = sk.tid()
    x = a[i]
    y = f[i]
    out[i, 0] = int(x < 0)
    out[i, 1] = int(x == 2)
    out[i, 2] = int(y >= 0.5)
    out[i, 3] = int(y != y)  # NaN
    out[i, 4] = int(x > 1 and y < 1.0)
    out[i, 5] = int(sk.uint32(x) > sk.uint32(1))  # unsigned comparison: -1 is huge
    out[i, 6] = int(x != 0 or y == 0.0)


def test_comparisons_and_bool_ints(device):
    av = np.array([-1, 0, 2, 5], np.int32)
    fv = np.array([0.5, np.nan, 0.0, -2.0], np.float32)
    out = sk.zeros((4, 7), dtype=int, device=device)
    sk.launch(k_comparisons, dim=4, inputs=[sk.array(av, device=device), sk.array(fv, device=device), out],
              device=device)
    for i, (x, y) in enumerate(zip(av.tolist(), fv.tolist())):
        ref = [x < 0, x == 2, y >= 0.5, y != y, x > 1 and y < 1.0, (x & 0xFFFFFFFF) > 1, x != 0 or y == 0.0]
        assert out.numpy()[i].tolist() == [int(r) for r in ref], (x, y)


@pytest.mark.parametrize("dtype,npt", [(sk.int8, np.int8), (sk.uint8, np.uint8), (sk.int16, np.int16),
                                       (sk.uint16, np.uint16), (sk.uint64, np.uint64)])
def test_small_and_unsigned_arithmetic_wraps(device, dtype, npt):
    k = _WRAP_KERNELS[dtype]
    info = np.iinfo(npt)
    vals = np.array([info.min, info.max, 0, 1, info.max // 2 + 1], dtype=npt)
    a = sk.array(vals, device=device)
    out = sk.zeros((len(vals), 4), dtype=dtype, device=device)
    sk.launch(k, dim=len(vals), inputs=[a, out], device=device)
    with np.errstate(over="ignore"):
        ref = np.stack([vals + npt(1), vals - npt(1), vals * npt(3), vals // npt(3)], axis=1).astype(npt)
    np.testing.assert_array_equal(out.numpy(), ref)


def _make_wrap_kernel(dtype):
    @sk.kernel
    def k(a: sk.array(dtype=dtype), out: sk.array(dtype=dtype, ndim=2)):
        i = sk.tid()
        x = a[i]
        out[i, 0] = x + dtype(1)
        out[i, 1] = x - dtype(1)
        out[i, 2] = x * dtype(3)
        out[i, 3] = x // dtype(3)

    return k


_WRAP_KERNELS = {t: _make_wrap_kernel(t) for t in (sk.int8, sk.uint8, sk.int16, sk.uint16, sk.uint64)}


@sk.kernel
def k_literal_merges(c: sk.array(dtype=int), out: sk.array(dtype=float, ndim=2)):
    i = sk.tid()
    if c[i] > 0:
        x = 1
    else:
        x = 2.5  # the int literal of the other branch becomes float32: 2.5 is not truncated
    out[i, 0] = x
    out[i, 1] = 3 if c[i] > 0 else 0.5
    out[i, 2] = 1.0 if c[i] > 0 else 2
    y = 0.0
    for k in range(c[i] + 2):
        y = 2  # an int literal assigned to a float32 loop variable
    out[i, 3] = y


def test_literal_merges_keep_float_values(device):
    c = sk.array(np.array([1, -1], np.int32), device=device)
    out = sk.zeros((2, 4), device=device)
    sk.launch(k_literal_merges, dim=2, inputs=[c, out], device=device)
    np.testing.assert_array_equal(out.numpy(), [[1.0, 3.0, 1.0, 2.0], [2.5, 0.5, 2.0, 2.0]])


mat22i = sk.types.matrix((2, 2), sk.int32)


@sk.kernel
def k_bitwise_values(a: sk.array(dtype=sk.vec3i), b: sk.array(dtype=sk.vec3i), s: sk.array(dtype=sk.vec3i),
                     m: sk.array(dtype=mat22i), n: sk.array(dtype=mat22i), out: sk.array(dtype=sk.vec3i, ndim=2),
                     mout: sk.array(dtype=mat22i, ndim=2)):
    i = sk.tid()
    x, y = a[i], b[i]
    out[i, 0] = x & y
    out[i, 1] = x | y
    out[i, 2] = x ^ y
    out[i, 3] = ~x
    out[i, 4] = x << s[i]
    out[i, 5] = y >> s[i]
    mout[i, 0] = (m[i] & n[i]) | (~m[i] ^ n[i])
    mout[i, 1] = m[i] << n[i]


def test_bitwise_operators_of_integer_vectors_and_matrices(device):
    rng = np.random.default_rng(3)
    an = rng.integers(-1000, 1000, (16, 3), dtype=np.int32)
    bn = rng.integers(-1000, 1000, (16, 3), dtype=np.int32)
    sn = rng.integers(0, 31, (16, 3), dtype=np.int32)
    mn = rng.integers(-50, 50, (16, 2, 2), dtype=np.int32)
    nn = rng.integers(0, 20, (16, 2, 2), dtype=np.int32)
    arrs = [sk.array(v, dtype=t, device=device) for v, t in
            ((an, sk.vec3i), (bn, sk.vec3i), (sn, sk.vec3i), (mn, mat22i), (nn, mat22i))]
    out = sk.zeros((16, 6), dtype=sk.vec3i, device=device)
    mout = sk.zeros((16, 2), dtype=mat22i, device=device)
    sk.launch(k_bitwise_values, 16, inputs=arrs + [out, mout], device=device)
    o = out.numpy()
    for k, want in enumerate((an & bn, an | bn, an ^ bn, ~an, an << sn, bn >> sn)):
        np.testing.assert_array_equal(o[:, k], want)
    np.testing.assert_array_equal(mout.numpy()[:, 0], (mn & nn) | (~mn ^ nn))
    np.testing.assert_array_equal(mout.numpy()[:, 1], mn << nn)


@sk.kernel
def k_minus_one_div(a: sk.array(dtype=int), b: sk.array(dtype=int), out: sk.array(dtype=int, ndim=2)):
    i = sk.tid()
    out[i, 0] = a[i] / b[i]
    out[i, 1] = a[i] // b[i]
    out[i, 2] = a[i] % b[i]


def test_division_by_minus_one_and_zero_never_traps(device):
    # (the divisor is made safe by a select: INT_MIN / -1 would trap in hardware; native/scalar.h)
    a = np.array([-2147483648, 7, -7, 0, 2147483647, -2147483648, 9], np.int32)
    b = np.array([-1, -1, -1, -1, 0, 0, 4], np.int32)
    out = sk.zeros((len(a), 3), dtype=int, device=device)
    sk.launch(k_minus_one_div, dim=len(a), inputs=[sk.array(a, device=device), sk.array(b, device=device), out],
              device=device)
    want = [[wrap32(-x), wrap32(-x), 0] if y == -1 else [0, 0, 0] if y == 0 else
            [trunc_div(x, y), floor_div(x, y), c_mod(x, y)] for x, y in zip(a.tolist(), b.tolist())]
    assert out.numpy().tolist() == want

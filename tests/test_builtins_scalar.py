"""Scalar builtins against numpy / exact integer references, on every device.

Kernels are built at import time (one per dtype and builtin family) so one C++
compile serves the whole file. Each family kernel gives every builtin its own
input row, so each one is tested on its own domain, and the same kernels
serve the gradient tests (tape gradients against central differences).
"""
import math

import numpy as np
import pytest

import simkit as sk

needs_tape = pytest.mark.skipif(not hasattr(sk, "Tape"), reason="autodiff (sk.Tape) not available yet")

FLOATS = {"float16": sk.float16, "float32": sk.float32, "float64": sk.float64}
INTS = {"int8": sk.int8, "uint8": sk.uint8, "int16": sk.int16, "uint16": sk.uint16,
        "int32": sk.int32, "uint32": sk.uint32, "int64": sk.int64, "uint64": sk.uint64}
NP = {"float16": np.float16, "float32": np.float32, "float64": np.float64, "int8": np.int8,
      "uint8": np.uint8, "int16": np.int16, "uint16": np.uint16, "int32": np.int32, "uint32": np.uint32,
      "int64": np.int64, "uint64": np.uint64, "bool": np.bool_}
# (rtol, atol) per float dtype for one correctly-rounded-ish operation
TOL = {"float16": (2e-3, 2e-3), "float32": (2e-5, 1e-6), "float64": (1e-12, 1e-13)}
N = 64  # samples per builtin


def rng(seed=0):
    return np.random.default_rng(seed)


# ---------------------------------------------------------------------------
# Float unary functions: y[j, i] = f_j(x[j, i])


def _clip1(x):
    return np.clip(x, -1.0, 1.0)


def _round_half_away(x):
    return np.sign(x) * np.floor(np.abs(x) + 0.5)


HALVES = np.array([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, -0.0, 0.0])

# name, numpy reference (float64), input domain (lo, hi), extra inputs
UNARY = [
    ("sin", np.sin, (-1.5, 1.5), []),
    ("cos", np.cos, (-1.5, 1.5), []),
    ("tan", np.tan, (-1.2, 1.2), []),
    ("asin", lambda x: np.arcsin(_clip1(x)), (-0.95, 0.95), [-1.0, 1.0, -1.5, 1.5]),
    ("acos", lambda x: np.arccos(_clip1(x)), (-0.95, 0.95), [-1.0, 1.0, -1.5, 1.5]),
    ("atan", np.arctan, (-5.0, 5.0), []),
    ("sinh", np.sinh, (-3.0, 3.0), []),
    ("cosh", np.cosh, (-3.0, 3.0), []),
    ("tanh", np.tanh, (-3.0, 3.0), []),
    ("exp", np.exp, (-5.0, 5.0), []),
    ("log", np.log, (0.1, 10.0), []),
    ("log2", np.log2, (0.1, 10.0), [1.0, 2.0, 8.0]),
    ("log10", np.log10, (0.1, 10.0), [1.0, 10.0]),
    ("sqrt", np.sqrt, (0.05, 10.0), [0.0, 4.0]),
    ("cbrt", np.cbrt, (-10.0, 10.0), [-8.0, 27.0]),
    ("degrees", np.degrees, (-3.0, 3.0), []),
    ("radians", np.radians, (-180.0, 180.0), []),
    ("abs", np.abs, (-5.0, 5.0), [0.0]),
    ("neg", np.negative, (-5.0, 5.0), []),
    ("pos", lambda x: x, (-5.0, 5.0), []),
    ("floor", np.floor, (-5.0, 5.0), list(HALVES)),
    ("ceil", np.ceil, (-5.0, 5.0), list(HALVES)),
    ("trunc", np.trunc, (-5.0, 5.0), list(HALVES)),
    ("round", _round_half_away, (-5.0, 5.0), list(HALVES)),  # halves away from zero
    ("rint", np.rint, (-5.0, 5.0), list(HALVES)),  # halves to even
    ("frac", lambda x: x - np.trunc(x), (-5.0, 5.0), [-2.75, 2.75, 3.0]),
    ("sign", lambda x: np.where(x < 0, -1.0, 1.0), (-5.0, 5.0), [0.0, -0.0]),  # sign(0) == 1
    ("step", lambda x: np.where(x < 0, 1.0, 0.0), (-5.0, 5.0), [0.0, -0.0]),
    ("nonzero", lambda x: np.where(x == 0, 0.0, 1.0), (-5.0, 5.0), [0.0, -0.0]),
    ("erf", None, (-2.0, 2.0), []),
    ("erfc", None, (-2.0, 2.0), []),
    ("erfinv", None, (-0.95, 0.95), [0.0]),
    ("erfcinv", None, (0.05, 1.95), [1.0]),
]
UNARY_NAMES = [u[0] for u in UNARY]
NONDIFF = {"floor", "ceil", "trunc", "round", "rint", "sign", "step", "nonzero"}


def _unary_kernel(dtype):
    @sk.kernel
    def unary(x: sk.array(dtype=dtype, ndim=2), y: sk.array(dtype=dtype, ndim=2)):
        i = sk.tid()
        y[0, i] = sk.sin(x[0, i])
        y[1, i] = sk.cos(x[1, i])
        y[2, i] = sk.tan(x[2, i])
        y[3, i] = sk.asin(x[3, i])
        y[4, i] = sk.acos(x[4, i])
        y[5, i] = sk.atan(x[5, i])
        y[6, i] = sk.sinh(x[6, i])
        y[7, i] = sk.cosh(x[7, i])
        y[8, i] = sk.tanh(x[8, i])
        y[9, i] = sk.exp(x[9, i])
        y[10, i] = sk.log(x[10, i])
        y[11, i] = sk.log2(x[11, i])
        y[12, i] = sk.log10(x[12, i])
        y[13, i] = sk.sqrt(x[13, i])
        y[14, i] = sk.cbrt(x[14, i])
        y[15, i] = sk.degrees(x[15, i])
        y[16, i] = sk.radians(x[16, i])
        y[17, i] = abs(x[17, i])
        y[18, i] = -x[18, i]
        y[19, i] = +x[19, i]
        y[20, i] = sk.floor(x[20, i])
        y[21, i] = sk.ceil(x[21, i])
        y[22, i] = sk.trunc(x[22, i])
        y[23, i] = sk.round(x[23, i])
        y[24, i] = sk.rint(x[24, i])
        y[25, i] = sk.frac(x[25, i])
        y[26, i] = sk.sign(x[26, i])
        y[27, i] = sk.step(x[27, i])
        y[28, i] = sk.nonzero(x[28, i])
        y[29, i] = sk.erf(x[29, i])
        y[30, i] = sk.erfc(x[30, i])
        y[31, i] = sk.erfinv(x[31, i])
        y[32, i] = sk.erfcinv(x[32, i])

    return unary


def _binary_kernel(dtype):
    @sk.kernel
    def binary(a: sk.array(dtype=dtype, ndim=2), b: sk.array(dtype=dtype, ndim=2),
               y: sk.array(dtype=dtype, ndim=2)):
        i = sk.tid()
        y[0, i] = a[0, i] + b[0, i]
        y[1, i] = a[1, i] - b[1, i]
        y[2, i] = a[2, i] * b[2, i]
        y[3, i] = a[3, i] / b[3, i]
        y[4, i] = a[4, i] // b[4, i]
        y[5, i] = a[5, i] % b[5, i]
        y[6, i] = a[6, i] ** b[6, i]
        y[7, i] = sk.pow(a[7, i], b[7, i])
        y[8, i] = sk.atan2(a[8, i], b[8, i])
        y[9, i] = sk.copysign(a[9, i], b[9, i])
        y[10, i] = sk.min(a[10, i], b[10, i])
        y[11, i] = sk.max(a[11, i], b[11, i])
        y[12, i] = min(a[12, i], b[12, i])
        y[13, i] = max(a[13, i], b[13, i])

    return binary


def _ternary_kernel(dtype):
    @sk.kernel
    def ternary(a: sk.array(dtype=dtype, ndim=2), b: sk.array(dtype=dtype, ndim=2),
                c: sk.array(dtype=dtype, ndim=2), y: sk.array(dtype=dtype, ndim=2)):
        i = sk.tid()
        y[0, i] = sk.clamp(a[0, i], b[0, i], c[0, i])
        y[1, i] = sk.lerp(a[1, i], b[1, i], c[1, i])
        y[2, i] = sk.smoothstep(a[2, i], b[2, i], c[2, i])

    return ternary


def _compare_kernel(dtype):
    @sk.kernel
    def compare(a: sk.array(dtype=dtype), b: sk.array(dtype=dtype), y: sk.array(dtype=sk.bool, ndim=2)):
        i = sk.tid()
        y[0, i] = a[i] < b[i]
        y[1, i] = a[i] <= b[i]
        y[2, i] = a[i] > b[i]
        y[3, i] = a[i] >= b[i]
        y[4, i] = a[i] == b[i]
        y[5, i] = a[i] != b[i]
        y[6, i] = sk.isfinite(a[i])
        y[7, i] = sk.isnan(a[i])
        y[8, i] = sk.isinf(a[i])

    return compare


def _where_kernel(dtype):
    @sk.kernel
    def where(c: sk.array(dtype=sk.bool), ci: sk.array(dtype=sk.int32), a: sk.array(dtype=dtype),
              b: sk.array(dtype=dtype), y: sk.array(dtype=dtype, ndim=2)):
        i = sk.tid()
        y[0, i] = sk.where(c[i], a[i], b[i])
        y[1, i] = sk.where(ci[i], a[i], b[i])
        y[2, i] = sk.select(c[i], a[i], b[i])
        y[3, i] = sk.select(ci[i], a[i], b[i])
        y[4, i] = a[i] if c[i] else b[i]

    return where


UNARY_K = {n: _unary_kernel(t) for n, t in FLOATS.items()}
BINARY_K = {n: _binary_kernel(t) for n, t in FLOATS.items()}
TERNARY_K = {n: _ternary_kernel(t) for n, t in FLOATS.items()}
COMPARE_K = {n: _compare_kernel(t) for n, t in {**FLOATS, **INTS}.items()}
WHERE_K = {n: _where_kernel(t) for n, t in {**FLOATS, "int32": sk.int32, "uint8": sk.uint8}.items()}


def _rows(domains, extras, dt, seed):
    """(len(domains), N) inputs in dtype dt: random in each domain, extras first."""
    r = rng(seed)
    x = np.empty((len(domains), N))
    for j, ((lo, hi), ex) in enumerate(zip(domains, extras)):
        x[j] = r.uniform(lo, hi, N)
        x[j, : len(ex)] = ex
    return x.astype(NP[dt])


def _launch(kernel, inputs, out_shape, out_dtype, device, requires_grad=False):
    arrs = [sk.array(a, dtype=t, device=device, requires_grad=requires_grad) for a, t in inputs]
    y = sk.zeros(out_shape, dtype=out_dtype, device=device, requires_grad=requires_grad)
    sk.launch(kernel, dim=out_shape[-1], inputs=arrs, outputs=[y], device=device)
    return arrs, y


def _check(name, got, want, dt, rtol_scale=1.0):
    rtol, atol = TOL[dt]
    np.testing.assert_allclose(got.astype(np.float64), want, rtol=rtol * rtol_scale, atol=atol * rtol_scale,
                               err_msg=f"{name} ({dt})")


def _special(name, x):
    special = pytest.importorskip("scipy.special")
    return {"erf": special.erf, "erfc": special.erfc, "erfinv": special.erfinv, "erfcinv": special.erfcinv}[name](x)


@pytest.mark.parametrize("dt", FLOATS)
def test_unary_float(device, dt):
    x = _rows([u[2] for u in UNARY], [u[3] for u in UNARY], dt, 1)
    _, y = _launch(UNARY_K[dt], [(x, FLOATS[dt])], x.shape, FLOATS[dt], device)
    got = y.numpy()
    xd = x.astype(np.float64)
    for j, (name, ref, _, _) in enumerate(UNARY):
        want = _special(name, xd[j]) if ref is None else ref(xd[j])
        if dt == "float16":  # the result is rounded to half: compare against the rounded reference
            want = want.astype(np.float16).astype(np.float64)
        scale = 4.0 if name in ("tan", "erfcinv", "erfinv", "cosh", "sinh", "exp") else 1.0
        _check(name, got[j], want, dt, scale)


def test_rounding_ties_exact(device):
    """round: halves away from zero, rint: halves to even, sign(+-0) == 1."""
    x = _rows([u[2] for u in UNARY], [u[3] for u in UNARY], "float32", 1)
    _, y = _launch(UNARY_K["float32"], [(x, sk.float32)], x.shape, sk.float32, device)
    got = y.numpy()
    r = UNARY_NAMES.index
    assert got[r("round"), :6].tolist() == [-3.0, -2.0, -1.0, 1.0, 2.0, 3.0]
    assert got[r("rint"), :6].tolist() == [-2.0, -2.0, -0.0, 0.0, 2.0, 2.0]
    assert got[r("sign"), :2].tolist() == [1.0, 1.0]
    assert got[r("step"), :2].tolist() == [0.0, 0.0]
    assert got[r("nonzero"), :2].tolist() == [0.0, 0.0]
    assert got[r("frac"), :3].tolist() == [-0.75, 0.75, 0.0]
    assert got[r("asin"), 2:4].tolist() == pytest.approx([-math.pi / 2, math.pi / 2])  # clamped


BINARY = [
    ("add", np.add, (-5, 5), (-5, 5)),
    ("sub", np.subtract, (-5, 5), (-5, 5)),
    ("mul", np.multiply, (-5, 5), (-5, 5)),
    ("div", np.divide, (-5, 5), (0.5, 4)),
    ("floordiv", None, (-9, 9), (0.3, 4)),
    ("mod", np.fmod, (-9, 9), (0.3, 4)),
    ("pow", np.power, (0.1, 3), (-2, 2)),
    ("pow", np.power, (0.1, 3), (-2, 2)),
    ("atan2", np.arctan2, (-2, 2), (-2, 2)),
    ("copysign", np.copysign, (-3, 3), (-3, 3)),
    ("min", np.fmin, (-5, 5), (-5, 5)),
    ("max", np.fmax, (-5, 5), (-5, 5)),
    ("min", np.fmin, (-5, 5), (-5, 5)),
    ("max", np.fmax, (-5, 5), (-5, 5)),
]
BINARY_EXTRA_A = {"floordiv": [-7.0, 7.0, -7.0, 6.0], "mod": [-7.0, 7.0, -7.5, 7.5],
                  "min": [math.nan, 1.0, math.nan], "max": [math.nan, 1.0, math.nan],
                  "copysign": [2.0, -2.0]}
BINARY_EXTRA_B = {"floordiv": [2.0, -2.0, -2.0, -3.0], "mod": [3.0, -3.0, 2.0, -2.0],
                  "min": [1.0, math.nan, math.nan], "max": [1.0, math.nan, math.nan],
                  "copysign": [-0.0, 0.0]}


def _binary_inputs(dt):
    a = _rows([d[2] for d in BINARY], [BINARY_EXTRA_A.get(d[0], []) for d in BINARY], dt, 2)
    b = _rows([d[3] for d in BINARY], [BINARY_EXTRA_B.get(d[0], []) for d in BINARY], dt, 3)
    return a, b


@pytest.mark.parametrize("dt", FLOATS)
def test_binary_float(device, dt):
    a, b = _binary_inputs(dt)
    _, y = _launch(BINARY_K[dt], [(a, FLOATS[dt]), (b, FLOATS[dt])], a.shape, FLOATS[dt], device)
    got = y.numpy()
    calc = np.float32 if dt == "float16" else NP[dt]  # float16 computes in float32
    for j, (name, ref, _, _) in enumerate(BINARY):
        aj, bj = a[j].astype(np.float64), b[j].astype(np.float64)
        if name == "floordiv":  # floor of the quotient as computed in the calc type
            want = np.floor((a[j].astype(calc) / b[j].astype(calc)).astype(np.float64))
        else:
            with np.errstate(all="ignore"):
                want = ref(aj, bj)
        if dt == "float16":
            want = want.astype(np.float16).astype(np.float64)
        _check(f"{name} (row {j})", got[j], want, dt, 4.0 if name == "pow" else 1.0)
    # Warp semantics on exact values
    assert got[4, :4].tolist() == [-4.0, -4.0, 3.0, -2.0]  # floordiv floors
    assert got[5, :4].tolist() == [-1.0, 1.0, -1.5, 1.5]  # mod takes the dividend's sign
    assert got[10, :2].tolist() == [1.0, 1.0] and math.isnan(got[10, 2])  # NaN operands are ignored
    assert got[11, :2].tolist() == [1.0, 1.0] and math.isnan(got[11, 2])


TERNARY = ["clamp", "lerp", "smoothstep"]


def _ternary_inputs(dt):
    r = rng(4)
    lo = r.uniform(-2, 0, N)
    a = np.stack([r.uniform(-4, 4, N), r.uniform(-3, 3, N), lo])
    b = np.stack([lo, r.uniform(-3, 3, N), lo + r.uniform(0.5, 3, N)])
    c = np.stack([lo + r.uniform(0.5, 3, N), r.uniform(-0.5, 1.5, N), r.uniform(-3, 4, N)])
    b[2, :4] = [-1.0, 1.0, -1.0, 1.0]  # smoothstep with reversed edges too
    a[2, :4] = [1.0, -1.0, 1.0, -1.0]
    c[2, :4] = [0.0, 0.0, 2.0, 2.0]
    return a.astype(NP[dt]), b.astype(NP[dt]), c.astype(NP[dt])


def _ternary_ref(name, a, b, c):
    if name == "clamp":
        return np.minimum(np.maximum(a, b), c)
    if name == "lerp":
        return a * (1 - c) + b * c
    t = np.clip((c - a) / (b - a), 0.0, 1.0)
    return t * t * (3 - 2 * t)


@pytest.mark.parametrize("dt", FLOATS)
def test_ternary_float(device, dt):
    a, b, c = _ternary_inputs(dt)
    t = FLOATS[dt]
    _, y = _launch(TERNARY_K[dt], [(a, t), (b, t), (c, t)], a.shape, t, device)
    got = y.numpy()
    for j, name in enumerate(TERNARY):
        want = _ternary_ref(name, *(v[j].astype(np.float64) for v in (a, b, c)))
        if dt == "float16":
            want = want.astype(np.float16).astype(np.float64)
        _check(name, got[j], want, dt, 2.0)
    assert got[2, :4].tolist() == [0.5, 0.5, 0.0, 1.0]


def _compare_inputs(dt):
    r = rng(5)
    if dt in FLOATS:
        a = r.integers(-3, 4, N).astype(np.float64)
        b = r.integers(-3, 4, N).astype(np.float64)
        a[:4] = [math.nan, math.inf, -math.inf, 1.0]
        b[:4] = [1.0, math.inf, 0.0, math.nan]
    else:
        info = np.iinfo(NP[dt])
        a = r.integers(max(info.min, -3), 4, N)
        b = r.integers(max(info.min, -3), 4, N)
    return a.astype(NP[dt]), b.astype(NP[dt])


@pytest.mark.parametrize("dt", list(FLOATS) + list(INTS))
def test_compare_and_classify(device, dt):
    a, b = _compare_inputs(dt)
    t = {**FLOATS, **INTS}[dt]
    _, y = _launch(COMPARE_K[dt], [(a, t), (b, t)], (9, N), sk.bool, device)
    got = y.numpy()
    with np.errstate(invalid="ignore"):
        want = [a < b, a <= b, a > b, a >= b, a == b, a != b]
    if dt in FLOATS:
        want += [np.isfinite(a), np.isnan(a), np.isinf(a)]
    else:
        want += [np.ones(N, bool), np.zeros(N, bool), np.zeros(N, bool)]
    for j, w in enumerate(want):
        np.testing.assert_array_equal(got[j], w, err_msg=f"row {j} ({dt})")


@pytest.mark.parametrize("dt", list(WHERE_K))
def test_where_select(device, dt):
    r = rng(6)
    c = r.integers(0, 2, N).astype(bool)
    ci = (r.integers(0, 3, N) * r.choice([-1, 1], N)).astype(np.int32)
    a = r.integers(0, 100, N).astype(NP[dt])
    b = r.integers(0, 100, N).astype(NP[dt])
    t = {**FLOATS, **INTS}[dt]
    _, y = _launch(WHERE_K[dt], [(c, sk.bool), (ci, sk.int32), (a, t), (b, t)], (5, N), t, device)
    got = y.numpy()
    np.testing.assert_array_equal(got[0], np.where(c, a, b))  # where(c, if_true, if_false)
    np.testing.assert_array_equal(got[1], np.where(ci != 0, a, b))
    np.testing.assert_array_equal(got[2], np.where(c, b, a))  # select(c, if_false, if_true)
    np.testing.assert_array_equal(got[3], np.where(ci != 0, b, a))
    np.testing.assert_array_equal(got[4], np.where(c, a, b))


# ---------------------------------------------------------------------------
# Integers: exact references with Python integers, wrapped to the dtype

INT_OPS = ["add", "sub", "mul", "div", "floordiv", "mod", "min", "max", "bit_and", "bit_or", "bit_xor",
           "invert", "neg", "abs", "sign", "step", "nonzero", "clamp", "lshift", "rshift", "pow",
           "min_py", "max_py", "abs_py"]


def _int_kernel(dtype):
    @sk.kernel
    def ints(a: sk.array(dtype=dtype), b: sk.array(dtype=dtype), s: sk.array(dtype=dtype),
             y: sk.array(dtype=dtype, ndim=2)):
        i = sk.tid()
        x = a[i]
        z = b[i]
        y[0, i] = x + z
        y[1, i] = x - z
        y[2, i] = x * z
        y[3, i] = x / z
        y[4, i] = x // z
        y[5, i] = x % z
        y[6, i] = sk.min(x, z)
        y[7, i] = sk.max(x, z)
        y[8, i] = x & z
        y[9, i] = x | z
        y[10, i] = x ^ z
        y[11, i] = ~x
        y[12, i] = -x
        y[13, i] = sk.abs(x)
        y[14, i] = sk.sign(x)
        y[15, i] = sk.step(x)
        y[16, i] = sk.nonzero(x)
        y[17, i] = sk.clamp(x, sk.min(z, s[i]), sk.max(z, s[i]))
        y[18, i] = x << s[i]
        y[19, i] = x >> s[i]
        y[20, i] = x ** s[i]
        y[21, i] = min(x, z)
        y[22, i] = max(x, z)
        y[23, i] = abs(x)

    return ints


INT_K = {n: _int_kernel(t) for n, t in INTS.items()}


def _wrap(v, dt):
    info = np.iinfo(NP[dt])
    bits = info.bits
    v &= (1 << bits) - 1
    if info.min < 0 and v >= 1 << (bits - 1):
        v -= 1 << bits
    return v


def _tdiv(x, z):
    q = abs(x) // abs(z)
    return q if (x < 0) == (z < 0) else -q


def _int_ref(op, x, z, s, dt):
    if op in ("div", "floordiv", "mod") and z == 0:
        return 0
    f = {
        "add": lambda: x + z, "sub": lambda: x - z, "mul": lambda: x * z, "div": lambda: _tdiv(x, z),
        "floordiv": lambda: x // z, "mod": lambda: x - z * _tdiv(x, z), "min": lambda: min(x, z),
        "max": lambda: max(x, z), "bit_and": lambda: x & z, "bit_or": lambda: x | z,
        "bit_xor": lambda: x ^ z, "invert": lambda: ~x, "neg": lambda: -x, "abs": lambda: abs(x),
        "sign": lambda: -1 if x < 0 else 1, "step": lambda: 1 if x < 0 else 0,
        "nonzero": lambda: 0 if x == 0 else 1, "clamp": lambda: min(max(x, min(z, s)), max(z, s)),
        "lshift": lambda: x << s, "rshift": lambda: x >> s, "pow": lambda: x ** (s % 6),
        "min_py": lambda: min(x, z), "max_py": lambda: max(x, z), "abs_py": lambda: abs(x),
    }[op]
    return _wrap(f(), dt)


def _int_inputs(dt):
    info = np.iinfo(NP[dt])
    r = rng(7)
    special = [(-7, 3), (7, -3), (-7, -3), (7, 3), (-6, 3), (5, 0), (0, 0), (info.min, -1), (info.min, 1),
               (info.max, 1), (info.max, info.max), (info.min, info.min), (-1, 2), (1, -2), (0, 5)]
    special = [(x, z) for x, z in special if info.min <= x <= info.max and info.min <= z <= info.max]
    a = [int(v) for v in r.integers(info.min, info.max, N, endpoint=True, dtype=NP[dt])]
    b = [int(v) for v in r.integers(info.min, info.max, N, endpoint=True, dtype=NP[dt])]
    small = [int(v) for v in r.integers(max(info.min, -40), min(info.max, 40), N // 2, endpoint=True)]
    a[N // 2:] = small
    b[N // 2:] = [v if v != 0 else 3 for v in reversed(small)]
    for k, (x, z) in enumerate(special):
        a[k], b[k] = x, z
    s = [int(v) for v in r.integers(0, info.bits, N)]
    return a, b, s


@pytest.mark.parametrize("dt", INTS)
def test_int_ops(device, dt):
    a, b, s = _int_inputs(dt)
    t = INTS[dt]
    # the pow row uses s % 6 as exponent: feed that through a separate launch input
    _, y = _launch(INT_K[dt], [(np.array(a, dtype=NP[dt]), t), (np.array(b, dtype=NP[dt]), t),
                               (np.array(s, dtype=NP[dt]), t)], (len(INT_OPS), N), t, device)
    got = y.numpy()
    _, ypow = _launch(INT_K[dt], [(np.array(a, dtype=NP[dt]), t), (np.array(b, dtype=NP[dt]), t),
                                  (np.array([v % 6 for v in s], dtype=NP[dt]), t)], (len(INT_OPS), N), t, device)
    got[INT_OPS.index("pow")] = ypow.numpy()[INT_OPS.index("pow")]
    for j, op in enumerate(INT_OPS):
        want = [_int_ref(op, x, z, sh, dt) for x, z, sh in zip(a, b, s)]
        bad = [(x, z, sh, int(g), w) for x, z, sh, g, w in zip(a, b, s, got[j], want) if int(g) != w]
        assert not bad, f"{op} ({dt}): (a, b, s, got, want) {bad[:5]}"


def test_int_semantics_examples(device):
    """The documented Warp examples, explicitly."""
    a, b, s = _int_inputs("int32")
    _, y = _launch(INT_K["int32"], [(np.array(a, np.int32), sk.int32), (np.array(b, np.int32), sk.int32),
                                    (np.array(s, np.int32), sk.int32)], (len(INT_OPS), N), sk.int32, device)
    got = y.numpy()
    div, fdiv, mod = (got[INT_OPS.index(k)] for k in ("div", "floordiv", "mod"))
    assert (div[0], fdiv[0], mod[0]) == (-2, -3, -1)  # -7 / 3, -7 // 3, -7 % 3
    assert (div[1], fdiv[1], mod[1]) == (-2, -3, 1)  # 7 / -3, 7 // -3, 7 % -3
    assert (div[5], fdiv[5], mod[5]) == (0, 0, 0)  # 5 / 0: no crash, 0
    assert div[7] == np.iinfo(np.int32).min and mod[7] == 0  # INT_MIN / -1 wraps


# ---------------------------------------------------------------------------
# Casts: float32(x), int(x), uint8(x), bool(x), ...

TARGETS = ["float16", "float32", "float64", "int8", "uint8", "int16", "uint16", "int32", "uint32",
           "int64", "uint64", "bool", "int_py", "float_py", "bool_py"]


def _cast_kernel(src):
    @sk.kernel
    def casts(x: sk.array(dtype=src), f16: sk.array(dtype=sk.float16), f32: sk.array(dtype=sk.float32),
              f64: sk.array(dtype=sk.float64), i8: sk.array(dtype=sk.int8), u8: sk.array(dtype=sk.uint8),
              i16: sk.array(dtype=sk.int16), u16: sk.array(dtype=sk.uint16), i32: sk.array(dtype=sk.int32),
              u32: sk.array(dtype=sk.uint32), i64: sk.array(dtype=sk.int64), u64: sk.array(dtype=sk.uint64),
              b: sk.array(dtype=sk.bool), ipy: sk.array(dtype=sk.int32), fpy: sk.array(dtype=sk.float32),
              bpy: sk.array(dtype=sk.bool)):
        i = sk.tid()
        v = x[i]
        f16[i] = sk.float16(v)
        f32[i] = sk.float32(v)
        f64[i] = sk.float64(v)
        i8[i] = sk.int8(v)
        u8[i] = sk.uint8(v)
        i16[i] = sk.int16(v)
        u16[i] = sk.uint16(v)
        i32[i] = sk.int32(v)
        u32[i] = sk.uint32(v)
        i64[i] = sk.int64(v)
        u64[i] = sk.uint64(v)
        b[i] = sk.bool(v)
        ipy[i] = int(v)
        fpy[i] = float(v)
        bpy[i] = bool(v)

    return casts


SOURCES = {**FLOATS, **INTS, "bool": sk.bool}
CAST_K = {n: _cast_kernel(t) for n, t in SOURCES.items()}


def _cast_ref(x, src, dst):
    dst = {"int_py": "int32", "float_py": "float32", "bool_py": "bool"}.get(dst, dst)
    if dst == "bool":
        return x != 0
    if src in FLOATS and dst not in FLOATS:  # truncate toward zero, then wrap
        return np.trunc(x.astype(np.float64)).astype(np.int64).astype(NP[dst])
    if src == "float64" and dst == "float16":  # through float32, as sk.half(double) does
        return x.astype(np.float32).astype(np.float16)
    return x.astype(NP[dst])


@pytest.mark.parametrize("src", SOURCES)
def test_casts(device, src):
    r = rng(8)
    if src == "bool":
        x = r.integers(0, 2, N).astype(bool)
    elif src in FLOATS:
        x = r.uniform(-120.0, 120.0, N).astype(NP[src])
        x[:6] = [0.0, -0.0, 2.7, -2.7, 0.5, -0.5]
    else:
        info = np.iinfo(NP[src])
        x = r.integers(max(info.min, -1000), min(info.max, 1000), N, endpoint=True).astype(NP[src])
        x[:3] = [0, 1, info.max]
    outs = [sk.zeros(N, dtype=SOURCES.get(d, {"int_py": sk.int32, "float_py": sk.float32,
                                               "bool_py": sk.bool}.get(d)), device=device) for d in TARGETS]
    sk.launch(CAST_K[src], dim=N, inputs=[sk.array(x, dtype=SOURCES[src], device=device)], outputs=outs,
              device=device)
    for dst, o in zip(TARGETS, outs):
        got = o.numpy()
        with np.errstate(all="ignore"):
            want = _cast_ref(x, src, dst)
        if got.dtype.kind == "f":
            np.testing.assert_allclose(got, want, rtol=1e-3 if "16" in dst + src else 1e-6,
                                       err_msg=f"{src} -> {dst}")
        else:
            np.testing.assert_array_equal(got, want, err_msg=f"{src} -> {dst}")


# ---------------------------------------------------------------------------
# Gradients: tape gradient of every row against central differences (float64
# kernel) -- non-differentiable rows must give 0, which their differences also give.

GRAD_DTS = ["float32", "float64"]


def _grad_case(kernel_map, inputs, dt, device):
    """Tape gradients of y = f(inputs) (each row its own builtin) for each input, and central
    differences of the float64 kernel."""
    t = FLOATS[dt]
    arrs, y = _launch(kernel_map[dt], [(x.astype(NP[dt]), t) for x in inputs], inputs[0].shape, t, device,
                      requires_grad=True)
    tape = sk.Tape()
    with tape:
        sk.launch(kernel_map[dt], dim=inputs[0].shape[1], inputs=arrs, outputs=[y], device=device)
    tape.backward(grads={y: sk.array(np.ones(inputs[0].shape, NP[dt]), dtype=t, device=device)})
    grads = [a.grad.numpy().astype(np.float64) for a in arrs]

    def f64(xs):
        _, yy = _launch(kernel_map["float64"], [(x, sk.float64) for x in xs], xs[0].shape, sk.float64, device)
        return yy.numpy()

    fds = []
    for k in range(len(inputs)):
        h = 1e-6
        xp = [x.astype(np.float64).copy() for x in inputs]
        xm = [x.astype(np.float64).copy() for x in inputs]
        xp[k] += h
        xm[k] -= h
        fds.append((f64(xp) - f64(xm)) / (2 * h))
    return grads, fds


def _assert_grads(names, grads, fds, dt):
    rtol, atol = (1e-5, 1e-6) if dt == "float64" else (2e-3, 2e-3)
    for k, (g, fd) in enumerate(zip(grads, fds)):
        for j, name in enumerate(names):
            np.testing.assert_allclose(g[j], fd[j], rtol=rtol, atol=atol,
                                       err_msg=f"d {name} / d input {k} ({dt})")


@needs_tape
@pytest.mark.parametrize("dt", GRAD_DTS)
def test_unary_gradients(device, dt):
    x = _rows([u[2] for u in UNARY], [[] for _ in UNARY], "float64", 11)
    x = x.astype(NP[dt]).astype(np.float64)  # the same points for the float64 differences
    grads, fds = _grad_case(UNARY_K, [x], dt, device)
    _assert_grads(UNARY_NAMES, grads, fds, dt)
    for name in NONDIFF:
        assert not grads[0][UNARY_NAMES.index(name)].any(), name


@needs_tape
@pytest.mark.parametrize("dt", GRAD_DTS)
def test_binary_gradients(device, dt):
    a, b = _binary_inputs("float64")
    a, b = a[:, 8:], b[:, 8:]  # skip the special values (NaN, ties)
    a, b = (v.astype(NP[dt]).astype(np.float64) for v in (a, b))
    grads, fds = _grad_case(BINARY_K, [a, b], dt, device)
    _assert_grads([d[0] for d in BINARY], grads, fds, dt)


@needs_tape
@pytest.mark.parametrize("dt", GRAD_DTS)
def test_ternary_gradients(device, dt):
    a, b, c = (v[:, 4:].astype(NP[dt]).astype(np.float64) for v in _ternary_inputs("float64"))
    grads, fds = _grad_case(TERNARY_K, [a, b, c], dt, device)
    _assert_grads(TERNARY, grads, fds, dt)


# ---------------------------------------------------------------------------
# Native adjoints (scalar.h) against central differences, straight in C++:
# independent of the compiler's autodiff, run once per test session.

_NATIVE_HEAD = r"""
#include "scalar.h"
#include <cstdio>
#include <cmath>
static int fails = 0;
static void check(const char* what, double got, double want, double tol) {
    if (!(std::fabs(got - want) <= tol * (1.0 + std::fabs(want)))) {
        std::printf("%s: adjoint %.9g, central difference %.9g\n", what, got, want);
        ++fails;
    }
}
int main() {
    const double h = 1e-6;
"""


def _native_unary(name, x):
    return f"""    {{  // {name}({x!r})
        double x = {x!r}, fd = (sk::{name}(x + h) - sk::{name}(x - h)) / (2 * h), a = 0;
        sk::adj_{name}(x, a, 1.0);
        check("{name} f64 at {x!r}", a, fd, 1e-6);
        float af = 0;
        sk::adj_{name}(float(x), af, 1.0f);
        check("{name} f32 at {x!r}", af, fd, 1e-3);
        sk::half ah(0.0f);
        sk::adj_{name}(sk::half(float(x)), ah, sk::half(1.0f));
        check("{name} f16 at {x!r}", float(ah), fd, 5e-2);
    }}
"""


def _native_nary(name, xs):
    n = len(xs)
    args = ", ".join(f"x[{k}]" for k in range(n))
    adj = ", ".join(f"a[{k}]" for k in range(n))
    return f"""    {{  // {name}{tuple(xs)!r}
        double x[{n}] = {{{", ".join(repr(v) for v in xs)}}}, a[{n}] = {{0}};
        sk::adj_{name}({args}, {adj}, 1.0);
        for (int k = 0; k < {n}; ++k) {{
            double xp[{n}], xm[{n}];
            for (int l = 0; l < {n}; ++l) xp[l] = xm[l] = x[l];
            xp[k] += h;
            xm[k] -= h;
            double fd = (sk::{name}({args.replace("x[", "xp[")}) - sk::{name}({args.replace("x[", "xm[")})) / (2 * h);
            check("{name} f64 input", a[k], fd, 1e-6);
        }}
    }}
"""


def test_native_adjoints_match_finite_differences(tmp_path):
    import os
    import shutil
    import subprocess

    cxx = os.environ.get("SIMKIT_CXX") or shutil.which("c++") or shutil.which("g++") or shutil.which("clang++")
    if cxx is None:
        pytest.skip("no C++ compiler")
    r = rng(12)
    body = []
    for name, _, (lo, hi), _ in UNARY:
        for x in r.uniform(lo, hi, 3):
            body.append(_native_unary(name, float(x)))
    for name, _, da, db in BINARY:
        for _ in range(3):
            body.append(_native_nary(name, [float(r.uniform(*da)), float(r.uniform(*db))]))
    for j, name in enumerate(TERNARY):
        a, b, c = _ternary_inputs("float64")
        for k in range(4, 7):
            body.append(_native_nary(name, [float(a[j, k]), float(b[j, k]), float(c[j, k])]))
    src = tmp_path / "adjoints.cpp"
    src.write_text(_NATIVE_HEAD + "".join(body) + '    if (fails) return 1;\n    std::printf("OK\\n");\n}\n')
    native = os.path.join(os.path.dirname(sk.__file__), "kernels", "native")
    exe = tmp_path / "adjoints"
    subprocess.run([cxx, "-std=c++17", "-O1", f"-I{native}", str(src), "-o", str(exe)], check=True,
                   capture_output=True, text=True)
    run = subprocess.run([str(exe)], capture_output=True, text=True)
    assert run.returncode == 0, run.stdout

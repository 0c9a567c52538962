"""Vector builtins against numpy, on every device.

Kernels are built at import time (one per dtype and family) so one C++ compile
serves the whole file. Each family kernel gives every builtin its own input
row (``a[j, i]`` feeds builtin j), so each one is checked on its own, and the
same kernels serve the gradient tests (tape gradients against central
differences of the float64 kernel).
"""
import numpy as np
import pytest

import simkit as sk

FLOATS = {"float16": sk.float16, "float32": sk.float32, "float64": sk.float64}
INTS = {"int32": sk.int32, "int16": sk.int16, "int64": sk.int64}
NP = {"float16": np.float16, "float32": np.float32, "float64": np.float64, "int32": np.int32,
      "int16": np.int16, "int64": np.int64}
# (rtol, atol) per float dtype for a few roundings
TOL = {"float16": (1e-2, 2e-2), "float32": (2e-5, 2e-6), "float64": (1e-12, 1e-13)}
N = 24  # samples per builtin


def rng(seed=0):
    return np.random.default_rng(seed)


# ---------------------------------------------------------------------------
# Float kernels. Vector results: y[j, i] = f_j(a[j, i], b[j, i], s[j, i]).

VEC_ROWS = [
    ("add", lambda a, b, s: a + b),
    ("sub", lambda a, b, s: a - b),
    ("neg", lambda a, b, s: -a),
    ("pos", lambda a, b, s: a),
    ("mul_vs", lambda a, b, s: a * s[:, None]),
    ("mul_sv", lambda a, b, s: s[:, None] * a),
    ("div_vs", lambda a, b, s: a / s[:, None]),
    ("div_sv", lambda a, b, s: s[:, None] / a),
    ("cw_mul", lambda a, b, s: a * b),
    ("cw_div", lambda a, b, s: a / b),
    ("cross", lambda a, b, s: np.cross(a, b)),
    ("normalize", lambda a, b, s: a / np.linalg.norm(a, axis=1, keepdims=True)),
    ("min", lambda a, b, s: np.minimum(a, b)),
    ("max", lambda a, b, s: np.maximum(a, b)),
    ("abs", lambda a, b, s: np.abs(a)),
    ("lerp", lambda a, b, s: a * (1.0 - s[:, None]) + b * s[:, None]),
    ("fill", lambda a, b, s: np.repeat(s[:, None], 3, axis=1)),
    ("zero_plus", lambda a, b, s: a),
    ("assign", lambda a, b, s: np.stack([a[:, 0], s, a[:, 2]], axis=1)),
    ("assign_attr", lambda a, b, s: np.stack([a[:, 0], a[:, 1], s * b[:, 0]], axis=1)),
    ("assign_neg", lambda a, b, s: np.stack([a[:, 0], a[:, 1], s], axis=1)),
    ("assign_runtime", None),  # v[i % 3] = s (reference built in the test)
    ("assign_twice", lambda a, b, s: np.stack([a[:, 0] * s, a[:, 1], a[:, 2]], axis=1)),
    ("where", lambda a, b, s: np.where((s > 0)[:, None], a, b)),
]
VEC_NAMES = [r[0] for r in VEC_ROWS]
NV = len(VEC_ROWS)
DENOM_ROWS = {"div_vs": "s", "div_sv": "a", "cw_div": "b"}  # rows whose denominators avoid 0

SCA_ROWS = [
    ("dot", lambda a, b: np.sum(a * b, axis=1)),
    ("length", lambda a, b: np.linalg.norm(a, axis=1)),
    ("length_sq", lambda a, b: np.sum(a * a, axis=1)),
    ("min_reduce", lambda a, b: np.min(a, axis=1)),
    ("max_reduce", lambda a, b: np.max(a, axis=1)),
    ("extract_const", lambda a, b: a[:, 1]),
    ("extract_attr", lambda a, b: a[:, 2] + b[:, 0]),
    ("extract_neg", lambda a, b: a[:, 2]),
    ("extract_runtime", None),  # a[i % 3]
    ("len", lambda a, b: np.full(a.shape[0], 3.0)),
]
SCA_NAMES = [r[0] for r in SCA_ROWS]
NS = len(SCA_ROWS)


# Rows also checked in float16 (the other rows are compiled out of the float16 kernels: half
# arithmetic is emulated, and its adjoint code is slow to compile).
HALF_VEC = ["add", "sub", "mul_vs", "div_vs", "cw_mul", "cross", "normalize", "min", "abs", "lerp", "fill", "assign",
            "where"]
HALF_SCA = ["dot", "length", "length_sq", "min_reduce", "extract_const"]


def _vec_kernel(dtype):
    V = sk.vector(3, dtype)
    full = dtype is not sk.float16

    @sk.kernel
    def vec_ops(a: sk.array(dtype=V, ndim=2), b: sk.array(dtype=V, ndim=2), s: sk.array(dtype=dtype, ndim=2),
                y: sk.array(dtype=V, ndim=2)):
        i = sk.tid()
        y[0, i] = a[0, i] + b[0, i]
        y[1, i] = a[1, i] - b[1, i]
        y[4, i] = a[4, i] * s[4, i]
        y[6, i] = a[6, i] / s[6, i]
        y[8, i] = sk.cw_mul(a[8, i], b[8, i])
        y[10, i] = sk.cross(a[10, i], b[10, i])
        y[11, i] = sk.normalize(a[11, i])
        y[12, i] = sk.min(a[12, i], b[12, i])
        y[14, i] = sk.abs(a[14, i])
        y[15, i] = sk.lerp(a[15, i], b[15, i], s[15, i])
        y[16, i] = V(s[16, i])
        v = a[18, i]
        v[1] = s[18, i]
        y[18, i] = v
        y[23, i] = sk.where(s[23, i] > dtype(0.0), a[23, i], b[23, i])
        if full:
            y[2, i] = -a[2, i]
            y[3, i] = +a[3, i]
            y[5, i] = s[5, i] * a[5, i]
            y[7, i] = s[7, i] / a[7, i]
            y[9, i] = sk.cw_div(a[9, i], b[9, i])
            y[13, i] = sk.max(a[13, i], b[13, i])
            y[17, i] = V() + a[17, i]
            w = a[19, i]
            w.z = s[19, i] * b[19, i].x
            y[19, i] = w
            u = a[20, i]
            u[-1] = s[20, i]
            y[20, i] = u
            r = a[21, i]
            r[i % 3] = s[21, i]
            y[21, i] = r
            q = a[22, i]
            q[0] = q[0] * s[22, i]
            y[22, i] = q

    return vec_ops


def _sca_kernel(dtype):
    V = sk.vector(3, dtype)
    full = dtype is not sk.float16

    @sk.kernel
    def vec_scalars(a: sk.array(dtype=V, ndim=2), b: sk.array(dtype=V, ndim=2), z: sk.array(dtype=dtype, ndim=2)):
        i = sk.tid()
        z[0, i] = sk.dot(a[0, i], b[0, i])
        z[1, i] = sk.length(a[1, i])
        z[2, i] = sk.length_sq(a[2, i])
        z[3, i] = sk.min(a[3, i])
        z[5, i] = a[5, i][1]
        if full:
            z[4, i] = sk.max(a[4, i])
            z[6, i] = a[6, i].z + b[6, i].x
            z[7, i] = a[7, i][-1]
            z[8, i] = a[8, i][i % 3]
            z[9, i] = dtype(len(a[9, i]))

    return vec_scalars


def _misc_kernel(dtype):
    """Non-differentiable builtins: argmin/argmax, comparisons, sign, mod, casts."""
    V = sk.vector(3, dtype)
    VD = sk.vector(3, sk.float64)
    VI = sk.vector(3, sk.int32)

    @sk.kernel
    def vec_misc(a: sk.array(dtype=V), b: sk.array(dtype=V), u: sk.array(dtype=sk.uint32, ndim=2),
                 c: sk.array(dtype=sk.bool, ndim=2), y: sk.array(dtype=V, ndim=2), d: sk.array(dtype=VD),
                 n: sk.array(dtype=VI)):
        i = sk.tid()
        u[0, i] = sk.argmin(a[i])
        u[1, i] = sk.argmax(a[i])
        c[0, i] = a[i] == b[i]
        c[1, i] = a[i] != b[i]
        c[2, i] = a[i] == a[i]
        c[3, i] = a[i] != a[i]
        y[0, i] = sk.sign(a[i])
        y[1, i] = a[i] % b[i]
        y[2, i] = V(VD(a[i]))
        d[i] = VD(a[i])
        n[i] = VI(a[i])

    return vec_misc


VEC_K = {n: _vec_kernel(t) for n, t in FLOATS.items()}
SCA_K = {n: _sca_kernel(t) for n, t in FLOATS.items()}
MISC_K = {n: _misc_kernel(t) for n, t in FLOATS.items()}


def _inputs(dt, seed, rows):
    """a, b (rows, N, 3) and s (rows, N) in dtype dt, denominators away from 0."""
    r = rng(seed)
    a = r.uniform(-2.0, 2.0, (rows, N, 3))
    b = r.uniform(-2.0, 2.0, (rows, N, 3))
    s = r.uniform(-2.0, 2.0, (rows, N))
    away = lambda x: np.sign(x) * (0.5 + np.abs(x))  # noqa: E731
    for name, which in DENOM_ROWS.items():
        if name in VEC_NAMES and rows == NV:
            j = VEC_NAMES.index(name)
            if which == "a":
                a[j] = away(a[j])
            elif which == "b":
                b[j] = away(b[j])
            else:
                s[j] = away(s[j])
    return a.astype(NP[dt]), b.astype(NP[dt]), s.astype(NP[dt])


def _vec_ref(a, b, s):
    a, b, s = (x.astype(np.float64) for x in (a, b, s))
    want = np.empty(a.shape)
    for j, (name, ref) in enumerate(VEC_ROWS):
        if name == "assign_runtime":
            w = a[j].copy()
            k = np.arange(N) % 3
            w[np.arange(N), k] = s[j]
            want[j] = w
        else:
            want[j] = ref(a[j], b[j], s[j])
    return want


def _sca_ref(a, b):
    a, b = a.astype(np.float64), b.astype(np.float64)
    want = np.empty(a.shape[:2])
    for j, (name, ref) in enumerate(SCA_ROWS):
        if name == "extract_runtime":
            want[j] = a[j][np.arange(N), np.arange(N) % 3]
        else:
            want[j] = ref(a[j], b[j])
    return want


def _run_vec(dt, a, b, s, device, requires_grad=False):
    t, V = FLOATS[dt], sk.vector(3, FLOATS[dt])
    arrs = [sk.array(a, dtype=V, device=device, requires_grad=requires_grad),
            sk.array(b, dtype=V, device=device, requires_grad=requires_grad),
            sk.array(s, dtype=t, device=device, requires_grad=requires_grad)]
    y = sk.zeros((NV, N), dtype=V, device=device, requires_grad=requires_grad)
    sk.launch(VEC_K[dt], dim=N, inputs=arrs, outputs=[y], device=device)
    return arrs, y


def _run_sca(dt, a, b, device, requires_grad=False):
    t, V = FLOATS[dt], sk.vector(3, FLOATS[dt])
    arrs = [sk.array(a, dtype=V, device=device, requires_grad=requires_grad),
            sk.array(b, dtype=V, device=device, requires_grad=requires_grad)]
    z = sk.zeros((NS, N), dtype=t, device=device, requires_grad=requires_grad)
    sk.launch(SCA_K[dt], dim=N, inputs=arrs, outputs=[z], device=device)
    return arrs, z


def _close(name, got, want, dt, scale=1.0):
    rtol, atol = TOL[dt]
    if dt == "float16":  # results are rounded to half
        want = want.astype(np.float16).astype(np.float64)
    np.testing.assert_allclose(got.astype(np.float64), want, rtol=rtol * scale, atol=atol * scale,
                               err_msg=f"{name} ({dt})")


@pytest.mark.parametrize("dt", FLOATS)
def test_vector_ops(device, dt):
    a, b, s = _inputs(dt, 1, NV)
    _, y = _run_vec(dt, a, b, s, device)
    got, want = y.numpy(), _vec_ref(a, b, s)
    for j, name in enumerate(VEC_NAMES):
        if dt != "float16" or name in HALF_VEC:
            _close(name, got[j], want[j], dt)


@pytest.mark.parametrize("dt", FLOATS)
def test_vector_scalar_results(device, dt):
    a, b, _ = _inputs(dt, 2, NS)
    _, z = _run_sca(dt, a, b, device)
    got, want = z.numpy(), _sca_ref(a, b)
    for j, name in enumerate(SCA_NAMES):
        if dt != "float16" or name in HALF_SCA:
            _close(name, got[j], want[j], dt, scale=4.0)


@pytest.mark.parametrize("dt", FLOATS)
def test_vector_misc(device, dt):
    r = rng(3)
    a = r.uniform(-3.0, 3.0, (N, 3))
    a[0] = [1.0, 3.0, 3.0]  # ties: argmax gives the first index
    a[1] = [1.0, 1.0, 3.0]
    a[2] = [-1.0, 0.0, 2.0]  # sign(0) == 1
    a[3] = [-7.0, 7.0, 5.5]
    b = r.uniform(0.5, 2.0, (N, 3)) * np.where(r.uniform(size=(N, 3)) < 0.5, -1.0, 1.0)
    b[3] = [3.0, -3.0, 2.0]
    b[4] = a[4]  # equal vectors
    a, b = a.astype(NP[dt]), b.astype(NP[dt])
    t, V = FLOATS[dt], sk.vector(3, FLOATS[dt])
    u = sk.zeros((2, N), dtype=sk.uint32, device=device)
    c = sk.zeros((4, N), dtype=sk.bool, device=device)
    y = sk.zeros((3, N), dtype=V, device=device)
    d = sk.zeros(N, dtype=sk.vec3d, device=device)
    n = sk.zeros(N, dtype=sk.vec3i, device=device)
    sk.launch(MISC_K[dt], dim=N, inputs=[sk.array(a, dtype=V, device=device), sk.array(b, dtype=V, device=device)],
              outputs=[u, c, y, d, n], device=device)
    u, c, y = u.numpy(), c.numpy(), y.numpy()
    np.testing.assert_array_equal(u[0], np.argmin(a, axis=1))
    np.testing.assert_array_equal(u[1], np.argmax(a, axis=1))
    assert u.dtype == np.uint32
    eq = np.all(a == b, axis=1)
    np.testing.assert_array_equal(c[0], eq)
    np.testing.assert_array_equal(c[1], ~eq)
    assert c[0, 4] and c[2].all() and not c[3].any()
    np.testing.assert_array_equal(y[0], np.where(a < 0, -1.0, 1.0).astype(NP[dt]))
    _close("mod", y[1], np.fmod(a.astype(np.float64), b.astype(np.float64)), dt)
    np.testing.assert_array_equal(y[1][3], np.array([-1.0, 1.0, 1.5], NP[dt]))
    np.testing.assert_array_equal(y[2], a)  # round trip through vec3d
    np.testing.assert_array_equal(d.numpy(), a.astype(np.float64))
    np.testing.assert_array_equal(n.numpy(), np.trunc(a.astype(np.float64)).astype(np.int32))


# ---------------------------------------------------------------------------
# Constructors


@sk.kernel
def _constructors(s: sk.array(dtype=float), sd: sk.array(dtype=sk.float64), y: sk.array(dtype=sk.vec3, ndim=2),
                  yd: sk.array(dtype=sk.vec3d, ndim=2), yi: sk.array(dtype=sk.vec3i, ndim=2),
                  yh: sk.array(dtype=sk.vec3h), y4: sk.array(dtype=sk.vec4)):
    i = sk.tid()
    y[0, i] = sk.vec3()
    y[1, i] = sk.vec3(1.5)
    y[2, i] = sk.vec3(s[i])
    y[3, i] = sk.vec3(s[i], 2.0, sd[i])
    y[4, i] = sk.vec3(sk.vec3i(1, -2, 3))
    y[5, i] = sk.vec3(s[i], s[i], 1.0)
    yd[0, i] = sk.vec3d(s[i])
    yd[1, i] = sk.vec3d(sd[i])
    yd[2, i] = sk.vec3d(sk.vec3(s[i], 0.25, -1.0))
    yi[0, i] = sk.vec3i(7)
    yi[1, i] = sk.vec3i()
    yi[2, i] = sk.vec3i(sk.vec3(2.7, -2.7, s[i]))
    yh[i] = sk.vec3h(sk.vec3d(sd[i], 0.5, -2.0))
    y4[i] = sk.vec4(s[i])


def test_vector_constructors(device):
    s = np.linspace(-2.0, 2.0, N).astype(np.float32)
    sd = np.linspace(-3.0, 3.0, N)
    y = sk.zeros((6, N), dtype=sk.vec3, device=device)
    yd = sk.zeros((3, N), dtype=sk.vec3d, device=device)
    yi = sk.zeros((3, N), dtype=sk.vec3i, device=device)
    yh = sk.zeros(N, dtype=sk.vec3h, device=device)
    y4 = sk.zeros(N, dtype=sk.vec4, device=device)
    sk.launch(_constructors, dim=N, inputs=[sk.array(s, dtype=float, device=device),
                                            sk.array(sd, dtype=sk.float64, device=device)],
              outputs=[y, yd, yi, yh, y4], device=device)
    y, yd, yi = y.numpy(), yd.numpy(), yi.numpy()
    one = np.ones((N, 3))
    np.testing.assert_array_equal(y[0], 0 * one)
    np.testing.assert_array_equal(y[1], 1.5 * one)
    np.testing.assert_array_equal(y[2], s[:, None] * one)
    np.testing.assert_array_equal(y[3], np.stack([s, 2.0 + 0 * s, sd.astype(np.float32)], axis=1))
    np.testing.assert_array_equal(y[4], np.tile([1.0, -2.0, 3.0], (N, 1)))
    np.testing.assert_array_equal(y[5], np.stack([s, s, 1.0 + 0 * s], axis=1))
    np.testing.assert_array_equal(yd[0], s.astype(np.float64)[:, None] * one)
    np.testing.assert_array_equal(yd[1], sd[:, None] * one)
    np.testing.assert_array_equal(yd[2], np.stack([s.astype(np.float64), 0.25 + 0 * sd, -1.0 + 0 * sd], axis=1))
    np.testing.assert_array_equal(yi[0], 7 * one)
    np.testing.assert_array_equal(yi[1], 0 * one)
    np.testing.assert_array_equal(yi[2], np.stack([2 + 0 * s, -2 + 0 * s, np.trunc(s)], axis=1))
    np.testing.assert_array_equal(yh.numpy(), np.stack([sd, 0.5 + 0 * sd, -2.0 + 0 * sd], axis=1).astype(np.float16))
    np.testing.assert_array_equal(y4.numpy(), np.repeat(s[:, None], 4, axis=1))


@sk.kernel
def _generic_constructors(s: sk.array(dtype=float), y: sk.array(dtype=sk.vec3, ndim=2)):
    i = sk.tid()
    y[0, i] = sk.vector(s[i], s[i], 1.0)
    y[1, i] = sk.vector(length=3, dtype=float)
    y[2, i] = sk.vector(s[i], length=3)


def test_generic_vector_constructor(device):
    s = np.linspace(-2.0, 2.0, N).astype(np.float32)
    y = sk.zeros((3, N), dtype=sk.vec3, device=device)
    sk.launch(_generic_constructors, dim=N, inputs=[sk.array(s, dtype=float, device=device)], outputs=[y],
              device=device)
    y = y.numpy()
    np.testing.assert_array_equal(y[0], np.stack([s, s, 1.0 + 0 * s], axis=1))
    np.testing.assert_array_equal(y[1], np.zeros((N, 3)))
    np.testing.assert_array_equal(y[2], np.repeat(s[:, None], 3, axis=1))


# ---------------------------------------------------------------------------
# Integer vectors (exact references; division and modulo by zero give 0)


def _int_kernel(dtype):
    V = sk.vector(3, dtype)

    @sk.kernel
    def int_vec(a: sk.array(dtype=V), b: sk.array(dtype=V), s: sk.array(dtype=dtype), y: sk.array(dtype=V, ndim=2),
                z: sk.array(dtype=dtype, ndim=2), u: sk.array(dtype=sk.uint32, ndim=2), c: sk.array(dtype=sk.bool)):
        i = sk.tid()
        y[0, i] = a[i] + b[i]
        y[1, i] = a[i] - b[i]
        y[2, i] = -a[i]
        y[3, i] = a[i] * s[i]
        y[4, i] = s[i] * a[i]
        y[5, i] = a[i] / s[i]
        y[6, i] = sk.cw_mul(a[i], b[i])
        y[7, i] = sk.cw_div(a[i], b[i])
        y[8, i] = a[i] % b[i]
        y[9, i] = sk.min(a[i], b[i])
        y[10, i] = sk.max(a[i], b[i])
        y[11, i] = sk.abs(a[i])
        y[12, i] = sk.sign(a[i])
        v = a[i]
        v[i % 3] = s[i]
        y[13, i] = v
        y[14, i] = sk.cross(a[i], b[i])
        y[15, i] = V(s[i])
        z[0, i] = sk.dot(a[i], b[i])
        z[1, i] = sk.length_sq(a[i])
        z[2, i] = sk.min(a[i])
        z[3, i] = sk.max(a[i])
        z[4, i] = a[i][1] + a[i].z
        u[0, i] = sk.argmin(a[i])
        u[1, i] = sk.argmax(a[i])
        c[i] = a[i] == b[i]

    return int_vec


INT_K = {n: _int_kernel(t) for n, t in INTS.items()}


def _tdiv(a, b):
    with np.errstate(divide="ignore", invalid="ignore"):
        q = np.where(b == 0, 0, np.trunc(a / np.where(b == 0, 1, b)))
    return q.astype(np.int64)


def _tmod(a, b):
    return np.where(b == 0, 0, np.fmod(a, np.where(b == 0, 1, b))).astype(np.int64)


@pytest.mark.parametrize("dt", INTS)
def test_int_vectors(device, dt):
    r = rng(4)
    a = r.integers(-20, 20, (N, 3))
    b = r.integers(-5, 5, (N, 3))
    s = r.integers(-4, 4, N)
    s[:3] = 0
    b[0] = 0
    b[1] = a[1]
    t, V = INTS[dt], sk.vector(3, INTS[dt])
    y = sk.zeros((16, N), dtype=V, device=device)
    z = sk.zeros((5, N), dtype=t, device=device)
    u = sk.zeros((2, N), dtype=sk.uint32, device=device)
    c = sk.zeros(N, dtype=sk.bool, device=device)
    sk.launch(INT_K[dt], dim=N, inputs=[sk.array(a.astype(NP[dt]), dtype=V, device=device),
                                        sk.array(b.astype(NP[dt]), dtype=V, device=device),
                                        sk.array(s.astype(NP[dt]), dtype=t, device=device)],
              outputs=[y, z, u, c], device=device)
    y, z, u = (x.numpy().astype(np.int64) for x in (y, z, u))
    sv = s[:, None]
    v = a.copy()
    v[np.arange(N), np.arange(N) % 3] = s
    want = [a + b, a - b, -a, a * sv, sv * a, _tdiv(a, np.broadcast_to(sv, a.shape)), a * b, _tdiv(a, b),
            _tmod(a, b), np.minimum(a, b), np.maximum(a, b), np.abs(a), np.where(a < 0, -1, 1), v,
            np.cross(a, b), np.broadcast_to(sv, a.shape)]
    for j, w in enumerate(want):
        np.testing.assert_array_equal(y[j], w, err_msg=f"int row {j} ({dt})")
    for j, w in enumerate([np.sum(a * b, 1), np.sum(a * a, 1), a.min(1), a.max(1), a[:, 1] + a[:, 2]]):
        np.testing.assert_array_equal(z[j], w, err_msg=f"int scalar row {j} ({dt})")
    np.testing.assert_array_equal(u[0], np.argmin(a, 1))
    np.testing.assert_array_equal(u[1], np.argmax(a, 1))
    np.testing.assert_array_equal(c.numpy(), np.all(a == b, 1))


@sk.kernel
def _runtime_index(a: sk.array(dtype=sk.vec3), idx: sk.array(dtype=int), y: sk.array(dtype=float)):
    i = sk.tid()
    y[i] = a[i][idx[i]]


def test_component_index_out_of_range(device):
    """Negative indices count from the end; past the end a read gives 0 (debug builds raise IndexError)."""
    a = sk.array(np.arange(1.0, 7.0).reshape(2, 3), dtype=sk.vec3, device=device)
    y = sk.zeros(2, dtype=float, device=device)
    sk.launch(_runtime_index, dim=2, inputs=[a, sk.array(np.array([-1, 1]), dtype=int, device=device)],
              outputs=[y], device=device)
    np.testing.assert_array_equal(y.numpy(), [3.0, 5.0])
    sk.launch(_runtime_index, dim=2, inputs=[a, sk.array(np.array([3, -4]), dtype=int, device=device)],
              outputs=[y], device=device)
    np.testing.assert_array_equal(y.numpy(), [0.0, 0.0])


# ---------------------------------------------------------------------------
# Zero vectors: normalize gives 0, and neither normalize nor length has a NaN gradient.


@sk.kernel
def _zero_vec(a: sk.array(dtype=sk.vec3), y: sk.array(dtype=sk.vec3), z: sk.array(dtype=float)):
    i = sk.tid()
    y[i] = sk.normalize(a[i])
    z[i] = sk.length(a[i])


def test_zero_vector(device):
    a = sk.zeros(2, dtype=sk.vec3, device=device, requires_grad=True)
    y = sk.zeros(2, dtype=sk.vec3, device=device, requires_grad=True)
    z = sk.zeros(2, dtype=float, device=device, requires_grad=True)
    sk.launch(_zero_vec, dim=2, inputs=[a], outputs=[y, z], device=device)
    assert not y.numpy().any() and not z.numpy().any()
    if not hasattr(sk, "Tape"):
        pytest.skip("needs sk.Tape")
    tape = sk.Tape()
    with tape:
        sk.launch(_zero_vec, dim=2, inputs=[a], outputs=[y, z], device=device)
    tape.backward(grads={y: sk.array(np.ones((2, 3), np.float32), dtype=sk.vec3, device=device),
                         z: sk.array(np.ones(2, np.float32), dtype=float, device=device)})
    g = a.grad.numpy()
    assert np.isfinite(g).all() and not g.any()


# ---------------------------------------------------------------------------
# Gradients: tape gradient of every row against central differences of the
# float64 kernel (each input component perturbed in turn).

GRAD_DTS = ["float32", "float64"]


def _fd(run64, inputs, h=1e-6):
    """Central differences of sum(outputs[j, i]) w.r.t. each input (per component for vectors)."""
    fds = []
    for k, x in enumerate(inputs):
        comps = x.shape[2] if x.ndim == 3 else 0
        g = np.zeros(x.shape)
        for c in range(max(comps, 1)):
            xp = [y.astype(np.float64).copy() for y in inputs]
            xm = [y.astype(np.float64).copy() for y in inputs]
            if comps:
                xp[k][..., c] += h
                xm[k][..., c] -= h
            else:
                xp[k] += h
                xm[k] -= h
            d = run64(xp) - run64(xm)
            d = d.reshape(d.shape[0], d.shape[1], -1).sum(axis=2) / (2 * h)
            if comps:
                g[..., c] = d
            else:
                g[...] = d
        fds.append(g)
    return fds


def _assert_grads(names, grads, fds, dt):
    rtol, atol = (1e-5, 1e-6) if dt == "float64" else (2e-3, 2e-3)
    for k, (g, fd) in enumerate(zip(grads, fds)):
        for j, name in enumerate(names):
            np.testing.assert_allclose(g[j], fd[j], rtol=rtol, atol=atol, err_msg=f"d {name} / d input {k} ({dt})")


def _tape_grads(launch, out, arrs, dt, device):
    tape = sk.Tape()
    with tape:
        launch()
    ones = np.ones(out.numpy().shape, NP[dt])
    tape.backward(grads={out: sk.array(ones, dtype=out.dtype, device=device)})
    return [x.grad.numpy().astype(np.float64) for x in arrs]


@pytest.mark.parametrize("dt", GRAD_DTS)
def test_vector_gradients(device, dt):
    if not hasattr(sk, "Tape"):
        pytest.skip("needs sk.Tape")
    a, b, s = (x.astype(NP[dt]).astype(np.float64) for x in _inputs("float64", 5, NV))
    arrs, y = _run_vec(dt, a.astype(NP[dt]), b.astype(NP[dt]), s.astype(NP[dt]), device, requires_grad=True)
    V = sk.vector(3, FLOATS[dt])
    grads = _tape_grads(lambda: sk.launch(VEC_K[dt], dim=N, inputs=arrs, outputs=[y], device=device), y, arrs, dt,
                        device)
    fds = _fd(lambda xs: _run_vec("float64", *xs, device)[1].numpy(), [a, b, s])
    assert V is y.dtype
    _assert_grads(VEC_NAMES, grads, fds, dt)


@pytest.mark.parametrize("dt", GRAD_DTS)
def test_vector_scalar_gradients(device, dt):
    if not hasattr(sk, "Tape"):
        pytest.skip("needs sk.Tape")
    a, b, _ = (x.astype(NP[dt]).astype(np.float64) for x in _inputs("float64", 6, NS))
    arrs, z = _run_sca(dt, a.astype(NP[dt]), b.astype(NP[dt]), device, requires_grad=True)
    grads = _tape_grads(lambda: sk.launch(SCA_K[dt], dim=N, inputs=arrs, outputs=[z], device=device), z, arrs, dt,
                        device)
    fds = _fd(lambda xs: _run_sca("float64", *xs, device)[1].numpy(), [a, b])
    _assert_grads(SCA_NAMES, grads, fds, dt)

"""Matrix builtins against numpy, on every device.

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
NP = {"float16": np.float16, "float32": np.float32, "float64": np.float64}
TOL = {"float16": (1e-2, 2e-2), "float32": (2e-5, 2e-6), "float64": (1e-12, 1e-13)}
N = 16  # samples per builtin
EYE = np.eye(3)


def rng(seed=0):
    return np.random.default_rng(seed)


def _rt(i):
    """The runtime indices the kernels use for thread i: (i % 3, (i + 1) % 3)."""
    return i % 3, (i + 1) % 3


# ---------------------------------------------------------------------------
# 3x3 kernels. Matrix results: y[j, i] = f_j(a[j, i], b[j, i], v[j, i], w[j, i], s[j, i]).


def _assign_runtime(a, b, v, w, s):
    m = a.copy()
    i = np.arange(a.shape[0])
    r, c = _rt(i)
    m[i, r, c] = s
    return m


def _assign_twice(a, b, v, w, s):
    m = a.copy()
    m[:, 1, 1] = m[:, 1, 1] * s + s
    m[:, 2] = m[:, 2] * s[:, None]
    return m


S = lambda s: s[:, None, None]  # noqa: E731
MAT_ROWS = [
    ("add", lambda a, b, v, w, s: a + b),
    ("sub", lambda a, b, v, w, s: a - b),
    ("neg", lambda a, b, v, w, s: -a),
    ("pos", lambda a, b, v, w, s: a),
    ("mul_ms", lambda a, b, v, w, s: a * S(s)),
    ("mul_sm", lambda a, b, v, w, s: S(s) * a),
    ("div_ms", lambda a, b, v, w, s: a / S(s)),
    ("div_sm", lambda a, b, v, w, s: S(s) / a),
    ("matmul", lambda a, b, v, w, s: a @ b),
    ("mul_mm", lambda a, b, v, w, s: a @ b),
    ("cw_mul", lambda a, b, v, w, s: a * b),
    ("cw_div", lambda a, b, v, w, s: a / b),
    ("inverse", lambda a, b, v, w, s: np.linalg.inv(a)),
    ("transpose", lambda a, b, v, w, s: np.swapaxes(a, 1, 2)),
    ("lerp", lambda a, b, v, w, s: a * (1 - S(s)) + b * S(s)),
    ("outer", lambda a, b, v, w, s: v[:, :, None] * w[:, None, :]),
    ("skew", lambda a, b, v, w, s: np.stack([np.cross(v, e) for e in EYE], axis=2)),
    ("diag", lambda a, b, v, w, s: v[:, :, None] * EYE),
    ("fill", lambda a, b, v, w, s: S(s) * np.ones((1, 3, 3))),
    ("identity", lambda a, b, v, w, s: S(s) * EYE),
    ("from_rows", lambda a, b, v, w, s: np.stack([v, w, v], axis=1)),
    ("from_cols", lambda a, b, v, w, s: np.stack([v, w, v], axis=2)),
    ("assign_elem", lambda a, b, v, w, s: np.where((np.arange(9) == 5).reshape(3, 3), S(s), a)),
    ("assign_row", lambda a, b, v, w, s: np.concatenate([v[:, None, :], a[:, 1:]], axis=1)),
    ("assign_runtime", _assign_runtime),
    ("zero_plus", lambda a, b, v, w, s: a),
    ("where", lambda a, b, v, w, s: np.where(S(s) > 0, a, b)),
    ("assign_twice", _assign_twice),
]
MAT_NAMES = [r[0] for r in MAT_ROWS]
NM = len(MAT_ROWS)
WELL_CONDITIONED = {"inverse"}  # a + 4 I
AWAY_FROM_ZERO = {"div_ms": "s", "div_sm": "a", "cw_div": "b"}

VEC_ROWS = [
    ("mat_vec", lambda a, v: np.einsum("nij,nj->ni", a, v)),
    ("matmul_vec", lambda a, v: np.einsum("nij,nj->ni", a, v)),
    ("vec_mat", lambda a, v: np.einsum("ni,nij->nj", v, a)),
    ("row", lambda a, v: a[:, 1]),
    ("row_runtime", lambda a, v: a[np.arange(a.shape[0]), np.arange(a.shape[0]) % 3]),
    ("get_diag", lambda a, v: np.diagonal(a, axis1=1, axis2=2)),
    ("row_neg", lambda a, v: a[:, 2]),
]
VEC_NAMES = [r[0] for r in VEC_ROWS]
NVR = len(VEC_ROWS)

SCA_ROWS = [
    ("determinant", lambda a, b: np.linalg.det(a)),
    ("trace", lambda a, b: np.trace(a, axis1=1, axis2=2)),
    ("ddot", lambda a, b: np.sum(a * b, axis=(1, 2))),
    ("extract", lambda a, b: a[:, 1, 2]),
    ("extract_runtime", lambda a, b: a[np.arange(a.shape[0]), *_rt(np.arange(a.shape[0]))]),
    ("extract_row_comp", lambda a, b: a[:, 2, 0] + b[:, 0, 1]),
    ("extract_neg", lambda a, b: a[:, 2, 2]),
]
SCA_NAMES = [r[0] for r in SCA_ROWS]
NSR = len(SCA_ROWS)


# Rows also checked in float16 (the other rows are compiled out of the float16 kernels: half
# arithmetic is emulated, and its adjoint code is slow to compile).
HALF_MAT = ["add", "mul_ms", "matmul", "inverse", "transpose", "outer", "fill", "identity", "from_rows",
            "assign_elem", "where"]
HALF_VEC = ["mat_vec", "vec_mat", "row"]
HALF_SCA = ["determinant", "trace", "extract"]


def _mat_kernel(dtype):
    M, V = sk.matrix((3, 3), dtype), sk.vector(3, dtype)
    full = dtype is not sk.float16

    @sk.kernel
    def mat_ops(a: sk.array(dtype=M, ndim=2), b: sk.array(dtype=M, ndim=2), v: sk.array(dtype=V, ndim=2),
                w: sk.array(dtype=V, ndim=2), s: sk.array(dtype=dtype, ndim=2), y: sk.array(dtype=M, ndim=2)):
        i = sk.tid()
        y[0, i] = a[0, i] + b[0, i]
        y[4, i] = a[4, i] * s[4, i]
        y[8, i] = a[8, i] @ b[8, i]
        y[12, i] = sk.inverse(a[12, i])
        y[13, i] = sk.transpose(a[13, i])
        y[15, i] = sk.outer(v[15, i], w[15, i])
        y[18, i] = M(s[18, i])
        y[19, i] = sk.identity(n=3, dtype=dtype) * s[19, i]
        y[20, i] = sk.matrix_from_rows(v[20, i], w[20, i], v[20, i])
        m = a[22, i]
        m[1, 2] = s[22, i]
        y[22, i] = m
        y[26, i] = sk.where(s[26, i] > dtype(0.0), a[26, i], b[26, i])
        if full:
            y[1, i] = a[1, i] - b[1, i]
            y[2, i] = -a[2, i]
            y[3, i] = +a[3, i]
            y[5, i] = s[5, i] * a[5, i]
            y[6, i] = a[6, i] / s[6, i]
            y[7, i] = s[7, i] / a[7, i]
            y[9, i] = a[9, i] * b[9, i]
            y[10, i] = sk.cw_mul(a[10, i], b[10, i])
            y[11, i] = sk.cw_div(a[11, i], b[11, i])
            y[14, i] = sk.lerp(a[14, i], b[14, i], s[14, i])
            y[16, i] = sk.skew(v[16, i])
            y[17, i] = sk.diag(v[17, i])
            y[21, i] = sk.matrix_from_cols(v[21, i], w[21, i], v[21, i])
            r = a[23, i]
            r[0] = v[23, i]
            y[23, i] = r
            q = a[24, i]
            q[i % 3, (i + 1) % 3] = s[24, i]
            y[24, i] = q
            y[25, i] = M() + a[25, i]
            t = a[27, i]
            t[1, 1] = t[1, 1] * s[27, i]
            t[1, 1] = t[1, 1] + s[27, i]
            t[2] = t[2] * s[27, i]
            y[27, i] = t

    return mat_ops


def _mat_vec_kernel(dtype):
    M, V = sk.matrix((3, 3), dtype), sk.vector(3, dtype)
    full = dtype is not sk.float16

    @sk.kernel
    def mat_vecs(a: sk.array(dtype=M, ndim=2), v: sk.array(dtype=V, ndim=2), y: sk.array(dtype=V, ndim=2)):
        i = sk.tid()
        y[0, i] = a[0, i] @ v[0, i]
        y[2, i] = v[2, i] @ a[2, i]
        y[3, i] = a[3, i][1]
        if full:
            y[1, i] = a[1, i] * v[1, i]
            y[4, i] = a[4, i][i % 3]
            y[5, i] = sk.get_diag(a[5, i])
            y[6, i] = a[6, i][-1]

    return mat_vecs


def _mat_sca_kernel(dtype):
    M = sk.matrix((3, 3), dtype)
    full = dtype is not sk.float16

    @sk.kernel
    def mat_scalars(a: sk.array(dtype=M, ndim=2), b: sk.array(dtype=M, ndim=2), z: sk.array(dtype=dtype, ndim=2)):
        i = sk.tid()
        z[0, i] = sk.determinant(a[0, i])
        z[1, i] = sk.trace(a[1, i])
        z[3, i] = a[3, i][1, 2]
        if full:
            z[2, i] = sk.ddot(a[2, i], b[2, i])
            z[4, i] = a[4, i][i % 3, (i + 1) % 3]
            z[5, i] = a[5, i][2][0] + b[5, i][0, 1]
            z[6, i] = a[6, i][-1, -1]

    return mat_scalars


MAT_K = {n: _mat_kernel(t) for n, t in FLOATS.items()}
MATVEC_K = {n: _mat_vec_kernel(t) for n, t in FLOATS.items()}
MATSCA_K = {n: _mat_sca_kernel(t) for n, t in FLOATS.items()}


def _away(x):
    return np.sign(x) * (0.5 + np.abs(x))


def _mat_inputs(dt, seed):
    r = rng(seed)
    a = r.uniform(-2.0, 2.0, (NM, N, 3, 3))
    b = r.uniform(-2.0, 2.0, (NM, N, 3, 3))
    v = r.uniform(-2.0, 2.0, (NM, N, 3))
    w = r.uniform(-2.0, 2.0, (NM, N, 3))
    s = r.uniform(-2.0, 2.0, (NM, N))
    a[MAT_NAMES.index("inverse")] += 4.0 * EYE
    for name, which in AWAY_FROM_ZERO.items():
        j = MAT_NAMES.index(name)
        if which == "a":
            a[j] = _away(a[j])
        elif which == "b":
            b[j] = _away(b[j])
        else:
            s[j] = _away(s[j])
    return [x.astype(NP[dt]) for x in (a, b, v, w, s)]


def _mat_ref(a, b, v, w, s):
    a, b, v, w, s = (x.astype(np.float64) for x in (a, b, v, w, s))
    return np.stack([ref(a[j], b[j], v[j], w[j], s[j]) for j, (_, ref) in enumerate(MAT_ROWS)])


def _run(kernel, dt, inputs, out_shape, out_dtype, device, requires_grad=False):
    t = FLOATS[dt]
    arrs = []
    for x in inputs:
        comp = x.shape[2:]
        dtype = t if not comp else sk.vector(comp[0], t) if len(comp) == 1 else sk.matrix(comp, t)
        arrs.append(sk.array(x.astype(NP[dt]), dtype=dtype, device=device, requires_grad=requires_grad))
    y = sk.zeros(out_shape, dtype=out_dtype, device=device, requires_grad=requires_grad)
    sk.launch(kernel, dim=out_shape[-1], inputs=arrs, outputs=[y], device=device)
    return arrs, y


def _close(name, got, want, dt, scale=1.0):
    rtol, atol = TOL[dt]
    if dt == "float16":
        want = want.astype(np.float16).astype(np.float64)
    np.testing.assert_allclose(got.astype(np.float64), want, rtol=rtol * scale, atol=atol * scale,
                               err_msg=f"{name} ({dt})")


@pytest.mark.parametrize("dt", FLOATS)
def test_matrix_ops(device, dt):
    ins = _mat_inputs(dt, 1)
    _, y = _run(MAT_K[dt], dt, ins, (NM, N), sk.matrix((3, 3), FLOATS[dt]), device)
    got, want = y.numpy(), _mat_ref(*ins)
    for j, name in enumerate(MAT_NAMES):
        if dt != "float16" or name in HALF_MAT:
            _close(name, got[j], want[j], dt, scale=4.0 if name in ("matmul", "mul_mm", "inverse") else 1.0)


@pytest.mark.parametrize("dt", FLOATS)
def test_matrix_vector_results(device, dt):
    r = rng(2)
    a = r.uniform(-2.0, 2.0, (NVR, N, 3, 3)).astype(NP[dt])
    v = r.uniform(-2.0, 2.0, (NVR, N, 3)).astype(NP[dt])
    _, y = _run(MATVEC_K[dt], dt, [a, v], (NVR, N), sk.vector(3, FLOATS[dt]), device)
    got = y.numpy()
    a64, v64 = a.astype(np.float64), v.astype(np.float64)
    for j, (name, ref) in enumerate(VEC_ROWS):
        if dt != "float16" or name in HALF_VEC:
            _close(name, got[j], ref(a64[j], v64[j]), dt, scale=4.0)


@pytest.mark.parametrize("dt", FLOATS)
def test_matrix_scalar_results(device, dt):
    r = rng(3)
    a = r.uniform(-2.0, 2.0, (NSR, N, 3, 3)).astype(NP[dt])
    b = r.uniform(-2.0, 2.0, (NSR, N, 3, 3)).astype(NP[dt])
    _, z = _run(MATSCA_K[dt], dt, [a, b], (NSR, N), FLOATS[dt], device)
    got = z.numpy()
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    for j, (name, ref) in enumerate(SCA_ROWS):
        if dt != "float16" or name in HALF_SCA:
            _close(name, got[j], ref(a64[j], b64[j]), dt, scale=8.0)


# ---------------------------------------------------------------------------
# Other shapes: determinant / inverse of 2x2, 4x4 and 6x6; non-square products.


def _shapes_kernel(dtype):
    M2, M4, M6 = sk.matrix((2, 2), dtype), sk.matrix((4, 4), dtype), sk.matrix((6, 6), dtype)
    M23, M32, M33 = sk.matrix((2, 3), dtype), sk.matrix((3, 2), dtype), sk.matrix((3, 3), dtype)
    V2, V3 = sk.vector(2, dtype), sk.vector(3, dtype)

    @sk.kernel
    def mat_shapes(m2: sk.array(dtype=M2), m4: sk.array(dtype=M4), m6: sk.array(dtype=M6), p: sk.array(dtype=M23),
                   q: sk.array(dtype=M32), x: sk.array(dtype=V3), x2: sk.array(dtype=V2),
                   d: sk.array(dtype=dtype, ndim=2), i2: sk.array(dtype=M2), i4: sk.array(dtype=M4),
                   i6: sk.array(dtype=M6), pq: sk.array(dtype=M2), qp: sk.array(dtype=M33), px: sk.array(dtype=V2),
                   xp: sk.array(dtype=V3), pt: sk.array(dtype=M32), o: sk.array(dtype=M23)):
        i = sk.tid()
        d[0, i] = sk.determinant(m2[i])
        d[1, i] = sk.determinant(m4[i])
        d[2, i] = sk.determinant(m6[i])
        i2[i] = sk.inverse(m2[i])
        i4[i] = sk.inverse(m4[i])
        i6[i] = sk.inverse(m6[i])
        pq[i] = p[i] @ q[i]
        qp[i] = q[i] @ p[i]
        px[i] = p[i] @ x[i]
        xp[i] = x2[i] @ p[i]
        pt[i] = sk.transpose(p[i])
        o[i] = sk.outer(x2[i], x[i])

    return mat_shapes


SHAPES_K = {n: _shapes_kernel(t) for n, t in FLOATS.items() if n != "float16"}
SHAPE_OUTS = [("d", (3,), None), ("i2", (), (2, 2)), ("i4", (), (4, 4)), ("i6", (), (6, 6)), ("pq", (), (2, 2)),
              ("qp", (), (3, 3)), ("px", (), (2,)), ("xp", (), (3,)), ("pt", (), (3, 2)), ("o", (), (2, 3))]


def _shape_inputs(seed):
    r = rng(seed)
    return [r.uniform(-1, 1, (N, 2, 2)) + 2 * np.eye(2), r.uniform(-1, 1, (N, 4, 4)) + 3 * np.eye(4),
            r.uniform(-1, 1, (N, 6, 6)) + 4 * np.eye(6), r.uniform(-2, 2, (N, 2, 3)), r.uniform(-2, 2, (N, 3, 2)),
            r.uniform(-2, 2, (N, 3)), r.uniform(-2, 2, (N, 2))]


def _run_shapes(dt, ins, device, requires_grad=False):
    t = FLOATS[dt]
    arrs = []
    for x in ins:
        dtype = sk.vector(x.shape[1], t) if x.ndim == 2 else sk.matrix(x.shape[1:], t)
        arrs.append(sk.array(x.astype(NP[dt]), dtype=dtype, device=device, requires_grad=requires_grad))
    outs = []
    for _, lead, comp in SHAPE_OUTS:
        dtype = t if comp is None else sk.vector(comp[0], t) if len(comp) == 1 else sk.matrix(comp, t)
        outs.append(sk.zeros(lead + (N,), dtype=dtype, device=device, requires_grad=requires_grad))
    sk.launch(SHAPES_K[dt], dim=N, inputs=arrs, outputs=outs, device=device)
    return arrs, outs


@pytest.mark.parametrize("dt", ["float32", "float64"])
def test_matrix_shapes(device, dt):
    ins = [x.astype(NP[dt]) for x in _shape_inputs(4)]
    _, outs = _run_shapes(dt, ins, device)
    m2, m4, m6, p, q, x, x2 = (y.astype(np.float64) for y in ins)
    want = [np.stack([np.linalg.det(m2), np.linalg.det(m4), np.linalg.det(m6)]), np.linalg.inv(m2),
            np.linalg.inv(m4), np.linalg.inv(m6), p @ q, q @ p, np.einsum("nij,nj->ni", p, x),
            np.einsum("ni,nij->nj", x2, p), np.swapaxes(p, 1, 2), x2[:, :, None] * x[:, None, :]]
    for (name, _, _), out, w in zip(SHAPE_OUTS, outs, want):
        _close(name, out.numpy(), w, dt, scale=20.0)


def test_singular_inverse(device):
    """inverse of a singular matrix is the zero matrix (Warp); its determinant is 0."""
    ins = [np.zeros((NM, 1, 3, 3))] * 2 + [np.zeros((NM, 1, 3))] * 2 + [np.ones((NM, 1))]
    ins[0] = np.broadcast_to(np.array([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [1.0, 0.0, 1.0]]), (NM, 1, 3, 3))
    _, y = _run(MAT_K["float64"], "float64", ins, (NM, 1), sk.mat33d, device)
    assert not y.numpy()[MAT_NAMES.index("inverse")].any()
    _, z = _run(MATSCA_K["float64"], "float64", [ins[0][:NSR], ins[1][:NSR]], (NSR, 1), sk.float64, device)
    assert z.numpy()[0, 0] == 0.0


@sk.kernel
def _inverse44(m: sk.array(dtype=sk.mat44), out: sk.array(dtype=sk.mat44)):
    i = sk.tid()
    out[i] = m[i] * sk.inverse(m[i])


def test_inverse_4x4_residual_of_ill_conditioned_float32_matrices(device):
    """float32 4x4 inverses by elimination with partial pivoting: m * inverse(m) stays within 5e-4 of I
    for products of uniform matrices up to condition number ~3.5e4 (warp-lang's test_ctypes asks 1e-3 of
    such a set; the adjugate left 0.8e-3 to 1.8e-3 there, depending on how gcc fused multiply-adds), and an
    exactly singular matrix still gives the zero matrix."""
    rng = np.random.default_rng(42)
    a, b, c = (rng.random((1024, 4, 4)).astype(np.float32) for _ in range(3))
    m = (a @ b + 2 * c).astype(np.float32)
    m[0] = [[1, 2, 3, 4], [2, 4, 6, 8], [1, 0, 1, 0], [0, 1, 0, 1]]  # row 1 = 2 * row 0
    out = sk.zeros(len(m), dtype=sk.mat44, device=device)
    sk.launch(_inverse44, dim=len(m), inputs=[sk.array(m, dtype=sk.mat44, device=device), out], device=device)
    got = out.numpy()
    assert not got[0].any()
    resid = np.abs(got[1:] - np.eye(4)).max(axis=(1, 2))
    assert np.linalg.cond(m[1:].astype(np.float64)).max() > 3e4  # (the set does hold such matrices)
    assert resid.max() < 5e-4, resid.max()
    assert resid.mean() < 2e-5, resid.mean()


# ---------------------------------------------------------------------------
# Constructors, identity, integer matrices


M22I = sk.matrix((2, 2), sk.int32)
V2I = sk.vector(2, sk.int32)


@sk.kernel
def _constructors(s: sk.array(dtype=float), m: sk.array(dtype=sk.mat33), y: sk.array(dtype=sk.mat33, ndim=2),
                  yd: sk.array(dtype=sk.mat33d, ndim=2), y4: sk.array(dtype=sk.mat44d), y2: sk.array(dtype=sk.mat22)):
    i = sk.tid()
    y[0, i] = sk.mat33()
    y[1, i] = sk.mat33(2.0)
    y[2, i] = sk.mat33(s[i])
    y[3, i] = sk.identity(3, float)
    y[4, i] = sk.identity(n=3, dtype=sk.float32) + sk.mat33(1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, s[i])
    y[5, i] = sk.mat33(sk.mat33d(m[i]))
    yd[0, i] = sk.mat33d(m[i])
    yd[1, i] = sk.mat33d(s[i])
    y4[i] = sk.identity(n=4, dtype=sk.float64)
    y2[i] = sk.identity(2)


@sk.kernel
def _int_matrices(a: sk.array(dtype=M22I), b: sk.array(dtype=M22I), v: sk.array(dtype=V2I),
                  y: sk.array(dtype=M22I, ndim=2), z: sk.array(dtype=V2I, ndim=2), e: sk.array(dtype=sk.int32, ndim=2)):
    i = sk.tid()
    y[0, i] = a[i] + b[i]
    y[1, i] = a[i] - b[i]
    y[2, i] = a[i] @ b[i]
    y[3, i] = a[i] * 3
    y[4, i] = sk.transpose(a[i])
    y[5, i] = sk.cw_div(a[i], b[i])
    y[6, i] = sk.outer(v[i], v[i])
    y[7, i] = sk.diag(v[i])
    m = a[i]
    m[0, 1] = 7
    y[8, i] = m
    y[9, i] = M22I(5)
    z[0, i] = a[i] @ v[i]
    z[1, i] = v[i] @ a[i]
    z[2, i] = a[i][1]
    e[0, i] = sk.trace(a[i])
    e[1, i] = a[i][1, 0]
    e[2, i] = sk.ddot(a[i], b[i])
    e[3, i] = int(a[i] == b[i])


def test_matrix_constructors(device):
    s = np.linspace(-2.0, 2.0, N).astype(np.float32)
    m = rng(5).uniform(-2, 2, (N, 3, 3)).astype(np.float32)
    y = sk.zeros((6, N), dtype=sk.mat33, device=device)
    yd = sk.zeros((2, N), dtype=sk.mat33d, device=device)
    y4 = sk.zeros(N, dtype=sk.mat44d, device=device)
    y2 = sk.zeros(N, dtype=sk.mat22, device=device)
    sk.launch(_constructors, dim=N, inputs=[sk.array(s, dtype=float, device=device),
                                            sk.array(m, dtype=sk.mat33, device=device)],
              outputs=[y, yd, y4, y2], device=device)
    y, yd = y.numpy(), yd.numpy()
    ones = np.ones((N, 3, 3))
    np.testing.assert_array_equal(y[0], 0 * ones)
    np.testing.assert_array_equal(y[1], 2 * ones)
    np.testing.assert_array_equal(y[2], s[:, None, None] * ones)
    np.testing.assert_array_equal(y[3], np.broadcast_to(EYE, (N, 3, 3)))
    full = np.broadcast_to(np.arange(1.0, 10.0).reshape(3, 3), (N, 3, 3)).copy()
    full[:, 2, 2] = s
    np.testing.assert_array_equal(y[4], (full + EYE).astype(np.float32))
    np.testing.assert_array_equal(y[5], m)
    np.testing.assert_array_equal(yd[0], m.astype(np.float64))
    np.testing.assert_array_equal(yd[1], s.astype(np.float64)[:, None, None] * ones)
    np.testing.assert_array_equal(y4.numpy(), np.broadcast_to(np.eye(4), (N, 4, 4)))
    np.testing.assert_array_equal(y2.numpy(), np.broadcast_to(np.eye(2), (N, 2, 2)))


def test_int_matrices(device):
    r = rng(6)
    a = r.integers(-9, 9, (N, 2, 2))
    b = r.integers(-3, 3, (N, 2, 2))
    b[0] = 0
    b[1] = a[1]
    v = r.integers(-9, 9, (N, 2))
    y = sk.zeros((10, N), dtype=M22I, device=device)
    z = sk.zeros((3, N), dtype=V2I, device=device)
    e = sk.zeros((4, N), dtype=sk.int32, device=device)
    sk.launch(_int_matrices, dim=N, inputs=[sk.array(a.astype(np.int32), dtype=M22I, device=device),
                                            sk.array(b.astype(np.int32), dtype=M22I, device=device),
                                            sk.array(v.astype(np.int32), dtype=V2I, device=device)],
              outputs=[y, z, e], device=device)
    with np.errstate(divide="ignore", invalid="ignore"):
        q = np.where(b == 0, 0, np.trunc(a / np.where(b == 0, 1, b))).astype(np.int64)
    m = a.copy()
    m[:, 0, 1] = 7
    want = [a + b, a - b, a @ b, 3 * a, np.swapaxes(a, 1, 2), q, v[:, :, None] * v[:, None, :],
            v[:, :, None] * np.eye(2, dtype=np.int64), m, np.full((N, 2, 2), 5)]
    for j, w in enumerate(want):
        np.testing.assert_array_equal(y.numpy()[j], w, err_msg=f"int matrix row {j}")
    for j, w in enumerate([np.einsum("nij,nj->ni", a, v), np.einsum("ni,nij->nj", v, a), a[:, 1]]):
        np.testing.assert_array_equal(z.numpy()[j], w, err_msg=f"int matrix-vector row {j}")
    for j, w in enumerate([np.trace(a, axis1=1, axis2=2), a[:, 1, 0], np.sum(a * b, axis=(1, 2)),
                           np.all(a == b, axis=(1, 2))]):
        np.testing.assert_array_equal(e.numpy()[j], w, err_msg=f"int matrix scalar row {j}")


@sk.kernel
def _from_vectors(v: sk.array(dtype=sk.vec3), y: sk.array(dtype=sk.mat33)):
    i = sk.tid()
    y[i] = sk.mat33(v[i], v[i], v[i])


def test_matrix_from_vectors_is_an_error(device):
    """As in Warp 1.19: mat33(v0, v1, v2) is rejected in favour of matrix_from_rows / matrix_from_cols."""
    v = sk.zeros(1, dtype=sk.vec3, device=device)
    y = sk.zeros(1, dtype=sk.mat33, device=device)
    with pytest.raises(sk.CompileError, match="matrix_from_rows"):
        sk.launch(_from_vectors, dim=1, inputs=[v], outputs=[y], device=device)


# ---------------------------------------------------------------------------
# Gradients: tape gradient of every row against central differences of the
# float64 kernel (each input component perturbed in turn).

GRAD_DTS = ["float32", "float64"]


def _fd(run64, inputs, h=1e-6):
    """Central differences of sum(all outputs) w.r.t. each input component; outputs are
    (rows, N, ...) arrays reduced over their components, so row j, thread i keeps its own value."""
    fds = []
    for k, x in enumerate(inputs):
        g = np.zeros(x.shape)
        lead = 2 if x.ndim >= 2 and x.shape[1] == N and x.shape[0] != N else 1
        for c in np.ndindex(*x.shape[lead:]):
            xp = [y.astype(np.float64).copy() for y in inputs]
            xm = [y.astype(np.float64).copy() for y in inputs]
            xp[k][(Ellipsis,) + c] += h
            xm[k][(Ellipsis,) + c] -= h
            g[(Ellipsis,) + c] = (run64(xp) - run64(xm)) / (2 * h)
        fds.append(g)
    return fds


def _tape_grads(launch, outs, arrs, device):
    tape = sk.Tape()
    with tape:
        launch()
    tape.backward(grads={o: sk.array(np.ones(o.numpy().shape, o.numpy().dtype), dtype=o.dtype, device=device)
                         for o in outs})
    return [x.grad.numpy().astype(np.float64) for x in arrs]


def _assert_grads(names, grads, fds, dt):
    rtol, atol = (1e-5, 1e-6) if dt == "float64" else (3e-3, 3e-3)
    for k, (g, fd) in enumerate(zip(grads, fds)):
        for j, name in enumerate(names):
            np.testing.assert_allclose(g[j], fd[j], rtol=rtol, atol=atol, err_msg=f"d {name} / d input {k} ({dt})")


def _reduce_rows(y):
    """(rows, N, ...) -> (rows, N): sum over the components."""
    return y.reshape(y.shape[0], y.shape[1], -1).sum(axis=2)


def _as(dt, xs):
    return [x.astype(NP[dt]).astype(np.float64) for x in xs]


@pytest.mark.parametrize("dt", GRAD_DTS)
def test_matrix_gradients(device, dt):
    if not hasattr(sk, "Tape"):
        pytest.skip("needs sk.Tape")
    ins = _as(dt, _mat_inputs("float64", 7))
    arrs, y = _run(MAT_K[dt], dt, ins, (NM, N), sk.matrix((3, 3), FLOATS[dt]), device, requires_grad=True)
    grads = _tape_grads(lambda: sk.launch(MAT_K[dt], dim=N, inputs=arrs, outputs=[y], device=device), [y], arrs,
                        device)
    fds = _fd(lambda xs: _reduce_rows(_run(MAT_K["float64"], "float64", xs, (NM, N), sk.mat33d, device)[1].numpy()),
              ins)
    _assert_grads(MAT_NAMES, grads, fds, dt)


@pytest.mark.parametrize("dt", GRAD_DTS)
def test_matrix_vector_gradients(device, dt):
    if not hasattr(sk, "Tape"):
        pytest.skip("needs sk.Tape")
    r = rng(8)
    ins = _as(dt, [r.uniform(-2, 2, (NVR, N, 3, 3)), r.uniform(-2, 2, (NVR, N, 3))])
    arrs, y = _run(MATVEC_K[dt], dt, ins, (NVR, N), sk.vector(3, FLOATS[dt]), device, requires_grad=True)
    grads = _tape_grads(lambda: sk.launch(MATVEC_K[dt], dim=N, inputs=arrs, outputs=[y], device=device), [y], arrs,
                        device)
    fds = _fd(lambda xs: _reduce_rows(_run(MATVEC_K["float64"], "float64", xs, (NVR, N), sk.vec3d, device)[1]
                                      .numpy()), ins)
    _assert_grads(VEC_NAMES, grads, fds, dt)


@pytest.mark.parametrize("dt", GRAD_DTS)
def test_matrix_scalar_gradients(device, dt):
    if not hasattr(sk, "Tape"):
        pytest.skip("needs sk.Tape")
    r = rng(9)
    ins = _as(dt, [r.uniform(-2, 2, (NSR, N, 3, 3)), r.uniform(-2, 2, (NSR, N, 3, 3))])
    arrs, z = _run(MATSCA_K[dt], dt, ins, (NSR, N), FLOATS[dt], device, requires_grad=True)
    grads = _tape_grads(lambda: sk.launch(MATSCA_K[dt], dim=N, inputs=arrs, outputs=[z], device=device), [z], arrs,
                        device)
    fds = _fd(lambda xs: _run(MATSCA_K["float64"], "float64", xs, (NSR, N), sk.float64, device)[1].numpy(), ins)
    _assert_grads(SCA_NAMES, grads, fds, dt)


@pytest.mark.parametrize("dt", GRAD_DTS)
def test_matrix_shape_gradients(device, dt):
    """determinant / inverse of 2x2, 4x4, 6x6 and non-square products: gradient of the sum of all outputs."""
    if not hasattr(sk, "Tape"):
        pytest.skip("needs sk.Tape")
    ins = _as(dt, _shape_inputs(10))
    arrs, outs = _run_shapes(dt, ins, device, requires_grad=True)
    grads = _tape_grads(lambda: sk.launch(SHAPES_K[dt], dim=N, inputs=arrs, outputs=outs, device=device), outs, arrs,
                        device)

    def total(xs):
        _, o = _run_shapes("float64", xs, device)
        return sum(_per_thread(x.numpy()) for x in o)

    fds = _fd(total, ins)
    rtol, atol = (1e-5, 1e-6) if dt == "float64" else (3e-3, 3e-3)
    for k, (g, fd) in enumerate(zip(grads, fds)):
        np.testing.assert_allclose(g, fd, rtol=rtol, atol=atol, err_msg=f"d shapes / d input {k} ({dt})")


def _per_thread(y):
    """Sum of an output over everything but the thread axis (axis 1 for the (3, N) determinants)."""
    if y.shape[0] != N:
        y = np.moveaxis(y, 1, 0)
    return y.reshape(N, -1).sum(axis=1)

"""Transform and spatial-algebra builtins against numpy and warp-lang, on every device.

Kernels are built at import time (one per dtype) so one C++ compile serves the
whole file. Every builtin gets its own input row (``ta[j, i]`` feeds row j), so
each is checked on its own, and the same kernel serves the gradient tests
(tape gradients against central differences of the float64 kernel).
Conventions (Warp's): a transform is (p, q) mapping x to R(q) x + p; a spatial
vector is (angular, linear).
"""
import numpy as np
import pytest

import simkit as sk
from fd_helpers import central_differences
from quat_reference import qmat, qmul, unit

FLOATS = {"float16": sk.float16, "float32": sk.float32, "float64": sk.float64}
NP = {"float16": np.float16, "float32": np.float32, "float64": np.float64}
TOL = {"float16": (2e-2, 3e-2), "float32": (2e-5, 2e-5), "float64": (1e-12, 1e-12)}
N = 16  # samples per row

# ---------------------------------------------------------------------------
# numpy references (float64). Quaternions are (x, y, z, w); transforms (p, q).


def rot(q, v):
    return np.einsum("...ij,...j->...i", qmat(q), v)


def tmul(a, b):
    return np.concatenate([a[..., :3] + rot(a[..., 3:], b[..., :3]), qmul(a[..., 3:], b[..., 3:])], -1)


def tinv(t):
    qi = t[..., 3:] * np.array([-1.0, -1.0, -1.0, 1.0])
    return np.concatenate([-rot(qi, t[..., :3]), qi], -1)


def tmat(t):
    m = np.zeros(t.shape[:-1] + (4, 4))
    m[..., :3, :3] = qmat(t[..., 3:])
    m[..., :3, 3] = t[..., :3]
    m[..., 3, 3] = 1.0
    return m


def align_t(got, want):
    """Transforms with q and -q are the same: flip got's quaternion to match want's."""
    s = np.where(np.sum(got[..., 3:] * want[..., 3:], -1) < 0, -1.0, 1.0)
    out = got.copy()
    out[..., 3:] *= s[..., None]
    return out


# ---------------------------------------------------------------------------
# One kernel per dtype. Rows: (name, family). Families: t transform, v vec3,
# q quat, s scalar, m mat44, x spatial vector, a spatial matrix.

ROWS = [
    ("multiply", "t"), ("mul_op", "t"), ("inverse", "t"), ("ctor_pq", "t"), ("ctor_p", "t"), ("zero_plus", "t"),
    ("identity_mul", "t"), ("set_p", "t"), ("set_q", "t"), ("assign", "t"), ("assign_neg", "t"),
    ("assign_runtime", "t"), ("add", "t"), ("sub", "t"), ("mul_ts", "t"), ("mul_st", "t"), ("lerp", "t"),
    ("from_matrix", "t"), ("fill", "t"), ("cast", "t"), ("set_translation", "t"), ("set_rotation", "t"),
    ("point", "v"), ("vector", "v"), ("point_m44", "v"), ("vector_m44", "v"), ("get_p", "v"),
    ("get_translation", "v"), ("velocity_at_point", "v"), ("spatial_top", "v"), ("spatial_bottom", "v"),
    ("get_q", "q"), ("get_rotation", "q"),
    ("extract", "s"), ("extract_neg", "s"), ("extract_runtime", "s"), ("spatial_dot", "s"), ("p_attr", "s"),
    ("to_matrix", "m"),
    ("spatial_vector", "x"), ("spatial_cross", "x"), ("spatial_cross_dual", "x"), ("transform_twist", "x"),
    ("transform_wrench", "x"),
    ("spatial_adjoint", "a"),
]
NAMES = [r[0] for r in ROWS]
R = len(ROWS)
ROW = {n: j for j, n in enumerate(NAMES)}


def _transform_kernel(dtype):
    TF, TFD = sk.transformation(dtype), sk.transformd
    V, Q = sk.vector(3, dtype), sk.quaternion(dtype)
    SV, M3, M4, M6 = sk.vector(6, dtype), sk.matrix((3, 3), dtype), sk.matrix((4, 4), dtype), sk.matrix((6, 6), dtype)

    @sk.kernel
    def transform_ops(ta: sk.array(dtype=TF, ndim=2), tb: sk.array(dtype=TF, ndim=2), v: sk.array(dtype=V, ndim=2),
                      s: sk.array(dtype=dtype, ndim=2), m4: sk.array(dtype=M4, ndim=2),
                      xa: sk.array(dtype=SV, ndim=2), xb: sk.array(dtype=SV, ndim=2), ma: sk.array(dtype=M3, ndim=2),
                      mb: sk.array(dtype=M3, ndim=2),
                      yt: sk.array(dtype=TF, ndim=2), yv: sk.array(dtype=V, ndim=2), yq: sk.array(dtype=Q, ndim=2),
                      ys: sk.array(dtype=dtype, ndim=2), ym: sk.array(dtype=M4, ndim=2),
                      yx: sk.array(dtype=SV, ndim=2), ya: sk.array(dtype=M6, ndim=2)):
        i = sk.tid()
        yt[0, i] = sk.transform_multiply(ta[0, i], tb[0, i])
        yt[1, i] = ta[1, i] * tb[1, i]
        yt[2, i] = sk.transform_inverse(ta[2, i])
        yt[3, i] = TF(v[3, i], tb[3, i].q)
        yt[4, i] = TF(v[4, i])
        yt[5, i] = TF() + ta[5, i]
        yt[6, i] = sk.transform_identity(dtype=dtype) * ta[6, i]
        t = ta[7, i]
        t.p = v[7, i]
        yt[7, i] = t
        u = ta[8, i]
        u.q = tb[8, i].q
        yt[8, i] = u
        w = ta[9, i]
        w[4] = s[9, i]
        yt[9, i] = w
        z = ta[10, i]
        z[-1] = s[10, i]
        yt[10, i] = z
        r = ta[11, i]
        r[i % 7] = s[11, i]
        yt[11, i] = r
        yt[12, i] = ta[12, i] + tb[12, i]
        yt[13, i] = ta[13, i] - tb[13, i]
        yt[14, i] = ta[14, i] * s[14, i]
        yt[15, i] = s[15, i] * ta[15, i]
        yt[16, i] = sk.lerp(ta[16, i], tb[16, i], s[16, i])
        yt[17, i] = sk.transform_from_matrix(m4[17, i])
        yt[18, i] = TF(s[18, i])
        yt[19, i] = TF(TFD(ta[19, i]))
        yt[20, i] = sk.transform_set_translation(ta[20, i], v[20, i])
        yt[21, i] = sk.transform_set_rotation(ta[21, i], sk.transform_get_rotation(tb[21, i]))
        yv[22, i] = sk.transform_point(ta[22, i], v[22, i])
        yv[23, i] = sk.transform_vector(ta[23, i], v[23, i])
        yv[24, i] = sk.transform_point(m4[24, i], v[24, i])
        yv[25, i] = sk.transform_vector(m4[25, i], v[25, i])
        yv[26, i] = ta[26, i].p
        yv[27, i] = sk.transform_get_translation(ta[27, i])
        yv[28, i] = sk.velocity_at_point(xa[28, i], v[28, i])
        yv[29, i] = sk.spatial_top(xa[29, i])
        yv[30, i] = sk.spatial_bottom(xa[30, i])
        yq[31, i] = ta[31, i].q
        yq[32, i] = sk.transform_get_rotation(ta[32, i])
        ys[33, i] = ta[33, i][3]
        ys[34, i] = ta[34, i][-2]
        ys[35, i] = ta[35, i][i % 7]
        ys[36, i] = sk.spatial_dot(xa[36, i], xb[36, i])
        ys[37, i] = ta[37, i].p.y
        ym[38, i] = sk.transform_to_matrix(ta[38, i])
        yx[39, i] = SV(v[39, i], sk.transform_get_translation(ta[39, i]))
        yx[40, i] = sk.spatial_cross(xa[40, i], xb[40, i])
        yx[41, i] = sk.spatial_cross_dual(xa[41, i], xb[41, i])
        yx[42, i] = sk.transform_twist(ta[42, i], xa[42, i])
        yx[43, i] = sk.transform_wrench(ta[43, i], xa[43, i])
        ya[44, i] = sk.spatial_adjoint(ma[44, i], mb[44, i])

    return transform_ops


TF_K = {n: _transform_kernel(t) for n, t in FLOATS.items()}


def _inputs(seed):
    """Float64 inputs: unit rotations, denominators away from 0, rigid 4x4 matrices."""
    r = np.random.default_rng(seed)
    ta = np.concatenate([r.uniform(-2.0, 2.0, (R, N, 3)), unit(r.uniform(-1.0, 1.0, (R, N, 4)))], -1)
    tb = np.concatenate([r.uniform(-2.0, 2.0, (R, N, 3)), unit(r.uniform(-1.0, 1.0, (R, N, 4)))], -1)
    v = r.uniform(-2.0, 2.0, (R, N, 3))
    s = r.uniform(-2.0, 2.0, (R, N))
    m4 = r.uniform(-2.0, 2.0, (R, N, 4, 4))
    m4[ROW["from_matrix"]] = tmat(ta[ROW["from_matrix"]])  # rigid: its transform is ta's (up to q's sign)
    xa = r.uniform(-2.0, 2.0, (R, N, 6))
    xb = r.uniform(-2.0, 2.0, (R, N, 6))
    ma = r.uniform(-2.0, 2.0, (R, N, 3, 3))
    mb = r.uniform(-2.0, 2.0, (R, N, 3, 3))
    return dict(ta=ta, tb=tb, v=v, s=s, m4=m4, xa=xa, xb=xb, ma=ma, mb=mb)


INPUTS = ["ta", "tb", "v", "s", "m4", "xa", "xb", "ma", "mb"]
FAMILY = {"t": 0, "v": 1, "q": 2, "s": 3, "m": 4, "x": 5, "a": 6}


def cross(a, b):
    return np.cross(a, b)


def _reference(x):
    ta, tb, v, s, m4, xa, xb, ma, mb = (x[k] for k in INPUTS)
    j = ROW
    want = {}
    sc = lambda n: s[j[n]][:, None]  # noqa: E731
    want["multiply"] = tmul(ta[j["multiply"]], tb[j["multiply"]])
    want["mul_op"] = tmul(ta[j["mul_op"]], tb[j["mul_op"]])
    want["inverse"] = tinv(ta[j["inverse"]])
    want["ctor_pq"] = np.concatenate([v[j["ctor_pq"]], tb[j["ctor_pq"]][:, 3:]], -1)
    want["ctor_p"] = np.concatenate([v[j["ctor_p"]], np.tile([0.0, 0.0, 0.0, 1.0], (N, 1))], -1)
    want["zero_plus"] = ta[j["zero_plus"]]
    want["identity_mul"] = ta[j["identity_mul"]]
    w = ta[j["set_p"]].copy()
    w[:, :3] = v[j["set_p"]]
    want["set_p"] = w
    w = ta[j["set_q"]].copy()
    w[:, 3:] = tb[j["set_q"]][:, 3:]
    want["set_q"] = w
    for name, k in (("assign", 4), ("assign_neg", 6)):
        w = ta[j[name]].copy()
        w[:, k] = s[j[name]]
        want[name] = w
    w = ta[j["assign_runtime"]].copy()
    w[np.arange(N), np.arange(N) % 7] = s[j["assign_runtime"]]
    want["assign_runtime"] = w
    want["add"] = ta[j["add"]] + tb[j["add"]]
    want["sub"] = ta[j["sub"]] - tb[j["sub"]]
    want["mul_ts"] = ta[j["mul_ts"]] * sc("mul_ts")
    want["mul_st"] = ta[j["mul_st"]] * sc("mul_st")
    t = sc("lerp")
    want["lerp"] = ta[j["lerp"]] * (1 - t) + tb[j["lerp"]] * t
    want["from_matrix"] = ta[j["from_matrix"]]
    want["fill"] = np.repeat(sc("fill"), 7, axis=1)
    want["cast"] = ta[j["cast"]]
    w = ta[j["set_translation"]].copy()
    w[:, :3] = v[j["set_translation"]]
    want["set_translation"] = w
    w = ta[j["set_rotation"]].copy()
    w[:, 3:] = tb[j["set_rotation"]][:, 3:]
    want["set_rotation"] = w
    k = j["point"]
    want["point"] = rot(ta[k][:, 3:], v[k]) + ta[k][:, :3]
    k = j["vector"]
    want["vector"] = rot(ta[k][:, 3:], v[k])
    k = j["point_m44"]
    want["point_m44"] = np.einsum("nij,nj->ni", m4[k][:, :3, :3], v[k]) + m4[k][:, :3, 3]
    k = j["vector_m44"]
    want["vector_m44"] = np.einsum("nij,nj->ni", m4[k][:, :3, :3], v[k])
    want["get_p"] = ta[j["get_p"]][:, :3]
    want["get_translation"] = ta[j["get_translation"]][:, :3]
    k = j["velocity_at_point"]
    want["velocity_at_point"] = xa[k][:, 3:] + cross(xa[k][:, :3], v[k])
    want["spatial_top"] = xa[j["spatial_top"]][:, :3]
    want["spatial_bottom"] = xa[j["spatial_bottom"]][:, 3:]
    want["get_q"] = ta[j["get_q"]][:, 3:]
    want["get_rotation"] = ta[j["get_rotation"]][:, 3:]
    want["extract"] = ta[j["extract"]][:, 3]
    want["extract_neg"] = ta[j["extract_neg"]][:, 5]
    want["extract_runtime"] = ta[j["extract_runtime"]][np.arange(N), np.arange(N) % 7]
    want["spatial_dot"] = np.sum(xa[j["spatial_dot"]] * xb[j["spatial_dot"]], -1)
    want["p_attr"] = ta[j["p_attr"]][:, 1]
    want["to_matrix"] = tmat(ta[j["to_matrix"]])
    k = j["spatial_vector"]
    want["spatial_vector"] = np.concatenate([v[k], ta[k][:, :3]], -1)
    k = j["spatial_cross"]
    wa, va, wb, vb = xa[k][:, :3], xa[k][:, 3:], xb[k][:, :3], xb[k][:, 3:]
    want["spatial_cross"] = np.concatenate([cross(wa, wb), cross(va, wb) + cross(wa, vb)], -1)
    k = j["spatial_cross_dual"]
    wa, va, wb, vb = xa[k][:, :3], xa[k][:, 3:], xb[k][:, :3], xb[k][:, 3:]
    want["spatial_cross_dual"] = np.concatenate([cross(wa, wb) + cross(va, vb), cross(wa, vb)], -1)
    k = j["transform_twist"]
    p, q = ta[k][:, :3], ta[k][:, 3:]
    w2 = rot(q, xa[k][:, :3])
    want["transform_twist"] = np.concatenate([w2, rot(q, xa[k][:, 3:]) + cross(p, w2)], -1)
    k = j["transform_wrench"]
    p, q = ta[k][:, :3], ta[k][:, 3:]
    f2 = rot(q, xa[k][:, 3:])
    want["transform_wrench"] = np.concatenate([rot(q, xa[k][:, :3]) + cross(p, f2), f2], -1)
    k = j["spatial_adjoint"]
    a = np.zeros((N, 6, 6))
    a[:, :3, :3] = ma[k]
    a[:, 3:, 3:] = ma[k]
    a[:, 3:, :3] = mb[k]
    want["spatial_adjoint"] = a
    return want


def _arrays(dt, x, device, requires_grad=False):
    t = FLOATS[dt]
    types = [sk.transformation(t), sk.transformation(t), sk.vector(3, t), t, sk.matrix((4, 4), t),
             sk.vector(6, t), sk.vector(6, t), sk.matrix((3, 3), t), sk.matrix((3, 3), t)]
    c = NP[dt]
    ins = [sk.array(x[k].astype(c), dtype=ty, device=device, requires_grad=requires_grad)
           for k, ty in zip(INPUTS, types)]
    out_types = [sk.transformation(t), sk.vector(3, t), sk.quaternion(t), t, sk.matrix((4, 4), t),
                 sk.vector(6, t), sk.matrix((6, 6), t)]
    outs = [sk.zeros((R, N), dtype=ty, device=device, requires_grad=requires_grad) for ty in out_types]
    return ins, outs


def _run(dt, x, device):
    ins, outs = _arrays(dt, x, device)
    sk.launch(TF_K[dt], dim=N, inputs=ins, outputs=outs, device=device)
    return [o.numpy().astype(np.float64) for o in outs]


def _got(outs, name):
    return outs[FAMILY[dict(ROWS)[name]]][ROW[name]]


def _rounded(x, dt):
    return {k: v.astype(NP[dt]).astype(np.float64) for k, v in x.items()}


@pytest.mark.parametrize("dt", FLOATS)
def test_transform_ops(device, dt):
    x = _rounded(_inputs(1), dt)
    outs = _run(dt, x, device)
    want = _reference(x)
    rtol, atol = TOL[dt]
    for name in NAMES:
        got = _got(outs, name)
        if name == "from_matrix":
            got = align_t(got, want[name])
        np.testing.assert_allclose(got, want[name], rtol=rtol, atol=atol, err_msg=f"{name} ({dt})")


def test_transform_identities(device):
    """inverse undoes a transform, composition applies b first, power is frame independent."""
    x = _inputs(2)
    j = ROW
    x["ta"][j["inverse"]] = x["ta"][j["multiply"]]
    x["v"][j["point"]] = x["v"][j["vector"]]
    outs = _run("float64", x, device)
    a, b = x["ta"][j["multiply"]], x["tb"][j["multiply"]]
    ab, ainv = _got(outs, "multiply"), _got(outs, "inverse")
    np.testing.assert_allclose(tmul(ainv, a)[:, :3], 0.0, atol=1e-12)
    np.testing.assert_allclose(np.abs(tmul(ainv, a)[:, 6]), 1.0, atol=1e-12)
    p = x["v"][j["vector"]]
    np.testing.assert_allclose(rot(ab[:, 3:], p) + ab[:, :3], rot(a[:, 3:], rot(b[:, 3:], p) + b[:, :3]) + a[:, :3],
                               atol=1e-12)
    # wrench . twist is invariant under the same rigid transform
    x2 = _inputs(3)
    x2["ta"][j["transform_wrench"]] = x2["ta"][j["transform_twist"]]
    outs = _run("float64", x2, device)
    tw, wr = x2["xa"][j["transform_twist"]], x2["xa"][j["transform_wrench"]]
    np.testing.assert_allclose(np.sum(_got(outs, "transform_twist") * _got(outs, "transform_wrench"), -1),
                               np.sum(tw * wr, -1), rtol=1e-12, atol=1e-12)


# ---------------------------------------------------------------------------
# Defaults (Warp: transform() is all zeros, transform(p) has the identity rotation)


@sk.kernel
def _transform_defaults(y: sk.array(dtype=sk.transform), yd: sk.array(dtype=sk.transformd),
                        x: sk.array(dtype=sk.spatial_vector)):
    y[0] = sk.transform()
    y[1] = sk.transform_identity()
    y[2] = sk.transform(sk.vec3(1.0, 2.0, 3.0))
    y[3] = sk.transform(1.0, 2.0, 3.0, 0.0, 0.0, 0.0, 1.0)
    y[4] = sk.transform(2.5)
    y[5] = sk.transform(sk.vec3(1.0, 2.0, 3.0), sk.quat_identity())
    yd[0] = sk.transform_identity(dtype=sk.float64)
    yd[1] = sk.transformd(sk.vec3d(1.0, 2.0, 3.0), sk.quatd(0.0, 0.0, 0.0, 1.0)) * 2.0
    x[0] = sk.spatial_vector(sk.vec3(1.0, 2.0, 3.0), sk.vec3(4.0, 5.0, 6.0))
    x[1] = sk.spatial_vector()
    x[2] = sk.spatial_vector(1.0, 2.0, 3.0, 4.0, 5.0, 6.0)


def test_transform_defaults(device):
    y = sk.zeros(6, dtype=sk.transform, device=device)
    yd = sk.zeros(2, dtype=sk.transformd, device=device)
    x = sk.zeros(3, dtype=sk.spatial_vector, device=device)
    sk.launch(_transform_defaults, dim=1, outputs=[y, yd, x], device=device)
    y, yd, x = y.numpy(), yd.numpy(), x.numpy()
    np.testing.assert_array_equal(y[0], np.zeros(7))
    np.testing.assert_array_equal(y[1], [0, 0, 0, 0, 0, 0, 1])
    np.testing.assert_array_equal(y[2], [1, 2, 3, 0, 0, 0, 1])
    np.testing.assert_array_equal(y[3], [1, 2, 3, 0, 0, 0, 1])
    np.testing.assert_array_equal(y[4], np.full(7, 2.5))
    np.testing.assert_array_equal(y[5], [1, 2, 3, 0, 0, 0, 1])
    assert yd.dtype == np.float64
    np.testing.assert_array_equal(yd, [[0, 0, 0, 0, 0, 0, 1], [2, 4, 6, 0, 0, 0, 2]])
    np.testing.assert_array_equal(x, [[1, 2, 3, 4, 5, 6], np.zeros(6), [1, 2, 3, 4, 5, 6]])


# Warp also allows transform_set_translation / transform_set_rotation as statements that
# update a local transform in place (as ``t.p = p`` does).


@sk.kernel
def _set_statement(t: sk.array(dtype=sk.transform), out: sk.array(dtype=sk.transform)):
    i = sk.tid()
    x = t[i]
    sk.transform_set_translation(x, sk.vec3(0.0, 0.0, 1.0))
    sk.transform_set_rotation(x, sk.quat_identity())
    out[i] = x


def test_transform_set_statement(device):
    t = sk.array(np.array([[1.0, 2.0, 3.0, 0.0, 0.0, 0.6, 0.8]], np.float32), dtype=sk.transform, device=device)
    out = sk.zeros(1, dtype=sk.transform, device=device)
    sk.launch(_set_statement, dim=1, inputs=[t], outputs=[out], device=device)
    np.testing.assert_array_equal(out.numpy(), [[0, 0, 1, 0, 0, 0, 1]])


# ---------------------------------------------------------------------------
# warp-lang as the reference (its Python-scope builtins run Warp's native code)


def test_transform_against_warp(device):
    wp = pytest.importorskip("warp")
    x = _rounded(_inputs(4), "float32")
    outs = _run("float32", x, device)
    f = lambda a: [float(c) for c in np.ravel(a)]  # noqa: E731
    tf = lambda n, k, key="ta": wp.transform(*f(x[key][ROW[n], k]))  # noqa: E731
    sv = lambda n, k, key="xa": wp.spatial_vector(*f(x[key][ROW[n], k]))  # noqa: E731
    v3 = lambda n, k: wp.vec3(*f(x["v"][ROW[n], k]))  # noqa: E731
    checks = {
        "multiply": lambda k: wp.transform_multiply(tf("multiply", k), tf("multiply", k, "tb")),
        "mul_op": lambda k: wp.mul(tf("mul_op", k), tf("mul_op", k, "tb")),
        "inverse": lambda k: wp.transform_inverse(tf("inverse", k)),
        "point": lambda k: wp.transform_point(tf("point", k), v3("point", k)),
        "vector": lambda k: wp.transform_vector(tf("vector", k), v3("vector", k)),
        "point_m44": lambda k: wp.transform_point(wp.mat44(*f(x["m4"][ROW["point_m44"], k])), v3("point_m44", k)),
        "vector_m44": lambda k: wp.transform_vector(wp.mat44(*f(x["m4"][ROW["vector_m44"], k])),
                                                    v3("vector_m44", k)),
        "to_matrix": lambda k: wp.transform_to_matrix(tf("to_matrix", k)),
        "spatial_cross": lambda k: wp.spatial_cross(sv("spatial_cross", k), sv("spatial_cross", k, "xb")),
        "spatial_cross_dual": lambda k: wp.spatial_cross_dual(sv("spatial_cross_dual", k),
                                                              sv("spatial_cross_dual", k, "xb")),
        "spatial_dot": lambda k: wp.spatial_dot(sv("spatial_dot", k), sv("spatial_dot", k, "xb")),
        "velocity_at_point": lambda k: wp.velocity_at_point(sv("velocity_at_point", k), v3("velocity_at_point", k)),
        "spatial_top": lambda k: wp.spatial_top(sv("spatial_top", k)),
        "spatial_bottom": lambda k: wp.spatial_bottom(sv("spatial_bottom", k)),
    }
    for name, ref in checks.items():
        got = _got(outs, name)
        want = np.array([np.array(ref(k), dtype=np.float64).reshape(got.shape[1:]) for k in range(N)])
        np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-5, err_msg=f"{name} vs warp")
    got = _got(outs, "from_matrix")
    want = np.array([np.array(wp.transform_from_matrix(wp.mat44(*f(x["m4"][ROW["from_matrix"], k]))), np.float64)
                     for k in range(N)])
    np.testing.assert_allclose(align_t(got, want), want, rtol=2e-5, atol=2e-5, err_msg="from_matrix vs warp")
    # (In Warp *kernels* transform() is all zeros, as here; Warp's Python-scope wp.transform() is the identity.)


# ---------------------------------------------------------------------------
# Gradients: tape gradient of every row against central differences of the
# float64 kernel (each input component perturbed in turn).

GRAD_DTS = ["float32", "float64"]


def _fd(x, device, h=1e-6):
    def total(xs):
        outs = _run("float64", xs, device)
        return np.stack([_got(outs, n).reshape(N, -1).sum(axis=1) for n in NAMES])

    return central_differences(x, INPUTS, total, h)


@pytest.mark.parametrize("dt", GRAD_DTS)
def test_transform_gradients(device, dt):
    if not hasattr(sk, "Tape"):
        pytest.skip("needs sk.Tape")
    x = _rounded(_inputs(5), dt)
    ins, outs = _arrays(dt, x, device, requires_grad=True)
    tape = sk.Tape()
    with tape:
        sk.launch(TF_K[dt], dim=N, inputs=ins, outputs=outs, device=device)
    tape.backward(grads={o: sk.array(np.ones(o.numpy().shape, NP[dt]), dtype=o.dtype, device=device)
                         for o in outs})
    grads = [a.grad.numpy().astype(np.float64) for a in ins]
    fds = _fd(x, device)
    rtol, atol = (1e-5, 1e-6) if dt == "float64" else (2e-3, 2e-3)
    for k, (g, fd) in enumerate(zip(grads, fds)):
        for j, name in enumerate(NAMES):
            np.testing.assert_allclose(g[j], fd[j], rtol=rtol, atol=atol, err_msg=f"d {name} / d {INPUTS[k]} ({dt})")

"""Quaternion builtins against numpy (Hamilton products, rotation matrices, slerp)
and against warp-lang, on every device.

Kernels are built at import time (one per dtype) so one C++ compile serves the
whole file. Every builtin gets its own input row (``qa[j, i]`` feeds row j), so
each is checked on its own, and the same kernel serves the gradient tests
(tape gradients against central differences of the float64 kernel).
"""
import numpy as np
import pytest

import simkit as sk
from fd_helpers import central_differences
from quat_reference import qmat, qmul, unit

FLOATS = {"float16": sk.float16, "float32": sk.float32, "float64": sk.float64}
NP = {"float16": np.float16, "float32": np.float32, "float64": np.float64}
TOL = {"float16": (2e-2, 2e-2), "float32": (2e-5, 2e-5), "float64": (1e-12, 1e-12)}
N = 16  # samples per row

# ---------------------------------------------------------------------------
# numpy references (float64); quaternions are (x, y, z, w)


def qconj(q):
    return q * np.array([-1.0, -1.0, -1.0, 1.0])


def qaxis(axis, angle):
    return np.concatenate([axis * np.sin(angle / 2)[..., None], np.cos(angle / 2)[..., None]], -1)


def qrpy(r, p, y):
    e = np.eye(3)
    return qmul(qaxis(e[2], y), qmul(qaxis(e[1], p), qaxis(e[0], r)))


def qslerp(a, b, t):
    d = np.sum(a * b, -1)
    b = np.where(d[..., None] < 0, -b, b)
    th = np.arccos(np.clip(np.abs(d), -1.0, 1.0))
    sa, sb = np.sin((1 - t) * th) / np.sin(th), np.sin(t * th) / np.sin(th)
    return sa[..., None] * a + sb[..., None] * b


def qto_axis_angle(q):
    v, w = q[..., :3], q[..., 3]
    lv = np.linalg.norm(v, axis=-1)
    s = np.where(w < 0, -1.0, 1.0)
    return s[..., None] * v / lv[..., None], 2 * np.arctan2(lv, np.abs(w))


def align(got, want):
    """got * sign so that it matches want (q and -q are the same rotation)."""
    return got * np.where(np.sum(got * want, -1) < 0, -1.0, 1.0)[..., None]


# ---------------------------------------------------------------------------
# One kernel per dtype. Rows: (name, family, needs unit quaternions)

ROWS = [
    ("mul", "q", False), ("add", "q", False), ("sub", "q", False), ("neg", "q", False), ("pos", "q", False),
    ("mul_qs", "q", False), ("mul_sq", "q", False), ("div_qs", "q", False), ("div_sq", "q", False),
    ("normalize", "q", False), ("inverse", "q", False), ("from_axis_angle", "q", False), ("rpy", "q", False),
    ("slerp", "q", True), ("from_matrix33", "q", True), ("from_matrix44", "q", True), ("lerp", "q", False),
    ("ctor_vw", "q", False), ("zero_plus", "q", False), ("identity_mul", "q", False), ("assign", "q", False),
    ("assign_attr", "q", False), ("assign_neg", "q", False), ("cast", "q", False), ("assign_runtime", "q", False),
    ("rotate", "v", True), ("rotate_inv", "v", True), ("rotate_matrix", "v", True),
    ("dot", "s", False), ("length", "s", False), ("length_sq", "s", False), ("extract", "s", False),
    ("extract_attr", "s", False), ("extract_neg", "s", False), ("extract_runtime", "s", False),
    ("to_matrix", "m", True),
]
NAMES = [r[0] for r in ROWS]
R = len(ROWS)
ROW = {n: j for j, n in enumerate(NAMES)}


def _quat_kernel(dtype):
    Q, QD = sk.quaternion(dtype), sk.quatd
    V, M, M4 = sk.vector(3, dtype), sk.matrix((3, 3), dtype), sk.matrix((4, 4), dtype)

    @sk.kernel
    def quat_ops(qa: sk.array(dtype=Q, ndim=2), qb: sk.array(dtype=Q, ndim=2), v: sk.array(dtype=V, ndim=2),
                 s: sk.array(dtype=dtype, ndim=2), m: sk.array(dtype=M, ndim=2), m4: sk.array(dtype=M4, ndim=2),
                 yq: sk.array(dtype=Q, ndim=2), yv: sk.array(dtype=V, ndim=2), ys: sk.array(dtype=dtype, ndim=2),
                 ym: sk.array(dtype=M, ndim=2)):
        i = sk.tid()
        yq[0, i] = qa[0, i] * qb[0, i]
        yq[1, i] = qa[1, i] + qb[1, i]
        yq[2, i] = qa[2, i] - qb[2, i]
        yq[3, i] = -qa[3, i]
        yq[4, i] = +qa[4, i]
        yq[5, i] = qa[5, i] * s[5, i]
        yq[6, i] = s[6, i] * qa[6, i]
        yq[7, i] = qa[7, i] / s[7, i]
        yq[8, i] = s[8, i] / qa[8, i]
        yq[9, i] = sk.normalize(qa[9, i])
        yq[10, i] = sk.quat_inverse(qa[10, i])
        yq[11, i] = sk.quat_from_axis_angle(v[11, i], s[11, i])
        e = v[12, i]
        yq[12, i] = sk.quat_rpy(e[0], e[1], e[2])
        yq[13, i] = sk.quat_slerp(qa[13, i], qb[13, i], s[13, i])
        yq[14, i] = sk.quat_from_matrix(m[14, i])
        yq[15, i] = sk.quat_from_matrix(m4[15, i])
        yq[16, i] = sk.lerp(qa[16, i], qb[16, i], s[16, i])
        yq[17, i] = Q(v[17, i], s[17, i])
        yq[18, i] = Q() + qa[18, i]
        yq[19, i] = sk.quat_identity(dtype=dtype) * qa[19, i]
        q = qa[20, i]
        q[1] = s[20, i]
        yq[20, i] = q
        r = qa[21, i]
        r.w = s[21, i] * qb[21, i].x
        yq[21, i] = r
        u = qa[22, i]
        u[-3] = s[22, i]
        yq[22, i] = u
        yq[23, i] = Q(QD(qa[23, i]))
        w = qa[24, i]
        w[i % 4] = s[24, i]
        yq[24, i] = w
        yv[25, i] = sk.quat_rotate(qa[25, i], v[25, i])
        yv[26, i] = sk.quat_rotate_inv(qa[26, i], v[26, i])
        yv[27, i] = sk.quat_to_matrix(qa[27, i]) @ v[27, i]
        ys[28, i] = sk.dot(qa[28, i], qb[28, i])
        ys[29, i] = sk.length(qa[29, i])
        ys[30, i] = sk.length_sq(qa[30, i])
        ys[31, i] = qa[31, i][0]
        ys[32, i] = qa[32, i].y + qb[32, i].z
        ys[33, i] = qa[33, i][-1]
        ys[34, i] = qa[34, i][i % 4]
        ym[35, i] = sk.quat_to_matrix(qa[35, i])

    return quat_ops


QUAT_K = {n: _quat_kernel(t) for n, t in FLOATS.items()}


def _inputs(seed):
    """Float64 inputs; unit quaternions where a row needs them, denominators away from 0."""
    r = np.random.default_rng(seed)
    qa = r.uniform(-2.0, 2.0, (R, N, 4))
    qb = r.uniform(-2.0, 2.0, (R, N, 4))
    v = r.uniform(-2.0, 2.0, (R, N, 3))
    s = r.uniform(-2.0, 2.0, (R, N))
    for name, _, needs_unit in ROWS:
        if needs_unit:
            qa[ROW[name]] = unit(qa[ROW[name]])
            qb[ROW[name]] = unit(qb[ROW[name]])
    away = lambda x: np.sign(x) * (0.5 + np.abs(x))  # noqa: E731
    s[ROW["div_qs"]] = away(s[ROW["div_qs"]])
    qa[ROW["div_sq"]] = away(qa[ROW["div_sq"]])
    v[ROW["from_axis_angle"]] = unit(v[ROW["from_axis_angle"]])
    s[ROW["slerp"]] = r.uniform(0.0, 1.0, N)
    qa[ROW["length"]] = away(qa[ROW["length"]])
    # rotation matrices of known unit quaternions; the 4x4 one also carries a translation
    q0 = unit(r.uniform(-1.0, 1.0, (R, N, 4)))
    m = qmat(q0)
    m4 = np.zeros((R, N, 4, 4))
    m4[..., :3, :3] = m
    m4[..., :3, 3] = v
    m4[..., 3, 3] = 1.0
    return dict(qa=qa, qb=qb, v=v, s=s, m=m, m4=m4, q0=q0)


def _reference(x):
    qa, qb, v, s, q0 = x["qa"], x["qb"], x["v"], x["s"], x["q0"]
    want = {}
    j = ROW
    sq = lambda n: s[j[n]][:, None]  # noqa: E731
    want["mul"] = qmul(qa[j["mul"]], qb[j["mul"]])
    want["add"] = qa[j["add"]] + qb[j["add"]]
    want["sub"] = qa[j["sub"]] - qb[j["sub"]]
    want["neg"] = -qa[j["neg"]]
    want["pos"] = qa[j["pos"]]
    want["mul_qs"] = qa[j["mul_qs"]] * sq("mul_qs")
    want["mul_sq"] = qa[j["mul_sq"]] * sq("mul_sq")
    want["div_qs"] = qa[j["div_qs"]] / sq("div_qs")
    want["div_sq"] = sq("div_sq") / qa[j["div_sq"]]
    want["normalize"] = unit(qa[j["normalize"]])
    want["inverse"] = qconj(qa[j["inverse"]])
    want["from_axis_angle"] = qaxis(v[j["from_axis_angle"]], s[j["from_axis_angle"]])
    e = v[j["rpy"]]
    want["rpy"] = qrpy(e[:, 0], e[:, 1], e[:, 2])
    want["slerp"] = qslerp(qa[j["slerp"]], qb[j["slerp"]], s[j["slerp"]])
    want["from_matrix33"] = q0[j["from_matrix33"]]
    want["from_matrix44"] = q0[j["from_matrix44"]]
    t = sq("lerp")
    want["lerp"] = qa[j["lerp"]] * (1 - t) + qb[j["lerp"]] * t
    want["ctor_vw"] = np.concatenate([v[j["ctor_vw"]], sq("ctor_vw")], -1)
    want["zero_plus"] = qa[j["zero_plus"]]
    want["identity_mul"] = qa[j["identity_mul"]]
    w = qa[j["assign"]].copy()
    w[:, 1] = s[j["assign"]]
    want["assign"] = w
    w = qa[j["assign_attr"]].copy()
    w[:, 3] = s[j["assign_attr"]] * qb[j["assign_attr"]][:, 0]
    want["assign_attr"] = w
    w = qa[j["assign_neg"]].copy()
    w[:, 1] = s[j["assign_neg"]]
    want["assign_neg"] = w
    want["cast"] = qa[j["cast"]]
    w = qa[j["assign_runtime"]].copy()
    w[np.arange(N), np.arange(N) % 4] = s[j["assign_runtime"]]
    want["assign_runtime"] = w
    k = j["rotate"]
    want["rotate"] = np.einsum("nij,nj->ni", qmat(qa[k]), v[k])
    k = j["rotate_inv"]
    want["rotate_inv"] = np.einsum("nji,nj->ni", qmat(qa[k]), v[k])
    k = j["rotate_matrix"]
    want["rotate_matrix"] = np.einsum("nij,nj->ni", qmat(qa[k]), v[k])
    want["dot"] = np.sum(qa[j["dot"]] * qb[j["dot"]], -1)
    want["length"] = np.linalg.norm(qa[j["length"]], axis=-1)
    want["length_sq"] = np.sum(qa[j["length_sq"]] ** 2, -1)
    want["extract"] = qa[j["extract"]][:, 0]
    want["extract_attr"] = qa[j["extract_attr"]][:, 1] + qb[j["extract_attr"]][:, 2]
    want["extract_neg"] = qa[j["extract_neg"]][:, 3]
    want["extract_runtime"] = qa[j["extract_runtime"]][np.arange(N), np.arange(N) % 4]
    want["to_matrix"] = qmat(qa[j["to_matrix"]])
    return want


def _arrays(dt, x, device, requires_grad=False):
    t = FLOATS[dt]
    Q, V, M, M4 = sk.quaternion(t), sk.vector(3, t), sk.matrix((3, 3), t), sk.matrix((4, 4), t)
    c = NP[dt]
    ins = [sk.array(x["qa"].astype(c), dtype=Q, device=device, requires_grad=requires_grad),
           sk.array(x["qb"].astype(c), dtype=Q, device=device, requires_grad=requires_grad),
           sk.array(x["v"].astype(c), dtype=V, device=device, requires_grad=requires_grad),
           sk.array(x["s"].astype(c), dtype=t, device=device, requires_grad=requires_grad),
           sk.array(x["m"].astype(c), dtype=M, device=device, requires_grad=requires_grad),
           sk.array(x["m4"].astype(c), dtype=M4, device=device, requires_grad=requires_grad)]
    outs = [sk.zeros((R, N), dtype=Q, device=device, requires_grad=requires_grad),
            sk.zeros((R, N), dtype=V, device=device, requires_grad=requires_grad),
            sk.zeros((R, N), dtype=t, device=device, requires_grad=requires_grad),
            sk.zeros((R, N), dtype=M, device=device, requires_grad=requires_grad)]
    return ins, outs


def _run(dt, x, device):
    ins, outs = _arrays(dt, x, device)
    sk.launch(QUAT_K[dt], dim=N, inputs=ins, outputs=outs, device=device)
    return [o.numpy().astype(np.float64) for o in outs]


def _got(outs, name, family):
    yq, yv, ys, ym = outs
    return {"q": yq, "v": yv, "s": ys, "m": ym}[family][ROW[name]]


def _rounded(x, dt):
    """Inputs as the kernel sees them (rounded to dt), in float64."""
    return {k: v.astype(NP[dt]).astype(np.float64) for k, v in x.items()}


@pytest.mark.parametrize("dt", FLOATS)
def test_quat_ops(device, dt):
    x = _rounded(_inputs(1), dt)
    outs = _run(dt, x, device)
    want = _reference(x)
    rtol, atol = TOL[dt]
    for name, family, _ in ROWS:
        got = _got(outs, name, family)
        if name.startswith("from_matrix"):
            got = align(got, want[name])
        scale = 8.0 if name in ("slerp", "div_sq") else 1.0
        np.testing.assert_allclose(got, want[name], rtol=rtol * scale, atol=atol * scale, err_msg=f"{name} ({dt})")


def test_quat_rotation_identities(device):
    """Hamilton products compose rotations; rotate_inv undoes rotate; matrices are orthonormal."""
    x = _inputs(2)
    outs = _run("float64", x, device)
    m = _got(outs, "to_matrix", "m")
    np.testing.assert_allclose(np.einsum("nij,nkj->nik", m, m), np.broadcast_to(np.eye(3), m.shape), atol=1e-12)
    np.testing.assert_allclose(np.linalg.det(m), 1.0, atol=1e-12)
    # slerp endpoints: a at t = 0, +-b at t = 1
    a, b = x["qa"][ROW["slerp"]], x["qb"][ROW["slerp"]]
    x["s"][ROW["slerp"], :2] = [0.0, 1.0]
    outs = _run("float64", x, device)
    got = _got(outs, "slerp", "q")
    np.testing.assert_allclose(got[0], a[0], atol=1e-12)
    np.testing.assert_allclose(align(got[1:2], b[1:2])[0], b[1], atol=1e-12)


# ---------------------------------------------------------------------------
# Defaults and special values (Warp: quat() is zero, normalize(0) is the identity)


@sk.kernel
def _quat_defaults(y: sk.array(dtype=sk.quat), yd: sk.array(dtype=sk.quatd), z: sk.array(dtype=float)):
    y[0] = sk.quat()
    y[1] = sk.quat_identity()
    y[2] = sk.normalize(sk.quat())
    y[3] = sk.quat(1.0, 2.0, 3.0, 4.0)
    y[4] = sk.quat(sk.vec3(1.0, 2.0, 3.0), 4.0)
    y[5] = sk.quat_from_axis_angle(sk.vec3(0.0, 0.0, 1.0), 0.0)
    yd[0] = sk.quat_identity(dtype=sk.float64)
    yd[1] = sk.quatd(sk.vec3d(1.0, 2.0, 3.0), 4.0)
    yd[2] = sk.quatd(1.0, 2.0, 3.0, 4.0) * 2.0
    z[0] = sk.length(sk.quat())
    z[1] = float(sk.isfinite(sk.quat_identity()))
    z[2] = float(sk.isnan(sk.quat() / 0.0))


def test_quat_defaults(device):
    y = sk.zeros(6, dtype=sk.quat, device=device)
    yd = sk.zeros(3, dtype=sk.quatd, device=device)
    z = sk.zeros(3, dtype=float, device=device)
    sk.launch(_quat_defaults, dim=1, outputs=[y, yd, z], device=device)
    y, yd, z = y.numpy(), yd.numpy(), z.numpy()
    np.testing.assert_array_equal(y[0], [0, 0, 0, 0])
    np.testing.assert_array_equal(y[1], [0, 0, 0, 1])
    np.testing.assert_array_equal(y[2], [0, 0, 0, 1])
    np.testing.assert_array_equal(y[3], [1, 2, 3, 4])
    np.testing.assert_array_equal(y[4], [1, 2, 3, 4])
    np.testing.assert_array_equal(y[5], [0, 0, 0, 1])
    assert yd.dtype == np.float64
    np.testing.assert_array_equal(yd, [[0, 0, 0, 1], [1, 2, 3, 4], [2, 4, 6, 8]])
    np.testing.assert_array_equal(z, [0.0, 1.0, 1.0])


# ---------------------------------------------------------------------------
# quat_to_axis_angle returns a tuple. Its own module: a compiler without tuple
# results from builtins must not break the kernels above.


@sk.kernel(module="tests.test_builtins_quat.axis_angle")
def _axis_angle(q: sk.array(dtype=sk.quat), axis: sk.array(dtype=sk.vec3), angle: sk.array(dtype=float)):
    i = sk.tid()
    a, t = sk.quat_to_axis_angle(q[i])
    axis[i] = a
    angle[i] = t


def test_quat_to_axis_angle(device):
    r = np.random.default_rng(4)
    q = unit(r.uniform(-1.0, 1.0, (N, 4))).astype(np.float32)
    q[0] = [0.0, 0.0, np.sin(0.25), np.cos(0.25)]  # 0.5 rad about z
    q[1] = -q[0]  # same rotation, w < 0
    axis = sk.zeros(N, dtype=sk.vec3, device=device)
    angle = sk.zeros(N, dtype=float, device=device)
    sk.launch(_axis_angle, dim=N, inputs=[sk.array(q, dtype=sk.quat, device=device)], outputs=[axis, angle],
              device=device)
    want_axis, want_angle = qto_axis_angle(q.astype(np.float64))
    np.testing.assert_allclose(axis.numpy(), want_axis, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(angle.numpy(), want_angle, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(angle.numpy()[:2], [0.5, 0.5], atol=1e-6)
    np.testing.assert_allclose(axis.numpy()[:2], [[0, 0, 1], [0, 0, 1]], atol=1e-6)
    assert (angle.numpy() >= 0).all() and (angle.numpy() <= np.pi).all()


@sk.kernel(module="tests.test_builtins_quat.axis_angle")
def _axis_angle_d(q: sk.array(dtype=sk.quatd), axis: sk.array(dtype=sk.vec3d), angle: sk.array(dtype=sk.float64)):
    i = sk.tid()
    a, t = sk.quat_to_axis_angle(q[i])
    axis[i] = a
    angle[i] = t


def test_quat_to_axis_angle_gradient(device):
    if not hasattr(sk, "autograd"):
        pytest.skip("needs sk.autograd")
    r = np.random.default_rng(6)
    q = r.uniform(-1.0, 1.0, (4, 4))
    q[1, 3] = -abs(q[1, 3])  # w < 0: the axis flips sign
    ins = [sk.array(q, dtype=sk.quatd, device=device)]
    outs = [sk.zeros(4, dtype=sk.vec3d, device=device), sk.zeros(4, dtype=sk.float64, device=device)]
    assert sk.autograd.gradcheck(_axis_angle_d, 4, ins, outs, eps=1e-6, atol=1e-6, rtol=1e-5, device=device)


# ---------------------------------------------------------------------------
# warp-lang as the reference (its Python-scope builtins run Warp's native code)


def test_quat_against_warp(device):
    wp = pytest.importorskip("warp")
    x = _rounded(_inputs(3), "float32")
    outs = _run("float32", x, device)
    f = lambda a: [float(c) for c in a]  # noqa: E731
    checks = {
        "mul": lambda k: wp.mul(wp.quat(*f(x["qa"][ROW["mul"], k])), wp.quat(*f(x["qb"][ROW["mul"], k]))),
        "slerp": lambda k: wp.quat_slerp(wp.quat(*f(x["qa"][ROW["slerp"], k])), wp.quat(*f(x["qb"][ROW["slerp"], k])),
                                         float(x["s"][ROW["slerp"], k])),
        "rpy": lambda k: wp.quat_rpy(*f(x["v"][ROW["rpy"], k])),
        "from_axis_angle": lambda k: wp.quat_from_axis_angle(wp.vec3(*f(x["v"][ROW["from_axis_angle"], k])),
                                                             float(x["s"][ROW["from_axis_angle"], k])),
        "from_matrix33": lambda k: wp.quat_from_matrix(wp.mat33(*f(x["m"][ROW["from_matrix33"], k].ravel()))),
        "from_matrix44": lambda k: wp.quat_from_matrix(wp.mat44(*f(x["m4"][ROW["from_matrix44"], k].ravel()))),
        "normalize": lambda k: wp.normalize(wp.quat(*f(x["qa"][ROW["normalize"], k]))),
        "rotate": lambda k: wp.quat_rotate(wp.quat(*f(x["qa"][ROW["rotate"], k])),
                                           wp.vec3(*f(x["v"][ROW["rotate"], k]))),
        "rotate_inv": lambda k: wp.quat_rotate_inv(wp.quat(*f(x["qa"][ROW["rotate_inv"], k])),
                                                   wp.vec3(*f(x["v"][ROW["rotate_inv"], k]))),
        "to_matrix": lambda k: wp.quat_to_matrix(wp.quat(*f(x["qa"][ROW["to_matrix"], k]))),
    }
    fam = {n: fm for n, fm, _ in ROWS}
    for name, ref in checks.items():
        got = _got(outs, name, fam[name])
        want = np.array([np.array(ref(k), dtype=np.float64).reshape(got.shape[1:]) for k in range(N)])
        np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-5, err_msg=f"{name} vs warp")
    # Warp's defaults: quat() is zero, normalize(zero) is the identity
    assert list(wp.quat()) == [0, 0, 0, 0] and list(wp.normalize(wp.quat())) == [0, 0, 0, 1]


# ---------------------------------------------------------------------------
# Gradients: tape gradient of every row against central differences of the
# float64 kernel (each input component perturbed in turn).

GRAD_DTS = ["float32", "float64"]
_GRAD_INPUTS = ["qa", "qb", "v", "s", "m", "m4"]


def _fd(x, device, h=1e-6):
    """d sum(output row j) / d input row j, for every input component, by central differences."""

    def total(xs):
        outs = _run("float64", xs, device)
        return np.stack([_got(outs, n, fm).reshape(N, -1).sum(axis=1) for n, fm, _ in ROWS])

    return central_differences(x, _GRAD_INPUTS, total, h)


@pytest.mark.parametrize("dt", GRAD_DTS)
def test_quat_gradients(device, dt):
    if not hasattr(sk, "Tape"):
        pytest.skip("needs sk.Tape")
    x = _rounded(_inputs(5), dt)
    ins, outs = _arrays(dt, x, device, requires_grad=True)
    tape = sk.Tape()
    with tape:
        sk.launch(QUAT_K[dt], dim=N, inputs=ins, outputs=outs, device=device)
    tape.backward(grads={o: sk.array(np.ones(o.numpy().shape, NP[dt]), dtype=o.dtype, device=device)
                         for o in outs})
    grads = [a.grad.numpy().astype(np.float64) for a in ins]
    fds = _fd(x, device)
    rtol, atol = (1e-5, 1e-6) if dt == "float64" else (2e-3, 2e-3)
    for k, (g, fd) in enumerate(zip(grads, fds)):
        for j, name in enumerate(NAMES):
            np.testing.assert_allclose(g[j], fd[j], rtol=rtol, atol=atol,
                                       err_msg=f"d {name} / d {_GRAD_INPUTS[k]} ({dt})")

"""Warp's math library in simkit (simkit/kernels/mathlib.py): norms, Euler angles of every axis
sequence, twists, the rotation between two vectors, 4x4 transforms. Checked against numpy,
warp-lang and central finite differences (float64)."""
from typing import Any

import numpy as np
import pytest

import simkit as wp

try:
    import warp
except ImportError:                                    # pragma: no cover - warp-lang is a test extra
    warp = None

needs_warp = pytest.mark.skipif(warp is None, reason="warp-lang is not installed")


# ----------------------------------------------------------------------------- norms, Euler angles, 4x4 transforms

@wp.kernel
def library(v: wp.array[Any], q: wp.array[Any], s: wp.array[Any], norms: wp.array2d[Any],
            vecs: wp.array2d[Any], quats: wp.array2d[Any], mats: wp.array[Any]):
    i = wp.tid()
    norms[i, 0] = wp.norm_l1(v[i])
    norms[i, 1] = wp.norm_l2(v[i])
    norms[i, 2] = wp.norm_huber(v[i])
    norms[i, 3] = wp.norm_huber(v[i], 0.25)
    norms[i, 4] = wp.norm_pseudo_huber(v[i], 0.5)
    vecs[i, 0] = wp.smooth_normalize(v[i], 0.3)
    vecs[i, 1] = wp.quat_to_rpy(q[i])
    quats[i, 0] = wp.quat_from_euler(v[i], 0, 1, 2)
    quats[i, 1] = wp.quat_from_euler(v[i], 2, 0, 2)
    m = wp.transform_compose(v[i], q[i], s[i])
    mats[i] = m
    p, r, sc = wp.transform_decompose(m)
    vecs[i, 2] = p
    vecs[i, 3] = sc
    quats[i, 2] = r


def _library_inputs(n, np_dtype, vec, quat, device):
    rng = np.random.default_rng(4)
    v = rng.normal(size=(n, 3)) * 0.8
    rpy = rng.uniform(-1.2, 1.2, size=(n, 3))
    q = np.array([_quat_rpy(*a) for a in rpy])
    s = rng.uniform(0.5, 2.0, size=(n, 3))
    return v, q, s, rpy, [wp.array(a.astype(np_dtype), dtype=t, device=device, requires_grad=True)
                          for a, t in ((v, vec), (q, quat), (s, vec))]


def _quat_rpy(r, p, y):
    """(x, y, z, w) of the rotation about x by r, then y by p, then z by y (fixed axes)."""
    return _qmul(_axis_q(2, y), _qmul(_axis_q(1, p), _axis_q(0, r)))


def _qmul(a, b):
    (ax, ay, az, aw), (bx, by, bz, bw) = a, b
    return np.array([aw * bx + ax * bw + ay * bz - az * by, aw * by - ax * bz + ay * bw + az * bx,
                     aw * bz + ax * by - ay * bx + az * bw, aw * bw - ax * bx - ay * by - az * bz])


def test_norms_euler_angles_and_transforms(device):
    n = 16
    v, q, s, rpy, args = _library_inputs(n, np.float32, wp.vec3, wp.quat, device)
    norms, vecs = wp.zeros((n, 5), device=device), wp.zeros((n, 4), dtype=wp.vec3, device=device)
    quats, mats = wp.zeros((n, 3), dtype=wp.quat, device=device), wp.zeros(n, dtype=wp.mat44, device=device)
    wp.launch(library, n, inputs=args, outputs=[norms, vecs, quats, mats], device=device)
    length = np.linalg.norm(v, axis=1)
    huber = lambda d: np.where(length <= d, 0.5 * length ** 2, d * (length - 0.5 * d))  # noqa: E731
    pseudo = lambda d: d * np.sqrt(1 + length ** 2 / d ** 2)  # noqa: E731
    np.testing.assert_allclose(norms.numpy(), np.stack([np.abs(v).sum(1), length, huber(1.0), huber(0.25),
                                                        pseudo(0.5)], 1), rtol=2e-6, atol=1e-6)
    np.testing.assert_allclose(vecs.numpy()[:, 0], v / pseudo(0.3)[:, None], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(vecs.numpy()[:, 1], rpy, atol=2e-5)                 # quat_to_rpy(quat_rpy(a)) == a
    got = quats.numpy()
    np.testing.assert_allclose(np.abs(np.sum(got[:, 0] * q_of(v), 1)), 1.0, atol=1e-6)
    proper = np.array([_qmul(_axis_q(2, a[2]), _qmul(_axis_q(0, a[0]), _axis_q(2, a[2]))) for a in v])
    np.testing.assert_allclose(np.abs(np.sum(got[:, 1] * proper, 1)), 1.0, atol=1e-6)
    m = mats.numpy()
    np.testing.assert_allclose(m[:, :3, 3], v, rtol=1e-6)
    np.testing.assert_allclose(np.linalg.norm(m[:, :3, :3], axis=1), s, rtol=1e-5)   # column lengths: the scales
    np.testing.assert_allclose(m[:, 3], np.tile([0, 0, 0, 1.0], (n, 1)))
    np.testing.assert_allclose(vecs.numpy()[:, 2], v, rtol=1e-6)
    np.testing.assert_allclose(vecs.numpy()[:, 3], s, rtol=1e-5)
    np.testing.assert_allclose(np.abs(np.sum(got[:, 2] * q, 1)), 1.0, atol=1e-5)   # the same rotation


def q_of(v):
    return np.array([_quat_rpy(*a) for a in v])


def _axis_q(k, a):
    out = np.zeros(4)
    out[k], out[3] = np.sin(a / 2), np.cos(a / 2)
    return out


@needs_warp
def test_the_library_matches_warp_lang():
    n = 8
    v, q, s, _, args = _library_inputs(n, np.float32, wp.vec3, wp.quat, "cpu")
    outs = [wp.zeros((n, 5)), wp.zeros((n, 4), dtype=wp.vec3), wp.zeros((n, 3), dtype=wp.quat),
            wp.zeros(n, dtype=wp.mat44)]
    wp.launch(library, n, inputs=args, outputs=outs)
    mod = warp_library()
    wargs = [warp.array(a.numpy(), dtype=t, device="cpu") for a, t in zip(args, (warp.vec3, warp.quat, warp.vec3))]
    wouts = [warp.zeros((n, 5), device="cpu"), warp.zeros((n, 4), dtype=warp.vec3, device="cpu"),
             warp.zeros((n, 3), dtype=warp.quat, device="cpu"), warp.zeros(n, dtype=warp.mat44, device="cpu")]
    warp.launch(mod, n, inputs=wargs + wouts, device="cpu")
    for ours, theirs in zip(outs, wouts):
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-5, atol=1e-6)


def warp_library():
    @warp.kernel
    def k(v: warp.array(dtype=warp.vec3), q: warp.array(dtype=warp.quat), s: warp.array(dtype=warp.vec3),
          norms: warp.array2d(dtype=float), vecs: warp.array2d(dtype=warp.vec3), quats: warp.array2d(dtype=warp.quat),
          mats: warp.array(dtype=warp.mat44)):
        i = warp.tid()
        norms[i, 0] = warp.norm_l1(v[i])
        norms[i, 1] = warp.norm_l2(v[i])
        norms[i, 2] = warp.norm_huber(v[i])
        norms[i, 3] = warp.norm_huber(v[i], 0.25)
        norms[i, 4] = warp.norm_pseudo_huber(v[i], 0.5)
        vecs[i, 0] = warp.smooth_normalize(v[i], 0.3)
        vecs[i, 1] = warp.quat_to_rpy(q[i])
        quats[i, 0] = warp.quat_from_euler(v[i], 0, 1, 2)
        quats[i, 1] = warp.quat_from_euler(v[i], 2, 0, 2)
        m = warp.transform_compose(v[i], q[i], s[i])
        mats[i] = m
        p, r, sc = warp.transform_decompose(m)
        vecs[i, 2] = p
        vecs[i, 3] = sc
        quats[i, 2] = r
    return k


def test_library_gradients_match_finite_differences():
    n = 3
    v, q, s, _, args = _library_inputs(n, np.float64, wp.vec3d, wp.quatd, "cpu")
    outs = [wp.zeros((n, 5), dtype=wp.float64, requires_grad=True),
            wp.zeros((n, 4), dtype=wp.vec3d, requires_grad=True),
            wp.zeros((n, 3), dtype=wp.quatd, requires_grad=True),
            wp.zeros(n, dtype=wp.mat44d, requires_grad=True)]
    assert wp.autograd.gradcheck(library, n, args, outs, eps=1e-6, atol=1e-6, rtol=1e-5)


# ----------------------------------------------------------------------------- Euler sequences, twists, between

SEQUENCES = [(i, j, k) for i in range(3) for j in range(3) for k in range(3) if i != j and j != k]


@wp.kernel
def rotations(q: wp.array[Any], seq: wp.array[wp.vec3i], v: wp.array[Any], euler: wp.array[Any],
              back: wp.array[Any], twist: wp.array[Any], between: wp.array[Any]):
    t = wp.tid()
    s = seq[t]
    e = wp.quat_to_euler(q[t], s[0], s[1], s[2])
    euler[t] = e
    back[t] = wp.quat_from_euler(e, s[0], s[1], s[2])
    axis = wp.normalize(v[t])
    tw = wp.quat_twist(axis, q[t])
    tv = type(v[t])(tw[0], tw[1], tw[2])         # (a twist's vector part lies along the axis)
    twist[t] = type(v[t])(wp.quat_twist_angle(axis, q[t]), wp.quat_twist_angle_signed(axis, q[t]),
                          wp.abs(wp.dot(tv, axis)) - wp.length(tv))
    between[t] = wp.quat_between_vectors(v[t], type(v[t])(1.0, 2.0, -0.5))


def _rotations(q, seq, v, f64=False, device="cpu"):
    vec, quat = (wp.vec3d, wp.quatd) if f64 else (wp.vec3, wp.quat)
    n = len(q)
    ins = [wp.array(q, dtype=quat, device=device, requires_grad=f64), wp.array(seq, dtype=wp.vec3i, device=device),
           wp.array(v, dtype=vec, device=device, requires_grad=f64)]
    outs = [wp.zeros(n, dtype=t, device=device, requires_grad=f64) for t in (vec, quat, vec, quat)]
    wp.launch(rotations, n, inputs=ins, outputs=outs, device=device)
    return ins, outs


def test_euler_angles_of_every_sequence_round_trip(device):
    rng = np.random.default_rng(11)
    q = rng.normal(size=(24 * 12, 4))
    q /= np.linalg.norm(q, axis=1)[:, None]
    seq = np.repeat(np.array(SEQUENCES), 24, axis=0).astype(np.int32)
    locked = np.array([_quat_rpy(0.3, s * np.pi / 2, -0.7) for s in (1, -1)])     # gimbal lock of (0, 1, 2)
    q = np.concatenate([q, locked])
    seq = np.concatenate([seq, [[0, 1, 2]] * 2]).astype(np.int32)
    v = rng.normal(size=(len(q), 3))
    _, (euler, back, twist, between) = _rotations(q, seq, v, device=device)
    tait = seq[:, 0] != seq[:, 2]
    b = back.numpy()
    np.testing.assert_allclose(np.abs(np.sum(b[tait] * q[tait], axis=1)), 1.0, atol=2e-6)   # the same rotation
    e = euler.numpy()
    mid = e[np.arange(len(q)), seq[:, 1]]
    assert (np.abs(mid[tait]) <= np.pi / 2 + 1e-6).all() and (mid[~tait] >= -1e-6).all()
    assert (mid[~tait] <= np.pi + 1e-6).all()
    tw = twist.numpy()
    np.testing.assert_allclose(tw[:, 0], np.abs(tw[:, 1]), atol=1e-6)                       # unsigned, signed
    np.testing.assert_allclose(tw[:, 2], 0.0, atol=1e-6)
    axis = v / np.linalg.norm(v, axis=1)[:, None]
    target = np.array([1.0, 2.0, -0.5]) / np.linalg.norm([1.0, 2.0, -0.5])
    np.testing.assert_allclose(_rotate(between.numpy(), axis), np.broadcast_to(target, axis.shape), atol=2e-6)


def _rotate(q, v):
    u, w = q[:, :3], q[:, 3:]
    return v + 2.0 * w * np.cross(u, v) + 2.0 * np.cross(u, np.cross(u, v))


def test_twist_of_a_rotation_about_the_axis_and_opposite_vectors():
    axis = np.array([[0.0, 0.6, 0.8]] * 3)
    angles = np.array([0.4, -1.1, 2.5])
    q = np.concatenate([axis * np.sin(angles / 2)[:, None], np.cos(angles / 2)[:, None]], axis=1)
    seq = np.zeros((3, 3), np.int32) + [0, 1, 2]
    _, (_, _, twist, _) = _rotations(q, seq, axis)          # twisted about the axis itself: the angle
    np.testing.assert_allclose(twist.numpy()[:, :2], np.stack([np.abs(angles), angles], 1), atol=1e-6)
    target = np.array([1.0, 2.0, -0.5])
    v = np.array([-target, 2.0 * target, [0.3, -1.0, 0.2]])   # opposite, along, any
    _, (_, _, _, between) = _rotations(q, seq, v)
    unit = v / np.linalg.norm(v, axis=1)[:, None]
    np.testing.assert_allclose(_rotate(between.numpy(), unit), np.tile(target / np.linalg.norm(target), (3, 1)),
                               atol=1e-6)


@needs_warp
def test_euler_twist_and_between_match_warp_lang():
    rng = np.random.default_rng(12)
    q = rng.normal(size=(12 * 10, 4))
    q /= np.linalg.norm(q, axis=1)[:, None]
    seq = np.repeat(np.array(SEQUENCES), 10, axis=0).astype(np.int32)
    v = rng.normal(size=(len(q), 3))
    _, outs = _rotations(q, seq, v)

    @warp.kernel
    def k(q: warp.array(dtype=warp.quat), seq: warp.array(dtype=warp.vec3i), v: warp.array(dtype=warp.vec3),
          euler: warp.array(dtype=warp.vec3), twist: warp.array(dtype=warp.vec3), between: warp.array(dtype=warp.quat)):
        t = warp.tid()
        s = seq[t]
        euler[t] = warp.quat_to_euler(q[t], s[0], s[1], s[2])
        axis = warp.normalize(v[t])
        twist[t] = warp.vec3(warp.quat_twist_angle(axis, q[t]), warp.quat_twist_angle_signed(axis, q[t]), 0.0)
        between[t] = warp.quat_between_vectors(v[t], warp.vec3(1.0, 2.0, -0.5))

    w = [warp.zeros(len(q), dtype=t, device="cpu") for t in (warp.vec3, warp.vec3, warp.quat)]
    warp.launch(k, len(q), inputs=[warp.array(q, dtype=warp.quat, device="cpu"),
                                   warp.array(seq, dtype=warp.vec3i, device="cpu"),
                                   warp.array(v, dtype=warp.vec3, device="cpu")] + w, device="cpu")
    np.testing.assert_allclose(outs[0].numpy(), w[0].numpy(), atol=2e-6)
    np.testing.assert_allclose(outs[2].numpy()[:, :2], w[1].numpy()[:, :2], atol=1e-5)
    np.testing.assert_allclose(outs[3].numpy(), w[2].numpy(), atol=1e-6)


def test_rotation_gradients_match_finite_differences():
    rng = np.random.default_rng(13)
    q = rng.normal(size=(4, 4))
    q /= np.linalg.norm(q, axis=1)[:, None]
    seq = np.array([[0, 1, 2], [2, 0, 1], [1, 2, 0], [2, 1, 2]], np.int32)
    ins, outs = _rotations(q, seq, rng.normal(size=(4, 3)), f64=True)
    assert wp.autograd.gradcheck(rotations, 4, ins, outs, eps=1e-6, atol=1e-6, rtol=1e-5)

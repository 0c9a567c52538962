"""eig3, svd3, svd2 and qr3 (simkit/kernels/decompositions.py): the factors rebuild the matrix, have
the documented shape (rotations, sorted and signed singular values, upper-triangular R), agree with
numpy and warp-lang, and their gradients match central finite differences in float64."""
import numpy as np
import pytest

import simkit as sk

try:
    import warp
except ImportError:                                    # pragma: no cover - warp-lang is a test extra
    warp = None


@sk.kernel
def decompose(A: sk.array(dtype=sk.Any), U: sk.array(dtype=sk.Any), S: sk.array(dtype=sk.Any),
              V: sk.array(dtype=sk.Any), Q: sk.array(dtype=sk.Any), R: sk.array(dtype=sk.Any),
              E: sk.array(dtype=sk.Any), d: sk.array(dtype=sk.Any)):
    i = sk.tid()
    u, s, v = sk.svd3(A[i])
    U[i] = u
    S[i] = s
    V[i] = v
    q, r = sk.qr3(A[i])
    Q[i] = q
    R[i] = r
    e, w = sk.eig3(A[i] + sk.transpose(A[i]))
    E[i] = e
    d[i] = w


def run(A, device, f64=True):
    mat, vec = (sk.mat33d, sk.vec3d) if f64 else (sk.mat33, sk.vec3)
    n = len(A)
    outs = [sk.zeros(n, dtype=t, device=device, requires_grad=f64) for t in (mat, vec, mat, mat, mat, mat, vec)]
    a = sk.array(A.astype(np.float64 if f64 else np.float32), dtype=mat, device=device, requires_grad=f64)
    sk.launch(decompose, n, inputs=[a], outputs=outs, device=device)
    return a, outs


def special_matrices():
    rng = np.random.default_rng(7)
    rot = np.linalg.qr(rng.normal(size=(3, 3)))[0]
    return np.stack([np.zeros((3, 3)), np.eye(3), np.diag([3.0, -2.0, 0.5]),      # zero, repeated, signs
                     np.outer([1.0, 2.0, 3.0], [0.5, -1.0, 2.0]),                 # rank 1
                     rot @ np.diag([2.0, 1.0, 0.0]) @ rot.T,                       # rank 2
                     -np.eye(3), rot * -1.0])                                      # reflections


@pytest.mark.parametrize("f64", [True, False])
def test_factors_rebuild_the_matrix_with_the_documented_shape(device, f64):
    A = np.concatenate([np.random.default_rng(5).normal(size=(40, 3, 3)), special_matrices()])
    _, outs = run(A, device, f64)
    U, S, V, Q, R, E, d = [o.numpy().astype(np.float64) for o in outs]
    tol = 1e-12 if f64 else 2e-5
    scale = np.abs(A).max(axis=(1, 2))[:, None, None] + 1.0
    np.testing.assert_allclose(np.einsum("nij,nj,nkj->nik", U, S, V) / scale, A / scale, atol=tol * 10)
    for M in (U, V, Q, E):
        np.testing.assert_allclose(np.einsum("nji,njk->nik", M, M), np.broadcast_to(np.eye(3), M.shape),
                                   atol=tol * 10)
    for M in (U, V, Q):
        np.testing.assert_allclose(np.linalg.det(M), 1.0, atol=tol * 10)            # rotations
    sc = scale[:, :, 0]
    np.testing.assert_allclose(np.abs(S) / sc, np.linalg.svd(A, compute_uv=False) / sc, atol=tol * 10)
    assert (S[:, :2] >= 0).all() and (np.abs(S[:, :-1]) >= np.abs(S[:, 1:]) - tol * sc).all()
    det = np.linalg.det(A)
    full = np.abs(det) > 1e-6
    assert (np.sign(S[full, 2]) == np.sign(det[full])).all()                       # sigma[2]: det's sign
    np.testing.assert_allclose(np.einsum("nij,njk->nik", Q, R) / scale, A / scale, atol=tol * 10)
    assert np.abs(np.tril(R, -1)).max() == 0.0
    sym = A + A.transpose(0, 2, 1)
    np.testing.assert_allclose(np.einsum("nij,nj,nkj->nik", E, d, E) / scale, sym / scale, atol=tol * 20)
    np.testing.assert_allclose(np.sort(d, axis=1) / sc, np.linalg.eigvalsh(sym) / sc, atol=tol * 20)


@sk.kernel
def decompose2(A: sk.array(dtype=sk.mat22d), U: sk.array(dtype=sk.mat22d), S: sk.array(dtype=sk.vec2d),
               V: sk.array(dtype=sk.mat22d)):
    i = sk.tid()
    u, s, v = sk.svd2(A[i])
    U[i] = u
    S[i] = s
    V[i] = v


def test_svd2(device):
    A = np.concatenate([np.random.default_rng(6).normal(size=(40, 2, 2)),
                        [np.zeros((2, 2)), np.eye(2), np.diag([-1.0, 3.0]), np.outer([1.0, 2.0], [3.0, -1.0])]])
    outs = [sk.zeros(len(A), dtype=t, device=device) for t in (sk.mat22d, sk.vec2d, sk.mat22d)]
    sk.launch(decompose2, len(A), inputs=[sk.array(A, dtype=sk.mat22d, device=device)], outputs=outs, device=device)
    U, S, V = [o.numpy() for o in outs]
    np.testing.assert_allclose(np.einsum("nij,nj,nkj->nik", U, S, V), A, atol=1e-12)
    np.testing.assert_allclose(S, np.linalg.svd(A, compute_uv=False), atol=1e-12)
    for M in (U, V):
        np.testing.assert_allclose(np.einsum("nji,njk->nik", M, M), np.broadcast_to(np.eye(2), M.shape), atol=1e-12)


def test_gradients_match_finite_differences():
    # distinct singular values and eigenvalues: the decompositions are smooth there
    rng = np.random.default_rng(8)
    A = np.stack([np.diag([3.0, 2.0, 0.7]) + 0.3 * rng.normal(size=(3, 3)) for _ in range(2)])
    a, outs = run(A, "cpu")
    assert sk.autograd.gradcheck(decompose, 2, [a], outs, eps=1e-6, atol=1e-6, rtol=1e-5)


@pytest.mark.skipif(warp is None, reason="warp-lang is not installed")
def test_svd3_and_qr3_match_warp_lang():
    @warp.kernel
    def k(A: warp.array(dtype=warp.mat33d), S: warp.array(dtype=warp.vec3d), Q: warp.array(dtype=warp.mat33d),
          R: warp.array(dtype=warp.mat33d)):
        i = warp.tid()
        u, s, v = warp.svd3(A[i])
        S[i] = s
        q, r = warp.qr3(A[i])
        Q[i] = q
        R[i] = r

    A = np.random.default_rng(9).normal(size=(30, 3, 3))
    _, outs = run(A, "cpu")
    ws = [warp.zeros(30, dtype=t, device="cpu") for t in (warp.vec3d, warp.mat33d, warp.mat33d)]
    warp.launch(k, 30, inputs=[warp.array(A, dtype=warp.mat33d, device="cpu")] + ws, device="cpu")
    np.testing.assert_allclose(outs[1].numpy(), ws[0].numpy(), atol=1e-10)         # signed, ordered sigma
    np.testing.assert_allclose(outs[3].numpy(), ws[1].numpy(), atol=1e-10)
    np.testing.assert_allclose(outs[4].numpy(), ws[2].numpy(), atol=1e-10)


@sk.kernel
def decompose_into_outputs(A: sk.array(dtype=sk.mat33d), q: sk.array(dtype=sk.quatd), U: sk.array(dtype=sk.mat33d),
                           S: sk.array(dtype=sk.vec3d), V: sk.array(dtype=sk.mat33d), E: sk.array(dtype=sk.mat33d),
                           d: sk.array(dtype=sk.vec3d), U2: sk.array(dtype=sk.mat22d), axis: sk.array(dtype=sk.vec3d),
                           angle: sk.array(dtype=sk.float64)):
    i = sk.tid()
    u = sk.mat33d()
    s = sk.vec3d()
    v = sk.mat33d()
    sk.svd3(A[i], u, s, v)              # Warp's output-argument form
    U[i] = u
    S[i] = s
    V[i] = v
    sk.eig3(A[i] + sk.transpose(A[i]), u, s)
    E[i] = u
    d[i] = s
    m = sk.mat22d(A[i][0, 0], A[i][0, 1], A[i][1, 0], A[i][1, 1])
    u2 = sk.mat22d()
    s2 = sk.vec2d()
    v2 = sk.mat22d()
    sk.svd2(m, u2, s2, v2)
    U2[i] = u2 @ sk.diag(s2) @ sk.transpose(v2)
    ax = sk.vec3d()
    an = sk.float64(0.0)
    sk.quat_to_axis_angle(q[i], ax, an)
    axis[i] = ax
    angle[i] = an


def test_output_arguments_give_the_returned_results(device):
    rng = np.random.default_rng(10)
    A = rng.normal(size=(8, 3, 3))
    qs = rng.normal(size=(8, 4))
    qs /= np.linalg.norm(qs, axis=1, keepdims=True)
    qs[:, 3] = np.abs(qs[:, 3])
    _, ref = run(A, device)
    types = (sk.mat33d, sk.vec3d, sk.mat33d, sk.mat33d, sk.vec3d, sk.mat22d, sk.vec3d, sk.float64)
    outs = [sk.zeros(8, dtype=t, device=device) for t in types]
    sk.launch(decompose_into_outputs, 8, inputs=[sk.array(A, dtype=sk.mat33d, device=device),
                                                 sk.array(qs, dtype=sk.quatd, device=device)],
              outputs=outs, device=device)
    U, S, V, E, d, M2, axis, angle = [o.numpy() for o in outs]
    for got, k in ((U, 0), (S, 1), (V, 2), (E, 5), (d, 6)):
        np.testing.assert_array_equal(got, ref[k].numpy())
    np.testing.assert_allclose(M2, A[:, :2, :2], atol=1e-12)
    half = np.arccos(np.clip(qs[:, 3], -1, 1))
    np.testing.assert_allclose(angle, 2 * half, atol=1e-12)
    np.testing.assert_allclose(axis, qs[:, :3] / np.sin(half)[:, None], atol=1e-10)


def test_output_arguments_must_be_local_variables():
    @sk.kernel
    def k(A: sk.array(dtype=sk.mat33), U: sk.array(dtype=sk.mat33)):
        s = sk.vec3()
        v = sk.mat33()
        sk.svd3(A[0], U[0], s, v)

    with pytest.raises(sk.CompileError, match=r"output arguments of svd3\(\) must be local variables, got 'U\[0\]'"):
        sk.launch(k, 1, inputs=[sk.zeros(1, dtype=sk.mat33), sk.zeros(1, dtype=sk.mat33)], device="cpu")


@sk.kernel
def eigenvalue_losses(A: sk.array(dtype=sk.mat33d), mode: int, loss: sk.array(dtype=sk.float64)):
    i = sk.tid()
    q, d = sk.eig3(A[i])
    if mode == 0:
        loss[i] = d[0] + d[1] + d[2]
    else:
        loss[i] = sk.dot(d, d)


def test_eigenvalue_gradients_are_exact_where_eigenvalues_repeat(device):
    # sum(d) = trace(A) and |d|^2 = |A|_F^2 for symmetric A: gradients I and 2A, repeated eigenvalues or not
    # (the derivative of the Jacobi sweeps is wrong there: eig3 has an analytic adjoint)
    rot = np.linalg.qr(np.random.default_rng(11).normal(size=(3, 3)))[0]
    A = np.stack([np.diag([2.0, 2.0, 3.0]), np.eye(3), np.zeros((3, 3)), rot @ np.diag([2.0, 2.0, 3.0]) @ rot.T,
                  rot @ np.diag([1.0, -1.0, 1.0 + 1e-9]) @ rot.T, rot @ np.diag([1.0, 2.0, 3.0]) @ rot.T])
    for mode, expected in ((0, np.broadcast_to(np.eye(3), A.shape)), (1, 2.0 * A)):
        a = sk.array(A, dtype=sk.mat33d, device=device, requires_grad=True)
        loss = sk.zeros(len(A), dtype=sk.float64, device=device, requires_grad=True)
        with sk.Tape() as tape:
            sk.launch(eigenvalue_losses, len(A), inputs=[a, mode], outputs=[loss], device=device)
        tape.backward(grads={loss: np.ones(len(A))})
        np.testing.assert_allclose(a.grad.numpy(), expected, atol=1e-12)

"""Small matrix decompositions, as Warp names them: ``eig3`` (symmetric 3x3), ``svd3``, ``svd2`` and
``qr3``. Written in the kernel language as ``@func``s (float32 and float64), so the compiler writes
their adjoints: a gradient is the derivative of the algorithm, which for distinct eigenvalues or
singular values is the derivative of the decomposition (tests/test_decompositions.py checks it
against central finite differences). ``eig3`` has an analytic adjoint instead (``adj_eig3``), so
that eigenvalue gradients are exact where eigenvalues repeat (the derivative of Jacobi sweeps is not
there). As in Warp, eigenvectors and singular vectors have no well-defined derivative where values
repeat.

- ``eig3``: cyclic Jacobi rotations, a fixed ``JACOBI_SWEEPS`` sweeps (quadratic convergence: a 3x3
  matrix is diagonal to float64 precision after 4 or 5).
- ``svd3``: the eigenvectors of ``A^T A`` (sorted by decreasing eigenvalue) give ``V``; ``U`` and the
  singular values come from Gram-Schmidt on the columns of ``A V``, ``u2 = u0 x u1``, so ``U`` and
  ``V`` are rotations and ``sigma[2]`` takes the sign of ``det A`` (as Warp's). Going through ``A^T A``
  squares the condition number: in float32, singular values below ~1e-3 of the largest lose digits.
- ``qr3``: modified Gram-Schmidt with ``q2 = q0 x q1`` (``Q`` a rotation; ``R[2, 2]`` may be negative).
"""
from __future__ import annotations

from . import lang as sk
from . import types as T
from .decorators import func, func_grad
from .types import Any

#: Jacobi sweeps of eig3 (and so of svd3)
JACOBI_SWEEPS = 8


@func
def jacobi_rotate(a: Any, v: Any, p: int, q: int):
    """One Jacobi rotation of the symmetric ``a`` zeroing ``a[p, q]``; ``v`` gathers the rotations."""
    apq = a[p, q]
    if sk.abs(apq) > (sk.abs(a[p, p]) + sk.abs(a[q, q])) * 1.0e-30:
        theta = (a[q, q] - a[p, p]) / (apq * 2.0)
        t = sk.sign(theta) / (sk.abs(theta) + sk.sqrt(theta * theta + 1.0))
        c = 1.0 / sk.sqrt(t * t + 1.0)
        s = t * c
        j = sk.identity(3, type(apq))
        j[p, p] = c
        j[q, q] = c
        j[p, q] = s
        j[q, p] = -s
        a = sk.transpose(j) @ a @ j
        v = v @ j
    return a, v


@func
def eig3(A: Any):
    """(Q, d) with ``A = Q diag(d) Q^T`` for a symmetric 3x3 ``A``: Q's columns are the eigenvectors
    (orthonormal), d the eigenvalues, in no particular order."""
    a = A
    v = sk.identity(3, type(A[0, 0]))
    for _sweep in range(JACOBI_SWEEPS):
        a, v = jacobi_rotate(a, v, 0, 1)
        a, v = jacobi_rotate(a, v, 0, 2)
        a, v = jacobi_rotate(a, v, 1, 2)
    return v, T.vector(a[0, 0], a[1, 1], a[2, 2])


#: eigenvalues closer than this (relative to their size) count as repeated in eig3's adjoint
REPEATED_GAP = 1.0e-12


@func_grad(eig3)
def adj_eig3(A: Any, adj_Q: Any, adj_d: Any):
    """The derivative of the decomposition (not of the Jacobi sweeps): with ``F[i, j] = 1 / (d[j] - d[i])``,
    ``adj_A = Q (diag(adj_d) + F * (Q^T adj_Q)) Q^T``, symmetrized (A is taken as symmetric). Exact for
    eigenvalues even where they repeat; eigenvector pairs of repeated eigenvalues contribute nothing."""
    q, d = eig3(A)
    g = sk.transpose(q) @ adj_Q
    x = sk.diag(adj_d)
    for i in range(3):
        for j in range(3):
            gap = d[j] - d[i]
            if i != j and sk.abs(gap) > (sk.abs(d[i]) + sk.abs(d[j])) * REPEATED_GAP + 1.0e-30:
                x[i, j] = g[i, j] / gap
    a = q @ x @ sk.transpose(q)
    sk.adjoint[A] += (a + sk.transpose(a)) * 0.5


@func
def unit_or(v: Any, fallback: Any):
    """``v`` normalized, or ``fallback`` where ``v`` is (nearly) zero."""
    n = sk.length(v)
    out = fallback
    if n > 1.0e-30:
        out = v / n
    return out


@func
def any_normal(u: Any):
    """A unit vector orthogonal to the unit vector ``u``."""
    axis = T.vector(u[0] * 0.0 + 1.0, u[0] * 0.0, u[0] * 0.0)
    if sk.abs(u[0]) > 0.6:
        axis = T.vector(u[0] * 0.0, u[0] * 0.0 + 1.0, u[0] * 0.0)
    return sk.normalize(axis - u * sk.dot(u, axis))


@func
def gram_schmidt(b0: Any, b1: Any):
    """Orthonormal u0 along b0, u1 in the plane of b0 and b1, and u2 = u0 x u1 (a right-handed frame)."""
    zero = b0[0] * 0.0
    u0 = unit_or(b0, T.vector(zero + 1.0, zero, zero))
    r = b1 - u0 * sk.dot(u0, b1)
    r = r - u0 * sk.dot(u0, r)          # (twice: where b1 is nearly along b0, r is rounding noise)
    u1 = unit_or(r, any_normal(u0))
    return u0, u1, sk.cross(u0, u1)


@func
def swap_columns(d: Any, v: Any, i: int, j: int):
    """Order ``d[i] >= d[j]``, swapping the matching columns of ``v`` (and negating one: v stays a
    rotation)."""
    if d[j] > d[i]:
        di = d[i]
        d[i] = d[j]
        d[j] = di
        ci = T.vector(v[0, i], v[1, i], v[2, i])
        for r in range(3):
            v[r, i] = v[r, j]
            v[r, j] = -ci[r]
    return d, v


@func
def svd3(A: Any):
    """(U, sigma, V) with ``A = U diag(sigma) V^T``: U and V rotations, sigma by decreasing magnitude,
    sigma[0] and sigma[1] >= 0, sigma[2] of the sign of det(A)."""
    v, d = eig3(sk.transpose(A) @ A)
    d, v = swap_columns(d, v, 0, 1)
    d, v = swap_columns(d, v, 0, 2)
    d, v = swap_columns(d, v, 1, 2)
    b = A @ v
    u0, u1, u2 = gram_schmidt(T.vector(b[0, 0], b[1, 0], b[2, 0]), T.vector(b[0, 1], b[1, 1], b[2, 1]))
    s1 = sk.dot(u1, T.vector(b[0, 1], b[1, 1], b[2, 1]))
    if s1 < 0.0:            # (rank 1: u1 was picked from rounding noise)
        u1 = -u1
        u2 = -u2
    u = sk.matrix_from_cols(u0, u1, u2)
    sigma = T.vector(sk.dot(u0, T.vector(b[0, 0], b[1, 0], b[2, 0])), sk.abs(s1),
                     sk.dot(u2, T.vector(b[0, 2], b[1, 2], b[2, 2])))
    return u, sigma, v


@func
def svd2(A: Any):
    """(U, sigma, V) with ``A = U diag(sigma) V^T`` for a 2x2 ``A``: U and V orthogonal, sigma >= 0 and
    sorted from largest to smallest."""
    m = sk.transpose(A) @ A
    zero = A[0, 0] * 0.0
    theta = sk.atan2(m[0, 1] * 2.0, m[0, 0] - m[1, 1]) * 0.5    # (the rotation diagonalizing m)
    c = sk.cos(theta)
    s = sk.sin(theta)
    v = T.matrix(c, -s, s, c, shape=(2, 2))
    b = A @ v
    b0 = T.vector(b[0, 0], b[1, 0])
    b1 = T.vector(b[0, 1], b[1, 1])
    s0 = sk.length(b0)
    s1 = sk.length(b1)
    if s1 > s0:
        v = T.matrix(-s, c, c, s, shape=(2, 2))
        b0, b1 = b1, b0
        s0, s1 = s1, s0
    u0 = T.vector(zero + 1.0, zero)
    if s0 > 1.0e-30:
        u0 = b0 / s0
    u1 = T.vector(-u0[1], u0[0])   # (b1 is along it: orthogonal to b0; its own direction is noise where s1 ~ 0)
    s1 = sk.dot(u1, b1)
    if s1 < 0.0:
        u1 = -u1
        s1 = -s1
    return sk.matrix_from_cols(u0, u1), T.vector(s0, s1), v


@func
def qr3(A: Any):
    """(Q, R) with ``A = Q R``: Q a rotation (det +1), R upper triangular (R[2, 2] takes det A's sign)."""
    a0 = T.vector(A[0, 0], A[1, 0], A[2, 0])
    a1 = T.vector(A[0, 1], A[1, 1], A[2, 1])
    a2 = T.vector(A[0, 2], A[1, 2], A[2, 2])
    q0, q1, q2 = gram_schmidt(a0, a1)
    zero = A[0, 0] * 0.0
    r = T.matrix(sk.dot(q0, a0), sk.dot(q0, a1), sk.dot(q0, a2),
                 zero, sk.dot(q1, a1), sk.dot(q1, a2),
                 zero, zero, sk.dot(q2, a2), shape=(3, 3))
    return sk.matrix_from_cols(q0, q1, q2), r


__all__ = ["eig3", "svd3", "svd2", "qr3"]

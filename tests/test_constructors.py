"""Warp's keyword forms of the value constructors in kernels: ``transform(p=..., q=...)`` (q defaults to
the identity), ``shape=`` / ``length=`` / ``dtype=`` on typed constructors (checked against the type),
``vector(v)`` / ``matrix(m)`` taking their size from the argument, and the type attributes ``.dtype``,
``.length`` and ``.shape`` of values, types and arrays in generic code. Checked against numpy."""
from typing import Any

import numpy as np
import pytest

import simkit as wp

mat32d = wp.types.matrix(shape=(3, 2), dtype=wp.float64)


@wp.kernel
def build(p: wp.array(dtype=wp.vec3), q: wp.array(dtype=wp.quat), t_pq: wp.array(dtype=wp.transform),
          t_p: wp.array(dtype=wp.transform), t_pos: wp.array(dtype=wp.transform), m: wp.array(dtype=mat32d),
          v: wp.array(dtype=wp.vec2h), w: wp.array(dtype=wp.mat22)):
    i = wp.tid()
    t_pq[i] = wp.transform(q=q[i], p=p[i])
    t_p[i] = wp.transform(p=p[i])
    t_pos[i] = wp.transform(p[i])
    m[i] = mat32d(float(i), 2.0, 3.0, 4.0, 5.0, 6.0, shape=(3, 2), dtype=wp.float64)
    a = wp.vec2(float(i), -1.0)
    v[i] = wp.types.vector(a, dtype=wp.float16)
    w[i] = wp.matrix(wp.outer(a, a), shape=(2, 2))


def test_constructor_keywords(device):
    rng = np.random.default_rng(3)
    n = 4
    pv = rng.normal(size=(n, 3)).astype(np.float32)
    qv = rng.normal(size=(n, 4)).astype(np.float32)
    qv /= np.linalg.norm(qv, axis=1, keepdims=True)
    outs = [wp.zeros(n, dtype=t, device=device) for t in (wp.transform, wp.transform, wp.transform, mat32d,
                                                           wp.vec2h, wp.mat22)]
    wp.launch(build, n, inputs=[wp.array(pv, dtype=wp.vec3, device=device), wp.array(qv, dtype=wp.quat, device=device)],
              outputs=outs, device=device)
    t_pq, t_p, t_pos, m, v, w = [o.numpy() for o in outs]
    np.testing.assert_array_equal(t_pq, np.concatenate([pv, qv], axis=1))
    identity = np.broadcast_to([0.0, 0.0, 0.0, 1.0], (n, 4))
    np.testing.assert_array_equal(t_p, np.concatenate([pv, identity], axis=1))
    np.testing.assert_array_equal(t_pos, t_p)
    expect_m = np.broadcast_to(np.arange(1.0, 7.0).reshape(3, 2), (n, 3, 2)).copy()
    expect_m[:, 0, 0] = np.arange(n)
    np.testing.assert_array_equal(m, expect_m)
    a = np.stack([np.arange(n), -np.ones(n)], axis=1)
    assert v.dtype == np.float16
    np.testing.assert_array_equal(v, a)
    np.testing.assert_array_equal(w, np.einsum("ni,nj->nij", a, a))


@wp.kernel
def place(p: wp.array(dtype=wp.vec3d), out: wp.array(dtype=wp.vec3d)):
    t = wp.transformd(p=p[0])
    out[0] = wp.transform_point(t, wp.vec3d(1.0, 2.0, 3.0)) * 2.0


def test_gradient_through_a_keyword_constructor():
    p = wp.array([[0.5, -1.0, 2.0]], dtype=wp.vec3d, requires_grad=True)
    out = wp.zeros(1, dtype=wp.vec3d, requires_grad=True)
    with wp.Tape() as tape:
        wp.launch(place, 1, inputs=[p], outputs=[out])
    np.testing.assert_allclose(out.numpy(), [[3.0, 2.0, 10.0]])
    tape.backward(grads={out: np.array([[1.0, 10.0, 100.0]])})
    np.testing.assert_allclose(p.grad.numpy(), [[2.0, 20.0, 200.0]])


def bad_shape(out: wp.array(dtype=float)):
    x = wp.mat22(1.0, 2.0, 3.0, 4.0, shape=(2, 3))


def bad_length(out: wp.array(dtype=float)):
    x = wp.vec3(1.0, length=4)


def bad_dtype(out: wp.array(dtype=float)):
    x = wp.vec3(1.0, dtype=wp.float64)


def p_twice(out: wp.array(dtype=float)):
    x = wp.transform(wp.vec3(), p=wp.vec3())


def unknown_keyword(out: wp.array(dtype=float)):
    x = wp.transform(p=wp.vec3(), r=wp.quat())


@pytest.mark.parametrize("fn, message", [
    (bad_shape, r"mat22\(\): shape=\(2, 3\) does not match the type's \(2, 2\)"),
    (bad_length, r"vec3\(\): length=4 does not match the type's 3"),
    (bad_dtype, r"vec3\(\): dtype=.*float64.* does not match"),
    (p_twice, r"p and q given twice"),
    (unknown_keyword, r"unexpected keyword arguments: r"),
])
def test_constructor_keyword_errors(fn, message):
    with pytest.raises(wp.CompileError, match=message):
        wp.launch(wp.kernel(fn), 1, inputs=[wp.zeros(1)], device="cpu")


@wp.kernel
def from_type_attributes(a: wp.array(dtype=Any), out: wp.array(dtype=Any), n: wp.array(dtype=int)):
    i = wp.tid()
    v = a[i]
    e = wp.identity(n=v.length, dtype=v.dtype) * a.dtype.dtype(2.0)      # v.length x v.length
    w = type(a).dtype(v) + type(v)()
    out[i] = e @ w
    rows, cols = e.shape
    n[i] = rows * 10 + cols + len(v)


@pytest.mark.parametrize("dtype", [wp.vec3, wp.vec2d])
def test_type_attributes_in_generic_code(dtype, device):
    x = np.arange(2 * dtype._length_, dtype=np.float64).reshape(2, -1)
    out = wp.zeros(2, dtype=dtype, device=device)
    n = wp.zeros(2, dtype=int, device=device)
    wp.launch(from_type_attributes, 2, inputs=[wp.array(x, dtype=dtype, device=device)], outputs=[out, n],
              device=device)
    np.testing.assert_array_equal(out.numpy(), 2.0 * x)
    k = dtype._length_
    np.testing.assert_array_equal(n.numpy(), [k * 11 + k] * 2)


@wp.kernel
def unpacked(a: wp.array(dtype=float), v: wp.array(dtype=wp.vec3), m: wp.array(dtype=wp.mat22),
             out4: wp.array(dtype=wp.vec4), outm: wp.array(dtype=wp.mat22), outs: wp.array(dtype=float)):
    i = wp.tid()
    out4[0] = wp.vec4(*v[i], 4.0)                   # a vector's components
    out4[1] = wp.vec4(*a[1:5:2], *v[i][1:])         # a constant array slice, a vector slice
    outm[0] = wp.matrix_from_cols(*m[i])            # a matrix's rows
    q = wp.quat(*wp.vec4(*a[:4]))
    outs[0] = wp.max(*v[i][:2]) + q[3]


def test_starred_arguments(device):
    av = np.arange(10.0, 16.0)
    a = wp.array(av, dtype=float, device=device)
    v = wp.array([[1.0, 7.0, 3.0]], dtype=wp.vec3, device=device)
    m = wp.array([[[1.0, 2.0], [3.0, 4.0]]], dtype=wp.mat22, device=device)
    out4 = wp.zeros(2, dtype=wp.vec4, device=device)
    outm = wp.zeros(1, dtype=wp.mat22, device=device)
    outs = wp.zeros(1, dtype=float, device=device)
    wp.launch(unpacked, 1, inputs=[a, v, m], outputs=[out4, outm, outs], device=device)
    np.testing.assert_array_equal(out4.numpy(), [[1, 7, 3, 4], [11, 13, 7, 3]])
    np.testing.assert_array_equal(outm.numpy(), [[[1, 3], [2, 4]]])
    np.testing.assert_array_equal(outs.numpy(), [7.0 + 13.0])


def unpack_open_slice(a: wp.array(dtype=float)):
    v = wp.vec2(*a[1:])


def unpack_runtime_bound(a: wp.array(dtype=float), n: int):
    v = wp.vec2(*a[:n])


def unpack_scalar(a: wp.array(dtype=float)):
    v = wp.vec2(*a[0])


@pytest.mark.parametrize("fn, cls, message", [
    (unpack_open_slice, ValueError, "requires explicit upper bound"),
    (unpack_runtime_bound, ValueError, "each slice component must be a compile-time constant"),
    (unpack_scalar, TypeError, "Starred expressions are only supported for vectors"),
])
def test_starred_argument_errors(fn, cls, message):
    args = [wp.zeros(4)] + ([2] if fn is unpack_runtime_bound else [])
    with pytest.raises(cls, match=message) as info:
        wp.launch(wp.kernel(fn), 1, inputs=args, device="cpu")
    assert isinstance(info.value, wp.CompileError) and isinstance(info.value, wp.WarpCodegenError)

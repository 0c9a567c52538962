"""Slices of vectors, matrices and quaternions inside kernels (v[1:3], m[:, 0], m[1:, :2], v[0:2] = w, v[7:]),
checked against numpy's slicing, with gradients against central finite differences (float64)."""
import numpy as np
import pytest

import simkit as sk


@sk.kernel
def read_slices(v: sk.array(dtype=sk.vec4d), m: sk.array(dtype=sk.mat33d), q: sk.array(dtype=sk.quatd),
                o2: sk.array(dtype=sk.vec2d), o3: sk.array(dtype=sk.vec3d), om: sk.array(dtype=sk.mat22d)):
    i = sk.tid()
    a = v[i]
    b = m[i]
    o2[2 * i] = a[1:3]
    o2[2 * i + 1] = a[::3]
    o3[4 * i] = b[:, 1]
    o3[4 * i + 1] = b[i % 3, :]            # (a variable index beside a slice)
    o3[4 * i + 2] = a[-3:]
    o3[4 * i + 3] = q[i][:3]
    om[i] = b[1:, :2]


@sk.kernel
def write_slices(v: sk.array(dtype=sk.vec4d), m: sk.array(dtype=sk.mat33d), w: sk.array(dtype=sk.vec2d),
                 ov: sk.array(dtype=sk.vec4d), om: sk.array(dtype=sk.mat33d)):
    i = sk.tid()
    a = v[i]
    a[0:2] = w[i]
    a[2:] += w[i] * 2.0
    ov[i] = a
    b = m[i]
    b[:, 0] = sk.vec3d(w[i][0], w[i][1], 1.0)
    b[1:, 1:] = sk.mat22d(w[i][0], 0.0, 0.0, w[i][1])
    om[i] = b


def _inputs(n=3, seed=0):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(n, 4)), rng.normal(size=(n, 3, 3)), rng.normal(size=(n, 4)), rng.normal(size=(n, 2))


def _read(v, m, q, device, requires_grad=False):
    n = len(v)
    args = [sk.array(v, dtype=sk.vec4d, device=device, requires_grad=requires_grad),
            sk.array(m, dtype=sk.mat33d, device=device, requires_grad=requires_grad),
            sk.array(q, dtype=sk.quatd, device=device, requires_grad=requires_grad)]
    outs = [sk.zeros(2 * n, dtype=sk.vec2d, device=device, requires_grad=requires_grad),
            sk.zeros(4 * n, dtype=sk.vec3d, device=device, requires_grad=requires_grad),
            sk.zeros(n, dtype=sk.mat22d, device=device, requires_grad=requires_grad)]
    return args, outs


def test_slice_reads_match_numpy(device):
    v, m, q, _ = _inputs()
    args, outs = _read(v, m, q, device)
    sk.launch(read_slices, 3, inputs=args + outs, device=device)
    o2, o3, om = (o.numpy() for o in outs)
    for i in range(3):
        np.testing.assert_array_equal(o2[2 * i], v[i][1:3])
        np.testing.assert_array_equal(o2[2 * i + 1], v[i][::3])
        np.testing.assert_array_equal(o3[4 * i], m[i][:, 1])
        np.testing.assert_array_equal(o3[4 * i + 1], m[i][i % 3, :])
        np.testing.assert_array_equal(o3[4 * i + 2], v[i][-3:])
        np.testing.assert_array_equal(o3[4 * i + 3], q[i][:3])
        np.testing.assert_array_equal(om[i], m[i][1:, :2])


def test_slice_writes_match_numpy(device):
    v, m, _, w = _inputs()
    ov, om = sk.zeros(3, dtype=sk.vec4d, device=device), sk.zeros(3, dtype=sk.mat33d, device=device)
    sk.launch(write_slices, 3, inputs=[sk.array(v, dtype=sk.vec4d, device=device),
                                       sk.array(m, dtype=sk.mat33d, device=device),
                                       sk.array(w, dtype=sk.vec2d, device=device), ov, om], device=device)
    ev, em = v.copy(), m.copy()
    ev[:, 0:2] = w
    ev[:, 2:] += 2 * w
    em[:, :, 0] = np.c_[w, np.ones(3)]
    em[:, 1:, 1:] = 0
    em[:, 1, 1], em[:, 2, 2] = w[:, 0], w[:, 1]
    np.testing.assert_allclose(ov.numpy(), ev, rtol=1e-14)
    np.testing.assert_allclose(om.numpy(), em, rtol=1e-14)


def test_slice_gradients_match_finite_differences():
    v, m, _, w = _inputs(n=2, seed=1)
    rng = np.random.default_rng(5)
    gv, gm = rng.normal(size=(2, 4)), rng.normal(size=(2, 3, 3))

    def loss(v, m, w):
        ov, om = sk.zeros(2, dtype=sk.vec4d), sk.zeros(2, dtype=sk.mat33d)
        sk.launch(write_slices, 2, inputs=[sk.array(v, dtype=sk.vec4d), sk.array(m, dtype=sk.mat33d),
                                           sk.array(w, dtype=sk.vec2d), ov, om])
        return float(np.sum(ov.numpy() * gv) + np.sum(om.numpy() * gm))

    arrays = [sk.array(v, dtype=sk.vec4d, requires_grad=True), sk.array(m, dtype=sk.mat33d, requires_grad=True),
              sk.array(w, dtype=sk.vec2d, requires_grad=True)]
    ov = sk.zeros(2, dtype=sk.vec4d, requires_grad=True)
    om = sk.zeros(2, dtype=sk.mat33d, requires_grad=True)
    tape = sk.Tape()
    with tape:
        sk.launch(write_slices, 2, inputs=arrays + [ov, om])
    tape.backward(grads={ov: gv, om: gm})
    base = [v, m, w]
    for k, a in enumerate(arrays):
        fd = np.zeros(base[k].shape)
        for idx in np.ndindex(*base[k].shape):
            plus, minus = [b.copy() for b in base], [b.copy() for b in base]
            plus[k][idx] += 1e-6
            minus[k][idx] -= 1e-6
            fd[idx] = (loss(*plus) - loss(*minus)) / 2e-6
        np.testing.assert_allclose(a.grad.numpy(), fd, atol=1e-7)


def test_slice_errors_name_the_problem():
    with pytest.raises(sk.CompileError, match="slice bounds must be integer constants"):
        @sk.kernel(module="unique")
        def k(v: sk.array(dtype=sk.vec4), n: int, out: sk.array(dtype=sk.vec2)):
            out[0] = v[0][n:n + 2]

        sk.launch(k, 1, inputs=[sk.zeros(1, dtype=sk.vec4), 0, sk.zeros(1, dtype=sk.vec2)])
    with pytest.raises(sk.CompileError, match="cannot assign .* to a slice of shape \\(2,\\)"):
        @sk.kernel(module="unique")
        def k2(v: sk.array(dtype=sk.vec4)):
            a = v[0]
            a[1:3] = sk.vec3(1.0, 2.0, 3.0)
            v[0] = a

        sk.launch(k2, 1, inputs=[sk.zeros(1, dtype=sk.vec4)])


vec0d = sk.types.vector(0, sk.float64)
mat00d = sk.types.matrix((0, 0), sk.float64)


@sk.kernel
def empty_slices(v: sk.array(dtype=sk.vec4d), m: sk.array(dtype=sk.mat33d), q: sk.array(dtype=sk.quatd),
                 t: sk.array(dtype=sk.transformd), flags: sk.array(dtype=int), ov: sk.array(dtype=sk.vec4d),
                 om: sk.array(dtype=sk.mat33d)):
    i = sk.tid()
    a = v[i]
    b = m[i]
    e = a[7:]
    flags[0] = int(e == vec0d())
    flags[1] = int(a[:-9] == vec0d())
    flags[2] = int(b[5:] == mat00d())
    flags[3] = int(b[:, 3:] == mat00d())       # (any empty axis gives a 0x0 matrix, as in Warp)
    flags[4] = int(q[i][4:] == vec0d())
    flags[5] = int(t[i][9:] == vec0d())
    flags[6] = int(sk.length(e) == 0.0)
    a[7:] = vec0d()                           # writes nothing
    b[3:] = mat00d()
    ov[i] = a * 2.0
    om[i] = b * 3.0


def test_empty_slices_are_zero_length_values():
    v, m, q, _ = _inputs(n=1, seed=2)
    t = np.random.default_rng(3).normal(size=(1, 7))
    arrays = [sk.array(v, dtype=sk.vec4d, requires_grad=True), sk.array(m, dtype=sk.mat33d, requires_grad=True),
              sk.array(q, dtype=sk.quatd), sk.array(t, dtype=sk.transformd)]
    flags = sk.zeros(7, dtype=int)
    ov = sk.zeros(1, dtype=sk.vec4d, requires_grad=True)
    om = sk.zeros(1, dtype=sk.mat33d, requires_grad=True)
    tape = sk.Tape()
    with tape:
        sk.launch(empty_slices, 1, inputs=arrays + [flags, ov, om])
    np.testing.assert_array_equal(flags.numpy(), np.ones(7))
    np.testing.assert_array_equal(ov.numpy(), 2.0 * v)
    np.testing.assert_array_equal(om.numpy(), 3.0 * m)
    tape.backward(grads={ov: np.ones((1, 4)), om: np.ones((1, 3, 3))})
    np.testing.assert_array_equal(arrays[0].grad.numpy(), np.full((1, 4), 2.0))
    np.testing.assert_array_equal(arrays[1].grad.numpy(), np.full((1, 3, 3), 3.0))
    assert vec0d()._length_ == 0 and mat00d()._shape_ == (0, 0)


@sk.kernel
def compare_rotations(q: sk.array(dtype=sk.quat), t: sk.array(dtype=sk.transform), out: sk.array(dtype=int)):
    i = sk.tid()
    out[4 * i] = int(q[i] == q[0])
    out[4 * i + 1] = int(q[i] != q[0])
    out[4 * i + 2] = int(t[i] == t[0])
    out[4 * i + 3] = int(t[i] != t[0])


def test_quaternion_and_transform_equality(device):
    q = np.array([[0, 0, 0, 1], [0, 0, 0, 1], [0, 0, 0, -1]], dtype=np.float32)
    t = np.array([[1, 2, 3, 0, 0, 0, 1], [1, 2, 3, 0, 0, 0, 1], [1, 2, 3.5, 0, 0, 0, 1]], dtype=np.float32)
    out = sk.zeros(12, dtype=int, device=device)
    sk.launch(compare_rotations, 3, inputs=[sk.array(q, dtype=sk.quat, device=device),
                                            sk.array(t, dtype=sk.transform, device=device), out], device=device)
    want = [[int(np.all(q[i] == q[0])), int(np.any(q[i] != q[0])), int(np.all(t[i] == t[0])),
             int(np.any(t[i] != t[0]))] for i in range(3)]
    np.testing.assert_array_equal(out.numpy(), np.ravel(want))

"""Arrays: 1-4D launches and indexing, strides and views (passed to kernels), ``a[i]`` sub-array
views inside kernels, ``.shape`` in kernels, vector/matrix element component writes, and the
Python API (constructors, numpy interop, fill/zero/assign/reshape/flatten/view/copy)."""
import numpy as np
import pytest

import simkit as sk


# ---------------------------------------------------------------------------- kernels


@sk.kernel
def k_scale1(a: sk.array(dtype=float), s: float):
    i = sk.tid()
    a[i] = a[i] * s


@sk.kernel
def k_scale2(a: sk.array(dtype=float, ndim=2), s: float):
    i, j = sk.tid()
    a[i, j] = a[i, j] * s


@sk.kernel
def k_copy3(src: sk.array3d(dtype=float), dst: sk.array3d(dtype=float)):
    i, j, k = sk.tid()
    dst[i, j, k] = src[i, j, k] + float(i * 100 + j * 10 + k)


@sk.kernel
def k_copy4(src: sk.array4d(dtype=sk.float64), dst: sk.array4d(dtype=sk.float64)):
    i, j, k, l = sk.tid()
    dst[i, j, k, l] = src[i, j, k, l] * 2.0


@sk.kernel
def k_shapes(a: sk.array(dtype=int, ndim=4), out: sk.array(dtype=int)):
    out[0] = a.shape[0]
    out[1] = a.shape[1]
    out[2] = a.shape[2]
    out[3] = a.shape[3]
    out[4] = len(a)
    out[5] = a.ndim


@sk.kernel
def k_row_sums(a: sk.array(dtype=float, ndim=2), out: sk.array(dtype=float)):
    i = sk.tid()
    row = a[i]  # a 1D view of row i
    s = float(0.0)
    for j in range(row.shape[0]):
        s += row[j]
    out[i] = s
    row[0] = -1.0  # writes go to the parent array


@sk.kernel
def k_subviews(a: sk.array(dtype=int, ndim=3), out: sk.array(dtype=int, ndim=2)):
    i = sk.tid()
    plane = a[i]  # 2D
    line = a[i, 1]  # 1D
    line2 = plane[2]
    out[i, 0] = plane[1, 2]
    out[i, 1] = line[3]
    out[i, 2] = line2[0]
    out[i, 3] = plane.shape[0] * 100 + plane.shape[1] * 10 + line.shape[0]


@sk.kernel
def k_components(v: sk.array(dtype=sk.vec3), m: sk.array(dtype=sk.mat22), b: sk.array2d(dtype=float)):
    i = sk.tid()
    v[i].x = 5.0
    v[i][1] += 2.0
    v[i][2] = v[i][2] * 3.0
    m[i][0, 1] = 3.0
    m[i][1] = sk.vec2(7.0, 8.0)
    row = b[i]
    row[1] = 7.0
    b[i, 0] = float(b.shape[1]) + float(row.shape[0])


@sk.kernel
def k_vec_arrays(a: sk.array(dtype=sk.vec3), b: sk.array(dtype=sk.mat33), out: sk.array(dtype=sk.vec3)):
    i = sk.tid()
    out[i] = b[i] * a[i] + a[i]


@sk.kernel
def k_int_types(a8: sk.array(dtype=sk.int8), u16: sk.array(dtype=sk.uint16), i64: sk.array(dtype=sk.int64),
                u64: sk.array(dtype=sk.uint64), h: sk.array(dtype=sk.float16), bo: sk.array(dtype=sk.bool)):
    i = sk.tid()
    a8[i] = a8[i] + sk.int8(1)
    u16[i] = u16[i] * sk.uint16(2)
    i64[i] = i64[i] + sk.int64(1) << sk.int64(33)
    u64[i] = u64[i] + sk.uint64(1)
    h[i] = h[i] * sk.float16(2.0)
    bo[i] = not bo[i]


# ---------------------------------------------------------------------------- launches over 1-4 dims


def test_1d_and_2d(device):
    a = sk.array(np.arange(10, dtype=np.float32), device=device)
    sk.launch(k_scale1, dim=10, inputs=[a, 3.0], device=device)
    np.testing.assert_allclose(a.numpy(), np.arange(10) * 3.0)
    b = sk.array(np.arange(12, dtype=np.float32).reshape(3, 4), device=device)
    sk.launch(k_scale2, dim=(3, 4), inputs=[b, -1.0], device=device)
    np.testing.assert_allclose(b.numpy(), -np.arange(12).reshape(3, 4))


def test_3d_and_4d(device):
    rng = np.random.default_rng(1)
    s3 = rng.normal(size=(3, 4, 5)).astype(np.float32)
    src = sk.array(s3, device=device)
    dst = sk.zeros((3, 4, 5), device=device)
    sk.launch(k_copy3, dim=(3, 4, 5), inputs=[src, dst], device=device)
    i, j, k = np.indices((3, 4, 5))
    np.testing.assert_allclose(dst.numpy(), s3 + (i * 100 + j * 10 + k))
    s4 = rng.normal(size=(2, 3, 4, 5))
    src4 = sk.array(s4, device=device)
    assert src4.dtype is sk.float64
    dst4 = sk.zeros((2, 3, 4, 5), dtype=sk.float64, device=device)
    sk.launch(k_copy4, dim=(2, 3, 4, 5), inputs=[src4, dst4], device=device)
    np.testing.assert_array_equal(dst4.numpy(), s4 * 2.0)


def test_shape_in_kernel(device):
    a = sk.zeros((2, 3, 4, 5), dtype=int, device=device)
    out = sk.zeros(6, dtype=int, device=device)
    sk.launch(k_shapes, dim=1, inputs=[a, out], device=device)
    np.testing.assert_array_equal(out.numpy(), [2, 3, 4, 5, 2, 4])


def test_value_type_arrays(device):
    rng = np.random.default_rng(2)
    av = rng.normal(size=(8, 3)).astype(np.float32)
    bm = rng.normal(size=(8, 3, 3)).astype(np.float32)
    a = sk.array(av, dtype=sk.vec3, device=device)
    b = sk.array(bm, dtype=sk.mat33, device=device)
    out = sk.zeros(8, dtype=sk.vec3, device=device)
    sk.launch(k_vec_arrays, dim=8, inputs=[a, b, out], device=device)
    np.testing.assert_allclose(out.numpy(), np.einsum("nij,nj->ni", bm, av) + av, rtol=1e-5, atol=1e-6)


def test_small_int_and_half_arrays(device):
    n = 4
    a8 = sk.array(np.array([-128, -1, 0, 127], dtype=np.int8), device=device)
    u16 = sk.array(np.array([0, 1, 40000, 65535], dtype=np.uint16), device=device)
    i64 = sk.array(np.array([0, 1, -5, 2**40], dtype=np.int64), device=device)
    u64 = sk.array(np.array([0, 1, 2**63, 2**64 - 1], dtype=np.uint64), device=device)
    h = sk.array(np.array([0.5, -1.5, 1000.0, 3.0], dtype=np.float16), device=device)
    bo = sk.array(np.array([True, False, True, False]), device=device)
    sk.launch(k_int_types, dim=n, inputs=[a8, u16, i64, u64, h, bo], device=device)
    np.testing.assert_array_equal(a8.numpy(), np.array([-127, 0, 1, -128], dtype=np.int8))
    np.testing.assert_array_equal(u16.numpy(), np.array([0, 2, 14464, 65534], dtype=np.uint16))
    np.testing.assert_array_equal(i64.numpy(), (np.array([0, 1, -5, 2**40], dtype=np.int64) + 1) << 33)
    np.testing.assert_array_equal(u64.numpy(), np.array([1, 2, 2**63 + 1, 0], dtype=np.uint64))
    np.testing.assert_array_equal(h.numpy(), np.array([1.0, -3.0, 2000.0, 6.0], dtype=np.float16))
    np.testing.assert_array_equal(bo.numpy(), [False, True, False, True])


# ---------------------------------------------------------------------------- views in kernels


def test_row_view_in_kernel(device):
    data = np.arange(12, dtype=np.float32).reshape(3, 4)
    a = sk.array(data, device=device)
    out = sk.zeros(3, device=device)
    sk.launch(k_row_sums, dim=3, inputs=[a, out], device=device)
    np.testing.assert_allclose(out.numpy(), data.sum(axis=1))
    ref = data.copy()
    ref[:, 0] = -1
    np.testing.assert_allclose(a.numpy(), ref)


def test_nested_subviews_in_kernel(device):
    data = np.arange(2 * 3 * 4, dtype=np.int32).reshape(2, 3, 4)
    a = sk.array(data, device=device)
    out = sk.zeros((2, 4), dtype=int, device=device)
    sk.launch(k_subviews, dim=2, inputs=[a, out], device=device)
    for i in range(2):
        assert out.numpy()[i].tolist() == [data[i, 1, 2], data[i, 1, 3], data[i, 2, 0], 344]


def test_element_component_writes(device):
    v = sk.array(np.tile(np.array([1.0, 1.0, 1.0], np.float32), (2, 1)), dtype=sk.vec3, device=device)
    m = sk.zeros(2, dtype=sk.mat22, device=device)
    b = sk.zeros((2, 3), device=device)
    sk.launch(k_components, dim=2, inputs=[v, m, b], device=device)
    np.testing.assert_allclose(v.numpy(), [[5, 3, 3], [5, 3, 3]])
    np.testing.assert_allclose(m.numpy(), [[[0, 3], [7, 8]]] * 2)
    np.testing.assert_allclose(b.numpy(), [[6, 7, 0], [6, 7, 0]])


@sk.kernel
def k_negative_indices(a: sk.array(dtype=float), b: sk.array(dtype=float, ndim=2), c: sk.array(dtype=int),
                       w: sk.array(dtype=float, ndim=2), out: sk.array(dtype=float)):
    i = sk.tid()
    out[i] = a[-1 - i] + b[-1, -1 - i] + b[-2][i]  # (reads, a 2D read, a row view)
    w[-1, i] = 1.0
    sk.atomic_add(c, -1, 1)
    f = sk.zeros(shape=3, dtype=float)
    f[-1] = 5.0
    out[i] += f[2]


def test_negative_indices_count_from_the_end(device):
    """As in Warp: an index in [-n, 0) is n + index (reads, writes, atomics, row views, fixed arrays); strided
    views wrap along their own axis."""
    av, bv = np.arange(4.0, dtype=np.float32), np.arange(12.0, dtype=np.float32).reshape(3, 4)
    base = sk.array(np.arange(8.0, dtype=np.float32), device=device)
    a = base[::2]  # (strided: 0, 2, 4, 6)
    b, c = sk.array(bv, device=device), sk.zeros(2, dtype=int, device=device)
    w, out = sk.zeros((3, 4), device=device), sk.zeros(4, device=device)
    sk.launch(k_negative_indices, 4, inputs=[a, b, c, w, out], device=device)
    np.testing.assert_allclose(out.numpy(), 2 * av[::-1] + bv[-1, ::-1] + bv[-2] + 5.0)
    np.testing.assert_array_equal(w.numpy(), [[0] * 4, [0] * 4, [1] * 4])
    np.testing.assert_array_equal(c.numpy(), [0, 4])


# ---------------------------------------------------------------------------- non-contiguous views passed to kernels


def test_strided_views_to_kernels(device):
    base = np.arange(20, dtype=np.float32)
    a = sk.array(base, device=device)
    v = a[2:18:3]  # strided 1D view
    assert v.shape == (6,) and v.strides == (12,) and not v.is_contiguous
    sk.launch(k_scale1, dim=v.shape[0], inputs=[v, 10.0], device=device)
    ref = base.copy()
    ref[2:18:3] *= 10
    np.testing.assert_allclose(a.numpy(), ref)

    r = a[::-1]  # negative stride
    sk.launch(k_scale1, dim=5, inputs=[r, -1.0], device=device)  # the last 5 elements
    ref[15:] *= -1
    np.testing.assert_allclose(a.numpy(), ref)

    m = sk.array(np.arange(30, dtype=np.float32).reshape(5, 6), device=device)
    col = m[:, 1]  # a column: 1D, stride of a row
    assert col.shape == (5,) and col.strides == (24,)
    sk.launch(k_scale1, dim=5, inputs=[col, 2.0], device=device)
    block = m[1:4, 2:5]  # 2D block
    assert block.shape == (3, 3) and block.strides == (24, 4)
    sk.launch(k_scale2, dim=(3, 3), inputs=[block, 0.0], device=device)
    ref = np.arange(30, dtype=np.float32).reshape(5, 6)
    ref[:, 1] *= 2
    ref[1:4, 2:5] = 0
    np.testing.assert_allclose(m.numpy(), ref)

    t = sk.array(np.arange(12, dtype=np.float32).reshape(3, 4).T, device=device)  # copied (C order)
    assert t.is_contiguous
    ft = sk.array(np.asfortranarray(np.arange(12, dtype=np.float32).reshape(3, 4)), copy=False, device="cpu")
    assert ft.strides == (4, 12)  # a Fortran-order array keeps its strides when not copied
    if not a.device.is_cpu:  # (a GPU copy is C order): the same strides as a GPU view
        ft = sk.zeros(12, device=device).reshape((4, 3))
        ft.assign(np.arange(12, dtype=np.float32).reshape(3, 4).T)
        ft = sk.array(ptr=ft.ptr, dtype=float, shape=(3, 4), strides=(4, 12), device=device, _owner=ft)
    out = sk.zeros(3, device=device)
    sk.launch(k_row_sums, dim=3, inputs=[ft, out], device=device)
    np.testing.assert_allclose(out.numpy(), np.arange(12).reshape(3, 4).sum(axis=1))


def test_views_mixed_with_contiguous_same_kernel(device):
    # one launch with a contiguous and a strided array: the strided code path must be used
    a = sk.array(np.arange(10, dtype=np.float32), device=device)
    b = sk.zeros(20, device=device)
    sk.launch(k_vcopy, dim=10, inputs=[a, b[::2]], device=device)
    ref = np.zeros(20, np.float32)
    ref[::2] = np.arange(10)
    np.testing.assert_allclose(b.numpy(), ref)


@sk.kernel
def k_vcopy(src: sk.array(dtype=float), dst: sk.array(dtype=float)):
    i = sk.tid()
    dst[i] = src[i]


# ---------------------------------------------------------------------------- Python API


def test_constructors(device):
    z = sk.zeros((2, 3), dtype=int, device=device)
    assert z.shape == (2, 3) and z.dtype is sk.int32 and z.ndim == 2 and z.size == 6
    np.testing.assert_array_equal(z.numpy(), np.zeros((2, 3)))
    o = sk.ones(4, dtype=sk.vec3, device=device)
    assert o.shape == (4,) and o.numpy().shape == (4, 3)
    np.testing.assert_array_equal(o.numpy(), 1.0)
    f = sk.full((2, 2), 7, dtype=sk.float64, device=device)
    np.testing.assert_array_equal(f.numpy(), np.full((2, 2), 7.0))
    fv = sk.full(3, sk.vec2(1.0, 2.0), dtype=sk.vec2, device=device)
    np.testing.assert_array_equal(fv.numpy(), [[1, 2]] * 3)
    e = sk.empty(5, dtype=sk.int64, device=device)
    assert e.shape == (5,) and e.dtype is sk.int64
    for like, val in ((sk.zeros_like(f), 0.0), (sk.ones_like(f), 1.0), (sk.full_like(f, 3.5), 3.5)):
        assert like.shape == f.shape and like.dtype is f.dtype and like.device == f.device
        np.testing.assert_array_equal(like.numpy(), val)
    el = sk.empty_like(fv)
    assert el.shape == (3,) and el.dtype is sk.vec2
    a = sk.array([1.0, 2.0], device=device)
    assert a.dtype is sk.float32  # Python floats are float32
    a = sk.array([1, 2], device=device)
    assert a.dtype is sk.int32
    a = sk.array(np.arange(3.0), device=device)
    assert a.dtype is sk.float64  # numpy arrays keep their dtype
    a = sk.array([[1, 2, 3], [4, 5, 6]], dtype=sk.vec3, device=device)
    assert a.shape == (2,) and a.numpy()[1].tolist() == [4, 5, 6]
    a = sk.array(np.arange(6, dtype=np.float32), dtype=sk.vec3, device=device)  # flat data regrouped
    assert a.shape == (2,)
    with pytest.raises(ValueError):
        sk.zeros((1, 1, 1, 1, 1), device=device)


def test_numpy_zero_copy_cpu():
    x = np.arange(5, dtype=np.float32)
    shared = sk.array(x, copy=False, device="cpu")
    copied = sk.array(x, device="cpu")
    x[0] = 99.0
    assert shared.numpy()[0] == 99.0 and copied.numpy()[0] == 0.0
    # .numpy() shares memory with the array on the CPU (no copy)
    a = sk.zeros(4, device="cpu")
    a.numpy()[2] = 5.0
    assert a.numpy()[2] == 5.0
    assert np.shares_memory(a.numpy(), np.asarray(a))
    sk.launch(k_scale1, dim=4, inputs=[a, 2.0], device="cpu")
    assert a.numpy()[2] == 10.0
    # __array_interface__ exposes the same pointer
    ai = a.__array_interface__
    assert ai["data"][0] == a.ptr and ai["shape"] == (4,) and np.dtype(ai["typestr"]) == np.float32
    v = sk.zeros(3, dtype=sk.vec3, device="cpu")
    assert v.__array_interface__["shape"] == (3, 3)
    with pytest.raises(ValueError):
        sk.array(np.arange(5, dtype=np.float64), dtype=sk.float32, copy=False, device="cpu")


def test_from_numpy(device):
    x = np.arange(12, dtype=np.float32).reshape(4, 3)
    a = sk.from_numpy(x, device=device)
    assert a.shape == (4, 3) and a.dtype is sk.float32
    v = sk.from_numpy(x, dtype=sk.vec3, device=device)
    assert v.shape == (4,) and v.dtype is sk.vec3
    np.testing.assert_array_equal(v.numpy(), x)
    r = sk.from_numpy(np.arange(6, dtype=np.int32), shape=(2, 3), device=device)
    assert r.shape == (2, 3)
    np.testing.assert_array_equal(r.numpy(), np.arange(6).reshape(2, 3))


def test_inplace_ops(device):
    a = sk.zeros(4, device=device)
    assert a.fill_(2.5) is a
    np.testing.assert_array_equal(a.numpy(), 2.5)
    a.zero_()
    np.testing.assert_array_equal(a.numpy(), 0.0)
    a.assign([1, 2, 3, 4])
    np.testing.assert_array_equal(a.numpy(), [1, 2, 3, 4])
    a.assign(np.array([4, 3, 2, 1], dtype=np.float64))
    np.testing.assert_array_equal(a.numpy(), [4, 3, 2, 1])
    b = sk.ones(4, device=device)
    a.assign(b)
    np.testing.assert_array_equal(a.numpy(), 1.0)
    m = sk.zeros(2, dtype=sk.mat22, device=device)
    m.fill_(sk.mat22(1.0, 2.0, 3.0, 4.0))
    np.testing.assert_array_equal(m.numpy(), [[[1, 2], [3, 4]]] * 2)


def test_copy_and_clone(device):
    src = sk.array(np.arange(10, dtype=np.float32), device=device)
    dst = sk.zeros(10, device=device)
    sk.copy(dst, src)
    np.testing.assert_array_equal(dst.numpy(), np.arange(10))
    dst.zero_()
    sk.copy(dst, src, dest_offset=2, src_offset=5, count=3)
    np.testing.assert_array_equal(dst.numpy(), [0, 0, 5, 6, 7, 0, 0, 0, 0, 0])
    c = sk.clone(src)
    src.zero_()
    np.testing.assert_array_equal(c.numpy(), np.arange(10))
    c2 = src.clone()
    np.testing.assert_array_equal(c2.numpy(), 0.0)
    with pytest.raises(ValueError):
        sk.copy(sk.zeros(3, device=device), src)


def test_copy_between_strided_cpu():
    a = sk.array(np.arange(10, dtype=np.float32), device="cpu")
    c = sk.clone(a[::2])  # clone of a view is contiguous
    assert c.is_contiguous
    np.testing.assert_array_equal(c.numpy(), [0, 2, 4, 6, 8])
    d = sk.zeros(10, device="cpu")
    sk.copy(d[1::2], a[::2])
    np.testing.assert_array_equal(d.numpy(), [0, 0, 0, 2, 0, 4, 0, 6, 0, 8])


def test_reshape_flatten_view(device):
    a = sk.array(np.arange(12, dtype=np.float32), device=device)
    r = a.reshape((3, 4))
    assert r.shape == (3, 4)
    np.testing.assert_array_equal(r.numpy(), np.arange(12).reshape(3, 4))
    assert a.reshape((-1, 6)).shape == (2, 6)
    assert r.flatten().shape == (12,)
    sk.launch(k_scale2, dim=(3, 4), inputs=[r, 2.0], device=device)  # the reshape shares memory
    np.testing.assert_array_equal(a.numpy(), np.arange(12) * 2)
    with pytest.raises(ValueError):
        a.reshape((5, 3))
    iv = a.view(sk.int32)
    assert iv.dtype is sk.int32
    np.testing.assert_array_equal(iv.numpy(), (np.arange(12, dtype=np.float32) * 2).view(np.int32))
    with pytest.raises(TypeError, match="source dtype has size 4 bytes, but target dtype has size 8 bytes"):
        a.view(sk.float64)
    v3 = sk.array(np.arange(6, dtype=np.float32), dtype=sk.vec3, device=device)
    fv = v3.view(sk.vec3i)
    assert fv.dtype is sk.vec3i and fv.shape == (2,)


def test_python_indexing(device):
    """Basic indices give views on every device (numpy's semantics); a full index gives the element."""
    ref = np.arange(24, dtype=np.float32).reshape(4, 6)
    a = sk.array(ref, device=device)
    assert a[1, 2] == 8.0 and a[-1, -1] == 23.0
    row = a[1]
    assert isinstance(row, sk.array) and row.shape == (6,) and row.device == device
    np.testing.assert_array_equal(row.numpy(), ref[1])
    row[0] = -1.0  # a view: writes reach the parent
    ref[1, 0] = -1.0
    for key in [(slice(None), 1), (slice(1, 3), 2), (slice(None, None, -2), slice(1, 5, 3)), (Ellipsis, 4),
                (slice(3, 0, -1),), (2, slice(None, None, -1))]:
        np.testing.assert_array_equal(a[key].numpy(), ref[key], err_msg=str(key))
    a[0] = 9.0
    a[2:4, 1::2] = np.full((2, 3), 7.0)
    ref[0] = 9.0
    ref[2:4, 1::2] = 7.0
    np.testing.assert_array_equal(a.numpy(), ref)
    assert len(a) == 4
    v = sk.array(np.arange(6, dtype=np.float32), dtype=sk.vec3, device=device)
    assert isinstance(v[1], sk.vec3) and v[1].tolist() == [3, 4, 5]
    v[0] = (7.0, 8.0, 9.0)
    np.testing.assert_array_equal(v.numpy(), [[7, 8, 9], [3, 4, 5]])
    with pytest.raises(IndexError):
        a[0, 0, 0]
    with pytest.raises(IndexError):
        a[4]


def test_gpu_arrays_take_basic_indices_only(cuda_device):
    """Fancy indices would need a gather on the device: a GPU array refuses them by name."""
    a = sk.zeros(8, device=cuda_device)
    with pytest.raises(IndexError, match="basic indices.*list"):
        a[[1, 2]]


def test_grad_views(device):
    a = sk.zeros(6, requires_grad=True, device=device)
    v = a[1:4]
    assert v.requires_grad and v.grad.shape == (3,)
    v.grad.fill_(1.0)  # the view's grad is a view of the parent's grad
    np.testing.assert_array_equal(a.grad.numpy(), [0, 1, 1, 1, 0, 0])
    r = a.reshape((2, 3))
    assert r.requires_grad and r.grad.shape == (2, 3) and r.grad.ptr == a.grad.ptr


def test_launch_checks_array_dims(device):
    a = sk.zeros((2, 2), device=device)
    with pytest.raises(TypeError, match="'a'"):
        sk.launch(k_scale1, dim=4, inputs=[a, 1.0], device=device)
    with pytest.raises(TypeError, match="'a'"):
        sk.launch(k_scale1, dim=4, inputs=[sk.zeros(4, dtype=sk.float64, device=device), 1.0], device=device)


def test_view_as_scalar_type_adds_element_dims(device):
    # Warp semantics: a vector/matrix array viewed as a scalar of the component size
    v = sk.array(np.arange(6, dtype=np.float32), dtype=sk.vec3, device=device)
    f = v.view(float)
    assert f.shape == (2, 3) and f.dtype is sk.float32
    np.testing.assert_array_equal(f.numpy(), np.arange(6).reshape(2, 3))
    i = v.view(sk.int32)
    assert i.shape == (2, 3)
    np.testing.assert_array_equal(i.numpy(), np.arange(6, dtype=np.float32).reshape(2, 3).view(np.int32))
    assert sk.zeros((2, 2), dtype=sk.mat22, device=device).view(float).shape == (2, 2, 2, 2)
    m = sk.array(np.arange(16.0).reshape(4, 2, 2), dtype=float, device=device).view(sk.mat22)   # and back
    assert m.shape == (4,) and m.dtype is sk.mat22
    np.testing.assert_array_equal(m.numpy(), np.arange(16.0).reshape(4, 2, 2))
    with pytest.raises(TypeError, match="target scalar dtype float64 has size 8 bytes"):
        f.view(sk.vec3d)
    one = sk.array([1.0, 2.0, 3.0, 4.0], dtype=float, device=device).view(sk.vec4)    # one element: 1D
    assert one.shape == (1,) and one.numpy().tolist() == [[1, 2, 3, 4]]
    with pytest.raises(ValueError):
        sk.zeros((2, 2, 2), dtype=sk.mat22, device=device).view(float)  # would be 5D
    with pytest.raises(TypeError, match="from source dtype vec3: source scalar dtype float32 has size 4 bytes, "
                                        "but target dtype has size 8 bytes"):
        v.view(sk.float64)
    sk.launch(k_scale2, dim=(2, 3), inputs=[f, 2.0], device=device)  # the view shares memory
    np.testing.assert_array_equal(v.numpy(), np.arange(6).reshape(2, 3) * 2)


def test_view_and_copy_reinterpret_bits_cpu():
    a = sk.array(np.arange(6, dtype=np.float32), device="cpu")
    s = a[::2].view(sk.int32)  # a strided view reinterpreted in place
    assert s.strides == (8,)
    np.testing.assert_array_equal(s.numpy(), np.array([0, 2, 4], np.float32).view(np.int32))
    s.numpy()[1] = np.float32(9.0).view(np.int32)
    assert a.numpy()[2] == 9.0
    # copy between element types of one size copies bits (as on the GPU, and as Warp does)
    d = sk.zeros(3, dtype=int, device="cpu")
    sk.copy(d, sk.ones(3, device="cpu"))
    np.testing.assert_array_equal(d.numpy(), np.ones(3, np.float32).view(np.int32))
    d6 = sk.zeros(6, dtype=int, device="cpu")
    sk.copy(d6[1::2], sk.array(np.array([1.0, 2.0, 3.0], np.float32), device="cpu"))
    np.testing.assert_array_equal(d6.numpy()[1::2], np.array([1, 2, 3], np.float32).view(np.int32))
    np.testing.assert_array_equal(d6.numpy()[::2], 0)
    # flatten/reshape to the same shape is a view, contiguous or not
    f = a[::2].flatten()
    f.fill_(-1.0)
    np.testing.assert_array_equal(a.numpy(), [-1, 1, -1, 3, -1, 5])


def test_empty_arrays(device):
    e = sk.zeros((0, 3), requires_grad=True, device=device)
    assert e.shape == (0, 3) and e.size == 0 and e.is_contiguous and e.grad.shape == (0, 3)
    assert sk.array([], dtype=float, device=device).shape == (0,)
    assert e.reshape((0, 5)).shape == (0, 5)
    sk.launch(k_scale2, dim=(0, 3), inputs=[e, 2.0], device=device)  # nothing to do, no error
    assert e.numpy().shape == (0, 3)

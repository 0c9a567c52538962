"""PyTorch and DLPack interop as Warp's: dtype maps, viewing integers with the other sign (and bool bytes as
int8/uint8), ``from_torch(return_ctype=..., retain_grad=...)``, ``array.capacity``, the DLPack error paths,
and explicit adjoint launches whose adjoint arrays are laid out unlike their primal (PyTorch's strided and
broadcast gradients), checked against numpy and central finite differences."""
import ctypes

import numpy as np
import pytest

import simkit as sk
from simkit.runtime import adjoint_buffers, interop
from simkit.runtime.array_ctype import array_t

torch = pytest.importorskip("torch")


@sk.kernel
def k_affine(x: sk.array(dtype=float), y: sk.array(dtype=float)):
    i = sk.tid()
    y[i] = 0.5 - x[i] * 2.0


@sk.kernel
def k_cube(x: sk.array(dtype=sk.float64), y: sk.array(dtype=sk.float64)):
    i = sk.tid()
    y[i] = x[i] * x[i] * x[i] + sk.sin(x[i])


@sk.kernel
def k_mix2d(x: sk.array2d(dtype=sk.vec2d), y: sk.array2d(dtype=sk.vec2d)):
    i, j = sk.tid()
    v = x[i, j]
    y[i, j] = sk.vec2d(v[0] * v[1], v[0] * v[0])


@sk.kernel
def k_set_u64(a: sk.array(dtype=sk.uint64)):
    i = sk.tid()
    a[i] = sk.uint64(0xFFFFFFFFFFFFFFFF) - sk.uint64(i)


@sk.kernel
def k_add_i8(a: sk.array(dtype=sk.int8)):
    i = sk.tid()
    a[i] = a[i] + sk.int8(1)


# ---------------------------------------------------------------------------- dtypes


def test_dtype_maps_both_ways():
    pairs = [(torch.float16, sk.float16), (torch.bfloat16, sk.bfloat16), (torch.float32, sk.float32),
             (torch.float64, sk.float64), (torch.int8, sk.int8), (torch.uint8, sk.uint8), (torch.int16, sk.int16),
             (torch.int32, sk.int32), (torch.int64, sk.int64), (torch.bool, sk.bool)]
    for td, sd in pairs:
        assert sk.dtype_from_torch(td) is sd
        assert sk.dtype_to_torch(sd) == td
    for sd, td in ((sk.uint16, torch.int16), (sk.uint32, torch.int32), (sk.uint64, torch.int64)):
        assert sk.dtype_to_torch(sd) == td  # (as Warp's: the signed torch type of the size)
    assert sk.dtype_to_torch(float) == torch.float32
    with pytest.raises(TypeError, match="complex64"):
        sk.dtype_from_torch(torch.complex64)
    with pytest.raises(TypeError, match="vec3"):
        sk.dtype_to_torch(sk.vec3)
    assert ctypes.sizeof(sk.vec3._type_) == 4 and ctypes.sizeof(sk.mat22d._type_) == 8


def test_from_torch_views_integers_with_the_other_sign_and_bools_as_bytes():
    t = torch.tensor([-1, 2, -3], dtype=torch.int64)
    a = sk.from_torch(t, sk.uint64)
    assert a.dtype is sk.uint64 and a.ptr == t.data_ptr()
    assert a.numpy().tolist() == [2**64 - 1, 2, 2**64 - 3]
    sk.launch(k_set_u64, dim=3, inputs=[a], device="cpu")  # written through the alias: the tensor sees it
    assert t.tolist() == [-1, -2, -3]
    b = torch.tensor([True, False, True])
    for dt in (sk.int8, sk.uint8):
        v = sk.from_torch(b, dt)
        assert v.dtype is dt and v.ptr == b.data_ptr() and v.numpy().tolist() == [1, 0, 1]
    u = torch.tensor([255, 1], dtype=torch.uint8)
    assert sk.from_torch(u, sk.int8).numpy().tolist() == [-1, 1]
    with pytest.raises(TypeError, match="does not match") as e:
        sk.from_torch(b, dtype=sk.float32)
    assert isinstance(e.value, RuntimeError)  # (Warp raises RuntimeError)
    for wrong in (sk.int16, sk.float64):
        with pytest.raises(TypeError, match="does not match"):
            sk.from_torch(t, dtype=wrong)


def test_kernel_arguments_are_not_reinterpreted():
    # a launch takes a tensor of its parameter's element type only: another sign needs from_torch(dtype=...)
    with pytest.raises(TypeError, match="argument 'a'.*does not match"):
        sk.launch(k_set_u64, dim=2, inputs=[torch.zeros(2, dtype=torch.int64)], device="cpu")


def test_dlpack_aliases_and_dtypes(device):
    src = sk.array(np.array([True, False, True]), dtype=sk.bool, device=device)
    for dt in (sk.int8, sk.uint8):
        r = sk.from_dlpack(sk.to_dlpack(src), dtype=dt)
        assert r.ptr == src.ptr and r.dtype is dt and r.strides == src.strides
        assert r.numpy().tolist() == [1, 0, 1]
    i8 = sk.array(np.array([-1, 5, -128], dtype=np.int8), device=device)
    u8 = sk.from_dlpack(sk.to_dlpack(i8), dtype=sk.uint8)
    assert u8.numpy().tolist() == [255, 5, 128]
    as_bytes = sk.from_dlpack(sk.to_dlpack(src), dtype=sk.int8)
    sk.launch(k_add_i8, dim=3, inputs=[as_bytes], device=device)
    assert src.numpy().tolist() == [True, True, True]  # bytes 2, 1, 2: all true
    assert as_bytes.numpy().tolist() == [2, 1, 2]
    with pytest.raises(RuntimeError, match="does not match"):
        sk.from_dlpack(sk.to_dlpack(src), dtype=sk.float32)
    with pytest.raises(TypeError, match="does not match"):  # (floats are never reinterpreted)
        sk.from_dlpack(sk.to_dlpack(sk.zeros(2, dtype=sk.float32, device=device)), dtype=sk.int32)
    v = sk.from_dlpack(sk.to_dlpack(sk.zeros((2, 3), dtype=sk.int32, device=device)), dtype=sk.vector(3, sk.uint32))
    assert v.shape == (2,) and v.dtype is sk.vector(3, sk.uint32)


# ---------------------------------------------------------------------------- DLPack errors


def test_dlpack_unsupported_device_refused_before_export():
    calls = []

    class Elsewhere:
        def __dlpack_device__(self):
            return (123, 7)

        def __dlpack__(self, stream=None, max_version=None):
            calls.append(stream)
            raise AssertionError("exported")

    with pytest.raises(TypeError, match="123") as e:
        sk.from_dlpack(Elsewhere())
    assert isinstance(e.value, BufferError) and "device id 7" in str(e.value)
    assert calls == []


def test_dlpack_producer_returning_no_capsule():
    class NotACapsule:
        def __dlpack_device__(self):
            return (1, 0)

        def __dlpack__(self, stream=None):
            return object()

    with pytest.raises(TypeError, match="capsule, got object"):
        sk.from_dlpack(NotACapsule())
    cap = sk.to_dlpack(sk.zeros(2, device="cpu"))
    sk.from_dlpack(cap)
    with pytest.raises(BufferError, match="consumed"):  # a capsule, but used: still DLPack's BufferError
        sk.from_dlpack(cap)


# ---------------------------------------------------------------------------- from_torch options


def test_capacity_counts_the_storage_after_a_view():
    base = torch.arange(24, dtype=torch.float32).reshape(4, 6)
    cases = [(torch.arange(6.0).reshape(1, 6)[:, 3:], 12), (base[1:3, 2:5], 4 * (24 - 8)),
             (base[2:, 1::2], 4 * (24 - 13)), (base, 96)]
    for view, expected in cases:
        assert sk.from_torch(view).capacity == expected
    assert sk.from_torch(torch.zeros(0)).capacity == 0
    a = sk.zeros((3, 5), dtype=sk.vec3, device="cpu")
    assert a.capacity == 3 * 5 * 12
    assert a[:, ::2].capacity == 12 * (2 * 5 + 4 + 1)  # (a view: from its first element to its last)
    assert sk.zeros(0, device="cpu").capacity == 0


def test_retain_grad_option():
    t = torch.zeros(4, requires_grad=True)
    a = sk.from_torch(t, requires_grad=True, retain_grad=True)
    assert a.retain_grad and a.grad.ptr == t.grad.data_ptr()
    assert not sk.from_torch(t, requires_grad=True).retain_grad
    with pytest.raises(ValueError, match="retain_grad"):
        sk.from_torch(torch.zeros(4), retain_grad=True)


def test_grad_given_as_tensor_or_array():
    t = torch.zeros(5, 3)
    g = torch.zeros(5, 3)
    a = sk.from_torch(t, sk.vec3, grad=g)  # a gradient given: attached (requires_grad)
    assert a.requires_grad and a.grad.ptr == g.data_ptr()
    ga = sk.zeros(5, dtype=sk.vec3, device="cpu")
    b = sk.from_torch(t, sk.vec3, grad=ga)
    assert b.grad is ga
    with pytest.raises(ValueError, match="strides"):
        sk.from_torch(t, sk.vec3, grad=sk.zeros(10, dtype=sk.vec3, device="cpu")[::2])


def test_return_ctype_descriptor_fields():
    t = torch.zeros(10, 4)[:, :3]  # outer stride 16 bytes
    d = sk.from_torch(t, sk.vec3, return_ctype=True)
    assert isinstance(d, array_t) and d.data == t.data_ptr() and d.grad == 0 and d.ndim == 1
    assert d.shape[0] == 10 and d.strides[0] == 16 and d.flags == 0
    r = torch.zeros(6, 2, requires_grad=True)
    d = sk.from_torch(r, sk.vec2, return_ctype=True, retain_grad=True)
    assert d.grad == r.grad.data_ptr() and d.flags == 1
    g = sk.zeros(6, dtype=sk.vec2, device="cpu")
    assert sk.from_torch(torch.zeros(6, 2), sk.vec2, grad=g, return_ctype=True).grad == g.ptr
    m = sk.from_torch(torch.zeros(3, 2, 2, dtype=torch.float64), sk.mat22d, return_ctype=True)
    assert m.ndim == 1 and m.shape[0] == 3 and m.strides[0] == 32
    for a in (sk.zeros((3, 4), dtype=sk.vec3, device="cpu", requires_grad=True, retain_grad=True),
              sk.zeros(8, device="cpu")[::2]):
        assert bytes(array_t.of(a)) == a._descriptor()  # the very bytes a kernel receives


def test_return_ctype_descriptors_are_launch_arguments():
    x = torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64, requires_grad=True)
    y = torch.zeros(3, dtype=torch.float64, requires_grad=True)
    dx = sk.from_torch(x, return_ctype=True)
    dy = sk.from_torch(y, return_ctype=True)
    sk.launch(k_cube, dim=3, inputs=[dx], outputs=[dy])  # device taken from the descriptors
    xn = x.detach().numpy()
    assert np.allclose(y.detach().numpy(), xn**3 + np.sin(xn))
    y.grad.fill_(1.0)
    sk.launch(k_cube, dim=3, inputs=[dx], outputs=[dy], adjoint=True)  # gradients through the descriptors
    assert np.allclose(x.grad.numpy(), 3 * xn**2 + np.cos(xn))
    assert np.all(y.grad.numpy() == 0)  # the output's own gradient is consumed (not retained)
    with pytest.raises(TypeError, match="argument 'x'.*array_t of 1D float32"):
        sk.launch(k_cube, dim=3, inputs=[sk.from_torch(torch.zeros(3), return_ctype=True)], outputs=[dy])


# ---------------------------------------------------------------------------- explicit adjoint arrays


def _central(f, x, eps=1e-6):
    out = np.zeros_like(x)
    for i in range(x.size):
        xp, xm = x.copy(), x.copy()
        xp.flat[i] += eps
        xm.flat[i] -= eps
        out.flat[i] = (f(xp).sum() - f(xm).sum()) / (2 * eps)  # d(sum y)/dx_i
    return out


def test_explicit_adjoints_are_read_and_accumulated_never_zeroed(device):
    x = sk.array([1.0, 2.0, 3.0, 4.0], dtype=float, device=device)
    y = sk.zeros(4, dtype=float, device=device)
    ax, ay = sk.zeros(4, device=device), sk.array([1.0, 2.0, 3.0, 4.0], dtype=float, device=device)
    for k in (1, 2):
        sk.launch(k_affine, dim=4, inputs=[x], outputs=[y], adj_inputs=[ax], adj_outputs=[ay], adjoint=True)
        assert np.allclose(ax.numpy(), -2.0 * k * np.array([1, 2, 3, 4]))  # accumulated
        assert np.allclose(ay.numpy(), [1, 2, 3, 4])  # the caller's buffer is left as it was (as in Warp)
    # an array's own gradient passed explicitly is consumed as in a tape's backward pass
    y2 = sk.zeros(4, dtype=float, device=device, requires_grad=True)
    y2.grad.fill_(1.0)
    sk.launch(k_affine, dim=4, inputs=[x], outputs=[y2], adj_inputs=[ax], adj_outputs=[y2.grad], adjoint=True)
    assert np.all(y2.grad.numpy() == 0)


def test_strided_and_broadcast_adjoints(device):
    xn = np.array([0.3, -1.2, 2.0, 0.7])
    x = sk.array(xn, dtype=sk.float64, device=device)
    y = sk.zeros(4, dtype=sk.float64, device=device)
    expect = 3 * xn**2 + np.cos(xn)
    # output adjoint: every other element of a buffer; input adjoint: a transposed-like strided view
    big = sk.array(np.arange(8.0), dtype=sk.float64, device=device)
    ay = big[::2]
    acc = sk.zeros(12, dtype=sk.float64, device=device)
    ax = acc[1::3]
    sk.launch(k_cube, dim=4, inputs=[x], outputs=[y], adj_inputs=[ax], adj_outputs=[ay], adjoint=True)
    assert np.allclose(ax.numpy(), expect * np.arange(8.0)[::2])
    assert np.allclose(acc.numpy()[[0, 2, 3, 5, 6, 8, 9, 11]], 0)  # nothing outside the view is touched
    assert np.allclose(big.numpy(), np.arange(8.0))
    assert np.allclose(ax.numpy(), _central(lambda v: v**3 + np.sin(v), xn) * np.arange(8.0)[::2], atol=1e-6)
    # broadcast output adjoint (PyTorch's gradient of a sum: ones expanded, stride 0) and a broadcast input
    # adjoint: the shared element receives the sum of every element's contribution, as Warp's atomic adds
    one = sk.array([1.0], dtype=sk.float64, device=device)
    ay0 = sk.array(ptr=one.ptr, dtype=sk.float64, shape=(4,), strides=(0,), device=device, _owner=one)
    cell = sk.array([10.0], dtype=sk.float64, device=device)
    ax0 = sk.array(ptr=cell.ptr, dtype=sk.float64, shape=(4,), strides=(0,), device=device, _owner=cell)
    assert adjoint_buffers.overlaps(ax0) and not adjoint_buffers.overlaps(ax)
    sk.launch(k_cube, dim=4, inputs=[x], outputs=[y], adj_inputs=[ax0], adj_outputs=[ay0], adjoint=True)
    assert np.allclose(cell.numpy(), 10.0 + expect.sum()) and one.numpy().tolist() == [1.0]


def test_adjoints_of_a_strided_primal_2d(device):
    rng = np.random.default_rng(3)
    xn = rng.normal(size=(3, 8, 2))
    base = sk.array(xn, dtype=sk.vec2d, device=device)
    x = base[:, ::2]  # primal (3, 4) vec2d, not contiguous
    y = sk.zeros((3, 4), dtype=sk.vec2d, device=device)
    ayn = rng.normal(size=(4, 3, 2))
    ay_t = sk.array(ayn, dtype=sk.vec2d, device=device)
    ay = sk.array(ptr=ay_t.ptr, dtype=sk.vec2d, shape=(3, 4), strides=(16, 48), device=device, _owner=ay_t)
    ax = sk.zeros((3, 4), dtype=sk.vec2d, device=device)
    sk.launch(k_mix2d, dim=(3, 4), inputs=[x], outputs=[y], adj_inputs=[ax], adj_outputs=[ay], adjoint=True)
    xs, w = xn[:, ::2], ayn.transpose(1, 0, 2)  # w: the output adjoint as (3, 4, 2)

    def f(v):
        v = v.reshape(xs.shape)
        return np.stack([v[..., 0] * v[..., 1], v[..., 0] ** 2], axis=-1) * w

    assert np.allclose(ax.numpy(), _central(f, xs.copy()), atol=1e-6)


def test_torch_custom_op_gradcheck_with_explicit_adjoints():
    class Cube(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            y = torch.empty_like(x)
            ctx.x, ctx.y = x.detach(), y.detach()
            sk.launch(k_cube, dim=len(x), inputs=[sk.from_torch(ctx.x, requires_grad=False)],
                      outputs=[sk.from_torch(ctx.y, requires_grad=False)])
            return y

        @staticmethod
        def backward(ctx, gy):
            gx = torch.zeros_like(ctx.x)
            sk.launch(k_cube, dim=len(ctx.x), inputs=[sk.from_torch(ctx.x, requires_grad=False)],
                      outputs=[sk.from_torch(ctx.y, requires_grad=False)],
                      adj_inputs=[sk.from_torch(gx, requires_grad=False)],
                      adj_outputs=[sk.from_torch(gy, requires_grad=False)], adjoint=True)
            return gx

    x = torch.tensor([0.1, -0.4, 0.9, 1.3, -2.0], dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(Cube.apply, (x,))  # central differences, whatever layout torch's gy has
    Cube.apply(x).sum().backward()  # gy: ones expanded (stride 0)
    xn = x.detach().numpy()
    assert np.allclose(x.grad.numpy(), 3 * xn**2 + np.cos(xn))
    gy = torch.arange(10.0, dtype=torch.float64)[::2]
    kept = gy.clone()
    (g,) = torch.autograd.grad(Cube.apply(x), (x,), grad_outputs=gy)
    assert np.allclose(g.numpy(), (3 * xn**2 + np.cos(xn)) * kept.numpy()) and torch.equal(gy, kept)


def test_staging_keeps_the_launch_checks():
    x = sk.zeros(4, device="cpu")
    with pytest.raises(ValueError, match="shape and strides"):  # an adjoint of another shape: refused
        sk.launch(k_affine, dim=4, inputs=[x], outputs=[sk.zeros(4, device="cpu")],
                  adj_inputs=[sk.zeros(8, device="cpu")[::4]], adj_outputs=[None], adjoint=True)
    # a primal whose elements overlap has no layout for one adjoint per element
    one = sk.zeros(1, device="cpu")
    xb = sk.array(ptr=one.ptr, dtype=float, shape=(4,), strides=(0,), device="cpu", _owner=one)
    with pytest.raises(ValueError, match="shape and strides"):
        sk.launch(k_affine, dim=4, inputs=[xb], outputs=[sk.zeros(4, device="cpu")],
                  adj_inputs=[sk.zeros(4, device="cpu")], adj_outputs=[None], adjoint=True)
    assert interop.aliases(sk.int64, sk.uint64) and not interop.aliases(sk.int64, sk.float64)


def test_dlpack_stream_argument_checked(device):
    a = sk.array(np.arange(4.0), dtype=float, device=device)
    for s in (None, -1):
        assert np.array_equal(sk.from_dlpack(a.__dlpack__(stream=s)).numpy(), np.arange(4.0))
    bad = (0, 1, 7, -2, "nope") if sk.get_device(device).is_cpu else (-2, "nope", 1.5)
    for s in bad:
        with pytest.raises(TypeError, match="stream"):
            a.__dlpack__(stream=s)

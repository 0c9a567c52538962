"""Interop: DLPack both ways, numpy arrays as launch arguments, PyTorch (tensors, gradients, autograd
Function), JAX (arrays, jitted kernels with gradients), CUDA array interface. Zero copy everywhere:
writes through one side are visible on the other. Framework tests skip when it is not installed."""
import gc
import sys

import numpy as np
import pytest

import simkit as sk
from simkit.kernels import types as T
from simkit.runtime import interop

SCALARS = [np.bool_, np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64,
           np.float16, np.float32, np.float64]


@sk.kernel
def k_scale_vec(x: sk.array(dtype=sk.vec3), s: float, y: sk.array(dtype=sk.vec3)):
    i = sk.tid()
    y[i] = x[i] * s


@sk.kernel
def k_inc(a: sk.array(dtype=float)):
    i = sk.tid()
    a[i] = a[i] + 1.0


@sk.kernel
def k_twice(x: sk.array(dtype=sk.Any), y: sk.array(dtype=sk.Any)):
    i = sk.tid()
    y[i] = x[i] + x[i]


@sk.kernel
def k_sq(x: sk.array(dtype=float), s: float, y: sk.array(dtype=float)):
    i = sk.tid()
    y[i] = x[i] * x[i] * s


@sk.kernel
def k_integrate(x: sk.array(dtype=sk.vec3d), v: sk.array(dtype=sk.vec3d), dt: sk.float64,
                x1: sk.array(dtype=sk.vec3d)):
    i = sk.tid()
    v1 = v[i] + sk.vec3d(0.0, -9.8, 0.0) * dt
    x1[i] = x[i] + v1 * dt


@sk.kernel
def k_springs(x: sk.array(dtype=sk.vec3d), i0: sk.array(dtype=int), i1: sk.array(dtype=int),
              rest: sk.array(dtype=sk.float64), k: sk.float64, e: sk.array(dtype=sk.float64)):
    s = sk.tid()
    d = x[i1[s]] - x[i0[s]]
    c = sk.length(d) - rest[s]
    sk.atomic_add(e, 0, 0.5 * k * c * c)


@sk.kernel
def k_springs32(x: sk.array(dtype=sk.vec3), i0: sk.array(dtype=int), i1: sk.array(dtype=int), k: float,
                e: sk.array(dtype=float)):
    s = sk.tid()
    d = x[i1[s]] - x[i0[s]]
    c = sk.length(d) - 1.0
    sk.atomic_add(e, 0, 0.5 * k * c * c)


def _live():
    gc.collect()
    return len(interop._live)


# ---------------------------------------------------------------------------- DLPack with numpy


@pytest.mark.parametrize("dt", SCALARS, ids=lambda d: np.dtype(d).name)
def test_dlpack_numpy_every_scalar_dtype_zero_copy(dt):
    n = np.zeros(5, dtype=dt)
    a = sk.from_dlpack(n)
    assert a.dtype is T.scalar_from_numpy(np.dtype(dt))
    assert a.ptr == n.ctypes.data and a.shape == (5,)
    back = np.from_dlpack(a)
    assert back.dtype == dt and np.shares_memory(back, n)
    back[2] = 1
    assert n[2] == 1 and a.numpy()[2] == 1


@pytest.mark.parametrize("dtype,esh", [(sk.vec3, (3,)), (sk.vec2d, (2,)), (sk.mat33, (3, 3)), (sk.quat, (4,)),
                                       (sk.transform, (7,)), (sk.vec4i, (4,))])
def test_dlpack_vector_matrix_export_trailing_dims_and_regroup(dtype, esh):
    a = sk.zeros((2, 3), dtype=dtype, device="cpu")
    n = np.from_dlpack(a)
    scalar = sk.float32 if dtype in (sk.vec3, sk.mat33, sk.quat, sk.transform) else None
    assert n.shape == (2, 3) + esh
    if scalar is not None:
        assert n.dtype == np.float32
    n[...] = np.arange(n.size).reshape(n.shape)
    assert np.array_equal(a.numpy(), n)
    b = sk.from_dlpack(n, dtype=dtype)  # regroup the trailing dims
    assert b.dtype is dtype and b.shape == (2, 3) and b.strides == a.strides and b.ptr == a.ptr


def test_dlpack_noncontiguous_views_keep_strides():
    base = np.arange(48, dtype=np.float32).reshape(4, 12)
    for view in (base[:, ::2], base.T, base[1:3, 2:9:3], base[::-1]):
        a = sk.from_dlpack(view)
        assert a.shape == view.shape and a.strides == view.strides
        back = np.from_dlpack(a)
        assert back.strides == view.strides and np.shares_memory(back, base)
        assert np.array_equal(back, view)
    v = np.zeros((6, 3), dtype=np.float32)[::2]  # every other vec3: element dims contiguous, outer strided
    a = sk.from_dlpack(v, dtype=sk.vec3)
    assert a.shape == (3,) and a.strides == (24,)
    sk.launch(k_scale_vec, dim=3, inputs=[sk.from_numpy(np.ones((3, 3), np.float32), dtype=sk.vec3, device="cpu"), 2.0],
              outputs=[a], device="cpu")
    assert np.all(v == 2.0)


def test_dlpack_simkit_to_simkit_capsules_classic_and_versioned():
    a = sk.array(np.arange(6, dtype=np.float32).reshape(2, 3), dtype=sk.vec3, device="cpu")
    base = _live()
    for cap in (sk.to_dlpack(a), a.__dlpack__(max_version=(1, 0)), a.__dlpack__()):
        b = sk.from_dlpack(cap, dtype=sk.vec3)
        assert b.ptr == a.ptr and b.dtype is sk.vec3 and b.shape == (2,)
        with pytest.raises(BufferError, match="consumed"):
            sk.from_dlpack(cap)
        del b
    assert "dltensor_versioned" in repr(a.__dlpack__(max_version=(1, 0)))
    assert _live() == base  # consumed capsules released their exports; unconsumed ones too


def test_dlpack_keeps_memory_alive():
    a = sk.array(np.arange(4, dtype=np.float64), dtype=sk.float64, device="cpu")
    n = np.from_dlpack(a)
    del a
    gc.collect()
    assert n.tolist() == [0.0, 1.0, 2.0, 3.0]
    src = np.arange(3, dtype=np.int32)
    b = sk.from_dlpack(src)
    view = b.numpy()
    del src, b
    gc.collect()
    assert view.tolist() == [0, 1, 2]


EXIT_SCRIPT = """
import numpy as np, simkit as sk
a = sk.zeros(5, dtype=sk.vec3, device="cpu")
class H: pass
h = H(); h.cycle = h   # collected by the last garbage collection at exit, after module globals are cleared
h.cap, h.capv, h.n = sk.to_dlpack(a), a.__dlpack__(max_version=(1, 0)), np.from_dlpack(a)
h.b = sk.from_dlpack(np.ones(3)); h.c = sk.from_dlpack(a.__dlpack__(max_version=(1, 0)))
try:
    import torch
    h.t, h.u = torch.from_dlpack(a), sk.from_torch(torch.ones(3))
except ImportError:
    pass
CAP, N = a.__dlpack__(), np.from_dlpack(a)
print("ok")
"""


def test_exports_alive_at_interpreter_exit_do_not_crash(tmp_path):
    import subprocess
    import sys

    script = tmp_path / "exit.py"
    script.write_text(EXIT_SCRIPT)
    r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr[-2000:]
    assert "Exception ignored" not in r.stderr, r.stderr[-2000:]


def test_dlpack_device_and_cuda_array_interface_on_cpu():
    a = sk.zeros(3, device="cpu")
    assert a.__dlpack_device__() == (1, 0)
    assert not hasattr(a, "__cuda_array_interface__")
    with pytest.raises(AttributeError, match="CUDA arrays"):
        a.__cuda_array_interface__  # noqa: B018
    c = np.from_dlpack(a, copy=True)
    c[0] = 5
    assert a.numpy()[0] == 0


def test_dlpack_errors():
    with pytest.raises(TypeError, match="complex"):
        sk.from_dlpack(np.zeros(3, dtype=np.complex64))
    with pytest.raises(TypeError, match="does not match"):
        sk.from_dlpack(np.zeros((3, 3), dtype=np.float64), dtype=sk.vec3)
    with pytest.raises(TypeError, match="contiguous"):
        sk.from_dlpack(np.zeros((3, 3), dtype=np.float32).T.copy().T, dtype=sk.vec3)
    with pytest.raises(TypeError, match="trailing dimensions"):
        sk.from_dlpack(np.zeros((3, 4), dtype=np.float32), dtype=sk.vec3)
    with pytest.raises(TypeError, match="1 to 4 dimensions"):
        sk.from_dlpack(np.zeros((1, 1, 1, 1, 1), dtype=np.float32))
    with pytest.raises(TypeError, match="__dlpack__"):
        sk.from_dlpack([1, 2, 3])

    @sk.struct
    class P:
        a: float

    with pytest.raises(TypeError, match="cannot be exchanged"):
        np.from_dlpack(sk.zeros(2, dtype=P))


# ---------------------------------------------------------------------------- numpy arrays as launch arguments


def test_numpy_arrays_passed_to_launch_without_copy():
    x = np.arange(12, dtype=np.float32).reshape(4, 3)
    y = np.zeros_like(x)
    sk.launch(k_scale_vec, dim=4, inputs=[x, 2.0], outputs=[y])  # device inferred: the CPU
    assert np.array_equal(y, 2 * x)
    a = np.zeros(10, dtype=np.float32)
    sk.launch(k_inc, dim=5, inputs=[a[::2]], device="cpu")  # strided view: written in place
    assert a.tolist() == [1, 0] * 5
    xx, yy = np.arange(5, dtype=np.float64), np.zeros(5)
    sk.launch(k_twice, dim=5, inputs=[xx], outputs=[yy], device="cpu")  # generic kernel: dtype from numpy
    assert yy.tolist() == [0, 2, 4, 6, 8]


def test_numpy_launch_arguments_errors_name_the_parameter():
    x = np.zeros((4, 3), dtype=np.float32)
    cases = [(x.astype(np.float64), "does not match"), (np.asfortranarray(x), "contiguous"),
             (x[:, :2], "trailing dimensions"), (np.zeros(4, np.float32), "trailing dimensions"),
             (np.zeros((2, 4, 3), np.float32), "2D array"), ("abc", "got str")]
    for bad, msg in cases:
        with pytest.raises(TypeError, match=f"argument 'x'.*{msg}"):
            sk.launch(k_scale_vec, dim=4, inputs=[bad, 2.0], outputs=[x], device="cpu")
    with pytest.raises(TypeError, match="argument 'x'"):
        sk.launch(k_scale_vec, dim=4, inputs=[sk.vec3(1, 2, 3), 2.0], outputs=[x], device="cpu")


def test_numpy_arguments_recorded_on_a_tape():
    x = sk.array(np.arange(4, dtype=np.float32), dtype=float, device="cpu", requires_grad=True)
    y = np.zeros(4, dtype=np.float32)
    tape = sk.Tape()
    with tape:
        sk.launch(k_sq, dim=4, inputs=[x, 3.0], outputs=[y])
    assert y.tolist() == [0, 3, 12, 27]
    assert all(isinstance(a, sk.array) for op in tape.ops for a in op.args if not isinstance(a, float))


# ---------------------------------------------------------------------------- PyTorch


def test_torch_zero_copy_both_directions():
    torch = pytest.importorskip("torch")
    t = torch.zeros(4, 3)
    a = sk.from_torch(t, dtype=sk.vec3)
    assert a.shape == (4,) and a.dtype is sk.vec3 and a.ptr == t.data_ptr() and a.device == "cpu"
    sk.launch(k_scale_vec, dim=4, inputs=[sk.from_numpy(np.ones((4, 3), np.float32), dtype=sk.vec3, device="cpu"), 5.0],
              outputs=[a])
    assert torch.all(t == 5)
    b = sk.zeros(3, dtype=sk.mat22)
    tb = sk.to_torch(b)
    assert tuple(tb.shape) == (3, 2, 2) and tb.data_ptr() == b.ptr
    tb[1, 0, 1] = 7
    assert b.numpy()[1, 0, 1] == 7
    for dt in (torch.float16, torch.float64, torch.int8, torch.uint8, torch.int16, torch.int32, torch.int64,
               torch.bool):
        x = torch.zeros(6, dtype=dt)
        r = sk.to_torch(sk.from_torch(x))
        assert r.dtype == dt and r.data_ptr() == x.data_ptr()
    v = torch.arange(24.0).reshape(4, 6).t()[1:, ::2]  # non-contiguous view
    av = sk.from_torch(v)
    assert av.strides == tuple(s * 4 for s in v.stride())
    rv = sk.to_torch(av)
    assert rv.stride() == v.stride() and torch.equal(rv, v)


def test_torch_gradients_share_memory():
    torch = pytest.importorskip("torch")
    t = torch.zeros(4, 3, requires_grad=True)
    a = sk.from_torch(t, dtype=sk.vec3)
    assert a.requires_grad and t.grad is not None and a.grad.ptr == t.grad.data_ptr()
    a.grad.numpy()[2, 1] = 3.0
    assert t.grad[2, 1] == 3.0
    assert not sk.from_torch(t, requires_grad=False).requires_grad
    b = sk.zeros(5, dtype=sk.vec3, requires_grad=True)
    tb = sk.to_torch(b)
    assert tb.requires_grad and tb.is_leaf and tb.grad.data_ptr() == b.grad.ptr
    (tb * 2).sum().backward()  # torch accumulates into .grad in place: simkit sees it
    assert np.all(b.grad.numpy() == 2)
    with pytest.raises(ValueError, match="strides"):
        sk.from_torch(t.t(), grad=torch.zeros(3, 4), requires_grad=True)


def test_torch_errors_and_devices():
    torch = pytest.importorskip("torch")
    with pytest.raises(TypeError, match="complex64"):  # (bfloat16 maps to sk.bfloat16: tests/test_bfloat16.py)
        sk.from_torch(torch.zeros(3, dtype=torch.complex64))
    with pytest.raises(TypeError, match="does not match"):
        sk.from_torch(torch.zeros(3, 3, dtype=torch.float64), dtype=sk.vec3)
    with pytest.raises(TypeError, match="contiguous"):
        sk.from_torch(torch.zeros(3, 3).t(), dtype=sk.vec3)
    assert sk.device_from_torch("cpu") == sk.get_device("cpu")
    assert sk.device_from_torch(torch.device("cpu")).is_cpu
    assert sk.device_to_torch("cpu") == torch.device("cpu")
    t = torch.ones(4)
    sk.launch(k_inc, dim=4, inputs=[t])  # a tensor straight into launch (DLPack, zero copy)
    assert torch.all(t == 2)


def _torch_springs(torch, x, i0, i1, rest, k):
    d = x[i1.long()] - x[i0.long()]
    return (0.5 * k * (d.norm(dim=1) - rest) ** 2).sum()


def test_torch_function_gradients_match_torch_autograd(device):
    torch = pytest.importorskip("torch")
    if device != "cpu" and not torch.cuda.is_available():
        pytest.skip("torch without CUDA")

    def step_energy(x, v, i0, i1, rest):  # one simulation step, then the spring energy of the new state
        x1 = sk.zeros_like(x)
        sk.launch(k_integrate, dim=len(x), inputs=[x, v, 0.01], outputs=[x1])
        e = sk.zeros(1, dtype=sk.float64, device=x.device, requires_grad=True)
        sk.launch(k_springs, dim=len(i0), inputs=[x1, i0, i1, rest, 20.0], outputs=[e])
        return e

    f = sk.torch_function(step_energy, dtypes=[sk.vec3d, sk.vec3d])
    g = torch.Generator().manual_seed(1)
    x = torch.randn(6, 3, dtype=torch.float64, generator=g).to(device).requires_grad_(True)
    v = torch.randn(6, 3, dtype=torch.float64, generator=g).to(device).requires_grad_(True)
    i0 = torch.tensor([0, 1, 2, 3, 4, 0], dtype=torch.int32, device=device)
    i1 = torch.tensor([1, 2, 3, 4, 5, 5], dtype=torch.int32, device=device)
    rest = torch.full((6,), 0.7, dtype=torch.float64, device=device, requires_grad=True)
    e = f(x, v, i0, i1, rest)
    assert e.device == x.device
    (2.0 * e.sum()).backward()

    x2, v2, r2 = (t.detach().clone().requires_grad_(True) for t in (x, v, rest))
    v1 = v2 + torch.tensor([0.0, -9.8, 0.0], dtype=torch.float64, device=device) * 0.01
    e2 = _torch_springs(torch, x2 + v1 * 0.01, i0, i1, r2, 20.0)
    (2.0 * e2).backward()
    assert torch.allclose(e.sum(), e2)
    for a, b in ((x, x2), (v, v2), (rest, r2)):
        assert torch.allclose(a.grad, b.grad, rtol=1e-10, atol=1e-12)


@sk.kernel
def k_step(x: sk.array(dtype=sk.vec3), v: sk.array(dtype=sk.vec3), dt: float, x1: sk.array(dtype=sk.vec3)):
    i = sk.tid()
    x1[i] = x[i] + v[i] * dt * x[i][0]


def test_torch_function_vector_output_strided_input_retain_graph():
    torch = pytest.importorskip("torch")

    def step(x, v):
        x1 = sk.zeros_like(x)
        sk.launch(k_step, dim=len(x), inputs=[x, v, 0.1], outputs=[x1])
        return x1

    f = sk.torch_function(step, dtypes=[sk.vec3, sk.vec3])
    g = torch.Generator().manual_seed(2)
    xb = torch.randn(10, 3, generator=g, requires_grad=True)
    v = torch.randn(5, 3, generator=g, requires_grad=True)
    y = f(xb[::2], v)  # a strided view as input
    assert tuple(y.shape) == (5, 3) and y.requires_grad
    loss = (y ** 2).sum() + y.sum()  # y.sum() gives an expanded (stride-0) output gradient
    loss.backward(retain_graph=True)
    gx, gv = xb.grad.clone(), v.grad.clone()
    loss.backward()  # a second backward through the same tape accumulates the same gradients again
    assert torch.allclose(xb.grad, 2 * gx) and torch.allclose(v.grad, 2 * gv)

    xb2, v2 = xb.detach().clone().requires_grad_(True), v.detach().clone().requires_grad_(True)
    x = xb2[::2]
    y2 = x + v2 * 0.1 * x[:, :1]
    ((y2 ** 2).sum() + y2.sum()).backward()
    assert torch.allclose(gx, xb2.grad, atol=1e-5) and torch.allclose(gv, v2.grad, atol=1e-5)


def test_torch_training_loop_through_simkit_matches_torch_only():
    torch = pytest.importorskip("torch")

    def energy(x, i0, i1, rest):
        e = sk.zeros(1, dtype=sk.float64, requires_grad=True, device=x.device)
        sk.launch(k_springs, dim=len(i0), inputs=[x, i0, i1, rest, 5.0], outputs=[e])
        return e

    f = sk.torch_function(energy, dtypes=[sk.vec3d])
    i0 = torch.tensor([0, 1, 2, 0], dtype=torch.int32)
    i1 = torch.tensor([1, 2, 3, 3], dtype=torch.int32)
    rest = torch.ones(4, dtype=torch.float64)
    x0 = torch.randn(4, 3, dtype=torch.float64, generator=torch.Generator().manual_seed(3))
    runs = []
    for use_simkit in (True, False):
        x = x0.clone().requires_grad_(True)
        opt = torch.optim.SGD([x], lr=0.02)
        losses = []
        for _ in range(15):
            opt.zero_grad()
            loss = f(x, i0, i1, rest)[0] if use_simkit else _torch_springs(torch, x, i0, i1, rest, 5.0)
            loss.backward()
            opt.step()
            losses.append(loss.item())
        runs.append((losses, x.detach()))
    (l1, x1), (l2, x2) = runs
    assert np.allclose(l1, l2, rtol=1e-10) and l1[-1] < 0.5 * l1[0]
    assert torch.allclose(x1, x2, rtol=1e-10, atol=1e-12)


# ---------------------------------------------------------------------------- JAX


def test_jax_arrays_through_dlpack():
    jax = pytest.importorskip("jax")
    jnp = jax.numpy
    x = jnp.arange(12.0, dtype=jnp.float32).reshape(4, 3)
    a = sk.from_jax(x, dtype=sk.vec3)
    assert a.shape == (4,) and a.ptr == x.unsafe_buffer_pointer()  # zero copy
    assert np.array_equal(a.numpy(), np.asarray(x))
    b = sk.array(np.arange(6, dtype=np.float32).reshape(2, 3), dtype=sk.vec3, device="cpu")
    jb = sk.to_jax(b)
    assert jb.shape == (2, 3) and jb.dtype == jnp.float32 and np.array_equal(np.asarray(jb), b.numpy())
    assert sk.device_from_jax(jax.devices("cpu")[0]).is_cpu
    assert sk.device_to_jax("cpu").platform == "cpu"


def test_jax_kernel_jit_grad_vmap():
    jax = pytest.importorskip("jax")
    jnp = jax.numpy
    f = sk.jax_kernel(k_sq)
    x = jnp.arange(4.0, dtype=jnp.float32)
    assert np.allclose(jax.jit(lambda x: f(x, 2.0))(x), [0, 2, 8, 18])
    assert np.allclose(jax.jit(lambda x, s: f(x, s))(x, jnp.float32(3.0)), [0, 3, 12, 27])  # traced scalar
    assert np.allclose(jax.jit(jax.grad(lambda x: f(x, 2.0)[0].sum()))(x), [0, 4, 8, 12])  # (a list of outputs)
    assert np.allclose(jax.vmap(lambda x: f(x, 2.0))(jnp.ones((3, 4), jnp.float32)), 2.0)

    g = sk.jax_kernel(k_springs32, output_dims={"e": 1})
    X = jnp.asarray(np.random.RandomState(0).randn(5, 3), dtype=jnp.float32)
    i0, i1 = jnp.array([0, 1, 2, 3], jnp.int32), jnp.array([1, 2, 3, 4], jnp.int32)

    def ref(X):
        d = X[i1] - X[i0]
        return (0.5 * 10.0 * (jnp.linalg.norm(d, axis=1) - 1.0) ** 2).sum()

    def sim(X):
        return g(X, i0, i1, 10.0, launch_dims=4)[0][0]

    assert np.allclose(jax.jit(sim)(X), ref(X), rtol=1e-5)
    assert np.allclose(jax.jit(jax.grad(sim))(X), jax.grad(ref)(X), rtol=1e-4, atol=1e-5)
    with pytest.raises(NotImplementedError, match="GPU"):
        sk.jax_kernel(k_sq, device="cuda")


# ---------------------------------------------------------------------------- CUDA (skipped without a GPU)


needs_gpu = pytest.mark.skipif(not sk.is_cuda_available(), reason="needs a CUDA GPU")


def test_cuda_array_interface_and_dlpack_device(cuda_device):
    a = sk.zeros((4, 2), dtype=sk.vec3, device=cuda_device)
    iface = a.__cuda_array_interface__
    assert iface["shape"] == (4, 2, 3) and iface["typestr"] == "<f4" and iface["data"][0] == a.ptr
    assert iface["strides"] is None and iface["version"] == 3
    assert a.__dlpack_device__() == (2, 0)

    class Foreign:  # a minimal CAI producer sharing a's memory
        __cuda_array_interface__ = iface

    b = interop.from_cuda_array_interface(Foreign(), dtype=sk.vec3)
    assert b.ptr == a.ptr and b.shape == (4, 2) and b.device == a.device
    c = sk.from_dlpack(sk.to_dlpack(a), dtype=sk.vec3)
    assert c.ptr == a.ptr and c.device == a.device


def test_a_refused_capsule_keeps_the_consumers_error_and_is_released(cuda_device, monkeypatch):
    # numpy refuses a GPU tensor and frees the capsule with its error still set; a Python capsule
    # destructor lost that error (numpy then raised SystemError, "returned NULL without setting an
    # exception"), the compiled one keeps it and still releases the export
    unraisable = []
    monkeypatch.setattr(sys, "unraisablehook", unraisable.append)
    a = sk.zeros(3, device=cuda_device)
    base = _live()
    with pytest.raises((BufferError, RuntimeError), match="[Dd]evice"):
        np.from_dlpack(a)
    assert _live() == base and not unraisable
    c = sk.to_dlpack(a)  # an unconsumed capsule, dropped, is released too
    del c
    assert _live() == base and not unraisable


def test_capsules_work_with_the_python_destructor_where_nothing_compiles(monkeypatch):
    from simkit.runtime import dlpack_native

    def no_compiler():
        raise RuntimeError("no C++ compiler")

    monkeypatch.setattr(dlpack_native, "_build", no_compiler)
    monkeypatch.setattr(dlpack_native, "_resolved", None)
    monkeypatch.setattr(interop, "_destructor", 0)
    base = _live()
    a = sk.array(np.arange(4, dtype=np.float32), device="cpu")
    assert np.from_dlpack(a).tolist() == [0, 1, 2, 3]
    assert interop._destructor == interop._DESTRUCTOR_ADDR
    c = sk.to_dlpack(a)
    del c
    assert _live() == base
    monkeypatch.undo()  # (the compiled destructor again, for the tests after this one)
    assert interop._native_destructor() != interop._DESTRUCTOR_ADDR


def test_launch_runs_where_its_foreign_arrays_are(cuda_device):
    # the default device is the GPU; a launch on CPU tensors alone runs on the CPU (as on a machine
    # with a GPU, where a CPU torch tensor once made the launch pick the default device and fail)
    torch = pytest.importorskip("torch")

    class DLPackOnly:  # a CPU producer known by __dlpack_device__ only (no array interface)
        def __init__(self, t):
            self.t = t

        def __dlpack__(self, **kw):
            return self.t.__dlpack__(**kw)

        def __dlpack_device__(self):
            return self.t.__dlpack_device__()

    t = torch.ones(4)
    with sk.ScopedDevice(cuda_device):
        assert sk.get_device() == cuda_device
        assert interop.foreign_device(t).is_cpu and interop.foreign_device(DLPackOnly(t)).is_cpu
        assert interop.foreign_device(np.ones(2)).is_cpu
        sk.launch(k_inc, dim=4, inputs=[t])
        sk.launch(k_inc, dim=4, inputs=[DLPackOnly(t)])
    assert torch.all(t == 3)
    assert interop.foreign_device(sk.zeros(2, device="cpu")) is None  # simkit arrays are not foreign


@needs_gpu
def test_torch_cuda_zero_copy_and_launch():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch without CUDA")
    t = torch.zeros(8, device="cuda:0")
    a = sk.from_torch(t)
    assert a.ptr == t.data_ptr() and a.device == "cuda:0"
    sk.launch(k_inc, dim=8, inputs=[a])
    sk.launch(k_inc, dim=8, inputs=[t])  # via __cuda_array_interface__
    sk.synchronize()  # torch reads on its own stream
    assert torch.all(t == 2).item()
    tb = sk.to_torch(a)
    assert tb.data_ptr() == t.data_ptr()


@needs_gpu
def test_cupy_via_cuda_array_interface():
    cp = pytest.importorskip("cupy")
    x = cp.zeros(8, dtype=cp.float32)
    sk.launch(k_inc, dim=8, inputs=[x], device="cuda:0")
    sk.synchronize()
    assert float(x.sum()) == 8.0
    a = sk.from_dlpack(x)
    assert a.ptr == x.data.ptr
    y = cp.from_dlpack(a)
    assert y.data.ptr == a.ptr

"""Gradient storage of CPU arrays: ``requires_grad`` makes it through a short path (array._zeros_cpu_like), which
must set up exactly what the constructor sets up, for every element type and shape."""
import numpy as np
import pytest

import simkit as sk
from simkit.runtime.array import CPU_ALIGN


@sk.struct
class Particle:
    x: sk.vec3
    m: float
    tag: int


DTYPES = [sk.float32, sk.float64, sk.int32, sk.float16, sk.vec3, sk.mat33d, sk.quat, sk.transform, Particle]
SHAPES = [0, 1, 7, (2, 3), (2, 1, 3, 2)]


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda t: getattr(t, "__name__", str(t)))
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_a_gradient_is_the_array_the_constructor_makes(dtype, shape):
    a = sk.ones(shape, dtype=dtype, device="cpu") if dtype is not Particle else sk.zeros(shape, dtype=dtype,
                                                                                         device="cpu")
    a.requires_grad = True
    g, made = a.grad, sk.zeros(shape, dtype=dtype, device="cpu")
    assert set(vars(g)) == set(vars(made))
    for name in ("dtype", "device", "shape", "strides", "itemsize", "ndim", "size", "_owner", "_grad", "_desc",
                 "_requires_grad", "is_type", "_ver"):
        assert getattr(g, name) == getattr(made, name), name
    host = g.numpy()
    assert host.dtype == made.numpy().dtype and host.shape == made.numpy().shape
    assert not host.view(np.uint8).any()
    if g.size:
        assert g.ptr == host.__array_interface__["data"][0] and g.ptr % CPU_ALIGN == 0
        assert not np.shares_memory(host, a.numpy())
    else:
        assert g.ptr == 0
    assert g.is_contiguous and not g.requires_grad and g.grad is None


@sk.kernel
def scaled_sum(x: sk.array(dtype=sk.vec3), w: sk.array(dtype=float), out: sk.array(dtype=float)):
    i = sk.tid()
    sk.atomic_add(out, 0, w[i] * sk.dot(x[i], x[i]))


def test_gradients_in_the_short_path_storage_are_right():
    rng = np.random.default_rng(3)
    x_np, w_np = rng.normal(size=(6, 3)), rng.uniform(0.5, 2.0, 6)
    x = sk.array(x_np, dtype=sk.vec3, device="cpu", requires_grad=True)
    w = sk.array(w_np, dtype=float, device="cpu", requires_grad=True)
    out = sk.zeros(1, dtype=float, device="cpu", requires_grad=True)
    tape = sk.Tape()
    with tape:
        sk.launch(scaled_sum, 6, inputs=[x, w], outputs=[out], device="cpu")
    tape.backward(loss=out)
    np.testing.assert_allclose(x.grad.numpy(), 2.0 * w_np[:, None] * x_np, rtol=1e-5)
    np.testing.assert_allclose(w.grad.numpy(), (x_np ** 2).sum(1), rtol=1e-5)


def test_a_gradient_made_during_a_cpu_graph_capture_is_zeroed_at_each_replay():
    with sk.ScopedCapture("cpu") as cap:
        a = sk.zeros(4, dtype=float, device="cpu", requires_grad=True)
    a.grad.fill_(3.0)
    sk.capture_launch(cap.graph)
    np.testing.assert_array_equal(a.grad.numpy(), 0.0)

"""A backward pass consumes the gradient of what it overwrote (runtime/tape.py, native/array.h): the
adjoint of a store zeroes the element's gradient, a recorded copy zeroes the destination's, and
``retain_grad=True`` keeps them. Checked against analytic gradients: these patterns (a clone then
overwritten, a copy into one column) gave the overwritten values' gradient as well before."""
import numpy as np
import pytest

import simkit as sk


@sk.kernel
def double(x: sk.array(dtype=sk.float64), y: sk.array(dtype=sk.float64)):
    i = sk.tid()
    y[i] = x[i] * 2.0


@sk.kernel
def total(x: sk.array(dtype=sk.float64), loss: sk.array(dtype=sk.float64)):
    i = sk.tid()
    sk.atomic_add(loss, 0, x[i])


@sk.kernel
def total_2d(x: sk.array2d(dtype=sk.float64), loss: sk.array(dtype=sk.float64)):
    i, j = sk.tid()
    sk.atomic_add(loss, 0, x[i, j] * sk.float64(j + 1))


def f64(v, device, **kw):
    return sk.array(np.asarray(v, dtype=np.float64), dtype=sk.float64, device=device, requires_grad=True, **kw)


def test_a_clone_overwritten_by_a_kernel_has_no_gradient(device):
    x = f64(np.arange(1.0, 5.0), device)
    loss = f64([0.0], device)
    with sk.Tape() as tape:
        q = x
        for _ in range(3):
            out = sk.clone(q)                 # (an allocation idiom: the kernel overwrites every value)
            sk.launch(double, 4, inputs=[q], outputs=[out], device=device)
            q = out
        sk.launch(total, 4, inputs=[q], outputs=[loss], device=device)
    tape.backward(loss)
    np.testing.assert_allclose(loss.numpy(), [8.0 * 10.0])
    np.testing.assert_allclose(x.grad.numpy(), np.full(4, 8.0))


def test_a_copy_into_a_column_consumes_that_column(device):
    base = f64(np.ones((3, 4)), device)
    src = f64(np.full(3, 5.0), device)
    loss = f64([0.0], device)
    with sk.Tape() as tape:
        sk.copy(base[:, 2], src)
        sk.launch(total_2d, (3, 4), inputs=[base], outputs=[loss], device=device)
    tape.backward(loss)
    np.testing.assert_allclose(src.grad.numpy(), np.full(3, 3.0))          # column 2 has weight j + 1 = 3
    expected = np.tile([1.0, 2.0, 0.0, 4.0], (3, 1))                        # the overwritten column: 0
    np.testing.assert_allclose(base.grad.numpy(), expected)


def test_a_shifted_copy_within_one_array(device):
    """The gradients overlap: the adjoint reads the destination's before zeroing it (a GPU: into a temporary)."""
    y = f64([1.0, 2.0, 3.0, 4.0], device)
    loss = f64([0.0], device)
    with sk.Tape() as tape:
        sk.copy(y, y, dest_offset=1, src_offset=0, count=3)            # y = [y0, y0, y1, y2]
        sk.launch(total, 4, inputs=[y], outputs=[loss], device=device)
    tape.backward(loss)
    np.testing.assert_allclose(y.numpy(), [1, 1, 2, 3])
    np.testing.assert_allclose(y.grad.numpy(), [2.0, 1.0, 1.0, 0.0])


@pytest.mark.parametrize("retain", [False, True])
def test_retain_grad_keeps_an_intermediate_gradient(retain, device):
    x = f64(np.arange(4.0), device)
    y = f64(np.zeros(4), device, retain_grad=retain)
    loss = f64([0.0], device)
    with sk.Tape() as tape:
        sk.launch(double, 4, inputs=[x], outputs=[y], device=device)
        sk.launch(total, 4, inputs=[y], outputs=[loss], device=device)
    tape.backward(loss)
    np.testing.assert_allclose(x.grad.numpy(), np.full(4, 2.0))
    np.testing.assert_allclose(y.grad.numpy(), np.full(4, 1.0 if retain else 0.0))


@sk.kernel
def twice(x: sk.array(dtype=sk.float64), v: sk.array(dtype=sk.vec3d)):
    i = sk.tid()
    v[i] = sk.vec3d(x[i], x[i], x[i]) * 7.0      # overwritten below, component by component
    v[i][0] = x[i] * 2.0
    v[i][2] = x[i] * 3.0


@sk.kernel
def total_vec(v: sk.array(dtype=sk.vec3d), loss: sk.array(dtype=sk.float64)):
    i = sk.tid()
    sk.atomic_add(loss, 0, v[i][0] + v[i][1] * 10.0 + v[i][2] * 100.0)


def test_stores_in_one_kernel_take_the_gradient_of_the_last(device):
    x = f64(np.arange(1.0, 4.0), device)
    v = sk.zeros(3, dtype=sk.vec3d, device=device, requires_grad=True)
    loss = f64([0.0], device)
    with sk.Tape() as tape:
        sk.launch(twice, 3, inputs=[x], outputs=[v], device=device)
        sk.launch(total_vec, 3, inputs=[v], outputs=[loss], device=device)
    tape.backward(loss)
    np.testing.assert_allclose(v.numpy()[0], [2.0, 7.0, 3.0])
    # d/dx (2x + 10 * 7x + 100 * 3x): the components stored twice count once, with their last value
    np.testing.assert_allclose(x.grad.numpy(), np.full(3, 2.0 + 70.0 + 300.0))
    np.testing.assert_allclose(v.grad.numpy(), np.zeros((3, 3)))


@pytest.mark.parametrize("retain", [False, True])
def test_a_store_overwritten_by_a_recorded_store(retain, device):
    # y = 2 a, then y = 2 b (recorded): a's gradient is zero, b's is 2; with retain_grad the first store's
    # adjoint also sees y's gradient (Warp's documented double counting of retained gradients)
    a, b = f64(np.ones(3), device), f64(np.ones(3), device)
    y = f64(np.zeros(3), device, retain_grad=retain)
    loss = f64([0.0], device)
    with sk.Tape() as tape:
        sk.launch(double, 3, inputs=[a], outputs=[y], device=device)
        sk.launch(double, 3, inputs=[b], outputs=[y], device=device)
        sk.launch(total, 3, inputs=[y], outputs=[loss], device=device)
    tape.backward(loss)
    np.testing.assert_allclose(b.grad.numpy(), np.full(3, 2.0))
    np.testing.assert_allclose(a.grad.numpy(), np.full(3, 2.0 if retain else 0.0))


def test_a_partial_copy_over_a_stored_array(device):
    x = f64(np.ones(4), device)
    s = f64(np.full(2, 5.0), device)
    y = sk.zeros(4, dtype=sk.float64, device=device, requires_grad=True)
    loss = f64([0.0], device)
    with sk.Tape() as tape:
        sk.launch(double, 4, inputs=[x], outputs=[y], device=device)
        sk.copy(y, s, dest_offset=1, src_offset=0, count=2)             # overwrites y[1:3]
        sk.launch(total, 4, inputs=[y], outputs=[loss], device=device)
    tape.backward(loss)
    np.testing.assert_allclose(s.grad.numpy(), [1.0, 1.0])
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 0.0, 0.0, 2.0])


def test_writing_a_gradient_view_leaves_the_data_versions_alone():
    a = f64(np.arange(4.0), "cpu")
    v = a[1:3]
    before = list(a._ver)
    v.grad.zero_()                       # a gradient write is not a write of the data
    assert a._ver == before


def test_copy_adjoints_replay_in_a_cuda_graph(cuda_device):
    """A same-device copy's adjoint (here from a strided column) runs on the GPU without allocating or
    synchronizing: a backward pass holding it is captured, and each replay adds its contribution again."""
    x = f64(np.ones((4, 2)), cuda_device)
    dst, loss = f64(np.zeros(4), cuda_device), f64([0.0], cuda_device)
    tape = sk.Tape()
    with tape:
        sk.copy(dst, x[:, 0])
        sk.launch(total, 4, inputs=[dst], outputs=[loss], device=cuda_device)
    tape.backward(loss)  # (loads the modules outside the capture)
    tape.zero()
    loss.grad.fill_(1.0)
    with sk.ScopedCapture(cuda_device, force_module_load=False) as capture:
        tape.backward()
    for _ in range(2):
        sk.capture_launch(capture.graph)
    np.testing.assert_allclose(x.grad.numpy(), [[2.0, 0.0]] * 4)


@pytest.mark.parametrize("direction", ["to_gpu", "to_cpu"])
def test_copy_adjoints_between_the_cpu_and_a_gpu(cuda_device, direction):
    """The gradient moves back to the source's device; inside a graph capture that cannot happen (it needs a
    synchronization): a RuntimeError, and the capture is ended."""
    src_dev, dst_dev = ("cpu", cuda_device) if direction == "to_gpu" else (cuda_device, "cpu")
    src = f64([1.0, 2.0, 3.0, 4.0], src_dev)
    dst = f64(np.zeros(4), dst_dev, retain_grad=True)
    tape = sk.Tape()
    with tape:
        sk.copy(dst, src, src_offset=1, count=2)
    dst.grad.assign(np.array([5.0, 7.0, 9.0, 11.0]))
    tape.backward()
    np.testing.assert_allclose(src.grad.numpy(), [0.0, 5.0, 7.0, 0.0])
    np.testing.assert_allclose(dst.grad.numpy(), [5.0, 7.0, 9.0, 11.0])  # (kept: retain_grad, also for the view)
    with pytest.raises(RuntimeError, match=r"Cannot run CPU/CUDA wp.copy\(\) adjoints during CUDA graph capture"):
        with sk.ScopedCapture(cuda_device, force_module_load=False):
            tape.backward()
    assert not sk.get_device(cuda_device).is_capturing

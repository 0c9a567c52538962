"""Kernels that read an array and write it in the same launch, on a Tape.

The adjoint kernel replays the forward without its stores, so a load must see in the replay what it
saw in the launch: loads before every write read the tape's copy of the array from before the launch,
loads after every write read what the launch left, and any other order is refused when recorded.
Gradients are checked analytically and against central finite differences (float64)."""
import numpy as np
import pytest

import simkit as sk

f64 = sk.float64


@sk.kernel
def scale_by(a: sk.array(dtype=f64), x: sk.array(dtype=f64)):
    i = sk.tid()
    a[i] = sk.sin(a[i]) * x[i]


@sk.kernel
def add_square(a: sk.array(dtype=f64)):
    i = sk.tid()
    a[i] += a[i] * a[i]  # an atomic add of a value read from the same element


@sk.kernel
def store_then_read(x: sk.array(dtype=f64), a: sk.array(dtype=f64), out: sk.array(dtype=f64)):
    i = sk.tid()
    a[i] = x[i] * 2.0
    out[i] = a[i] * a[i]


@sk.kernel
def square_positive(a: sk.array(dtype=f64)):
    i = sk.tid()
    v = a[i]
    if v > 0.0:
        a[i] = v * v


@sk.kernel
def read_write_read(a: sk.array(dtype=f64), out: sk.array(dtype=f64)):
    i = sk.tid()
    y = a[i]
    a[i] = y * 2.0
    out[i] = a[i]


@sk.kernel
def loop_in_place(a: sk.array(dtype=f64), x: sk.array(dtype=f64), n: int):
    i = sk.tid()
    for _k in range(n):
        a[i] = a[i] * x[i]


@sk.func
def triple(a: sk.array(dtype=f64), i: int):
    a[i] = a[i] * a[i] * a[i]


@sk.kernel
def cube_through_func(a: sk.array(dtype=f64)):
    triple(a, sk.tid())


@sk.struct
class Holder:
    a: sk.array(dtype=f64)
    k: f64


@sk.kernel
def struct_in_place(h: Holder):
    i = sk.tid()
    h.a[i] = h.k * h.a[i] * h.a[i]


@sk.kernel
def sum_squares(a: sk.array(dtype=f64), loss: sk.array(dtype=f64)):
    i = sk.tid()
    sk.atomic_add(loss, 0, a[i] * a[i])


def arr(v, device, requires_grad=True):
    return sk.array(np.asarray(v, dtype=np.float64), dtype=f64, device=device, requires_grad=requires_grad)


A0 = np.array([0.3, -1.2, 2.0, 0.7])
X0 = np.array([1.5, 0.5, -2.0, 3.0])


def _loss_of_scale_twice(a0, x0, device):
    """loss = sum(a**2) after two recorded in-place launches; returns (loss, a.grad, x.grad)."""
    a, x, loss = arr(a0, device), arr(x0, device), arr([0.0], device)
    tape = sk.Tape()
    with tape:
        sk.launch(scale_by, len(a0), inputs=[a, x], device=device)
        sk.launch(scale_by, len(a0), inputs=[a, x], device=device)
        sk.launch(sum_squares, len(a0), inputs=[a, loss], device=device)
    tape.backward(loss=loss)
    return loss.numpy()[0], a.grad.numpy().copy(), x.grad.numpy().copy()


def test_read_then_write_matches_finite_differences(device):
    loss, ga, gx = _loss_of_scale_twice(A0, X0, device)
    a1 = np.sin(A0) * X0
    a2 = np.sin(a1) * X0
    np.testing.assert_allclose(loss, np.sum(a2 ** 2), rtol=1e-12)
    np.testing.assert_allclose(ga, 2 * a2 * np.cos(a1) * X0 * np.cos(A0) * X0, rtol=1e-10)
    eps = 1e-6
    for k in range(len(A0)):
        e = np.zeros_like(A0)
        e[k] = eps
        fd_a = (_loss_of_scale_twice(A0 + e, X0, "cpu")[0] - _loss_of_scale_twice(A0 - e, X0, "cpu")[0]) / (2 * eps)
        fd_x = (_loss_of_scale_twice(A0, X0 + e, "cpu")[0] - _loss_of_scale_twice(A0, X0 - e, "cpu")[0]) / (2 * eps)
        assert ga[k] == pytest.approx(fd_a, rel=1e-6, abs=1e-8)
        assert gx[k] == pytest.approx(fd_x, rel=1e-6, abs=1e-8)


def test_atomic_add_of_a_value_read_from_the_same_array(device):
    # the replay used to read the updated values: a gradient of 1 + 2 * a1 instead of 1 + 2 * a0
    a = arr(A0, device)
    tape = sk.Tape()
    with tape:
        sk.launch(add_square, len(A0), inputs=[a], device=device)
    tape.backward(grads={a: np.ones(len(A0))})
    np.testing.assert_allclose(a.numpy(), A0 + A0 ** 2)
    np.testing.assert_allclose(a.grad.numpy(), 1 + 2 * A0)


def test_store_then_read_reads_what_the_launch_wrote(device):
    x, a, out = arr(X0, device), arr(np.zeros(4), device), arr(np.zeros(4), device)
    tape = sk.Tape()
    with tape:
        sk.launch(store_then_read, 4, inputs=[x, a, out], device=device)
    tape.backward(grads={out: np.ones(4)})
    np.testing.assert_allclose(out.numpy(), 4 * X0 ** 2)
    np.testing.assert_allclose(x.grad.numpy(), 8 * X0)  # d(4 x^2)/dx, a's own gradient zero
    np.testing.assert_allclose(a.grad.numpy(), 0.0)     # consumed: a's earlier values had no influence


def test_conditional_write_keeps_the_gradient_of_elements_it_skipped(device):
    a = arr(A0, device)
    tape = sk.Tape()
    with tape:
        sk.launch(square_positive, 4, inputs=[a], device=device)
    tape.backward(grads={a: np.ones(4)})
    np.testing.assert_allclose(a.grad.numpy(), np.where(A0 > 0, 2 * A0, 1.0))


def test_write_through_a_func_and_a_struct_field(device):
    a = arr(A0, device)
    tape = sk.Tape()
    with tape:
        sk.launch(cube_through_func, 4, inputs=[a], device=device)
    tape.backward(grads={a: np.ones(4)})
    np.testing.assert_allclose(a.grad.numpy(), 3 * A0 ** 2)

    h = Holder()
    h.a, h.k = arr(A0, device), 1.5
    tape = sk.Tape()
    with tape:
        sk.launch(struct_in_place, 4, inputs=[h], device=device)
    tape.backward(grads={h.a: np.ones(4)})
    np.testing.assert_allclose(h.a.numpy(), 1.5 * A0 ** 2)
    np.testing.assert_allclose(h.a.grad.numpy(), 3.0 * A0)


def test_strided_view_written_in_place(device):
    m = arr(np.arange(12.0).reshape(4, 3) * 0.1, device)
    col = m[:, 1]  # strided: every third value
    assert not col.is_contiguous
    tape = sk.Tape()
    with tape:
        sk.launch(add_square, 4, inputs=[col], device=device)
    m.grad.fill_(1.0)
    tape.backward()
    c0 = np.arange(12.0).reshape(4, 3)[:, 1] * 0.1
    expect = np.ones((4, 3))
    expect[:, 1] = 1 + 2 * c0
    np.testing.assert_allclose(m.grad.numpy(), expect)  # (on a GPU, the copy is a strided view of a buffer)


def test_backward_twice_reads_the_same_copy(device):
    a = arr(A0, device)
    tape = sk.Tape()
    with tape:
        sk.launch(add_square, 4, inputs=[a], device=device)
    for _ in range(2):
        tape.backward(grads={a: np.ones(4)})
        np.testing.assert_allclose(a.grad.numpy(), 1 + 2 * A0)
        tape.zero()


@pytest.mark.parametrize("kernel", ["read_write_read", "loop"])
def test_reads_on_both_sides_of_a_write_are_refused_before_the_launch(device, kernel):
    a, x, out = arr(A0, device), arr(X0, device), arr(np.zeros(4), device)
    with pytest.raises(sk.TapeError, match="reads array 'a' both before and after writing it") as e:
        with sk.Tape():
            if kernel == "loop":
                sk.launch(loop_in_place, 4, inputs=[a, x, 3], device=device)
            else:
                sk.launch(read_write_read, 4, inputs=[a, out], device=device)
    assert "test_tape_inplace.py" in str(e.value)
    np.testing.assert_array_equal(a.numpy(), A0)  # refused before it ran
    sk.launch(read_write_read, 4, inputs=[a, out], device=device, record_tape=False)  # fine off the tape
    np.testing.assert_allclose(out.numpy(), 2 * A0)


def test_no_copy_without_gradients(device):
    a = arr(A0, device, requires_grad=False)
    tape = sk.Tape()
    with tape:
        sk.launch(add_square, 4, inputs=[a], device=device)
    assert tape.ops[0].before == {}


# The adjoint's forward replay writes no array and prints nothing, also inside @funcs: it calls a
# variant of a func with side effects that has none (codegen.gen_func(replay=True)).

@sk.func
def put_double(out: sk.array(dtype=f64), i: int, v: f64) -> f64:
    out[i] = 2.0 * v
    print(v)
    sk.printf("%g\n", v)
    return v * v


@sk.kernel
def write_through_func(x: sk.array(dtype=f64), out: sk.array(dtype=f64), sq: sk.array(dtype=f64)):
    i = sk.tid()
    sq[i] = put_double(out, i, x[i]) * 3.0


@sk.kernel
def overwrite(out: sk.array(dtype=f64)):
    out[sk.tid()] = 7.0


def test_replay_of_a_func_writes_and_prints_nothing(device, capfd):
    x, out, sq = arr(X0, device), arr(np.zeros(4), device), arr(np.zeros(4), device)
    tape = sk.Tape()
    with tape:
        sk.launch(write_through_func, 4, inputs=[x, out, sq], device=device)
        sk.launch(overwrite, 4, inputs=[out], device=device)
    sk.synchronize()
    printed = capfd.readouterr().out
    assert len(printed.split()) == 8  # print and printf, once per thread
    tape.backward(grads={sq: np.ones(4), out: np.ones(4)})
    sk.synchronize()
    assert capfd.readouterr().out == ""                   # the replay printed nothing
    np.testing.assert_array_equal(out.numpy(), 7.0)       # ... and did not write out again
    np.testing.assert_allclose(sq.numpy(), 3 * X0 ** 2)
    np.testing.assert_allclose(x.grad.numpy(), 6 * X0)    # out's gradient was consumed by the overwrite

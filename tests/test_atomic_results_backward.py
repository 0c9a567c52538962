"""The backward pass of a kernel that uses the value an atomic returned (a slot from a counter).

An adjoint replays its kernel without the atomics (they write memory), so the old value an atomic returned
is not there: a gradient that depends on it (a store at that slot, a value computed from it) would go to the
wrong elements. Such a backward pass is refused, naming the line; one where the slot only places integers
(a hash grid's cell lists) runs and its gradients are exact."""
import numpy as np
import pytest

import simkit as sk
from simkit.runtime.tape import TapeError


@sk.kernel
def compact(x: sk.array(dtype=float), counter: sk.array(dtype=int), out: sk.array(dtype=float)):
    i = sk.tid()
    if x[i] > 0.0:
        s = sk.atomic_add(counter, 0, 1)
        out[s] = x[i] * 2.0


@sk.kernel
def scaled_by_slot(x: sk.array(dtype=float), counter: sk.array(dtype=int), out: sk.array(dtype=float)):
    i = sk.tid()
    s = sk.atomic_add(counter, 0, 1)
    out[i] = x[i] * float(s)


@sk.kernel
def bin_and_square(x: sk.array(dtype=float), counts: sk.array(dtype=int), ids: sk.array(dtype=int, ndim=2),
                   y: sk.array(dtype=float)):
    i = sk.tid()
    c = int(x[i] * 4.0)
    s = sk.atomic_add(counts, c, 1)
    if s < ids.shape[1]:
        ids[c, s] = i
    y[i] = x[i] * x[i]


@sk.kernel
def weighted_sum(y: sk.array(dtype=float), w: sk.array(dtype=float), loss: sk.array(dtype=float)):
    i = sk.tid()
    sk.atomic_add(loss, 0, y[i] * w[i])


def _record(kernel, x_np, device, extra):
    x = sk.array(x_np, device=device, requires_grad=True)
    out = sk.zeros(len(x_np), device=device, requires_grad=True)
    loss = sk.zeros(1, device=device, requires_grad=True)
    w = sk.array(np.arange(1, len(x_np) + 1, dtype=np.float32), device=device)
    tape = sk.Tape()
    with tape:
        sk.launch(kernel, len(x_np), inputs=[x, *extra, out], device=device)
        sk.launch(weighted_sum, len(x_np), inputs=[out, w, loss], device=device)
    return tape, loss, x


@pytest.mark.parametrize("kernel,line", [(compact, "out[s] = x[i] * 2.0"), (scaled_by_slot, "x[i] * float(s)")])
def test_a_gradient_through_a_slot_is_refused_naming_the_line(device, kernel, line):
    x_np = np.array([1, -1, 2, 3, -2, 4, 5, -3], np.float32)
    tape, loss, _x = _record(kernel, x_np, device, [sk.zeros(1, dtype=int, device=device)])
    with pytest.raises(TapeError, match=rf"test_atomic_results_backward.py:\d+: the gradient of kernel "
                                        rf"'{kernel.key}' depends here on the value an atomic returned(.|\n)*"
                                        + line.replace("[", r"\[").replace("*", r"\*").replace("(", r"\(")
                                        .replace(")", r"\)")):
        tape.backward(loss)


def test_an_explicit_adjoint_launch_is_refused_too(device):
    x = sk.array(np.ones(4, np.float32), device=device, requires_grad=True)
    out = sk.zeros(4, device=device, requires_grad=True)
    with pytest.raises(TapeError, match="kernel 'compact'"):
        sk.launch(compact, 4, inputs=[x, sk.zeros(1, dtype=int, device=device), out], device=device, adjoint=True)


def test_without_gradients_the_kernel_runs_as_before(device):
    x = sk.array(np.array([1, -1, 2, 3], np.float32), device=device)
    counter, out = sk.zeros(1, dtype=int, device=device), sk.zeros(4, device=device)
    sk.launch(compact, 4, inputs=[x, counter, out], device=device)
    assert counter.numpy()[0] == 3 and sorted(out.numpy()[:3]) == [2.0, 4.0, 6.0]


def test_slots_that_place_only_integers_keep_exact_gradients(device):
    x_np = np.array([0.1, 0.6, 0.35, 0.9, 0.12, 0.7], np.float32)
    counts = sk.zeros(4, dtype=int, device=device)
    ids = sk.full((4, 8), -1, dtype=int, device=device)
    tape, loss, x = _record(bin_and_square, x_np, device, [counts, ids])
    tape.backward(loss)
    w = np.arange(1, 7, dtype=np.float32)
    np.testing.assert_allclose(x.grad.numpy(), 2 * x_np * w, rtol=1e-6)  # d/dx sum(w x^2)
    assert sorted(ids.numpy()[0][ids.numpy()[0] >= 0]) == [0, 4]  # (the cells hold their points)

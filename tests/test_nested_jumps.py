"""break/continue in loops nested under an if/else, or under a loop without jumps of its own, are lowered to
flags like any other (frontend/jumps.py): the adjoint replays each iteration of such a loop once, whole.

Found by the differential fuzzer (tools/fuzz_kernels.py): such a loop kept its C++ ``break``, which in the
adjoint's replay of an iteration left the reverse loop instead, skipping the reverse statements of that
iteration and of every earlier one: gradients silently wrong (0, or the input's own adjoint passed through)
whenever the loop broke. Results and gradients are checked against plain Python and central differences
(float64), for threads that break at once, later and never.
"""
import numpy as np
import pytest

import simkit as sk
from codegen_helpers import adjoints

f64 = sk.float64


@sk.kernel
def break_in_else(x: sk.array(dtype=f64), v: sk.array(dtype=sk.vec3d), start: sk.array(dtype=int),
                  stop_at: sk.array(dtype=f64), out: sk.array(dtype=f64)):
    i = sk.tid()
    a = x[i]
    u = v[i]
    if a > f64(5.0):
        u = u * f64(2.0)
    else:
        for j in range(start[i], 3):
            u[2] = sk.tanh(a) + u[2] * f64(0.5)
            if f64(j) >= stop_at[i]:
                break
            u = sk.vec3d(sk.sin(u[0]), sk.sin(u[1]), sk.sin(u[2]))
    out[i] = u[2] + u[0] * a


@sk.kernel
def break_under_plain_loop(x: sk.array(dtype=f64), n: int, stop_at: sk.array(dtype=f64),
                           out: sk.array(dtype=f64)):
    i = sk.tid()
    a = x[i]
    s = f64(0.0)
    for m in range(n):  # no jump of its own
        if a > f64(-5.0):
            for j in range(n):
                s = s + sk.sin(a * s + f64(j + 1))
                if f64(m + j) >= stop_at[i]:
                    break
    out[i] = s


@sk.kernel
def continue_in_if_in_while(x: sk.array(dtype=f64), n: int, skip: sk.array(dtype=int), out: sk.array(dtype=f64)):
    i = sk.tid()
    a = x[i]
    s = a
    k = int(0)
    while k < n:
        k = k + 1
        if k > 0:
            for j in range(n):
                if j == skip[i]:
                    continue
                s = s * sk.cos(a + f64(j))
    out[i] = s


def py_break_in_else(a, u, start, stop_at):
    u = np.array(u, dtype=float)
    if a > 5.0:
        u = u * 2.0
    else:
        for j in range(start, 3):
            u[2] = np.tanh(a) + u[2] * 0.5
            if j >= stop_at:
                break
            u = np.sin(u)
    return u[2] + u[0] * a


def py_break_under_plain_loop(a, n, stop_at):
    s = 0.0
    for m in range(n):
        if a > -5.0:
            for j in range(n):
                s = s + np.sin(a * s + j + 1)
                if m + j >= stop_at:
                    break
    return s


def py_continue_in_if_in_while(a, n, skip):
    s = a
    for _ in range(n):
        for j in range(n):
            if j == skip:
                continue
            s = s * np.cos(a + j)
    return s


def _grad(kernel, arrays, n, device, out_index):
    tape = sk.Tape()
    with tape:
        sk.launch(kernel, dim=n, inputs=arrays, device=device)
    tape.backward(grads={arrays[out_index]: sk.ones(n, dtype=f64, device=device)})
    return arrays[0].grad.numpy()


def test_break_in_a_loop_in_an_else_branch(device):
    rng = np.random.default_rng(1)
    n = 6
    x = rng.uniform(-1, 1, n)
    v = rng.uniform(-1, 1, (n, 3))
    start = np.array([0, 1, 2, 0, 1, 2])
    stop_at = np.array([0.0, 1.0, 9.0, 2.0, 9.0, 2.0])  # breaks at once, later, never

    def run(xs, grad=False):
        arrays = [sk.array(xs, dtype=f64, device=device, requires_grad=True),
                  sk.array(v, dtype=sk.vec3d, device=device, requires_grad=True),
                  sk.array(start, dtype=int, device=device), sk.array(stop_at, dtype=f64, device=device),
                  sk.zeros(n, dtype=f64, device=device, requires_grad=True)]
        if grad:
            return _grad(break_in_else, arrays, n, device, 4), arrays[1].grad.numpy()
        sk.launch(break_in_else, dim=n, inputs=arrays, device=device)
        return arrays[4].numpy()

    expected = [py_break_in_else(x[t], v[t], start[t], stop_at[t]) for t in range(n)]
    np.testing.assert_allclose(run(x), expected, rtol=1e-12)
    gx, gv = run(x, grad=True)
    h = 1e-6
    np.testing.assert_allclose(gx, (run(x + h) - run(x - h)) / (2 * h), rtol=1e-6, atol=1e-8)
    # the vector's third component is overwritten by the loop's first iteration: only its first counts
    fd_v = np.zeros_like(v)
    for c in range(3):
        dv = np.zeros_like(v)
        dv[:, c] = h
        fp = [py_break_in_else(x[t], v[t] + dv[t], start[t], stop_at[t]) for t in range(n)]
        fm = [py_break_in_else(x[t], v[t] - dv[t], start[t], stop_at[t]) for t in range(n)]
        fd_v[:, c] = (np.array(fp) - np.array(fm)) / (2 * h)
    np.testing.assert_allclose(gv, fd_v, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("kernel, reference, extra, name", [
    (break_under_plain_loop, py_break_under_plain_loop, np.array([0.0, 1.0, 2.0, 4.0, 9.0]), "stop_at"),
    (continue_in_if_in_while, py_continue_in_if_in_while, np.array([0, 1, 2, 5, 3]), "skip"),
])
def test_jumps_of_loops_under_plain_loops(device, kernel, reference, extra, name):
    n, loops = extra.size, 3
    x = np.random.default_rng(2).uniform(-1, 1, n)
    dtype = f64 if name == "stop_at" else int

    def run(xs, grad=False):
        arrays = [sk.array(xs, dtype=f64, device=device, requires_grad=True), loops,
                  sk.array(extra, dtype=dtype, device=device), sk.zeros(n, dtype=f64, device=device,
                                                                       requires_grad=True)]
        if grad:
            return _grad(kernel, arrays, n, device, 3)
        sk.launch(kernel, dim=n, inputs=arrays, device=device)
        return arrays[3].numpy()

    np.testing.assert_allclose(run(x), [reference(x[t], loops, extra[t]) for t in range(n)], rtol=1e-12)
    h = 1e-6
    np.testing.assert_allclose(run(x, grad=True), (run(x + h) - run(x - h)) / (2 * h), rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("kernel", [break_in_else, break_under_plain_loop, continue_in_if_in_while])
def test_no_cxx_jump_is_left_in_the_reverse_pass(kernel):
    reverse = adjoints(kernel)[kernel.key].split("// reverse", 1)[1]  # (a while loop's record exits by break)
    assert "break;" not in reverse and "continue;" not in reverse

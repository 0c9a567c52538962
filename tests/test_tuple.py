"""Tuples in kernels (as Warp 1.19): tuple locals, ``len``, constant indexing, unpacking, ``tuple[...]``
@func parameters (fixed, ``tuple[T, ...]``, ``Any``), tuples passed on and returned, carried by loops and
merged by ``if``; gradients through them against central finite differences in float64; errors."""
import inspect
from typing import Any

import numpy as np
import pytest

import simkit as sk

f64 = sk.float64


# ---------------------------------------------------------------------------- values


@sk.func
def scaled_length(values: tuple[sk.vec3, float]) -> float:
    return sk.length(values[0]) * values[1]


@sk.func
def weighted_sum(values: tuple[float, float, float]):
    out = float(0.0)
    for i in range(len(values)):
        out += values[i] * float(i + 1)
    return out


@sk.func
def total_any(values: Any):
    out = sk.int32(0)
    for i in range(sk.static(len(values))):
        out += values[i]
    return out


@sk.func
def total_ints(values: tuple[int, ...]):
    out = sk.int32(0)
    for i in range(sk.static(len(values))):
        out += values[i]
    return out


@sk.func
def swap(values: tuple[int, float]) -> tuple[float, int]:
    return (values[1], values[0])


@sk.func
def pass_on(values: tuple[sk.vec3, float]):
    return scaled_length(values) + float(len(values))


@sk.kernel
def k_values(x: sk.array(dtype=float), out: sk.array(dtype=float), iout: sk.array(dtype=int)):
    i = sk.tid()
    t = (sk.vec3(1.0, 2.0, x[i]), x[i] * 2.0)
    out[i * 6 + 0] = scaled_length(t)
    out[i * 6 + 1] = scaled_length((t[0], t[1]))
    out[i * 6 + 2] = weighted_sum((x[i], 2.0, 3))          # literals take the parameter's types
    out[i * 6 + 3] = pass_on(t)
    a, b = swap((i, x[i]))
    out[i * 6 + 4] = a
    out[i * 6 + 5] = float(len(t) + sk.static(len(t)))
    iout[i * 5 + 0] = total_any((i,))
    iout[i * 5 + 1] = total_any((i, 2, 3))
    iout[i * 5 + 2] = total_ints((4, 5, 6, i))
    iout[i * 5 + 3] = b
    n0, n1, n2 = (i, i * 2, i * 3)
    iout[i * 5 + 4] = n0 + n1 + n2


def test_tuple_values(device):
    xs = np.array([0.5, -1.5, 3.0], dtype=np.float32)
    x = sk.array(xs, dtype=float, device=device)
    out = sk.zeros(6 * len(xs), dtype=float, device=device)
    iout = sk.zeros(5 * len(xs), dtype=int, device=device)
    sk.launch(k_values, len(xs), inputs=[x, out, iout], device=device)
    o, io = out.numpy().reshape(-1, 6), iout.numpy().reshape(-1, 5)
    length = np.sqrt(1.0 + 4.0 + xs.astype(np.float64) ** 2) * 2.0 * xs
    np.testing.assert_allclose(o[:, 0], length, rtol=1e-6)
    np.testing.assert_allclose(o[:, 1], length, rtol=1e-6)
    np.testing.assert_allclose(o[:, 2], xs + 4.0 + 9.0, rtol=1e-6)
    np.testing.assert_allclose(o[:, 3], length + 2.0, rtol=1e-6)
    np.testing.assert_allclose(o[:, 4], xs)
    np.testing.assert_array_equal(o[:, 5], 4.0)
    ids = np.arange(len(xs))
    np.testing.assert_array_equal(io[:, 0], ids)
    np.testing.assert_array_equal(io[:, 1], ids + 5)
    np.testing.assert_array_equal(io[:, 2], ids + 15)
    np.testing.assert_array_equal(io[:, 3], ids)
    np.testing.assert_array_equal(io[:, 4], 6 * ids)


@sk.kernel
def k_control_flow(n: int, x: sk.array(dtype=float), out: sk.array(dtype=float)):
    i = sk.tid()
    t = (x[i], 1.0)
    for _ in range(n):                   # a dynamic loop carries both values
        t = (t[0] * 2.0, t[1] + t[0])
    if x[i] > 0.0:                       # both branches assign the tuple: merged per value
        u = (t[1], 10.0)
    else:
        u = (t[0], 20.0)
    out[i * 2 + 0] = u[0]
    out[i * 2 + 1] = u[1]


def test_tuple_in_loops_and_branches(device):
    xs = np.array([0.5, -1.5, 3.0], dtype=np.float32)
    n = 5
    x = sk.array(xs, dtype=float, device=device)
    out = sk.zeros(2 * len(xs), dtype=float, device=device)
    sk.launch(k_control_flow, len(xs), inputs=[n, x, out], device=device)
    want = []
    for v in xs.astype(np.float64):
        a, b = v, 1.0
        for _ in range(n):
            a, b = a * 2.0, b + a
        want.append((b, 10.0) if v > 0 else (a, 20.0))
    np.testing.assert_allclose(out.numpy().reshape(-1, 2), want, rtol=1e-6)


@sk.func
def nested(v: tuple[tuple[int, float], float], scale: tuple[float, float] = (2, 3.0)):
    return float(v[0][0]) + v[0][1] * scale[0] + v[1] * scale[1]


@sk.func
def write_square(dst: tuple[sk.array(dtype=float), int], value: float):
    a, i = dst
    a[i] = value * value


@sk.func
def identity(v: tuple[float, sk.vec3]):
    return v


@sk.kernel
def k_nested(x: sk.array(dtype=float), y: sk.array(dtype=float), z: sk.array(dtype=float)):
    i = sk.tid()
    n = nested(((1, x[i]), 0.5))                         # a tuple in a tuple; the default tuple
    y[i] = n
    write_square((z, i), x[i] * n)                       # an array in a tuple, written by the func
    a, b = identity((x[i], sk.vec3(1.0)))
    y[i + 2] = a + b[0]


def test_nested_tuples_defaults_and_arrays(device):
    xs = np.array([1.0, 2.0])
    x = sk.array(xs, dtype=float, device=device, requires_grad=True)
    y = sk.zeros(4, dtype=float, device=device, requires_grad=True)
    z = sk.zeros(2, dtype=float, device=device, requires_grad=True)
    tape = sk.Tape()
    with tape:
        sk.launch(k_nested, 2, inputs=[x, y, z], device=device)
    n = 1.0 + 2.0 * xs + 1.5
    np.testing.assert_allclose(y.numpy(), np.concatenate([n, xs + 1.0]), rtol=1e-6)
    np.testing.assert_allclose(z.numpy(), (xs * n) ** 2, rtol=1e-6)
    tape.backward(grads={z: np.ones(2, dtype=np.float32)})
    np.testing.assert_allclose(x.grad.numpy(), 2 * xs * n * (n + 2.0 * xs), rtol=1e-6)


@sk.func
def sum_long(values: Any):
    out = sk.int32(0)
    for i in range(len(values)):       # more values than max_unroll: unrolled since it indexes the tuple
        out += values[i] * i
    return out


@sk.kernel
def k_long(out: sk.array(dtype=int)):
    i = sk.tid()
    out[i] = sum_long((i, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19))


def test_loop_over_a_long_tuple(device):
    out = sk.zeros(2, dtype=int, device=device)
    sk.launch(k_long, 2, inputs=[out], device=device)
    np.testing.assert_array_equal(out.numpy(), [sum(k * k for k in range(1, 20))] * 2)


# ---------------------------------------------------------------------------- gradients


@sk.func
def energy(state: tuple[f64, sk.vec3d], k: f64) -> tuple[f64, sk.vec3d]:
    s, v = state
    return (k * s * s * sk.dot(v, v), v * s)


@sk.kernel
def k_grad(s: sk.array(dtype=f64), v: sk.array(dtype=sk.vec3d), n: int, out: sk.array(dtype=f64)):
    i = sk.tid()
    state = (s[i], v[i])
    e = f64(0.0)
    for _ in range(n):                   # the tuple is carried through a dynamic loop
        e_k, w = energy(state, f64(0.5))
        e = e + e_k
        state = (sk.sin(state[0]), w)
    out[i] = e + sk.length(state[1])


def _loss(svals, vvals, n):
    out = sk.zeros(len(svals), dtype=f64)
    sk.launch(k_grad, len(svals), inputs=[sk.array(svals, dtype=f64), sk.array(vvals, dtype=sk.vec3d), n, out])
    return out.numpy().sum()


def test_tuple_gradients_match_finite_differences(device):
    rng = np.random.default_rng(3)
    svals = rng.uniform(0.3, 1.2, 4)
    vvals = rng.uniform(-1.0, 1.0, (4, 3))
    n = 3
    s = sk.array(svals, dtype=f64, device=device, requires_grad=True)
    v = sk.array(vvals, dtype=sk.vec3d, device=device, requires_grad=True)
    out = sk.zeros(4, dtype=f64, device=device, requires_grad=True)
    tape = sk.Tape()
    with tape:
        sk.launch(k_grad, 4, inputs=[s, v, n, out], device=device)
    tape.backward(grads={out: np.ones(4)})
    h = 1e-6
    fd_s = np.array([(_loss(svals + h * e, vvals, n) - _loss(svals - h * e, vvals, n)) / (2 * h)
                     for e in np.eye(4)])
    fd_v = np.zeros((4, 3))
    for r in range(4):
        for c in range(3):
            d = np.zeros((4, 3))
            d[r, c] = h
            fd_v[r, c] = (_loss(svals, vvals + d, n) - _loss(svals, vvals - d, n)) / (2 * h)
    np.testing.assert_allclose(s.grad.numpy(), fd_s, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(v.grad.numpy(), fd_v, rtol=1e-6, atol=1e-8)


# ---------------------------------------------------------------------------- errors


def _line_of(fn, text):
    lines, first = inspect.getsourcelines(fn)
    return first + next(k for k, line in enumerate(lines) if text in line)


def test_tuple_kernel_parameter_is_refused():
    with pytest.raises(sk.CompileError, match=r"parameter 'pair': kernel parameters cannot be tuples") as e:
        @sk.kernel
        def k_bad(pair: tuple[int, int]):
            pass
    assert "test_tuple.py" in str(e.value)


def test_tuple_index_must_be_constant(device):
    @sk.kernel
    def k_dynamic_index(j: int, out: sk.array(dtype=int)):
        t = (1, 2, 3)
        out[0] = t[j]

    with pytest.raises(sk.CompileError, match="tuples can only be indexed with constants") as e:
        sk.launch(k_dynamic_index, 1, inputs=[0, sk.zeros(1, dtype=int, device=device)], device=device)
    assert f"test_tuple.py:{_line_of(k_dynamic_index.func, 'out[0] = t[j]')}" in str(e.value)


def test_tuple_index_out_of_range(device):
    @sk.kernel
    def k_past_end(out: sk.array(dtype=int)):
        t = (1, 2, 3)
        out[0] = t[3]

    with pytest.raises(sk.CompileError, match="tuple index 3 is out of range for a tuple of 3 values"):
        sk.launch(k_past_end, 1, inputs=[sk.zeros(1, dtype=int, device=device)], device=device)


@sk.func
def takes_pair(values: tuple[int, int]):
    return values[0] + values[1]


def test_tuple_of_wrong_types_names_the_call(device):
    @sk.kernel
    def k_wrong(out: sk.array(dtype=int)):
        out[0] = takes_pair((1, 2, 3))

    with pytest.raises(sk.CompileError, match=r"takes_pair.*tuple\[int32, int32\]") as e:
        sk.launch(k_wrong, 1, inputs=[sk.zeros(1, dtype=int, device=device)], device=device)
    assert f"test_tuple.py:{_line_of(k_wrong.func, 'takes_pair((1, 2, 3))')}" in str(e.value)


def test_bad_tuple_annotation_names_the_parameter():
    with pytest.raises(sk.CompileError, match=r"parameter 'values':.*'\.\.\.' may only follow"):
        @sk.func
        def bad(values: tuple[int, ..., int]):
            return 0


def test_unpacking_a_tuple_of_the_wrong_length(device):
    @sk.kernel
    def k_unpack(out: sk.array(dtype=int)):
        a, b = (1, 2, 3)
        out[0] = a + b

    with pytest.raises(sk.CompileError, match=r"cannot unpack 3 value\(s\) into 2 names"):
        sk.launch(k_unpack, 1, inputs=[sk.zeros(1, dtype=int, device=device)], device=device)


def test_tuple_changing_length_in_a_loop(device):
    @sk.kernel
    def k_grow(n: int, out: sk.array(dtype=int)):
        t = (1, 2)
        for _ in range(n):
            t = (t[0], t[1], 3)
        out[0] = t[0]

    with pytest.raises(sk.CompileError, match="'t' must stay a tuple of 2 values inside the loop"):
        sk.launch(k_grow, 1, inputs=[2, sk.zeros(1, dtype=int, device=device)], device=device)


def test_tuple_of_another_length_in_a_branch(device):
    @sk.kernel
    def k_merge(j: int, out: sk.array(dtype=int)):
        t = (1, 2)
        if j > 0:
            t = (3, 4, 5)
        out[0] = t[0]

    with pytest.raises(sk.CompileError, match="'t' is a tuple of 3 values in one branch and of 2 in the other"):
        sk.launch(k_merge, 1, inputs=[0, sk.zeros(1, dtype=int, device=device)], device=device)


@sk.func
def first(v: tuple[float, float]):
    return v[0]


@sk.func_grad(first)
def adj_first(v: tuple[float, float], adj_ret: float):
    pass


def test_custom_adjoint_of_a_tuple_parameter_is_refused(device):
    @sk.kernel
    def k_first(out: sk.array(dtype=float)):
        out[0] = first((1.0, 2.0))

    with pytest.raises(sk.CompileError, match="its parameter 'v' cannot be a tuple"):
        sk.launch(k_first, 1, inputs=[sk.zeros(1, device=device)], device=device)

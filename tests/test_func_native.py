"""@func_native: @funcs whose bodies are C++ snippets (Warp's func_native), with their adjoint and replay
snippets; results against numpy, gradients against central finite differences (float64)."""
import typing

import numpy as np
import pytest

import simkit as sk

f64 = sk.float64


@sk.func_native("out[tid] = a * x[tid] + y[tid];",
                adj_snippet="adj_a += x[tid] * adj_out[tid];\n"
                            "adj_x[tid] += a * adj_out[tid];\n"
                            "adj_y[tid] += adj_out[tid];")
def saxpy(a: f64, x: sk.array(dtype=f64), y: sk.array(dtype=f64), out: sk.array(dtype=f64), tid: int):
    """a * x + y, written in C++."""
    ...


@sk.func_native("double c = x * x * x;\nreturn c;", adj_snippet="adj_x += 3.0 * x * x * adj_ret;")
def cube(x: f64) -> f64: ...


@sk.func_native("return wp::vec_t<3, wp::float64>{x, 2.0 * x, x * x};")
def spread(x: f64) -> sk.vec3d: ...  # (no adjoint snippet: it passes no gradient)


@sk.kernel
def use_snippets(a: f64, x: sk.array(dtype=f64), y: sk.array(dtype=f64), out: sk.array(dtype=f64),
                 cubes: sk.array(dtype=f64), spreads: sk.array(dtype=sk.vec3d)):
    i = sk.tid()
    saxpy(a, x, y, out, i)
    cubes[i] = cube(x[i]) + out[i]
    spreads[i] = spread(x[i])


def _run(a, x, y, device, tape=None):
    arrays = [sk.array(x, dtype=f64, device=device, requires_grad=True),
              sk.array(y, dtype=f64, device=device, requires_grad=True)]
    outs = [sk.zeros(len(x), dtype=f64, device=device, requires_grad=True) for _ in range(2)]
    spreads = sk.zeros(len(x), dtype=sk.vec3d, device=device)
    with tape if tape is not None else _Null():
        sk.launch(use_snippets, len(x), inputs=[a] + arrays + outs + [spreads], device=device)
    return arrays, outs, spreads


class _Null:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def test_snippets_compute_and_differentiate(device):
    rng = np.random.default_rng(0)
    a, x, y = 1.5, rng.normal(size=6), rng.normal(size=6)
    g_out, g_cubes = rng.normal(size=6), rng.normal(size=6)
    tape = sk.Tape()
    (xa, ya), (out, cubes), spreads = _run(a, x, y, device, tape)
    np.testing.assert_allclose(out.numpy(), a * x + y, rtol=1e-14)
    np.testing.assert_allclose(cubes.numpy(), x ** 3 + a * x + y, rtol=1e-14)
    np.testing.assert_allclose(spreads.numpy(), np.stack([x, 2 * x, x * x], axis=1), rtol=1e-14)
    tape.backward(grads={out: g_out, cubes: g_cubes})

    def loss(x, y):
        _, (o, c), _ = _run(a, x, y, "cpu")
        return float(np.dot(o.numpy(), g_out) + np.dot(c.numpy(), g_cubes))

    h = 1e-6
    for arr, base in ((xa, x), (ya, y)):
        fd = np.zeros(6)
        for k in range(6):
            plus, minus = base.copy(), base.copy()
            plus[k] += h
            minus[k] -= h
            args_p = (plus, y) if arr is xa else (x, plus)
            args_m = (minus, y) if arr is xa else (x, minus)
            fd[k] = (loss(*args_p) - loss(*args_m)) / (2 * h)
        np.testing.assert_allclose(arr.grad.numpy(), fd, rtol=1e-6, atol=1e-8)


@sk.func_native("thread_values[tid] = sk::atomic_add_scalar((int*)counter, 1);", replay_snippet="")
def take_ticket(counter: sk.array(dtype=int), thread_values: sk.array(dtype=int), tid: int): ...


@sk.kernel
def square_by_ticket(x: sk.array(dtype=f64), counter: sk.array(dtype=int), tickets: sk.array(dtype=int),
                     out: sk.array(dtype=f64)):
    tid = sk.tid()
    take_ticket(counter, tickets, tid)
    k = tickets[tid]
    out[k] = x[k] * x[k]


def test_replay_snippet_replaces_the_snippet_in_backward(device):
    """An empty replay snippet: backward does not take tickets again (the counter stays at n)."""
    n = 16
    x = sk.array(np.arange(n, dtype=np.float64), device=device, requires_grad=True)
    counter = sk.zeros(1, dtype=int, device=device)
    tickets = sk.zeros(n, dtype=int, device=device)
    out = sk.zeros(n, dtype=f64, device=device, requires_grad=True)
    tape = sk.Tape()
    with tape:
        sk.launch(square_by_ticket, n, inputs=[x, counter, tickets, out], device=device)
    tape.backward(grads={out: np.ones(n)})
    assert counter.numpy()[0] == n
    np.testing.assert_array_equal(np.sort(tickets.numpy()), np.arange(n))
    np.testing.assert_allclose(x.grad.numpy(), 2.0 * np.arange(n))


def test_snippets_from_python_and_their_errors():
    assert cube(f64(2.0)) == 8.0
    assert saxpy.__doc__ == "a * x + y, written in C++."
    with pytest.raises(TypeError, match="snippet must be a string"):
        sk.func_native(3)

    @sk.func_native("out[0] = x + x;")
    def store_twice(x: typing.Any, out: typing.Any): ...  # (generic: one C++ function per argument types)

    @sk.kernel(module="unique")
    def k(out: sk.array(dtype=float), out64: sk.array(dtype=f64)):
        store_twice(1.25, out)
        store_twice(f64(0.1), out64)

    out, out64 = sk.zeros(1), sk.zeros(1, dtype=f64)
    sk.launch(k, 1, inputs=[out, out64])
    assert out.numpy()[0] == 2.5 and out64.numpy()[0] == 0.2
    with pytest.raises(TypeError, match="return annotation must be a concrete type"):
        @sk.func_native("return x;")
        def generic(x: typing.Any) -> typing.Any: ...

    with pytest.raises(sk.NativeCompileError, match="undeclared|not declared|undefined"):
        @sk.func_native("return x + not_a_name;")
        def broken(x: float) -> float: ...

        @sk.kernel(module="unique")
        def k2(out: sk.array(dtype=float)):
            out[0] = broken(1.0)

        sk.launch(k2, 1, inputs=[sk.zeros(1)])


def test_redefined_snippet_replaces_the_earlier_one(device):
    """A @func_native defined again under its name replaces the first one in kernels already built with it."""
    @sk.func_native("out[tid] = x[tid] + 1;")
    def step(x: sk.array(dtype=int), out: sk.array(dtype=int), tid: int): ...

    @sk.kernel(module="unique")
    def k(x: sk.array(dtype=int), out: sk.array(dtype=int)):
        i = sk.tid()
        step(x, out, i)

    x = sk.array(np.arange(8, dtype=np.int32), device=device)
    out = sk.zeros(8, dtype=int, device=device)
    sk.launch(k, 8, inputs=[x, out], device=device)
    np.testing.assert_array_equal(out.numpy(), np.arange(8) + 1)

    @sk.func_native("out[tid] = x[tid] * 3;")
    def step(x: sk.array(dtype=int), out: sk.array(dtype=int), tid: int): ...  # noqa: F811

    sk.launch(k, 8, inputs=[x, out], device=device)
    np.testing.assert_array_equal(out.numpy(), np.arange(8) * 3)


@sk.func_native("return wp::vec3(x, 2.0f * x, wp::float32(3));")
def warp_vec(x: float) -> sk.vec3: ...


@sk.func_native("return wp::mat_t<2, 2, wp::float64>(x, 0.0, 1, x);")
def warp_mat(x: f64) -> sk.mat22d: ...


@sk.func_native("wp::fixedarray_t<3, wp::float32> r;\nr[0] = x; r[1] = x + 1.0f; r[2] = x + 2.0f;\nreturn r;")
def warp_fixed(x: float) -> sk.fixedarray(dtype=float, shape=3): ...


@sk.func_native("wp::quatd q(0.0, 0.0, x, 1.0); wp::vec3d v(x); return sk::quat_t<double>(q).z + v[1];")
def warp_quat(x: f64) -> f64: ...


@sk.kernel
def use_warp_names(x: sk.array(dtype=float), vs: sk.array(dtype=sk.vec3), ms: sk.array(dtype=sk.mat22d),
                   fs: sk.array(dtype=float, ndim=2), qs: sk.array(dtype=f64)):
    i = sk.tid()
    vs[i] = warp_vec(x[i])
    ms[i] = warp_mat(f64(x[i]))
    f = warp_fixed(x[i])
    for k in range(3):
        fs[i, k] = f[k]
    qs[i] = warp_quat(f64(x[i]))


def test_snippets_name_warps_types(device):
    """Snippets written for Warp: wp::vec3(x, y, z), wp::mat_t<...>(entries row by row), one scalar filling a
    vector, wp::quatd, wp::fixedarray_t<N, T>, returned as simkit's types."""
    xv = np.array([0.5, -2.0], dtype=np.float32)
    x = sk.array(xv, device=device)
    vs, ms = sk.zeros(2, dtype=sk.vec3, device=device), sk.zeros(2, dtype=sk.mat22d, device=device)
    fs, qs = sk.zeros((2, 3), dtype=float, device=device), sk.zeros(2, dtype=f64, device=device)
    sk.launch(use_warp_names, 2, inputs=[x, vs, ms, fs, qs], device=device)
    np.testing.assert_allclose(vs.numpy(), np.stack([xv, 2 * xv, [3, 3]], axis=1))
    np.testing.assert_allclose(ms.numpy(), [[[v, 0], [1, v]] for v in xv])
    np.testing.assert_allclose(fs.numpy(), xv[:, None] + [0, 1, 2])
    np.testing.assert_allclose(qs.numpy(), 2 * xv)

"""Fixed-size arrays made inside kernels and @funcs (``sk.zeros(shape=..., dtype=...)`` / ``sk.empty``;
Warp's ``fixedarray``): indexing, views, slices, shapes, struct and vector elements, @funcs that fill one or
return one, atomics on them (the emulated GPU takes the local-memory branch of the atomics), debug-mode bounds
checks, the errors, and gradients through them (float64, against central finite differences)."""
import numpy as np
import pytest

import simkit as sk
from simkit.kernels.errors import CompileError


def central_diff(f, x, eps):
    """The gradient of scalar f at x by central differences, one coordinate at a time."""
    g = np.zeros_like(x)
    for i in range(x.size):
        d = np.zeros_like(x)
        d[i] = eps
        g[i] = (f(x + d) - f(x - d)) / (2 * eps)
    return g


# ---------------------------------------------------------------------------- forward


@sk.kernel
def layout(out: sk.array(dtype=int)):
    arr = sk.zeros(shape=(2, 3), dtype=int)
    for i in range(arr.shape[0]):
        for j in range(arr.shape[1]):
            arr[i][j] = i * arr.shape[1] + j + sk.tid() * 10
    r1 = arr[1]
    s = arr[:2, 1:]
    k = sk.tid() * 8
    out[k + 0] = arr[1, 2]
    out[k + 1] = r1[0]
    out[k + 2] = r1.shape[0]
    out[k + 3] = r1.shape[1]
    out[k + 4] = s[1, 0]
    out[k + 5] = s.shape[1]
    out[k + 6] = arr[0, 0]
    out[k + 7] = len(arr)


def test_layout_views_and_slices(device):
    out = sk.zeros(16, dtype=int, device=device)
    sk.launch(layout, dim=2, inputs=[out], device=device)
    expected = []
    for t in range(2):
        a = np.arange(6).reshape(2, 3) + 10 * t
        expected += [a[1, 2], a[1, 0], 3, 0, a[:2, 1:][1, 0], 2, a[0, 0], 2]
    np.testing.assert_array_equal(out.numpy(), expected)


@sk.struct
class Sample:
    offset: int
    dist: float


@sk.func
def make_samples():
    arr = sk.zeros(shape=(2, 3), dtype=Sample)
    for i in range(2):
        for j in range(3):
            arr[i][j].offset = i * 3 + j
            arr[i][j].dist = float(arr[i][j].offset) / 5.0
    return arr


@sk.kernel
def structs_and_vectors(out: sk.array(dtype=float), vout: sk.array(dtype=sk.vec3)):
    arr = make_samples()
    out[0] = float(arr[1][2].offset)
    out[1] = arr[0][1].dist
    v = sk.zeros(shape=4, dtype=sk.vec3)
    for i in range(4):
        v[i] = sk.vec3(float(i), 1.0, 2.0)
    v[2].y = 7.0
    vout[0] = v[2] + v[3]


def test_struct_and_vector_elements(device):
    out = sk.zeros(2, dtype=float, device=device)
    vout = sk.zeros(1, dtype=sk.vec3, device=device)
    sk.launch(structs_and_vectors, dim=1, inputs=[out, vout], device=device)
    np.testing.assert_allclose(out.numpy(), [5.0, 0.2], rtol=1e-6)
    np.testing.assert_allclose(vout.numpy()[0], [5.0, 8.0, 4.0])


@sk.func
def fill_rows(arr: sk.array2d(dtype=int), base: int):
    for i in range(arr.shape[0]):
        for j in range(arr.shape[1]):
            arr[i, j] = base + i * arr.shape[1] + j


@sk.func
def counted(n: int) -> sk.fixedarray(shape=(4,), dtype=int):
    a = sk.zeros(shape=4, dtype=int)
    for i in range(n):
        a[i % 4] += 1
    return a


@sk.kernel
def funcs_fill_and_return(out: sk.array(dtype=int)):
    t = sk.tid()
    arr = sk.zeros(shape=(2, 2), dtype=int)
    fill_rows(arr, t * 100)
    fill_rows(arr[1:], 50)  # a view of it: the func writes into it
    c = counted(6)
    out[t * 8 + 0] = arr[0, 0]
    out[t * 8 + 1] = arr[0, 1]
    out[t * 8 + 2] = arr[1, 0]
    out[t * 8 + 3] = arr[1, 1]
    for i in range(4):
        out[t * 8 + 4 + i] = c[i]


def test_funcs_fill_and_return(device):
    out = sk.zeros(16, dtype=int, device=device)
    sk.launch(funcs_fill_and_return, dim=2, inputs=[out], device=device)
    for t in range(2):
        np.testing.assert_array_equal(out.numpy()[t * 8:(t + 1) * 8], [t * 100, t * 100 + 1, 50, 51, 2, 2, 1, 1])


@sk.kernel
def histogram(values: sk.array(dtype=int), out: sk.array(dtype=int), fout: sk.array(dtype=float)):
    t = sk.tid()
    bins = sk.zeros(shape=5, dtype=int)
    acc = sk.zeros(shape=2, dtype=float)
    for k in range(values.shape[0]):
        sk.atomic_add(bins, (values[k] + t) % 5, 1)
        acc[k % 2] += 0.5
    sk.atomic_max(bins, 0, 9)
    for b in range(5):
        out[t * 5 + b] = bins[b]
    fout[t] = acc[0] - acc[1] * 2.0


def test_atomics_on_local_arrays(device):
    vals = np.array([0, 1, 1, 3, 4, 4, 4], dtype=np.int32)
    out = sk.zeros(10, dtype=int, device=device)
    fout = sk.zeros(2, dtype=float, device=device)
    sk.launch(histogram, dim=2, inputs=[sk.array(vals, device=device), out, fout], device=device)
    for t in range(2):
        expected = np.bincount((vals + t) % 5, minlength=5)
        expected[0] = max(expected[0], 9)
        np.testing.assert_array_equal(out.numpy()[t * 5:(t + 1) * 5], expected)
    np.testing.assert_allclose(fout.numpy(), [2.0 - 1.5 * 2.0] * 2)


@sk.kernel
def reinterpret(data: sk.array(dtype=float), out: sk.array(dtype=sk.vec2), rows: sk.array(dtype=float)):
    local = sk.zeros(shape=(6,), dtype=float)
    for i in range(6):
        local[i] = float(i) * 2.0
    pairs = sk.array(ptr=local.ptr, shape=(3,), dtype=sk.vec2)  # the same memory seen as vec2s
    for i in range(3):
        out[i] = pairs[i]
    grid = sk.array(ptr=data.ptr, shape=(2, 3), dtype=float)  # a kernel argument's memory, reshaped
    rows[0] = grid[1, 0] + grid[0, 2]


def test_array_over_a_pointer(device):
    data = sk.array(np.arange(6, dtype=np.float32), device=device)
    out = sk.zeros(3, dtype=sk.vec2, device=device)
    rows = sk.zeros(1, dtype=float, device=device)
    sk.launch(reinterpret, dim=1, inputs=[data, out, rows], device=device)
    np.testing.assert_allclose(out.numpy(), (np.arange(6) * 2.0).reshape(3, 2))
    np.testing.assert_allclose(rows.numpy(), [3.0 + 2.0])


@sk.kernel
def out_of_bounds(i: int, out: sk.array(dtype=float)):
    a = sk.zeros(shape=3, dtype=float)
    a[i] = 1.0
    out[0] = a[0]


def test_debug_mode_checks_bounds():
    old = sk.config.mode
    sk.config.mode = "debug"
    try:
        out = sk.zeros(1, dtype=float, device="cpu")
        sk.launch(out_of_bounds, dim=1, inputs=[2, out], device="cpu")
        with pytest.raises(Exception, match="out of bounds|bounds"):
            sk.launch(out_of_bounds, dim=1, inputs=[3, out], device="cpu")
    finally:
        sk.config.mode = old


# ---------------------------------------------------------------------------- errors


def _launch(k):
    sk.launch(k, dim=1, inputs=[], device="cpu")


def test_shape_must_be_a_constant():
    @sk.kernel(module="unique")
    def k():
        n = sk.tid()
        sk.zeros(shape=(n,), dtype=int)

    with pytest.raises(RuntimeError, match="`shape` argument must be specified as a constant"):
        _launch(k)


def test_bad_shapes():
    @sk.kernel(module="unique")
    def empty_axis():
        a = sk.zeros(shape=(0,), dtype=float)

    @sk.kernel(module="unique")
    def five_axes():
        a = sk.zeros(shape=(1, 1, 1, 1, 1), dtype=float)

    for k in (empty_axis, five_axes):
        with pytest.raises(CompileError, match="1 to 4 dimensions of positive"):
            _launch(k)


def test_returning_a_view_is_refused():
    @sk.func
    def row():
        a = sk.zeros(shape=(2, 2), dtype=float)
        return a[0]

    @sk.kernel(module="unique")
    def k():
        r = row()

    with pytest.raises(CompileError, match="cannot return a view of a fixed-size array"):
        _launch(k)


def test_annotation_must_match():
    @sk.func
    def f() -> sk.array2d(dtype=int):
        return sk.zeros(shape=(2, 3), dtype=int)

    @sk.kernel(module="unique")
    def k():
        a = f()

    with pytest.raises(CompileError, match=r"annotated to return array\(dtype=int32, ndim=2\) but this returns "
                                           r"fixedarray\(dtype=int32, shape=\(2, 3\)\)"):
        _launch(k)
    with pytest.raises(TypeError, match="needs its shape"):
        sk.fixedarray(dtype=float)


def test_not_a_parameter_or_field():
    def k(a: sk.fixedarray(shape=(2,), dtype=float)):
        pass

    with pytest.raises(CompileError, match="kernel parameters cannot be fixed-size arrays"):
        sk.kernel(k, module="unique")
    with pytest.raises(TypeError, match="cannot be a struct field"):
        @sk.struct
        class S:
            a: sk.fixedarray(shape=(2,), dtype=float)


# ---------------------------------------------------------------------------- gradients


@sk.func
def scaled_squares(x: sk.float64) -> sk.fixedarray(shape=(3,), dtype=sk.float64):
    a = sk.zeros(shape=3, dtype=sk.float64)
    for i in range(3):
        a[i] = x * x * sk.float64(i + 1)
    return a


@sk.func
def fill_powers(arr: sk.array2d(dtype=sk.float64), x: sk.float64):
    for i in range(arr.shape[0]):
        for j in range(arr.shape[1]):
            arr[i][j] = x * sk.float64(i * arr.shape[1] + j + 1)


@sk.kernel
def local_math(x: sk.array(dtype=sk.float64), c: sk.float64, out: sk.array(dtype=sk.float64)):
    t = sk.tid()
    arr = sk.zeros(shape=(2, 3), dtype=sk.float64)
    fill_powers(arr, x[t])
    s = sk.float64(0.0)
    for i in range(2):
        for j in range(3):
            s += arr[i, j] * arr[i, j]
    b = scaled_squares(x[t])
    s += b[2] * c
    e = sk.empty(shape=4, dtype=sk.float64)
    for i in range(4):
        e[i] = sk.sin(x[t] * sk.float64(i))
    prod = sk.zeros(shape=1, dtype=sk.float64)
    prod[0] = sk.float64(1.0)
    for i in range(3):  # one element overwritten in a loop: the reverse pass replays each iteration's store
        prod[0] = prod[0] * (x[t] + sk.float64(i))
    acc = sk.zeros(shape=2, dtype=sk.float64)
    sk.atomic_add(acc, 1, x[t] * x[t])
    acc[0] += c * x[t]
    if x[t] > sk.float64(0.0):  # a fixed array merged from two branches (copied by value)
        m = scaled_squares(x[t])
    else:
        m = sk.zeros(shape=3, dtype=sk.float64)
    for i in range(4):
        s += e[i]
    out[t] = s + prod[0] + acc[0] + acc[1] + m[1] * sk.float64(3.0)


def _local_math_numpy(x, c):
    s = sum((x * (n + 1)) ** 2 for n in range(6)) + x * x * 3 * c + sum(np.sin(x * i) for i in range(4))
    return s + x * (x + 1) * (x + 2) + c * x + x * x + np.where(x > 0, x * x * 2 * 3, 0.0)


def test_gradients_through_fixed_arrays(device):
    xv = np.array([0.5, 1.5, -0.7, 0.9], dtype=np.float64)
    c = 2.0
    x = sk.array(xv, dtype=sk.float64, requires_grad=True, device=device)
    out = sk.zeros(4, dtype=sk.float64, requires_grad=True, device=device)
    tape = sk.Tape()
    with tape:
        sk.launch(local_math, dim=4, inputs=[x, c, out], device=device)
    np.testing.assert_allclose(out.numpy(), _local_math_numpy(xv, c), rtol=1e-12)
    tape.backward(grads={out: sk.ones(4, dtype=sk.float64, device=device)})
    fd = central_diff(lambda v: _local_math_numpy(v, c).sum(), xv, eps=1e-6)
    np.testing.assert_allclose(x.grad.numpy(), fd, rtol=1e-6)

    def run(v):  # the kernel itself, against central finite differences of its own outputs
        o = sk.zeros(4, dtype=sk.float64, device=device)
        sk.launch(local_math, dim=4, inputs=[sk.array(v, dtype=sk.float64, device=device), c, o], device=device)
        return o.numpy().sum()

    np.testing.assert_allclose(x.grad.numpy(), central_diff(run, xv, eps=1e-6), rtol=1e-6)

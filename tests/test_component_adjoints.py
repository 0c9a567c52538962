"""Writes to part of an array element (frontend/slots.py): ``arr[i].x = v``, ``arr[i][r, c] = v``,
``arr[i][r][c] = v``, ``arr[i][r] = row``, ``arr[i].p = v``, ``arr[i].body.vel.y = v`` and their ``+=``, ``-=``,
``*=``, ``/=`` forms, in arrays of vectors, matrices, quaternions, transforms and structs (fields at any depth),
with constant, negative and runtime indices, in 2D, indexed and thread-local arrays, in loops and @funcs.

Forward results are checked against numpy and gradients against central finite differences in float64 (the
gradient of a random weighting of the outputs with respect to every input value, the written arrays' values
before the launch included). Slot writes read nothing of the element: a kernel writing several fields of an
element one after the other is not refused by the tape, and threads updating different parts of one element
never race."""
import numpy as np
import pytest

import simkit as sk
from simkit.kernels.errors import CompileError

f64 = sk.float64


@sk.struct
class Inner:
    v: sk.vec3d
    m: sk.mat22d


@sk.struct
class Body:
    flag: sk.int8
    a: f64
    n: sk.int32
    inner: Inner
    t: sk.transformd
    q: sk.quatd


def _floats(a):
    """The float64 values of an array's numpy form (a struct's float fields, in order), as a flat copy."""
    if not a.dtype.names:
        return a.reshape(-1).astype(np.float64)
    return np.concatenate([_floats(a[n]) for n in a.dtype.names if a[n].dtype.kind in "fV"])


def _set_floats(a, values):
    k = 0
    for n in a.dtype.names:
        if a[n].dtype.names:
            k += _set_floats(a[n], values[k:])
        elif a[n].dtype.kind == "f":
            a[n][...] = np.reshape(values[k:k + a[n].size], a[n].shape)  # (a strided view: no reshape of it)
            k += a[n].size
    return k


def _launch(kernel, dim, specs, values, device, tape=None):
    arrs = []
    for (_, dtype, diff), val in zip(specs, values):
        arrs.append(val if dtype is None else sk.array(val.copy(), dtype=dtype, requires_grad=diff, device=device))
    if tape is None:
        sk.launch(kernel, dim, inputs=arrs, device=device)
    else:
        with tape:
            sk.launch(kernel, dim, inputs=arrs, device=device)
    return arrs


def check_gradients(kernel, dim, specs, outs, device, h=1e-6):
    """specs: [(numpy value, dtype or None for a scalar argument, differentiable)]; outs: the indices of the
    arrays whose values after the launch make the loss (a random weighting). Tape gradients of the loss
    against the values before the launch must match central differences."""
    rng = np.random.default_rng(7)
    values = [s[0] for s in specs]
    first = _launch(kernel, dim, specs, values, device)
    w = {o: rng.uniform(-1.0, 1.0, _floats(first[o].numpy()).size) for o in outs}

    def loss(vals):
        arrs = _launch(kernel, dim, specs, vals, device)
        return sum(float(np.dot(w[o], _floats(arrs[o].numpy()))) for o in outs)

    tape = sk.Tape()
    arrs = _launch(kernel, dim, specs, values, device, tape)
    for o in outs:
        g = np.zeros_like(arrs[o].numpy())
        if g.dtype.names:
            _set_floats(g, w[o])
        else:
            g.reshape(-1)[:] = w[o]
        arrs[o].grad = sk.array(g, dtype=specs[o][1], device=device)
    tape.backward()
    for k, (v, dtype, diff) in enumerate(specs):
        if dtype is None or not diff:
            continue
        got = _floats(arrs[k].grad.numpy())
        fd = np.zeros_like(got)
        for j in range(got.size):
            plus, minus = [x.copy() if isinstance(x, np.ndarray) else x for x in values], \
                [x.copy() if isinstance(x, np.ndarray) else x for x in values]
            for side, sign in ((plus, 1.0), (minus, -1.0)):
                f = _floats(side[k])
                f[j] += sign * h
                if side[k].dtype.names:
                    _set_floats(side[k], f)
                else:
                    side[k].reshape(-1)[:] = f
            fd[j] = (loss(plus) - loss(minus)) / (2 * h)
        np.testing.assert_allclose(got, fd, rtol=1e-6, atol=1e-6, err_msg=f"argument {k} of {kernel.key}")


R = np.random.default_rng(11)


def rand(*shape):
    return R.uniform(0.5, 1.5, shape)


def bodies(n=3):
    b = np.zeros(n, dtype=sk.zeros(1, dtype=Body, device="cpu").numpy().dtype)
    b["a"] = rand(n)
    b["inner"]["v"], b["inner"]["m"], b["t"], b["q"] = rand(n, 3), rand(n, 2, 2), rand(n, 7), rand(n, 4)
    return b


# ---------------------------------------------------------------------------- kernels


@sk.kernel
def vector_parts(x: sk.array(dtype=f64), y: sk.array(dtype=sk.vec3d)):
    i = sk.tid()
    y[i].x += x[i]
    y[i][1] -= 2.0 * x[i] * x[i]
    y[i].z = x[i]
    y[i].z += x[i] * 3.0


@sk.kernel
def vector_mul(x: sk.array(dtype=f64), y: sk.array(dtype=sk.vec3d)):
    i = sk.tid()
    y[i].z *= x[i]


@sk.kernel
def vector_div(x: sk.array(dtype=f64), y: sk.array(dtype=sk.vec3d)):
    i = sk.tid()
    y[i][0] /= x[i]


@sk.kernel
def matrix_parts(x: sk.array(dtype=f64), y: sk.array(dtype=sk.mat33d)):
    i = sk.tid()
    y[i][0, 1] = x[i]
    y[i][2, 2] += x[i] * x[i]
    y[i][1][0] += x[i]             # a chained [r][c]: the entry, not a read of the element
    y[i][2] = sk.vec3d(x[i], 2.0 * x[i], 3.0)
    y[i][2][1] -= x[i] * 5.0


@sk.kernel
def matrix_row_update(x: sk.array(dtype=sk.vec3d), y: sk.array(dtype=sk.mat33d)):
    i = sk.tid()
    y[i][1] += x[i]
    y[i][2] -= 2.0 * x[i]


@sk.kernel
def matrix_chained_mul(x: sk.array(dtype=f64), y: sk.array(dtype=sk.mat33d)):
    i = sk.tid()
    y[i][1][2] *= x[i]


@sk.kernel
def quat_and_transform(x: sk.array(dtype=sk.vec3d), q: sk.array(dtype=sk.quatd), t: sk.array(dtype=sk.transformd)):
    i = sk.tid()
    q[i].w = x[i][0] * 2.0
    q[i][1] += x[i][1]
    t[i].p = x[i] * 2.0
    t[i].q.w += x[i][2]
    t[i][4] = x[i][0] * x[i][1]
    t[i].p[1] -= x[i][2]


@sk.kernel
def struct_fields(x: sk.array(dtype=f64), y: sk.array(dtype=Body)):
    i = sk.tid()
    y[i].a = x[i] * 2.0                  # several fields written one after the other: no read of y
    y[i].n = 3
    y[i].flag = sk.int8(1)
    y[i].inner.v.y = x[i] * x[i]
    y[i].inner.m[0, 1] += x[i]
    y[i].inner.m[1] = sk.vec2d(x[i], 1.0)
    y[i].t.p = sk.vec3d(x[i], x[i], x[i])
    y[i].t.q.w += x[i]
    y[i].q[2] -= x[i] * 4.0


@sk.kernel
def struct_whole_field(x: sk.array(dtype=f64), y: sk.array(dtype=Body)):
    i = sk.tid()
    s = Inner()
    s.v = sk.vec3d(x[i], 2.0 * x[i], x[i] * x[i])
    s.m = sk.mat22d(x[i], 0.0, 0.0, 1.0)
    y[i].inner = s


@sk.kernel
def struct_field_mul(x: sk.array(dtype=f64), y: sk.array(dtype=Body)):
    i = sk.tid()
    y[i].inner.v[0] *= x[i]


@sk.kernel
def runtime_indices(x: sk.array(dtype=f64), j: sk.array(dtype=int), y: sk.array(dtype=sk.vec3d),
                    m: sk.array(dtype=sk.mat33d), b: sk.array(dtype=Body)):
    i = sk.tid()
    y[i][j[i]] = x[i] * 2.0              # negative indices count from the end
    y[i][j[i] + 1] += x[i]
    m[i][j[i], j[i] - 1] += x[i]
    m[i][j[i] + 1][j[i]] = x[i] * x[i]
    m[i][j[i]] += sk.vec3d(x[i], 0.0, 1.0)
    b[i].inner.m[j[i] + 1, 0] = x[i] * 3.0
    b[i].inner.v[j[i]] += x[i]


@sk.kernel
def negative_constants(x: sk.array(dtype=f64), y: sk.array(dtype=sk.vec3d), m: sk.array(dtype=sk.mat33d)):
    i = sk.tid()
    y[i][-1] = x[i] * 2.0
    y[i][-3] += x[i]
    m[i][-1, -2] = x[i]
    m[i][-2] = sk.vec3d(x[i], x[i], 1.0)


@sk.kernel
def in_a_loop(x: sk.array(dtype=f64), n: int, y: sk.array(dtype=sk.vec3d)):
    i = sk.tid()
    p = f64(1.0)
    for k in range(n):
        p = p * x[i]
        y[i][k % 3] += p
        y[i][(k + 1) % 3] = p * 0.5


@sk.kernel
def two_dims(x: sk.array2d(dtype=f64), y: sk.array2d(dtype=sk.vec2d), b: sk.array2d(dtype=Body)):
    i, j = sk.tid()
    y[i, j].x = x[i, j]
    y[i, j][1] += x[i, j]
    b[i, j].inner.m[1, 1] = x[i, j] * 3.0
    b[i, j].a += x[i, j]


@sk.kernel
def through_views(x: sk.array(dtype=f64), y: sk.array2d(dtype=sk.vec3d)):
    i = sk.tid()
    row = y[i]
    row[1].y = x[i] * x[i]
    row[0][2] += x[i]
    y[i, 0].x = x[i] * 3.0


@sk.func
def write_parts(y: sk.array(dtype=sk.vec3d), i: int, v: f64):
    y[i].x = v * v
    y[i][1] += v


@sk.kernel
def in_a_func(x: sk.array(dtype=f64), y: sk.array(dtype=sk.vec3d)):
    i = sk.tid()
    write_parts(y, i, x[i])


@sk.kernel
def thread_local(x: sk.array(dtype=f64), n: int, out: sk.array(dtype=sk.vec3d)):
    i = sk.tid()
    a = sk.zeros(shape=(3,), dtype=sk.vec3d)
    for k in range(n):
        a[k % 3].y = x[i] * f64(k)
        a[(k + 1) % 3][0] += x[i] * x[i]
    out[i] = a[0] + a[1] * 2.0 + a[2] * 3.0


@sk.kernel
def read_after_writes(x: sk.array(dtype=f64), y: sk.array(dtype=sk.vec3d), out: sk.array(dtype=f64)):
    i = sk.tid()
    y[i].y = x[i]
    y[i].x += x[i] * x[i]
    out[i] = sk.dot(y[i], y[i])


@sk.kernel
def scattered(x: sk.array(dtype=f64), idx: sk.array(dtype=int), y: sk.array(dtype=sk.vec3d)):
    i = sk.tid()
    y[idx[i]].y += x[i] * x[i]
    y[idx[i]][0] -= x[i]


N = 3
J = np.array([-1, -2, 1], dtype=np.int32)

@sk.kernel
def parts_in_turn(x: sk.array(dtype=f64), y: sk.array(dtype=sk.vec3d), m: sk.array(dtype=sk.mat33d),
                  b: sk.array(dtype=Body), out: sk.array(dtype=f64)):
    i = sk.tid()
    y[i].x *= x[i]          # each part read, then written: the tape orders reads by the parts they use
    y[i].y *= x[i]
    out[i] = y[i].z * 2.0   # a part no write touches
    m[i][0, 0] *= x[i]
    m[i][1] *= x[i]         # row 1: (1, 0), (1, 1), (1, 2)
    m[i][2, 2] -= m[i][0, 1] * x[i]
    b[i].a *= x[i]
    b[i].inner.v.y *= b[i].inner.m[1, 0]


@sk.kernel
def part_read_after_its_write(x: sk.array(dtype=f64), y: sk.array(dtype=sk.vec3d), out: sk.array(dtype=f64)):
    i = sk.tid()
    y[i].x *= x[i]
    out[i] = y[i].x  # .x read on both sides of its write: refused on a tape


CASES = {
    "vector_parts": (vector_parts, N, lambda: [(rand(N), f64, True), (rand(N, 3), sk.vec3d, True)], [1]),
    "vector_mul": (vector_mul, N, lambda: [(rand(N), f64, True), (rand(N, 3), sk.vec3d, True)], [1]),
    "vector_div": (vector_div, N, lambda: [(rand(N), f64, True), (rand(N, 3), sk.vec3d, True)], [1]),
    "matrix_parts": (matrix_parts, N, lambda: [(rand(N), f64, True), (rand(N, 3, 3), sk.mat33d, True)], [1]),
    "matrix_row_update": (matrix_row_update, N, lambda: [(rand(N, 3), sk.vec3d, True),
                                                         (rand(N, 3, 3), sk.mat33d, True)], [1]),
    "matrix_chained_mul": (matrix_chained_mul, N, lambda: [(rand(N), f64, True), (rand(N, 3, 3), sk.mat33d, True)],
                           [1]),
    "quat_and_transform": (quat_and_transform, N, lambda: [(rand(N, 3), sk.vec3d, True), (rand(N, 4), sk.quatd, True),
                                                           (rand(N, 7), sk.transformd, True)], [1, 2]),
    "struct_fields": (struct_fields, N, lambda: [(rand(N), f64, True), (bodies(), Body, True)], [1]),
    "struct_whole_field": (struct_whole_field, N, lambda: [(rand(N), f64, True), (bodies(), Body, True)], [1]),
    "struct_field_mul": (struct_field_mul, N, lambda: [(rand(N), f64, True), (bodies(), Body, True)], [1]),
    "runtime_indices": (runtime_indices, N, lambda: [(rand(N), f64, True), (J, sk.int32, False),
                                                     (rand(N, 3), sk.vec3d, True), (rand(N, 3, 3), sk.mat33d, True),
                                                     (bodies(), Body, True)], [2, 3, 4]),
    "negative_constants": (negative_constants, N, lambda: [(rand(N), f64, True), (rand(N, 3), sk.vec3d, True),
                                                           (rand(N, 3, 3), sk.mat33d, True)], [1, 2]),
    "in_a_loop": (in_a_loop, N, lambda: [(rand(N), f64, True), (5, None, False), (rand(N, 3), sk.vec3d, True)], [2]),
    "two_dims": (two_dims, (2, 2), lambda: [(rand(2, 2), f64, True), (rand(2, 2, 2), sk.vec2d, True),
                                            (bodies(4).reshape(2, 2), Body, True)], [1, 2]),
    "through_views": (through_views, N, lambda: [(rand(N), f64, True), (rand(N, 2, 3), sk.vec3d, True)], [1]),
    "in_a_func": (in_a_func, N, lambda: [(rand(N), f64, True), (rand(N, 3), sk.vec3d, True)], [1]),
    "thread_local": (thread_local, N, lambda: [(rand(N), f64, True), (5, None, False), (rand(N, 3), sk.vec3d, True)],
                     [2]),
    "read_after_writes": (read_after_writes, N, lambda: [(rand(N), f64, True), (rand(N, 3), sk.vec3d, True),
                                                         (rand(N), f64, True)], [1, 2]),
    "parts_in_turn": (parts_in_turn, N, lambda: [(rand(N), f64, True), (rand(N, 3), sk.vec3d, True),
                                                 (rand(N, 3, 3), sk.mat33d, True), (bodies(), Body, True),
                                                 (rand(N), f64, True)], [1, 2, 3, 4]),
    "scattered": (scattered, N, lambda: [(rand(N), f64, True), (np.array([0, 0, 2], dtype=np.int32), sk.int32, False),
                                         (rand(N, 3), sk.vec3d, True)], [2]),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_gradients_match_finite_differences(case, device):
    kernel, dim, specs, outs = CASES[case]
    check_gradients(kernel, dim, specs(), outs, device)


def test_forward_values():
    x = np.array([0.5, 2.0, -1.5])
    y0, m0, b0 = rand(3, 3), rand(3, 3, 3), bodies()
    y = sk.array(y0, dtype=sk.vec3d, device="cpu")
    m = sk.array(m0, dtype=sk.mat33d, device="cpu")
    b = sk.array(b0, dtype=Body, device="cpu")
    xs = sk.array(x, dtype=f64, device="cpu")
    sk.launch(runtime_indices, 3, inputs=[xs, sk.array(J, dtype=sk.int32, device="cpu"), y, m, b], device="cpu")
    ye, me, be = y0.copy(), m0.copy(), b0.copy()
    for i, j in enumerate(J):
        ye[i][j] = x[i] * 2.0
        ye[i][(j + 1) % 3] += x[i]
        me[i][j, j - 1] += x[i]
        me[i][(j + 1) % 3, j] = x[i] * x[i]
        me[i][j] += [x[i], 0.0, 1.0]
        if -2 <= j + 1 < 2:  # (row 2 of a mat22: out of range, the write is dropped)
            be["inner"]["m"][i][j + 1, 0] = x[i] * 3.0
        be["inner"]["v"][i][j] += x[i]
    np.testing.assert_allclose(y.numpy(), ye)
    np.testing.assert_allclose(m.numpy(), me)
    np.testing.assert_allclose(b.numpy()["inner"]["m"], be["inner"]["m"])
    np.testing.assert_allclose(b.numpy()["inner"]["v"], be["inner"]["v"])

    b = sk.array(bodies(), dtype=Body, device="cpu")
    before = b.numpy().copy()
    sk.launch(struct_fields, 3, inputs=[xs, b], device="cpu")
    got = b.numpy()
    np.testing.assert_array_equal(got["n"], 3)
    np.testing.assert_array_equal(got["flag"], 1)
    np.testing.assert_allclose(got["a"], 2.0 * x)
    np.testing.assert_allclose(got["inner"]["v"][:, 0], before["inner"]["v"][:, 0])  # untouched neighbours
    np.testing.assert_allclose(got["inner"]["v"][:, 1], x * x)
    np.testing.assert_allclose(got["inner"]["m"][:, 0, 1], before["inner"]["m"][:, 0, 1] + x)
    np.testing.assert_allclose(got["inner"]["m"][:, 1], np.stack([x, np.ones(3)], 1))
    np.testing.assert_allclose(got["t"][:, :3], np.stack([x, x, x], 1))
    np.testing.assert_allclose(got["t"][:, 3:6], before["t"][:, 3:6])
    np.testing.assert_allclose(got["t"][:, 6], before["t"][:, 6] + x)
    np.testing.assert_allclose(got["q"][:, 2], before["q"][:, 2] - 4.0 * x)


def test_slot_writes_read_nothing_of_the_element():
    """Neither stores nor atomic updates of parts load the element (so the tape sees no read of ``y``)."""
    from simkit.kernels.analysis import analyze
    from simkit.kernels.module import compile_options

    for kernel in (struct_fields, matrix_parts, vector_parts, quat_and_transform, runtime_indices):
        spec = kernel.specs[None]
        spec.build_ir(compile_options())
        access = analyze(spec.ir)
        assert set(access.reads) <= {("x",), ("j",)}, (kernel.key, access.reads)
        assert len(access.writes) >= 1


@sk.kernel
def contended(v: sk.array(dtype=float), out: sk.array(dtype=sk.vec3), m: sk.array(dtype=sk.mat22),
              b: sk.array(dtype=Body), bits: sk.array(dtype=sk.vec2i)):
    i = sk.tid()
    out[0][i % 3] += v[i]
    m[0][1] += sk.vec2(v[i], 2.0 * v[i])
    m[0][0, i % 2] -= v[i]
    b[0].inner.v.z += f64(v[i])
    bits[0][i % 2] |= 1 << (i % 30)


def test_contended_updates_of_parts_are_atomic(device):
    n = 3000
    v = sk.ones(n, dtype=float, device=device)
    out = sk.zeros(1, dtype=sk.vec3, device=device)
    m = sk.zeros(1, dtype=sk.mat22, device=device)
    b = sk.zeros(1, dtype=Body, device=device)
    bits = sk.zeros(1, dtype=sk.vec2i, device=device)
    sk.launch(contended, n, inputs=[v, out, m, b, bits], device=device)
    np.testing.assert_array_equal(out.numpy(), [[1000.0, 1000.0, 1000.0]])
    np.testing.assert_array_equal(m.numpy(), [[[-1500.0, -1500.0], [3000.0, 6000.0]]])
    assert b.numpy()["inner"]["v"][0, 2] == 3000.0
    even = sum(1 << k for k in range(0, 30, 2))  # (i even: i % 30 even)
    odd = sum(1 << k for k in range(1, 30, 2))
    np.testing.assert_array_equal(bits.numpy(), [[even, odd]])


@sk.kernel
def small_ints(v: sk.array(dtype=sk.int16), out: sk.array(dtype=sk.vec2s), b: sk.array(dtype=Body)):
    i = sk.tid()
    out[i].y += v[i]
    out[i][0] = v[i] * sk.int16(2)
    b[i].flag += sk.int8(3)


def test_parts_without_atomics_are_read_updated_and_stored():
    v = sk.array(np.array([3, -4], dtype=np.int16), dtype=sk.int16, device="cpu")
    out = sk.array(np.array([[1, 1], [2, 2]], dtype=np.int16), dtype=sk.vec2s, device="cpu")
    b = sk.zeros(2, dtype=Body, device="cpu")
    sk.launch(small_ints, 2, inputs=[v, out, b], device="cpu")
    np.testing.assert_array_equal(out.numpy(), [[6, 4], [-8, -2]])
    np.testing.assert_array_equal(b.numpy()["flag"], [3, 3])


def test_a_value_of_another_type_is_refused_naming_the_target():
    @sk.kernel(module="unique")
    def mismatch(y: sk.array(dtype=sk.vec3), src: sk.array(dtype=sk.vec3)):
        i = sk.tid()
        y[i].y = src[i]

    with pytest.raises(CompileError, match=r"cannot assign a vec3 value to 'y\[i\]\.y', which is a float32"):
        sk.launch(mismatch, 1, inputs=[sk.zeros(1, dtype=sk.vec3), sk.zeros(1, dtype=sk.vec3)], device="cpu")


def test_a_constant_index_out_of_range_is_refused():
    @sk.kernel(module="unique")
    def out_of_range(y: sk.array(dtype=sk.mat22)):
        y[0][1, 2] = 1.0

    with pytest.raises(CompileError, match=r"index 2 is out of range for 2 components in 'y\[0\]\[1, 2\]'"):
        sk.launch(out_of_range, 1, inputs=[sk.zeros(1, dtype=sk.mat22)], device="cpu")


def test_a_runtime_index_out_of_range_drops_the_write():
    @sk.kernel(module="unique")
    def dropped(y: sk.array(dtype=sk.vec3), k: int):
        y[0][k] = 5.0
        y[0][k] += 1.0

    y = sk.zeros(2, dtype=sk.vec3, device="cpu")
    sk.launch(dropped, 1, inputs=[y, 3], device="cpu")
    sk.launch(dropped, 1, inputs=[y, -4], device="cpu")
    np.testing.assert_array_equal(y.numpy(), np.zeros((2, 3)))
    sk.launch(dropped, 1, inputs=[y, -2], device="cpu")
    np.testing.assert_array_equal(y.numpy()[0], [0.0, 6.0, 0.0])


def test_index_expressions_of_a_plain_assignment_run_once():
    @sk.func
    def counted(c: sk.array(dtype=int), i: int) -> int:
        sk.atomic_add(c, 0, 1)
        return i

    @sk.kernel(module="unique")
    def once(c: sk.array(dtype=int), b: sk.array(dtype=Body), y: sk.array(dtype=sk.mat22)):
        b[counted(c, 0)].a = 2.0
        b[counted(c, 0)].inner.v[counted(c, 1)] = 3.0
        y[counted(c, 0)][counted(c, 1)][counted(c, 0)] = 4.0

    c = sk.zeros(1, dtype=int, device="cpu")
    b = sk.zeros(1, dtype=Body, device="cpu")
    y = sk.zeros(1, dtype=sk.mat22, device="cpu")
    sk.launch(once, 1, inputs=[c, b, y], device="cpu")
    assert c.numpy()[0] == 6
    assert b.numpy()["a"][0] == 2.0 and b.numpy()["inner"]["v"][0, 1] == 3.0
    np.testing.assert_array_equal(y.numpy()[0], [[0.0, 0.0], [4.0, 0.0]])


@sk.struct
class Holder:
    vec: sk.vec3d


@sk.func
def weighted(h: Holder) -> f64:
    return h.vec[0] + 2.0 * h.vec[1] + h.vec[2]


@sk.func_grad(weighted)
def weighted_grad(h: Holder, adj_ret: f64):
    sk.adjoint[h.vec].y = adj_ret * 5.0  # a plain assignment to part of an adjoint (it starts at zero)
    sk.adjoint[h.vec][2] += adj_ret


@sk.func
def pick_x(values: sk.array(dtype=sk.vec3d), k: int) -> f64:
    return values[k].x


@sk.func_grad(pick_x)
def pick_x_grad(values: sk.array(dtype=sk.vec3d), k: int, adj_ret: f64):
    sk.adjoint[values][k].x += adj_ret * 3.0  # into the array's gradient: a slot update


@sk.kernel
def custom_parts(hs: sk.array(dtype=Holder), values: sk.array(dtype=sk.vec3d), idx: sk.array(dtype=int),
                 out: sk.array(dtype=f64)):
    i = sk.tid()
    out[i] = weighted(hs[i]) + pick_x(values, idx[i])


def test_custom_adjoints_write_parts_of_adjoints():
    h = Holder()
    h.vec = sk.vec3d(1.0, 2.0, 3.0)
    hs = sk.array([h] * 3, dtype=Holder, requires_grad=True, device="cpu")
    values = sk.array(rand(2, 3), dtype=sk.vec3d, requires_grad=True, device="cpu")
    idx = sk.array(np.array([1, 1, 0], dtype=np.int32), dtype=int, device="cpu")
    out = sk.zeros(3, dtype=f64, requires_grad=True, device="cpu")
    tape = sk.Tape()
    with tape:
        sk.launch(custom_parts, 3, inputs=[hs, values, idx, out], device="cpu")
    tape.backward(grads={out: sk.array(np.array([1.0, 2.0, 4.0]), dtype=f64, device="cpu")})
    np.testing.assert_array_equal(hs.grad.numpy()["vec"], [[0.0, 5.0, 1.0], [0.0, 10.0, 2.0], [0.0, 20.0, 4.0]])
    np.testing.assert_array_equal(values.grad.numpy(), [[12.0, 0.0, 0.0], [9.0, 0.0, 0.0]])


def test_a_part_read_on_both_sides_of_its_write_is_refused():
    y = sk.array(rand(3, 3), dtype=sk.vec3d, requires_grad=True, device="cpu")
    x, out = (sk.array(rand(3), dtype=f64, requires_grad=True, device="cpu") for _ in range(2))
    with pytest.raises(sk.TapeError, match="reads array 'y' both before and after writing it"):
        with sk.Tape():
            sk.launch(part_read_after_its_write, 3, inputs=[x, y, out], device="cpu")

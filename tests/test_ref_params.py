"""Pass-by-reference parameters of @funcs (Warp's ``wp.ref[T]``) and ``address_of``: the ref type object,
the storage a ref parameter writes (locals, array elements, struct fields, vector/matrix/quaternion/transform
components), forwarding, tuple assignment, @func_native ref parameters, the errors for what is no storage,
and gradients through ref parameters (float64, against central finite differences)."""
from typing import Any

import numpy as np
import pytest

import simkit as sk
from simkit.kernels.errors import CompileError
from simkit.runtime.tape import TapeError


# ---------------------------------------------------------------------------- the type object


def test_ref_type_object():
    r = sk.ref[sk.int32]
    assert isinstance(r, sk.Reference)
    assert r.dtype is sk.int32 and r.value_type is sk.int32
    assert repr(r) == "wp.ref[int32]"
    assert r == sk.ref[sk.int32] and hash(r) == hash(sk.ref[sk.int32])
    assert r != sk.ref[sk.float32]
    assert sk.ref[sk.vec3].dtype is sk.vec3
    with pytest.raises(TypeError, match="not a simkit type"):
        sk.ref["nonsense"]


# ---------------------------------------------------------------------------- funcs


@sk.func
def bump(x: sk.ref[sk.int32]):
    x += 1


@sk.func
def add_to(x: sk.ref[sk.float32], delta: sk.float32):
    x += delta


@sk.func
def set_to(x: sk.ref[sk.float32], value: sk.float32):
    x = value


@sk.func
def double_it(x: sk.ref[sk.float32]):
    x = x * 2.0


@sk.func
def bump_twice(x: sk.ref[sk.int32]):
    bump(x)  # forwarding a ref parameter
    bump(x)


@sk.func
def swap(a: sk.ref[sk.float32], b: sk.ref[sk.float32]):
    a, b = b, a


@sk.func
def exchange(x: sk.ref[sk.float32], new: sk.float32) -> sk.float32:
    old = x
    x = new
    return old


@sk.func
def clamp_up(x: sk.ref[sk.float32], lo: sk.float32) -> sk.int32:
    if x < lo:  # an early return: the ref value at that point is what the caller gets
        x = lo
        return 1
    return 0


@sk.struct
class Counter:
    value: sk.int32


@sk.struct
class Inner:
    value: sk.float32


@sk.struct
class Box:
    inner: Inner
    v: sk.vec3
    m: sk.mat33
    q: sk.quat
    t: sk.transform


@sk.func
def count(c: sk.ref[Counter]):
    c.value += 1


@sk.func
def set_inner(b: sk.ref[Box], value: sk.float32):
    set_to(b.inner.value, value)  # a field of a ref parameter is storage too


@sk.func
def bump_components(v: sk.ref[sk.vec3], m: sk.ref[sk.mat33]):
    v[0] += 1.0
    m[1, 2] += 10.0


@sk.kernel(enable_backward=False)
def locals_kernel(ints: sk.array(dtype=sk.int32), out: sk.array(dtype=sk.float32)):
    n = sk.int32(0)
    bump(n)
    bump_twice(n)
    ints[0] = n
    c = Counter()
    c.value = sk.int32(5)
    count(c)
    ints[1] = c.value
    a = sk.float32(3.0)
    b = sk.float32(4.0)
    swap(a, b)
    out[0] = a
    out[1] = b
    out[2] = exchange(a, 7.0)
    out[3] = a
    double_it(a)
    out[4] = a
    x = sk.float32(-2.0)
    out[5] = sk.float32(clamp_up(x, 0.5))
    out[6] = x
    y = sk.float32(2.0)
    out[7] = sk.float32(clamp_up(y, 0.5))
    out[8] = y
    for _k in range(3):  # a loop-carried variable
        add_to(y, 1.0)
    out[9] = y


def test_ref_locals(device):
    ints = sk.zeros(2, dtype=sk.int32, device=device)
    out = sk.zeros(10, dtype=sk.float32, device=device)
    sk.launch(locals_kernel, 1, inputs=[ints, out], device=device)
    np.testing.assert_array_equal(ints.numpy(), [3, 6])
    np.testing.assert_allclose(out.numpy(), [4, 3, 4, 7, 14, 1, 0.5, 0, 2, 5])


@sk.kernel(enable_backward=False)
def storage_kernel(a: sk.array(dtype=sk.float32), grid: sk.array2d(dtype=sk.float32), boxes: sk.array(dtype=Box),
                   counters: sk.array(dtype=sk.int32), out: sk.array(dtype=sk.float32)):
    i = sk.tid()
    add_to(a[i], 10.0)
    add_to(grid[i, 1], 1.0)
    row = grid[i]
    add_to(row[0], 5.0)
    set_to(boxes[i].inner.value, sk.float32(i) + 20.0)
    set_to(boxes[i].v.y, sk.float32(i) + 30.0)
    set_to(boxes[i].m[1, 2], sk.float32(i) + 40.0)
    set_to(boxes[i].q.w, sk.float32(i) + 50.0)
    set_to(boxes[i].t.p.x, sk.float32(i) + 60.0)
    bump(counters[sk.atomic_add(counters, 3, 1)])  # the index is evaluated once
    b = Box()
    set_inner(b, 2.5)
    v = sk.vec3(1.0, 2.0, 3.0)
    m = sk.mat33(1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0)
    bump_components(v, m)
    set_to(v[-1], 9.0)
    w = v.z  # a copy of a component is a separate variable
    set_to(w, 0.0)
    q = sk.quat(1.0, 2.0, 3.0, 4.0)
    set_to(q[2], 8.0)
    out[i * 6 + 0] = b.inner.value
    out[i * 6 + 1] = v[0]
    out[i * 6 + 2] = m[1, 2]
    out[i * 6 + 3] = v.z
    out[i * 6 + 4] = w
    out[i * 6 + 5] = q.z


def test_ref_storage(device):
    a = sk.array([1.0, 2.0], dtype=sk.float32, device=device)
    grid = sk.zeros((2, 2), dtype=sk.float32, device=device)
    boxes = sk.zeros(2, dtype=Box, device=device)
    counters = sk.zeros(4, dtype=sk.int32, device=device)
    out = sk.zeros(12, dtype=sk.float32, device=device)
    sk.launch(storage_kernel, 2, inputs=[a, grid, boxes, counters, out], device=device)
    np.testing.assert_allclose(a.numpy(), [11, 12])
    np.testing.assert_allclose(grid.numpy(), [[5, 1], [5, 1]])
    np.testing.assert_array_equal(np.sort(counters.numpy()[:3]), [0, 1, 1])
    assert counters.numpy()[3] == 2
    bx = boxes.numpy()
    np.testing.assert_allclose(bx["inner"]["value"], [20, 21])
    np.testing.assert_allclose(bx["v"][:, 1], [30, 31])
    np.testing.assert_allclose(bx["m"][:, 1, 2], [40, 41])
    np.testing.assert_allclose(bx["q"][:, 3], [50, 51])
    np.testing.assert_allclose(bx["t"][:, 0], [60, 61])
    np.testing.assert_allclose(out.numpy(), [2.5, 2, 16, 9, 0, 8] * 2)


@sk.func
def add_default(x: sk.ref[sk.float32], delta: sk.float32 = 1.0):
    x += delta


@sk.kernel(enable_backward=False)
def keywords_kernel(out: sk.array(dtype=sk.float32)):
    y = sk.float32(1.0)
    add_default(delta=2.0, x=y)
    add_default(y)
    add_default(x=out[1])
    out[0] = y


def test_ref_arguments_by_keyword(device):
    out = sk.zeros(2, dtype=sk.float32, device=device)
    sk.launch(keywords_kernel, 1, inputs=[out], device=device)
    np.testing.assert_allclose(out.numpy(), [4.0, 1.0])


@sk.func
def by_value(x: sk.int32) -> sk.int32:
    x += 1
    return x


@sk.kernel(enable_backward=False)
def by_value_kernel(out: sk.array(dtype=sk.int32)):
    v = sk.int32(10)
    out[1] = by_value(v)
    out[0] = v


def test_by_value_parameters_still_copy(device):
    out = sk.zeros(2, dtype=sk.int32, device=device)
    sk.launch(by_value_kernel, 1, inputs=[out], device=device)
    np.testing.assert_array_equal(out.numpy(), [10, 11])


@sk.func
def twice(x: sk.ref[Any]):  # a generic ref parameter: one specialisation per argument type
    x = x + x


@sk.kernel(enable_backward=False)
def generic_kernel(out: sk.array(dtype=float), iout: sk.array(dtype=int)):
    a = float(1.5)
    twice(a)
    n = int(3)
    twice(n)
    v = sk.vec2(1.0, 2.0)
    twice(v)
    out[0] = a
    out[1] = v[1]
    iout[0] = n


def test_generic_ref_parameter(device):
    out = sk.zeros(2, dtype=float, device=device)
    iout = sk.zeros(1, dtype=int, device=device)
    sk.launch(generic_kernel, 1, inputs=[out, iout], device=device)
    np.testing.assert_allclose(out.numpy(), [3.0, 4.0])
    assert iout.numpy()[0] == 6


# ---------------------------------------------------------------------------- errors


def _launch(kernel, *arrays):
    sk.launch(kernel, 1, inputs=list(arrays), device="cpu")


@sk.func
def make_one() -> sk.int32:
    return sk.int32(1)


@sk.func
def make_inner() -> Inner:
    return Inner()


def test_ref_refuses_what_is_no_storage():
    @sk.kernel(enable_backward=False)
    def literal_arg():
        bump(sk.int32(5))

    with pytest.raises(CompileError, match=r"ref parameter 'x' of 'bump' cannot take 'sk.int32\(5\)'"):
        _launch(literal_arg)

    @sk.kernel(enable_backward=False)
    def result_arg():
        bump(make_one())

    with pytest.raises(CompileError, match="temporary value") as e:
        _launch(result_arg)
    assert "bump(make_one())" in str(e.value)  # the source line

    @sk.kernel(enable_backward=False)
    def result_field_arg():
        set_to(make_inner().value, 1.0)

    with pytest.raises(CompileError, match="temporary value"):
        _launch(result_field_arg)

    @sk.kernel(enable_backward=False)
    def untyped_local():
        x = 0
        bump(x)

    with pytest.raises(CompileError, match=r"x = wp\.int32\(0\)"):
        _launch(untyped_local)

    @sk.kernel(enable_backward=False)
    def untyped_float_local():
        x = 1.0
        set_to(x, 2.0)

    with pytest.raises(CompileError, match=r"x = wp\.float32\(1\.0\)"):
        _launch(untyped_float_local)


def test_ref_type_must_be_kept():
    @sk.func
    def assigns_float(x: sk.ref[sk.int32]):
        x = 1.5

    @sk.kernel(enable_backward=False)
    def k(out: sk.array(dtype=sk.int32)):
        n = sk.int32(0)
        assigns_float(n)
        out[0] = n

    with pytest.raises(CompileError, match="ref parameter 'x' is int32 but holds float32"):
        _launch(k, sk.zeros(1, dtype=sk.int32))


def test_overloads_differing_only_by_refness_are_refused():
    @sk.func
    def only_ref(x: sk.int32) -> sk.int32:
        return x

    with pytest.raises(RuntimeError, match="differ only"):
        @sk.func
        def only_ref(x: sk.ref[sk.int32]):  # noqa: F811
            x += 1


def test_kernel_parameters_cannot_be_refs():
    with pytest.raises(CompileError, match="cannot be ref"):
        @sk.kernel
        def k(x: sk.ref[sk.float32]):
            pass

        _launch(k, 1.0)


def test_custom_gradient_with_ref_parameter_is_refused():
    @sk.func
    def scaled(x: sk.ref[sk.float32], s: sk.float32):
        x = x * s

    @sk.func_grad(scaled)
    def adj_scaled(x: sk.ref[sk.float32], s: sk.float32):
        pass

    @sk.kernel
    def k(a: sk.array(dtype=sk.float32)):
        v = a[0]
        scaled(v, 2.0)
        a[0] = v

    with pytest.raises(CompileError, match="ref\\[T\\] parameters \\('x'\\): they are not supported with a custom"):
        _launch(k, sk.zeros(1, dtype=sk.float32))


# ---------------------------------------------------------------------------- gradients


@sk.func
def step(x: sk.ref[sk.float64], a: sk.float64) -> sk.float64:
    old = x
    x = x * a + sk.sin(x)
    return old * a


@sk.func
def accumulate(acc: sk.ref[sk.float64], x: sk.float64):
    acc += x * x


@sk.struct
class State:
    pos: sk.float64
    vel: sk.float64


@sk.func
def integrate(s: sk.ref[State], dt: sk.float64):
    s.vel = s.vel - dt * s.pos
    s.pos = s.pos + dt * s.vel * s.vel


@sk.kernel
def grad_kernel(x: sk.array(dtype=sk.float64), a: sk.array(dtype=sk.float64), acc: sk.array(dtype=sk.float64),
                out: sk.array(dtype=sk.float64)):
    i = sk.tid()
    v = x[i]
    r = step(v, a[i])
    step(v, a[i])
    accumulate(acc[i], v)  # an array element: read, then written
    s = State()
    s.pos = v
    s.vel = a[i]
    for _k in range(2):
        integrate(s, sk.float64(0.1))
    out[i] = v * r + s.pos * s.vel


def _grad_reference(x, a, acc):
    def step_np(v, a):
        return v * a + np.sin(v), v * a
    v, r = step_np(x, a)
    v, _ = step_np(v, a)
    acc = acc + v * v
    pos, vel = v, a
    for _ in range(2):
        vel = vel - 0.1 * pos
        pos = pos + 0.1 * vel * vel
    return v * r + pos * vel, acc


def test_gradients_through_ref_parameters(device):
    xs, as_, accs = np.array([0.3, -0.7, 1.1]), np.array([1.5, 0.4, -0.9]), np.array([0.2, 0.0, -1.0])
    x = sk.array(xs, dtype=sk.float64, requires_grad=True, device=device)
    a = sk.array(as_, dtype=sk.float64, requires_grad=True, device=device)
    acc = sk.array(accs, dtype=sk.float64, requires_grad=True, device=device)
    out = sk.zeros(3, dtype=sk.float64, requires_grad=True, device=device)
    tape = sk.Tape()
    with tape:
        sk.launch(grad_kernel, 3, inputs=[x, a, acc, out], device=device)
    want_out, want_acc = _grad_reference(xs, as_, accs)
    np.testing.assert_allclose(out.numpy(), want_out, rtol=1e-12)
    np.testing.assert_allclose(acc.numpy(), want_acc, rtol=1e-12)
    # loss = sum(out) + sum(acc * w): gradients of both outputs
    w = np.array([0.5, -1.0, 2.0])
    tape.backward(grads={out: sk.array(np.ones(3), dtype=sk.float64, device=device),
                         acc: sk.array(w, dtype=sk.float64, device=device)})

    def loss(xv, av):
        o, ac = _grad_reference(xv, av, accs)
        return o.sum() + (ac * w).sum()

    h = 1e-6
    for arr, base, k in ((x, xs, 0), (a, as_, 1)):
        fd = np.zeros(3)
        for j in range(3):
            e = np.zeros(3)
            e[j] = h
            args_p = [xs, as_]
            args_m = [xs, as_]
            args_p[k], args_m[k] = base + e, base - e
            fd[j] = (loss(*args_p) - loss(*args_m)) / (2 * h)
        np.testing.assert_allclose(arr.grad.numpy(), fd, rtol=1e-6, atol=1e-9)


@sk.func
def power_in_place(x: sk.ref[sk.float64], n: sk.int32):
    base = x
    for _k in range(n - 1):  # a dynamic loop over a ref parameter
        x = x * base


@sk.kernel
def branch_loop_kernel(x: sk.array(dtype=sk.float64), n: sk.array(dtype=sk.int32), out: sk.array(dtype=sk.float64)):
    i = sk.tid()
    v = x[i]
    if v > 0.0:  # a ref call in a branch
        power_in_place(v, n[i])
    else:
        accumulate(v, v)
    out[i] = v


def test_gradients_through_ref_parameters_in_loops_and_branches(device):
    xs, ns = np.array([0.7, -0.6, 1.3]), np.array([3, 2, 4], dtype=np.int32)
    x = sk.array(xs, dtype=sk.float64, requires_grad=True, device=device)
    n = sk.array(ns, dtype=sk.int32, device=device)
    out = sk.zeros(3, dtype=sk.float64, requires_grad=True, device=device)
    tape = sk.Tape()
    with tape:
        sk.launch(branch_loop_kernel, 3, inputs=[x, n, out], device=device)

    def f(xv):
        return np.where(xv > 0, xv ** ns, xv + xv * xv)

    np.testing.assert_allclose(out.numpy(), f(xs), rtol=1e-12)
    tape.backward(grads={out: sk.array(np.ones(3), dtype=sk.float64, device=device)})
    h = 1e-6
    np.testing.assert_allclose(x.grad.numpy(), (f(xs + h) - f(xs - h)) / (2 * h), rtol=1e-6)


# ---------------------------------------------------------------------------- @func_native


@sk.func_native("x = x + 5;")
def native_add5(x: sk.ref[sk.int32]): ...


@sk.func_native("x = y * 2.0;", adj_snippet="adj_y += 2.0 * adj_x; adj_x = 0.0;")
def native_store_double(x: sk.ref[sk.float64], y: sk.float64): ...


@sk.func_native("x = x * y; return x + 1.0;", adj_snippet="adj_y += x * (adj_x + adj_ret); "
                "adj_x = y * (adj_x + adj_ret);")
def native_scale(x: sk.ref[sk.float64], y: sk.float64) -> sk.float64: ...


@sk.kernel(enable_backward=False)
def native_forward_kernel(out: sk.array(dtype=sk.int32)):
    n = sk.int32(10)
    native_add5(n)
    out[0] = n
    native_add5(out[1])


def test_native_ref_forward(device):
    out = sk.zeros(2, dtype=sk.int32, device=device)
    sk.launch(native_forward_kernel, 1, inputs=[out], device=device)
    np.testing.assert_array_equal(out.numpy(), [15, 5])


@sk.kernel
def native_grad_kernel(x: sk.array(dtype=sk.float64), y: sk.array(dtype=sk.float64),
                       out: sk.array(dtype=sk.float64)):
    i = sk.tid()
    t = sk.float64(0.0)
    native_store_double(t, x[i])
    r = native_scale(t, y[i])
    u = t
    native_scale(u, 1.0)  # its result unused: only the ref value's adjoint flows
    out[i] = t * t + r + u


def test_native_ref_gradients(device):
    xs, ys = np.array([0.5, -1.5]), np.array([2.0, 0.25])
    x = sk.array(xs, dtype=sk.float64, requires_grad=True, device=device)
    y = sk.array(ys, dtype=sk.float64, requires_grad=True, device=device)
    out = sk.zeros(2, dtype=sk.float64, requires_grad=True, device=device)
    tape = sk.Tape()
    with tape:
        sk.launch(native_grad_kernel, 2, inputs=[x, y, out], device=device)
    # t = 2x; t' = t*y; r = t' + 1; u = t'; out = t'^2 + 2t' + 1 = (2xy)^2 + 4xy + 1
    np.testing.assert_allclose(out.numpy(), (2 * xs * ys) ** 2 + 4 * xs * ys + 1)
    tape.backward(grads={out: sk.array(np.ones(2), dtype=sk.float64, device=device)})
    np.testing.assert_allclose(x.grad.numpy(), (8 * xs * ys + 4) * ys)
    np.testing.assert_allclose(y.grad.numpy(), (8 * xs * ys + 4) * xs)


def test_native_ref_without_adjoint_is_refused_when_differentiated():
    @sk.kernel
    def k(a: sk.array(dtype=sk.int32)):
        native_add5(a[0])

    with pytest.raises(CompileError, match="Cannot call 'native_add5' with wp.ref"):
        _launch(k, sk.zeros(1, dtype=sk.int32))

    @sk.func
    def helper(a: sk.array(dtype=sk.int32)):
        native_add5(a[0])

    @sk.kernel
    def through_helper(a: sk.array(dtype=sk.int32)):
        helper(a)

    with pytest.raises(CompileError, match="through 'helper'"):
        _launch(through_helper, sk.zeros(1, dtype=sk.int32))


@sk.kernel
def reread_kernel(x: sk.array(dtype=sk.float64), dst: sk.array(dtype=sk.float64), out: sk.array(dtype=sk.float64)):
    i = sk.tid()
    native_store_double(dst[i], x[i])  # reads dst[i] (copy-in), writes it
    out[i] = dst[i]  # and reads it again: the adjoint could not replay the first read


def test_ref_array_element_read_after_write_is_refused_on_a_tape():
    x = sk.array([1.0], dtype=sk.float64, requires_grad=True)
    dst = sk.zeros(1, dtype=sk.float64, requires_grad=True)
    out = sk.zeros(1, dtype=sk.float64, requires_grad=True)
    with pytest.raises(TapeError, match="reads array 'dst' both before and after writing it"):
        with sk.Tape():
            sk.launch(reread_kernel, 1, inputs=[x, dst, out])


# ---------------------------------------------------------------------------- address_of


@sk.func_native("*(int32_t*)ptr = 42;")
def store42(ptr: sk.uint64): ...


@sk.func_native("*(float*)ptr = *(float*)ptr + 1.0f;")
def inc_at(ptr: sk.uint64): ...


@sk.kernel(enable_backward=False)
def address_kernel(ints: sk.array(dtype=sk.int32), a: sk.array(dtype=sk.float32), boxes: sk.array(dtype=Box),
                   out: sk.array(dtype=sk.float32)):
    n = sk.int32(0)
    store42(sk.address_of(n))
    ints[0] = n
    inc_at(sk.address_of(a[1]))
    inc_at(sk.address_of(boxes[0].inner.value))
    inc_at(sk.address_of(boxes[0].m[2, 1]))
    b = Inner()
    b.value = sk.float32(4.0)
    inc_at(sk.address_of(b.value))
    v = sk.vec3(1.0, 2.0, 3.0)
    inc_at(sk.address_of(v.y))
    k = ints[1]
    inc_at(sk.address_of(v[k]))
    out[0] = b.value
    out[1] = v.y
    out[2] = v.z


def test_address_of(device):
    if device != "cpu":
        pytest.skip("the native snippets use host pointers")
    ints = sk.array([0, 2], dtype=sk.int32, device=device)
    a = sk.array([1.0, 2.0], dtype=sk.float32, device=device)
    boxes = sk.zeros(1, dtype=Box, device=device)
    out = sk.zeros(3, dtype=sk.float32, device=device)
    sk.launch(address_kernel, 1, inputs=[ints, a, boxes, out], device=device)
    assert ints.numpy()[0] == 42
    np.testing.assert_allclose(a.numpy(), [1, 3])
    assert boxes.numpy()["inner"]["value"][0] == 1 and boxes.numpy()["m"][0, 2, 1] == 1
    np.testing.assert_allclose(out.numpy(), [5, 3, 4])


def test_address_of_refuses_what_is_no_storage():
    @sk.kernel(enable_backward=False)
    def expression(out: sk.array(dtype=sk.uint64)):
        x = sk.int32(1)
        out[0] = sk.address_of(x + x)

    with pytest.raises(CompileError, match="temporary value"):
        _launch(expression, sk.zeros(1, dtype=sk.uint64))

    @sk.kernel(enable_backward=False)
    def temporary_component(out: sk.array(dtype=sk.uint64)):
        out[0] = sk.address_of(sk.vec3(1.0, 2.0, 3.0).x)

    with pytest.raises(CompileError, match="temporary value"):
        _launch(temporary_component, sk.zeros(1, dtype=sk.uint64))

    @sk.kernel(enable_backward=False)
    def untyped(out: sk.array(dtype=sk.uint64)):
        x = 0
        out[0] = sk.address_of(x)

    with pytest.raises(CompileError, match=r"x = wp\.int32\(0\)"):
        _launch(untyped, sk.zeros(1, dtype=sk.uint64))

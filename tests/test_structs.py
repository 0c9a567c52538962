"""@struct: kernel parameters with scalar, vector, matrix and array fields, nested structs,
struct locals with field writes, structs through @funcs, arrays of structs."""
import numpy as np
import pytest

import simkit as sk


@sk.struct
class Params:
    scale: float
    count: int
    offset: sk.vec3
    rot: sk.mat22
    big: sk.float64
    flag: sk.bool


@sk.struct
class Particles:
    x: sk.array(dtype=sk.vec3)
    m: sk.array(dtype=float)
    n: int


@sk.struct
class Inner:
    a: float
    v: sk.vec2


@sk.struct
class Outer:
    inner: Inner
    b: int
    arr: sk.array(dtype=int)
    grid: sk.array(dtype=float, ndim=2)


@sk.kernel
def k_params(p: Params, out: sk.array(dtype=float)):
    out[0] = p.scale
    out[1] = float(p.count)
    out[2] = p.offset[1]
    out[3] = p.offset.z
    out[4] = p.rot[1, 0]
    out[5] = float(p.big)
    out[6] = 1.0 if p.flag else 0.0


def test_scalar_value_fields(device):
    p = Params()
    p.scale = 2.5
    p.count = -7
    p.offset = sk.vec3(1.0, 2.0, 3.0)
    p.rot = sk.mat22(1.0, 2.0, 3.0, 4.0)
    p.big = 1.0e300 / 1.0e299
    p.flag = True
    out = sk.zeros(7, device=device)
    sk.launch(k_params, dim=1, inputs=[p, out], device=device)
    np.testing.assert_allclose(out.numpy(), [2.5, -7.0, 2.0, 3.0, 3.0, 10.0, 1.0])


def test_struct_defaults_are_zero(device):
    out = sk.full(7, 9.0, device=device)
    sk.launch(k_params, dim=1, inputs=[Params(), out], device=device)
    np.testing.assert_array_equal(out.numpy(), 0.0)


@sk.kernel
def k_particles(p: Particles, out: sk.array(dtype=float)):
    i = sk.tid()
    if i < p.n:
        out[i] = sk.length(p.x[i]) * p.m[i]
        p.x[i] = p.x[i] * 2.0  # write through an array field
        p.m[i] += 1.0


def test_array_fields(device):
    n = 6
    xs = np.random.default_rng(0).normal(size=(n, 3)).astype(np.float32)
    p = Particles()
    p.x = sk.array(xs, dtype=sk.vec3, device=device)
    p.m = sk.array(np.arange(n, dtype=np.float32), device=device)
    p.n = 4
    out = sk.zeros(n, device=device)
    sk.launch(k_particles, dim=n, inputs=[p, out], device=device)
    ref = np.linalg.norm(xs, axis=1) * np.arange(n)
    ref[4:] = 0
    np.testing.assert_allclose(out.numpy(), ref, rtol=1e-6)
    np.testing.assert_allclose(p.x.numpy()[:4], xs[:4] * 2)
    np.testing.assert_allclose(p.x.numpy()[4:], xs[4:])
    np.testing.assert_allclose(p.m.numpy(), [1, 2, 3, 4, 4, 5])


@sk.kernel
def k_nested(o: Outer, out: sk.array(dtype=float)):
    i = sk.tid()
    out[i] = o.inner.a * float(o.arr[i]) + o.inner.v.y + float(o.b) + o.grid[i, 1]


def test_nested_struct(device):
    o = Outer()
    o.inner = Inner()
    o.inner.a = 3.0
    o.inner.v = sk.vec2(0.0, 0.5)
    o.b = 10
    o.arr = sk.array(np.array([1, 2, 3], dtype=np.int32), device=device)
    o.grid = sk.array(np.arange(6, dtype=np.float32).reshape(3, 2), device=device)
    out = sk.zeros(3, device=device)
    sk.launch(k_nested, dim=3, inputs=[o, out], device=device)
    np.testing.assert_allclose(out.numpy(), 3.0 * np.array([1, 2, 3]) + 0.5 + 10 + np.array([1, 3, 5]))


@sk.func
def make_inner(a: float):
    s = Inner()
    s.a = a
    s.v = sk.vec2(a, -a)
    return s


@sk.func
def inner_sum(s: Inner):
    return s.a + s.v[0] - s.v[1]


@sk.func
def bump_inner(s: Inner):
    s.a = s.a + 100.0  # a copy: the caller's struct is unchanged (value semantics)
    return s.a


@sk.kernel
def k_locals(out: sk.array(dtype=float)):
    i = sk.tid()
    s = Inner()
    s.a = float(i)
    s.v = sk.vec2(1.0, 2.0)
    s.v[1] = 5.0  # component write through a field
    s.v.x = s.v.x + 0.5
    t = s  # copy
    t.a = -1.0
    o = Outer()
    o.inner.a = 2.0  # nested field write
    o.inner.v.y = 3.0
    o.b = i * 2
    out[i * 8 + 0] = s.a
    out[i * 8 + 1] = s.v[0]
    out[i * 8 + 2] = s.v[1]
    out[i * 8 + 3] = t.a
    out[i * 8 + 4] = o.inner.a + o.inner.v.y + float(o.b)
    m = make_inner(float(i) + 1.0)
    out[i * 8 + 5] = inner_sum(m)
    r = bump_inner(m)
    out[i * 8 + 6] = r
    out[i * 8 + 7] = m.a


def test_struct_locals_and_funcs(device):
    out = sk.zeros(16, device=device)
    sk.launch(k_locals, dim=2, inputs=[out], device=device)
    for i in range(2):
        a = i + 1.0
        np.testing.assert_allclose(out.numpy()[i * 8:(i + 1) * 8],
                                   [i, 1.5, 5.0, -1.0, 5.0 + 2 * i, 3 * a, a + 100, a])


@sk.kernel
def k_struct_in_branch_and_loop(n: int, out: sk.array(dtype=float)):
    i = sk.tid()
    s = Inner()
    if i % 2 == 0:
        s.a = 1.0
    else:
        s.a = 2.0
    for k in range(n):
        s.a = s.a * 2.0
        s.v = s.v + sk.vec2(1.0, 0.0)
    out[i] = s.a + s.v[0]


def test_struct_phi(device):
    out = sk.zeros(4, device=device)
    sk.launch(k_struct_in_branch_and_loop, dim=4, inputs=[3, out], device=device)
    np.testing.assert_allclose(out.numpy(), [11.0, 19.0, 11.0, 19.0])


@sk.kernel
def k_array_of_structs(src: sk.array(dtype=Inner), dst: sk.array(dtype=Inner)):
    i = sk.tid()
    s = src[i]
    s.a = s.a * 2.0
    s.v = sk.vec2(s.v[1], s.v[0])
    dst[i] = s


def test_array_of_structs(device):
    n = 5
    rec = np.zeros(n, dtype=sk.zeros(1, dtype=Inner, device="cpu").numpy().dtype)  # the structured dtype
    rec["a"] = np.arange(n)
    rec["v"] = np.stack([np.arange(n), -np.arange(n)], axis=1)
    src = sk.array(rec, dtype=Inner, device=device)
    dst = sk.zeros(n, dtype=Inner, device=device)
    sk.launch(k_array_of_structs, dim=n, inputs=[src, dst], device=device)
    d = dst.numpy()
    np.testing.assert_allclose(d["a"], 2 * np.arange(n))
    np.testing.assert_allclose(d["v"], np.stack([-np.arange(n), np.arange(n)], axis=1))


def test_struct_field_assignment_checks():
    p = Params()
    p.offset = (4.0, 5.0, 6.0)  # converted to vec3
    assert isinstance(p.offset, sk.vec3) and p.offset.tolist() == [4.0, 5.0, 6.0]
    try:
        p.nonexistent = 1
    except AttributeError as e:
        assert "nonexistent" in str(e)
    else:
        raise AssertionError("unknown field accepted")
    with pytest.raises(TypeError, match="field 'offset' expects vec3 but got a single value"):
        p.offset = 2.0  # (not broadcast to every component, as Warp refuses it)
    p.offset = None  # zero-initialized
    assert p.offset.tolist() == [0.0, 0.0, 0.0]


@sk.struct
class Tagged:
    index: sk.int32 = -1
    weight: float = 0.5
    pos: sk.vec3 = (1.0, 2.0, 3.0)
    data: sk.array(dtype=float)


@sk.kernel
def read_tagged(t: Tagged, out: sk.array(dtype=float)):
    out[0] = float(t.index) + t.weight + t.pos[2]
    out[1] = t.data[0]


def test_struct_defaults_checks_and_inheritance(device):
    t = Tagged()
    assert t.index == -1 and isinstance(t.index, np.int32) and t.pos.tolist() == [1.0, 2.0, 3.0]
    with pytest.raises(TypeError, match="field 'data' expects array\\(dtype=float32, ndim=1\\) \\(or None\\), got "
                                        "array\\(dtype=float64"):
        t.data = sk.zeros(2, dtype=sk.float64)
    with pytest.raises(TypeError, match="field 'data' expects .*, got list"):
        t.data = [1.0, 2.0]
    t.data = sk.full(1, 7.0, device=device)
    out = sk.zeros(2, device=device)
    sk.launch(read_tagged, 1, inputs=[t, out], device=device)
    np.testing.assert_array_equal(out.numpy(), [-1.0 + 0.5 + 3.0, 7.0])
    with pytest.raises(RuntimeError, match="must be defined as base classes"):
        @sk.struct
        class Derived(Tagged):
            extra: float


@sk.kernel
def k_outer_partial(o: Outer, out: sk.array(dtype=float)):
    i = sk.tid()
    out[i] = float(o.arr[i] + o.b)


def test_unset_array_field_is_allowed_when_unused(device):
    # o.grid stays None (a null array): a kernel that never indexes it runs
    o = Outer()
    o.b = 1
    o.arr = sk.array(np.array([4, 5], dtype=np.int32), device=device)
    out = sk.zeros(2, device=device)
    sk.launch(k_outer_partial, dim=2, inputs=[o, out], device=device)
    np.testing.assert_allclose(out.numpy(), [5.0, 6.0])


@sk.kernel
def k_struct_constructor(out: sk.array(dtype=float)):
    s = Inner(2.0, sk.vec2(1.0, 3.0))
    t = Inner(a=5, v=sk.vec2(0.0, 7.0))  # an int literal for a float field
    u = Inner(v=sk.vec2(4.0, 0.0))  # unnamed fields are zero
    out[0] = s.a + s.v[1]
    out[1] = t.a + t.v[1]
    out[2] = u.a + u.v[0]


def test_struct_constructor_arguments(device):
    out = sk.zeros(3, device=device)
    sk.launch(k_struct_constructor, dim=1, inputs=[out], device=device)
    np.testing.assert_allclose(out.numpy(), [5.0, 12.0, 4.0])


def test_struct_arrays_from_instances(device):
    items = [Inner(a=1.0, v=sk.vec2(2.0, 3.0)), Inner(a=-1.0), Inner(v=sk.vec2(0.5, 0.25))]
    src = sk.array(items, dtype=Inner, device=device)
    assert src.shape == (3,)
    d = src.numpy()
    np.testing.assert_array_equal(d["a"], [1.0, -1.0, 0.0])
    np.testing.assert_array_equal(d["v"], [[2, 3], [0, 0], [0.5, 0.25]])
    filled = sk.zeros(4, dtype=Inner, device=device).fill_(Inner(a=7.0, v=sk.vec2(1.0, 2.0)))
    np.testing.assert_array_equal(filled.numpy()["a"], 7.0)
    np.testing.assert_array_equal(filled.numpy()["v"], [[1, 2]] * 4)
    dst = sk.zeros(3, dtype=Inner, device=device)
    sk.launch(k_array_of_structs, dim=3, inputs=[src, dst], device=device)
    np.testing.assert_array_equal(dst.numpy()["a"], [2.0, -2.0, 0.0])


@sk.struct
class Wrapper:
    inner: Inner
    b: int
    arr: sk.array(dtype=int)


def test_elements_and_list_read_back_as_python_objects(device):
    items = [Inner(a=1.5, v=sk.vec2(2.0, 3.0)), Inner(a=-1.0)]
    src = sk.array(items, dtype=Inner, device=device)
    for got, want in zip(src.list() + [src[0], src[1]], items + items):
        assert isinstance(got, Inner) and isinstance(got.v, sk.vec2)
        assert got.a == want.a and got.v.tolist() == want.v.tolist()
    w = sk.zeros(1, dtype=Wrapper, device=device).fill_(Wrapper(inner=items[0], b=7))
    back = w.list()[0]
    assert isinstance(back.inner, Inner) and back.inner.a == 1.5 and back.b == 7 and back.arr is None
    m = sk.array(np.arange(8.0).reshape(2, 2, 2), dtype=sk.vec2, device=device)    # 2x2 of vec2: flattened
    assert [v.tolist() for v in m.list()] == [[0, 1], [2, 3], [4, 5], [6, 7]] and isinstance(m.list()[0], sk.vec2)
    assert sk.array([[1, 2], [3, 4]], dtype=int, device=device).list() == [1, 2, 3, 4]


@sk.struct
class Dual:
    re: sk.float64
    im: sk.float64


@sk.func
def add(a: Dual, b: Dual):
    return Dual(a.re + b.re, a.im + b.im)


@sk.func
def mul(a: Dual, b: Dual):
    return Dual(a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re)


@sk.func
def neg(a: Dual):
    return Dual(-a.re, -a.im)


@sk.func
def lt(a: Dual, b: Dual):
    return a.re * a.re + a.im * a.im < b.re * b.re + b.im * b.im


@sk.kernel
def k_struct_operators(x: sk.array(dtype=sk.float64), out: sk.array(dtype=sk.float64)):
    i = sk.tid()
    a = Dual(x[i], 2.0)
    b = Dual(3.0, x[i])
    c = a * b + (-a)
    c += b
    out[i] = c.re + 10.0 * c.im
    if a < b:
        out[i] += 1000.0


def test_operators_on_structs_call_the_funcs_named_for_them(device):
    xv = np.array([0.5, -4.0, 2.0])
    x = sk.array(xv, dtype=sk.float64, requires_grad=True, device=device)
    out = sk.zeros(3, dtype=sk.float64, requires_grad=True, device=device)
    with sk.Tape() as tape:
        sk.launch(k_struct_operators, 3, inputs=[x], outputs=[out], device=device)
    a, b = xv + 2j, 3.0 + 1j * xv
    c = a * b - a + b
    np.testing.assert_allclose(out.numpy(), c.real + 10 * c.imag + 1000.0 * (np.abs(a) < np.abs(b)))
    tape.backward(grads={out: np.ones(3)})
    dc = (1 * b + a * 1j) - 1 + 1j                      # d c / d x
    np.testing.assert_allclose(x.grad.numpy(), dc.real + 10 * dc.imag)


def test_an_operator_on_a_struct_without_its_func_is_a_clear_error():
    @sk.kernel
    def k(out: sk.array(dtype=float)):
        a = Inner(1.0, sk.vec2(0.0, 0.0))
        b = a - a

    with pytest.raises(sk.CompileError, match="operator 'sub' on struct 'Inner': define a @func named 'sub'"):
        sk.launch(k, 1, inputs=[sk.zeros(1)], device="cpu")


@sk.struct
class Holder:
    inner: Particles


@sk.kernel
def k_struct_loss(h: Holder, loss: sk.array(dtype=float)):
    i = sk.tid()
    sk.atomic_add(loss, 0, h.inner.m[i] * 3.0)


def test_tape_gradients_and_zero_reach_arrays_inside_structs(device):
    h = Holder()
    h.inner = Particles()
    h.inner.m = sk.array([1.0, 2.0], dtype=float, requires_grad=True, device=device)
    loss = sk.zeros(1, dtype=float, requires_grad=True, device=device)
    with sk.Tape() as tape:
        sk.launch(k_struct_loss, 2, inputs=[h, loss], device=device)
    tape.backward(loss)
    np.testing.assert_array_equal(h.inner.m.grad.numpy(), [3.0, 3.0])
    assert any(a is h.inner.m for a in tape.gradients)
    g = tape.gradients[h]  # as in Warp: a struct of the gradients (nested, None where none)
    assert isinstance(g, Holder) and g.inner.m is h.inner.m.grad
    np.testing.assert_array_equal(g.inner.m.numpy(), [3.0, 3.0])
    tape.zero()
    np.testing.assert_array_equal(h.inner.m.grad.numpy(), [0.0, 0.0])


def _make_counter_struct():
    @sk.struct
    class Counter:
        x: int

    return Counter


CounterA, CounterB = _make_counter_struct(), _make_counter_struct()  # two classes, one layout (one C name)


@sk.kernel
def two_identical_structs(s1: CounterA, s2: CounterB, out: sk.array(dtype=int)):
    out[0] = s1.x
    out[1] = s2.x
    local = CounterB()
    local.x = s1.x + s2.x
    out[2] = local.x


def test_identical_structs_from_one_factory_share_one_definition():
    s1, s2 = CounterA(), CounterB()
    s1.x, s2.x = 17, 42
    out = sk.zeros(3, dtype=int)
    sk.launch(two_identical_structs, 1, inputs=[s1, s2, out])
    np.testing.assert_array_equal(out.numpy(), [17, 42, 59])


@sk.struct
class ToInner:
    z: sk.array(dtype=float)


@sk.struct
class ToOuter:
    x: sk.array(dtype=float)
    inner: ToInner
    k: int
    iarr: sk.indexedarray(dtype=float)


def test_struct_to_moves_array_fields(cuda_device):
    """Warp's Struct.to(device): a copy whose array fields (nested ones and indexed arrays too) are on the device;
    an indexed array arrives gathered, without indices."""
    o = ToOuter()
    o.x = sk.array([1.0, 2.0], device="cpu")
    o.inner = ToInner()
    o.inner.z = sk.array([3.0, 4.0], device="cpu")
    o.k = 5
    o.iarr = sk.indexedarray(sk.array([10.0, 11.0, 12.0, 13.0], device="cpu"), [sk.array([3, 1], dtype=int, device="cpu")])
    g = o.to(cuda_device)
    assert g.x.device == cuda_device and g.inner.z.device == cuda_device and g.k == 5
    assert g.iarr.device == cuda_device and g.iarr.indices == [None]
    np.testing.assert_array_equal(g.inner.z.numpy(), [3.0, 4.0])
    np.testing.assert_array_equal(g.iarr.numpy(), [13.0, 11.0])
    back = g.to("cpu")
    assert back.x.device == "cpu" and back is not o
    np.testing.assert_array_equal(back.x.numpy(), [1.0, 2.0])


@sk.struct
class Body:
    a: sk.float64
    v: sk.vec3d
    i: int


@sk.func
def make_body(x: sk.float64, u: sk.vec3d):
    s = Body()
    s.a = x * x
    s.v = u * x
    s.i = 3
    return s


@sk.func
def body_energy(s: Body, y: sk.float64):
    return s.a * y + sk.length(s.v)


@sk.kernel
def k_struct_values(x: sk.array(dtype=sk.float64), out: sk.array(dtype=sk.float64)):
    i = sk.tid()
    a = x[i]
    s = make_body(a, sk.vec3d(a, sk.float64(1.0), sk.float64(2.0)))
    s.v[1] = a * sk.float64(3.0)  # a component of a vector field
    s2 = s  # a copy: writing it leaves s as it is
    s2.a = sk.sin(a)
    out[i] = body_energy(s, a) + body_energy(s2, a) + sk.float64(s.i)


def test_gradients_through_struct_values(device):
    """Struct locals are values: made in a @func, a component of a vector field written, copied and the copy's
    field written; the gradient matches central differences (warp-lang 1.19 loses the part through the
    component write: 7.75 where the differences give 10.26 at x = 0.7; found by tools/fuzz_kernels.py)."""
    xs = np.array([0.7, -0.3, 1.2])

    def expected(a):
        v = np.array([a * a, 3 * a, 2 * a])
        return a ** 3 + np.sin(a) * a + 2 * np.linalg.norm(v) + 3

    def run(values, grad=False):
        x = sk.array(values, dtype=sk.float64, requires_grad=True, device=device)
        out = sk.zeros(3, dtype=sk.float64, requires_grad=True, device=device)
        tape = sk.Tape()
        with tape:
            sk.launch(k_struct_values, dim=3, inputs=[x, out], device=device)
        if grad:
            tape.backward(grads={out: np.ones(3)})
            return x.grad.numpy()
        return out.numpy()

    np.testing.assert_allclose(run(xs), [expected(a) for a in xs], rtol=1e-12)
    h = 1e-6
    np.testing.assert_allclose(run(xs, grad=True), (run(xs + h) - run(xs - h)) / (2 * h), rtol=1e-7)
    v, dv = np.stack([xs * xs, 3 * xs, 2 * xs]), np.stack([2 * xs, 3 + 0 * xs, 2 + 0 * xs])
    analytic = 3 * xs ** 2 + np.sin(xs) + xs * np.cos(xs) + 2 * (v * dv).sum(0) / np.linalg.norm(v, axis=0)
    np.testing.assert_allclose(run(xs, grad=True), analytic, rtol=1e-12)

"""Augmented assignment (``target op= value``) runs as Python runs it: the target's index expressions once,
then the target's current value, then the right-hand side once, then the store. Every target form is
checked (array element, struct field / vector component / matrix row or entry of an array element, 2D
arrays, locals), forward against numpy and backward against central finite differences (float64)."""
import contextlib

import numpy as np
import pytest

import simkit as sk

f64 = sk.float64


@sk.struct
class Body:
    value: f64
    vel: sk.vec3d


@sk.func
def count_index(counter: sk.array(dtype=int), i: int) -> int:
    sk.atomic_add(counter, 0, 1)
    return i


@sk.func
def count_value(counter: sk.array(dtype=int), v: f64) -> f64:
    sk.atomic_add(counter, 0, 1)
    return v


@sk.kernel
def field_of_element(ic: sk.array(dtype=int), rc: sk.array(dtype=int), x: sk.array(dtype=f64),
                     data: sk.array(dtype=Body)):
    i = sk.tid()
    data[count_index(ic, i)].value += count_value(rc, x[i] * x[i])


@sk.kernel
def nested_component(ic: sk.array(dtype=int), x: sk.array(dtype=f64), data: sk.array(dtype=Body)):
    i = sk.tid()
    data[count_index(ic, i)].vel.y *= sk.sin(x[i])


@sk.kernel
def vector_components(ic: sk.array(dtype=int), x: sk.array(dtype=f64), v: sk.array(dtype=sk.vec3d)):
    i = sk.tid()
    v[count_index(ic, i)][1] *= x[i]
    v[count_index(ic, i)].x -= sk.cos(x[i])
    v[count_index(ic, i)] += sk.vec3d(x[i], 0.0, 2.0 * x[i])


@sk.kernel
def matrix_slots(ic: sk.array(dtype=int), x: sk.array(dtype=f64), m: sk.array(dtype=sk.mat33d)):
    i = sk.tid()
    m[count_index(ic, i)][1] += sk.vec3d(x[i], x[i] * x[i], 1.0)
    m[count_index(ic, i)][2, 0] *= x[i]
    m[count_index(ic, i)][0][2] -= x[i]


@sk.kernel
def element_2d(ic: sk.array(dtype=int), x: sk.array(dtype=f64), a: sk.array2d(dtype=f64)):
    i = sk.tid()
    a[count_index(ic, i), count_index(ic, 1)] += x[i] * 3.0
    a[count_index(ic, i), count_index(ic, 0)] *= x[i]


@sk.kernel
def local_targets(ic: sk.array(dtype=int), rc: sk.array(dtype=int), x: sk.array(dtype=f64),
                  out: sk.array(dtype=sk.vec3d)):
    i = sk.tid()
    v = sk.vec3d(1.0, 2.0, 3.0)
    v[count_index(ic, 2)] *= count_value(rc, x[i])
    m = sk.mat33d()
    m[count_index(ic, 1), count_index(ic, 1)] += x[i]
    s = Body()
    s.vel[count_index(ic, 0)] += count_value(rc, x[i] * x[i])
    out[i] = v + m[1] + s.vel


@sk.func
def bump(state: sk.array(dtype=int)) -> int:
    i = state[0]
    state[0] = 1
    return i


@sk.func
def read_state(state: sk.array(dtype=int)) -> float:
    return float(state[0]) * 100.0


@sk.kernel
def target_before_rhs(dst: sk.array(dtype=sk.mat33), state: sk.array(dtype=int)):
    dst[bump(state)][1] += sk.vec3(read_state(state), 0.0, 0.0)


def counters(n=2):
    return [sk.zeros(1, dtype=int) for _ in range(n)]


def grads(kernel, make_inputs, diff, out_name, weights):
    """Tape gradients of sum(weights * out) against the arrays named in ``diff`` (their values before the
    launch), and the same by central differences."""
    arrs = make_inputs()
    for k in diff:
        arrs[k] = sk.array(arrs[k].numpy(), dtype=arrs[k].dtype, requires_grad=True)
    if out_name not in diff:
        arrs[out_name] = sk.array(arrs[out_name].numpy(), dtype=arrs[out_name].dtype, requires_grad=True)
    tape = sk.Tape()
    with tape:
        sk.launch(kernel, dim=len(arrs["x"]), inputs=list(arrs.values()))
    tape.backward(grads={arrs[out_name]: sk.array(weights, dtype=arrs[out_name].dtype)})
    got = {k: arrs[k].grad.numpy().astype(np.float64) for k in diff}

    def loss(key, values):
        a = make_inputs()
        a[key] = sk.array(values, dtype=a[key].dtype)
        sk.launch(kernel, dim=len(a["x"]), inputs=list(a.values()))
        return float(np.sum(np.asarray(a[out_name].numpy(), dtype=np.float64) * weights))

    h = 1e-6
    for k in diff:
        base = np.asarray(make_inputs()[k].numpy(), dtype=np.float64)
        fd = np.zeros(base.shape)
        for idx in np.ndindex(*base.shape):
            p, m = base.copy(), base.copy()
            p[idx] += h
            m[idx] -= h
            fd[idx] = (loss(k, p) - loss(k, m)) / (2 * h)
        np.testing.assert_allclose(got[k].reshape(fd.shape), fd, rtol=1e-6, atol=1e-7, err_msg=k)


X = np.array([0.7, -1.3, 2.1])
rng = np.random.default_rng(3)


def body_np(n=3):
    d = np.zeros(n, dtype=[("value", "f8"), ("vel", "f8", 3)])
    d["value"] = [10.0, 20.0, 30.0]
    d["vel"] = rng.uniform(-1, 1, (n, 3))
    return d


BODIES = body_np()


def bodies():
    return sk.array(BODIES.copy(), dtype=Body)


def test_field_of_element_once_and_value():
    ic, rc = counters()
    data = bodies()
    sk.launch(field_of_element, 3, inputs=[ic, rc, sk.array(X, dtype=f64), data])
    assert ic.numpy()[0] == 3 and rc.numpy()[0] == 3
    np.testing.assert_allclose(data.numpy()["value"], BODIES["value"] + X * X)


def test_nested_component_once_and_grad():
    ic = sk.zeros(1, dtype=int)
    data = bodies()
    sk.launch(nested_component, 3, inputs=[ic, sk.array(X, dtype=f64), data])
    assert ic.numpy()[0] == 3
    want = BODIES["vel"].copy()
    want[:, 1] *= np.sin(X)
    np.testing.assert_allclose(data.numpy()["vel"], want)


V0 = rng.uniform(-1, 1, (3, 3))
M0 = rng.uniform(-1, 1, (3, 3, 3))
A0 = rng.uniform(-1, 1, (3, 3))


def test_vector_components_once_and_value():
    ic = sk.zeros(1, dtype=int)
    v = sk.array(V0, dtype=sk.vec3d)
    sk.launch(vector_components, 3, inputs=[ic, sk.array(X, dtype=f64), v])
    assert ic.numpy()[0] == 9
    want = V0.copy()
    want[:, 1] *= X
    want[:, 0] -= np.cos(X)
    want += np.stack([X, 0 * X, 2 * X], 1)
    np.testing.assert_allclose(v.numpy(), want)


def test_matrix_slots_once_and_value():
    ic = sk.zeros(1, dtype=int)
    m = sk.array(M0, dtype=sk.mat33d)
    sk.launch(matrix_slots, 3, inputs=[ic, sk.array(X, dtype=f64), m])
    assert ic.numpy()[0] == 9
    want = M0.copy()
    want[:, 1] += np.stack([X, X * X, np.ones(3)], 1)
    want[:, 2, 0] *= X
    want[:, 0, 2] -= X
    np.testing.assert_allclose(m.numpy(), want)


def test_element_2d_once_and_value():
    ic = sk.zeros(1, dtype=int)
    a = sk.array(A0, dtype=f64)
    sk.launch(element_2d, 3, inputs=[ic, sk.array(X, dtype=f64), a])
    assert ic.numpy()[0] == 12
    want = A0.copy()
    want[:, 1] += 3 * X
    want[:, 0] *= X
    np.testing.assert_allclose(a.numpy(), want)


def test_local_targets_once_and_value():
    ic, rc = counters()
    out = sk.zeros(3, dtype=sk.vec3d)
    sk.launch(local_targets, 3, inputs=[ic, rc, sk.array(X, dtype=f64), out])
    assert ic.numpy()[0] == 3 * 4 and rc.numpy()[0] == 3 * 2
    want = np.stack([1.0 + X * X, 2.0 + X, 3.0 * X], 1)
    np.testing.assert_allclose(out.numpy(), want)


def test_target_indices_before_rhs():
    dst = sk.zeros(2, dtype=sk.mat33)
    state = sk.zeros(1, dtype=int)
    sk.launch(target_before_rhs, 1, inputs=[dst, state])
    want = np.zeros((2, 3, 3), dtype=np.float32)
    want[0, 1, 0] = 100.0
    np.testing.assert_array_equal(dst.numpy(), want)


W3 = np.array([0.3, -1.1, 0.8])


@sk.kernel
def grad_vec_entry(ic: sk.array(dtype=int), x: sk.array(dtype=f64), v: sk.array(dtype=sk.vec3d)):
    i = sk.tid()
    v[count_index(ic, i)][1] *= x[i] * x[i]


@sk.kernel
def grad_vec_attr(ic: sk.array(dtype=int), x: sk.array(dtype=f64), v: sk.array(dtype=sk.vec3d)):
    i = sk.tid()
    v[count_index(ic, i)].x -= sk.cos(x[i])


@sk.kernel
def grad_mat_row(ic: sk.array(dtype=int), x: sk.array(dtype=f64), m: sk.array(dtype=sk.mat33d)):
    i = sk.tid()
    m[count_index(ic, i)][1] += sk.vec3d(x[i], x[i] * x[i], 1.0)


@sk.kernel
def grad_mat_entry(ic: sk.array(dtype=int), x: sk.array(dtype=f64), m: sk.array(dtype=sk.mat33d)):
    i = sk.tid()
    m[count_index(ic, i)][2, 0] *= x[i]


@sk.kernel
def grad_2d(ic: sk.array(dtype=int), x: sk.array(dtype=f64), a: sk.array2d(dtype=f64)):
    i = sk.tid()
    a[count_index(ic, i), count_index(ic, 0)] *= sk.exp(x[i])


@sk.kernel
def grad_1d_div(ic: sk.array(dtype=int), x: sk.array(dtype=f64), a: sk.array2d(dtype=f64)):
    i = sk.tid()
    a[count_index(ic, i), 2] /= x[i]


def _x():
    return sk.array(X, dtype=f64)


GRAD_CASES = {
    "vec_entry": (grad_vec_entry, lambda: sk.array(V0, dtype=sk.vec3d), (3, 3)),
    "vec_attr": (grad_vec_attr, lambda: sk.array(V0, dtype=sk.vec3d), (3, 3)),
    "mat_row": (grad_mat_row, lambda: sk.array(M0, dtype=sk.mat33d), (3, 3, 3)),
    "mat_entry": (grad_mat_entry, lambda: sk.array(M0, dtype=sk.mat33d), (3, 3, 3)),
    "2d": (grad_2d, lambda: sk.array(A0, dtype=f64), (3, 3)),
    "div": (grad_1d_div, lambda: sk.array(A0, dtype=f64), (3, 3)),
}


@pytest.mark.parametrize("case", sorted(GRAD_CASES))
def test_array_slot_gradients_match_finite_differences(case):
    kernel, target, shape = GRAD_CASES[case]
    grads(kernel, lambda: {"ic": sk.zeros(1, dtype=int), "x": _x(), "t": target()}, ["x", "t"], "t",
          rng.uniform(-1, 1, shape))


def test_local_target_gradients_match_finite_differences():
    grads(local_targets, lambda: {"ic": sk.zeros(1, dtype=int), "rc": sk.zeros(1, dtype=int), "x": _x(),
                                  "out": sk.zeros(3, dtype=sk.vec3d)}, ["x"], "out", rng.uniform(-1, 1, (3, 3)))


def test_struct_field_gradients():
    x = sk.array(X, dtype=f64, requires_grad=True)
    data = sk.array(BODIES.copy(), dtype=Body, requires_grad=True)
    tape = sk.Tape()
    with tape:
        sk.launch(field_of_element, 3, inputs=[*counters(), x, data])
    g = np.zeros(3, dtype=BODIES.dtype)
    g["value"] = W3
    tape.backward(grads={data: sk.array(g, dtype=Body)})
    np.testing.assert_allclose(x.grad.numpy(), 2 * X * W3, rtol=1e-12)
    np.testing.assert_allclose(data.grad.numpy()["value"], W3, rtol=1e-12)


def test_nested_struct_component_gradients():
    x = sk.array(X, dtype=f64, requires_grad=True)
    data = sk.array(BODIES.copy(), dtype=Body, requires_grad=True)
    tape = sk.Tape()
    with tape:
        sk.launch(nested_component, 3, inputs=[sk.zeros(1, dtype=int), x, data])
    g = np.zeros(3, dtype=BODIES.dtype)
    g["vel"][:, 1] = W3
    g["value"] = 1.0
    tape.backward(grads={data: sk.array(g, dtype=Body)})
    np.testing.assert_allclose(x.grad.numpy(), W3 * BODIES["vel"][:, 1] * np.cos(X), rtol=1e-12)
    gd = data.grad.numpy()
    np.testing.assert_allclose(gd["vel"][:, 1], W3 * np.sin(X), rtol=1e-12)
    np.testing.assert_allclose(gd["vel"][:, 0], 0.0)
    np.testing.assert_allclose(gd["value"], 1.0)


@sk.kernel
def collide(x: sk.array(dtype=f64), v: sk.array(dtype=sk.vec3d), m: sk.array(dtype=sk.mat22d),
            q: sk.array(dtype=sk.quatd)):
    i = sk.tid()
    v[0].y += x[i]
    v[0][2] -= 2.0 * x[i]
    m[0][1, 0] += x[i] * x[i]
    m[0][0] += sk.vec2d(1.0, x[i])
    q[0].w += 1.0


@sk.kernel
def collide_bits(b: sk.array(dtype=sk.vec2i)):
    i = sk.tid()
    b[0][0] |= 1 << (i % 31)
    b[0].y ^= i
    b[1][i % 2] &= ~(1 << (i % 31))


def test_component_updates_of_one_element_are_atomic():
    """Many threads update components of one element: each update is atomic (as Warp), none is lost."""
    n = 20000
    xs = np.random.default_rng(5).uniform(-1, 1, n)
    x = sk.array(xs, dtype=f64, requires_grad=True)
    v = sk.zeros(1, dtype=sk.vec3d, requires_grad=True)
    m = sk.zeros(1, dtype=sk.mat22d, requires_grad=True)
    q = sk.zeros(1, dtype=sk.quatd, requires_grad=True)
    tape = sk.Tape()
    with tape:
        sk.launch(collide, n, inputs=[x, v, m, q])
    np.testing.assert_allclose(v.numpy()[0], [0.0, xs.sum(), -2 * xs.sum()], rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(m.numpy()[0], [[n, xs.sum()], [(xs * xs).sum(), 0.0]], rtol=1e-9)
    assert q.numpy()[0][3] == n
    # the gradient of each component update is that component's: no read of the element to replay
    tape.backward(grads={v: sk.array([[0.5, 2.0, 3.0]], dtype=sk.vec3d), m: sk.array([[[1.0, 4.0], [-1.0, 7.0]]],
                                                                                        dtype=sk.mat22d)})
    np.testing.assert_allclose(x.grad.numpy(), 2.0 - 2 * 3.0 + 4.0 - 2 * xs, rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(v.grad.numpy(), [[0.5, 2.0, 3.0]])


def test_bitwise_component_updates_are_atomic():
    b = sk.array(np.array([[0, 0], [-1, -1]]), dtype=sk.vec2i)
    n = 4000
    sk.launch(collide_bits, n, inputs=[b])
    r = b.numpy()
    assert r[0, 0] == (1 << 31) - 1
    assert r[0, 1] == np.bitwise_xor.reduce(np.arange(n))
    assert r[1, 0] == -1 - ((1 << 31) - 1) and r[1, 1] == -1 - ((1 << 31) - 1)


# ---------------------------------------------------------------------------
# struct fields of array elements: one atomic op at the field (as Warp), any nesting depth


@sk.struct
class Joint:
    count: int
    torque: sk.vec3d


@sk.struct
class Link:
    tag: sk.int8
    mass: f64
    joint: Joint
    inertia: sk.mat22d
    flags: sk.uint32


@sk.kernel
def crowd_fields(x: sk.array(dtype=f64), links: sk.array(dtype=Link)):
    i = sk.tid()
    links[0].mass += x[i]
    links[0].joint.count += 1
    links[0].joint.torque.y -= 2.0 * x[i]
    links[0].joint.torque[i % 3] += 1.0
    links[0].inertia[1, 0] += x[i] * x[i]
    links[0].inertia[0] += sk.vec2d(1.0, x[i])
    links[1].flags |= sk.uint32(1) << sk.uint32(i % 32)
    links[1].joint.count ^= i


def test_struct_field_updates_of_one_element_are_atomic():
    """Many threads update fields (nested, components, matrix rows, bits) of one struct element: no update is
    lost, and the gradient of each field update is that field's gradient (no read of the element)."""
    n = 20000
    xs = np.random.default_rng(7).uniform(-1, 1, n)
    x = sk.array(xs, dtype=f64, requires_grad=True)
    links = sk.zeros(2, dtype=Link, requires_grad=True)
    tape = sk.Tape()
    with tape:
        sk.launch(crowd_fields, n, inputs=[x, links])
    r = links.numpy()
    np.testing.assert_allclose(r["mass"][0], xs.sum(), rtol=1e-9)
    assert r["joint"]["count"][0] == n
    counts = np.bincount(np.arange(n) % 3, minlength=3).astype(np.float64)
    np.testing.assert_allclose(r["joint"]["torque"][0], counts + [0.0, -2 * xs.sum(), 0.0], rtol=1e-9)
    np.testing.assert_allclose(r["inertia"][0], [[n, xs.sum()], [(xs * xs).sum(), 0.0]], rtol=1e-9)
    assert r["flags"][1] == 0xFFFFFFFF
    assert r["joint"]["count"][1] == np.bitwise_xor.reduce(np.arange(n))
    g = np.zeros(2, dtype=r.dtype)
    g["mass"][0] = 0.5
    g["joint"]["torque"][0] = [0.0, 3.0, 0.0]
    g["inertia"][0] = [[0.0, 4.0], [-1.0, 0.0]]
    tape.backward(grads={links: sk.array(g, dtype=Link)})
    np.testing.assert_allclose(x.grad.numpy(), 0.5 - 2 * 3.0 + 4.0 - 2 * xs, rtol=1e-12, atol=1e-12)


@sk.kernel
def field_updates(x: sk.array(dtype=f64), links: sk.array(dtype=Link)):
    i = sk.tid()
    links[i % 2].mass += x[i] * x[i]
    links[i % 2].joint.torque.z -= sk.sin(x[i])
    links[0].inertia[i % 2] += sk.vec2d(x[i], 2.0 * x[i])


@sk.kernel
def link_loss(links: sk.array(dtype=Link), loss: sk.array(dtype=f64)):
    i = sk.tid()
    t = links[i].joint.torque
    sk.atomic_add(loss, 0, 3.0 * links[i].mass + t.z * t.z + sk.ddot(links[i].inertia, links[i].inertia))


def test_struct_field_update_gradients_match_finite_differences():
    xs = np.array([0.3, -0.7, 1.1, 0.4, -0.2])
    start = np.zeros(2, dtype=sk.zeros(1, dtype=Link).numpy().dtype)
    start["mass"] = [1.0, -2.0]
    start["joint"]["torque"] = [[0.1, 0.2, 0.3], [-0.4, 0.5, 0.6]]

    def run(values, tape=None):
        x = sk.array(values, dtype=f64, requires_grad=True)
        links = sk.array(start.copy(), dtype=Link, requires_grad=True)
        loss = sk.zeros(1, dtype=f64, requires_grad=True)
        with tape if tape is not None else contextlib.nullcontext():
            sk.launch(field_updates, len(values), inputs=[x, links])
            sk.launch(link_loss, 2, inputs=[links, loss])
        return x, loss

    tape = sk.Tape()
    x, loss = run(xs, tape)
    tape.backward(loss)
    h, fd = 1e-6, np.zeros(len(xs))
    for k in range(len(xs)):
        p, m = xs.copy(), xs.copy()
        p[k] += h
        m[k] -= h
        fd[k] = (run(p)[1].numpy()[0] - run(m)[1].numpy()[0]) / (2 * h)
    np.testing.assert_allclose(x.grad.numpy(), fd, rtol=1e-6, atol=1e-8)


@sk.kernel
def small_int_field(links: sk.array(dtype=Link)):
    links[0].tag += sk.int8(3)  # (int8 has no atomics: read, update, store; one thread here)


def test_struct_field_without_atomics_is_updated():
    links = sk.zeros(1, dtype=Link)
    sk.launch(small_int_field, 1, inputs=[links])
    assert links.numpy()["tag"][0] == 3

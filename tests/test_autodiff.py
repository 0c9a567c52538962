"""Reverse-mode autodiff: exact gradients where Warp documents wrong ones, tape semantics,
checkpointed rollouts. Values are checked analytically or against finite differences."""
import tracemalloc

import numpy as np
import pytest

import simkit as sk
from codegen_helpers import adjoints

f64 = sk.float64


@sk.kernel
def prod_loop(x: sk.array(dtype=f64), n: int, out: sk.array(dtype=f64)):
    p = f64(1.0)
    for k in range(n):
        p *= x[k]
    out[0] = p


@sk.kernel
def value_after_loop(x: sk.array(dtype=f64), n: int, out: sk.array(dtype=f64)):
    s = f64(0.0)
    last = f64(0.0)
    for k in range(n):
        last = x[k] * x[k]
        s = s * 0.5 + last
    out[0] = s * last


@sk.kernel
def while_loop(x: sk.array(dtype=f64), out: sk.array(dtype=f64)):
    i = sk.tid()
    v = x[i]
    steps = int(0)
    while v < 10.0:
        v = v * 1.5 + 0.25
        steps += 1
    out[i] = v


@sk.kernel
def nested_loops(x: sk.array(dtype=f64), n: int, out: sk.array(dtype=f64)):
    s = f64(0.0)
    for a in range(n):
        t = f64(1.0)
        for b in range(a + 1):
            t = t * x[b]
        s += t
    out[0] = s


@sk.kernel
def inplace_locals(x: sk.array(dtype=f64), y: sk.array(dtype=f64), out: sk.array(dtype=f64)):
    i = sk.tid()
    v = x[i]
    v *= x[i]
    v /= y[i]
    v *= v
    out[i] = v


@sk.kernel
def repeated_components(x: sk.array(dtype=f64), out: sk.array(dtype=f64)):
    i = sk.tid()
    v = sk.vec3d(0.0, 0.0, 0.0)
    v[0] = x[i]
    v[0] = v[0] * x[i]
    v[1] = v[0] * 2.0
    v.z = v[1] + v.x
    m = sk.mat22d(0.0, 0.0, 0.0, 0.0)
    m[0, 1] = v[2]
    m[0, 1] = m[0, 1] * x[i]
    out[i] = m[0, 1] + v[1]


@sk.kernel
def alias_and_ternary(x: sk.array(dtype=f64), out: sk.array(dtype=f64)):
    i = sk.tid()
    a = x[i]
    b = a
    c = x[i] * 2.0 if x[i] > 0.0 else x[i] * x[i]
    out[i] = b * c


@sk.kernel
def component_write(x: sk.array(dtype=f64), y: sk.array(dtype=sk.vec3d)):
    i = sk.tid()
    y[i].x = x[i] * 3.0
    y[i][2] = x[i] * x[i]


@sk.kernel
def chain_a(x: sk.array(dtype=f64), y: sk.array(dtype=f64)):
    i = sk.tid()
    y[i] = sk.sin(x[i]) * 2.0


@sk.kernel
def chain_b(y: sk.array(dtype=f64), loss: sk.array(dtype=f64)):
    i = sk.tid()
    sk.atomic_add(loss, 0, y[i] * y[i])


@sk.kernel
def branchy(x: sk.array(dtype=f64), out: sk.array(dtype=f64)):
    i = sk.tid()
    if x[i] > 0.5:
        out[i] = x[i] * x[i] * x[i]
    elif x[i] > 0.0:
        out[i] = sk.exp(x[i])
    else:
        out[i] = -x[i]


@sk.kernel
def early_exit(x: sk.array(dtype=f64), n: int, out: sk.array(dtype=f64)):
    i = sk.tid()
    if i >= n:
        return
    s = f64(0.0)
    for k in range(10):
        if k > i:
            break
        if k == 1:
            continue
        s += x[i] * f64(k)
    out[i] = s


def arr(values, requires_grad=True, device="cpu", dtype=f64):
    return sk.array(np.asarray(values, dtype=np.float64), dtype=dtype, requires_grad=requires_grad, device=device)


@sk.kernel
def running_sums(x: sk.array(dtype=f64), n: int, out: sk.array(dtype=f64)):
    # t, u and w are sums (their adjoints read no values: saved once per loop, not per iteration);
    # s is read by a product (saved per iteration); z's adjoint reads w's value from before its loop
    i = sk.tid()
    xi = x[i]
    s = xi * xi
    t = f64(0.0)
    k = int(0)
    while k < n:
        s = s + sk.sin(xi * f64(k))
        t = t - s * xi
        k += 1
    u = f64(0.0)
    w = xi * 2.0
    z = w * w
    for _r in range(n):  # an index the body never reads
        u = u + xi * xi
    for j in range(n):
        u = u + xi * f64(j)
        if j % 2 == 0:
            w = w + xi
        else:
            w = w - 0.5 * xi
    out[i] = s * t + u * u + z * w


def backward_of(kernel, dim, inputs, outputs, device, seed=None):
    tape = sk.Tape()
    with tape:
        sk.launch(kernel, dim, inputs=inputs, outputs=outputs, device=device)
    out = outputs[-1]
    tape.backward(grads={out: np.ones(out.numpy().shape) if seed is None else seed})
    return tape


def test_loop_carried_product_is_exact(device):
    # Warp documents [0, 0, 0]-style wrong answers here; the exact gradient is 4 each
    x = arr([2.0, 2.0, 2.0], device=device)
    out = arr([0.0], device=device)
    backward_of(prod_loop, 1, [x, 3], [out], device)
    assert out.numpy()[0] == 8.0
    np.testing.assert_allclose(x.grad.numpy(), [4.0, 4.0, 4.0])


def test_value_computed_in_loop_used_after_is_finite_and_exact(device):
    xv = np.array([0.3, -0.7, 1.1, 0.4])
    x = arr(xv, device=device)
    out = arr([0.0], device=device)
    backward_of(value_after_loop, 1, [x, 4], [out], device)
    g = x.grad.numpy()
    assert np.all(np.isfinite(g))
    assert sk.autograd.gradcheck(value_after_loop, 1, [x, 4], [out], eps=1e-6, device=device)


def test_while_loop_with_runtime_trip_count(device):
    xv = np.array([0.5, 2.0, 9.0, 12.0])
    x = arr(xv, device=device)
    out = arr(np.zeros(4), device=device)
    backward_of(while_loop, 4, [x], [out], device)
    expect = []
    for v in xv:  # d/dx of n applications of v -> 1.5 v + 0.25 is 1.5**n
        n = 0
        while v < 10.0:
            v = v * 1.5 + 0.25
            n += 1
        expect.append(1.5 ** n)
    np.testing.assert_allclose(x.grad.numpy(), expect)


def test_loop_carried_sums_saved_once(device):
    """Sums carried by a loop are saved once, not every iteration (the reverse pass never reads their
    values); the gradients must stay exact, including for a statement before the loop whose adjoint
    reads the value a sum started from."""
    xv = np.array([0.3, -0.7, 1.1, 0.45])
    x = arr(xv, device=device)
    out = arr(np.zeros(4), device=device)
    assert sk.autograd.gradcheck(running_sums, 4, [x, 5], [out], eps=1e-6, atol=1e-6, rtol=1e-6, device=device)
    backward_of(running_sums, 4, [x, 5], [out], device)
    for i, v in enumerate(xv):  # the same function in numpy, differentiated by central differences
        def f(v):
            s, t = v * v, 0.0
            for k in range(5):
                s += np.sin(v * k)
                t -= s * v
            w = 2.0 * v
            z = w * w
            u = 5 * v * v + sum(v * j for j in range(5))
            w += sum(v if j % 2 == 0 else -0.5 * v for j in range(5))
            return s * t + u * u + z * w
        np.testing.assert_allclose(x.grad.numpy()[i], (f(v + 1e-6) - f(v - 1e-6)) / 2e-6, rtol=1e-6, atol=1e-6)


@sk.kernel
def neighbour_sums(x: sk.array(dtype=f64), n: int, out: sk.array(dtype=f64), total: sk.array(dtype=f64)):
    # a sum over "neighbours" stored and atomically added after the loop (its value is never read):
    # the adjoint runs the loop once, in forward order, saving nothing (also below an early return)
    i = sk.tid()
    xi = x[i]
    if xi > 100.0:
        return
    s = xi * xi
    w = s * s  # its adjoint reads the value s started from
    for k in range(n):
        s = s + sk.sin(xi * f64(k)) * x[(i + k) % n]
    out[i] = s + w
    sk.atomic_add(total, 0, s)


@sk.kernel
def neighbour_sums_squared(x: sk.array(dtype=f64), n: int, out: sk.array(dtype=f64)):
    # the same sum, but its value is read after the loop (squared): the loop is replayed and saved
    i = sk.tid()
    xi = x[i]
    s = xi * xi
    for k in range(n):
        s = s + sk.sin(xi * f64(k)) * x[(i + k) % n]
    out[i] = s * s


def test_order_free_sum_loops_run_once_in_the_adjoint(device):
    xv = np.array([0.3, -0.7, 1.1, 0.45])
    n = len(xv)
    seed_out, seed_total = np.array([0.7, -1.3, 0.4, 2.0]), 1.7

    def loss(v, squared):  # the kernels in numpy: s per thread, then the seeded outputs
        s = v * v
        w = s * s
        for k in range(n):
            s = s + np.sin(v * k) * np.roll(v, -k)
        return seed_out @ (s * s) if squared else seed_out @ (s + w) + seed_total * s.sum()

    for kernel, squared in ((neighbour_sums, False), (neighbour_sums_squared, True)):
        body = adjoints(kernel)[kernel.key]
        if squared:
            assert "sk::push(" in body  # replayed first, each iteration's value saved
        else:
            assert "sk::push(" not in body and body.count("for (") == 1  # one pass, nothing saved
        x, out, total = arr(xv, device=device), arr(np.zeros(n), device=device), arr(np.zeros(1), device=device)
        outputs = [out] if squared else [out, total]
        tape = sk.Tape()
        with tape:
            sk.launch(kernel, n, inputs=[x, n], outputs=outputs, device=device)
        grads = {out: seed_out} if squared else {out: seed_out, total: np.array([seed_total])}
        tape.backward(grads=grads)
        fd = [(loss(xv + e, squared) - loss(xv - e, squared)) / 2e-6 for e in np.eye(n) * 1e-6]
        np.testing.assert_allclose(x.grad.numpy(), fd, rtol=1e-6, atol=1e-8)


def test_nested_dynamic_loops(device):
    x = arr([1.1, 0.9, 1.3], device=device)
    out = arr([0.0], device=device)
    assert sk.autograd.gradcheck(nested_loops, 1, [x, 3], [out], eps=1e-6, device=device)
    x0, x1, x2 = 1.1, 0.9, 1.3  # s = x0 + x0 x1 + x0 x1 x2
    backward_of(nested_loops, 1, [x, 3], [out], device)
    np.testing.assert_allclose(x.grad.numpy(), [1 + x1 + x1 * x2, x0 + x0 * x2, x0 * x1])


def test_inplace_mul_div_on_locals(device):
    xv, yv = np.array([0.5, 1.5]), np.array([2.0, 0.5])
    x, y, out = arr(xv, device=device), arr(yv, device=device), arr(np.zeros(2), device=device)
    backward_of(inplace_locals, 2, [x, y], [out], device)
    # out = (x^2 / y)^2 = x^4 / y^2
    np.testing.assert_allclose(x.grad.numpy(), 4 * xv ** 3 / yv ** 2)
    np.testing.assert_allclose(y.grad.numpy(), -2 * xv ** 4 / yv ** 3)


def test_repeated_component_assignment(device):
    xv = np.array([0.5, -1.25])
    x, out = arr(xv, device=device), arr(np.zeros(2), device=device)
    backward_of(repeated_components, 2, [x], [out], device)
    # v0 = x^2, v1 = 2x^2, v2 = 3x^2, m01 = 3x^3, out = 3x^3 + 2x^2
    np.testing.assert_allclose(out.numpy(), 3 * xv ** 3 + 2 * xv ** 2)
    np.testing.assert_allclose(x.grad.numpy(), 9 * xv ** 2 + 4 * xv)


def test_alias_and_ternary_reading_same_array(device):
    xv = np.array([0.5, -2.0])
    x, out = arr(xv, device=device), arr(np.zeros(2), device=device)
    backward_of(alias_and_ternary, 2, [x], [out], device)
    expect = np.where(xv > 0, 4 * xv, 3 * xv ** 2)  # 2x^2 or x^3
    np.testing.assert_allclose(x.grad.numpy(), expect)


def test_component_writes_into_array_elements(device):
    xv = np.array([1.0, 2.0])
    x = arr(xv, device=device)
    y = sk.array(np.ones((2, 3)), dtype=sk.vec3d, requires_grad=True, device=device)
    backward_of(component_write, 2, [x], [y], device, seed=np.ones((2, 3)))
    np.testing.assert_allclose(y.numpy(), np.stack([3 * xv, np.ones(2), xv ** 2], axis=1))
    np.testing.assert_allclose(x.grad.numpy(), 3 + 2 * xv)


def test_multi_launch_chain_and_atomics(device):
    xv = np.linspace(-1, 1, 16)
    x, y, loss = arr(xv, device=device), arr(np.zeros(16), device=device), arr([0.0], device=device)
    y.retain_grad = True             # keep the intermediate's gradient (a backward pass consumes it otherwise)
    tape = sk.Tape()
    with tape:
        sk.launch(chain_a, 16, inputs=[x], outputs=[y], device=device)
        sk.launch(chain_b, 16, inputs=[y], outputs=[loss], device=device)
    tape.backward(loss=loss)
    np.testing.assert_allclose(loss.numpy()[0], np.sum(4 * np.sin(xv) ** 2))
    np.testing.assert_allclose(x.grad.numpy(), 8 * np.sin(xv) * np.cos(xv))
    np.testing.assert_allclose(y.grad.numpy(), 4 * np.sin(xv))  # gradient of an intermediate array
    assert y in tape.gradients and x in tape.gradients
    tape.zero()
    assert not x.grad.numpy().any()
    tape.reset()
    assert tape.ops == []


def test_data_dependent_branch(device):
    xv = np.array([0.75, 0.25, -0.5])
    x, out = arr(xv, device=device), arr(np.zeros(3), device=device)
    backward_of(branchy, 3, [x], [out], device)
    np.testing.assert_allclose(x.grad.numpy(), [3 * 0.75 ** 2, np.exp(0.25), -1.0])


def test_early_return_break_continue(device):
    xv = np.array([1.0, 2.0, 3.0, 4.0])
    x, out = arr(xv, device=device), arr(np.zeros(4), device=device)
    backward_of(early_exit, 4, [x, 3], [out], device)
    # s_i = x_i * sum(k for k in 0..i if k != 1); thread 3 returns early
    coef = np.array([0, 0, 2, 0])
    np.testing.assert_allclose(out.numpy(), coef * xv)
    np.testing.assert_allclose(x.grad.numpy(), coef)


def test_requires_grad_false_gets_no_gradient(device):
    x = arr([1.0, 2.0], requires_grad=False, device=device)
    y = arr([0.0, 0.0], device=device)
    backward_of(chain_a, 2, [x], [y], device)
    assert x.grad is None


@pytest.mark.parametrize("overwrite", ["launch", "fill", "assign", "copy"])
def test_overwritten_input_raises_at_backward(device, overwrite):
    x, y = arr([0.1, 0.2], device=device), arr([0.0, 0.0], device=device)
    tape = sk.Tape()
    with tape:
        sk.launch(chain_a, 2, inputs=[x], outputs=[y], device=device)
    if overwrite == "launch":
        sk.launch(chain_a, 2, inputs=[y], outputs=[x], device=device, record_tape=False)
    elif overwrite == "fill":
        x.fill_(3.0)
    elif overwrite == "assign":
        x.assign(np.array([5.0, 6.0]))
    else:
        sk.copy(x, y)
    with pytest.raises(sk.TapeError, match="array 'x' read by kernel 'chain_a'"):
        tape.backward(grads={y: np.ones(2)})


@pytest.mark.parametrize("overwrite", ["recorded", "launch", "fill", "assign"])
def test_an_overwritten_output(device, overwrite):
    # overwritten by a recorded operation: its adjoint consumes y's gradient, so the first launch's is
    # zero and x's gradient counts once; overwritten outside the tape's knowledge: refused
    x, y = arr([0.1, 0.2], device=device), arr([0.0, 0.0], device=device)
    tape = sk.Tape()
    with tape:
        sk.launch(chain_a, 2, inputs=[x], outputs=[y], device=device)
        if overwrite == "recorded":
            sk.launch(chain_a, 2, inputs=[x], outputs=[y], device=device)
    if overwrite == "launch":
        sk.launch(chain_a, 2, inputs=[x], outputs=[y], device=device, record_tape=False)
    elif overwrite == "fill":
        y.fill_(1.0)
    elif overwrite == "assign":
        y.assign(np.array([5.0, 6.0]))
    if overwrite == "recorded":
        tape.backward(grads={y: np.ones(2)})
        np.testing.assert_allclose(x.grad.numpy(), 2 * np.cos([0.1, 0.2]))
        return
    with pytest.raises(sk.TapeError, match="array 'y' written by kernel 'chain_a' .* overwritten by an operation "
                                           "the tape did not record"):
        tape.backward(grads={y: np.ones(2)})


def test_record_func_and_copy(device):
    x, y = arr([1.0, 2.0], device=device), arr([0.0, 0.0], device=device)
    z = arr([0.0, 0.0], device=device)
    calls = []
    tape = sk.Tape()
    with tape:
        sk.launch(chain_a, 2, inputs=[x], outputs=[y], device=device)
        sk.copy(z, y)
        tape.record_func(lambda: calls.append(1), arrays=[z])
    tape.backward(grads={z: np.ones(2)})
    assert calls == [1]
    np.testing.assert_allclose(x.grad.numpy(), 2 * np.cos([1.0, 2.0]))


# ----------------------------------------------------------------------------- rollouts

@sk.kernel
def spring_step(x: sk.array(dtype=f64), v: sk.array(dtype=f64), dt: f64, x_out: sk.array(dtype=f64),
                v_out: sk.array(dtype=f64)):
    i = sk.tid()
    a = -4.0 * x[i] - 0.1 * v[i]
    vn = v[i] + a * dt
    x_out[i] = x[i] + vn * dt
    v_out[i] = vn


@sk.kernel
def sum_sq(x: sk.array(dtype=f64), loss: sk.array(dtype=f64)):
    i = sk.tid()
    sk.atomic_add(loss, 0, x[i] * x[i])


N_PARTICLES = 256


def _step(x, v, device):
    xo = sk.zeros(N_PARTICLES, dtype=f64, requires_grad=True, device=device)
    vo = sk.zeros(N_PARTICLES, dtype=f64, requires_grad=True, device=device)
    sk.launch(spring_step, N_PARTICLES, inputs=[x, v, 0.01], outputs=[xo, vo], device=device)
    return xo, vo


def _rollout(v0, steps, device, every=0):
    x = sk.array(np.linspace(0.1, 1.0, N_PARTICLES), dtype=f64, requires_grad=True, device=device)
    loss = sk.zeros(1, dtype=f64, requires_grad=True, device=device)
    tape = sk.Tape()
    with tape:
        v = v0
        if every:
            def segment(x, v):
                for _ in range(every):
                    x, v = _step(x, v, device)
                return x, v
            for _ in range(steps // every):
                x, v = sk.checkpoint(segment, x, v)
        else:
            for _ in range(steps):
                x, v = _step(x, v, device)
        sk.launch(sum_sq, N_PARTICLES, inputs=[x], outputs=[loss], device=device)
    tape.backward(loss=loss)
    return loss.numpy()[0], tape


def test_checkpointed_1000_step_rollout_matches_plain_tape_with_less_memory(device):
    steps = 1000
    v0 = sk.array(np.linspace(-0.5, 0.5, N_PARTICLES), dtype=f64, requires_grad=True, device=device)
    tracemalloc.start()
    loss_plain, tape = _rollout(v0, steps, device)
    _, peak_plain = tracemalloc.get_traced_memory()
    g_plain = v0.grad.numpy().copy()
    del tape
    tracemalloc.stop()
    v0.grad.zero_()
    tracemalloc.start()
    loss_ckpt, tape = _rollout(v0, steps, device, every=25)
    _, peak_ckpt = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    print(f"peak traced memory, 1000 steps: plain tape {peak_plain / 1e6:.2f} MB, "
          f"checkpointed every 25 steps {peak_ckpt / 1e6:.2f} MB")
    if device == "cpu":
        assert loss_ckpt == loss_plain
    else:  # the loss is summed with atomics, in any order on a GPU
        assert loss_ckpt == pytest.approx(loss_plain, rel=1e-14)
    np.testing.assert_allclose(v0.grad.numpy(), g_plain, rtol=1e-12)
    assert np.abs(g_plain).max() > 0
    if device == "cpu":  # host memory only measures CPU arrays
        assert peak_ckpt < peak_plain / 5, (peak_ckpt, peak_plain)
    # one finite-difference spot check of the whole rollout (particle 7)
    eps = 1e-6
    vals = []
    for s in (1, -1):
        vv = v0.numpy().copy()
        vv[7] += s * eps
        vals.append(_rollout(sk.array(vv, dtype=f64, requires_grad=True, device=device), steps, device)[0])
    np.testing.assert_allclose(g_plain[7], (vals[0] - vals[1]) / (2 * eps), rtol=1e-5)


def test_seeding_an_array_without_a_gradient_gives_it_one(device):
    x = arr([0.5, 2.0], device=device)
    y = arr([0.0, 0.0], requires_grad=False, device=device)  # as in Warp: grads= gives y a gradient
    tape = sk.Tape()
    with tape:
        sk.launch(chain_a, 2, inputs=[x], outputs=[y], device=device)
    tape.backward(grads={y: np.array([1.0, 3.0])})
    assert y.requires_grad
    fd = [(_chain_a_value(v + 1e-6) - _chain_a_value(v - 1e-6)) / 2e-6 for v in (0.5, 2.0)]
    np.testing.assert_allclose(x.grad.numpy(), np.array(fd) * [1.0, 3.0], rtol=1e-6)


def _chain_a_value(v):
    x, y = arr([v], requires_grad=False), arr([0.0], requires_grad=False)
    sk.launch(chain_a, 1, inputs=[x], outputs=[y])
    return y.numpy()[0]


def test_nested_tapes_are_refused_but_a_checkpoint_replays_under_a_recording_tape():
    # the outer tape would miss what an inner one records (Warp refuses nesting too)
    with pytest.raises(RuntimeError, match="tapes cannot be nested"):
        with sk.Tape():
            with sk.Tape():
                pass
    assert sk.active_tape() is None
    v0 = sk.array(np.linspace(-0.5, 0.5, N_PARTICLES), dtype=f64, requires_grad=True)
    _, plain = _rollout(v0, 20, "cpu")
    g = v0.grad.numpy().copy()
    v0.grad.zero_()
    _, tape = _rollout(v0, 20, "cpu", every=5)
    v0.grad.zero_()
    # a checkpointed segment's backward records on its own tape, also while another records; it consumed
    # its outputs' gradients, so a second backward from the loss gives the gradient again (not more)
    with sk.Tape():
        tape.backward()
    np.testing.assert_allclose(v0.grad.numpy(), g, rtol=1e-12)


@sk.kernel
def stepped(x: sk.array(dtype=f64), out: sk.array(dtype=f64)):
    i = sk.tid()
    out[i] = sk.floor(x[i] * 10.0) / 10.0 + x[i]


def test_gradcheck_reports_a_mismatch():
    # floor() has no gradient, but a finite difference across its step sees one
    x, out = arr([0.3]), arr([0.0])
    with pytest.raises(AssertionError, match=r"FAIL d out / d x: 1/1 entries off; worst \[0, 0\]: adjoint 1 vs "
                                             r"finite difference 6"):
        sk.autograd.gradcheck(stepped, 1, [x], [out], eps=0.01)
    assert not sk.autograd.gradcheck(stepped, 1, [x], [out], eps=0.01, raise_exception=False)


def test_jacobian_matches_finite_differences():
    x = arr([0.3, 0.4])
    out = arr([0.0, 0.0])
    ja = sk.autograd.jacobian(chain_a, 2, [x], [out])
    jf = sk.autograd.jacobian_fd(chain_a, 2, [x], [out], eps=1e-6)
    np.testing.assert_allclose(ja[(0, 0)], jf[(0, 0)], atol=1e-8)
    np.testing.assert_allclose(np.diag(ja[(0, 0)]), 2 * np.cos([0.3, 0.4]))


@sk.kernel
def where_cast(x: sk.array(dtype=f64), y: sk.array(dtype=sk.float32), out: sk.array(dtype=f64)):
    i = sk.tid()
    a = sk.where(x[i] > 0.0, x[i] * x[i], -x[i])
    b = f64(y[i]) * 3.0  # float32 -> float64 cast carries the gradient
    c = sk.float32(x[i]) * y[i]  # float64 -> float32
    out[i] = a + b + f64(c)


def test_where_and_cast_gradients(device):
    xv, yv = np.array([0.5, -2.0]), np.array([1.5, -0.25], dtype=np.float32)
    x = arr(xv, device=device)
    y = sk.array(yv, dtype=sk.float32, requires_grad=True, device=device)
    out = arr(np.zeros(2), device=device)
    backward_of(where_cast, 2, [x, y], [out], device)
    np.testing.assert_allclose(x.grad.numpy(), np.where(xv > 0, 2 * xv, -1.0) + yv, rtol=1e-6)
    np.testing.assert_allclose(y.grad.numpy(), 3.0 + xv, rtol=1e-6)


@sk.kernel
def stencil(x: sk.array(dtype=f64), y: sk.array(dtype=f64)):
    i = sk.tid()
    if i + 1 < x.shape[0]:
        y[i] = x[i] + x[i + 1]


@sk.kernel
def own_element(x: sk.array(dtype=f64), y: sk.array(dtype=f64)):
    i = sk.tid()
    y[i] = x[i] * x[i]


@pytest.mark.parametrize("same_array", [False, True])
def test_gradient_accumulation_is_exact_under_threads(device, same_array):
    # x[i] is the thread's own element (plain add is safe), x[i + 1] another thread's (atomic)
    n = 200_001
    x = arr(np.ones(n), device=device)
    y = arr(np.zeros(n), device=device)
    backward_of(stencil, n, [x], [y], device, seed=np.ones(n))
    expect = np.full(n, 2.0)
    expect[0] = 1.0
    expect[-1] = 1.0
    np.testing.assert_array_equal(x.grad.numpy(), expect)
    # an array passed twice: the adjoint must not treat either use as the thread's private element
    z = arr(np.linspace(0, 1, n), device=device)
    out = z if same_array else arr(np.zeros(n), device=device)
    if same_array:
        with pytest.raises(sk.TapeError):  # reads and overwrites the same array
            backward_of(own_element, n, [z], [out], device, seed=np.ones(n))
    else:
        backward_of(own_element, n, [z], [out], device, seed=np.ones(n))
        np.testing.assert_allclose(z.grad.numpy(), 2 * z.numpy())


@sk.kernel
def random_in_loop(x: sk.array(dtype=f64), n: int, out: sk.array(dtype=f64)):
    state = sk.rand_init(7)
    acc = f64(0.0)
    for j in range(n):
        r = f64(sk.randf(state))
        acc += x[0] * x[0] * r
    out[0] = acc


def test_random_draws_replay_per_iteration(device):
    x, out = arr([1.5], device=device), arr([0.0], device=device)
    backward_of(random_in_loop, 1, [x, 5], [out], device)
    # out = x^2 * sum(r): d out / dx = 2 x sum(r) = 2 out / x
    np.testing.assert_allclose(x.grad.numpy()[0], 2.0 * out.numpy()[0] / 1.5, rtol=1e-12)


@sk.struct
class Body:
    pos: sk.vec3d
    mass: f64


@sk.kernel
def struct_energy(bodies: sk.array(dtype=Body), scale: sk.array(dtype=f64), out: sk.array(dtype=f64)):
    i = sk.tid()
    b = bodies[i]
    c = Body()
    c.pos = b.pos * scale[0]
    c.mass = b.mass
    out[i] = 0.5 * c.mass * sk.dot(c.pos, c.pos)


def test_gradients_through_struct_locals_and_struct_arrays(device):
    pv = np.array([[1.0, 2.0, 3.0], [0.5, -1.0, 0.0]])
    mv = np.array([2.0, 4.0])
    items = [Body(pos=sk.vec3d(*p), mass=m) for p, m in zip(pv, mv)]
    bodies = sk.array(items, dtype=Body, requires_grad=True, device=device)
    scale = arr([1.5], device=device)
    out = arr(np.zeros(2), device=device)
    backward_of(struct_energy, 2, [bodies, scale], [out], device)
    g = bodies.grad.numpy()
    np.testing.assert_allclose(g["pos"], mv[:, None] * pv * 1.5 ** 2)
    np.testing.assert_allclose(g["mass"], 0.5 * 1.5 ** 2 * (pv ** 2).sum(1))
    np.testing.assert_allclose(scale.grad.numpy()[0], (mv * 1.5 * (pv ** 2).sum(1)).sum())


@sk.kernel(enable_backward=False)
def forward_only(x: sk.array(dtype=f64), y: sk.array(dtype=f64)):
    i = sk.tid()
    y[i] = x[i] * 2.0


def test_enable_backward_false_refuses_a_gradient(device):
    x, y = arr([1.0, 2.0], device=device), arr([0.0, 0.0], device=device)
    sk.launch(forward_only, 2, inputs=[x], outputs=[y], device=device)
    np.testing.assert_allclose(y.numpy(), [2.0, 4.0])
    tape = sk.Tape()
    with tape:
        sk.launch(forward_only, 2, inputs=[x], outputs=[y], device=device)
    with pytest.raises(sk.TapeError, match="enable_backward=False"):
        tape.backward(grads={y: np.ones(2)})

"""@func_grad custom adjoints and @func_replay, against analytic gradients."""
import numpy as np
import pytest

import simkit as sk

f64 = sk.float64


@sk.func
def clipped_sqrt(x: f64):
    return sk.sqrt(sk.max(x, f64(0.0)))


@sk.func_grad(clipped_sqrt)
def adj_clipped_sqrt(x: f64, adj_ret: f64):
    # a deliberately distinctive adjoint: the true derivative, doubled, so the test sees it is used
    if x > 0.0:
        sk.adjoint[x] += 2.0 * adj_ret / (2.0 * sk.sqrt(x))


@sk.func
def two_args(a: f64, b: f64):
    return a * b


@sk.func_grad(two_args)
def adj_two_args(a: f64, b: f64, adj_ret: f64):
    sk.adjoint[a] += b * adj_ret
    sk.adjoint[b] += 10.0 * a * adj_ret


@sk.func
def noisy(x: f64):
    return x * 3.0


@sk.func_replay(noisy)
def noisy_replay(x: f64):
    return x * 3.0


@sk.kernel
def use_custom(x: sk.array(dtype=f64), y: sk.array(dtype=f64), out: sk.array(dtype=f64)):
    i = sk.tid()
    out[i] = clipped_sqrt(x[i]) + two_args(x[i], y[i]) + noisy(x[i])


def test_custom_adjoints_are_used(device):
    xv, yv = np.array([0.25, 4.0, -1.0]), np.array([2.0, 3.0, 5.0])
    x = sk.array(xv, dtype=f64, requires_grad=True, device=device)
    y = sk.array(yv, dtype=f64, requires_grad=True, device=device)
    out = sk.zeros(3, dtype=f64, requires_grad=True, device=device)
    tape = sk.Tape()
    with tape:
        sk.launch(use_custom, 3, inputs=[x, y], outputs=[out], device=device)
    np.testing.assert_allclose(out.numpy(), np.sqrt(np.maximum(xv, 0)) + xv * yv + 3 * xv)
    tape.backward(grads={out: np.ones(3)})
    dsqrt = np.where(xv > 0, 1.0 / np.sqrt(np.abs(xv)), 0.0)  # the custom (doubled) derivative
    np.testing.assert_allclose(x.grad.numpy(), dsqrt + yv + 3.0)
    np.testing.assert_allclose(y.grad.numpy(), 10.0 * xv)


@sk.func
def polar(x: f64, y: f64):
    return sk.sqrt(x * x + y * y), sk.atan2(y, x)


@sk.func_grad(polar)
def adj_polar(x: f64, y: f64, adj_r: f64, adj_theta: f64):
    # Warp's convention: the arguments, then one adjoint per result; scaled by 10 so the test sees it is used
    r2 = x * x + y * y
    sk.adjoint[x] += 10.0 * (adj_r * x / sk.sqrt(r2) - adj_theta * y / r2)
    sk.adjoint[y] += 10.0 * (adj_r * y / sk.sqrt(r2) + adj_theta * x / r2)


@sk.kernel
def use_polar(x: sk.array(dtype=f64), y: sk.array(dtype=f64), out: sk.array(dtype=f64)):
    i = sk.tid()
    r, theta = polar(x[i], y[i])
    out[i] = 2.0 * r + 3.0 * theta


def test_custom_adjoint_of_a_function_with_several_results(device):
    xv, yv = np.array([1.0, -2.0, 0.5]), np.array([2.0, 1.0, -3.0])
    x = sk.array(xv, dtype=f64, requires_grad=True, device=device)
    y = sk.array(yv, dtype=f64, requires_grad=True, device=device)
    out = sk.zeros(3, dtype=f64, requires_grad=True, device=device)
    with sk.Tape() as tape:
        sk.launch(use_polar, 3, inputs=[x, y], outputs=[out], device=device)
    r = np.hypot(xv, yv)
    np.testing.assert_allclose(out.numpy(), 2 * r + 3 * np.arctan2(yv, xv))
    tape.backward(grads={out: np.ones(3)})
    np.testing.assert_allclose(x.grad.numpy(), 10 * (2 * xv / r - 3 * yv / r**2))
    np.testing.assert_allclose(y.grad.numpy(), 10 * (2 * yv / r + 3 * xv / r**2))


def test_custom_adjoint_signature_is_checked():
    @sk.func
    def two(x: f64):
        return x, x

    @sk.func_grad(two)
    def adj_two(x: f64, adj_ret: f64):
        sk.adjoint[x] += adj_ret

    @sk.kernel
    def k(x: sk.array(dtype=f64)):
        a, b = two(x[0])
        x[0] = a + b

    with pytest.raises(Exception, match=r"must take its arguments and then the adjoint of each result: "
                                        r"\(x, adj_ret0, adj_ret1\), got \(x, adj_ret\)"):
        sk.launch(k, 1, inputs=[sk.zeros(1, dtype=f64)], device="cpu")


@sk.struct
class Body:
    mass: f64
    pos: sk.vec3d


@sk.func
def energy(a: f64, b: f64):
    return a * b


@sk.func_grad(energy)
def adj_energy(a: f64, b: f64, adj_ret: f64):
    sk.adjoint[a] += 2.0 * b * adj_ret  # (doubled: the test sees which adjoint ran)
    sk.adjoint[b] += 3.0 * a * adj_ret


@sk.func
def energy(s: Body):  # noqa: F811 - an overload of energy
    return s.mass * s.pos[2]


@sk.func_grad(energy)
def adj_energy(s: Body, adj_ret: f64):  # noqa: F811 - the adjoint of that overload
    sk.adjoint[s.mass] += 5.0 * s.pos[2] * adj_ret
    sk.adjoint[s.pos][2] += 7.0 * s.mass * adj_ret


@sk.kernel
def use_energies(x: sk.array(dtype=f64), bodies: sk.array(dtype=Body), out: sk.array(dtype=f64)):
    i = sk.tid()
    out[i] = energy(x[i], x[i] + 1.0) + energy(bodies[i])


def test_custom_adjoints_of_overloads_and_of_struct_fields(device):
    """Each overload gets its own @func_grad; adjoint[s.mass] and adjoint[s.pos][2] accumulate into parts."""
    xv = np.array([0.5, -2.0])
    bodies = []
    for m, z in ((2.0, 3.0), (-1.0, 0.25)):
        b = Body()
        b.mass, b.pos = m, sk.vec3d(1.0, 2.0, z)
        bodies.append(b)
    x = sk.array(xv, dtype=f64, requires_grad=True, device=device)
    arr = sk.array(bodies, dtype=Body, requires_grad=True, device=device)
    out = sk.zeros(2, dtype=f64, requires_grad=True, device=device)
    with sk.Tape() as tape:
        sk.launch(use_energies, 2, inputs=[x, arr, out], device=device)
    mass, z = np.array([2.0, -1.0]), np.array([3.0, 0.25])
    np.testing.assert_allclose(out.numpy(), xv * (xv + 1) + mass * z)
    tape.backward(grads={out: np.ones(2)})
    np.testing.assert_allclose(x.grad.numpy(), 2.0 * (xv + 1) + 3.0 * xv)
    grads = arr.grad.numpy()
    np.testing.assert_allclose(grads["mass"], 5.0 * z)
    np.testing.assert_allclose(np.stack(grads["pos"]), np.stack([[0, 0, 7.0 * m] for m in mass]))


@sk.func
def picked(values: sk.array2d(dtype=sk.float64), row: int, scale: sk.float64):
    return values[row, 1] * scale


@sk.func_grad(picked)
def adj_picked(values: sk.array2d(dtype=sk.float64), row: int, scale: sk.float64, adj_ret: sk.float64):
    sk.adjoint[values][row, 1] += 2.0 * scale * adj_ret  # (doubled: the test sees that this adjoint ran)
    sk.adjoint[scale] += values[row, 1] * adj_ret


@sk.kernel
def k_picked(values: sk.array2d(dtype=sk.float64), scale: sk.array(dtype=sk.float64),
             out: sk.array(dtype=sk.float64)):
    i = sk.tid()
    out[i] = picked(values, i, scale[0])


@pytest.mark.parametrize("values_grad", [True, False])
def test_custom_adjoint_into_an_array_argument(values_grad):
    """adjoint[a][i, j] += v in a @func_grad accumulates into a.grad; an array without a gradient takes
    nothing (and nothing is written through its null gradient)."""
    v = np.arange(6.0).reshape(3, 2)
    values = sk.array(v, dtype=sk.float64, requires_grad=values_grad)
    scale = sk.array([1.5], dtype=sk.float64, requires_grad=True)
    out = sk.zeros(3, dtype=sk.float64, requires_grad=True)
    tape = sk.Tape()
    with tape:
        sk.launch(k_picked, 3, inputs=[values, scale], outputs=[out])
    np.testing.assert_allclose(out.numpy(), v[:, 1] * 1.5)
    tape.backward(grads={out: np.ones(3)})
    np.testing.assert_allclose(scale.grad.numpy(), [v[:, 1].sum()])
    if values_grad:
        expect = np.zeros((3, 2))
        expect[:, 1] = 2.0 * 1.5
        np.testing.assert_allclose(values.grad.numpy(), expect)
    else:
        assert values.grad is None


@sk.struct
class Holder:
    values: sk.array(dtype=sk.vec3d)


@sk.func
def first_of(h: Holder, i: int):
    return h.values[i][0]


@sk.func_grad(first_of)
def adj_first_of(h: Holder, i: int, adj_ret: f64):
    sk.adjoint[h.values][i][0] += 2.0 * adj_ret  # (doubled: the test sees that this adjoint ran)


@sk.func
def first_of_local(h: Holder, i: int):
    v = h.values
    return v[i][0]


@sk.func_grad(first_of_local)
def adj_first_of_local(h: Holder, i: int, adj_ret: f64):
    v = h.values
    sk.adjoint[v][i][0] += 3.0 * adj_ret


@sk.kernel
def k_holder(h: Holder, idx: sk.array(dtype=int), out: sk.array(dtype=f64)):
    t = sk.tid()
    out[t] = first_of(h, idx[t]) + first_of_local(h, idx[t])


@pytest.mark.parametrize("values_grad", [True, False])
def test_custom_adjoint_into_a_struct_fields_array(device, values_grad):
    """adjoint[s.values][i] (and adjoint[v][i] of a local v = s.values) accumulate into the field array's .grad,
    atomically (many threads hit one entry); without a gradient nothing is written (no null write)."""
    rng = np.random.default_rng(7)
    n, m = 4096, 13
    idx_np = rng.integers(0, m, n).astype(np.int32)
    g = rng.random(n)
    h = Holder()
    h.values = sk.array(rng.random((m, 3)), dtype=sk.vec3d, requires_grad=values_grad, device=device)
    out = sk.zeros(n, dtype=f64, requires_grad=True, device=device)
    tape = sk.Tape()
    with tape:
        sk.launch(k_holder, n, inputs=[h, sk.array(idx_np, dtype=int, device=device)], outputs=[out], device=device)
    np.testing.assert_allclose(out.numpy(), 2.0 * h.values.numpy()[idx_np, 0])
    tape.backward(grads={out: g})
    if values_grad:
        expect = np.zeros((m, 3))
        np.add.at(expect[:, 0], idx_np, 5.0 * g)
        np.testing.assert_allclose(h.values.grad.numpy(), expect, rtol=1e-12)
    else:
        assert h.values.grad is None


def test_a_custom_adjoint_that_fails_to_build_is_never_skipped():
    """A @func_grad that does not compile fails each launch of a kernel using it (it is built with the function),
    also after another kernel of its module was built: the function must never be reused without it (its
    body would be differentiated instead: a silently wrong gradient)."""
    @sk.func
    def ident(x: float):
        return x

    @sk.func_grad(ident)
    def adj_ident(x: float, adj_ret: float):
        y = x
        sk.adjoint[y] += adj_ret  # (y is a local float: refused)

    @sk.kernel(module="unique")
    def fine(x: sk.array(dtype=float), out: sk.array(dtype=float)):
        i = sk.tid()
        out[i] = 2.0 * x[i]

    @sk.kernel(module=fine.module.name)
    def broken(x: sk.array(dtype=float), out: sk.array(dtype=float)):
        i = sk.tid()
        out[i] = ident(x[i])

    for k in (broken, fine, broken):
        x, out = sk.zeros(4, requires_grad=True), sk.zeros(4, requires_grad=True)
        tape = sk.Tape()
        if k is broken:
            with pytest.raises(sk.CompileError, match=r"adjoint\[\.\.\.\] of a float32 that is not a parameter"):
                with tape:
                    sk.launch(k, 4, inputs=[x], outputs=[out])
            continue
        with tape:
            sk.launch(k, 4, inputs=[x], outputs=[out])
        tape.backward(grads={out: np.ones(4)})
        np.testing.assert_allclose(x.grad.numpy(), 2.0)


@sk.func
def write_square(i: int, xs: sk.array(dtype=f64), ys: sk.array(dtype=f64)):
    ys[i] = xs[i] * xs[i]


@sk.func_grad(write_square)
def adj_write_square(i: int, xs: sk.array(dtype=f64), ys: sk.array(dtype=f64)):
    sk.adjoint[xs][i] += 3.0 * xs[i]  # (3x, not 2x: the test sees that this adjoint ran; ys's gradient taken as 1)


@sk.kernel
def k_write_square(xs: sk.array(dtype=f64), ys: sk.array(dtype=f64)):
    i = sk.tid()
    write_square(i, xs, ys)


def test_custom_adjoint_of_a_function_that_returns_nothing(device):
    """A @func that only writes arrays: its @func_grad takes just the arguments (as Warp's)."""
    xv = np.array([0.5, -1.0, 2.0])
    xs = sk.array(xv, dtype=f64, requires_grad=True, device=device)
    ys = sk.zeros(3, dtype=f64, requires_grad=True, device=device)
    tape = sk.Tape()
    with tape:
        sk.launch(k_write_square, 3, inputs=[xs, ys], device=device)
    np.testing.assert_allclose(ys.numpy(), xv ** 2)
    tape.backward(grads={ys: np.ones(3)})
    np.testing.assert_allclose(xs.grad.numpy(), 3.0 * xv)

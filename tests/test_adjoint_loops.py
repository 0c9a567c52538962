"""Loop shortcuts of the adjoint, checked on the generated code and against central finite
differences (float64). Order-free sum loops beyond a kernel's top level: nests of sum loops (a sum
over mirror images of a sum over neighbours) and loops in @funcs run once, saving nothing. Loops
that define no active value (a binary search, a golden-section search) are only replayed.
Counter-cases (a sum read non-linearly after its loop, an active iterate) keep the stack."""
import numpy as np
import pytest

import simkit as sk
from codegen_helpers import adjoints

f64 = sk.float64


@sk.func
def pair_term(xi: f64, xj: f64, k: int):
    return sk.sin(xi * f64(k + 1)) * xj


@sk.kernel
def nested_sums(x: sk.array(dtype=f64), n: int, reps: sk.array(dtype=int), out: sk.array(dtype=f64)):
    # s sums over (m, k); t is a per-m partial sum added linearly: the whole nest is order-free
    i = sk.tid()
    xi = x[i]
    s = xi * xi
    for m in range(reps[i]):
        t = f64(0.0)
        for k in range(n):
            t = t + pair_term(xi, x[(i + k + m) % n], k) * f64(m + 1)
        s = s + t + x[(i + m) % n]
    out[i] = s


@sk.kernel
def nested_sums_squared(x: sk.array(dtype=f64), n: int, reps: sk.array(dtype=int), out: sk.array(dtype=f64)):
    # the per-m partial sum is squared after its loop: the nest keeps the stack
    i = sk.tid()
    xi = x[i]
    s = xi * xi
    for m in range(reps[i]):
        t = f64(0.0)
        for k in range(n):
            t = t + pair_term(xi, x[(i + k + m) % n], k) * f64(m + 1)
        s = s + t * t
    out[i] = s


@sk.func
def neighbour_sum(x: sk.array(dtype=f64), i: int, n: int):
    s = f64(0.0)
    for k in range(n):
        s = s + pair_term(x[i], x[(i + k) % n], k)
    return s


@sk.func
def neighbour_sum_squared(x: sk.array(dtype=f64), i: int, n: int):
    s = f64(0.0)
    for k in range(n):
        s = s + pair_term(x[i], x[(i + k) % n], k)
    return s * s


@sk.kernel
def func_sums(x: sk.array(dtype=f64), n: int, out: sk.array(dtype=f64)):
    i = sk.tid()
    out[i] = neighbour_sum(x, i, n) * x[i] + neighbour_sum_squared(x, i, n)


@sk.kernel
def grid_images(grid: sk.uint64, x: sk.array(dtype=sk.vec3d), shifts: sk.array(dtype=sk.vec3d), ns: int,
                r: f64, out: sk.array(dtype=f64)):
    # a sum over periodic images (a dynamic loop) of a sum over hash-grid neighbours
    i = sk.tid()
    e = f64(0.0)
    for m in range(ns):
        p = x[i] + shifts[m]
        q = sk.hash_grid_query(grid, p, r)
        j = int(0)
        while sk.hash_grid_query_next(q, j):
            d2 = sk.length_sq(x[j] - p)
            if d2 < r * r and d2 > f64(1.0e-12):
                w = r * r - d2
                e = e + w * w
    sk.atomic_add(out, 0, e)


def arr(v, device, dtype=f64, grad=True):
    return sk.array(np.asarray(v), dtype=dtype, requires_grad=grad, device=device)


@pytest.mark.parametrize("kernel, free", [(nested_sums, True), (nested_sums_squared, False)])
def test_nested_sum_loops(device, kernel, free):
    body = adjoints(kernel)[kernel.key]
    assert ("sk::push(" not in body) == free
    rng = np.random.default_rng(2)
    n = 5
    x = arr(rng.normal(size=n), device)
    reps = arr([0, 1, 2, 3, 2], device, dtype=int, grad=False)
    assert sk.autograd.gradcheck(kernel, n, [x, n, reps], [arr(np.zeros(n), device)], eps=1e-6, atol=1e-7,
                                 rtol=1e-6, device=device)


def test_loops_in_funcs(device):
    src = adjoints(func_sums)
    free, kept = src["neighbour_sum"], src["neighbour_sum_squared"]
    assert "sk::push(" not in free and free.count("for (") == 1  # one pass, nothing saved
    assert "sk::push(" in kept
    rng = np.random.default_rng(3)
    n = 6
    x = arr(rng.normal(size=n), device)
    assert sk.autograd.gradcheck(func_sums, n, [x, n], [arr(np.zeros(n), device)], eps=1e-6, atol=1e-7,
                                 rtol=1e-6, device=device)


def test_images_of_grid_neighbours(device):
    body = adjoints(grid_images)["grid_images"]
    assert "sk::push(" not in body
    rng = np.random.default_rng(4)
    pts = rng.random((40, 3))
    r = 0.35
    shifts = np.array([[0, 0, 0], [1, 0, 0], [-1, 0, 0], [0, 0, 1]], dtype=np.float64)
    x = arr(pts, device, dtype=sk.vec3d)
    grid = sk.HashGrid(8, 8, 8, device=device, dtype=sk.float64)
    grid.build(x, r)
    out = arr(np.zeros(1), device)
    tape = sk.Tape()
    with tape:
        sk.launch(grid_images, 40, inputs=[grid.id, x, arr(shifts, device, dtype=sk.vec3d, grad=False), 4, r],
                  outputs=[out], device=device)

    def energy(p):
        e = 0.0
        for s in shifts:
            d = p[None, :, :] - (p[:, None, :] + s)
            d2 = (d * d).sum(-1)
            w = np.where((d2 < r * r) & (d2 > 1e-12), r * r - d2, 0.0)
            e += (w * w).sum()
        return e

    np.testing.assert_allclose(out.numpy()[0], energy(pts), rtol=1e-12)
    tape.backward(out)
    h, g = 1e-6, x.grad.numpy()
    for k in (0, 17, 33):
        for c in range(3):
            xp, xm = pts.copy(), pts.copy()
            xp[k, c] += h
            xm[k, c] -= h
            np.testing.assert_allclose(g[k, c], (energy(xp) - energy(xm)) / (2 * h), rtol=1e-6, atol=1e-9)


def test_switched_off_every_loop_keeps_the_stack(monkeypatch):
    # config.adjoint_shortcuts = False (A/B measurements, debugging): the generated adjoints push
    # (those are the adjoints every loop had before; tests/test_autodiff.py checks their gradients)
    assert "sk::push(" not in adjoints(func_sums)["neighbour_sum"]
    monkeypatch.setattr(sk.config, "adjoint_shortcuts", False)
    bodies = adjoints(func_sums)
    assert "sk::push(" in bodies["neighbour_sum"] and "sk::push(" in bodies["neighbour_sum_squared"]


@sk.func
def gathered(x: sk.array(dtype=f64), i: int, n: int):
    s = f64(0.0)
    for k in range(n):
        s = s + x[(i + k) % 4] * f64(k + 1)
    return s


@sk.kernel
def gather_many(x: sk.array(dtype=f64), n: int, out: sk.array(dtype=f64)):
    i = sk.tid()
    out[i] = gathered(x, i, n)


@pytest.mark.parametrize("threads", [1, 2])
def test_func_gradients_from_many_threads_into_few_elements(threads, monkeypatch):
    # every thread adds into the same 4 gradient elements from inside a func: atomics when threads
    # share the launch, plain adds when one thread runs it all (sk::cpu_serial_thread)
    monkeypatch.setattr(sk.config, "cpu_threads", threads)
    m, k = 20000, 7
    x = arr(np.array([0.5, -1.0, 2.0, 0.25]), "cpu")
    out = arr(np.zeros(m), "cpu")
    tape = sk.Tape()
    with tape:
        sk.launch(gather_many, m, inputs=[x, k], outputs=[out], device="cpu")
    seed = np.random.default_rng(0).normal(size=m)
    tape.backward(grads={out: seed})
    expected = np.zeros(4)
    for j in range(k):
        np.add.at(expected, (np.arange(m) + j) % 4, seed * (j + 1))
    np.testing.assert_allclose(x.grad.numpy(), expected, rtol=1e-10)


# ---------------------------------------------------------------------------
# loops that define no active value: run in the replay, skipped in the reverse pass


@sk.kernel
def table_lookup(xs: sk.array(dtype=f64), ys: sk.array(dtype=f64), q: sk.array(dtype=f64), m: int,
                 out: sk.array(dtype=f64)):
    # piecewise-linear interpolation; the segment is found by a binary search (int carried values,
    # the table only compared): nothing of the search is reversed
    i = sk.tid()
    v = q[i]
    lo = int(0)
    hi = m - 1
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if xs[mid] <= v:
            lo = mid
        else:
            hi = mid
    t = (v - xs[lo]) / (xs[hi] - xs[lo])
    out[i] = ys[lo] * (f64(1.0) - t) + ys[hi] * t


@sk.func
def nearest_on_curve(p: sk.vec3d):
    # squared distance of p to the curve c(s) = (s, s^2, 0), s in [-2, 2], at the s found by a
    # golden-section search (lo, hi carry no gradient: the distance is stationary there)
    lo = f64(-2.0)
    hi = f64(2.0)
    for _ in range(60):
        m1 = lo + (hi - lo) * f64(0.381966)
        m2 = lo + (hi - lo) * f64(0.618034)
        if sk.length_sq(p - sk.vec3d(m1, m1 * m1, f64(0.0))) <= sk.length_sq(p - sk.vec3d(m2, m2 * m2, f64(0.0))):
            hi = m2
        else:
            lo = m1
    s = (lo + hi) * f64(0.5)
    return sk.length_sq(p - sk.vec3d(s, s * s, f64(0.0)))


@sk.kernel
def curve_distance(p: sk.array(dtype=sk.vec3d), out: sk.array(dtype=f64)):
    i = sk.tid()
    out[i] = nearest_on_curve(p[i])


@sk.kernel
def newton_sqrt(a: sk.array(dtype=f64), n: int, out: sk.array(dtype=f64)):
    # the counter-case: the carried iterate is active (its gradient flows through every step)
    i = sk.tid()
    x = a[i]
    for _ in range(n):
        x = f64(0.5) * (x + a[i] / x)
    out[i] = x


def test_binary_search_is_not_reversed(device):
    body = adjoints(table_lookup)["table_lookup"]
    assert "sk::push(" not in body
    xs_np = np.array([0.0, 0.5, 1.2, 2.0, 3.5, 4.0])
    ys_np = np.array([1.0, -0.5, 2.0, 0.3, 0.8, -1.0])
    q_np = np.array([0.1, 0.7, 1.9, 2.2, 3.9, 0.55])
    xs, ys, q = arr(xs_np, device, grad=False), arr(ys_np, device), arr(q_np, device)
    out = arr(np.zeros(6), device)
    seed = np.array([1.0, -2.0, 0.5, 1.5, -1.0, 0.3])
    tape = sk.Tape()
    with tape:
        sk.launch(table_lookup, 6, inputs=[xs, ys, q, 6], outputs=[out], device=device)
    np.testing.assert_allclose(out.numpy(), np.interp(q_np, xs_np, ys_np), rtol=1e-12)
    tape.backward(grads={out: seed})
    h = 1e-6
    fd_q = (np.interp(q_np + h, xs_np, ys_np) - np.interp(q_np - h, xs_np, ys_np)) / (2 * h) * seed
    np.testing.assert_allclose(q.grad.numpy(), fd_q, rtol=1e-7)
    fd_y = [((np.interp(q_np, xs_np, ys_np + e) - np.interp(q_np, xs_np, ys_np - e)) / (2 * h)) @ seed
            for e in np.eye(6) * h]
    np.testing.assert_allclose(ys.grad.numpy(), fd_y, rtol=1e-7, atol=1e-9)


def test_golden_section_search_is_not_reversed(device):
    body = adjoints(curve_distance)["nearest_on_curve"]
    assert "sk::push(" not in body and body.count("for (") == 1  # run in the replay only
    pts = np.array([[0.3, 1.0, 0.2], [-1.0, 0.2, -0.3], [1.5, 1.0, 0.0]])
    p = arr(pts, device, dtype=sk.vec3d)
    out = arr(np.zeros(3), device)
    tape = sk.Tape()
    with tape:
        sk.launch(curve_distance, 3, inputs=[p], outputs=[out], device=device)
    tape.backward(grads={out: np.ones(3)})

    def dist(x):
        s = np.linspace(-2, 2, 400001)
        return ((x[None, :2] - np.stack([s, s * s], 1)) ** 2).sum(1).min() + x[2] ** 2

    np.testing.assert_allclose(out.numpy(), [dist(x) for x in pts], rtol=1e-8)
    h = 1e-5
    for k, x in enumerate(pts):
        fd = [(dist(x + e) - dist(x - e)) / (2 * h) for e in np.eye(3) * h]
        np.testing.assert_allclose(p.grad.numpy()[k], fd, rtol=1e-5, atol=1e-7)


def test_active_iterations_keep_the_stack(device):
    assert "sk::push(" in adjoints(newton_sqrt)["newton_sqrt"]
    a = arr([2.0, 0.5, 9.0], device)
    out = arr(np.zeros(3), device)
    tape = sk.Tape()
    with tape:
        sk.launch(newton_sqrt, 3, inputs=[a, 6], outputs=[out], device=device)
    tape.backward(grads={out: np.ones(3)})
    np.testing.assert_allclose(out.numpy(), np.sqrt([2.0, 0.5, 9.0]), rtol=1e-12)
    # the 6-step iterate x6(a): its derivative (all steps, not just the converged 1 / (2 sqrt a))
    def x6(v):
        x = v
        for _ in range(6):
            x = 0.5 * (x + v / x)
        return x
    fd = [(x6(v + 1e-6) - x6(v - 1e-6)) / 2e-6 for v in (2.0, 0.5, 9.0)]
    np.testing.assert_allclose(a.grad.numpy(), fd, rtol=1e-7)


@sk.kernel
def compared_only(x: sk.array(dtype=sk.vec3d), c: sk.vec3d, out: sk.array(dtype=f64)):
    # d2 only decides a branch: nothing of it is reversed (its adjoint would be zero)
    i = sk.tid()
    d2 = sk.length_sq(x[i] - c)
    v = x[i][0] * f64(2.0)
    if d2 < f64(1.0):
        v = v * x[i][1]
    out[i] = v


def test_values_only_compared_have_no_reverse_statements(device):
    body = adjoints(compared_only)["compared_only"]
    rev = body[body.index("// reverse"):]
    assert "adj_length_sq" not in rev and "adj_mul" in rev
    pts = np.array([[0.2, 0.5, 0.1], [1.5, -2.0, 0.3], [0.4, -0.3, 0.2]])
    x = arr(pts, device, dtype=sk.vec3d)
    out = arr(np.zeros(3), device)
    tape = sk.Tape()
    with tape:
        sk.launch(compared_only, 3, inputs=[x, sk.vec3d(0.0, 0.0, 0.0)], outputs=[out], device=device)
    tape.backward(grads={out: np.ones(3)})
    near = (pts ** 2).sum(1) < 1.0
    expected = np.zeros((3, 3))
    expected[:, 0] = np.where(near, 2.0 * pts[:, 1], 2.0)
    expected[:, 1] = np.where(near, 2.0 * pts[:, 0], 0.0)
    np.testing.assert_allclose(x.grad.numpy(), expected, rtol=1e-12)


@sk.func
def position_and_speed(x: sk.vec3d, v: sk.vec3d, n: sk.vec3d):
    # x and v mirrored in the plane through the origin with normal n
    y = x - n * (f64(2.0) * sk.dot(x, n))
    u = v - n * (f64(2.0) * sk.dot(v, n))
    return y, sk.length_sq(u) * sk.sqrt(sk.length_sq(u) + f64(1.0))


@sk.kernel
def uses_one_result(x: sk.array(dtype=sk.vec3d), v: sk.array(dtype=sk.vec3d), n: sk.vec3d, out: sk.array(dtype=f64)):
    i = sk.tid()
    y, s = position_and_speed(x[i], v[i], n)
    out[i] = sk.dot(y, y) * x[i][0]


def test_a_call_using_one_of_two_results_gets_an_adjoint_variant(device):
    src = adjoints(uses_one_result)
    body = src["uses_one_result"]
    assert "__u10<SKC>(" in body  # the variant for "first result used"
    full, variant = src["position_and_speed"], src["position_and_speed__u10"]
    assert "adj_sqrt" in full[full.index("// reverse"):]  # the full adjoint reverses the second result
    assert "adj_sqrt" not in variant[variant.index("// reverse"):]  # the variant does not
    pts = np.array([[0.3, -0.2, 0.5], [1.0, 0.4, -0.7]])
    vel = np.array([[2.0, 1.0, 0.0], [-1.0, 0.5, 3.0]])
    nrm = np.array([0.0, 0.6, 0.8])
    x, v = arr(pts, device, dtype=sk.vec3d), arr(vel, device, dtype=sk.vec3d)
    out = arr(np.zeros(2), device)
    tape = sk.Tape()
    with tape:
        sk.launch(uses_one_result, 2, inputs=[x, v, sk.vec3d(*nrm)], outputs=[out], device=device)
    tape.backward(grads={out: np.ones(2)})

    def f(p):
        y = p - np.outer(2.0 * p @ nrm, nrm)
        return (y * y).sum(1) * p[:, 0]

    h = 1e-6
    fd = np.stack([(f(pts + e) - f(pts - e)) / (2 * h) for e in np.eye(3) * h], axis=1)
    np.testing.assert_allclose(x.grad.numpy(), fd, rtol=1e-7, atol=1e-10)
    np.testing.assert_allclose(v.grad.numpy(), 0.0)

"""Control flow in kernels: if/elif/else, loops (static and dynamic), while, break/continue,
conditional expressions, short-circuit boolean operators, early return. Values against Python."""
import numpy as np
import pytest

import simkit as sk

N = 64


def py_branches(x):
    if x < 10:
        y = 1.0
    elif x < 20:
        y = 2.0
    elif x < 30:
        y = 3.0
    else:
        y = 4.0
    if x % 2 == 0:
        y = y * 10.0
    return y


@sk.kernel
def k_branches(out: sk.array(dtype=float)):
    i = sk.tid()
    if i < 10:
        y = 1.0
    elif i < 20:
        y = 2.0
    elif i < 30:
        y = 3.0
    else:
        y = 4.0
    if i % 2 == 0:
        y = y * 10.0
    out[i] = y


def test_if_elif_else(device):
    out = sk.zeros(N, device=device)
    sk.launch(k_branches, dim=N, inputs=[out], device=device)
    np.testing.assert_array_equal(out.numpy(), [py_branches(i) for i in range(N)])


@sk.kernel
def k_nested_if(a: sk.array(dtype=int), out: sk.array(dtype=int)):
    i = sk.tid()
    x = a[i]
    r = 0
    if x > 0:
        if x > 5:
            r = 2
        else:
            r = 1
            if x == 3:
                r = 3
    else:
        r = -1
    out[i] = r


def test_nested_if(device):
    vals = np.arange(-3, 10, dtype=np.int32)
    a = sk.array(vals, device=device)
    out = sk.zeros(len(vals), dtype=int, device=device)
    sk.launch(k_nested_if, dim=len(vals), inputs=[a, out], device=device)

    def ref(x):
        if x > 0:
            if x > 5:
                return 2
            return 3 if x == 3 else 1
        return -1

    np.testing.assert_array_equal(out.numpy(), [ref(x) for x in vals])


@sk.kernel
def k_loops(n: int, out: sk.array(dtype=int, ndim=2)):
    i = sk.tid()
    # dynamic range with start/stop/step
    s = int(0)
    for k in range(i, n, 3):
        s += k
    out[i, 0] = s
    # negative step
    s2 = int(0)
    for k in range(n, i, -2):
        s2 += k
    out[i, 1] = s2
    # static range (unrolled)
    s3 = int(0)
    for k in range(5):
        s3 = s3 * 2 + k
    out[i, 2] = s3
    # nested loops with loop-carried value
    s4 = int(0)
    for a in range(i):
        for b in range(a):
            s4 += a * b
    out[i, 3] = s4
    # empty range
    s5 = int(7)
    for k in range(i, i):
        s5 = 0
    out[i, 4] = s5
    # long static range (not unrolled: above max_unroll)
    s6 = int(0)
    for k in range(100):
        s6 += k * i
    out[i, 5] = s6


def test_for_loops(device):
    n = 20
    out = sk.zeros((n, 6), dtype=int, device=device)
    sk.launch(k_loops, dim=n, inputs=[n, out], device=device)
    ref = np.zeros((n, 6), dtype=np.int32)
    for i in range(n):
        ref[i, 0] = sum(range(i, n, 3))
        ref[i, 1] = sum(range(n, i, -2))
        s3 = 0
        for k in range(5):
            s3 = s3 * 2 + k
        ref[i, 2] = s3
        ref[i, 3] = sum(a * b for a in range(i) for b in range(a))
        ref[i, 4] = 7
        ref[i, 5] = sum(k * i for k in range(100))
    np.testing.assert_array_equal(out.numpy(), ref)


@sk.kernel
def k_dynamic_step(step: int, out: sk.array(dtype=int)):
    i = sk.tid()
    c = int(0)
    for k in range(10, -10, step):
        c += 1
    out[i] = c


@pytest.mark.parametrize("step", [1, 3, -1, -4])
def test_runtime_step_sign(device, step):
    out = sk.zeros(1, dtype=int, device=device)
    sk.launch(k_dynamic_step, dim=1, inputs=[step, out], device=device)
    assert out.numpy()[0] == len(range(10, -10, step))


@sk.kernel
def k_break_continue(n: int, out: sk.array(dtype=int, ndim=2)):
    i = sk.tid()
    s = int(0)
    for k in range(n):
        if k % 3 == 0:
            continue
        if k > i:
            break
        s += k
    out[i, 0] = s
    # break / continue in a static range must still behave (no unrolling)
    t = int(0)
    for k in range(8):
        if k == 2:
            continue
        if k == 6:
            break
        t += k
    out[i, 1] = t
    # while with break
    j = int(0)
    c = int(0)
    while True:
        j += 1
        if j * j > i:
            break
        c += j
    out[i, 2] = c
    # nested loops: break only leaves the inner loop
    u = int(0)
    for a in range(4):
        for b in range(10):
            if b > a:
                break
            u += 1
    out[i, 3] = u


def test_break_continue(device):
    n = 16
    out = sk.zeros((n, 4), dtype=int, device=device)
    sk.launch(k_break_continue, dim=n, inputs=[n, out], device=device)
    for i in range(n):
        s = 0
        for k in range(n):
            if k % 3 == 0:
                continue
            if k > i:
                break
            s += k
        t = 0
        for k in range(8):
            if k == 2:
                continue
            if k == 6:
                break
            t += k
        j, c = 0, 0
        while True:
            j += 1
            if j * j > i:
                break
            c += j
        assert out.numpy()[i].tolist() == [s, t, c, 10], i


@sk.kernel
def k_while(a: sk.array(dtype=int), out: sk.array(dtype=int)):
    i = sk.tid()
    x = a[i]
    steps = int(0)
    while x != 1:
        if x % 2 == 0:
            x = x // 2
        else:
            x = 3 * x + 1
        steps += 1
    out[i] = steps


def collatz(x):
    s = 0
    while x != 1:
        x = x // 2 if x % 2 == 0 else 3 * x + 1
        s += 1
    return s


def test_while_collatz(device):
    vals = np.arange(1, 200, dtype=np.int32)
    a = sk.array(vals, device=device)
    out = sk.zeros(len(vals), dtype=int, device=device)
    sk.launch(k_while, dim=len(vals), inputs=[a, out], device=device)
    np.testing.assert_array_equal(out.numpy(), [collatz(int(v)) for v in vals])


@sk.kernel
def k_ifexp_boolops(a: sk.array(dtype=float), out: sk.array(dtype=float, ndim=2)):
    i = sk.tid()
    x = a[i]
    out[i, 0] = x if x > 0.0 else -2.0 * x
    out[i, 1] = 1.0 if (x > -1.0 and x < 1.0) else 0.0
    out[i, 2] = 1.0 if (x < -2.0 or x > 2.0) else 0.0
    out[i, 3] = 1.0 if not (x > 0.0) else 0.0
    out[i, 4] = 1.0 if -1.0 < x <= 2.0 else 0.0  # chained comparison
    out[i, 5] = 1.0 if (x > 0.0 and x < 3.0 and x != 1.0) else 0.0
    n = int(x)
    out[i, 6] = 1.0 if n else 0.0  # truthiness of an int
    out[i, 7] = 1.0 if x else 0.0  # truthiness of a float


def test_ifexp_and_boolops(device):
    vals = np.array([-3.0, -2.0, -1.5, -1.0, -0.5, 0.0, 0.5, 1.0, 1.5, 2.0, 2.5, 3.0], dtype=np.float32)
    a = sk.array(vals, device=device)
    out = sk.zeros((len(vals), 8), device=device)
    sk.launch(k_ifexp_boolops, dim=len(vals), inputs=[a, out], device=device)
    ref = np.array([[x if x > 0 else -2 * x, -1 < x < 1, x < -2 or x > 2, not x > 0, -1 < x <= 2,
                     0 < x < 3 and x != 1, bool(int(x)), bool(x)] for x in vals], dtype=np.float32)
    np.testing.assert_array_equal(out.numpy(), ref)


@sk.kernel(module="tests.test_control_flow.debug")  # compiled only in debug mode (bounds checks)
def k_short_circuit(a: sk.array(dtype=int), out: sk.array(dtype=int)):
    i = sk.tid()
    # a[i] would be out of bounds for i >= len(a): the right operand must not run
    n = a.shape[0]
    if i < n and a[i] > 0:
        out[i] = 1
    elif i >= n or a[i] < -100:
        out[i] = 2
    else:
        out[i] = 3


def test_short_circuit(device):
    a = sk.array(np.array([5, -1, 0, 7], dtype=np.int32), device=device)
    out = sk.zeros(8, dtype=int, device=device)
    mode = sk.config.mode
    sk.config.mode = "debug"  # an evaluated out-of-bounds read would raise
    try:
        sk.launch(k_short_circuit, dim=8, inputs=[a, out], device=device)
    finally:
        sk.config.mode = mode
    np.testing.assert_array_equal(out.numpy(), [1, 3, 3, 1, 2, 2, 2, 2])


@sk.func
def first_negative(a: sk.array(dtype=float)):
    for k in range(a.shape[0]):
        if a[k] < 0.0:
            return k
    return -1


@sk.func
def sign_of(x: float):
    if x > 0.0:
        return 1
    elif x < 0.0:
        return -1
    return 0


@sk.kernel
def k_early_return(a: sk.array(dtype=float), out: sk.array(dtype=int)):
    i = sk.tid()
    if i == 0:
        out[0] = first_negative(a)
        return
    out[i] = sign_of(a[i])
    if i > 2:
        return
    out[i] = out[i] + 10


def test_early_return(device):
    vals = np.array([3.0, 1.0, 0.0, -2.0, 5.0, -1.0], dtype=np.float32)
    a = sk.array(vals, device=device)
    out = sk.zeros(len(vals), dtype=int, device=device)
    sk.launch(k_early_return, dim=len(vals), inputs=[a, out], device=device)
    np.testing.assert_array_equal(out.numpy(), [3, 11, 10, -1, 1, -1])


@sk.kernel
def k_loop_phi(n: int, out: sk.array(dtype=float, ndim=2)):
    i = sk.tid()
    # variables modified in branches inside loops, and read after the loop
    x = float(i)
    lo = float(1.0e9)
    hi = float(-1.0e9)
    for k in range(n):
        x = x * 1.5 if k % 2 == 0 else x - 3.0
        if x < lo:
            lo = x
        if x > hi:
            hi = x
    out[i, 0] = x
    out[i, 1] = lo
    out[i, 2] = hi
    # a variable assigned before the loop and conditionally reassigned in a while loop
    m = float(0.0)
    k = int(0)
    while k < n:
        if k == i:
            m = float(k) * 2.0
        k += 1
    out[i, 3] = m


def test_loop_carried_phis(device):
    n, dim = 7, 10
    out = sk.zeros((dim, 4), device=device)
    sk.launch(k_loop_phi, dim=dim, inputs=[n, out], device=device)
    for i in range(dim):
        x = np.float32(i)
        lo, hi = np.float32(1e9), np.float32(-1e9)
        for k in range(n):
            x = np.float32(x * np.float32(1.5)) if k % 2 == 0 else np.float32(x - np.float32(3.0))
            lo, hi = min(lo, x), max(hi, x)
        m = 2.0 * i if i < n else 0.0
        np.testing.assert_allclose(out.numpy()[i], [x, lo, hi, m], rtol=1e-6)


@sk.kernel
def k_multi_dim(out1: sk.array(dtype=int, ndim=3), out2: sk.array(dtype=int, ndim=4)):
    i, j, k = sk.tid()
    out1[i, j, k] = i * 100 + j * 10 + k


@sk.kernel
def k_multi_dim4(out2: sk.array(dtype=int, ndim=4)):
    i, j, k, l = sk.tid()
    out2[i, j, k, l] = i * 1000 + j * 100 + k * 10 + l


def test_tid_3d_4d(device):
    o3 = sk.zeros((3, 4, 5), dtype=int, device=device)
    o4 = sk.zeros((2, 3, 4, 5), dtype=int, device=device)
    sk.launch(k_multi_dim, dim=(3, 4, 5), inputs=[o3, o4], device=device)
    sk.launch(k_multi_dim4, dim=(2, 3, 4, 5), inputs=[o4], device=device)
    i, j, k = np.indices((3, 4, 5))
    np.testing.assert_array_equal(o3.numpy(), i * 100 + j * 10 + k)
    i, j, k, l = np.indices((2, 3, 4, 5))
    np.testing.assert_array_equal(o4.numpy(), i * 1000 + j * 100 + k * 10 + l)


@sk.kernel
def k_large_launch(out: sk.array(dtype=int)):
    i = sk.tid()
    if i % 7 == 3:
        out[i] = i
    else:
        out[i] = -i


def test_large_parallel_launch(device):
    n = 1 << 20
    out = sk.zeros(n, dtype=int, device=device)
    sk.launch(k_large_launch, dim=n, inputs=[out], device=device)
    r = np.arange(n, dtype=np.int32)
    np.testing.assert_array_equal(out.numpy(), np.where(r % 7 == 3, r, -r))


def test_zero_size_launch(device):
    out = sk.zeros(4, dtype=int, device=device)
    sk.launch(k_large_launch, dim=0, inputs=[out], device=device)
    np.testing.assert_array_equal(out.numpy(), 0)


@sk.func
def find_pair(a: sk.array(dtype=int), target: int):
    # a tuple returned from a nested loop
    n = a.shape[0]
    for x in range(n):
        for y in range(x + 1, n):
            if a[x] + a[y] == target:
                return x, y
    return -1, -1


@sk.func
def first_big_vec(a: sk.array(dtype=int), limit: int):
    k = int(0)
    while k < a.shape[0]:
        if a[k] > limit:
            return sk.vec2(float(k), float(a[k]))
        k += 1
    return sk.vec2(-1.0, -1.0)


@sk.func
def count_until(a: sk.array(dtype=int), stop: int):
    c = int(0)
    for k in range(a.shape[0]):
        if a[k] == stop:
            return c
        if a[k] < 0:
            continue
        c += 1
    return -c


@sk.kernel
def k_returns_in_loops(a: sk.array(dtype=int), out: sk.array(dtype=int, ndim=2), outv: sk.array(dtype=sk.vec2)):
    i = sk.tid()
    x, y = find_pair(a, i)
    out[i, 0] = x
    out[i, 1] = y
    out[i, 2] = count_until(a, i)
    outv[i] = first_big_vec(a, i)


def test_returns_from_loops_in_funcs(device):
    vals = [3, -1, 4, 1, 5, 9, 2, 6]
    a = sk.array(np.array(vals, np.int32), device=device)
    n = 12
    out = sk.zeros((n, 3), dtype=int, device=device)
    outv = sk.zeros(n, dtype=sk.vec2, device=device)
    sk.launch(k_returns_in_loops, dim=n, inputs=[a, out, outv], device=device)

    def find_pair_py(t):
        for x in range(len(vals)):
            for y in range(x + 1, len(vals)):
                if vals[x] + vals[y] == t:
                    return x, y
        return -1, -1

    def count_until_py(s):
        c = 0
        for v in vals:
            if v == s:
                return c
            if v < 0:
                continue
            c += 1
        return -c

    def first_big_py(lim):
        for k, v in enumerate(vals):
            if v > lim:
                return [k, v]
        return [-1, -1]

    for i in range(n):
        assert out.numpy()[i].tolist() == [*find_pair_py(i), count_until_py(i)], i
        assert outv.numpy()[i].tolist() == first_big_py(i), i


@sk.kernel
def k_chained_and_aug(out: sk.array(dtype=int, ndim=2)):
    i = sk.tid()
    a = b = i * 2  # chained assignment
    b += 1
    x = i
    x += 5
    x -= 2
    x *= 3
    x //= 2
    x %= 5
    x <<= 2
    x >>= 1
    x |= 1
    x &= 7
    x ^= 2
    out[i, 0] = a
    out[i, 1] = b
    out[i, 2] = x


def test_chained_and_augmented_assignment(device):
    out = sk.zeros((6, 3), dtype=int, device=device)
    sk.launch(k_chained_and_aug, dim=6, inputs=[out], device=device)
    for i in range(6):
        x = (i + 5 - 2) * 3 // 2
        x = x % 5  # non-negative here: C and Python agree
        x = ((((x << 2) >> 1) | 1) & 7) ^ 2
        assert out.numpy()[i].tolist() == [2 * i, 2 * i + 1, x], i


@sk.kernel(module="tests.test_control_flow.debug")
def k_assert(a: sk.array(dtype=int)):
    i = sk.tid()
    assert a[i] >= 0  # MARK-assert
    a[i] = a[i] + 1


def test_assert_checked_in_debug_mode(device):
    a = sk.array(np.array([1, 2, -3, 4], np.int32), device=device)
    mode = sk.config.mode
    sk.config.mode = "debug"
    try:
        with pytest.raises(RuntimeError, match=r"test_control_flow.py:\d+: assertion failed") as info:
            sk.launch(k_assert, dim=4, inputs=[a], device=device)
        assert "assert a[i] >= 0" in str(info.value)  # the offending source line
    finally:
        sk.config.mode = mode
    a = sk.array(np.array([1, 2, -3, 4], np.int32), device=device)
    sk.launch(k_assert, dim=4, inputs=[a], device=device)  # release mode: asserts are not checked
    np.testing.assert_array_equal(a.numpy(), [2, 3, -2, 5])


@sk.kernel
def static_skip(x: sk.array(dtype=sk.float64), out: sk.array(dtype=sk.float64)):
    i = sk.tid()
    s = sk.float64(0.0)
    for k in range(40):                 # longer than max_unroll: unrolled because static() reads k
        if sk.static(k % 3 != 1):
            continue
        s += sk.float64(k) * x[i] * x[i]
    for k in range(5):                  # short: unrolled, with a continue taken at run time
        if x[i] < sk.float64(k):
            continue
        s += sk.float64(1.0)
    out[i] = s


def test_static_of_the_loop_variable_unrolls_the_loop(device):
    xv = np.array([1.5, -2.0, 3.5])
    x = sk.array(xv, dtype=sk.float64, requires_grad=True, device=device)
    out = sk.zeros(3, dtype=sk.float64, requires_grad=True, device=device)
    with sk.Tape() as tape:
        sk.launch(static_skip, 3, inputs=[x], outputs=[out], device=device)
    ks = sum(k for k in range(40) if k % 3 == 1)
    counts = np.array([sum(1 for k in range(5) if not v < k) for v in xv])
    np.testing.assert_allclose(out.numpy(), ks * xv**2 + counts)
    tape.backward(grads={out: np.ones(3)})
    np.testing.assert_allclose(x.grad.numpy(), 2 * ks * xv)

"""Atomics under many threads: exact integer counts, add/sub/min/max/cas/exch for int32, uint32,
int64, float32, float64 and vec3, returned old values, ``a[i] += v`` as an atomic add."""
import numpy as np
import pytest

import simkit as sk

N_BIG = 1 << 20

# ---------------------------------------------------------------------------- counters


@sk.kernel
def k_count(counters: sk.array(dtype=int)):
    i = sk.tid()
    sk.atomic_add(counters, i % 10, 1)


@sk.kernel
def k_count_aug(counters: sk.array(dtype=sk.int64, ndim=2)):
    i = sk.tid()
    counters[i % 3, i % 5] += sk.int64(2)
    counters[i % 3, i % 5] -= sk.int64(1)


def test_million_increments_ten_counters(device):
    c = sk.zeros(10, dtype=int, device=device)
    sk.launch(k_count, dim=N_BIG, inputs=[c], device=device)
    ref = np.bincount(np.arange(N_BIG) % 10, minlength=10)
    np.testing.assert_array_equal(c.numpy(), ref)
    sk.launch(k_count, dim=N_BIG, inputs=[c], device=device)  # again: accumulates
    np.testing.assert_array_equal(c.numpy(), 2 * ref)


def test_augmented_assignment_is_atomic(device):
    c = sk.zeros((3, 5), dtype=sk.int64, device=device)
    sk.launch(k_count_aug, dim=N_BIG, inputs=[c], device=device)
    i = np.arange(N_BIG)
    ref = np.zeros((3, 5), np.int64)
    np.add.at(ref, (i % 3, i % 5), 1)
    np.testing.assert_array_equal(c.numpy(), ref)


# ---------------------------------------------------------------------------- per-dtype add/sub/min/max/exch


def _make_rmw_kernel(dtype):
    @sk.kernel
    def k(vals: sk.array(dtype=dtype), acc: sk.array(dtype=dtype), old: sk.array(dtype=dtype, ndim=2)):
        i = sk.tid()
        v = vals[i]
        sk.atomic_add(acc, 0, v)
        sk.atomic_sub(acc, 1, v)
        sk.atomic_min(acc, 2, v)
        sk.atomic_max(acc, 3, v)
        # returned old values: a per-thread slot so every return is checkable
        old[i, 0] = sk.atomic_add(acc, 4 + i, v)
        old[i, 1] = sk.atomic_exch(acc, 4 + i, v)

    return k


RMW_TYPES = {
    "int32": (sk.int32, np.int32),
    "uint32": (sk.uint32, np.uint32),
    "int64": (sk.int64, np.int64),
    "float32": (sk.float32, np.float32),
    "float64": (sk.float64, np.float64),
}
RMW_KERNELS = {name: _make_rmw_kernel(t) for name, (t, _) in RMW_TYPES.items()}


@pytest.mark.parametrize("name", list(RMW_TYPES))
def test_add_sub_min_max_exch(device, name):
    dtype, npt = RMW_TYPES[name]
    n = 50000
    rng = np.random.default_rng(3)
    if np.issubdtype(npt, np.integer):
        lo = 0 if name.startswith("u") else -1000
        vals = rng.integers(lo, 1000, size=n).astype(npt)
    else:
        # dyadic values: float sums are exact in any order
        vals = (rng.integers(-1000, 1000, size=n) / 4.0).astype(npt)
    init = np.zeros(4 + n, dtype=npt)
    start = np.array(100, dtype=npt)
    init[0] = start
    init[1] = np.array(10**6, dtype=npt) if not np.issubdtype(npt, np.unsignedinteger) else npt(4_000_000_000)
    init[2] = np.iinfo(npt).max if np.issubdtype(npt, np.integer) else np.finfo(npt).max
    init[3] = np.iinfo(npt).min if np.issubdtype(npt, np.integer) else -np.finfo(npt).max
    init[4:] = np.arange(n).astype(npt)
    acc = sk.array(init, device=device)
    old = sk.zeros((n, 2), dtype=dtype, device=device)
    sk.launch(RMW_KERNELS[name], dim=n, inputs=[sk.array(vals, device=device), acc, old], device=device)
    a = acc.numpy()
    with np.errstate(over="ignore"):
        assert a[0] == npt(start + vals.sum(dtype=npt))
        assert a[1] == npt(init[1] - vals.sum(dtype=npt))
    assert a[2] == vals.min() and a[3] == vals.max()
    # per-thread slot: old of add is the initial value, old of exch is initial + v
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(old.numpy()[:, 0], init[4:])
        np.testing.assert_array_equal(old.numpy()[:, 1], (init[4:] + vals).astype(npt))
    np.testing.assert_array_equal(a[4:], vals)


@sk.kernel
def k_old_values_unique(counter: sk.array(dtype=int), tickets: sk.array(dtype=int)):
    i = sk.tid()
    tickets[i] = sk.atomic_add(counter, 0, 1)


def test_returned_old_values_are_unique_tickets(device):
    n = 200000
    counter = sk.zeros(1, dtype=int, device=device)
    tickets = sk.zeros(n, dtype=int, device=device)
    sk.launch(k_old_values_unique, dim=n, inputs=[counter, tickets], device=device)
    assert counter.numpy()[0] == n
    np.testing.assert_array_equal(np.sort(tickets.numpy()), np.arange(n))


# ---------------------------------------------------------------------------- compare-and-swap


@sk.kernel
def k_cas_lock_increment(lock: sk.array(dtype=int), total: sk.array(dtype=int), winners: sk.array(dtype=int)):
    i = sk.tid()
    # exactly one thread wins the slot
    if sk.atomic_cas(lock, 0, 0, i + 1) == 0:
        winners[0] = i + 1
    # CAS loop implementing an increment of total[0]: exact count
    done = int(0)
    while done == 0:
        cur = total[0]
        if sk.atomic_cas(total, 0, cur, cur + 1) == cur:
            done = 1


def test_cas(device):
    n = 20000
    lock = sk.zeros(1, dtype=int, device=device)
    total = sk.zeros(1, dtype=int, device=device)
    winners = sk.zeros(1, dtype=int, device=device)
    sk.launch(k_cas_lock_increment, dim=n, inputs=[lock, total, winners], device=device)
    assert total.numpy()[0] == n
    assert lock.numpy()[0] == winners.numpy()[0] and 1 <= lock.numpy()[0] <= n


@sk.kernel
def k_cas_types(a: sk.array(dtype=float), b: sk.array(dtype=sk.float64), c: sk.array(dtype=sk.uint32),
                d: sk.array(dtype=sk.int64), out: sk.array(dtype=sk.float64)):
    out[0] = sk.float64(sk.atomic_cas(a, 0, 1.5, 2.5))  # succeeds
    out[1] = sk.float64(sk.atomic_cas(a, 1, 1.5, 2.5))  # fails: a[1] != 1.5
    out[2] = sk.atomic_cas(b, 0, sk.float64(3.0), sk.float64(-1.0))
    out[3] = sk.float64(sk.atomic_cas(c, 0, sk.uint32(7), sk.uint32(4000000000)))
    out[4] = sk.float64(sk.atomic_cas(d, 0, sk.int64(-5), sk.int64(1) << sk.int64(40)))



def test_cas_types(device):
    a = sk.array(np.array([1.5, 0.0], np.float32), device=device)
    b = sk.array(np.array([3.0], np.float64), device=device)
    c = sk.array(np.array([7], np.uint32), device=device)
    d = sk.array(np.array([-5], np.int64), device=device)
    out = sk.zeros(5, dtype=sk.float64, device=device)
    sk.launch(k_cas_types, dim=1, inputs=[a, b, c, d, out], device=device)
    np.testing.assert_array_equal(out.numpy(), [1.5, 0.0, 3.0, 7.0, -5.0])
    np.testing.assert_array_equal(a.numpy(), [2.5, 0.0])
    assert b.numpy()[0] == -1.0 and c.numpy()[0] == 4000000000 and d.numpy()[0] == 1 << 40


# ---------------------------------------------------------------------------- vectors


@sk.kernel
def k_vec_atomics(vals: sk.array(dtype=sk.vec3), acc: sk.array(dtype=sk.vec3), old: sk.array(dtype=sk.vec3)):
    i = sk.tid()
    v = vals[i]
    sk.atomic_add(acc, 0, v)
    sk.atomic_sub(acc, 1, v)
    sk.atomic_min(acc, 2, v)
    sk.atomic_max(acc, 3, v)
    acc[4] += v
    old[i] = sk.atomic_add(acc, 5 + i, v)


@pytest.mark.parametrize("threads", [None, 1])
def test_vec3_atomics(device, threads, monkeypatch):
    # threads=1: the CPU's serial path, which updates a whole value at once (atomic.h, atomic_value::serial)
    monkeypatch.setattr(sk.config, "cpu_threads", threads)
    n = 30000
    rng = np.random.default_rng(4)
    vals = (rng.integers(-400, 400, size=(n, 3)) / 8.0).astype(np.float32)
    init = np.zeros((5 + n, 3), np.float32)
    init[2] = np.finfo(np.float32).max
    init[3] = -np.finfo(np.float32).max
    init[2, 1] = init[3, 2] = np.nan           # (min and max take a NaN in the array as missing)
    init[5:] = rng.normal(size=(n, 3)).astype(np.float32)
    acc = sk.array(init, dtype=sk.vec3, device=device)
    old = sk.zeros(n, dtype=sk.vec3, device=device)
    sk.launch(k_vec_atomics, dim=n, inputs=[sk.array(vals, dtype=sk.vec3, device=device), acc, old], device=device)
    a = acc.numpy()
    np.testing.assert_array_equal(a[0], vals.sum(axis=0))
    np.testing.assert_array_equal(a[1], -vals.sum(axis=0))
    np.testing.assert_array_equal(a[2], vals.min(axis=0))  # component-wise
    np.testing.assert_array_equal(a[3], vals.max(axis=0))
    np.testing.assert_array_equal(a[4], vals.sum(axis=0))
    np.testing.assert_array_equal(old.numpy(), init[5:])
    np.testing.assert_array_equal(a[5:], init[5:] + vals)


# ---------------------------------------------------------------------------- multi-dim arrays, small types


@sk.kernel
def k_atomic_nd(a2: sk.array(dtype=int, ndim=2), a3: sk.array(dtype=int, ndim=3), a4: sk.array(dtype=int, ndim=4)):
    i = sk.tid()
    sk.atomic_add(a2, i % 2, i % 3, 1)
    sk.atomic_max(a3, i % 2, 0, i % 2, i)
    sk.atomic_min(a4, 0, 1, 0, i % 2, -i)


def test_atomics_nd(device):
    n = 5000
    a2 = sk.zeros((2, 3), dtype=int, device=device)
    a3 = sk.zeros((2, 1, 2), dtype=int, device=device)
    a4 = sk.zeros((1, 2, 1, 2), dtype=int, device=device)
    sk.launch(k_atomic_nd, dim=n, inputs=[a2, a3, a4], device=device)
    i = np.arange(n)
    ref2 = np.zeros((2, 3), np.int32)
    np.add.at(ref2, (i % 2, i % 3), 1)
    np.testing.assert_array_equal(a2.numpy(), ref2)
    assert a3.numpy()[0, 0, 0] == n - 2 and a3.numpy()[1, 0, 1] == n - 1
    assert a3.numpy()[0, 0, 1] == 0 and a3.numpy()[1, 0, 0] == 0
    assert a4.numpy()[0, 1, 0, 0] == -(n - 2) and a4.numpy()[0, 1, 0, 1] == -(n - 1)


@sk.kernel
def k_atomic_float_contention(acc: sk.array(dtype=float)):
    i = sk.tid()
    sk.atomic_add(acc, i % 4, 0.5)


def test_float_add_under_contention(device):
    acc = sk.zeros(4, device=device)
    sk.launch(k_atomic_float_contention, dim=N_BIG, inputs=[acc], device=device)
    np.testing.assert_array_equal(acc.numpy(), N_BIG / 8)  # exact: every partial sum is representable


# ---------------------------------------------------------------------------- small types, exch on values


def _make_small_kernel(dtype):
    @sk.kernel
    def k(acc: sk.array(dtype=dtype), vals: sk.array(dtype=dtype), old: sk.array(dtype=dtype)):
        i = sk.tid()
        sk.atomic_add(acc, 0, dtype(1))
        sk.atomic_min(acc, 1, vals[i])
        sk.atomic_max(acc, 2, vals[i])
        old[i] = sk.atomic_exch(acc, 3 + i, vals[i])

    return k


SMALL_TYPES = {"int8": (sk.int8, np.int8), "uint8": (sk.uint8, np.uint8), "int16": (sk.int16, np.int16),
               "uint16": (sk.uint16, np.uint16), "uint64": (sk.uint64, np.uint64),
               "float16": (sk.float16, np.float16)}
SMALL_KERNELS = {name: _make_small_kernel(t) for name, (t, _) in SMALL_TYPES.items()}


@pytest.mark.parametrize("name", list(SMALL_TYPES))
def test_small_type_atomics(device, name):
    dtype, npt = SMALL_TYPES[name]
    n = 1000
    rng = np.random.default_rng(5)
    vals = rng.integers(0, 100, size=n).astype(npt)
    init = np.zeros(3 + n, npt)
    init[1] = 100
    init[3:] = np.arange(n) % 50
    acc = sk.array(init, device=device)
    old = sk.zeros(n, dtype=dtype, device=device)
    sk.launch(SMALL_KERNELS[name], dim=n, inputs=[acc, sk.array(vals, device=device), old], device=device)
    a = acc.numpy()
    expect_count = np.array(n).astype(npt)  # 8-bit counters wrap
    assert a[0] == expect_count and a[1] == vals.min() and a[2] == vals.max()
    np.testing.assert_array_equal(old.numpy(), init[3:])
    np.testing.assert_array_equal(a[3:], vals)


@sk.kernel
def k_exch_values(v: sk.array(dtype=sk.vec3), m: sk.array(dtype=sk.mat22), ov: sk.array(dtype=sk.vec3),
                  om: sk.array(dtype=sk.mat22)):
    i = sk.tid()
    ov[i] = sk.atomic_exch(v, i, sk.vec3(float(i), 1.0, 2.0))
    om[i] = sk.atomic_exch(m, i, sk.mat22(float(i), 0.0, 0.0, 1.0))


def test_exch_vector_matrix(device):
    n = 10
    v0 = np.arange(3 * n, dtype=np.float32).reshape(n, 3)
    m0 = np.arange(4 * n, dtype=np.float32).reshape(n, 2, 2)
    v = sk.array(v0, dtype=sk.vec3, device=device)
    m = sk.array(m0, dtype=sk.mat22, device=device)
    ov, om = sk.zeros(n, dtype=sk.vec3, device=device), sk.zeros(n, dtype=sk.mat22, device=device)
    sk.launch(k_exch_values, dim=n, inputs=[v, m, ov, om], device=device)
    np.testing.assert_array_equal(ov.numpy(), v0)
    np.testing.assert_array_equal(om.numpy(), m0)
    np.testing.assert_array_equal(v.numpy(), np.stack([np.arange(n), np.ones(n), 2 * np.ones(n)], 1))
    np.testing.assert_array_equal(m.numpy()[:, 0, 0], np.arange(n))


def test_cas_on_vectors_is_a_compile_error():
    @sk.kernel
    def k_cas_vec(a: sk.array(dtype=sk.vec3)):
        sk.atomic_cas(a, 0, a[0], sk.vec3(1.0))

    with pytest.raises(sk.CompileError, match="atomic_cas"):
        sk.launch(k_cas_vec, dim=1, inputs=[sk.zeros(1, dtype=sk.vec3, device="cpu")], device="cpu")


def test_counts_exact_with_oversubscribed_cpu_threads():
    # more threads than cores: preemption in the middle of read-modify-write sequences
    saved = sk.config.cpu_threads
    sk.config.cpu_threads = 16
    try:
        c = sk.zeros(10, dtype=int, device="cpu")
        sk.launch(k_count, dim=N_BIG, inputs=[c], device="cpu")
        acc = sk.zeros(4, device="cpu")
        sk.launch(k_atomic_float_contention, dim=N_BIG, inputs=[acc], device="cpu")
    finally:
        sk.config.cpu_threads = saved
    np.testing.assert_array_equal(c.numpy(), np.bincount(np.arange(N_BIG) % 10, minlength=10))
    np.testing.assert_array_equal(acc.numpy(), N_BIG / 8)


@sk.kernel
def literal_values(a: sk.array(dtype=sk.float64), b: sk.array(dtype=sk.float16)):
    i = sk.tid()
    sk.atomic_add(a, i, 0.5)           # (a Python number takes the array's element type, as in Warp)
    sk.atomic_max(a, i, 0.75)
    sk.atomic_sub(b, i, 2.0)


def test_atomics_take_number_literals_of_the_arrays_type(device):
    a = sk.zeros(3, dtype=sk.float64, device=device)
    b = sk.zeros(3, dtype=sk.float16, device=device)
    sk.launch(literal_values, 3, inputs=[a, b], device=device)
    np.testing.assert_array_equal(a.numpy(), np.full(3, 0.75))
    np.testing.assert_array_equal(b.numpy(), np.full(3, -2.0, dtype=np.float16))

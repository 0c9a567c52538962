"""Bitwise atomics (``atomic_and / atomic_or / atomic_xor`` and ``a[i] &= v``, ``|=``, ``^=``) on integer
scalars, vectors and matrices: many threads hit each element, the result is the numpy reduction, and
the returned old values are a consistent serialisation of the updates."""
import numpy as np
import pytest

import simkit as sk
from simkit.kernels.errors import CompileTypeError

mat22ui = sk.types.matrix(shape=(2, 2), dtype=sk.uint32)
vec4ub = sk.types.vector(4, sk.uint8)


@sk.kernel
def vec_ops(bits: sk.array(dtype=sk.vec3ui), a_and: sk.array(dtype=sk.vec3ui), a_or: sk.array(dtype=sk.vec3ui),
            a_xor: sk.array(dtype=sk.vec3ui), s_and: sk.array(dtype=sk.vec3ui), s_or: sk.array(dtype=sk.vec3ui),
            s_xor: sk.array(dtype=sk.vec3ui), old_or: sk.array(dtype=sk.vec3ui), groups: int):
    i = sk.tid()
    g = i % groups
    v = bits[i]
    sk.atomic_and(a_and, g, ~v)
    old_or[i] = sk.atomic_or(a_or, g, v)
    sk.atomic_xor(a_xor, g, v)
    s_and[g] &= ~v
    s_or[g] |= v
    s_xor[g] ^= v


@sk.kernel
def mat_ops_2d(bits: sk.array(dtype=mat22ui), a_and: sk.array2d(dtype=mat22ui), a_or: sk.array2d(dtype=mat22ui),
               a_xor: sk.array2d(dtype=mat22ui)):
    i = sk.tid()
    v = bits[i]
    r = i % 2
    c = (i // 2) % 3
    sk.atomic_and(a_and, r, c, ~v)
    sk.atomic_or(a_or, r, c, v)
    a_xor[r, c] ^= v


@sk.kernel
def byte_vec_ops(bits: sk.array(dtype=vec4ub), a_or: sk.array(dtype=vec4ub), a_xor: sk.array(dtype=vec4ub)):
    i = sk.tid()
    sk.atomic_or(a_or, 0, bits[i])
    sk.atomic_xor(a_xor, i % 2, bits[i])


def _reduce(op, start, values, groups):
    out = np.array(start)
    for g in range(groups):
        for v in values[g::groups]:
            out[g] = op(out[g], v)
    return out


def test_vector_bitwise_atomics(device):
    rng = np.random.default_rng(3)
    n, groups = 4096, 5
    # one random bit per thread and component: every element sees many contending updates
    bits = (np.uint32(1) << rng.integers(0, 32, size=(n, 3)).astype(np.uint32)).astype(np.uint32)
    full = np.full((groups, 3), 0xFFFFFFFF, np.uint32)
    zero = np.zeros((groups, 3), np.uint32)
    arrays = [sk.array(full, dtype=sk.vec3ui, device=device), sk.array(zero, dtype=sk.vec3ui, device=device),
              sk.array(zero, dtype=sk.vec3ui, device=device), sk.array(full, dtype=sk.vec3ui, device=device),
              sk.array(zero, dtype=sk.vec3ui, device=device), sk.array(zero, dtype=sk.vec3ui, device=device)]
    old_or = sk.zeros(n, dtype=sk.vec3ui, device=device)
    sk.launch(vec_ops, dim=n, inputs=[sk.array(bits, dtype=sk.vec3ui, device=device), *arrays, old_or, groups],
              device=device)
    want_and = _reduce(lambda a, b: a & ~b, full, bits, groups)
    want_or = _reduce(np.bitwise_or, zero, bits, groups)
    want_xor = _reduce(np.bitwise_xor, zero, bits, groups)
    for got, want in zip([a.numpy() for a in arrays], [want_and, want_or, want_xor] * 2):
        np.testing.assert_array_equal(got, want)
    # each old value of atomic_or is a subset of the final bits and misses nothing set before it:
    # per element and component, the old values form a chain under inclusion
    old = old_or.numpy()
    for g in range(groups):
        for c in range(3):
            olds = old[g::groups, c]
            assert np.all((olds & ~want_or[g, c]) == 0)
            srt = np.sort(olds)
            assert np.all((srt[:-1] & ~srt[1:]) == 0)


def test_matrix_bitwise_atomics_2d(device):
    rng = np.random.default_rng(4)
    n = 600
    bits = rng.integers(0, 2**32, size=(n, 2, 2), dtype=np.uint32)
    a_and = sk.full((2, 3), mat22ui(*[0xFFFFFFFF] * 4), dtype=mat22ui, device=device)
    a_or, a_xor = sk.zeros((2, 3), dtype=mat22ui, device=device), sk.zeros((2, 3), dtype=mat22ui, device=device)
    sk.launch(mat_ops_2d, dim=n, inputs=[sk.array(bits, dtype=mat22ui, device=device), a_and, a_or, a_xor],
              device=device)
    w_and = np.full((2, 3, 2, 2), 0xFFFFFFFF, np.uint32)
    w_or, w_xor = np.zeros((2, 3, 2, 2), np.uint32), np.zeros((2, 3, 2, 2), np.uint32)
    for i in range(n):
        r, c = i % 2, (i // 2) % 3
        w_and[r, c] &= ~bits[i]
        w_or[r, c] |= bits[i]
        w_xor[r, c] ^= bits[i]
    np.testing.assert_array_equal(a_and.numpy(), w_and)
    np.testing.assert_array_equal(a_or.numpy(), w_or)
    np.testing.assert_array_equal(a_xor.numpy(), w_xor)


def test_byte_vector_bitwise_atomics(device):
    """8-bit components (a compare-and-swap on the enclosing word on the GPU)."""
    rng = np.random.default_rng(5)
    n = 2000
    bits = rng.integers(0, 256, size=(n, 4), dtype=np.uint8)
    a_or, a_xor = sk.zeros(1, dtype=vec4ub, device=device), sk.zeros(2, dtype=vec4ub, device=device)
    sk.launch(byte_vec_ops, dim=n, inputs=[sk.array(bits, dtype=vec4ub, device=device), a_or, a_xor], device=device)
    np.testing.assert_array_equal(a_or.numpy()[0], np.bitwise_or.reduce(bits, axis=0))
    np.testing.assert_array_equal(a_xor.numpy(), np.stack([np.bitwise_xor.reduce(bits[0::2], axis=0),
                                                          np.bitwise_xor.reduce(bits[1::2], axis=0)]))


def test_float_vectors_are_refused():
    @sk.kernel
    def bad(a: sk.array(dtype=sk.vec3), v: sk.vec3):
        sk.atomic_or(a, 0, v)

    with pytest.raises(CompileTypeError, match="atomic_or"):
        sk.launch(bad, dim=1, inputs=[sk.zeros(1, dtype=sk.vec3, device="cpu"), sk.vec3(1.0, 2.0, 3.0)],
                  device="cpu")

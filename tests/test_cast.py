"""``cast(a, dtype)`` reinterprets the bits of a value as another type of the same size (Warp's ``wp.cast``):
scalars, vectors, structs, against numpy's ``view``; sizes that differ are a compile error."""
import numpy as np
import pytest

import simkit as sk


@sk.struct
class Pun:
    f: sk.float16
    i: sk.int16


@sk.kernel
def reinterpret(bits: sk.array(dtype=sk.int32), floats: sk.array(dtype=float), back: sk.array(dtype=sk.int32),
                wide: sk.array(dtype=sk.uint64), v: sk.array(dtype=sk.vec2), puns: sk.array(dtype=sk.int32)):
    i = sk.tid()
    floats[i] = sk.cast(bits[i], sk.float32)
    back[i] = sk.cast(floats[i], int)
    wide[i] = sk.cast(v[i], sk.uint64)
    v[i] = sk.cast(sk.cast(wide[i], sk.vec2i) + sk.vec2i(1, 0), sk.vec2)
    p = Pun()
    p.f = sk.float16(2.0)
    p.i = sk.int16(i)
    puns[i] = sk.cast(p, sk.int32)


def test_cast_reinterprets_bits(device):
    ints = np.array([0x3FA00000, 0x40000000, -8388608, 0], dtype=np.int32)
    vs = np.array([[1.5, -2.0], [0.25, 3.0], [1e-3, 7.0], [0.0, 0.0]], dtype=np.float32)
    bits = sk.array(ints, dtype=sk.int32, device=device)
    floats = sk.zeros(4, dtype=float, device=device)
    back = sk.zeros(4, dtype=sk.int32, device=device)
    wide = sk.zeros(4, dtype=sk.uint64, device=device)
    v = sk.array(vs, dtype=sk.vec2, device=device)
    puns = sk.zeros(4, dtype=sk.int32, device=device)
    sk.launch(reinterpret, 4, inputs=[bits, floats, back, wide, v, puns], device=device)
    np.testing.assert_array_equal(floats.numpy().view(np.int32), ints)
    np.testing.assert_array_equal(back.numpy(), ints)
    np.testing.assert_array_equal(wide.numpy(), vs.view(np.uint64).reshape(-1))
    want = vs.view(np.int32).copy()
    want[:, 0] += 1
    np.testing.assert_array_equal(v.numpy().view(np.int32), want)
    np.testing.assert_array_equal(puns.numpy(), (np.arange(4) << 16) | 0x4000)  # (float16 2.0: 0x4000)


@sk.kernel
def wrong_size(out: sk.array(dtype=float)):
    out[0] = sk.cast(sk.int64(3), sk.float32)


@sk.kernel
def not_a_type(out: sk.array(dtype=float)):
    out[0] = sk.cast(3, 4)


def test_cast_errors():
    out = sk.zeros(1, dtype=float)
    with pytest.raises(sk.CompileError, match=r"test_cast.py:\d+.*a \(int64, 8 bytes\) and dtype \(float32, "
                                              r"4 bytes\) must have the same size"):
        sk.launch(wrong_size, 1, inputs=[out])
    with pytest.raises(sk.CompileError, match="no overload of 'cast'"):
        sk.launch(not_a_type, 1, inputs=[out])


def test_numeric_conversions_are_unchanged(device):
    @sk.kernel
    def convert(x: sk.array(dtype=float), out: sk.array(dtype=int)):
        out[0] = int(x[0]) + sk.int32(x[1])

    out = sk.zeros(1, dtype=int, device=device)
    sk.launch(convert, 1, inputs=[sk.array([2.7, -1.5], dtype=float, device=device), out], device=device)
    assert out.numpy()[0] == 1

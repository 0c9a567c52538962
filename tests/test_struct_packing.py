"""Struct launch arguments packed by the generated fast packer (runtime/packer.py ``struct_packer``): the same
bytes as the checked path for every kind of field, values changed in place seen by the next launch, and
anything unusual (another class, an array on another device, a value that does not fit) left to the checked
path and its errors."""
import numpy as np
import pytest

import simkit as sk
from simkit.runtime.packer import Mismatch, struct_packer


@sk.struct
class Leaf:
    h: sk.float16
    k: sk.int8
    q: sk.quat


@sk.struct
class Mixed:
    a: sk.array(dtype=float)
    flag: sk.bool
    x: float
    n: sk.int64
    u: sk.uint16
    v: sk.vec3
    m: sk.mat22d
    leaf: Leaf
    b: sk.array2d(dtype=sk.vec3)
    none: sk.array(dtype=int)
    d: sk.float64


@sk.kernel
def read_mixed(s: Mixed, out: sk.array(dtype=sk.float64)):
    out[0] = sk.float64(s.a[1]) + sk.float64(s.x) + sk.float64(s.n) + sk.float64(s.u) + sk.float64(s.v[2])
    out[1] = s.m[1, 0] + sk.float64(s.leaf.h) + sk.float64(s.leaf.k) + sk.float64(s.leaf.q[3])
    out[2] = sk.float64(s.b[1, 0][1])
    if s.flag:
        out[3] = s.d


def _mixed(device="cpu"):
    s = Mixed()
    s.a = sk.array(np.array([1.0, 2.5, 3.0], dtype=np.float32), device=device)
    s.flag, s.x, s.n, s.u = True, 0.25, -(2**40), 7
    s.v = sk.vec3(1.0, 2.0, 4.0)
    s.m = sk.mat22d(1.0, 2.0, 3.5, 4.0)
    s.leaf = Leaf(h=0.5, k=-3, q=sk.quat(0.0, 0.0, 0.0, 1.0))
    b = sk.array(np.arange(18, dtype=np.float32).reshape(3, 2, 3), dtype=sk.vec3, device=device)
    s.b = b[:, ::-1]                                                # (a non-contiguous view)
    s.d = 1e300
    return s


def test_fast_packer_gives_the_checked_bytes_for_every_kind_of_field():
    s = _mixed()
    data, contiguous = struct_packer(Mixed)(s, sk.get_device("cpu"))
    assert data == Mixed._simkit_struct.pack(s)
    assert contiguous is False                                      # (the view in field b)
    s.b = sk.zeros((2, 2), dtype=sk.vec3)
    assert struct_packer(Mixed)(s, sk.get_device("cpu"))[1] is True
    for bad in (Leaf(), object()):
        with pytest.raises(Mismatch):
            struct_packer(Mixed)(bad, sk.get_device("cpu"))


def test_struct_launches_read_every_field_and_see_changes_made_in_place(device):
    s = _mixed(device)
    out = sk.zeros(4, dtype=sk.float64, device=device)
    want = [2.5 + 0.25 - 2.0**40 + 7 + 4.0, 3.5 + 0.5 - 3 + 1.0, 10.0, 1e300]  # (b[1, 0] is vec 3: 9, 10, 11)
    sk.launch(read_mixed, 1, inputs=[s, out], device=device)
    np.testing.assert_array_equal(out.numpy(), want)
    s.v[2] = 40.0                          # (in place: no attribute assignment)
    s.leaf.k = 5                           # (a nested struct's field)
    s.flag = False
    out.zero_()
    sk.launch(read_mixed, 1, inputs=[s, out], device=device)
    np.testing.assert_array_equal(out.numpy(), [want[0] + 36.0, want[1] + 8, 10.0, 0.0])


def test_unusual_fields_take_the_checked_path_and_its_errors():
    s = _mixed()
    out = sk.zeros(4, dtype=sk.float64)
    object.__setattr__(s, "x", "not a number")                     # (past the field check)
    with pytest.raises((TypeError, ValueError)):
        sk.launch(read_mixed, 1, inputs=[s, out])
    s = _mixed()
    object.__setattr__(s, "n", 3.0)        # a float in an int field: packed by the checked path, as before
    sk.launch(read_mixed, 1, inputs=[s, out])
    assert out.numpy()[0] == 2.5 + 0.25 + 3 + 7 + 4.0
    with pytest.raises(TypeError, match="expected struct Mixed, got Leaf"):
        sk.launch(read_mixed, 1, inputs=[Leaf(), out])

"""``Kernel.add_overload(types)`` (Warp's): a generic kernel's specialisation as a kernel of its own, with
concrete parameter types, which launches check (and tools such as ``jax_kernel`` read)."""
from typing import Any

import numpy as np
import pytest

import simkit as sk


@sk.kernel
def triple(a: sk.array(dtype=Any), b: sk.array(dtype=Any)):
    i = sk.tid()
    b[i] = a[i] * a.dtype(3)


@sk.kernel
def plain(a: sk.array(dtype=float)):
    a[sk.tid()] = 1.0


def test_add_overload_gives_a_concrete_kernel():
    k = triple.add_overload([sk.array(dtype=sk.float64), sk.array(dtype=sk.float64)])
    assert not k.generic and triple.generic
    assert k.param_types["a"] == sk.array(dtype=sk.float64).__simkit_type__()
    a = sk.array(np.arange(4.0), dtype=sk.float64, device="cpu")
    b = sk.zeros(4, dtype=sk.float64, device="cpu")
    sk.launch(k, 4, inputs=[a, b], device="cpu")
    np.testing.assert_array_equal(b.numpy(), [0.0, 3.0, 6.0, 9.0])
    v = sk.array([1, 2], dtype=sk.int32, device="cpu")
    w = sk.zeros(2, dtype=sk.int32, device="cpu")
    sk.launch(triple, 2, inputs=[v, w], device="cpu")  # the generic kernel still takes other types
    np.testing.assert_array_equal(w.numpy(), [3, 6])
    with pytest.raises(TypeError, match="expected array\\(dtype=float64"):
        sk.launch(k, 2, inputs=[sk.zeros(2, device="cpu"), sk.zeros(2, device="cpu")], device="cpu")


def test_add_overload_checks_its_types():
    assert plain.add_overload([sk.array(dtype=float)]) is plain
    with pytest.raises(RuntimeError, match="Invalid number of arguments"):
        triple.add_overload([sk.array(dtype=float)])
    with pytest.raises(TypeError, match="cannot be"):
        triple.add_overload([sk.array(dtype=float, ndim=2), sk.array(dtype=float)])

"""``static(expr)``: evaluated in Python once, when the kernel or @func is declared (as Warp), unless it reads
a local of the function (then when the function is built, at each place it is reached). Checked: single
evaluation (nested statics, side-effecting getters, duplicated expressions), rebinding after declaration,
static if / for, dead branches, struct values, errors."""
import numpy as np
import pytest

import simkit as sk
from simkit.kernels.errors import CompileError


def run(kernel, n=1, dtype=float, size=2):
    out = sk.zeros(size, dtype=dtype)
    sk.launch(kernel, n, inputs=[out])
    return out.numpy()


def test_evaluated_once_at_declaration():
    calls = []

    def inner():
        calls.append(1)
        return 3.0

    @sk.kernel(module="unique")
    def k(a: sk.array(dtype=float)):
        a[sk.tid()] = sk.static(1.0 + sk.static(inner()))

    assert len(calls) == 1  # at declaration, the nested static as part of the outer one
    np.testing.assert_array_equal(run(k, 2), [4.0, 4.0])
    np.testing.assert_array_equal(run(k, 2), [4.0, 4.0])
    assert len(calls) == 1


class OneShot:
    def __init__(self):
        self.reads = 0

    @property
    def value(self):
        self.reads += 1
        if self.reads > 1:
            raise RuntimeError("read twice")
        return 3


def test_side_effecting_getter_read_once_across_specialisations():
    box = OneShot()

    @sk.kernel(module="unique")
    def k(out: sk.array(dtype=sk.Any)):
        out[0] = out.dtype(sk.static(box.value))

    assert box.reads == 1
    for dt in (sk.int32, sk.float64):  # two builds of a generic kernel: still the one value
        out = sk.zeros(1, dtype=dt)
        sk.launch(k, 1, inputs=[out])
        assert out.numpy()[0] == 3
    assert box.reads == 1


def test_each_occurrence_has_its_own_value_in_source_order():
    n = {"v": 0.0}

    def bump():
        n["v"] += 1.0
        return n["v"]

    @sk.kernel(module="unique")
    def k(out: sk.array(dtype=float)):
        x = sk.static(bump())
        y = sk.static(bump())
        out[0] = x * 10.0 + y

    assert run(k)[0] == 12.0


_alias = sk.static


def test_rebinding_after_declaration_keeps_the_value():
    global _alias, REBOUND
    REBOUND = 7

    @sk.kernel(module="unique")
    def k(out: sk.array(dtype=sk.int32)):
        out[0] = _alias(REBOUND)

    _alias, REBOUND = (lambda v: v), 8
    try:
        assert run(k, dtype=sk.int32)[0] == 7
    finally:
        _alias = sk.static


def test_reading_a_local_defers_and_nested_resolves_once():
    calls = []

    def two():
        calls.append(1)
        return 2.0

    @sk.kernel(module="unique")
    def k(out: sk.array(dtype=float)):
        s = float(0.0)
        for i in range(3):
            s += sk.static(float(i) * sk.static(two()))
        out[0] = s

    assert len(calls) == 1
    assert run(k)[0] == 6.0
    assert len(calls) == 1


def test_global_defined_after_the_kernel():
    @sk.kernel(module="unique")
    def k(out: sk.array(dtype=float)):
        out[0] = sk.static(LATE_GLOBAL * 2.0)

    globals()["LATE_GLOBAL"] = 1.5
    assert run(k)[0] == 3.0


@sk.func
def scaled(x: float):
    return x * sk.static(FUNC_GAIN)


FUNC_GAIN = 4.0


def test_in_a_func():
    @sk.kernel(module="unique")
    def k(out: sk.array(dtype=float)):
        out[0] = scaled(2.0)

    assert run(k)[0] == 8.0


def make_branch(flag):
    @sk.kernel(module="unique")
    def k(a: sk.array(dtype=float)):
        tid = sk.tid()
        if sk.static(flag):
            a[tid] = undefined_helper(a[tid])  # noqa: F821 - never compiled when flag is False
        elif sk.static(not flag and CHOICE == 1):
            a[tid] = 5.0
        else:
            a[tid] = 7.0

    return k


CHOICE = 2


def test_static_if_drops_the_dead_branch():
    assert run(make_branch(False))[0] == 7.0
    with pytest.raises(KeyError) as e:
        run(make_branch(True))
    assert isinstance(e.value, CompileError) and "undefined_helper" in str(e.value)


@sk.func
def add_one(x: float):
    return x + 1.0


@sk.func
def twice(x: float):
    return x * 2.0


OPS = [add_one, twice, add_one]


def test_static_for_over_python_values():
    @sk.kernel(module="unique")
    def k(out: sk.array(dtype=float)):
        v = float(1.0)
        for op in sk.static(OPS):
            v = op(v)
        s = float(0.0)
        for i in range(sk.static(len(OPS) + 1)):
            s += float(sk.static(i))  # forces unrolling: i is a constant in each copy
        out[0] = v
        out[1] = s

    np.testing.assert_array_equal(run(k), [5.0, 6.0])


def test_static_function_value_called():
    @sk.kernel(module="unique")
    def k(out: sk.array(dtype=float)):
        f = sk.static(OPS[1])
        out[0] = f(3.0)
        out[1] = sk.static(OPS[0])(3.0)

    np.testing.assert_array_equal(run(k), [6.0, 4.0])


@sk.struct
class Inner:
    m: sk.mat22
    i: int


@sk.struct
class Outer:
    inner: Inner
    t: sk.transform
    q: sk.quat
    v: sk.vec3d


def make_outer():
    o = Outer()
    o.inner = Inner()
    o.inner.m = sk.mat22(1.0, 2.0, 3.0, 4.0)
    o.inner.i = 5
    o.t = sk.transform(sk.vec3(1.0, 2.0, 3.0), sk.quat(0.0, 0.0, 0.6, 0.8))
    o.q = sk.quat(0.0, 0.6, 0.0, 0.8)
    o.v = sk.vec3d(0.25, 0.5, 0.75)
    return o


def test_static_struct_value():
    @sk.kernel(module="unique")
    def k(out: sk.array(dtype=Outer)):
        out[0] = sk.static(make_outer())

    r = run(k, dtype=Outer, size=1)[0]
    np.testing.assert_array_equal(r["inner"]["m"], [[1.0, 2.0], [3.0, 4.0]])
    assert r["inner"]["i"] == 5
    np.testing.assert_allclose(r["t"], [1.0, 2.0, 3.0, 0.0, 0.0, 0.6, 0.8], rtol=1e-7)
    np.testing.assert_allclose(r["q"], [0.0, 0.6, 0.0, 0.8], rtol=1e-7)
    np.testing.assert_array_equal(r["v"], [0.25, 0.5, 0.75])


@sk.struct
class WithArray:
    a: sk.array(dtype=float)
    x: float


def test_static_struct_holding_an_array_is_an_error():
    w = WithArray()
    w.a = sk.zeros(3, dtype=float)

    @sk.kernel(module="unique")
    def k(out: sk.array(dtype=float)):
        s = sk.static(w)
        out[0] = s.x

    with pytest.raises(CompileError, match=r"WithArray\.a"):
        run(k)


def test_evaluation_error_is_reported_at_build_with_its_line():
    calls = []

    def boom():
        calls.append(1)
        return 1.0 / 0.0

    @sk.kernel(module="unique")
    def k(out: sk.array(dtype=float)):
        out[0] = sk.static(boom())

    assert len(calls) == 1
    with pytest.raises(CompileError, match="ZeroDivisionError") as e:
        run(k)
    assert "sk.static(boom())" in str(e.value)
    assert len(calls) == 1

"""Kernel identity: an identical definition made again (a loop, a factory, module="unique") returns the kernel
made first, already compiled; anything that changes the code it gives (a captured constant, a global, an
attribute, a static value, a helper @func, an option) gives a new kernel."""
from typing import Any

import numpy as np
import pytest

import simkit as wp
from simkit.kernels import module as kmodule

SCALE = 2.0


def _make_scaled(c):
    @wp.kernel
    def scaled(a: wp.array(dtype=float)):
        i = wp.tid()
        a[i] = float(i) * c

    return scaled


def _run(k, n=4, inputs=()):
    a = wp.zeros(n, dtype=float)
    wp.launch(k, n, inputs=[a, *inputs])
    return a.numpy()


def _count_loads(monkeypatch):
    calls = []
    real = kmodule.Module.load

    def load(self, spec, device, adjoint=False):
        calls.append(spec.kernel.key)
        return real(self, spec, device, adjoint)

    monkeypatch.setattr(kmodule.Module, "load", load)
    return calls


def test_factory_kernel_with_the_same_captured_value_is_the_same_kernel_and_not_rebuilt(monkeypatch):
    k1 = _make_scaled(3.0)
    np.testing.assert_allclose(_run(k1), [0.0, 3.0, 6.0, 9.0])
    loads = _count_loads(monkeypatch)
    for _ in range(5):
        k = _make_scaled(3.0)
        assert k is k1
        np.testing.assert_allclose(_run(k), [0.0, 3.0, 6.0, 9.0])
    assert loads == []  # compiled once, by the first launch


def test_different_captured_constants_give_different_kernels():
    k2, k5 = _make_scaled(2.0), _make_scaled(5.0)
    assert k2 is not k5
    np.testing.assert_allclose(_run(k2), [0.0, 2.0, 4.0, 6.0])
    np.testing.assert_allclose(_run(k5), [0.0, 5.0, 10.0, 15.0])
    assert _make_scaled(2) is not k2  # int 2 and float 2.0 are different constants
    assert _make_scaled(-0.0) is not _make_scaled(0.0)


def test_unique_module_kernel_is_reused_with_its_module():
    def make():
        @wp.kernel(module="unique")
        def doubled(x: wp.array(dtype=float)):
            i = wp.tid()
            x[i] = x[i] * 2.0

        return doubled

    first = make()
    second = make()
    assert second is first and second.module is first.module
    x = wp.array([1.0, 2.0, 3.0], dtype=float)
    wp.launch(second, 3, inputs=[x])
    np.testing.assert_allclose(x.numpy(), [2.0, 4.0, 6.0])


def test_generic_unique_kernel_is_reused_and_keeps_its_specialisations():
    kernels = []
    for _ in range(3):
        @wp.kernel(module="unique")
        def scale_any(x: wp.array(dtype=Any), s: Any):
            i = wp.tid()
            x[i] = x[i] * s

        kernels.append(scale_any)
    assert kernels[0] is kernels[1] is kernels[2] and kernels[0].is_generic
    x32 = wp.array([1.0, 2.0], dtype=wp.float32)
    x64 = wp.array([1.0, 2.0], dtype=wp.float64)
    wp.launch(kernels[0], 2, inputs=[x32, wp.float32(2.0)])
    wp.launch(kernels[2], 2, inputs=[x64, wp.float64(3.0)])
    np.testing.assert_allclose(x32.numpy(), [2.0, 4.0])
    np.testing.assert_allclose(x64.numpy(), [3.0, 6.0])
    assert len(kernels[1].overloads) == 2


def test_captured_helper_func_distinguishes_kernels():
    @wp.func
    def add_ten(x: float):
        return x + 10.0

    @wp.func
    def add_twenty(x: float):
        return x + 20.0

    def make(helper):
        @wp.kernel
        def apply(a: wp.array(dtype=float)):
            i = wp.tid()
            a[i] = helper(float(i))

        return apply

    k10, k20 = make(add_ten), make(add_twenty)
    assert k10 is not k20 and make(add_ten) is k10
    np.testing.assert_allclose(_run(k10, 2), [10.0, 11.0])
    np.testing.assert_allclose(_run(k20, 2), [20.0, 21.0])


def test_a_changed_global_gives_a_new_kernel(monkeypatch):
    def make():
        @wp.kernel
        def by_global(a: wp.array(dtype=float)):
            i = wp.tid()
            a[i] = float(i) * SCALE

        return by_global

    k = make()
    np.testing.assert_allclose(_run(k, 2), [0.0, 2.0])
    assert make() is k
    monkeypatch.setitem(globals(), "SCALE", 7.0)
    k7 = make()
    assert k7 is not k
    np.testing.assert_allclose(_run(k7, 2), [0.0, 7.0])


def test_a_changed_attribute_read_by_the_kernel_gives_a_new_kernel():
    class Config:  # (compared by identity: its attributes that the kernel reads are compared by value)
        gain = 2.0

    cfg = Config()

    def make():
        @wp.kernel
        def by_attr(a: wp.array(dtype=float)):
            i = wp.tid()
            a[i] = float(i) * wp.static(cfg.gain)

        return by_attr

    k = make()
    assert make() is k
    cfg.gain = 4.0
    k4 = make()
    assert k4 is not k
    np.testing.assert_allclose(_run(k, 2), [0.0, 2.0])
    np.testing.assert_allclose(_run(k4, 2), [0.0, 4.0])


def test_deferred_static_values_distinguish_kernels():
    def make(values):
        @wp.kernel(module="unique", enable_backward=False)
        def table(out: wp.array(dtype=int)):
            for i in range(wp.static(len(values))):
                out[i] = wp.static(values[i])

        return table

    k1, k2 = make([100, 200]), make([999, 200])
    assert k1 is not k2 and make([100, 200]) is k1
    for k, want in ((k1, [100, 200]), (k2, [999, 200])):
        out = wp.zeros(2, dtype=int)
        wp.launch(k, 1, inputs=[out])
        np.testing.assert_array_equal(out.numpy(), want)


def test_a_name_bound_after_the_definition_is_never_reused():
    def make(v):
        @wp.kernel
        def late(a: wp.array(dtype=float)):
            i = wp.tid()
            a[i] = float(i) + LATE

        LATE = v  # noqa: N806 - bound after the kernel: unknown when it is defined
        return late

    k1, k2 = make(1.0), make(5.0)
    assert k1 is not k2
    np.testing.assert_allclose(_run(k1, 2), [1.0, 2.0])
    np.testing.assert_allclose(_run(k2, 2), [5.0, 6.0])


def test_a_value_that_cannot_be_compared_makes_a_new_kernel_that_still_runs():
    class Unhashable:
        __hash__ = None

        def __init__(self, v):
            self.v = v

    def make(box):
        @wp.kernel
        def boxed(a: wp.array(dtype=float)):
            i = wp.tid()
            a[i] = wp.static(box.v)

        return boxed

    b = Unhashable(3.0)
    k1, k2 = make(b), make(b)
    assert k1 is not k2
    np.testing.assert_allclose(_run(k2, 2), [3.0, 3.0])


def test_decorator_options_distinguish_kernels():
    def make(**opts):
        @wp.kernel(module="unique", **opts)
        def opt_kernel(a: wp.array(dtype=float)):
            i = wp.tid()
            a[i] = 1.0

        return opt_kernel

    assert make(enable_backward=True) is not make(enable_backward=False)
    assert make(grid_stride=True) is not make(grid_stride=False)
    assert make(launch_bounds=64) is make(launch_bounds=64)
    assert make(module_options={"max_unroll": 2}) is not make(module_options={"max_unroll": 4})
    assert make().module.name != make(enable_backward=False).module.name


def test_a_kernel_nobody_holds_leaves_its_module():
    import gc

    def make(c):
        @wp.kernel
        def dropped(a: wp.array(dtype=float)):
            i = wp.tid()
            a[i] = c

        return dropped

    k = make(1.0)
    _run(k, 1)  # (compiled alone: a compile unit holds every kernel compiled in it)
    module = k.module
    for c in range(2, 6):
        _run(make(float(c)), 1)
    gc.collect()
    live = [x for x in module.kernels if x.key == "dropped"]
    assert live == [k]


def test_module_options_are_validated_as_in_warp():
    with pytest.raises(TypeError, match="must be a dict, got str"):
        wp.kernel(lambda a: None, module="unique", module_options="fast_math")
    for opts in ({}, {"fast_math": True}):
        with pytest.raises(ValueError, match='module_options requires module="unique"'):
            @wp.kernel(module_options=opts)
            def shared(a: wp.array(dtype=float)):
                pass
    with pytest.raises(ValueError, match="Valid options are: .*max_unroll"):
        @wp.kernel(module="unique", module_options={"fast_mth": True})
        def typo(a: wp.array(dtype=float)):
            pass

    @wp.kernel(module="unique", module_options={})
    def empty(a: wp.array(dtype=float)):
        i = wp.tid()
        a[i] = 2.0

    np.testing.assert_allclose(_run(empty, 2), [2.0, 2.0])


def test_name_is_warps_spelling_of_key():
    @wp.kernel(name="renamed_kernel")
    def original(a: wp.array(dtype=float)):
        pass

    assert original.key == "renamed_kernel"


@wp.kernel
def stubbed_generic(a: wp.array(dtype=Any), value: Any):
    i = wp.tid()
    a[i] = value


def stubbed_generic(a: wp.array(dtype=float), value: float): ...  # noqa: F811 - Warp's @overload stub pattern


def test_a_top_level_generic_kernel_stays_for_its_overload_stub():
    """Top-level kernels stay in their module (only kernels made inside functions leave it when dropped):
    an overload stub that replaced the kernel's name still finds it."""
    import gc

    gc.collect()
    k = wp.overload(stubbed_generic)
    a = wp.zeros(3, dtype=float)
    wp.launch(k, 3, inputs=[a, 2.5])
    np.testing.assert_array_equal(a.numpy(), [2.5, 2.5, 2.5])

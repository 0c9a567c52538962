"""Module objects, as Warp's: ``sk.Module(name)`` gathers the kernels declared with ``module=`` it, ``sk.get_module``
finds it by name, and the module functions (options, ``load_module``) take it."""
import numpy as np
import pytest

import simkit as sk

PHYSICS = sk.Module("test_module_objects.physics")


@sk.kernel(module=PHYSICS)
def double(a: sk.array(dtype=float), b: sk.array(dtype=float)):
    i = sk.tid()
    b[i] = a[i] * 2.0


@sk.kernel(module=PHYSICS)
def square(a: sk.array(dtype=float), b: sk.array(dtype=float)):
    i = sk.tid()
    b[i] = a[i] * a[i]


@sk.kernel
def elsewhere(a: sk.array(dtype=float)):
    a[sk.tid()] = 1.0


def test_kernels_join_the_module_object():
    assert double.module is PHYSICS and square.module is PHYSICS and elsewhere.module is not PHYSICS
    assert sk.get_module("test_module_objects.physics") is PHYSICS
    assert {k.key for k in PHYSICS.kernels} == {"double", "square"}
    sk.load_module(PHYSICS, device="cpu")  # compiles both now
    a = sk.array([1.0, 2.0, 3.0], dtype=float, device="cpu")
    b = sk.zeros(3, dtype=float, device="cpu")
    sk.launch(square, 3, inputs=[a, b], device="cpu")
    np.testing.assert_array_equal(b.numpy(), [1.0, 4.0, 9.0])


def test_module_options_apply_to_its_kernels():
    sk.set_module_options({"enable_backward": False}, module=PHYSICS)
    try:
        assert sk.get_module_options(PHYSICS)["enable_backward"] is False
        a = sk.array([1.0, 2.0], dtype=float, requires_grad=True, device="cpu")
        b = sk.zeros(2, dtype=float, requires_grad=True, device="cpu")
        tape = sk.Tape()
        with tape:
            sk.launch(double, 2, inputs=[a, b], device="cpu")
        with pytest.raises(sk.TapeError, match="enable_backward=False"):
            tape.backward(grads={b: np.ones(2, dtype=np.float32)})
    finally:
        sk.set_module_options({"enable_backward": True}, module=PHYSICS)
    a = sk.array([1.0, 2.0], dtype=float, requires_grad=True, device="cpu")
    b = sk.zeros(2, dtype=float, requires_grad=True, device="cpu")
    tape = sk.Tape()
    with tape:
        sk.launch(double, 2, inputs=[a, b], device="cpu")
    tape.backward(grads={b: np.ones(2, dtype=np.float32)})
    np.testing.assert_array_equal(a.grad.numpy(), [2.0, 2.0])


def test_load_module_of_a_name_nothing_imported_raises():
    with pytest.raises(RuntimeError, match="module 'no_such_module_here' does not contain any kernels, functions or "
                                           r"structs \(no module of that name is imported\)"):
        sk.load_module("no_such_module_here")
    sk.load_module("json")  # imported, no kernels: nothing to compile


def test_module_load_and_unload(device):
    """Warp's Module.load(device) compiles the module's kernels now; unload() forgets the loaded code, and the
    next launch loads it again (the cache), with the same result."""
    @sk.kernel(module="unique")
    def fill7(a: sk.array(dtype=int)):
        a[sk.tid()] = 7

    m = fill7.module
    kind = sk.get_device(device).kind
    m.load(device)
    assert kind in fill7.specs[None].native
    m.unload()
    assert not fill7.specs[None].native
    a = sk.zeros(3, dtype=int, device=device)
    sk.launch(fill7, 3, inputs=[a], device=device)
    np.testing.assert_array_equal(a.numpy(), [7, 7, 7])


def test_a_kernel_made_in_a_function_joins_the_module_object_given():
    # (a kernel made in a function with module=<sk.Module> raised AttributeError: Module has no __name__)
    def make(module):
        @sk.kernel(module=module)
        def triple(a: sk.array(dtype=float)):
            a[sk.tid()] = a[sk.tid()] * 3.0

        return triple

    one, two = sk.Module("test_module_objects.one"), sk.Module("test_module_objects.two")
    k1, k1_again, k2 = make(one), make(one), make(two)
    assert k1.module is one and k2.module is two and k1_again is k1 and k2 is not k1
    a = sk.array([1.0, 2.0], dtype=float, device="cpu")
    sk.launch(k2, 2, inputs=[a], device="cpu")
    np.testing.assert_array_equal(a.numpy(), [3.0, 6.0])

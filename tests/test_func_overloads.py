"""@func overloads by scope, as Python binds names (and as Warp): same-named @funcs in one scope (a module, or
one run of an enclosing function) overload each other; a redefinition with the same parameter types makes a
new function and leaves the old one to whoever holds it; closures made by separate runs stay apart. Also
@funcs called from Python that take or return structs, or take arrays."""
from typing import Any

import numpy as np

import simkit as sk


def make(value: int):
    @sk.func
    def f():
        return value

    @sk.func
    def f(x: int):  # noqa: F811 - an overload
        return value * x

    return f


def make_selfref(value: int):
    @sk.func
    def f():
        return value

    @sk.func
    def f(x: int):  # noqa: F811
        return f() * x

    return f


def make_generic(value: int):
    @sk.func
    def f(x: Any):
        return x * type(x)(value)

    @sk.func
    def f(x: Any, y: Any):  # noqa: F811
        return (x + y) * type(x)(value)

    return f


two, three = make(2), make(3)
self_two, self_three = make_selfref(2), make_selfref(3)
gen_two = make_generic(2)


@sk.kernel
def closure_overloads(a: sk.array(dtype=int), b: sk.array(dtype=float)):
    a[0] = two()
    a[1] = two(5)
    a[2] = three()
    a[3] = three(5)
    a[4] = self_two(4)
    a[5] = self_three(4)
    a[6] = gen_two(3)
    b[0] = gen_two(1.5, 2.0)


def test_closure_overloads(device):
    a = sk.zeros(7, dtype=int, device=device)
    b = sk.zeros(1, dtype=float, device=device)
    sk.launch(closure_overloads, 1, inputs=[a, b], device=device)
    np.testing.assert_array_equal(a.numpy(), [2, 10, 3, 15, 8, 12, 6])
    assert b.numpy()[0] == 7.0
    assert len(two.overloads) == 2 and two is not three


@sk.func
def redefined() -> int:
    return 17


first = redefined


@sk.func
def redefined(x: float) -> int:  # noqa: F811 - an overload: `first` gains it too (one function)
    return int(x)


@sk.func
def redefined() -> int:  # noqa: F811 - the same parameter types: a new function
    return 42


@sk.kernel
def after_redefinition(a: sk.array(dtype=int)):
    a[0] = redefined()
    a[1] = first()
    a[2] = redefined(3.5)
    a[3] = first(4.5)


def test_redefinition_makes_a_new_function(device):
    a = sk.zeros(4, dtype=int, device=device)
    sk.launch(after_redefinition, 1, inputs=[a], device=device)
    np.testing.assert_array_equal(a.numpy(), [42, 17, 3, 4])
    assert first is not redefined


def test_redefinition_in_a_closure_reaches_a_kernel_already_built(device):
    """A @func defined again in the function that defines the kernel: the kernel's next launch calls the new body
    (its closure is read again; the name is bound to the new @func only after the decorator returns)."""
    @sk.func
    def bump(x: int):
        return x + 1

    @sk.kernel(module="unique")
    def k(x: sk.array(dtype=int)):
        i = sk.tid()
        x[i] = bump(x[i])

    x = sk.zeros(4, dtype=int, device=device)
    sk.launch(k, 4, inputs=[x], device=device)

    @sk.func
    def bump(x: int):  # noqa: F811
        return x * 10

    sk.launch(k, 4, inputs=[x], device=device)
    np.testing.assert_array_equal(x.numpy(), [10, 10, 10, 10])


@sk.struct
class State:
    pos: sk.vec3
    mass: float
    count: int


@sk.func
def make_state(x: float) -> State:
    s = State()
    s.pos = sk.vec3(x, 2.0 * x, 3.0)
    s.mass = x * x
    s.count = 7
    return s


@sk.func
def heavier(s: State, k: float):
    s.mass = s.mass * k
    return s, s.count + 1


def test_python_scope_structs():
    s = make_state(2.0)
    assert isinstance(s, State)
    np.testing.assert_allclose(s.pos, [2.0, 4.0, 3.0])
    assert s.mass == 4.0 and s.count == 7
    t, n = heavier(s, 3.0)
    assert isinstance(t, State) and t.mass == 12.0 and n == 8
    np.testing.assert_allclose(t.pos, s.pos)


@sk.func
def partial_sum(a: sk.array(dtype=float), n: int):
    s = float(0.0)
    for i in range(n):
        s += a[i]
    return s, len(a)


def test_python_scope_array_arguments():
    a = sk.array(np.arange(1, 9, dtype=np.float32), dtype=float, device="cpu")
    s, n = partial_sum(a, 3)
    assert s == 6.0 and n == 8

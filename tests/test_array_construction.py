"""Array construction as Warp users write it: ``full`` infers the element type from its value,
``fill_`` takes a matrix's values flat, ``array(data, shape=)`` lays the data out, a trailing axis of
several vectors splits, shapes must be non-negative, ``retain_grad`` is checked, and structs give
their numpy layout. Checked against numpy."""
import numpy as np
import pytest

import simkit as sk


@pytest.mark.parametrize("value, dtype, element", [
    (42, sk.int32, 42), (13.5, sk.float32, 13.5), (True, sk.bool, True), (np.float64(2.5), sk.float64, 2.5),
    (sk.vec3d(1.0, 2.0, 3.0), sk.vec3d, [1, 2, 3]), ([1, 2], sk.vec2i, [1, 2]),
    ([[1.0, 2.0], [3.0, 4.0]], sk.mat22, [[1, 2], [3, 4]]), (np.arange(4, dtype=np.float16), sk.vec4h, [0, 1, 2, 3]),
])
def test_full_infers_the_element_type(value, dtype, element, device):
    a = sk.full((2, 3), value, device=device)
    assert a.dtype is dtype and a.shape == (2, 3)
    np.testing.assert_array_equal(a.numpy(), np.broadcast_to(np.asarray(element), (2, 3) + np.shape(element)))


def test_full_of_an_uninferable_value_asks_for_a_dtype():
    with pytest.raises(TypeError, match="cannot infer an element type .* give dtype="):
        sk.full(3, "a")


def test_fill_takes_flat_values_for_matrices(device):
    a = sk.zeros((2, 2), dtype=sk.types.matrix((2, 3), sk.float32), device=device)
    a.fill_(np.arange(6))
    np.testing.assert_array_equal(a.numpy(), np.broadcast_to(np.arange(6.0).reshape(2, 3), (2, 2, 2, 3)))
    a.fill_([[1, 2, 3], [4, 5, 6]])
    np.testing.assert_array_equal(a.numpy()[1, 1], [[1, 2, 3], [4, 5, 6]])
    with pytest.raises(ValueError):
        a.fill_(np.arange(5))


def test_data_takes_the_shape_given(device):
    a = sk.array(tuple(range(32)), dtype=int, shape=(8, 4), device=device)
    assert a.shape == (8, 4)
    np.testing.assert_array_equal(a.numpy(), np.arange(32).reshape(8, 4))
    v = sk.array(np.arange(12.0), dtype=sk.vec3, shape=(2, 2), device=device)
    np.testing.assert_array_equal(v.numpy(), np.arange(12.0).reshape(2, 2, 3))
    with pytest.raises(ValueError, match="data of 32 elements cannot take shape \\(5, 4\\)"):
        sk.array(tuple(range(32)), dtype=int, shape=(5, 4), device=device)


def test_a_trailing_axis_of_several_vectors_splits(device):
    data = np.arange(24, dtype=np.float32).reshape(4, 6)
    a = sk.array(sk.array(data, device=device), dtype=sk.vec3, device=device)
    assert a.shape == (4, 2)
    np.testing.assert_array_equal(a.numpy(), data.reshape(4, 2, 3))
    m = sk.array(np.arange(12.0).reshape(3, 4), dtype=sk.mat22, device=device)      # one matrix a row
    assert m.shape == (3,)
    np.testing.assert_array_equal(m.numpy(), np.arange(12.0).reshape(3, 2, 2))
    with pytest.raises(ValueError, match="trailing shape must be \\(3,\\)"):
        sk.array(np.zeros((4, 5)), dtype=sk.vec3, device=device)


@pytest.mark.parametrize("shape", [-1, (10, -1), -(2**32)])
def test_negative_shapes_are_refused(shape):
    with pytest.raises(ValueError, match="Array shapes must be non-negative"):
        sk.zeros(shape, dtype=int)


@pytest.mark.parametrize("make", [lambda: sk.zeros(2**31, dtype=sk.int8), lambda: sk.empty((2, 2**31), dtype=int),
                                  lambda: sk.array(np.broadcast_to(np.zeros(1, np.int8), (2**31,)), dtype=sk.int8)])
def test_axes_over_int32_are_refused_before_allocating(make):
    # kernels index each axis with int32 (the array descriptor); the broadcast view allocates nothing
    with pytest.raises(ValueError, match="must not exceed the maximum representable value of a signed 32-bit"):
        make()
    assert sk.zeros(2**31 - 1, dtype=sk.int8, device="cpu").shape == (2**31 - 1,)


def test_n_keyword_and_no_shape_as_in_warp():
    # Warp's older ``n=`` keyword gives a 1D length; no shape at all gives an empty array
    np.testing.assert_array_equal(sk.zeros(n=3, dtype=int).numpy(), np.zeros(3))
    np.testing.assert_array_equal(sk.ones(n=2, dtype=sk.vec3).numpy(), np.ones((2, 3)))
    np.testing.assert_array_equal(sk.full(n=2, value=7).numpy(), [7, 7])
    assert sk.empty(n=4).shape == (4,) and sk.zeros().shape == (0,)
    with pytest.raises(TypeError, match="either shape or n"):
        sk.zeros(3, n=3)


def test_reshape_and_view_errors_name_sizes():
    a = sk.array(np.arange(6.0))
    np.testing.assert_array_equal(a.reshape((-1, 3)).numpy(), np.arange(6.0).reshape(2, 3))
    with pytest.raises(ValueError, match=r"cannot reshape array of shape \(6,\) \(size 6\) into shape \(4, 2\) "
                                         r"\(size 8\)"):
        a.reshape((4, 2))
    with pytest.raises(TypeError, match="view with dtype uint16 from source dtype float32: source dtype has "
                                        "size 4 bytes, but target dtype has size 2 bytes"):
        sk.zeros(3, dtype=sk.float32).view(sk.uint16)


def test_retain_grad_needs_requires_grad():
    with pytest.raises(ValueError, match="retain_grad=True needs requires_grad=True"):
        sk.zeros(4, retain_grad=True)
    a = sk.zeros(4)
    with pytest.raises(ValueError):
        a.retain_grad = True
    a.requires_grad = True
    a.retain_grad = True
    assert a.retain_grad
    a.requires_grad = False
    assert not a.retain_grad
    assert sk.ones(2, requires_grad=True, retain_grad=True).retain_grad


@sk.struct
class Body:
    mass: sk.float64
    com: sk.vec3
    tag: sk.int8


def test_struct_numpy_layout(device):
    b = Body(mass=2.5, com=sk.vec3(1.0, 2.0, 3.0), tag=-3)
    rec = b.numpy_value()
    assert rec.dtype == Body.numpy_dtype() == sk.zeros(1, dtype=Body, device=device).numpy().dtype
    assert rec["mass"] == 2.5 and rec["com"].tolist() == [1, 2, 3] and rec["tag"] == -3
    a = sk.full(3, b, device=device)
    assert a.dtype is Body
    np.testing.assert_array_equal(a.numpy()["com"], [[1, 2, 3]] * 3)

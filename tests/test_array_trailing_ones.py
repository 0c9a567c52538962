"""Arrays of vectors and matrices from numpy data with trailing dimensions of length 1, as Warp takes them:
data of shape (n, 3, 1) holds n vec3 (column vectors), (n, 4, 1) n mat22 (flat rows of 4); copy=False keeps
the data's memory."""
import numpy as np
import pytest

import simkit as sk


@pytest.mark.parametrize("dtype, shape, outer", [(sk.vec3, (5, 3, 1), (5,)), (sk.vec2d, (2, 3, 2, 1, 1), (2, 3)),
                                                   (sk.mat22, (4, 4, 1), (4,)), (sk.mat33d, (3, 3, 3, 1), (3,))])
def test_trailing_ones_are_dropped(dtype, shape, outer):
    data = np.arange(np.prod(shape), dtype=np.float64).reshape(shape)
    a = sk.array(data, dtype=dtype, device="cpu")
    assert a.shape == outer
    np.testing.assert_array_equal(a.numpy().reshape(-1), data.reshape(-1))


def test_a_matrix_with_a_column_of_one_keeps_its_shape():
    m21 = sk.types.matrix((2, 1), sk.float32)
    data = np.arange(6, dtype=np.float32).reshape(3, 2, 1)
    a = sk.array(data, dtype=m21, device="cpu")
    assert a.shape == (3,)
    np.testing.assert_array_equal(a.numpy(), data)


def test_copy_false_views_the_data():
    data = np.arange(12, dtype=np.float64).reshape(4, 3, 1)
    a = sk.array(data, dtype=sk.vec3d, copy=False, device="cpu")
    data[2, 1, 0] = -7.0
    assert a.numpy()[2, 1] == -7.0


def test_other_shapes_are_still_refused():
    with pytest.raises(ValueError, match=r"cannot hold vec3 elements"):
        sk.array(np.zeros((4, 2, 1)), dtype=sk.vec3, device="cpu")

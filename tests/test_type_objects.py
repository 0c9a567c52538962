"""The Python side of simkit's types: scalar and value types as numpy dtypes, scalar instances, vector/matrix
indexing and assignment, ``from_ptr`` and ``constant``; checked against numpy and, where installed, warp-lang."""
import ctypes

import numpy as np
import pytest

import simkit as sk
from simkit.kernels import types as T
from simkit.kernels.types_scalar import NUMPY_DTYPE_PROTOCOL

PAIRS = [(sk.bool, np.bool_), (sk.int8, np.int8), (sk.uint8, np.uint8), (sk.int16, np.int16),
         (sk.uint16, np.uint16), (sk.int32, np.int32), (sk.uint32, np.uint32), (sk.int64, np.int64),
         (sk.uint64, np.uint64), (sk.float16, np.float16), (sk.float32, np.float32), (sk.float64, np.float64)]
IDS = [t.__name__ for t, _ in PAIRS]


def _values(npt):
    dt = np.dtype(npt)
    if dt.kind == "b":
        return [False, True, True]
    if dt.kind == "f":
        return [-1.5, 0.0, 2.25]
    return [np.iinfo(npt).min, 0, np.iinfo(npt).max]


# ---------------------------------------------------------------------------------------------------------
# scalar types as numpy dtypes


@pytest.mark.parametrize("t, npt", PAIRS, ids=IDS)
def test_scalar_type_is_its_numpy_dtype(t, npt):
    dt = np.dtype(npt)
    assert np.dtype(t) == dt and not np.dtype(t).hasobject
    assert t.__numpy_dtype__ == dt
    vals = _values(npt)
    for make in (np.array, np.asarray):
        a = make(vals, dtype=t)
        assert a.dtype == dt
        np.testing.assert_array_equal(a, np.array(vals, dtype=npt))
    for make, args in ((np.zeros, (3,)), (np.ones, (3,)), (np.full, (3, vals[-1]))):
        a = make(*args, dtype=t)
        assert a.dtype == dt and a.nbytes == 3 * dt.itemsize
        np.testing.assert_array_equal(a, make(*args, dtype=npt))
    assert np.empty(2, dtype=t).dtype == dt


@pytest.mark.parametrize("t, npt", PAIRS, ids=IDS)
@pytest.mark.parametrize("align", [False, True])
def test_scalar_type_in_structured_and_subarray_dtypes(t, npt, align):
    got = np.dtype([("value", t), ("tag", np.uint8)], align=align)
    want = np.dtype([("value", npt), ("tag", np.uint8)], align=align)
    assert got == want and got.itemsize == want.itemsize and not got.hasobject
    assert np.dtype((t, (2, 3))) == np.dtype((npt, (2, 3)))


@pytest.mark.parametrize("t, npt", PAIRS, ids=IDS)
def test_scalar_type_in_casts_views_and_promotion(t, npt):
    want = np.array([0, 1, 2], dtype=npt)
    conv = np.arange(3).astype(t)
    assert conv.dtype == want.dtype
    np.testing.assert_array_equal(conv, want)
    for view in (want.view(t), np.frombuffer(want.data, dtype=t)):
        assert view.dtype == want.dtype and np.shares_memory(view, want)
    assert np.result_type(t, np.float32) == np.result_type(npt, np.float32)
    assert np.promote_types(t, np.int16) == np.promote_types(npt, np.int16)
    assert np.can_cast(t, np.float64) == np.can_cast(npt, np.float64)
    if np.dtype(npt).kind == "f":
        assert np.finfo(t).eps == np.finfo(npt).eps
    elif np.dtype(npt).kind in "iu":
        assert np.iinfo(t).max == np.iinfo(npt).max


@pytest.mark.parametrize("t, npt", PAIRS, ids=IDS)
def test_numpy_array_of_a_scalar_type_shares_memory_with_a_simkit_array(t, npt):
    src = np.array([0, 1, 2], dtype=t)
    a = sk.array(src, dtype=t, device="cpu", copy=False)
    assert a.dtype is t and a.ptr == src.ctypes.data
    view = a.numpy()
    assert view.dtype == np.dtype(npt) and np.shares_memory(src, view)
    assert sk.from_numpy(src, device="cpu").dtype is t


def test_subclass_handle_and_base_numpy_dtypes():
    class Meters(sk.float32):
        pass

    assert np.dtype(Meters) == np.float32
    assert sk.handle is sk.uint64 and np.dtype(sk.handle) == np.uint64
    assert not hasattr(T.scalar_base, "__numpy_dtype__")  # the base stands for no one dtype
    if NUMPY_DTYPE_PROTOCOL:  # (numpy < 2.4 reads a ``dtype`` class attribute instead)
        assert not hasattr(sk.float32, "dtype")


@pytest.mark.skipif(not NUMPY_DTYPE_PROTOCOL, reason="vector dtypes need numpy >= 2.4's __numpy_dtype__")
def test_value_types_are_subarray_dtypes():
    assert np.dtype(sk.vec3) == np.dtype((np.float32, (3,)))
    assert np.dtype(sk.mat22d) == np.dtype((np.float64, (2, 2)))
    assert np.dtype(sk.quath) == np.dtype((np.float16, (4,)))
    a = np.zeros(5, dtype=sk.vec3)
    assert a.shape == (5, 3) and a.dtype == np.float32
    rec = np.zeros(2, dtype=[("p", sk.vec3), ("id", sk.int32)])
    assert rec["p"].shape == (2, 3) and rec.dtype.itemsize == 16
    assert not hasattr(sk.types.vector(3, sk.types.Float), "__numpy_dtype__")  # generic: no layout
    arr = sk.array(np.arange(6, dtype=np.float32).reshape(2, 3), dtype=sk.vec3, device="cpu")
    np.testing.assert_array_equal(arr.numpy(), np.arange(6).reshape(2, 3))


def test_scalar_dtypes_match_warp():
    wp = pytest.importorskip("warp")
    for t, _ in PAIRS:
        assert np.dtype(t) == np.dtype(getattr(wp, t.__name__)), t.__name__
    assert np.dtype(sk.vec3) == np.dtype(wp.vec3) or not NUMPY_DTYPE_PROTOCOL


# ---------------------------------------------------------------------------------------------------------
# scalar instances


@pytest.mark.parametrize("t, npt", PAIRS, ids=IDS)
def test_scalar_instances_are_numpy_scalars_and_instances_of_their_type(t, npt):
    v = t(1)
    assert type(v) is npt  # a numpy scalar: kernels, launches and numpy code take it as before
    assert isinstance(v, t) and isinstance(npt(0), t) and isinstance(v, T.scalar_base)
    others = [u for u, n in PAIRS if n is not npt]
    assert not any(isinstance(v, u) for u in others)
    assert not isinstance(1, sk.int32) and not isinstance(1.0, sk.float32) and not isinstance(True, sk.bool)
    assert np.dtype(v) == np.dtype(npt)
    for x in (t(0), t(1)):
        assert type(bool(x)) is bool and type(int(x)) is int and type(float(x)) is float
        assert int(x) == int(npt(x)) and float(x) == float(npt(x))
        assert ctypes.c_bool(x).value == bool(x)
        if np.dtype(npt).kind in "iu":
            assert ctypes.c_int(x).value == int(x)
        if np.dtype(npt).kind in "iuf":
            assert ctypes.c_float(x).value == float(x)


def test_isinstance_of_a_subclass_takes_only_its_own_instances():
    class Meters(sk.float32):
        pass

    assert not isinstance(np.float32(1.0), Meters)
    assert isinstance(np.float32(1.0), sk.float32)


# ---------------------------------------------------------------------------------------------------------
# vector / matrix indexing


@pytest.mark.parametrize("key", [None, "x", 1.5])
def test_invalid_vector_keys_raise_key_error(key):
    v = sk.vec3(1.0, 2.0, 3.0)
    with pytest.raises(KeyError, match=r"Invalid key .*, expected int or slice \(indexing a vec3\)"):
        v[key]
    with pytest.raises(KeyError, match="expected int or slice"):
        v[key] = 0.0
    np.testing.assert_array_equal(v, [1, 2, 3])


def test_invalid_matrix_keys_raise_key_error():
    m = sk.mat22(1.0, 2.0, 3.0, 4.0)
    with pytest.raises(KeyError, match="Invalid key None, expected int or pair of ints"):
        m[None]
    with pytest.raises(KeyError, match="Invalid key None, expected int or pair of ints"):
        m[None] = 0.0
    with pytest.raises(KeyError, match="expected one or two indices, got 3"):
        m[0, 1, 2]
    with pytest.raises(KeyError, match="expected one or two indices, got 3"):
        m[0, 1, 2] = (0.0, 0.0)
    with pytest.raises(IndexError):
        m[2, 0]


def test_numpy_keys_keep_numpy_meaning():
    v = sk.vec3(1.0, 2.0, 3.0)
    m = sk.mat33(*range(9))
    assert v[None, :].shape == (1, 3) and type(v[None, :]) is np.ndarray  # (numpy's own functions index so)
    assert np.atleast_2d(v).shape == (1, 3)
    np.testing.assert_array_equal(m[..., 1], [1, 4, 7])
    np.testing.assert_array_equal(v[[0, 2]], [1, 3])
    assert float(v[-1]) == 3.0 and float(m[-1, -1]) == 8.0


def test_parts_of_values_are_values_of_their_shape():
    m = sk.mat33(*range(9))
    row, col, block = m[1], m[:, 2], m[0:2, 1:3]
    assert type(row) is sk.vec3 and type(col) is sk.vec3 and type(block) is sk.mat22
    np.testing.assert_array_equal(row, [3, 4, 5])
    np.testing.assert_array_equal(col, [2, 5, 8])
    np.testing.assert_array_equal(block, [[1, 2], [4, 5]])
    row[0] = 30.0  # a view, as numpy's rows are
    assert float(m[1, 0]) == 30.0
    v = sk.vec4i(1, 2, 3, 4)
    assert type(v[0:2]) is sk.vec2i and type(v[:]) is sk.vec4i
    assert type(sk.transform()[0:3]) is sk.vec3 and type(sk.quatd()[0:3]) is sk.vec3d
    assert type(v[0]) is np.int32 and type(m[1, 1]) is np.float32


# ---------------------------------------------------------------------------------------------------------
# vector / matrix assignment


@pytest.mark.parametrize("t", [sk.uint8, sk.uint16, sk.uint32, sk.uint64, sk.int8])
def test_assigned_integers_wrap_as_in_a_c_cast(t):
    v = sk.types.vector(4, t)(1, 2, 3, 4)
    v[0] = -1
    v[1:3] = (-2, -3)
    v.w = 2 ** (8 * t._size) + 5  # wraps to 5
    want = [t._ctypes_type(x).value for x in (-1, -2, -3, 2 ** (8 * t._size) + 5)]  # (ctypes casts as C does)
    np.testing.assert_array_equal(v, want)
    assert want[-1] == 5 and (t is sk.int8 or want[0] == 2 ** (8 * t._size) - 1)
    big = sk.types.vector(2, t)(-1, 2 ** 70 + 3)
    np.testing.assert_array_equal(big, [t._ctypes_type(-1).value, t._ctypes_type(2 ** 70 + 3).value])


def test_assigned_values_are_checked():
    v = sk.vec3i(1, 2, 3)
    with pytest.raises(TypeError, match=r"Expected to assign a `int32` value but got `str` instead"):
        v[0] = "123.0"
    with pytest.raises(TypeError, match="Expected to assign a `int32` value but got `vec3i` instead"):
        v[0] = v
    with pytest.raises(TypeError, match="sequence of `int32` values but got `vec3i` instead"):
        v[:1] = (v,)
    with pytest.raises(TypeError, match="sequence of `int32` values but got `str` instead"):
        v[0:2] = "ab"
    with pytest.raises(ValueError, match=r"Can only assign sequence of same size: vec3i\[slice\(None, 1, None\)\] "
                                         r"holds 1 components"):
        v[:1] = (1, 2)
    np.testing.assert_array_equal(v, [1, 2, 3])
    m = sk.mat22h(1, 2, 3, 4)
    with pytest.raises(TypeError, match="Expected to assign a `float16` value but got `str` instead"):
        m[0, 0] = "1"
    with pytest.raises(TypeError, match="Expected to assign a `float16` value but got `str` instead"):
        m[0][0] = "1"
    with pytest.raises(TypeError, match="sequence of `float16` values but got `mat22h` instead"):
        m[0] = (m,)
    with pytest.raises(ValueError, match="Can only assign sequence of same size"):
        m[0][:1] = (1, 2)
    np.testing.assert_array_equal(m, [[1, 2], [3, 4]])


def test_accepted_assignments():
    v = sk.vec3i(0, 0, 0)
    v[0] = np.int8(4)
    v[1] = 2.9  # truncates, as int(2.9)
    v[2] = sk.float32(-1.5)
    np.testing.assert_array_equal(v, [4, 2, -1])
    v[:] = 7  # a number fills a part
    np.testing.assert_array_equal(v, [7, 7, 7])
    m = sk.mat33()
    m[2] = (-7, 8, -9)
    m[:, 0] = sk.vec3(1, 2, 3)
    m[0:2, 1:3] = ((5, 6), (7, 8))
    m[...] = m + 0.5  # a whole value
    np.testing.assert_array_equal(m, np.array([[1, 5, 6], [2, 7, 8], [3, 8, -9]]) + 0.5)
    m[:, :] = sk.vec3(1, 2, 3)  # numpy's broadcast of a row to every row
    np.testing.assert_array_equal(m, [[1, 2, 3]] * 3)


def test_component_attributes():
    v2 = sk.vec2(1.0, 2.0)
    for name in ("z", "w"):
        with pytest.raises(AttributeError, match=f"'vec2' object has no attribute '{name}'$"):
            getattr(v2, name)
        with pytest.raises(AttributeError, match=f"no attribute '{name}'$"):
            setattr(v2, name, 9.0)
    assert not hasattr(v2, "w") and hasattr(v2, "y")
    v3 = sk.vec3(1.0, 2.0, 3.0)
    for name in ("xy", "zw", "xyz"):
        with pytest.raises(AttributeError, match=f"'vec3' object has no attribute '{name}'$"):
            setattr(v3, name, 9.0)
    v3.foo = 9  # other attributes stay free, as on any Python object
    v3.z = 5.0
    assert v3.foo == 9 and list(v3) == [1.0, 2.0, 5.0]


def test_matrix_rows_must_have_the_matrix_width():
    with pytest.raises(TypeError, match=r"mat22: Invalid argument in matrix constructor, expected row of length 2, "
                                        r"got \(1, 2, 3\)$"):
        sk.mat22((1, 2, 3), (3, 4, 5))
    np.testing.assert_array_equal(sk.mat22((1, 2), (3, 4)), [[1, 2], [3, 4]])
    np.testing.assert_array_equal(sk.types.matrix((2, 3), float)(sk.vec3(1, 2, 3), (4, 5, 6)), [[1, 2, 3], [4, 5, 6]])
    with pytest.raises(ValueError, match="mat22 needs 4 values, got 3"):
        sk.mat22(1, 2, 3)


# ---------------------------------------------------------------------------------------------------------
# from_ptr and constant


@pytest.mark.parametrize("cls", [sk.vec3, sk.vec4ub, sk.mat22d, sk.quath, sk.transform])
def test_from_ptr_copies_the_native_value(cls):
    src = np.arange(cls._length, dtype=cls._dtype._np).reshape(cls._shape)
    v = cls.from_ptr(src.ctypes.data)
    assert type(v) is cls
    np.testing.assert_array_equal(v, src)
    src[...] = 0  # a copy
    assert np.asarray(v).reshape(-1)[-1] == cls._length - 1
    with pytest.raises(RuntimeError, match="NULL pointer"):
        cls.from_ptr(0)


def test_from_ptr_of_a_generic_type_is_refused():
    with pytest.raises(TypeError, match="generic type"):
        sk.types.vector(3, sk.types.Float).from_ptr(16)


def test_from_ptr_matches_warp():
    wp = pytest.importorskip("warp")
    src = np.array([1.5, -2.0, 3.25], dtype=np.float32)
    np.testing.assert_array_equal(sk.vec3.from_ptr(src.ctypes.data), list(wp.vec3.from_ptr(src.ctypes.data)))


@pytest.mark.parametrize("value", [123, 1.25, True, np.float16(1.25), sk.int16(3), sk.vec3i(1, 2, 3), sk.mat22()])
def test_constant_takes_values(value):
    assert sk.constant(value) is value


@pytest.mark.parametrize("value", [(1, 2, 3), [1.0], "1", None, np.zeros(3), np.complex64(1)])
def test_constant_refuses_other_objects(value):
    with pytest.raises(TypeError, match=rf"Invalid constant type: {type(value)!s}$".replace("(", r"\(")
                       .replace(")", r"\)").replace(".", r"\.")):
        sk.constant(value)


def test_constant_struct_instance():
    @sk.struct
    class Params:
        k: float

    p = Params()
    assert sk.constant(p) is p

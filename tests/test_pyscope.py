"""Builtins called from plain Python (scene setup), against numpy and analytic values."""
import numpy as np
import pytest

import simkit as sk


def test_quaternion_and_transform_helpers_from_python():
    q = sk.quat_from_axis_angle(sk.vec3(0.0, 0.0, 1.0), 0.5)
    assert isinstance(q, sk.quat)
    np.testing.assert_allclose(q, [0, 0, np.sin(0.25), np.cos(0.25)], rtol=1e-6)
    axis, angle = sk.quat_to_axis_angle(q)
    np.testing.assert_allclose(axis, [0, 0, 1], atol=1e-6)
    np.testing.assert_allclose(angle, 0.5, rtol=1e-6)
    t = sk.transform(sk.vec3(1.0, 0.0, 0.0), q)
    p = sk.transform_point(t, sk.vec3(1.0, 0.0, 0.0))
    np.testing.assert_allclose(p, [1 + np.cos(0.5), np.sin(0.5), 0.0], rtol=1e-6)
    np.testing.assert_array_equal(sk.transform(), [0, 0, 0, 0, 0, 0, 1])  # identity, as in Warp


def test_scalar_and_vector_builtins_from_python():
    np.testing.assert_allclose(sk.sin(0.5), np.sin(0.5), rtol=1e-6)
    np.testing.assert_allclose(sk.normalize(sk.vec3(1.0, 2.0, 2.0)), [1 / 3, 2 / 3, 2 / 3], rtol=1e-6)
    m = sk.mat33(2.0, 0.0, 0.0, 0.0, 4.0, 0.0, 0.0, 0.0, 8.0)
    np.testing.assert_allclose(sk.inverse(m), np.diag([0.5, 0.25, 0.125]), rtol=1e-6)
    assert sk.dot(sk.vec3d(1.0, 2.0, 3.0), sk.vec3d(4.0, 5.0, 6.0)) == 32.0


def test_products_of_values_in_python_are_the_kernels_products():
    """``*`` and ``@`` between two values: matrix products, the Hamilton product, composed transforms
    (as in kernels and in Warp); with a scalar they stay component-wise."""
    from quat_reference import qmat, qmul

    rng = np.random.default_rng(4)
    a, b, v = rng.normal(size=(3, 3)), rng.normal(size=(3, 3)), rng.normal(size=3)
    ma, mb, vv = sk.mat33d(a), sk.mat33d(b), sk.vec3d(v)
    for got, want in ((ma * mb, a @ b), (ma @ mb, a @ b), (ma * vv, a @ v), (vv @ ma, v @ a),
                      (2.0 * ma, 2 * a), (ma / 2.0, a / 2)):
        np.testing.assert_allclose(got, want, rtol=1e-12)
    assert isinstance(ma * vv, sk.vec3d) and isinstance(ma * mb, sk.mat33d)
    p, q = rng.normal(size=4), rng.normal(size=4)
    qp, qq = sk.quatd(p), sk.quatd(q)
    np.testing.assert_allclose(qp * qq, qmul(p, q), rtol=1e-12)
    r = sk.quatd(qp)
    r *= qq
    np.testing.assert_allclose(r, qmul(p, q), rtol=1e-12)
    unit_p, unit_q = p / np.linalg.norm(p), q / np.linalg.norm(q)
    t1 = sk.transformd(sk.vec3d(1.0, 2.0, 3.0), sk.quatd(unit_p))
    t2 = sk.transformd(sk.vec3d(-1.0, 0.5, 2.0), sk.quatd(unit_q))
    t = t1 * t2
    np.testing.assert_allclose(t[:3], np.array([1.0, 2.0, 3.0]) + qmat(unit_p) @ [-1.0, 0.5, 2.0], rtol=1e-12)
    np.testing.assert_allclose(t[3:], qmul(unit_p, unit_q), rtol=1e-12)
    with pytest.raises(TypeError, match="operator \\* is not defined for vec3d and vec3d"):
        vv * vv  # (no product of two vectors, as in kernels; sk.cw_mul multiplies component-wise)


def test_kernel_only_builtins_raise_clearly():
    with pytest.raises(RuntimeError, match="only be called inside a @kernel"):
        sk.tid()


def test_transform_constructor_forms():
    p, q = (1.0, 2.0, 3.0), (0.0, 0.5, 0.0, 0.75)     # (exact in every precision)
    for t in (sk.transform, sk.transformd, sk.transformh):
        np.testing.assert_array_equal(t(p), [*p, 0, 0, 0, 1])
        np.testing.assert_array_equal(t(p, q), [*p, *q])
        np.testing.assert_array_equal(t(q=q, p=p), [*p, *q])
        np.testing.assert_array_equal(t(q=q), [0, 0, 0, *q])
        np.testing.assert_array_equal(t(sk.transformd(*p, *q)), [*p, *q])  # a copy, another precision
        np.testing.assert_array_equal(t(np.float32(1.5)), [1.5] * 7)          # a fill
    for bad, message in ((lambda: sk.transform(1.5, 2.5), "argument 'p' .* expected a sequence, got float"),
                         (lambda: sk.transform(p, 1.0), "argument 'q' .* expected a sequence, got float"),
                         (lambda: sk.transform(*p, *q, q=q), "multiple values for argument 'q'"),
                         (lambda: sk.transform(p, r=q), "unexpected keyword argument 'r'"),
                         (lambda: sk.transform(object()), "expected a scalar value, got object"),
                         (lambda: sk.vec3(1.0, x=2.0), "unexpected keyword argument 'x'")):
        with pytest.raises(TypeError, match=message):
            bad()


def test_setters_change_their_first_argument_from_python():
    t = sk.transform_identity()
    assert sk.transform_set_translation(t, sk.vec3(1.0, 2.0, 3.0)) is None
    sk.transform_set_rotation(t, sk.quat(0.0, 0.0, 0.6, 0.8))
    np.testing.assert_allclose(t, [1, 2, 3, 0, 0, 0.6, 0.8], rtol=1e-7)
    np.testing.assert_allclose(sk.transform_get_translation(t), [1, 2, 3])


def test_transform_parts_p_and_q_from_python():
    # (as Warp's t.p / t.q: warp-lang's geometry/example_swept_volume.py reads them in Python)
    t = sk.transformd(sk.vec3d(1.0, 2.0, 3.0), sk.quatd(0.0, 0.0, 0.6, 0.8))
    p, q = t.p, t.q
    assert type(p) is sk.vec3d and type(q) is sk.quatd
    np.testing.assert_array_equal(p, [1, 2, 3])
    np.testing.assert_array_equal(q, [0, 0, 0.6, 0.8])
    p[0] = 9.0                                          # a copy: t is unchanged
    assert t[0] == 1.0
    t.p = (4.0, 5.0, 6.0)
    t.q = sk.quatd(0.6, 0.0, 0.0, 0.8)
    np.testing.assert_array_equal(t, [4, 5, 6, 0.6, 0, 0, 0.8])
    np.testing.assert_allclose(sk.transform_point(t, sk.vec3d(0.0, 0.0, 0.0)), [4, 5, 6])
    with pytest.raises(AttributeError, match="'vec3' object has no attribute 'p'"):
        sk.vec3(1.0, 2.0, 3.0).p
    with pytest.raises(AttributeError, match="'quat' object has no attribute 'q'"):
        sk.quat_identity().q = sk.quat_identity()
    with pytest.raises(ValueError):
        t.p = (1.0, 2.0)


def test_matrix_rows_and_columns_from_python():
    a = np.arange(6, dtype=np.float64).reshape(2, 3)
    m = sk.types.matrix((2, 3), sk.float64)(*a.reshape(-1))
    row, col = m.get_row(1), m.get_col(2)
    assert type(row) is sk.vec3d and type(col) is sk.vec2d
    np.testing.assert_array_equal(row, a[1])
    np.testing.assert_array_equal(col, a[:, 2])
    m.set_row(0, sk.vec3d(7.0, 8.0, 9.0))
    m.set_col(-1, [10.0, 11.0])  # negative indices count from the end, as in numpy
    a[0] = [7, 8, 9]
    a[:, 2] = [10, 11]
    np.testing.assert_array_equal(m, a)
    row[0] = 99.0  # a copy, not a view
    assert m[1, 0] == a[1, 0]
    with pytest.raises(IndexError, match="row 2 out of range for matrix_2x3_float64"):
        m.get_row(2)
    with pytest.raises(ValueError, match="vec2d needs 2 values, got 3"):
        m.set_col(0, [1.0, 2.0, 3.0])
    with pytest.raises(AttributeError, match="vec3 is not a matrix"):
        sk.vec3().get_row(0)


def test_integer_components_wrap_as_a_c_cast():
    for dtype, np_dtype in ((sk.uint8, np.uint8), (sk.uint32, np.uint32), (sk.int8, np.int8)):
        v = sk.types.vector(3, dtype)(1, -2, 300)
        np.testing.assert_array_equal(v, np.array([1, -2, 300], dtype=np.int64).astype(np_dtype))
        np.testing.assert_array_equal(sk.types.vector(2, dtype)(-1), np.array([-1, -1]).astype(np_dtype))
    # scalar constructors too (Warp's: uint32(-1) is 0xffffffff), from Python and numpy integers
    for dtype, np_dtype in ((sk.uint8, np.uint8), (sk.int8, np.int8), (sk.uint16, np.uint16), (sk.int16, np.int16),
                            (sk.uint32, np.uint32), (sk.int32, np.int32), (sk.uint64, np.uint64), (sk.int64, np.int64)):
        for value in (-1, 300, -1234567890, 2**31, 2**32 + 5, -2**63, 2**64 - 1, np.int64(-7)):
            got = dtype(value)
            assert type(got) is np_dtype and got == np.array(int(value) % 2**64, np.uint64).astype(np_dtype), value
    assert sk.uint8(3.7) == 3 and sk.int32(True) == 1


def test_keyword_arguments_from_python():
    """Keywords as in kernels: compile-time ones (dtype, n) and values (angle=); a wrong name says which;
    types passed by position are compile-time constants too."""
    q = sk.quat_identity(dtype=sk.float64)
    assert isinstance(q, sk.quatd)
    np.testing.assert_array_equal(q, [0, 0, 0, 1])
    m = sk.identity(n=3, dtype=sk.float64)
    assert isinstance(m, sk.mat33d)
    np.testing.assert_array_equal(m, np.eye(3))
    assert isinstance(sk.identity(n=2, dtype=sk.float32), sk.mat22)
    for q in (sk.quat_from_axis_angle(axis=sk.vec3(0.0, 0.0, 1.0), angle=0.5),
              sk.quat_from_axis_angle(sk.vec3(0.0, 0.0, 1.0), angle=0.5)):
        np.testing.assert_allclose(q, [0, 0, np.sin(0.25), np.cos(0.25)], rtol=1e-6)
    assert sk.min(a=1.0, b=2.0) == 1.0
    # types in place of keywords, and keywords left at their default (None), as Warp takes them
    assert isinstance(sk.quat_identity(sk.float64), sk.quatd) and isinstance(sk.quat_identity(dtype=None), sk.quat)
    assert isinstance(sk.transform_identity(sk.float16), sk.transformh)
    m = sk.identity(3, sk.float64)
    assert isinstance(m, sk.mat33d)
    np.testing.assert_array_equal(m, np.eye(3))
    with pytest.raises(TypeError, match=r"simkit.normalize\(\): 'normalize' has no argument 'x'"):
        sk.normalize(x=sk.vec3(1.0, 2.0, 2.0))

"""config.verify_fp: a launch that writes NaN or infinity into an array warns, naming the kernel, the array,
the element and the value (runtime/verify_fp.py)."""
import warnings

import numpy as np
import pytest

import simkit as sk


@sk.struct
class Particle:
    mass: float
    x: sk.vec3


@sk.kernel
def divide(a: sk.array2d(dtype=sk.float64), b: sk.array2d(dtype=sk.float64)):
    i, j = sk.tid()
    a[i, j] = a[i, j] / b[i, j]


@sk.kernel
def scale_particles(p: sk.array(dtype=Particle), s: float):
    i = sk.tid()
    p[i].x = p[i].x * s


@sk.kernel
def count(n: sk.array(dtype=int), x: sk.array(dtype=float)):
    i = sk.tid()
    n[i] = int(x[i])


@pytest.fixture
def verify():
    saved = sk.config.verify_fp
    sk.config.verify_fp = True
    yield
    sk.config.verify_fp = saved


def test_nan_in_a_2d_array_names_the_first_element(verify):
    a = np.ones((3, 4))
    b = np.ones((3, 4))
    a[1, 2] = b[1, 2] = 0.0  # 0 / 0
    b[2, 0] = 0.0            # 1 / 0 comes later in the array
    a_ = sk.array(a, dtype=sk.float64)
    with pytest.warns(sk.NonFiniteWarning, match=r"kernel 'divide' \(.*test_verify_fp.py:\d+\) wrote nan to "
                                                   r"array 'a' at \[1, 2\]$") as record:
        sk.launch(divide, (3, 4), inputs=[a_, sk.array(b, dtype=sk.float64)])
    assert len(record) == 1 and record[0].filename == __file__  # (one warning per array, at the launch)
    with np.errstate(divide="ignore", invalid="ignore"):
        expect = a / b
    np.testing.assert_array_equal(a_.numpy(), expect)  # the launch's result itself is untouched


def test_struct_field_component(verify):
    p = sk.zeros(4, dtype=Particle)
    host = p.numpy()
    host["x"][2] = (1.0, 3e38, 0.0)
    p = sk.array(host, dtype=Particle)
    with pytest.warns(sk.NonFiniteWarning, match=r"wrote inf to array 'p' at \[2\]\.x component 1"):
        sk.launch(scale_particles, 4, inputs=[p, 10.0])


def test_finite_and_integer_outputs_are_quiet(verify):
    with warnings.catch_warnings():
        warnings.simplefilter("error", sk.NonFiniteWarning)
        p = sk.zeros(4, dtype=Particle)
        sk.launch(scale_particles, 4, inputs=[p, 2.0])
        n = sk.zeros(3, dtype=int)
        sk.launch(count, 3, inputs=[n, sk.array([np.inf, np.nan, 2.0], dtype=float)])  # reads them, writes ints
    assert n.numpy()[2] == 2


def test_off_by_default():
    assert sk.config.verify_fp is False
    a = sk.zeros((1, 1), dtype=sk.float64)
    with warnings.catch_warnings():
        warnings.simplefilter("error", sk.NonFiniteWarning)
        sk.launch(divide, (1, 1), inputs=[a, sk.zeros((1, 1), dtype=sk.float64)])
    assert np.isnan(a.numpy()[0, 0])


def test_warnings_as_errors_stop_at_the_launch(verify):
    a = sk.zeros((1, 1), dtype=sk.float64)
    with warnings.catch_warnings():
        warnings.simplefilter("error", sk.NonFiniteWarning)
        with pytest.raises(sk.NonFiniteWarning, match="wrote nan"):
            sk.launch(divide, (1, 1), inputs=[a, sk.zeros((1, 1), dtype=sk.float64)])

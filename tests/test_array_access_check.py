"""config.verify_autograd_array_access: a recorded overwrite of an array an earlier recorded launch read
warns where it happens (runtime/access_check.py); backward() still refuses the recording."""
import inspect
import warnings

import numpy as np
import pytest

import simkit as sk


@sk.kernel
def square(x: sk.array(dtype=float), y: sk.array(dtype=float)):
    i = sk.tid()
    y[i] = x[i] * x[i]


@sk.kernel
def store(src: sk.array(dtype=float), dst: sk.array(dtype=float)):
    i = sk.tid()
    dst[i] = src[i]


@sk.kernel
def accumulate(dst: sk.array(dtype=float), src: sk.array(dtype=float)):
    i = sk.tid()
    dst[i] += src[i]


@sk.kernel
def rows(x: sk.array2d(dtype=float), y: sk.array2d(dtype=float)):
    i, j = sk.tid()
    xr = x[i]
    yr = y[i]
    yr[j] = xr[j] * 2.0


@pytest.fixture
def verify():
    saved = sk.config.verify_autograd_array_access
    sk.config.verify_autograd_array_access = True
    yield
    sk.config.verify_autograd_array_access = saved


def arrays(n=3):
    a = sk.array(np.arange(1.0, n + 1), dtype=float, requires_grad=True)
    return a, sk.zeros_like(a), sk.array(-np.arange(1.0, n + 1), dtype=float, requires_grad=True)


def test_launch_overwriting_a_read_array_warns_and_backward_refuses(verify):
    a, b, c = arrays()
    tape = sk.Tape()
    with pytest.warns(sk.ArrayAccessWarning, match=r"array 'dst' of kernel 'store' .*test_array_access_check.py:\d+"
                      r"\) is being written to but has already been read from in a previous launch"):
        with tape:
            sk.launch(square, 3, inputs=[a], outputs=[b])
            sk.launch(store, 3, inputs=[c], outputs=[a])
    np.testing.assert_allclose(a.numpy(), c.numpy())  # (the launches ran)
    with pytest.raises(sk.TapeError, match="'x' read by kernel 'square'"):
        tape.backward(grads={b: np.ones(3)})


def test_copy_and_assign_warnings_name_the_callers_line(verify):
    for how in ("copy", "assign"):
        a, b, _ = arrays()
        with pytest.warns(sk.ArrayAccessWarning) as record:
            with sk.Tape():
                sk.launch(square, 3, inputs=[a], outputs=[b])
                line = inspect.currentframe().f_lineno + 1
                sk.copy(a, b) if how == "copy" else a.assign(b)
        msg = str(record[0].message)
        assert f"by an array copy at {__file__}:{line} but has already been read" in msg, msg
        assert record[0].filename == __file__ and record[0].lineno == line


def test_reads_and_writes_flag_the_right_arrays(verify):
    a, b, c = arrays()
    with sk.Tape():
        sk.launch(accumulate, 3, inputs=[a, c])  # an accumulation writes dst and does not read it
    assert (a._is_read, c._is_read) == (False, True)
    x = sk.array(np.ones((2, 3)), dtype=float, requires_grad=True)
    y = sk.zeros_like(x)
    with sk.Tape():
        sk.launch(rows, (2, 3), inputs=[x, y])  # reads and writes through row views
    assert (x._is_read, y._is_read) == (True, False)


def test_backward_and_reset_clear_the_marks_no_false_warning(verify):
    a, b, c = arrays()
    z = sk.zeros_like(a)
    with warnings.catch_warnings():
        warnings.simplefilter("error", sk.ArrayAccessWarning)
        for _ in range(3):  # a training loop: each iteration's write of b follows the last one's backward
            tape = sk.Tape()
            with tape:
                sk.launch(square, 3, inputs=[a], outputs=[b])
                sk.launch(square, 3, inputs=[b], outputs=[z])
            tape.backward(grads={z: np.ones(3)})
            np.testing.assert_allclose(a.grad.numpy(), 4.0 * a.numpy() ** 3)
            tape.zero()
    assert not a._is_read and not b._is_read
    tape = sk.Tape()
    with tape:
        sk.launch(square, 3, inputs=[a], outputs=[b])
    assert a._is_read
    tape.reset()
    assert not a._is_read


def test_views_share_the_mark(verify):
    a = sk.zeros((3, 3), dtype=float)
    v = a.view(dtype=sk.int32).flatten()
    assert not v._is_read
    v.mark_read()
    assert a._is_read and a[1]._is_read
    with pytest.warns(sk.ArrayAccessWarning, match="array 'q' of kernel 'k' is being written to"):
        a[2].mark_write(arg_name="q", kernel_name="k")
    x, y, _ = arrays()
    tape = sk.Tape()
    with tape:
        sk.launch(square, 2, inputs=[x[:2]], outputs=[y[:2]])
    assert x._is_read
    tape.backward(grads={y: np.ones(3)})
    assert not x._is_read  # the read through a view is consumed with the parent


def test_off_by_default_no_marks_no_warnings():
    assert sk.config.verify_autograd_array_access is False
    a, b, c = arrays()
    with warnings.catch_warnings():
        warnings.simplefilter("error", sk.ArrayAccessWarning)
        with sk.Tape():
            sk.launch(square, 3, inputs=[a], outputs=[b])
            sk.launch(store, 3, inputs=[c], outputs=[a])
    assert not a._is_read

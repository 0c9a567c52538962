"""CPU launches of more than 2**31 - 1 threads: the thread loop runs int64 chunks of int32 loops
(native/cpu_launch.h, sk::cpu_run), so every thread runs, in every chunk (about 10 s: 2**31 threads)."""
import numpy as np
import pytest

import simkit as wp


@wp.kernel
def last_column(out: wp.array(dtype=int)):
    i, j = wp.tid()
    if j == 32768:
        out[i] = i + 1


def test_a_2d_cpu_launch_of_more_than_2_pow_31_threads_runs_every_thread():
    rows, cols = 65536, 32769  # 2**31 + 65536 threads: three chunks of the CPU thread loop
    assert rows * cols > 2**31
    out = wp.zeros(rows, dtype=int, device="cpu")
    wp.launch(last_column, (rows, cols), inputs=[out], device="cpu")
    np.testing.assert_array_equal(out.numpy(), np.arange(1, rows + 1))  # each row's last thread ran


@wp.kernel
def uses_tid(out: wp.array(dtype=int)):
    out[0] = wp.tid()


def test_a_1d_launch_beyond_int32_of_a_kernel_reading_tid_is_refused():
    out = wp.zeros(1, dtype=int, device="cpu")
    with pytest.raises(ValueError, match="tid"):
        wp.launch(uses_tid, 2**31, inputs=[out], device="cpu")

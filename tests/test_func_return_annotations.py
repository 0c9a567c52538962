"""A @func's return annotation is checked against what it returns (as Warp): untyped literals take the
annotated types (early returns too), and a mismatch in types or in the number of values is a compile error
at the return statement."""
import numpy as np
import pytest

import simkit as sk


@sk.func
def clamp_positive(x: float) -> float:
    if x < 0.0:
        return 0  # an int literal: returns float32 0.0
    return x


@sk.func
def two(x: int) -> sk.float64:
    return 2


@sk.func
def pair(x: float) -> tuple[float, int]:
    if x > 1.0:
        return x, 1
    return 2 * x, 0


@sk.kernel
def annotated(out: sk.array(dtype=sk.float64)):
    a, n = pair(3.0)
    b, m = pair(0.25)
    out[0] = sk.float64(clamp_positive(-2.0) + clamp_positive(1.5)) + two(1)
    out[1] = sk.float64(a + b + float(n * 10 + m))


def test_literals_take_the_annotated_types(device):
    out = sk.zeros(2, dtype=sk.float64, device=device)
    sk.launch(annotated, 1, inputs=[out], device=device)
    np.testing.assert_array_equal(out.numpy(), [3.5, 13.5])


@sk.func
def wrong_type(x: sk.int32) -> sk.int16:
    return sk.int8(x)


@sk.func
def wrong_count(x: int) -> int:
    return x + x, x * x


@sk.func
def wrong_tuple(x: int) -> tuple[int, int]:
    return x, 1.25


@sk.func
def too_few(x: int) -> tuple[int, int, int]:
    return x + x, x * x


@pytest.mark.parametrize("fn, message", [
    (wrong_type, "'wrong_type' is annotated to return int16 but this returns int8"),
    (wrong_count, r"'wrong_count' is annotated to return int32 \(1 value\(s\)\) but this returns 2 value\(s\)"),
    (wrong_tuple, r"'wrong_tuple' is annotated to return tuple\[int32, int32\] but this returns "
                  r"tuple\[int32, float32\]"),
    (too_few, r"'too_few' is annotated to return tuple\[int32, int32, int32\] \(3 value\(s\)\) but this "
              r"returns 2 value\(s\)"),
])
def test_mismatches_are_compile_errors(fn, message):
    @sk.kernel(module="unique")
    def calls(out: sk.array(dtype=float)):
        fn(1)

    with pytest.raises(sk.CompileError, match=r"test_func_return_annotations.py:\d+:\d+: .*" + message) as e:
        sk.launch(calls, 1, inputs=[sk.zeros(1, dtype=float)])
    assert "    return " in str(e.value)  # the offending return statement is shown

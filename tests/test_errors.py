"""Error reporting: CompileError messages point at the user's file and line (never at the
compiler's own files), launch-time TypeErrors name the parameter, and debug mode turns
out-of-bounds accesses into IndexErrors in Python instead of crashes."""
import os
import re

import numpy as np
import pytest

import simkit as sk

THIS_FILE = os.path.abspath(__file__)
COMPILER_DIR = os.path.dirname(os.path.abspath(sk.kernels.__file__))


def line_of(marker: str) -> int:
    """The line number of the (unique) line of this file that contains ``marker``."""
    with open(THIS_FILE) as f:
        hits = [i + 1 for i, text in enumerate(f) if marker in text and f'"{marker}"' not in text
                and f"'{marker}'" not in text]
    assert len(hits) == 1, (marker, hits)
    return hits[0]


def compile_error(kernel, inputs, device="cpu"):
    with pytest.raises(sk.CompileError) as info:
        sk.launch(kernel, dim=1, inputs=inputs, device=device)
    return info.value


def check_message(err, marker, *fragments):
    text = str(err)
    assert f"{THIS_FILE}:{line_of(marker)}:" in text, text
    for frag in fragments:
        assert frag in text, (frag, text)
    assert COMPILER_DIR not in text, text  # no compiler-internal paths
    assert "Traceback" not in text
    assert err.filename == THIS_FILE and err.line == line_of(marker)


# ---------------------------------------------------------------------------- compile errors


@sk.kernel
def k_unknown_name(a: sk.array(dtype=float)):
    i = sk.tid()
    a[i] = velocity * 2.0  # MARK-unknown


@sk.kernel
def k_type_mismatch(a: sk.array(dtype=float), b: sk.array(dtype=int)):
    i = sk.tid()
    a[i] = a[i] + b[i]  # MARK-mismatch


@sk.kernel
def k_store_mismatch(a: sk.array(dtype=float), b: sk.array(dtype=int)):
    i = sk.tid()
    a[i] = b[i]  # MARK-store


@sk.kernel
def k_lambda(a: sk.array(dtype=float)):
    f = lambda x: x  # noqa: E731  MARK-lambda
    a[0] = f(1.0)


@sk.kernel
def k_try(a: sk.array(dtype=float)):
    try:  # MARK-try
        a[0] = 1.0
    except Exception:
        pass


@sk.kernel
def k_listcomp(a: sk.array(dtype=float)):
    x = [k for k in range(3)]  # MARK-listcomp
    a[0] = x[0]


@sk.kernel
def k_kernel_return(a: sk.array(dtype=float)):
    a[0] = 1.0
    return 2.0  # MARK-kreturn


@sk.kernel
def k_iterate_array(a: sk.array(dtype=float)):
    for x in a:  # MARK-iter
        a[0] = x


@sk.kernel
def k_loop_type_change(a: sk.array(dtype=float), n: int):
    x = 1.0
    for k in range(n):  # MARK-looptype
        x = k
    a[0] = x


@sk.kernel
def k_branch_types(a: sk.array(dtype=float), n: int):
    if n > 0:  # MARK-branchtype
        x = 1.0
    else:
        x = n
    a[0] = x


@sk.kernel
def k_float_to_int_literal(a: sk.array(dtype=int)):
    a[0] = 1.5  # MARK-floatlit


@sk.kernel
def k_bad_builtin_args(a: sk.array(dtype=float)):
    a[0] = sk.sin(1.0, 2.0)  # MARK-sin


@sk.kernel
def k_too_many_indices(a: sk.array(dtype=float)):
    a[0, 1] = 1.0  # MARK-indices


@sk.kernel
def k_float_index(a: sk.array(dtype=float)):
    a[0] = a[1.0]  # MARK-floatindex


@sk.kernel
def k_python_function(a: sk.array(dtype=float)):
    a[0] = line_of(1.0)  # MARK-pyfunc


@sk.kernel
def k_call_kernel(a: sk.array(dtype=float)):
    k_lambda(a)  # MARK-callkernel


@sk.kernel
def k_int_times_float(a: sk.array(dtype=int)):
    a[0] = a[0] * 2.5  # MARK-intfloat


@sk.kernel
def k_unpack(a: sk.array(dtype=float)):
    x, y = 1.0  # MARK-unpack
    a[0] = x


@sk.func
def helper_with_error(x: float):
    return x + undefined_thing  # MARK-infunc


@sk.kernel
def k_calls_bad_func(a: sk.array(dtype=float)):
    a[0] = helper_with_error(a[0])


@sk.func
def takes_int(x: int):
    return x


@sk.kernel
def k_func_no_overload(a: sk.array(dtype=float)):
    a[0] = float(takes_int(a[0]))  # MARK-nooverload


@sk.kernel
def k_float_literal_into_int_loop_var(a: sk.array(dtype=int), n: int):
    x = 0
    for k in range(n):  # MARK-floatloop
        x = 1.5
    a[0] = x


@sk.func
def mixed_returns(c: int):
    if c > 0:
        return 1
    return 2.5  # MARK-mixedreturn


@sk.kernel
def k_mixed_returns(a: sk.array(dtype=float)):
    a[0] = float(mixed_returns(1))


@sk.func
def recursive(n: int):
    if n <= 0:
        return 0
    return n + recursive(n - 1)  # MARK-recursion


@sk.kernel
def k_recursion(a: sk.array(dtype=float)):
    a[0] = float(recursive(3))


@sk.kernel
def k_func_arg_count(a: sk.array(dtype=float)):
    a[0] = float(takes_int(1, 2))  # MARK-argcount


@sk.struct
class S:
    x: float


@sk.kernel
def k_bad_field(a: sk.array(dtype=float)):
    s = S()
    a[0] = s.y  # MARK-field


@sk.kernel
def k_while_else(a: sk.array(dtype=float)):
    k = int(0)
    while k < 3:  # MARK-whileelse
        k += 1
    else:
        k = 5
    a[0] = float(k)


CASES = [
    (k_unknown_name, "MARK-unknown", ["unknown name 'velocity'", "k_unknown_name"]),
    (k_type_mismatch, "MARK-mismatch", ["operator +", "float32", "int32"]),
    (k_store_mismatch, "MARK-store", ["int32", "float32"]),
    (k_lambda, "MARK-lambda", ["Lambda"]),
    (k_try, "MARK-try", ["Try"]),
    (k_listcomp, "MARK-listcomp", ["ListComp"]),
    (k_kernel_return, "MARK-kreturn", ["cannot return a value"]),
    (k_iterate_array, "MARK-iter", ["range"]),
    (k_loop_type_change, "MARK-looptype", ["'x'", "float32", "int32"]),
    (k_branch_types, "MARK-branchtype", ["'x'", "float32", "int32"]),
    (k_float_to_int_literal, "MARK-floatlit", ["float32", "int32"]),
    (k_bad_builtin_args, "MARK-sin", ["sin"]),
    (k_too_many_indices, "MARK-indices", ["1D array", "2"]),
    (k_float_index, "MARK-floatindex", ["indices must be integers"]),
    (k_python_function, "MARK-pyfunc", ["line_of", "cannot be called"]),
    (k_call_kernel, "MARK-callkernel", ["k_lambda", "@func"]),
    (k_int_times_float, "MARK-intfloat", ["operator *", "int32", "float32"]),
    (k_unpack, "MARK-unpack", ["unpack"]),
    (k_calls_bad_func, "MARK-infunc", ["unknown name 'undefined_thing'", "helper_with_error"]),
    (k_func_no_overload, "MARK-nooverload", ["takes_int", "float32"]),
    (k_bad_field, "MARK-field", ["no field 'y'"]),
    (k_recursion, "MARK-recursion", ["recursion"]),
    (k_mixed_returns, "MARK-mixedreturn", ["return", "int32", "float32"]),
    (k_float_literal_into_int_loop_var, "MARK-floatloop", ["'x'", "int32", "float32"]),
    (k_func_arg_count, "MARK-argcount", ["takes_int"]),
    (k_while_else, "MARK-whileelse", ["while ... else"]),
]


@pytest.mark.parametrize("kernel,marker,fragments", CASES, ids=[c[0].key for c in CASES])
def test_compile_error_points_at_user_line(kernel, marker, fragments):
    inputs = [sk.zeros(2, dtype=kernel.param_types[kernel.param_names[0]].dtype, device="cpu")]
    inputs += [sk.zeros(2, dtype=int, device="cpu") if n == "b" else 3 for n in kernel.param_names[1:]]
    err = compile_error(kernel, inputs)
    check_message(err, marker, *fragments)
    # the message shows the offending source line with a caret
    src_line = open(THIS_FILE).read().splitlines()[line_of(marker) - 1].strip()
    assert src_line in str(err)


def test_compile_error_is_raised_again_and_module_still_works():
    # the broken kernels of this module do not stop the others from compiling and running
    a = sk.zeros(2, device="cpu")
    sk.launch(k_good, dim=2, inputs=[a], device="cpu")
    np.testing.assert_array_equal(a.numpy(), [0.0, 1.0])
    for _ in range(2):
        err = compile_error(k_unknown_name, [a])
        check_message(err, "MARK-unknown")


@sk.kernel
def k_good(a: sk.array(dtype=float)):
    i = sk.tid()
    a[i] = float(i)


def test_missing_annotation_is_a_compile_error():
    with pytest.raises(sk.CompileError) as info:
        @sk.kernel
        def k_no_annotation(a):  # MARK-noannot
            pass
    assert "needs a type annotation" in str(info.value) and "'a'" in str(info.value)
    assert f"{THIS_FILE}:{line_of('MARK-noannot') - 1}" in str(info.value)  # the decorator line


def test_bad_annotation_is_a_compile_error():
    with pytest.raises(sk.CompileError) as info:
        @sk.kernel
        def k_bad_annotation(a: dict):
            pass
    assert "'a'" in str(info.value) and THIS_FILE in str(info.value)


# ---------------------------------------------------------------------------- launch errors


@sk.kernel
def k_signature(a: sk.array(dtype=float), n: int, s: float, v: sk.vec3, m: sk.array(dtype=float, ndim=2),
                st: S):
    i = sk.tid()
    a[i] = s * float(n) + v[0] + m[0, 0] + st.x


def _good_args(device):
    return [sk.zeros(2, device=device), 1, 1.0, sk.vec3(1.0, 2.0, 3.0), sk.zeros((2, 2), device=device), S()]


def test_launch_runs_with_good_args(device):
    args = _good_args(device)
    args[5].x = 0.5
    sk.launch(k_signature, dim=2, inputs=args, device=device)
    np.testing.assert_allclose(args[0].numpy(), [2.5, 2.5])


@pytest.mark.parametrize("index,bad,name,expected", [
    (0, np.zeros(2, np.float64), "a", "array(dtype=float32, ndim=1)"),  # float32 numpy arrays are accepted
    (0, "zeros(int)", "a", "array(dtype=float32, ndim=1)"),
    (0, "zeros2d", "a", "array(dtype=float32, ndim=1)"),
    (1, 1.5, "n", "int32"),
    (1, "text", "n", "int32"),
    (2, [1.0], "s", "float32"),
    (3, sk.vec2(1.0, 2.0), "v", "vec3"),
    (3, 1.0 + 2j, "v", "vec3"),
    (4, "zeros(float)", "m", "array(dtype=float32, ndim=2)"),
    (5, 3, "st", "S"),
])
def test_launch_type_error_names_parameter(device, index, bad, name, expected):
    args = _good_args(device)
    made = {"zeros(int)": lambda: sk.zeros(2, dtype=int, device=device),
            "zeros2d": lambda: sk.zeros((2, 2), device=device), "zeros(float)": lambda: sk.zeros(2, device=device)}
    if isinstance(bad, str) and bad in made:
        bad = made[bad]()
    args[index] = bad
    with pytest.raises(TypeError) as info:
        sk.launch(k_signature, dim=2, inputs=args, device=device)
    msg = str(info.value)
    assert f"'{name}'" in msg and expected in msg and "k_signature" in msg, msg


def test_wrong_argument_count(device):
    args = _good_args(device)
    with pytest.raises(TypeError, match=r"takes 6 arguments .*got 5"):
        sk.launch(k_signature, dim=2, inputs=args[:5], device=device)
    with pytest.raises(TypeError, match=r"takes 6 arguments .*got 7"):
        sk.launch(k_signature, dim=2, inputs=args + [1], device=device)
    # inputs and outputs together count
    sk.launch(k_signature, dim=2, inputs=args[:3], outputs=args[3:], device=device)


def test_bad_launch_dims(device):
    args = _good_args(device)
    with pytest.raises(ValueError):
        sk.launch(k_signature, dim=(1, 1, 1, 1, 1), inputs=args, device=device)
    with pytest.raises(ValueError):
        sk.launch(k_signature, dim=-1, inputs=args, device=device)
    with pytest.raises(TypeError):
        sk.launch(k_signature, dim="ten", inputs=args, device=device)
    with pytest.raises(TypeError, match="kernel"):
        sk.launch(line_of, dim=1, inputs=[], device=device)


def test_calling_a_kernel_or_func_from_python():
    with pytest.raises(TypeError, match="launch"):
        k_good(sk.zeros(1))
    assert takes_int(7) == 7  # a @func runs from Python (as in Warp), on a one-thread kernel
    with pytest.raises(TypeError, match="no overload of @func 'takes_int' takes \\(float32\\)"):
        takes_int(1.5)
    with pytest.raises(RuntimeError, match="tid"):
        sk.tid()  # thread-only builtins have no meaning in Python


# ---------------------------------------------------------------------------- debug mode: bounds checks

DEBUG_MODULE = "tests.test_errors.debug"  # compiled only in debug mode


@sk.kernel(module=DEBUG_MODULE)
def k_oob_read(a: sk.array(dtype=float), out: sk.array(dtype=float)):
    i = sk.tid()
    out[i] = a[i + 3]  # MARK-oobread


@sk.kernel(module=DEBUG_MODULE)
def k_oob_write(out: sk.array(dtype=float, ndim=2)):
    i, j = sk.tid()
    out[i, j * 2] = 1.0  # MARK-oobwrite


@sk.kernel(module=DEBUG_MODULE)
def k_oob_negative(a: sk.array(dtype=int)):
    i = sk.tid()
    a[i - 5] = i  # MARK-oobneg  (-4 .. -1 count from the end, as in Warp; -5 is out of bounds for 4 elements)


@sk.kernel(module=DEBUG_MODULE)
def k_oob_atomic(a: sk.array(dtype=int)):
    i = sk.tid()
    sk.atomic_add(a, i * 10, 1)  # MARK-oobatomic


@sk.kernel(module=DEBUG_MODULE)
def k_oob_view(a: sk.array(dtype=float, ndim=2), out: sk.array(dtype=float)):
    i = sk.tid()
    row = a[i + 1]  # MARK-oobview
    out[i] = row[0]


@sk.kernel(module=DEBUG_MODULE)
def k_in_bounds(a: sk.array(dtype=float), out: sk.array(dtype=float)):
    i = sk.tid()
    out[i] = a[i] * 2.0


@pytest.fixture
def debug_mode():
    saved = sk.config.mode
    sk.config.mode = "debug"
    try:
        yield
    finally:
        sk.config.mode = saved


def _expect_index_error(kernel, dim, inputs, marker, device, *fragments):
    with pytest.raises(IndexError) as info:
        sk.launch(kernel, dim=dim, inputs=inputs, device=device)
    msg = str(info.value)
    assert f"{THIS_FILE}:{line_of(marker)}" in msg, msg
    assert kernel.key in msg
    for f in fragments:
        assert f in msg, (f, msg)
    return msg


def test_debug_out_of_bounds_read(device, debug_mode):
    a = sk.zeros(8, device=device)
    out = sk.zeros(8, device=device)
    msg = _expect_index_error(k_oob_read, 8, [a, out], "MARK-oobread", device, "out of bounds", "size 8")
    assert re.search(r"index (8|9|10) ", msg), msg


def test_debug_out_of_bounds_write(device, debug_mode):
    out = sk.zeros((3, 4), device=device)
    _expect_index_error(k_oob_write, (3, 4), [out], "MARK-oobwrite", device, "axis 1", "size 4")
    # in-bounds writes happened, out-of-bounds ones went nowhere
    ref = np.zeros((3, 4), np.float32)
    ref[:, 0] = ref[:, 2] = 1.0
    np.testing.assert_array_equal(out.numpy(), ref)


def test_debug_negative_index(device, debug_mode):
    a = sk.zeros(4, dtype=int, device=device)
    _expect_index_error(k_oob_negative, 4, [a], "MARK-oobneg", device, "index -5")
    np.testing.assert_array_equal(a.numpy(), [1, 2, 3, 0])  # (the threads whose index counts from the end)


def test_debug_atomic_and_view(device, debug_mode):
    a = sk.zeros(5, dtype=int, device=device)
    msg = _expect_index_error(k_oob_atomic, 3, [a], "MARK-oobatomic", device, "size 5")
    assert re.search(r"index (10|20) ", msg), msg  # whichever thread reports first
    np.testing.assert_array_equal(a.numpy(), [1, 0, 0, 0, 0])
    m = sk.zeros((2, 3), device=device)
    _expect_index_error(k_oob_view, 2, [m, sk.zeros(2, device=device)], "MARK-oobview", device, "index 2")


def test_debug_mode_recovers_after_error(device, debug_mode):
    a = sk.array(np.arange(4, dtype=np.float32), device=device)
    out = sk.zeros(4, device=device)
    with pytest.raises(IndexError):
        sk.launch(k_oob_read, dim=4, inputs=[a, out], device=device)
    # the error state is cleared: a correct launch afterwards runs and raises nothing
    sk.launch(k_in_bounds, dim=4, inputs=[a, out], device=device)
    np.testing.assert_array_equal(out.numpy(), np.arange(4) * 2)


def test_debug_mode_is_restored():
    assert sk.config.mode == os.environ.get("SIMKIT_MODE", "release")


@sk.kernel(module="tests.test_errors.modeswitch")
def k_mode_switch(a: sk.array(dtype=float), out: sk.array(dtype=float)):
    i = sk.tid()
    out[i] = a[i + 2]  # MARK-modeswitch


def test_switching_to_debug_recompiles():
    big = sk.array(np.arange(8, dtype=np.float32), device="cpu")
    a = big[0:4]  # reads past a's end stay inside big's memory: harmless in release mode
    out = sk.zeros(4, device="cpu")
    sk.launch(k_mode_switch, dim=4, inputs=[a, out], device="cpu")
    np.testing.assert_array_equal(out.numpy(), [2, 3, 4, 5])
    saved = sk.config.mode
    sk.config.mode = "debug"
    try:
        with pytest.raises(IndexError):
            sk.launch(k_mode_switch, dim=4, inputs=[a, out], device="cpu")
    finally:
        sk.config.mode = saved


@sk.kernel(module=DEBUG_MODULE)
def k_null_array(a: sk.array(dtype=float), out: sk.array(dtype=float)):
    i = sk.tid()
    out[i] = a[i]  # MARK-nullarray


def test_debug_null_array_is_reported(device, debug_mode):
    out = sk.zeros(2, device=device)
    with pytest.raises(RuntimeError, match="None") as info:
        sk.launch(k_null_array, dim=2, inputs=[None, out], device=device)
    assert f"{THIS_FILE}:{line_of('MARK-nullarray')}" in str(info.value)


@sk.kernel
def k_tid2(out: sk.array(dtype=int, ndim=2)):
    i, j = sk.tid()
    out[i, j] = i * 10 + j


def test_launch_with_fewer_dims_than_tid_unpacks(device):
    """As in Warp, the missing extents are 1: dim=3 runs (i, 0) for i < 3 (it raised before)."""
    out = sk.full((3, 4), -1, dtype=int, device=device)
    sk.launch(k_tid2, dim=3, inputs=[out], device=device)
    want = np.full((3, 4), -1)
    want[:, 0] = np.arange(3) * 10
    np.testing.assert_array_equal(out.numpy(), want)
    sk.launch(k_tid2, dim=(3, 4), inputs=[out], device=device)
    np.testing.assert_array_equal(out.numpy(), np.arange(3)[:, None] * 10 + np.arange(4))


def test_a_type_error_in_a_funcs_body_names_its_line_once():
    @sk.func
    def as_matrix(x: float) -> sk.array(dtype=int, ndim=2):
        a = sk.zeros(shape=(2, 3), dtype=int)
        return a  # RETURN_MARK

    @sk.kernel(module="unique")
    def calls_it(out: sk.array(dtype=float)):
        b = as_matrix(1.0)  # noqa: F841
        out[0] = 1.0

    with pytest.raises(sk.CompileError) as info:
        sk.launch(calls_it, 1, inputs=[sk.zeros(1, device="cpu")], device="cpu")
    msg = str(info.value)
    line = next(i for i, text in enumerate(open(__file__), 1) if "# RETURN_MARK" in text)
    assert msg.startswith(f"{__file__}:{line}:") and msg.count(__file__) == 1, msg
    assert "is annotated to return array(dtype=int32, ndim=2) but this returns fixedarray" in msg

"""``print`` and ``printf`` in kernels, in Warp's formats: scalars, vectors and matrices (``%g`` per component,
a matrix row per line), quaternions, transforms, structs and arrays (no print implementation), text; and
printf's limit of 32 values (CUDA's), a compile error that is also a RuntimeError, as in Warp."""
import inspect
from typing import Any

import numpy as np
import pytest

import simkit as sk
from simkit.kernels.errors import CompileLimitError


@sk.struct
class Pair:
    a: float
    b: float


@sk.kernel
def k_print_any(x: Any):
    print(x)


def _printed(capfd, kernel, arg, device):
    capfd.readouterr()
    sk.launch(kernel, 1, inputs=[arg], device=device)
    sk.synchronize()
    return capfd.readouterr().out


DTYPES = [sk.int8, sk.uint16, sk.int64, sk.float16, sk.float32, sk.float64]
# the specialisations the tests launch, declared up front (as Warp's overload): they compile as one library, not one
# per first launch
for _t in DTYPES:
    for _n in (2, 3, 4):
        sk.overload(k_print_any, [sk.types.vector(_n, _t)])
        sk.overload(k_print_any, [sk.types.matrix((_n, _n), _t)])
for _t in (sk.float32, sk.uint64, sk.bool, sk.quat, sk.transform, Pair, sk.array(dtype=float)):
    sk.overload(k_print_any, [_t])


@pytest.mark.parametrize("dtype", DTYPES)
def test_print_vectors_and_matrices(device, capfd, dtype):
    for n in (2, 3, 4):
        vt = sk.types.vector(n, dtype)
        data = np.arange(n).astype(dtype._np)
        assert _printed(capfd, k_print_any, vt(data), device) == " ".join(str(k) for k in range(n)) + " \n"
        mt = sk.types.matrix((n, n), dtype)
        rows = np.arange(n * n).reshape(n, n)
        want = "".join(" ".join(str(v) for v in row) + " \n" for row in rows)
        assert _printed(capfd, k_print_any, mt(rows.astype(dtype._np).reshape(-1)), device) == want


def test_print_scalars_quaternions_transforms(device, capfd):
    assert _printed(capfd, k_print_any, sk.float32(-1.5), device) == "-1.5\n"
    assert _printed(capfd, k_print_any, sk.uint64(2**64 - 1), device) == "18446744073709551615\n"
    assert _printed(capfd, k_print_any, True, device) == "True\n"
    assert _printed(capfd, k_print_any, sk.quat(0.0, 0.5, 1.0, 2.0), device) == "0 0.5 1 2\n"
    t = sk.transform(sk.vec3(1.0, 2.0, 3.0), sk.quat(0.0, 0.0, 0.0, 1.0))
    assert _printed(capfd, k_print_any, t, device) == "(1 2 3) (0 0 0 1)\n"


def test_print_struct_and_array_have_no_print_implementation(device, capfd):
    assert _printed(capfd, k_print_any, Pair(), device) == "<type without print implementation>\n"
    a = sk.ones(3, dtype=float, device=device)
    assert _printed(capfd, k_print_any, a, device) == "<type without print implementation>\n"


@sk.kernel
def k_print_text(n: int):
    sk.print("100% done")
    print("plain")
    sk.printf("n=%d\n", n)


def test_print_text(device, capfd):
    assert _printed(capfd, k_print_text, 7, device) == "100% done\nplain\nn=7\n"


def test_printf_takes_at_most_32_values(device, capfd):
    @sk.kernel(module="unique")
    def k_32(x: int):
        sk.printf("%d %d %d %d %d %d %d %d %d %d %d %d %d %d %d %d %d %d %d %d %d %d %d %d %d %d %d %d %d %d %d %d\n",
                  x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x)

    @sk.kernel(module="unique")
    def k_33(x: int):
        sk.printf("%d %d %d %d %d %d %d %d %d %d %d %d %d %d %d %d "
                  "%d %d %d %d %d %d %d %d %d %d %d %d %d %d %d %d %d\n",
                  x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x)

    assert _printed(capfd, k_32, 3, device) == " ".join(["3"] * 32) + "\n"
    with pytest.raises(RuntimeError, match=r"passed to `printf` is 32$") as e:
        sk.launch(k_33, 1, inputs=[3], device=device)
    assert isinstance(e.value, sk.CompileError) and isinstance(e.value, CompileLimitError)
    lines, first = inspect.getsourcelines(k_33.func)
    line = first + next(k for k, text in enumerate(lines) if "sk.printf(" in text)
    assert str(e.value).startswith(f"{__file__}:{line}:") and "(in " in str(e.value)

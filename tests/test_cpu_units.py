"""A module with large kernels compiles as several units at once and links into one library
(simkit/kernels/backends/cpu_units.py): its kernels, their adjoints and its error state work as in one unit."""
import glob
import os

import numpy as np
import pytest
from module_files import import_source

import simkit as sk
from simkit.kernels.backends import cpu as cpu_backend
from simkit.kernels.backends import cpu_units

SOURCE = '''
import simkit as sk


@sk.kernel
def scale(x: sk.array(dtype=float), s: float):
    i = sk.tid()
    x[i] = x[i] * s


@sk.kernel
def shift(x: sk.array(dtype=float), s: float):
    i = sk.tid()
    x[i] = x[i] + s


@sk.kernel
def square_sum(x: sk.array(dtype=float), total: sk.array(dtype=float)):
    i = sk.tid()
    sk.atomic_add(total, 0, x[i] * x[i])


@sk.kernel
def read_past(x: sk.array(dtype=float), y: sk.array(dtype=float)):
    i = sk.tid()
    y[i] = x[i + 1]
'''


def _fresh_module(tmp_path, name):
    return import_source(tmp_path, name, SOURCE)


@pytest.fixture
def split_everything(monkeypatch):
    """Every module of two kernels or more compiles as three units (two where it has two kernels)."""
    monkeypatch.setattr(cpu_units, "UNIT_BYTES", 1)
    monkeypatch.setattr(sk.config, "cpu_compile_jobs", 3)


def _units(name):
    return sorted(glob.glob(os.path.join(cpu_backend.cache_root(), "cpu", f"{name}*", "unit*.cpp")))


def test_kernels_and_adjoints_of_a_split_module(tmp_path, split_everything):
    name = f"sk_units_{os.getpid()}_a"
    m = _fresh_module(tmp_path, name)
    rng = np.random.default_rng(0)
    x0 = rng.random(1000).astype(np.float32)
    x = sk.array(x0, device="cpu", requires_grad=True)
    sk.launch(m.scale, dim=1000, inputs=[x, 3.0], device="cpu")
    sk.launch(m.shift, dim=1000, inputs=[x, -1.0], device="cpu")
    np.testing.assert_allclose(x.numpy(), x0 * 3.0 - 1.0, rtol=1e-6)
    total = sk.zeros(1, device="cpu", requires_grad=True)
    tape = sk.Tape()
    with tape:
        sk.launch(m.square_sum, dim=1000, inputs=[x, total], device="cpu")
    tape.backward(total)
    xs = x.numpy().astype(np.float64)
    np.testing.assert_allclose(total.numpy()[0], (xs * xs).sum(), rtol=1e-5)
    np.testing.assert_allclose(x.grad.numpy(), 2.0 * xs, rtol=1e-6)
    # the forward module and the adjoint module (built on the first backward pass) each split into three units
    fwd = [u for u in _units(name) if ".adj_" not in u]
    assert len(fwd) == 3 and len(_units(name)) == 6, _units(name)
    text = "".join(open(u).read() for u in fwd)
    for k in ("scale", "shift", "square_sum", "read_past"):  # each kernel in exactly one unit
        assert text.count(f": @kernel {k}_") == 1, k


def test_error_state_of_a_split_module(tmp_path, split_everything, monkeypatch):
    """sk_get_error is defined in every unit (weak) and the library keeps one: a bounds error found by a
    kernel of any unit reaches Python."""
    monkeypatch.setattr(sk.config, "mode", "debug")
    name = f"sk_units_{os.getpid()}_b"
    m = _fresh_module(tmp_path, name)
    x = sk.zeros(8, device="cpu")
    y = sk.zeros(8, device="cpu")
    sk.launch(m.scale, dim=8, inputs=[x, 2.0], device="cpu")
    with pytest.raises(IndexError, match="out of bounds"):
        sk.launch(m.read_past, dim=8, inputs=[x, y], device="cpu")
    sk.launch(m.shift, dim=8, inputs=[x, 1.0], device="cpu")  # (the error was read and cleared)
    np.testing.assert_array_equal(x.numpy(), np.ones(8, np.float32))
    assert len([u for u in _units(name) if ".adj_" not in u]) == 3


def test_split_deals_kernels_biggest_first_and_keeps_small_modules_whole(monkeypatch):
    head = '#include "simkit.h"\n// module: m\n'
    kernels = [f"// m.py:{k}: @kernel k{k}_0\n" + "x" * size + "\n\n" for k, size in enumerate([50, 400, 300, 100])]
    source = head + "".join(kernels)
    monkeypatch.setattr(sk.config, "cpu_compile_jobs", 2)
    assert cpu_units.split(source) == [source]  # (far below UNIT_BYTES)
    units = cpu_units.split(source, 2)
    assert all(u.startswith(head) for u in units)
    # 400 | 300, then 100 and 50 to the lighter: {400, 50} and {300, 100}, each in source order
    assert units == [head + kernels[0] + kernels[1], head + kernels[2] + kernels[3]]
    monkeypatch.setattr(cpu_units, "UNIT_BYTES", 200)
    assert len(cpu_units.split(source)) == 2  # ~900 bytes: 4 units' worth, at most jobs() = 2


def test_a_unit_that_fails_names_its_source_and_log(tmp_path, split_everything):
    from simkit.kernels.errors import NativeCompileError

    source = ('#include "simkit.h"\n// module: m\n'
              '// m.py:1: @kernel good_0\nextern "C" int good_0() { return 1; }\n\n'
              '// m.py:2: @kernel bad_0\nextern "C" int bad_0( { return 2; }\n')
    lib = tmp_path / "lib" / "module.so"
    with pytest.raises(NativeCompileError, match=r"unit1\.cpp") as info:
        cpu_backend.build(source, str(lib))
    assert "bad_0" in str(info.value)
    assert not lib.exists() and not glob.glob(str(tmp_path / "lib" / ".tmp_*"))

"""Warp's ``config.optimization_level`` and the module option of that name: the native compilers' -O level
(CPU default -O3, Warp's -O2: config.py; CUDA: the GPU assembler's), part of each build's cache key."""
import numpy as np
import pytest

import simkit as sk
from simkit.kernels.backends import cpu
from simkit.kernels.backends.cuda import nvrtc

LEVELS = sk.Module("test_optimization_level.levels")


@sk.kernel(module=LEVELS)
def poly(x: sk.array(dtype=sk.float64), y: sk.array(dtype=sk.float64)):
    i = sk.tid()
    v = x[i]
    y[i] = v * v * v - 2.0 * v + 1.0


@pytest.fixture
def built_flags(monkeypatch):
    """The -O flags of each module built while the test runs."""
    seen = []
    original = cpu.compile_flags

    def spy(level=None):
        flags = original(level)
        seen.append([f for f in flags if f.startswith("-O")])
        return flags

    monkeypatch.setattr(cpu, "compile_flags", spy)
    return seen


def _run_poly():
    x = np.linspace(-2.0, 2.0, 9)
    y = sk.zeros(9, dtype=sk.float64, device="cpu")
    sk.launch(poly, 9, inputs=[sk.array(x, dtype=sk.float64, device="cpu"), y], device="cpu")
    np.testing.assert_allclose(y.numpy(), x ** 3 - 2.0 * x + 1.0, rtol=1e-14)


def test_the_cpu_default_is_o3_and_config_cpu_opt_replaces_it(monkeypatch):
    monkeypatch.setattr(sk.config, "cpu_opt", None)
    monkeypatch.setattr(sk.config, "optimization_level", None)
    assert cpu.opt_flags() == ["-O3"] and cpu.compile_flags()[0] == "-O3"
    monkeypatch.setattr(sk.config, "optimization_level", 1)
    assert cpu.opt_flags() == ["-O1"] and cpu.opt_flags(3) == ["-O3"]  # (a module's level wins)
    monkeypatch.setattr(sk.config, "cpu_opt", "-O3 -g")
    assert cpu.opt_flags(0) == ["-O3", "-g"]


def test_each_level_builds_its_own_library_with_its_flags(monkeypatch, built_flags, tmp_path):
    monkeypatch.setattr(sk.config, "cpu_opt", None)
    monkeypatch.setattr(sk.config, "cache_dir", str(tmp_path))  # (every build below is one)
    monkeypatch.setattr(sk.config, "cpu_precompiled_headers", False)
    try:
        for level in (0, 2, None):
            sk.set_module_options({"optimization_level": level}, module=LEVELS)
            assert sk.get_module_options(LEVELS)["optimization_level"] == level
            sk.config.optimization_level, default = 1, sk.config.optimization_level
            try:
                _run_poly()
            finally:
                sk.config.optimization_level = default
    finally:
        sk.set_module_options({"optimization_level": None}, module=LEVELS)
    assert built_flags == [["-O0"], ["-O2"], ["-O1"]]  # (unset, the module takes config.optimization_level)
    assert len(list(tmp_path.glob("cpu/*/module.so"))) == 3


def test_config_optimization_level_is_part_of_the_cache_key(monkeypatch):
    from simkit.kernels.module import _cpu_key

    monkeypatch.setattr(sk.config, "cpu_opt", None)
    keys = set()
    for level in (None, 0, 3):
        monkeypatch.setattr(sk.config, "optimization_level", level)
        keys.add(_cpu_key("int x;", {}))
    assert len(keys) == 2  # None is the CPU's default, -O3
    assert _cpu_key("int x;", {"optimization_level": 0}) != _cpu_key("int x;", {"optimization_level": 3})


@pytest.mark.parametrize("bad", [4, -1, True, 2.0, "3"])
def test_a_bad_level_is_refused_naming_the_option(bad):
    with pytest.raises(ValueError, match="optimization_level must be None or an int from 0 to 3"):
        sk.set_module_options({"optimization_level": bad}, module=LEVELS)
    with pytest.raises(ValueError, match="optimization_level"):
        sk.kernel(module="unique", module_options={"optimization_level": bad})(poly.func)


def test_nvrtc_takes_the_level_as_the_gpu_assemblers(monkeypatch):
    pytest.importorskip("cuda.bindings.nvrtc")
    monkeypatch.setattr(sk.config, "optimization_level", None)
    assert not any("ptxas" in o for o in nvrtc.options("sm_90"))
    assert "--ptxas-options=-O1" in nvrtc.options("sm_90", level=1)
    monkeypatch.setattr(sk.config, "optimization_level", 0)
    assert "--ptxas-options=-O0" in nvrtc.options("sm_90")
    src = 'extern "C" __global__ void k(double* a, int n) { for (int i = 0; i < n; ++i) a[i] = a[i] * a[i] + 1.0; }'
    o0 = nvrtc.compile_source(src, "sm_90", "test_optimization_level", level=0)
    o3 = nvrtc.compile_source(src, "sm_90", "test_optimization_level", level=3)
    assert o0[:4] == o3[:4] == b"\x7fELF" and o0 != o3  # (two CUBINs, the assembler's code differs)


@sk.kernel(module="unique", module_options={"optimization_level": 1})
def poly_o1(x: sk.array(dtype=float), y: sk.array(dtype=float)):
    i = sk.tid()
    y[i] = x[i] * x[i] - 1.0


def test_a_modules_level_reaches_the_gpu_compile(cuda_device, monkeypatch):
    from simkit.kernels.backends.cuda import module as cuda_module

    levels, original = [], cuda_module._image_for

    def spy(source, target, name, level=None):
        levels.append(level)
        return original(source, target, name, level)

    monkeypatch.setattr(cuda_module, "_image_for", spy)
    x = np.arange(5, dtype=np.float32)
    y = sk.zeros(5, dtype=float, device=cuda_device)
    sk.launch(poly_o1, 5, inputs=[sk.array(x, device=cuda_device), y], device=cuda_device)
    np.testing.assert_allclose(y.numpy(), x * x - 1.0)
    assert levels == [1]


def test_debug_mode_builds_at_o1_unless_a_level_is_set(monkeypatch, built_flags, tmp_path):
    monkeypatch.setattr(sk.config, "cpu_opt", None)
    monkeypatch.setattr(sk.config, "optimization_level", None)
    monkeypatch.setattr(sk.config, "mode", "debug")
    assert cpu.opt_flags() == ["-O1"] and cpu.opt_flags(3) == ["-O3"]
    monkeypatch.setattr(sk.config, "optimization_level", 2)
    assert cpu.opt_flags() == ["-O2"]
    monkeypatch.setattr(sk.config, "optimization_level", None)
    monkeypatch.setattr(sk.config, "cache_dir", str(tmp_path))
    monkeypatch.setattr(sk.config, "cpu_precompiled_headers", False)
    LEVELS.unload()  # (this file's other tests loaded it)
    _run_poly()  # (bounds-checked, and right)
    monkeypatch.setattr(sk.config, "mode", "release")
    assert cpu.opt_flags() == ["-O3"]
    _run_poly()
    assert built_flags == [["-O1"], ["-O3"]]

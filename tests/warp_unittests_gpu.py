"""warp-lang's CUDA unit tests on the emulated GPU (tests/cuda_emulator.py), on machines without a GPU.

Warp registers many tests for CUDA devices only (streams, graph capture, copies between devices, CUDA
snippets) and the rest once per device. Without a GPU, tests/test_warp_unittests*.py run the CPU ones; here
the files of ``warp_unittest_known.GPU_FILES`` are loaded a second time while the emulated GPU is present
(package ``skwarp_tests_gpu``), so they register their ``cuda_0`` tests, and each of those runs on it: the
GPU code paths of the runtime and the generated CUDA code run in CI. With a real GPU present the regular
files run the CUDA tests themselves and these skip.

A test is skipped with a reason where ``KNOWN`` lists it (a key matching the test's name, or its name with
``_cuda_0`` read as ``_cpu``: the same test on the CPU) or ``KNOWN_GPU`` does (what only the GPU, or the
emulator, does differently).
"""
from __future__ import annotations

import pytest
import warp_unittests as W
from cuda_emulator_world import shared_world

import simkit as sk

_CASES: dict = {}


def emulating() -> bool:
    """Does this session run device tests on the emulated GPU (conftest: no GPU, emulator available)?"""
    import conftest

    return conftest.EMULATED in conftest.DEVICE_PARAMS


def gpu_cases(name: str) -> dict:
    """``{"Class.method": TestCase}`` of the ``cuda_0`` tests of warp-lang's file ``name`` (loaded once, with the
    emulated GPU present)."""
    if name not in _CASES:
        with shared_world():
            _CASES[name] = {c: t for c, t in W.cases(name, W.GPU_PACKAGE).items() if _on_the_gpu(c)}
    return _CASES[name]


def _on_the_gpu(case_name: str) -> bool:
    """A test registered for the GPU: ``..._cuda_0``, or a copy test of two devices (``..._cuda0_cpu``)."""
    return case_name.endswith("_cuda_0") or "_cuda0" in case_name


def reason(name: str, case_name: str, known: dict, known_gpu: dict) -> str | None:
    as_cpu = case_name[: -len("_cuda_0")] + "_cpu" if case_name.endswith("_cuda_0") else case_name
    for table in (known_gpu.get(name, {}), known.get(name, {})):
        for key, why in table.items():
            if key in case_name or key in as_cpu:
                return why
    return None


def make_tests(file_names: list, known: dict, known_gpu: dict):
    """``test_warp_unittest_on_the_emulated_gpu`` (one pytest item per CUDA test method) and
    ``test_known_gpu_failures_name_tests`` (every ``known_gpu`` key still names a test)."""
    active = W.tests_dir() is not None and emulating()
    params = []
    for name in file_names if active else []:
        for case_name in gpu_cases(name):
            why = reason(name, case_name, known, known_gpu)
            params.append(pytest.param(name, case_name, id=f"{name}::{case_name}",
                                       marks=[pytest.mark.skip(reason=f"listed: {why}")] if why else []))
    if not params:
        params = [pytest.param(None, None, id="none", marks=pytest.mark.skip(
            reason="a CUDA GPU is present (the regular warp-lang files run its tests), the emulator is off, "
                   "or warp-lang's tests are not installed"))]

    @pytest.mark.parametrize("name, case_name", params)
    def test_warp_unittest_on_the_emulated_gpu(name, case_name, cuda_emulated_world):
        with cuda_emulated_world as fake:
            result = W.run_case(gpu_cases(name)[case_name])
            sk.synchronize()
        problems = result.errors + result.failures
        assert not problems, f"warp-lang's {name}::{case_name} failed on the emulated GPU:\n{problems[0][1][-3000:]}"
        violations, fake.violations[:] = list(fake.violations), []
        assert not violations, "CUDA driver rules broken:\n" + "\n".join(violations)
        if result.skipped:
            pytest.skip(result.skipped[0][1])

    @pytest.mark.parametrize("name", sorted(set(known_gpu) & set(file_names)))
    def test_known_gpu_failures_name_tests(name):
        if not active:
            pytest.skip("the emulated GPU's warp-lang tests are not collected here")
        unused = [key for key in known_gpu[name] if not any(key in c for c in gpu_cases(name))]
        assert not unused, f"{name}: no CUDA test matches {unused} any more; remove them from KNOWN_GPU"

    return test_warp_unittest_on_the_emulated_gpu, test_known_gpu_failures_name_tests

"""Shared fixtures: every test that takes `device` runs on each available device.

Every module compiled by the test suite is also compiled for the GPU with NVRTC
(sm_80 and sm_90) when NVRTC is installed, so CUDA code generation is checked
on machines without a GPU. Without a GPU, `device` tests also run on an emulated
one ("cuda:0" of tests/cuda_emulator.py: the kernels' CUDA code compiled for the
host), except modules of pure arithmetic; SIMKIT_TEST_CUDA_EMU=0 turns it off, =all
includes those modules too.
"""
import contextlib
import gc
import os

import pytest
from cuda_emulator_world import shared_world

import simkit as sk
from simkit.kernels.backends import cpu as cpu_backend
from simkit.kernels.backends.cuda import nvrtc, verify

if os.environ.get("SIMKIT_VERIFY_CUDA", "1") != "0" and nvrtc.is_available():
    sk.config.verify_cuda = True
    # under pytest-xdist (README's test command: one worker per core) each worker verifies its own modules
    # between its tests, so the tests' load balancing spreads NVRTC's share too
    verify.in_process = "PYTEST_XDIST_WORKER" in os.environ

DEVICES = [d.alias for d in sk.get_devices()]
EMULATED = "cuda:0-emulated"


def _emulate_cuda() -> bool:
    if any(d.startswith("cuda") for d in DEVICES) or os.environ.get("SIMKIT_TEST_CUDA_EMU", "1") == "0":
        return False
    try:
        cpu_backend.find_compiler()
        import cuda.bindings.driver  # noqa: F401  (the emulator borrows its handle types and enums)
    except Exception:
        return False
    return True


DEVICE_PARAMS = DEVICES + ([EMULATED] if _emulate_cuda() else [])
# Modules of pure arithmetic: their kernels take no SK_CUDA branch, and the emulator runs the host's
# libm, so emulating them would only repeat the CPU run (SIMKIT_TEST_CUDA_EMU=all includes them).
NOT_EMULATED = {"test_builtins_scalar", "test_builtins_vector", "test_builtins_matrix", "test_builtins_quat",
                "test_builtins_transform", "test_int_semantics", "test_random"}


def pytest_generate_tests(metafunc):
    if "device" in metafunc.fixturenames:
        params = DEVICE_PARAMS
        if metafunc.module.__name__.rsplit(".", 1)[-1] in NOT_EMULATED \
                and os.environ.get("SIMKIT_TEST_CUDA_EMU") != "all":
            params = [p for p in params if p != EMULATED]
        metafunc.parametrize("device", params, indirect=True)


@pytest.fixture(scope="session", autouse=True)
def nvrtc_verification():
    """After the session: every module compiled by the tests (forward and adjoint) must compile
    with NVRTC for each GPU architecture in sk.config.verify_cuda_archs."""
    yield
    if sk.config.verify_cuda:
        n = verify.wait()
        print(f"\nNVRTC verified {n} module builds for {', '.join(sk.config.verify_cuda_archs)}")


@pytest.fixture(scope="module", autouse=True)
def _young_heap():
    """Each test file's garbage collections scan only what was made since the file began (``gc.freeze``);
    the older objects join the collected heap again when the file ends (``gc.unfreeze``), so nothing leaks.
    A worker of the whole suite holds over a million objects (the compiled kernels' IR and ASTs of every
    file it ran), and a full collection of them takes 0.6 s (2026-12 AMD EPYC; seconds on slower CI
    machines). Explicit collections (benchmarks/common.py's timer, test_cuda_backend's fake-GPU fixture after each
    test, to check what was freed) cost the suite 228 s of its workers' time in full collections; 16 s since."""
    gc.freeze()
    yield
    gc.unfreeze()


@pytest.fixture(scope="session")
def cuda_emulated_world():
    """One emulated sm_90 GPU for the whole session, swapped in only while a test runs on it. It runs
    each launch's threads last to first, and launches through simkit's native (C) launch, as a real GPU
    does (test_cuda_backend's fake GPUs run threads first to last, and launch through cuda-python). Its
    SMs hold 64 threads each, so launches of 1024 threads or more count as filling it: kernels that can
    run interleaved (kernels/interleave.py) then run 4 launch indices per thread throughout the suite."""
    world = shared_world()
    yield world
    with world:
        world.close()


@contextlib.contextmanager
def _on_emulated_gpu(request):
    with request.getfixturevalue("cuda_emulated_world") as fake:
        yield "cuda:0"
        sk.synchronize()
    violations, fake.violations[:] = list(fake.violations), []
    assert not violations, "CUDA driver rules broken:\n" + "\n".join(violations)


@pytest.fixture
def device(request):
    if request.param != EMULATED:
        yield request.param
        return
    with _on_emulated_gpu(request) as dev:
        yield dev


@pytest.fixture
def cuda_device(request):
    """"cuda:0" for tests of GPU-only features: the real GPU, else the emulated one."""
    if any(d.startswith("cuda") for d in DEVICES):
        yield "cuda:0"
        return
    if EMULATED not in DEVICE_PARAMS:
        pytest.skip("no CUDA GPU, and the emulator is off or unavailable")
    with _on_emulated_gpu(request) as dev:
        yield dev


@pytest.fixture(params=["wide", "binary"])
def tree_layout(request, monkeypatch):
    """Bvh/Mesh queries walk the 4-wide tree, or (trees deeper than bvh_wide.MAX_DEPTH) the binary one:
    "binary" makes every tree built in the test take the fallback."""
    if request.param == "binary":
        from simkit.collision import bvh_wide
        monkeypatch.setattr(bvh_wide, "MAX_DEPTH", 0)
    return request.param


def pytest_report_header(config):
    return (f"simkit {sk.__version__}: devices {DEVICE_PARAMS}, NVRTC verify: {sk.config.verify_cuda}, "
            f"cache: {sk.config.cache_dir or '~/.cache/simkit'}")


@pytest.fixture(scope="module")
def warp_cpu():
    """warp-lang on its CPU, quiet, with its global config.enable_backward (and simkit's) True for the module's
    tests: Warp's examples run under both frameworks (tests/warp_examples.py), and example_fdtd_3d sets it False."""
    import warp as wp

    wp.config.quiet = True
    wp.init()
    saved = wp.config.enable_backward, getattr(sk.config, "enable_backward", True)
    wp.config.enable_backward = sk.config.enable_backward = True
    try:
        with wp.ScopedDevice("cpu"):
            yield
    finally:
        wp.config.enable_backward, sk.config.enable_backward = saved

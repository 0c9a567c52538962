"""Shared fixtures: every test that takes `device` runs on each available device.

Every module compiled by the test suite is also compiled for the GPU with NVRTC
(sm_80 and sm_90) when NVRTC is installed, so CUDA code generation is checked
on machines without a GPU.
"""
import os

import pytest

import simkit as sk
from simkit.kernels.backends.cuda import nvrtc

if os.environ.get("SIMKIT_VERIFY_CUDA", "1") != "0" and nvrtc.is_available():
    sk.config.verify_cuda = True

DEVICES = [d.alias for d in sk.get_devices()]


@pytest.fixture(scope="session", autouse=True)
def nvrtc_verification():
    """After the session: every module compiled by the tests (forward and adjoint) must compile
    with NVRTC for each GPU architecture in sk.config.verify_cuda_archs."""
    yield
    if sk.config.verify_cuda:
        n = nvrtc.wait_verifications()
        print(f"\nNVRTC verified {n} module builds for {', '.join(sk.config.verify_cuda_archs)}")


@pytest.fixture(params=DEVICES)
def device(request):
    return request.param


@pytest.fixture(params=["wide", "binary"])
def tree_layout(request, monkeypatch):
    """Bvh/Mesh queries walk the 4-wide tree, or (trees deeper than bvh_wide.MAX_DEPTH) the binary one:
    "binary" makes every tree built in the test take the fallback."""
    if request.param == "binary":
        from simkit.collision import bvh_wide
        monkeypatch.setattr(bvh_wide, "MAX_DEPTH", 0)
    return request.param


def pytest_report_header(config):
    return (f"simkit {sk.__version__}: devices {DEVICES}, NVRTC verify: {sk.config.verify_cuda}, "
            f"cache: {sk.config.cache_dir or '~/.cache/simkit'}")

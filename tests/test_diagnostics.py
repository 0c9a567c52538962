"""``print_diagnostics()``: the versions, compiler, options and devices it prints and returns."""
import importlib.metadata
import io
import platform

import numpy as np

import simkit as sk


def test_versions_options_and_cpu():
    out = io.StringIO()
    info = sk.print_diagnostics(file=out)
    text = out.getvalue()
    assert text.splitlines()[0] == "Software"
    assert info["simkit"] == sk.__version__ == info["warp_python"]
    assert info["numpy"] == np.__version__ and info["python"] == platform.python_version()
    assert info["host_compiler"] in text and info["host_compiler"].split()[0] not in ("unavailable", "")
    assert info["devices"][0] == {"alias": "cpu", "name": sk.get_device("cpu").name, "arch": "cpu"}
    for pkg in ("torch", "jax", "jaxlib"):
        try:
            assert info[pkg] == importlib.metadata.version(pkg)
        except importlib.metadata.PackageNotFoundError:
            assert pkg not in info
    assert info["debug"] is False and info["verify_fp"] is False
    old = sk.config.mode
    sk.config.mode = "debug"
    try:
        assert sk.print_diagnostics(file=io.StringIO())["debug"] is True
    finally:
        sk.config.mode = old


def test_gpu_devices_are_listed(cuda_device):
    out = io.StringIO()
    info = sk.print_diagnostics(file=out)
    gpus = [d for d in info["devices"] if d["alias"].startswith("cuda")]
    d = sk.get_device(cuda_device)
    assert gpus[0]["alias"] == d.alias and gpus[0]["arch"] == d.kind and gpus[0]["sm_count"] == d.sm_count > 0
    assert f"{d.sm_count} SMs" in out.getvalue()
    assert info["cuda_enabled"] is True and info["cuda_driver"] is not None

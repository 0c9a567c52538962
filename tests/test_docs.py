"""Every ```python block in README.md and docs/*.md runs (as a script, in a fresh process).

Illustrative fragments that cannot run on their own are fenced as ```py instead.
"""
import glob
import importlib.util
import os
import re
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOCS = [os.path.join(ROOT, "README.md")] + sorted(glob.glob(os.path.join(ROOT, "docs", "*.md")))


GPU_DOCS = {"gpu.md"}  # their examples need a GPU: without one they run on the emulated GPU of the tests
# (the emulator, made current for the whole script, stands in for the driver; tests/cuda_emulator.py)
EMULATOR_PRELUDE = f"""import sys
sys.path.insert(0, {os.path.join(ROOT, "tests")!r})
from cuda_emulator import FakeDriver
from cuda_emulator_world import EmulatedWorld
EmulatedWorld(FakeDriver(ndev=1, arch="sm_90", native_launch=True)).__enter__()
"""


def _blocks():
    for path in DOCS:
        text = open(path).read()
        for k, code in enumerate(re.findall(r"```python\n(.*?)```", text, re.S)):
            yield pytest.param(code, os.path.basename(path), id=f"{os.path.basename(path)}-{k}")


@pytest.mark.parametrize("code,doc", list(_blocks()))
def test_doc_example_runs(code, doc, tmp_path):
    if doc in GPU_DOCS and not _real_gpu():
        from conftest import EMULATED, DEVICE_PARAMS

        if EMULATED not in DEVICE_PARAMS:
            pytest.skip("needs a GPU, and the emulated one is off or unavailable")
        code = EMULATOR_PRELUDE + code
    # the optional packages an example imports (usd-core's pxr, trimesh) are in the README's test
    # install; where one is missing (tools/gpu_check.sh's GPU machine), its examples skip
    for mod in ("pxr", "trimesh"):
        if re.search(rf"^\s*(import|from) {mod}\b", code, re.M) and importlib.util.find_spec(mod) is None:
            pytest.skip(f"the example imports {mod}, which is not installed")
    script = tmp_path / "example.py"
    script.write_text(code)
    env = dict(os.environ, SIMKIT_VERIFY_CUDA="0")
    r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, cwd=tmp_path, env=env,
                       timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]


def _real_gpu() -> bool:
    import simkit as sk

    return sk.is_cuda_available()

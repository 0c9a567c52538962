"""The README contract and the `simkit` command."""
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_readme_has_both_commands_and_ci_uses_the_test_command():
    readme = open(os.path.join(ROOT, "README.md")).read()
    assert re.search(r"^pip install -e (\.|'\.\[[\w,]+\]') && simkit run \w+ .*--usd", readme, re.M), \
        "main-job command missing"
    assert re.search(r"^pip install -e '\.\[dev\]' && python -m pytest", readme, re.M), "test command missing"
    ci = open(os.path.join(ROOT, ".ci", "run")).read()
    assert "README.md" in ci and "set -euo pipefail" in ci


def _simkit(*args, cwd=ROOT):
    return subprocess.run([sys.executable, "-m", "simkit.cli", *args], capture_output=True, text=True, cwd=cwd)


def test_info_lists_cpu():
    r = _simkit("info")
    assert r.returncode == 0, r.stderr
    assert "device: cpu" in r.stdout and "simkit" in r.stdout
    from simkit.kernels.backends import cpu

    compiler = next(line for line in r.stdout.splitlines() if line.startswith("C++ compiler:"))
    assert compiler.endswith(f"; {' '.join(cpu.opt_flags())})")  # (the flags modules build with: -O3 by default)


def test_run_writes_usd(tmp_path):
    out = tmp_path / "b.usda"
    r = _simkit("run", "bouncing_particles", "--steps", "5", "--usd", str(out))
    assert r.returncode == 0, r.stderr
    text = out.read_text()
    assert text.startswith("#usda 1.0")
    assert "endTimeCode = 4" in text
    assert text.count(": [(") == 5  # five time samples
    assert "5/5" in r.stderr  # progress bar reached the end


def test_run_no_graph_option(tmp_path):
    # --no-graph reaches the scene's run(graph=False); a scene without that option says so
    out = tmp_path / "b.usda"
    r = _simkit("run", "bouncing_particles", "--steps", "3", "--no-graph", "--usd", str(out))
    assert r.returncode == 0, r.stderr
    assert out.read_text().count(": [(") == 3
    scene = tmp_path / "plain.py"
    scene.write_text("def run(steps, usd=None, device='cpu', progress=None):\n    pass\n")
    r = _simkit("run", str(scene), "--no-graph")
    assert r.returncode != 0 and "has no graph option" in r.stderr


def test_run_unknown_scene_and_unwritable_path(tmp_path):
    r = _simkit("run", "no_such_scene")
    assert r.returncode != 0 and "unknown scene 'no_such_scene'" in r.stderr
    r = _simkit("run", "bouncing_particles", "--usd", "/nonexistent_dir/x.usda")
    assert r.returncode != 0 and "cannot write" in r.stderr


def test_cuda_device_without_gpu_is_a_clear_error():
    import simkit as sk

    if sk.is_cuda_available():
        import pytest

        pytest.skip("a GPU is present")
    r = _simkit("run", "bouncing_particles", "--steps", "1", "--device", "cuda")
    assert r.returncode != 0 and "no CUDA GPU" in r.stderr

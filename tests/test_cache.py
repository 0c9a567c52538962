"""Kernel cache: unchanged kernels are not recompiled, edits are, parallel processes are safe,
and a failed C++ compile leaves no broken entry behind."""
import os
import subprocess
import sys
import textwrap

import pytest

KERNEL_SRC = """
import numpy as np
import simkit as sk

@sk.kernel
def k(x: sk.array(dtype=float)):
    i = sk.tid()
    x[i] = float(i) * SCALE

def main():
    x = sk.zeros(8, device="cpu")
    sk.launch(k, dim=8, inputs=[x], device="cpu")
    print("RESULT", x.numpy().tolist())

if __name__ == "__main__":
    main()
"""


def _write(tmp_path, scale, name="modk.py"):
    p = tmp_path / name
    p.write_text(textwrap.dedent(KERNEL_SRC).replace("SCALE", scale))
    return p


def _run(path, cache, verbose=True):
    env = dict(os.environ, SIMKIT_CACHE_DIR=str(cache), SIMKIT_VERBOSE="1" if verbose else "0",
               SIMKIT_VERIFY_CUDA="0")
    r = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, env=env, cwd=path.parent)
    assert r.returncode == 0, r.stderr
    return r.stdout


def _compiled(out):
    return "-o " in out and "cache hit" not in out


def _result(out):
    line = [l for l in out.splitlines() if l.startswith("RESULT")][0]
    return eval(line.split(" ", 1)[1])


def test_unchanged_kernel_is_not_recompiled_and_edit_recompiles(tmp_path):
    cache = tmp_path / "cache"
    p = _write(tmp_path, "2.0")
    first = _run(p, cache)
    assert _compiled(first) and _result(first) == [2.0 * i for i in range(8)]
    second = _run(p, cache)
    assert "cache hit" in second and not _compiled(second)
    assert _result(second) == _result(first)
    p = _write(tmp_path, "3.0")  # edit the kernel: a new compile, new values
    third = _run(p, cache)
    assert _compiled(third) and _result(third) == [3.0 * i for i in range(8)]


def test_constant_change_recompiles(tmp_path):
    cache = tmp_path / "cache"
    p = tmp_path / "modc.py"
    src = textwrap.dedent(KERNEL_SRC).replace("SCALE", "FACTOR")
    p.write_text(src.replace("import simkit as sk", "import simkit as sk\nFACTOR = sk.constant(5.0)"))
    assert _result(_run(p, cache)) == [5.0 * i for i in range(8)]
    p.write_text(src.replace("import simkit as sk", "import simkit as sk\nFACTOR = sk.constant(7.0)"))
    out = _run(p, cache)
    assert _compiled(out) and _result(out) == [7.0 * i for i in range(8)]


def test_two_processes_compiling_at_once(tmp_path):
    cache = tmp_path / "cache"
    p = _write(tmp_path, "4.0", "modpar.py")
    env = dict(os.environ, SIMKIT_CACHE_DIR=str(cache), SIMKIT_VERIFY_CUDA="0")
    procs = [subprocess.Popen([sys.executable, str(p)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              env=env, cwd=tmp_path) for _ in range(3)]
    outs = [pr.communicate(timeout=300) for pr in procs]
    for pr, (out, err) in zip(procs, outs):
        assert pr.returncode == 0, err
        assert _result(out) == [4.0 * i for i in range(8)]
    libs = [os.path.relpath(os.path.join(d, f), cache) for d, _, fs in os.walk(cache) for f in fs
            if f.endswith(".so")]
    # one entry of the module, no half-written leftovers (and the launch helper, built once too)
    assert len([p for p in libs if "native_call_" not in p]) == 1, libs
    assert len([p for p in libs if "native_call_" in p]) == 1, libs
    temps = [f for _, _, fs in os.walk(cache) for f in fs if f.startswith(".tmp_")]
    assert temps == []


def test_failed_native_compile_leaves_no_library(tmp_path, monkeypatch):
    import simkit as sk
    from simkit.kernels.backends import cpu

    lib = tmp_path / "x" / "module.so"
    with pytest.raises(sk.NativeCompileError, match="C\\+\\+ compilation failed"):
        cpu.build("this is not C++", str(lib))
    assert not lib.exists()
    assert (tmp_path / "x" / "error.log").exists()


def test_missing_compiler_error_says_how_to_get_one(monkeypatch):
    import simkit as sk
    from simkit.kernels.backends import cpu

    monkeypatch.setattr(cpu, "_compiler", None)
    monkeypatch.setenv("SIMKIT_CXX", "definitely-not-a-compiler")
    with pytest.raises(sk.CompilerNotFoundError, match="SIMKIT_CXX"):
        cpu.find_compiler()
    monkeypatch.delenv("SIMKIT_CXX")
    monkeypatch.setattr(cpu.shutil, "which", lambda name: None)
    with pytest.raises(sk.CompilerNotFoundError, match="apt-get install g\\+\\+"):
        cpu.find_compiler()
    monkeypatch.setattr(cpu, "_compiler", None)


def test_optimisation_flags_changed_at_run_time_change_the_cache_key(monkeypatch):
    # (the compiler identity was computed once with the flags of the time: a library built with other flags
    # was then filed under the first flags' key, and found by processes using them)
    import simkit as sk
    from simkit.kernels.backends import cpu
    from simkit.kernels.module import _cpu_key

    before = _cpu_key("int x;", {})
    monkeypatch.setattr(sk.config, "cpu_opt", "-O1")
    assert cpu.opt_flags() == ["-O1"] and _cpu_key("int x;", {}) != before

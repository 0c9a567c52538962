"""``force_load`` and ``load_module`` (simkit/runtime/loading.py): modules compiled before their first launch,
several at once, and loaded; errors raised as a launch raises them, after the other modules have loaded."""
import os
import subprocess
import sys
import textwrap
import threading
import time
import uuid

import numpy as np
import pytest
from module_files import import_source

import simkit as sk
from simkit.kernels.backends import cpu
from simkit.runtime import loading

TESTS = os.path.dirname(os.path.abspath(__file__))

SOURCE = '''
import simkit as sk

SCALE = sk.constant({scale})


@sk.kernel
def poly(a: sk.array(dtype=float), out: sk.array(dtype=float)):
    i = sk.tid()
    x = a[i]
    out[i] = SCALE * x * x + sk.sin(x)


@sk.kernel
def outer(a: sk.array(dtype=sk.vec3), out: sk.array(dtype=sk.mat33)):
    i = sk.tid()
    out[i] = sk.outer(a[i], a[i]) * SCALE
'''


def _modules(tmp_path, n: int, body: str = SOURCE) -> list:
    """``n`` new Python modules (unique names and constants: nothing of theirs is in the kernel cache)."""
    mods = []
    for k in range(n):
        name = f"fl_{uuid.uuid4().hex[:10]}"
        source = body.format(scale=float(k + 1) + (uuid.uuid4().int % 1000) / 1e6)
        mods.append(import_source(tmp_path, name, source))
    return mods


def _loaded(mod, device="cpu") -> bool:
    kind = sk.get_device(device).kind
    return all(kind in s.native for k in (mod.poly, mod.outer) for s in k.specs.values())


def _check_results(mod, device):
    x = np.linspace(-1.0, 1.0, 50, dtype=np.float32)
    out = sk.zeros(50, dtype=float, device=device)
    sk.launch(mod.poly, 50, inputs=[sk.array(x, device=device), out], device=device)
    scale = float(mod.SCALE)
    np.testing.assert_allclose(out.numpy(), scale * x * x + np.sin(x), rtol=1e-5, atol=1e-6)


def test_force_load_compiles_several_modules_at_once_before_any_launch(tmp_path, monkeypatch):
    mods = _modules(tmp_path, 3)
    spans, lock = [], threading.Lock()
    build = cpu.build

    def timed_build(source, lib_path, *args, **kwargs):
        t0 = time.perf_counter()
        build(source, lib_path, *args, **kwargs)
        time.sleep(0.2)  # (a span long enough to overlap another on any machine)
        if "/cpu/fl_" in lib_path:  # (not the helper libraries a first load may build)
            with lock:
                spans.append((t0, time.perf_counter(), threading.current_thread().name))

    monkeypatch.setattr(cpu, "build", timed_build)
    sk.force_load(device="cpu", modules=[sk.get_module(m.__name__) for m in mods], max_workers=3)
    assert all(_loaded(m) for m in mods)
    assert len(spans) == 3 and all(name.startswith("simkit-load") for *_, name in spans)
    spans.sort()
    assert any(spans[k + 1][0] < spans[k][1] for k in range(2)), f"no two compiles overlapped: {spans}"
    for m in mods:
        _check_results(m, "cpu")


def test_serial_force_load_and_modules_given_as_python_modules_or_names(tmp_path, monkeypatch):
    mods = _modules(tmp_path, 2)
    threads = []
    build = cpu.build
    monkeypatch.setattr(cpu, "build", lambda src, path, *a, **k: (threads.append(threading.current_thread()),
                                                                   build(src, path, *a, **k)))
    sk.force_load(device=["cpu"], modules=[mods[0], mods[1].__name__], max_workers=0)
    assert all(_loaded(m) for m in mods)
    assert threads and all(t is threading.main_thread() for t in threads)  # (0: no threads)
    _check_results(mods[1], "cpu")


def test_force_load_without_modules_loads_every_module_with_kernels(tmp_path):
    # (in a new process: this one holds every test module's kernels, some broken on purpose)
    script = tmp_path / "main.py"
    script.write_text(textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(TESTS)!r})
        from module_files import import_source
        import pathlib
        import simkit as sk
        src = {SOURCE!r}
        mods = [import_source(pathlib.Path({str(tmp_path)!r}), f"fl_main_{{k}}", src.format(scale=k + 1.0))
                for k in range(2)]
        sk.force_load(device="cpu")
        print(sorted(k.key for m in mods for k in (m.poly, m.outer) if "cpu" in k.specs[None].native))
    """))
    r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300,
                       env=dict(os.environ, SIMKIT_VERIFY_CUDA="0"))
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.split("\n")[-2] == "['outer', 'outer', 'poly', 'poly']"


def test_force_load_on_the_gpu(tmp_path, cuda_device):
    mods = _modules(tmp_path, 2)
    sk.force_load(device=cuda_device, modules=mods, max_workers=2)
    assert all(_loaded(m, cuda_device) for m in mods) and not any(_loaded(m, "cpu") for m in mods)
    _check_results(mods[0], cuda_device)


BROKEN = '''
import simkit as sk


@sk.kernel
def poly(a: sk.array(dtype=float), out: sk.array(dtype=float)):
    out[sk.tid()] = a[sk.tid()] + undefined_name_here
'''


def test_an_error_is_raised_after_the_other_modules_loaded(tmp_path):
    broken = _modules(tmp_path, 1, BROKEN)[0]
    good = _modules(tmp_path, 2)
    with pytest.raises(sk.CompileError, match="undefined_name_here") as info:
        sk.force_load(device="cpu", modules=[broken] + good, max_workers=2)
    assert "line 7" in str(info.value) or ".py:7" in str(info.value)
    assert all(_loaded(m) for m in good)
    sys.modules.pop(broken.__name__)


NATIVE_BROKEN = '''
import simkit as sk


@sk.func_native("return x + not_a_cpp_name;")
def bad(x: float) -> float: ...


@sk.kernel
def poly(a: sk.array(dtype=float), out: sk.array(dtype=float)):
    out[sk.tid()] = bad(a[sk.tid()])
'''


def test_a_failed_cpp_compile_in_a_thread_is_raised_by_the_load(tmp_path):
    broken = _modules(tmp_path, 1, NATIVE_BROKEN)[0]
    good = _modules(tmp_path, 1)[0]
    with pytest.raises(sk.NativeCompileError, match="not_a_cpp_name"):
        sk.force_load(device="cpu", modules=[good, broken], max_workers=2)
    assert _loaded(good)
    sys.modules.pop(broken.__name__)


def test_load_module_recursive_loads_the_modules_below(tmp_path):
    top = sk.Module(f"flpkg_{uuid.uuid4().hex[:8]}")
    sub, other = sk.Module(top.name + ".sub"), sk.Module(top.name + "_other")
    kernels = {}
    for m in (top, sub, other):
        @sk.kernel(module=m)
        def fill(out: sk.array(dtype=float)):
            out[sk.tid()] = float(sk.tid()) * 3.0

        kernels[m.name] = fill
    sk.load_module(top, device="cpu", recursive=True, max_workers=2)
    assert ["cpu" in s.native for m in (top, sub, other) for s in kernels[m.name].specs.values()] == [
        True, True, False]
    out = sk.zeros(4, dtype=float, device="cpu")
    sk.launch(kernels[sub.name], 4, inputs=[out], device="cpu")
    np.testing.assert_array_equal(out.numpy(), [0.0, 3.0, 6.0, 9.0])


def test_workers_follow_the_argument_then_the_config(monkeypatch):
    assert loading.workers(3) == 3 and loading.workers(0) == 1 and loading.workers(1) == 1
    monkeypatch.setattr(sk.config, "load_module_max_workers", 0)
    assert loading.workers() == 1
    monkeypatch.setattr(sk.config, "load_module_max_workers", None)
    assert 1 <= loading.workers() <= loading.MAX_WORKERS
    with pytest.raises(ValueError, match="max_workers must be None or an int >= 0, got -1"):
        sk.force_load(device="cpu", modules=[], max_workers=-1)
    with pytest.raises(TypeError, match="expected an sk.Module, a Python module or a module name, got int"):
        sk.force_load(device="cpu", modules=[3])

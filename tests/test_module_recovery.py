"""Modules across edits: kernels keep the source they were defined with (their file may be deleted or
rewritten before their first launch), a kernel that fails to build fails alone and again at each launch
until it is redefined, and a kernel never runs a @func body that was replaced (reload, redefinition)."""
import importlib
import importlib.util
import os
import sys
import textwrap
import uuid

import numpy as np
import pytest

import simkit as wp


def _import(tmp_path, code: str, name: str | None = None):
    name = name or f"_sk_recovery_{uuid.uuid4().hex[:10]}"
    path = tmp_path / f"{name}.py"
    path.write_text(textwrap.dedent(code))
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module, path


def _reloadable(tmp_path, monkeypatch):
    """``importlib.reload`` finds the modules written to tmp_path, and reads their source again."""
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(sys, "dont_write_bytecode", True)  # (an edit of the same size in the same second)


def _redefine(module, tmp_path, code: str):
    """Run more source in a module's namespace from a file removed right after (a notebook cell run again)."""
    path = tmp_path / f"cell_{uuid.uuid4().hex[:8]}.py"
    path.write_text(textwrap.dedent(code))
    exec(compile(path.read_text(), str(path), "exec"), module.__dict__)  # noqa: S102 - the test's own code
    os.remove(path)


TWO_KERNELS = """
import simkit as wp

@wp.func
def twice(x: float):
    return 2.0 * x

@wp.kernel
def doubled(a: wp.array(dtype=float)):
    i = wp.tid()
    a[i] = twice(float(i))

@wp.kernel
def broken(a: wp.array(dtype=float)):
    i = wp.tid()
    a[i] = undefined_name

@wp.kernel
def sevens(a: wp.array(dtype=float)):
    i = wp.tid()
    a[i] = 7.0
"""


def test_kernels_of_a_deleted_file_still_build(tmp_path):
    module, path = _import(tmp_path, TWO_KERNELS)
    os.remove(path)
    a = wp.zeros(4, dtype=float)
    wp.launch(module.doubled, 4, inputs=[a])
    np.testing.assert_allclose(a.numpy(), [0.0, 2.0, 4.0, 6.0])


def test_a_kernel_that_fails_to_build_fails_alone_each_launch_until_redefined(tmp_path):
    module, path = _import(tmp_path, TWO_KERNELS)
    os.remove(path)
    a = wp.zeros(4, dtype=float)
    for _ in range(2):  # the error repeats: the kernel never runs half-built
        with pytest.raises(wp.CompileError, match="undefined_name"):
            wp.launch(module.broken, 4, inputs=[a])
    wp.launch(module.sevens, 4, inputs=[a])  # its module's other kernels build and run
    np.testing.assert_allclose(a.numpy(), np.full(4, 7.0))
    _redefine(module, tmp_path, """
        @wp.kernel
        def broken(a: wp.array(dtype=float)):
            i = wp.tid()
            a[i] = 3.0 * float(i)
    """)
    wp.launch(module.broken, 4, inputs=[a])
    np.testing.assert_allclose(a.numpy(), [0.0, 3.0, 6.0, 9.0])
    wp.launch(module.doubled, 4, inputs=[a])
    np.testing.assert_allclose(a.numpy(), [0.0, 2.0, 4.0, 6.0])


CPP_ERROR = """
import simkit as wp

@wp.func_native("return x + not_declared_in_cpp;")
def bad_snippet(x: float) -> float: ...

@wp.kernel
def ones(a: wp.array(dtype=float)):
    a[wp.tid()] = 1.0

@wp.kernel
def uses_the_snippet(a: wp.array(dtype=float)):
    i = wp.tid()
    a[i] = bad_snippet(a[i])

@wp.kernel
def twos(a: wp.array(dtype=float)):
    a[wp.tid()] = 2.0

@wp.kernel
def threes(a: wp.array(dtype=float)):
    a[wp.tid()] = 3.0
"""


def test_a_kernel_whose_cpp_fails_is_left_out_of_its_siblings_units(tmp_path, monkeypatch):
    """Its C++ fails only when compiled: the unit of every pending kernel fails once, the launched kernel then
    builds alone, and later launches build the others without the suspects (not the failing unit again)."""
    from simkit.kernels.backends import cpu

    module, _ = _import(tmp_path, CPP_ERROR)
    failed, built = [], []
    original = cpu.build

    def counted(source, lib_path, flags=None, precompiled=None, level=None):
        try:
            original(source, lib_path, flags, precompiled, level)
            built.append([k for k in ("ones", "uses_the_snippet", "twos", "threes") if f" {k}_" in source])
        except wp.NativeCompileError:
            failed.append(source)
            raise

    monkeypatch.setattr(cpu, "build", counted)
    a = wp.zeros(4, dtype=float, device="cpu")
    wp.launch(module.ones, 4, inputs=[a], device="cpu")
    assert len(failed) == 1 and built == [["ones"]]
    wp.launch(module.twos, 4, inputs=[a], device="cpu")  # the module's suspects build at their own launch
    wp.launch(module.threes, 4, inputs=[a], device="cpu")
    np.testing.assert_allclose(a.numpy(), np.full(4, 3.0))
    assert len(failed) == 1 and built == [["ones"], ["twos"], ["threes"]]
    for _ in range(2):  # the failing kernel fails alone, at each of its launches
        with pytest.raises(wp.NativeCompileError, match="not_declared_in_cpp"):
            wp.launch(module.uses_the_snippet, 4, inputs=[a], device="cpu")
    assert len(failed) == 3


def test_a_kept_kernel_runs_the_body_it_was_defined_with_after_its_file_changes(tmp_path, monkeypatch):
    _reloadable(tmp_path, monkeypatch)
    code = """
        import simkit as wp

        @wp.kernel
        def fill(a: wp.array(dtype=float)):
            i = wp.tid()
            a[i] = VALUE
    """
    module, path = _import(tmp_path, code.replace("VALUE", "1.0"))
    old = module.fill
    path.write_text(textwrap.dedent(code.replace("VALUE", "2.0 + 3.0 * float(i)")))  # a longer line: new text
    importlib.reload(module)
    a, b = wp.zeros(3, dtype=float), wp.zeros(3, dtype=float)
    wp.launch(old, 3, inputs=[a])  # first launch after the edit: built from the lines it was defined with
    wp.launch(module.fill, 3, inputs=[b])
    np.testing.assert_allclose(a.numpy(), [1.0, 1.0, 1.0])
    np.testing.assert_allclose(b.numpy(), [2.0, 5.0, 8.0])


def test_reloading_a_module_of_funcs_rebuilds_the_kernels_that_call_them(tmp_path, monkeypatch):
    _reloadable(tmp_path, monkeypatch)
    ref_code = """
        import simkit as wp

        @wp.func
        def magic():
            return MAGIC
    """
    ref_name = f"_sk_recovery_ref_{uuid.uuid4().hex[:8]}"
    ref, ref_path = _import(tmp_path, ref_code.replace("MAGIC", "1.0"), ref_name)
    user, _ = _import(tmp_path, f"""
        import simkit as wp
        import {ref_name} as ref

        @wp.kernel
        def kern(a: wp.array(dtype=float)):
            a[0] = ref.magic()
    """)
    a = wp.zeros(1, dtype=float)
    wp.launch(user.kern, 1, inputs=[a])
    assert a.numpy()[0] == 1.0
    ref_path.write_text(textwrap.dedent(ref_code.replace("MAGIC", "2.0")))
    importlib.reload(ref)
    wp.launch(user.kern, 1, inputs=[a])  # never the replaced body
    assert a.numpy()[0] == 2.0


def test_mark_modified_reads_the_captured_values_again():
    def run(k, expected):
        a = wp.zeros(1, dtype=float)
        wp.launch(k, 1, inputs=[a])
        assert a.numpy()[0] == expected

    @wp.kernel
    def captured(a: wp.array(dtype=float)):
        a[0] = C

    C = 17.0  # noqa: N806
    run(captured, 17.0)
    C = 42.0  # noqa: N806,F841
    run(captured, 17.0)  # compiled code is kept ...
    captured.module.mark_modified()
    run(captured, 42.0)  # ... until the module is marked modified


def test_set_module_options_recompiles_kernels_built_with_the_old_options(tmp_path):
    module, _ = _import(tmp_path, """
        import simkit as wp

        @wp.kernel
        def summed(x: wp.array(dtype=float), y: wp.array(dtype=float)):
            i = wp.tid()
            s = float(0.0)
            for k in range(4):
                s += x[i]
            y[i] = s
    """)
    from simkit.kernels import ir

    def loops():
        return sum(isinstance(s, ir.For) for s in ir.walk(module.summed.specs[None].ir.body))

    x, y = wp.array([1.0, 2.0], dtype=float), wp.zeros(2, dtype=float)
    wp.launch(module.summed, 2, inputs=[x, y])
    assert loops() == 0  # unrolled by default
    wp.set_module_options({"max_unroll": 2}, module)
    wp.launch(module.summed, 2, inputs=[x, y])
    assert loops() == 1
    np.testing.assert_allclose(y.numpy(), [4.0, 8.0])

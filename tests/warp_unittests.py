"""Load warp-lang's own unit tests (``warp/tests``, shipped in the wheel) with simkit as ``wp``.

A test file is read from the installed warp-lang and only its import lines are rewritten:
``import warp as wp`` becomes ``import simkit as wp`` (``import warp``: ``import simkit as warp``),
``warp.tests.unittest_utils`` becomes :mod:`warp_unittest_shim`, and other ``warp.tests.*`` modules (helpers such as
``warp.tests.matrix.utils``) are loaded the same way under the package name ``skwarp_tests``.
Type helpers the tests take from Warp's internal ``wp._src.types`` are read from ``wp.types``.
Line numbers are kept, so failures point at warp-lang's lines.
"""
from __future__ import annotations

import importlib.abc
import importlib.util
import linecache
import os
import re
import sys
import unittest
import warnings

PACKAGE = "skwarp_tests"
#: the C++ optimisation level of warp-lang's test modules (what they check is what a kernel computes, which the
#: level does not change): -O0, which runs them in 0.63x the time of Warp's -O2 (test_warp_unittests_math.py,
#: one worker, empty cache: 43 -> 27 s; -Og: 28 s), ...
WARP_CPU_LEVEL = 0
#: ... except those whose few kernels run long (the mesh and BVH queries through simkit's collision headers:
#: test_warp_unittests_geometry.py takes 57 s at -O2, 79 at -Og and 3 minutes at -O0), built at Warp's -O2
WARP_CPU_LEVEL_RUNTIME = 2
RUNTIME_PACKAGES = ("geometry",)
GPU_PACKAGE = "skwarp_tests_gpu"  # the same files loaded again while the emulated GPU is present (their CUDA tests)


def tests_dir() -> str | None:
    spec = importlib.util.find_spec("warp")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = os.path.join(list(spec.submodule_search_locations)[0], "tests")
    return path if os.path.isdir(path) else None


def _simkit_import(m) -> str:
    """``from warp._src.codegen import WarpCodegenError, ...``: simkit's, when simkit has every name."""
    import simkit

    names = [n.split(" as ")[0].strip() for n in m.group(2).split(",")]
    return f"{m.group(1)}from simkit import {m.group(2)}" if all(hasattr(simkit, n) for n in names) else m.group(0)


def rewrite(src: str, package: str = PACKAGE) -> str:
    src = re.sub(r"^(\s*)import warp as (\w+)$", r"\1import simkit as \2", src, flags=re.M)
    src = re.sub(r"^(\s*)import warp$", r"\1import simkit as warp", src, flags=re.M)
    # (``warp.optim.Adam``: simkit's optimizers; the files that import it use ``warp.`` for nothing else)
    src = re.sub(r"^(\s*)import warp\.optim$", r"\1import simkit as warp", src, flags=re.M)
    # (``import warp.geometry`` binds ``warp`` too, as ``import simkit.geometry`` would bind ``simkit``)
    src = re.sub(r"^(\s*)import warp\.geometry$", r"\1import simkit as warp, simkit.geometry", src, flags=re.M)
    src = re.sub(r"^(\s*)import warp\.geometry as (\w+)$", r"\1import simkit.geometry as \2", src, flags=re.M)
    # (Warp's private geometry module: the helpers its geometry tests read, such as in_circle, are simkit.geometry's)
    src = re.sub(r"^(\s*)(from|import) warp\._src\.geometry\b", r"\1\2 simkit.geometry", src, flags=re.M)
    src = src.replace("from warp.utils import", "from simkit.utils import")
    src = src.replace("warp.tests.unittest_utils", "warp_unittest_shim")
    src = re.sub(r"^(\s*)from warp\.tests import ", rf"\1from {package} import ", src, flags=re.M)  # (aux modules)
    src = src.replace("wp._src.types.", "wp.types.")  # (Warp's internal module: its public names are wp.types)
    src = re.sub(r"^(\s*)from warp\._src\.(?:codegen|types|context) import ([\w, ]+?)(?:\s*#.*)?$", _simkit_import, src,
                 flags=re.M)
    src = src.replace("from warp._src.utils import map_cache", "from simkit.runtime.map import map_cache")
    src = src.replace("from warp._src.autograd import", "from simkit.autograd import")
    src = src.replace("from warp._src.logger import", "from simkit.logger import")
    src = src.replace("from warp._src import logger as", "from simkit import logger as")
    src = src.replace("from warp.autograd import", "from simkit.autograd import")
    src = src.replace("from warp.fem import Sample as", "from warp_unittest_shim import FemSample as")
    if tests_dir() is not None:  # Warp's example assets (USD meshes), shipped beside its tests
        assets = os.path.join(os.path.dirname(tests_dir()), "examples", "assets")
        src = src.replace("wp.examples.get_asset_directory()", repr(assets))
    return src.replace("warp.tests.", f"{package}.")


class _Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds ``skwarp_tests[.x.y]`` in warp-lang's tests folder and execs it rewritten."""

    def find_spec(self, fullname, path, target=None):
        if fullname.split(".", 1)[0] not in (PACKAGE, GPU_PACKAGE):
            return None
        base = os.path.join(tests_dir(), *fullname.split(".")[1:])
        if os.path.isdir(base):
            return importlib.util.spec_from_loader(fullname, self, origin=os.path.join(base, "__init__.py"),
                                                   is_package=True)
        if os.path.isfile(base + ".py"):
            return importlib.util.spec_from_loader(fullname, self, origin=base + ".py")
        return None

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        spec = module.__spec__
        module.__file__ = spec.origin
        if spec.submodule_search_locations is not None:
            module.__path__ = [os.path.dirname(spec.origin)]
            return  # the packages' __init__ files are empty
        import simkit

        # Warp's test modules are most of the suite's C++ (test_vec_scalar_ops alone is 1.7 MB): built at a lower
        # level than simkit's -O3 (config.py), they build sooner
        level = WARP_CPU_LEVEL_RUNTIME if spec.name.split(".")[1] in RUNTIME_PACKAGES else WARP_CPU_LEVEL
        simkit.set_module_options({"optimization_level": level}, module=spec.name)
        with open(spec.origin) as f:
            src = rewrite(f.read(), spec.name.split(".", 1)[0])
        # kernels read their source through inspect (linecache): the rewritten text, with the same lines
        linecache.cache[spec.origin] = (len(src), None, src.splitlines(True), spec.origin)
        code = compile(src, spec.origin, "exec", dont_inherit=True)  # (not this file's __future__ flags)
        exec(code, module.__dict__)  # noqa: S102 - warp-lang's own test file


def install():
    here = os.path.dirname(os.path.abspath(__file__))
    if here not in sys.path:
        sys.path.insert(0, here)
    if not any(isinstance(f, _Finder) for f in sys.meta_path):
        sys.meta_path.insert(0, _Finder())


def load(name: str, package: str = PACKAGE):
    """The test module ``warp/tests/<name>.py`` (``name`` like ``"test_lerp"`` or ``"matrix.test_mat"``)."""
    install()
    return importlib.import_module(f"{package}.{name}")


def cases(name: str, package: str = PACKAGE) -> dict:
    """``{"Class.method": TestCase}`` for every test method of the module."""
    module = load(name, package)
    out = {}
    for test in _flatten(unittest.defaultTestLoader.loadTestsFromModule(module)):
        out[f"{type(test).__name__}.{test._testMethodName}"] = test
    return out


def _flatten(suite):
    for item in suite:
        if isinstance(item, unittest.TestSuite):
            yield from _flatten(item)
        else:
            yield item


def _show_on_stderr(message, category, filename, lineno, file=None, line=None):
    sys.stderr.write(warnings.formatwarning(message, category, filename, lineno, line))


def run_case(test) -> unittest.TestResult:
    result = unittest.TestResult()
    with warnings.catch_warnings():
        # as in a plain unittest run, warnings go to sys.stderr (where warp-lang's tests read them), not to
        # pytest's record; a test's own catch_warnings(record=True) or assertWarns still records them
        warnings.showwarning = _show_on_stderr
        cls = type(test)  # the class's fixtures around each test (Warp's deterministic tests switch modes there);
        try:              # not the module's (setUpModule of some files sets Warp-only config such as log_level)
            cls.setUpClass()
        except Exception:  # noqa: BLE001 - reported as the test's error, as unittest does
            result.addError(test, sys.exc_info())
            return result
        try:
            test.run(result)
        finally:
            cls.tearDownClass()
    return result


def cases_of(name: str) -> dict:
    """:func:`cases`, loaded once per file."""
    if name not in _CASES:
        _CASES[name] = cases(name)
    return _CASES[name]


_CASES: dict = {}


def make_tests(file_names: list, known_of: dict):
    """The two pytest test functions of a group of warp-lang's files: ``test_warp_unittest`` runs one test method
    (one pytest item per method, id ``file::Class.method``; a method ``known_of[file]`` lists is skipped with its
    reason), ``test_known_failures_name_tests`` checks that every listed key of a file still names a test."""
    import pytest

    from warp_unittest_known_gpu import GPU_ONLY

    params = []
    for name in file_names if tests_dir() is not None else []:
        for case_name in cases_of(name):
            why = next((reason for key, reason in known_of[name].items() if key in case_name), None)
            if why is None and "cuda" in case_name:  # (a real GPU: what simkit does differently there)
                why = next((reason for key, reason in GPU_ONLY.get(name, {}).items() if key in case_name), None)
            params.append(pytest.param(name, case_name, id=f"{name}::{case_name}",
                                       marks=[pytest.mark.skip(reason=f"listed: {why}")] if why else []))

    @pytest.mark.parametrize("name, case_name", params)
    def test_warp_unittest(name, case_name):
        result = run_case(cases_of(name)[case_name])
        problems = result.errors + result.failures
        assert not problems, f"warp-lang's {name}::{case_name} failed:\n{problems[0][1][-3000:]}"
        if result.skipped:
            pytest.skip(result.skipped[0][1])

    @pytest.mark.parametrize("name", file_names)
    def test_known_failures_name_tests(name):
        if tests_dir() is None:  # pragma: no cover - warp-lang is a test dependency
            pytest.skip("warp-lang's tests are not installed")
        unused = [key for key in known_of[name] if not any(key in c for c in cases_of(name))]
        assert not unused, f"{name}: no test matches {unused} any more; remove them from warp_unittest_known.py"

    return test_warp_unittest, test_known_failures_name_tests

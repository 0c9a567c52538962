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
import os
import re
import sys
import unittest
import warnings

PACKAGE = "skwarp_tests"


def tests_dir() -> str | None:
    spec = importlib.util.find_spec("warp")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = os.path.join(list(spec.submodule_search_locations)[0], "tests")
    return path if os.path.isdir(path) else None


def rewrite(src: str) -> str:
    src = re.sub(r"^(\s*)import warp as (\w+)$", r"\1import simkit as \2", src, flags=re.M)
    src = re.sub(r"^(\s*)import warp$", r"\1import simkit as warp", src, flags=re.M)
    src = src.replace("warp.tests.unittest_utils", "warp_unittest_shim")
    src = src.replace("wp._src.types.", "wp.types.")  # (Warp's internal module: its public names are wp.types)
    src = src.replace("from warp._src.utils import map_cache", "from simkit.runtime.map import map_cache")
    src = src.replace("from warp.fem import Sample as", "from warp_unittest_shim import FemSample as")
    if tests_dir() is not None:  # Warp's example assets (USD meshes), shipped beside its tests
        assets = os.path.join(os.path.dirname(tests_dir()), "examples", "assets")
        src = src.replace("wp.examples.get_asset_directory()", repr(assets))
    return src.replace("warp.tests.", f"{PACKAGE}.")


class _Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds ``skwarp_tests[.x.y]`` in warp-lang's tests folder and execs it rewritten."""

    def find_spec(self, fullname, path, target=None):
        if fullname != PACKAGE and not fullname.startswith(PACKAGE + "."):
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
        with open(spec.origin) as f:
            src = rewrite(f.read())
        code = compile(src, spec.origin, "exec", dont_inherit=True)  # (not this file's __future__ flags)
        exec(code, module.__dict__)  # noqa: S102 - warp-lang's own test file


def install():
    here = os.path.dirname(os.path.abspath(__file__))
    if here not in sys.path:
        sys.path.insert(0, here)
    if not any(isinstance(f, _Finder) for f in sys.meta_path):
        sys.meta_path.insert(0, _Finder())


def load(name: str):
    """The test module ``warp/tests/<name>.py`` (``name`` like ``"test_lerp"`` or ``"matrix.test_mat"``)."""
    install()
    return importlib.import_module(f"{PACKAGE}.{name}")


def cases(name: str) -> dict:
    """``{"Class.method": TestCase}`` for every test method of the module."""
    module = load(name)
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
        test.run(result)
    return result


def check_file(name: str, known: dict) -> None:
    """Run every test method of warp-lang's file ``name``; fail unless all pass except those ``known`` lists
    (a key matches each method whose name contains it) and every key of ``known`` still names a test."""
    import pytest

    if tests_dir() is None:  # pragma: no cover - warp-lang is a test dependency
        pytest.skip("warp-lang's tests are not installed")
    all_cases = cases(name)
    unused = [key for key in known if not any(key in c for c in all_cases)]
    assert not unused, f"{name}: no test matches {unused} any more; remove them from warp_unittest_known.py"
    failed, passed = [], 0
    for case_name, case in all_cases.items():
        if any(key in case_name for key in known):
            continue
        result = run_case(case)
        problems = result.errors + result.failures
        if problems:
            failed.append(f"{case_name}:\n{problems[0][1][-1500:]}")
        elif not result.skipped:
            passed += 1
    assert not failed, f"{len(failed)} of warp-lang's tests in {name} failed:\n\n" + "\n\n".join(failed)
    assert passed > 0, f"{name}: no test ran"

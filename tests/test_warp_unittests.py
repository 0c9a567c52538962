"""warp-lang's own unit tests, run under simkit.

Each file listed in ``warp_unittest_known.KNOWN`` is read from the installed warp-lang with only its
imports rewritten (``import warp as wp`` -> ``import simkit as wp``; tests/warp_unittests.py) and
every test method in it runs on simkit's devices. Everything must pass except the tests listed there
with a reason; the list must name only tests that exist. The three slowest files run only with
``SIMKIT_WARP_TESTS=all``.
"""
import os

import pytest

from warp_unittest_known import KNOWN

warp_unittests = pytest.importorskip("warp_unittests")
if warp_unittests.tests_dir() is None:  # pragma: no cover - warp-lang is a test dependency
    pytest.skip("warp-lang's tests are not installed", allow_module_level=True)


def _reason(name: str, known: dict):
    return next((why for key, why in known.items() if key in name), None)


# the three slowest files (about two and a half minutes of CI's compile and NVRTC time between them; their
# ground is also covered by tests/test_builtins_*.py and tests/test_grad_builtins.py): run with
# SIMKIT_WARP_TESTS=all
SLOW = {"test_arithmetic", "test_spatial", "test_grad"}
ALL = os.environ.get("SIMKIT_WARP_TESTS") == "all"


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.skipif(
    n in SLOW and not ALL, reason="slow: SIMKIT_WARP_TESTS=all runs it")) for n in sorted(KNOWN)])
def test_warp_unittest_file(name):
    known = KNOWN[name]
    cases = warp_unittests.cases(name)
    unused = [key for key in known if not any(key in c for c in cases)]
    assert not unused, f"{name}: no test matches {unused} any more; remove them from warp_unittest_known.py"
    failed, passed = [], 0
    for case_name, case in cases.items():
        if _reason(case_name, known):
            continue
        result = warp_unittests.run_case(case)
        problems = result.errors + result.failures
        if problems:
            failed.append(f"{case_name}:\n{problems[0][1][-1500:]}")
        elif not result.skipped:
            passed += 1
    assert not failed, f"{len(failed)} of warp-lang's tests in {name} failed:\n\n" + "\n\n".join(failed)
    assert passed > 0, f"{name}: no test ran"

"""warp-lang's own unit tests, run under simkit.

Each file listed in ``warp_unittest_known.KNOWN`` is read from the installed warp-lang with only its
imports rewritten (``import warp as wp`` -> ``import simkit as wp``; tests/warp_unittests.py) and every
test method in it runs, as a pytest item of its own, on simkit's devices. Everything must pass except
the tests listed there with a reason; the list must name only tests that exist. This file runs the files
of no group (``warp_unittest_known.GROUPS``); tests/test_warp_unittests_<group>.py run the others. The slowest files
(``warp_unittest_known.SLOW``) run only with ``SIMKIT_WARP_TESTS=all``.
"""
import warp_unittests
from warp_unittest_known import KNOWN, files

test_warp_unittest, test_known_failures_name_tests = warp_unittests.make_tests(files(None), KNOWN)

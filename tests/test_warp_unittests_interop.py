"""warp-lang's unit tests of interoperability (PyTorch, DLPack, JAX), run under simkit
(tests/test_warp_unittests.py)."""
import warp_unittests
from warp_unittest_known import KNOWN, files

test_warp_unittest, test_known_failures_name_tests = warp_unittests.make_tests(files("interop"), KNOWN)

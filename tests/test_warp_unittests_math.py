"""warp-lang's unit tests of arithmetic, vectors, quaternions, spatial math and their gradients, run under
simkit (tests/test_warp_unittests.py)."""
import pytest
import warp_unittests
from warp_unittest_known import KNOWN, files


@pytest.mark.parametrize("name", files("math"))
def test_warp_unittest_file(name):
    warp_unittests.check_file(name, KNOWN[name])

"""warp-lang's unit tests of matrices (matrix.*), run under simkit (tests/test_warp_unittests.py)."""
import pytest
import warp_unittests
from warp_unittest_known import KNOWN, files


@pytest.mark.parametrize("name", files("matrix"))
def test_warp_unittest_file(name):
    warp_unittests.check_file(name, KNOWN[name])

"""warp-lang's CUDA unit tests on the emulated GPU, where no GPU is present (tests/warp_unittests_gpu.py): the
files of ``warp_unittest_known_gpu.GPU_FILES``, each CUDA test method one pytest item."""
import warp_unittests_gpu
from warp_unittest_known import KNOWN
from warp_unittest_known_gpu import GPU_FILES, KNOWN_GPU

test_warp_unittest_on_the_emulated_gpu, test_known_gpu_failures_name_tests = warp_unittests_gpu.make_tests(
    GPU_FILES, KNOWN, KNOWN_GPU)

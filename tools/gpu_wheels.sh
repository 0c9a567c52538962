#!/usr/bin/env bash
# Fetch, here, the test dependencies that the lent GPU machine's image lacks, as wheels in .whl/
# (ignored by git; tools/gpu_check.sh installs them there). Then run the check with the device tool:
#   bash tools/gpu_check.sh    with carry [".whl"]
# The GPU image runs Python 3.12 and has pytest, pytest-xdist, numpy, cuda-bindings and NVRTC;
# trimesh (for tests/test_mesh.py) is the one test dependency it lacks that can travel
# (warp-lang's 149 MB wheel is over the 64 MiB transfer limit; usd-core is only for tests/test_io.py).
set -euo pipefail
cd "$(dirname "$0")/.."
grep -qx '/.whl/' .git/info/exclude 2>/dev/null || echo '/.whl/' >> .git/info/exclude
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
    -d .whl "trimesh==5.2.0"
ls -l .whl

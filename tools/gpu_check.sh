#!/usr/bin/env bash
# The one script a GPU session runs: GPU info, the test suite with the GPU visible, GPU benchmarks.
# Finishes in under 8 minutes (each stage has its own time limit); exits non-zero on any failure.
#
#   bash tools/gpu_check.sh            # from the repository root, on the machine with the GPU
#
# With the session's device tool: first, here, `bash tools/gpu_wheels.sh` (the test dependencies the
# GPU image lacks, as wheels in .whl/), then run `bash tools/gpu_check.sh` with carry [".whl"] and a
# timeout_s of about 560 (the first run, on an H200, took 126 s). warp-lang's wheel (149 MB) is over
# the transfer limit: no warp-lang columns. Every stage's whole log comes back in $OUT (13 files).
# Keep the machine for a rerun rather than giving it back between runs: new loans can pause.
#
# Stages (in order of value, so a timeout still leaves the most important results):
#   1. nvidia-smi, what simkit sees (devices, driver, NVRTC) and the package versions: gpu_info.log
#   2. the CUDA backend tests on the real GPU (test_cuda_backend.py, the compiled launcher, interleaved
#      kernels, conditional graph nodes, activity timing, occupancy, registers against the driver's,
#      deterministic recorded launches): cuda_backend.log
#   3. benchmarks/gpu.py: gpu_bench.log, its table in gpu_benchmark.md
#   4. benchmarks/gpu_breakdown.py (launch overhead part by part, saxpy bandwidth variants):
#      gpu_breakdown.log, gpu_breakdown.md
#   5. benchmarks/gpu_frames.py (scene frames launched one by one and as one CUDA graph each):
#      gpu_frames.log, gpu_frames.md
#   6. benchmarks/gpu_conditional.py (a solve until convergence: the host deciding each iteration vs
#      capture_while's conditional node): gpu_conditional.log, gpu_conditional.md
#   7. benchmarks/gpu_deterministic.py (deterministic float scatters and backward gathers: recorded and applied
#      in launch order vs one GPU thread vs atomics in any order): gpu_deterministic.log, gpu_deterministic.md
#   8. the whole suite (every `device`-parametrized test also runs on cuda:0, and tests that use
#      the default device run on the GPU), spread over processes by pytest-xdist: suite.log
set -u -o pipefail
cd "$(dirname "$0")/.."

# Test dependencies the GPU machine lacks travel as wheels in .whl/ (tools/gpu_wheels.sh); they are
# installed to /tmp/site for this run.
if ls .whl/*.whl >/dev/null 2>&1; then
    ${PYTHON:-python3} -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
        --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
fi

# simkit is not installed there: the scripts and tests import it from this checkout
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}

T_START=$SECONDS
BUDGET=${GPU_CHECK_BUDGET:-460}   # seconds for everything (under 8 minutes)
STATUS=0
PY=${PYTHON:-python3}
# pytest-xdist, where installed, spreads the test files over processes: each compiles its own modules
# (NVRTC takes up to ~30 s for the largest), so the compile time is divided among the cores
XDIST=$($PY -c "import xdist" 2>/dev/null && echo "-n ${GPU_CHECK_WORKERS:-12} --dist loadfile")
export PYTHONUNBUFFERED=1
# JAX (in the GPU image) would otherwise take 75% of the GPU's memory in the first process that imports it
export XLA_PYTHON_CLIENT_PREALLOCATE=false
# every stage's whole log comes back in $OUT (the tool returns only the output's tail)
LOGS=${OUT:-/tmp/gpu_check}
mkdir -p "$LOGS"
# With a GPU, every test module is compiled for it: skip the extra NVRTC checks for sm_80/sm_90.
export SIMKIT_VERIFY_CUDA=${SIMKIT_VERIFY_CUDA:-0}

left() { echo $((BUDGET - (SECONDS - T_START))); }

stage() {  # stage NAME LOG MAX_SECONDS CMD...
    local name=$1 log=$LOGS/$2 max=$3; shift 3
    local t=$(left)
    if [ "$t" -le 10 ]; then
        echo "== $name: SKIPPED (time budget spent)"; STATUS=1; return
    fi
    [ "$max" -gt "$t" ] && max=$t
    echo "== $name (limit ${max}s)"
    local t0=$SECONDS
    timeout --signal=INT --kill-after=15 "$max" "$@" 2>&1 | tee "$log"
    local rc=${PIPESTATUS[0]}
    if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
        echo "== $name: TIMED OUT after $((SECONDS - t0))s"; STATUS=1
    elif [ $rc -ne 0 ]; then
        echo "== $name: FAILED (exit $rc) after $((SECONDS - t0))s"; STATUS=1
    else
        echo "== $name: ok ($((SECONDS - t0))s)"
    fi
    return 0
}

echo "== nvidia-smi"
nvidia-smi 2>&1 | tee "$LOGS/gpu_info.log" || { echo "nvidia-smi failed"; STATUS=1; }

echo "== simkit view of the GPU"
$PY - <<'EOF' 2>&1 | tee -a "$LOGS/gpu_info.log"; [ "${PIPESTATUS[0]}" -eq 0 ] || STATUS=1
import sys
import simkit as sk
from simkit.kernels.backends.cuda import driver, nvrtc
print("simkit", sk.__version__, "devices:", [f"{d.alias} {d.name} {d.kind}" for d in sk.get_devices()])
print("CUDA driver version:", driver.driver_version(), "NVRTC:", nvrtc.version() if nvrtc.is_available() else None)
import importlib.metadata as md
for pkg in ("cuda-bindings", "numpy", "torch", "jax", "pytest", "pytest-xdist", "trimesh"):
    try:
        print(f"  {pkg} {md.version(pkg)}")
    except md.PackageNotFoundError:
        print(f"  {pkg} (not installed)")
import platform, shutil
print("python", platform.python_version(), "C++ compiler:", shutil.which("g++") or shutil.which("c++"))
if not sk.is_cuda_available():
    print("NO CUDA DEVICE:", driver.unavailable_reason())
    sys.exit(1)
EOF
if [ $STATUS -ne 0 ] && [ "${GPU_CHECK_ALLOW_NO_GPU:-0}" != 1 ]; then  # (=1: dry-run the script on a CPU)
    echo "== no usable GPU: stopping"; exit 1
fi

BACKEND_TESTS="tests/test_cuda_backend.py tests/test_cuda_native_launch.py tests/test_interleave.py
    tests/test_capture_conditional.py tests/test_cuda_timing.py tests/test_cuda_utils.py
    tests/test_kernel_resource_usage.py tests/test_deterministic_gpu.py tests/test_deterministic_grad_gpu.py"
stage "CUDA backend tests" cuda_backend.log 120 $PY -m pytest $BACKEND_TESTS -q -rfEs --durations=10 --maxfail=20
# the benchmark before the suite: its numbers go into docs/benchmarks.md, and the GPU is otherwise idle
stage "GPU benchmarks" gpu_bench.log 100 $PY benchmarks/gpu.py --markdown "$LOGS/gpu_benchmark.md"
stage "GPU breakdown" gpu_breakdown.log 90 $PY benchmarks/gpu_breakdown.py --markdown "$LOGS/gpu_breakdown.md"
stage "Scene frames" gpu_frames.log 150 $PY benchmarks/gpu_frames.py --markdown "$LOGS/gpu_frames.md"
stage "Conditional loop" gpu_conditional.log 45 $PY benchmarks/gpu_conditional.py --markdown "$LOGS/gpu_conditional.md"
stage "Deterministic sums" gpu_deterministic.log 80 $PY benchmarks/gpu_deterministic.py --quick \
    --markdown "$LOGS/gpu_deterministic.md"
stage "full test suite" suite.log 400 $PY -m pytest tests -q -rfE --tb=short --durations=15 --maxfail=40 $XDIST \
    $(for t in $BACKEND_TESTS; do echo --ignore=$t; done)

echo "== gpu_check finished in $((SECONDS - T_START))s: $([ $STATUS -eq 0 ] && echo PASS || echo FAIL)"
exit $STATUS

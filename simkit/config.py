"""Global settings. Change attributes directly: ``simkit.config.mode = "debug"``.

This module imports nothing from simkit: every layer may read it.
"""
import os

#: "release" or "debug" (debug adds array bounds checks that raise IndexError in Python, and compiles C++ at -O1
#: unless an ``optimization_level`` is set).
mode: str = os.environ.get("SIMKIT_MODE", "release")

#: Print compiler commands and cache hits/misses.
verbose: bool = bool(int(os.environ.get("SIMKIT_VERBOSE", "0")))

#: Warp's log levels (``sk.LOG_DEBUG`` 10, ``LOG_INFO`` 20, ``LOG_WARNING`` 30, ``LOG_ERROR`` 40): at ``LOG_DEBUG``
#: simkit prints what ``verbose`` prints; warnings and errors always go through Python's ``warnings`` and exceptions.
log_level: int = 20

#: Log every launch (kernel, dim, inputs, outputs, device) to the logger's ``info`` (simkit/logger.py): a debugging
#: aid that costs time per launch.
print_launches: bool = False

#: Warp compatibility (``warp.config.verbose_warnings``): simkit's warnings go through Python's ``warnings``
#: module, whose messages always name the file and line that caused them, so this changes nothing.
verbose_warnings: bool = False

#: Warn (``ArrayAccessWarning``) when an operation recorded on a Tape overwrites an array that an earlier
#: recorded launch read (simkit/runtime/access_check.py; ``backward()`` refuses such a recording either way).
verify_autograd_array_access: bool = False

#: After each launch, warn (``NonFiniteWarning``) where the kernel wrote NaN or infinity into an array
#: (simkit/runtime/verify_fp.py; synchronises and reads the written arrays back: a debugging mode).
verify_fp: bool = bool(int(os.environ.get("SIMKIT_VERIFY_FP", "0")))

#: Kernel cache directory (default: $SIMKIT_CACHE_DIR or ~/.cache/simkit/<version>).
cache_dir: str | None = os.environ.get("SIMKIT_CACHE_DIR")

#: Threads used by CPU kernels (None: every core available to this process).
cpu_threads: int | None = int(os.environ["SIMKIT_CPU_THREADS"]) if os.environ.get("SIMKIT_CPU_THREADS") else None

#: Launches smaller than this run on one CPU thread (thread start-up would cost more than it saves).
cpu_parallel_min: int = 1024

#: Measure, per kernel and launch size, whether CPU launches of kernels whose atomics contend (float atomics,
#: exchanges, atomics whose result is used; and every adjoint) run faster on one thread or on all, over their
#: first launches, and keep the faster (runtime/cpu_tuning.py). False: all threads.
cpu_atomic_tuning: bool = os.environ.get("SIMKIT_CPU_ATOMIC_TUNING", "1") != "0"

#: Also compile every CPU module for the GPU with NVRTC (checks CUDA code generation without a GPU).
verify_cuda: bool = bool(int(os.environ.get("SIMKIT_VERIFY_CUDA", "0")))

#: GPU architectures compiled by verify_cuda: NVRTC generates PTX for the first; for the others it runs
#: the front end (parsing, templates, types with that architecture's ``__CUDA_ARCH__``), a quarter of the cost.
verify_cuda_archs: tuple = ("sm_80", "sm_90")

#: record every allocation (device, size, scope, call site) for ``print_memory_report`` (runtime/memory_tracker.py);
#: ``ScopedMemoryTracker`` turns it on for its block
track_memory: bool = bool(int(os.environ.get("SIMKIT_TRACK_MEMORY", "0")))

#: Warp's ``config.deterministic``: a ``simkit.DeterministicMode`` (or its int) for modules that do not set the
#: option. RUN_TO_RUN / GPU_TO_GPU: launches whose atomics depend on the order of threads, and backward launches,
#: give the result of running them in launch-index order, so results are bit-identical from run to run
#: (simkit/kernels/deterministic.py). Read at each launch.
deterministic: int = int(os.environ.get("SIMKIT_DETERMINISTIC", "0"))

#: Warp's per-thread record limit of deterministic atomics: simkit sizes its records from the launch (one slot per
#: scalar component of each recorded atomic per launch index, utils/deterministic_gpu.py), so this changes nothing
#: (kept for Warp code that sets it).
deterministic_max_records: int = 32

#: Static `for i in range(N)` loops with at most this many iterations are unrolled.
max_unroll: int = 16

#: Adjoints run order-free sum loops once and skip the reverse of loops that define no active value,
#: saving nothing for either (docs/autodiff.md). False: every dynamic loop keeps the per-iteration
#: stack (for A/B measurements, or to rule these optimisations out when debugging).
adjoint_shortcuts: bool = True

#: Warp's experimental switch for several threads per block on the CPU. simkit's CPU launches always run one
#: thread per block (``block_dim()`` is 1 there); the setting is kept for Warp code that reads it, and changes
#: nothing.
enable_cpu_blocks: bool = False

#: Warp's optimisation level of generated code, 0-3, read when a module compiles; a module's ``optimization_level``
#: option (``set_module_options``) overrides it. None: ``-O3`` for the CPU's C++ compiler (Warp's CPU default is
#: ``-O2``; with GCC 12, simkit's scenes and kernels ran at ``-O3`` in 0.58-0.99x the time, for builds 1.02-1.47x
#: as long: ``benchmarks/opt_levels.py``, docs/benchmarks.md), or ``-O1`` in debug mode (``mode``); the GPU
#: assembler's own (``-O3``) for CUDA.
optimization_level: int | None = None

#: Flags replacing the CPU compiler's ``-O<level>``, split like a shell command line (e.g. "-O3 -g" to profile);
#: None: ``-O<optimization_level>``.
cpu_opt: str | None = os.environ.get("SIMKIT_CPU_OPT") or None

#: Compile the generated modules' common ``#include`` lines once into a GCC precompiled header
#: (simkit/kernels/backends/cpu_pch.py): a small module builds in 0.13 s instead of 0.32 s.
cpu_precompiled_headers: bool = os.environ.get("SIMKIT_CPU_PCH", "1") != "0"

#: C++ compilers run at once for one module: a module with large kernels compiles as several units in
#: parallel (simkit/kernels/backends/cpu_units.py). 0: the cores this process may use (at most 8).
cpu_compile_jobs: int = int(os.environ.get("SIMKIT_CPU_JOBS", "0"))

#: Modules that ``force_load`` / ``load_module`` compile at once (threads running the C++ compiler or NVRTC;
#: simkit/runtime/loading.py): None, the cores this process may use (at most 8); 0 or 1, one after another.
#: Warp's name; a call's ``max_workers`` overrides it.
load_module_max_workers: int | None = None

#: GPU adjoint kernels with dynamic loops: per-thread stack bytes, and the most scratch memory per launch.
cuda_stack_bytes: int = 16 * 1024
cuda_stack_budget: int = 1 << 30

#: Launches call compiled entries through fast-call builtins (kernels/backends/native_call.py: ~0.1 us
#: a call against ctypes' ~0.6), and GPU launches call the driver from C (the context made current only
#: when it is not). False: ctypes and cuda-python (for A/B measurements or debugging). Read when a
#: kernel module is loaded on a device.
native_calls: bool = bool(int(os.environ.get("SIMKIT_NATIVE_CALLS", "1")))

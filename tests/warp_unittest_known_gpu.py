"""Which of warp-lang's unit-test files run their CUDA tests on the emulated GPU (tests/warp_unittests_gpu.py), and the
CUDA tests among them that do not pass there, each with the reason: what simkit does differently on a GPU, or what
the emulator (tests/cuda_emulator.py) cannot show. ``warp_unittest_known.KNOWN`` applies too (a key matching the
test, or the test's name with ``_cuda_0`` read as ``_cpu``).

The files are those whose CUDA tests reach GPU-only code: memory, copies, streams, graph capture, atomics, the
runtime's sort/scan/fill kernels, spatial structures, snippets, interop. Files of pure arithmetic are left to the
CPU run (the emulator runs the host's math), and so are the slowest (the emulator compiles each module for the
host); SIMKIT_WARP_TESTS=all adds the test methods listed here as slow.
"""
import os

# In CI: the files of the GPU-only runtime (streams, copies and their adjoints, capture, launches, the sort/scan kernels,
# structures, snippets); SIMKIT_WARP_TESTS=all adds the rest of GPU_FILES (atomics of every type, DLPack, ...).
CORE_FILES = {"cuda.test_streams", "cuda.test_pinned", "cuda.test_array_fill_capture", "cuda.test_conditional_captures",
              "cuda.test_capture_mode", "test_graph", "cuda.test_mempool", "cuda.test_peer", "test_copy", "test_tape",
              "test_launch", "test_utils", "test_struct", "test_snippet", "test_devices", "test_diagnostics",
              "test_reload", "test_indexedarray", "geometry.test_bvh", "geometry.test_mesh", "test_grad_customs",
              "test_allocator"}

GPU_FILES = sorted([
    "cuda.test_streams", "cuda.test_pinned", "cuda.test_array_fill_capture", "cuda.test_conditional_captures",
    "cuda.test_capture_mode", "cuda.test_capture_release", "cuda.test_mempool", "cuda.test_peer", "test_graph",
    "deterministic.test_deterministic_graph_capture",
    "test_array", "test_copy", "test_tape", "test_launch", "test_utils", "test_atomic", "test_atomic_cas",
    "test_atomic_bitwise", "test_bf16", "test_fp16", "test_struct", "test_fixedarray", "test_snippet", "test_devices",
    "test_diagnostics", "test_indexedarray", "test_grad_customs", "test_array_reduce", "test_reload", "test_rand",
    "test_runlength_encode", "geometry.test_bvh", "geometry.test_mesh", "geometry.test_hash_grid",
    "geometry.test_grouped_bvh", "geometry.test_marching_cubes", "deterministic.test_deterministic_scatter",
    "deterministic.test_deterministic_counter", "interop.test_dlpack", "test_allocator",
])

EMULATOR_SERIAL = ("the emulator runs each stream's work at once, one thread after another: no work is ever pending, "
                   "__syncthreads() orders nothing, and streams of any priority take the same time")
EMULATOR_SLOW = ("minutes on the emulator (a kernel for each of many element types, each compiled for the host, or "
                 "hundreds of MB moved one emulated thread at a time); it runs with SIMKIT_WARP_TESTS=all and on GPUs")
BLOCK_DIM_CLAMP = ("simkit clamps block_dim to the kernel's limit (its launch bounds, or the device's 1024 threads) and "
                   "runs the launch; Warp's launch fails with a CUDA error")
SMALL_ATOMICS = ("simkit's GPU atomics take 8- and 16-bit integers and float16 min/max (a compare-and-swap of the "
                 "enclosing word); Warp refuses them")
OVERWRITE_WARNINGS = ("Warp's warnings for an array read and then written (config.verify_autograd_array_access); "
                      "simkit's tape differentiates such launches exactly or refuses them with a TapeError "
                      "(runtime/tape.py)")
HOST_TREES = ("Bvh/Mesh rebuild() inside a CUDA graph capture: simkit builds its trees on the host (the build reads "
              "the bounds back), so a capture holds refit() but not rebuild()")
EMULATOR_CUDART = ("calls the CUDA runtime library (libcudart's cudaFree) inside a capture: the emulator stands in for "
                   "the driver only")
ALLOC_IN_BODY = ("simkit allocates during a CUDA capture outside the graph (memory kept with it), so a conditional "
                 "body may allocate; Warp refuses (a graph allocation node in a body)")
APIC = "Warp's saveable (apic) graph capture"
INTERNALS = "tests Warp's internals (its runtime.core, Kernel.adj, tape records, ctypes structs)"

KNOWN_GPU = {
    "test_allocator": {
        "protocol_conformance_cuda": "CUDA managed memory (wp.CudaManagedAllocator, MemoryKind) is not in simkit",
        "managed_allocator_allocates_on_selected_device": "CUDA managed memory (Device.is_managed_memory_supported, "
                                                          "wp.CudaManagedAllocator, array.memory_kind)",
        "deallocate_uses_current_device_context_guard": INTERNALS + " (Device.context_guard; simkit makes the "
                                                                    "context current itself: tests/test_allocators.py)",
    },
    "cuda.test_streams": {
        "stream_event_is_complete": EMULATOR_SERIAL, "stream_priority_timings": EMULATOR_SERIAL,
    },
    "cuda.test_array_fill_capture": {"oversized_value_fallback": INTERNALS},
    "test_array": {
        "graph_fill_vecmat": EMULATOR_SLOW,
        "numpy_array_conversion": ("np.asarray() of a GPU array copies it to the host under simkit; Warp raises "
                                   "TypeError"),
    },
    "test_copy": {"copy_large_stride": EMULATOR_SLOW},
    "test_tape": {"backward_cuda_launch_failure": INTERNALS + "; " + BLOCK_DIM_CLAMP},
    "test_launch": {"block_dim_failure": BLOCK_DIM_CLAMP},
    "test_utils": {
        "scan_error_device_failure_is_reported": INTERNALS,
        "capture_if_forked_stream": INTERNALS + " (runtime.core's allocation tracker)",
    },
    "test_atomic": {"unsupported_dtypes": SMALL_ATOMICS},
    "test_fixedarray": {"capture_if": INTERNALS + " (runtime.toolkit_version)"},
    "cuda.test_conditional_captures": {"error_alloc_": ALLOC_IN_BODY},
    "cuda.test_capture_mode": {"unsafe_runtime_call": EMULATOR_CUDART},
    "cuda.test_capture_release": {
        "invalid_free_during_capture": INTERNALS, "keeps_current_device": INTERNALS, "loaded_graph_del": APIC,
    },
    "test_graph": {
        "topo_alloc": INTERNALS + " (graph nodes inserted and queried through runtime.core)",
        "launch_array_access_mode": "Warp's config.launch_array_access_mode",
        "alloc_free_preserves_merged_frontier": EMULATOR_SLOW,
        # (tests/test_memory_pools.py runs it at 4096 elements on the emulated GPU)
        "alloc_transient_stream": EMULATOR_SLOW,
    },
    "deterministic.test_deterministic_graph_capture": {
        "rejects_deterministic_cuda_kernel": APIC, "large_launch_rejected": "Warp's WarpDeterminismError",
        "record_cmd_deterministic_launch": "Warp's WarpDeterminismError",
        "graph_capture_deterministic_launch": INTERNALS + " (Graph._deterministic_buffer_refs)",
    },
    "test_snippet": {
        "shared_memory": EMULATOR_SERIAL,
        "return_struct_unsupported": "a @func_native may return a struct under simkit (Warp refuses)",
    },
    "test_devices": {"map_cuda_device": "wp.map_cuda_device (Devices for external CUDA contexts)"},
    "test_indexedarray": {"fill_matrix": EMULATOR_SLOW, "fill_vector": EMULATOR_SLOW},
    "geometry.test_bvh": {"capture_bvh_rebuild": HOST_TREES},
    "geometry.test_grouped_bvh": {"grouped_capture_bvh_rebuild": HOST_TREES},
    "geometry.test_mesh": {
        "mesh_exceptions": ("Warp's error classes for a Mesh of arrays on two devices or of int64 or 2-D indices "
                            "(simkit raises ValueError for the devices and converts the indices)"),
    },
    "deterministic.test_deterministic_scatter": {
        "bfloat16_deterministic": INTERNALS,
        "_rejected": "Warp's WarpDeterminismError (simkit's ordered launches give such accesses their sequential "
                     "meaning, kernels/deterministic.py)",
        "mixed_reduce_ops_same_array": "Warp's WarpDeterminismError (the same)",
        "scatter_overflow_reports_error": "Warp's record buffer and its capacity (simkit sizes its records from the "
                                          "launch: they never overflow)",
        "strided_1d_view_atomic_add": "Warp's WarpDeterminismError (the same)",
        "zero_stride_view_atomic_add": "Warp's array(capacity=) (zero-stride views over a buffer)",
    },
    "deterministic.test_deterministic_counter": {
        "_rejected": "Warp's WarpDeterminismError (simkit's ordered launches give such atomics their sequential "
                     "meaning, kernels/deterministic.py)",
        "phase0_skips_unconsumed_bitwise_atomics": INTERNALS,
    },
}

# What a real GPU shows too (the regular files' CUDA tests skip these where a GPU is present): not the emulator's limits
GPU_ONLY = {f: {k: v for k, v in known.items() if v not in (EMULATOR_SERIAL, EMULATOR_SLOW, EMULATOR_CUDART)}
            for f, known in KNOWN_GPU.items()}

if os.environ.get("SIMKIT_WARP_TESTS") != "all":
    GPU_FILES = [f for f in GPU_FILES if f in CORE_FILES]

if os.environ.get("SIMKIT_WARP_TESTS") == "all":  # (the slow ones run)
    KNOWN_GPU = {f: {k: v for k, v in known.items() if v != EMULATOR_SLOW} for f, known in KNOWN_GPU.items()}

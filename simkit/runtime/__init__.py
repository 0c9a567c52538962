"""Runtime: devices, arrays, launch, tape."""
from .array import (array, array1d, array2d, array3d, array4d, clone, copy, empty, empty_like, from_numpy, full,
                    full_like, ones, ones_like, zeros, zeros_like)
from .device import (Device, ScopedDevice, get_cuda_device_count, get_device, get_devices, is_cuda_available,
                     set_device)
from .interop import from_dlpack, to_dlpack
from .interop_jax import *  # noqa: F401,F403
from .interop_jax import __all__ as _jax_all
from .interop_torch import (device_from_torch, device_to_torch, dtype_from_torch, dtype_to_torch, from_torch,
                            stream_from_torch, stream_to_torch, to_torch, torch_function)
from .indexedarray import indexedarray, indexedarray1d, indexedarray2d, indexedarray3d, indexedarray4d
from .launch import launch
from .launch_cmd import Launch
from .captured_step import CapturedStep
from .timer import ScopedTimer
from .warp_api import *  # noqa: F401,F403
from .loading import force_load, load_module
from .allocators import (Allocator, HostAllocator, ScopedAllocator, get_device_allocator, set_cuda_allocator,
                         set_device_allocator)
from .warp_api import __all__ as _warp_api_all
from ..kernels.backends.cpu_graph import CpuGraph
from .capture_conditional import capture_if, capture_while, is_conditional_graph_supported
from .memory_tracker import ScopedMemoryTracker, print_memory_report
from .cuda_utils import (ScopedCudaProfiler, ScopedMempool, ScopedMempoolAccess, ScopedPeerAccess, cuda_profiler_start,
                         cuda_profiler_stop, get_cuda_driver_version, get_cuda_kernel_properties,
                         get_cuda_toolkit_version, get_kernel_resource_usage, get_suggested_block_size)
from ..kernels.backends.cuda.timing import (TIMING_ALL, TIMING_GRAPH, TIMING_KERNEL, TIMING_KERNEL_BUILTIN,
                                            TIMING_MEMCPY, TIMING_MEMSET, TimingResult, timing_begin, timing_end,
                                            timing_print)
from ..kernels.backends.cuda.stream import (CaptureMode, Event, Graph, ScopedCapture, ScopedStream, Stream, capture_begin,
                                            capture_debug_dot_print, capture_end, capture_launch, capture_pause,
                                            capture_resume,
                                            get_event_elapsed_time, get_stream, is_capturing, record_event,
                                            set_stream, synchronize_device, synchronize_event, synchronize_stream,
                                            wait_event, wait_stream)
from . import pyscope as _pyscope
from ..kernels import api as _api

_api.PYTHON_SCOPE = _pyscope.evaluate
from .tape import Tape, TapeError, active_tape, checkpoint
from .access_check import ArrayAccessWarning
from .verify_fp import NonFiniteWarning
from .memory_pools import *  # noqa: F401,F403
from .memory_pools import __all__ as _memory_pools_all
from .diagnostics import print_diagnostics
from .map import OPERATORS as _OPERATORS, map

for _name, _op in _OPERATORS.items():  # a + b, 2.0 * a, a **= 2: elementwise kernels (runtime/map.py)
    setattr(array, _name, _op)
    setattr(indexedarray, _name, _op)
array.__array_priority__ = indexedarray.__array_priority__ = 1000  # numpy scalars defer their operators

__all__ = ["array", "array1d", "array2d", "array3d", "array4d", "clone", "copy", "empty", "empty_like", "from_numpy",
           "full", "full_like", "ones", "ones_like", "zeros", "zeros_like", "indexedarray", "indexedarray1d",
           "indexedarray2d", "indexedarray3d", "indexedarray4d", "Device", "ScopedDevice",
           "get_cuda_device_count", "get_device", "get_devices", "is_cuda_available", "set_device", "launch", "Launch",
           "Event", "ScopedCapture", "ScopedTimer", "CpuGraph", "ScopedStream", "Stream", "CapturedStep",
           "TIMING_ALL", "TIMING_GRAPH", "TIMING_KERNEL", "TIMING_KERNEL_BUILTIN", "TIMING_MEMCPY", "TIMING_MEMSET",
           "TimingResult", "timing_begin", "timing_end", "timing_print", "Graph", "ScopedCudaProfiler", "ScopedMempool",
           "ScopedMempoolAccess", "ScopedPeerAccess", "cuda_profiler_start", "cuda_profiler_stop",
           "get_cuda_driver_version", "get_cuda_toolkit_version", "get_suggested_block_size",
           "get_cuda_kernel_properties", "get_kernel_resource_usage", "ScopedMemoryTracker", "print_memory_report",
           "capture_begin", "capture_pause", "capture_resume", "capture_if", "capture_while", "is_conditional_graph_supported", "CaptureMode",
           "capture_debug_dot_print", "capture_end", "capture_launch", "get_event_elapsed_time", "get_stream",
           "is_capturing", "record_event", "set_stream", "synchronize_device", "synchronize_event",
           "synchronize_stream", "wait_event", "wait_stream", "Tape", "TapeError", "ArrayAccessWarning",
           "NonFiniteWarning", "active_tape", "checkpoint", "map",
           "from_dlpack", "to_dlpack", "from_torch", "to_torch", "device_from_torch", "device_to_torch",
           "stream_from_torch", "stream_to_torch", "torch_function", "from_jax", "to_jax", "device_from_jax",
           "dtype_from_torch", "dtype_to_torch",
           "device_to_jax", "jax_kernel", "print_diagnostics", "force_load", "load_module", "Allocator", "HostAllocator", "ScopedAllocator",
           "get_device_allocator", "set_cuda_allocator", "set_device_allocator"] + list(_warp_api_all) + \
    list(_memory_pools_all)
__all__ += [n for n in _jax_all if n not in __all__]  # (JAX interop: interop_jax.py)

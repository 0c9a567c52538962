"""Calls from Python into compiled code at a tenth of ctypes' cost: every launch makes one.

A ctypes call converts each argument through its ``argtypes`` and costs 0.5-0.8 us for the 4 to 8
arguments of a launch; a launch is 2-3 us of Python in all. The functions here are C functions with
CPython's "fast call" convention (``METH_FASTCALL``: the arguments arrive as an array of objects),
turned into builtin function objects with ``PyCFunction_NewEx``: a call costs about 0.1 us. They
are built once with the system compiler, like the CPU kernels, and without Python headers: the few
C-API functions they use (stable ABI) are passed in by :func:`_load`.

- :func:`cpu_entry`: a CPU kernel entry ``void f(const args*, const bounds*, int threads, int
  contiguous)`` called as ``f(args: bytes, bounds: bytes, threads, contiguous)``, like its ctypes
  function (the GIL is released while it runs, as ctypes does).
- :func:`cuda_launch`: ``launch(driver, ctx, func, grid, block, stream, args: bytes, bounds: bytes)
  -> CUresult``: ``driver`` is the address of the driver's ``cuLaunchKernel``, ``cuCtxGetCurrent``
  and ``cuCtxSetCurrent`` (in that order); the context is made current only when it is not
  (``cuda/native_launch.py``).

Where nothing compiles, :func:`cpu_entry` and :func:`cuda_launch` return None and the callers keep
their ctypes or cuda-python paths. ``simkit.config.native_calls = False`` (``SIMKIT_NATIVE_CALLS=0``)
does the same, for A/B measurements.
"""
from __future__ import annotations

import ctypes
import hashlib
import os
import threading

from ... import config

_SOURCE = r"""
// simkit: METH_FASTCALL functions for launches (no Python headers: the C-API functions come in a table)
#include <stddef.h>
typedef struct _object PyObject;
typedef ptrdiff_t Py_ssize_t;
struct Api {
    void* (*as_voidptr)(PyObject*);              // PyLong_AsVoidPtr
    long (*as_long)(PyObject*);                  // PyLong_AsLong
    char* (*bytes_as_string)(PyObject*);         // PyBytes_AsString (TypeError unless bytes)
    PyObject* (*from_long)(long);                // PyLong_FromLong
    PyObject* (*err_occurred)(void);             // PyErr_Occurred
    void (*err_set_string)(PyObject*, const char*);  // PyErr_SetString
    PyObject* type_error;                        // PyExc_TypeError
    void* (*save_thread)(void);                  // PyEval_SaveThread
    void (*restore_thread)(void*);               // PyEval_RestoreThread
    void (*incref)(PyObject*);                   // Py_IncRef
    PyObject* none;                              // Py_None
};
static Api api;

extern "C" __attribute__((visibility("default"))) void sk_native_setup(const Api* a) { api = *a; }

typedef void (*cpu_entry_t)(const char*, const char*, int, int);

// self: the entry's address (a Python int); args: packed arguments, bounds, threads, contiguous
extern "C" __attribute__((visibility("default")))
PyObject* sk_cpu_call(PyObject* self, PyObject* const* args, Py_ssize_t nargs) {
    if (nargs != 4) {
        api.err_set_string(api.type_error, "a kernel entry takes 4 arguments (args, bounds, threads, contiguous)");
        return 0;
    }
    cpu_entry_t fn = (cpu_entry_t)api.as_voidptr(self);
    const char* a = api.bytes_as_string(args[0]);
    const char* b = a ? api.bytes_as_string(args[1]) : 0;
    long threads = b ? api.as_long(args[2]) : 0;
    long contiguous = b ? api.as_long(args[3]) : 0;
    if (!a || !b || api.err_occurred()) return 0;
    void* ts = api.save_thread();
    fn(a, b, (int)threads, (int)contiguous);
    api.restore_thread(ts);
    api.incref(api.none);
    return api.none;
}

typedef int (*launch_t)(void*, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, void*,
                        void**, void**);
typedef int (*get_ctx_t)(void**);
typedef int (*set_ctx_t)(void*);

// args: driver table, ctx, func, grid, block, stream, packed arguments, bounds; returns the CUresult
extern "C" __attribute__((visibility("default")))
PyObject* sk_cuda_launch(PyObject* self, PyObject* const* args, Py_ssize_t nargs) {
    if (nargs != 8) {
        api.err_set_string(api.type_error, "sk_cuda_launch takes 8 arguments");
        return 0;
    }
    void* const* driver = (void* const*)api.as_voidptr(args[0]);
    void* ctx = api.as_voidptr(args[1]);
    void* func = api.as_voidptr(args[2]);
    long grid = api.as_long(args[3]);
    long block = api.as_long(args[4]);
    void* stream = api.as_voidptr(args[5]);
    const char* a = api.bytes_as_string(args[6]);
    const char* b = a ? api.bytes_as_string(args[7]) : 0;
    if (!a || !b || api.err_occurred()) return 0;
    if (!driver || grid <= 0 || block <= 0) {
        api.err_set_string(api.type_error, "sk_cuda_launch: no driver table, or an empty grid");
        return 0;
    }
    void* ts = api.save_thread();  // (cuLaunchKernel may wait while the launch queue is full)
    void* current = 0;
    int r = ((get_ctx_t)driver[1])(&current);
    if (r == 0 && current != ctx) r = ((set_ctx_t)driver[2])(ctx);
    if (r == 0) {
        void* params[2] = {(void*)a, (void*)b};  // the driver copies both during the call
        r = ((launch_t)driver[0])(func, (unsigned)grid, 1, 1, (unsigned)block, 1, 1, 0, stream, params, 0);
    }
    api.restore_thread(ts);
    return api.from_long(r);
}
"""

_METH_FASTCALL = 0x0080


class _MethodDef(ctypes.Structure):  # PyMethodDef (stable ABI)
    _fields_ = [("ml_name", ctypes.c_char_p), ("ml_meth", ctypes.c_void_p), ("ml_flags", ctypes.c_int),
                ("ml_doc", ctypes.c_char_p)]


_loaded: list = []  # [(library, api table, {name: method def}, PyCFunction_NewEx)] once built; [None]: unavailable
_lock = threading.Lock()


def build(tag: str = "") -> ctypes.CDLL:
    """Compile (or take from the cache) the library; ``tag`` names a separate copy (tests)."""
    from . import cpu

    key = hashlib.sha256(_SOURCE.encode()).hexdigest()[:16]
    path = os.path.join(cpu.cache_root(), "native", f"native_call_{key}{tag}", "module.so")
    if not os.path.exists(path):
        cpu.build(_SOURCE, path, flags=["-O2", "-shared", "-fPIC", "-w"])
    return ctypes.CDLL(path)


def _load():
    if not _loaded:
        with _lock:
            if not _loaded:
                _build_and_set_up()
    return _loaded[0] if getattr(config, "native_calls", True) else None


def _build_and_set_up() -> None:
    """Build and load the library, hand it the C-API table, describe its functions (under _lock)."""
    try:
        lib = build()
        py = ctypes.pythonapi

        def fn(name):
            return ctypes.cast(getattr(py, name), ctypes.c_void_p).value

        table = (ctypes.c_void_p * 11)(
            fn("PyLong_AsVoidPtr"), fn("PyLong_AsLong"), fn("PyBytes_AsString"), fn("PyLong_FromLong"),
            fn("PyErr_Occurred"), fn("PyErr_SetString"), ctypes.c_void_p.in_dll(py, "PyExc_TypeError").value,
            fn("PyEval_SaveThread"), fn("PyEval_RestoreThread"), fn("Py_IncRef"), id(None))
        lib.sk_native_setup.argtypes = [ctypes.c_void_p]
        lib.sk_native_setup.restype = None
        lib.sk_native_setup(ctypes.addressof(table))
        defs = {name: _MethodDef(name.encode(), ctypes.cast(getattr(lib, name), ctypes.c_void_p).value,
                                 _METH_FASTCALL, None) for name in ("sk_cpu_call", "sk_cuda_launch")}
        new = py.PyCFunction_NewEx
        new.restype = ctypes.py_object
        new.argtypes = [ctypes.c_void_p, ctypes.py_object, ctypes.c_void_p]
        _loaded.append((lib, table, defs, new))
    except Exception:  # noqa: BLE001  (no compiler, no writable cache, not CPython)
        _loaded.append(None)


def _function(name: str, self_obj):
    got = _load()
    if got is None:
        return None
    _lib, _table, defs, new = got
    return new(ctypes.addressof(defs[name]), self_obj, None)  # (the defs live as long as the process)


def cpu_entry(address: int):
    """``f(args, bounds, threads, contiguous)`` calling the CPU kernel entry at ``address``, or None."""
    return _function("sk_cpu_call", int(address))


def cuda_launch():
    """``launch(driver, ctx, func, grid, block, stream, args, bounds) -> CUresult``, or None."""
    return _function("sk_cuda_launch", None)

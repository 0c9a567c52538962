"""The DLPack capsule destructor, compiled: a consumer's pending error survives it.

A consumer that refuses a capsule (numpy given a GPU tensor) frees it with its error still set.
A Python destructor (a ctypes callback) cannot keep that error: every C function it calls, and its
own return, sees the error as its own, so the consumer ends up raising ``SystemError`` instead of
its ``BufferError``. This destructor is built once with the system compiler (like the CPU kernels)
and cached; it puts the error aside, releases the unconsumed export through simkit's deleter, and
puts the error back. Without a compiler the Python destructor stays (only that message suffers).
"""
from __future__ import annotations

import ctypes
import hashlib
import os

_SOURCE = r"""
// simkit: DLPack capsule destructor (no Python headers: the C API functions are passed in)
typedef void (*fetch_t)(void**, void**, void**);
typedef void (*restore_t)(void*, void*, void*);
typedef int (*is_valid_t)(void*, const char*);
typedef void* (*get_pointer_t)(void*, const char*);
typedef void (*release_t)(void*);
static fetch_t fetch_error;
static restore_t restore_error;
static is_valid_t capsule_is_valid;
static get_pointer_t capsule_pointer;
static release_t release_export;

extern "C" __attribute__((visibility("default"))) void sk_dlpack_setup(void* f, void* r, void* v, void* p, void* d) {
    fetch_error = (fetch_t)f;
    restore_error = (restore_t)r;
    capsule_is_valid = (is_valid_t)v;
    capsule_pointer = (get_pointer_t)p;
    release_export = (release_t)d;
}

// an unconsumed capsule still has its first name (consumers rename it, then call the deleter)
extern "C" __attribute__((visibility("default"))) void sk_dlpack_capsule_destructor(void* capsule) {
    void *type = 0, *value = 0, *traceback = 0;
    fetch_error(&type, &value, &traceback);
    static const char* const names[2] = {"dltensor", "dltensor_versioned"};
    for (int k = 0; k < 2; ++k) {
        if (capsule_is_valid(capsule, names[k])) {
            release_export(capsule_pointer(capsule, names[k]));
            break;
        }
    }
    restore_error(type, value, traceback);
}
"""

_resolved: int | None = None
_library = None  # kept loaded for the life of the process (capsules may be freed at exit)


def _build() -> ctypes.CDLL:
    from ..kernels.backends import cpu

    key = hashlib.sha256(_SOURCE.encode()).hexdigest()[:16]
    path = os.path.join(cpu.cache_root(), "native", f"dlpack_destructor_{key}", "module.so")
    if not os.path.exists(path):
        cpu.build(_SOURCE, path, flags=["-O2", "-shared", "-fPIC", "-w"])
    return ctypes.CDLL(path)


def capsule_destructor(release: int, fallback: int) -> int:
    """The address of the destructor for new capsules: the compiled one, which calls ``release``
    (the address of a ``void(void*)`` callback) with an unconsumed capsule's managed tensor, or
    ``fallback`` where nothing can be compiled."""
    global _resolved, _library
    if _resolved is None:
        try:
            lib = _build()
            api = ctypes.pythonapi
            c_api = [ctypes.cast(getattr(api, n), ctypes.c_void_p).value
                     for n in ("PyErr_Fetch", "PyErr_Restore", "PyCapsule_IsValid", "PyCapsule_GetPointer")]
            setup = lib.sk_dlpack_setup
            setup.argtypes = [ctypes.c_void_p] * 5
            setup.restype = None
            setup(*c_api, release)
            _library = lib
            _resolved = ctypes.cast(lib.sk_dlpack_capsule_destructor, ctypes.c_void_p).value
        except Exception:  # noqa: BLE001  (no compiler, or no writable cache: the Python destructor)
            _resolved = fallback
    return _resolved

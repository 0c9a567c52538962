"""The lock of kernel translation: building a kernel's IR (and its @funcs', shared by every kernel that calls
them) and generating a unit's source are done by one thread at a time. Launches from several threads, and
``force_load``'s threads, would otherwise interleave their changes to the shared @func state (a kernel then
failed to translate: "@func 'f' calls itself"). Native compiles (the C++ compiler, NVRTC) run outside it where
they can (``Module.prebuild``). Reentrant: a build may start another (a @func's IR, a recording variant)."""
import threading

compile_lock = threading.RLock()

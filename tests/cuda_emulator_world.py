"""An emulated GPU swapped in and out of the process (tests/cuda_emulator.py is the GPU itself).

:class:`EmulatedWorld` swaps the emulator in and out of the driver, stream and device modules (with the kernels'
units loaded for its architecture), so one emulated GPU can persist across tests while other tests still see a
machine without one; :func:`shared_world` is the test session's.
"""
from __future__ import annotations

import re

from cuda_emulator import FakeDriver

from simkit.kernels import module as kmodule
from simkit.kernels.backends.cuda import driver
from simkit.kernels.backends.cuda import module as cmodule
from simkit.kernels.backends.cuda import stream as cstream
from simkit.runtime import device as devmod


_WORLD = [(driver, "_api"), (driver, "_init_done"), (driver, "_init_error"), (driver, "_devices"),
          (driver, "_states"), (cstream, "_default_streams"), (cstream, "_null_streams"), (cstream, "_captures"),
          (devmod, "_cuda_devices"), (devmod, "_default"), (cmodule, "_image_for")]


def _take_native(arch: str) -> dict:
    """Remove (and return) every kernel's loaded units for ``arch`` (forward and adjoint, and the recording variants
    of deterministic mode: Module.load_recording), each with the translation it was compiled from."""
    taken = {}
    for m in list(kmodule._modules.values()):
        for k in m.kernels:
            for s in k.specs.values():
                for where, units in (("native", s.native), ("recording", s.__dict__.get("_recording", {}))):
                    for kind in [kd for kd in units if re.split(r"[:/]", kd)[0] == arch]:
                        taken[(id(s), where, kind)] = (s, units.pop(kind), s.ir)
    return taken


def _put_native(taken: dict) -> None:
    """Give the kernels back the units :func:`_take_native` took, except those of a kernel translated again since
    (``mark_modified``, ``set_module_options``, a redefined @func: its next launch compiles it anew, as on a GPU)."""
    for (_sid, where, kind), (spec, native, ir) in taken.items():
        if spec.ir is ir:
            (spec.native if where == "native" else spec.__dict__.setdefault("_recording", {}))[kind] = native


class EmulatedWorld:
    """The driver-level state of a process whose GPUs are ``fake``'s: entered, it replaces the real state
    (devices, contexts, streams, loaded kernels of ``fake.arch``); left, it keeps its own for the next entry."""

    def __init__(self, fake: FakeDriver):
        self.fake = fake
        self.values = [fake, False, None, None, {}, {}, {}, {}, None, None, fake.image_for]
        self.native: dict = {}
        self.saved = None

    def __enter__(self) -> FakeDriver:
        assert self.saved is None, "an EmulatedWorld is not reentrant"
        self.saved = ([getattr(m, n) for m, n in _WORLD], _take_native(self.fake.arch))
        for (m, n), v in zip(_WORLD, self.values):
            setattr(m, n, v)
        _put_native(self.native)
        return self.fake

    def __exit__(self, *exc):
        self.values = [getattr(m, n) for m, n in _WORLD]
        self.native = _take_native(self.fake.arch)
        values, native = self.saved
        for (m, n), v in zip(_WORLD, values):
            setattr(m, n, v)
        _put_native(native)
        self.saved = None

    def close(self) -> None:
        """Release what the emulated devices hold (call while entered)."""
        for st in list(driver._states.values()):
            st.current = None
            st.scratch.clear()
        cstream._default_streams.clear()
        cstream._null_streams.clear()


_shared: EmulatedWorld | None = None


def shared_world() -> EmulatedWorld:
    """The test session's emulated GPU (conftest's ``cuda_emulated_world``, and the loading of warp-lang's CUDA tests
    in tests/warp_unittests_gpu.py): one sm_90 GPU whose SMs hold 64 threads, running each launch's threads last to
    first through simkit's native (C) launch."""
    global _shared
    if _shared is None:
        _shared = EmulatedWorld(FakeDriver(ndev=1, arch="sm_90", reverse_threads=True, native_launch=True,
                                           resident_threads=64))
    return _shared

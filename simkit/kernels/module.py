"""Modules: kernels grouped by Python module, compiled together, cached on disk.

On the first launch of a kernel, every not-yet-compiled kernel of its Python
module is translated and compiled into one library (one C++ compile serves the
whole file). The cache key is a SHA-256 of the generated source (which spells
out every referenced func, struct, constant and static value), the compile
options, the simkit version, the code generator's own source and the target
(compiler + CPU, or GPU architecture). It is stable across processes.
"""
from __future__ import annotations

import hashlib
import os
import weakref

import numpy as np

from .. import config
from ..version import __version__
from . import codegen, registry
from .deterministic import DeterministicMode, check_mode
from .compile_lock import compile_lock
from .errors import CompileError, NativeCompileError

_modules: dict = {}
_generator_hash: str | None = None


def get_module(name: str) -> Module:
    m = _modules.get(name)
    if m is None:
        m = _modules[name] = Module(name)
    return m


#: Warp's per-module options that simkit honours (``set_module_options``)
MODULE_OPTIONS = ("enable_backward", "max_unroll", "deterministic", "optimization_level")
#: Warp's options accepted without effect: simkit never compiles with fast math (results stay IEEE), and
#: its generated code always keeps the Python line of each statement; ``deterministic_max_records`` sizes
#: Warp's records of deterministic atomics, which simkit's ordered launches do without (deterministic.py)
IGNORED_OPTIONS = ("fast_math", "lineinfo", "deterministic_max_records")


def _module_name(module, depth: int = 2) -> str:
    """A module's name: ``module`` (a name or a module object) or, for None, the caller's module."""
    if module is None:
        import sys

        return sys._getframe(depth).f_globals.get("__name__", "__main__")
    if isinstance(module, Module):
        return module.name
    return module if isinstance(module, str) else module.__name__


def set_module_options(options: dict, module=None) -> None:
    """Options for the kernels of ``module`` (default: the calling module), as in Warp:
    ``enable_backward`` (False: its kernels have no adjoint; a backward pass through one raises),
    ``max_unroll`` (static loops of at most this many iterations are unrolled) and ``deterministic`` (a
    ``DeterministicMode``; unset: ``config.deterministic``, read at each launch) and ``optimization_level`` (0-3;
    unset: ``config.optimization_level``: the native compilers' -O level). Its kernels compile with
    them at their next load. ``fast_math``, ``lineinfo`` and ``deterministic_max_records`` are accepted and
    change nothing."""
    check_options(options, "set_module_options")
    m = get_module(_module_name(module))
    changed = any(m.options.get(k) != v for k, v in options.items())
    m.options.update(options)
    if changed:  # its kernels compiled with the old options are compiled again at their next launch
        m.mark_modified()


def check_options(options: dict, who: str) -> None:
    """Refuse module options simkit does not know, or a bad ``max_unroll``."""
    unknown = sorted(set(options) - set(MODULE_OPTIONS) - set(IGNORED_OPTIONS))
    if unknown:
        raise ValueError(f"{who}: simkit takes {', '.join(MODULE_OPTIONS)} (and accepts "
                         f"{', '.join(IGNORED_OPTIONS)}, without effect); not {', '.join(unknown)}. "
                         f"Valid options are: {', '.join(MODULE_OPTIONS + IGNORED_OPTIONS)}")
    if "max_unroll" in options:
        n = options["max_unroll"]
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 0:
            raise ValueError(f"{who}: max_unroll must be an int >= 0, got {n!r}")
        options["max_unroll"] = int(n)
    if "deterministic" in options:
        check_mode(options["deterministic"], who)
    if options.get("optimization_level") is not None:
        n = options["optimization_level"]
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or not 0 <= n <= 3:
            raise ValueError(f"{who}: optimization_level must be None or an int from 0 to 3, got {n!r}")
        options["optimization_level"] = int(n)
    if "deterministic_max_records" in options:
        n = options["deterministic_max_records"]
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
            raise TypeError(f"{who}: deterministic_max_records must be an int >= 0, got {n!r}")
        if n < 0:
            raise ValueError(f"{who}: deterministic_max_records must be an int >= 0, got {n!r}")


def check_module_options(options, module, who: str) -> None:
    """``module_options`` of a kernel decorator, as Warp: a dict, for a ``module="unique"`` kernel only."""
    if options is None:
        return
    if not isinstance(options, dict):
        raise TypeError(f"{who}: module_options must be a dict, got {type(options).__name__}")
    if module != "unique":
        raise ValueError(f"{who}: module_options requires module=\"unique\" (a module of the kernel's own); set "
                         f"the options of a shared module with simkit.set_module_options")
    check_options(options, f"{who} module_options")


def get_module_options(module=None) -> dict:
    """The options of ``module`` (default: the calling module): those set with ``set_module_options``, and
    ``deterministic`` (``config.deterministic`` unless set)."""
    return {"deterministic": DeterministicMode(config.deterministic), **get_module(_module_name(module)).options}


def generator_hash() -> str:
    """Hash of the compiler's own Python sources and native headers (and registered headers)."""
    global _generator_hash
    if _generator_hash is None:
        here = os.path.dirname(os.path.abspath(__file__))
        h = hashlib.sha256()
        paths = []
        for root, _dirs, files in os.walk(here):
            for f in files:
                if f.endswith((".py", ".h")):
                    paths.append(os.path.join(root, f))
        paths += registry.headers()
        for p in sorted(paths):
            h.update(p[len(here):].encode() if p.startswith(here) else p.encode())
            with open(p, "rb") as fh:
                h.update(fh.read())
        _generator_hash = h.hexdigest()
    return _generator_hash


def native_key(device, adjoint: bool) -> str:
    """Key of a loaded entry point: device kind, forward/adjoint, build mode."""
    return (device.kind + (":bwd" if adjoint else "")
            + ("/debug" if config.mode == "debug" else ""))


def compile_options() -> dict:
    return {"mode": config.mode, "max_unroll": config.max_unroll, "shortcuts": config.adjoint_shortcuts}


def collect(specs) -> tuple[list, list]:
    """Funcs (callees before callers) and structs (dependencies first) used by these kernels."""
    funcs, structs, seen = [], [], set()

    def visit(fn_ir):
        for t in fn_ir.structs:
            if t not in structs:
                structs.append(t)
        for f in fn_ir.funcs:
            if id(f) in seen:
                continue
            seen.add(id(f))
            visit(f.ir)
            funcs.append(f.ir)
            for extra in (f.grad_ir, f.replay_ir):  # custom adjoint / replay functions
                if extra is not None:
                    visit(extra)
                    funcs.append(extra)

    for s in specs:
        visit(s.ir)
    return funcs, structs


class Unit:
    """One compiled library: the kernels it holds, per device kind."""

    def __init__(self, key: str, library, specs, device_kind: str):
        self.key = key
        self.library = library
        self.specs = specs
        self.device_kind = device_kind


class Module:
    """The kernels compiled together (one library per device): by default those of one Python module. As in Warp,
    ``sk.Module("name")`` makes one that kernels join with ``@sk.kernel(module=m)``, and ``sk.get_module(name)``
    finds one by name."""

    def __init__(self, name: str, loader=None):
        self.name = name
        _modules.setdefault(name, self)  # (the first of a name is the one get_module finds)
        self._kernels: dict = {}  # id -> weak reference: a kernel nobody holds leaves its module
        # kernels defined at a module's top level stay (as long as their Python module does): Warp's
        # ``@overload`` stubs replace a generic kernel's name with a plain function and look it up here
        self._top_level: list = []
        # set_module_options (Warp's defaults listed)
        self.options: dict = {"enable_backward": True, "optimization_level": None}

    @property
    def kernels(self) -> list:
        """The live kernels of this module, in the order they were defined."""
        return [k for k in (r() for r in list(self._kernels.values())) if k is not None]

    def add_kernel(self, k):
        kid, table = id(k), self._kernels

        def gone(ref):
            if table.get(kid) is ref:
                del table[kid]

        table[kid] = weakref.ref(k, gone)
        func = getattr(k, "func", None)
        if func is not None and "<locals>" not in getattr(func, "__qualname__", "<locals>"):
            self._top_level.append(k)

    def mark_modified(self) -> None:
        """Compile this module's kernels again at their next launch, reading again the values they use
        (closure variables, globals, ``set_module_options``), as Warp's ``Module.mark_modified``. Launches
        recorded before keep the code they were recorded with."""
        for k in self.kernels:
            _refresh_closure(getattr(k, "_src", None))
            for s in k.specs.values():
                if s.ir is not None:
                    for f in _functions_used(s.ir):
                        f.function.specs.clear()
                        for _pyfunc, _types, src in f.function.overloads:
                            _refresh_closure(src)
                _reset(s)

    def invalidate_pending(self):
        """A new kernel specialisation appeared; it is compiled on its first launch."""

    def pending(self, kind: str):
        return [s for k in self.kernels for s in k.specs.values() if kind not in s.native]

    def load(self, device=None, block_dim=None) -> None:
        """Compile (or fetch from the cache) this module's kernels for ``device`` now (Warp's ``Module.load``):
        the non-generic kernels and the specialisations made so far. ``block_dim`` changes nothing."""
        from .backends.cuda.driver import resolve_device  # (the runtime's get_device: this layer may not import it)

        dev = resolve_device(device)
        pending = self.pending(native_key(dev, False))
        if pending:
            self.load_spec(pending[0], dev)  # one unit holds every pending kernel of the module

    def unload(self) -> None:
        """Forget the loaded code of this module's kernels (Warp's ``Module.unload``): their next launch loads it
        again (from the cache). Graphs captured before keep the code they captured."""
        for k in self.kernels:
            for s in k.specs.values():
                s.native = {}

    def compile_options(self) -> dict:
        options = compile_options()
        if "max_unroll" in self.options:
            options["max_unroll"] = self.options["max_unroll"]
        if self.options.get("optimization_level") is not None:
            options["optimization_level"] = self.options["optimization_level"]
        return options

    def spec_source(self, spec, adjoint: bool = False, det_plan=None) -> str:
        """The C++/CUDA source of a unit holding ``spec`` alone, forward or adjoint (a launch compiles it with the
        module's other pending kernels; each kernel's code is the same). ``det_plan``: the recording variant of
        the forward kernel (deterministic.record_plan), one launch index per CUDA thread (not interleaved); with
        ``adjoint``, any true value: the recording variant of its backward kernel (native/det_grad.h)."""
        with compile_lock:
            options = self.compile_options()
            spec.build_ir(options)
            funcs, structs = collect([spec])
            fn = spec.ir
            if det_plan is not None and adjoint:
                options = {**options, "det_grad": True}
            elif det_plan is not None:
                import copy

                fn = copy.copy(spec.ir)
                fn.ordered = True  # (kernels/interleave.py)
                options = {**options, "det_plan": det_plan}
            return codegen.gen_module(self.name, [fn], funcs, structs, options, __version__, adjoint=adjoint)

    def load_recording(self, spec, device, plan, adjoint: bool = False) -> tuple:
        """(entry, unit) of the recording variant of ``spec`` on CUDA ``device``: its order-dependent atomics (the
        backward kernel's, ``adjoint``: its shared gradient accumulations) write their contributions into slots
        (deterministic.record_plan, native/det_record.h and det_grad.h). Built once per device."""
        with compile_lock:
            return self._load_recording(spec, device, plan, adjoint)

    def _load_recording(self, spec, device, plan, adjoint: bool) -> tuple:
        recordings = spec.__dict__.setdefault("_recording", {})
        key = native_key(device, adjoint)
        if key not in recordings:
            from types import SimpleNamespace

            from .backends.cuda import module as cuda_module

            source = self.spec_source(spec, adjoint=adjoint, det_plan=plan)
            info = SimpleNamespace(cname=spec.cname, may_error=spec.may_error, ir=None)  # (ir None: not interleaved)
            unit = cuda_module.load_unit(source, self.name + ".det", device, [info], self.compile_options())
            recordings[key] = (unit.entry(spec.cname, "bwd" if adjoint else "fwd"), unit)
        return recordings[key]

    def load_spec(self, spec, device, adjoint: bool = False) -> None:
        """Compile (or fetch from cache) the unit holding ``spec`` for ``device``.

        Forward and adjoint code live in separate units: the adjoint unit is built on
        the first backward pass, so forward-only users never pay for it.
        """
        kind = native_key(device, adjoint)
        if kind in spec.native:
            return
        with compile_lock:  # (kernels/compile_lock.py)
            if kind in spec.native:  # (another thread loaded it meanwhile)
                return
            options = self.compile_options()
            specs = self._unit_specs(spec, kind, options)
            try:
                self._build(specs, device, kind, options, adjoint)
            except NativeCompileError:
                # from now on these build only at their own launch (with the module's kernels not under suspicion):
                # else each launch of a sibling would build the broken unit again
                for s in specs:
                    _suspect(s, kind)
                if len(specs) == 1:
                    raise
                self._build([spec], device, kind, options, adjoint)  # isolate: another kernel may break the unit

    def _unit_specs(self, spec, kind: str, options: dict) -> list:
        """The kernels one unit compiles with ``spec``: every pending kernel of this module whose IR builds (a
        broken one reports its error when it is launched; ``spec`` broken raises here)."""
        specs = []
        for s in self.pending(kind):
            if s is not spec and kind in s.__dict__.get("_suspect", ()):
                continue  # (it was in a unit that failed to compile: built at its own launch)
            try:
                s.build_ir(options)
                specs.append(s)
            except CompileError:
                if s is spec:
                    raise  # the kernel being launched is the broken one
        if spec not in specs:  # pragma: no cover - defensive
            spec.build_ir(options)
            specs.append(spec)
        return specs

    def _unit_source(self, specs, options: dict, adjoint: bool) -> str:
        funcs, structs = collect(specs)
        return codegen.gen_module(self.name, [s.ir for s in specs], funcs, structs, options, __version__,
                                  adjoint=adjoint)

    def prebuild(self, device):
        """A function compiling what :meth:`load` would compile for ``device`` into the disk cache, and nothing
        else: it runs the compiler only (C++ or NVRTC), so threads can run several at once (``force_load``);
        ``load`` then finds the library cached. None when nothing is pending or the pending kernels do not
        translate (``load`` raises their error)."""
        kind = native_key(device, False)
        with compile_lock:
            pending = self.pending(kind)
            if not pending:
                return None
            options = self.compile_options()
            try:
                source = self._unit_source(self._unit_specs(pending[0], kind, options), options, False)
            except CompileError:
                return None
        name, level = self.name, options.get("optimization_level")
        if device.is_cpu:
            from .backends import cpu

            return lambda: cpu.precompile(source, _cpu_key(source, options), _unit_name(name), level)
        from .backends.cuda import module as cuda_module

        target = cuda_module.device_target(device)
        return lambda: cuda_module.precompile(source, name, target, level)

    def _build(self, specs, device, kind, options, adjoint):
        source = self._unit_source(specs, options, adjoint)
        which = "bwd" if adjoint else "fwd"
        name = self.name + (".adj" if adjoint else "")
        if device.is_cpu:
            from .backends import cpu

            key = _cpu_key(source, options)
            lib = cpu.load_or_build(source, key, _unit_name(name), options.get("optimization_level"))
            unit = Unit(key, lib, specs, kind)
            for s in specs:
                s.native[kind] = (lib.entry(f"{s.cname}_cpu_{which}"), unit)
            if config.verify_cuda and not adjoint:
                verify_cuda(source, self.name)
                differentiable = [s for s in specs if s.kernel.enable_backward is not False]
                if differentiable:  # kernels declared enable_backward=False never get an adjoint
                    verify_cuda(self._unit_source(differentiable, options, True), self.name + ".adj")
        else:
            from .backends.cuda import module as cuda_module

            unit = cuda_module.load_unit(source, name, device, specs, options)
            for s in specs:
                s.native[kind] = (unit.entry(s.cname, which), unit)
        return unit


def _cpu_key(source: str, options: dict) -> str:
    """The cache key of a CPU unit: its source, options, simkit's version and code generator, the compiler, its
    optimisation flags and the CPU."""
    from .backends import cpu

    return hashlib.sha256("\0".join([source, repr(sorted(options.items())), __version__, generator_hash(),
                                      cpu.identity(), *cpu.opt_flags(options.get("optimization_level"))]
                                     ).encode()).hexdigest()


def _refresh_closure(src) -> None:
    """A kept SourceInfo's closure values read again (they were read when it was made)."""
    if src is not None:
        src.read_closure()


def _stale_closure(src) -> None:
    """A kept SourceInfo's closure values read again before its next build (a redefinition is bound to its
    name only after its decorator returns)."""
    if src is not None:
        src.stale = True


def _functions_used(fn_ir, found=None) -> list:
    """The FuncSpecs a built kernel or function calls, directly or not."""
    found = {} if found is None else found
    for f in fn_ir.funcs:
        if id(f) not in found:
            found[id(f)] = f
            for sub in (f.ir, f.grad_ir, f.replay_ir):
                if sub is not None:
                    _functions_used(sub, found)
    return list(found.values())


def _suspect(spec, kind: str) -> None:
    """``spec`` was in a unit of ``kind`` that failed to compile: other kernels' units leave it out."""
    spec.__dict__.setdefault("_suspect", set()).add(kind)


def _reset(spec) -> None:
    """Forget a kernel specialisation's translation and native code: its next launch builds it again."""
    spec.ir = None
    spec.native = {}
    for derived in ("_access", "_order", "_bump_steps", "_rec_plan", "_record", "_recording", "_suspect"):  # (derived)
        spec.__dict__.pop(derived, None)


def invalidate_users(function) -> None:
    """``function`` (a @func) was redefined, or gained an overload: every kernel built with it is built
    again at its next launch, its names resolving anew (a kernel never runs a replaced body; an alias that
    still holds the old @func keeps its body), and so is every @func built calling it."""
    memo: dict = {}

    def uses(f) -> bool:  # f: a FuncSpec
        if id(f) not in memo:
            memo[id(f)] = False  # (recursion guard)
            subs = [x for x in (f.ir, f.grad_ir, f.replay_ir) if x is not None]
            memo[id(f)] = f.function is function or any(uses(g) for x in subs for g in x.funcs)
        return memo[id(f)]

    for m in list(_modules.values()):
        for k in m.kernels:
            for s in k.specs.values():
                used = _functions_used(s.ir) if s.ir is not None else []
                if any(uses(f) for f in used):
                    _stale_closure(getattr(k, "_src", None))  # (the new definition may be a closure's)
                    for f in used:
                        if f.function is not function and uses(f):
                            f.function.specs.clear()  # (a caller of it: built again, calling the new one)
                            for _pyfunc, _types, src in f.function.overloads:
                                _stale_closure(src)
                    _reset(s)


def _unit_name(name: str) -> str:
    return "".join(c if c.isalnum() or c in "._-" else "_" for c in name)


def verify_cuda(source: str, name: str) -> None:
    """Check a unit's source with NVRTC for each of ``config.verify_cuda_archs`` (no GPU needed).

    Batched, in a worker process or between the tests (backends/cuda/verify.py); ``verify.wait()``
    collects the results.
    """
    from .backends.cuda import verify

    verify.verify_async(source, config.verify_cuda_archs, name)

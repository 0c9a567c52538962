"""User-facing decorators: ``@kernel``, ``@func``, ``constant``, ``static``.

Example::

    import simkit as sk

    @sk.func
    def square(x: float):
        return x * x

    @sk.kernel
    def k(a: sk.array(dtype=float), out: sk.array(dtype=float)):
        i = sk.tid()
        out[i] = square(a[i])
"""
from __future__ import annotations

import copy
import hashlib
import inspect
import sys

from . import types as T
from .compile_lock import compile_lock
from .fixed_arrays import param_type
from .frontend import SourceInfo, build
from .frontend.builder import Py, TupleValue
from .frontend.funcargs import FunctionArg, bind_function_arg, describe_arg, mismatch_hint
from .frontend.statics import declare as declare_statics
from .refs import Reference, ref_params, writes_back


def _annotations(pyfunc) -> dict:
    """Parameter annotations, evaluating string annotations in the function's scope."""
    sig = inspect.signature(pyfunc)
    scope = dict(pyfunc.__globals__)
    if pyfunc.__closure__:
        for name, cell in zip(pyfunc.__code__.co_freevars, pyfunc.__closure__):
            try:
                scope[name] = cell.cell_contents
            except ValueError:
                pass
    out = {}
    for name, p in sig.parameters.items():
        ann = p.annotation
        if ann is inspect.Parameter.empty:
            out[name] = None
            continue
        if isinstance(ann, str):
            try:
                ann = eval(ann, scope)  # noqa: S307 - annotations are the user's own code
            except Exception as e:
                raise TypeError(f"cannot evaluate annotation of '{name}' in '{pyfunc.__qualname__}': {e}") from None
        out[name] = ann
    return out


def _param_types(pyfunc, *, required: bool) -> dict:
    types = {}
    for name, ann in _annotations(pyfunc).items():
        if ann is None:
            if required:
                from .errors import CompileError

                src = SourceInfo(pyfunc)
                raise CompileError(f"kernel parameter '{name}' needs a type annotation", src.filename,
                                   src.first_line, 0, src.lines[0] if src.lines else "",
                                   function=pyfunc.__qualname__)
            types[name] = T.Any
            continue
        try:
            if ann is Function:  # a function value (frontend/funcargs.py): a compile-time constant of @funcs
                if required:
                    raise TypeError("kernel parameters cannot be Functions (a function is a compile-time "
                                    "constant): call the @func in the kernel, or pass it to a @func parameter")
                types[name] = Function
                continue
            if isinstance(ann, Reference):  # ref[T]: the value type (ref-ness: _ref_names)
                if required:
                    raise TypeError("kernel parameters cannot be ref[T]; pass an array and write its elements")
                ann = ann.dtype
            types[name] = T.as_kernel_type(ann)
            if required and isinstance(types[name], T.LocalArrayType):
                raise TypeError("kernel parameters cannot be fixed-size arrays (they are made in kernels); "
                                "pass an array")
            if required and isinstance(types[name], T.TupleType):
                raise TypeError(f"kernel parameters cannot be tuples ({T.type_name(types[name])}); pass "
                                f"the values as separate parameters, or to a @func")
        except TypeError as e:
            from .errors import CompileError

            src = SourceInfo(pyfunc)
            raise CompileError(f"parameter '{name}': {e}", src.filename, src.first_line, 0,
                               function=pyfunc.__qualname__) from None
    return types


def _ref_names(pyfunc) -> list:
    """The parameters of ``pyfunc`` annotated ``ref[T]`` (refs.py)."""
    return ref_params(_annotations(pyfunc))


_instances: dict = {}


def instance_index(pyfunc) -> int:
    """How many kernels/funcs with this module+qualname were created before (closures made in a loop).

    Part of generated C++ names, so that two closures of one qualname never clash,
    while names stay stable across processes that create them in the same order.
    """
    key = (pyfunc.__module__, pyfunc.__qualname__)
    n = _instances.get(key, 0)
    _instances[key] = n + 1
    return n


def stable_hash(*parts) -> str:
    h = hashlib.sha256()
    for p in parts:
        h.update(repr(p).encode())
        h.update(b"\0")
    return h.hexdigest()


def _sanitize(name: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in name)


# ---------------------------------------------------------------------------
# Kernels


class KernelSpec:
    """One concrete specialisation of a kernel (fixed parameter types)."""

    def __init__(self, kernel: Kernel, param_types: dict):
        self.kernel = kernel
        self.param_types = param_types
        self.types = tuple(param_types.values())
        tag = stable_hash(kernel.func.__module__, kernel.func.__qualname__, kernel.instance,
                          [T.type_name(t) for t in self.types])[:8]
        self.cname = f"{_sanitize(kernel.key)}_{tag}"
        self.ir = None
        self.unit = None  # the loaded compile unit (per device)
        self.native = {}  # device alias -> native entry handles
        self.layout = arg_layout(self.types)
        self.has_arrays = any(_contains_array(t) for t in self.types)
        self.packer = None  # runtime fast argument packer, built on first launch
        self.may_error = False  # can report errors without debug mode (expect_*)
        # line of its first atomic whose effect depends on the order of threads (deterministic.py), or None
        self.ordered_atomic = None
        # line where its adjoint would need an atomic's returned value, which its replay lacks (activity.py)
        self.unreplayed_atomic = None
        self.writes = True  # writes arrays (refined once the IR is built)

    def build_ir(self, options: dict):
        if self.ir is None:
            with compile_lock:  # (kernels/compile_lock.py)
                return self._build_ir(options)
        return self.ir

    def _build_ir(self, options: dict):
        if self.ir is None:
            if "max_unroll" in self.kernel.options:
                options = {**options, "max_unroll": self.kernel.options["max_unroll"]}
            options = {**options, "differentiable": self.kernel.enable_backward is not False}
            self.ir = build(self.kernel.func, self.param_types, is_kernel=True, name=self.cname,
                            options=options, src=self.kernel.source())
            self.ir.inline_body = self.kernel.inline_body
            from .analysis import analyze, may_report_errors

            self.writes = bool(analyze(self.ir).writes)
            self.may_error = may_report_errors(self.ir)
            from .activity import unreplayed_atomic
            from .deterministic import mode_of, ordered_atomic

            self.ordered_atomic = ordered_atomic(self.ir)
            self.unreplayed_atomic = unreplayed_atomic(self.ir) if options["differentiable"] else None
            # launched in index order: keep one launch index per CUDA thread (interleave.py)
            self.ir.ordered = self.ordered_atomic is not None and mode_of(self.kernel) != 0
        return self.ir


def _contains_array(t) -> bool:
    if isinstance(t, T.ArrayType):
        return True
    if T.is_struct(t):
        return any(_contains_array(f) for f in t._simkit_struct.fields.values())
    return False


def arg_layout(types) -> tuple:
    """(offsets, total size) of a C++ struct holding these types in order."""
    off, offsets, align_max = 0, [], 1
    for t in types:
        a = T.alignof(t)
        align_max = max(align_max, a)
        off = (off + a - 1) // a * a
        offsets.append(off)
        off += T.sizeof(t)
    off += 1  # the trailing `char _sk_empty` member
    size = (off + align_max - 1) // align_max * align_max
    return tuple(offsets), size


class Kernel:
    """A compiled-on-demand kernel. Launch it with ``simkit.launch``."""

    def __init__(self, func, key: str | None = None, module: str | None = None, options: dict | None = None, *,
                 enable_backward: bool | None = None, module_options: dict | None = None,
                 _inline_body: bool = False, _parallel_min: int | None = None, _src=None):
        from .module import check_options, get_module

        pyfunc = func
        self.func = pyfunc
        self.key = key or pyfunc.__name__
        self.__name__ = self.key
        self.__doc__ = pyfunc.__doc__
        self._enable_backward = enable_backward
        # internal: force the body inline into the CPU thread loop (large straight-line kernels that gcc
        # would call once per thread; see docs/internals.md). It changes the generated C++, so the cache key.
        self.inline_body = bool(_inline_body)
        # internal: on the CPU, launches of at least this many threads run on several threads (default:
        # config.cpu_parallel_min). 1 for kernels whose few threads each carry a large task.
        self.parallel_min = _parallel_min
        self.launch_bounds = None  # Warp's launch_bounds hint (the occupancy query's limit; runtime/cuda_utils.py)
        self.instance = instance_index(pyfunc)
        self.param_types = _param_types(pyfunc, required=True)
        self.param_names = list(self.param_types)
        self.generic = any(T.is_generic(t) for t in self.param_types.values())
        self.specs: dict = {}
        self._by_signature: dict = {}   # a launch's argument signature -> spec (runtime/launch.py)
        from .sources import remember

        remember(pyfunc)  # (its file's lines as they are now: read when it is built)
        self._src = _src or declare_statics(pyfunc)  # static(...) is evaluated now, once (frontend/statics.py)
        from .module import Module

        if module == "unique":  # as in Warp: a module of its own (its own options, compiled alone)
            module = f"{pyfunc.__module__}.{_sanitize(pyfunc.__qualname__)}.unique{self.instance}"
        elif module is not None and not isinstance(module, (str, Module)):
            module = module.__name__
        self.module = module if isinstance(module, Module) else get_module(module or pyfunc.__module__)
        # options of this kernel alone (``enable_backward``, ``max_unroll``), over its module's
        self.options = dict(options or {})
        check_options(self.options, f"kernel '{self.key}' options")
        if module_options:
            check_options(module_options, f"kernel '{self.key}' module_options")
            self.module.options.update(module_options)
        self.module.add_kernel(self)
        if not self.generic:
            self.specs[None] = KernelSpec(self, self.param_types)

    def source(self) -> SourceInfo:
        if self._src is None:
            from .sources import source_info

            self._src = source_info(self.func)  # (the lines of its file as they were at its definition)
        elif self._src.stale:
            self._src.read_closure()
        return self._src

    @property
    def is_generic(self) -> bool:
        """Warp's name: a parameter is generic (``Any``); each launch's argument types pick a specialisation."""
        return self.generic

    @property
    def overloads(self) -> dict:
        """The specialisations of a generic kernel made so far, by argument types (Warp's name)."""
        return {t: s for t, s in self.specs.items() if t is not None}

    @property
    def enable_backward(self) -> bool | None:
        """False: no adjoint (the decorator's ``enable_backward``, else its module's option)."""
        if self._enable_backward is not None:
            return self._enable_backward
        return self.options.get("enable_backward", self.module.options.get("enable_backward"))

    def spec_for(self, arg_types: tuple | None) -> KernelSpec:
        """The specialisation for these concrete argument types (generic kernels)."""
        if not self.generic:
            return self.specs[None]
        spec = self.specs.get(arg_types)
        if spec is None:
            types = dict(zip(self.param_names, arg_types))
            spec = KernelSpec(self, types)
            self.specs[arg_types] = spec
            self.module.invalidate_pending()
        return spec

    def add_overload(self, arg_types) -> Kernel:
        """Warp's ``Kernel.add_overload``: this generic kernel's specialisation for ``arg_types`` (a list, one type
        per parameter), as a kernel of its own with those concrete parameter types (a concrete kernel: itself)."""
        if len(arg_types) != len(self.param_types):
            raise RuntimeError(f"Invalid number of arguments for kernel {self.key}: {len(arg_types)} types for "
                               f"{len(self.param_types)} parameters")
        if not self.generic:
            return self
        overload(self, list(arg_types))
        types = tuple(T.as_kernel_type(t) for t in arg_types)
        k = copy.copy(self)
        k.param_types, k.generic = dict(zip(self.param_names, types)), False
        k.specs, k._by_signature = {None: self.spec_for(types)}, {}
        return k

    def __call__(self, *args, **kwargs):
        raise TypeError(f"kernel '{self.key}' cannot be called directly; use simkit.launch({self.key}, dim, "
                        f"inputs=[...])")

    def __repr__(self):
        return f"<simkit.Kernel {self.key}>"


#: Warp's kernel decorator hints that change no result here: ``launch_bounds`` (a CUDA register hint)
#: and ``grid_stride`` (simkit's GPU kernels always loop over launches larger than their grid)
_KERNEL_HINTS = ("launch_bounds", "grid_stride")


def kernel(f=None, *, key: str | None = None, module=None, enable_backward: bool | None = None,
           module_options: dict | None = None, name: str | None = None, _inline_body: bool = False,
           _parallel_min: int | None = None, **hints):
    """Decorate a Python function as a kernel (typed parameters, launched over a grid).

    ``module="unique"`` gives the kernel a module of its own; ``module_options`` (with ``module="unique"``
    only) sets that module's options (as ``set_module_options``). ``name``: Warp's spelling of ``key``.
    A definition met again with the same code and the same values around it (a kernel made in a loop or a
    factory) returns the kernel made the first time (simkit/kernels/identity.py)."""
    unknown = sorted(set(hints) - set(_KERNEL_HINTS))
    if unknown:
        raise TypeError(f"kernel() got unsupported option(s) {', '.join(unknown)} (simkit takes key, module, "
                        f"enable_backward, module_options; {', '.join(_KERNEL_HINTS)} are accepted as hints)")
    from .module import check_module_options

    check_module_options(module_options, module, "kernel()")
    opts = dict(key=key or name, module=module, module_options=module_options, enable_backward=enable_backward,
                _inline_body=_inline_body, _parallel_min=_parallel_min)
    if f is None:
        return lambda g: _make_kernel(g, opts, hints)
    return _make_kernel(f, opts, hints)


def _make_kernel(f, opts: dict, hints: dict) -> Kernel:
    """A new Kernel, or the live one made by an identical definition (see ``kernel``)."""
    from . import identity

    src = declare_statics(f)  # static(...) is evaluated now, once (frontend/statics.py)
    key = None
    if opts["module"] == "unique" or "<locals>" in f.__qualname__ or (f.__module__, f.__qualname__) in _instances:
        module = opts["module"]
        if module is not None and not isinstance(module, str):  # a Python module, or an sk.Module (this one)
            module = module.__name__ if hasattr(module, "__name__") else ("Module", module.name, id(module))
        options = {**opts, "module": module, "module_options": tuple(sorted((opts["module_options"] or {}).items()))}
        from .module import compile_options  # (the global options its translation reads: max_unroll ...)

        key = identity.kernel_key(f, src, (f.__module__, f.__qualname__, tuple(sorted(options.items())),
                                           tuple(sorted(hints.items())), tuple(sorted(compile_options().items()))))
        found = identity.lookup(key)
        if found is not None:
            return found
    k = Kernel(f, **opts, _src=src)
    k.launch_bounds = hints.get("launch_bounds")
    identity.remember(key, k)
    return k


def overload(kernel, arg_types=None):
    """Declare a concrete specialisation of a generic kernel, as Warp's ``overload``: either
    ``overload(k, [types...])`` / ``overload(k, {"name": type})``, or ``@overload`` on a function of the
    kernel's name whose annotations are concrete and whose body is ``...``. Returns the kernel (a launch
    picks the specialisation from its arguments' types)."""
    if not isinstance(kernel, Kernel):
        from .module import get_module

        fn = kernel
        found = [k for k in get_module(fn.__module__).kernels if k.func.__name__ == fn.__name__ and k.generic]
        if not found:
            raise TypeError(f"overload: no generic kernel named '{fn.__name__}' in module {fn.__module__}")
        kernel, arg_types = found[-1], _param_types(fn, required=True)
    if not kernel.generic:
        raise TypeError(f"overload: kernel '{kernel.key}' is not generic; only generic kernels are overloaded")
    types = dict(kernel.param_types)
    if isinstance(arg_types, dict):
        for name, t in arg_types.items():
            if name not in types:
                raise TypeError(f"overload of kernel '{kernel.key}': it has no parameter '{name}'")
            types[name] = T.as_kernel_type(t)
    elif isinstance(arg_types, (list, tuple)):
        if len(arg_types) != len(types):
            raise TypeError(f"overload of kernel '{kernel.key}': {len(arg_types)} types for {len(types)} parameters")
        types = dict(zip(types, (T.as_kernel_type(t) for t in arg_types)))
    else:
        raise TypeError("overload: the types must be a list or a dict of parameter names")
    for name, t in types.items():
        if T.is_generic(t) or not T.types_match(kernel.param_types[name], t) or isinstance(t, T.TupleType):
            raise TypeError(f"overload of kernel '{kernel.key}': parameter '{name}' cannot be "
                            f"{T.type_name(t)} (declared {T.type_name(kernel.param_types[name])})")
    kernel.spec_for(tuple(types.values()))
    return kernel


# ---------------------------------------------------------------------------
# Functions


class FuncSpec:
    """One specialisation of a @func: IR plus the C++ name."""

    def __init__(self, fn: Function, overload_index: int, param_types: dict, cname: str):
        self.function = fn
        self.param_types = param_types
        self.cname = cname
        self.ir = None
        self.return_types: list = []
        self.grad_ir = None  # @func_grad: returns one adjoint per argument
        self.replay_ir = None  # @func_replay: used in the adjoint's forward replay
        self.ref_params: list = []  # ref[T] parameters returned after the results (refs.py)


class Function:
    """A @func: callable from kernels, overloaded by parameter types, generic over ``Any``."""

    def __init__(self, pyfunc):
        self.key = pyfunc.__name__
        self.__name__ = self.key
        self.__doc__ = pyfunc.__doc__
        self.qualname = pyfunc.__qualname__
        self.overloads: list = []  # (pyfunc, param_types, SourceInfo|None)
        self.specs: dict = {}
        self.custom_grads: list = []  # @func_grad / @func_replay functions, one per overload at most
        self.custom_replays: list = []
        self.native = None  # @func_native: its C++ snippets (native_func.Snippets)
        self.instance = instance_index(pyfunc)
        self.add_overload(pyfunc)

    def find_overload(self, pyfunc):
        """The index of the overload with ``pyfunc``'s parameter types, or None."""
        types = list(_param_types(pyfunc, required=False).values())
        return next((i for i, (_, t, _) in enumerate(self.overloads) if list(t.values()) == types), None)

    def redefined(self, pyfunc) -> Function:
        """A new Function: these overloads with ``pyfunc`` in place of the one of its parameter types (and
        the custom adjoints of the others)."""
        fn = Function(pyfunc)
        i = self.find_overload(pyfunc)
        fn.overloads = self.overloads[:i] + fn.overloads + self.overloads[i + 1:]
        types = list(self.overloads[i][1].values())
        for name in ("custom_grads", "custom_replays"):
            kept = [g for g in getattr(self, name) if list(_param_types(g, required=False).values())[:len(types)]
                    != types]
            setattr(fn, name, kept)
        return fn

    def add_overload(self, pyfunc):
        from .sources import remember

        remember(pyfunc)  # (its file's lines as they are now: read when it is built)
        types = _param_types(pyfunc, required=False)
        src = declare_statics(pyfunc)  # static(...) is evaluated now, once (frontend/statics.py)
        for i, (other, t, _) in enumerate(self.overloads):
            if list(t.values()) == list(types.values()):
                if _ref_names(other) != _ref_names(pyfunc):
                    raise RuntimeError(f"overloads of @func '{self.key}' differ only in ref[T] parameters "
                                       f"({_ref_names(other) or 'none'} vs {_ref_names(pyfunc) or 'none'}): "
                                       f"give them different parameter types or names")
                self.overloads[i] = (pyfunc, types, src)  # redefinition replaces
                self.specs.clear()
                return
        self.overloads.append((pyfunc, types, src))

    def _source(self, i):
        pyfunc, types, src = self.overloads[i]
        if src is None:
            from .sources import source_info

            src = source_info(pyfunc)
            self.overloads[i] = (pyfunc, types, src)
        elif src.stale:
            src.read_closure()
        return src

    def specialize(self, args: list, builder):
        """Pick the first overload matching the argument Vars, concrete overloads before generic ones (as
        Warp); returns (FuncSpec, coerced args)."""
        order = sorted(range(len(self.overloads)),
                       key=lambda k: any(T.is_generic(t) for t in self.overloads[k][1].values()))
        for i in order:
            pyfunc, types, _ = self.overloads[i]
            if len(types) != len(args):
                continue
            coerced, concrete, ok = [], {}, True
            for (pname, spec), a in zip(types.items(), args):
                matched, bound = bind_function_arg(spec, a)  # a Function parameter: its function value
                if matched is None:
                    a = _coerce_literal(spec, a, builder)
                    matched, bound = T.types_match(spec, a.type), param_type(a.type)
                if not matched:
                    ok = False
                    break
                coerced.append(a)
                concrete[pname] = bound
            if ok:
                return self._spec(i, concrete), coerced
        got = ", ".join(describe_arg(a) for a in args)
        sigs = "; ".join(f"{self.key}(" + ", ".join(f"{n}: {T.type_name(t)}" for n, t in ty.items()) + ")"
                         for _, ty, _ in self.overloads)
        hint = next((h for _, ty, _ in self.overloads if len(ty) == len(args) for h in [mismatch_hint(ty, args)]
                     if h), "")
        raise TypeError(f"no overload of @func '{self.key}' takes ({got}); candidates: {sigs}{hint}")

    def _spec(self, i, concrete: dict) -> FuncSpec:
        functions = [n for n, t in concrete.items() if isinstance(t, FunctionArg)]
        if functions and (self.native is not None or self._custom_for(i, self.custom_grads + self.custom_replays)):
            raise TypeError(f"@func '{self.key}' has Function parameters ('{functions[0]}'): they are not supported "
                            f"with custom gradients or replay functions (@func_grad, @func_replay) or @func_native")
        tuples = [n for n, t in concrete.items() if isinstance(t, T.TupleType)]
        if tuples and (self.native is not None or self._custom_for(i, self.custom_grads + self.custom_replays)):
            raise TypeError(f"@func '{self.key}' has a @func_native body or a custom adjoint: its parameter "
                            f"'{tuples[0]}' cannot be a tuple (pass the values as separate parameters)")
        key = (i, tuple(concrete.values()))
        spec = self.specs.get(key)
        if spec is not None:
            if spec.ir is None:
                raise TypeError(f"@func '{self.key}' calls itself; recursion is not supported in kernels")
            return spec
        pyfunc = self.overloads[i][0]
        tag = stable_hash(pyfunc.__module__, self.qualname, self.instance, i,
                          [T.type_name(t) for t in concrete.values()])[:8]
        spec = FuncSpec(self, i, concrete, f"{_sanitize(self.key)}_{tag}")
        spec.ref_params = [n for n in _ref_names(pyfunc) if writes_back(concrete[n])]
        if spec.ref_params and self._custom_for(i, self.custom_grads + self.custom_replays):
            raise TypeError(f"@func '{self.key}' has ref[T] parameters ('{spec.ref_params[0]}'): they are not "
                            f"supported with a custom gradient or replay (@func_grad, @func_replay); its gradient "
                            f"through them is exact without one")
        self.specs[key] = spec
        try:
            if self.native is not None:  # @func_native: a C++ body
                from .native_func import specialize

                specialize(self, spec, pyfunc)
                if spec.ref_params:  # ref[T] parameters: returned after the result (native_refs.py)
                    from .native_refs import setup

                    setup(spec)
                return spec
            spec.ir = build(pyfunc, concrete, is_kernel=False, name=spec.cname, src=self._source(i),
                            ref_params=spec.ref_params)
            spec.ir.inline = getattr(pyfunc, "_simkit_inline", None)  # (codegen.func_qualifier)
            spec.return_types = spec.ir.return_types
            grad, replay = self._custom_for(i, self.custom_grads), self._custom_for(i, self.custom_replays)
            if grad is not None or replay is not None:
                from .custom_grad import build_custom_grad, build_replay

                spec.grad_ir = build_custom_grad(self, spec, grad) if grad is not None else None
                spec.replay_ir = build_replay(spec, replay) if replay is not None else None
        except BaseException:
            del self.specs[key]  # (a spec without its custom adjoint must never be reused: it would differentiate
            raise                # the body instead, silently)
        return spec

    def _custom_for(self, i, customs: list):
        """The @func_grad/@func_replay function of overload ``i``: the one whose leading parameter types are
        the overload's (a function of one overload takes any: its errors then name the mismatch)."""
        types = list(self.overloads[i][1].values())
        for g in reversed(customs):
            if list(_param_types(g, required=False).values())[:len(types)] == types:
                return g
        return customs[-1] if customs and len(self.overloads) == 1 else None

    def __call__(self, *args, **kwargs):
        """From Python (as in Warp): computed by a one-thread CPU kernel calling this @func, compiled once
        per argument types (simkit/runtime/pyscope.py)."""
        from . import api  # (simkit.runtime sets its PYTHON_SCOPE evaluator: kernels never import runtime)

        if api.PYTHON_SCOPE is None:
            raise RuntimeError(f"@func '{self.key}' can be called from Python once simkit.runtime is imported")
        if len(self.overloads) == 1:  # keywords bound, default values fill what the call leaves out
            bound = inspect.signature(self.overloads[0][0]).bind(*args, **kwargs)
            bound.apply_defaults()
            args = bound.args
        elif kwargs:
            raise TypeError(f"@func '{self.key}' has overloads: call it from Python with positional arguments")
        return api.PYTHON_SCOPE(_sanitize(self.key), args, function=self)

    def __repr__(self):
        return f"<simkit.Function {self.key}>"


def _coerce_literal(spec, a, builder):
    """An untyped literal argument (``5``, ``1.0``; also inside a tuple) as the parameter's scalar type."""
    if isinstance(a, TupleValue):
        specs = spec.types if isinstance(spec, T.TupleType) and spec.repeat is None else (
            [spec.repeat] * len(a) if isinstance(spec, T.TupleType) else None)
        if specs is None or len(specs) != len(a):
            return a
        return TupleValue(_coerce_literal(t, x, builder) for t, x in zip(specs, a))
    if a.weak and T.is_scalar(spec) and spec is not a.type and not (
            T.is_int(spec) and isinstance(a.const, float)):  # 1.5 never silently becomes 1
        return builder.const(a.const, spec)
    return a


_functions: dict = {}


def func(f=None, *, module=None, inline: bool | None = None):
    """Decorate a Python function callable from kernels. Same-named @funcs in a module overload each other.

    ``inline`` (as Warp's): True forces the function (and its adjoint) inline into its callers, False keeps it
    a call, None (the default) leaves it to the C++ compiler. ``module`` is accepted for Warp's signature: a
    @func compiles into the module of each kernel that calls it."""
    if inline is not None and not isinstance(inline, bool):
        raise TypeError(f"@func: inline must be a bool or None, got {inline!r}")

    def declare(g, scope):
        g._simkit_inline = inline
        return _declare_func(g, scope)
    if f is None:
        return lambda g: declare(g, sys._getframe(1).f_locals)
    return declare(f, sys._getframe(1).f_locals)


def _declare_func(f, scope: dict) -> Function:
    """The @func for ``f``, as Warp: a @func of the same name already in the defining scope (the module, or
    one run of the enclosing function for a closure) gains ``f`` as an overload; one of the same parameter
    types is redefined: a new Function with ``f`` in its place (whoever holds the old one keeps it)."""
    existing = _earlier_definition(f, scope)
    if existing is not None and existing.native is None:
        i = existing.find_overload(f)
        if i is not None and _ref_names(existing.overloads[i][0]) != _ref_names(f):
            raise RuntimeError(f"@func '{f.__name__}': overloads cannot differ only in ref[T] parameters "
                               f"({_ref_names(existing.overloads[i][0]) or 'none'} vs "
                               f"{_ref_names(f) or 'none'}); give the new one another name")
    if existing is not None:  # kernels built with it are built again at their next launch
        from .module import invalidate_users

        invalidate_users(existing)
    if existing is None or existing.native is not None:
        fn = Function(f)
    elif existing.find_overload(f) is None:
        existing.add_overload(f)
        return existing
    else:
        fn = existing.redefined(f)
    return _registered(f, fn)


def _registered(f, fn: Function) -> Function:
    """``fn``, kept as the @func of ``f``'s module-level name (a closure's is found in its scope, per run)."""
    if "<locals>" not in f.__qualname__:
        _functions[(f.__module__, f.__qualname__)] = fn
    return fn


def _earlier_definition(f, scope: dict):
    """The @func of ``f``'s name already defined in its scope (the module, or this run of the enclosing
    function for a closure), or None."""
    existing = scope.get(f.__name__)
    if not (isinstance(existing, Function) and existing.qualname == f.__qualname__
            and existing.overloads[0][0].__module__ == f.__module__):
        existing = None if "<locals>" in f.__qualname__ else _functions.get((f.__module__, f.__qualname__))
    return existing


def declare_native(f, scope: dict, snippets) -> Function:
    """The Function of a @func_native: always a new one (a redefinition replaces the earlier definition and
    every kernel built with that is built again at its next launch, as for @func)."""
    existing = _earlier_definition(f, scope)
    if existing is not None:
        from .module import invalidate_users

        invalidate_users(existing)
    fn = Function(f)
    fn.native = snippets
    return _registered(f, fn)


def func_grad(forward: Function):
    """Register a custom adjoint for ``forward``: ``@func_grad(f) def adj_f(args..., adj_ret)``,
    accumulating with ``adjoint[arg] += ...`` (see simkit/kernels/custom_grad.py). Of an overloaded
    ``forward``, it is the adjoint of the overload whose parameter types its first parameters have."""

    def deco(g):
        forward.custom_grads.append(g)
        forward.specs.clear()
        return g

    return deco


def func_replay(forward: Function):
    """Register a function that replaces ``forward`` in the adjoint's forward replay."""

    def deco(g):
        forward.custom_replays.append(g)
        forward.specs.clear()
        return g

    return deco


# ---------------------------------------------------------------------------
# Compile-time helpers


def constant(x):
    """Mark a global as a compile-time constant (its value is baked into kernels that use it)."""
    return T.check_constant(x)


def static(expr):
    """In a kernel, ``static(expr)`` evaluates ``expr`` in Python at compile time."""
    return expr


static._simkit_static = True

__all__ = ["kernel", "overload", "func", "func_grad", "func_replay", "constant", "static", "Kernel", "Function", "Py"]
_ = sys

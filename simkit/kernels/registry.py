"""The builtin registry: every builtin function of the kernel language is declared
here once, with its overloads, result type, C++ forward and adjoint names.

Other packages (collision, ...) register their own builtins and native headers
through ``add_builtin`` and ``add_header``; the compiler knows nothing else.

Example (a scalar builtin with a generic float overload)::

    add_builtin("sin", {"x": Float}, same_as("x"), native="sk::sin",
                doc="Sine of x [rad].", group="scalar")

The native function is called as ``sk::sin(x)`` and its adjoint as
``sk::adj_sin(x, adj_x, adj_ret)``: every input gets an ``adj_`` reference in
order, then the adjoint of the result (omitted when the builtin returns
nothing).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable

from . import types as T


@dataclass
class CallInfo:
    """What a result-type or native-name callback sees about one call."""

    arg_types: list
    arg_names: list
    const_values: list  # compile-time value of each argument, or None
    target: object = None  # the type being constructed, for type-constructor calls


@dataclass
class Builtin:
    key: str
    input_types: dict  # name -> type spec (possibly generic)
    value_type: object  # type, None, or callable(CallInfo) -> type
    native: object  # str or callable(CallInfo, ret_ctype: str) -> str
    differentiable: bool = True
    doc: str = ""
    group: str = ""
    variadic: bool = False  # any number of arguments (each must match the first spec)
    side_effects: bool = False  # never removed by dead-code elimination (store, atomics, random, print)
    defaults: dict = field(default_factory=dict)
    hidden: bool = False  # not listed in generated docs (internal operators)
    match: Callable | None = None  # optional extra predicate(CallInfo) -> bool
    constructor: bool = False  # called through a type object (vec3(...))
    replay: bool = True  # re-executed in the adjoint's forward replay (False for stores, prints)
    checked: bool = False  # array access: in debug mode calls <native>_checked(line, args...)
    needs_line: bool = False  # always called as native(line, args...)
    inout: tuple = ()  # argument names the native function updates in place (query states, output indices)
    # An iterator's next(query, index) -> bool can name three native helpers (range, more, take): a
    # `while next(q, i):` loop then compiles to nested loops (see codegen.Emitter.batched_while).
    batched: tuple = ()

    def callee(self, info: CallInfo, ret_ctype: str) -> str:
        return self.native(info, ret_ctype) if callable(self.native) else self.native

    def result_type(self, info: CallInfo):
        if callable(self.value_type) and not isinstance(self.value_type, type):
            info.arg_names = list(self.input_types)
            return self.value_type(info)
        return self.value_type

    def matches(self, info: CallInfo) -> bool:
        specs = list(self.input_types.values())
        n = len(info.arg_types)
        if self.variadic:
            if n < len(specs) or (not specs and n):
                pass
            if specs:
                for t in info.arg_types:
                    if not T.types_match(specs[0], t):
                        return False
        else:
            if n > len(specs) or n < len(specs) - len(self.defaults):
                return False
            for spec, t in zip(specs, info.arg_types):
                if not T.types_match(spec, t):
                    return False
            if not _consistent_scalars(specs, info.arg_types):
                return False
        return self.match(info) if self.match else True


def _consistent_scalars(specs, arg_types) -> bool:
    """Arguments matched by generic specs must share one scalar type (no float32/float64 mixing)."""
    seen = None
    for spec, t in zip(specs, arg_types):
        if not T.is_generic(spec) or spec is T.Any:
            continue
        if isinstance(t, T.ArrayType):
            continue
        try:
            s = T.scalar_of(t)
        except TypeError:
            continue
        if seen is None:
            seen = s
        elif s is not seen:
            return False
    return True


_builtins: dict[str, list[Builtin]] = {}
_headers: list[str] = []
_inout_keys: set = set()


def add_builtin(
    key: str,
    input_types: dict | None = None,
    value_type=None,
    *,
    native=None,
    differentiable: bool = True,
    doc: str = "",
    group: str = "",
    variadic: bool = False,
    side_effects: bool = False,
    defaults: dict | None = None,
    hidden: bool = False,
    match: Callable | None = None,
    constructor: bool = False,
    replay: bool = True,
    checked: bool = False,
    needs_line: bool = False,
    inout: tuple = (),
    batched: tuple = (),
) -> Builtin:
    """Declare one overload of builtin ``key``. Returns the registered entry."""
    b = Builtin(
        key=key,
        input_types=dict(input_types or {}),
        value_type=value_type,
        native=native if native is not None else f"sk::{key}",
        differentiable=differentiable,
        doc=doc,
        group=group,
        variadic=variadic,
        side_effects=side_effects,
        defaults=dict(defaults or {}),
        hidden=hidden,
        match=match,
        constructor=constructor,
        replay=replay,
        checked=checked,
        needs_line=needs_line,
        inout=tuple(inout),
        batched=tuple(batched),
    )
    if inout:
        _inout_keys.add(key)
    _builtins.setdefault(key, []).append(b)
    return b


def add_header(path: str) -> None:
    """Add a native header (absolute path) that generated code includes."""
    if path not in _headers:
        _headers.append(path)


def inout_keys() -> set:
    """Keys of builtins that update some arguments in place (the frontend treats those as assignments)."""
    return _inout_keys


def headers() -> list[str]:
    return list(_headers)


def overloads(key: str) -> list[Builtin]:
    return _builtins.get(key, [])


def is_builtin(key: str) -> bool:
    return key in _builtins


def all_builtins() -> dict[str, list[Builtin]]:
    return _builtins


def resolve(key: str, info: CallInfo) -> Builtin | None:
    """The first overload of ``key`` that matches the call, or None."""
    for b in _builtins.get(key, ()):
        if b.matches(info):
            return b
    return None


_name_re = re.compile(r"^([^<]*::)?([A-Za-z_][A-Za-z_0-9]*)(<.*>)?$")


def adjoint_name(callee: str) -> str:
    """``sk::cast<float>`` -> ``sk::adj_cast<float>``."""
    m = _name_re.match(callee)
    if not m:
        raise ValueError(f"cannot derive an adjoint name from {callee!r}")
    return f"{m.group(1) or ''}adj_{m.group(2)}{m.group(3) or ''}"


# ---------------------------------------------------------------------------
# Result-type helpers for declarations


def same_as(name_or_index):
    """Result has the type of the named (or indexed) argument."""

    def f(info: CallInfo):
        i = name_or_index if isinstance(name_or_index, int) else info.arg_names.index(name_or_index)
        return info.arg_types[i]

    f.__name__ = f"same_as_{name_or_index}"
    return f


def scalar_of_arg(name_or_index):
    """Result is the scalar type of the named (or indexed) argument."""

    def f(info: CallInfo):
        i = name_or_index if isinstance(name_or_index, int) else info.arg_names.index(name_or_index)
        return T.scalar_of(info.arg_types[i])

    return f

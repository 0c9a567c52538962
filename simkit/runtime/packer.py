"""Fast argument packing for launches (the hot path of ``launch``).

Built once per kernel specialisation: a list of per-parameter steps with
precompiled ``struct`` formats and padding, so a launch only concatenates
cached array descriptors and packed scalars. Anything unusual (a wrong type,
a numpy scalar that does not fit) falls back to the checked path in
``launch._check_and_pack``, which raises the error naming the parameter.
"""
from __future__ import annotations

import struct

from ..kernels import types as T
from .array import array

_FMT = {T.bool: "?", T.int8: "b", T.uint8: "B", T.int16: "h", T.uint16: "H", T.int32: "i", T.uint32: "I",
        T.int64: "q", T.uint64: "Q", T.float32: "f", T.float64: "d"}

class Mismatch(Exception):
    """The fast path cannot pack this argument; use the checked path."""


def make_packer(spec):
    """A packing function specialised (generated Python source) for one kernel signature."""
    offsets, size = spec.layout
    env = {"array": array, "Mismatch": Mismatch, "struct_error": (struct.error, TypeError, OverflowError),
           "pack_value": T.pack_value}
    n = len(spec.types)
    lines = ["def pack(args, device):"]
    lines.append(f"    ({', '.join(f'a{i}' for i in range(n))}{',' if n == 1 else ''}) = args" if n else
                 "    pass")
    lines.append("    contiguous = True")
    parts, pos = [], 0
    for i, (t, off) in enumerate(zip(spec.types, offsets)):
        if off > pos:
            env[f"PAD{i}"] = bytes(off - pos)
            parts.append(f"PAD{i}")
        if isinstance(t, T.IndexedArrayType):
            lines += ["    raise Mismatch"]  # indexed arrays take the checked path
        elif isinstance(t, T.ArrayType):
            env[f"T{i}"] = t.dtype
            lines += [f"    if a{i}.__class__ is not array or a{i}.dtype is not T{i} or a{i}.ndim != {t.ndim} "
                      f"or a{i}.device is not device:",
                      "        raise Mismatch",
                      f"    d{i} = a{i}._desc or a{i}._descriptor()",
                      f"    if not a{i}._contig:",   # (set by _descriptor(), which has run once _desc is set)
                      "        contiguous = False"]
        elif t in _FMT:
            env[f"P{i}"] = struct.Struct("<" + _FMT[t]).pack
            if _FMT[t] not in "fd":
                lines += [f"    if a{i}.__class__ is float:", "        raise Mismatch"]
            lines += ["    try:", f"        d{i} = P{i}(a{i})", "    except struct_error:", "        raise Mismatch"]
        elif T.is_struct(t):
            env[f"S{i}"] = struct_packer(t)
            lines += [f"    d{i}, c{i} = S{i}(a{i}, device)", f"    if not c{i}:", "        contiguous = False"]
        else:
            env[f"T{i}"] = t
            lines += [f"    if a{i}.__class__ is T{i}:", f"        d{i} = a{i}.tobytes()", "    else:",
                      "        try:", f"            d{i} = pack_value(T{i}, a{i})",
                      "        except (TypeError, ValueError):", "            raise Mismatch"]
        parts.append(f"d{i}")
        pos = off + T.sizeof(t)
    env["TAIL"] = bytes(size - pos)
    parts.append("TAIL")
    lines.append(f"    return b''.join(({', '.join(parts)},)), contiguous")
    exec(compile("\n".join(lines), f"<simkit packer {spec.cname}>", "exec"), env)  # noqa: S102
    return env["pack"]


def struct_packer(t):
    """``pack(value, device) -> (bytes, contiguous)`` for struct type ``t`` (generated once per struct type, kept
    on its StructInfo): scalar fields packed by ``struct`` formats, vector and matrix fields of their exact type
    as their bytes, array fields as their cached descriptors (on ``device``), nested structs by their own
    packers. Anything else (another class, an array elsewhere, a value that does not fit) raises Mismatch: the
    checked path packs it, or raises the error naming the field."""
    info = t._simkit_struct
    packer = info.__dict__.get("packer")
    if packer is not None:
        return packer
    env = {"array": array, "Mismatch": Mismatch, "struct_error": (struct.error, TypeError, OverflowError),
           "pack_value": T.pack_value, "CLS": info.cls}
    lines = ["def pack(s, device):", "    if s.__class__ is not CLS:", "        raise Mismatch",
             "    contiguous = True"]
    parts, pos = [], 0
    for i, (name, ft) in enumerate(info.fields.items()):
        off = info.offsets[name]
        if off > pos:
            env[f"PAD{i}"] = bytes(off - pos)
            parts.append(f"PAD{i}")
        lines.append(f"    f{i} = s.{name}")
        if isinstance(ft, T.IndexedArrayType):
            lines += ["    raise Mismatch"]
        elif isinstance(ft, T.ArrayType):
            env[f"NULL{i}"] = bytes(T.sizeof(ft))
            lines += [f"    if f{i} is None:", f"        d{i} = NULL{i}",
                      f"    elif f{i}.__class__ is not array or f{i}.device is not device:", "        raise Mismatch",
                      "    else:", f"        d{i} = f{i}._desc or f{i}._descriptor()",
                      f"        if not f{i}._contig:", "            contiguous = False"]
        elif ft in _FMT:
            env[f"P{i}"] = struct.Struct("<" + _FMT[ft]).pack
            lines += ["    try:", f"        d{i} = P{i}(f{i})", "    except struct_error:", "        raise Mismatch"]
        elif T.is_struct(ft):
            env[f"S{i}"] = struct_packer(ft)
            lines += [f"    d{i}, c{i} = S{i}(f{i}, device)", f"    if not c{i}:", "        contiguous = False"]
        else:
            env[f"T{i}"] = ft
            lines += [f"    if f{i}.__class__ is T{i}:", f"        d{i} = f{i}.tobytes()", "    else:",
                      "        try:", f"            d{i} = pack_value(T{i}, f{i})",
                      "        except (TypeError, ValueError):", "            raise Mismatch"]
        parts.append(f"d{i}")
        pos = off + T.sizeof(ft)
    env["TAIL"] = bytes(info.size - pos)
    parts.append("TAIL")
    lines.append(f"    return b''.join(({', '.join(parts)},)), contiguous")
    exec(compile("\n".join(lines), f"<simkit struct packer {info.cname}>", "exec"), env)  # noqa: S102
    info.packer = env["pack"]
    return info.packer

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
    """A packing function specialised (generated Python source) for one kernel signature:
    ``pack(args, device) -> (bytes, contiguous)``."""
    offsets, size = spec.layout
    n = len(spec.types)
    head = [f"    ({', '.join(f'a{i}' for i in range(n))}{',' if n == 1 else ''}) = args" if n else "    pass"]
    items = [(f"a{i}", t, off) for i, (t, off) in enumerate(zip(spec.types, offsets))]
    return _generate(f"<simkit packer {spec.cname}>", "args", head, items, size)


def struct_packer(t):
    """``pack(value, device) -> (bytes, contiguous)`` for struct type ``t`` (generated once per struct type, kept
    on its StructInfo): scalar fields packed by ``struct`` formats, vector and matrix fields of their exact type
    as their bytes, array fields as their cached descriptors (on ``device``), nested structs by their own
    packers. Anything else (another class, an array elsewhere, a value that does not fit) raises Mismatch: the
    checked path packs it, or raises the error naming the field. Nothing is cached between launches: a field
    changed in place is packed as it is."""
    info = t._simkit_struct
    packer = info.__dict__.get("packer")
    if packer is None:
        head = ["    if s.__class__ is not CLS:", "        raise Mismatch"]
        items = [(f"s.{name}", ft, info.offsets[name]) for name, ft in info.fields.items()]
        info.packer = packer = _generate(f"<simkit struct packer {info.cname}>", "s", head, items, info.size,
                                         {"CLS": info.cls})
    return packer


def _generate(filename: str, arg: str, head: list, items: list, size: int, env: dict | None = None):
    """``pack(<arg>, device)``: ``head`` lines, then each item ``(expression, type, offset)`` packed as
    :func:`_item_lines` says, with padding between; the bytes joined and whether every array was contiguous."""
    env = {"array": array, "Mismatch": Mismatch, "struct_error": (struct.error, TypeError, OverflowError),
           "pack_value": T.pack_value, **(env or {})}
    lines = [f"def pack({arg}, device):", *head, "    contiguous = True"]
    parts, pos = [], 0
    for i, (expr, t, off) in enumerate(items):
        if off > pos:
            env[f"PAD{i}"] = bytes(off - pos)
            parts.append(f"PAD{i}")
        lines += _item_lines(i, expr, t, env)
        parts.append(f"d{i}")
        pos = off + T.sizeof(t)
    env["TAIL"] = bytes(size - pos)
    parts.append("TAIL")
    lines.append(f"    return b''.join(({', '.join(parts)},)), contiguous")
    exec(compile("\n".join(lines), filename, "exec"), env)  # noqa: S102
    return env["pack"]


def _item_lines(i: int, expr: str, t, env: dict) -> list:
    """Lines setting ``d<i>`` to the bytes of ``expr`` as type ``t`` (and ``contiguous`` False for a strided array),
    or raising Mismatch where the checked path must decide."""
    lines = [f"    v{i} = {expr}"]
    if isinstance(t, T.IndexedArrayType):
        return lines + ["    raise Mismatch"]  # indexed arrays take the checked path
    if isinstance(t, T.ArrayType):
        env[f"T{i}"], env[f"NULL{i}"] = t.dtype, bytes(T.sizeof(t))
        return lines + [f"    if v{i} is None:", f"        d{i} = NULL{i}",
                        f"    elif v{i}.__class__ is not array or v{i}.dtype is not T{i} or v{i}.ndim != {t.ndim} "
                        f"or v{i}.device is not device:",
                        "        raise Mismatch",
                        "    else:",
                        f"        d{i} = v{i}._desc or v{i}._descriptor()",
                        f"        if not v{i}._contig:",  # (set by _descriptor(), which has run once _desc is set)
                        "            contiguous = False"]
    if t in _FMT:
        env[f"P{i}"] = struct.Struct("<" + _FMT[t]).pack
        if _FMT[t] not in "fd":  # (a float for an integer: the checked path refuses it, or converts a field's)
            lines += [f"    if v{i}.__class__ is float:", "        raise Mismatch"]
        return lines + ["    try:", f"        d{i} = P{i}(v{i})", "    except struct_error:", "        raise Mismatch"]
    if T.is_struct(t):
        env[f"S{i}"] = struct_packer(t)
        return lines + [f"    d{i}, c{i} = S{i}(v{i}, device)", f"    if not c{i}:", "        contiguous = False"]
    env[f"T{i}"] = t
    return lines + [f"    if v{i}.__class__ is T{i}:", f"        d{i} = v{i}.tobytes()", "    else:",
                    "        try:", f"            d{i} = pack_value(T{i}, v{i})",
                    "        except (TypeError, ValueError):", "            raise Mismatch"]

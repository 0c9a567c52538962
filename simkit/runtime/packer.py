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
            lines += ["    raise Mismatch"]  # structs take the checked path (their arrays need checks)
        else:
            env[f"T{i}"] = t
            lines += ["    try:", f"        d{i} = pack_value(T{i}, a{i})", "    except (TypeError, ValueError):",
                      "        raise Mismatch"]
        parts.append(f"d{i}")
        pos = off + T.sizeof(t)
    env["TAIL"] = bytes(size - pos)
    parts.append("TAIL")
    lines.append(f"    return b''.join(({', '.join(parts)},)), contiguous")
    exec(compile("\n".join(lines), f"<simkit packer {spec.cname}>", "exec"), env)  # noqa: S102
    return env["pack"]

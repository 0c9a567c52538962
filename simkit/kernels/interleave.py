"""GPU kernels of straight-line code run several launch indices per CUDA thread, interleaved.

A GPU streams memory fast only with many loads in flight. ``y[i] = a * x[i] + y[i]`` gives each
CUDA thread two, and the next index of its grid-stride loop cannot be loaded early: the compiler
cannot tell that ``y``'s store does not change what ``x`` holds there. On an H200 (4.8 TB/s of
HBM3e) that leaves saxpy well below the copy bandwidth.

Launch indices are independent threads of the language (no ordering between them), so a CUDA
thread may run :data:`WAYS` of them in any interleaving that keeps each one's own order. For a
kernel whose body is straight-line code (no branch, loop or return: one path, so each statement
can run for every index before the next), this module emits ``<name>_fwd_x<WAYS>``: each
statement once per index, in statement order. All the loads of the first statements then come
before any store. The CUDA entry calls it over groups of ``WAYS`` grid-stride indices and the
plain body over the rest; ``Unit.launch`` gives such a kernel ``WAYS`` times fewer blocks once the
launch fills the GPU (below that, more blocks use more of it).

Only forward kernels are interleaved; the CPU entry and the adjoints are unchanged.
"""
from __future__ import annotations

from . import ir
from . import types as T

WAYS = 4
# larger bodies: WAYS copies of their values would cost registers, and so occupancy (and such bodies
# do enough arithmetic per load that more loads in flight matter less)
MAX_STATEMENTS = 48
MAX_WORDS = 32  # 32-bit words of local values per launch index (a vec3 is 3, a mat33 9)
_STRAIGHT = (ir.Call, ir.Copy, ir.GetField, ir.SetField, ir.Tid)


def _words(fn: ir.Function) -> int:
    return sum(T.sizeof(v.type) // 4 for v in fn.vars if not v.is_const and not isinstance(v.type, T.ArrayType))


def eligible(fn: ir.Function | None) -> bool:
    """Can kernel ``fn`` run interleaved (a small straight-line body of 1D launch indices that writes no
    parameter, and not launched in index order by deterministic mode: deterministic.py)?"""
    if fn is None or not fn.is_kernel or getattr(fn, "ordered", False):
        return False
    if fn.uses_tid > 1 or not fn.body or len(fn.body) > MAX_STATEMENTS:
        return False
    if any(isinstance(v.type, T.FixedArrayType) for v in fn.vars):
        return False  # (a thread-local array per copy: registers spill)
    params = {id(p) for p in fn.params}
    for s in fn.body:
        if not isinstance(s, _STRAIGHT) or isinstance(s, ir.Call) and s.kind == "printf":
            return False  # (printf: the lines of several indices would mix)
        if any(id(v) in params for v in ir.defines(s)):
            return False
        if isinstance(s, ir.Call) and any(a.ref and id(a) in params for a in s.args):
            return False  # a parameter changed in place (random state) is shared by the copies
    try:
        return _words(fn) <= MAX_WORDS
    except TypeError:  # a value without a fixed size (a query object)
        return False


def gen_interleaved(fn: ir.Function, emitter) -> list:
    """C++ lines of ``<name>_fwd_x<WAYS>(args, bounds, idx, step)``: the body for launch indices idx,
    idx + step, ... (``WAYS`` of them), each statement for every index in turn. ``emitter`` is a fresh
    codegen ``Emitter`` of ``fn``; its variables are renamed per copy while it writes, then restored."""
    from .codegen import ctype

    e = emitter
    name = fn.name
    e.w("#if SK_CUDA", 0)
    e.w("template <bool SKC>", 0)
    e.w(f"static CUDA_CALLABLE SK_FORCEINLINE void {name}_fwd_x{WAYS}(const {name}_args& _args, "
        f"const sk::launch_bounds_t& _bounds, sk::int64 _idx, sk::int64 _step) {{", 0)
    for p in fn.params:
        e.w(f"{ctype(p.type)} {p.name} = _args.{p.name};", 1)
    names = [v.name for v in fn.vars]
    try:
        for k in range(WAYS):
            for v, n in zip(fn.vars, names):
                v.name = f"{n}_{k}"
            e.declarations(1)
        for s in fn.body:
            for k in range(WAYS):
                for v, n in zip(fn.vars, names):
                    v.name = f"{n}_{k}"
                if isinstance(s, ir.Tid):
                    e.comment(s.line, 1)
                    for o in s.outs:
                        e.w(f"{o.name} = sk::tid_first(_bounds, _idx + {k} * _step);", 1)
                else:
                    e.stmt(s, 1)
    finally:
        for v, n in zip(fn.vars, names):
            v.name = n
    e.w("}", 0)
    e.w("#endif", 0)
    return e.lines


def cuda_entry(name: str) -> str:
    """The CUDA entry of an interleaved kernel: groups of WAYS grid-stride indices, then the rest."""
    return f"""#if SK_CUDA
extern "C" __global__ void {name}_cuda_fwd({name}_args a, sk::launch_bounds_t b) {{
    const sk::int64 _step = sk::int64(blockDim.x) * gridDim.x;
    sk::int64 _i = sk::int64(blockIdx.x) * blockDim.x + threadIdx.x;
    for (; _i + {WAYS - 1} * _step < b.size; _i += {WAYS} * _step)
        {name}_fwd_x{WAYS}<false>(a, b, _i, _step);
    for (; _i < b.size; _i += _step)
        {name}_fwd<false>(a, b, SK_INDEX_PARTS(_i));
}}
#endif"""

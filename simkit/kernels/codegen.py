"""Code generation: IR -> C++ source.

One kernel body is emitted once, as ``template <bool SKC>`` function
(``SKC``: every array argument is contiguous, so addressing is a plain index
the C++ compiler can vectorize). It is wrapped by a CPU entry (a loop over
the launch range, split across threads with OpenMP) and a CUDA ``__global__``
entry (a grid-stride loop). Generated code keeps Python names and carries
``// file.py:line`` comments.
"""
from __future__ import annotations

import os

import numpy as np

from . import analysis, interleave, ir
from . import registry as R
from . import types as T
from .fixed_arrays import writes_local

CPP_KEYWORDS = {
    "auto", "break", "case", "char", "class", "const", "continue", "default", "delete", "do", "double",
    "else", "enum", "extern", "float", "for", "friend", "goto", "if", "inline", "int", "long", "new",
    "operator", "private", "protected", "public", "register", "return", "short", "signed", "sizeof",
    "static", "struct", "switch", "template", "this", "throw", "typedef", "union", "unsigned", "virtual",
    "void", "volatile", "while", "bool", "true", "false", "namespace", "using", "try", "catch", "SKC",
    "sk", "half", "bfloat16", "printf", "main", "signed", "typename", "explicit", "mutable", "export", "asm",
}


def cname(name: str) -> str:
    """A C++-safe identifier for a Python name."""
    return name + "_" if name in CPP_KEYWORDS or name.startswith("_") else name


def ctype(t) -> str:
    """C++ spelling of a simkit type."""
    if T.is_scalar(t):
        return t._ctype
    if T.is_value(t):
        s = t._dtype._ctype
        k = t._kind
        if k == "vector":
            return f"sk::vec_t<{t._shape[0]}, {s}>"
        if k == "matrix":
            return f"sk::mat_t<{t._shape[0]}, {t._shape[1]}, {s}>"
        if k == "quaternion":
            return f"sk::quat_t<{s}>"
        if k == "transformation":
            return f"sk::transform_t<{s}>"
    if isinstance(t, T.FixedArrayType):
        return fixed_ctype(t)
    if isinstance(t, T.IndexedArrayType):
        return f"sk::indexedarray_t<{ctype(t.dtype)}>"
    if isinstance(t, T.ArrayType):
        return f"sk::array_t<{ctype(t.dtype)}>"
    if T.is_struct(t):
        return t._simkit_struct.cname
    if T.is_opaque(t):
        return t._simkit_opaque
    raise TypeError(f"no C++ type for {T.type_name(t)}")


def replay_skips(s: ir.Call) -> bool:
    """A call an adjoint's forward replay leaves out: it writes no memory (but rebuilds thread-local arrays,
    fixed_arrays.py) and prints nothing."""
    return s.kind == "printf" or (s.builtin is not None and not s.builtin.replay and not writes_local(s))


def func_qualifier(fn: ir.Function) -> str:
    """How a @func (and its adjoint) is declared: ``@func(inline=True)`` forces it inline, ``inline=False``
    keeps it a call (core.h), otherwise the compiler decides."""
    inline = getattr(fn, "inline", None)
    return "SK_INLINE" if inline is None else "SK_FORCEINLINE_FN" if inline else "SK_NOINLINE_FN"


def fixed_ctype(t, grads: bool = False) -> str:
    """``sk::fixed_array_t<T, G, ndim, d0, d1, d2, d3>`` (native/fixed_array.h); ``grads``: with gradient
    storage (adjoint code)."""
    dims = ", ".join(str(d) for d in list(t.shape) + [1] * (4 - len(t.shape)))
    return f"sk::fixed_array_t<{ctype(t.dtype)}, {'true' if grads else 'false'}, {len(t.shape)}, {dims}>"


def literal(v: ir.Var) -> str:
    """C++ literal for a constant Var."""
    t, c = v.type, v.const
    if T.is_scalar(t):
        if t is T.bool:
            return "true" if c else "false"
        if t in T.float_types and not np.isfinite(c):
            return f"{t._ctype}({'NAN' if np.isnan(c) else ('INFINITY' if c > 0 else '-INFINITY')})"
        if t is T.float32:
            return f"{np.format_float_scientific(np.float32(c), unique=True)}f"
        if t is T.float64:
            return repr(float(c))
        if t is T.float16 or t is T.bfloat16:
            return f"{t._ctype}({np.format_float_scientific(np.float32(c), unique=True)}f)"
        if t in (T.int64,):
            return f"sk::int64({int(c)}LL)"
        if t in (T.uint64,):
            return f"sk::uint64({int(c)}ULL)"
        if t in (T.uint32,):
            return f"sk::uint32({int(c)}u)"
        return f"{t._ctype}({int(c)})"
    if T.is_value(t):
        s = t._dtype
        comps = ", ".join(literal(ir.Var("c", s, const=x, is_const=True)) for x in c)
        return f"sk::make<{ctype(t)}>({comps})"
    raise TypeError(f"no literal for {T.type_name(t)}")


def ref(v: ir.Var) -> str:
    return literal(v) if v.is_const else v.name


class Emitter:
    """Writes one function body as C++ statements."""

    replay = False  # an adjoint's forward replay: no array writes, no prints (see gen_func)

    def __init__(self, fn: ir.Function, options: dict):
        self.fn = fn
        self.debug = options.get("mode") == "debug"
        self.det = options.get("det_plan")  # deterministic.RecordPlan: a recording GPU variant (its kernel only)
        self.lines: list[str] = []
        self.last_line = None
        self.rel = os.path.basename(fn.filename)

    def w(self, text: str, depth: int):
        self.lines.append("    " * depth + text)

    def comment(self, line: int, depth: int):
        if line and line != self.last_line:
            self.last_line = line
            i = line - self.fn.first_line
            src = self.fn.source_lines[i].strip() if 0 <= i < len(self.fn.source_lines) else ""
            src = src.rstrip("\\ \t")  # a trailing backslash would splice the next C++ line into the comment
            self.w(f"// {self.rel}:{line}: {src}", depth)

    def call_args(self, s: ir.Call) -> tuple[str, list[str]]:
        args = [ref(a) for a in s.args if not (a.is_const and a.type is T.Any)]
        callee = s.callee
        b = s.builtin
        if b is not None and (b.needs_line or (b.checked and self.debug)):
            if b.checked and self.debug:
                head, _, tmpl = callee.partition("<")
                callee = head + "_checked" + ("<" + tmpl if tmpl else "")
            args = [str(s.line)] + args
        return callee, args

    def grad_call(self, s: ir.Call, depth: int):
        """``grad(f)(args)`` (frontend/grad.py): f's adjoint with an adjoint of 1 for its result; the
        arguments' adjoints are the results."""
        ret_type, custom = s.func
        args = [a for a in s.args if not (a.is_const and a.type is T.Any)]
        outs = [s.out] + s.outs
        one = f"{ctype(ret_type)}(1)"
        if custom:  # @func_grad: returns the adjoints (a struct of r0, r1... for several)
            call = f"{s.callee}({', '.join([ref(a) for a in args] + [one])})"
            if len(outs) == 1:
                self.w(f"{outs[0].name} = {call};", depth)
            else:
                self.w(f"{{ auto _g = {call};", depth)
                for k, o in enumerate(outs):
                    self.w(f"  {o.name} = _g.r{k};", depth)
                self.w("}", depth)
            return
        temps = [f"_g{k}" for k in range(len(args))]
        decl = " ".join(f"{ctype(a.type)} {t}{{}};" for a, t in zip(args, temps))
        self.w(f"{{ {decl} {s.callee}({', '.join([ref(a) for a in args] + temps + [one])});", depth)
        for o, t in zip(outs, temps):
            self.w(f"  {o.name} = {t};", depth)
        self.w("}", depth)

    def det_record(self, s: ir.Call, depth: int):
        """A recorded atomic (deterministic.record_plan): its contribution goes to its slots (native/det_record.h)."""
        offset, target = self.det.sites[id(s)]
        seq = "_seq" if self.det.counted else ""  # (slots counted per launch index: the launch index)
        name = f"sk::det_record_{s.builtin.key[len('atomic_'):]}{seq}" + ("_checked" if self.debug else "")
        slot = LAUNCH_INDEX if self.det.counted else f"{LAUNCH_INDEX} * {self.det.per_thread} + {offset}"
        head = ([str(s.line)] if self.debug else []) + [slot, str(target)]
        self.w(f"{name}<SKC>({', '.join(head + [ref(a) for a in s.args])});", depth)

    def block(self, stmts, depth: int):
        for s in stmts:
            self.stmt(s, depth)

    def stmt(self, s, depth: int):
        self.comment(s.line, depth)
        if isinstance(s, ir.Call):
            if self.replay and replay_skips(s):
                return
            if s.kind == "printf":
                fmt = s.callee
                args = [f"double({ref(a)})" if T.is_float(a.type) else ref(a) for a in s.args]
                self.w(f"printf({', '.join([fmt] + args)});", depth)
                return
            if s.kind == "grad":
                self.grad_call(s, depth)
                return
            if self.det is not None and id(s) in self.det.sites:
                self.det_record(s, depth)
                return
            callee, args = self.call_args(s)
            if s.kind == "func":
                if self.replay and s.func.replay_ir is not None:  # @func_replay, @func_native
                    callee = s.func.replay_ir.name
                elif self.replay and analysis.has_side_effects(s.func.ir):
                    callee = replay_name(s.func.ir)
                callee = f"{callee}<SKC>"
            expr = f"{callee}({', '.join(args)})"
            if s.outs:
                tmp = f"_ret_{s.out.name}"
                self.w(f"{{ auto {tmp} = {expr};", depth)
                for k, o in enumerate([s.out] + s.outs):
                    self.w(f"  {o.name} = {tmp}.r{k};", depth)
                self.w("}", depth)
            elif s.out is not None:
                self.w(f"{s.out.name} = {expr};", depth)
            else:
                self.w(f"{expr};", depth)
        elif isinstance(s, ir.Copy):
            self.w(f"{s.out.name} = {ref(s.src)};", depth)
        elif isinstance(s, ir.GetField):
            self.w(f"{s.out.name} = {ref(s.src)}.{s.field};", depth)
        elif isinstance(s, ir.SetField):
            self.w(f"{s.out.name} = {ref(s.src)};", depth)
            self.w(f"{s.out.name}.{s.field} = {ref(s.value)};", depth)
        elif isinstance(s, ir.Tid):
            if len(s.outs) == 1 and self.fn.uses_tid == 1:
                self.w(f"{s.outs[0].name} = sk::tid_first(_bounds, _base, _local);", depth)  # Warp: the first index
            else:
                for k, o in enumerate(s.outs):  # (never negative, said to gcc: array.h then skips the wrap of
                    self.w(f"{o.name} = sk::assume_index(_tid[{k}]);", depth)  # negative indices)
        elif isinstance(s, ir.If):
            self.w(f"if ({ref(s.cond)}) {{", depth)
            self.block(s.body, depth + 1)
            if s.orelse:
                self.w("} else {", depth)
                self.block(s.orelse, depth + 1)
            self.w("}", depth)
        elif isinstance(s, ir.For):
            v, st = s.var.name, s.step
            if st.is_const:
                cond = f"{v} < {ref(s.end)}" if st.const > 0 else f"{v} > {ref(s.end)}"
            else:
                cond = f"({ref(st)} > 0) ? ({v} < {ref(s.end)}) : ({v} > {ref(s.end)})"
            if s.stop:
                cond = f"({cond})" + "".join(f" && !{f.name}" for f in s.stop)
            self.w(f"for ({v} = {ref(s.start)}; {cond}; {v} += {ref(st)}) {{", depth)
            self.block(s.body, depth + 1)
            self.w("}", depth)
        elif isinstance(s, ir.While) and self.batched_while(s, depth):
            pass
        elif isinstance(s, ir.While):
            self.w("while (true) {", depth)
            self.block(s.cond_block, depth + 1)
            self.w(f"if (!({ref(s.cond)})) break;", depth + 1)
            self.block(s.body, depth + 1)
            self.w("}", depth)
        elif isinstance(s, ir.Break):
            self.w("break;", depth)
        elif isinstance(s, ir.Continue):
            self.w("continue;", depth)
        elif isinstance(s, ir.Return):
            if not s.values:
                self.w("return;", depth)
            elif len(s.values) == 1:
                self.w(f"return {ref(s.values[0])};", depth)
            else:
                self.w(f"return {{{', '.join(ref(v) for v in s.values)}}};", depth)
        else:  # pragma: no cover
            raise TypeError(f"cannot emit {type(s).__name__}")

    def batched_while(self, s: ir.While, depth: int, body=None) -> bool:
        """``while next(q, i, ...): body`` with an iterator builtin that declares ``batched`` helpers
        (range, more, take): nested loops, the inner one over a batch of candidates in registers,

            while (range(q, ...)) { while (more(q)) { take(q, i); body } }

        rather than one loop that calls next() per candidate (the hash grid's neighbour loop ran 1.35x
        faster; its candidates are a row of cells at a time). ``continue`` keeps its meaning (the next
        candidate); a body that can leave the loop (break, return) keeps the plain form. False when the
        loop is not of this shape. ``body(depth)`` emits the body (default: the loop's statements; the
        adjoint's forward replay passes its own, which records each iteration)."""
        c = iterator_call(s)
        if c is None or _leaves_loop(s.body):
            return False
        rng, more, take = c.builtin.batched
        q, idx = ref(c.args[0]), ref(c.args[1])
        extra = "".join(f", {ref(a)}" for a in c.args[2:])  # e.g. a ray query's max_dist goes to range()
        self.w(f"while ({rng}({q}{extra})) {{", depth)
        self.w(f"while ({more}({q})) {{", depth + 1)
        self.w(f"{take}({q}, {idx});", depth + 2)
        self.w(f"{s.cond.name} = true;", depth + 2)
        if body is None:
            self.block(s.body, depth + 2)
        else:
            body(depth + 2)
        self.w("}", depth + 1)
        self.w("}", depth)
        self.w(f"{s.cond.name} = false;", depth)
        return True

    def declarations(self, depth: int):
        for v in self.fn.vars:
            self.w(f"{ctype(v.type)} {v.name}{{}};", depth)


def iterator_call(s: ir.While):
    """The ``next(q, i, ...)`` call of a ``while next(q, i, ...):`` loop over an iterator builtin that
    declares ``batched`` helpers (None for any other while loop)."""
    c = s.cond_block[0] if len(s.cond_block) == 1 else None
    b = getattr(c, "builtin", None)
    if isinstance(c, ir.Call) and b is not None and b.batched and c.out is s.cond and len(c.args) >= 2 \
            and not c.outs:
        return c
    return None


def _leaves_loop(stmts) -> bool:
    """A break or return that leaves the enclosing loop (those inside nested loops leave those)."""
    for s in stmts:
        if isinstance(s, (ir.Break, ir.Return)):
            return True
        if isinstance(s, ir.If) and (_leaves_loop(s.body) or _leaves_loop(s.orelse)):
            return True
    return False


def return_ctype(fn: ir.Function) -> str:
    if not fn.return_types:
        return "void"
    if len(fn.return_types) == 1:
        return ctype(fn.return_types[0])
    return f"{fn.name}_ret"


def ret_struct(fn: ir.Function) -> str:
    """The struct a @func of several results returns (``return_ctype``)."""
    fields = " ".join(f"{ctype(t)} r{k};" for k, t in enumerate(fn.return_types))
    return f"struct {fn.name}_ret {{ {fields} }};"


def replay_name(fn: ir.Function) -> str:
    """The variant of a func with side effects that the adjoints' forward replays call (``gen_func``)."""
    return f"replay_{fn.name}"


def gen_func(fn: ir.Function, options: dict, replay: bool = False, results_declared: bool = False) -> str:
    """A @func specialisation as a C++ function template on SKC. ``replay``: the variant that writes no
    array and prints nothing (for the adjoints' forward replays; see ``analysis.has_side_effects``).
    ``results_declared``: the struct of its results came earlier in the unit (``gen_module``)."""
    if getattr(fn, "native", None) is not None and getattr(fn, "ref_params", None):  # (native_refs.py)
        from .native_refs import gen_forward

        return gen_forward(fn)
    if getattr(fn, "native", None) is not None:  # @func_native
        from .native_func import gen_forward

        return gen_forward(fn)
    e = Emitter(fn, options)
    e.replay = replay
    out = []
    if not replay and not results_declared:
        out += [ret_struct(fn)] if len(fn.return_types) > 1 else []
    params = ", ".join(f"{ctype(p.type)} {p.name}" for p in fn.params)
    name = replay_name(fn) if replay else fn.name
    out.append(f"// {e.rel}:{fn.first_line}: @func {name}")
    out.append(f"template <bool SKC>\nstatic {func_qualifier(fn)} {return_ctype(fn)} {name}({params}) {{")
    e.declarations(1)
    e.block(fn.body, 1)
    if fn.return_types:
        e.w(f"return {sk_zero(return_ctype(fn))};", 1)  # unreachable, silences warnings
    out.extend(e.lines)
    out.append("}")
    return "\n".join(out)


#: A body's parameters after its arguments: the launch bounds, and its launch index as ``_base + _local``.
#: ``_base`` is 0 in every launch of at most 2^31 - 1 threads (sk::cpu_run, SK_INDEX_PARTS), so a 1D launch that
#: reads tid() (at most that many threads: launch.check_tid_extent) reads the int32 ``_local`` alone, which the
#: CPU's range loop counts: gcc then sees addresses advance linearly, and vectorizes.
BODY_INDEX = "const sk::launch_bounds_t& _bounds, sk::int64 _base, sk::int32 _local"
LAUNCH_INDEX = "(_base + _local)"


def body_params(fn: ir.Function) -> str:
    """A kernel body's index parameters: :data:`BODY_INDEX`, and for a kernel that reads tid() as several
    indices, those indices (``_tid``), which its callers compute: the CPU range loop's nested loops
    (``sk::tid_loop``), a CUDA entry decomposing its index."""
    return BODY_INDEX + (", const sk::int32* _tid" if fn.uses_tid > 1 else "")


def sk_zero(ct: str) -> str:
    return f"sk::zero<{ct}>()"


def gen_kernel(fn: ir.Function, options: dict) -> str:
    """A kernel: argument struct, templated body, CPU entry and CUDA entry."""
    e = Emitter(fn, options)
    name = fn.name
    out = [args_struct(fn)]
    out.append("template <bool SKC>")
    inline = "CUDA_CALLABLE SK_FORCEINLINE" if getattr(fn, "inline_body", False) else "SK_INLINE"
    out.append(f"static {inline} void {name}_fwd(const {name}_args& _args, {body_params(fn)}) {{")
    for p in fn.params:
        e.w(f"{ctype(p.type)} {p.name} = _args.{p.name};", 1)
    e.declarations(1)
    e.block(fn.body, 1)
    out.extend(e.lines)
    out.append("}")
    out.append(cpu_entry(name, "fwd", analysis.uses_array_slices(fn), tids=fn.uses_tid))
    if interleave.eligible(fn):  # several launch indices per CUDA thread, statement by statement
        out.extend(interleave.gen_interleaved(fn, Emitter(fn, options)))
        out.append(interleave.cuda_entry(name))
    else:
        out.append(cuda_entry(name, "fwd", tids=fn.uses_tid > 1))
    return "\n".join(out)


def args_struct(fn: ir.Function) -> str:
    """A kernel's argument struct. Its first line (``// file.py:N: @kernel name``) starts the kernel's code in a
    module: a module compiled as several units is split there (backends/cpu_units.py)."""
    rel = os.path.basename(fn.filename)
    fields = "\n".join(f"    {ctype(p.type)} {p.name};" for p in fn.params)
    return f"// {rel}:{fn.first_line}: @kernel {fn.name}\nstruct {fn.name}_args {{\n{fields}\n    char _sk_empty;\n}};"


def cpu_entry(name: str, which: str, strided_only: bool = False, tids: int = 1) -> str:
    """The CPU entry: the contiguous body where every array argument is contiguous, unless the kernel
    slices arrays (``strided_only``: its views are strided whatever its arguments are). ``tids``: how many
    launch indices the kernel reads; above 1 the body takes them (:func:`body_params`) from the range loop's
    nested loops (``sk::tid_loop``, native/cpu_launch.h).

    The body is compiled into one range loop per array layout, which ``sk::cpu_run`` (native/cpu_launch.h)
    calls for each OpenMP thread's share, for a serial launch and for each chunk of a huge one. Inlining the
    body into each of those branches made eight copies of a kernel's code to compile, and a module's compile
    time grows with them (docs/benchmarks.md).
    """
    body = f"{name}_{which}"
    run = f"{name}_cpu_{which}_range"
    pick = f"{run}<false>" if strided_only else f"contiguous ? {run}<true> : {run}<false>"
    decomposed = ""
    if tids > 1:  # (a launch of more dimensions than tid() reads: each index decomposed, in a cold copy; it gets
        # the caller's arguments, so that nothing of the fast loop's own escapes and it keeps them in registers)
        decomposed = f"""template <bool SKC>
static __attribute__((noinline, cold)) void {run}_decomposed({name}_args a, sk::launch_bounds_t b, sk::int64 base,
                                                              sk::int32 begin, sk::int32 end) {{
    for (sk::int32 _i = begin; _i < end; ++_i) {{
        sk::int32 _t[4];
        sk::tid_decompose(b, base + _i, _t);
        {body}<SKC>(a, b, base, _i, _t);
    }}
}}
"""
        loop = f"""
    if (b.ndim != {tids}) return {run}_decomposed<SKC>(*static_cast<const {name}_args*>(args), b, base, begin, end);
    sk::tid_loop<{tids}>(b, base, begin, end, [&](sk::int32 _i, const sk::int32* _t) {{
        SK_ASSUME(_i >= 0);
        {body}<SKC>(a, b, base, _i, _t);
    }});"""
    else:
        loop = f"""
    for (sk::int32 _i = begin; _i < end; ++_i) {{ SK_ASSUME(_i >= 0); {body}<SKC>(a, b, base, _i); }}"""
    return f"""#if !SK_CUDA
{decomposed}template <bool SKC>
static SK_RANGE_FN void {run}(const void* args, const sk::launch_bounds_t& bounds, sk::int64 base, sk::int32 begin,
                              sk::int32 end) {{
    const {name}_args a = *static_cast<const {name}_args*>(args);
    const sk::launch_bounds_t b = bounds;{loop}
}}
extern "C" SK_EXPORT void {name}_cpu_{which}(const {name}_args* args, const sk::launch_bounds_t* bounds,
                                             int nthreads, int contiguous) {{
    (void)contiguous;
    sk::cpu_run(nthreads, args, *bounds, {pick});
}}
#endif"""


def cuda_entry(name: str, which: str, enter: str = "", tids: bool = False) -> str:
    """The CUDA entry: a grid-stride loop over the launch indices (``enter``: a statement run first at each;
    ``tids``: the body takes the launch indices, :func:`body_params`)."""
    if tids:
        enter += "sk::int32 _t[4]; sk::tid_decompose(b, _i, _t); "
    call = f"{name}_{which}<false>(a, b, SK_INDEX_PARTS(_i){', _t' if tids else ''});"
    return f"""#if SK_CUDA
extern "C" __global__ void {name}_cuda_{which}({name}_args a, sk::launch_bounds_t b) {{
    for (sk::int64 _i = sk::int64(blockIdx.x) * blockDim.x + threadIdx.x; _i < b.size;
         _i += sk::int64(blockDim.x) * gridDim.x)
        {"{ " + enter if enter else ""}{call}{" }" if enter else ""}
}}
#endif"""


def gen_struct(t) -> str:
    st = t._simkit_struct
    fields = "\n".join(f"    {ctype(ft)} {fname};" for fname, ft in st.fields.items())
    return f"struct {st.cname} {{\n{fields}\n}};"


PRELUDE = """// Generated by simkit {version}. Do not edit: regenerated from Python sources.
{defines}#include "simkit.h"
{extra}
#if !SK_CUDA
#define SK_EXPORT __attribute__((visibility("default")))
#endif
"""


def gen_module(name: str, kernels: list, funcs: list, structs: list, options: dict, version: str,
               adjoint: bool = False) -> str:
    """Source of one compile unit: structs, funcs (callees first), kernels.

    With ``adjoint=True``: the adjoint unit (forward funcs, their adjoints, and each kernel's
    backward entry), compiled separately on the first backward pass.
    """
    defines = "#define SK_DEBUG 1\n" if options.get("mode") == "debug" else ""
    if options.get("det_grad"):  # the recording variant of a backward kernel (native/det_grad.h)
        defines += "#define SK_DET_GRAD 1\n"
    extra = "\n".join(f'#include "{h}"' for h in R.headers())
    from .adjoint import adj_func_signature, gen_adjoints, gen_struct_accum

    parts = [PRELUDE.format(version=version, defines=defines, extra=extra), f"// module: {name}"]
    by_cname = {}  # (identical struct classes, e.g. made twice by one factory function, share a C name)
    structs = [by_cname.setdefault(s._simkit_struct.cname, s) for s in structs
               if s._simkit_struct.cname not in by_cname]
    parts += [gen_struct(s) for s in structs]
    grads = any(getattr(f, "uses_grad", False) for f in list(funcs) + list(kernels))
    if grads:  # grad(f) in forward code calls funcs' adjoints: declared before the funcs, defined after
        parts += [gen_struct_accum(s) for s in structs]
        # (the declarations name the results' structs of funcs of several results: those come first)
        parts += [ret_struct(f) for f in funcs if len(f.return_types) > 1 and getattr(f, "native", None) is None]
        parts += [adj_func_signature(f) + ";" for f in funcs if not getattr(f, "no_adjoint", False)]
    parts += [gen_func(f, options, results_declared=grads) for f in funcs]
    if not adjoint:
        if grads:
            parts += gen_adjoints([], funcs, options)
        parts += [gen_kernel(k, options) for k in kernels]
    else:
        if not grads:
            parts += [gen_struct_accum(s) for s in structs]
        parts += gen_adjoints(kernels, funcs, options)
    return "\n\n".join(parts) + "\n"

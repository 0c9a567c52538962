"""Frontend: Python source (via ``ast``) -> typed IR (``ir.Function``)."""
from __future__ import annotations

import ast
import inspect

from .. import ir
from .. import types as T
from ..errors import CompileError, CompileTypeError
from .assign import AssignMixin
from ..fixed_arrays import FixedArrayMixin
from .builder import FunctionBuilder, Py, SourceInfo, TupleValue
from .funcargs import describe_arg, function_target, is_function_param
from .expressions import ExpressionMixin
from .jumps import lower_jumps
from .refargs import RefArgsMixin
from .grad import GradMixin
from .slices import SliceMixin
from .statements import StatementMixin


class _Predeclare(CompileError):
    """A name first assigned inside a loop is read after it: build again, with it declared first."""

    def __init__(self, name, type_):
        super().__init__(name)
        self.name, self.type = name, type_


class Builder(FixedArrayMixin, RefArgsMixin, GradMixin, SliceMixin, AssignMixin, StatementMixin, ExpressionMixin, FunctionBuilder):
    def lookup(self, name, node):
        if name not in self.symbols and name in self.loop_locals:
            t = self.loop_local_types.get(name)
            if t is not None and (T.is_scalar(t) or T.is_value(t)) and name not in self.predeclared:
                raise _Predeclare(name, t)
            raise self.error(f"'{name}' is first assigned inside a loop; assign it before the loop "
                             f"to use it after the loop", node)
        return super().lookup(name, node)

    def declare_zeros(self, names: dict):
        """``name = zero`` of each type, at the function's start: a value first assigned inside a
        loop and read after it (as Warp declares every variable at the top of the function, zeroed:
        after a loop that ran no iteration it reads zero)."""
        for name, t in names.items():
            zero = 0 if T.is_scalar(t) else tuple([0] * int(T.sizeof(t) // T.sizeof(T.scalar_of(t))))
            self.symbols[name] = self.const(zero, t)

    def call_func(self, fn, args, kw, node, arg_nodes=None):
        """Call a user @func: pick the overload, specialise it for these argument types. ``arg_nodes``: the
        (hoisted) argument nodes, for ref[T] parameters (refargs.py)."""
        takes_functions = any(is_function_param(t) for _, types, _ in fn.overloads for t in types.values())
        for a in list(args) + list(kw.values()):
            if not isinstance(a, ir.Var) and not (isinstance(a, TupleValue) and a.is_values()) and not (
                    takes_functions and isinstance(a, Py)):  # (a function value: funcargs.py)
                raise self.error(f"argument of '{fn.key}' is not a value: {describe_arg(a)}", node)
        error = None
        for bound in self.bind_func_args(fn, args, kw):
            try:
                spec, args = self.pick_overload(fn, bound)
                break
            except CompileError:
                raise  # an error in the func's body: it names its own line
            except TypeError as e:
                error = error or e
        else:
            if error is None:
                sigs = " or ".join(f"{fn.key}{inspect.signature(f)}" for f, _, _ in fn.overloads)
                given = f"{len(args)} positional argument(s)" + (f" and keywords {sorted(kw)}" if kw else "")
                error = TypeError(f"@func '{fn.key}' cannot take {given}; it is {sigs}")
            raise self.error(str(error), node)
        refs = self.ref_targets(fn, spec, node, arg_nodes) if spec.ref_params else []
        if self.is_kernel and self.options.get("differentiable"):
            from ..native_refs import check_differentiable

            check_differentiable(spec, lambda message: self.error(message, node))
        if spec not in self.funcs:
            self.funcs.append(spec)
        outs = [self.new_var(t) for t in spec.return_types]
        args = [v for a in args if not isinstance(a, Py)  # (function values are no runtime arguments)
                for v in (a.flat() if isinstance(a, TupleValue) else [a])]  # (tuples: their values)
        self.emit(ir.Call(out=outs[0] if outs else None, outs=outs[1:], args=args, callee=spec.cname,
                          kind="func", func=spec))
        if refs:  # copy-out: each ref argument takes its parameter's final value (refs.py)
            self.write_back_refs(refs, outs[len(outs) - len(refs):])
            outs = outs[:len(outs) - len(refs)]
        if len(outs) > 1:
            return TupleValue(outs)
        return outs[0] if outs else None

    def bind_func_args(self, fn, args, kw):
        """Candidate positional argument lists: keywords bound and defaults filled in, per overload."""
        if not kw and any(len(types) == len(args) for _, types, _ in fn.overloads):
            return [list(args)]
        out = []
        for pyfunc, _, _ in fn.overloads:
            try:
                ba = inspect.signature(pyfunc).bind(*args, **kw)
            except TypeError:
                continue
            ba.apply_defaults()
            vals = [v if isinstance(v, (ir.Var, TupleValue, Py)) else self.default_value(v)
                    for v in ba.arguments.values()]
            if vals not in out:
                out.append(vals)
        return out

    def default_value(self, v):
        """A parameter's default: Python number literals adapt to the parameter type, like literals."""
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            return self.const(v)
        if isinstance(v, tuple):  # a tuple parameter's default
            return TupleValue(self.default_value(x) for x in v)
        value = self.to_value(v)
        if isinstance(value, Py) and function_target(v) is not None:  # a Function parameter's default
            return value
        if not isinstance(value, ir.Var):
            raise TypeError(f"default value {v!r} is not usable in kernels")
        return value

    def pick_overload(self, fn, args):
        """Overloads matching the literals' own types (``5`` is int32) win over ones that need a conversion."""
        if len(fn.overloads) > 1 and any(getattr(a, "weak", False) for a in args):
            strong = [ir.Var(a.name, a.type, const=a.const, is_const=a.is_const) if getattr(a, "weak", False) else a
                      for a in args]
            try:
                return fn.specialize(strong, self)
            except TypeError:
                pass
        return fn.specialize(args, self)


KERNEL_RETURN_ERROR = ("kernels cannot return a value. Write results to output arguments, and omit the return "
                       "annotation or use `-> None`.")


def check_kernel_returns(b, src):
    """A kernel returns nothing: no ``return value`` (``return None`` included) and no return annotation
    other than ``None``."""
    ann = getattr(src.pyfunc, "__annotations__", {}).get("return", inspect.Signature.empty)
    if isinstance(ann, str):
        try:
            ann = eval(ann, {**src.globals, **src.closure})  # noqa: S307 - the user's own annotation
        except Exception:
            pass
    if ann not in (inspect.Signature.empty, None, type(None), "None"):
        raise b.error(KERNEL_RETURN_ERROR, src.node.returns or src.node, CompileTypeError)
    for node in ast.walk(src.node):
        if isinstance(node, ast.Return) and node.value is not None:
            raise b.error(KERNEL_RETURN_ERROR, node, CompileTypeError)


def return_annotation(src):
    """The concrete type(s) a @func's return annotation declares: a list of types (a ``tuple[...]`` annotation:
    one per value), or None where there is none to check (absent, ``None``, generic, not a kernel type)."""
    ann = getattr(src.pyfunc, "__annotations__", {}).get("return", inspect.Signature.empty)
    if isinstance(ann, str):
        try:
            ann = eval(ann, {**src.globals, **src.closure})  # noqa: S307 - the user's own annotation
        except Exception:
            return None
    if ann in (inspect.Signature.empty, None, type(None)):
        return None
    try:
        t = T.as_kernel_type(ann)
    except TypeError:
        return None
    if T.is_generic(t):
        return None
    return list(t.types) if isinstance(t, T.TupleType) else [t]


def build(pyfunc, param_types: dict, *, is_kernel: bool, name: str, options: dict | None = None,
          src: SourceInfo | None = None, ref_params: list | None = None) -> ir.Function:
    """Translate ``pyfunc`` with the given parameter types into an ``ir.Function``. ``ref_params``: the
    ref[T] parameters, whose final values are returned after the results (refs.py)."""
    src = src or SourceInfo(pyfunc)
    b = Builder(src, name=name, is_kernel=is_kernel, param_types=param_types, options=options)
    b.ref_params = list(ref_params or [])
    if not getattr(src, "jumps_lowered", False):
        if is_kernel:  # checked before lowering, which drops kernel return values
            check_kernel_returns(b, src)
        lower_jumps(src.node, is_kernel)
        src.jumps_lowered = True
    predeclared = {}
    declared = None if is_kernel else return_annotation(src)
    while True:
        b.predeclared, b.loop_local_types = predeclared, {}
        b.declared_returns = declared
        b.declare_zeros(predeclared)
        try:
            b.exec_block(src.node.body)
            break
        except _Predeclare as p:
            predeclared[p.name] = p.type
            b = Builder(src, name=name, is_kernel=is_kernel, param_types=param_types, options=options)
            b.ref_params = list(ref_params or [])
    if b.ref_params and not b.terminated:  # falls off its end: the ref values are still returned
        b.stmt_Return(ast.copy_location(ast.Return(value=None), src.node.body[-1]))
    body = b.blocks[0]  # after lowering, a function that falls off its end returns zero values (as Warp)
    fn = ir.Function(name=name, params=b.params, body=body, vars=b.vars,
                     return_types=b.return_types or [], is_kernel=is_kernel, filename=src.filename,
                     first_line=src.first_line, source_lines=src.lines, uses_tid=b.uses_tid,
                     funcs=b.funcs, structs=b.structs)
    fn.static_values = b.static_values
    fn.uses_grad = b.uses_grad
    return fn


__all__ = ["build", "SourceInfo", "T"]

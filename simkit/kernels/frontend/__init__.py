"""Frontend: Python source (via ``ast``) -> typed IR (``ir.Function``)."""
from __future__ import annotations

from .. import ir
from .. import types as T
from .builder import FunctionBuilder, SourceInfo
from .expressions import ExpressionMixin
from .statements import StatementMixin


class Builder(StatementMixin, ExpressionMixin, FunctionBuilder):
    def lookup(self, name, node):
        if name not in self.symbols and name in self.loop_locals:
            raise self.error(f"'{name}' is first assigned inside a loop; assign it before the loop "
                             f"to use it after the loop", node)
        return super().lookup(name, node)

    def call_func(self, fn, args, kw, node):
        """Call a user @func: pick the overload, specialise it for these argument types."""
        if kw:
            raise self.error(f"@func '{fn.key}' does not take keyword arguments in kernels", node)
        for a in args:
            if not isinstance(a, ir.Var):
                raise self.error(f"argument of '{fn.key}' is not a value", node)
        try:
            spec, args = fn.specialize(args, self)
        except TypeError as e:
            raise self.error(str(e), node) from None
        if spec not in self.funcs:
            self.funcs.append(spec)
        outs = [self.new_var(t) for t in spec.return_types]
        self.emit(ir.Call(out=outs[0] if outs else None, outs=outs[1:], args=args, callee=spec.cname,
                          kind="func", func=spec))
        if len(outs) > 1:
            from .builder import TupleValue

            return TupleValue(outs)
        return outs[0] if outs else None


def build(pyfunc, param_types: dict, *, is_kernel: bool, name: str, options: dict | None = None,
          src: SourceInfo | None = None) -> ir.Function:
    """Translate ``pyfunc`` with the given parameter types into an ``ir.Function``."""
    src = src or SourceInfo(pyfunc)
    b = Builder(src, name=name, is_kernel=is_kernel, param_types=param_types, options=options)
    b.exec_block(src.node.body)
    body = b.blocks[0]
    if not is_kernel and b.return_types and not b.terminated:
        # a function that can fall off its end without returning its declared values
        if not _always_returns(body):
            raise b.error(f"function '{src.pyfunc.__qualname__}' does not return a value on every path",
                          src.node)
    fn = ir.Function(name=name, params=b.params, body=body, vars=b.vars,
                     return_types=b.return_types or [], is_kernel=is_kernel, filename=src.filename,
                     first_line=src.first_line, source_lines=src.lines, uses_tid=b.uses_tid,
                     funcs=b.funcs, structs=b.structs)
    fn.static_values = b.static_values
    return fn


def _always_returns(stmts) -> bool:
    for s in stmts:
        if isinstance(s, ir.Return):
            return True
        if isinstance(s, ir.If) and _always_returns(s.body) and _always_returns(s.orelse):
            return True
    return False


__all__ = ["build", "SourceInfo", "T"]

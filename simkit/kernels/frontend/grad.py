"""``grad(f)(args)`` inside kernels (Warp's ``wp.grad``): the gradient of ``f``'s one scalar result with
respect to each argument, computed in forward code by ``f``'s adjoint with an adjoint of 1.

The call of ``f`` is emitted first (it resolves the builtin's overload or specialises the @func, with the
arguments converted as for the call itself); a ``grad`` statement then calls the adjoint. A @func's adjoint
lives in the adjoint unit: a module that takes gradients in forward code also compiles its funcs' adjoints
into its forward unit (codegen.gen_module). Gradients of gradients are not taken: the adjoint pass treats
the result as a constant. A function value given to a Function parameter is no argument of the compiled
call, so it has no gradient: ``grad(apply)(g, x)`` is the gradient with respect to ``x``.
"""
from __future__ import annotations

from .. import ir
from .. import types as T
from ..registry import adjoint_name
from .builder import Py, TupleValue


class GradMixin:
    def call_grad(self, fn, args: list, node):
        from ..decorators import Function

        if not any(isinstance(a, ir.Var) for a in args) or not all(isinstance(a, (ir.Var, Py)) for a in args):
            raise self.error("grad(f)(...) takes the values f takes", node)
        before = len(self.blocks[-1])
        name = getattr(fn, "__name__", repr(fn))
        if isinstance(fn, Function):
            result = self.call_func(fn, list(args), {}, node)
        elif getattr(fn, "_simkit_builtin", None) is not None:
            result = self.call_builtin(fn._simkit_builtin, list(args), node)
        else:
            raise self.error(f"grad() takes a builtin or a @func, got {name}", node)
        call = next((s for s in self.blocks[-1][before:] if isinstance(s, ir.Call) and s.out is result), None)
        if not isinstance(call, ir.Call) or call.kind not in ("builtin", "func") or call.outs:
            raise self.error(f"grad({name}): needs a function of one result called with variables", node)
        if not (isinstance(result, ir.Var) and T.is_scalar(result.type) and T.is_float(result.type)):
            raise self.error(f"grad({name}): the result must be one floating-point scalar, got "
                             f"{T.type_name(getattr(result, 'type', None))}", node)
        if call.kind == "builtin":
            if not call.builtin.differentiable:
                raise self.error(f"grad({name}): {name} is not differentiable", node)
            callee, custom = adjoint_name(call.callee), False
        elif call.func.grad_ir is not None:  # @func_grad: returns the adjoints
            callee, custom = f"{call.func.grad_ir.name}<SKC>", True
        else:
            callee, custom = f"adj_{call.func.ir.name}<SKC>", False
        outs = [self.new_var(a.type) for a in call.args]
        self.emit(ir.Call(out=outs[0], outs=outs[1:], args=list(call.args), callee=callee, kind="grad",
                          func=(result.type, custom)))
        self.uses_grad = True
        return outs[0] if len(outs) == 1 else TupleValue(outs)

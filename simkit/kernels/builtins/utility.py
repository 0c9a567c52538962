"""Logical operators, printing, expectations."""
from ..registry import add_builtin
from .. import types as T
from ..types import Any, Scalar, int32, bool as bool_t


def _same_types(info):
    return len(set(info.arg_types[:2])) == 1


add_builtin("logical_and", {"a": bool_t, "b": bool_t}, bool_t, differentiable=False, hidden=True,
            doc="a and b", group="logic")
add_builtin("logical_or", {"a": bool_t, "b": bool_t}, bool_t, differentiable=False, hidden=True,
            doc="a or b", group="logic")
add_builtin("logical_not", {"a": bool_t}, bool_t, differentiable=False, hidden=True, doc="not a", group="logic")
add_builtin("logical_not", {"a": Scalar}, bool_t, differentiable=False, hidden=True, doc="not a", group="logic")
add_builtin("nonzero_bool", {"a": Scalar}, bool_t, differentiable=False, hidden=True,
            doc="Truth value of a number (used for `if x:`).", group="logic")

add_builtin("print", {"value": Any}, None, side_effects=True, replay=False, differentiable=False,
            doc="Print a value from a kernel (one line per thread).", group="utility")
add_builtin("expect_eq", {"a": Any, "b": Any}, None, native="sk::expect_eq", side_effects=True, replay=False,
            differentiable=False, match=_same_types, needs_line=True,
            doc="Report an error (raised after the launch) if a != b.", group="utility")
add_builtin("expect_neq", {"a": Any, "b": Any}, None, native="sk::expect_neq", side_effects=True, replay=False,
            differentiable=False, match=_same_types, needs_line=True,
            doc="Report an error (raised after the launch) if a == b.", group="utility")
add_builtin("expect_near", {"a": Any, "b": Any, "tolerance": Scalar}, None, native="sk::expect_near",
            side_effects=True, replay=False, differentiable=False, match=_same_types, needs_line=True,
            defaults={"tolerance": 1.0e-6},
            doc="Report an error (raised after the launch) if |a - b| > tolerance.", group="utility")
add_builtin("assert_true", {"cond": bool_t}, None, native="sk::assert_true", checked=True, side_effects=True,
            replay=False, differentiable=False, hidden=True,
            doc="``assert cond`` in a kernel: in debug mode a failure raises after the launch.", group="utility")
add_builtin("zero_like", {"x": Any}, lambda info: info.arg_types[0], native="sk::zero_like", differentiable=False,
            hidden=True, doc="The zero value of x's type.", group="utility")


def _an_array(info, result=None):
    """``grad_array``/``has_grad`` (``adjoint[E]`` in a @func_grad): E must be an array where it is not a parameter."""
    t = info.arg_types[0]
    if not isinstance(t, T.ArrayType):
        raise TypeError(f"adjoint[...] of a {T.type_name(t)} that is not a parameter of the function: the adjoint "
                        f"of a local or a struct field is taken only of an array (its gradient array)")
    return t if result is None else result


add_builtin("grad_array", {"a": Any}, _an_array, native="sk::grad_array", differentiable=False,
            hidden=True, doc="The gradient of array a as an array (adjoint[a] in a @func_grad).", group="utility")
add_builtin("has_grad", {"a": Any}, lambda info: _an_array(info, bool_t), native="sk::has_grad", differentiable=False,
            hidden=True,
            doc="Whether array a has a gradient (guards adjoint[a] updates in a @func_grad).", group="utility")
add_builtin("block_dim", {}, int32, differentiable=False,
            doc="The number of threads in the current block: the launch's block_dim on a GPU, 1 on the CPU (one "
                "thread per block, as Warp's CPU launches).", group="utility")
add_builtin("breakpoint", {}, None, side_effects=True, replay=False, differentiable=False,
            doc="Stop in an attached native debugger (gdb, cuda-gdb); a no-op without one.", group="utility")

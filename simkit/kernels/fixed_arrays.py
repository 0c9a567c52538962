"""Fixed-size arrays made inside kernels and @funcs (Warp's ``fixedarray``)::

    @sk.kernel
    def k(out: sk.array(dtype=float)):
        tmp = sk.zeros(shape=(2, 3), dtype=float)   # in the thread's own memory
        for i in range(2):
            for j in range(3):
                tmp[i, j] = float(i * 3 + j)
        out[sk.tid()] = tmp[1][2]

The shape is a compile-time constant; ``empty`` leaves the elements uninitialised. Such an array is
indexed, viewed (``tmp[1]``), sliced, passed to @funcs (which write into it) and returned from them
(by value) like any array; ``fixedarray(shape=..., dtype=...)`` annotates such a return.

Unlike Warp's (documented not differentiable), gradients flow through them: adjoint code rebuilds the
array in its replay (writes to thread-local arrays are replayed, unlike writes to memory) and gives it
gradient storage of its own, which the array builtins' adjoints use as any array's gradient.
"""
from __future__ import annotations

from . import ir
from . import types as T
from .errors import CompileLimitError


class fixedarray:
    """The type of a fixed-size array made in a kernel: ``fixedarray(shape=(2, 3), dtype=float)`` (a @func's
    return annotation). Not an array of the Python scope."""

    def __init__(self, dtype=T.Any, shape=None):
        if shape is None:
            raise TypeError("fixedarray needs its shape: fixedarray(shape=(2, 3), dtype=float)")
        shape = (shape,) if isinstance(shape, int) else tuple(shape)
        self.type = fixed_type(T.normalize_dtype(dtype), shape)

    def __simkit_type__(self):
        return self.type

    def __repr__(self):
        return repr(self.type)


def fixed_type(dtype, shape) -> T.FixedArrayType:
    if not 1 <= len(shape) <= 4 or not all(isinstance(d, int) and d > 0 for d in shape):
        raise TypeError(f"a fixed-size array has 1 to 4 dimensions of positive constant sizes, got shape {shape}")
    return T.FixedArrayType(dtype, shape)


def is_local(v) -> bool:
    """Is this value an array in the thread's own memory (a fixed-size array or a view of one)?"""
    return isinstance(v, ir.Var) and isinstance(v.type, T.LocalArrayType)


def writes_local(s) -> bool:
    """A call that may write a thread-local array (an array builtin on one, a func receiving one): adjoint
    code replays it, as it rebuilds the array (the replay skips writes to memory)."""
    if not isinstance(s, ir.Call) or s.kind not in ("builtin", "func"):
        return False
    if s.kind == "builtin" and (s.builtin is None or s.builtin.replay):
        return False
    return any(is_local(a) for a in s.args)


def param_type(t):
    """The type a @func parameter takes for an argument of type ``t``: a fixed-size array is passed as a view
    of its elements (the callee writes into the caller's array, as Warp's do)."""
    if isinstance(t, T.FixedArrayType):
        return T.local_array_type(t.dtype, t.ndim)
    return t


class FixedArrayMixin:
    """The frontend's side: ``zeros(shape=..., dtype=...)`` / ``empty(...)`` in kernels."""

    def eval_fixed_array(self, which: str, args, kw, node):
        if which == "array":
            return self.eval_array_from_ptr(args, kw, node)
        names = ["shape", "dtype"]
        if len(args) > len(names):
            raise self.error(f"{which}() in a kernel takes shape and dtype", node)
        given = dict(zip(names, args))
        for k, v in kw.items():
            if k not in names or k in given:
                raise self.error(f"{which}() in a kernel takes shape and dtype, got '{k}'", node)
            given[k] = v
        shape = given.get("shape")
        values = list(shape) if isinstance(shape, tuple) else [shape]
        if shape is None or not all(isinstance(v, ir.Var) and v.is_const and T.is_int(v.type) for v in values):
            raise self.error(f"the `shape` argument must be specified as a constant when "
                             f"{'zero-initializing' if which == 'zeros' else 'allocating'} an array", node,
                             CompileLimitError)
        dtype = given.get("dtype")
        if dtype is None:
            dtype = T.float32
        elif isinstance(dtype, ir.Var) and dtype.is_const and dtype.type is T.Any:  # (frontend type_arg)
            dtype = dtype.const
        else:
            dtype = getattr(dtype, "obj", dtype)
        if not (T.is_scalar(dtype) or T.is_value(dtype) or T.is_struct(dtype)):
            raise self.error(f"{which}(): dtype must be a scalar, vector, matrix or struct type, got {dtype!r}", node)
        try:
            t = fixed_type(dtype, tuple(int(v.const) for v in values))
        except TypeError as e:
            raise self.error(str(e), node) from None
        out = self.new_var(t)
        self.emit(ir.Call(out=out, args=[], callee=f"sk::fixed_{which}<{self.ctype(t)}>", kind="make"))
        return out

    def eval_array_from_ptr(self, args, kw, node):
        """``array(ptr=p, shape=(n, m), dtype=T)`` in a kernel: a contiguous array over the memory at ``p`` (a
        uint64 address, such as ``a.ptr``), without gradient."""
        if args or set(kw) - {"ptr", "shape", "dtype"} or "ptr" not in kw or "shape" not in kw:
            raise self.error("array() in a kernel takes keywords ptr=, shape= and dtype= (an array over the memory "
                             "at ptr)", node)
        shape = kw["shape"]
        dims = list(shape) if isinstance(shape, tuple) else [shape]
        if not 1 <= len(dims) <= 4 or not all(isinstance(d, ir.Var) and T.is_int(d.type) for d in dims):
            raise self.error("array(ptr=..., shape=...): the shape is 1 to 4 integers", node)
        dtype = kw.get("dtype")
        if dtype is None:
            dtype = ir.Var("type", T.Any, const=T.float32, is_const=True)
        ptr = kw["ptr"]
        if isinstance(ptr, ir.Var) and ptr.type is not T.uint64 and T.is_int(ptr.type):
            ptr = self.call_builtin("cast", [ptr], node, target=T.uint64)
        return self.call_builtin("array_from_ptr", [ptr, dtype] + dims, node)

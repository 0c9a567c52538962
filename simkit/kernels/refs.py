"""Pass-by-reference parameters of @funcs (Warp's ``wp.ref[T]``).

A parameter annotated ``sk.ref[T]`` makes the caller's storage an in/out value of the call::

    @sk.func
    def bump(x: sk.ref[sk.int32]):
        x += 1

    @sk.kernel
    def k(a: sk.array(dtype=sk.int32)):
        n = sk.int32(0)
        bump(n)          # n is 1 now
        bump(a[0])       # so is an array element, a struct field, a vector component...

The argument must name storage: a local variable (not one bound to an untyped literal), an array
element, a field or component of one of these. Literals, expressions and function results are refused.

Lowering (frontend/__init__.py ``call_func``): copy-in/copy-out. The callee takes the value and returns
its final value as an extra result; the caller then assigns that result back to the argument, as the
statement ``arg = result`` would. The IR stays free of aliasing, so the adjoint of the call is the
adjoint of an ordinary function of several results, and gradients flow through ref parameters exactly.
(One difference from a C++ reference: passing the same storage to two ref parameters of one call
writes it back twice, the later parameter last.) A ref to an array is the array handle itself.
"""
from __future__ import annotations


class Reference:
    """The annotation ``ref[T]``: a parameter passed by reference, of value type ``T``."""

    __slots__ = ("dtype",)

    def __init__(self, dtype):
        from . import types as T

        if isinstance(dtype, Reference):
            raise TypeError("ref[ref[T]] is not a type: a reference to a reference")
        try:
            T.as_kernel_type(dtype)
        except TypeError as e:
            raise TypeError(f"ref[{dtype!r}]: {e}") from None
        self.dtype = dtype

    @property
    def value_type(self):
        return self.dtype

    def __eq__(self, other):
        return isinstance(other, Reference) and other.dtype == self.dtype

    def __hash__(self):
        return hash(("simkit.ref", self.dtype))

    def __repr__(self):
        from . import types as T

        return f"wp.ref[{T.type_name(T.as_kernel_type(self.dtype))}]"


class _RefFactory:
    """``ref[T]`` builds the annotation (``ref`` itself is no type)."""

    def __getitem__(self, dtype):
        return Reference(dtype)

    def __repr__(self):
        return "simkit.ref"


ref = _RefFactory()


def is_ref(annotation) -> bool:
    return isinstance(annotation, Reference)


def ref_params(annotations: dict) -> list:
    """Names of the parameters annotated ``ref[T]``, in order."""
    return [name for name, ann in annotations.items() if isinstance(ann, Reference)]


def writes_back(t) -> bool:
    """Does a ref parameter of concrete type ``t`` return its final value (copy-out)? Arrays do not: a
    ref to an array is its handle, whose elements the callee writes in place."""
    from . import types as T

    return not isinstance(t, T.ArrayType)


def address_of(x):
    """``address_of(storage)`` in kernels: the uint64 address of a variable, an array element, or a field
    or component of one (for native code: ``*(float*)ptr = ...``). Kernel-only."""
    raise RuntimeError("address_of() can only be called inside kernels and @funcs")


address_of._simkit_address_of = True

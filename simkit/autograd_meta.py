"""What the gradient tools know about a kernel or Python function: its name, argument labels and array dtypes
(``FunctionMetadata``, Warp's name), and the helpers that turn arrays into flat float64 component vectors."""
from __future__ import annotations

import inspect

import numpy as np

from .kernels import types as T
from .runtime.array import array


def is_float_array(a) -> bool:
    return isinstance(a, array) and (T.is_scalar(a.dtype) or T.is_value(a.dtype)) and T.is_float(
        T.scalar_of(a.dtype))


def flat(a: array) -> np.ndarray:
    """The scalar components of ``a`` in order, as float64."""
    return np.ascontiguousarray(a.numpy()).reshape(-1).astype(np.float64)


def components(dtype) -> int | None:
    """Scalar components per element of ``dtype`` (1 for a scalar; None for a generic type)."""
    if T.is_generic(dtype):
        return None
    if T.is_scalar(dtype):
        return 1
    return getattr(dtype, "_length_", None)


class FunctionMetadata:
    """Name, argument labels, strides and array dtypes (None for a non-array) of a kernel or function whose
    Jacobians are computed; ``jacobian_plot`` labels its axes with it."""

    def __init__(self, key: str | None = None, input_labels: list | None = None,
                 output_labels: list | None = None, input_strides: list | None = None,
                 output_strides: list | None = None, input_dtypes: list | None = None,
                 output_dtypes: list | None = None):
        self.key = key
        self.input_labels, self.output_labels = input_labels, output_labels
        self.input_strides, self.output_strides = input_strides, output_strides
        self.input_dtypes, self.output_dtypes = input_dtypes, output_dtypes

    @property
    def is_empty(self) -> bool:
        return self.key is None

    def input_is_array(self, i: int) -> bool:
        return self.input_dtypes[i] is not None

    def output_is_array(self, i: int) -> bool:
        return self.output_dtypes[i] is not None

    def update_from_kernel(self, kernel, inputs):
        """Labels from the kernel's parameter names: the first ``len(inputs)`` are the inputs."""
        names = list(kernel.param_names)
        n = len(inputs)
        self.key = kernel.key
        self.input_labels, self.output_labels = names[:n], names[n:]
        params = [kernel.param_types[name] for name in names]
        self.input_strides, self.input_dtypes = [], []
        for value in inputs:
            is_arr = isinstance(value, array)
            self.input_strides.append(value.strides if is_arr else None)
            self.input_dtypes.append(value.dtype if is_arr else None)
        self.output_strides, self.output_dtypes = [], []
        for p in params[n:]:
            dt = getattr(p, "dtype", None)  # (an array annotation's dtype; None for a scalar parameter)
            self.output_strides.append(None)
            self.output_dtypes.append(dt)

    def update_from_function(self, function, inputs, outputs=None):
        """Labels from the function's parameter names; outputs are named ``output_0``, ``output_1``, ..."""
        self.key = getattr(function, "__name__", type(function).__name__)
        self.input_labels = list(inspect.signature(function).parameters)
        if outputs is None:
            outputs = function(*inputs)
        outputs = as_output_list(outputs)
        self.output_labels = [f"output_{i}" for i in range(len(outputs))]
        self.input_strides = [a.strides if isinstance(a, array) else None for a in inputs]
        self.input_dtypes = [a.dtype if isinstance(a, array) else None for a in inputs]
        self.output_strides = [a.strides if isinstance(a, array) else None for a in outputs]
        self.output_dtypes = [a.dtype if isinstance(a, array) else None for a in outputs]

    def resolve(self, mask, n_inputs: int) -> set:
        """``input_output_mask`` entries (names or indices) as {(input index, output index)}."""
        pairs = set()
        for entry in mask or ():
            if len(entry) != 2:
                raise ValueError(f"input_output_mask entry {entry!r} must be an (input, output) pair")
            i = self._index(entry[0], self.input_labels, "input")
            o = self._index(entry[1], self.output_labels, "output")
            pairs.add((i, o))
        return pairs

    def _index(self, which, labels, kind):
        if isinstance(which, (int, np.integer)):
            return int(which)
        if which in (labels or []):
            return labels.index(which)
        raise ValueError(f"input_output_mask names {kind} '{which}', but '{self.key}' has the {kind}s "
                         f"{list(labels or [])}")


def as_output_list(outputs) -> list:
    if isinstance(outputs, array):
        return [outputs]
    if isinstance(outputs, (list, tuple)):
        return list(outputs)
    raise TypeError(f"the function must return an array or a list of arrays, got {type(outputs).__name__}")

"""Slices of vectors, matrices, quaternions and transforms inside kernels, as in Warp.

``v[1:3]`` is a vector of two components, ``m[:, 0]`` a column, ``m[0:2, 1:3]`` a 2x2 matrix;
``v[1:3] = w`` and ``v[1:3] += w`` write those components. Slice bounds are compile-time constants
(the result's type depends on them); a plain index next to a slice may be a variable. Reads are
built from ``extract`` and a constructor, writes from ``assign``, so gradients flow as through
single components.
"""
from __future__ import annotations

import ast
import itertools

from .. import ir
from .. import types as T
from .builder import describe


def has_slice(slice_node) -> bool:
    return isinstance(slice_node, ast.Slice) or (
        isinstance(slice_node, ast.Tuple) and any(isinstance(e, ast.Slice) for e in slice_node.elts))


class SliceMixin:
    def _slice_bound(self, node):
        if node is None:
            return None
        v = self.eval_value(node)
        if not (v.is_const and T.is_int(v.type)):
            raise self.error(f"slice bounds must be integer constants, got {describe(v)}", node)
        return int(v.const)

    def slice_selection(self, t, slice_node, node) -> list:
        """Per axis of value type ``t``: the list of indices a slice takes, or the index Var of a plain index."""
        elts = slice_node.elts if isinstance(slice_node, ast.Tuple) else [slice_node]
        shape = t._shape
        if len(elts) > len(shape):
            raise self.error(f"too many indices ({len(elts)}) for {T.type_name(t)}", node)
        out = []
        for axis, e in enumerate(elts):
            if isinstance(e, ast.Slice):
                bounds = [self._slice_bound(p) for p in (e.lower, e.upper, e.step)]
                if bounds[2] == 0:
                    raise self.error("slice step cannot be zero", e)
                out.append(list(range(*slice(*bounds).indices(shape[axis]))))
            else:
                v = self.eval_value(e)
                if not T.is_int(v.type):
                    raise self.error(f"index {axis} is {describe(v)}; indices must be integers", e)
                out.append(v)
        out += [list(range(shape[axis])) for axis in range(len(elts), len(shape))]
        if any(isinstance(s, list) and not s for s in out):  # empty: no components (a matrix's shape is (0, 0))
            out = [[] if isinstance(s, list) else s for s in out]
        return out

    def _slice_parts(self, sel):
        """(the sliced axes' lengths, [(index Vars into the base, position in the slice's value)])."""
        dims = [len(s) for s in sel if isinstance(s, list)]
        axes = [list(enumerate(s)) if isinstance(s, list) else [(None, s)] for s in sel]
        parts = []
        for combo in itertools.product(*axes):
            idx = [self.const(i, T.int32) if isinstance(i, int) else i for _, i in combo]
            pos = [k for k, _ in combo if k is not None]
            parts.append((idx, pos))
        return dims, parts

    def _slice_type(self, dims, dtype):
        if len(dims) == 1:
            return T.vector(dims[0], dtype)
        return T.matrix((0, 0) if 0 in dims else tuple(dims), dtype)  # (as in Warp, all empty matrices are 0x0)

    def read_slice(self, base, slice_node, node):
        dims, parts = self._slice_parts(self.slice_selection(base.type, slice_node, node))
        comps = [self.call_builtin("extract", [base] + idx, node) for idx, _ in parts]
        return self.construct(self._slice_type(dims, base.type._dtype), comps, {}, node)

    def assign_slice(self, target, value, node):
        """``base[slice] = value``: each component of the slice from ``value`` (of the slice's shape)."""
        base = self.eval_value(target.value)
        dims, parts = self._slice_parts(self.slice_selection(base.type, target.slice, node))
        want = self._slice_type(dims, base.type._dtype)
        if not (isinstance(value, ir.Var) and T.is_value(value.type) and value.type._shape == want._shape):
            raise self.error(f"cannot assign {describe(value)} to a slice of shape {want._shape}; "
                             f"assign a {T.type_name(want)}", node)
        new = base
        for idx, pos in parts:
            comp = self.call_builtin("extract", [value] + [self.const(k, T.int32) for k in pos], node)
            comp = self.literal_as(comp, base.type._dtype)
            new = self.call_builtin("assign", [new] + idx + [comp], node)
        self.assign_to(target.value, new)

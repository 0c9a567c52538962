"""Array algorithms, as Warp's ``wp.utils``: reductions, prefix sums, sorts, casts, run-length encoding, graph
colouring.

Each is written in simkit's kernel language and runs on every device, in parallel (block-wise on the CPU).
Argument order, accepted dtypes and error messages follow Warp 1.19 (docs/utils.md).
"""
from .cast import array_cast
from . import deterministic_gpu  # noqa: F401  (deterministic GPU launches in parallel: registers itself)
from . import deterministic_grad  # noqa: F401  (and their backward launches)
from .coloring import (ColoringAlgorithm, GraphColoringAlgorithm, graph_coloring_assign, graph_coloring_balance,
                       graph_coloring_get_groups)
from .reduce import array_inner, array_sum
from .rle import runlength_encode
from .scan import array_scan
from .segmented import segmented_sort_pairs
from .sort import radix_sort_pairs

__all__ = ["ColoringAlgorithm", "GraphColoringAlgorithm", "array_cast", "array_inner", "array_scan", "array_sum",
           "graph_coloring_assign", "graph_coloring_balance", "graph_coloring_get_groups", "radix_sort_pairs",
           "runlength_encode", "segmented_sort_pairs"]

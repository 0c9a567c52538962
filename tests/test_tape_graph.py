"""Tape scopes (``record_scope_begin`` / ``record_scope_end``, as in Warp) and ``Tape.visualize``'s
GraphViz source: which operations, arrays, edges and clusters it draws."""
import re

import numpy as np
import pytest

import simkit as sk


@sk.kernel
def axpy(x: sk.array(dtype=float), y: sk.array(dtype=float)):
    i = sk.tid()
    y[i] = y[i] + 2.0 * x[i]


@sk.kernel
def total(y: sk.array(dtype=float), out: sk.array(dtype=float)):
    sk.atomic_add(out, 0, y[sk.tid()])


def _record():
    x = sk.array(np.ones(4), dtype=float, requires_grad=True)
    y = sk.zeros(4, dtype=float, requires_grad=True)
    out = sk.zeros(1, dtype=float, requires_grad=True)
    tape = sk.Tape()
    with tape:
        tape.record_scope_begin("steps", {"n": 3})
        for _ in range(3):
            sk.launch(axpy, 4, inputs=[x, y])
        tape.record_scope_end()
        sk.launch(total, 4, inputs=[y, out])
    return tape, x, y, out


def test_scopes_are_recorded_and_empty_ones_dropped():
    tape, *_ = _record()
    assert tape.scopes == [(0, "steps", {"n": 3}), (3, None, None)]
    assert tape.launches is tape.ops and len(tape.launches) == 4
    tape.record_scope_begin("empty")
    tape.record_scope_end()
    assert tape.scopes == [(0, "steps", {"n": 3}), (3, None, None)]
    with pytest.raises(RuntimeError, match="scope not present"):
        tape.record_scope_end()
    tape.reset()
    assert tape.scopes == [] and tape.ops == []


def test_visualize_draws_operations_arrays_and_scopes(tmp_path):
    tape, x, y, out = _record()
    dot = tape.visualize(str(tmp_path / "tape.dot"), array_labels={out: "loss"})
    assert (tmp_path / "tape.dot").read_text() == dot
    assert dot.startswith("digraph Tape {") and dot.rstrip().endswith("}")
    assert dot.count("{") == dot.count("}")
    assert re.search(r'subgraph cluster_0 \{ label="steps";', dot)
    assert dot.count("axpy (repeated 3x)") == 1 and dot.count('label="total"') == 1
    # three arrays: x and y (parameter names) and out (labelled), with dtype and shape tooltips
    assert len(re.findall(r"shape=ellipse", dot)) == 3
    assert 'label="loss"' in dot and 'label="x"' in dot
    assert "array: dtype=float32, shape=(4,)" in dot
    # edges: x -> axpy, y -> axpy, axpy -> y, y -> total, total -> out
    assert len(re.findall(r"->", dot)) == 5
    unsimplified = tape.visualize(simplify_graph=False, ignore_graph_scopes=True)
    assert unsimplified.count('label="axpy"') == 3 and "cluster" not in unsimplified
    # x is only read: hidden on request
    assert len(re.findall(r"shape=ellipse", tape.visualize(hide_readonly_arrays=True))) == 2

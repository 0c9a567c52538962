"""``Tape.visualize``: the recorded operations as a GraphViz graph (dot source).

Operations are boxes, arrays are ellipses (labelled with the kernel parameter name they were first passed
as, or ``array_labels``; their tooltip gives dtype and shape); an edge runs from each array an operation
reads to it, and from it to each array it writes. Scopes recorded with ``Tape.record_scope_begin`` /
``record_scope_end`` become clusters, and with ``simplify_graph`` a run of identical launches (same
kernel, same arguments) is drawn once, "repeated Nx". Render it with ``dot -Tsvg tape.dot -o tape.svg``::

    with tape:
        tape.record_scope_begin("step")
        sk.launch(integrate, n, inputs=[x, v])
        tape.record_scope_end()
    print(tape.visualize("tape.dot"))
"""
from __future__ import annotations

from ..kernels import types as T


def _quote(s) -> str:
    return '"' + str(s).replace("\\", "\\\\").replace('"', '\\"') + '"'


def _op_parts(op):
    """(label, [(param name, array, read?, written?)]) of one recorded operation."""
    from .array import array
    from .tape import _Copy, _Launch, spec_access

    if isinstance(op, _Launch):
        access = spec_access(op.spec)
        reads, writes = {p[0] for p in access.reads}, {p[0] for p in access.writes}
        out = []
        for name, a in zip(op.kernel.param_names, op.args):
            arrays = [a] if isinstance(a, array) else (
                [v for _, v in type(a)._simkit_struct.arrays(a)] if T.is_struct(type(a)) else [])
            for v in arrays:
                if isinstance(v, array):
                    out.append((name, v, name in reads, name in writes))
        return op.kernel.key, out
    if isinstance(op, _Copy):
        return "copy", [("src", op.src, True, False), ("dest", op.dest, False, True)]
    return getattr(getattr(op, "fn", None), "__name__", type(op).__name__.strip("_").lower()), \
        [("array", a, True, False) for a in op.arrays()]


def _signature(op):
    label, parts = _op_parts(op)
    return label, tuple((n, id(a), r, w) for n, a, r, w in parts)


def _runs(ops, simplify: bool):
    """[(op index, repeat count)]: consecutive identical launches merged when ``simplify``."""
    out = []
    for k, op in enumerate(ops):
        if simplify and out and _signature(ops[out[-1][0]]) == _signature(op):
            out[-1] = (out[-1][0], out[-1][1] + 1)
        else:
            out.append((k, 1))
    return out


def to_dot(tape, filename=None, simplify_graph: bool = True, hide_readonly_arrays: bool = False,
           array_labels: dict | None = None, ignore_graph_scopes: bool = False, graph_direction: str = "LR") -> str:
    labels = {id(a): name for a, name in (array_labels or {}).items()}
    ops = [op for op in tape.ops if hasattr(op, "arrays")]
    written = set()
    for op in ops:
        written |= {id(a) for _, a, _, w in _op_parts(op)[1] if w}
    lines = ["digraph Tape {", f"  rankdir={graph_direction};", '  node [fontname="Helvetica"];']
    arrays = {}
    scopes = [] if ignore_graph_scopes else sorted(tape.scopes, key=lambda s: s[0])
    depth, next_scope = 0, 0
    for k, count in _runs(ops, simplify_graph):
        while next_scope < len(scopes) and scopes[next_scope][0] <= k:
            _, name, _meta = scopes[next_scope]
            if name is None:
                if depth:
                    lines.append("  " * depth + "}")
                    depth -= 1
            else:
                depth += 1
                lines.append("  " * depth + f"subgraph cluster_{next_scope} {{ label={_quote(name)};")
            next_scope += 1
        label, parts = _op_parts(ops[k])
        text = label + (f" (repeated {count}x)" if count > 1 else "")
        lines.append("  " * (depth + 1) + f"op{k} [shape=box, style=filled, fillcolor=lightblue, "
                                          f"label={_quote(text)}];")
        for name, a, read, wrote in parts:
            if hide_readonly_arrays and id(a) not in written:
                continue
            arrays.setdefault(id(a), (a, labels.get(id(a), name)))
            if read:
                lines.append(f"  a{id(a)} -> op{k};")
            if wrote:
                lines.append(f"  op{k} -> a{id(a)};")
    while depth:
        lines.append("  " * depth + "}")
        depth -= 1
    for key, (a, name) in arrays.items():
        tip = f"array: dtype={T.type_name(a.dtype)}, shape={a.shape}, device={a.device}"
        lines.append(f"  a{key} [shape=ellipse, label={_quote(name)}, tooltip={_quote(tip)}];")
    lines.append("}")
    dot = "\n".join(lines) + "\n"
    if filename is not None:
        with open(filename, "w") as f:
            f.write(dot)
    return dot

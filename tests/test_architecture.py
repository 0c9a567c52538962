"""The architecture can't rot: layer import directions, module size budget, generated docs current."""
import ast
import os

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PKG = os.path.join(ROOT, "simkit")

# layer -> simkit layers it may import (DESIGN.md: a layer imports only from layers below it; utils, the array
# algorithms over kernels and runtime, sits below collision, whose sparse marching cubes sorts and scans)
ALLOWED = {
    "kernels": {"kernels", "config", "logger", "version"},
    "runtime": {"kernels", "runtime", "config", "logger", "version"},
    "collision": {"kernels", "runtime", "utils", "collision", "config", "logger", "version"},
    "model": {"kernels", "runtime", "collision", "model", "config", "logger", "version"},
    "solvers": {"kernels", "runtime", "collision", "model", "solvers", "config", "logger", "version"},
    "io": {"kernels", "runtime", "collision", "model", "io", "config", "logger", "version"},
    "utils": {"kernels", "runtime", "utils", "config", "logger", "version"},
}
MAX_LINES = 800


def _modules():
    for root, _dirs, files in os.walk(PKG):
        for f in files:
            if f.endswith(".py"):
                yield os.path.join(root, f)


def _layer(path):
    rel = os.path.relpath(path, PKG).split(os.sep)
    return rel[0] if len(rel) > 1 else None


def _imported_layers(path):
    tree = ast.parse(open(path).read())
    rel_parts = os.path.relpath(path, ROOT)[:-3].split(os.sep)
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = rel_parts[: len(rel_parts) - node.level]
                target = base + (node.module.split(".") if node.module else [])
                if target[:1] == ["simkit"] and len(target) > 1:
                    yield target[1], node.lineno
                elif target == ["simkit"]:
                    for alias in node.names:
                        yield alias.name, node.lineno
            elif node.module and node.module.startswith("simkit."):
                yield node.module.split(".")[1], node.lineno
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("simkit."):
                    yield alias.name.split(".")[1], node.lineno


def test_layers_import_only_downward():
    bad = []
    for path in _modules():
        layer = _layer(path)
        if layer not in ALLOWED:
            continue
        for target, line in _imported_layers(path):
            if target not in ALLOWED[layer] and target in set(ALLOWED) | {"io", "cli", "autograd", "optim"}:
                bad.append(f"{os.path.relpath(path, ROOT)}:{line} ({layer} imports {target})")
    assert not bad, "layer violations:\n" + "\n".join(bad)


def test_no_module_over_budget():
    big = []
    for path in _modules():
        n = sum(1 for _ in open(path))
        if n > MAX_LINES:
            big.append(f"{os.path.relpath(path, ROOT)}: {n} lines")
    assert not big, f"modules over {MAX_LINES} lines:\n" + "\n".join(big)


def test_generated_builtin_docs_and_stubs_are_current():
    from simkit.kernels import docgen

    assert docgen.main(["--check"]) == 0, "run: python -m simkit.kernels.docgen"


def test_each_builtin_overload_declared_once():
    from simkit.kernels import registry
    from simkit.kernels import types as T

    dups = []
    for key, ovs in registry.all_builtins().items():
        seen = set()
        for b in ovs:
            sig = (tuple(T.type_name(t) for t in b.input_types.values()), b.constructor, b.match)
            if sig in seen and b.match is None:
                dups.append(f"{key}{sig[0]}")
            seen.add(sig)
    assert not dups, "builtins declared twice: " + ", ".join(dups)

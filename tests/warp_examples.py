"""Run the examples that warp-lang ships (``warp/examples/core``) unchanged, under warp-lang or under
simkit (``import warp as wp`` read as ``import simkit as wp``), and collect the arrays they hold.

An example's ``Example`` class is built without a USD stage (and small images where it takes a
size), stepped (or rendered), and every array attribute is read back to numpy. Only the import
lines differ between the two runs; line numbers are kept, so simkit's error messages point at
the example's own lines.
"""
from __future__ import annotations

import importlib.util
import inspect
import os
import types

import numpy as np


def examples_dir(group: str = "core") -> str | None:
    spec = importlib.util.find_spec("warp")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = os.path.join(list(spec.submodule_search_locations)[0], "examples", group)
    return path if os.path.isdir(path) else None


def load(name: str, backend: str):
    """The module of ``example_<name>.py``, importing warp-lang (``backend="warp"``) or simkit as ``wp``.
    ``name`` may name a group of examples other than ``core``: ``"optim/diffray"``."""
    group, _, name = name.rpartition("/")
    path = os.path.join(examples_dir(group or "core"), f"example_{name}.py")
    with open(path) as f:
        src = f.read()
    if backend == "simkit":
        # (Warp's USD renderer: simkit.render's; the line numbers are kept)
        src = src.replace("import warp.render\n", "import simkit.render\n").replace("import warp as wp\n",
                                                                                   "import simkit as wp\n")
        # (the optimizers: simkit's; warp.examples stays warp-lang's, for its asset directory)
        src = src.replace("import warp.optim\n", "import simkit.optim\n").replace("warp.optim.", "simkit.optim.")
        src = src.replace("from warp.optim import", "from simkit.optim import")
    mod = types.ModuleType(f"warp_example_{name}_{backend}")
    mod.__file__ = path
    code = compile(src, path, "exec", dont_inherit=True)  # (not this file's __future__ flags)
    exec(code, mod.__dict__)  # noqa: S102 - the installed package's own example
    return mod


def build(name: str, backend: str, **kwargs):
    """The example's ``Example``, built (without a USD stage)."""
    mod = load(name, backend)
    mod.wp.init()
    params = inspect.signature(mod.Example.__init__).parameters
    if "stage_path" in params:
        kwargs.setdefault("stage_path", None)
    return mod.Example(**kwargs)


def run(name: str, backend: str, steps: int = 1, start_from: dict | None = None, **kwargs) -> dict:
    """Build the example, step it ``steps`` times (or render it once if it has no step), and return
    its array attributes as numpy arrays. ``start_from``: arrays to assign to the example's
    attributes of those names before the first step (another run's initial state)."""
    ex = build(name, backend, **kwargs)
    for key, value in (start_from or {}).items():
        getattr(ex, key).assign(value)
    if hasattr(ex, "step"):
        for _ in range(steps):
            ex.step()
    else:
        ex.render()
    return {k: np.array(v.numpy()) for k, v in vars(ex).items()
            if hasattr(v, "numpy") and hasattr(v, "shape") and hasattr(v, "device")}


def initial(name: str, backend: str, keys, **kwargs) -> dict:
    """The arrays ``keys`` of the freshly built example (its initial state)."""
    ex = build(name, backend, **kwargs)
    return {k: np.array(getattr(ex, k).numpy()) for k in keys}

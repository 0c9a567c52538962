"""Line plots (loss curves, energies, benchmark series) written to image files with matplotlib.

Requires the ``plot`` extra (``pip install -e '.[plot]'``); matplotlib is imported on first use with
the non-interactive Agg backend.

Example::

    sk.io.plot_curves({"loss": losses}, "loss.png", xlabel="iteration", logy=True)
"""
from __future__ import annotations

import os

__all__ = ["plot_curves"]


def plot_curves(curves: dict, path, *, title: str = "", xlabel: str = "iteration", ylabel: str = "",
                logy: bool = False) -> str:
    """Plot ``{label: values}`` (each a sequence of numbers, x = 0, 1, ...) into ``path`` (.png,
    .svg, .pdf). Raises ``OSError`` naming the path when its directory is missing or not writable."""
    path = os.fspath(path)
    d = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(d) or not os.access(d, os.W_OK):
        raise OSError(f"cannot write '{path}': directory '{d}' does not exist or is not writable")
    try:
        import matplotlib
    except ImportError:
        raise ImportError("plots need matplotlib: pip install -e '.[plot]' (or pip install matplotlib)") from None
    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4), dpi=100)
    try:
        for label, values in curves.items():
            ax.plot(range(len(values)), list(values), label=label)
        if logy:
            ax.set_yscale("log")
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        if title:
            ax.set_title(title)
        if len(curves) > 1:
            ax.legend()
        ax.grid(True, alpha=0.3)
        fig.tight_layout()
        fig.savefig(path)
    finally:
        plt.close(fig)
    return path

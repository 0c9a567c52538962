"""Jacobian pictures (matplotlib): one image per (input, output) pair in a grid with outputs as rows and
inputs as columns, and the error Jacobians ``gradcheck`` draws. Works headless (any matplotlib backend)."""
from __future__ import annotations

import numpy as np

from .autograd_meta import FunctionMetadata, components
from .runtime.array import array


def error_jacobians(ad: dict, fd: dict, kind: str) -> dict:
    """{pair: |ad - fd|} (``absolute``) or {pair: (ad - fd) / ad, with |ad| < 1e-8 read as 1e-8} (``relative``)."""
    out = {}
    for key, F in fd.items():
        a, f = ad[key].numpy().astype(np.float64), F.numpy().astype(np.float64)
        if kind == "absolute":
            e = np.abs(a - f)
        else:
            e = (a - f) / np.where(np.abs(a) < 1e-8, 1e-8, a)
        out[key] = array(e.astype(F.numpy().dtype), dtype=F.dtype, device=F.device)
    return out


def _metadata(kernel, inputs) -> FunctionMetadata:
    if isinstance(kernel, FunctionMetadata):
        return kernel
    if hasattr(kernel, "param_names") and hasattr(kernel, "spec_for"):
        if inputs is None:
            raise ValueError(f"jacobian_plot: inputs must be provided when kernel is a kernel ('{kernel.key}'): "
                             f"they say where its outputs begin")
        meta = FunctionMetadata()
        meta.update_from_kernel(kernel, inputs)
        return meta
    raise ValueError(f"jacobian_plot: kernel must be a kernel or a FunctionMetadata, got {type(kernel).__name__}")


def _check_label(kind: str, labels, k: int) -> None:
    """Jacobian ``kind`` ("input" or "output") index ``k`` has a label in the metadata."""
    labels = labels or []
    if not 0 <= k < len(labels):
        raise ValueError(f"jacobian_plot: Jacobian {kind} index {k} is out of range: the metadata has "
                         f"{len(labels)} {kind}s")
    if labels[k] is None:
        raise ValueError(f"jacobian_plot: Jacobian {kind} index {k}: missing label in the metadata")


def _check(meta, ins, outs) -> dict:
    """{input index: components per element}, after checking every index has a label (and inputs a dtype)."""
    comps = {}
    for i in ins:
        _check_label("input", meta.input_labels, i)
        dtypes = meta.input_dtypes or []
        if i >= len(dtypes) or dtypes[i] is None:
            raise ValueError(f"jacobian_plot: Jacobian input index {i}: missing array dtype in the metadata")
        n = components(dtypes[i])
        if n is None:
            raise ValueError(f"jacobian_plot: Jacobian input index {i}: dtype {dtypes[i]} has no component count")
        comps[i] = n
    for o in outs:
        _check_label("output", meta.output_labels, o)
    return comps


def jacobian_plot(jacobians: dict, kernel, inputs=None, show_plot: bool = True, show_colorbar: bool = True,
                  scale_colors_per_submatrix: bool = False, title: str | None = None, colormap: str = "coolwarm",
                  log_scale: bool = False):
    """Draw ``{(input, output): J}`` (from ``jacobian``/``jacobian_fd``) as one figure and return it (None
    when there is nothing to draw). ``kernel``: the kernel (with its ``inputs``) or a ``FunctionMetadata``.
    Vector inputs widen their column by their component count. ``show_plot``: call ``plt.show()``."""
    meta = _metadata(kernel, inputs)
    ins = sorted({i for i, _ in jacobians})
    outs = sorted({o for _, o in jacobians})
    if not ins or not outs:
        return None
    comps = _check(meta, ins, outs)
    import matplotlib.pyplot as plt

    mats = {k: np.asarray(J.numpy() if isinstance(J, array) else J, dtype=np.float64) for k, J in jacobians.items()}
    mats = {k: m.reshape(m.shape[0], -1) for k, m in mats.items()}
    width = [next(m.shape[1] for (i, _), m in mats.items() if i == col) for col in ins]
    height = [next(m.shape[0] for (_, o), m in mats.items() if o == row) for row in outs]
    fig, axs = plt.subplots(len(outs), len(ins), figsize=(7, 7), layout="constrained", sharex="col",
                            sharey="row", squeeze=False,
                            gridspec_kw={"width_ratios": width, "height_ratios": height})
    fig.suptitle(title if title is not None else f"{meta.key or 'unknown'} kernel Jacobian")
    manager = getattr(fig.canvas, "manager", None)
    if manager is not None:
        manager.set_window_title(fig.get_suptitle())
    finite = [m[np.isfinite(m)] for m in mats.values()]
    finite = [f for f in finite if f.size]
    lo = min((f.min() for f in finite), default=0.0)
    hi = max((f.max() for f in finite), default=0.0)
    present = np.array([[(i, o) in mats for i in ins] for o in outs])
    image = None
    for r, o in enumerate(outs):
        for c, i in enumerate(ins):
            ax = axs[r, c]
            if (i, o) not in mats:
                ax.axis("off")
                continue
            m = mats[(i, o)]
            vals = np.log10(np.abs(m) + 1e-8) if log_scale else m
            if scale_colors_per_submatrix:
                f = m[np.isfinite(m)]
                vmin, vmax = (f.min(), f.max()) if f.size else (0.0, 0.0)
            else:
                vmin, vmax = lo, hi
            image = ax.imshow(vals, cmap=colormap, aspect="auto", interpolation="nearest",
                              extent=[0, m.shape[1], 0, m.shape[0]], vmin=vmin, vmax=vmax)
            if r == len(outs) - 1 or not present[r + 1:, c].any():
                ax.set_xlabel(meta.input_labels[i])
            if c == 0 or not present[r, :c].any():
                ax.set_ylabel(meta.output_labels[o])
            if comps[i] > 1:  # (a minor tick between elements of a vector input)
                ax.set_xticks(np.arange(0, m.shape[1] + 1, comps[i]), minor=True)
            if show_colorbar and scale_colors_per_submatrix:
                fig.colorbar(image, ax=ax, orientation="vertical", pad=0.02)
    if show_colorbar and not scale_colors_per_submatrix:
        mappable = plt.cm.ScalarMappable(cmap=colormap)
        mappable.set_clim(lo, hi)
        fig.colorbar(mappable, ax=axs, orientation="vertical", pad=0.02)
    if show_plot:
        plt.show()
    return fig

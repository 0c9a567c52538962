"""Tape: records launches so gradients can be propagated backward (see simkit.autodiff)."""
from __future__ import annotations

_active: list = []


def _record_launch(kernel, spec, dims, inputs, outputs, device):
    if _active:
        _active[-1].record_launch(kernel, spec, dims, inputs, outputs, device)


def _record_copy(dest, src):
    if _active:
        _active[-1].record_copy(dest, src)


def launch_adjoint(kernel, spec, dims, args, adj_inputs, adj_outputs, device):
    raise NotImplementedError("adjoint launches arrive with the autodiff layer")

"""Every kernel builtin as a module attribute, for simkit's own kernels::

    from simkit.kernels import lang as sk

    @kernel
    def k(x: array(dtype=float)):
        i = sk.tid()
        x[i] = sk.sqrt(x[i])
"""
from .api import builtin_functions

globals().update(builtin_functions())

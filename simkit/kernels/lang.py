"""Every kernel builtin as a module attribute, for simkit's own kernels::

    from simkit.kernels import lang as sk

    @kernel
    def k(x: array(dtype=float)):
        i = sk.tid()
        x[i] = sk.sqrt(x[i])
"""
from .api import builtin_functions

globals().update(builtin_functions())


def __getattr__(name):
    # builtins registered after this module was first imported (e.g. by simkit.collision)
    fns = builtin_functions()
    if name in fns:
        globals().update(fns)
        return fns[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

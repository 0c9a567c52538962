"""Central finite differences over dicts of input arrays, shared by the builtin test files."""
import numpy as np


def central_differences(x: dict, keys, total, h: float = 1e-6) -> list:
    """For each key: d total(x) / d x[key], one component at a time.

    ``x[key]`` has shape (rows, N, *component_shape); ``total(x)`` returns an array of
    shape (rows, N) (each row's outputs summed). Returns one array per key, shaped like x[key].
    """
    fds = []
    for key in keys:
        base = x[key]
        g = np.zeros(base.shape)
        comp_shape = base.shape[2:]
        for c in np.ndindex(*comp_shape) if comp_shape else [()]:
            xp, xm = dict(x), dict(x)
            xp[key], xm[key] = base.copy(), base.copy()
            xp[key][(Ellipsis,) + c] += h
            xm[key][(Ellipsis,) + c] -= h
            g[(Ellipsis,) + c] = (total(xp) - total(xm)) / (2 * h)
        fds.append(g)
    return fds

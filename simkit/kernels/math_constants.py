"""Mathematical constants, as Warp names them (``sk.pi`` in kernels and in Python). They are Python
floats: a kernel that reads one takes it as a constant of its scalar context (float32 unless the
expression is float64), as it does any module-level float."""
import math

pi = math.pi
tau = 2.0 * math.pi
half_pi = 0.5 * math.pi
e = math.e
inf = math.inf
nan = math.nan
phi = (1.0 + math.sqrt(5.0)) / 2.0   # the golden ratio
ln2 = math.log(2.0)
ln10 = math.log(10.0)
log2e = 1.0 / math.log(2.0)
log10e = 1.0 / math.log(10.0)

# (Warp's upper-case names too)
PI, TAU, HALF_PI, E, INF, NAN = pi, tau, half_pi, e, inf, nan
PHI, LN2, LN10, LOG2E, LOG10E = phi, ln2, ln10, log2e, log10e

__all__ = ["pi", "tau", "half_pi", "e", "inf", "nan", "phi", "ln2", "ln10", "log2e", "log10e",
           "PI", "TAU", "HALF_PI", "E", "INF", "NAN", "PHI", "LN2", "LN10", "LOG2E", "LOG10E"]

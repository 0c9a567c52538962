"""Random numbers and noise (native code: ``native/rand.h``).

A random state is a ``uint32``: ``state = rand_init(seed, offset)``, then
every draw (``randf(state)``...) advances ``state`` in place, as in Warp::

    state = wp.rand_init(seed, wp.tid())
    x = wp.randf(state)          # uniform in [0, 1)
    y = wp.randf(state)          # the next number of the same stream

Draws mutate their state argument, so they are ``side_effects`` (never
removed as dead code); they are replayed in the adjoint's forward pass,
which recomputes the same numbers. None of them is differentiable except
``noise`` and ``pnoise`` (with respect to the position).
"""
from __future__ import annotations

from ..registry import add_builtin
from ..types import ArrayType, float32, int32, uint32, vector

vec2 = vector(2, float32)
vec3 = vector(3, float32)
vec4 = vector(4, float32)


def _draw(key, inputs, result, doc, native=None):
    add_builtin(key, {"state": uint32, **inputs}, result, native=native, differentiable=False, side_effects=True,
                inout=("state",), doc=doc, group="random")


add_builtin("rand_init", {"seed": int32}, uint32, differentiable=False, group="random",
            doc="A random state from a seed.")
add_builtin("rand_init", {"seed": int32, "offset": int32}, uint32, differentiable=False, group="random",
            doc="A random state from a seed and an offset (e.g. the thread index): different offsets "
                "give independent streams.")

_draw("randi", {}, int32, "A random int32 (all 32 bits random); advances state.")
_draw("randi", {"low": int32, "high": int32}, int32,
      "A random int32 uniform in [low, high) (low if high <= low); advances state.")
_draw("randu", {}, uint32, "A random uint32; advances state.")
_draw("randu", {"low": uint32, "high": uint32}, uint32,
      "A random uint32 uniform in [low, high) (low if high <= low); advances state.")
_draw("randf", {}, float32, "A random float32 uniform in [0, 1); advances state.")
_draw("randf", {"low": float32, "high": float32}, float32,
      "A random float32 uniform in [low, high); advances state.")
_draw("randn", {}, float32, "A random float32 from the standard normal distribution; advances state.")
_draw("poisson", {"lam": float32}, uint32,
      "A random count from the Poisson distribution of mean lam; advances state.")
_draw("sample_cdf", {"cdf": ArrayType(float32, 1)}, int32,
      "A random index of a discrete distribution given by its CDF (a 1D array of float32, non-decreasing, "
      "last element 1): the first i with cdf[i] >= u for u uniform in [0, 1), found by binary search; "
      "len(cdf) - 1 if none is, 0 for an empty array. Advances state.", native="sk::sample_cdf<SKC>")

_draw("sample_unit_square", {}, vec2, "A point uniform in the square [-0.5, 0.5]^2; advances state.")
_draw("sample_unit_cube", {}, vec3, "A point uniform in the cube [-0.5, 0.5]^3; advances state.")
_draw("sample_unit_ring", {}, vec2, "A point uniform on the unit circle; advances state.")
_draw("sample_unit_disk", {}, vec2, "A point uniform in the unit disk; advances state.")
_draw("sample_unit_sphere_surface", {}, vec3, "A point uniform on the unit sphere; advances state.")
_draw("sample_unit_sphere", {}, vec3, "A point uniform in the unit ball; advances state.")
_draw("sample_unit_hemisphere_surface", {}, vec3,
      "A point uniform on the unit hemisphere z >= 0; advances state.")
_draw("sample_unit_hemisphere", {}, vec3,
      "A point uniform in the unit half ball z >= 0; advances state.")
_draw("sample_triangle", {}, vec2,
      "Barycentric coordinates (u, v) of a point uniform in a triangle (u, v >= 0, u + v <= 1); "
      "advances state.")

# Noise: the state seeds a fixed random field and is not advanced.
_NOISE_DOC = ("Perlin gradient noise at a position (float, vec2, vec3 or vec4), seeded by state; "
              "0 at integer lattice points, smooth, roughly within [-sqrt(n)/2, sqrt(n)/2] in n dimensions. "
              "Differentiable with respect to the position.")
for _name, _t in (("x", float32), ("xy", vec2), ("xyz", vec3), ("xyzt", vec4)):
    add_builtin("noise", {"state": uint32, _name: _t}, float32, doc=_NOISE_DOC, group="random")

_PNOISE_DOC = "Periodic noise: like noise, with periods px, py, ... (in lattice cells) along each axis."
add_builtin("pnoise", {"state": uint32, "x": float32, "px": int32}, float32, doc=_PNOISE_DOC, group="random")
add_builtin("pnoise", {"state": uint32, "xy": vec2, "px": int32, "py": int32}, float32, doc=_PNOISE_DOC,
            group="random")
add_builtin("pnoise", {"state": uint32, "xyz": vec3, "px": int32, "py": int32, "pz": int32}, float32,
            doc=_PNOISE_DOC, group="random")
add_builtin("pnoise", {"state": uint32, "xyzt": vec4, "px": int32, "py": int32, "pz": int32, "pt": int32},
            float32, doc=_PNOISE_DOC, group="random")

_CURL_DOC = ("Divergence-free curl noise at a position, summed over octaves (frequency times "
             "lacunarity and amplitude times gain per octave). vec2 -> vec2; vec3 and vec4 -> vec3. "
             "Differentiable with respect to the position (through the noise's Hessian).")
_CURL_DEFAULTS = {"octaves": uint32(1), "lacunarity": float32(2.0), "gain": float32(0.5)}
for _name, _t, _r in (("xy", vec2, vec2), ("xyz", vec3, vec3), ("xyzt", vec4, vec3)):
    add_builtin("curlnoise",
                {"state": uint32, _name: _t, "octaves": uint32, "lacunarity": float32, "gain": float32},
                _r, defaults=_CURL_DEFAULTS, doc=_CURL_DOC, group="random")

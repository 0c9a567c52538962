"""Compile-time measurements, run in a fresh Python process per measurement.

    python benchmarks/compile_worker.py {simkit|warp|warp-nobwd} MODULE_DIR MODULE_NAME CACHE_DIR [COPIES]
    python benchmarks/compile_worker.py {simkit|warp} MODULE_DIR NAME1,NAME2,... CACHE_DIR load:WORKERS

Imports the generated module ``MODULE_NAME`` from ``MODULE_DIR`` (the kernel cache
at ``CACHE_DIR``), launches its first kernel once on the CPU (this compiles, or
loads from the cache, all kernels of the module) and prints one JSON line:
``{"import_lib_s", "import_module_s", "first_launch_s", "compiled", "built", "check"}`` (the last line of
stdout; warp may print its banner before it). ``warp-nobwd`` is warp with
``config.enable_backward = False`` (no adjoint kernels, like simkit without a tape).
``built`` is true when the launch wrote new files into the cache (a compile, i.e. a cache miss).
With ``load:WORKERS`` the modules named are imported and loaded by one ``force_load(device="cpu",
modules=..., max_workers=WORKERS)``, whose time is ``first_launch_s``; each module's first kernel then runs.

``write_module`` generates the 7-kernel module; the same source runs under
simkit and warp (``K`` is the imported framework).
"""
from __future__ import annotations

import importlib
import json
import os
import sys
import time

NUM_KERNELS = 7

MODULE_HEAD = '''"""Generated compile benchmark module (token {token})."""
import {framework} as K

TOKEN = K.constant({token_float})
'''

MODULE_TEMPLATE = '''

@K.kernel
def k0_scale_{token}(a: float, x: K.array(dtype=float), y: K.array(dtype=float)):
    i = K.tid()
    y[i] = a * x[i] + y[i] + TOKEN


@K.kernel
def k1_length_{token}(v: K.array(dtype=K.vec3), out: K.array(dtype=float)):
    i = K.tid()
    out[i] = K.length(v[i]) + TOKEN


@K.kernel
def k2_clamp_{token}(x: K.array(dtype=float), lo: float, hi: float):
    i = K.tid()
    x[i] = K.clamp(x[i], lo, hi)


@K.kernel
def k3_normalize_{token}(v: K.array(dtype=K.vec3), out: K.array(dtype=K.vec3)):
    i = K.tid()
    n = K.normalize(v[i])
    out[i] = K.cross(n, K.vec3(0.0, 0.0, 1.0)) * K.dot(n, v[i])


@K.kernel
def k4_loop_{token}(x: K.array(dtype=float), n: int, out: K.array(dtype=float)):
    i = K.tid()
    s = float(0.0)
    for j in range(n):
        s += K.sin(x[i] + float(j)) * TOKEN
    out[i] = s


@K.kernel
def k5_matvec_{token}(m: K.array(dtype=K.mat33), v: K.array(dtype=K.vec3), out: K.array(dtype=K.vec3)):
    i = K.tid()
    out[i] = K.transpose(m[i]) * v[i] + v[i]


@K.kernel
def k6_branch_{token}(x: K.array(dtype=float), out: K.array(dtype=float)):
    i = K.tid()
    v = x[i]
    if v > TOKEN:
        out[i] = K.sqrt(v) * 2.0
    else:
        out[i] = K.abs(v) + K.max(v, 1.0)
'''


def write_module(directory: str, framework: str, token: str, copies: int = 1) -> str:
    """Write ``<directory>/<name>.py`` for ``framework`` ("simkit", "warp" or "warp-nobwd"); returns the
    module name. ``token`` (hex) makes the module unique: use a fresh one for every cold measurement.
    ``copies``: the 7 kernels that many times (renamed), for a large module."""
    name = f"bench_compile_{framework.replace('-', '_')}_{token}"
    # a distinct constant per token: the generated C++ differs, so no cache can ever serve it
    token_float = f"0.{int(token, 16) % 10**8 + 1:08d}"
    text = MODULE_HEAD.format(framework=framework.split("-")[0], token=token, token_float=token_float)
    for c in range(copies):
        text += MODULE_TEMPLATE.format(token=token if c == 0 else f"{token}x{c}")
    with open(os.path.join(directory, name + ".py"), "w") as f:
        f.write(text)
    return name


def _first_launch(K, mod, framework: str, token: str):
    x = K.zeros(16, dtype=float, device="cpu")
    y = K.zeros(16, dtype=float, device="cpu")
    kernel = getattr(mod, f"k0_scale_{token}")
    t0 = time.perf_counter()
    K.launch(kernel, dim=16, inputs=[1.0, x, y], device="cpu")
    t1 = time.perf_counter()
    return t1 - t0, float(y.numpy()[0])


def _count_files(root: str) -> int:
    return sum(len(files) for _, _, files in os.walk(root))


def main(argv):
    framework, mod_dir, mod_name, cache_dir = argv[:4]
    load = argv[4][5:] if len(argv) > 4 and argv[4].startswith("load:") else None
    copies = int(argv[4]) if len(argv) > 4 and load is None else 1
    token = mod_name.rsplit("_", 1)[1]
    t0 = time.perf_counter()
    if framework == "simkit":
        import simkit as K

        K.config.cache_dir = cache_dir
    elif framework in ("warp", "warp-nobwd"):
        import warp as K

        K.config.kernel_cache_dir = cache_dir
        K.config.quiet = True
        if framework == "warp-nobwd":
            K.config.enable_backward = False
        K.init()
    else:
        raise SystemExit(f"unknown framework {framework!r}")
    t1 = time.perf_counter()
    sys.path.insert(0, mod_dir)
    if load is not None:
        return _force_load(K, mod_name.split(","), int(load), cache_dir, t1 - t0)
    mod = importlib.import_module(mod_name)
    t2 = time.perf_counter()
    kernels = [v for v in vars(mod).values() if isinstance(v, K.Kernel)]
    assert len(kernels) == NUM_KERNELS * copies, len(kernels)
    before = _count_files(cache_dir)
    first, check = _first_launch(K, mod, framework, token)
    built = _count_files(cache_dir) != before
    if framework == "simkit":  # every kernel of the module was built by that one launch
        compiled = sum(1 for k in kernels if all("cpu" in s.native for s in k.specs.values()))
    else:  # warp builds one library per module: all of its kernels or none
        compiled = len(kernels)
    print(json.dumps({"import_lib_s": t1 - t0, "import_module_s": t2 - t1, "first_launch_s": first,
                      "compiled": compiled, "built": built, "check": check}))


def _force_load(K, names: list, workers: int, cache_dir: str, import_lib_s: float):
    t1 = time.perf_counter()
    mods = [importlib.import_module(n) for n in names]
    t2 = time.perf_counter()
    before = _count_files(cache_dir)
    K.force_load(device="cpu", modules=[K.get_module(n) for n in names], max_workers=workers)
    t3 = time.perf_counter()
    built = _count_files(cache_dir) != before
    if hasattr(K.Module, "pending"):  # (simkit: every kernel was loaded by force_load, before any launch)
        compiled = sum(1 for m in mods for k in vars(m).values() if isinstance(k, K.Kernel)
                       and all("cpu" in s.native for s in k.specs.values()))
    else:  # (warp builds one library per module: all of its kernels or none)
        compiled = NUM_KERNELS * len(mods)
    check = 0.0
    for n, mod in zip(names, mods):
        check += _first_launch(K, mod, "", n.rsplit("_", 1)[1])[1]
    print(json.dumps({"import_lib_s": import_lib_s, "import_module_s": t2 - t1, "first_launch_s": t3 - t2,
                      "compiled": compiled, "built": built, "check": check}))


if __name__ == "__main__":
    main(sys.argv[1:])

"""The ``simkit`` command.

    simkit info            versions, devices, compiler, cache location
    simkit cache clear     delete compiled kernels from the cache
    simkit cache size      show the cache size
    simkit run SCENE --steps N --usd out.usda [--device cpu|cuda]
    simkit optimize SCENE --iters N --plot loss.png [--device cpu|cuda]
"""
from __future__ import annotations

import argparse
import inspect
import os
import shutil
import sys


def _cache_dir() -> str:
    from .kernels.backends.cpu import cache_root

    return cache_root()


def cmd_info(args) -> int:
    import numpy as np

    import simkit as sk
    from .kernels.backends import cpu
    from .kernels.backends.cuda import nvrtc

    print(f"simkit {sk.__version__} (python {sys.version.split()[0]}, numpy {np.__version__})")
    try:
        print(f"C++ compiler: {cpu.find_compiler()} ({cpu.identity().split('|')[0]}; {' '.join(cpu.opt_flags())})")
    except sk.CompilerNotFoundError as e:
        print(f"C++ compiler: none ({e})")
    print(f"NVRTC: {nvrtc.version() if nvrtc.is_available() else 'not installed (pip install simkit[cuda])'}")
    for d in sk.get_devices():
        extra = f" {d.name} {d.kind}" if d.is_cuda else f" ({os.cpu_count()} cores)"
        print(f"device: {d.alias}{extra}")
    print(f"cache: {_cache_dir()}")
    return 0


def _size(path: str) -> int:
    total = 0
    for root, _dirs, files in os.walk(path):
        for f in files:
            try:
                total += os.path.getsize(os.path.join(root, f))
            except OSError:
                pass
    return total


def cmd_cache(args) -> int:
    d = _cache_dir()
    if args.action == "clear":
        n = _size(d)
        for entry in os.listdir(d):
            p = os.path.join(d, entry)
            shutil.rmtree(p, ignore_errors=True) if os.path.isdir(p) else os.unlink(p)
        print(f"cleared {d} ({n / 1e6:.1f} MB)")
    else:
        print(f"{d}: {_size(d) / 1e6:.1f} MB")
    return 0


def scene_dirs() -> list:
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    return [os.path.join(os.getcwd(), "scenes"), os.path.join(here, "scenes")]


def load_scene(name: str):
    """A scene module by name (scenes/<name>.py) or by path."""
    import importlib.util

    candidates = [name] if name.endswith(".py") else [os.path.join(d, name + ".py") for d in scene_dirs()]
    for path in candidates:
        if os.path.isfile(path):
            spec = importlib.util.spec_from_file_location(f"simkit_scene_{os.path.basename(path)[:-3]}", path)
            mod = importlib.util.module_from_spec(spec)
            sys.modules[spec.name] = mod
            spec.loader.exec_module(mod)
            return mod
    known = sorted({f[:-3] for d in scene_dirs() if os.path.isdir(d) for f in os.listdir(d)
                    if f.endswith(".py") and not f.startswith("_")})
    raise SystemExit(f"simkit: unknown scene '{name}'; available: {', '.join(known) or 'none'}")


class ProgressBar:
    """A one-line text progress bar on stderr."""

    def __init__(self, label: str, width: int = 30):
        self.label, self.width = label, width
        self.tty = sys.stderr.isatty()
        self.last = -1

    def __call__(self, done: int, total: int):
        filled = int(self.width * done / max(total, 1))
        if filled == self.last and done < total:
            return  # redraw only when the bar moves (keeps logs short)
        self.last = filled
        bar = f"{self.label} [{'#' * filled}{'.' * (self.width - filled)}] {done}/{total}"
        if self.tty:
            sys.stderr.write("\r" + bar + ("\n" if done >= total else ""))
        elif filled % 10 == 0 or done >= total:  # not a terminal: a line every third of the way
            sys.stderr.write(bar + "\n")
        sys.stderr.flush()


def _check_output(path) -> None:
    if path:
        d = os.path.dirname(os.path.abspath(path))
        if not os.path.isdir(d) or not os.access(d, os.W_OK):
            raise SystemExit(f"simkit: cannot write '{path}': directory '{d}' is missing or not writable")


def _check_device(device: str) -> None:
    import simkit as sk

    try:
        sk.get_device(device)
    except (RuntimeError, ValueError) as e:
        raise SystemExit(f"simkit: {e}") from None


def cmd_run(args) -> int:
    scene = load_scene(args.scene)
    if not hasattr(scene, "run"):
        raise SystemExit(f"simkit: scene '{args.scene}' has no run(); try: simkit optimize {args.scene}")
    _check_output(args.usd)
    _check_device(args.device)
    extra = {}
    if args.no_graph:
        if "graph" not in inspect.signature(scene.run).parameters:
            raise SystemExit(f"simkit: scene '{args.scene}' has no graph option (its run() takes no graph=)")
        extra["graph"] = False
    scene.run(steps=args.steps, usd=args.usd, device=args.device, progress=ProgressBar(args.scene), **extra)
    if args.usd:
        print(f"wrote {args.usd}")
    return 0


def cmd_optimize(args) -> int:
    scene = load_scene(args.scene)
    if not hasattr(scene, "optimize"):
        raise SystemExit(f"simkit: scene '{args.scene}' is not an optimization scene (it has no optimize())")
    _check_output(args.plot)
    _check_device(args.device)
    if args.iters < 1:
        raise SystemExit("simkit: --iters must be at least 1")
    if args.usd and not hasattr(scene, "export_result"):
        raise SystemExit(f"simkit: scene '{args.scene}' cannot export its result (it has no export_result())")
    _check_output(args.usd)
    result = scene.optimize(iters=args.iters, plot=args.plot, device=args.device,
                            progress=ProgressBar(f"{args.scene} (optimize)"))
    summary = getattr(result, "summary", None)
    print(summary() if callable(summary) else result)
    if args.plot:
        print(f"wrote {args.plot}")
    if args.usd:
        scene.export_result(args.usd, result, device=args.device)
        print(f"wrote {args.usd}")
    return 0


def optimization_main(doc: str, optimize, export_result, *, iters: int, argv=None, extra=()):
    """``python scenes/<name>.py`` for an optimization scene: ``--iters`` (default ``iters``),
    ``--plot``, ``--usd``, ``--device`` and the ``extra`` options ((flag, argparse keywords), passed to
    ``optimize`` by name); prints the result's summary and, with ``--usd``, calls
    ``export_result(path, result, device=...)``. Returns the result."""
    p = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--iters", type=int, default=iters, help="optimizer iterations")
    p.add_argument("--plot", default=None, help="output image of the loss curve")
    p.add_argument("--usd", default=None, help="output .usda/.usd file of the optimized motion")
    p.add_argument("--device", default="cpu", help="cpu, cuda or cuda:N")
    for flag, kwargs in extra:
        p.add_argument(flag, **kwargs)
    a = vars(p.parse_args(argv))
    common = {k: a.pop(k) for k in ("iters", "plot", "usd", "device")}
    result = optimize(common["iters"], plot=common["plot"], device=common["device"], **a)
    print(result.summary())
    if common["usd"]:
        export_result(common["usd"], result, device=common["device"])
    return result


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="simkit", description="simkit: differentiable physics simulation")
    sub = p.add_subparsers(dest="command", required=True)
    sub.add_parser("info", help="versions, devices, compiler, cache").set_defaults(fn=cmd_info)
    c = sub.add_parser("cache", help="manage the kernel cache")
    c.add_argument("action", choices=["clear", "size"])
    c.set_defaults(fn=cmd_cache)
    r = sub.add_parser("run", help="simulate a scene and export it to USD")
    r.add_argument("scene", help="scene name (scenes/<name>.py) or path to a scene file")
    r.add_argument("--steps", type=int, default=240, help="frames to simulate")
    r.add_argument("--usd", default=None, help="output .usda/.usd file")
    r.add_argument("--device", default="cpu", help="cpu, cuda or cuda:N")
    r.add_argument("--no-graph", action="store_true",
                   help="launch each frame's kernels one by one (default: replay a graph per frame, "
                        "a CUDA graph on a GPU)")
    r.set_defaults(fn=cmd_run)
    o = sub.add_parser("optimize", help="run a scene's gradient-based optimization and plot the loss")
    o.add_argument("scene", help="scene name (scenes/<name>.py) or path to a scene file with optimize()")
    o.add_argument("--iters", type=int, default=100, help="optimizer iterations")
    o.add_argument("--plot", default=None, help="output image of the loss curve (.png, .svg, .pdf)")
    o.add_argument("--usd", default=None, help="output .usda/.usd file of the optimized motion")
    o.add_argument("--device", default="cpu", help="cpu, cuda or cuda:N")
    o.set_defaults(fn=cmd_optimize)
    return p


def main(argv=None) -> int:
    # Scenes interleave Python with many small launches; OpenMP's default of spinning idle threads
    # between parallel regions then steals the core the Python thread needs (measured on 2 busy
    # cores: cloth_on_sphere 22-54 s spinning, 2.3 s passive). Set before the first kernel library
    # loads libgomp; an explicit OMP_WAIT_POLICY wins.
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    args = build_parser().parse_args(argv)
    return args.fn(args)


if __name__ == "__main__":
    sys.exit(main())

"""Python modules written to a directory and imported, for tests that need kernels of a module of their own (a
fresh name: nothing of theirs is compiled or cached yet)."""
import importlib.util
import sys


def import_source(directory, name: str, source: str):
    """``source`` written to ``directory/<name>.py`` and imported as module ``name``."""
    path = directory / f"{name}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod

"""How the emulated GPU's driver calls are made (tests/cuda_emulator.py): each fake entry point counts its calls and
has cuda-python type-check its arguments first, so a wrong argument type fails here, not on the first GPU."""
from __future__ import annotations


def _real_driver():
    from cuda.bindings import driver as real

    return real


def _real_libcuda_missing() -> bool:
    try:
        _real_driver().cuDriverGetVersion()
        return False
    except Exception as e:
        return type(e).__name__ == "DynamicLibNotFoundError"


def _fake(fn):
    """A fake driver entry point: counts the call and type-checks the arguments with cuda-python (once per
    combination of argument types: the binding's failed attempt to load libcuda is slow)."""
    name = fn.__name__

    def wrapper(self, *args):
        self.calls[name] += 1
        sig = (name, *map(type, args))
        # Not while this thread is inside cuda-python already: a destructor the garbage collector runs there
        # (an array freed during the binding's attempt to load libcuda) would wait forever for the binding's
        # loader lock. Such a call's arguments are checked at a later call.
        if self.validate and sig not in self.validated and not getattr(self.validating, "on", False):
            self.validated.add(sig)
            self.validating.on = True
            try:
                getattr(self.real, name)(*args)
            except Exception as e:  # conversion passed when only the library load fails
                if type(e).__name__ != "DynamicLibNotFoundError":
                    raise AssertionError(f"{name}{args!r}: cuda-python rejects these arguments: {e!r}") from None
            finally:
                self.validating.on = False
        with self.lock:
            try:
                return fn(self, *args)
            except AssertionError as e:  # recorded too: a destructor may swallow it
                self.violations.append(f"{name}: {e}")
                raise

    wrapper.__name__ = name
    return wrapper

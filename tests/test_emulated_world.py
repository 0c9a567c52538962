"""The emulated GPU of the tests (tests/cuda_emulator_world.py) swapped out and in again keeps the kernels it
loaded, but not those translated again meanwhile: their next launch on it compiles them anew, as on a GPU."""
import numpy as np
from cuda_emulator import FakeDriver
from cuda_emulator_world import EmulatedWorld

import simkit as sk


@sk.kernel
def twice(x: sk.array(dtype=float), out: sk.array(dtype=float)):
    i = sk.tid()
    out[i] = 2.0 * x[i]


def _twice_on(device, n=64):
    x = sk.array(np.arange(n, dtype=np.float32), device=device)
    out = sk.zeros(n, device=device)
    sk.launch(twice, n, inputs=[x], outputs=[out])
    np.testing.assert_array_equal(out.numpy(), 2.0 * np.arange(n, dtype=np.float32))


def _loads(fake) -> int:
    return fake.calls["cuModuleLoadData"] + fake.calls["cuLibraryLoadData"]


def test_a_kernel_translated_again_while_swapped_out_compiles_anew():
    world = EmulatedWorld(FakeDriver(arch="sm_90", native_launch=True))
    spec = twice.specs[None]
    _twice_on("cpu")  # (its CPU build is also the one CI compiles with NVRTC: the emulated GPU's is not)
    with world as fake:
        _twice_on("cuda:0")
        loaded = _loads(fake)
        assert loaded >= 1
    with world:  # back in: its unit is there again
        _twice_on("cuda:0")
        assert _loads(fake) == loaded
    level = sk.get_module_options().get("optimization_level")
    sk.set_module_options({"optimization_level": 1})  # the module's kernels are translated again
    try:
        assert spec.ir is None
        with world:
            _twice_on("cuda:0")  # (its old unit given back would launch with no translation behind it)
            assert spec.ir is not None and _loads(fake) == loaded + 1
    finally:
        sk.set_module_options({"optimization_level": level})
        with world:
            world.close()

"""Warp's ``deterministic`` module option and ``DeterministicMode`` enum: NOT_GUARANTEED (the default, what
simkit does) is accepted everywhere an option is; RUN_TO_RUN and GPU_TO_GPU (bit-exact atomics) are refused
with an error naming the option, as is a value that is not a DeterministicMode."""
import numpy as np
import pytest

import simkit as sk


def test_the_enum_has_warps_members():
    assert [(m.name, int(m)) for m in sk.DeterministicMode] == [
        ("NOT_GUARANTEED", 0), ("RUN_TO_RUN", 1), ("GPU_TO_GPU", 2)]


def test_not_guaranteed_is_accepted_and_runs():
    @sk.kernel(module="unique", module_options={"deterministic": sk.DeterministicMode.NOT_GUARANTEED,
                                                "deterministic_max_records": 4})
    def total(x: sk.array(dtype=float), out: sk.array(dtype=float)):
        sk.atomic_add(out, 0, x[sk.tid()])

    x = sk.array(np.arange(10, dtype=np.float32), device="cpu")
    out = sk.zeros(1, device="cpu")
    sk.launch(total, 10, inputs=[x, out], device="cpu")
    assert out.numpy()[0] == 45.0
    assert sk.get_module_options(total.module.name)["deterministic"] is sk.DeterministicMode.NOT_GUARANTEED
    sk.set_module_options({"deterministic": sk.DeterministicMode.NOT_GUARANTEED})


@pytest.mark.parametrize("mode", ["RUN_TO_RUN", "GPU_TO_GPU"])
def test_bit_exact_modes_are_refused(mode):
    with pytest.raises(ValueError, match=rf"deterministic=DeterministicMode\.{mode} is not supported"):
        sk.set_module_options({"deterministic": sk.DeterministicMode[mode]})
    with pytest.raises(ValueError, match="only DeterministicMode.NOT_GUARANTEED is accepted"):
        @sk.kernel(module="unique", module_options={"deterministic": sk.DeterministicMode[mode]})
        def k(x: sk.array(dtype=float)):
            pass


@pytest.mark.parametrize("value", [True, 1, "RUN_TO_RUN", None])
def test_other_values_are_refused(value):
    with pytest.raises(ValueError, match="deterministic must be a simkit.DeterministicMode value"):
        sk.set_module_options({"deterministic": value})


def test_max_records_must_be_a_count():
    with pytest.raises(ValueError, match="deterministic_max_records must be an int >= 0"):
        sk.set_module_options({"deterministic_max_records": -1})

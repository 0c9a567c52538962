"""``block_dim()`` in kernels: the launch's block size on a GPU, 1 on the CPU (one thread per block)."""
import numpy as np

import simkit as sk


@sk.kernel
def record_block_dim(out: sk.array(dtype=int)):
    out[sk.tid()] = sk.block_dim()


def test_block_dim(device):
    out = sk.zeros(300, dtype=int, device=device)
    sk.launch(record_block_dim, 300, inputs=[out], device=device, block_dim=64)
    want = 1 if sk.get_device(device).is_cpu else 64
    np.testing.assert_array_equal(out.numpy(), np.full(300, want))
    assert sk.block_dim() == 1  # (from Python: the CPU's)

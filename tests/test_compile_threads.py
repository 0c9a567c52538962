"""Kernels launched for the first time from several threads at once (kernels/compile_lock.py): each thread's
kernel translates and runs. Their @funcs are shared, so unguarded translations interleaved and failed ("@func
'helper1' calls itself"), in most runs of this test before the lock."""
import threading
import uuid

import numpy as np
from module_files import import_source

import simkit as sk

N = 6


def _module(tmp_path):
    name = f"threads_{uuid.uuid4().hex[:10]}"
    src = "import simkit as sk\n"
    for i in range(N):
        src += f'''
@sk.func
def helper{i}(x: float) -> float:
    return sk.sin(x) * {i + 1}.0 + x


@sk.kernel
def k{i}(a: sk.array(dtype=float), out: sk.array(dtype=float)):
    t = sk.tid()
    out[t] = helper{i}(a[t]) + helper{(i + 1) % N}(a[t])
'''
    return import_source(tmp_path, name, src)


def test_first_launches_from_several_threads_at_once(tmp_path):
    x = np.linspace(0.0, 1.0, 100, dtype=np.float32)
    for _ in range(3):  # (fresh kernels each round: the race was timing-dependent)
        mod = _module(tmp_path)
        errors, results = [], {}
        barrier = threading.Barrier(N)

        def run(i, mod=mod, errors=errors, results=results, barrier=barrier):
            try:
                a, out = sk.array(x, device="cpu"), sk.zeros(100, dtype=float, device="cpu")
                barrier.wait()
                sk.launch(getattr(mod, f"k{i}"), 100, inputs=[a, out], device="cpu")
                results[i] = out.numpy()
            except Exception as e:  # noqa: BLE001 - reported below
                errors.append(f"k{i}: {e}")

        threads = [threading.Thread(target=run, args=(i,)) for i in range(N)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors, errors
        for i in range(N):
            want = np.sin(x) * (i + 1) + x + np.sin(x) * ((i + 1) % N + 1) + x
            np.testing.assert_allclose(results[i], want, rtol=1e-5, atol=1e-6)

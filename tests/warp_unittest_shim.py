"""The helpers warp-lang's unit tests import from ``warp.tests.unittest_utils``, over simkit.

warp-lang's tests register one method per device with ``add_function_test`` /
``add_kernel_test`` and compare with ``assert_np_equal``. These are the same helpers, written
for simkit: the test devices are simkit's CPU (and its CUDA devices where a GPU is present),
and ``CheckOutput`` fails a test that prints, as warp-lang's does (``wp.expect_eq`` prints on a
mismatch).
"""
from __future__ import annotations

import contextlib
import ctypes  # noqa: F401 - the tests use it through ``import *`` (as Warp's unittest_utils gives it)
import importlib.util
import functools
import io
import os
import re
import sys
import tempfile
import unittest  # noqa: F401 - the tests use it through ``import *``

import numpy as np

import simkit as wp

test_mode = "basic"
USD_AVAILABLE = importlib.util.find_spec("pxr") is not None  # (the geometry tests read Warp's .usd meshes)


def get_cpu_test_devices():
    return [wp.get_device("cpu")]


def get_selected_cuda_test_devices(mode=None):
    return [wp.get_device("cuda:0")] if wp.is_cuda_available() else []


def get_test_devices(mode=None):
    return get_cpu_test_devices() + get_selected_cuda_test_devices(mode)


def get_cuda_test_devices(mode=None):
    return get_selected_cuda_test_devices(mode)


def get_test_devices_with_graph_capture_allocation(mode=None):
    """Devices that can allocate during a graph capture: all (simkit allocates outside a CUDA graph; a CPU capture
    allocates at once)."""
    return get_test_devices(mode)


def get_test_devices_with_cuda_graph_module_load(mode=None):
    """Devices where a module may be loaded during a graph capture: all (the CPU captures too)."""
    return get_test_devices(mode)


@contextlib.contextmanager
def suppress_native_error_output():
    """Warp silences its native library's stderr here; simkit's native code reports through exceptions."""
    yield


def make_isolated_kernel(func, **kwargs):
    """A kernel in a module of its own, keyed on its definition site (a broken one then fails alone)."""
    key = f"{func.__module__}.{func.__qualname__}:{func.__code__.co_firstlineno}"
    return wp.kernel(func, module=key, **kwargs)


get_cuda_test_devices_with_mempool = get_cuda_test_devices


def run_test_in_subprocess(test, **kwargs):
    """Warp runs some tests in a child interpreter; here they run in this one (False: run the body)."""
    return False
get_selected_cuda_test_devices_with_mempool = get_selected_cuda_test_devices
get_test_devices_with_graph_capture_allocation_and_cuda_graph_module_load = get_test_devices_with_graph_capture_allocation


def get_cuda_device_pair_with_mempool_access_support(devices=None):
    """Two CUDA devices whose memory pools can reach each other (None: fewer than two GPUs)."""
    cuda = [d for d in (devices or wp.get_cuda_devices()) if d.is_cuda]
    return next(((a, b) for a in cuda for b in cuda if a != b and wp.is_mempool_access_supported(a, b)), None)


def get_cuda_device_pair_with_peer_access_support(devices=None):
    """Two CUDA devices with peer access (None: fewer than two GPUs)."""
    cuda = [d for d in (devices or wp.get_cuda_devices()) if d.is_cuda]
    return next(((a, b) for a in cuda for b in cuda if a != b and wp.is_peer_access_supported(a, b)), None)


class StreamCapture:
    """Captures what is written to a standard stream, C code's output included (a dup2 of its fd)."""

    def __init__(self, stream_name):
        self.stream_name = stream_name

    def begin(self):
        sys.stdout.flush()
        sys.stderr.flush()
        self.saved = getattr(sys, self.stream_name)
        self.fd = {"stdout": 1, "stderr": 2}[self.stream_name]  # C's stream (under pytest sys.stdout is another file)
        self.target = os.dup(self.fd)
        self.tmp = tempfile.TemporaryFile(buffering=0)
        os.dup2(self.tmp.fileno(), self.fd)
        self.wrapper = io.TextIOWrapper(self.tmp, encoding="utf-8", write_through=True)
        setattr(sys, self.stream_name, self.wrapper)

    def end(self):
        with contextlib.suppress(Exception):
            import ctypes

            ctypes.CDLL(None).fflush(None)
        self.wrapper.flush()
        os.dup2(self.target, self.fd)
        os.close(self.target)
        setattr(sys, self.stream_name, self.saved)
        self.tmp.seek(0)
        text = self.tmp.read().decode("utf-8", errors="replace")
        self.wrapper.close()  # (closes the file too)
        return text


class StdOutCapture(StreamCapture):
    def __init__(self):
        super().__init__("stdout")


class StdErrCapture(StreamCapture):
    def __init__(self):
        super().__init__("stderr")


class CheckOutput:
    """Fails the test if it printed anything (warp-lang's ``expect_eq`` prints its mismatches)."""

    def __init__(self, test):
        self.test = test

    def __enter__(self):
        self.capture = StdOutCapture()
        self.capture.begin()

    def __exit__(self, exc_type, exc_value, traceback):
        try:
            wp.synchronize()
        finally:
            text = self.capture.end()
        if text.strip():
            print(text.rstrip())
            if exc_type is None:
                self.test.fail(f"Unexpected output:\n'{text.rstrip()}'")


def assert_array_equal(result, expect):
    np.testing.assert_equal(result.numpy(), expect.numpy())


def assert_np_equal(result, expect, tol=0.0):
    if tol != 0.0:
        np.testing.assert_allclose(np.asarray(result).flatten(), np.asarray(expect).flatten(), atol=tol,
                                   equal_nan=True)
    else:
        np.testing.assert_array_equal(result, expect)


def sanitize_identifier(s):
    s = str(s)
    return s if s.isidentifier() else re.sub(r"\W|^(?=\d)", "_", s)


def _test_func(func, device, check_output, device_check=None, **kwargs):
    @functools.wraps(func)
    def test_func(self):
        if device_check is not None:
            device_check(self, device)
        if check_output:
            with CheckOutput(self):
                func(self, device, **kwargs)
        else:
            func(self, device, **kwargs)

    return test_func


def _skip(self):
    self.skipTest("No suitable devices to run the test.")


def add_function_test(cls, name, func, devices=None, check_output=True, device_check=None, **kwargs):
    if devices is None:
        setattr(cls, name, _test_func(func, None, check_output, device_check, **kwargs))
    elif isinstance(devices, list):
        if not devices:
            setattr(cls, name, _skip)
        for device in devices:
            setattr(cls, f"{name}_{sanitize_identifier(device)}",
                    _test_func(func, device, check_output, device_check, **kwargs))
    else:
        setattr(cls, f"{name}_{sanitize_identifier(devices)}",
                _test_func(func, devices, check_output, device_check, **kwargs))


def add_function_test_register_kernel(cls, name, func, devices=None, **kwargs):
    func(None, None, **kwargs, register_kernels=True)
    add_function_test(cls, name, func, devices=devices, **kwargs)


def add_kernel_test(cls, kernel, dim, name=None, expect=None, inputs=None, devices=None, inputs_factory=None):
    if inputs is not None and inputs_factory is not None:
        raise ValueError("Only one of `inputs` and `inputs_factory` may be provided.")

    def test_func(self, device):
        args = list(inputs_factory(device) if inputs_factory is not None else (inputs or []))
        if expect:
            result = wp.array(expect, dtype=int, device=device)
            output = wp.zeros_like(result)
            args.append(output)
        with CheckOutput(self):
            wp.launch(kernel, dim=dim, inputs=args, device=device)
        if expect:
            assert_array_equal(output, result)

    name = name or kernel.key
    for d in devices if devices is not None else get_test_devices():
        def wrapper(test, device=d):
            test_func(test, device)

        setattr(cls, f"{name}_{sanitize_identifier(d)}", wrapper)


@wp.struct
class FemSample:
    """Stands in for ``warp.fem.Sample`` (a struct of another module; test_struct imports it): the same fields
    and defaults."""
    element_index: wp.int32
    element_coords: wp.vec3
    qp_index: wp.int32 = -1
    qp_weight: float = 0.0
    test_dof: wp.int32 = -1
    trial_dof: wp.int32 = -1

"""Runtime: devices, arrays, launch, tape."""
from .array import (array, array1d, array2d, array3d, array4d, clone, copy, empty, empty_like, from_numpy, full,
                    full_like, ones, ones_like, zeros, zeros_like)
from .device import (Device, ScopedDevice, get_cuda_device_count, get_device, get_devices, is_cuda_available,
                     set_device)
from .launch import launch
from .tape import Tape, TapeError, checkpoint

__all__ = ["array", "array1d", "array2d", "array3d", "array4d", "clone", "copy", "empty", "empty_like",
           "from_numpy", "full", "full_like", "ones", "ones_like", "zeros", "zeros_like", "Device", "ScopedDevice",
           "get_cuda_device_count", "get_device", "get_devices", "is_cuda_available", "set_device", "launch", "Tape", "TapeError", "checkpoint"]

"""CUDA backend through cuda-python only: NVRTC compiles, the driver API loads and launches."""

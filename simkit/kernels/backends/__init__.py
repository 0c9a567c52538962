"""Native backends: cpu (system C++ compiler), cuda (NVRTC + driver API)."""

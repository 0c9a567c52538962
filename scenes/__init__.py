"""Runnable example scenes (`simkit run <scene>`)."""

"""quat builtins."""

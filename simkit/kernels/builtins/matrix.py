"""matrix builtins."""

"""spatial builtins."""

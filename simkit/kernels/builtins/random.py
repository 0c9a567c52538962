"""random builtins."""

"""vector builtins."""

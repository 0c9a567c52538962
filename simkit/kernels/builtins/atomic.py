"""atomic builtins."""

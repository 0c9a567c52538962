"""scalar builtins."""

"""transform builtins."""

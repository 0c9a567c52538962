"""array builtins."""

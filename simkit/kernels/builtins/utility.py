"""utility builtins."""

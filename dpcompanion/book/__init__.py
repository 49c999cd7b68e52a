"""book layer."""

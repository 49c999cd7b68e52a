"""training layer."""

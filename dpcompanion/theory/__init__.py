"""theory layer."""

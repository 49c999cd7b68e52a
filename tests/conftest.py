"""Shared test settings: a hypothesis profile sized for a 2-core CI machine."""

import os

from hypothesis import HealthCheck, settings

# Under CI a skip whose reason is not allowed in pyproject.toml fails (tests/skip_policy.py).
pytest_plugins = ["skip_policy"]

settings.register_profile(
    "ci", max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True
)
settings.register_profile("dev", max_examples=200, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

# Tests draw figures without a display.
os.environ.setdefault("MPLBACKEND", "Agg")

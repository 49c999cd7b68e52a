"""Shared test settings: a hypothesis profile sized for a 2-core CI machine, one thread per
pytest-xdist worker, and the fixtures several test modules share."""

import os

import pytest
from hypothesis import HealthCheck, settings

# Under CI a skip whose reason is not allowed in pyproject.toml fails (tests/skip_policy.py);
# under xdist (`make test`) the xdist_group marks keep their tests on one worker (tests/xdist_groups.py).
pytest_plugins = ["skip_policy", "xdist_groups"]

settings.register_profile(
    "ci", max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True
)
settings.register_profile("dev", max_examples=200, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

# Tests draw figures without a display.
os.environ.setdefault("MPLBACKEND", "Agg")

# `make test` runs the suite on pytest-xdist workers, as many as the machine has cores: each
# worker computes with one thread (torch, and the BLAS/OpenMP pools threadpoolctl finds), so
# that the workers do not oversubscribe the cores. A test about thread counts asks for
# `torch_default_threads`. Subprocesses (CLI, kernels, Dask workers) keep their defaults.
XDIST_WORKER = os.environ.get("PYTEST_XDIST_WORKER")
TORCH_DEFAULT_THREADS = None
_THREAD_LIMITS = None
if XDIST_WORKER:
    import numpy  # noqa: F401  (load the BLAS libraries before limiting them)
    import scipy.linalg  # noqa: F401
    import torch
    from threadpoolctl import threadpool_limits

    TORCH_DEFAULT_THREADS = torch.get_num_threads()
    torch.set_num_threads(1)
    _THREAD_LIMITS = threadpool_limits(limits=1)


@pytest.fixture()
def torch_default_threads():
    """For the test's duration, torch's default thread count (what a serial run has), also
    on an xdist worker that otherwise computes with one thread; yields that count."""
    import torch

    before = torch.get_num_threads()
    n = TORCH_DEFAULT_THREADS or before
    torch.set_num_threads(n)
    try:
        yield n
    finally:
        torch.set_num_threads(before)


@pytest.fixture(scope="session")
def claim_results():
    """``registry.run_checks()``: every registered check run once per session, for
    test_claims.py and test_claims_momentum_adp.py (whose tests that read it share the
    xdist group ``claim-results``, so that one worker runs them all)."""
    from dpcompanion.claims import registry

    return registry.run_checks()

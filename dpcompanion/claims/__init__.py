"""Registry of machine-checked claims of both papers (see :mod:`dpcompanion.claims.registry`)."""

from dpcompanion.claims.registry import Claim, REGISTRY, Result, claim, load_all, run_checks

__all__ = ["REGISTRY", "Claim", "Result", "claim", "load_all", "run_checks"]

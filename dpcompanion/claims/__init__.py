"""The registry of machine-checked claims of both papers.

Each claim (an ID of ``SPEC.md``) has an entry whose check, against independent references (SymPy,
brute force, dp-accounting), decides its status and, for a passing one, catches a declared mutant.
Entries are grouped by the page that shows them; :mod:`.registry` holds and runs them
(``python -m dpcompanion checks``).

May import: ``core``, ``theory``.
Imports torch: no.
"""

from dpcompanion.claims.registry import Claim, REGISTRY, Result, claim, load_all, run_checks

__all__ = ["REGISTRY", "Claim", "Result", "claim", "load_all", "run_checks"]

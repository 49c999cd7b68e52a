"""The registry of machine-checked claims of both papers.

Each claim (an ID of ``SPEC.md``: a theorem's inequality, a table's row, a printed number)
has an entry with a status (proved, checked, verified, identity, refuted, ...), a check
against independent references (SymPy, brute force, dp-accounting, a formula rewritten)
and, for the proved, checked and verified ones, a mutant the check must catch. Entries
are grouped by the part of the paper they check; :mod:`.registry` holds the registry and
runs the checks (``python -m dpcompanion checks``).

May import: ``core``, ``theory``.
Imports torch: no.
"""

from dpcompanion.claims.registry import Claim, REGISTRY, Result, claim, load_all, run_checks

__all__ = ["REGISTRY", "Claim", "Result", "claim", "load_all", "run_checks"]

"""One table of every Hong et al. experiment's verdicts, for the landing page.

:func:`verdict_summary` takes each experiment's stored full-mode result when there is one
(``store.load(id, mode="full")``, when fresh), else the result of ``mode`` (``store.load_or_compute``,
cached by the results store), and collects the rows its module's ``verdict_rows`` makes
from the rules of :mod:`dpcompanion.experiments.comparisons`. Nothing here computes a
verdict itself.
"""

from __future__ import annotations

import importlib

from dpcompanion.experiments import store

__all__ = ["HONG_EXPERIMENTS", "verdict_summary"]

HONG_EXPERIMENTS = ("h-f-eff", "h-f-scale", "h-f-curv", "h-f-mom", "h-f-infl", "h-f-infl-extra", "h-x-eer",
                    "h-x-eer-breakdown")


def verdict_summary(*, mode: str = "quick", seed: int = 0, device: str = "cpu",
                    ids=HONG_EXPERIMENTS) -> list[dict]:
    """Rows ``item, paper, ours, verdict, note`` (for ``report.paper_vs_ours``), each item
    prefixed with its experiment ID and the mode its result was computed in."""
    rows = []
    for eid in ids:
        mod = importlib.import_module(f"dpcompanion.experiments.{eid.replace('-', '_')}")
        res = store.load(eid, mode="full") if mode != "full" else None
        if res is None or not res.fresh:  # a stale full result is never shown as current
            res = store.load_or_compute(eid, mode=mode, seed=seed, device=device)
        for r in mod.verdict_rows(res.payload):
            rows.append({**r, "item": f"{{doc}}`{eid} <{eid}>` ({res.mode}): {r['item']}"})
    return rows

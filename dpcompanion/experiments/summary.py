"""One table of every experiment's verdicts (Hong et al., Wu et al., and our own checks), for
the landing page.

:func:`verdict_summary` takes each experiment's result as its page shows it
(:func:`dpcompanion.experiments.store.result_to_show`: the full result when fresh, else this
build's), and collects the rows its module's ``verdict_rows`` makes
from the rules of :mod:`dpcompanion.experiments.comparisons`. Nothing here computes a
verdict itself.
"""

from __future__ import annotations

import importlib

from dpcompanion.experiments import base, store

__all__ = ["experiments_with_verdicts", "verdict_summary"]


def _module(eid: str):
    return importlib.import_module(base.get(eid).run_unit.__module__)


def experiments_with_verdicts() -> list[str]:
    """Every experiment of :func:`dpcompanion.experiments.base.all_experiments` whose module
    defines ``verdict_rows`` (the rows its page shows), by ID."""
    return [eid for eid in base.all_experiments() if callable(getattr(_module(eid), "verdict_rows", None))]


def verdict_summary(*, mode: str = "quick", seed: int = 0, device: str = "cpu", ids=None) -> list[dict]:
    """Rows ``item, paper, ours, verdict, note`` (for ``report.paper_vs_ours``), each item
    prefixed with its experiment ID (a link to its page) and the mode its result was computed
    in; ``ids`` defaults to :func:`experiments_with_verdicts`."""
    rows = []
    for eid in (experiments_with_verdicts() if ids is None else ids):
        mod = _module(eid)
        res = store.result_to_show(eid, mode=mode, seed=seed, device=device)
        for r in mod.verdict_rows(res.payload):
            rows.append({**r, "item": f"{{doc}}`{eid} <{eid}>` ({res.mode}): {r['item']}"})
    return rows

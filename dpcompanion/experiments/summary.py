"""One table of every experiment's verdicts (Hong et al., Wu et al., and our own checks), for
the landing page.

:func:`verdict_summary` takes each experiment's result as its page shows it
(:func:`dpcompanion.experiments.store.result_to_show`: the full result when fresh, else this
build's), and collects the rows its module's ``verdict_rows`` makes
from the rules of :mod:`dpcompanion.experiments.comparisons`; then the rows of the figures
and tables that have rules but no experiment (nothing is trained: :data:`CLAIM_TABLES`).
Nothing here computes a verdict itself.
"""

from __future__ import annotations

import importlib

from dpcompanion.experiments import base, store

__all__ = ["experiments_with_verdicts", "verdict_summary", "CLAIM_TABLES"]


def _w_eps_rows() -> list[dict]:
    from dpcompanion.claims import w_adp
    from dpcompanion.experiments.comparisons import wu

    return wu.w_eps_rows(w_adp.w_eps_table())


def _w_f2_rows() -> list[dict]:
    from dpcompanion.experiments.comparisons import wu

    return wu.w_f2_rows()


def _h_f_theory_rows() -> list[dict]:
    from dpcompanion.experiments.comparisons import theory

    return theory.h_f_theory_rows()


#: SPEC ID -> (page, rows): paper-vs-ours tables with rules but no experiment module
CLAIM_TABLES = {"h-f-theory": ("h-f-theory", _h_f_theory_rows), "w-f2": ("w-theory", _w_f2_rows),
                "w-eps": ("w-theory", _w_eps_rows)}


def _module(eid: str):
    return importlib.import_module(base.get(eid).run_unit.__module__)


def experiments_with_verdicts() -> list[str]:
    """Every experiment of :func:`dpcompanion.experiments.base.all_experiments` whose module
    defines ``verdict_rows`` (the rows its page shows), by ID."""
    return [eid for eid in base.all_experiments() if callable(getattr(_module(eid), "verdict_rows", None))]


def verdict_summary(*, mode: str = "quick", seed: int = 0, device: str = "cpu", ids=None) -> list[dict]:
    """Rows ``item, paper, ours, verdict, note`` (for ``report.paper_vs_ours``), each item
    prefixed with its experiment ID (a link to its page) and the mode its result was computed
    in; ``ids`` defaults to :func:`experiments_with_verdicts` and then :data:`CLAIM_TABLES`
    (items marked "computed": no experiment, nothing trained)."""
    rows = []
    for eid in (experiments_with_verdicts() + list(CLAIM_TABLES) if ids is None else ids):
        if eid in CLAIM_TABLES:
            page, make = CLAIM_TABLES[eid]
            rows += [{**r, "item": f"{{doc}}`{eid} <{page}>` (computed): {r['item']}"} for r in make()]
            continue
        mod = _module(eid)
        res = store.result_to_show(eid, mode=mode, seed=seed, device=device)
        for r in mod.verdict_rows(res.payload):
            rows.append({**r, "item": f"{{doc}}`{eid} <{eid}>` ({res.mode}): {r['item']}"})
    return rows

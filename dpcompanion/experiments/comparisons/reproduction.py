"""The reproduction report (issue 21): every verdict row of the book, machine-readable.

:func:`report_rows` lists, for every experiment page with verdict rows and every theory table
(:data:`dpcompanion.experiments.comparisons.CLAIM_TABLES`), one dict per row with

* ``page``, ``rule``, ``item``, ``verdict``, ``note``;
* ``paper``: what the paper printed (text) and ``paper_value`` (the number judged, or None);
* ``ours``: ``{"estimate", "ci_low", "ci_high" (95%), "n", "text"}``;
* ``margin``: the tolerance or smallest effect of interest (units of ``ours``), ``mde``: the
  smallest effect our runs detect at 80% power, ``runs_needed``: for an ``inconclusive`` row,
  how many runs would separate zero from the paper's value at 80% power;
* ``scale``: ``{dimension: {"paper", "ours", "source", "match"}}``, computed by
  :func:`.scale.scale_of` from the result's recorded config (the paper's values and quotations
  from this code, so a corrected quotation shows without touching the result; the block recorded
  in the provenance at save time is kept as a record) and ``at_paper_scale``;
* ``design`` (issue 33): ``paired`` when the two arms compared share seeds, ``independent``
  when not (:data:`.rows.DESIGN_OF`, the estimator :func:`.rule.estimate_effect`), None for a
  row that compares no two arms by seed;
* ``comparable`` (issue 33): ``size`` where our setup (data set, model, trained layers, number
  of steps) is the paper's, ``direction`` where it is not and the row judges the sign alone
  (:data:`.rows.COMPARABLE_OF`, else :func:`.scale.comparability` of the scale block);
* ``tuning``: the payload's ``tuning`` list (``{param, method, chosen, grid_min, grid_max,
  interior, stated_bound, tuning_seeds, report_seeds}``), ``[]`` where it has none;
* ``result``: which stored result the row was judged on: ``{"mode": "full" | "quick" |
  "computed" | None, "fresh", "digest", "path"}``.

Which result: the fresh stored paper-mode result (the paper's own sizes, where an experiment
defines ``configs["paper"]`` and the sweep is complete) when there is one, else the fresh stored
full result, else the fresh stored quick result (``result.mode`` says which: ``paper``,
``full`` or ``quick``; the scale block is the judged result's). **Nothing is computed unless asked** (``compute=True``, ``verdicts --compute``): a page
without a fresh stored result gives one ``not comparable`` row saying why and which command
computes it, so ``verdicts --json`` is cheap, deterministic and never silently runs
experiments. Theory tables are computed (no training: seconds).

:func:`write_csv` writes the same rows flattened (``scale`` and ``tuning`` as JSON text);
:func:`counts` counts verdicts.
"""

from __future__ import annotations

import csv
import importlib
import io
import json
import math
from collections import Counter
from pathlib import Path
from typing import Any, Iterable

from dpcompanion.core import outputs
from dpcompanion.experiments import base, comparisons, store
from dpcompanion.experiments.comparisons import scale as scale_mod, theory, wu
from dpcompanion.experiments.protocols import wu_paper

__all__ = ["CLAIM_TABLES", "experiments_with_verdicts", "report_rows", "counts", "write_csv", "csv_text", "CSV_COLUMNS",
           "REPEATS_KEY", "power_rows"]

#: the config key holding our runs per compared estimate (repeats or seeds), by page; rows whose
#: rule does not know n (a difference of means handed over with its se) take it from here
REPEATS_KEY = {"h-f-eff": "repeats", "h-f-eff-exact": "repeats", "h-f-scale": "repeats", "h-f-mom": "repeats", "h-f-curv": "repeats",
               "h-f-infl-extra": "repeats", "h-f-infl": "repeats", "w-f1": "seeds", "w-f4": "seeds",
               "w-t1245": "seeds", "w-ladder": "seeds", "w-t36": "seeds", "h-x-eer": "runs_mc", "h-x-eer-breakdown": "runs"}

CSV_COLUMNS = ("page", "rule", "item", "verdict", "paper", "paper_value", "estimate", "ci_low", "ci_high", "n",
               "margin", "mde", "runs_needed", "design", "comparable", "result_mode", "at_paper_scale", "scale", "tuning",
               "note")


def _n_from_config(page: str, item: str, config: dict) -> int | None:
    key = REPEATS_KEY.get(page)
    if key and "dnn" in item.lower() and f"dnn_{key}" in config:
        key = f"dnn_{key}"
    v = config.get(key) if key else None
    return int(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def _pick(eid: str, *, compute: bool, seed: int, device: str):
    """(result, mode, why-not): the fresh paper result (complete; an experiment with a paper
    config), else the fresh full one, else the fresh quick one, else (when ``compute``) a
    computed quick one."""
    paper = store.fresh_paper(eid)
    if paper is not None:
        return paper, "paper", ""
    full = store.load(eid, mode="full")
    if full is not None and full.fresh:
        return full, "full", ""
    quick = store.load(eid, mode="quick", seed=seed)
    if quick is not None and quick.fresh:
        return quick, "quick", ""
    if compute:
        return store.load_or_compute(eid, mode="quick", seed=seed, device=device), "quick", ""
    why = ("no full result stored" if full is None else f"full result stale ({full.stale_reason})")
    why += "; " + ("no quick result stored" if quick is None else f"quick result stale ({quick.stale_reason})")
    return None, None, why


def _row(page: str, r: dict, *, config: dict, scale: dict, tuning: list, result: dict) -> dict:
    st = r.get("stats") or {}
    n = st.get("n") if st.get("n") is not None else _n_from_config(page, str(r["item"]), config)
    k = st.get("runs_factor")
    need = int(math.ceil(k * n)) if (r["verdict"] == "inconclusive" and k and n) else None
    out = {
        "page": page, "rule": r.get("rule"), "item": str(r["item"]), "verdict": r["verdict"],
        "paper": str(r["paper"]), "paper_value": st.get("paper_value"),
        "ours": {"estimate": st.get("estimate"), "ci_low": st.get("ci_low"), "ci_high": st.get("ci_high"), "n": n,
                 "se": st.get("se"), "text": str(r["ours"])},
        "margin": st.get("margin"), "margin_reason": r.get("margin_reason"), "mde": st.get("mde"), "runs_needed": need,
        "design": r.get("design"), "comparable": r.get("comparable") or scale_mod.comparability(page, scale)[0],
        "scale": scale, "at_paper_scale": scale_mod.at_paper_scale(scale) if scale else None,
        "tuning": list(tuning), "result": result, "note": str(r.get("note", "")),
    }
    if r.get("headline"):  # W-LADDER's top rung (issue 33, item 5)
        out["headline"] = r["headline"]
    return out


def _experiment_rows(eid: str, *, compute: bool, seed: int, device: str) -> list[dict]:
    mod = importlib.import_module(base.get(eid).run_unit.__module__)
    res, mode, why = _pick(eid, compute=compute, seed=seed, device=device)
    if res is None:
        config = base.config_for(base.get(eid), "full", seed=seed)
        return [{"page": eid, "rule": None, "item": f"{eid}: no fresh stored result", "verdict": "not comparable",
                 "paper": "", "paper_value": None,
                 "ours": {"estimate": None, "ci_low": None, "ci_high": None, "n": None, "text": ""},
                 "margin": None, "mde": None, "runs_needed": None, "design": None,
                 "comparable": scale_mod.comparability(eid, scale_mod.scale_of(eid, config))[0],
                 "scale": scale_mod.scale_of(eid, config),
                 "at_paper_scale": None, "tuning": [],
                 "result": {"mode": None, "fresh": False, "digest": None, "path": None},
                 "note": f"{why}: `python -m dpcompanion experiment {eid}` computes it (or `verdicts --compute`)"}]
    prov = res.provenance
    config = prov.get("config") or base.config_for(base.get(eid), mode, seed=seed)
    # the paper's side of the block (values, quotations) is read from this code, ours from the
    # recorded config: a corrected quotation shows at once and never makes a result stale
    scale = scale_mod.scale_of(eid, config)
    payload = res.payload
    tuning = payload.get("tuning", []) if isinstance(payload, dict) else []
    result = {"mode": mode, "fresh": bool(res.fresh), "digest": prov.get("digest"),
              "path": str(res.path) if res.path else None, "scale_recorded": "scale" in prov}
    rows = list(mod.verdict_rows(payload))
    if eid == "w-t1245":  # the page also shows every cell's verdict
        rows = _w_t1245_cells(payload) + rows
    rows = [comparisons.apply_tuning_cap(r, tuning) for r in rows]
    return [_row(eid, r, config=config, scale=scale, tuning=comparisons.tuning_for_row(r, tuning), result=result)
            for r in rows]


def _w_t1245_cells(payload) -> list[dict]:
    """The w-t1245 page's per-cell rows (rule ``w-t1245/gap``), as its cell table judges them."""
    out = []
    for metric in ("best", "last"):
        for c in payload["cells"]:
            table = wu_paper.TABLE_OF[(c["family"], metric)]
            out.append(comparisons.gap_verdict(
                c, metric=metric, item=f"Table {table}: gain ADP - DP, {c['family']}, C_G {c['clip']:g}, "
                                       f"eps_bar {c['epsilon_bar']:g}, {c['epochs']} epochs")[2])
    return out


def _w_eps_rows() -> list[dict]:
    from dpcompanion.claims import w_adp

    return wu.w_eps_rows(w_adp.w_eps_table())


def _w_f2_rows() -> list[dict]:
    return wu.w_f2_rows()


def _h_f_theory_rows() -> list[dict]:
    return theory.h_f_theory_rows()


def _accounting_rows() -> list[dict]:
    return [r for r in theory.accounting_rows() if r["rule"] != "w-eps/epsilon"]  # W-EPS: its own entry


def _h_sec_4_2_rows() -> list[dict]:
    return theory.h_sec_4_2_rows()


#: SPEC ID -> (page, rows): paper-vs-ours tables with rules but no experiment module
CLAIM_TABLES = {"h-f-theory": ("h-f-theory", _h_f_theory_rows), "accounting": ("accounting", _accounting_rows),
                "h-sec-4-2": ("h-sec-4-2", _h_sec_4_2_rows), "w-f2": ("w-theory", _w_f2_rows),
                "w-eps": ("w-theory", _w_eps_rows)}


def _module(eid: str):
    return importlib.import_module(base.get(eid).run_unit.__module__)


def experiments_with_verdicts() -> list[str]:
    """Every experiment of :func:`dpcompanion.experiments.base.all_experiments` whose module
    defines ``verdict_rows`` (the rows its page shows), by ID."""
    return [eid for eid in base.all_experiments() if callable(getattr(_module(eid), "verdict_rows", None))]



def report_rows(*, pages: Iterable[str] | None = None, compute: bool = False, seed: int = 0,
                device: str = "cpu") -> list[dict]:
    """Every verdict row of the book (see the module docstring); ``pages`` restricts to those
    experiment/claim-table IDs (ValueError naming the known ones otherwise)."""
    exps = experiments_with_verdicts()
    known = exps + list(CLAIM_TABLES)
    sel = known if pages is None else list(pages)
    bad = [p for p in sel if p not in known]
    if bad:
        raise ValueError(f"must be one of {', '.join(known)}, got {', '.join(bad)}")
    rows: list[dict] = []
    for pid in sel:
        if pid in CLAIM_TABLES:
            page, make = CLAIM_TABLES[pid]
            res = {"mode": "computed", "fresh": True, "digest": None, "path": None}
            rows += [_row(pid, r, config={}, scale={}, tuning=[], result={**res, "page": page}) for r in make()]
        else:
            rows += _experiment_rows(pid, compute=compute, seed=seed, device=device)
    return rows


def counts(rows: Iterable[dict]) -> dict[str, int]:
    """Verdict word -> number of rows."""
    return dict(sorted(Counter(r["verdict"] for r in rows).items()))


def _flat(r: dict) -> dict:
    o = r["ours"]
    return {"page": r["page"], "rule": r["rule"] or "", "item": r["item"], "verdict": r["verdict"], "paper": r["paper"],
            "paper_value": r["paper_value"], "estimate": o["estimate"], "ci_low": o["ci_low"], "ci_high": o["ci_high"],
            "n": o["n"], "margin": r["margin"], "mde": r["mde"], "runs_needed": r["runs_needed"],
            "design": r.get("design"), "comparable": r.get("comparable"),
            "result_mode": r["result"]["mode"], "at_paper_scale": r["at_paper_scale"],
            "scale": json.dumps({k: {"paper": v.get("paper"), "ours": v.get("ours")} for k, v in r["scale"].items()},
                                sort_keys=True, default=str),
            "tuning": json.dumps(r["tuning"], sort_keys=True, default=str), "note": r["note"]}


def csv_text(rows: Iterable[dict]) -> str:
    """The rows as CSV (:data:`CSV_COLUMNS`)."""
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=list(CSV_COLUMNS), lineterminator="\n")
    w.writeheader()
    for r in rows:
        w.writerow({k: ("" if v is None else v) for k, v in _flat(r).items()})
    return buf.getvalue()


def write_csv(rows: Iterable[dict], path: Path) -> Path:
    """Write :func:`csv_text` to ``path`` by :func:`dpcompanion.core.outputs.write_text` (a
    regular file replaced atomically; a device, FIFO or symlink's target written through,
    never replaced, issue 30)."""
    path = Path(path)
    text = csv_text(rows)
    outputs.write_text(path, text, name="--csv")
    return path


def power_rows(rows: Iterable[dict]) -> list[list[Any]]:
    """A page's power table from :func:`report_rows` rows: ``[item, the paper's effect, our
    estimate, our n, the smallest effect our runs detect at 80% power, runs needed]`` for every
    row judged on a sampled estimate (one with a standard error)."""
    out = []
    for r in rows:
        o = r["ours"]
        if r.get("mde") is None or not o.get("se"):
            continue
        out.append([r["item"], "a direction" if r.get("paper_value") is None else f"{r['paper_value']:.3g}",
                    f"{o['estimate']:.3g}", "" if o.get("n") is None else o["n"], f"{r['mde']:.3g}",
                    "" if r.get("runs_needed") is None else r["runs_needed"]])
    return out

"""The registry of every verdict rule, and the reproduction report: every verdict row of the book,
machine-readable (``verdicts --json``).

:func:`all_rules` gathers the rules (:data:`PAGE_RULES`, then each experiment's); :func:`compare` makes one
row of one of them (:func:`.rule.row_of`).
:func:`report_rows` lists, for every experiment page with verdict rows and every theory table
(:data:`CLAIM_TABLES`), one dict per row with

* ``page``, ``rule``, ``item``, ``verdict``, ``outcome``, the criteria of :mod:`.rule`, ``note``;
* ``paper`` (what the paper printed) and ``paper_value`` (the number judged, or None);
* ``ours``: ``{"estimate", "ci_low", "ci_high" (95%), "n", "se", "text"}``;
* ``margin``, ``mde`` (the smallest effect our runs detect at 80% power), ``runs_needed`` (an
  ``inconclusive`` row's runs that would separate zero from the paper's value); where the rule declares
  a margin, ``margin_basis``, ``margin_source`` and ``margin_dated`` (:func:`margin_dated`);
* ``scale`` (:func:`dpcompanion.experiments.scale_tables.scale_of` of the result's recorded config, the
  paper's side read from this code) and ``at_paper_scale``; ``design``; ``comparable``; ``tuning``;
* ``result``: which stored result the row was judged on (``mode``, ``fresh``, ``digest``, ``path``).

The result judged is the store's one choice (:func:`dpcompanion.experiments.store.best_fresh`: the fresh
paper-mode result, else the full one, else the quick one). Nothing is computed unless asked
(``compute=True``, ``verdicts --compute``): a page without a fresh stored result gives one ``not judged``
row saying which command computes it. Theory tables are computed (seconds)."""

from __future__ import annotations

import csv
import functools
import io
import json
import math
import re
from collections import Counter
from datetime import datetime
from pathlib import Path
from typing import Any, Iterable

from dpcompanion.core import outputs
from dpcompanion.core.provenance import REPO
from dpcompanion.experiments import base, scale_tables as scale_mod, store
from dpcompanion.experiments.store import files
from dpcompanion.experiments.comparisons import theory, wu_rules
from dpcompanion.experiments.comparisons.rule import (CRITERIA, OUTCOMES, OWN_CODE_RULES, Rule, apply_tuning_cap,
                                                      decide, decided, row_of, tuning_for_row)
from dpcompanion.experiments.protocols import tuning as tuning_protocol

__all__ = ["PAGE_RULES", "all_rules", "experiment_of", "rules_for", "rule_by_id", "design_of", "plan_of", "compare",
           "verdict_of", "CLAIM_TABLES", "experiments_with_verdicts", "report_rows", "counts", "write_csv", "CSV_NAME",
           "reproduction_download_md", "verdict_summary", "note_with_details", "csv_text", "CSV_COLUMNS",
           "power_rows", "sentence", "SAME_PRINTED", "one_verdict_per_printed_number", "readable", "scope_of",
           "next_steps", "OWN_CODE_RULES", "SCOPES", "domain_bound", "outcome_counts", "setup_of", "SETUP_RANK", "outcome_words", "SETUP_WORDS",
           "EFFECT_WORDS", "TREND_WORDS"]

CSV_COLUMNS = ("page", "rule", "item", "verdict", "outcome", *CRITERIA, "judge_verdict", "paper", "paper_value", "estimate", "ci_low", "ci_high", "n",
               "margin", "mde", "runs_needed", "runs_needed_cpu_s", "design", "stage", "comparable", "result_mode", "at_paper_scale", "scope", "sentence",
               "next_step", "scale", "tuning", "note")


#: the rules of the pages that have no experiment (theory pages, W-EPS, W-F2): declared in
#: :mod:`.theory` and :mod:`.wu_rules`; every experiment declares its own (:attr:`.base.Experiment.rules`)
PAGE_RULES: tuple[Rule, ...] = tuple(theory.RULES) + tuple(wu_rules.RULES)


def all_rules() -> dict[str, Rule]:
    """Every verdict rule by id: those of the pages without an experiment (:data:`PAGE_RULES`),
    then each experiment's own (:func:`.base.all_experiments`, registered ones included);
    RuntimeError for an id declared twice."""
    out: dict[str, Rule] = {}
    groups = [PAGE_RULES] + [exp.rules for exp in base.all_experiments().values()]
    for g in groups:
        for r in g:
            if r.id in out:
                raise RuntimeError(f"verdict rule {r.id} defined twice")
            out[r.id] = r
    return out


def experiment_of(rule_id: str) -> str:
    """The experiment (or figure) ID a rule belongs to: the part before the ``/``."""
    return rule_id.split("/", 1)[0]


def rules_for(experiment_id: str) -> list[Rule]:
    """The rules of one page, in registry order."""
    return [r for k, r in all_rules().items() if experiment_of(k) == experiment_id]


def rule_by_id(rule_id: str) -> Rule:
    """The registered rule ``rule_id``; ValueError naming the registered ones otherwise."""
    rules = all_rules()
    if rule_id not in rules:
        raise ValueError(f"rule must be one of {', '.join(rules)}, got {rule_id!r}")
    return rules[rule_id]


def design_of(rule_id: str) -> str | None:
    """The design of rule ``rule_id``'s comparison (its :attr:`.rule.Rule.design`), None where it
    compares no two arms by seed.

    >>> design_of("w-t36/gap"), design_of("w-f4/decay"), design_of("w-eps/epsilon")
    ('paired', 'independent', None)
    """
    return rule_by_id(rule_id).design_name


def plan_of(experiment_id: str):
    """The declared group-sequential plan of an experiment (its :attr:`.base.Experiment.sequential`),
    None if none."""
    return base.get(experiment_id).sequential


def compare(rule_id: str, *, sizes_match: bool, sizes_note: str = "", item: str | None = None,
            tuning: Any = None, **measured: Any) -> dict[str, str]:
    """One paper-vs-ours row for ``rule_id`` (:func:`.rule.row_of` of the registry's rule).
    ``sizes_match=False``: not judged (verdict ``not comparable``, note ``not compared (sizes
    differ): <sizes_note>``), though our numbers are still shown. ``tuning``: the payload's
    tuning list, whose protocol caps the verdict (:func:`tuning_cap`).

    >>> r = compare("h-f-curv/sharp-vs-flat", sizes_match=True, sharp=1.0, sharp_se=0.1, flat=0.5, flat_se=0.1)
    >>> r["verdict"], r["outcome"], r["judge_verdict"], round(r["stats"]["ci_low"], 3)
    ('reproduced', 'success', 'agrees', 0.223)
    >>> compare("h-f-curv/sharp-vs-flat", sizes_match=False, sizes_note="N 10 vs 1000", sharp=1.0, sharp_se=0.1,
    ...         flat=0.5, flat_se=0.1)["note"].split(".")[0]
    'not compared (sizes differ): N 10 vs 1000'
    """
    return row_of(rule_by_id(rule_id), sizes_match=sizes_match, sizes_note=sizes_note, item=item, tuning=tuning, **measured)


def verdict_of(rule_id: str, **measured: Any) -> str:
    """The verdict alone of :func:`compare` at matching sizes (for a page's detailed table)."""
    return compare(rule_id, sizes_match=True, **measured)["verdict"]


def _n_from_config(key: str | None, item: str, config: dict) -> int | None:
    """Our runs per compared estimate for a row whose rule does not know n: ``config[key]`` (the
    experiment's :attr:`~dpcompanion.experiments.base.Experiment.repeats_key`; ``dnn_<key>`` for a row about
    the DNN where the config has one); None without a key or a number."""
    if key and "dnn" in item.lower() and f"dnn_{key}" in config:
        key = f"dnn_{key}"
    v = config.get(key) if key else None
    return int(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def _pick(eid: str, *, compute: bool, seed: int, device: str):
    """(result, mode, why-not): the result a page shows (:func:`store.best_fresh`; with ``compute``,
    :func:`store.result_to_show`, which computes the quick one where none is fresh); else why none is judged."""
    res = (store.result_to_show(eid, mode="quick", seed=seed, device=device) if compute
           else store.best_fresh(eid, seed=seed))
    if res is not None:
        return res, res.mode, ""
    full = store.load(eid, mode="full")
    quick = store.load(eid, mode="quick", seed=seed)
    why = ("no full result stored" if full is None else f"full result stale ({full.stale_reason})")
    why += "; " + ("no quick result stored" if quick is None else f"quick result stale ({quick.stale_reason})")
    return None, None, why


def runs_needed_cpu_s(need: int | None, n: int | None, result_cpu_s: float | None) -> float | None:
    """The CPU seconds of the runs an inconclusive row lacks: ``(need - n) / n`` times the stored
    result's CPU time (an upper bound for a row that one cell of it holds); None where a number is missing.

    >>> runs_needed_cpu_s(12, 3, 100.0)
    300.0
    """
    if not need or not n or result_cpu_s is None or need <= n:
        return None
    return (need - n) / n * float(result_cpu_s)


#: the setups from the paper's down (a row's setup is the lowest its rule and its result give)
SETUP_RANK = {"paper's": 0, "none printed": 1, "reduced": 1, "another": 2}


def setup_of(comparable: str | None, *, mode: str | None, at_paper_scale: bool | None, printed: bool = True) -> str:
    """The ``setup`` criterion of a row: ``another`` where only the direction is comparable,
    ``paper's`` for a number computed at the paper's parameters or a run at the paper's scale,
    ``none printed`` for a run of a claim the paper shows no run of (``printed`` False: the paper
    prints no size to match), else ``reduced``.

    >>> setup_of("direction", mode="full", at_paper_scale=True), setup_of("size", mode="computed", at_paper_scale=None)
    ('another', "paper's")
    >>> setup_of("size", mode="full", at_paper_scale=False), setup_of("size", mode="full", at_paper_scale=False, printed=False)
    ('reduced', 'none printed')
    """
    if comparable == "direction":
        return "another"
    if mode == "computed" or at_paper_scale:
        return "paper's"
    return "reduced" if printed else "none printed"


def _row(page: str, r: dict, *, config: dict, scale: dict, tuning: list, result: dict, payload: Any = None,
         result_cpu_s: float | None = None, repeats_key: str | None = None) -> dict:
    scale, beyond = scale_mod.beyond_scale(scale, tuning)
    comparable = r.get("comparable") or scale_mod.comparability(page, scale)[0]
    at_scale = scale_mod.at_paper_scale(scale) if scale else None
    printed = scale_mod.scale_word(scale) not in ("", "no printed run")
    setup = "another" if beyond else setup_of(comparable, mode=result.get("mode"), at_paper_scale=at_scale,
                                              printed=printed)
    if SETUP_RANK[setup] > SETUP_RANK[r.get("setup", "paper's")]:
        r = decided(r, setup=setup)
    st = r.get("stats") or {}
    n = st.get("n") if st.get("n") is not None else _n_from_config(repeats_key, str(r["item"]), config)
    k = st.get("runs_factor")
    need = int(math.ceil(k * n)) if (r["verdict"] == "inconclusive" and k and n) else None
    out = {
        "page": page, "rule": r.get("rule"), "item": str(r["item"]), "verdict": r["verdict"], "outcome": r["outcome"],
        **{k: r[k] for k in CRITERIA}, "judge_verdict": r.get("judge_verdict"),
        "paper": str(r["paper"]), "paper_value": st.get("paper_value"),
        "ours": {"estimate": st.get("estimate"), "ci_low": st.get("ci_low"), "ci_high": st.get("ci_high"), "n": n,
                 "se": st.get("se"), "text": str(r["ours"])},
        "margin": st.get("margin"), "margin_reason": r.get("margin_reason"), "mde": st.get("mde"), "runs_needed": need,
        "runs_needed_cpu_s": runs_needed_cpu_s(need, n, result_cpu_s),
        "design": r.get("design"), "stage": st.get("stage"),
        "comparable": comparable, "scale": scale, "at_paper_scale": at_scale,
        "tuning": list(tuning), "result": result, "note": str(r.get("note", "")),
    }
    margin_of = _margin_of(r.get("rule"))
    out["units"] = margin_of.units if margin_of is not None else None  # the forest plot's panel
    if margin_of is not None and margin_of.value is not None:
        # where the margin's value comes from (its basis and declaration) and when it was first
        # committed against when the judged result was first seen, read from git (margin_dated)
        dated = margin_dated(margin_of, result.get("created"), result.get("path"))
        out["margin_basis"] = margin_of.basis
        out["margin_dated"] = dated
        out["margin_source"] = (f"{margin_of.basis}, declared at {dated['declared'] or '?'}"
                                + (f", first committed {dated['committed']}" if dated["committed"] else ""))
        if result.get("mode") not in (None, "computed"):
            out["note"] += f"; {dated['status']}" + (
                f" (margin first committed {dated['committed']}, result created {dated['created']})"
                if dated["status"] == MARGIN_AFTER and dated["committed"] else "")
    if r.get("headline"):  # W-LADDER's top rung
        out["headline"] = r["headline"]
    if r.get("reading"):  # the closest reading of a printed number (comparisons.readings)
        out["reading"] = r["reading"]
    if r.get("paper_source"):  # "formula": the paper's value is what its printed formula gives
        out["paper_source"] = r["paper_source"]
    out["next_step"] = next_steps(tuning, payload)
    out["scope"] = scope_of(out)
    out["sentence"] = sentence(out)
    if out.get("absence") == "shown" and (out.get("margin_dated") or {}).get("status") == MARGIN_AFTER:
        without, _ = decide({**{k: out[k] for k in CRITERIA}, "absence": "not shown"})
        # a TOST margin fixed after the result: say where it comes from and what the row reads without it
        out["sentence"] += (f" The margin ({margin_of.basis}) was first committed after this result was computed; "
                            + (f"without it the row reads {without}." if without != out["verdict"] else
                               "without it the row reads the same (its cells judged on their own decide it)."
                               if out.get("cap", "none").startswith("cells") else "without it the row reads the same."))
    return out


def _margin_of(rule_id: str | None):
    """The declared margin of the rule ``rule_id`` (None where it has none or is unknown)."""
    if not rule_id:
        return None
    try:
        return rule_by_id(rule_id).margin
    except ValueError:
        return None


#: what a row says of its margin's date (:func:`margin_dated`)
MARGIN_AFTER, MARGIN_BEFORE, MARGIN_UNKNOWN = ("margin chosen after the results", "margin declared before the results",
                                               "margin date unknown")
#: the margin dates' cache, in the git directory: a first commit never changes
_MARGIN_CACHE = "dpcompanion-margin-dates.json"


@functools.lru_cache(maxsize=1)
def shallow() -> bool:
    """True where the clone's history cannot date a margin: shallow, or not a git repository."""
    out = files.git(REPO, "rev-parse", "--is-shallow-repository")
    return out is None or out.strip() != "false"


@functools.lru_cache(maxsize=1)
def _sources() -> tuple[tuple[str, tuple[str, ...]], ...]:
    pkg = REPO / "dpcompanion" / "experiments"
    return tuple((str(p.relative_to(REPO)), tuple(p.read_text(encoding="utf-8").splitlines()))
                 for p in sorted(pkg.rglob("*.py")))


def declaration(margin) -> tuple[str, int, str] | None:
    """``(path, line, literal)`` of the call that declares ``margin``: the first source line
    holding ``Margin(`` and its units as a string literal; the literal runs from ``Margin(``
    through the units. None where no such line is found."""
    units = json.dumps(margin.units)
    for path, lines in _sources():
        for i, line in enumerate(lines):
            k, u = line.find("Margin("), line.find(units)
            if k >= 0 and u > k:
                return path, i + 1, line[k:u + len(units)]
    return None


def _cache_path() -> Path | None:
    out = files.git(REPO, "rev-parse", "--absolute-git-dir")
    return Path(out.strip()) / _MARGIN_CACHE if out else None


@functools.lru_cache(maxsize=None)
def first_committed(literal: str) -> str | None:
    """ISO date of the first commit whose diff adds ``literal`` (``git log --reverse -S``), or
    ``""`` where no commit holds it (not yet committed); None where history cannot say
    (:func:`shallow`)."""
    if shallow():
        return None
    path = _cache_path()
    cache = {}
    if path is not None and path.is_file():
        try:
            cache = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            cache = {}
    if literal in cache:
        return cache[literal]
    out = files.git(REPO, "log", "--reverse", "--format=%cI", "-S", literal)
    if out is None:
        return None
    first = out.split("\n", 1)[0].strip()
    if first and path is not None:  # a first commit never changes: cache it (an uncommitted literal is not)
        cache[literal] = first
        try:
            path.write_text(json.dumps(cache, indent=1, sort_keys=True), encoding="utf-8")
        except OSError:
            pass
    return first


@functools.lru_cache(maxsize=None)
def first_result_commit(folder: str | None) -> str | None:
    """ISO date of the first commit that added anything under the experiment folder holding the result
    folder ``folder`` (``results/<id>/``: any mode, any config, any digest since; a result of one mode
    is seen before a margin that judges another), None where git holds none or cannot say. Results
    seen only locally (quick mode, never committed) leave no date: they cannot be told apart here."""
    if not folder or shallow():
        return None
    try:
        rel = Path(folder).resolve().parent.relative_to(REPO.resolve()).as_posix()
    except ValueError:
        return None
    out = files.git(REPO, "log", "--reverse", "--format=%cI", "--", f"{rel}/")
    return (out or "").split("\n", 1)[0].strip() or None


def margin_dated(margin, created: str | None, folder: str | None = None) -> dict:
    """When ``margin`` was first committed, read from git, against the judged result's date: ``{"status",
    "committed", "created", "declared"}``, ``status`` one of :data:`MARGIN_AFTER`, :data:`MARGIN_BEFORE`,
    :data:`MARGIN_UNKNOWN`. ``declared``: where :func:`declaration` finds the margin's ``Margin(...)`` call;
    ``committed``: :func:`first_committed` of that literal (over every path, so a declaration moved between
    modules keeps its date; a literal in no commit is after any result); without history (shallow clone, no
    git) the status is unknown. The result's date is the earlier of its ``created`` and the first commit of a
    result of its experiment (:func:`first_result_commit`): a result recomputed later was seen at its first
    commit, and a margin chosen after that is chosen after the results.

    >>> margin_dated(None, "2026-01-01T00:00:00+00:00")["status"]
    'margin date unknown'
    """
    seen = first_result_commit(folder)
    if seen and created:
        try:
            created = min(created, seen, key=datetime.fromisoformat)
        except ValueError:
            pass
    out = {"status": MARGIN_UNKNOWN, "committed": None, "created": created, "declared": None}
    if margin is None or margin.value is None:
        return out
    found = declaration(margin)
    if found is None:
        return out
    path, line, literal = found
    out["declared"] = f"{path}:{line}"
    first = first_committed(literal)
    if first is None or not created:
        return out
    out["committed"] = first or None
    if not first:
        out["status"] = MARGIN_AFTER
        return out
    try:
        after = datetime.fromisoformat(first) > datetime.fromisoformat(created)
    except ValueError:
        return out
    out["status"] = MARGIN_AFTER if after else MARGIN_BEFORE
    return out


def _experiment_rows(eid: str, *, compute: bool, seed: int, device: str) -> list[dict]:
    exp = base.get(eid)
    res, mode, why = _pick(eid, compute=compute, seed=seed, device=device)
    if res is None:
        config = base.config_for(exp, "full", seed=seed)
        comparable = scale_mod.comparability(eid, scale_mod.scale_of(eid, config))[0]
        none = dict(claim="none", paper_evidence="none", setup=setup_of(comparable, mode=None, at_paper_scale=None),
                    sign="n/a", size="n/a", absence="n/a", check="n/a", cap="none")
        word, out = decide(none)
        return [{"page": eid, "rule": None, "item": f"{eid}: no fresh stored result", "verdict": word, "outcome": out,
                 **none, "judge_verdict": None,
                 "paper": "", "paper_value": None,
                 "ours": {"estimate": None, "ci_low": None, "ci_high": None, "n": None, "text": ""},
                 "margin": None, "mde": None, "runs_needed": None, "runs_needed_cpu_s": None, "design": None, "stage": None,
                 "comparable": comparable,
                 "scale": scale_mod.scale_of(eid, config),
                 "at_paper_scale": None, "tuning": [],
                 "result": {"mode": None, "fresh": False, "digest": None, "path": None},
                 "note": f"{why}: `python -m dpcompanion experiment {eid}` computes it (or `verdicts --compute`)",
                 "next_step": None, "scope": scope_of({"rule": None, "paper": "", "result": {"mode": None},
                                    "scale": scale_mod.scale_of(eid, config)}),
                 "sentence": f"{eid.upper()}: not compared, no stored result to judge."}]
    prov = res.provenance
    config = prov.get("config") or base.config_for(exp, mode, seed=seed)
    # the paper's side of the block (values, quotations) is read from this code, ours from the
    # recorded config: a corrected quotation shows at once and never makes a result stale
    scale = scale_mod.scale_of(eid, config)
    payload = res.payload
    tuning = payload.get("tuning", []) if isinstance(payload, dict) else []
    result = {"mode": mode, "fresh": bool(res.fresh), "digest": prov.get("digest"), "created": prov.get("created"),
              "path": str(res.path) if res.path else None, "scale_recorded": "scale" in prov}
    # the experiment's declared rows (its report_verdict_rows where the report has more than
    # the page's table: h-f-eff's per N, w-t1245's per cell, w-t36's pooled)
    rows = [apply_tuning_cap(r, tuning) for r in exp.judged_rows(payload)]
    cpu_s = prov.get("units_wall_s") or prov.get("wall_s")
    return [_row(eid, r, config=config, scale=scale, tuning=tuning_for_row(r, tuning), result=result,
                 result_cpu_s=cpu_s, repeats_key=exp.repeats_key,
                 payload=payload) for r in rows]


def _w_eps_rows() -> list[dict]:
    from dpcompanion.claims import w_adp_eps

    return wu_rules.w_eps_rows(w_adp_eps.w_eps_table(), w_adp_eps.w_eps_readings())


def _accounting_rows() -> list[dict]:
    return [r for r in theory.accounting_rows() if r["rule"] != "w-eps/epsilon"]  # W-EPS: its own entry


#: SPEC ID -> (page, rows): paper-vs-ours tables with rules but no experiment module
CLAIM_TABLES = {"h-f-theory": ("h-f-theory", theory.h_f_theory_rows),
                "accounting": ("accounting", _accounting_rows), "h-sec-4-2": ("h-sec-4-2", theory.h_sec_4_2_rows),
                "w-f2": ("w-theory", wu_rules.w_f2_rows), "w-eps": ("w-theory", _w_eps_rows)}


def experiments_with_verdicts() -> list[str]:
    """Every experiment of :func:`dpcompanion.experiments.base.all_experiments` that declares
    ``verdict_rows`` (the rows its page shows), by ID."""
    return [eid for eid, exp in base.all_experiments().items() if exp.verdict_rows is not None]


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
    # a printed number judged on two pages takes one verdict whichever page is asked for: the
    # partner page's rows are read too, then left out
    partners = [p for (page, _, _), (other, _) in SAME_PRINTED.items() for p in (page, other)
                if page in sel or other in sel]
    asked = set(sel)
    rows: list[dict] = []
    for pid in dict.fromkeys([*sel, *partners]):
        if pid in CLAIM_TABLES:
            page, make = CLAIM_TABLES[pid]
            res = {"mode": "computed", "fresh": True, "digest": None, "path": None}
            rows += [_row(pid, r, config={}, scale={}, tuning=[], result={**res, "page": page}) for r in make()]
        else:
            rows += _experiment_rows(pid, compute=compute, seed=seed, device=device)
    return [r for r in one_verdict_per_printed_number(rows) if r["page"] in asked]


#: printed numbers judged on two pages: ``(page, rule, item)`` of a row -> ``(page, item)`` of the
#: row that judges the same printed cell on more runs (Wu et al.'s Fig. 1 right is Table 2's cell
#: eps_bar 3.2, C 2.5, 120 epochs: W-F1 and W-T1245 run it)
SAME_PRINTED = {
    ("w-f1", "w-f1/gap", "best-accuracy gain ADP - DP, eps_bar 3.2, C 2.5, 120 epochs (Fig. 1 right = Table 2)"):
        ("w-t1245", "Table 2: gain ADP - DP, sqrt, C_G 2.5, eps_bar 3.2, 120 epochs"),
}


def one_verdict_per_printed_number(rows: list[dict]) -> list[dict]:
    """One printed number, one verdict: a row of :data:`SAME_PRINTED` takes the verdict, outcome,
    criteria and estimate (``ours``) of whichever of the two rows judging that number rests on more runs;
    its own estimate moves to ``own_ours`` and the note. Rows absent from the report are left as they are.

    >>> a = {"page": "w-f1", "rule": "w-f1/gap", "item": next(iter(SAME_PRINTED))[2], "verdict": "sign only",
    ...      "outcome": "partial", "paper_value": 0.68, "ours": {"n": 5}, "note": "x", "sentence": "s"}
    >>> b = {"page": "w-t1245", "rule": "w-t1245/gap", "item": SAME_PRINTED[next(iter(SAME_PRINTED))][1],
    ...      "verdict": "inconclusive", "outcome": "undecided", "paper_value": 0.68, "ours": {"n": 20}, "note": "y"}
    >>> [r["verdict"] for r in one_verdict_per_printed_number([a, b])]
    ['inconclusive', 'inconclusive']
    """
    at = {(r["page"], r["item"]): i for i, r in enumerate(rows)}
    out = list(rows)
    for (page, rule, item), (other_page, other_item) in SAME_PRINTED.items():
        i, j = at.get((page, item)), at.get((other_page, other_item))
        if i is None or j is None or rows[i].get("rule") != rule:
            continue
        ni, nj = (rows[i].get("ours") or {}).get("n") or 0, (rows[j].get("ours") or {}).get("n") or 0
        keep, take = (i, j) if nj >= ni else (j, i)
        src = rows[take]
        said = (f"one printed number, one verdict: the same printed cell is judged on {src['page']} "
                f"({src['item']}, {max(ni, nj)} runs), whose verdict this row takes")
        out[keep] = {**rows[keep], "verdict": src["verdict"], "outcome": src["outcome"],
                     **{k: src[k] for k in CRITERIA if k in src},
                     **{k: src[k] for k in ("runs_needed", "runs_needed_cpu_s", "next_step") if k in src},
                     "judged_on": [src["page"], src["item"]], "ours": src["ours"],
                     "own_ours": rows[keep].get("ours"),
                     "note": f"{said}; on its own runs: {rows[keep].get('note', '')}"}
        if "scope" in out[keep]:
            own = rows[keep].get("ours") or {}
            out[keep]["sentence"] = (f"{sentence(out[keep])} Judged on {src['page']}'s {max(ni, nj)} runs of the same "
                                     f"printed cell; this page's own {min(ni, nj)}: {own.get('text', '')}.")
    return out


# ------------------------------------------------------------------------ one sentence per row

#: what a row's estimate is, in a reader's words, by rule: ``a`` and ``b`` the arms (the
#: estimate is ``a`` better minus ``b``, so a positive estimate reads ``up``), ``what`` the
#: quantity, ``unit`` and ``factor`` (stored fractions shown as percentage points), and what the
#: paper says in a few words (``paper``)
EFFECT_WORDS: dict[str, dict] = {
    "h-f-eff/acc-at-N": dict(a="exp", b="uni", what="test accuracy", unit=" points", factor=100.0, up="above",
                             down="below", paper="the paper reports exp ahead"),
    "h-f-eff/loss-at-N": dict(a="exp", b="uni", what="final training loss", unit="", factor=1.0, up="below",
                              down="above", paper="the paper reports exp ahead (lower)"),
    "h-f-curv/sharp-vs-flat": dict(a="the sharply curved loss", b="the flat loss", what="mean final loss", unit="",
                                   factor=1.0, up="above", down="below",
                                   paper="the paper reports the sharper loss ending higher"),
    "h-f-curv/exact": dict(a="our trainer", b="the exact expected loss", what="mean final loss", unit="", factor=1.0,
                           up="above", down="below", paper="they should be equal", b_is_value=True),
    "h-f-infl-extra/increasing": dict(a="the late steps", b="the early steps", what="mean influence", unit="",
                                      factor=1.0, up="above", down="below",
                                      paper="the paper reports the influence growing as training proceeds"),
    "h-f-infl/logistic-flatter": dict(a="the squared loss", b="the logistic loss", what="influence growth (log of last "
                                      "over first)", unit="", factor=1.0, up="above", down="below",
                                      paper="the paper reports the logistic trend flatter"),
    "h-f-mom/expinfl-vs-momexpinfl": dict(a="momexpinfl", b="expinfl", what="final loss", where="At data scale 25 and T = 100, ",
                                          unit="", factor=1.0, up="below", down="above",
                                          paper="the paper reports momexpinfl ahead (lower) there"),
    "h-f-scale/dyn": dict(a="dyn", b="uni", what="final loss", unit="%", factor=100.0, up="above", down="below",
                          paper="the paper reports dyn lower where the influence varies most", relative=True),
    "w-f1/gap": dict(a="ADP-SGD", b="DP-SGD", what="best test accuracy", unit=" points", factor=1.0, up="above",
                     down="below", paper="the paper reports ADP-SGD ahead", printed=True),
    "w-t1245/gap": dict(a="ADP-SGD", b="DP-SGD", what="test accuracy", unit=" points", factor=1.0, up="above",
                        down="below", paper="the paper reports ADP-SGD ahead", printed=True),
    "w-t36/gap": dict(a="ADP-SGD", b="DP-SGD", what="test accuracy", unit=" points", factor=1.0, up="above",
                      down="below", paper="the paper reports ADP-SGD ahead", printed=True),
}
#: trend rows: the slope of a gap per doubling of N (:func:`dpcompanion.experiments.h_f_eff.eff_trend`)
TREND_WORDS = {
    "h-f-eff/acc": dict(what="exp's gain over uni in test accuracy", unit=" points", factor=100.0),
    "h-f-eff/loss": dict(what="exp's gain over uni in final training loss", unit="", factor=1.0),
    "h-f-eff-exact/acc": dict(what="exp's gain over uni in test accuracy", unit=" points", factor=100.0),
    "h-f-eff-exact/loss": dict(what="exp's gain over uni in final training loss", unit="", factor=1.0),
}
TREND_PAPER = "the paper reports exp pulling ahead as N grows"

#: a reader's words for the notation of items and measurements (applied in order; then any
#: ``x_y`` subscript is written ``x(y)``)
READABLE = (
    (r"\b(?:eps|epsilon)_bar\b", "ε̄"), (r"\bC_G\b", "clip C"), (r"\bmnist35\b", "MNIST 3-vs-5"),
    (r"\b(MNIST 3-vs-5|synthetic)/(dnn|logistic|squared)\b", r"\1, \2"), (r"\bdnn\b", "DNN"),
    (r"\bsynthetic\b", "synthetic data"), (r"^(pgd|momentum|psgd|adp): ", r"the \1 trainer: "),
    (r"\bpgd\b", "PGD"), (r"\bpsgd\b", "PSGD"), (r"\badp\b", "ADP-SGD"), (r"\bdp\b", "DP-SGD"),
)
#: the setups in words (the ``setup`` criterion, :mod:`.rule`)
SETUP_WORDS = {"paper's": "the paper's setup", "reduced": "the paper's data and model at a smaller scale",
               "none printed": "an experiment of ours on the theorem's setting (the paper prints no run of it)",
               "another": "another setup than the paper's (data set, model, or tuning protocol)"}


def outcome_words(row: dict) -> str:
    """A row's word (``verdict``) in a few words, with the criteria that decided it (the
    ``paper_evidence``, ``setup``, ``sign``, ``size``, ``absence`` of :mod:`.rule`).

    >>> outcome_words(dict(verdict="sign only", claim="effect", setup="another", size="not testable", sign="paper's side"))
    "sign only: ours is on the paper's side of zero; the paper's size is not testable in another setup than the paper's (data set, model, or tuning protocol)"
    >>> outcome_words(dict(verdict="not reproduced", claim="effect", absence="shown", sign="neither", size="n/a"))
    'not reproduced: TOST puts our effect within its margin of zero, where the paper claims an effect'
    """
    v, size, setup = row.get("verdict"), row.get("size"), row.get("setup")
    if v == "sign only":
        if size in ("smaller", "larger"):
            why = f"our interval rules out the paper's printed size (ours is {size})"
        elif size == "not testable":
            why = f"the paper's size is not testable in {SETUP_WORDS.get(setup, setup)}"
        elif setup != "paper's":
            why = f"in {SETUP_WORDS.get(setup, setup)}"
        else:
            why = "the tuning protocol caps it"
        return f"sign only: ours is on the paper's side of zero; {why}"
    if v == "not reproduced":
        if row.get("sign") == "other side":
            return "not reproduced: ours lies on the other side of zero"
        if row.get("absence") == "shown":
            return "not reproduced: TOST puts our effect within its margin of zero, where the paper claims an effect"
        if row.get("claim") == "effect":
            return "not reproduced: our interval includes zero and rules out the paper's printed size"
        if row.get("claim") == "value":
            return "not reproduced: ours differs from the printed value by more than the tolerance"
        return "not reproduced: the rule's check fails"
    if v == "not judged":
        ev = row.get("paper_evidence")
        if ev == "within noise":
            return "not judged: the paper's own printed gap lies within twice its printed standard error"
        if ev == "at chance":
            return "not judged: an arm of the paper's printed cell is not above chance"
        if ev == "no spread":
            return "not judged: the paper prints no spread for this gap"
        if ev == "not printed":
            return "not judged: the paper prints no gap for this cell (N/A)"
        return "not judged"
    if v == "in part" and row.get("check") == "pass" and setup != "paper's":
        return ("in part: the check passes in our experiment, not in a run the paper shows" if setup == "none printed"
                else f"in part: the check passes, in {SETUP_WORDS.get(setup, setup)}")
    if v == "reproduced":
        return "reproduced" + (": sign and size, in the paper's setup" if size == "compatible" else
                               ", in the paper's setup" if row.get("claim") == "effect" else "")
    return {"inconclusive": "our runs do not decide it", "equivalent": "equivalent: no difference of practical size, "
            "as the paper states", "holds by construction": "this holds by construction"}.get(v, v)


def readable(text: str) -> str:
    """``text`` in a reader's notation (:data:`READABLE`): no underscores, no dataset keys.

    >>> readable("Table 1: gain ADP - DP, C_G 1, eps_bar 0.8"), readable("q_T / q_{t0}"), readable("mnist35/dnn: x")
    ('Table 1: gain ADP - DP, clip C 1, ε̄ 0.8', 'q(T) / q(t0)', 'MNIST 3-vs-5, DNN: x')
    """
    s = str(text)
    for pat, rep in READABLE:
        s = re.sub(pat, rep, s)
    s = re.sub(r"([A-Za-z0-9])_\{([^{}]*)\}", r"\1(\2)", s)
    s = re.sub(r"([A-Za-z0-9])_([A-Za-z0-9]+)", r"\1(\2)", s)
    return s.replace("_", " ")


#: the words of a row's ``scope`` (:func:`scope_of`): the caption's scale words
#: (:data:`dpcompanion.experiments.scale_tables.SCALE_WORDS`), then a run of a claim the paper shows
#: no run of, and checks of our own code
SCOPES = ("paper scale", "reduced", "other setup", "other data", "no printed run", "own code")


def scope_of(row: dict) -> str:
    """The scale a row rests on, in the captions' one vocabulary (:data:`SCOPES`): ``own code``
    (:data:`OWN_CODE_RULES`, or a row whose paper column says the check is not in the paper),
    ``paper scale`` for a printed number computed exactly, else the scale word of the row's result
    (:func:`~dpcompanion.experiments.scale_tables.scale_word`), ``no printed run`` where the paper
    prints no size to match, and ``other setup`` where only the direction is comparable though every
    printed size matches.

    >>> scope_of({"rule": "x/y", "paper": "p", "result": {"mode": "full"}, "scale": {"n": {"paper": 9, "ours": 3, "match": False}}})
    'reduced'
    >>> scope_of({"rule": "x/y", "paper": "p", "result": {"mode": "full"}, "scale": {"n": {"paper": None, "ours": 3, "match": None}}})
    'no printed run'
    """
    paper = str(row.get("paper", "")).strip().lower()
    if row.get("rule") in OWN_CODE_RULES or paper in ("-", "not in the paper") or "not in the paper" in str(row.get("item", "")):
        return "own code"
    if (row.get("result") or {}).get("mode") == "computed":
        return "paper scale"
    word = scale_mod.scale_word(row.get("scale") or {}) or "no printed run"
    if row.get("comparable") == "direction" and word == "paper scale":
        return "other setup"
    return word


def _num(x: float) -> str:
    """A magnitude with two significant figures below 0.1, else two decimals (huge: 3 figures)."""
    a = abs(x)
    return f"{a:.2f}" if 0.1 <= a < 1000 else f"{a:.2g}" if a < 0.1 else f"{a:.3g}"


def _poss(name: str) -> str:
    """``name``'s possessive: ``exp's``, ``the late steps'``."""
    return name + ("'" if name.endswith("s") else "'s")


def _ci(lo: float, hi: float, up: str, down: str, name: str = "95% CI") -> str:
    """A 95% interval in words, each end on its side of zero."""
    if lo >= 0:
        return f"{name} {_num(lo)} to {_num(hi)} {up}"
    if hi <= 0:
        return f"{name} {_num(hi)} to {_num(lo)} {down}"
    return f"{name} from {_num(-lo)} {down} to {_num(hi)} {up}"


def ci_name(row: dict) -> str:
    """How a row's interval is named: the 95% CI, or for a group-sequential row the repeated
    95% CI of the look that decided it."""
    return f"repeated 95% CI at {row['stage']}" if row.get("stage") else "95% CI"


def _scale_words(row: dict) -> str:
    mode = (row.get("result") or {}).get("mode")
    scope = scope_of(row)
    if scope == "own code":
        return "in our own check" if mode != "computed" else "computed exactly"
    if mode == "computed":
        return "computed exactly"
    if mode not in ("quick", "full", "paper"):
        return "with no stored run"
    words = {"paper scale": "at the paper's scale", "reduced": "in a run smaller than the paper's",
             "other setup": "in a setup that departs from the paper's",
             "other data": "on other data than the paper's",
             "no printed run": "in an experiment of ours (the paper prints no run of it)"}[scope]
    return words + (" (only the direction is compared)" if row.get("comparable") == "direction" else "")


def _why_not(row: dict) -> str:
    """Why a row is not compared, or capped, in a reader's words (empty: nothing to add)."""
    note = str(row.get("note", ""))
    nxt = row.get("next_step")
    if "grid edge the paper did not state" in note:
        return "a tuned setting sits at the edge of its search; " + (nxt["text"] if nxt else "the next step is not costed")
    if "selected on the reported seeds" in note:
        return "the settings were chosen on the seeds reported"
    if "different numbers of tuning candidates" in note or "different grids" in note:
        return "the two methods were tuned on searches of different sizes"
    if note.startswith("not compared (sizes differ)"):
        what = note.split("): ", 1)[1].split(". ", 1)[0] if "): " in note else ""
        differ = ("our setting differs from the paper's" if scope_of(row) == "other setup" else
                  "our data differ from the paper's" if scope_of(row) == "other data" else "our sizes differ from the paper's")
        return differ + (f" ({what})" if what else "") + (f"; a tuned setting also sits at the edge of its search, and {nxt['text']}"
                                                      if nxt else "")
    if "no fresh stored result" in str(row.get("item", "")):
        return "no stored result to judge"
    if row.get("claim") == "none":
        return "what we measure is not the quantity the paper reports"
    return ""


def domain_bound(rec: dict) -> bool:
    """A tuning record whose choice sits on an end of its parameter's domain (a fraction of T at 0, say),
    a bound by definition rather than one the paper stated."""
    return not rec.get("interior") and "by definition" in str(rec.get("stated_bound") or "")


def _stated_edges(row: dict) -> str:
    """A tuned parameter whose choice sits on an edge the paper stated (its search range), in words;
    empty when none.

    >>> _stated_edges({"tuning": [dict(param="T", method="uni", chosen=150.0, edge="high", interior=False,
    ...                                stated_bound="T in [50, 150]", grid_min=50.0, grid_max=150.0)]})
    "the paper's stated search range bounds the tuning: uni's T at its top (150)"
    """
    recs = [t for t in row.get("tuning") or [] if t.get("interior") is False and t.get("stated_bound")]
    out = []
    for head, group in (("the paper's stated search range bounds the tuning: ", [t for t in recs if not domain_bound(t)]),
                        ("a tuned choice sits at an end of its domain: ", [t for t in recs if domain_bound(t)])):
        parts = []
        for side, word in (("low", "bottom"), ("high", "top")):
            mine = [t for t in group if (t.get("edge") == "high") == (side == "high")]
            if mine:
                who = " and ".join(sorted({f"{t.get('method')}'s {t.get('param')}" for t in mine}))
                vals = ", ".join(f"{v:g}" for v in sorted({float(t.get("chosen")) for t in mine}))
                parts.append(f"{who} at its {word} ({vals})")
        if parts:
            out.append(head + "; ".join(parts))
    return readable("; ".join(out))


def sentence(row: dict) -> str:
    """One sentence a reader understands, written from the row's fields (so a row of any rule gets
    one): what was measured, its size, unit and direction with the 95% interval, at which scale, what the
    paper says and the verdict, without internal names (rule ids, module paths, verdict words in quotes)."""
    rule, v, o = row.get("rule") or "", row["verdict"], row.get("ours") or {}
    est, lo, hi = o.get("estimate"), o.get("ci_low"), o.get("ci_high")
    scale, why = _scale_words(row), _why_not(row)
    verdict = outcome_words(row)
    if v == "not judged" and why and row.get("paper_evidence") not in ("within noise", "at chance", "no spread"):
        verdict = f"not judged: {why}"
    elif row.get("outcome") == "partial" and why:
        verdict += f" ({why})"
    bounded = _stated_edges(row)
    if bounded and v != "not judged":
        verdict += f"; {bounded}"
    has_ci = est is not None and lo is not None and hi is not None and lo != hi
    pv = row.get("paper_value")
    name = ci_name(row)
    if rule in TREND_WORDS and has_ci:
        w = TREND_WORDS[rule]
        Ns = [int(n) for n in re.findall(r"N=(\d+)", str(o.get("text", "")))]
        span = f"from N = {min(Ns)} to {max(Ns)}" if Ns else "over N"
        f = w["factor"]
        sg = lambda x: ("+" if x >= 0 else "-") + _num(x)  # noqa: E731 (a slope reads best signed)
        return _cap(f"{span}, {w['what']} changes by {sg(est * f)}{w['unit']} per doubling of N "
                    f"({name} {sg(lo * f)} to {sg(hi * f)}), {scale}{_per_N_signs(str(o.get('text', '')))}; "
                    f"{TREND_PAPER}: {verdict}.")
    if rule in EFFECT_WORDS and has_ci:
        w = EFFECT_WORDS[rule]
        f = w["factor"]
        side = w["up"] if est >= 0 else w["down"]
        where = ""
        m = re.search(r"at N = (\d+)", str(row.get("item", "")))
        if m:
            where = f"At N = {m.group(1)}, "
        elif w.get("where"):
            where = w["where"]
        else:
            where = readable(str(row.get("item", "")).split(":")[0]).strip() + ": "
        b = w["b"] if w.get("b_is_value") else _poss(w["b"])
        rel = " in relative terms" if w.get("relative") else ""
        paper = w["paper"]
        if w.get("printed") and row.get("paper_evidence") == "not printed":
            paper = "the paper prints this cell's accuracies but no gap (N/A)"
        elif w.get("printed") and pv is not None:  # the paper prints this cell: its own sign, not the claim's
            paper = (f"the paper prints {w['a']} {_num(abs(pv) * f)}{w['unit']} {w['up'] if pv >= 0 else w['down']} "
                     f"{w['b']} here")
        return _cap(f"{where}{_poss(w['a'])} {w['what']} is {_num(est * f)}{w['unit']} {side} {b}{rel} "
                f"({_ci(lo * f, hi * f, w['up'], w['down'], name)}), {scale}; {paper}: {verdict}.")
    item = readable(row.get("item", ""))
    if has_ci:
        ours = f"our estimate is {est:.3g} ({name} {lo:.3g} to {hi:.3g})"
    elif est is not None and pv is not None:
        ours = f"we compute {est:.4g}"
    else:
        ours = f"we find {readable(o.get('text', '')) or 'nothing to show'}"
    if pv is not None and row.get("paper_source") == "formula":
        paper = f"the paper's formula gives {pv:.4g}"
    elif pv is not None:
        paper = f"the paper prints {pv:.4g}"
    elif scope_of(row) == "own code":
        paper = "a check of our own code, not a claim of the paper"
    else:
        p = readable(row.get("paper", "")).strip()
        paper = f"the paper: {p}" if p else "the paper states nothing to compare"
    return _cap(f"{item}: {ours}, {scale}; {paper}: {verdict}.")


def _per_N_signs(text: str) -> str:
    """Which way the gap leans at each N of a trend row (``N=250: +0.0148 ± 0.00058; ...``, the
    gap positive where exp is ahead): where its 95% interval excludes zero on either side.

    >>> _per_N_signs("N=250: +0.005 ± 0.0005; N=500: +0.0034 ± 0.0004; N=1000: -2e-05 ± 0.0003; N=2000: -0.003 ± 0.0004")
    '; per N, exp is ahead at N = 250, 500 and behind at N = 2000 (95% intervals; neither at N = 1000)'
    """
    ahead, behind, neither = [], [], []
    for n, est, se in re.findall(r"N=(\d+): ([+-]?[\d.eE+-]+) ± ([\d.eE+-]+)", text):
        e, s = float(est), float(se)
        (ahead if e - 1.96 * s > 0 else behind if e + 1.96 * s < 0 else neither).append(n)
    if not (ahead or behind):
        return ""
    parts = [f"ahead at N = {', '.join(ahead)}" if ahead else "", f"behind at N = {', '.join(behind)}" if behind else ""]
    tail = f"; neither at N = {', '.join(neither)}" if neither else ""
    return f"; per N, exp is {' and '.join(p for p in parts if p)} (95% intervals{tail})"


def _cap(s: str) -> str:
    """``s`` with its first letter capitalised when it is a plain ASCII letter (a method's name in lower
    case stays as it is)."""
    return s[:1].upper() + s[1:] if s[:1].isascii() and s[:1].islower() and s.split(" ")[0].rstrip("':,") not in _METHOD_NAMES else s


#: the papers' method names, written in lower case as the papers write them
_METHOD_NAMES = ("exp", "exp's", "uni", "uni's", "dyn", "dyn's", "expinfl", "momexpinfl", "momexpinfl's")


#: how a tuned parameter's next value is found (as :func:`~dpcompanion.experiments.protocols.tuning.extend`
#: extends a grid): ``to_one`` for a parameter in (0, 1) near 1, else linear
_PARAM_SCALE = {"gamma": "to_one", "beta": "to_one"}


def _seconds_per_run_step(payload: Any, cell: str) -> float | None:
    """CPU seconds per run-step of a stored result: from the unit of ``cell`` (``N = 4000``) when
    its units record their training time and run-steps, else from the whole result's."""
    if not isinstance(payload, dict):
        return None
    for u in payload.get("units") or []:
        if isinstance(u, dict) and f"N = {u.get('N')}" == cell and u.get("run_steps") and u.get("train_wall_s"):
            return float(u["train_wall_s"]) / float(u["run_steps"])
    if payload.get("run_steps") and payload.get("train_wall_s"):
        return float(payload["train_wall_s"]) / float(payload["run_steps"])
    return None


def next_steps(tuning: Iterable[dict], payload: Any = None) -> dict | None:
    """What the next step of a search would cost, for every tuned parameter whose choice sits at an edge
    the paper did not state: per record the next value beyond the edge (as the tuning protocol extends a grid),
    the runs (the other parameters' candidates x the tuning seeds) and their CPU seconds (run-steps x the
    result's measured seconds per run-step); ``cpu_s`` their sum (None where a time is unknown), ``text`` in
    words. None when no choice sits at such an edge."""
    steps = []
    recs = [t for t in (tuning or []) if t.get("interior") is False and not t.get("stated_bound")]
    for t in recs:
        grid = [float(g) for g in (t.get("grid") or [t.get("grid_min"), t.get("grid_max")])]
        side = t.get("edge") if t.get("edge") in ("low", "high") else (
            "high" if float(t.get("chosen")) >= max(grid) else "low")
        try:
            nxt = tuning_protocol.extend(grid, side, scale=_PARAM_SCALE.get(str(t.get("param")), "linear"),
                                         integer=t.get("param") == "T")
        except ValueError:
            nxt = None
        combos = max(1, round(int(t.get("n_candidates") or len(grid)) / max(1, len(grid))))
        runs = combos * len(t.get("tuning_seeds") or []) or None
        T = nxt if t.get("param") == "T" else next(
            (float(x["chosen"]) for x in tuning if x.get("param") == "T" and x.get("method") == t.get("method")
             and x.get("cell") == t.get("cell") and x.get("setting") == t.get("setting")), None)
        sps = _seconds_per_run_step(payload, str(t.get("cell", "")))
        cpu = runs * T * sps if (runs and T and sps and nxt is not None) else None
        where = f" at {t['cell']}" if t.get("cell") else ""
        if t.get("stopped") == "limit":
            nxt = None  # the search stopped at its own limit: the next step would pass it
        steps.append({"param": t.get("param"), "method": t.get("method"), "cell": t.get("cell"),
                      "chosen": t.get("chosen"), "next": nxt, "runs": runs, "run_steps": int(runs * T) if runs and T and nxt is not None else None,
                      "cpu_s": cpu, "what": (f"{t.get('method')}'s {t.get('param')} = {nxt:g}{where}" if nxt is not None
                                             else f"{t.get('method')}'s {t.get('param')}{where} (beyond the search's limit)")})
    if not steps:
        return None
    if all(s["next"] is None for s in steps):  # every search ended at its own limit: no step within it is left
        where = sorted({str(s["cell"]) for s in steps if s["cell"]})
        return {"steps": steps, "cpu_s": None,
                "text": readable(f"the searches of {', '.join(sorted({str(s['method']) + chr(39) + 's ' + str(s['param']) for s in steps}))}"
                                 f" reached their own limit at {len(where)} cells ({', '.join(where)}): deciding it "
                                 "would need a search beyond that limit")}
    known = [s["cpu_s"] for s in steps if s["cpu_s"] is not None]
    total = sum(known) if len(known) == len(steps) else None
    cost = (f"would cost about {cpu_words(total)} on the tuning data" if total is not None else
            f"needs {sum(s['run_steps'] or 0 for s in steps):,} more run-steps on the tuning data (the stored "
            "result records no time per step)")
    text = readable("trying " + ", ".join(s["what"] for s in steps) + f" {cost}")
    return {"steps": steps, "cpu_s": total, "text": text}


def counts(rows: Iterable[dict]) -> dict[str, int]:
    """Verdict word -> number of rows."""
    return dict(sorted(Counter(r["verdict"] for r in rows).items()))


def outcome_counts(rows: Iterable[dict]) -> dict[str, dict[str, int]]:
    """Outcome -> scope -> number of rows, outcomes in the order of :data:`.rule.OUTCOMES`
    and scopes in that of :data:`SCOPES` (the captions' scale words, :func:`scope_of`).

    >>> outcome_counts([dict(outcome="success", rule="x/y", paper="p", result={"mode": "computed"})])
    {'success': {'paper scale': 1}}
    """
    c = Counter((r["outcome"], scope_of(r)) for r in rows)
    order = list(SCOPES)
    return {o: {s: c[(o, s)] for s in order if c[(o, s)]} for o in OUTCOMES if any(c[(o, s)] for s in order)}


def _flat(r: dict) -> dict:
    o = r["ours"]
    return {"page": r["page"], "rule": r["rule"] or "", "item": r["item"], "verdict": r["verdict"],
            "outcome": r["outcome"], **{k: r[k] for k in CRITERIA}, "judge_verdict": r.get("judge_verdict"),
            "paper": r["paper"],
            "paper_value": r["paper_value"], "estimate": o["estimate"], "ci_low": o["ci_low"], "ci_high": o["ci_high"],
            "n": o["n"], "margin": r["margin"], "mde": r["mde"], "runs_needed": r["runs_needed"],
            "runs_needed_cpu_s": r.get("runs_needed_cpu_s"),
            "design": r.get("design"), "stage": r.get("stage"), "comparable": r.get("comparable"),
            "result_mode": r["result"]["mode"], "at_paper_scale": r["at_paper_scale"], "scope": r.get("scope"),
            "sentence": r.get("sentence"), "next_step": (r.get("next_step") or {}).get("text"),
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


#: the reproduction report's CSV, written by the book build (the verdicts page) next to the
#: executed pages in ``book/``; the landing and verdicts pages link it with MyST's ``{download}`` role
CSV_NAME = "reproduction-report.csv"


def write_csv(rows: Iterable[dict], path: Path | None = None) -> Path:
    """Write :func:`csv_text` to ``path`` (default ``book/`` + :data:`CSV_NAME`, where the pages' download
    link points) by :func:`dpcompanion.core.outputs.write_text` (a regular file replaced atomically; a
    device, FIFO or symlink's target written through, never replaced); returns the path."""
    path = Path(path) if path is not None else REPO / "book" / CSV_NAME
    outputs.write_text(path, csv_text(rows), name="--csv")
    return path


def reproduction_download_md(label: str = "the reproduction report (CSV)") -> str:
    """The MyST link to the CSV for a page in ``book/``."""
    return f"{{download}}`{label} <{CSV_NAME}>`"


def verdict_summary(*, seed: int = 0, device: str = "cpu", ids=None, rows=None) -> list[dict]:
    """Rows ``item, paper, ours, verdict, outcome, note`` (for ``report.paper_vs_ours``) rendered from the
    reproduction report (:func:`report_rows`, computing a missing quick result, or ``rows`` when given), each item prefixed
    with its page (a link) and the result it was judged on (full, quick, or computed for the
    theory tables); ``ours`` carries the 95% interval where there is one. ``ids`` defaults to
    :func:`experiments_with_verdicts` and then :data:`CLAIM_TABLES`; the result judged is the store's choice
    (:func:`dpcompanion.experiments.store.best_fresh`)."""
    if rows is None:
        rows = report_rows(pages=ids, compute=True, seed=seed, device=device)
    out = []
    for r in rows:
        page = CLAIM_TABLES[r["page"]][0] if r["page"] in CLAIM_TABLES else r["page"]
        o = r["ours"]
        ours = o["text"]
        if o.get("ci_low") is not None and o.get("ci_high") is not None and o["ci_low"] != o["ci_high"]:
            ours += (f" ({ci_name(r)} [{o['ci_low']:.3g}, {o['ci_high']:.3g}]"
                     + (f", n = {o['n']}" if o.get("n") else "") + ")")
        mode_r = r["result"]["mode"] or "no result"
        out.append({"item": f"{{doc}}`{r['page']} <{page}>` ({mode_r}): {r['item']}", "paper": r["paper"],
                    "ours": ours, "verdict": r["verdict"], "outcome": r["outcome"], "note": note_with_details(r)})
    return out


def note_with_details(row: dict) -> str:
    """A row's note column: its sentence for the reader, then how the rule
    judged it (the rule's own note: intervals, tolerances, caps) folded in a details block, on
    one line so that it stays inside its table cell. A row without a sentence keeps its note.

    >>> note_with_details({"sentence": "Exp is ahead.", "note": "ours 1, 95% CI [0.5, 1.5]"})
    'Exp is ahead. <details><summary>how it was judged</summary>ours 1, 95% CI [0.5, 1.5]</details>'
    """
    note = " ".join(str(row.get("note", "")).split())
    if not row.get("sentence"):
        return note
    return row["sentence"] + (f" <details><summary>how it was judged</summary>{note}</details>" if note else "")


def cpu_words(seconds: float | None, before: str = "", after: str = "") -> str:
    """CPU time in words (minutes below an hour), wrapped in ``before``/``after``; "" for None.

    >>> cpu_words(5400.0), cpu_words(90.0, "(", ")"), cpu_words(None)
    ('1.5 CPU hours', '(2 CPU minutes)', '')
    """
    if seconds is None:
        return ""
    words = f"{seconds / 3600:.1f} CPU hours" if seconds >= 3600 else f"{max(1.0, seconds / 60):.0f} CPU minutes"
    return f"{before}{words}{after}"


def power_rows(rows: Iterable[dict]) -> list[list[Any]]:
    """A page's power table from :func:`report_rows` rows: ``[item, the paper's effect, our estimate,
    our n, the smallest effect our runs detect at 80% power, runs needed]`` for every row with a standard error."""
    out = []
    for r in rows:
        o = r["ours"]
        if r.get("mde") is None or not o.get("se"):
            continue
        need = r.get("runs_needed")
        out.append([r["item"], "a direction" if r.get("paper_value") is None else f"{r['paper_value']:.3g}",
                    f"{o['estimate']:.3g}", "" if o.get("n") is None else o["n"], f"{r['mde']:.3g}",
                    "" if need is None else f"{need}{cpu_words(r.get('runs_needed_cpu_s'), ' (about ', ' here)')}"])
    return out

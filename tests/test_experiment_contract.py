"""The experiment contract: an experiment is one declared
:class:`dpcompanion.experiments.base.Experiment`, and the report, the pages and the store read
its fields, never its module; one rule (``store.best_fresh``) decides which stored result a page
shows and a verdict is judged on."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest
import toy_units

from dpcompanion.book import plotting, show
from dpcompanion.experiments import base, comparisons, scale_tables, store
from dpcompanion.experiments.comparisons import reproduction
from dpcompanion.experiments.comparisons.rule import Judgement, Margin, Rule, judge_effect

PKG = Path(base.__file__).resolve().parents[1]
ID = "test-contract-toy"


_units, _run_unit, _combine = toy_units.units, toy_units.run_unit, toy_units.combine


def _toy() -> base.Experiment:
    """The toy's describe and rows are closures, not names of this module: a lookup of the
    module defining ``run_unit`` (the old contract) would find none of them."""
    def sizes(payload):
        return f"**Sizes ({payload['config']['mode']} mode).** toy n = {payload['config']['n']}."

    def table(payload):
        return [{"item": f"toy total at n = {payload['config']['n']}", "paper": "-", "ours": f"{payload['total']:.3f}",
                 "verdict": "holds by construction", "note": "toy"}]

    def report(payload):
        return table(payload) + [{"item": "toy extra row", "paper": "-", "ours": "-", "verdict": "holds by construction",
                                  "note": "only in the report"}]

    return base.Experiment(id=ID, title="contract toy", configs={"quick": {"n": 4, "reps": 7}, "full": {"n": 6, "reps": 9},
                                                                 "paper": {"n": 8, "reps": 11}},
                           units=_units, run_unit=_run_unit, combine=_combine, describe=sizes, verdict_rows=table,
                           report_verdict_rows=report, repeats_key="reps")


@pytest.fixture()
def toy(tmp_path, monkeypatch):
    exp = base.register(_toy())
    monkeypatch.setenv("DPCOMPANION_RESULTS", str(tmp_path / "results"))
    shown: list = []
    monkeypatch.setattr(plotting, "_display_markdown", shown.append)
    yield exp, shown
    base.unregister(exp.id)


def test_report_and_page_read_describe_and_rows_from_the_experiment(toy):
    """The verdicts report and the page machinery find a registered
    experiment's describe, verdict rows, report rows and repeats key through the object; its
    module (this test module) defines none of them."""
    exp, shown = toy
    mod = sys.modules[exp.run_unit.__module__]
    assert not any(hasattr(mod, name) for name in ("describe", "verdict_rows", "report_verdict_rows"))
    assert ID in reproduction.experiments_with_verdicts()
    rows = reproduction.report_rows(pages=[ID], compute=True)
    assert [r["item"] for r in rows] == ["toy total at n = 4", "toy extra row"]  # report_verdict_rows, quick computed
    assert {r["ours"]["n"] for r in rows} == {7}  # n from the declared repeats_key
    assert {r["result"]["mode"] for r in rows} == {"quick"}
    page = show.show_experiment(ID, mode="quick")
    assert shown[0] == show.full_absent_note(ID)  # no full result: said first
    assert shown[1] == "**Sizes (quick mode).** toy n = 4." and "toy total at n = 4" in shown[2]
    assert "toy extra row" not in shown[2]  # the page's table is verdict_rows
    assert page.experiment is exp


def test_an_experiment_without_rows_is_not_in_the_report(toy):
    """``verdict_rows`` is optional; an experiment without it has no rows
    (and may not declare report rows alone)."""
    exp, _ = toy
    bare = base.register(base.Experiment(id="test-contract-bare", title="bare", configs=exp.configs, units=_units,
                                         run_unit=_run_unit, combine=_combine))
    try:
        assert "test-contract-bare" not in reproduction.experiments_with_verdicts()
        with pytest.raises(ValueError, match="has no verdict rows"):
            bare.judged_rows({})
    finally:
        base.unregister(bare.id)
    with pytest.raises(ValueError, match="report_verdict_rows without verdict_rows"):
        base.Experiment(id="x", title="x", configs=exp.configs, units=_units, run_unit=_run_unit, combine=_combine,
                        report_verdict_rows=lambda p: [])


def test_every_package_experiment_declares_what_its_module_defines():
    """``from_module`` picks up every name of the contract its module defines
    (the ``EXPERIMENT`` line comes last), so nothing needs the module to find them; every
    experiment of the package declares its rules and its paper's scale."""
    for eid, exp in base.all_experiments().items():
        mod = sys.modules[exp.run_unit.__module__]
        for name, field in {**base.REQUIRED_NAMES, **base.OPTIONAL_NAMES}.items():
            if hasattr(mod, name):
                declared = getattr(mod, name)
                assert getattr(exp, field) == (tuple(declared) if field == "rules" else declared), \
                    f"{eid}: {name} not declared (EXPERIMENT not last?)"
        assert exp.verdict_rows is not None and exp.rules and exp.paper_scale, eid


def test_a_module_missing_a_required_name_is_refused(monkeypatch):
    """``from_module`` names what the module lacks of the contract."""
    import types

    mod = types.ModuleType("dpcompanion.experiments.zz_incomplete")
    mod.CONFIGS, mod.units, mod.run_unit = {"quick": {}, "full": {}}, _units, _run_unit
    monkeypatch.setitem(sys.modules, mod.__name__, mod)
    with pytest.raises(ValueError, match="lacks TITLE, combine"):
        base.from_module(mod.__name__, id="zz-incomplete")


def _import_module_calls(path: Path) -> list[tuple[int, str]]:
    out = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Call):
            name = ast.unparse(node.func)
            if name.endswith("import_module") or name == "__import__":
                out.append((node.lineno, ast.unparse(node)))
    return out


def test_no_module_lookup_of_experiments_outside_the_registry():
    """Acceptance: no ``importlib.import_module`` of an experiment module (by name or
    by a function's ``__module__``) anywhere in the package but ``experiments/base.py``, the
    registry."""
    bad = []
    for path in sorted(PKG.rglob("*.py")):
        rel = path.relative_to(PKG.parent).as_posix()
        if rel == "dpcompanion/experiments/base.py":
            continue
        for line, call in _import_module_calls(path):
            if "experiment" in call.lower() or "__module__" in call or "run_unit" in call:
                bad.append(f"{rel}:{line} {call}")
    assert not bad, bad
    assert _import_module_calls(PKG / "experiments" / "base.py")  # the registry does import them


def test_one_rule_picks_the_result_shown_and_judged(toy):
    """``store.best_fresh`` (paper, else full, else quick, fresh only) is the
    one rule; ``result_to_show``, the page's full-result block and the verdicts report agree
    with it as results appear."""
    exp, shown = toy
    assert store.best_fresh(ID) is None
    assert reproduction.report_rows(pages=[ID])[0]["verdict"] == "not judged"  # nothing computed unasked
    quick = store.compute(ID, mode="quick")
    assert store.best_fresh(ID).mode == "quick" and store.result_to_show(ID, mode="quick").digest == quick.digest
    assert {r["result"]["mode"] for r in reproduction.report_rows(pages=[ID])} == {"quick"}
    shown.clear()
    page = show.show_experiment(ID, mode="quick", absent_note=" (n)")
    assert shown[0] == show.full_absent_note(ID) + " (n)"  # the page never shows quick as full
    assert shown[1].startswith("**Sizes (quick mode).**") and not any(":::" in s for s in shown)
    for mode in ("full", "paper"):
        res = store.compute(ID, mode=mode)
        assert store.best_fresh(ID).digest == res.digest
        assert store.result_to_show(ID, mode="quick").digest == res.digest
        rows = reproduction.report_rows(pages=[ID])
        assert {r["result"]["digest"] for r in rows} == {res.digest}
        assert page.judged_result(rows).digest == res.digest
        shown.clear()
        show.show_experiment(ID, mode="quick")
        assert shown[0].startswith(f"**Sizes ({mode} mode).**") and (show.PAPER_SHOWN in shown[0]) == (mode == "paper")
        assert shown[-1].startswith(":::{admonition} This build's quick-mode run") and "**Sizes (quick mode).**" in shown[-1]
    assert store.best_fresh(ID, modes=("full", "quick")).mode == "full"
    assert store.result_to_show(ID, mode="paper").mode == "paper"


def _ruled_toy() -> base.Experiment:
    """A toy declared as a new contributor would add one with verdict rows: its rule (with its
    design and margin) and its paper's scale live in the declaration alone, nothing elsewhere."""
    def judge(*, total: float, se: float) -> Judgement:
        return judge_effect(total, se, direction=+1, df=None, n=2, design="paired").for_row(f"{total:+.3f}")

    rule = Rule("test-contract-ruled/total", "toy total above zero", "a made-up paper: positive", "95% CI above zero",
                judge, design=("paired", "both arms share the unit seeds"),
                margin=Margin(0.01, "toy units", "smallest effect of interest", "a toy margin"))
    dims = {"n": scale_tables.Dim(8, "a made-up paper, Sec. 1: n = 8", scale_tables.config_key("n"), setup=True)}

    def table(payload):
        return [comparisons.compare("test-contract-ruled/total", sizes_match=True, total=payload["total"], se=0.5)]

    return base.Experiment(id="test-contract-ruled", title="ruled toy", configs={"quick": {"n": 4}, "full": {"n": 8}},
                           units=_units, run_unit=_run_unit, combine=_combine, verdict_rows=table, rules=(rule,),
                           paper_scale=dims)


def test_a_new_experiment_declares_its_rules_and_scale_and_nothing_else_changes(tmp_path, monkeypatch):
    """Acceptance: adding an experiment with verdict rows touches only its own
    declaration: registered, its rule is in the registry (with its design and margin on the
    row), its scale block is read by ``scale_of`` and its rows reach the verdicts report; once
    unregistered, none of them is left."""
    monkeypatch.setenv("DPCOMPANION_RESULTS", str(tmp_path / "results"))
    exp = base.register(_ruled_toy())
    try:
        assert comparisons.rule_by_id("test-contract-ruled/total") is exp.rules[0]
        assert comparisons.design_of("test-contract-ruled/total") == "paired"
        assert [r.id for r in comparisons.rules_for(exp.id)] == ["test-contract-ruled/total"]
        scale = scale_tables.scale_of(exp.id, base.config_for(exp, "quick"))
        assert scale["n"] == {"paper": 8, "ours": 4, "source": "a made-up paper, Sec. 1: n = 8", "match": False}
        assert scale_tables.comparability(exp.id, scale)[0] == "direction"
        assert exp.id in scale_tables.scaled_ids()
        rows = reproduction.report_rows(pages=[exp.id], compute=True)
        assert [r["rule"] for r in rows] == ["test-contract-ruled/total"]
        assert rows[0]["design"] == "paired" and rows[0]["margin_reason"] == "a toy margin"
    finally:
        base.unregister(exp.id)
    with pytest.raises(ValueError, match="rule must be one of"):
        comparisons.rule_by_id("test-contract-ruled/total")
    assert scale_tables.scale_of(exp.id, {"n": 4}) == {}


def test_an_experiment_may_declare_only_its_own_rules():
    """A rule's id names its experiment (``<id>/<panel>``); a declaration with another's
    rule, or one rule twice, is refused when it is made."""
    judge = lambda **m: None  # noqa: E731
    other = Rule("h-f-eff/loss", "x", "x", "x", judge)
    mine = Rule("test-contract-own/x", "x", "x", "x", judge)
    kw = dict(title="t", configs={"quick": {}, "full": {}}, units=_units, run_unit=_run_unit, combine=_combine)
    with pytest.raises(ValueError, match="are not 'test-contract-own/<panel>'"):
        base.Experiment(id="test-contract-own", rules=(other,), **kw)
    with pytest.raises(ValueError, match="declared twice"):
        base.Experiment(id="test-contract-own", rules=(mine, mine), **kw)
    with pytest.raises(ValueError, match="is not '<experiment id>/<panel>'"):
        Rule("no-slash", "x", "x", "x", judge)


def test_the_registry_is_not_read_while_an_experiment_module_imports(monkeypatch):
    """Rules and scale blocks are collected from the experiments when asked; an
    experiment module that asked at import time would see a half-made registry, so the
    registry refuses, naming the module."""
    import importlib.machinery
    import types

    mod = types.ModuleType("dpcompanion.experiments.zz_half_made")
    mod.__spec__ = importlib.machinery.ModuleSpec(mod.__name__, None)
    mod.__spec__._initializing = True
    monkeypatch.setitem(sys.modules, mod.__name__, mod)
    monkeypatch.setattr(base.pkgutil, "iter_modules", lambda path: [types.SimpleNamespace(name="zz_half_made",
                                                                                          ispkg=False)])
    base._package_experiments.cache_clear()
    try:
        with pytest.raises(RuntimeError, match="zz_half_made is being imported"):
            base.all_experiments()
    finally:
        monkeypatch.undo()
        base._package_experiments.cache_clear()

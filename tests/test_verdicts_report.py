"""The verdict rules' tuning cap, the config hash that ignores a float's last bits,
the scale block recorded at save time, and the reproduction report
(``python -m dpcompanion verdicts``): what each row carries, that it reads stored results
only unless asked to compute, and its CSV."""

from __future__ import annotations

import csv
import json

import pytest

from dpcompanion import cli
from dpcompanion.experiments import base, comparisons as cmp, store
from dpcompanion.experiments import scale_tables as scale
from dpcompanion.experiments.comparisons import reproduction

# ---------------------------------------------------------------- a toy experiment (tests only)


def _units(config):
    return [{"x": config["x"]}]


def _run_unit(unit, device):
    return {"y": 2.0 * unit["x"]}


def _combine(config, results):
    return {"y": results[0]["y"], "config": dict(config)}


TOY = base.Experiment(id="test-h21-toy", title="toy", configs={"quick": {"x": 0.1 + 0.2}, "full": {"x": 0.5}},
                      units=_units, run_unit=_run_unit, combine=_combine,
                      paper_scale={"x": scale.Dim(0.3, "a test: \"x is 0.3\"", lambda c: c["x"])})


@pytest.fixture()
def toy(tmp_path, monkeypatch):
    base.register(TOY)
    monkeypatch.setenv("DPCOMPANION_RESULTS", str(tmp_path / "results"))
    yield TOY
    base.unregister(TOY.id)


# ---------------------------------------------------------------- tuning cap


GOOD = dict(param="T", method="uni", chosen=100, grid_min=50, grid_max=150, interior=True, stated_bound=False,
            tuning_seeds=[1, 2], report_seeds=[3, 4])
CURV = dict(sharp=1.0, sharp_se=0.1, flat=0.5, flat_se=0.1)  # agrees on its own


def test_tuning_protocol_caps_the_verdict():
    assert cmp.compare("h-f-curv/sharp-vs-flat", sizes_match=True, tuning=[GOOD], **CURV)["verdict"] == "reproduced"
    edge = {**GOOD, "chosen": 150, "interior": False}
    row = cmp.compare("h-f-curv/sharp-vs-flat", sizes_match=True, tuning=[edge], **CURV)
    assert row["verdict"] == "not judged" and "grid edge the paper did not state" in row["note"]
    # an edge the paper stated is flagged on the page, not a cap
    assert cmp.verdict_of("h-f-curv/sharp-vs-flat", tuning=[{**edge, "stated_bound": True}], **CURV) == "reproduced"
    shared = {**GOOD, "report_seeds": [2, 3]}
    assert cmp.verdict_of("h-f-curv/sharp-vs-flat", tuning=[shared], **CURV) == "not judged"
    unequal = [GOOD, {**GOOD, "method": "exp", "grid_max": 100, "chosen": 75}]
    assert cmp.verdict_of("h-f-curv/sharp-vs-flat", tuning=unequal, **CURV) == "sign only"
    # a cap never raises a verdict
    assert cmp.verdict_of("h-f-curv/sharp-vs-flat", tuning=unequal, sharp=0.5, sharp_se=0.1, flat=1.0,
                          flat_se=0.1) == "not reproduced"


# ---------------------------------------------------------------- config hash


def test_config_hash_ignores_the_last_bits_of_a_float():
    k = 3.615183284464984
    assert store.config_hash({"kappas": [k]}) == store.config_hash({"kappas": [3.6151832844649845]})
    assert store.config_hash({"kappas": [k]}) != store.config_hash({"kappas": [3.6151832845]})
    assert store.config_hash({"n": 1}) != store.config_hash({"n": 1.0})  # types still count


def test_the_scale_block_is_recorded_at_save_time(toy):
    res = store.compute(toy.id, mode="quick")
    assert res.provenance["scale"] == {"x": {"paper": 0.3, "ours": 0.1 + 0.2, "source": "a test: \"x is 0.3\"",
                                             "match": False}}


# ---------------------------------------------------------------- scale declarations


def test_every_experiment_declares_its_scale():
    for eid, exp in base.all_experiments().items():
        for mode in base.modes_of(exp):  # quick, full and, where an experiment has one, paper
            s = scale.scale_of(eid, base.config_for(exp, mode))
            assert s, eid
            for dim, d in s.items():
                assert d["source"] and (d["paper"] is None) == (d["match"] is None), (eid, dim)


def test_no_full_run_is_called_the_papers_scale_unless_every_dimension_matches():
    for eid in ("h-f-eff", "w-t36", "w-t1245", "w-f1"):
        s = scale.scale_of(eid, base.config_for(base.get(eid), "full"))
        assert not scale.at_paper_scale(s), eid
    assert scale.scale_of("h-f-eff", base.config_for(base.get("h-f-eff"), "full"))["hidden width"]["paper"] == 1000
    assert scale.scale_of("h-f-mom", base.config_for(base.get("h-f-mom"), "full"))["hidden width"]["paper"] == 100
    for eid in ("h-f-scale", "h-f-infl-extra"):  # 000 App. D's Fig. 3 DNN: no width printed
        assert scale.scale_of(eid, base.config_for(base.get(eid), "full"))["hidden width (DNN row)"]["paper"] is None


def test_help_no_longer_calls_full_mode_the_papers_sizes(capsys):
    for command in ("experiment", "reproduce"):
        with pytest.raises(SystemExit):
            cli.main([command, "--help"])
        out = " ".join(capsys.readouterr().out.split())
        assert "full (the paper's sizes)" not in out and "largest run committed" in out


# ---------------------------------------------------------------- the report


KEYS = {"page", "rule", "item", "verdict", "paper", "paper_value", "ours", "margin", "mde", "runs_needed", "scale",
        "at_paper_scale", "tuning", "result", "note"}


def test_verdicts_reads_stored_results_only(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("DPCOMPANION_RESULTS", str(tmp_path / "results"))
    assert cli.main(["verdicts", "--json", "--page", "h-f-curv", "--page", "w-f2"]) == 0
    out = json.loads(capsys.readouterr().out)
    rows = out["rows"]
    assert all(KEYS <= set(r) for r in rows)
    (h,) = [r for r in rows if r["page"] == "h-f-curv"]
    assert h["verdict"] == "not judged" and "no fresh stored result" in h["item"] and h["result"]["mode"] is None
    assert h["scale"]["repeats"]["paper"] == 100
    assert {r["result"]["mode"] for r in rows if r["page"] == "w-f2"} == {"computed"}
    assert sum(out["counts"].values()) == len(rows)
    assert not (tmp_path / "results").exists()  # nothing computed, nothing written


def test_verdicts_csv(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("DPCOMPANION_RESULTS", str(tmp_path / "results"))
    target = tmp_path / "v.csv"
    assert cli.main(["verdicts", "--page", "w-eps", "--csv", str(target)]) == 0
    with target.open() as f:
        rows = list(csv.DictReader(f))
    assert rows and set(rows[0]) == set(reproduction.CSV_COLUMNS)
    assert {r["verdict"] for r in rows} == {"not reproduced"}  # claim W-EPS: not reproduced, the registry's tolerance
    assert all(json.loads(r["scale"]) == {} and json.loads(r["tuning"]) == [] for r in rows)


def test_summary_is_rendered_from_the_report(tmp_path, monkeypatch):
    monkeypatch.setenv("DPCOMPANION_RESULTS", str(tmp_path / "results"))
    rows = reproduction.report_rows(pages=["h-f-theory", "w-eps"])
    shown = reproduction.verdict_summary(rows=rows)
    assert [r["verdict"] for r in shown] == [r["verdict"] for r in rows]
    assert shown[0]["item"].startswith("{doc}`h-f-theory <h-f-theory>` (computed)")
    path = reproduction.write_csv(rows, tmp_path / "out" / reproduction.CSV_NAME)
    assert path.read_text().startswith("page,rule,item,verdict")
    assert reproduction.reproduction_download_md() == "{download}`the reproduction report (CSV) <reproduction-report.csv>`"


@pytest.mark.slow
def test_report_covers_the_book_on_the_committed_results():
    """On the committed full results: every page with verdict rows is covered, every
    experiment row carries a scale block and says which result it was judged on, and no
    'agrees' row has an interval that neither excludes zero nor lies within its margin."""
    rows = reproduction.report_rows()
    pages = {r["page"] for r in rows}
    assert {"h-f-eff", "h-f-scale", "h-f-curv", "h-f-mom", "h-f-infl", "h-x-eer", "w-f1", "w-f4", "w-t1245", "w-t36",
            "h-f-theory", "w-eps"} <= pages
    for r in rows:
        assert KEYS <= set(r)
        if r["result"]["mode"] != "computed":
            assert r["scale"] and r["result"]["mode"] in ("full", "paper", "quick"), r["page"]
        o = r["ours"]
        if r["outcome"] == "success" and o["ci_low"] is not None and o["ci_low"] != o["ci_high"]:
            m = r["margin"] or 0.0
            assert o["ci_low"] > 0 or o["ci_high"] < 0 or (-m <= o["ci_low"] and o["ci_high"] <= m), r
        if r["verdict"] == "inconclusive" and o["n"] and o["se"]:
            assert r["runs_needed"], r
        # the tuning protocol: no row is judged at a grid edge the paper did not state, and no
        # row is judged on seeds its tuning selected on
        if r["verdict"] != "not judged":
            for t in r["tuning"]:
                assert t["interior"] or t["stated_bound"], (r["page"], r["item"], t)
                assert not set(t["tuning_seeds"]) & set(t["report_seeds"]), (r["page"], r["item"], t)
    # every experiment page is judged on one committed result, fresh on this clone: its complete
    # paper-mode result where one is committed (the paper's own sizes), else its full result
    for page in ("h-f-eff", "h-f-scale", "h-f-curv", "h-f-mom", "h-f-infl", "h-x-eer", "w-f1", "w-f4", "w-t1245",
                 "w-t36"):
        modes = {r["result"]["mode"] for r in rows if r["page"] == page}
        want = "paper" if store.fresh_paper(page) is not None else "full"
        assert modes == {want}, (page, modes)
        if want == "paper":  # a row tuned beyond the paper's stated range is not at its scale: it says so
            assert all(r["at_paper_scale"] != ("beyond" in r["item"]) for r in rows if r["page"] == page), page
            assert all(r["setup"] == "another" for r in rows if r["page"] == page and "beyond" in r["item"]), page


def test_no_document_calls_full_mode_the_papers_scale():
    """No text a user reads calls full mode "the paper's scale" (the README said
    "reproduce --mode full  # paper scale" and "builds the book at paper scale"; the verdicts
    page "the paper-scale (full) result")."""
    import json as _json
    import re

    from dpcompanion.core.provenance import REPO

    bad = re.compile(r"(?i)(--mode full|MODE=full|full mode|\(full\))[^.\n]{0,60}\bpapers?'?s? scale\b"
                     r"|\bpapers?'?s?[- ]scale \(full\)|builds the book at (the )?papers?'?s? scale")
    texts = {"README.md": (REPO / "README.md").read_text(), "CONTRIBUTING.md": (REPO / "CONTRIBUTING.md").read_text()}
    texts.update({str(p.relative_to(REPO)): p.read_text() for p in (REPO / "book").glob("*.md")})
    for p in sorted((REPO / "notebooks").glob("*.ipynb")):
        texts[str(p.relative_to(REPO))] = "\n".join("".join(c["source"]) for c in _json.loads(p.read_text())["cells"])
    found = [(name, m.group(0)) for name, t in texts.items() for m in bad.finditer(t)]
    assert not found, found

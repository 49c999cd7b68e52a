"""Paper mode: an optional third mode, the papers' own sizes, run resumably over
several sittings like full mode (units stored as they finish, committable), listed and
revalidated like full mode, and shown on a page instead of the full result once it is
complete and fresh; while partial, one line under the sizes says how far it got.

The pages are tested in their three states (no paper run, a partial one, a complete one) with
a tiny experiment registered here (this module defines ``describe`` and ``verdict_rows``, as an
experiment module does), never with real paper-scale runs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from dpcompanion import cli
from dpcompanion.book import plotting, report, show
from dpcompanion.experiments import base, store
from dpcompanion.experiments import scale_tables as scale
from dpcompanion.experiments.comparisons import reproduction
from dpcompanion.experiments.store import files, identity

REPO = Path(__file__).resolve().parents[1]
N_UNITS = 4
STOP_AT = 2  # with $DPC_TEST_PAPER_STOP=1, units from this index on fail: a sweep stopped part-way


def units(config):
    return [{"i": i, "n": config["n"], "seed": config["seed"]} for i in range(N_UNITS)]


def run_unit(unit, device):
    if unit["i"] >= STOP_AT and os.environ.get("DPC_TEST_PAPER_STOP") == "1":
        raise RuntimeError(f"stopped at unit {unit['i']}")
    rng = np.random.default_rng([unit["seed"], unit["i"]])
    return {"x": rng.standard_normal(unit["n"])}


def combine(config, results):
    return {"config": dict(config), "total": float(sum(r["x"].sum() for r in results))}


def describe(payload):
    return f"**Sizes ({payload['config']['mode']} mode).** n = {payload['config']['n']}."


def verdict_rows(payload):
    return [{"item": f"total of n = {payload['config']['n']}", "paper": "-", "ours": f"{payload['total']:.3f}",
             "verdict": "holds by construction", "note": "test"}]


CONFIGS = {"quick": {"n": 5}, "full": {"n": 10}, "paper": {"n": 40}}
ID = "test-paper"


@pytest.fixture()
def paper_exp(tmp_path, monkeypatch):
    exp = base.register(base.Experiment(id=ID, title="paper mode", configs=CONFIGS, units=units, run_unit=run_unit,
                                        combine=combine, describe=describe, verdict_rows=verdict_rows))
    nopaper = base.register(base.Experiment(id="test-nopaper", title="no paper mode",
                                            configs={k: v for k, v in CONFIGS.items() if k != "paper"},
                                            units=units, run_unit=run_unit, combine=combine, describe=describe,
                                            verdict_rows=verdict_rows))
    root = tmp_path / "results"
    monkeypatch.setenv("DPCOMPANION_RESULTS", str(root))
    monkeypatch.delenv("DPC_TEST_PAPER_STOP", raising=False)
    shown: list = []
    monkeypatch.setattr(plotting, "_display_markdown", shown.append)
    yield exp, nopaper, root, shown
    base.unregister(exp.id)
    base.unregister(nopaper.id)


def _stop_part_way(monkeypatch):
    """A paper sweep that stores STOP_AT of its N_UNITS units and fails on the next (its quick
    fingerprint computed first, before the stop applies)."""
    store.load_or_compute(ID, mode="quick")
    monkeypatch.setenv("DPC_TEST_PAPER_STOP", "1")
    with pytest.raises(RuntimeError, match="stopped at unit"):
        store.compute(ID, mode="paper")
    monkeypatch.delenv("DPC_TEST_PAPER_STOP")


def _set_unit_walls(root: Path, seconds: float) -> None:
    """Give every stored unit a recorded wall time (the estimate's input; its digest covers the
    result only), so that the estimate left is a known number."""
    for f in (root / ID / "paper.units").glob("*.json"):
        rec = json.loads(f.read_text())
        f.write_text(json.dumps({**rec, "wall_s": seconds}, sort_keys=True) + "\n")


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.name=test", "-c", "user.email=test@example.org", *args], cwd=cwd, check=True,
                   capture_output=True)


# ------------------------------------------------------------------------------ the mode


def test_paper_mode_is_optional_and_named_where_it_is_missing(paper_exp):
    exp, nopaper, _, _ = paper_exp
    assert base.modes_of(exp) == ("quick", "full", "paper") and base.modes_of(nopaper) == ("quick", "full")
    assert {"h-f-eff", "w-f4", ID} <= set(base.with_mode("paper")) and nopaper.id not in base.with_mode("paper")
    with pytest.raises(ValueError, match=r"experiment test-nopaper has no paper config; experiments with one: "
                                         r".*h-f-eff"):
        base.config_for(nopaper, "paper")
    with pytest.raises(ValueError, match="mode must be one of quick, full, paper"):
        base.config_for(exp, "huge")
    with pytest.raises(ValueError, match="unknown modes"):
        base.Experiment(id="x", title="x", configs={**CONFIGS, "turbo": {}}, units=units, run_unit=run_unit,
                        combine=combine)
    assert store.load(nopaper.id, mode="paper") is None and store.fresh_paper(nopaper.id) is None
    assert show.paper_progress_note(nopaper.id) == ""


def test_adding_a_paper_config_moves_no_quick_or_full_config_hash(paper_exp):
    exp, nopaper, _, _ = paper_exp
    for mode in ("quick", "full"):
        assert store.config_hash(base.config_for(exp, mode)) == store.config_hash(base.config_for(nopaper, mode))
    # the mode is hashed: a paper config equal to the full one would still be another result
    same = base.Experiment(id="x", title="x", configs={**CONFIGS, "paper": CONFIGS["full"]}, units=units,
                           run_unit=run_unit, combine=combine)
    assert store.config_hash(base.config_for(same, "paper")) != store.config_hash(base.config_for(same, "full"))
    # the committed full results of the two experiments given a paper config keep their config hash
    for eid in ("h-f-eff", "w-f4"):
        prov = json.loads((REPO / "results" / eid / "full" / "provenance.json").read_text())
        config = base.config_for(base.get(eid), "full", seed=int(prov["config"].get("seed", 0)))
        assert prov["config_hash"] == store.config_hash(config), eid


def test_the_paper_configs_are_the_papers_sizes():
    from dpcompanion.training import models

    h = base.config_for(base.get("h-f-eff"), "paper")
    assert (h["hidden"], h["repeats"], min(h["T_grid"]), max(h["T_grid"]), h["T_range"]) == (1000, 100, 50, 150,
                                                                                              [50, 150])
    assert scale.at_paper_scale(scale.scale_of("h-f-eff", h))
    # one unit per N, as full mode, except N = 4000: one per schedule (a unit must fit in a sitting)
    us = base.get("h-f-eff").units(h)
    assert [(u["N"], u.get("kinds")) for u in us] == [(n, None) for n in h["N"][:-1]] + [(4000, ["uni"]), (4000, ["exp"])]
    w = base.config_for(base.get("w-f4"), "paper")
    assert w["model"] in models.MODELS and w["model"].startswith("cnn") and "mnist" in w["model"]
    assert (w["n_train"], w["n_test"], w["epochs"], w["batch_size"], w["seeds"]) == (60000, 10000, 50, 256, 1)
    assert w["cs"] == [0.0, 1e-5, 1e-3, 1e-2, 0.1, 0.5] and w["sigmas"] == [1.6, 3.2, 6.4, 12.8]
    s = scale.scale_of("w-f4", w)
    assert s["model"]["match"] and s["epochs"]["match"] and s["c grid"]["match"] and scale.at_paper_scale(s)
    wu = base.get("w-f4").units(w)  # two replicate units per (sigma, c) cell, 1 seed each
    assert len(wu) == 48 and [u.get("replicate", 0) for u in wu] == [0] * 24 + [1] * 24
    assert wu[:24] == base.get("w-f4").units({**w, "replicates": 1})  # replicate 0 is the single-seed cell
    assert s["seeds"]["ours"] == 2
    full = scale.scale_of("w-f4", base.config_for(base.get("w-f4"), "full"))
    assert full["model"]["match"] is False  # the MLP of full mode is not the paper's CNN


# ------------------------------------------------------------------------------ sweeps, listing


def test_a_paper_sweep_resumes_and_its_units_and_result_are_committable(paper_exp, monkeypatch, capsys):
    exp, _, root, _ = paper_exp
    _stop_part_way(monkeypatch)
    assert len(list((root / ID / "paper.units").glob("*.json"))) == STOP_AT
    assert store.load(ID, mode="paper") is None and store.fresh_paper(ID) is None
    (part,) = [p for p in store.list_partial() if p["id"] == ID]
    assert (part["mode"], part["units_done"], part["units_total"]) == ("paper", STOP_AT, N_UNITS)
    assert cli.main(["results"]) == 0
    out = capsys.readouterr().out
    assert f"PARTIAL {STOP_AT}/{N_UNITS} units" in out and f"experiment {ID} --mode paper` resumes it" in out
    assert cli.main(["experiment", ID, "--mode", "paper", "--json"]) == 0
    rec = json.loads(capsys.readouterr().out)
    assert (rec["mode"], rec["units_reused"], rec["units_computed"]) == ("paper", STOP_AT, N_UNITS - STOP_AT)
    res = store.load(ID, mode="paper")
    assert res.fresh and res.provenance["quick_digest"] == store.load(ID, mode="quick").digest
    assert store.load(ID, mode="full") is None  # paper mode leaves full mode alone
    assert rec["digest"] == store.compute(ID, mode="paper", root=root / "straight").digest
    rows = json.loads((cli.main(["results", "--json"]), capsys.readouterr().out)[1])
    assert {(r["id"], r["mode"], r["complete"]) for r in rows} == {(ID, "quick", True), (ID, "paper", True)}
    # .gitignore keeps quick results and units out, not paper ones (nor full ones)
    for path, ignored in (("results/x/paper.units/k.json", False), ("results/x/paper/payload.json", False),
                          ("results/x/full/payload.json", False), ("results/x/quick.units/k.json", True),
                          ("results/x/quick/payload.json", True), ("results/x/paper.units/.k.json.tmp-h-1-2-a", True)):
        rc = subprocess.run(["git", "check-ignore", "--no-index", "-q", path], cwd=REPO).returncode
        assert rc == (0 if ignored else 1), path


def test_revalidation_treats_paper_like_full(paper_exp, monkeypatch, capsys):
    exp, _, root, _ = paper_exp
    paper = store.compute(ID, mode="paper")
    full = store.compute(ID, mode="full")
    real = identity.code_files
    monkeypatch.setattr(identity, "code_files", lambda e: {**real(e), "dpcompanion.theory.accounting": "edited"})
    assert store.load(ID, mode="paper").stale_reason.startswith("code changed") and store.fresh_paper(ID) is None
    assert cli.main(["results", "--revalidate", "--json"]) == 0
    rows = {(r["id"], r["mode"]): r for r in json.loads(capsys.readouterr().out)}
    for mode, res in (("paper", paper), ("full", full)):
        row = rows[(ID, mode)]
        assert row["fresh"] and row["revalidation"]["status"] == "revalidated", row
        assert f"{mode} result fresh for code" in row["revalidation"]["detail"]
        assert store.load(ID, mode=mode).digest == res.digest
    assert store.fresh_paper(ID).digest == paper.digest
    # a code change that moves the quick digest leaves the paper result stale, said per mode
    monkeypatch.setattr(identity, "code_files", lambda e: {**real(e), "dpcompanion.theory.accounting": "again"})
    monkeypatch.setitem(CONFIGS["quick"], "n", 6)  # the quick mode now gives other numbers
    assert cli.main(["results", "--revalidate"]) == 0
    out = capsys.readouterr().out
    assert f"revalidate {ID} paper: stale (quick digest changed" in out and "recompute the paper result" in out
    assert f"revalidate {ID}: stale (quick digest changed" in out and "recompute the full result" in out
    assert cli.main(["experiment", ID, "--mode", "paper", "--revalidate", "--json"]) == 0
    rec = json.loads(capsys.readouterr().out)
    assert rec["mode"] == "paper" and rec["revalidation"]["status"] == "stale" and not rec["fresh"]


# ------------------------------------------------------------------------------ pages and verdicts

CONTINUE = f"continue with `python -m dpcompanion experiment {ID} --mode paper`"


def _page(shown):
    """What show_experiment of this build (quick) shows: the largest fresh result first, this build's folded."""
    shown.clear()
    show.show_experiment(ID, mode="quick", absent_note=" (note)")
    return list(shown)


def _fold_of_quick(block: str, quick) -> None:
    assert block.startswith(":::{admonition} This build's quick-mode run, smaller than the")
    assert describe(quick.payload) in block and "n = 5" in block  # its sizes and its verdicts, folded


def test_page_and_verdicts_without_a_paper_run_are_unchanged(paper_exp):
    exp, _, _, shown = paper_exp
    store.compute(ID, mode="full")
    out = _page(shown)
    full = store.fresh_full(ID)
    assert out[0] == describe(full.payload) + f" <small>{show.result_line(full)}</small>" and "n = 10" in out[1]
    assert len(out) == 3 and show.paper_progress_note(ID) == ""  # no paper line
    _fold_of_quick(out[2], store.load(ID, mode="quick"))
    assert store.result_to_show(ID, mode="quick").mode == "full"
    assert {r["result"]["mode"] for r in reproduction.report_rows(pages=[ID])} == {"full"}
    assert report.reproduction_tables(ID).startswith("<small>Judged on the full result.</small>")


def test_page_with_a_partial_paper_sweep_says_how_far_it_got(paper_exp, monkeypatch):
    exp, _, root, shown = paper_exp
    store.compute(ID, mode="full")
    _stop_part_way(monkeypatch)
    _set_unit_walls(root, 1800.0)  # 2 units of half an hour done, 2 left: about 1 CPU-hour
    line = (f"paper-scale run in progress: 2 of 4 units done, about 1 CPU-hours left at the finished units' mean time "
            f"(units left may be larger); {CONTINUE}")
    assert show.paper_progress_note(ID) == line  # not in a git repository: nothing said about commits
    out = _page(shown)
    full = store.fresh_full(ID)  # the full result is still the one shown first, and judged
    assert out[0] == line and out[1] == describe(full.payload) + f" <small>{show.result_line(full)}</small>"
    assert len(out) == 4
    _fold_of_quick(out[3], store.load(ID, mode="quick"))
    assert store.result_to_show(ID, mode="quick").mode == "full"
    assert {r["result"]["mode"] for r in reproduction.report_rows(pages=[ID])} == {"full"}
    # committed: the line says so (git tracks the unit files at HEAD); one more stored unit not yet
    _git(root, "init", "-q")
    _git(root, "add", f"{ID}/paper.units")
    _git(root, "commit", "-qm", "paper units")
    assert store.committed_units(ID, "paper") == 2
    assert show.paper_progress_note(ID) == line.replace("units done,", "units done (committed),")
    extra = json.loads(sorted((root / ID / "paper.units").glob("*.json"))[0].read_text())
    (root / ID / "paper.units" / "copy.json").write_text(json.dumps(extra))  # a stray file: not a unit
    assert show.paper_progress_note(ID) == line.replace(
        "units done,", "units done (committed), 1 stored by older code (recomputed),")  # not counted as done
    (root / ID / "paper.units" / "copy.json").unlink()
    monkeypatch.setattr(sys.modules[__name__], "STOP_AT", 3)  # the next sitting stores one more unit
    _stop_part_way(monkeypatch)
    _set_unit_walls(root, 1800.0)
    assert show.paper_progress_note(ID) == (f"paper-scale run in progress: 3 of 4 units done (2 of them committed), "
                                             f"about 0.5 CPU-hours left at the finished units' mean time (units left "
                                             f"may be larger); {CONTINUE}")


def test_page_and_verdicts_use_a_complete_fresh_paper_result_and_say_so(paper_exp):
    exp, _, _, shown = paper_exp
    store.compute(ID, mode="full")
    paper = store.compute(ID, mode="paper")
    assert show.paper_progress_note(ID) == ""
    out = _page(shown)
    assert len(out) == 3  # the paper result, its verdicts, this build's (quick) run folded; no progress line
    assert out[0] == (describe(paper.payload) + f" {show.PAPER_SHOWN} <small>{show.result_line(paper)}</small>")
    assert out[0].startswith("**Sizes (paper mode).** n = 40.") and "n = 40" in out[1]
    _fold_of_quick(out[2], store.load(ID, mode="quick"))
    assert store.result_to_show(ID, mode="quick").mode == "paper"
    assert store.result_to_show(ID, mode="full").mode == "paper"
    assert show.ExperimentPage(ID, mode="quick", shown="full when fresh").result.digest == paper.digest
    rows = reproduction.report_rows(pages=[ID])
    assert {r["result"]["mode"] for r in rows} == {"paper"} and {r["result"]["digest"] for r in rows} == {paper.digest}
    assert "n = 40" in rows[0]["item"]
    assert report.reproduction_tables(ID).startswith("<small>Judged on the paper-scale result (`paper` mode")
    # a stale paper result is not shown: the page and the report fall back on the full one
    prov = json.loads((paper.path / "provenance.json").read_text())
    (paper.path / "provenance.json").write_text(json.dumps({**prov, "device": "elsewhere"}))
    assert store.fresh_paper(ID) is None and store.result_to_show(ID, mode="quick").mode == "full"
    assert {r["result"]["mode"] for r in reproduction.report_rows(pages=[ID])} == {"full"}

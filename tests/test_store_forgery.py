"""What the results store's promise covers against forgery (see the package docstring of
:mod:`dpcompanion.experiments.store`, "What the store defends against"):

* ``results --verify`` by default recomputes enough units to catch one forged unit with
  probability at least 95%, every unit when they are cheap, and says what it checked: a single
  forged unit of H-X-EER-BREAKDOWN's quick result (12 units, half a second), digest and seal
  recomputed with the library, which flips the page's control verdict, is caught and named;
* a forged unit file of a sweep in progress is not reused and sealed by a resumed sweep
  (``experiment``, ``--recompute`` too) when its recorded time is within the check's budget;
  one claiming more is trusted as stored (the documented limit) and caught by ``--verify``;
* a result file hidden from ``git status`` by ``git update-index --skip-worktree`` (or
  ``--assume-unchanged``) is treated as modified."""

from __future__ import annotations

import importlib
import json
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
import toy_units

from dpcompanion import cli
from dpcompanion.experiments import base, store
from dpcompanion.experiments.store import files, result_store

#: the module (``store.verify`` is its function)
verify_module = importlib.import_module("dpcompanion.experiments.store.verify")
EER = "h-x-eer-breakdown"
GIT = ["git", "-c", "user.name=test", "-c", "user.email=test@example.invalid", "-c", "commit.gpgsign=false"]


@pytest.fixture(scope="module")
def eer_quick(tmp_path_factory) -> Path:
    """H-X-EER-BREAKDOWN's quick result, computed once into a folder the tests copy."""
    root = tmp_path_factory.mktemp("eer") / "results"
    store.compute(EER, mode="quick", root=root)
    return root


@pytest.fixture()
def eer(eer_quick, tmp_path, monkeypatch):
    root = tmp_path / "results"
    shutil.copytree(eer_quick, root)
    monkeypatch.setenv("DPCOMPANION_RESULTS", str(root))
    return root


def _forge_unit(root: Path, i: int, key: str, value) -> dict:
    """Unit ``i``'s record in the payload (``cells[i][key]``) and the grid combined from it
    (``<key>[i % len(Ts), i // len(Ts)]``) set to ``value``; digest and seal recomputed with
    the library, written by the store's own save (so every file check passes)."""
    res = store.load(EER, mode="quick", root=root)
    body = dict(res.payload)
    body["cells"] = [dict(c) for c in body["cells"]]
    body["cells"][i][key] = value
    grid = np.array(body[key], dtype=float)
    grid[i % len(body["Ts"]), i // len(body["Ts"])] = value
    body[key] = grid
    prov = json.loads((res.path / "provenance.json").read_text())
    files.save(res.path, body, store.sealed({**prov, "digest": store.digest(body)}))
    return body


def _control_verdict(capsys) -> str:
    capsys.readouterr()
    assert cli.main(["verdicts", "--page", EER, "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    (row,) = [r for r in rows if r["rule"] == "h-x-eer-breakdown/control"]
    return row["verdict"]


def test_verify_catches_one_forged_unit_that_flips_a_verdict(eer, capsys):
    """One unit of the 12 forged (its control z set to 5, beyond |z| < 3): the control verdict
    flips (the check passes, then fails), every file check passes, and ``results --verify`` with its
    defaults recomputes all 12 units (they took half a second), finds the forged one, names it
    and exits 1, saying what it checked and the catch probability."""
    honest = _control_verdict(capsys)
    _forge_unit(eer, 5, "z_unclipped", 5.0)
    forged = store.load(EER, mode="quick", root=eer)
    assert forged.fresh and not forged.damaged  # nothing but recomputation can tell
    assert _control_verdict(capsys) != honest  # the forged unit flipped the page's verdict
    capsys.readouterr()
    assert cli.main(["results", "--verify", EER, "--results-dir", str(eer)]) == 1
    out = capsys.readouterr().out
    assert f"verify {EER} quick: all 12 units, recomputed with the current code" in out, out
    assert "unit 5: MISMATCH" in out and "at /cells/5/z_unclipped" in out, out
    assert sum("MISMATCH" in line for line in out.splitlines() if line.startswith("  unit ")) == 1, out
    assert "whole payload: MISMATCH" in out
    assert "checked: 12 of 12 units (all: their recorded time" in out
    assert "one forged unit is caught with probability 100.0%" in out
    assert "forged or recomputed differently: unit 5\n" in out
    assert out.rstrip().endswith("MISMATCH: the stored numbers are not what this code computes")


def test_verify_of_the_honest_result_passes_and_a_sample_says_what_it_misses(eer, capsys):
    """The untouched result passes; ``--units 3`` checks 3 of 12 and says that one forged unit
    is caught with probability 25%, below the 95% of the default."""
    assert cli.main(["results", "--verify", EER, "--results-dir", str(eer)]) == 0
    assert capsys.readouterr().out.rstrip().endswith(f"verify {EER} quick: ok")
    assert cli.main(["results", "--verify", EER, "--units", "3", "--seed", "1"]) == 0
    out = capsys.readouterr().out
    assert "checked: 3 of 12 units (as asked (--units 3)), 3 of them found in the payload" in out, out
    assert "probability 25.0%, below the 95% aimed at by default" in out


def test_verify_catches_a_forged_grid_that_no_unit_record_holds(eer, capsys):
    """A number combined from the units and forged alone (the z grid, not the cell it comes
    from): every unit's own record agrees, and only the whole payload, combined again, differs;
    the default recomputes every unit of a cheap result, so it is caught."""
    res = store.load(EER, mode="quick")
    body = dict(res.payload)
    body["z_unclipped"] = np.array(body["z_unclipped"], dtype=float)
    body["z_unclipped"][1, 1] = 9.0
    prov = json.loads((res.path / "provenance.json").read_text())
    files.save(res.path, body, store.sealed({**prov, "digest": store.digest(body)}))
    rep = store.verify(EER, mode="quick")
    assert all(u["status"] == "ok" for u in rep["units"]) and rep["whole"]["status"] == "mismatch", rep["whole"]
    assert rep["whole"]["where"].startswith("/z_unclipped") and not rep["ok"]


@pytest.mark.parametrize("n,recorded,k", [(12, 0.5, 12), (45, 2.4, 45), (45, 3600.0, 43), (20, None, 19),
                                          (101, 96.6, 96), (1, 10**6, 1)])
def test_the_default_number_of_units(n, recorded, k):
    """All units when they took at most VERIFY_ALL_S, else ceil(0.95 n): at least 95%."""
    got, why = verify_module.default_units(n, recorded)
    assert got == k, why
    assert got / n >= verify_module.CATCH_TARGET


# ------------------------------------------------------------------ forged unit files of a sweep

ID = "test-forged-unit"


def _units(config):
    return [{"i": i, "seed": config["seed"], "n": config["n"]} for i in range(3)]


def _run_unit(unit, device):
    rng = np.random.default_rng([unit["seed"], unit["i"]])
    return {"i": unit["i"], "y": rng.standard_normal(unit["n"]), "m": float(rng.standard_normal())}


def _combine(config, results):
    return {"units": list(results), "total": float(sum(r["m"] for r in results))}


@pytest.fixture()
def toy(tmp_path, monkeypatch):
    with toy_units.registered(base.Experiment(id=ID, title="forged units", configs={"quick": {"n": 80}, "full": {"n": 90}},
                                              units=_units, run_unit=_run_unit, combine=_combine),
                              tmp_path, monkeypatch) as exp:
        yield exp


def _store_forged_unit(exp, i: int, *, wall_s: float) -> None:
    """Unit ``i`` of full mode stored as a forger with the library would: its number moved,
    its digest recomputed (``save_unit`` does), claiming ``wall_s`` seconds."""
    config = base.config_for(exp, "full", seed=0)
    unit = exp.units(config)[i]
    result = _run_unit(unit, "cpu")
    result["m"] += 1.0
    result_store.save_unit(store.units_dir(ID, "full"), store.unit_key(ID, "full", unit, 0, "cpu"), unit, result,
                          {"runs": 1, "wall_s": wall_s}, code=store.code_hash(exp), seed=0)


def test_a_forged_unit_file_is_not_reused_by_a_resumed_sweep(toy, tmp_path, capsys):
    """A sweep in progress whose unit 1 was forged (as a committed ``full.units/`` could be):
    ``experiment --recompute`` resumes it, recomputes the stored unit before reusing it (its
    recorded time is within REUSE_CHECK_S), finds it differs, says so and uses this code's
    numbers: the saved result has a straight run's digest, and the unit file is rewritten."""
    straight = store.compute(ID, mode="full", root=tmp_path / "straight").digest
    _store_forged_unit(toy, 1, wall_s=0.5)
    assert cli.main(["experiment", ID, "--mode", "full", "--recompute", "--json"]) == 0
    out, err = capsys.readouterr()
    rec = json.loads(out)
    assert rec["digest"] == straight, err
    assert "stored unit 1 (" in err and "is not what this code computes" in err and "recomputed, not reused" in err
    assert "1 of the 1 stored units recomputed and compared before reuse; 1 differed and were replaced" in err
    prov = store.load(ID, mode="full").provenance
    assert (prov["units_checked"], prov["units_rejected"], prov["units_reused"], prov["units_computed"]) == (1, 1, 0, 3)


def test_a_forged_unit_claiming_a_long_time_is_trusted_then_caught_by_verify(toy, capsys):
    """The documented limit: a stored unit whose recorded time exceeds REUSE_CHECK_S is reused
    as stored (recomputing it is what resuming saves), so the forged number is sealed into the
    result; ``results --verify`` recomputes the units (their recorded times exceed a minute:
    ceil(0.95 * 3) = 3 of them, all) and catches it."""
    _store_forged_unit(toy, 1, wall_s=result_store.REUSE_CHECK_S + 1)
    res = store.compute(ID, mode="full")
    assert res.provenance["units_checked"] == 0 and res.provenance["units_reused"] == 1
    assert store.load(ID, mode="full").fresh
    capsys.readouterr()
    assert cli.main(["results", "--verify", ID, "--mode", "full"]) == 1
    out = capsys.readouterr().out
    assert "unit 1: MISMATCH" in out and "at /units/1/m" in out and "at least 95% of them" in out, out


def test_honest_stored_units_are_checked_and_reused(toy):
    config = base.config_for(toy, "full", seed=0)
    unit = toy.units(config)[0]
    result_store.save_unit(store.units_dir(ID, "full"), store.unit_key(ID, "full", unit, 0, "cpu"), unit,
                          _run_unit(unit, "cpu"), {"runs": 1, "wall_s": 0.1}, code=store.code_hash(toy), seed=0)
    lines: list[str] = []
    res = store.compute(ID, mode="full", progress=lines.append)
    p = res.provenance
    assert (p["units_checked"], p["units_rejected"], p["units_reused"], p["units_computed"]) == (1, 0, 1, 2)
    assert any("1 of the 1 stored units recomputed and compared before reuse, all equal" in ln for ln in lines), lines


# ------------------------------------------------------------------ skip-worktree, assume-unchanged

def _git(root: Path, *args: str) -> str:
    return subprocess.run([*GIT, "-C", str(root), *args], check=True, capture_output=True, text=True).stdout


@pytest.fixture()
def committed(toy, tmp_path, monkeypatch):
    """The toy's full result committed in a git repository at ``<tmp>/results``."""
    root = tmp_path / "results"
    root.mkdir(parents=True, exist_ok=True)
    _git(root, "init", "-q")
    files.forget()
    res = store.compute(ID, mode="full")
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "-m", "the result")
    assert store.load(ID, mode="full").fresh
    yield res
    files.forget()


@pytest.mark.parametrize("flag", ["--skip-worktree", "--assume-unchanged"])
def test_an_edit_hidden_from_git_status_is_treated_as_modified(committed, flag):
    """A forged number, digest and seal recomputed, and the files marked with ``git
    update-index {flag}``: ``git status`` shows nothing, yet the result is stale (modified
    since its commit), the reason naming the hidden files and how to unhide them."""
    res = committed
    body = dict(res.payload)
    body["total"] = body["total"] + 1.0
    prov = json.loads((res.path / "provenance.json").read_text())
    files.save(res.path, body, store.sealed({**prov, "digest": store.digest(body)}))
    root = res.path.parents[1]
    rel = res.path.relative_to(root)
    (Path(files.repo_of(root)[1]) / files.JOURNAL).unlink()  # not written by the store: forged
    _git(root, "update-index", flag, *(f"{rel}/{f}" for f in files.RESULT_FILES if (res.path / f).exists()))
    assert _git(root, "status", "--porcelain") == ""  # git itself sees nothing
    r = store.load(ID, mode="full")
    assert not r.fresh and r.stale_reason.startswith("modified since commit"), r.stale_reason
    assert "payload.json" in r.stale_reason and "git update-index --no-skip-worktree" in r.stale_reason
    assert files.state(res.path)[0] == "hidden"


def test_a_hidden_but_unedited_result_is_stale_too(committed):
    """The flag alone (nothing edited) also makes the result read as modified: the store cannot
    tell an edit git does not show from none, and says how to let git compare it again."""
    root = committed.path.parents[1]
    _git(root, "update-index", "--skip-worktree", f"{committed.path.relative_to(root)}/payload.json")
    r = store.load(ID, mode="full")
    assert not r.fresh and "skip-worktree" in r.stale_reason
    _git(root, "update-index", "--no-skip-worktree", f"{committed.path.relative_to(root)}/payload.json")
    assert store.load(ID, mode="full").fresh


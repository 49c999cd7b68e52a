"""Results a reseal cannot launder: two attacks against a
result committed in a temporary git repository, the comparison of a result's files with the
last commit that touched them, and ``results --verify``, which recomputes units of a stored
result and catches a forged number whose digest and seal were recomputed with the library.

The result is H-F-CURV's full mode (two units, seconds), computed into ``tmp_path``: its
paper prints 100 repeats and full mode runs 1000. The attacks edit the sizes the result records
(repeats 1000 -> 100, N 100 -> 60000), which a reader would take for the computation's: such a
result is never fresh, so no verdict is judged on it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from dpcompanion import cli
from dpcompanion.experiments import store
from dpcompanion.experiments import scale_tables as scale
from dpcompanion.experiments.store import files

EID = "h-f-curv"
GIT = ["git", "-c", "user.name=test", "-c", "user.email=test@example.invalid", "-c", "commit.gpgsign=false"]


def _git(root: Path, *args: str) -> str:
    return subprocess.run([*GIT, "-C", str(root), *args], check=True, capture_output=True, text=True).stdout


@pytest.fixture()
def committed(tmp_path, monkeypatch):
    """H-F-CURV's full result in ``<tmp>/results``, a git repository where it is committed (its
    quick result, computed for the fingerprint, removed: the verdicts judge the full one or none)."""
    root = tmp_path / "results"
    root.mkdir()
    _git(root, "init", "-q")
    monkeypatch.setenv("DPCOMPANION_RESULTS", str(root))
    files.forget()
    res = store.compute(EID, mode="full", device="cpu")
    shutil.rmtree(root / EID / "quick")
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "-m", "the result")
    assert store.load(EID, mode="full").fresh
    return res


def _prov(res) -> dict:
    return json.loads((res.path / "provenance.json").read_text())


def _write_prov(res, prov: dict) -> None:
    (res.path / "provenance.json").write_text(json.dumps(prov, indent=1, sort_keys=True) + "\n")


def _verdict_rows(capsys) -> list[dict]:
    capsys.readouterr()
    assert cli.main(["verdicts", "--page", EID, "--json"]) == 0
    return json.loads(capsys.readouterr().out)["rows"]


def test_the_result_judged_before_any_attack(committed, capsys):
    """The baseline of the attacks: the committed full result is fresh, judged, and at the
    paper's scale (its 1000 repeats exceed the paper's 100)."""
    rows = _verdict_rows(capsys)
    assert rows and all(r["result"]["mode"] == "full" and r["result"]["fresh"] for r in rows)
    assert all(r["at_paper_scale"] is True for r in rows)
    assert scale.size_mismatches(EID, committed.config, committed.payload) == []


def test_an_edited_config_without_its_seal_stays_stale(committed, capsys):
    """Attack 1: edit ``provenance.config`` (repeats 1000 -> 100, N 100 -> 60000) and delete the
    seal. Nothing seals a result but the store's own save, so the result stays stale, and
    ``verdicts`` does not judge it (no row shows the edited sizes)."""
    prov = _prov(committed)
    prov["config"] = {**prov["config"], "repeats": 100, "N": 60000}
    del prov[files.SEAL]
    _write_prov(committed, prov)
    capsys.readouterr()
    assert cli.main(["results", "--json"]) == 0
    (row,) = [r for r in json.loads(capsys.readouterr().out) if r["id"] == EID and r["mode"] == "full"]
    assert not row["fresh"] and "not sealed" in row["stale_reason"], row
    rows = _verdict_rows(capsys)
    assert all(r["result"]["mode"] is None and r["at_paper_scale"] is None for r in rows), rows


def test_an_edited_config_resealed_with_the_library_stays_stale(committed):
    """Attack 1 again, the seal and the config hash recomputed with the library:
    the payload's own record of its sizes disagrees with the recorded config, so the result is
    inconsistent (and its files differ from their commit)."""
    prov = _prov(committed)
    prov["config"] = {**prov["config"], "repeats": 100, "N": 60000}
    prov["config_hash"] = store.config_hash(prov["config"])
    _write_prov(committed, store.sealed(prov))
    r = store.load(EID, mode="full")
    assert not r.fresh and r.stale_reason.startswith("inconsistent: "), r.stale_reason
    assert "repeats: config 100, payload 1000" in r.stale_reason or "config N" in r.stale_reason
    assert r.modified.startswith("modified since commit")


def test_a_forged_payload_number_is_stale_and_caught_by_verify(committed, capsys):
    """Attack 2: one payload number forged, its digest recomputed with
    ``store.digest`` and the provenance resealed with ``store.sealed``. Every file check passes
    (``damaged`` is empty), yet the result's files differ from the commit that touched them, so
    it is stale (``modified since commit``) and ``verdicts`` does not judge it; and
    ``results --verify`` recomputes the units and reports the mismatch, exit 1."""
    raw = json.loads((committed.path / "payload.json").read_text())
    raw["units"][0]["exact"] = 0.5  # the forged number
    (committed.path / "payload.json").write_text(json.dumps(raw, indent=1, sort_keys=True) + "\n")
    forged = store.load(EID, mode="full")
    assert forged.damaged.endswith("does not match the digest recorded in provenance.json")
    body = dict(committed.payload)
    body["units"] = [dict(u) for u in body["units"]]
    body["units"][0]["exact"] = 0.5
    prov = _prov(committed)
    prov["digest"] = store.digest(body)  # the library call that hides the edit from the file checks
    _write_prov(committed, store.sealed(prov))
    r = store.load(EID, mode="full")
    assert not r.damaged and r.payload["units"][0]["exact"] == 0.5
    assert not r.fresh and r.stale_reason.startswith("modified since commit "), r.stale_reason
    rows = _verdict_rows(capsys)
    assert all(not r["result"]["fresh"] for r in rows)
    capsys.readouterr()
    assert cli.main(["results", "--verify", EID, "--mode", "full", "--units", "2"]) == 1
    out = capsys.readouterr().out
    assert "unit 0: MISMATCH" in out and "unit 1: ok" in out and out.rstrip().endswith(
        "MISMATCH: the stored numbers are not what this code computes"), out
    rep = store.verify(EID, mode="full", units=1, seed=0)
    assert rep["chosen"] == [1] and rep["ok"]  # the seeded choice is reported: unit 1 is not the forged one
    assert cli.main(["results", "--verify", EID, "--units", "1", "--seed", "3", "--json"]) in (0, 1)


def test_verify_passes_an_honest_result_and_refuses_bad_flags(committed, capsys):
    """``results --verify`` on the untouched result: every unit ok, the whole payload too;
    its flags refused with one line naming them, exit 2."""
    assert cli.main(["results", "--verify", EID, "--units", "5"]) == 0
    out = capsys.readouterr().out
    assert "whole payload: ok" in out and out.rstrip().endswith("full: ok")
    for argv, flag in [(["results", "--verify", "nope"], "--verify"), (["results", "--units", "2"], "--units"),
                       (["results", "--verify", EID, "--units", "0"], "--units"),
                       (["results", "--verify", EID, "--seed", "-1"], "--seed"),
                       (["results", "--verify", EID, "--mode", "quick"], "--verify"),
                       (["results", "--verify", EID, "--revalidate"], "--verify")]:
        assert cli.main(argv) == 2, argv
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith("dpcompanion results: error: ") and flag in err[0], (argv, err)


def test_a_result_the_store_rewrites_stays_fresh_until_committed(committed, capsys):
    """The honest path: a recomputation (or a revalidation) rewrites the
    files through the store, which journals them: the result differs from its commit but is
    fresh, and ``results`` says it is not committed yet; committing it clears the note."""
    store.compute(EID, mode="full", device="cpu")  # a recomputation: new created time, same numbers
    shutil.rmtree(Path(store.results_root()) / EID / "quick")
    r = store.load(EID, mode="full")
    assert r.fresh and r.modified.startswith("written by this store since commit "), r.modified
    capsys.readouterr()
    assert cli.main(["results"]) == 0
    assert "not committed yet" in capsys.readouterr().out
    _git(Path(store.results_root()), "commit", "-q", "-am", "recomputed")
    assert store.load(EID, mode="full").modified == ""


@pytest.mark.parametrize("damage,what", [
    (lambda f: (f.unlink(), os.mkfifo(f)), "not a regular file (a FIFO)"),
    (lambda f: f.write_text("[" * 200_000 + "]" * 200_000), "nested more than 64 deep"),
], ids=["fifo", "deep"])
def test_verdicts_name_a_fifo_or_a_deep_payload_and_go_on(committed, damage, what, capsys):
    """A FIFO as ``payload.json`` hung ``results`` and ``verdicts``; a JSON file
    nested 200,000 deep crashed both with RecursionError. Now the result is damaged, named in
    one line, and the report goes on (one 'not judged' row saying why)."""
    damage(committed.path / "payload.json")
    rows = _verdict_rows(capsys)
    assert len(rows) == 1 and rows[0]["verdict"] == "not judged", rows
    assert str(committed.path / "payload.json") in rows[0]["note"] and what in rows[0]["note"], rows[0]["note"]
    assert cli.main(["results"]) == 0
    out = capsys.readouterr().out
    assert f"DAMAGED ({committed.path / 'payload.json'}: {what})" in out, out

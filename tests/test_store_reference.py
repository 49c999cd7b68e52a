"""The reference check (dpcompanion.experiments.store.reference): revalidating a result whose
fingerprint was recorded on another kind of CPU, and the units of a sweep in progress stored by
older code, by computing on this machine the quick mode of the commit whose code made them.

Each test builds a small git repository holding a copy of this package: commit A is this code,
B adds an unused constant to a module of H-F-CURV's code (code changes, no number does; a comment
alone would change no code hash), C scales H-F-CURV's toy
data (numbers change). A result or unit "made by" B or C is this checkout's own computation
with its provenance saying so (code hash and commit of B or C, a fingerprint from another CPU):
what a result computed at B on another machine looks like here."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from dpcompanion.experiments import base, store
from dpcompanion.experiments.store import files, hashing, reference, unit_sweeps

EXP = "h-f-curv"
COMMENT_FILE = "dpcompanion/theory/schedules.py"
NUMBERS_FILE = "dpcompanion/experiments/h_f_curv.py"
NUMBERS_FROM = "    return (math.sqrt(curvature) * s)[:, None], y.astype(np.int64)"
NUMBERS_TO = "    return (1.5 * math.sqrt(curvature) * s)[:, None], y.astype(np.int64)"


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, text=True).stdout.strip()


def _commit(repo: Path, msg: str) -> str:
    _git(repo, "add", "-A")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", msg)
    return _git(repo, "rev-parse", "HEAD")


@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    """(repo, {"A": sha, "B": sha, "C": sha}): B is A with an unused constant added, C is B with
    H-F-CURV's data scaled; HEAD is C."""
    r = tmp_path_factory.mktemp("reference-repo")
    shutil.copytree(hashing.PKG, r / "dpcompanion", ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    _git(r, "init", "-q")
    shas = {"A": _commit(r, "this code")}
    f = r / COMMENT_FILE
    f.write_text(f.read_text() + "\n_UNUSED = 1  # code that changes no number\n")
    shas["B"] = _commit(r, "an unused constant")
    g = r / NUMBERS_FILE
    text = g.read_text()
    assert NUMBERS_FROM in text
    g.write_text(text.replace(NUMBERS_FROM, NUMBERS_TO))
    shas["C"] = _commit(r, "numbers change")
    return r, shas


@pytest.fixture()
def root(tmp_path, monkeypatch):
    monkeypatch.setenv("DPCOMPANION_RESULTS", str(tmp_path / "results"))
    return tmp_path / "results"


def test_code_hash_at_a_commit_is_the_checkout_hash_and_finds_its_commit(repo):
    r, shas = repo
    exp = base.get(EXP)
    here = store.code_hash(exp)
    assert reference.code_hash_at(exp, shas["A"], r) == here
    hb, hc = reference.code_hash_at(exp, shas["B"], r), reference.code_hash_at(exp, shas["C"], r)
    assert len({here, hb, hc}) == 3  # any change to the code's syntax tree changes the code hash
    # newest first: A's hash is only at A, B's only at B
    assert reference.find_commit(exp, here, repo=r) == shas["A"]
    assert reference.find_commit(exp, hb, repo=r) == shas["B"]
    assert reference.find_commit(exp, hb, hints=[shas["B"][:12]], repo=r) == shas["B"]
    with pytest.raises(reference.ReferenceUnavailable, match="no commit of .* holds the code that made it"):
        reference.find_commit(exp, "0" * 64, repo=r)


def _pretend_made_by(res: store.StoredResult, code_hash: str, commit: str) -> None:
    """Rewrite a stored full result's provenance as if commit ``commit`` (code ``code_hash``) on
    another CPU had made it (sealed, so only the code change makes it stale), before quick
    numbers were recorded (with them, a numeric comparison would come first)."""
    p = dict(res.provenance)
    p.pop("quick_numbers", None)
    p.update(code_hash=code_hash, commit=commit[:12], dirty=False, quick_cpu="Some Other CPU 9000",
             quick_digest="f" * 64, revalidated=[])
    files.replace_provenance(res.path, store.sealed(p), expect=res.provenance)


def test_a_result_from_another_cpu_revalidates_by_its_commit_when_no_number_changes(repo, root):
    r, shas = repo
    exp = base.get(EXP)
    full = store.compute(EXP, mode="full")
    _pretend_made_by(full, reference.code_hash_at(exp, shas["B"], r), shas["B"])
    stale = store.load(EXP, mode="full")
    assert not stale.fresh and stale.stale_reason.startswith("code changed")
    out = store.revalidate(EXP, mode="full", repo=r)
    assert out["status"] == "revalidated", out
    assert f"equal to commit {shas['B'][:12]}'s here" in out["detail"]
    now = store.load(EXP, mode="full")
    assert now.fresh and now.digest == full.digest
    (event,) = now.provenance["revalidated"]
    here_quick = store.quick_payload_here(exp)[1]
    assert event["method"] == "reference" and event["reference_commit"] == shas["B"]
    assert event["quick_digest"] == here_quick and event["to_code_hash"] == store.code_hash(exp)
    # the equal digest records the quick numbers, this CPU's, for a numeric revalidation later
    assert now.provenance["quick_numbers"]["digest"] == here_quick
    assert store.revalidate(EXP, mode="full", repo=r)["status"] == "fresh"


def test_a_result_whose_code_changes_numbers_stays_stale_with_both_digests(repo, root):
    r, shas = repo
    exp = base.get(EXP)
    full = store.compute(EXP, mode="full")
    _pretend_made_by(full, reference.code_hash_at(exp, shas["C"], r), shas["C"])
    out = store.revalidate(EXP, mode="full", repo=r)
    assert out["status"] == "stale", out
    assert "recorded on another CPU (Some Other CPU 9000" in out["detail"]
    assert f"the recorded code (commit {shas['C'][:12]}) gives quick digest" in out["detail"]
    assert out["detail"].endswith("recompute the full result")
    assert not store.load(EXP, mode="full").fresh


def test_a_result_whose_code_is_in_no_commit_stays_stale_and_says_so(repo, root):
    r, _ = repo
    full = store.compute(EXP, mode="full")
    _pretend_made_by(full, "e" * 64, "0" * 12)
    out = store.revalidate(EXP, mode="full", repo=r)
    assert out["status"] == "stale" and "no commit of" in out["detail"], out


def test_units_of_older_code_are_revalidated_and_reused_only_when_no_number_changes(repo, root):
    r, shas = repo
    exp = base.get(EXP)
    config = base.config_for(exp, "full", seed=0)
    units = exp.units(config)
    folder = unit_sweeps.units_dir(EXP, "full")
    hb, hc = (reference.code_hash_at(exp, shas[k], r) for k in "BC")
    # the first unit stored by code B, the second by code C: a sweep killed after two units
    for u, h in zip(units[:2], (hb, hc)):
        result = exp.run_unit(u, "cpu")
        unit_sweeps.save_unit(folder, unit_sweeps.unit_key(EXP, "full", u, 0, "cpu"), u, result, {"runs": 1}, code=h, seed=0)
    assert unit_sweeps.sweep_progress(EXP, "full")["units_old_code"] == 2
    out = store.revalidate(EXP, mode="full", repo=r)
    assert out["status"] == "stale" and out["detail"].startswith("1 full units revalidated"), out
    assert f"1 of code {hc[:12]}" in out["detail"]
    prog = unit_sweeps.sweep_progress(EXP, "full")
    assert (prog["units_done"], prog["units_old_code"]) == (1, 1)
    rec = json.loads((folder / f"{unit_sweeps.unit_key(EXP, 'full', units[0], 0, 'cpu')}.json").read_text())
    assert rec["code_hash"] == store.code_hash(exp) and rec["revalidated"][0]["reference_commit"] == shas["B"]
    res = store.compute(EXP, mode="full")
    assert (res.provenance["units_reused"], res.provenance["units_computed"]) == (1, len(units) - 1)

"""The results changelog (dpcompanion.book.changelog): built from git history in a small
repository made here; a version with the same numbers is not a change; no git and a shallow
clone are said, not guessed."""

from __future__ import annotations

import io
import json
import shutil
import subprocess

import numpy as np
import pytest

from dpcompanion.book import changelog

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


def _git(root, *args):
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=root, check=True,
                   capture_output=True)


def _commit(root, rid, payload, arrays, digest, msg):
    folder = root / "results" / rid / "full"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "payload.json").write_text(json.dumps(payload))
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    (folder / "arrays.npz").write_bytes(buf.getvalue())
    (folder / "provenance.json").write_text(json.dumps({"digest": digest}))
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "-m", msg)


@pytest.fixture
def repo(tmp_path):
    root = tmp_path / "repo"
    root.mkdir()
    _git(root, "init", "-q")
    _commit(root, "a", {"x": 1.0, "wall_time": 5.0}, {"q": np.array([1.0, 2.0])}, "d1", "first a")
    _commit(root, "b", {"y": [3, 4]}, {}, "e1", "first b")
    _commit(root, "a", {"x": 1.5, "wall_time": 9.0}, {"q": np.array([1.0, 2.2])}, "d2", "a changed")
    _commit(root, "a", {"x": 1.5, "wall_time": 7.0}, {"q": np.array([1.0, 2.2])}, "d2", "a revalidated")
    return root


def test_last_change_and_how_much(repo):
    h = changelog.history(repo)
    assert h["status"] is None
    by = {e["id"]: e for e in h["results"]}
    c = by["a"]["last_change"]
    # the revalidation (same numbers, only the run time differs) is not the change
    assert c["subject"] == "a changed" and by["a"]["versions"] == 3
    assert c["changed"] == 2 and c["added"] == 0 and c["removed"] == 0
    assert c["max_abs"] == pytest.approx(0.5) and c["max_rel"] == pytest.approx(0.5)
    assert c["largest_change_at"] == "x" and c["previous_digest"] == "d1" and c["digest"] == "d2"
    assert by["b"]["last_change"] is None and by["b"]["first"]["subject"] == "first b"
    md = changelog.changelog_markdown(h)
    assert "2 of 3 numbers changed" in md and "unchanged since it was committed" in md


def test_no_git_and_shallow_clone_are_said(tmp_path, repo):
    plain = tmp_path / "plain"
    plain.mkdir()
    h = changelog.history(plain)
    assert h["results"] == [] and "not a git checkout" in h["status"]
    assert "No changelog in this build" in changelog.changelog_markdown(h)
    shallow = tmp_path / "shallow"
    subprocess.run(["git", "clone", "-q", "--depth", "1", f"file://{repo}", str(shallow)], check=True, capture_output=True)
    h = changelog.history(shallow)
    assert "shallow clone" in h["status"] and h["results"] == []


def test_verdict_changes_match_rows_by_page_and_item():
    """The verdict changes against a baseline: rows matched by page and item,
    transitions counted, new and removed rows listed, the changed row's reason shown."""
    before = [{"page": "p", "item": "a", "verdict": "inconclusive"}, {"page": "p", "item": "b", "verdict": "agrees"},
              {"page": "q", "item": "gone", "verdict": "partly"}]
    after = [{"page": "p", "item": "a", "verdict": "agrees", "note": "CI above zero. Tolerance: x", "sentence": "A is ahead."},
             {"page": "p", "item": "b", "verdict": "agrees", "note": ""},
             {"page": "q", "item": "new", "verdict": "equivalent", "note": ""}]
    c = changelog.verdict_changes(before, after)
    assert c["transitions"] == {"inconclusive -> agrees": 1}
    assert [r["item"] for r in c["new"]] == ["new"] and [r["item"] for r in c["gone"]] == ["gone"]
    assert c["changed"][0]["why"] == "CI above zero"
    md = changelog.verdict_changes_markdown(c, baseline="commit `x`")
    assert "| p | a | inconclusive → agrees | A is ahead. |" in md and ":::{admonition} Rows added since then (1)" in md
    assert "before agrees 1, inconclusive 1, partly 1 (3 rows)" in md


def test_the_committed_verdict_baseline_is_readable():
    """The baseline the changelog page compares with is committed and names its commit."""
    base = changelog.verdict_baseline()
    assert base is not None and base["commit"] and len(base["rows"]) == base["n_rows"] > 100
    assert {"page", "item", "verdict"} <= set(base["rows"][0])

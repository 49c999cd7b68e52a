"""Margins dated from git and symmetric: each declared margin's declaration is found in the
sources, its first commit read from git (``reproduction.margin_dated``), compared with the judged result's
creation; a clone without history says "margin date unknown"; every margin is one magnitude on
both sides of zero."""

from __future__ import annotations

import math
import subprocess

import pytest

from dpcompanion.experiments import comparisons
from dpcompanion.experiments.comparisons import reproduction
from dpcompanion.experiments.comparisons.rule import Margin, tost

MARGINS = {rid: r.margin for rid, r in comparisons.all_rules().items()
           if r.margin is not None and r.margin.value is not None}


def test_every_margin_with_a_value_has_a_declaration_in_the_sources():
    assert MARGINS
    for rid, m in MARGINS.items():
        found = reproduction.declaration(m)
        assert found is not None, rid
        path, line, literal = found
        text = (reproduction.REPO / path).read_text(encoding="utf-8").splitlines()[line - 1]
        assert literal in text and literal.startswith("Margin(") and repr(m.units)[1:-1] in literal, rid


def test_margins_are_symmetric():
    """One magnitude, both sides: TOST of +e and of -e against the same margin agree."""
    for rid, m in MARGINS.items():
        assert isinstance(m.value, float) and math.isfinite(m.value) and m.value > 0, rid
        for e in (0.2 * m.value, 0.9 * m.value, 1.5 * m.value):
            a, b = tost(e, m.value / 4, margin=m.value), tost(-e, m.value / 4, margin=m.value)
            assert a.equivalent == b.equivalent and a.p == pytest.approx(b.p), rid


def _history() -> bool:
    out = subprocess.run(["git", "-C", str(reproduction.REPO), "rev-parse", "--is-shallow-repository"],
                         capture_output=True, text=True)
    return out.returncode == 0 and out.stdout.strip() == "false"


@pytest.mark.skipif(not _history(), reason="a clone without history cannot date a margin")
def test_dates_read_from_git_against_the_results_creation():
    m = next(iter(MARGINS.values()))
    _, _, literal = reproduction.declaration(m)
    log = subprocess.run(["git", "-C", str(reproduction.REPO), "log", "--format=%cI", "-S", literal],
                         capture_output=True, text=True, check=True).stdout.split()
    first = min(log, key=lambda d: d) if log else ""  # the oldest, found here without --reverse
    assert reproduction.first_committed(literal) == first
    if first:
        assert reproduction.margin_dated(m, "2000-01-01T00:00:00+00:00")["status"] == reproduction.MARGIN_AFTER
        assert reproduction.margin_dated(m, "2999-01-01T00:00:00+00:00")["status"] == reproduction.MARGIN_BEFORE
    assert reproduction.first_committed("Margin(never committed, \"x\"") == ""  # no commit holds it
    new = Margin(0.5, "a unit declared nowhere", "none", "x" * 41)
    assert reproduction.margin_dated(new, "2000-01-01T00:00:00+00:00")["status"] == reproduction.MARGIN_UNKNOWN


def test_a_clone_without_history_says_unknown(monkeypatch):
    m = next(iter(MARGINS.values()))
    monkeypatch.setattr(reproduction, "shallow", lambda: True)
    reproduction.first_committed.cache_clear()
    try:
        assert reproduction.margin_dated(m, "2000-01-01T00:00:00+00:00")["status"] == reproduction.MARGIN_UNKNOWN
    finally:
        reproduction.first_committed.cache_clear()



@pytest.mark.skipif(not _history(), reason="a clone without history cannot date a result")
def test_a_recomputed_result_is_dated_by_its_first_commit():
    """A result recomputed after its margin was declared was still seen first at the first commit of
    a result of its experiment (any mode): the margin reads as chosen after the results, however new
    the recomputation, and whichever mode it judges."""
    folder = reproduction.REPO / "results" / "w-t1245" / "full"
    log = subprocess.run(["git", "-C", str(reproduction.REPO), "log", "--format=%cI", "--", "results/w-t1245/"],
                         capture_output=True, text=True, check=True).stdout.split()
    seen = reproduction.first_result_commit(str(folder))
    assert log and seen == log[-1]  # git log lists newest first
    later = [m for m in MARGINS.values()
             if (reproduction.first_committed(reproduction.declaration(m)[2]) or "9999") > seen]
    assert later, "no margin was committed after w-t1245's first full result"
    m = later[0]
    assert reproduction.margin_dated(m, "2999-01-01T00:00:00+00:00")["status"] == reproduction.MARGIN_BEFORE
    dated = reproduction.margin_dated(m, "2999-01-01T00:00:00+00:00", str(folder))
    assert dated["status"] == reproduction.MARGIN_AFTER and dated["created"] == seen
    assert reproduction.first_result_commit(str(reproduction.REPO / "results" / "no-such" / "full")) is None

"""The ``checks`` command: JSON shape, table output, exit statuses. How long the full runs
take is reported (``record_property``), not asserted: a test's outcome must not depend on the
machine's speed or load."""

import json
import resource
import subprocess
import sys
import time

import pytest

from dpcompanion import cli
from dpcompanion.claims import registry
from limits import HANG_GUARD_S


def _child_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def _run_timed(args, record_property):
    """Run ``python -m dpcompanion ARGS``; its wall and CPU seconds are recorded as the
    test's properties (shown in JUnit reports), never compared with a budget."""
    c0, t0 = _child_cpu(), time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "dpcompanion", *args], capture_output=True, text=True,
                          timeout=HANG_GUARD_S)
    record_property("wall_s", time.perf_counter() - t0)
    record_property("cpu_s", _child_cpu() - c0)
    return proc


@pytest.mark.slow
def test_checks_json_full_run(record_property):
    proc = _run_timed(["checks", "--json"], record_property)
    assert proc.returncode == 0, proc.stderr[-2000:]
    data = json.loads(proc.stdout)
    assert isinstance(data, list) and len(data) > 50
    for r in data:
        assert {"id", "status", "method", "evidence"} <= set(r)
        assert r["status"] in registry.STATUSES


def test_checks_table_with_prefix(capsys):
    assert cli.main(["checks", "--id", "H-E26"]) == 0
    out = capsys.readouterr().out
    assert "H-E26.printed" in out and "refuted" in out and "proved" in out  # H-E26.corrected: symbolic T
    assert "2 claims in" in out


def test_checks_json_with_prefix(capsys):
    assert cli.main(["checks", "--id", "H-T4.4.Eq27", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [r["id"] for r in data] == ["H-T4.4.Eq27"] and data[0]["status"] == "proved"


def test_unknown_prefix_exits_2_with_one_line(capsys):
    assert cli.main(["checks", "--id", "NO-SUCH"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "NO-SUCH" in err


def test_errored_check_exits_1(capsys):
    registry.load_all()

    @registry.claim("ZZ-TEST.boom", source="test", statement="raises", method="numeric")
    def _boom():
        raise RuntimeError("boom")

    try:
        assert cli.main(["checks", "--id", "ZZ-TEST"]) == 1
        assert "error" in capsys.readouterr().out
    finally:
        registry.REGISTRY.pop("ZZ-TEST.boom")


def test_checks_mutants_json_reports_caught(capsys):
    assert cli.main(["checks", "--id", "H-T4.4.Eq", "--mutants", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert {r["id"] for r in data} == {"H-T4.4.Eq11", "H-T4.4.Eq11-real", "H-T4.4.Eq27"}
    for r in data:
        assert r["mutant_caught"] is True and r["mutant"] and r["method"]


def test_checks_mutants_missed_exits_1(capsys):
    registry.load_all()

    @registry.claim("ZZ-TEST.vacuous", source="test", statement="0 <= 1", method="numeric", mutant="nothing changes")
    def _vacuous(*, mutant=False):
        return registry.verified_by_margins([1.0], domain="one point")

    try:
        assert cli.main(["checks", "--id", "ZZ-TEST", "--mutants"]) == 1
        assert "MISSED" in capsys.readouterr().out
    finally:
        registry.REGISTRY.pop("ZZ-TEST.vacuous")


@pytest.mark.slow
def test_checks_mutants_json_all_caught(record_property):
    proc = _run_timed(["checks", "--mutants", "--json"], record_property)
    data = json.loads(proc.stdout)
    passes = [r for r in data if r["status"] in ("proved", "checked", "verified")]
    missed = [r["id"] for r in passes if r.get("mutant_caught") is not True]
    assert not missed, missed
    assert all(r["method"] for r in data)

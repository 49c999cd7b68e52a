"""The ``experiment`` and ``results`` commands (and the store options of ``reproduce``):
JSON fields, cached second call, and every bad input as one line, exit 2, with
nothing written."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from dpcompanion import cli
from dpcompanion.experiments import base, h_f_infl, store

TINY = {
    "quick": {**h_f_infl.CONFIGS["quick"], "n": 100, "T": 2, "levels": [20.0, 200.0], "repeats": 2,
              "repeats_per_unit": 2, "fit_steps": [1, 2]},
    "full": {**h_f_infl.CONFIGS["quick"], "n": 100, "T": 3, "levels": [20.0, 200.0], "repeats": 2,
             "repeats_per_unit": 2, "fit_steps": [1, 2, 3]},
}


@pytest.fixture()
def root(tmp_path, monkeypatch):
    exp = dataclasses.replace(h_f_infl.EXPERIMENT, id="test-cli-infl", rules=(), configs=TINY)
    base.register(exp)
    r = tmp_path / "results"
    monkeypatch.setenv("DPCOMPANION_RESULTS", str(r))
    yield r
    base.unregister(exp.id)


def _files(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*")) if root.exists() else []


@pytest.mark.slow
def test_experiment_json_then_cached(root, capsys):
    assert cli.main(["experiment", "test-cli-infl", "--json"]) == 0
    first = json.loads(capsys.readouterr().out)
    for key in ("id", "mode", "path", "cached", "fresh", "wall_s", "executor", "runs", "digest"):
        assert key in first, key
    assert first["id"] == "test-cli-infl" and first["mode"] == "quick" and first["fresh"] and not first["cached"]
    assert first["executor"] == "local" and first["runs"] == 2 * 2 * 2 * 2 and len(first["digest"]) == 64
    assert Path(first["path"]) == root / "test-cli-infl" / "quick"
    assert cli.main(["experiment", "test-cli-infl", "--json"]) == 0
    second = json.loads(capsys.readouterr().out)
    assert second["cached"] and second["digest"] == first["digest"] and second["wall_s"] == first["wall_s"]
    assert cli.main(["experiment", "test-cli-infl", "--json", "--recompute"]) == 0
    third = json.loads(capsys.readouterr().out)
    assert not third["cached"] and third["digest"] == first["digest"]


def test_results_lists_stored_results(root, capsys):
    assert cli.main(["experiment", "test-cli-infl", "--mode", "full", "--json"]) == 0
    capsys.readouterr()
    assert cli.main(["results", "--json"]) == 0
    rows = {(r["id"], r["mode"]): r for r in json.loads(capsys.readouterr().out)}
    assert set(rows) == {("test-cli-infl", "quick"), ("test-cli-infl", "full")}  # full computed quick too
    for r in rows.values():
        assert r["fresh"] and r["device"] == "cpu"
        for key in ("commit", "created", "wall_s"):
            assert r[key] not in (None, ""), key
    assert cli.main(["results", "--revalidate", "--json"]) == 0
    assert all(r["fresh"] for r in json.loads(capsys.readouterr().out))
    assert cli.main(["experiment", "test-cli-infl", "--mode", "full", "--revalidate", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["revalidation"]["status"] == "fresh"


@pytest.mark.parametrize("args, needle", [
    (["experiment", "no-such-experiment"], "unknown experiment 'no-such-experiment'; known:"),
    (["experiment", "test-cli-infl", "--executor", "slurm"], "--executor must be one of local, dask, got 'slurm'"),
    (["experiment", "test-cli-infl", "--executor", "dask", "--workers", "0"], "--workers must be an integer >= 1, got '0'"),
    (["experiment", "test-cli-infl", "--workers", "2"], "--workers and --scheduler need --executor dask"),
    (["experiment", "test-cli-infl", "--mode", "huge"], "mode must be one of quick, full, paper, got 'huge'"),
    (["experiment", "test-cli-infl", "--seed", "-1"], "--seed must be an integer in [0, 4,294,967,295], got '-1'"),
    (["experiment", "test-cli-infl", "--revalidate"], "--revalidate applies to --mode full"),
    (["experiment", "test-cli-infl", "--executor", "dask", "--scheduler", "tcp://127.0.0.1:1"],
     "--scheduler tcp://127.0.0.1:1: cannot connect within"),
    (["reproduce", "--only", "h-f-infl", "--executor", "mpi"], "--executor must be one of local, dask, got 'mpi'"),
    (["reproduce", "--only", "h-f-infl", "--executor", "dask", "--workers", "0"], "--workers must be an integer >= 1"),
])
def test_bad_input_is_one_line_exit_2_and_writes_nothing(args, needle, root, capsys):
    assert cli.main(args) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and needle in err, err
    assert _files(root) == []


def test_revalidate_without_a_full_result(root, capsys):
    assert cli.main(["experiment", "test-cli-infl", "--mode", "full", "--revalidate"]) == 0
    assert "no full result stored" in capsys.readouterr().out
    assert _files(root) == []


def test_unwritable_results_folder(root, tmp_path, monkeypatch, capsys):
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    monkeypatch.setenv("DPCOMPANION_RESULTS", str(blocker / "results"))
    assert cli.main(["experiment", "test-cli-infl"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "goes through a file, not a folder" in err
    assert blocker.read_text() == "x" and _files(root) == []


def test_quick_results_are_not_committed():
    ignore = (Path(__file__).resolve().parents[1] / ".gitignore").read_text().split()
    assert "results/*/quick/" in ignore


def test_scheduler_connection_with_its_deadline_works_with_a_real_scheduler():
    """The connection runs in a thread with a hard deadline; a real scheduler on
    127.0.0.1 (port 0) is still used as before, and Dask's logging is left as it was."""
    import logging

    from distributed import LocalCluster

    from dpcompanion.experiments import store

    levels = {n: logging.getLogger(n).level for n in ("distributed", "distributed.comm", "distributed.client")}
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False, protocol="tcp://", host="127.0.0.1",
                      scheduler_port=0, dashboard_address=None, silence_logs=logging.ERROR) as cluster:
        ex = store.make_executor("dask", scheduler=cluster.scheduler_address)
        try:
            assert ex.describe() == f"dask {cluster.scheduler_address}"
            out = ex.map(_double, [{"i": 1}, {"i": 2}], "cpu")
        finally:
            ex.close()
    assert [r for r, _ in out] == [{"x": 2}, {"x": 4}]
    assert {n: logging.getLogger(n).level for n in levels} == levels


def _double(unit, device):
    return {"x": 2 * unit["i"]}

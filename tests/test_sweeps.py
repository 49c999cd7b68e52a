"""Resumable sweeps: every unit is stored as it finishes, and a rerun of
a killed or interrupted sweep recomputes no finished unit and gives the same digest."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from dpcompanion import cli
from dpcompanion.book import show
from dpcompanion.experiments import base, store
from dpcompanion.experiments.store import result_store

sys.path.insert(0, str(Path(__file__).parent))
import gated_sweep  # noqa: E402

SCRIPT = Path(__file__).parent / "gated_sweep.py"
#: seconds to wait for a subprocess to store its units: a hang guard, not a timing threshold
HANG_GUARD_S = 240


@pytest.fixture()
def gated(tmp_path, monkeypatch):
    exp = gated_sweep.register()
    monkeypatch.setenv("DPCOMPANION_RESULTS", str(tmp_path / "default-results"))
    yield exp
    base.unregister(exp.id)


def _cli_json(argv, capsys):
    assert cli.main(argv) == 0
    return json.loads(capsys.readouterr().out)


def _straight_digest(tmp_path, mode="quick"):
    return store.compute("test-gated", mode=mode, root=tmp_path / "straight").digest


def test_killed_sweep_resumes_reusing_the_finished_units(gated, tmp_path, capsys):
    """The acceptance test: a real ``experiment`` process is SIGKILLed after three of six
    units are stored (units from the fourth on wait on a gate file, so where it stops does not
    depend on the machine's speed); the rerun reuses them and gives a straight run's digest."""
    straight = _straight_digest(tmp_path)
    root = tmp_path / "results"
    gate = tmp_path / "gate"
    env = {**os.environ, "DPC_TEST_GATE": str(gate), "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    argv = [sys.executable, str(SCRIPT), "experiment", "test-gated", "--mode", "quick", "--results-dir", str(root)]
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    units = root / "test-gated" / "quick.units"
    t0 = time.monotonic()
    try:
        while len(list(units.glob("*.json"))) < gated_sweep.GATE_AT:
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() - t0 < HANG_GUARD_S, "the sweep never stored its first units"
            time.sleep(0.05)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    assert len(list(units.glob("*.json"))) == gated_sweep.GATE_AT
    assert not list(units.glob(".*tmp-*"))  # atomic writes: no half unit left
    assert not (root / "test-gated" / "quick").exists()  # no result: the sweep is partial

    rows = _cli_json(["results", "--results-dir", str(root), "--json"], capsys)
    part = [r for r in rows if r["id"] == "test-gated"]
    assert len(part) == 1 and part[0]["complete"] is False
    assert part[0]["fresh"] is True  # its 3 units are this code's: fresh, but never shown as a result
    assert (part[0]["units_done"], part[0]["units_total"]) == (3, 6)
    assert part[0]["estimate_left_s"] is not None
    assert cli.main(["results", "--results-dir", str(root)]) == 0
    assert "PARTIAL 3/6 units" in capsys.readouterr().out

    gate.write_text("open")
    out = subprocess.run(argv + ["--json"], env=env, capture_output=True, text=True, timeout=HANG_GUARD_S)
    assert out.returncode == 0, out.stderr
    rec = json.loads(out.stdout)
    assert rec["units_reused"] == 3 and rec["units_computed"] == 3
    assert rec["units_computed"] + rec["units_reused"] == rec["units_total"] == 6
    assert "resuming, 3/6 units stored" in out.stderr
    assert rec["digest"] == straight
    assert not units.exists()  # a complete result's units are removed once it is saved


def test_interrupted_local_sweep_resumes_with_the_same_digest(gated, tmp_path, monkeypatch):
    straight = _straight_digest(tmp_path)
    monkeypatch.setenv("DPC_TEST_GATE", str(tmp_path / "gate"))
    monkeypatch.setenv("DPC_TEST_GATE_RAISE", "1")
    with pytest.raises(RuntimeError, match="gate closed"):
        store.compute("test-gated", mode="quick")
    assert store.load("test-gated", mode="quick") is None
    prog = store.sweep_progress("test-gated", "quick")
    assert (prog["units_done"], prog["units_total"], prog["units_old_code"]) == (3, 6, 0)
    monkeypatch.delenv("DPC_TEST_GATE")
    lines = []
    res = store.compute("test-gated", mode="quick", progress=lines.append)
    assert res.record()["units_reused"] == 3 and res.record()["units_computed"] == 3
    assert res.digest == straight
    assert store.sweep_progress("test-gated", "quick") is None


def test_units_of_older_code_are_recomputed_and_said_so(gated, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("DPC_TEST_GATE", str(tmp_path / "gate"))
    monkeypatch.setenv("DPC_TEST_GATE_RAISE", "1")
    with pytest.raises(RuntimeError):
        store.compute("test-gated", mode="quick")
    folder = store.units_dir("test-gated", "quick")
    f = sorted(folder.glob("*.json"))[0]
    rec = json.loads(f.read_text())
    f.write_text(json.dumps({**rec, "code_hash": "0" * 64}))
    assert store.sweep_progress("test-gated", "quick")["units_old_code"] == 1
    rows = _cli_json(["results", "--json"], capsys)
    assert [r["fresh"] for r in rows if r["id"] == "test-gated" and not r["complete"]] == [False]  # stale unit
    monkeypatch.delenv("DPC_TEST_GATE")
    lines = []
    res = store.compute("test-gated", mode="quick", progress=lines.append)
    assert (res.record()["units_reused"], res.record()["units_computed"]) == (2, 4)
    assert any("1 stored by older code are recomputed" in line for line in lines), lines


def test_a_damaged_unit_file_is_recomputed(gated, tmp_path, monkeypatch):
    straight = _straight_digest(tmp_path)
    monkeypatch.setenv("DPC_TEST_GATE", str(tmp_path / "gate"))
    monkeypatch.setenv("DPC_TEST_GATE_RAISE", "1")
    with pytest.raises(RuntimeError):
        store.compute("test-gated", mode="quick")
    folder = store.units_dir("test-gated", "quick")
    sorted(folder.glob("*.npz"))[0].write_bytes(b"not a zip")
    f = sorted(folder.glob("*.json"))[1]
    rec = json.loads(f.read_text())
    f.write_text(json.dumps({**rec, "digest": "f" * 64}))
    monkeypatch.delenv("DPC_TEST_GATE")
    res = store.compute("test-gated", mode="quick")
    assert res.record()["units_reused"] <= 1 and res.digest == straight


def test_unit_files_round_trip_exactly(tmp_path):
    import numpy as np

    result = {"a": np.arange(100, dtype=np.float32), "s": np.float32(0.1), "i": np.int64(3), "t": (1, 2.5),
              "small": np.ones((2, 3)), "nested": [{"x": 1.0, "y": "z"}], "nan": float("nan")}
    store.save_unit(tmp_path, "k", {"u": 1}, result, {"runs": 1, "run_steps": 2, "wall_s": 0.5}, code="c", seed=0)
    back = result_store.load_unit(tmp_path, "k")["result"]
    assert store.digest(back) == store.digest(result)
    assert type(back["s"]) is np.float32 and type(back["i"]) is np.int64 and back["t"] == (1, 2.5)
    assert back["a"].dtype == np.float32


def test_full_absent_note_says_how_far_a_partial_full_sweep_got(gated, tmp_path, monkeypatch):
    store.compute("test-gated", mode="quick")  # the full run's fingerprint, before the gate closes
    monkeypatch.setenv("DPC_TEST_GATE", str(tmp_path / "gate"))
    monkeypatch.setenv("DPC_TEST_GATE_RAISE", "1")
    with pytest.raises(RuntimeError):
        store.compute("test-gated", mode="full")
    assert store.fresh_full("test-gated") is None  # a partial result is never shown
    note = show.full_absent_note("test-gated")
    assert "3/6 units stored" in note and "not shown until it is complete" in note


def test_results_dir_flag_overrides_the_environment(gated, tmp_path, capsys):
    root = tmp_path / "elsewhere"
    rec = _cli_json(["experiment", "test-gated", "--results-dir", str(root), "--json"], capsys)
    assert rec["path"] == str(root / "test-gated" / "quick")
    assert not (tmp_path / "default-results").exists()
    rows = _cli_json(["results", "--results-dir", str(root), "--json"], capsys)
    assert [(r["id"], r["mode"], r["complete"]) for r in rows] == [("test-gated", "quick", True)]
    again = _cli_json(["experiment", "test-gated", "--results-dir", str(root), "--json"], capsys)
    assert again["cached"] and again["units_reused"] == again["units_total"] == 6 and again["units_computed"] == 0


@pytest.mark.slow
def test_interrupted_sweep_resumes_on_a_two_worker_dask_cluster(gated, tmp_path, monkeypatch):
    """Units 4 to 6 fail on the workers (their gate is closed; the workers inherit the
    environment): the three that succeed are stored all the same, and a second Dask run
    computes only the others and gives a straight local run's digest."""
    straight = _straight_digest(tmp_path)
    monkeypatch.setenv("DPC_TEST_GATE", str(tmp_path / "gate"))
    monkeypatch.setenv("DPC_TEST_GATE_RAISE", "1")
    ex = store.make_executor("dask", workers=2)
    try:
        with pytest.raises(RuntimeError, match="gate closed"):
            store.compute("test-gated", mode="quick", executor=ex)
    finally:
        ex.close()
    assert store.sweep_progress("test-gated", "quick")["units_done"] == 3
    monkeypatch.delenv("DPC_TEST_GATE")
    ex = store.make_executor("dask", workers=2)
    try:
        res = store.compute("test-gated", mode="quick", executor=ex)
    finally:
        ex.close()
    assert res.record()["units_reused"] == 3 and res.record()["units_computed"] == 3
    assert res.digest == straight


def test_progress_counts_only_the_units_of_the_sweep(gated, tmp_path, monkeypatch):
    """Units of another seed or of older code are not counted as done (nor reused)."""
    monkeypatch.setenv("DPC_TEST_GATE", str(tmp_path / "gate"))
    monkeypatch.setenv("DPC_TEST_GATE_RAISE", "1")
    with pytest.raises(RuntimeError):
        store.compute("test-gated", mode="quick", seed=5)
    with pytest.raises(RuntimeError):
        store.compute("test-gated", mode="quick", seed=0)
    prog = store.sweep_progress("test-gated", "quick")
    assert (prog["seed"], prog["units_done"], prog["units_total"], prog["units_old_code"]) == (0, 3, 6, 3)
    monkeypatch.delenv("DPC_TEST_GATE")
    res = store.compute("test-gated", mode="quick", seed=0)
    assert (res.record()["units_reused"], res.record()["units_computed"]) == (3, 3)


def test_no_time_estimate_from_units_of_unequal_size():
    """A sweep whose finished units took very different times (one unit per N, say) gives no
    time estimate rather than one from their mean; units alike give the mean times the units
    left. With declared sizes, each unit left is charged the mean of its own size, and a size
    with no finished unit yet gives no estimate."""
    from dpcompanion.experiments.store.result_store import estimate_left

    assert estimate_left({"": [100.0, 110.0, 90.0]}, {"": 2}) == (200.0, "")
    est, why = estimate_left({"": [60.0, 900.0]}, {"": 3})
    assert est is None and "differ in size" in why
    assert estimate_left({"": [0.01, 0.05]}, {"": 4})[0] == round(0.03 * 4, 1)  # sub-second noise is not a size difference
    assert estimate_left({}, {"": 4}) == (None, "time left not yet estimated (no unit of the current code has finished)")
    # sizes: the small units' times say nothing about the large ones left
    assert estimate_left({"N=250": [110.0], "N=500": [161.0]}, {"N=1000": 1})[0] is None
    assert "N=1000" in estimate_left({"N=250": [110.0]}, {"N=1000": 1, "N=250": 0})[1]
    # each size at its own mean, whatever the other sizes took
    assert estimate_left({"a": [20.0, 25.0], "b": [1000.0]}, {"a": 2, "b": 3}) == (2 * 22.5 + 3 * 1000.0, "")


def test_time_left_of_the_paper_sweeps_is_per_unit_size():
    """The experiments whose units differ in size declare it (H-F-EFF per N and split schedule,
    W-LADDER per rung and epochs, H-F-MOM per T): each unit of the largest mode gets a label,
    several labels in all; W-F4's cells are alike and declare none."""
    from dpcompanion.experiments import base

    for eid in ("h-f-eff", "h-f-eff-exact", "w-ladder", "h-f-mom"):
        exp = base.get(eid)
        assert exp.unit_size is not None, eid
        labels = {exp.unit_size(u) for u in exp.units(base.config_for(exp, base.modes_of(exp)[-1]))}
        assert len(labels) > 1, (eid, labels)
    exp = base.get("h-f-eff")
    assert sorted({exp.unit_size(u) for u in exp.units(base.config_for(exp, "paper"))}) == [
        "N=1000", "N=2000", "N=250", "N=4000 exp", "N=4000 uni", "N=500"]
    assert base.get("w-f4").unit_size is None

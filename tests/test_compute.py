"""Tests of dpcompanion.experiments.compute (the compute table: every experiment, its times read
from its stored provenance) and dpcompanion.experiments.paper_scale (the paper-scale CPU time
estimates: their counting model against the run-steps a stored result recorded, and the
arithmetic of the estimate from the measured times; never the machine's speed)."""

import json
import shutil
import statistics

import pytest

from dpcompanion import cli
from dpcompanion.core.provenance import REPO
from dpcompanion.experiments import base, compute, paper_scale, store, w_f4


@pytest.fixture
def results_copy(tmp_path):
    """A copy of the committed full and paper results, paper sweeps in progress (units) and
    benchmark files under tmp_path."""
    root = tmp_path / "results"
    for pattern in ("*/full", "*/paper", "*/paper.units"):
        for d in sorted((REPO / "results").glob(pattern)):
            shutil.copytree(d, root / d.parent.name / d.name)
    if (REPO / "results" / "bench").is_dir():
        shutil.copytree(REPO / "results" / "bench", root / "bench")
    return root


def _edit_provenance(root, eid, reseal=True, **fields):
    path = root / eid / "full" / "provenance.json"
    prov = json.loads(path.read_text())
    prov.update(fields)
    if reseal:
        prov = store.sealed(prov)
    path.write_text(json.dumps(prov))
    return prov


def test_table_covers_every_experiment_and_reads_provenance(results_copy):
    rows = compute.table(root=results_copy, cpu_peak_gflops=100.0)
    assert [r["id"] for r in rows] == list(base.all_experiments())
    for r in rows:
        path = results_copy / r["id"] / "full" / "provenance.json"
        if not path.exists():
            assert not r["stored"] and r["status"] == "not stored" and r["wall_s"] is None
            continue
        prov = json.loads(path.read_text())
        for k in ("device", "executor", "runs", "run_steps", "units", "created"):
            assert r[k] == prov.get(k), (r["id"], k)
        # a result assembled from units of earlier sittings: the time of all its units, not the last sitting's
        over = bool(prov.get("units_reused"))
        assert r["over_sittings"] == over and r["wall_s"] == (prov["units_wall_s"] if over else prov["wall_s"])
        assert r["gpu_estimate_s"] == r["wall_s"] * 100.0 / compute.GPU_ASSUMED_GFLOPS
        assert r["command"].startswith(f"python -m dpcompanion experiment {r['id']} --mode full")
        assert r["scale_note"] == base.get(r["id"]).scale_note
    cells = compute.display_rows(rows)
    assert len(cells) == len(rows) and all(len(c) == len(compute.DISPLAY_HEADER) for c in cells)
    for r, c in zip(rows, cells):
        assert ("summed over sittings" in c[1]) == bool(r.get("over_sittings")), r["id"]
    assert compute.total_wall_s(rows) == sum(r["wall_s"] for r in rows if r["stored"])


def test_changing_a_provenance_changes_the_table(results_copy):
    eid = "h-f-eff"
    before = {r["id"]: r for r in compute.table(root=results_copy, cpu_peak_gflops=50.0)}[eid]
    _edit_provenance(results_copy, eid, wall_s=12345.5, runs=7, run_steps=700, device="cuda",
                     executor="dask LocalCluster(2 workers x 1 thread)")
    after = {r["id"]: r for r in compute.table(root=results_copy, cpu_peak_gflops=50.0)}[eid]
    assert before["wall_s"] != 12345.5
    assert (after["wall_s"], after["runs"], after["run_steps"], after["device"]) == (12345.5, 7, 700, "cuda")
    assert after["command"] == f"python -m dpcompanion experiment {eid} --mode full --device cuda --executor dask --workers 2"
    assert after["gpu_measured"] and after["gpu_estimate_s"] is None  # a GPU run's time is measured, not estimated
    assert "12345" not in json.dumps(before) and compute.duration(12345.5) in compute.display_rows([after])[0]
    # an edit without the seal: the table still shows what the provenance says, marked stale
    _edit_provenance(results_copy, "w-f4", reseal=False, wall_s=99.0)
    row = {r["id"]: r for r in compute.table(root=results_copy)}["w-f4"]
    assert row["wall_s"] == 99.0 and row["status"].startswith("stale: provenance edited")
    # a result removed: the row stays, with its command and no time
    shutil.rmtree(results_copy / "w-f4" / "full")
    row = {r["id"]: r for r in compute.table(root=results_copy)}["w-f4"]
    assert not row["stored"] and row["wall_s"] is None and row["status"] == "not stored"
    assert row["command"] == "python -m dpcompanion experiment w-f4 --mode full"


def test_the_gpu_model_uses_a_measured_cpu_rate(tmp_path):
    root = tmp_path / "results"
    assert compute.measured_cpu_peak(root) is None
    rows = compute.table(root=root)  # nothing stored and no measured rate: no estimate
    assert all(r["gpu_estimate_s"] is None and not r["stored"] for r in rows)
    (root / "bench").mkdir(parents=True)
    (root / "bench" / "cpu-quick.json").write_text(json.dumps({"matmul_peak_gflops": 150.0}))
    assert compute.measured_cpu_peak(root) == (150.0, "results/bench/cpu-quick.json")
    (root / "bench" / "cpu-paper-scale.json").write_text(json.dumps({"matmul_peak_gflops": 120.0}))
    assert compute.measured_cpu_peak(root) == (120.0, "results/bench/cpu-paper-scale.json")
    assert compute.gpu_estimate_s(100.0, cpu_peak_gflops=120.0) == 100.0 * 120.0 / compute.GPU_ASSUMED_GFLOPS


def test_hfeff_run_step_count_reproduces_the_stored_run():
    res = store.load("h-f-eff", mode="full")
    if res is None or res.damaged:
        pytest.skip("no stored full H-F-EFF result")
    counted = paper_scale.hfeff_run_steps(res.payload)
    assert sum(c["total"] for c in counted) == res.provenance["run_steps"]
    assert [c["total"] for c in counted] == [u["run_steps"] for u in res.payload["units"]]
    paper = paper_scale.hfeff_run_steps(res.payload, tune_repeats=10, repeats=100)
    for c, p, u in zip(counted, paper, res.payload["units"]):
        assert p["tune"] * u["tune_repeats"] == c["tune"] * 10 and p["eval"] * u["repeats"] == c["eval"] * 100


@pytest.mark.slow
def test_paper_scale_tiny_smoke_cli_and_arithmetic(results_copy, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("DPCOMPANION_RESULTS", str(results_copy))
    for d in results_copy.iterdir():  # the estimate needs only the stored H-F-EFF result
        if d.name not in ("h-f-eff", "bench"):
            shutil.rmtree(d)
    out = tmp_path / "ps.json"
    code = cli.main(["bench", "--paper-scale", "--size", "tiny", "--device", "cpu", "--json", "--out", str(out)])
    r = json.loads(capsys.readouterr().out)
    assert code == 0 and r["sections"] == ["paper-scale"] and r["size"] == "tiny"
    hf, wf = r["h-f-eff"], r["w-f4"]
    assert hf["count_check"]["equal"] and hf["count_check"]["recorded_run_steps"] == hf["count_check"]["counted_run_steps"]
    for row in hf["per_N"]:
        m = row["measured"]
        assert row["s_per_run_step_paper"] == m["paper"]["s_per_run_step"] == min(m["paper"]["per_round"]) > 0
        assert m["ratio_per_round"] == [a / b for a, b in zip(m["paper"]["per_round"], m["committed"]["per_round"])]
        assert row["width_ratio"] == m["ratio"] == statistics.median(m["ratio_per_round"])
        assert row["estimate_s"] == (row["recorded_committed_train_s"] * row["run_steps_paper"]
                                     / row["run_steps_committed"] * row["width_ratio"])
        assert row["estimate_absolute_s"] == row["run_steps_paper"] * row["s_per_run_step_paper"]
        assert row["run_steps_paper"] == row["tune_run_steps_paper"] + row["eval_run_steps_paper"]
    assert hf["estimate_s"] == sum(row["estimate_s"] for row in hf["per_N"])
    assert hf["estimate_absolute_s"] == sum(row["estimate_absolute_s"] for row in hf["per_N"])
    units = {u["N"]: u for u in store.load("h-f-eff", mode="full", root=results_copy).payload["units"]}
    assert [row["recorded_committed_train_s"] for row in hf["per_N"]] == [units[n]["train_wall_s"] for n in units]
    assert hf["calibration"]["predicted_s"] == sum(row["predicted_committed_s"] for row in hf["per_N"])
    assert wf["steps_per_run"] == wf["steps_per_epoch"] * wf["sizes"]["epochs"] == 235 * 50
    # a seed of a cell: its steps, the initial and one test-set evaluation per epoch (no training-set one)
    assert wf["cell_s"] == wf["steps_per_run"] * wf["step_s"] + (wf["sizes"]["epochs"] + 1) * wf["eval_test_s"]
    per = wf["measured"]["per_round"]
    assert wf["step_s"] == min(per["step_s"]) and wf["eval_test_s"] == min(per["eval_test_s"])
    assert "eval_train_s" not in wf and "eval_train_s" not in per
    ck = wf["check"]
    assert ck["measured_segment_s"] == min(per["segment_s"])
    assert ck["predicted_segment_s"] == ck["segment_steps"] * wf["step_s"] + 2 * wf["eval_test_s"]
    paper = w_f4.CONFIGS["paper"]  # seeds per cell: the paper mode's seeds x replicates, as its units run them
    assert wf["seeds"] == wf["sizes"]["seeds"] == paper["seeds"] * paper["replicates"] == len(w_f4.units(paper | {"seed": 0})) // 24
    assert wf["estimate_s"] == wf["cells"] * wf["seeds"] * wf["cell_s"] and wf["cells"] == 24
    side = json.loads(out.with_suffix(".json.provenance.json").read_text())
    assert side["command"] == "python -m dpcompanion bench --paper-scale"
    cells = compute.paper_scale_rows(json.loads(out.read_text()))
    assert len(cells) == 2 and all(len(c) == len(compute.PAPER_SCALE_HEADER) for c in cells)
    assert compute.duration(hf["estimate_s"]) in cells[0][4] and compute.duration(wf["estimate_s"]) in cells[1][4]
    assert paper_scale.default_output(r).name == "cpu-paper-scale-tiny.json"


def test_paper_scale_without_a_stored_result_says_what_to_run(tmp_path):
    with pytest.raises(RuntimeError, match="experiment h-f-eff --mode full"):
        paper_scale.hfeff_estimate(size="tiny", root=tmp_path)


def test_paper_mode_rows_show_a_partial_sweep_and_then_the_result(results_copy, tmp_path):
    """The compute page's paper-mode table: one row per experiment with a paper mode; a sweep in
    progress shows its stored units and their summed time, never as a result."""
    rows = {r["id"]: r for r in compute.table(root=results_copy, mode="paper")}
    assert set(rows) == set(base.with_mode("paper"))
    for eid, r in rows.items():
        assert r["mode"] == "paper" and r["command"].startswith(f"python -m dpcompanion experiment {eid} --mode paper")
        part = store.sweep_progress(eid, "paper", results_copy)
        if r["stored"]:
            assert r["status"] in ("fresh",) or r["status"].startswith("stale")
        elif part is not None:
            assert r["status"] == f"partial: {part['units_done']}/{part['units_total']} units"
            assert r["wall_s"] == part["wall_s_done"] and "so far" in compute.display_rows([r])[0][1]
        else:
            assert r["status"] == "not stored" and r["wall_s"] is None
    assert all(r["mode"] == "full" for r in compute.table(root=results_copy))

"""The results store (dpcompanion.experiments.store): digest independent of the executor
(local vs a 2-worker Dask LocalCluster), freshness on config and code changes,
revalidation by the quick-mode fingerprint both ways, atomic writes, round trips."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest

from dpcompanion.experiments import base, store
from dpcompanion.experiments import h_f_infl

# A tiny H-F-INFL: the real units and code on 100 MNIST35 samples, 3 steps, 4 repeats in
# blocks of 2 (so the Dask run has several units to spread).
TINY = {
    "quick": {**h_f_infl.CONFIGS["quick"], "n": 100, "T": 3, "levels": [20.0, 110.0, 200.0], "repeats": 4,
              "repeats_per_unit": 2, "fit_steps": [1, 2, 3]},
    "full": {**h_f_infl.CONFIGS["quick"], "n": 100, "T": 4, "levels": [20.0, 110.0, 200.0], "repeats": 4,
             "repeats_per_unit": 2, "fit_steps": [1, 2, 4]},
}


@pytest.fixture()
def tiny(tmp_path, monkeypatch):
    exp = dataclasses.replace(h_f_infl.EXPERIMENT, id="test-tiny-infl", configs=TINY)
    base.register(exp)
    monkeypatch.setenv("DPCOMPANION_RESULTS", str(tmp_path / "results"))
    yield exp
    base.unregister(exp.id)


def _files(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*")) if root.exists() else []


def test_digest_is_canonical():
    a = {"x": np.arange(4, dtype=np.float64), "y": [1, 2.5, "s"], "z": {"b": 1, "a": None}}
    b = {"z": {"a": None, "b": 1}, "y": (1, 2.5, "s"), "x": np.arange(4, dtype=np.float64)}
    assert store.digest(a) == store.digest(b)
    assert store.digest(a) != store.digest({**a, "x": np.arange(4, dtype=np.float32)})  # dtype counts
    assert store.digest(a) != store.digest({**a, "x": np.arange(4.0).reshape(2, 2)})  # shape counts
    assert store.digest({"f": 0.1 + 0.2}) != store.digest({"f": 0.3})  # floats by repr, exactly
    assert store.digest({"f": np.float64(0.5)}) == store.digest({"f": 0.5})
    with pytest.raises(ValueError, match="keys must be strings"):
        store.digest({1.0: 2})


def test_save_and_load_round_trip_keeps_the_digest(tiny, tmp_path, monkeypatch):
    monkeypatch.setattr(store, "INLINE_MAX", 8)  # arrays of more than 8 elements go to arrays.npz
    res = store.load_or_compute(tiny.id, mode="quick", device="cpu")
    assert not res.cached and res.fresh and res.path == tmp_path / "results" / tiny.id / "quick"
    assert {p.name for p in res.path.iterdir()} == {"payload.json", "arrays.npz", "provenance.json"}
    prov = json.loads((res.path / "provenance.json").read_text())
    for key in ("commit", "dirty", "config", "config_hash", "code_hash", "code_files", "device", "versions",
                "created", "wall_s", "units", "runs", "executor", "digest"):
        assert key in prov, key
    # counted by the trainer engine: losses x T x levels x repeats retraining runs, each of
    # them a suffix of the T steps
    assert prov["runs"] == 2 * 3 * 3 * 4 and prov["units"] == 1 + 2 * 2
    assert prov["runs"] <= prov["run_steps"] <= prov["runs"] * 3
    back = store.load(tiny.id, mode="quick")
    assert back.cached and back.fresh and store.digest(back.payload) == res.digest == prov["digest"]
    again = store.load_or_compute(tiny.id, mode="quick", device="cpu")
    assert again.cached and again.provenance["created"] == prov["created"]  # nothing recomputed
    # the numbers: blocks of repeats concatenate to the full set of repeats
    assert back.payload["squared"]["coef"].shape == (3, 4)
    assert back.payload["squared"]["final_loss_at_fit_steps"].shape == (3, 3, 4)


def test_tampered_payload_is_not_fresh(tiny):
    res = store.load_or_compute(tiny.id, mode="quick", device="cpu")
    raw = json.loads((res.path / "payload.json").read_text())
    raw["logistic"]["clip_fraction"] += 1e-12
    (res.path / "payload.json").write_text(json.dumps(raw))
    back = store.load(tiny.id, mode="quick")
    assert not back.fresh and "digest" in back.stale_reason


def test_fresh_and_stale_on_config_change(tiny):
    store.load_or_compute(tiny.id, mode="quick", seed=0, device="cpu")
    assert store.load(tiny.id, mode="quick").fresh
    assert not store.load(tiny.id, mode="quick", seed=1).fresh  # another seed is another config
    changed = dataclasses.replace(tiny, configs={**TINY, "quick": {**TINY["quick"], "lr": 0.2}})
    base.unregister(tiny.id)
    base.register(changed)
    r = store.load(tiny.id, mode="quick")
    assert not r.fresh and r.stale_reason == "config changed"
    r2 = store.load_or_compute(tiny.id, mode="quick", device="cpu")
    assert not r2.cached and r2.fresh


def test_fresh_and_stale_on_code_change(tiny, monkeypatch):
    store.load_or_compute(tiny.id, mode="quick", device="cpu")
    real = store.code_files
    monkeypatch.setattr(store, "code_files",
                        lambda exp: {**real(exp), "dpcompanion.training.influence": "edited"})
    r = store.load(tiny.id, mode="quick")
    assert not r.fresh and r.stale_reason.startswith("code changed: dpcompanion.training.influence")


def test_code_hash_covers_imports_not_plotting():
    files = store.code_files(h_f_infl.EXPERIMENT)
    for m in ("dpcompanion.experiments.h_f_infl", "dpcompanion.training.influence",
              "dpcompanion.training.trainers.engine", "dpcompanion.training.data", "dpcompanion.theory.accounting"):
        assert m in files, m
    assert not any(m.startswith("dpcompanion.book") for m in files)  # editing a figure recomputes nothing
    assert "dpcompanion.experiments.store" not in files


def _full_then_edit(tiny, monkeypatch, *, quick_changes: bool):
    full = store.load_or_compute(tiny.id, mode="full", device="cpu")
    quick = store.load(tiny.id, mode="quick")
    assert full.provenance["quick_digest"] == quick.digest  # the fingerprint was recorded
    real = store.code_files
    monkeypatch.setattr(store, "code_files", lambda exp: {**real(exp), "dpcompanion.training.influence": "edited"})
    if quick_changes:  # the edit changes numbers: the quick recomputation gives another digest
        cfg = {**TINY, "quick": {**TINY["quick"]}}
        real_run = tiny.run_unit

        def run_unit(unit, device):
            out = real_run(unit, device)
            if "final_loss" in out:
                out["final_loss"] = out["final_loss"] * (1 + 1e-9)
            return out

        base.unregister(tiny.id)
        base.register(dataclasses.replace(tiny, configs=cfg, run_unit=run_unit))
    assert not store.load(tiny.id, mode="full").fresh
    return full


def test_revalidation_marks_fresh_when_the_quick_digest_is_unchanged(tiny, monkeypatch):
    full = _full_then_edit(tiny, monkeypatch, quick_changes=False)
    out = store.revalidate(tiny.id, device="cpu")
    assert out["status"] == "revalidated", out
    r = store.load(tiny.id, mode="full")
    assert r.fresh and r.digest == full.digest and r.provenance["created"] == full.provenance["created"]
    (event,) = r.provenance["revalidated"]
    assert event["from_code_hash"] == full.provenance["code_hash"] and event["to_code_hash"] == store.code_hash(tiny)
    assert "date" in event
    assert store.revalidate(tiny.id)["status"] == "fresh"


def test_revalidation_leaves_stale_when_the_quick_digest_changes(tiny, monkeypatch):
    full = _full_then_edit(tiny, monkeypatch, quick_changes=True)
    out = store.revalidate(tiny.id, device="cpu")
    assert out["status"] == "stale" and "quick digest changed" in out["detail"]
    r = store.load(tiny.id, mode="full")
    assert not r.fresh and r.provenance["code_hash"] == full.provenance["code_hash"]
    assert r.provenance["revalidated"] == []


def test_failing_compute_leaves_nothing(tiny, tmp_path):
    def broken(config, results):
        raise RuntimeError("deliberate failure in combine")

    base.unregister(tiny.id)
    base.register(dataclasses.replace(tiny, combine=broken))
    with pytest.raises(RuntimeError, match="deliberate"):
        store.load_or_compute(tiny.id, mode="quick", device="cpu")
    assert _files(tmp_path / "results") == []


def test_failing_write_keeps_the_previous_result(tiny, monkeypatch):
    monkeypatch.setattr(store, "INLINE_MAX", 8)
    first = store.load_or_compute(tiny.id, mode="quick", device="cpu")

    def bad_savez(*a, **k):
        raise OSError("disk full (simulated)")

    monkeypatch.setattr(np, "savez_compressed", bad_savez)
    with pytest.raises(OSError, match="disk full"):
        store.load_or_compute(tiny.id, mode="quick", device="cpu", recompute=True)
    assert sorted(p.name for p in first.path.parent.iterdir()) == ["quick"]  # no temporary folder left
    back = store.load(tiny.id, mode="quick")
    assert back.fresh and back.digest == first.digest


def test_unwritable_results_folder_is_refused_before_computing(tiny, tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("DPCOMPANION_RESULTS", str(blocker / "results"))
    called = []
    monkeypatch.setattr(store, "_compute_payload", lambda *a, **k: called.append(1))
    with pytest.raises(ValueError, match="cannot be written"):
        store.load_or_compute(tiny.id, mode="quick", device="cpu")
    assert not called and blocker.read_text() == "not a folder"


def test_units_run_single_threaded_and_restore_torch_threads(torch_default_threads):
    import torch

    seen = []
    before = torch.get_num_threads()
    store._run_one(lambda unit, device: seen.append(torch.get_num_threads()) or {}, {}, "cpu")
    assert seen == [1] and torch.get_num_threads() == before


def test_executor_options_are_validated():
    with pytest.raises(ValueError, match="--executor must be one of local, dask"):
        store.make_executor("slurm")
    with pytest.raises(ValueError, match="--workers must be an integer >= 1, got 0"):
        store.make_executor("dask", workers=0)
    with pytest.raises(ValueError, match="need --executor dask"):
        store.make_executor("local", workers=2)
    with pytest.raises(ValueError, match="not both"):
        store.make_executor("dask", workers=2, scheduler="tcp://127.0.0.1:8786")


@pytest.mark.slow
def test_same_digest_locally_and_on_a_two_worker_local_cluster(tiny, torch_default_threads):
    """The acceptance check of issue 8 on a small sweep: units run in other processes, in
    any order, give the same payload bit for bit. N = 1000 samples, so that torch's
    reductions are large enough to be split over threads if a unit were multi-threaded
    (this process keeps torch's default thread count, also on an xdist worker)."""
    big = dataclasses.replace(tiny, configs={m: {**c, "n": 1000} for m, c in TINY.items()})
    base.unregister(tiny.id)
    base.register(big)
    local = store.compute(tiny.id, mode="quick", device="cpu", executor=store.make_executor("local"))
    ex = store.make_executor("dask", workers=2)
    try:
        assert "LocalCluster(2 workers" in ex.describe()
        remote = store.compute(tiny.id, mode="quick", device="cpu", executor=ex)
    finally:
        ex.close()
    assert remote.provenance["executor"].startswith("dask")
    assert remote.digest == local.digest


def test_times_in_a_payload_are_not_part_of_its_digest():
    assert store.digest({"x": 1, "wall_s": 1.0, "units": [{"wall_s": 2.0, "y": 3}]}) == \
        store.digest({"x": 1, "wall_s": 9.0, "units": [{"wall_s": 0.1, "y": 3}]})
    assert store.digest({"x": 1, "wall_s": 1.0}) != store.digest({"x": 2, "wall_s": 1.0})


@pytest.mark.slow
@pytest.mark.parametrize("exp_id", sorted(base.all_experiments()))
def test_every_experiment_gives_the_same_digest_twice(exp_id, tmp_path, monkeypatch):
    """The same config and seed give the same digest (issue 8), for every experiment: a
    payload that records a wall time, or anything else run-dependent, would make revalidation
    of its full result impossible. Quick mode: computed here and compared with the fresh
    result that ``make book`` stored (another process, another time), or computed twice
    when there is none."""
    built = store.load(exp_id, mode="quick", seed=0)
    monkeypatch.setenv("DPCOMPANION_RESULTS", str(tmp_path / "results"))
    a = built if built is not None and built.fresh else store.compute(exp_id, mode="quick", device="cpu")
    b = store.compute(exp_id, mode="quick", device="cpu")
    assert a.digest == b.digest, f"{exp_id}: two computations of the same config and seed differ"


def test_a_page_shows_the_full_result_only_when_fresh(tiny, monkeypatch):
    quick = store.result_to_show(tiny.id, mode="quick", device="cpu")
    assert quick.mode == "quick"
    assert store.fresh_full(tiny.id) is None
    assert store.full_absent_note(tiny.id).startswith("No full-mode result is stored yet")
    store.compute(tiny.id, mode="full", device="cpu")
    assert store.result_to_show(tiny.id, mode="quick", device="cpu").mode == "full"
    assert store.fresh_full(tiny.id).mode == "full"
    monkeypatch.setattr(store, "code_hash", lambda exp: "another")  # the code changed since
    assert store.result_to_show(tiny.id, mode="quick", device="cpu").mode == "quick"
    assert store.fresh_full(tiny.id) is None
    note = store.full_absent_note(tiny.id)
    assert "stale (code changed" in note and f"experiment {tiny.id} --mode full" in note


def test_pages_pick_full_results_through_the_store():
    """One rule for which result a page shows: no notebook loads a full result itself (a
    stale one would be shown as current)."""
    nbs = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("*.ipynb"))
    assert nbs
    for nb in nbs:
        text = nb.read_text()
        assert 'mode=\\"full\\")' not in text, f"{nb.name} loads a full result itself; use store.fresh_full"


def test_git_state_dirty_ignores_stored_results(tmp_path, monkeypatch):
    """A rewritten file under results/ (the previous experiment of a sweep) is not a code
    change; any other tracked file is."""
    import subprocess

    from dpcompanion.core.provenance import git_state

    monkeypatch.delenv("DPCOMPANION_COMMIT", raising=False)
    git = lambda *a: subprocess.run(["git", *a], cwd=tmp_path, check=True, capture_output=True)  # noqa: E731
    git("init", "-q")
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "r.json").write_text("1")
    (tmp_path / "code.py").write_text("x = 1")
    git("add", ".")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "c")
    assert git_state(tmp_path)[1] is False
    (tmp_path / "results" / "r.json").write_text("2")
    assert git_state(tmp_path)[1] is False
    (tmp_path / "code.py").write_text("x = 2")
    commit, dirty = git_state(tmp_path)
    assert dirty is True and len(commit) == 12

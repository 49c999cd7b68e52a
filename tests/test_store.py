"""The results store (dpcompanion.experiments.store): digest independent of the executor
(local vs a 2-worker Dask LocalCluster), freshness on config and code changes,
revalidation by the quick-mode fingerprint both ways, atomic writes, round trips."""

from __future__ import annotations

import dataclasses
import errno
import json
import os
import shutil
from pathlib import Path

import numpy as np
import pytest

import toy_units
from dpcompanion.book import show
from dpcompanion.experiments import base, store
from dpcompanion.experiments import h_f_infl
from dpcompanion.experiments.store import files, identity, result_store

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
    exp = dataclasses.replace(h_f_infl.EXPERIMENT, id="test-tiny-infl", rules=(), configs=TINY)
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
    monkeypatch.setattr(files, "INLINE_MAX", 8)  # arrays of more than 8 elements go to arrays.npz
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
    monkeypatch.setattr(identity, "code_files",
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


_LOADED_CHILD = """
import importlib, json, sys
mod = sys.argv[1]
ours = lambda: {m for m in sys.modules if m == "dpcompanion" or m.startswith("dpcompanion.")}
# what the packages left out of the code hash load (the store, the verdict rules) first
from dpcompanion.experiments import base, store
for m in store.CODE_HASH_EXCLUDE:
    importlib.import_module(m)
before = ours()
importlib.import_module(mod)
loaded = sorted(ours() - before)
exp = next(e for e in base.all_experiments().values() if e.run_unit.__module__ == mod)
print(json.dumps({"loaded": loaded, "files": sorted(store.code_files(exp))}))
"""


@pytest.mark.slow
@pytest.mark.parametrize("exp_id", sorted(base.all_experiments()))
def test_code_files_cover_every_module_the_experiment_loads(exp_id):
    """Dependencies are derived, not listed: every dpcompanion module that importing the
    experiment's module loads (in a fresh interpreter, once the packages left out of the code
    hash on purpose, :data:`store.CODE_HASH_EXCLUDE`, and what they import are loaded) is in
    its code hash."""
    import subprocess
    import sys

    from limits import HANG_GUARD_S

    mod = base.get(exp_id).run_unit.__module__
    out = subprocess.run([sys.executable, "-c", _LOADED_CHILD, mod], capture_output=True, text=True, check=True,
                         timeout=HANG_GUARD_S, env={**os.environ, "OMP_NUM_THREADS": "1"})
    got = json.loads(out.stdout.strip().splitlines()[-1])
    excluded = [m for m in got["loaded"] if any(m == x or m.startswith(x + ".") for x in store.CODE_HASH_EXCLUDE)]
    missing = sorted(set(got["loaded"]) - set(got["files"]) - set(excluded))
    assert not missing, f"{exp_id}: modules loaded but not in the code hash: {missing}"
    assert mod in got["files"]
    if exp_id == "h-f-eff":  # the walk is transitive: h_f_eff -> protocols.hong -> the trainers' engine
        assert "dpcompanion.training.trainers.engine" in got["files"]
    assert not hasattr(base.Experiment, "depends_on") and "depends_on" not in {
        f.name for f in dataclasses.fields(base.Experiment)}


def _full_then_edit(tiny, monkeypatch, *, quick_changes: bool):
    full = store.load_or_compute(tiny.id, mode="full", device="cpu")
    quick = store.load(tiny.id, mode="quick")
    assert full.provenance["quick_digest"] == quick.digest  # the fingerprint was recorded
    real = store.code_files
    monkeypatch.setattr(identity, "code_files", lambda exp: {**real(exp), "dpcompanion.training.influence": "edited"})
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
    # no result and no temporary file; the finished units stay for the next run to reuse
    files = _files(tmp_path / "results")
    assert store.load(tiny.id, mode="quick") is None
    assert all(f in ("test-tiny-infl", "test-tiny-infl/quick.units") or
               (f.startswith("test-tiny-infl/quick.units/") and f.rsplit("/", 1)[1][0] != ".") for f in files), files


def test_failing_write_keeps_the_previous_result(tiny, monkeypatch):
    monkeypatch.setattr(files, "INLINE_MAX", 8)
    first = store.load_or_compute(tiny.id, mode="quick", device="cpu")

    def bad_savez(*a, **k):
        raise OSError("disk full (simulated)")

    monkeypatch.setattr(np, "savez_compressed", bad_savez)
    with pytest.raises(OSError, match="disk full"):
        store.load_or_compute(tiny.id, mode="quick", device="cpu", recompute=True)
    # no temporary folder or file left (the units finished before the failure stay, for a rerun)
    assert sorted(p.name for p in first.path.parent.iterdir()) in (["quick"], ["quick", "quick.units"])
    assert not list(first.path.parent.glob("quick.units/.*"))
    back = store.load(tiny.id, mode="quick")
    assert back.fresh and back.digest == first.digest


@pytest.fixture
def blocked(tmp_path, monkeypatch):
    """DPCOMPANION_RESULTS below a file (a folder that cannot be made) and a compute that records
    being called: ``(the file, the calls)``."""
    blocker = tmp_path / "afile"
    blocker.write_text("x")
    monkeypatch.setenv("DPCOMPANION_RESULTS", str(blocker / "results"))
    called = []
    monkeypatch.setattr(result_store, "_compute_payload", lambda *a, **k: called.append(1))
    return blocker, called


def test_unwritable_results_folder_is_refused_before_computing(tiny, blocked):
    blocker, called = blocked
    with pytest.raises(ValueError, match="cannot be written"):
        store.load_or_compute(tiny.id, mode="quick", device="cpu")
    assert not called and blocker.read_text() == "x"


def test_units_run_single_threaded_and_restore_torch_threads(torch_default_threads):
    import torch

    seen = []
    before = torch.get_num_threads()
    result_store.run_one(lambda unit, device: seen.append(torch.get_num_threads()) or {}, {}, "cpu")
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
    """The acceptance check of distributed sweeps, on a small one: units run in other processes, in
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


_FAULTS_SNIPPET = """
import os, resource, torch
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(64):  # 64 tensors of 4 MiB, each freed before the next: a training step's temporaries
    x = torch.empty(1 << 20)
    x.fill_(1.0)
    del x
print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""


@pytest.mark.slow
def test_local_cluster_workers_reuse_freed_memory():
    """Dask's default worker environment (``MALLOC_TRIM_THRESHOLD_``) makes glibc map every
    large allocation afresh, so each freed 4 MiB tensor costs its 1,024 pages faulted in and
    zeroed again (the control, a Python started with that variable); our LocalCluster's
    workers start without it (``result_store.worker_environ``) and reuse freed memory. Counts of
    page faults, not seconds: the outcome does not depend on the machine's speed."""
    import os
    import subprocess
    import sys

    def faults_in_worker():
        ns: dict = {}
        import contextlib
        import io
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            exec(_FAULTS_SNIPPET, ns)
        return int(out.getvalue()), os.environ.get("MALLOC_TRIM_THRESHOLD_"), os.environ.get("OMP_NUM_THREADS")

    fresh = 64 * 1024  # 64 allocations x 1,024 pages of 4 KiB
    env = {**os.environ, "MALLOC_TRIM_THRESHOLD_": "65536"}
    control = int(subprocess.run([sys.executable, "-c", _FAULTS_SNIPPET], env=env, capture_output=True, text=True,
                                 check=True).stdout)
    assert control > fresh // 2, control  # the variable does what this test guards against
    ex = store.make_executor("dask", workers=1)
    try:
        faults, trim, omp = ex.client.submit(faults_in_worker, pure=False).result()
    finally:
        ex.close()
    assert trim is None and omp == "1"  # the thread caps of Dask's environment stay
    assert faults < fresh // 4, faults  # about 9,000 to 10,000 here, as in a Python started without it


def test_times_in_a_payload_are_not_part_of_its_digest():
    assert store.digest({"x": 1, "wall_s": 1.0, "units": [{"wall_s": 2.0, "y": 3}]}) == \
        store.digest({"x": 1, "wall_s": 9.0, "units": [{"wall_s": 0.1, "y": 3}]})
    assert store.digest({"x": 1, "wall_s": 1.0}) != store.digest({"x": 2, "wall_s": 1.0})


@pytest.mark.slow
@pytest.mark.parametrize("exp_id", sorted(base.all_experiments()))
def test_every_experiment_gives_the_same_digest_twice(exp_id, tmp_path, monkeypatch):
    """The same config and seed give the same digest, for every experiment: a
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
    assert show.full_absent_note(tiny.id).startswith("No full-mode result is stored yet")
    store.compute(tiny.id, mode="full", device="cpu")
    assert store.result_to_show(tiny.id, mode="quick", device="cpu").mode == "full"
    assert store.fresh_full(tiny.id).mode == "full"
    monkeypatch.setattr(identity, "code_hash", lambda exp: "another")  # the code changed since
    assert store.result_to_show(tiny.id, mode="quick", device="cpu").mode == "quick"
    assert store.fresh_full(tiny.id) is None
    note = show.full_absent_note(tiny.id)
    assert "stale (code changed" in note and f"experiment {tiny.id} --mode full" in note


def test_a_full_result_of_uncommitted_code_is_stale_until_it_is_committed(tiny, monkeypatch):
    """A full result made (or revalidated) while its compute code differs from the last commit
    is not fresh: the commit holds other code. An edit git sees but the code hash does not (a
    docstring) keeps it fresh. The checkout is never touched: git's answers are replaced."""
    store.compute(tiny.id, mode="full", device="cpu")
    assert store.load(tiny.id, mode="full").fresh
    path = "dpcompanion/training/influence.py"
    here = (identity.PKG.parent / path).read_bytes()
    monkeypatch.setattr(files, "_changed_paths", lambda top, folder: {path})
    committed = {"body": here.replace(b"\ndef ", b"\n_EXTRA = 1\n\n\ndef ", 1),
                 "docstring": here.replace(b'"""', b'"""Edited. ', 1)}
    assert all(v != here for v in committed.values())
    monkeypatch.setattr(files, "_committed", lambda top, p: committed["body"] if p == path else None)
    r = store.load(tiny.id, mode="full")
    assert not r.fresh and r.stale_reason.startswith("its code is not committed: dpcompanion.training.influence")
    assert store.fresh_full(tiny.id) is None
    monkeypatch.setattr(files, "_committed", lambda top, p: committed["docstring"] if p == path else None)
    assert store.load(tiny.id, mode="full").fresh
    monkeypatch.setattr(files, "_changed_paths", lambda top, folder: {"dpcompanion/book/pdf.py"})
    assert store.load(tiny.id, mode="full").fresh  # an edit outside its code


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


# --- damaged results, sealed provenance, saves that never lose a result ------------
#
# A fast experiment (numpy only, milliseconds): one array of 2 x 100 (stored in arrays.npz)
# and a few scalars.

def _fast_combine(config, results):
    x = np.stack([r["x"] for r in results])
    return {"x": x, "total": float(x.sum()), "label": "fast"}


FAST = {"quick": {"n": 100}, "full": {"n": 120}}


@pytest.fixture()
def fast(tmp_path, monkeypatch):
    exp = base.Experiment(id="test-fast", title="fast", configs=FAST, units=toy_units.units,
                          run_unit=toy_units.run_unit, combine=_fast_combine)
    base.register(exp)
    monkeypatch.setenv("DPCOMPANION_RESULTS", str(tmp_path / "results"))
    yield exp
    base.unregister(exp.id)


def _leftovers(root: Path) -> list[str]:
    return [p.name for p in root.rglob(".*") if ".tmp-" in p.name or ".old-" in p.name]


def _rewrite_npz_without_a0(d: Path) -> None:
    with np.load(d / "arrays.npz") as z:
        arrays = {k: z[k] for k in z.files}
    np.savez_compressed(d / "arrays.npz", **{("b" + k): v for k, v in arrays.items()})


def _corrupt_npz_member(d: Path) -> None:
    """Flip bytes inside the compressed data of a0 (the zip directory stays readable)."""
    b = bytearray((d / "arrays.npz").read_bytes())
    mid = len(b) // 3
    b[mid:mid + 40] = bytes(40)
    (d / "arrays.npz").write_bytes(bytes(b))


def _set_seed(d: Path, seed) -> None:
    p = json.loads((d / "provenance.json").read_text())
    p["config"]["seed"] = seed
    (d / "provenance.json").write_text(json.dumps(p))


#: (name, damage applied to the result folder, the file named, what is said)
DAMAGES = [
    ("npz deleted", lambda d: (d / "arrays.npz").unlink(), "arrays.npz", "missing"),
    ("npz truncated", lambda d: (d / "arrays.npz").write_bytes((d / "arrays.npz").read_bytes()[:100]),
     "arrays.npz", "cannot be read"),
    ("npz member corrupt", _corrupt_npz_member, "arrays.npz", "cannot be read"),
    ("npz lacks a0", _rewrite_npz_without_a0, "arrays.npz", "array a0 missing"),
    ("npz empty", lambda d: (d / "arrays.npz").write_bytes(b""), "arrays.npz", "cannot be read"),
    ("payload truncated", lambda d: (d / "payload.json").write_text((d / "payload.json").read_text()[:50]),
     "payload.json", "not valid JSON"),
    ("payload deleted", lambda d: (d / "payload.json").unlink(), "payload.json", "missing"),
    ("payload a list", lambda d: (d / "payload.json").write_text("[1, 2]"), "payload.json", "not a JSON object"),
    ("payload number edited",
     lambda d: (d / "payload.json").write_text((d / "payload.json").read_text().replace('"fast"', '"slow"')),
     "payload.json", "does not match the digest"),
    ("provenance truncated",
     lambda d: (d / "provenance.json").write_text((d / "provenance.json").read_text()[:70]),
     "provenance.json", "not valid JSON"),
    ("provenance deleted", lambda d: (d / "provenance.json").unlink(), "provenance.json", "missing"),
    ("provenance not utf-8", lambda d: (d / "provenance.json").write_bytes(b"\xff\xfe{"), "provenance.json",
     "cannot be read"),
    ("provenance seed a string", lambda d: _set_seed(d, "zero"), "provenance.json", "seed"),
    ("provenance without digest",
     lambda d: (d / "provenance.json").write_text(json.dumps(
         {k: v for k, v in json.loads((d / "provenance.json").read_text()).items() if k != "digest"})),
     "provenance.json", "'digest'"),
    # read only from regular files, with a size and a depth cap (no hang, no RecursionError)
    ("payload a FIFO", lambda d: _fifo(d / "payload.json"), "payload.json", "not a regular file (a FIFO)"),
    ("provenance a FIFO", lambda d: _fifo(d / "provenance.json"), "provenance.json", "not a regular file (a FIFO)"),
    ("payload nested 200,000 deep", lambda d: (d / "payload.json").write_text("[" * 200_000 + "]" * 200_000),
     "payload.json", "nested more than 64 deep"),
    ("provenance nested 200,000 deep", lambda d: (d / "provenance.json").write_text("[" * 200_000 + "]" * 200_000),
     "provenance.json", "nested more than 64 deep"),
    ("payload over the size cap", lambda d: _oversize(d / "payload.json"), "payload.json", "bytes, more than the"),
]


def _fifo(path: Path) -> None:
    path.unlink()
    os.mkfifo(path)


def _oversize(path: Path) -> None:
    with open(path, "r+b") as f:
        f.truncate(files.MAX_JSON_BYTES + 1)  # sparse: no disk used


@pytest.mark.parametrize("damage,file,what", [d[1:] for d in DAMAGES], ids=[d[0] for d in DAMAGES])
def test_a_damaged_result_is_reported_listed_and_recomputed(fast, damage, file, what, capsys):
    from dpcompanion import cli

    quick = store.load_or_compute(fast.id, mode="quick", device="cpu")
    assert (quick.path / "arrays.npz").is_file()
    full = store.compute(fast.id, mode="full", device="cpu")  # another result that must stay listed
    damage(quick.path)
    r = store.load(fast.id, mode="quick")
    assert r is not None and not r.fresh and r.payload == {}
    assert r.damaged.startswith(str(quick.path / file) + ":") and what in r.damaged, r.damaged
    assert r.stale_reason == f"damaged: {r.damaged}"
    assert "damaged" in show.result_line(r) and r.record()["damaged"] == r.damaged
    # results: every other result listed, the damaged file named, exit 0 (text and --json)
    assert cli.main(["results"]) == 0
    out, err = capsys.readouterr()
    assert err == "" and "Traceback" not in out
    lines = [ln for ln in out.splitlines() if ln.startswith(fast.id)]
    assert len(lines) == 2 and any("DAMAGED" in ln and str(quick.path / file) in ln for ln in lines), out
    assert any(" full " in ln and "fresh" in ln for ln in lines), out
    assert cli.main(["results", "--json"]) == 0
    rows = [row for row in json.loads(capsys.readouterr().out) if row["id"] == fast.id]
    assert {row["mode"]: bool(row["damaged"]) for row in rows} == {"quick": True, "full": False}
    # a page: the fresh full result; with the full damaged too, this build's quick result, recomputed
    assert store.result_to_show(fast.id, mode="quick").digest == full.digest
    damage(full.path)
    assert store.fresh_full(fast.id) is None
    assert show.full_absent_note(fast.id).startswith("The stored full-mode result is stale (damaged: ")
    shown = store.result_to_show(fast.id, mode="quick")
    assert shown.mode == "quick" and shown.fresh and not shown.cached and shown.digest == quick.digest
    # experiment recomputes over a damaged result
    assert cli.main(["experiment", fast.id, "--mode", "full", "--json"]) == 0
    rec = json.loads(capsys.readouterr().out)
    assert rec["fresh"] and not rec["cached"] and rec["digest"] == full.digest and rec["damaged"] is None
    assert rec["replaced_damaged"].startswith(str(full.path / file))
    damage(store.load(fast.id, mode="quick").path)  # (the quick result the page build recomputed)
    assert cli.main(["experiment", fast.id]) == 0
    out = capsys.readouterr().out
    assert "computed over a damaged result" in out and str(quick.path / file) in out, out
    assert _leftovers(quick.path.parents[1]) == []


@pytest.mark.parametrize("link", ["itself", "a real folder", "nowhere"])
def test_a_result_folder_that_is_a_symlink_is_listed_as_damaged(fast, link, tmp_path, capsys):
    """A result folder that is a symlink (to itself, or anywhere) used to vanish from
    the listing silently; it is listed as damaged, naming it, and the other results still are."""
    from dpcompanion import cli

    store.compute(fast.id, mode="full", device="cpu")
    quick = store.result_dir(fast.id, "quick")
    shutil.rmtree(quick)  # (computed with the full result, for its fingerprint)
    target = {"itself": quick, "a real folder": tmp_path, "nowhere": tmp_path / "absent"}[link]
    os.symlink(target, quick)
    r = store.load(fast.id, mode="quick")
    assert r is not None and r.damaged.startswith(f"{quick}: a symlink to {target}") and not r.fresh, r.damaged
    assert ("symlink loop" in r.damaged) == (link == "itself")
    assert cli.main(["results", "--json"]) == 0
    rows = {row["mode"]: row for row in json.loads(capsys.readouterr().out) if row["id"] == fast.id}
    assert set(rows) == {"quick", "full"} and rows["full"]["fresh"] and rows["quick"]["damaged"], rows
    assert cli.main(["results"]) == 0
    assert "DAMAGED" in capsys.readouterr().out


def test_verify_of_a_result_whose_units_are_combined(fast, capsys):
    """``results --verify`` on a result that keeps no unit's record as such (its
    units' arrays are stacked): a recomputed unit is 'not in payload'; recomputing every unit
    compares the whole payload again, and a forged number is a mismatch, exit 1."""
    from dpcompanion import cli

    full = store.compute(fast.id, mode="full", device="cpu")
    rep = store.verify(fast.id, mode="full", units=1, seed=0)
    assert [u["status"] for u in rep["units"]] == ["not in payload"] and rep["ok"] and not rep["checked"]
    assert rep["whole"] is None
    rep = store.verify(fast.id, mode="full", units=5)
    assert rep["chosen"] == [0, 1] and rep["whole"]["status"] == "ok" and rep["whole"]["max_deviation"] == 0.0
    forged = {**full.payload, "total": full.payload["total"] * (1 + 1e-9)}
    prov = json.loads((full.path / "provenance.json").read_text())
    files.save(full.path, forged, store.sealed({**prov, "digest": store.digest(forged)}))
    assert cli.main(["results", "--verify", fast.id, "--units", "2"]) == 1
    out = capsys.readouterr().out
    assert "whole payload: MISMATCH" in out and "at /total" in out, out


def test_a_damaged_quick_cache_is_recomputed_by_the_next_build(fast):
    """The book build path (load_or_compute) recomputes a damaged or stale quick result."""
    first = store.load_or_compute(fast.id, mode="quick", device="cpu")
    (first.path / "arrays.npz").write_bytes(b"PK\x03\x04 not really a zip")
    again = store.load_or_compute(fast.id, mode="quick", device="cpu")
    assert not again.cached and again.fresh and again.digest == first.digest
    assert store.load(fast.id, mode="quick").fresh


#: the provenance fields a page shows (StoredResult.summary), each edited
EDITS = {"device": "cuda", "commit": "deadbeef", "created": "1999-01-01T00:00:00+00:00", "wall_s": 1.0,
         "runs": 7, "run_steps": 70, "units": 9, "executor": "dask tcp://far:8786", "dirty": "flipped",
         "revalidated": [{"date": "1999-01-01"}], "quick_digest": "0" * 64, "versions": {"torch": "0.0"}}


@pytest.mark.parametrize("field", sorted(EDITS))
def test_an_edited_provenance_field_makes_the_result_stale(fast, field):
    full = store.compute(fast.id, mode="full", device="cpu")
    assert store.fresh_full(fast.id) is not None
    p = json.loads((full.path / "provenance.json").read_text())
    p[field] = (not p["dirty"]) if field == "dirty" else EDITS[field]
    (full.path / "provenance.json").write_text(json.dumps(p))
    r = store.load(fast.id, mode="full")
    assert not r.fresh and r.stale_reason == f"provenance edited: {field}" and not r.damaged
    assert store.fresh_full(fast.id) is None
    assert store.result_to_show(fast.id, mode="quick").mode == "quick"  # the page does not show it
    assert store.revalidate(fast.id)["status"] == "stale"  # and revalidation does not launder it


def test_an_added_or_removed_provenance_field_or_seal_makes_the_result_stale(fast):
    full = store.compute(fast.id, mode="full", device="cpu")
    path = full.path / "provenance.json"
    good = json.loads(path.read_text())
    for edited, reason in [
        ({**good, "gpu": "H100"}, "provenance edited: gpu (added)"),
        ({k: v for k, v in good.items() if k != "run_steps"}, "provenance edited: run_steps (removed)"),
        ({**good, store.SEAL: "x"}, f"provenance edited: {store.SEAL}"),
        ({k: v for k, v in good.items() if k != store.SEAL}, "provenance not sealed"),
    ]:
        path.write_text(json.dumps(edited))
        r = store.load(fast.id, mode="full")
        assert not r.fresh and r.stale_reason.startswith(reason), (reason, r.stale_reason)
    path.write_text(json.dumps(good))
    assert store.load(fast.id, mode="full").fresh


def test_revalidation_reseals_and_keeps_the_history(fast, monkeypatch):
    full = store.compute(fast.id, mode="full", device="cpu")
    real = store.code_files
    monkeypatch.setattr(identity, "code_files", lambda exp: {**real(exp), "dpcompanion.theory.accounting": "edited"})
    assert store.load(fast.id, mode="full").stale_reason.startswith("code changed")
    assert store.revalidate(fast.id)["status"] == "revalidated"
    r = store.load(fast.id, mode="full")
    assert r.fresh and len(r.provenance["revalidated"]) == 1 and r.digest == full.digest
    assert "revalidated" in show.result_line(r)
    p = json.loads((r.path / "provenance.json").read_text())
    p["revalidated"] = []  # hiding the revalidation is an edit too
    (r.path / "provenance.json").write_text(json.dumps(p))
    assert store.load(fast.id, mode="full").stale_reason == "provenance edited: revalidated"


def test_result_folders_and_files_get_the_umask_permissions(fast, monkeypatch):
    import stat

    old = os.umask(0o022)
    try:
        full = store.compute(fast.id, mode="full", device="cpu")
        monkeypatch.setattr(identity, "code_files", lambda exp: {"changed": "x"})
        assert store.revalidate(fast.id)["status"] == "revalidated"  # rewrites provenance.json
    finally:
        os.umask(old)
    for d in (full.path, full.path.parent / "quick"):
        assert stat.S_IMODE(d.stat().st_mode) == 0o755, d
        for f in d.iterdir():
            assert stat.S_IMODE(f.stat().st_mode) == 0o644, f


#: the steps of a save (files._checkpoint), in order
STEPS = ["tmp made", "payload written", "arrays written", "provenance written", "old moved away",
         "new in place", "old removed"]


class _Stop(BaseException):
    """Raised at a save step (a BaseException, as KeyboardInterrupt)."""


def _second_save(fast, *, created: str):
    """The stored quick result's payload again, with another 'created' (so the two can be told apart)."""
    res = store.load(fast.id, mode="quick")
    return res.path, res.payload, store.sealed({**res.provenance, "created": created})


@pytest.mark.parametrize("step", STEPS)
def test_a_save_stopped_at_any_step_keeps_a_good_result(fast, step, monkeypatch):
    first = store.load_or_compute(fast.id, mode="quick", device="cpu")
    target, payload, prov = _second_save(fast, created="second")

    def stop(s):
        if s == step:
            raise _Stop(s)

    monkeypatch.setattr(files, "_checkpoint", stop)
    with pytest.raises(_Stop):
        files.save(target, payload, prov)
    monkeypatch.setattr(files, "_checkpoint", lambda s: None)
    r = store.load(fast.id, mode="quick")
    assert r.fresh and r.digest == first.digest  # never lost, never damaged
    assert r.provenance["created"] == ("second" if STEPS.index(step) >= STEPS.index("new in place")
                                       else first.provenance["created"])
    # what the stopped save left is tidied by the next listing once stale
    monkeypatch.setattr(files, "STALE_TEMP_S", 0)
    store.list_results()
    assert _leftovers(target.parents[1]) == [] and target.is_dir()
    assert store.load(fast.id, mode="quick").fresh


_KILL_CHILD = """
import os, signal, sys
from pathlib import Path
from dpcompanion.experiments import store
from dpcompanion.experiments.store import files
target, step = Path(sys.argv[1]), sys.argv[2]
prov, payload = files.read_files(target)
prov = store.sealed({**prov, "created": "second"})
def checkpoint(s):
    if s == step:
        os.kill(os.getpid(), signal.SIGKILL)
files._checkpoint = checkpoint
files.save(target, payload, prov)
"""


@pytest.mark.parametrize("step", ["provenance written", "old moved away", "new in place"])
def test_a_save_killed_between_its_renames_keeps_the_previous_result(fast, step):
    """A real SIGKILL (no handler runs): the previous result is read from ``.quick.old-…``
    while ``quick/`` is missing, and put back by the next listing (its writer is dead)."""
    import subprocess
    import sys

    first = store.load_or_compute(fast.id, mode="quick", device="cpu")
    proc = subprocess.run([sys.executable, "-c", _KILL_CHILD, str(first.path), step], capture_output=True,
                          timeout=120)
    assert proc.returncode == -9, proc.stderr.decode()
    if step == "old moved away":
        assert not first.path.exists() and _leftovers(first.path.parent)  # the window between the two renames
    r = store.load(fast.id, mode="quick")
    assert r.fresh and r.digest == first.digest
    assert r.provenance["created"] == ("second" if step == "new in place" else first.provenance["created"])
    store.list_results()  # the dead writer's folders go, the previous result is back in place
    assert _leftovers(first.path.parents[1]) == [] and first.path.is_dir()
    assert store.load(fast.id, mode="quick").fresh


def test_cleanup_removes_stale_temporaries_only(fast, monkeypatch):
    import subprocess
    import sys
    import time

    first = store.load_or_compute(fast.id, mode="quick", device="cpu")
    parent = first.path.parent
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                          text=True).stdout.strip()
    now = time.time_ns()
    old_ns = now - int(2 * files.STALE_TEMP_S * 1e9)
    stale = [f".quick.tmp-{files._HOST}-{dead}-{now}-aa", f".quick.old-otherhost-1-{old_ns}-bb",
             f".quick.tmp-otherhost-1-{old_ns}-cc"]
    live = [f".quick.tmp-{files._HOST}-{os.getpid()}-{now}-dd", f".quick.old-otherhost-1-{now}-ee"]
    for name in stale + live:
        (parent / name).mkdir()
        (parent / name / "payload.json").write_text("{")
    (first.path / f".provenance.json.tmp-{files._HOST}-{dead}-{now}-ff.json").write_text("{")
    store.list_results()
    assert sorted(p.name for p in parent.iterdir() if p.name.startswith(".")) == sorted(live)
    assert [p.name for p in first.path.iterdir() if p.name.startswith(".")] == []
    assert store.load(fast.id, mode="quick").fresh


def test_a_failing_swap_puts_the_previous_result_back(fast, monkeypatch):
    first = store.load_or_compute(fast.id, mode="quick", device="cpu")
    target, payload, prov = _second_save(fast, created="second")
    real = files._rename

    def refuse_the_new_one(src, dst):
        if Path(dst) == target and ".tmp-" in Path(src).name:
            raise PermissionError(errno.EACCES, "Permission denied (simulated)")
        real(src, dst)

    monkeypatch.setattr(files, "_rename", refuse_the_new_one)
    with pytest.raises(PermissionError, match="simulated"):
        files.save(target, payload, prov)
    assert _leftovers(target.parents[1]) == []
    r = store.load(fast.id, mode="quick")
    assert r.fresh and r.provenance["created"] == first.provenance["created"] and target.is_dir()


def test_experiment_refuses_an_unusable_results_folder_before_computing(fast, blocked, capsys):
    from dpcompanion import cli

    blocker, called = blocked
    for argv in (["experiment", fast.id], ["experiment", fast.id, "--mode", "full"]):
        assert cli.main(argv) == 2
        out, err = capsys.readouterr()
        lines = err.strip().splitlines()
        assert out == "" and len(lines) == 1 and "DPCOMPANION_RESULTS" in lines[0], err
        assert lines[0].startswith("dpcompanion experiment: error:")
    assert not called and blocker.read_text() == "x"


def test_reproduce_refuses_an_unusable_results_folder_before_computing(blocked, tmp_path, capsys):
    from dpcompanion import cli

    blocker, called = blocked
    out_dir = tmp_path / "generated"
    assert cli.main(["reproduce", "--only", "h-f-curv", "--device", "cpu", "--output", str(out_dir)]) == 2
    out, err = capsys.readouterr()
    lines = err.strip().splitlines()
    assert out == "" and len(lines) == 1 and lines[0].startswith("dpcompanion reproduce: error:"), err
    assert "DPCOMPANION_RESULTS" in lines[0]
    assert not called and not out_dir.exists() and blocker.read_text() == "x"


def test_a_real_sweep_resumed_from_stored_units_has_the_straight_digest(tiny, tmp_path):
    """H-F-INFL's own units and combine: two units stored (as a killed run leaves them), the
    rest computed, the payload digest equal to a straight run's (unit files keep types exactly)."""
    straight = store.compute(tiny.id, mode="quick", device="cpu", root=tmp_path / "straight")
    config = base.config_for(tiny, "quick", seed=0)
    units = tiny.units(config)
    code = store.code_hash(tiny)
    for u in units[:2]:
        r, c = result_store.run_one(tiny.run_unit, u, "cpu")
        store.save_unit(store.units_dir(tiny.id, "quick"), store.unit_key(tiny.id, "quick", u, 0, "cpu"), u, r, c,
                        code=code, seed=0)
    res = store.compute(tiny.id, mode="quick", device="cpu")
    rec = res.record()
    assert (rec["units_reused"], rec["units_computed"], rec["units_total"]) == (2, len(units) - 2, len(units))
    assert res.digest == straight.digest


def test_results_and_units_record_the_cpu_and_revalidation_names_another_cpu(tiny, monkeypatch):
    """A fingerprint recorded on one kind of CPU cannot revalidate on another (BLAS and torch
    round differently there): the stale message says so and names both CPUs, instead of blaming
    the code change; on the same CPU it blames the code."""

    full = _full_then_edit(tiny, monkeypatch, quick_changes=True)
    here = result_store.cpu_model()
    assert full.provenance["cpu"] == here and full.provenance["quick_cpu"] == here
    assert "the code change changes numbers;" in store.revalidate(tiny.id, device="cpu")["detail"]
    monkeypatch.setattr(result_store, "cpu_model", lambda: "Some Other CPU 9000")
    detail = store.revalidate(tiny.id, device="cpu")["detail"]
    assert f"recorded on another CPU ({here}; this one: Some Other CPU 9000)" in detail, detail
    assert detail.endswith("recompute the full result")


def test_a_stored_unit_records_its_cpu(tmp_path):
    from dpcompanion.experiments.store import result_store

    result_store.save_unit(tmp_path, "k", {"a": 1}, {"x": 1.0}, {"runs": 1}, code="c" * 64, seed=0)
    assert json.loads((tmp_path / "k.json").read_text())["cpu"] == result_store.cpu_model()

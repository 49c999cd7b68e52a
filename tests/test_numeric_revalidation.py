"""Numeric revalidation: a full result records its quick mode's numbers next to the
quick digest; a code change that moves the quick digest but not the numbers beyond tolerance
(a reordered float sum) revalidates it numerically, with the largest deviation and both commits
in its provenance; a change beyond tolerance (another learning rate), of shape, of keys or of an
exact value leaves it stale. A toy experiment registered in a temporary results folder keeps
every test to seconds."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from dpcompanion.cli import main as cli_main
from dpcompanion.experiments import base, store
from dpcompanion.experiments.store import files, identity, numeric

#: what the toy's "code" does: the knobs a code change turns
KNOBS = {"lr": 0.1, "reorder": False, "curve_len": 80, "extra_key": False, "label": "toy", "n_extra": 0}
#: the device string each unit was run with (the toy computes the same on any)
DEVICES_SEEN: list[str] = []


def _units(config):
    return [{"i": i, "n": config["n"], "seed": config["seed"]} for i in range(2)]


def _run_unit(unit, device):
    """A float32 'training' whose loss is a float32 sum (in one order or the reverse: a
    reordered sum moves its last bits), a float32 curve, integers and a string."""
    DEVICES_SEEN.append(device)
    rng = np.random.default_rng(1000 * unit["seed"] + unit["i"])
    x = rng.normal(size=unit["n"]).astype(np.float32)
    terms = (np.float32(KNOBS["lr"]) * x * x).astype(np.float32)
    acc = np.float32(0.0)
    for t in (terms[::-1] if KNOBS["reorder"] else terms):
        acc = np.float32(acc + t)
    curve = np.cumsum(terms[: KNOBS["curve_len"]], dtype=np.float32)
    if KNOBS["reorder"]:  # the same sums, accumulated in another order: last bits only
        curve = np.array([np.float32(sum(map(float, terms[: k + 1][::-1]))) for k in range(len(curve))],
                         dtype=np.float32)
    out = {"loss": float(acc), "curve": curve, "count": int(unit["n"]) + KNOBS["n_extra"],
           "label": KNOBS["label"], "wall_s": 0.01, "run_steps": 0}
    if KNOBS["extra_key"]:
        out["extra"] = 1.0
    return out


def _combine(config, results):
    return {"units": results, "config": {"n": config["n"]}, "total_loss": float(sum(r["loss"] for r in results))}


TOY = base.Experiment(id="test-numeric-toy", title="toy", configs={"quick": {"n": 200}, "full": {"n": 300}},
                      units=_units, run_unit=_run_unit, combine=_combine)


@pytest.fixture()
def toy(tmp_path, monkeypatch):
    base.register(TOY)
    monkeypatch.setenv("DPCOMPANION_RESULTS", str(tmp_path / "results"))
    for k, v in dict(KNOBS).items():
        monkeypatch.setitem(KNOBS, k, v)
    # the toy 'trains in float32' and stores float64 copies: the table entry the real experiments have
    monkeypatch.setitem(numeric.TOLERANCES, TOY.id, numeric.Tolerance(rtol=1e-5, atol=1e-6, reason="toy, float32"))
    yield TOY
    base.unregister(TOY.id)


def _edit_code(monkeypatch, **knobs):
    """A code change: the code hash moves (a source file 'edited') and the knobs turn."""
    real = identity.code_files
    monkeypatch.setattr(identity, "code_files", lambda exp: {**real(exp), "dpcompanion.training.engine": "edited"})
    for k, v in knobs.items():
        monkeypatch.setitem(KNOBS, k, v)


def test_full_result_records_its_quick_numbers(toy):
    """The quick numbers sit next to the quick digest, exact (their digest is it)."""
    full = store.load_or_compute(toy.id, mode="full", device="cpu")
    p = full.provenance
    assert p["quick_numbers"]["digest"] == p["quick_digest"] and p["quick_numbers"]["cpu"] == p["quick_cpu"]
    numbers, why = numeric.recorded_numbers(p["quick_numbers"])
    assert why == "" and store.digest(numbers) == p["quick_digest"]
    assert numbers["units"][0]["curve"].dtype == np.float32  # arrays keep their dtype
    assert "wall_s" not in p["quick_numbers"]["numbers"]["units"][0]  # times are not numbers
    assert len(json.dumps(p["quick_numbers"])) < 4000  # compact: 2 x 80 float32 in base64


def test_reordered_sum_revalidates_numerically(toy, monkeypatch):
    """A reordered float32 sum moves the quick digest, every number within 1e-5
    relative: revalidated numerically, the provenance names the largest deviation, both commits
    and the new digest."""
    full = store.load_or_compute(toy.id, mode="full", device="cpu")
    recorded = full.provenance["quick_digest"]
    _edit_code(monkeypatch, reorder=True)
    assert not store.load(toy.id, mode="full").fresh
    out = store.revalidate(toy.id, device="cpu")
    assert out["status"] == "revalidated" and out["method"] == "numeric", out
    r = store.load(toy.id, mode="full")
    assert r.fresh and r.digest == full.digest
    (event,) = r.provenance["revalidated"]
    assert event["method"] == "numeric" and event["recorded_quick_digest"] == recorded
    assert event["quick_digest"] != recorded  # the digest moved ...
    dev = event["max_deviation"]
    assert 0 < dev["rel"] < 1e-5 and 0 < dev["share"] <= 1 and dev["key"].startswith("/")  # ... the numbers did not
    assert event["result_commit"] == full.provenance["commit"] and "commit" in event
    # the numbers of the code that made the result are kept: the next change is compared with them
    assert r.provenance["quick_numbers"] == full.provenance["quick_numbers"]
    v = r.validation()
    assert v["method"] == "numeric" and v["max_deviation"] == dev and v["quick_numbers"]


@pytest.mark.parametrize("knobs, said", [
    ({"lr": 0.1001}, "beyond tolerance"),                 # another learning rate: 1e-3 relative
    ({"curve_len": 79}, "is now"),                        # a shape
    ({"extra_key": True}, "keys differ"),                 # a key
    ({"n_extra": 1}, "is now"),                           # an integer
    ({"label": "toy2"}, "is now"),                        # a string
])
def test_changes_beyond_tolerance_stay_stale(toy, monkeypatch, knobs, said):
    """A changed learning rate, shape, key, integer or string leaves the result stale,
    the reason naming the largest deviation (or what differs) and where."""
    full = store.load_or_compute(toy.id, mode="full", device="cpu")
    _edit_code(monkeypatch, **knobs)
    out = store.revalidate(toy.id, device="cpu")
    assert out["status"] == "stale" and said in out["detail"] and " at /" in out["detail"], out
    r = store.load(toy.id, mode="full")
    assert not r.fresh and r.provenance["revalidated"] == [] and r.provenance == full.provenance


def test_results_json_says_how_each_result_was_validated(toy, monkeypatch):
    store.load_or_compute(toy.id, mode="full", device="cpu")
    root = files.results_root()
    _edit_code(monkeypatch, reorder=True)
    assert cli_main(["results", "--revalidate", "--results-dir", str(root)]) == 0
    import io
    from contextlib import redirect_stdout
    buf = io.StringIO()
    with redirect_stdout(buf):
        assert cli_main(["results", "--json", "--results-dir", str(root)]) == 0
    (row,) = [x for x in json.loads(buf.getvalue()) if x["id"] == toy.id and x["mode"] == "full"]
    assert row["fresh"] and row["validation"]["method"] == "numeric"
    assert 0 < row["validation"]["max_deviation"]["rel"] < 1e-5
    (quick,) = [x for x in json.loads(buf.getvalue()) if x["id"] == toy.id and x["mode"] == "quick"]
    assert quick["validation"]["method"] == "computed"


def test_compare_rule():
    """The rule, number by number: relative with an absolute floor near 0, by dtype
    unless the experiment's table entry says otherwise; structure and exact values exactly."""
    f32 = np.array([1.0, 0.0], dtype=np.float32)
    ok = numeric.compare({"a": f32 * np.float32(1 + 2e-6)}, {"a": f32}, experiment_id="nobody")
    assert ok["ok"] and ok["rtol"] == 1e-5  # float32 array: 1e-5 relative
    assert not numeric.compare({"a": 1.0 + 1e-9}, {"a": 1.0}, experiment_id="nobody")["ok"]  # float64: 1e-10
    assert numeric.compare({"a": 1e-13}, {"a": 0.0}, experiment_id="nobody")["ok"]  # the floor near 0
    assert not numeric.compare({"a": 1e-11}, {"a": 0.0}, experiment_id="nobody")["ok"]
    assert numeric.compare({"a": 1.0 + 1e-7}, {"a": 1.0}, experiment_id="w-f4")["ok"]  # the table: float32 training
    assert numeric.compare({"a": [math.nan, math.inf]}, {"a": [math.nan, math.inf]}, experiment_id="x")["ok"]
    assert not numeric.compare({"a": math.inf}, {"a": 1e308}, experiment_id="w-f4")["ok"]
    assert not numeric.compare({"a": True}, {"a": 1}, experiment_id="x")["ok"]  # a flag is not an integer
    assert not numeric.compare({"a": 1}, {"a": 1.0}, experiment_id="x")["ok"]  # nor an integer a float
    assert not numeric.compare({"a": f32.astype(np.float64)}, {"a": f32}, experiment_id="x")["ok"]  # dtype
    assert numeric.compare({"a": (1.0, 2), "wall_s": 3.0}, {"a": [1.0, 2], "wall_s": 9.0}, experiment_id="x")["ok"]
    assert set(numeric.TOLERANCES) <= set(base.all_experiments())  # no entry for an unknown experiment
    assert all(t.reason for t in numeric.TOLERANCES.values())


def test_pack_round_trip_is_exact():
    """The recorded numbers read back bit for bit (their digest is the payload's),
    types kept: float32 arrays, lists of floats, integers, flags, strings, NaN and infinities."""
    payload = {"a": np.linspace(0, 1, 100, dtype=np.float32), "b": [0.1 * k for k in range(20)] + [math.nan],
               "c": [math.inf, -0.0, 1e-300, 2.5, 3.5, 4.5, 5.5, 6.5, 7.5, 8.5], "i": np.arange(70),
               "s": "x", "f": True, "n": None, "t": (1, 2.0), "m": np.float64(0.3), "wall_s": 1.0}
    rec = numeric.record(payload, cpu="cpu", commit="c")
    back, why = numeric.recorded_numbers(json.loads(json.dumps(rec)))
    assert why == "" and store.digest(back) == store.digest(payload) == rec["digest"]
    assert back["a"].dtype == np.float32 and isinstance(back["c"], list) and type(back["c"][0]) is float
    assert numeric.compare(payload, back, experiment_id="x")["share"] == 0.0
    bad = json.loads(json.dumps(rec))
    bad["numbers"]["s"] = "y"  # an edit that does not update the digest
    assert numeric.recorded_numbers(bad) == (None, "the recorded quick numbers do not match their digest")


def test_fingerprint_is_computed_on_the_cpu_whatever_device(toy, monkeypatch):
    """GPU runs: a full result computed on another device ('cuda' here, faked: the
    device string reaches run_unit) records a quick fingerprint computed on the CPU, so that
    revalidation on a machine without that device compares like with like."""
    from dpcompanion.experiments.store import result_store
    monkeypatch.setattr(result_store, "resolve_device", lambda d: d)
    DEVICES_SEEN.clear()
    full = store.compute(toy.id, mode="full", device="cuda")
    p = full.provenance
    assert p["device"] == "cuda" and p["quick_device"] == "cpu"
    assert DEVICES_SEEN == ["cpu", "cpu", "cuda", "cuda"]  # the two quick units on the CPU
    quick = store.load(toy.id, mode="quick")
    assert quick.provenance["device"] == "cpu" and quick.digest == p["quick_digest"]

"""``results --verify`` compares by the store's one rule: the recomputed
units and the whole payload are judged by :func:`dpcompanion.experiments.store.numeric.compare`
with the experiment's declared tolerance (:data:`numeric.TOLERANCES`, else by dtype), not by a
tolerance table of its own."""

from __future__ import annotations

import json

import numpy as np
import pytest

from dpcompanion.experiments import base, store
from dpcompanion.experiments.store import files, numeric

#: a float32 experiment (numpy only, milliseconds) that keeps each unit's record in its payload
EID = "test-verify-f32"


def _units(config):
    return [{"i": i, "seed": config["seed"], "n": config["n"]} for i in range(2)]


def _run_unit(unit, device):
    rng = np.random.default_rng([unit["seed"], unit["i"]])
    return {"i": unit["i"], "y": rng.uniform(1.0, 2.0, unit["n"]).astype(np.float32)}


def _combine(config, results):
    return {"units": list(results), "label": "f32"}


@pytest.fixture()
def f32(tmp_path, monkeypatch):
    exp = base.Experiment(id=EID, title="float32 units", configs={"quick": {"n": 5}, "full": {"n": 6}},
                          units=_units, run_unit=_run_unit, combine=_combine)
    base.register(exp)
    monkeypatch.setenv("DPCOMPANION_RESULTS", str(tmp_path / "results"))
    yield exp
    base.unregister(exp.id)


def _forge(res, rel: float) -> None:
    """Move unit 0's first stored number by ``rel`` (relative), resealed as the library would."""
    forged = {**res.payload, "units": [{**u, "y": np.array(u["y"], dtype=np.float32)} for u in res.payload["units"]]}
    y0 = float(res.payload["units"][0]["y"][0])
    forged["units"][0]["y"][0] = np.float32(y0 * (1 + rel))
    assert abs(float(forged["units"][0]["y"][0]) / y0 - 1 - rel) < 2e-7  # the deviation float32 holds
    prov = json.loads((res.path / "provenance.json").read_text())
    files.save(res.path, forged, store.sealed({**prov, "digest": store.digest(forged)}))


@pytest.mark.parametrize("declared,ok", [(1e-5, True), (1e-6, False)])
def test_verify_uses_the_experiments_declared_tolerance(f32, monkeypatch, declared, ok):
    """A stored float32 number 2e-6 off (relative) passes ``verify`` for an experiment
    declared at rtol 1e-5 and is a mismatch at 1e-6, in the unit's row and the whole payload;
    the row names the declared tolerance."""
    _forge(store.compute(EID, mode="full", device="cpu"), 2e-6)
    monkeypatch.setitem(numeric.TOLERANCES, EID, numeric.Tolerance(rtol=declared, atol=1e-30, reason="test"))
    rep = store.verify(EID, mode="full", units=2, seed=0)
    unit0 = next(u for u in rep["units"] if u["index"] == 0)
    assert unit0["status"] == ("ok" if ok else "mismatch") and unit0["rtol"] == declared, unit0
    assert unit0["where"] == "/units/0/y[0]" and unit0["max_deviation"] == pytest.approx(2e-6, rel=0.1)
    assert rep["whole"]["status"] == unit0["status"] and rep["whole"]["where"] == "/units/0/y[0]"
    assert rep["ok"] is ok


def test_verify_without_a_declared_tolerance_follows_the_dtype(f32):
    """An experiment not in ``numeric.TOLERANCES`` gets numeric's dtype rule (float32:
    rtol 1e-5), the same the numeric revalidation applies; an exact value (the unit's index)
    that differs is a mismatch whatever the tolerance."""
    assert EID not in numeric.TOLERANCES
    res = store.compute(EID, mode="full", device="cpu")
    _forge(res, 2e-6)
    rep = store.verify(EID, mode="full", units=2, seed=0)
    assert rep["ok"] and all(u["rtol"] == numeric.FLOAT32.rtol for u in rep["units"]), rep
    body = store.load(EID, mode="full").payload
    body["units"][1]["i"] = 7
    prov = json.loads((res.path / "provenance.json").read_text())
    files.save(res.path, body, store.sealed({**prov, "digest": store.digest(body)}))
    rep = store.verify(EID, mode="full", units=2, seed=0)
    assert not rep["ok"] and rep["whole"]["status"] == "mismatch" and rep["whole"]["why"] == "7 is now 1", rep


def test_verify_keeps_no_tolerance_of_its_own():
    """One tolerance table and one comparison: verify exports neither."""
    from dpcompanion.experiments.store import verify as verify_module

    assert not hasattr(verify_module, "RTOL") and not hasattr(verify_module, "deviation")

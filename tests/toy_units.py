"""A fast toy experiment's units, shared by the tests that register one (an experiment
is a declared object; these are its three contract functions, module-level so Dask could pickle
them): two units of ``n`` standard normal draws each, seeded from the config's seed, combined
into their total."""

import contextlib

import numpy as np

from dpcompanion.experiments import base


def units(config):
    return [{"i": i, "n": config["n"], "seed": config["seed"]} for i in range(2)]


def run_unit(unit, device):
    rng = np.random.default_rng([unit["seed"], unit["i"]])
    return {"x": rng.standard_normal(unit["n"])}


def combine(config, results):
    return {"config": dict(config), "total": float(sum(r["x"].sum() for r in results))}


@contextlib.contextmanager
def registered(exp: base.Experiment, tmp_path, monkeypatch):
    """``exp`` registered, with the results store in ``tmp_path / "results"``; unregistered after."""
    base.register(exp)
    monkeypatch.setenv("DPCOMPANION_RESULTS", str(tmp_path / "results"))
    try:
        yield exp
    finally:
        base.unregister(exp.id)

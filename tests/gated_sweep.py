"""A small experiment for the resumable-sweep tests (not collected: no ``test_`` prefix).

Six units; each draws numbers from its own seed (an array large enough for the unit's
``.npz``, a float32 scalar, a tuple). Units from :data:`GATE_AT` on wait while the file named
by ``$DPC_TEST_GATE`` is missing (or raise, with ``$DPC_TEST_GATE_RAISE=1``): a test stops the
sweep there, deterministically, whatever the machine's speed. Run as a script it registers
the experiment and runs the CLI (``python tests/gated_sweep.py experiment test-gated ...``).
"""

from __future__ import annotations

import os
import sys
import time

import numpy as np

GATE_AT = 3
N_UNITS = 6
#: seconds a gated unit waits for its gate before giving up (a hang guard, not a timing)
HANG_GUARD_S = 300


def units(config):
    return [{"i": i, "seed": int(config["seed"]) * 1000 + i, "n": config["n"]} for i in range(N_UNITS)]


def run_unit(unit, device):
    gate = os.environ.get("DPC_TEST_GATE")
    if gate and unit["i"] >= GATE_AT and not os.path.exists(gate):
        if os.environ.get("DPC_TEST_GATE_RAISE") == "1":
            raise RuntimeError(f"gate closed at unit {unit['i']}")
        t0 = time.monotonic()
        while not os.path.exists(gate):
            if time.monotonic() - t0 > HANG_GUARD_S:
                raise RuntimeError("gate never opened")
            time.sleep(0.05)
    rng = np.random.default_rng(unit["seed"])
    x = rng.standard_normal(unit["n"])
    return {"x": x, "m": np.float32(x.mean()), "pair": (int(unit["i"]), float(x[0])), "wall_s": 0.0}


def combine(config, results):
    xs = np.stack([r["x"] for r in results])
    return {"xs": xs, "means": [r["m"] for r in results], "total": float(sum(r["m"] for r in results)),
            "pairs": [list(r["pair"]) for r in results]}


def experiment():
    from dpcompanion.experiments import base

    return base.Experiment(id="test-gated", title="gated test sweep",
                           configs={"quick": {"n": 100}, "full": {"n": 200}},
                           units=units, run_unit=run_unit, combine=combine)


def register():
    from dpcompanion.experiments import base

    base.unregister("test-gated")
    return base.register(experiment())


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import gated_sweep  # the importable module (picklable functions for Dask)

    gated_sweep.register()
    from dpcompanion import cli

    raise SystemExit(cli.main(sys.argv[1:]))

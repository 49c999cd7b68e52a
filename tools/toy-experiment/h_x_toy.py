"""Experiment ``h-x-toy``: a toy that tools/toy-experiment/run.sh adds to a scratch checkout to show what
adding an experiment touches: this module, its notebook and one line of ``_toc.yml``; the
run then regenerates CATALOGUE.md and writes its result."""

from __future__ import annotations

import numpy as np

from dpcompanion.experiments import comparisons
from dpcompanion.experiments.base import from_module, sizes_line
from dpcompanion.experiments.comparisons.rule import Case, DIRECTION, Judgement, Margin, Rule, judge_effect
from dpcompanion.experiments.scale_tables import Dim, config_key

TITLE = "A toy: the mean of Gaussian draws is above zero (a worked example of adding an experiment)"
SCALE_NOTE = "a made-up claim; full mode draws 1,000 values"
REPEATS_KEY = "repeats"
CONFIGS = {"quick": {"repeats": 100}, "full": {"repeats": 1000}}


def units(config):
    return [{"repeats": config["repeats"], "seed": config["seed"]}]


def run_unit(unit, device):
    return {"x": np.random.default_rng(unit["seed"]).normal(0.1, 1.0, unit["repeats"])}


def combine(config, results):
    return {"config": dict(config), "x": results[0]["x"]}


def describe(payload):
    return sizes_line(payload["config"], f"{payload['config']['repeats']} draws.")


def verdict_rows(payload):
    x = np.asarray(payload["x"])
    return [comparisons.compare("h-x-toy/mean", sizes_match=True, mean=float(x.mean()),
                                se=float(x.std(ddof=1) / np.sqrt(x.size)), n=int(x.size))]


PAPER_DIMS = {"repeats": Dim(None, "a made-up paper: no size printed", config_key("repeats"))}


def _judge_mean(*, mean: float, se: float, n: int) -> Judgement:
    return judge_effect(mean, se, direction=+1, df=n - 1, n=n).for_row(f"{mean:+.3f} ± {se:.2g}")


RULES = (Rule("h-x-toy/mean", "mean of the draws above zero", "a made-up paper: above zero", DIRECTION, _judge_mean,
              margin=Margin(0.01, "draw units", "smallest effect of interest", "smallest effect of interest: a tenth of the draws' standard deviation of 1 (a toy)"),
              case=Case("a made-up paper: the mean is above zero", {"mean": 0.1, "se": 0.01, "n": 1000},
                        {"mean": -0.1, "se": 0.01, "n": 1000})),)

EXPERIMENT = from_module(__name__, id="h-x-toy")

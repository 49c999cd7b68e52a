"""The tuning protocol: edge detection, extension until interior, stated bounds,
limits, disjoint seeds, equal candidates, the payload records, power, and the trace figure."""

import math

import numpy as np
import pytest
from scipy.stats import norm

from dpcompanion.experiments.protocols import tuning


def test_edge_and_interior():
    assert tuning.edge(1, [3, 1, 2]) == "low" and tuning.edge(3, [3, 1, 2]) == "high"
    assert tuning.edge(2, [1, 2, 3]) is None and tuning.interior(2, [1, 2, 3])
    assert tuning.edge(0.5, [0.5]) == "both" and not tuning.interior(0.5, [0.5])


@pytest.mark.parametrize("call, match", [
    (lambda: tuning.edge(4, [1, 2, 3]), "not in the grid"),
    (lambda: tuning.edge(1, []), "at least one finite"),
    (lambda: tuning.edge(1, [1, float("nan")]), "at least one finite"),
    (lambda: tuning.extend([1, 2], "up"), "side must be"),
    (lambda: tuning.extend([1, 2], "high", scale="cubic"), "scale must be"),
    (lambda: tuning.extend([0.5, 1.5], "high", scale="to_one"), r"needs a grid in \(0, 1\)"),
    (lambda: tuning.extend([0.0, 1.0], "low", scale="log"), "needs a grid > 0"),
    (lambda: tuning.select([{"a": 1}], [1.0, 2.0]), "one value per candidate"),
    (lambda: tuning.select([{"a": 1}], [float("nan")]), "finite"),
    (lambda: tuning.tune(lambda cs: [0.0] * len(cs), {}), "at least one parameter"),
    (lambda: tuning.tune(lambda cs: [0.0], {"a": [1, 2]}), "one finite score per candidate"),
    (lambda: tuning.repeats_for_power(sd=1.0, effect=0.0), "effect must be"),
    (lambda: tuning.repeats_for_power(sd=-1.0, effect=1.0), "sd must be"),
    (lambda: tuning.repeats_for_power(sd=1.0, effect=1.0, power=1.0), "power and alpha"),
    (lambda: tuning.min_detectable(float("inf")), "se must be"),
])
def test_bad_input_is_refused(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_extend_steps_and_limits():
    assert tuning.extend([50, 100, 150], "high") == 200.0 and tuning.extend([50, 100, 150], "low") == 0.0
    assert tuning.extend([50, 100, 150], "low", lower=10) == 10.0  # clamped once to the limit ...
    assert tuning.extend([10, 100, 150], "low", lower=10) is None  # ... then no further
    assert tuning.extend([0.9, 0.97, 0.99], "high", scale="to_one") == pytest.approx(0.995)
    assert tuning.extend([0.9, 0.97], "low", scale="to_one") == pytest.approx(0.8)
    assert tuning.extend([1e-5, 1e-3], "high", scale="log") == 0.1
    assert tuning.extend([1, 512, 8192], "high", scale="log") == 8192 * 16
    assert tuning.extend([10, 25], "high", integer=True) == 40.0


def test_select_picks_best_and_first_on_ties():
    c = [{"x": 1}, {"x": 2}, {"x": 3}]
    assert tuning.select(c, [2.0, 1.0, 1.0])[0] == 1
    assert tuning.select(c, [2.0, 1.0, 3.0], minimize=False)[0] == 2


def test_tune_extends_an_unstated_edge_until_interior():
    calls = []

    def f(cs):
        calls.append([c["g"] for c in cs])
        return [(c["g"] - 0.997) ** 2 for c in cs]

    ch, tr = tuning.tune(f, {"g": [0.9, 0.94, 0.97, 0.99]}, scales={"g": "to_one"}, limits={"g": (None, 0.9999)})
    assert ch["g"] == pytest.approx(0.9975) and tr["edge"]["g"] is None and tr["stopped"]["g"] is None
    assert tr["grids"]["g"][-2:] == pytest.approx([0.9975, 0.99875])
    # every candidate is scored once: the first call the start grid, then one new value per round
    assert calls[0] == [0.9, 0.94, 0.97, 0.99] and all(len(c) == 1 for c in calls[1:]) and tr["rounds"] == len(calls) - 1
    assert len(tr["candidates"]) == len(tr["scores"]) == sum(len(c) for c in calls)


def test_tune_keeps_a_stated_edge_and_flags_it():
    ch, tr = tuning.tune(lambda cs: [-c["T"] for c in cs], {"T": [50, 100, 150]},
                         stated={"T": {"low": (50, "T in [50, 150]"), "high": (150, "T in [50, 150]")}}, integer=("T",))
    assert ch == {"T": 150} and tr["stated_bound"]["T"] == "T in [50, 150]" and tr["stopped"]["T"] == "stated"
    assert tr["grids"]["T"] == [50.0, 100.0, 150.0]  # not extended
    # with the bound lifted (beyond the paper) the same scores extend the grid up to the limit
    ch, tr = tuning.tune(lambda cs: [-c["T"] for c in cs], {"T": [50, 100, 150]}, limits={"T": (1, 300)},
                         integer=("T",), max_rounds=10)
    assert ch == {"T": 300} and tr["stopped"]["T"] == "limit" and tr["stated_bound"]["T"] is None
    rec = tuning.record(tr, method="uni", tuning_seeds=[1], report_seeds=[2], setting="beyond")[0]
    assert not rec["interior"] and rec["stated_bound"] is None and rec["grid_max"] == 300.0


def test_a_stated_bound_beyond_the_grid_is_reached_not_passed():
    ch, tr = tuning.tune(lambda cs: [-c["C"] for c in cs], {"C": [1e-5, 1e-3]}, scales={"C": "log"},
                         stated={"C": {"high": (1.0, "C <= 1")}}, max_rounds=10)
    assert ch == {"C": 1.0} and max(tr["grids"]["C"]) == 1.0 and tr["stated_bound"]["C"] == "C <= 1"
    # a choice inside never carries the stated text
    ch, tr = tuning.tune(lambda cs: [abs(math.log10(c["C"]) + 3) for c in cs], {"C": [1e-5, 1e-3, 1.0]},
                         scales={"C": "log"}, stated={"C": {"high": (1.0, "C <= 1")}})
    assert ch == {"C": 1e-3} and tr["stated_bound"]["C"] is None


def test_tune_stops_after_max_rounds():
    ch, tr = tuning.tune(lambda cs: [-c["x"] for c in cs], {"x": [1, 2]}, max_rounds=2)
    assert ch == {"x": 4.0} and tr["rounds"] == 2 and tr["stopped"]["x"] == "rounds"


def test_two_parameters_extend_only_the_one_at_an_edge():
    ch, tr = tuning.tune(lambda cs: [(c["a"] - 2) ** 2 + (c["b"] - 5) ** 2 for c in cs], {"a": [1, 2, 3], "b": [1, 2]},
                         max_rounds=5)
    assert ch == {"a": 2.0, "b": 5.0} and tr["grids"]["a"] == [1.0, 2.0, 3.0] and tr["grids"]["b"][-1] == 6.0
    assert len(tr["candidates"]) == 3 * len(tr["grids"]["b"])  # the product, each point once


def test_disjoint_seeds_and_record():
    tuning.disjoint_seeds([1, 2, 3], [4, 5])
    with pytest.raises(ValueError, match="disjoint"):
        tuning.disjoint_seeds([1, 2, 3], [3, 4])
    _, tr = tuning.tune(lambda cs: [abs(c["g"] - 0.95) for c in cs], {"g": [0.9, 0.95, 0.99]})
    with pytest.raises(ValueError, match="disjoint"):
        tuning.record(tr, method="exp", tuning_seeds=[7], report_seeds=[7, 8])
    (e,) = tuning.record(tr, method="exp", tuning_seeds=[7], report_seeds=[8, 9], cell="N = 10")
    for key in ("param", "method", "chosen", "grid_min", "grid_max", "interior", "stated_bound", "tuning_seeds",
                "report_seeds"):
        assert key in e
    assert e["chosen"] == 0.95 and e["interior"] and e["cell"] == "N = 10" and e["n_candidates"] == 3
    assert e["trace"]["scores"] == tr["scores"]


def test_equal_grids_give_equal_candidates():
    """Two methods tuned on the same grid with the same rule search the same number of candidates,
    even when each extends it (the count is what the verdicts read)."""
    grid = {"g": [0.9, 0.95, 0.99]}
    _, a = tuning.tune(lambda cs: [c["g"] for c in cs], grid, scales={"g": "to_one"}, max_rounds=1)
    _, b = tuning.tune(lambda cs: [-c["g"] for c in cs], grid, scales={"g": "to_one"}, max_rounds=1)
    ra = tuning.record(a, method="a", tuning_seeds=[1], report_seeds=[2])[0]
    rb = tuning.record(b, method="b", tuning_seeds=[1], report_seeds=[2])[0]
    assert ra["n_candidates"] == rb["n_candidates"] == 4


def test_repeats_for_power_reaches_80_percent_and_not_one_fewer():
    z = norm.ppf(0.975)
    for sd, eff in ((1.0, 0.5), (0.36, 0.07), (2.0, 3.0)):
        n = tuning.repeats_for_power(sd=sd, effect=eff)
        power = lambda k: norm.cdf(abs(eff) * math.sqrt(k) / sd - z)  # noqa: E731 (one-sided tail, two-sided test)
        assert power(n) >= 0.8 and (n == 2 or power(n - 1) < 0.8)
    assert tuning.min_detectable(0.1) == pytest.approx((z + norm.ppf(0.8)) * 0.1)


def test_tuning_trace_figure():
    import matplotlib

    matplotlib.use("Agg")
    from dpcompanion.book import library_figures

    _, p = tuning.tune(lambda cs: [-c["T"] for c in cs], {"T": [50, 100, 150]}, stated={"T": {"high": "stated"}})
    _, b = tuning.tune(lambda cs: [abs(c["T"] - 200) for c in cs], {"T": [50, 100, 150]})
    entries = (tuning.record(p, method="uni", tuning_seeds=[1], report_seeds=[2], cell="N = 1")
               + tuning.record(b, method="uni", tuning_seeds=[1], report_seeds=[2], cell="N = 1", setting="beyond"))
    fig = library_figures.tuning_trace(entries=entries)
    (ax,) = fig.axes
    assert ax.get_xlabel() == "T" and len(ax.lines) >= 3  # profile, star, circle (+ the stated bound)
    with pytest.raises(ValueError, match="at least one"):
        library_figures.tuning_trace(entries=[])
    np.testing.assert_allclose(ax.lines[0].get_xdata(), [50, 100, 150, 200, 250])

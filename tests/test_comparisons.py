"""Every verdict rule of dpcompanion.experiments.comparisons: a case that agrees, one that
disagrees, one not comparable (sizes differ); the inputs are hand-made so the expected
verdict follows from the rule's stated tolerance (z >= 2)."""

import pytest

from dpcompanion.experiments import comparisons as cmp


def _eff(diff, se):
    return {"N": [100, 1000], "diff": diff, "se": se}


CASES = {
    # rule id: (agrees, disagrees)
    "h-f-eff/loss": (_eff([0.01, 0.05], [0.01, 0.01]), _eff([0.01, -0.05], [0.01, 0.01])),
    "h-f-eff/acc": (_eff([0.0, 0.03], [0.01, 0.01]), _eff([0.0, -0.001], [0.01, 0.01])),
    "h-f-scale/dyn": ({"scales": [5, 25], "rel_dyn": [-0.01, -0.1], "se_dyn": [0.01, 0.01], "tvar": [0.1, 0.5]},
                      {"scales": [5, 25], "rel_dyn": [0.05, 0.1], "se_dyn": [0.01, 0.01], "tvar": [0.1, 0.5]}),
    "h-f-infl/increasing": ({"diff": 1.0, "se": 0.1}, {"diff": -1.0, "se": 0.1}),
    "h-f-curv": ({"sharp": 0.04, "sharp_se": 0.005, "flat": 0.01, "flat_se": 0.001},
                 {"sharp": 0.01, "sharp_se": 0.001, "flat": 0.04, "flat_se": 0.005}),
    "h-f-mom": ({"cells": [{"scale": 10, "T": 100, "diff": 0.0, "se": 0.1}, {"scale": 25, "T": 100, "diff": 0.5, "se": 0.1}]},
                {"cells": [{"scale": 10, "T": 100, "diff": 0.0, "se": 0.1}, {"scale": 25, "T": 100, "diff": -0.5, "se": 0.1}]}),
}


def test_every_rule_has_cases():
    assert set(CASES) == set(cmp.RULES)


@pytest.mark.parametrize("rid", sorted(CASES))
def test_rule_agrees(rid):
    row = cmp.compare(rid, sizes_match=True, **CASES[rid][0])
    assert row["verdict"] == "agrees", row
    assert row["paper"] == cmp.RULES[rid].paper and "Tolerance" in row["note"]


@pytest.mark.parametrize("rid", sorted(CASES))
def test_rule_disagrees(rid):
    assert cmp.compare(rid, sizes_match=True, **CASES[rid][1])["verdict"] == "disagrees"


@pytest.mark.parametrize("rid", sorted(CASES))
def test_rule_not_comparable_when_sizes_differ(rid):
    row = cmp.compare(rid, sizes_match=False, sizes_note="N 10 vs 1000", **CASES[rid][0])
    assert row["verdict"] == "not comparable"
    assert row["note"].startswith("not compared (sizes differ): N 10 vs 1000")
    assert "'agrees'" in row["note"]  # what the rule would say at our sizes is still reported


def test_partly_cases():
    # exp ahead at the largest N but not significantly
    assert cmp.compare("h-f-eff/loss", sizes_match=True, **_eff([0.0, 0.01], [0.01, 0.01]))["verdict"] == "partly"
    # momexpinfl ahead at (25, 100) but also elsewhere
    cells = [{"scale": 10, "T": 100, "diff": 0.5, "se": 0.1}, {"scale": 25, "T": 100, "diff": 0.5, "se": 0.1}]
    assert cmp.compare("h-f-mom", sizes_match=True, cells=cells)["verdict"] == "partly"
    # no significant difference between curvatures
    assert cmp.compare("h-f-curv", sizes_match=True, sharp=0.02, sharp_se=0.01, flat=0.01, flat_se=0.01)["verdict"] == "partly"


def test_bad_input_names_the_problem():
    with pytest.raises(ValueError, match="rule must be one of"):
        cmp.compare("h-f-nope", sizes_match=True)
    with pytest.raises(ValueError, match="scale 25 and T = 100"):
        cmp.compare("h-f-mom", sizes_match=True, cells=[{"scale": 10, "T": 100, "diff": 0.0, "se": 0.1}])
    with pytest.raises(ValueError, match="need >= 2 sizes"):
        cmp.compare("h-f-eff/loss", sizes_match=True, N=[1], diff=[0.1], se=[0.1])

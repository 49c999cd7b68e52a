"""The closest reading of a printed number we do not reproduce:
``dpcompanion.experiments.comparisons.readings`` and the rows that use it."""

from __future__ import annotations

import itertools
import math
import re

import numpy as np
import pytest

from dpcompanion.book.errata_page import readings_markdown
from dpcompanion.claims import w_adp_eps
from dpcompanion.experiments.comparisons import readings as rd
from dpcompanion.experiments.comparisons import reproduction
from dpcompanion.experiments.comparisons import theory
from dpcompanion.experiments.comparisons import wu_rules
from dpcompanion.theory import adp_accounting

# the rows that disagree with a printed deterministic number (the verdicts the
# readings must not change)
DISAGREES = {
    ("h-f-theory", "T minimising the dynamic bound, kappa=10, alpha=0.001 (Thm 4.4)"),
    ("h-f-theory", "Eq. 24's T as kappa -> infinity, alpha = 0.1 (text after Eq. 9)"),
    ("accounting", "R from the Sec. 4.1.3 inversion as printed"),
    ("accounting", "Sec. 4.1.3: R_zCDP > R_MA = eps^2/ln(1/delta)"),
    ("h-sec-4-2", "largest eta0 for beta = 0.9, gamma = 0.99 (text after Thm 4.5)"),
    ("h-sec-4-2", "same, from the statement's zeta"),
    ("w-f2", "T for 60 epochs (footnote 3, Sec. 6.2)"),
    ("w-f2", "Table 4 caption's 0.1 + a_T sqrt(t) at t = T (60 epochs)"),
}
NOTE_RE = re.compile(r"(reproduced under reading .+ \(value [^,]+, deviation [^,;)]+"
                     r"|no natural reading reproduces it \(closest: .+, value [^,]+, deviation [^,;]+)")


def test_closest_picks_the_nearest_reading_and_judges_it_by_the_tolerance():
    """closest() on toy readings: the nearest value, ties to the first listed
    (the stated reading), absolute and relative tolerances, a printed inequality, bad input."""
    rs = [rd.Reading("stated", 1.0, stated=True), rd.Reading("b", 3.0), rd.Reading("c", 2.1)]
    c = rd.closest(2.0, rs, atol=0.05)
    assert (c.reading.name, c.reproduces) == ("c", False)
    assert c.deviation == pytest.approx(0.1) and c.relative == pytest.approx(0.05) and c.tried == tuple(rs)
    assert rd.closest(2.0, rs, atol=0.1).reproduces and rd.closest(2.0, rs, rtol=0.05).reproduces
    assert rd.closest(2.0, [rd.Reading("a", 1.0, True), rd.Reading("b", 3.0)]).reading.name == "a"  # tie: first
    assert rd.closest(0.0, [rd.Reading("z", 0.0004)], atol=1e-3).relative is None  # a printed zero
    ineq = rd.closest(1.0, [rd.Reading("low", 0.2, True), rd.Reading("high", 5.0)], relation=">")
    assert (ineq.reading.name, ineq.deviation, ineq.reproduces) == ("high", 0.0, True)
    assert not rd.closest(1.0, [rd.Reading("low", 0.2)], relation=">").reproduces
    with pytest.raises(ValueError, match="at least one"):
        rd.closest(1.0, [])
    with pytest.raises(ValueError, match="relation must be"):
        rd.closest(1.0, rs, relation="<")


def test_note_and_field_say_reproduced_or_the_closest_with_its_deviation():
    """The two sentences of a row's note and the JSON field."""
    yes = rd.closest(2.0, [rd.Reading("stated", 1.0, True), rd.Reading("other", 2.0)])
    assert rd.note(yes).startswith("reproduced under reading other (value 2, deviation 0")
    assert "the verdict stays with it" in rd.note(yes)
    no = rd.closest(2.0, [rd.Reading("a", 1.0, True), rd.Reading("b", 2.5)], atol=0.1)
    assert rd.note(no) == ("no natural reading reproduces it (closest: b, value 2.5, deviation 0.5, relative 0.25; "
                           "tried 2 readings)")
    assert rd.note(no, tried="the grid").endswith("tried 2: the grid)")
    assert rd.field(no) == {"name": "b", "value": 2.5, "deviation": 0.5, "relative": 0.25, "reproduces": False,
                            "stated": False, "tried": 2,
                            "readings": [{"name": "a", "value": 1.0, "stated": True},
                                         {"name": "b", "value": 2.5, "stated": False}]}


def _rows() -> list[tuple[str, dict]]:
    return ([("h-f-theory", r) for r in theory.h_f_theory_rows()]
            + [("accounting", r) for r in theory.accounting_rows() if r["rule"] != "w-eps/epsilon"]
            + [("h-sec-4-2", r) for r in theory.h_sec_4_2_rows()] + [("w-f2", r) for r in wu_rules.w_f2_rows()])


def test_every_disagreeing_theory_row_names_its_closest_reading_and_deviation():
    """Each h-f-theory, accounting, h-sec-4-2 and W-F2 row that disagrees with a
    printed number names the closest reading and its deviation in its note and its reading field;
    the readings change no verdict (a reading that departs from the text and reproduces the
    number leaves the row 'not reproduced', outcome failure)."""
    rows = _rows()
    assert {(p, r["item"]) for p, r in rows if r["outcome"] == "failure"} == DISAGREES
    for page, r in rows:
        if r["outcome"] != "failure":
            continue
        assert NOTE_RE.search(r["note"]), (page, r["note"])
        f = r["reading"]
        assert f["name"] in r["note"] and math.isfinite(f["deviation"]) and f["tried"] >= 2
        if f["reproduces"]:
            assert not f["stated"]  # else the stated protocol would reproduce it and the row agree
    by_item = {r["item"]: r["reading"] for _, r in rows if r.get("reading")}
    # the closest readings found (the explanations the book gives)
    assert by_item["Eq. 24's T as kappa -> infinity, alpha = 0.1 (text after Eq. 9)"]["name"].startswith(
        "the surrogate's minimiser (Eq. 23")
    assert by_item["R from the Sec. 4.1.3 inversion as printed"]["name"] == "R = 2 rho of the quadratic's other root"
    assert not by_item["T minimising the dynamic bound, kappa=10, alpha=0.001 (Thm 4.4)"]["reproduces"]
    assert by_item["T for 60 epochs (footnote 3, Sec. 6.2)"]["value"] == 11700


def test_theory_readings_recompute_from_independent_formulas():
    """The stated readings are the rows' own 'ours', and the readings that
    explain a number recompute from formulas rewritten here."""
    t = theory.t_star_readings(kappa=10, alpha=1e-3)
    assert t[0].stated and t[0].value == 24
    assert t[3].value == pytest.approx(2 * 10 * math.log(101) / math.log(2))
    L = math.log(1e8)
    R = theory.R_readings(epsilon=4, delta=1e-8)
    assert R[0].value == pytest.approx(2 * (math.sqrt(L + 4) - math.sqrt(L)) ** 2, rel=1e-12)
    assert R[2].value == pytest.approx(2 * (math.sqrt(L + 4) + math.sqrt(L)) ** 2, rel=1e-12)
    e = theory.eta0_readings(beta=0.9, gamma=0.99)
    c = 0.9 * 0.99 / (0.09**2 * 0.1**3)
    assert e[0].value == pytest.approx((-0.25 + math.sqrt(0.0625 + 4 * c)) / (2 * c), rel=1e-10)


def test_the_verdict_json_passes_the_reading_through():
    """The reproduction report's rows (the verdicts JSON) carry the rule rows' reading field."""
    rows = reproduction.report_rows(pages=["h-sec-4-2", "w-f2"])
    dis = [r for r in rows if r["outcome"] == "failure"]
    assert dis and all(r["reading"]["name"] in r["note"] for r in dis)
    assert all("reading" not in r for r in rows if r["outcome"] == "success")
    table = readings_markdown(rows)
    assert table.count("\n") == 2 + len(dis) and "no natural reading reproduces it" in table


_GRID_NAME = re.compile(r"T (\d+), N (\d+), delta (1/N|[0-9.e-]+), B_delta (main|appendix), RDP (improved|classic) "
                        r"conversion")


def _independent_epsilon(*, eps_bar, T, N, delta, b_delta, conversion, m=256, C=1.0):
    """W's footnote-3 epsilon rewritten here: Thm 4.1's noise on the batch mean (Eq. 6 or Eq. 13),
    its multiplier on the sum, dp-accounting's RDP accountant called directly."""
    import dp_accounting as dpa

    B = math.log(16 * T * (m if b_delta == "appendix" else 1) / (N * delta)) * math.log(1.25 / delta)
    z = 16 * C * math.sqrt(B * T) / (N * 16 * eps_bar) * m / C
    event = dpa.PoissonSampledDpEvent(m / N, dpa.GaussianDpEvent(z))
    if conversion == "improved":
        a = dpa.rdp.RdpAccountant()
        a.compose(event, T)
        return a.get_epsilon(delta)
    orders = [1 + x / 10.0 for x in range(1, 100)] + list(range(12, 64))
    a = dpa.rdp.RdpAccountant(orders)
    a.compose(event, T)
    return float(np.min(np.asarray(a.rdp) - math.log(delta) / (np.asarray(orders) - 1)))


@pytest.mark.slow
@pytest.mark.xdist_group("w_eps_readings")
def test_w_eps_rows_name_the_closest_reading_which_recomputes_from_the_library():
    """W-EPS: the stated protocol's values (the three accountants of the
    w-eps rows) are among the readings; every row names its closest reading and deviation, the
    words stay 'not reproduced' (outcome failure), and the closest reading recomputes independently."""
    readings = w_adp_eps.w_eps_readings()
    table = w_adp_eps.w_eps_table()
    g = w_adp_eps.W_EPS_READING_GRID
    n_grid = len(list(itertools.product(*g.values())))
    for eb, rs in readings.items():
        stated = {v for _, v, s in rs if s}
        assert stated == {r["epsilon_accountant"] for r in table if r["b_delta"] == "main" and r["epsilon_bar"] == eb}
        assert len(rs) == 3 + n_grid - len(g["conversion"]) + 2  # the stated combination is listed once, as stated
    rows = wu_rules.w_eps_rows(table, readings)
    assert [(r["verdict"], r["outcome"]) for r in rows] == [("not reproduced", "failure")] * 5
    for r in rows:
        assert NOTE_RE.search(r["note"]) and "closest single reading" in r["note"]
        f = r["reading"]
        assert not f["reproduces"] and f["deviation"] == pytest.approx(abs(f["value"] - float(r["paper"].split()[0])))
        T, N, d, bd, conv = _GRID_NAME.fullmatch(f["name"]).groups()
        eb = float(r["item"].split("= ")[1])
        value = _independent_epsilon(eps_bar=eb, T=int(T), N=int(N), delta=1 / int(N) if d == "1/N" else float(d),
                                     b_delta=bd, conversion=conv)
        assert f["value"] == pytest.approx(value, rel=1e-9)
        # and it is the closest of all the readings
        assert f["deviation"] == min(abs(v - float(r["paper"].split()[0])) for _, v, _ in readings[eb])
    # the accounting page shows the same W-EPS rows with their readings
    acc_rows = [r for r in theory.accounting_rows() if r["rule"] == "w-eps/epsilon"]
    assert [r["reading"] for r in acc_rows] == [r["reading"] for r in rows]
    assert adp_accounting.W_SEC6["T"] == 11700 and 11700 in g["T"] and 50000 in g["N"] and 1e-5 in g["delta"]

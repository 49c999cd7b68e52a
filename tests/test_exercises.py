"""The exercises' answers against the papers' formulas, rewritten here, and the built pages showing them.

The library computes every number of a solution (dpcompanion.book.exercises); each test below
recomputes it from the formula as the paper prints it, with numpy and math only.
"""

from __future__ import annotations

import html
import math
import re

import numpy as np
import pytest

from bookutil import require_build, toc_files
from dpcompanion.book.exercises import EXERCISES


def _paper(ex_id: str, g: dict) -> dict[str, float]:
    """The answers of exercise ``ex_id`` from the papers' formulas (independent of the library)."""
    if ex_id in ("3.1", "3.2", "4.5"):
        L = math.log(1 / g["delta"])
        rho = (math.sqrt(L + g["epsilon"]) - math.sqrt(L)) ** 2  # Lemma C.3, rho + 2 sqrt(rho L) = eps solved
        R = 2 * rho  # Thm 3.1: R/2-zCDP
        if ex_id == "3.1":
            return {"L": L, "rho": rho, "R": R, "eps_back": rho + 2 * math.sqrt(rho * L)}
        if ex_id == "3.2":
            return {"R": R, "sigma": math.sqrt(g["T"] / R), "spent": R}
        n = max(g["N"] * math.sqrt(R), 1)  # Thm 4.8's batch size
        return {"R": R, "n": n, "p": n / g["N"], "R_prime": R * (g["N"] / n) ** 2}
    if ex_id == "3.3":
        R = g["T"] / g["sigma"] ** 2
        return {"R": R, "rho": R / 2, "eps": R / 2 + 2 * math.sqrt(R / 2 * math.log(1 / g["delta"]))}
    if ex_id == "4.1":
        q, R = np.array(g["q"]), g["R"]
        s2 = [np.sum(np.sqrt(q / qt)) / R for qt in q]  # Lemma 4.3, Eq. 10
        mn = np.sum(np.sqrt(q)) ** 2
        return {"s1": s2[0], "s2": s2[1], "s3": s2[2], "minimum": mn, "uniform": len(q) * q.sum(),
                "ratio": len(q) * q.sum() / mn}
    if ex_id == "4.2":
        gam = 1 - 1 / g["kappa"]
        return {"gamma": gam, "q1": gam ** (g["T"] - 1) * g["alpha"], "qT": g["alpha"], "ratio": gam ** -(g["T"] - 1)}
    if ex_id == "4.3":
        k, a = g["kappa"], g["alpha"]
        gam = 1 - 1 / k
        lg = math.log(1 / gam)
        s = 1 - math.sqrt(gam)
        uni = lambda T: gam**T + a * k * (1 - gam**T) * T  # noqa: E731 - Eq. 9
        dyn = lambda T: gam**T + a * ((1 - gam ** (T / 2)) / s) ** 2  # noqa: E731 - proof of Thm 4.4
        Tu = min(range(1, 5000), key=uni)
        Td = min(range(1, 5000), key=dyn)
        T27 = 2 * math.log(a / (a + s**2)) / math.log(gam)
        A = a / s**2
        Tst = 2 * k * math.log(1 + 1 / (k * a))
        return {"T24": math.log(1 + lg / a) / lg, "E25": (1 + k * math.log(1 + lg / a)) / (1 + lg / a), "T27": T27,
                "Tst": Tst, "Emin": A / (A + 1), "Tu": Tu, "Eu": uni(Tu), "Td": Td, "Ed": dyn(Td),
                "Est": dyn(math.ceil(Tst)), "st_ratio": Tst / T27, "st_excess": dyn(math.ceil(Tst)) / (A / (A + 1))}
    if ex_id == "4.4":
        b, gm = g["beta"], g["gamma"]
        e = 8 / (math.sqrt(1 + 64 * b * gm / ((gm - b) ** 2 * (1 - b) ** 3)) + 1)  # Thm 4.5
        z = lambda x: 1 - x / 4 - b * gm * x**2 / ((gm - b) ** 2 * (1 - b) ** 3)  # noqa: E731 - App. D.2
        T_hat = max(t for t in range(1, 100_000) if gm ** (t - 1) >= (1 - b) / (1 - b**t))  # Lemma C.7
        return {"eta0": e, "zeta_half": z(e / 2), "zeta_printed": 1 - e**2 / (b * (1 - b) ** 3) - e / 4, "T_hat": T_hat}
    if ex_id == "W.1":
        bt = np.sqrt(g["a"] + g["c"] * np.arange(1, g["T"] + 1))
        m_dp, m_adp = g["T"] * np.sum(bt**-2), np.sum(1 / bt) ** 2  # W Remark 4.1
        return {"M_dp": m_dp, "M_adp": m_adp, "ratio": m_dp / m_adp}
    raise KeyError(f"exercise {ex_id} has no formula in this test: add one")


def test_every_theory_chapter_has_exercises():
    pages = {e.page for e in EXERCISES}
    for page in ("h-sec-3", "h-sec-4-1", "h-sec-4-2", "h-sec-4-3", "w-theory"):
        assert page in pages, f"no exercises on {page}"
    assert len({e.id for e in EXERCISES}) == len(EXERCISES)


@pytest.mark.parametrize("ex", EXERCISES, ids=lambda e: e.id)
def test_the_library_answer_equals_the_papers_formula(ex):
    ours, paper = ex.answers(**ex.givens), _paper(ex.id, ex.givens)
    assert set(ours) == set(paper), f"exercise {ex.id}: answers {sorted(ours)}, the test knows {sorted(paper)}"
    for k in ours:
        assert ours[k] == pytest.approx(paper[k], rel=1e-9), f"exercise {ex.id}, {k}: library {ours[k]}, paper {paper[k]}"


def test_every_answer_is_used_by_its_solution():
    """An answer computed but never shown is dead; one shown but not computed cannot exist (format fails)."""
    for ex in EXERCISES:
        for k in ex.answers(**ex.givens):
            assert "{" + k in ex.solution, f"exercise {ex.id} computes {k} but its solution never shows it"


@pytest.mark.parametrize("ex", EXERCISES, ids=lambda e: e.id)
def test_the_built_page_shows_the_exercise_and_its_numbers(ex):
    assert f"book/{ex.page}" in toc_files(), f"{ex.page} is not in the table of contents"
    page = html.unescape((require_build() / "book" / f"{ex.page}.html").read_text(encoding="utf-8"))
    text = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", page))
    assert f"Exercise {ex.id}" in text, f"{ex.page}.html shows no Exercise {ex.id}"
    solution = re.sub(r"\s+", " ", ex.solution.strip().format(**ex.values()))
    for number in re.findall(r"=\s*(-?\d+(?:\.\d+)?(?:e-?\d+)?)", solution):
        assert number in text, f"{ex.page}.html: exercise {ex.id}'s solution value {number} is not on the page"

"""The derivations on the theory pages are the checks' own computation.

A symbolic check of Thm 4.1, Lemma 4.3, Thm 4.4 or Thm 4.5 records each step it computes
(:class:`dpcompanion.claims.registry.Derivation`); the page numbers and prints those steps
(:func:`dpcompanion.book.claims_page.derivation_lines`). The tests rerun the checks and fail when a
passing check shows no steps, or when the built page does not show the steps this run computed,
each after its own anchor.
"""

from __future__ import annotations

import html
import re

import pytest

from bookutil import require_build
from dpcompanion.book.claims_page import label
from dpcompanion.claims.registry import PASSING, Derivation, load_all, run_claim

#: the results a teacher cites, and the pages that check them
CITED = {"H-T4.1": "h-sec-4-1", "H-L4.3": "h-sec-4-1", "H-T4.4": "h-sec-4-1", "H-T4.5": "h-sec-4-2"}


def _symbolic_claims() -> list[str]:
    reg = load_all()
    return sorted(cid for cid, c in reg.items() if c.method == "sympy" and cid.startswith(tuple(CITED)))


def _page_of(claim_id: str) -> str:
    return next(page for prefix, page in CITED.items() if claim_id.startswith(prefix))


@pytest.fixture(scope="module")
def runs() -> dict[str, dict]:
    return {cid: run_claim(load_all()[cid]) for cid in _symbolic_claims()}


def test_the_cited_results_have_symbolic_checks():
    """A guard against the parametrised tests below passing on an empty list: each cited result has a
    SymPy check."""
    ids = _symbolic_claims()
    for prefix in CITED:
        assert any(cid.startswith(prefix) for cid in ids), f"no SymPy check of {prefix}"


@pytest.mark.parametrize("claim_id", _symbolic_claims())
def test_a_passing_symbolic_check_records_its_derivation(claim_id, runs):
    """Every passing SymPy check of a cited result returns its steps, each with a justification and a
    relation the page can print."""
    r = runs[claim_id]
    if r["status"] not in PASSING:
        pytest.skip(f"{claim_id} is {r['status']}: its page shows the counterexample, not a derivation")
    steps = r["evidence"].get("derivation")
    assert steps, f"{claim_id} is {r['status']} but its check recorded no derivation"
    for i, st in enumerate(steps, 1):
        assert st["lhs"].strip() and st["rhs"].strip(), f"{claim_id} step {i} has an empty side"
        assert st["why"].strip(), f"{claim_id} step {i} says nothing about what justifies it"
        assert st["rel"] in Derivation.RELATIONS, f"{claim_id} step {i}: relation {st['rel']!r}"


_MATH = re.compile(r'<div class="math[^"]*"[^>]*>(.*?)</div>', re.S)
_NUMBER = re.compile(r'<span class="eqno">\((\d+)\)')


def _squash(tex: str) -> str:
    return re.sub(r"\s+", "", tex)


def _page(page: str) -> str:
    return (require_build() / "book" / f"{page}.html").read_text(encoding="utf-8")


def _step_equation(text: str, key: str) -> tuple[int, str] | None:
    """Where the page anchors a step (``id="key"``), and the first displayed equation after the anchor."""
    at = text.find(f'id="{key}"')
    if at < 0:
        return None
    m = _MATH.search(text, at)
    return (at, _squash(html.unescape(m.group(1)))) if m else (at, "")


@pytest.mark.parametrize("claim_id", _symbolic_claims())
def test_the_page_shows_the_steps_the_check_computed(claim_id, runs):
    """The built page of the claim shows each step this run of the check computed, in order, each
    equation after its step's anchor (``<claim>-step-<i>``, the link a teacher cites), and no equation of
    the step carries a page-wide number a reader would take for the paper's (a page built from another
    computation fails)."""
    r = runs[claim_id]
    steps = r["evidence"].get("derivation") or []
    if not steps:
        pytest.skip(f"{claim_id} records no derivation ({r['status']})")
    text = _page(_page_of(claim_id))
    places = []
    for i, st in enumerate(steps, 1):
        key = f"{label(claim_id)}-step-{i}"
        found = _step_equation(text, key)
        assert found, f"{_page_of(claim_id)}.html has no anchor {key} (step {i} of {claim_id})"
        at, shown = found
        expected = _squash(f"{st['lhs']} {Derivation.RELATIONS[st['rel']]} {st['rhs']}")
        assert expected in shown, f"{key}: the page shows {shown!r}, the check computed {expected!r}"
        assert not _NUMBER.search(text[at:text.find("</div>", text.find('class="math', at))]), \
            f"{key} is numbered page-wide"
        places.append(at)
    assert places == sorted(places), f"{claim_id}: steps out of order"
    assert _step_equation(text, f"{label(claim_id)}-step-{len(steps) + 1}") is None, \
        f"the page shows more steps of {claim_id} than its check computed"

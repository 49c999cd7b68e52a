"""The claim registry: coverage of SPEC section 3, no open or erroring entries, consistent
corrections, evidence shaped by status, MyST rendering; and every refuted entry of the
Hong et al. privacy / GD / PSGD / true-risk / table / slide modules reproduced here by an
independent computation (not read from the evidence)."""

import math
import re

import numpy as np
import pytest
import sympy as sp

from dpcompanion.claims import registry
from dpcompanion.book import claims_page as render
from dpcompanion.book import errata_page

# SPEC section 3, one row each (the momentum / ADP-SGD rows are the other engineer's).
SPEC_ROWS = [
    "H-L3.1", "H-C3", "H-C4", "H-T4.1", "H-T4.2", "H-L4.3", "H-E26", "H-T4.4", "H-S4.1.3",
    "H-T4.5", "H-T4.6", "H-T4.7", "H-C5", "H-C6", "H-C7", "H-T4.8", "H-T4.9", "H-T4.10",
    "H-T4.11", "H-T4.12", "H-Tab1", "H-Tab2", "H-Slides", "W-L2.2", "W-T4.1", "W-T4.2",
    "W-P5.1", "W-P5.2", "W-EPS", "X-UNIFY",
]

# refuted entries of this module set, each reproduced by a test below
OURS = ("H-L3.1", "H-C3", "H-C4", "H-T4.1.", "H-T4.2", "H-L4.3", "H-E26", "H-T4.4", "H-S4.1.3", "H-T4.8",
        "H-T4.10", "H-T4.11", "H-T4.12", "H-Tab", "H-Slides.uniform", "H-Slides.dynamic")
OUR_REFUTED = {
    "H-C3.inverse-printed", "H-C3.R-compare", "H-C4.bound", "H-E26.printed", "H-T4.2.T-limit",
    "H-T4.2.Eq8-uniform", "H-T4.4.T-opt", "H-S4.1.3.alpha-regime", "H-S4.1.3.sharp", "H-T4.10",
    "H-T4.12", "H-Tab2.uniform-stability", "H-Slides.uniform-T", "H-Slides.dynamic-T",
    # the missing entries (in their sections' modules), reproduced in tests/test_claims_end_to_end.py
    "H-T4.2.T-eq24-vs-minimiser", "H-Tab2.uniform-stability.lower-bound", "H-Tab2.high-probability.first-term",
}


def _row_covered(row, ids):
    return any(i == row or i.startswith(row + ".") or i.startswith(row + "-") for i in ids)


def test_every_spec_row_has_an_entry():
    ids = list(registry.load_all())
    missing = [r for r in SPEC_ROWS if not _row_covered(r, ids)]
    assert not missing, f"SPEC section 3 rows without a registry entry: {missing}"


def test_every_entry_has_a_check_and_known_method():
    for cid, c in registry.load_all().items():
        assert callable(c.check), cid
        assert c.method in registry.METHODS, cid
        assert c.statement and c.source, cid


def test_corrections_are_consistent():
    reg = registry.load_all()
    for cid, c in reg.items():
        if c.corrected_by:
            assert c.corrected_by in reg, f"{cid} -> missing {c.corrected_by}"
            assert reg[c.corrected_by].corrects == cid, f"{c.corrected_by} should correct {cid}"
        if c.corrects:
            assert c.corrects in reg, f"{cid} corrects missing {c.corrects}"


@pytest.fixture(scope="module")
def results(claim_results):
    return claim_results  # registry.run_checks(), once per session (conftest.py)


# the tests that read the session's claim runs share a pytest-xdist worker
CLAIM_RESULTS = pytest.mark.xdist_group("claim-results")


@CLAIM_RESULTS
@pytest.mark.slow
def test_no_open_and_no_errors(results):
    bad = [(r["id"], r["status"], r["evidence"].get("exception")) for r in results if r["status"] in ("open", "error")]
    assert not bad, bad


@CLAIM_RESULTS
@pytest.mark.slow
def test_evidence_matches_status(results):
    by_id = {r["id"]: r for r in results}
    for r in results:
        ev = r["evidence"]
        if r["status"] == "proved":
            assert "residual" in ev and "T_checked" not in ev and "T" not in ev, r["id"]
        elif r["status"] == "checked":
            assert "residual" in ev and ev["T_checked"] and all(isinstance(t, int) for t in ev["T_checked"]), r["id"]
        elif r["status"] == "verified":
            assert {"domain", "samples", "worst_margin"} <= set(ev), r["id"]
        elif r["status"] in ("refuted", "not-reproduced"):
            assert "counterexample" in ev and {"lhs", "relation", "rhs"} <= set(ev["comparison"]), r["id"]
        elif r["status"] == "identity":
            assert ev.get("construction"), r["id"]
        elif r["status"] == "illustrated":
            assert ev, r["id"]
        if r["corrected_by"] and r["status"] != "error":
            assert r["status"] in ("refuted", "not-reproduced"), f"{r['id']} has a correction but is {r['status']}"
            assert by_id[r["corrected_by"]]["status"] in (*registry.PASSING, "illustrated"), r["corrected_by"]


@CLAIM_RESULTS
@pytest.mark.slow
def test_our_refuted_set_is_exactly_the_reproduced_one(results):
    ours = {r["id"] for r in results if r["status"] == "refuted" and r["id"].startswith(OURS)}
    assert ours == OUR_REFUTED


@CLAIM_RESULTS
@pytest.mark.slow
def test_errata_lists_every_refuted_entry(results):
    md = errata_page.errata_markdown(results)
    for r in results:
        if r["status"] == "refuted":
            assert f"::::{{admonition}} {r['id']} · " in md  # one folded box per entry
    assert "{ref}`" in md


# --- rendering -----------------------------------------------------------------------------------


def test_render_markdown_blocks():
    rs = [
        {"id": "X-1", "status": "refuted", "method": "numeric", "source": "H Eq. 1", "statement": "$a<b$",
         "evidence": {"counterexample": {"a": 2, "b": 1}, "printed": "a < b", "actual": {"a": 2},
                      "impact": "none"}, "corrected_by": "X-1-corrected", "corrects": None, "versions": ["001"]},
        {"id": "X-1-corrected", "status": "proved", "method": "sympy", "source": "s", "statement": "$a>b$",
         "evidence": {"residual": "0"}, "corrected_by": None, "corrects": "X-1", "versions": ["001"]},
    ]
    md = render.claims_markdown(rs, labels=True)
    assert md.count("::::{admonition}") == 2 and md.count("\n::::\n") == 2
    assert md.count(":::{admonition} Cite this check") == 2 and md.count("@misc{dpcompanion-X-1,") == 1
    assert "(claim-x-1)=" in md and "(claim-x-1-corrected)=" in md
    assert "{ref}`X-1-corrected <claim-x-1-corrected>`" in md
    assert "REFUTED" in md and "PROVED" in md
    assert "**impact**: none" in md
    # every {ref} target is a label of the same block set
    for target in re.findall(r"<(claim-[a-z0-9-]+)>`", md):
        assert f"({target})=" in md
    assert render.status_counts(rs)["refuted"] == 1


def test_show_claims_unknown_prefix_raises():
    with pytest.raises(ValueError, match="no registered claim"):
        render.show_claims("NO-SUCH-PREFIX", results=[])


def test_code_spans_are_safe():
    s = render._code("a`b" + "x" * 1000)
    assert "`" not in s.strip("`").replace("'", "") or s.startswith("``")
    assert len(s) < 420


# --- counterexamples, recomputed independently --------------------------------------------------


def test_ce_inverse_printed():  # H-C3.inverse-printed
    eps, L = 4.0, math.log(1e8)
    rho_printed = eps + 2 * L + 2 * math.sqrt(L * (eps + L))
    assert rho_printed + 2 * math.sqrt(rho_printed * L) > 30 * eps  # about 159, not 4
    rho = (math.sqrt(L + eps) - math.sqrt(L)) ** 2
    assert rho + 2 * math.sqrt(rho * L) == pytest.approx(eps)
    assert 2 * rho == pytest.approx(0.3927, abs=1e-4)  # H Sec. 5 prints R = 0.3927


def test_ce_R_compare():  # H-C3.R-compare
    eps, L = 4.0, math.log(1e8)
    assert eps <= 2 * L
    R_z = 2 * (math.sqrt(L + eps) - math.sqrt(L)) ** 2
    assert R_z < eps**2 / L


def test_ce_lemma_c4():  # H-C4.bound
    x = np.array([1.0, -1.0])
    theta, N, D = 0.5, 2, 1
    M = float(np.mean(x**2))  # smoothness of the mean squared loss
    sens = max(abs(xi * (xi * theta - 1)) for xi in x) / N
    assert sens > 0.5 * (D * M * theta**2 + 1)


def test_lemma_c4_printed_holds_from_N3():  # H-C4.bound: the violation needs N = 2
    # with t = ||theta||, Delta <= (t + 1)/N and DM >= 1/N; (t + 1)/N <= (t^2/N + 1)/2 iff (t - 1)^2 + N - 3 >= 0
    t = np.linspace(0, 10, 2001)
    for N in (3, 4, 10):
        assert np.all((t + 1) / N <= 0.5 * (t**2 / N + 1) + 1e-12)
    assert np.any((t + 1) / 2 > 0.5 * (t**2 / 2 + 1))


def test_ce_eq26():  # H-E26.printed
    q = np.array([1.0, 4.0])
    lhs = 2 * q.sum() - np.sqrt(q).sum() ** 2
    assert lhs != pytest.approx(4 * q.var())
    assert lhs == pytest.approx(4 * np.sqrt(q).var())


def test_ce_eq24_limit():  # H-T4.2.T-limit
    a = 0.1
    for kappa in (1e4, 1e8):
        L = -math.log1p(-1 / kappa)
        T = math.log(1 + L / a) / L
        assert T == pytest.approx(1 / a, rel=1e-3)


def _uniform(T, kappa, a):
    g = 1 - 1 / kappa
    return g**T + a * kappa * (1 - g**T) * T


def test_ce_eq8_uniformity():  # H-T4.2.Eq8-uniform
    ratios = []
    for a in (1e-2, 1e-3, 1e-4):
        kappa = 1e3 / a
        exact_min = min(_uniform(T, kappa, a) for T in range(1, 200))  # T = 1 is best here
        eq8 = kappa**2 / (kappa + 1 / a) * math.log(1 + 1 / (kappa * a))
        ratios.append(exact_min / eq8)
    assert ratios[2] < ratios[1] / 5 < ratios[0] / 25


def test_ce_thm44_T():  # H-T4.4.T-opt
    kappa, a = 10.0, 1e-3
    g = 1 - 1 / kappa

    def dyn(T):
        return g**T + a * ((1 - g ** (T / 2)) / (1 - math.sqrt(g))) ** 2

    T_stat = math.ceil(2 * kappa * math.log(1 + 1 / (kappa * a)))
    T_best = min(range(1, 2000), key=dyn)
    assert T_stat == 93 and T_best == 24
    assert dyn(T_stat) > 1.3 * dyn(T_best)


def test_ce_alpha_regime():  # H-S4.1.3.alpha-regime
    alphas = [10 / (2 * 0.3927 * n**2) for n in (1e2, 1e4, 1e6)]
    assert alphas[0] > alphas[1] > alphas[2] and alphas[2] < 1e-9


def test_ce_sharp_loss():  # H-S4.1.3.sharp
    a, kappa = 1e-4, 1e7
    exact = min(_uniform(T, kappa, a) for T in range(1, 50))
    assert exact == pytest.approx(1 + a - 1 / kappa)
    assert exact < 1e-3 * (1 / a)


def test_ce_thm410():  # H-T4.10
    rng = np.random.default_rng(0)
    N, p, G, mu = 1000, 0.5, 2.0, 1.0
    r = np.sqrt(rng.random((300, N)))
    ang = rng.random((300, N)) * 2 * np.pi
    xbar = np.stack([r * np.cos(ang), r * np.sin(ang)], axis=-1).mean(axis=1)
    theta = xbar + np.array([0.5, 0.0])
    ter = 0.5 * np.sum(theta**2, axis=1)
    emp = 0.5 * np.sum((theta - xbar) ** 2, axis=1)
    printed = np.sqrt(2 * G**2 / (mu * N)) * np.sqrt(emp) + 4 * G**2 / (p * mu * N)
    assert np.mean(ter > printed) > p
    corrected = np.sqrt(2 * G**2 / mu) * np.sqrt(emp) + 4 * G**2 / (p * mu * N)
    assert np.mean(ter > corrected) == 0.0


def test_ce_thm412():  # H-T4.12: linear loss, coupled noise cancels exactly
    N, T, eta = 10, 5, 0.1
    d, d2 = np.r_[1.0, np.ones(N - 1)], np.r_[-1.0, np.ones(N - 1)]
    th = th2 = 0.0
    for _ in range(T):
        th, th2 = th - eta * d.mean(), th2 - eta * d2.mean()
    assert abs(th - th2) == pytest.approx(2 * eta * T / N)
    assert abs(th - th2) > eta * T / N


def test_ce_table2_stability():  # H-Tab2.uniform-stability
    kappa, D, R = 10.0, 10.0, 0.3927
    g = 1 - 1 / kappa
    ratios = []
    for N in (1e4, 1e6):
        a = D / (2 * R * N**2)
        vals = [(g**T + a * ((1 - g ** (T / 2)) / (1 - math.sqrt(g))) ** 2, T) for T in range(1, 3000)]
        eer, T = min(vals)
        ratios.append((eer + 2 * T / N) / (D / (N**2 * R)))
    assert ratios[1] > 50 * ratios[0]


def test_ce_slides_uniform():  # H-Slides.uniform-T
    kappa, a = 5.0, 0.05
    assert kappa * a + math.log(1 - 1 / kappa) >= 0  # slides: T* = 0, ERUB_min = 1
    assert min(_uniform(T, kappa, a) for T in range(1, 100)) < 0.9


def test_ce_slides_dynamic():  # H-Slides.dynamic-T
    kappa, a = 1.5, 0.02
    g = 1 - 1 / kappa

    def dyn(T):
        return g**T + a * ((1 - g ** (T / 2)) / (1 - math.sqrt(g))) ** 2

    T_ceil = math.ceil(2 * math.log(a / (a + (1 - math.sqrt(g)) ** 2)) / math.log(g))
    assert dyn(T_ceil - 1) < dyn(T_ceil)


# --- structural refutations, mutants, statuses, pages, rendering ----------------------

def _mine():
    """Every entry but those that name their mutant in their evidence (the end-to-end entries and the
    missing entries, tests/test_claims_end_to_end.py)."""
    return {cid: c for cid, c in registry.load_all().items() if not (c.takes_mutant and c.mutant is None)}


def test_refuted_needs_a_failed_comparison():
    with pytest.raises(TypeError):
        registry.refuted(counterexample={"x": 1}, printed=1, actual=2)  # no comparison: not callable that way
    with pytest.raises(ValueError, match="holds"):
        registry.refuted(lhs=1.0, relation="<=", rhs=2.0, counterexample={"x": 1})
    r = registry.refuted(lhs=3.0, relation="<=", rhs=2.0, counterexample={"x": 1})
    assert r.status == "refuted" and r.evidence["comparison"] == {"lhs": 3.0, "relation": "<=", "rhs": 2.0, "tolerance": 0.0}
    with pytest.raises(ValueError, match="holds"):  # within tolerance counts as holding
        registry.refuted(lhs=1.0 + 1e-12, relation="==", rhs=1.0, tol=1e-9, counterexample=None)


def test_not_reproduced_needs_a_failed_comparison():
    with pytest.raises(ValueError):
        registry.not_reproduced(missing="m", lhs=0.0, relation="<=", rhs=1.0, counterexample=None)
    assert registry.not_reproduced(missing="m", lhs=2.0, relation="<=", rhs=1.0, counterexample=None).status == "not-reproduced"


def test_proved_refutes_a_nonzero_residual_at_a_point():
    import sympy as sp

    x, g = sp.symbols("x gamma", positive=True)
    assert registry.proved(sp.expand((x + 1) ** 2 - x**2 - 2 * x - 1)).status == "proved"
    r = registry.proved(g**2 - g)  # a polynomial that is not identically zero
    assert r.status == "refuted" and r.evidence["comparison"]["relation"] == "=="
    pt = {k: v for k, v in r.evidence["counterexample"].items()}
    assert abs(pt["gamma"] ** 2 - pt["gamma"] - r.evidence["comparison"]["lhs"]) < 1e-9
    assert registry.proved(sp.sqrt(x**2) - x).status == "proved"  # x > 0: non-polynomial, simplify decides


def test_compare_helper_and_its_mutant():
    r = registry.compare([{"k": 1}, {"k": 2}], lhs=[1.0, 3.0], rhs=[2.0, 4.0], relation="<=", domain="d")
    assert r.status == "verified" and r.evidence["worst_margin"] == pytest.approx(0.25)
    m = registry.compare([{"k": 1}, {"k": 2}], lhs=[1.0, 3.0], rhs=[2.0, 4.0], relation="<=", domain="d", mutant=True)
    assert m.status == "refuted" and m.evidence["counterexample"]["k"] == 2
    assert m.evidence["mutant_scale"] == pytest.approx(0.75 * (1 - 2e-9))
    # a vacuous check (left side 0 everywhere) cannot catch its mutant
    v = registry.compare([1, 2], lhs=[0.0, 0.0], rhs=[2.0, 4.0], relation="<=", domain="d", mutant=True)
    assert v.status == "verified"


def test_decorator_pairs_mutant_text_with_the_keyword():
    with pytest.raises(ValueError, match="mutant"):
        registry.claim("ZZ-M.1", source="s", statement="t", method="numeric", mutant="x")(lambda: None)
    # a check may take the keyword and name its mutant in its evidence instead (entries written before the
    # decorator took the text); every entry of these modules declares it (test_every_pass_catches_its_mutant)
    registry.claim("ZZ-M.2", source="s", statement="t", method="numeric")(lambda *, mutant=False: None)
    registry.REGISTRY.pop("ZZ-M.2")
    with pytest.raises(ValueError, match="severity"):
        registry.claim("ZZ-M.3", source="s", statement="t", method="numeric", severity="bad")
    assert "ZZ-M.1" not in registry.REGISTRY and "ZZ-M.2" not in registry.REGISTRY


def test_statuses_have_definitions():
    assert {"identity", "not-reproduced"} <= set(registry.STATUSES)
    assert set(registry.STATUS_DEFINITIONS) == set(registry.STATUSES)
    md = render.status_definitions_markdown()
    for s in registry.STATUSES:
        if s != "open":
            assert render.BADGES[s][0] in md


def test_every_claim_of_these_modules_is_on_a_page():
    missing = [cid for cid in _mine() if render.page_of(cid) is None]
    assert not missing, missing
    # derived from the notebooks: each page named exists and shows its prefix
    for prefix, page in render.pages().items():
        assert (render.notebooks_dir() / f"{page}.ipynb").exists()


@CLAIM_RESULTS
@pytest.mark.slow
def test_every_refuted_entry_declares_its_severity(results):
    mine = _mine()
    bad = [r["id"] for r in results if r["id"] in mine and r["status"] == "refuted" and r["severity"] not in registry.SEVERITIES]
    assert not bad, bad


@pytest.mark.slow
def test_every_pass_catches_its_mutant():
    mine = _mine()
    out = [registry.run_claim(c, mutants=True) for c in mine.values()]
    passes = [r for r in out if r["status"] in registry.PASSING]
    assert len(passes) >= 70
    missed = [(r["id"], r.get("mutant_status"), r.get("mutant_error")) for r in passes if r["mutant_caught"] is not True]
    assert not missed, missed
    assert all(r["mutant"] for r in passes)


def test_known_uncatchable_entries_are_identities():
    reg = registry.load_all()
    assert registry.run_claim(reg["H-L3.1.composition"])["status"] == "identity"
    assert registry.run_claim(reg["W-EPS"])["status"] == "not-reproduced"


def test_quadratic_check_of_thm41_catches_an_exponent_change():
    c = registry.load_all()["H-T4.1.quadratic"]
    assert c.check().status == "verified"
    assert c.check(mutant=True).status == "refuted"
    # and the logistic (non-quadratic) check tells gamma from gamma^2
    assert registry.load_all()["H-T4.1.logistic-mc"].check(mutant=True).status == "refuted"


@CLAIM_RESULTS
@pytest.mark.slow
def test_evidence_renders_without_json(results):
    for r in results:
        md = "\n".join(render.evidence_lines(r["evidence"], status=r["status"]))
        assert '{"' not in md and "[{" not in md and "': " not in md, r["id"]
        if r["status"] == "verified":
            assert "tolerance" in md and "-0 " not in md and "| -0 |" not in md, r["id"]


@CLAIM_RESULTS
@pytest.mark.slow
def test_errata_opens_with_a_summary_sorted_by_severity(results):
    md = errata_page.errata_summary_markdown(results)
    rows = [line for line in md.splitlines()[2:] if line.startswith("| ")]
    assert len(rows) == sum(r["status"] in ("refuted", "not-reproduced") for r in results)
    order = {s: i for i, s in enumerate(registry.SEVERITIES)}
    ranks = [order.get(line.split(" | ")[0][2:], len(order)) for line in rows]
    assert ranks == sorted(ranks)
    assert any(r.startswith("| changes a conclusion") for r in rows)
    assert "{ref}`W-" in errata_page.errata_markdown(results)  # W- claims are linked now


def test_cite_snippet_names_version_and_id():
    from dpcompanion import __version__

    b = render.cite_bibtex("H-T4.4.T-opt", status="refuted")
    assert "H-T4.4.T-opt" in b and __version__ in b and render.label("H-T4.4.T-opt") in b
    assert b.startswith("@misc{") and b.rstrip().endswith("}")


# --- honest "proved": proved only for every T; identities at fixed T are "checked" ---


def test_proved_refuses_a_fixed_T_and_checked_records_the_values_it_ran():
    import sympy as sp

    x = sp.Symbol("x")
    with pytest.raises(ValueError, match="checked"):
        registry.proved(sp.Integer(0), T=4)
    with pytest.raises(ValueError, match="checked"):
        registry.proved(sp.Integer(0), T_checked="1..8")
    ok = registry.checked({T: sp.expand((1 + x) ** T - sum(sp.binomial(T, k) * x**k for k in range(T + 1))) for T in (3, 1, 2)})
    assert ok.status == "checked" and ok.evidence["T_checked"] == [1, 2, 3]
    bad = registry.checked({1: sp.Integer(0), 2: x**2 - x})  # a residual that is not 0 at T = 2 refutes there
    assert bad.status == "refuted" and bad.evidence["counterexample"]["T"] == 2
    with pytest.raises(ValueError):
        registry.checked({})


def _fixes_T(fn) -> list[str]:
    """Ways the source of a check pins T to numbers: a loop over T, an assignment of a number
    to T, or a module constant named T_* (e.g. T_SYM)."""
    import ast
    import inspect
    import textwrap

    tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.For) and isinstance(node.target, ast.Name) and node.target.id == "T":
            found.append(f"for T in {ast.unparse(node.iter)}")
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "T" for t in node.targets) \
                and isinstance(node.value, ast.Constant):
            found.append(f"T = {node.value.value!r}")
        if isinstance(node, ast.Name) and node.id.startswith("T_") and node.id.isupper():
            found.append(node.id)
    return found


@CLAIM_RESULTS
@pytest.mark.slow
def test_every_proved_claim_is_symbolic_in_T_and_every_fixed_T_check_says_checked(results):
    """A ``proved`` claim's check never pins T to numbers (no loop over T, no T = 4, no T_SYM);
    the checks that do are ``checked``, with the values of T they ran in their evidence."""
    reg = registry.load_all()
    pinned = {r["id"]: _fixes_T(reg[r["id"]].check) for r in results if r["method"] == "sympy"}
    bad = {cid: how for cid, how in pinned.items() if how and by_status(results, cid) == "proved"}
    assert not bad, f"proved claims whose check fixes T: {bad}"
    checked = [r for r in results if r["status"] == "checked"]
    assert len(checked) >= 9, [r["id"] for r in checked]
    assert all(pinned[r["id"]] for r in checked), "a 'checked' claim whose check does not fix T should be proved"


def by_status(results, cid):
    return next(r["status"] for r in results if r["id"] == cid)


def test_a_checked_claim_still_catches_its_mutant():
    reg = registry.load_all()
    for cid in ("H-T4.8.recursion", "X-UNIFY.cs"):
        out = registry.run_claim(reg[cid], mutants=True)
        assert out["status"] == "checked" and out["mutant_caught"] is True, out


def test_symbolic_T_proofs_are_proved_and_catch_their_mutants():
    """Checks once run at T = 1..8 now prove the claim for symbolic T (induction or symbolic sums); the
    schedule's monotonicity after Thm 4.7 is proved, not an identity."""
    reg = registry.load_all()
    for cid in ("H-T4.1.unrolled", "H-L4.3.value", "H-E26.corrected", "H-T4.7.sigma", "H-T4.7.remark"):
        out = registry.run_claim(reg[cid], mutants=True)
        assert out["status"] == "proved" and out["mutant_caught"] is True, out
    steps = registry.run_claim(reg["H-T4.1.unrolled"])["evidence"]["derivation"]
    assert any("base case" in st["why"] for st in steps) and any(st["why"].startswith("step") for st in steps)


def test_by_induction_refutes_a_failed_base_case_or_step():
    T = sp.Symbol("T", integer=True, positive=True)
    s = sp.Function("s")
    assert registry.by_induction(sp.Integer(0), sp.Integer(0)).status == "proved"
    bad = registry.by_induction(s(1) - 2 * s(1), sp.Integer(0))
    assert bad.status == "refuted" and bad.evidence["failed"] == "base case"
    assert registry.by_induction(sp.Integer(0), T * s(T + 1)).evidence["failed"] == "step"


def test_a_result_built_on_a_refuted_claim_says_so():
    """A passing claim that rests on a refuted one lists it (computed from that claim's own run), and the
    box says so next to the badge; a dependency that passes is not listed."""
    reg = registry.load_all()
    out = registry.run_claim(reg["H-T4.9.end-to-end"])
    assert out["status"] == "verified"
    assert {"H-T4.5.end-to-end", "H-T4.9", "H-S4.3.subsampling-rule"} <= set(out["rests_on_refuted"])
    md = render.claim_block(out)
    assert "ON A REFUTED RESULT" in md.splitlines()[0] and "Rests on a refuted result" in md
    for cid in ("H-T4.8.end-to-end", "H-T4.7.remark", "H-Tab1.momentum-rows", "W-P5.1.end-to-end"):
        assert reg[cid].rests_on, cid
    fake = registry.Claim(id="X-dep", source="s", statement="a", method="sympy", check=lambda: registry.proved(0),
                          rests_on=(("H-T4.1.step", "its one-step bound"),))
    r = registry.run_claim(fake)
    assert r["rests_on"][0]["status"] == "proved" and r["rests_on_refuted"] == []
    assert "REFUTED" not in render.claim_block(r).splitlines()[0]


def test_checked_box_says_which_T():
    r = {"id": "X-1", "status": "checked", "method": "sympy", "source": "s", "statement": "$a = b$",
         "evidence": {"residual": "0 at each T checked", "T_checked": [1, 2, 3, 4]}}
    md = render.claim_block(r)
    assert "CHECKED AT T = 1, ..., 4" in md and "PROVED" not in md


# --- entries grouped by the page a reader visits, statements as docstrings, shared verdicts -------


def test_entries_live_in_the_module_named_for_their_page():
    # page h-sec-4-1 -> claims/h_sec_4_1_*.py, h-tables -> claims/h_tables.py; Wu et al.'s page -> claims/w_adp*.py
    special = {"w-theory": "w_adp"}
    wrong = {}
    for cid, c in registry.load_all().items():
        page = render.page_of(cid)
        mod = c.check.__module__.rsplit(".", 1)[-1]
        if page is not None and not mod.startswith(special.get(page, page.replace("-", "_"))):
            wrong[cid] = (page, mod)
    assert not wrong
    assert all(not m.startswith(("end_to_end", "h_missing", "h_slides", "render")) for m in registry.CLAIM_MODULES)


def test_statement_is_the_checks_docstring():
    def check():
        r"""The bound $a\le b$
        holds for every $T$.
        """
    registry.claim("ZZ-DOC.1", source="s", method="numeric")(check)
    try:
        assert registry.REGISTRY["ZZ-DOC.1"].statement == r"The bound $a\le b$ holds for every $T$."
    finally:
        registry.REGISTRY.pop("ZZ-DOC.1")
    with pytest.raises(ValueError, match="no statement"):
        registry.claim("ZZ-DOC.2", source="s", method="numeric")(lambda: None)
    assert "ZZ-DOC.2" not in registry.REGISTRY
    # every entry's docstring is its statement, so the two cannot drift apart
    assert all(registry.statement_of(c.check) == c.statement for c in registry.load_all().values())


def test_shared_verdicts_refute_their_mutants():
    from dpcompanion.claims import checks

    pts = [{"T": T, "exact": 1.0 / T, "bound": 2.0 / T} for T in (1, 2, 4)]
    ok = checks.bound_result(pts, mutant=False, domain="d", mutant_desc="m", impact="i")
    assert ok.status == "verified" and ok.evidence["tightest"]["max_exact_over_bound"] == pytest.approx(0.5)
    assert checks.bound_result(pts, mutant=True, domain="d", mutant_desc="m", impact="i").status == "verified"
    bad = [{"T": 3, "exact": 3.0, "bound": 1.0}] + pts
    r = checks.bound_result(bad, mutant=False, domain="d", mutant_desc="m", impact="i")
    assert r.status == "refuted" and r.evidence["smallest_counterexample"]["T"] == 3 and r.evidence["impact"] == "i"
    s = checks.scaled_result([1.0, 1.0], [2.0, 4.0], [{"T": 1}, {"T": 2}], mutant=False, domain="d", impact="i")
    m = checks.scaled_result([1.0, 1.0], [2.0, 4.0], [{"T": 1}, {"T": 2}], mutant=True, domain="d", impact="i")
    assert s.status == "verified" and m.status == "refuted" and m.evidence["mutant"] == checks.SCALED_MUTANT
    grid = registry.verified_by_margins([0.1, -0.3], points=[{"x": 1}, {"x": 2}], domain="d")
    w = registry.refuted_at_worst(grid, counterexample=grid.evidence["counterexample"])
    assert w.status == "refuted" and w.evidence["comparison"]["lhs"] == pytest.approx(-0.3)
    with pytest.raises(ValueError, match="holds"):
        registry.refuted_at_worst(registry.verified_by_margins([0.1], domain="d"), counterexample=None)


def test_every_box_names_its_overall_standing_and_its_erratum_lists_its_main_claim():
    """A result's box title carries a word computed from its checks' statuses, and its erratum lists every
    refuted claim of the box, the box's own main claim included (Lemma C.6 misses beta < gamma)."""
    from dpcompanion.book import claims_page as cp
    from dpcompanion.claims.registry import THEOREMS, load_all

    load_all()
    for tid in THEOREMS:
        md = cp.theorem_markdown(tid)
        head = next(ln for ln in md.splitlines() if ln.startswith(":::{admonition}"))
        res = [r for p in cp.members(tid) for r in cp.cached_results(p) if cp.is_member(r["id"], tid)]
        bad = [r["id"] for r in res if r["status"] == "refuted"]
        refuted_word = re.search(r"(?<!NONE )REFUTED(?: IN PART)?: (\d+) of", head)
        assert cp.overall_word(tid, res) in head and (int(refuted_word.group(1)) if refuted_word else 0) == len(bad), head
        for cid in bad:
            assert f"`{cid} <" in md, (tid, cid)
    assert cp.cached_results("H-C6")[0]["status"] == "refuted"
    assert "{ref}`H-C6 <" in cp.erratum_line("H-C6", cp.cached_results("H-C6"))


def test_a_refuted_part_with_an_unbounded_gap_is_not_called_a_constant_factor():
    """A refuted claim whose evidence reports a worst relative excess over its grid far above any constant
    (H-T4.4.T-opt: the statement's T tends to 2/alpha where the minimiser is one step) carries a graver word."""
    from dpcompanion.book.claims_page import cached_results

    worst = [r for r in cached_results() if r["status"] == "refuted"
             and (r["evidence"].get("worst_on_grid") or {}).get("relative_excess", 0) > 10]
    assert any(r["id"] == "H-T4.4.T-opt" for r in worst)
    assert all(r["severity"] not in ("constant factor", "typo") for r in worst), [(r["id"], r["severity"]) for r in worst]


def test_lemma_c5_says_it_rests_on_lemma_c6():
    from dpcompanion.claims.registry import REGISTRY, load_all

    load_all()
    assert "H-C6" in dict(REGISTRY["H-C5"].rests_on)

"""The catalogue of IDs (dpcompanion.book.catalogue, CATALOGUE.md, the book's "Catalogue" page) and a
self-contained repository: CONTRIBUTING and the README point only inside it."""

from __future__ import annotations

import re

import nbformat
import pytest

from bookutil import NOTEBOOKS, REPO, toc_files
from dpcompanion.book import catalogue
from dpcompanion.claims import registry
from dpcompanion.experiments import base

# the tests that read the session's claim runs (conftest.py) share a pytest-xdist worker
CLAIM_RESULTS = pytest.mark.xdist_group("claim-results")

#: what points outside the repository: a parent folder, the workshop's shared folder, and the
#: workshop documents a newcomer on GitHub cannot open (with or without their suffix)
OUTSIDE = re.compile(r"\.\./|\bshared/|\b(?:SPEC|STYLE|DATA|STACK)\b")


@CLAIM_RESULTS
@pytest.mark.slow
def test_committed_catalogue_is_the_generated_one(claim_results):
    """The catalogue of claim and experiment IDs lives in the repository,
    generated from the registries; the committed CATALOGUE.md is the generator's output."""
    committed = (REPO / catalogue.FILE_NAME).read_text(encoding="utf-8")
    assert committed == catalogue.catalogue_markdown(claim_results), (
        f"{catalogue.FILE_NAME} is stale: regenerate it with `{catalogue.REGENERATE}`")


@CLAIM_RESULTS
@pytest.mark.slow
def test_catalogue_lists_every_claim_and_experiment_with_its_page(claim_results):
    """Every claim of the registry (with its status) and every experiment
    (with its modes) is in the catalogue, in both forms; the book's form links the pages and
    holds no word from the workshop (the browser test's rule for every page)."""
    for md in (catalogue.catalogue_markdown(claim_results), catalogue.catalogue_markdown(claim_results, book=True)):
        for r in claim_results:
            status = r["status"].upper().replace("-", " ")
            assert re.search(rf"\| (?:\{{ref\}})?`{re.escape(r['id'])}(?:`| <)[^|]* \| [^|]*{status}", md), r["id"]
        for eid, exp in base.all_experiments().items():
            assert f"| `{eid}` | {exp.title} | {', '.join(base.modes_of(exp))} |" in md, eid
    book = catalogue.catalogue_markdown(claim_results, book=True)
    assert "{doc}`h-f-curv`" in book and not re.search(r"\bSPEC\b|\bfiles? 00\d", book)
    assert len(claim_results) == len(registry.load_all())


def test_repository_form_links_only_into_the_repository():
    """The file's links are the book's page roles turned into links to the
    committed notebooks, which exist."""
    md = catalogue.repository_links("{doc}`H-F-CURV <h-f-curv>` and {doc}`errata`")
    for target in re.findall(r"\]\(([^)]+)\)", md):
        assert (REPO / target).exists(), target
    assert "{doc}" not in md and "{ref}" not in md


def test_catalogue_page_shows_the_generated_catalogue():
    """The book's catalogue page is a notebook that displays the generator's
    output (a hand-written page could drift), listed among the reference pages."""
    nb = nbformat.read(NOTEBOOKS / "catalogue.ipynb", as_version=4)
    code = "\n".join(c.source for c in nb.cells if c.cell_type == "code")
    assert "catalogue_markdown(book=True)" in code
    assert "book/catalogue" in toc_files()


@pytest.mark.parametrize("name", ["CONTRIBUTING.md", "README.md"])
def test_contributing_and_readme_point_only_inside_the_repository(name):
    """Acceptance: CONTRIBUTING and the README name no path outside the
    repository: no parent folder, no shared folder, no workshop document; every relative
    link resolves to a file of the repository; both point to the catalogue."""
    text = (REPO / name).read_text(encoding="utf-8")
    found = [m.group(0) for m in OUTSIDE.finditer(text)]
    assert not found, f"{name} points outside the repository: {found}"
    for target in re.findall(r"\]\(([^)#\s]+)[^)]*\)", text):
        if not re.match(r"[a-z]+:", target):
            assert (REPO / target).exists(), f"{name} links {target}, which is not in the repository"
    assert f"]({catalogue.FILE_NAME})" in text


def test_contributing_is_short_and_has_the_worked_example():
    """CONTRIBUTING shrinks to what a contributor needs (under 2,000 words,
    from 3,576), with one worked example: adding an experiment, named by the contract's parts."""
    text = (REPO / "CONTRIBUTING.md").read_text(encoding="utf-8")
    assert len(text.split()) < 2000, len(text.split())
    example = text[text.index("## Worked example: adding an experiment"):]
    for part in ("CONFIGS", "units(config)", "run_unit(unit, device)", "combine(", "describe(payload)",
                 "verdict_rows(payload)", "EXPERIMENT = from_module(", "notebooks/", "_toc.yml"):
        assert part in example, part

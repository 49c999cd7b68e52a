"""The catalogue of the book's IDs (pages, experiments, claims), generated from the pages and registries:
as MyST on the book's "Catalogue" page, and as GitHub Markdown in ``CATALOGUE.md`` (regenerated with
:data:`REGENERATE`; ``tests/test_catalogue.py`` fails while it differs).
"""

from __future__ import annotations

import re
import sys
from typing import Any, Iterable

from dpcompanion.book import landing
from dpcompanion.book.claims_page import (BADGES, cached_results, folded, label, notebooks_dir, page_of, status_counts,
                                          status_definitions_markdown, version_names)
from dpcompanion.book.report import markdown_table
from dpcompanion.experiments import base

__all__ = ["REGENERATE", "FILE_NAME", "catalogue_markdown", "repository_links"]

#: the repository file that holds the catalogue, at the root
FILE_NAME = "CATALOGUE.md"
#: the one command that regenerates :data:`FILE_NAME`
REGENERATE = f"python -m dpcompanion.book.catalogue > {FILE_NAME}"

_DOC = re.compile(r"\{doc\}`([^`<]*?)\s*<([^`>]+)>`|\{doc\}`([^`<]+)`")
_REF = re.compile(r"\{ref\}`([^`<]*?)\s*<[^`>]+>`")


def repository_links(markdown: str) -> str:
    """MyST links as GitHub Markdown: ``{doc}`` to ``notebooks/<id>.ipynb``, ``{ref}`` to its text in code
    (a label exists only in the built book).

    >>> repository_links("{doc}`H-F-EFF <h-f-eff>`, {doc}`errata`, {ref}`H-C4.bound <claim-h-c4-bound>`")
    '[H-F-EFF](notebooks/h-f-eff.ipynb), [errata](notebooks/errata.ipynb), `H-C4.bound`'
    """
    def doc(m: re.Match) -> str:
        text, target = (m.group(1), m.group(2)) if m.group(2) else (m.group(3), m.group(3))
        return f"[{text}](notebooks/{target}.ipynb)"

    return _REF.sub(lambda m: f"`{m.group(1)}`", _DOC.sub(doc, markdown))


def _page(nb_id: str | None) -> str:
    """A link to the page ``nb_id`` ({doc}), or ``none`` where no notebook has that id."""
    return f"{{doc}}`{nb_id}`" if nb_id and (notebooks_dir() / f"{nb_id}.ipynb").exists() else "none"


def _codes(names: Iterable[str]) -> str:
    """Names in code, joined by "and".

    >>> _codes(["quick", "full"])
    '`quick` and `full`'
    """
    names = [f"`{n}`" for n in names]
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def _experiments_markdown() -> str:
    exps = base.all_experiments()
    rows = [[f"`{eid}`", exp.title, ", ".join(base.modes_of(exp)), _page(eid)] for eid, exp in exps.items()]
    return "\n".join([
        f"{len(exps)} experiments, one module each (`dpcompanion/experiments/<id>.py`, found by "
        f"`experiments.base.all_experiments`). Every experiment defines the modes {_codes(base.MODES)} (the book's, "
        f"and the largest run committed), and {_codes(base.OPTIONAL_MODES)} (the paper's own sizes) where it has a config "
        "for it. Run one with `python -m dpcompanion experiment <id> --mode <mode>`.",
        "",
        markdown_table(["ID", "title", "modes", "page"], rows),
    ])


def _claims_markdown(results: Iterable[dict[str, Any]], *, book: bool = False) -> str:
    results = sorted(results, key=lambda r: r["id"])
    tally = ", ".join(f"{n} {s}" for s, n in status_counts(results).items() if n)
    rows = []
    for r in results:
        page = page_of(r["id"])
        name = f"{{ref}}`{r['id']} <{label(r['id'])}>`" if page else f"`{r['id']}`"
        badge = BADGES.get(r["status"], (r["status"],))[0]
        rows.append([name, badge, version_names(r.get("versions") or []), r.get("source", ""), _page(page)])
    return "\n".join([
        f"{len(results)} claims ({tally}), each declared once in `dpcompanion/claims/` with the check that decides it; "
        "its status is what that check returns when run (`python -m dpcompanion checks`), its page the one that shows "
        "its evidence.",
        "",
        # on the book's page the long table is folded (pages at most 12,000 px tall)
        *(folded(f"The {len(results)} claims, by ID", [markdown_table(["ID", "status", "versions", "source", "page"], rows)])
          if book else [markdown_table(["ID", "status", "versions", "source", "page"], rows)]),
        "",
        "### What the statuses mean",
        "",
        status_definitions_markdown().rstrip("\n"),
    ])


def catalogue_markdown(results: Iterable[dict[str, Any]] | None = None, *, book: bool = False) -> str:
    """The catalogue: the ID scheme and pages, every experiment and every claim. ``results``: the claims'
    check results (run once per process when not given). ``book=True``: the MyST of the book's page (no
    title); else the text of :data:`FILE_NAME`."""
    results = cached_results(None) if results is None else list(results)
    body = "\n".join([
        "## Pages and their IDs",
        "",
        landing.id_glossary_markdown(),
        "",
        "## Experiments",
        "",
        _experiments_markdown(),
        "",
        "## Claims",
        "",
        _claims_markdown(results, book=book),
        "",
    ])
    if book:
        return body
    head = ["# Catalogue of claims and experiments", "",
            "Every ID of the book: its pages, its experiments and the claims of the papers it checks, generated from "
            "the pages (`notebooks/`), the experiment registry (`dpcompanion/experiments/base.py`) and the claim "
            f"registry (`dpcompanion/claims/registry.py`). Do not edit it by hand: regenerate it with `{REGENERATE}` "
            "(`tests/test_catalogue.py` fails while it differs). The book shows the same catalogue on its "
            "[Catalogue page](notebooks/catalogue.ipynb).", "", ""]
    return "\n".join(head) + repository_links(body)


if __name__ == "__main__":
    sys.stdout.write(catalogue_markdown())

"""Checks on the product: committed notebooks, the table of contents, and the built book
(an unexecuted notebook builds silently, so execution is asserted here)."""

from __future__ import annotations

import ast
import csv
import json
import re
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

import nbformat
import pytest

from bookutil import NOTEBOOKS, REPO, require_build, toc_files
from dpcompanion.book.pdf import PDF_NAME, find_browser
from test_pdf import pdf_problems

NB_PATHS = sorted(NOTEBOOKS.glob("*.ipynb"))
NB_IDS = [p.stem for p in NB_PATHS]


def _code_cells(nb):
    return [c for c in nb.cells if c.cell_type == "code"]


def test_there_are_notebooks():
    assert NB_PATHS, "no notebooks in notebooks/"


@pytest.mark.parametrize("path", NB_PATHS, ids=NB_IDS)
def test_committed_notebook_carries_no_outputs(path: Path):
    nb = nbformat.read(path, as_version=4)
    for i, c in enumerate(_code_cells(nb)):
        assert c.get("outputs", []) == [], f"{path.name}: code cell {i} has outputs"
        assert c.get("execution_count") is None, f"{path.name}: code cell {i} has an execution count"
    assert "papermill" not in nb.metadata, f"{path.name} is an executed copy"


@pytest.mark.parametrize("path", NB_PATHS, ids=NB_IDS)
def test_notebook_follows_the_cell_contract(path: Path):
    """parameters cell (mode, seed, device) -> Provenance.start(notebook=<id>) ... prov.finish()."""
    nb = nbformat.read(path, as_version=4)
    code = _code_cells(nb)
    params = [c for c in code if "parameters" in c.metadata.get("tags", [])]
    assert len(params) == 1, f"{path.name}: exactly one cell tagged 'parameters' expected"
    assigned = {t.id for node in ast.parse(params[0].source).body if isinstance(node, ast.Assign) for t in node.targets}
    assert {"mode", "seed", "device"} <= assigned, f"{path.name}: parameters cell assigns {assigned}"
    after = code[code.index(params[0]) + 1]
    assert re.search(rf"Provenance\.start\(\s*notebook=\"{re.escape(path.stem)}\"", after.source), (
        f"{path.name}: the cell after parameters must call Provenance.start(notebook=\"{path.stem}\", ...)"
    )
    assert code[-1].source.strip() == "prov.finish()", f"{path.name}: last code cell must be prov.finish()"
    hidden = {"remove-cell", "remove-output"} & set(code[-1].metadata.get("tags", []))
    assert not hidden, f"{path.name}: the provenance line must be shown, but the last cell is tagged {hidden}"
    assert nb.cells[0].cell_type == "markdown" and nb.cells[0].source.lstrip().startswith("# "), (
        f"{path.name}: first cell must be a Markdown title"
    )


@pytest.mark.parametrize("path", NB_PATHS, ids=NB_IDS)
def test_glue_cells_are_hidden(path: Path):
    """The page shows what the glue displays, not the glue: every cell calling the book's display helpers
    (theorem boxes, claims, exercises, the provenance line) is tagged remove-input (it stays in the notebook
    and in a launched copy), and on a theory page (one that shows a theorem box) every code cell is."""
    nb = nbformat.read(path, as_version=4)
    code = _code_cells(nb)
    theory = any("show_theorem(" in c.source for c in code)
    for i, c in enumerate(code):
        tags = set(c.metadata.get("tags", []))
        if tags & {"remove-input", "remove-cell"}:
            continue
        glue = re.search(r"\b(show_theorem|show_claims|show_exercises|prov\.finish)\(", c.source)
        assert not (glue or theory), f"{path.name}: code cell {i} ({c.source.strip()[:50]!r}) is shown on the page"


def test_no_two_downloads_share_a_name():
    """A reader who downloads the files of two pages into one folder keeps both: every download of the
    book (Sphinx copies them to _downloads/<hash>/<name>) has its own file name."""
    build = require_build()
    names: dict[str, set[str]] = {}
    for page in toc_files():
        for folder, name in re.findall(r'href="(?:\.\./)*_downloads/([0-9a-f]+)/([^"/]+)"', (build / f"{page}.html").read_text()):
            names.setdefault(unquote(name), set()).add(folder)
    assert names, "the book offers no download"
    shared = {n: len(h) for n, h in names.items() if len(h) > 1}
    assert not shared, f"download names shared by several files: {shared}"


def test_no_orphan_page():
    """Every page of the built book is in the table of contents (the PDF's print page is removed once
    printed; a page from an earlier build's rename would be an orphan)."""
    build = require_build()
    pages = {p.relative_to(build).with_suffix("").as_posix() for p in (build / "book").glob("*.html")}
    orphans = sorted(pages - set(toc_files()))
    assert not orphans, f"built pages outside the table of contents: {orphans}"


def test_toc_and_notebooks_agree():
    """Every notebook is listed as book/<id> (its executed copy); every other entry is a
    committed page; no page's address says where it was generated."""
    files = toc_files()
    executed = {f.split("/")[-1] for f in files if f.startswith("book/") and f.split("/")[-1] in NB_IDS}
    assert executed == set(NB_IDS), f"notebook not in _toc.yml as book/<id>: {sorted(set(NB_IDS) - executed)}"
    for f in files:
        assert "generated" not in f, f"_toc.yml: {f}: page addresses must not contain 'generated'"
        if f.split("/")[-1] not in NB_IDS:
            assert (REPO / f"{f}.md").exists(), f"_toc.yml lists {f}, neither a notebook id nor a book/*.md page"
        else:
            assert f == f"book/{f.split('/')[-1]}", f"_toc.yml: notebook page {f} must be book/<id>"
            assert not (REPO / f"{f}.md").exists(), f"{f}.md would shadow the executed notebook {f}.ipynb"


def test_executed_notebooks_are_not_committed():
    """The runner writes book/<id>.ipynb beside committed pages; .gitignore keeps them out."""
    ignore = (REPO / ".gitignore").read_text().split()
    for pattern in ("/book/*.ipynb", "/book/timings.json", "/book/.execution-keys/"):
        assert pattern in ignore, f".gitignore lacks {pattern}"


# --- the built book ---------------------------------------------------------------------


@pytest.mark.parametrize("nb_id", NB_IDS)
def test_every_toc_notebook_was_executed(nb_id: str):
    build = require_build()
    executed = REPO / "book" / f"{nb_id}.ipynb"
    assert executed.exists(), f"{nb_id} was not executed by the runner"
    nb = nbformat.read(executed, as_version=4)
    pm = nb.metadata.get("papermill", {})
    assert set(pm.get("parameters", {})) == {"mode", "seed", "device"}, f"{nb_id}: no papermill parameters"
    assert not pm.get("exception"), f"{nb_id}: papermill recorded an exception"
    code = _code_cells(nb)
    assert all(c.get("execution_count") for c in code), f"{nb_id}: a code cell was not executed"
    assert any(c.get("outputs") for c in code), f"{nb_id}: no outputs at all"
    last = "".join(o.get("text", "") + o.get("data", {}).get("text/plain", "") for o in code[-1].get("outputs", []))
    assert "Provenance: notebook " + nb_id in last and "wall time" in last, f"{nb_id}: no provenance line"
    html = build / "book" / f"{nb_id}.html"
    assert html.exists(), f"{nb_id}: not rendered in the book"
    assert "Provenance: notebook" in html.read_text(), f"{nb_id}: provenance not shown on the page"
    shown = "".join(str(o.get("data", {})) + o.get("text", "") for c in code for o in c.get("outputs", []))
    assert "code_files" not in shown and "config_hash" not in shown, \
        f"{nb_id}: a stored result's raw provenance dict is printed; use show.result_line(result)"


def test_every_toc_page_is_rendered():
    build = require_build()
    for f in toc_files():
        assert (build / f"{f}.html").exists(), f"{f} has no page in the built book"


class _Links(HTMLParser):
    def __init__(self):
        super().__init__()
        self.refs: list[tuple[str, str]] = []
        self.ids: set[str] = set()

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if "id" in a:
            self.ids.add(a["id"])
        for key in ("href", "src"):
            if a.get(key) and tag in ("a", "img", "link", "script", "source"):
                self.refs.append((tag, a[key]))


def test_no_broken_internal_links():
    """Every relative href/src of every page points to a file that exists, and every
    #fragment to an id on the target page."""
    build = require_build()
    # _static/ holds the theme's Jinja templates (not pages)
    pages = {p: _Links() for p in build.rglob("*.html") if "_static" not in p.relative_to(build).parts}
    for p, parser in pages.items():
        parser.feed(p.read_text(errors="replace"))
    broken = []
    for page, parser in pages.items():
        for tag, ref in parser.refs:
            u = urlsplit(ref)
            if u.scheme or u.netloc or ref.startswith(("mailto:", "javascript:", "data:")):
                continue
            target = page if not u.path else (page.parent / unquote(u.path)).resolve()
            if target.is_dir():
                target = target / "index.html"
            if not target.exists():
                if target.name == PDF_NAME and not find_browser():
                    continue  # make book skips the theory PDF where no Chromium is installed (and says so)
                broken.append(f"{page.relative_to(build)}: {ref}")
                continue
            if u.fragment and target.suffix == ".html" and tag == "a":
                ids = pages[target].ids if target in pages else set()
                if unquote(u.fragment) not in ids:
                    broken.append(f"{page.relative_to(build)}: {ref} (no such anchor)")
    assert not broken, f"{len(broken)} broken internal links, e.g. {broken[:10]}"


def test_timings_of_this_build_were_recorded():
    require_build()
    timings = json.loads((REPO / "book" / "timings.json").read_text())
    assert set(NB_IDS) <= set(timings["notebooks"])


def test_the_site_works_from_a_static_server():
    """No page refers to the site by an absolute path (/...), so the built book
    works from any static file server, at any URL prefix (GitHub Pages serves it under
    /<repository>/)."""
    build = require_build()
    bad = []
    for page in build.rglob("*.html"):
        if "_static" in page.relative_to(build).parts:
            continue
        for m in re.finditer(r'(?:href|src)="(/[^/"][^"]*)"', page.read_text(errors="replace")):
            bad.append(f"{page.relative_to(build)}: {m.group(1)}")
    assert not bad, f"absolute paths: {bad[:10]}"


def test_the_build_carries_its_citation_and_theory_pdf():
    """The build's CITATION.cff names its commit; the landing page links it and the theory
    PDF, which exists wherever Chromium does (make book skips it otherwise) and is a book
    (a cover with the build's commit, bookmarks, page numbers, no code stub,
    no near-empty page; tests/test_pdf.py's checks)."""
    build = require_build()
    import yaml

    cff = yaml.safe_load((build / "CITATION.cff").read_text())
    assert re.fullmatch(r"[0-9a-f]{7,40}", cff["commit"]), cff.get("commit")
    landing = (build / "book" / "index.html").read_text()
    assert 'href="../CITATION.cff"' in landing and f'href="../{PDF_NAME}"' in landing
    assert f"commit {cff['commit']}" in landing, "the landing page's BibTeX names another commit than the build"
    if find_browser():
        pdf = build / PDF_NAME
        assert pdf.exists() and pdf.read_bytes()[:5] == b"%PDF-", f"{PDF_NAME} missing or not a PDF"
        assert pdf_problems(pdf, cff["commit"]) == []
        assert handout_problems(pdf) == []


#: the most pages the theory PDF may have: a course handout, about a page per result
MAX_PDF_PAGES = 120


def handout_problems(path) -> list[str]:
    """What keeps the theory PDF from being a course handout: more than :data:`MAX_PDF_PAGES` pages; contents
    without the theorems (Theorem 4.1, Lemma 4.3, Theorem 4.4 and 4.5 each listed with a page number); no
    references chapter after the results; BibTeX entries or the checks' evidence in full printed (online only)."""
    import pypdf

    reader = pypdf.PdfReader(path)
    texts = [p.extract_text() or "" for p in reader.pages]
    problems = [] if len(texts) <= MAX_PDF_PAGES else [f"{len(texts)} pages, more than {MAX_PDF_PAGES}"]
    contents = "\n".join(texts[1:4])
    for result in ("Theorem 4.1", "Lemma 4.3", "Theorem 4.4", "Theorem 4.5"):
        # "Theorem 4.1 (its name) — ITS OVERALL WORD: k of n checks  <page>", the entry wrapped or not: the
        # page is the first number that ends a line after the name, and that page shows the result
        m = re.search(re.escape(result) + r" \([^)]*\)", contents)
        page = m and re.search(r"(\d+)[ \t]*$", contents[m.end():], re.M)
        k = int(page.group(1)) if page else 0
        name = m.group(0) if m else result
        if not (m and 1 <= k <= len(texts) and "".join(name.split())[:30] in "".join(texts[k - 1].split())):
            problems.append(f"the contents list no {result} (its name) with its page")
    # the references close the results, before the appendix of the checks in full (or at the end without one)
    from dpcompanion.book.pdf import APPENDIX_TITLE
    end = next((i for i, t in enumerate(texts) if i > 3 and APPENDIX_TITLE in t), len(texts))
    if "References" not in contents or "Junyuan Hong" not in "".join(texts[max(0, end - 4):end]):
        problems.append("no references chapter after the results")
    printed = "".join(texts)
    for online in ("@misc{dpcompanion", "The evidence in full", "Cite this check"):
        if online in printed:
            problems.append(f"prints {online!r} (shown online only)")
    return problems


def test_every_published_figure_passes_the_layout_check():
    """Each figure the book shows was checked where it was drawn (text >= 8 pt as
    shown in the column, no overlapping tick labels: dpcompanion.book.plotting.figure_problems)
    on its real data, full-mode results included; the check's findings are kept beside it."""
    require_build()
    from dpcompanion.book import plotting, runner

    files = sorted((runner.GENERATED / plotting.FIGURES_DIR).glob("*/*-figure-*.layout.json"))
    assert files, "no published figure"
    bad = {f"{f.parent.name}/{f.name}": p for f in files if (p := json.loads(f.read_text())["problems"])}
    assert not bad, f"figures with layout problems: {bad}"


@pytest.mark.slow
def test_every_caption_says_the_scale_of_the_result_it_shows():
    """Each published figure's caption names its result's scale with the one word the result's own sizes
    give (dpcompanion.experiments.scale_tables.scale_word: paper scale, reduced, other data, other setup),
    and no other of those words."""
    require_build()
    from dpcompanion.book import plotting, runner
    from dpcompanion.experiments.scale_tables import SCALE_WORDS, scale_of, scale_word
    from dpcompanion.experiments.store import result_store

    checked, bad = 0, []
    for f in sorted((runner.GENERATED / plotting.FIGURES_DIR).glob("*/*-figure-*.layout.json")):
        rec = json.loads(f.read_text())
        if not rec.get("result"):
            continue
        r = result_store.load(rec["result"]["id"], mode=rec["result"]["mode"])
        assert r is not None, f"{f.name}: its result {rec['result']} is not in the store"
        config = r.provenance.get("config") if isinstance(r.provenance.get("config"), dict) else {}
        word = scale_word(scale_of(r.id, config)) if config else ""
        said = [w for w in SCALE_WORDS if re.search(rf"\b{w}:", rec["caption"])]
        checked += 1
        if said != ([word] if word else []):
            bad.append(f"{f.parent.name}/{f.name}: caption says {said}, the result ({r.id} {r.mode}) is {word!r}")
    assert checked, "no published figure shows a stored result"
    assert not bad, "\n".join(bad)


def test_published_figure_scripts_redraw_their_figures_alone(tmp_path):
    """Acceptance: the code link, run alone on the data link, redraws the
    figure: every forest plot of the build (the verdicts page's and each experiment page's)
    and ten other published figures, chosen by a fixed stride through the sorted list, are
    redrawn by their <page>-figure-<n>.py in a folder holding only it and <page>-figure-<n>.csv, without
    dpcompanion (tests/test_figure_scripts.py's run_figure_script)."""
    require_build()
    from dpcompanion.book import plotting, runner
    from test_figure_scripts import data_counts, run_figure_script  # imports matplotlib: only when built

    scripts = sorted((runner.GENERATED / plotting.FIGURES_DIR).glob("*/*-figure-*.py"))
    assert scripts, "no published figure script"
    forests = [s for s in scripts if json.loads(s.with_suffix(".layout.json").read_text())["function"]
               == "forest.forest_plot"]
    others = [s for s in scripts if s not in forests]
    chosen = forests + others[:: max(1, len(others) // 10)][:10]
    assert (runner.GENERATED / plotting.FIGURES_DIR / "verdicts") in {s.parent for s in forests}
    merged = []  # every figure: a redraw keys its panels by name, so two panels of one name would be drawn as one
    for s in scripts:
        names = [r["panel"] for r in csv.DictReader(s.with_suffix(".csv").open()) if r["kind"] == "panel"]
        if len(set(names)) < len(names):
            merged.append(s.name)
    assert not merged, f"panels sharing a name in {merged}"
    bad = []
    for s in chosen:
        run = run_figure_script(s, s.with_suffix(".csv"), tmp_path / s.parent.name / s.stem)
        out = run.stdout.splitlines()
        if run.returncode != 0 or not out or out[0] != data_counts(s.with_suffix(".csv")):
            bad.append((f"{s.parent.name}/{s.name}", run.returncode, (run.stderr or run.stdout)[-300:]))
    assert not bad, f"{len(bad)} of {len(chosen)} figure scripts failed: {bad[:3]}"

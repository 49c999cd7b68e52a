"""The theory PDF is a book: a cover with the title, version, commit and
date, a table of contents, PDF bookmarks, a page number on every page, no code stubs, no
near-empty page (dpcompanion.book.pdf). Built here from a synthetic two-chapter build with
headless Chromium and read back with pypdf; tests/test_book.py runs the same checks on the
real build's PDF."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pypdf
import pytest

from dpcompanion.book import pdf
from dpcompanion.book.site import BuildInfo

INFO = BuildInfo(commit="0123456789ab", dirty=False, date="2026-11-28", version="0.1.0",
                 url="https://github.com/dpcompanion/dpcompanion")


def pdf_problems(path: Path, commit: str) -> list[str]:
    """What keeps the PDF at ``path`` from being a book (the acceptance check): the cover
    must name ``commit``, the outline (bookmarks) be non-empty, every page carry its number
    ("page N of M"), none hold fewer than 200 characters besides its footer, and no code
    stub such as ``show_theorem("H-T4.4")`` be printed."""
    reader = pypdf.PdfReader(path)
    texts = [p.extract_text() or "" for p in reader.pages]
    problems = []
    if commit not in texts[0]:
        problems.append(f"the cover does not name commit {commit}")
    if not reader.outline:
        problems.append("no bookmarks")
    n = len(texts)
    for i, text in enumerate(texts, 1):
        if f"page {i} of {n}" not in text:
            problems.append(f"page {i}: no page number")
        body = "".join(ln for ln in text.splitlines() if not re.search(r"page \d+ of \d+", ln))
        if len("".join(body.split())) < 200:
            problems.append(f"page {i}: fewer than 200 characters")
        if "show_theorem(" in text:
            problems.append(f"page {i}: prints a code stub")
    for i in pdf.sparse_runs(pdf.page_fills(reader)):
        problems.append(f"pages {i} and {i + 1}: both sparse (text over less than {pdf.MIN_PAGE_FILL:.0%} of the page)")
    return problems


WORDS = ("The bound holds for every schedule whose noise variances sum to the budget, and the "
         "uniform schedule attains it only when the influence of each step is the same. ")


def _chapter(title: str, paragraphs: int) -> str:
    """A page as jupyter-book renders a notebook: theme chrome around the article, a code
    cell whose input is a stub and whose output is the statement, prose, a figure."""
    cell = ('<div class="cell docutils container"><div class="cell_input docutils container">'
            '<div class="highlight-ipython3 notranslate"><div class="highlight"><pre>'
            '<span class="n">show_theorem</span><span class="p">(</span>&quot;H-T4.4&quot;)</pre></div></div></div>'
            '<div class="cell_output docutils container"><div class="output text_html">'
            f'<div class="theorem"><p><b>Theorem 4.4.</b> {WORDS}</p></div></div></div></div>')
    body = "".join(f"<p>{WORDS * 3}</p>" for _ in range(paragraphs))
    return (f'<!DOCTYPE html><html><head><title>{title}</title><link rel="stylesheet" href="../_static/x.css">'
            f'</head><body><nav class="bd-sidebar">menu</nav><main><article class="bd-article" role="main">'
            f'<section id="s"><h1>{title}<a class="headerlink" href="#s">#</a></h1>{cell}'
            f'<section id="t"><h2>A section of {title}</h2>{body}'
            f'<figure><img src="../_static/f.svg" alt="a figure"></figure><p>{WORDS}</p></section>'
            f'</section></article></main></body></html>')


@pytest.fixture
def build(tmp_path: Path) -> Path:
    (tmp_path / "book").mkdir()
    (tmp_path / "_static").mkdir()
    (tmp_path / "_static" / "x.css").write_text("body{font-family:serif}")
    (tmp_path / "_static" / "f.svg").write_text('<svg xmlns="http://www.w3.org/2000/svg" width="600" height="400">'
                                                '<rect width="600" height="400" fill="#ccd"/></svg>')
    (tmp_path / "book" / "a.html").write_text(_chapter("Section A: one schedule", 9))
    (tmp_path / "book" / "b.html").write_text(_chapter("Section B: another schedule", 3))
    return tmp_path


def test_print_page_has_a_cover_and_contents_and_drops_code_inputs(build: Path):
    """The cover names title, version, commit and date; the contents link
    each chapter's <h1>; code inputs are hidden, outputs kept."""
    html = pdf.print_page(build, ["book/a", "book/b"], info=INFO, title="The Book", page_numbers={1: 5})
    cover = html[html.index('class="dpc-cover"'):html.index('class="dpc-toc"')]
    assert all(s in cover for s in ("The Book", "0.1.0", "0123456789ab", "2026-11-28"))
    assert '<a href="#dpc-chapter-1">Section A: one schedule</a>' in html and 'id="dpc-chapter-2"' in html
    assert '<span class="dpc-page">5</span>' in html
    assert re.search(r"\.cell_input[^{]*\{display:none", html) and "Theorem 4.4." in html
    assert "menu" not in html


def test_print_page_runs_on_the_chapters_it_is_told_to(build: Path):
    """A chapter in run_on is not forced onto a new page."""
    html = pdf.print_page(build, ["book/a", "book/b"], info=INFO, title="T", run_on=frozenset({1}))
    assert html.count('class="dpc-print-chapter"') == 1 and html.count('class="dpc-print-chapter dpc-run-on"') == 1


def test_the_default_title_is_the_books(build: Path):
    """The cover's title is _config.yml's."""
    assert f">{pdf.book_title()}<" in pdf.print_page(build, ["book/a"], info=INFO)


@pytest.mark.browser
@pytest.mark.slow
def test_the_pdf_is_a_book(build: Path):
    """Printed by Chromium, the PDF has a cover with the commit, bookmarks,
    page numbers, the contents' page numbers, no code stub and no near-empty page."""
    browser = pdf.find_browser()
    if browser is None:
        pytest.skip("Chromium/chromedriver not installed (make test installs them with apt when run as root)")
    out = io.StringIO()
    path = pdf.build_pdf(build, ["book/a", "book/b"], info=INFO, title="The Book", out=out, timeout=120)
    assert path == build / pdf.PDF_NAME and "near-empty" not in out.getvalue(), out.getvalue()
    assert pdf_problems(path, INFO.commit) == []
    reader = pypdf.PdfReader(path)
    titles = [str(item.title) for item in reader.outline if not isinstance(item, list)]
    assert "Section A: one schedule" in titles and "Section B: another schedule" in titles
    starts = pdf.chapter_starts(reader, ["Section A: one schedule", "Section B: another schedule"])
    contents = reader.pages[1].extract_text()
    for i, title in enumerate(("Section A: one schedule", "Section B: another schedule")):
        assert re.search(rf"{re.escape(title)}\s*{starts[i] + 1}\b", contents), contents
    assert not (build / "dpcompanion-theory.pdf.tmp").exists()


@pytest.mark.browser
@pytest.mark.slow
@pytest.mark.parametrize("tail", [11, 14, 17])
def test_no_chapter_ends_on_a_near_empty_page(build: Path, tail: int):
    """Whatever the length of a chapter's last page (here a tail of `tail`
    lines' worth of words after five paragraphs; 14 leaves a few lines alone on a page with
    Chromium 156's fonts), the next chapter runs on from it rather than leave it near-empty,
    and the closing note keeps the last page from being near-empty."""
    if pdf.find_browser() is None:
        pytest.skip("Chromium/chromedriver not installed (make test installs them with apt when run as root)")
    a = _chapter("Section A: one schedule", 5).replace(
        "</section></section></article>", f"<p>{'word ' * 40 * tail}</p></section></section></article>")
    (build / "book" / "a.html").write_text(a)
    (build / "book" / "b.html").write_text(_chapter("Section B: another schedule", 5))
    path = pdf.build_pdf(build, ["book/a", "book/b"], info=INFO, title="The Book", out=io.StringIO(), timeout=120)
    assert pdf_problems(path, INFO.commit) == []


@pytest.mark.browser
@pytest.mark.slow
def test_a_table_with_folds_in_its_cells_flows_across_pages(build: Path):
    """A verdict table whose cells hold a fold (``<details><summary>more</summary>...``, as the checks'
    tables do) prints its rows one after another, not one row on each page, and the fold's summary
    does not print (its content does)."""
    if pdf.find_browser() is None:
        pytest.skip("Chromium/chromedriver not installed (make test installs them with apt when run as root)")
    rows = "".join(f"<tr><td><p>row {k}</p></td><td><p>{WORDS} <details><summary>more</summary>"
                   f"folded text {k}. {WORDS * 2}</details></p></td></tr>" for k in range(14))
    table = f'<table class="table"><thead><tr><th>case</th><th>note</th></tr></thead><tbody>{rows}</tbody></table>'
    a = _chapter("Section A: one schedule", 2).replace("</section></section></article>",
                                                       f"{table}</section></section></article>")
    (build / "book" / "a.html").write_text(a)
    path = pdf.build_pdf(build, ["book/a", "book/b"], info=INFO, title="The Book", out=io.StringIO(), timeout=120)
    reader = pypdf.PdfReader(path)
    text = "".join(p.extract_text() for p in reader.pages)
    assert "folded text 13." in text and not re.search(r"^\s*more\s*$", text, re.M)
    assert pdf_problems(path, INFO.commit) == []


def test_sparse_pages_are_found_only_in_a_row():
    assert pdf.sparse_runs([0.3, 0.2, 0.95, 0.3, 0.95, 0.4, 0.3]) == []
    assert pdf.sparse_runs([0.3, 0.9, 0.95, 0.49, 0.49, 0.49, 0.9, 0.5]) == [4, 5]


# A stand-in for MathJax (the real one is npm's, installed by make book): it appears after
# half a second and typesets after another second, writing a marker into the page, or never.
FAKE_MATHJAX = """setTimeout(() => { window.MathJax = {startup: {promise: new Promise(done => setTimeout(() => {
  document.querySelectorAll('.dpc-typeset').forEach(e => { e.textContent = 'Typeset by the stand-in.'; });
  done(); }, %d))}}; }, 500);"""


def _with_mathjax(build: Path, delay_ms: int) -> None:
    """Load the stand-in in both chapters, typesetting after ``delay_ms`` (never when < 0)."""
    never = "window.MathJax = {startup: {promise: new Promise(() => {})}};"
    (build / "_static" / "mathjax-standin.js").write_text(FAKE_MATHJAX % delay_ms if delay_ms >= 0 else never)
    for name in ("a", "b"):
        page = build / "book" / f"{name}.html"
        page.write_text(page.read_text().replace(
            "</head>", '<script defer src="../_static/mathjax-standin.js"></script></head>').replace(
            "<h2>", '<p class="dpc-typeset">not typeset</p><h2>', 1))


@pytest.mark.browser
@pytest.mark.slow
def test_the_pdf_is_printed_once_mathjax_has_typeset(build: Path):
    """The print waits for MathJax's startup promise."""
    if pdf.find_browser() is None:
        pytest.skip("Chromium/chromedriver not installed (make test installs them with apt when run as root)")
    _with_mathjax(build, 1000)
    path = pdf.build_pdf(build, ["book/a", "book/b"], info=INFO, title="The Book", out=io.StringIO(), timeout=60)
    text = "".join(p.extract_text() for p in pypdf.PdfReader(path).pages)
    assert "Typeset by the stand-in." in text and "not typeset" not in text


@pytest.mark.browser
@pytest.mark.slow
def test_mathjax_that_never_finishes_is_a_one_line_error(build: Path, monkeypatch, capsys):
    """The wait for MathJax has a timeout; the command says so in one line."""
    if pdf.find_browser() is None:
        pytest.skip("Chromium/chromedriver not installed (make test installs them with apt when run as root)")
    _with_mathjax(build, -1)
    (build / "index.html").write_text("<html></html>")
    real = pdf.build_pdf
    monkeypatch.setattr(pdf, "build_pdf", lambda b: real(b, ["book/a", "book/b"], info=INFO, timeout=3))
    assert pdf.main([str(build)]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("dpcompanion pdf: error:") and "could not print" in err[0], err
    assert not (build / pdf.PDF_NAME).exists()


def test_the_contents_list_each_result_with_its_page_and_online_only_blocks_are_left_out(build: Path):
    """A chapter's theorem boxes are listed under it in the contents with the page they print on; a block
    of class ONLINE_ONLY (a check's evidence in full, its BibTeX) is not printed."""
    from dpcompanion.book.claims_page import ONLINE_ONLY

    page = build / "book" / "a.html"
    box = ('<div class="dpc-result dpc-theorem admonition" id="thm-9-1"><span id="index-0"></span><p class="admonition-title">'
           'Theorem 9.1 (A bound on every schedule) <a href="#thm-9-1">¶</a></p>'
           f'<p>{WORDS}</p></div>'
           f'<div class="dropdown admonition {ONLINE_ONLY}"><p class="admonition-title">Cite this check</p>'
           '<pre>@misc{dpcompanion-X,</pre></div>')
    page.write_text(page.read_text().replace('<section id="t">', box + '<section id="t">', 1))
    path = pdf.build_pdf(build, ["book/a", "book/b"], info=INFO, title="The Book", out=io.StringIO(), timeout=120)
    if path is None:
        pytest.skip("no Chromium with chromedriver")
    texts = [p.extract_text() or "" for p in pypdf.PdfReader(path).pages]
    m = re.search(r"Theorem 9\.1 \(A bound on every schedule\)\s*(\d+)", texts[1])
    assert m, texts[1]
    assert "A bound on every schedule" in texts[int(m.group(1)) - 1]
    assert not any("@misc{dpcompanion" in t or "Cite this check" in t for t in texts)


def _with_boxes(build: Path) -> None:
    """Chapter A with a result box (its heading's pilcrow permalink) and two claim boxes, as the pages render them."""
    page = build / "book" / "a.html"
    box = ('<div class="dpc-result dpc-theorem admonition" id="thm-9"><p class="admonition-title">Theorem 9 (X) '
           '<a class="reference internal" href="#thm-9"><span class="std std-ref">\u00b6</span></a></p><p>stated</p></div>')
    claims = "".join(f'<div class="dropdown tip claim admonition" id="claim-x-{k}"><p class="admonition-title">'
                     f'<strong>X-{k} \u00b7 PROVED:</strong> a claim</p><p>Derivation of X-{k}</p>'
                     f'<div class="dpc-online-only">full</div></div>' for k in (1, 2))
    text = page.read_text()
    page.write_text(text.replace("</section></article>", box + claims + "</section></article>"))


def test_print_keeps_a_result_short_and_puts_its_checks_in_an_appendix(build: Path):
    """A result prints with its statement and one line per check; the claim boxes (derivation, evidence)
    print in the appendix, each once; no pilcrow permalink and no toggle caret is printed."""
    _with_boxes(build)
    html = pdf.print_page(build, ["book/a", "book/b"], info=INFO, title="T")
    body, appendix = html.split(f"<h1>{pdf.APPENDIX_TITLE}</h1>")
    assert '<p class="dpc-claim-line"><a href="#claim-x-1">' in body and "Derivation of X-1" not in body
    assert appendix.count('id="claim-x-1"') == 1 and "Derivation of X-2" in appendix
    assert html.count('id="claim-x-1"') == 1
    assert "\u00b6" not in html and "stated" in html
    assert re.search(r"button\.toggle-button[^{]*\{display:none", html)


def test_bookmarks_read_as_their_headings():
    """Chromium's doubled or space-less bookmark titles are replaced by the heading's text."""
    heads = ["Contents", "Section 4.1: gradient descent with a noise schedule", "Theorem 4.2: the uniform schedule"]
    assert pdf.bookmark_title("ContentsContents", heads) == "Contents"
    assert pdf.bookmark_title("Section 4.1: gradient descentSection 4.1: gradient descentwith a noise schedule",
                              heads) == heads[1]
    assert pdf.bookmark_title("Theorem 4.2: the uniform schedule", heads) == heads[2]
    assert pdf.bookmark_title("Theorem 4.3", heads) == "Theorem 4.3"


def test_bookmarks_of_headings_with_math_read_whole_with_the_math_as_text():
    """A heading's typeset math is dropped from Chromium's bookmark or written twice, and a wrapped
    heading's last line repeated: each bookmark still reads as its whole heading, math as plain text."""
    page = (r'<h2>Lemma C.3: from zCDP to <span class="math">\((\epsilon,\delta)\)</span>-DP, and back'
            r'<a class="headerlink" href="#l">#</a></h2><h2>Theorem 4.1: the noise for a pre-set '
            r'<span class="math">\(\alpha_t\)</span></h2><h3>The bound against the number of steps</h3>')
    heads = pdf.heading_forms(page)
    assert pdf.headings(page) == ["Lemma C.3: from zCDP to (ε,δ)-DP, and back",
                                  "Theorem 4.1: the noise for a pre-set α_t", "The bound against the number of steps"]
    for got, want in (("Lemma C.3: from zCDP to -DP, and back", 0), ("Theorem 4.1: the noise for a pre-set", 1),
                      ("Theorem 4.1: the noise for a pre-setα_tα_t", 1),
                      ("Theorem 4.1: the noise for aTheorem 4.1: the noise for a pre-set", 1),
                      ("The bound against the number ofstepssteps", 2)):
        assert pdf.bookmark_title(got, heads) == heads[want][0], got


def test_the_papers_by_the_same_authors_in_one_year_cite_apart():
    """Two entries of references.bib with the same first author and year would both print as
    "[Hong et al., 2022]": every (first author, year) label is unique."""
    bib = (Path(__file__).resolve().parents[1] / "references.bib").read_text()
    entries = re.findall(r"@\w+\{([^,]+),(.*?)\n\}", bib, re.S)
    labels = {}
    for key, body in entries:
        author = re.search(r"author\s*=\s*\{([^,}]+)", body)
        year = re.search(r"year\s*=\s*\{([^}]+)\}", body)
        if author and year:
            labels.setdefault((author.group(1).strip(), year.group(1).strip()), []).append(key)
    clash = {k: v for k, v in labels.items() if len(v) > 1}
    assert not clash, clash
    assert labels[("Hong", "2022a")] == ["hong2022dynamic"] and labels[("Hong", "2022b")] == ["hong2022slides"]

"""A PDF of the theory chapters (``make book`` runs this after the HTML build)::

    python -m dpcompanion.book.pdf [BUILD_DIR]      # default _build/html

The chapters of the part "Theory, checked by code" are joined into one page (a cover, contents with page
numbers down to each theorem, each chapter's article without code inputs and without the blocks shown online
only (each check's evidence in full and its BibTeX: :data:`~dpcompanion.book.claims_page.ONLINE_ONLY`), the
book's references, a closing note) that headless Chromium prints
(``Page.printToPDF`` via selenium) once MathJax has typeset it. A chapter runs on from its predecessor
where a page break would leave a near-empty page (:data:`MIN_PAGE_CHARS`); page numbers and breaks are
read back from the PDF (pypdf) and the page reprinted until they settle (:data:`MAX_PASSES`). Without
Chromium and chromedriver the PDF is skipped, saying so.
"""

from __future__ import annotations

import base64
import html
import io
import re
import shutil
import sys
import tempfile
import unicodedata
from dataclasses import dataclass
from pathlib import Path

import pypdf
import yaml
from selenium import webdriver
from selenium.common.exceptions import TimeoutException, WebDriverException
from selenium.webdriver.chrome.service import Service

from dpcompanion.book.claims_page import ONLINE_ONLY
from dpcompanion.book.site import BuildInfo, build_info

REPO = Path(__file__).resolve().parents[2]
PDF_NAME = "dpcompanion-theory.pdf"
PRINT_PAGE = "book/theory-print.html"
#: the book's references, printed after the theory chapters (the chapters' citations point there)
REFERENCES_PAGE = "book/bibliography"
THEORY_CAPTION = "Theory, checked by code"
BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
DRIVERS = ("chromedriver",)
#: a page with fewer characters of text than this (its footer aside) counts as near-empty
MIN_PAGE_CHARS = 200
#: prints of the page at most, until its contents' page numbers and chapter breaks settle
MAX_PASSES = 4
#: the footer's page number as it reads in the PDF's text ("page 3 of 41")
PAGE_NUMBER = re.compile(r"page (\d+) of (\d+)")
#: the heading of the appendix that holds the claim boxes in full (a chapter's text keeps one line per claim)
APPENDIX_TITLE = "Appendix: the checks in full"
#: a permalink whose text is only a pilcrow (a result box's heading links to itself with one): left out of print
_PILCROW_LINK = re.compile(r"<a\b[^>]*>(?:\s|<[^>]+>)*\u00b6(?:\s|<[^>]+>)*</a>")
#: the start of a claim box (:func:`dpcompanion.book.claims_page.claim_block`): its class and id
_CLAIM_BOX = re.compile(r'<div class="(?:[^"]*\s)?claim(?:\s[^"]*)?" id="([^"]+)">')
_DIV = re.compile(r"<div\b|</div>")
_TITLE_P = re.compile(r'<p class="admonition-title"[^>]*>(.*?)</p>', re.S)

#: what the chapters are about, on the cover
PAPERS = ("The theorems of Hong, Wang and Zhou, \u201cDynamic Privacy Budget Allocation Improves Data Efficiency "
          "of Differentially Private Gradient Descent\u201d (FAccT 2022), and of Wu et al., \u201cAdaptive "
          "Differentially Private Empirical Risk Minimization\u201d, restated and checked by code.")


@dataclass(frozen=True)
class Browser:
    """A Chromium-like browser and the chromedriver that drives it."""

    binary: str
    driver: str


def find_browser() -> Browser | None:
    """The first Chromium-like browser on PATH with a chromedriver, or None."""
    driver = next((p for p in map(shutil.which, DRIVERS) if p), None)
    binary = next((p for p in map(shutil.which, BROWSERS) if p), None)
    return Browser(binary, driver) if binary and driver else None


def theory_pages(toc: Path = REPO / "_toc.yml") -> list[str]:
    """The ``file:`` entries of the theory part of ``_toc.yml``, in order."""
    data = yaml.safe_load(toc.read_text())
    for part in data.get("parts", []):
        if part.get("caption") == THEORY_CAPTION:
            return [c["file"] for c in part.get("chapters", []) if "file" in c]
    raise ValueError(f"{toc}: no part captioned {THEORY_CAPTION!r}")


def book_title(config: Path = REPO / "_config.yml") -> str:
    """The book's title, as ``_config.yml`` gives it to the site."""
    return str(yaml.safe_load(config.read_text())["title"])


_ARTICLE = re.compile(r'(<article class="bd-article"[^>]*>)(.*?)(</article>)', re.S)
_HEAD = re.compile(r"<head>(.*?)</head>", re.S)
_H1 = re.compile(r"<h1[^>]*>(.*?)</h1>", re.S)
_HEADERLINK = re.compile(r'<a class="headerlink".*?</a>', re.S)
_TAG = re.compile(r"<[^>]+>")
#: the class of a folded claim or errata box (:func:`dpcompanion.book.claims_page.claim_block`)
_FOLDED_BOX = re.compile(r'class="(dropdown [^"]*\b(?:claim|erratum)\b[^"]*)"')
#: a result's box (:func:`dpcompanion.book.claims_page.theorem_markdown`): its id and title
_RESULT_BOX = re.compile(r'<div class="[^"]*\bdpc-result\b[^"]*" id="([^"]+)">(?:\s*<span id="[^"]*"></span>)*\s*'
                         r'<p class="admonition-title"[^>]*>(.*?)</p>', re.S)

# Print styles: code cells show their outputs only; figures and displayed formulas are not split across
# pages, nor a heading from what follows it; boxes and tables may split (the theme keeps admonitions whole,
# which left near-empty pages); a figure is at most about half a page tall. A fold prints open without its
# summary ("more", a hidden cell's toggle): a <summary> (display:list-item) in a table cell also made
# Chromium print each row of the table on a page of its own.
_STYLE = """<style>
body{margin:0}
html{font-size:87.5%}
.headerlink,.copybtn,.cell_input,details>summary,button.toggle-button,.tb-icon,.__ONLINE_ONLY__{display:none!important}
.dpc-claim-line{margin:.2em 0 .2em 1em;font-size:.9em}
.dpc-claim-line a{text-decoration:none;color:inherit}
.dpc-appendix .claim{font-size:.92em}
.dpc-cover{break-after:page;padding-top:6cm}
.dpc-cover .dpc-title{font-size:2.2em;font-weight:bold;line-height:1.2;margin-bottom:1.5em}
.dpc-cover dl{display:grid;grid-template-columns:max-content auto;gap:.3em 1em}
.dpc-cover dd{margin:0}
.dpc-toc{break-after:page}
.dpc-toc ol{list-style:none;padding:0}
.dpc-toc li{display:flex;margin:.4em 0}
.dpc-toc li a{flex:1}
.dpc-toc .dpc-page{margin-left:1em}
.dpc-toc li.dpc-toc-result{margin:.15em 0 .15em 1.5em;font-size:.92em}
.dpc-print-chapter{break-before:page}
.dpc-print-chapter.dpc-run-on{break-before:auto;margin-top:2em}
.dpc-colophon{break-inside:avoid;margin-top:1.5em;border-top:1px solid #999;font-size:.85em}
h1,h2,h3,h4{break-after:avoid}
figure,img,div.math,mjx-container[display="true"]{break-inside:avoid}
.admonition,div.admonition,details,section,table,.cell,.cell_output,.output{break-inside:auto!important}
img{max-width:100%;max-height:10cm;width:auto;height:auto;object-fit:contain}
p{orphans:3;widows:3}
</style>""".replace("__ONLINE_ONLY__", ONLINE_ONLY)


def split_claims(article: str) -> tuple[str, list[str]]:
    """A chapter's article with each claim box replaced by one line (its title, linked to the box), and the
    boxes themselves, in order: the print keeps each result to its statement, sketch, erratum and the list of
    its checks, and prints the boxes (derivations, evidence) in an appendix.

    >>> body, boxes = split_claims('<p>x</p><div class="dropdown tip claim admonition" id="claim-a">'
    ...                            '<p class="admonition-title"><strong>A</strong></p><div>in</div></div><p>y</p>')
    >>> body
    '<p>x</p><p class="dpc-claim-line"><a href="#claim-a"><strong>A</strong></a></p><p>y</p>'
    >>> boxes[0][-19:]
    '<div>in</div></div>'
    """
    out, boxes, pos = [], [], 0
    for m in _CLAIM_BOX.finditer(article):
        if m.start() < pos:  # inside a box already taken
            continue
        depth, end = 0, None
        for d in _DIV.finditer(article, m.start()):
            depth += 1 if d.group(0) == "<div" else -1
            if depth == 0:
                end = d.end()
                break
        if end is None:
            break
        box = article[m.start():end]
        t = _TITLE_P.search(box)
        title = t.group(1) if t else html.escape(m.group(1))
        out += [article[pos:m.start()], f'<p class="dpc-claim-line"><a href="#{m.group(1)}">{title}</a></p>']
        boxes.append(box)
        pos = end
    return "".join(out) + article[pos:], boxes


def chapter_title(page_html: str, page: str) -> str:
    """The text of a chapter's ``<h1>`` (its heading link aside)."""
    m = _H1.search(page_html)
    if not m:
        raise ValueError(f"{page}.html: no <h1> title")
    return " ".join(html.unescape(_TAG.sub("", _HEADERLINK.sub("", m.group(1)))).split())


def chapter_results(article: str) -> list[tuple[str, str]]:
    """``(id, title)`` of each theorem, lemma, proposition... box of a chapter, in order (one per id).

    >>> chapter_results('<div class="dpc-result dpc-theorem admonition" id="thm-4-1"><span id="index-0"></span>'
    ...                 '<p class="admonition-title">Theorem 4.1 (Utility of PGD) <a href="#thm-4-1">¶</a></p></div>')
    [('thm-4-1', 'Theorem 4.1 (Utility of PGD)')]
    """
    out, seen = [], set()
    for m in _RESULT_BOX.finditer(article):
        if m.group(1) not in seen:
            seen.add(m.group(1))
            out.append((m.group(1), " ".join(html.unescape(_TAG.sub("", m.group(2))).replace("¶", "").split())))
    return out


def result_pages(reader: pypdf.PdfReader, results: dict[int, list[tuple[str, str]]], starts: dict[int, int]) -> dict[str, int]:
    """The 1-based PDF page of each result box: the first page from its chapter's start whose text holds the
    start of its title (white space ignored, ligatures such as "ﬂ" read as their letters)."""
    texts = ["".join(unicodedata.normalize("NFKC", p.extract_text() or "").split()) for p in reader.pages]
    found = {}
    for i, items in results.items():
        k = starts.get(i, 0)
        for rid, title in items:
            key = "".join(unicodedata.normalize("NFKC", title).split())[:40]
            j = next((j for j in range(k, len(texts)) if key in texts[j]), None)
            if j is not None:
                found[rid], k = j + 1, j
    return found


def read_chapters(build: Path, pages: list[str]) -> tuple[str, list[tuple[str, str]]]:
    """The first page's ``<head>`` content and each page's (title, article content)."""
    head, chapters = None, []
    for page in pages:
        text = (build / f"{page}.html").read_text()
        if head is None:
            m = _HEAD.search(text)
            head = m.group(1) if m else ""
        m = _ARTICLE.search(text)
        if not m:
            raise ValueError(f"{page}.html: no <article class=\"bd-article\"> (not a page of this book?)")
        chapters.append((chapter_title(m.group(2), page), m.group(2)))
    return head or "", chapters


def print_page(build: Path, pages: list[str], *, info: BuildInfo | None = None, title: str | None = None,
               page_numbers: dict[int, int] | None = None, result_numbers: dict[str, int] | None = None,
               run_on: frozenset[int] = frozenset()) -> str:
    """The print page (written beside the chapters, so relative links resolve): a cover, the contents
    (``page_numbers``: chapter index -> PDF page; ``result_numbers``: result id -> PDF page), each chapter on
    a new page except those in ``run_on``, and a closing note kept whole."""
    info = info or build_info()
    title = title or book_title()
    page_numbers, result_numbers = page_numbers or {}, result_numbers or {}
    head, chapters = read_chapters(build, pages)
    bodies, appendix = [], []
    for i, (title_i, article) in enumerate(chapters):
        # myst-nb's hidden cells are <details>: opened, so that their outputs print
        article = article.replace("<details", "<details open")
        # claim and errata boxes, folded on the page, print open (their evidence in full stays folded)
        article = _FOLDED_BOX.sub(r'class="toggle-shown \1"', article)
        article = _PILCROW_LINK.sub("", article)
        article, boxes = split_claims(article)
        if boxes:
            appendix.append(f"<h2>Checks of {html.escape(title_i)}</h2>" + "".join(boxes))
        cls = "dpc-print-chapter dpc-run-on" if i in run_on else "dpc-print-chapter"
        bodies.append(f'<section class="{cls}"><span id="dpc-chapter-{i + 1}"></span>{article}</section>')
    if appendix:
        k = len(chapters)
        cls = "dpc-print-chapter dpc-appendix" + (" dpc-run-on" if k in run_on else "")
        bodies.append(f'<section class="{cls}"><span id="dpc-chapter-{k + 1}"></span><h1>{html.escape(APPENDIX_TITLE)}</h1>'
                      "<p>Each check of the chapters, in full: its status, method and source, the evidence in one line "
                      "and its derivation step by step (the chapters list each check in one line, linked here).</p>"
                      f"{''.join(appendix)}</section>")
    titles = [t for t, _ in chapters]
    head = re.sub(r"<title>.*?</title>", f"<title>{html.escape(title)}: theory</title>", head, flags=re.S)
    esc = html.escape
    cover = (
        f'<section class="dpc-cover"><p class="dpc-title">{esc(title)}</p>'
        f'<p class="dpc-subtitle">{esc(THEORY_CAPTION)}: the theory chapters of the book, for print</p>'
        f"<p>{esc(PAPERS)}</p>"
        f'<dl><dt>version</dt><dd>dpcompanion {esc(info.version)}</dd>'
        f'<dt>commit</dt><dd>{esc(info.commit_label)}</dd>'
        f'<dt>built</dt><dd>{esc(info.date)}</dd>'
        f'<dt>online</dt><dd>{esc(info.url)}</dd></dl></section>'
    )
    entries = "".join(
        f'<li><a href="#dpc-chapter-{i + 1}">{esc(t)}</a><span class="dpc-page">{page_numbers.get(i, "")}</span></li>'
        + "".join(f'<li class="dpc-toc-result"><a href="#{esc(rid)}">{esc(rt)}</a>'
                  f'<span class="dpc-page">{result_numbers.get(rid, "")}</span></li>'
                  for rid, rt in chapter_results(article))
        for i, (t, article) in enumerate(chapters))
    if appendix:
        entries += (f'<li><a href="#dpc-chapter-{len(chapters) + 1}">{esc(APPENDIX_TITLE)}</a>'
                    f'<span class="dpc-page">{page_numbers.get(len(chapters), "")}</span></li>')
    toc = (
        f'<nav class="dpc-toc"><h1>Contents</h1><ol>{entries}</ol>'
        f"<p>Each chapter is the book's page of the same name with its code cells left out: the "
        f"statements, checks and figures are the outputs of the notebooks at commit {esc(info.commit_label)}, "
        f"which hold the code that produced them. Each check's evidence in full and its BibTeX entry are "
        f"in the online book only.</p></nav>"
    )
    colophon = (
        f'<section class="dpc-colophon"><p><b>About this PDF.</b> Printed from the HTML book of commit '
        f"{esc(info.commit_label)}, built on {esc(info.date)}, by headless Chromium (dpcompanion.book.pdf). "
        f"The code cells are left out: each chapter's notebook at that commit, and the online book at "
        f'{esc(info.url)} with its Binder links and downloadable notebooks, rerun them. Cite the book with the '
        f"CITATION.cff of the build.</p></section>"
    )
    return (f"<!DOCTYPE html><html><head>{head}{_STYLE}</head>"
            f"<body><main>{cover}{toc}{''.join(bodies)}{colophon}</main></body></html>")


def footer_template(info: BuildInfo) -> str:
    """Chromium's footer: the version, the commit and "page N of M" (a footer needs its own font size)."""
    return ('<div style="font-size:8px;width:100%;text-align:center;color:#555;font-family:sans-serif">'
            f'dpcompanion {html.escape(info.version)} · {html.escape(info.commit)} · '
            'page <span class="pageNumber"></span> of <span class="totalPages"></span></div>')


# Resolves once MathJax has typeset the page and the fonts are loaded; at once where the
# page loads no MathJax (Sphinx adds it only to pages with math).
_WAIT_TYPESET = """
const done = arguments[arguments.length - 1];
const finish = () => document.fonts.ready.then(() => done(true));
if (!window.MathJax && !Array.from(document.scripts).some(s => /mathjax/i.test(s.src))) { finish(); return; }
(function poll() {
  if (window.MathJax && MathJax.startup && MathJax.startup.promise) { MathJax.startup.promise.then(finish); }
  else { setTimeout(poll, 100); }
})();
"""


def _print(driver, page: Path, info: BuildInfo) -> bytes:
    driver.get(page.resolve().as_uri())
    driver.execute_async_script(_WAIT_TYPESET)
    result = driver.execute_cdp_cmd("Page.printToPDF", {
        "paperWidth": 8.27, "paperHeight": 11.69,  # A4, inches
        "marginTop": 0.6, "marginBottom": 0.7, "marginLeft": 0.7, "marginRight": 0.7,
        "printBackground": True, "displayHeaderFooter": True,
        "headerTemplate": "<span></span>", "footerTemplate": footer_template(info),
        "generateDocumentOutline": True, "generateTaggedPDF": True,
    })
    return base64.b64decode(result["data"])


def page_text_lengths(reader: pypdf.PdfReader) -> list[int]:
    """Characters of text on each page, the footer's line aside."""
    lengths = []
    for p in reader.pages:
        lines = [ln for ln in (p.extract_text() or "").splitlines() if not PAGE_NUMBER.search(ln)]
        lengths.append(len("".join("".join(lines).split())))
    return lengths


#: a page whose text spans less than this fraction of the printable height counts as sparse: two in a row
#: are a layout fault (a table printed a row a page); one alone may end a chapter or precede a figure
MIN_PAGE_FILL = 0.6
#: the page's margins, points (as :func:`_print` asks for them): top, bottom
_MARGINS_PT = (0.6 * 72, 0.7 * 72)


def page_fills(reader: pypdf.PdfReader) -> list[float]:
    """The fraction of each page's printable height that its contents span, top to bottom: its lines of
    text, its images and its filled shapes (a figure drawn as vector paths), the footer aside."""
    fills = []
    for p in reader.pages:
        ys: list[float] = []
        pending: list[tuple[float, float]] = []

        def text(t, cm, tm, _font, _size, ys=ys):
            y = tm[4] * cm[1] + tm[5] * cm[3] + cm[5]
            if t.strip() and y > _MARGINS_PT[1]:
                ys.append(y)

        def operand(op, args, cm, _tm, ys=ys, pending=pending):
            if op == b"re":  # a rectangle: a shape when filled, a clip when ended by "n"
                y0, y1 = args[1] * cm[3] + cm[5], (args[1] + args[3]) * cm[3] + cm[5]
                pending.append((min(y0, y1), max(y0, y1)))
            elif op == b"Do":  # an image or form, drawn on the unit square
                pending.append((min(cm[5], cm[5] + cm[3]), max(cm[5], cm[5] + cm[3])))
            if op in (b"f", b"f*", b"F", b"B", b"B*", b"Do"):
                ys.extend(y for lo, hi in pending for y in (max(lo, _MARGINS_PT[1]), hi) if hi > _MARGINS_PT[1])
            if op in (b"f", b"f*", b"F", b"B", b"B*", b"Do", b"n", b"S"):
                pending.clear()

        p.extract_text(visitor_text=text, visitor_operand_before=operand)
        usable = float(p.mediabox.height) - sum(_MARGINS_PT)
        fills.append(min(1.0, (max(ys) - min(ys)) / usable) if ys else 0.0)
    return fills


def sparse_runs(fills: list[float], skip: int = 2) -> list[int]:
    """The 1-based pages that, with the page after them, are both sparse (:data:`MIN_PAGE_FILL`), after the
    first ``skip`` (the cover and the contents, each ending its page by design) and before the last (it ends
    the document).

    >>> sparse_runs([0.3, 0.2, 0.9, 0.5, 0.4, 0.95, 0.3, 0.3])
    [4]
    """
    return [i + 1 for i in range(skip, len(fills) - 2) if fills[i] < MIN_PAGE_FILL and fills[i + 1] < MIN_PAGE_FILL]


def chapter_starts(reader: pypdf.PdfReader, titles: list[str]) -> dict[int, int]:
    """The 0-based page each chapter starts on, from the PDF's bookmarks. Matched without white space, on
    the title a bookmark ends with: Chromium joins a heading's lines without a space, some twice."""
    def bare(t: str) -> str:
        return "".join(str(t).split())

    starts, want = {}, [(bare(t), i) for i, t in enumerate(titles)]
    for item in reader.outline:
        if isinstance(item, list):
            continue
        got = bare(item.title)
        for t, i in want:
            if t and i not in starts and (got == t or got.endswith(t) or (len(got) >= 12 and t.startswith(got))):
                starts[i] = reader.get_destination_page_number(item)
                break
    return starts


_HEADING = re.compile(r"<h([1-4])[^>]*>(.*?)</h\1>", re.S)
_INLINE_MATH = re.compile(r"\\\((.*?)\\\)", re.S)
#: TeX commands of the headings' math, as plain text (a bookmark is plain text)
_TEX_WORDS = {
    "alpha": "α", "beta": "β", "gamma": "γ", "delta": "δ", "epsilon": "ε", "varepsilon": "ε", "eta": "η",
    "kappa": "κ", "lambda": "λ", "mu": "μ", "rho": "ρ", "sigma": "σ", "tau": "τ", "theta": "θ", "zeta": "ζ",
    "Delta": "Δ", "Sigma": "Σ", "infty": "∞", "le": "≤", "leq": "≤", "ge": "≥", "geq": "≥", "cdot": "·",
    "times": "×", "sqrt": "√", "ell": "ℓ", "mathcal": "", "mathrm": "", "text": "", "bar": "", "hat": "",
    "left": "", "right": "", ",": " ", ";": " ", "!": "",
}


def tex_text(tex: str) -> str:
    r"""Inline TeX as plain text: Greek letters and common symbols as their characters, braces and
    unknown commands dropped (their arguments kept).

    >>> tex_text(r"(\epsilon,\delta)"), tex_text(r"\alpha_t"), tex_text("R'"), tex_text(r"\sqrt{T}")
    ('(ε,δ)', 'α_t', "R'", '√T')
    """
    out = re.sub(r"\\([A-Za-z]+|[,;!])", lambda m: _TEX_WORDS.get(m.group(1), ""), tex)
    return " ".join(out.replace("{", "").replace("}", "").split())


def _heading_texts(raw: str) -> tuple[str, str, str]:
    """A heading's text with its inline math as plain text, without it, and with it twice."""
    def text(f) -> str:
        return " ".join(_INLINE_MATH.sub(lambda x: f(tex_text(x.group(1))), raw).split())

    return text(lambda m: m), text(lambda m: ""), text(lambda m: m + m)


def headings(page_html: str) -> list[str]:
    """The text of each heading of the print page (its permalink aside), in order, its inline math as plain
    text (:func:`tex_text`): what a bookmark should read."""
    return [t for t, _ in heading_forms(page_html)]


def heading_forms(page_html: str) -> list[tuple[str, tuple[str, ...]]]:
    """Each heading of the print page (:func:`headings`) with the texts a bookmark of it may read: Chromium
    drops a heading's typeset math from its bookmark or writes it twice."""
    out = []
    for m in _HEADING.finditer(page_html):
        texts = _heading_texts(html.unescape(_TAG.sub("", _HEADERLINK.sub("", m.group(2)))))
        if texts[0]:
            out.append((texts[0], tuple(dict.fromkeys(texts))))
    return out


def _bare(t: str) -> str:
    return "".join(t.split())


def _repeats_a_part(g: str, b: str) -> bool:
    """Whether ``g`` is ``b`` or ``b`` with one stretch of it repeated in place (``b[:j] + b[j-k:j] + b[j:]``):
    Chromium repeats a heading's first or last line(s) in its bookmark."""
    k = len(g) - len(b)
    if k <= 0 or not b:
        return k == 0 and g == b and bool(b)
    return any(g == b[:j] + b[j - k:j] + b[j:] for j in range(k, len(b) + 1))


def bookmark_title(got: str, heads: list[str] | list[tuple[str, tuple[str, ...]]]) -> str:
    r"""A bookmark's title as its heading reads. Chromium builds a bookmark from a heading's lines joined
    without spaces, sometimes repeats a line, and drops a heading's typeset math or writes it twice: the
    heading (a title, or a title with the texts its bookmark may read, :func:`heading_forms`) that, spaces
    removed and with at most one stretch repeated, the bookmark reads is the title; ``got`` when none matches.

    >>> bookmark_title("Theorem 4.2: the uniform scheduleTheorem 4.2: the uniform schedule", ["Theorem 4.2: the uniform schedule"])
    'Theorem 4.2: the uniform schedule'
    >>> bookmark_title("Section 4.2: momentumSection 4.2: momentum(Theorems 4.5-4.7)", ["Section 4.2: momentum (Theorems 4.5-4.7)"])
    'Section 4.2: momentum (Theorems 4.5-4.7)'
    >>> bookmark_title("The bound against the number ofstepssteps", ["The bound against the number of steps"])
    'The bound against the number of steps'
    >>> bookmark_title("Lemma C.3: from zCDP to -DP, and back", heading_forms(r"<h2>Lemma C.3: from zCDP to \((\epsilon,\delta)\)-DP, and back</h2>"))
    'Lemma C.3: from zCDP to (ε,δ)-DP, and back'
    >>> bookmark_title("Other", ["Theorem 4.1"])
    'Other'
    """
    g = _bare(got)
    for h in heads:
        title, forms = (h, (h,)) if isinstance(h, str) else h
        if any(_repeats_a_part(g, _bare(f)) for f in forms):
            return title
    return got


def clean_outline(data: bytes, heads: list[str] | list[tuple[str, tuple[str, ...]]]) -> bytes:
    """The PDF ``data`` with each bookmark titled as its heading reads (:func:`bookmark_title`)."""
    from pypdf.generic import NameObject, TextStringObject

    writer = pypdf.PdfWriter(clone_from=pypdf.PdfReader(io.BytesIO(data)))
    root = writer._root_object
    if "/Outlines" not in root:
        return data

    def walk(node):
        while node is not None:
            node = node.get_object()
            if "/Title" in node:
                node[NameObject("/Title")] = TextStringObject(bookmark_title(str(node["/Title"]), heads))
            if "/First" in node:
                walk(node["/First"])
            node = node.get("/Next")

    walk(root["/Outlines"].get_object().get("/First"))
    buf = io.BytesIO()
    writer.write(buf)
    return buf.getvalue()


def build_pdf(build: Path, pages: list[str] | None = None, *, info: BuildInfo | None = None,
              title: str | None = None, browser: Browser | None = None, timeout: float = 300.0,
              out=sys.stdout) -> Path | None:
    """Write ``build/dpcompanion-theory.pdf`` of ``pages`` (default: :func:`theory_pages`);
    return its path, or None (said on ``out``) when there is no browser. Raises
    ``RuntimeError`` when the browser fails or times out (``timeout`` seconds for each load,
    typesetting and print)."""
    browser = browser or find_browser()
    if browser is None:
        print("pdf: no Chromium found (or no chromedriver; make browser installs both); the theory PDF is skipped",
              file=out)
        return None
    if pages is None:
        pages = theory_pages() + ([REFERENCES_PAGE] if (build / f"{REFERENCES_PAGE}.html").exists() else [])
    info = info or build_info()
    chapters = read_chapters(build, pages)[1]
    titles = [t for t, _ in chapters] + [APPENDIX_TITLE]
    results = {i: chapter_results(article) for i, (_, article) in enumerate(chapters)}
    page = build / PRINT_PAGE
    page.parent.mkdir(parents=True, exist_ok=True)
    profile = tempfile.mkdtemp(prefix="dpcompanion-pdf-")
    opts = webdriver.ChromeOptions()
    opts.binary_location = browser.binary
    for flag in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--allow-file-access-from-files", f"--user-data-dir={profile}"):
        opts.add_argument(flag)
    driver = None
    numbers: dict[int, int] = {}
    result_numbers: dict[str, int] = {}
    run_on: set[int] = set()
    settled = False
    try:
        driver = webdriver.Chrome(service=Service(browser.driver), options=opts)
        driver.set_page_load_timeout(timeout)
        driver.set_script_timeout(timeout)
        for _ in range(MAX_PASSES):
            page_html = print_page(build, pages, info=info, title=title, page_numbers=numbers,
                                   result_numbers=result_numbers, run_on=frozenset(run_on))
            page.write_text(page_html)
            data = _print(driver, page, info)
            reader = pypdf.PdfReader(io.BytesIO(data))
            starts = chapter_starts(reader, titles)
            lengths = page_text_lengths(reader)
            # a chapter whose predecessor would end on a near-empty page runs on from it
            more = {i for i, s in starts.items() if 0 < i and i not in run_on and lengths[s - 1] < MIN_PAGE_CHARS}
            shown = {i: s + 1 for i, s in starts.items()}
            shown_results = result_pages(reader, results, starts)
            settled = not more and shown == numbers and shown_results == result_numbers
            if settled:
                break
            run_on |= more
            numbers, result_numbers = shown, shown_results
    except TimeoutException:
        raise RuntimeError(f"{Path(browser.binary).name} could not print {page} within {timeout:g} s "
                           "(loading it or MathJax's typesetting did not finish)") from None
    except WebDriverException as exc:
        raise RuntimeError(f"{Path(browser.binary).name} could not print {page}: {exc.msg or exc}") from None
    finally:
        if driver is not None:
            driver.quit()
        shutil.rmtree(profile, ignore_errors=True)
        page.unlink(missing_ok=True)  # printed: the site keeps no orphan page (one 78,000 px tall)
    data = clean_outline(data, heading_forms(page_html))
    target = build / PDF_NAME
    tmp = target.with_suffix(".pdf.tmp")
    tmp.write_bytes(data)
    tmp.replace(target)
    short = [i + 1 for i, n in enumerate(lengths) if n < MIN_PAGE_CHARS]
    sparse = sparse_runs(page_fills(reader))
    notes = ([f"near-empty pages {short}"] if short else []) + ([f"sparse pages in a row from {sparse}"] if sparse else [])
    notes += ([] if settled else ["contents' page numbers unsettled"])
    print(f"pdf: {len(pages)} chapters, {len(result_numbers)} results in the contents, {len(lengths)} pages -> {target} "
          f"({target.stat().st_size // 1024} KiB)" + "".join(f"; {n}" for n in notes), file=out)
    return target


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    build = Path(args[0]) if args else REPO / "_build" / "html"
    if not (build / "index.html").exists():
        print(f"dpcompanion pdf: error: {build} holds no built book (run jupyter-book build first)", file=sys.stderr)
        return 2
    try:
        build_pdf(build)
    except (RuntimeError, ValueError) as exc:
        print(f"dpcompanion pdf: error: {' '.join(str(exc).split())}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

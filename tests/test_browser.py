"""The built book in a real browser (headless Chromium through Selenium): the math is
typeset by the book's own MathJax, every image loads, internal links answer 200, no page
scrolls sideways, no claim evidence shows raw JSON.

Each page of the table of contents is loaded once per run: the first test of a page loads it
in the module's browser session and records what every check reads (:func:`_visit`); the
tests of one page form one pytest-xdist group, so that they run on one worker, after another."""

from __future__ import annotations

import functools
import http.server
import re
import threading
import urllib.request
from pathlib import Path
from urllib.parse import urljoin, urlsplit

import pytest

import yaml

from bookutil import NOTEBOOKS, REPO, chromium, require_build, toc_files
from limits import HANG_GUARD_S

pytestmark = [pytest.mark.browser, pytest.mark.slow]

# Pages whose math, images and links are checked: the landing page and one notebook page
# with math and figures.
PAGES = ["book/index.html", "book/h-f-theory.html"]
REPO = Path(__file__).resolve().parent.parent
# Every page of the book's table of contents, as built (a page left in _build by an earlier
# build, e.g. after a rename, is not part of the book); _toc.yml is read at collection.
TOC_PAGES = [f"{f}.html" for f in toc_files()]


def _per_page(pages: list[str]) -> list:
    """One parameter per page, in the page's xdist group (the tests of a page share its load)."""
    return [pytest.param(p, id=p, marks=pytest.mark.xdist_group(f"browser:{p}")) for p in pages]


@pytest.fixture(scope="module")
def server():
    build = require_build()
    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):  # no access log on the test's stderr
            pass

        def handle(self):  # a browser may drop a connection it no longer needs
            try:
                super().handle()
            except (BrokenPipeError, ConnectionResetError):
                pass

    handler = functools.partial(Quiet, directory=str(build))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    t = threading.Thread(target=httpd.serve_forever, daemon=True)
    t.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/"
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture(scope="module")
def browser():
    with chromium(network_log=False, hang_guard_s=HANG_GUARD_S) as driver:
        yield driver


def _wait_for_mathjax(driver) -> int:
    """Wait until MathJax finished typesetting; return the number of typeset formulas, or -1
    when MathJax is missing: not loaded within 30 s, or not on the page at all (Sphinx adds
    its script only to pages with math; waiting there could only time out)."""
    return driver.execute_async_script(
        """
        const done = arguments[arguments.length - 1];
        const count = () => document.querySelectorAll('mjx-container').length;
        const t0 = Date.now();
        if (!window.MathJax && !Array.from(document.scripts).some(s => /mathjax/i.test(s.src))) { done(-1); return; }
        (function poll() {
          if (window.MathJax && MathJax.startup && MathJax.startup.promise) {
            MathJax.startup.promise.then(() => done(count()));
          } else if (Date.now() - t0 > 30000) { done(-1); } else { setTimeout(poll, 100); }
        })();
        """
    )


# What each check reads from a page, in one load: the claim blocks' text right after the
# load (before MathJax rewrites the math), then, once MathJax has finished, the formulas,
# images, links and the page's width.
# The boxes whose text the claim checks read: every open admonition, and the claim and errata
# boxes, which are folded on the page but read whole here (their nested dropdowns,
# the evidence in full and the citation, are left out as before).
_BOXES = "'.admonition:not(.dropdown), .admonition.claim, .admonition.erratum'"
_TEXTS = (
    "return Array.from(document.querySelectorAll(" + _BOXES + ")).filter(a => !a.closest('.admonition .admonition'))"
    ".map(a => Array.from(a.querySelectorAll('p, td, li')).filter(e => { const d = e.closest('.dropdown, pre');"
    " return !d || d === a; })"
    ".map(e => e.innerText).join('\\n'))"
)
# The prose of every claim block (its math, code and dropdowns removed), read before MathJax runs.
_CLAIM_PROSE = (
    "return Array.from(document.querySelectorAll(" + _BOXES + ")).filter(a => !a.closest('.admonition .admonition'))"
    ".map(a => { const c = a.cloneNode(true);"
    " c.querySelectorAll('.math, code, pre, .dropdown, mjx-container, script').forEach(e => e.remove());"
    " return c.innerText; })"
)
# Each figure of a notebook's output: its image, the line under it and that line's links; the folded
# blocks (a smaller run's figures: sphinx-togglebutton's .toggle-hidden, <details>) opened while they are measured, as a reader opens them, then closed.
_FIGURES = (
    "const closed = Array.from(document.querySelectorAll('details:not([open])')); closed.forEach(d => d.open = true);"
    " const hidden = Array.from(document.querySelectorAll('.toggle-hidden'));"
    " hidden.forEach(e => e.classList.remove('toggle-hidden'));"
    " const out = Array.from(document.querySelectorAll('.cell_output img')).map(i => { const c = i.nextElementSibling;"
    " return {src: i.currentSrc || i.src, alt: i.alt, shown: i.getBoundingClientRect().width, natural: i.naturalWidth,"
    " folded: !!i.closest('details, .toggle'), room: i.parentElement.clientWidth,"
    " caption: c ? c.innerText : '', links: c ? Array.from(c.querySelectorAll('a[href]')).map(a => a.href) : []}; });"
    " closed.forEach(d => d.open = false); hidden.forEach(e => e.classList.add('toggle-hidden')); return out;"
)
_OVERFLOW = (
    "const d = document.documentElement;"
    "return Math.max(d.scrollWidth, document.body.scrollWidth) - d.clientWidth;"
)
_CULPRIT = (
    "const w = document.documentElement.clientWidth; const out = [];"
    "for (const e of document.querySelectorAll('body *')) {"
    "  const r = e.getBoundingClientRect();"
    "  if (r.right > w + 1 && getComputedStyle(e).overflowX === 'visible') {"
    "    out.push(e.tagName + '.' + e.className); if (out.length > 2) break; } }"
    "return out;"
)
# The page's height (CSS px) at the 1280 px window (pages a reader finishes).
_HEIGHT = "return Math.max(document.documentElement.scrollHeight, document.body.scrollHeight);"
# Code blocks that hide their line ends behind a scroll bar, and formulas the theme clips (an inline
# formula wider than the rest of its line lost its right-hand side).
_HIDDEN_ENDS = (
    "return Array.from(document.querySelectorAll('.bd-article .highlight pre, .bd-article .cell_output pre, "
    ".bd-article span.math, .bd-article div.math')).filter(e => e.offsetParent !== null"
    " && e.scrollWidth > e.clientWidth + 1 && (e.tagName === 'PRE' || getComputedStyle(e).overflowX === 'hidden'))"
    ".map(e => e.tagName + ': ' + e.textContent.slice(0, 50) + ' (' + e.scrollWidth + ' px in ' + e.clientWidth + ' px)');"
)
# Tables of the article whose content is wider than their box (their hidden columns scroll).
_WIDE_TABLES = (
    "return Array.from(document.querySelectorAll('.bd-article table')).filter(t => t.getClientRects().length"
    " && t.scrollWidth > t.clientWidth + 1).map(t => (t.querySelector('th, td') || t).innerText.slice(0, 40)"
    " + ' (' + t.scrollWidth + ' px in ' + t.clientWidth + ' px)');"
)
#: the tallest a page may be at 1280 px
MAX_PAGE_PX = 12_000
# Words of table cells that the layout wraps inside ("ag re es", "0. 00 12 2"): each
# token (a run of non-space characters, cut after a hyphen, slash or dash, where a line may
# legitimately break) must lie on one line: its Range's client rects all share one line box.
_MIDWORD = r"""
const out = [];
const lines = (rects) => { const tops = rects.filter(r => r.width > 0).map(r => r.top).sort((a, b) => a - b);
  let n = tops.length ? 1 : 0; for (let i = 1; i < tops.length; i++) if (tops[i] - tops[i - 1] > 4) n++; return n; };
for (const cell of document.querySelectorAll('.bd-article td, .bd-article th')) {
  if (!cell.getClientRects().length) continue;
  const walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
  let node;
  while ((node = walker.nextNode())) {
    if (node.parentElement.closest('pre, mjx-container, .MathJax, script, style')) continue;
    const re = /[^\s\-\/\u2010-\u2014]+[\-\/\u2010-\u2014]?/g;
    let m;
    while ((m = re.exec(node.textContent))) {
      if (m[0].length < 2) continue;
      const r = document.createRange(); r.setStart(node, m.index); r.setEnd(node, m.index + m[0].length);
      if (lines(Array.from(r.getClientRects())) > 1) { out.push(m[0] + ' (in: ' + cell.innerText.slice(0, 60) + ')'); if (out.length >= 5) return out; }
    }
  }
}
return out;
"""
# Words from the project's workshop that must not reach readers: the papers' file
# numbers, the catalogue's name, issue numbers.
# a source named by its file number ("(001 Sec. 5)", "000 App. D") instead of what it is
FILE_CITATIONS = [r"\(00[0-4][ ,)]", r"(?<![\w.])00[0-4],? (?:Sec|App|Eq|Alg|Fig|Thm|Theorem|Lemma|Table|Remark)\b"]
INTERNAL_WORDS = [r"\bfile 00\d", r"\bfiles 00\d", r"\bSPEC\b", r"(?i)\bissues? #?\d+", *FILE_CITATIONS]


@pytest.fixture(scope="module")
def visits() -> dict:
    """page -> what :func:`_visit` recorded (each page is loaded at most once per session)."""
    return {}


def _visit(server, browser, visits: dict, page: str) -> dict:
    if page not in visits:
        assert (require_build() / page).exists(), f"{page} is not in the built book (pages of _toc.yml must be built)"
        browser.get(urljoin(server, page))
        v = {"claim_texts": browser.execute_script(_TEXTS), "claim_prose": browser.execute_script(_CLAIM_PROSE)}
        v["typeset"] = _wait_for_mathjax(browser)
        v["mj_errors"] = browser.execute_script("return document.querySelectorAll('mjx-merror').length")
        v["images"] = browser.execute_script(
            "return Array.from(document.images).map(i => [i.currentSrc || i.src, i.complete && i.naturalWidth > 0])"
        )
        v["hrefs"] = browser.execute_script("return Array.from(document.querySelectorAll('a[href]')).map(a => a.href)")
        v["text"] = browser.execute_script("return document.body.innerText")
        v["url"] = browser.current_url
        v["midword"] = browser.execute_script(_MIDWORD)
        v["figures"] = browser.execute_script(_FIGURES)
        v["overflow"] = browser.execute_script(_OVERFLOW)
        v["culprit"] = browser.execute_script(_CULPRIT) if v["overflow"] > 1 else []
        v["height"] = browser.execute_script(_HEIGHT)
        v["wide_tables"] = browser.execute_script(_WIDE_TABLES)
        v["hidden_ends"] = browser.execute_script(_HIDDEN_ENDS)
        v["console"] = [e["message"] for e in browser.get_log("browser") if e.get("level") == "SEVERE"]
        visits[page] = v
    return visits[page]


@pytest.mark.parametrize("page", _per_page(PAGES))
def test_page_renders_math_images_and_links(server, browser, visits, page):
    v = _visit(server, browser, visits, page)
    typeset = v["typeset"]
    assert typeset > 0, f"{page}: no MathJax output in the DOM (MathJax {'missing' if typeset < 0 else 'found no math'})"
    mj_errors = v["mj_errors"]
    assert mj_errors == 0, f"{page}: {mj_errors} formulas failed to typeset"
    images = v["images"]
    assert images, f"{page}: no images"
    broken_img = [src for src, ok in images if not ok]
    assert not broken_img, f"{page}: images that did not load: {broken_img}"
    internal = sorted({h.split("#")[0] for h in v["hrefs"] if h.startswith(server)})
    assert internal, f"{page}: no internal links"
    bad = []
    for h in internal:
        try:
            with urllib.request.urlopen(h, timeout=HANG_GUARD_S) as r:
                if r.status != 200:
                    bad.append((h, r.status))
        except Exception as exc:  # noqa: BLE001
            bad.append((urlsplit(h).path, repr(exc)))
    assert not bad, f"{page}: broken internal links {bad}"


@pytest.mark.parametrize("page", _per_page(TOC_PAGES))
def test_no_console_error_on_any_page(server, browser, visits, page):
    """No page logs an error to the browser's console (sphinx-thebe's configuration script, added twice,
    raised a SyntaxError on every page)."""
    v = _visit(server, browser, visits, page)
    assert not v["console"], f"{page}: {v['console'][:3]}"


@pytest.mark.parametrize("page", _per_page(TOC_PAGES))
def test_no_page_scrolls_horizontally_at_1280px(server, browser, visits, page):
    """Wide tables (h-tables, h-x-eer), long code and display math scroll inside
    their own box; the page itself never scrolls sideways at a 1280 px wide window."""
    v = _visit(server, browser, visits, page)
    assert v["overflow"] <= 1, (
        f"{page} is wider than a 1280 px window by {v['overflow']} px (first elements: {v['culprit']})"
    )


@pytest.mark.parametrize("page", _per_page(TOC_PAGES))
def test_every_page_is_at_most_12000px_tall_at_1280px(server, browser, visits, page):
    """Short pages: tuning traces, seed lists and long tables go to CSV downloads and
    folded blocks; no page is taller than 12,000 px at a 1280 px window."""
    v = _visit(server, browser, visits, page)
    assert v["height"] <= MAX_PAGE_PX, f"{page} is {v['height']} px tall at 1280 px (at most {MAX_PAGE_PX})"


@pytest.mark.parametrize("page", _per_page(TOC_PAGES))
def test_no_code_block_or_formula_hides_its_end_at_1280px(server, browser, visits, page):
    """Code, commands, LaTeX steps and BibTeX wrap at the column (159 blocks scrolled sideways, the
    BibTeX cut off in print), and no formula is clipped by its box."""
    v = _visit(server, browser, visits, page)
    assert not v["hidden_ends"], f"{page}: {v['hidden_ends'][:3]}"


@pytest.mark.parametrize("page", _per_page(TOC_PAGES))
def test_no_table_is_wider_than_its_box_at_1280px(server, browser, visits, page):
    """No table hides columns behind a scroll bar at 1280 px (the audit table's
    verdict column, the compute table's command)."""
    v = _visit(server, browser, visits, page)
    assert not v["wide_tables"], f"{page}: tables wider than their box at 1280 px: {v['wide_tables']}"


@pytest.mark.parametrize("page", _per_page([p for p in TOC_PAGES if not (REPO / p.replace(".html", ".md")).exists()]))
def test_no_raw_json_in_claim_evidence(server, browser, visits, page):
    """Evidence is rendered as small tables, never as raw or truncated JSON
    (``sweep: [{...``). Checked in the text of every claim block (not in its BibTeX snippet)."""
    bad = []
    for t in _visit(server, browser, visits, page)["claim_texts"]:
        for pat in ('{"', "[{", "{'", '": ', "': "):
            if pat in t:
                bad.append((page, pat, t[max(0, t.index(pat) - 60): t.index(pat) + 60]))
                break
    assert not bad, f"raw JSON in claim evidence: {bad[:5]}"


@pytest.mark.parametrize("page", _per_page(TOC_PAGES))
def test_no_word_breaks_inside_table_cells_at_1280px(server, browser, visits, page):
    """Table cells wrap between words only; numbers and verdict words never break
    ("ag re es", "0. 00 12 2"); a table too wide for the column scrolls in its own box."""
    v = _visit(server, browser, visits, page)
    assert not v["midword"], f"{page}: table words broken across lines at 1280 px: {v['midword']}"


@pytest.mark.parametrize("page", _per_page(TOC_PAGES))
def test_no_internal_words_on_any_page(server, browser, visits, page):
    """Sources are named by what they are ("the FAccT version, Sec. 5"), never by
    a file number, and no page speaks of our catalogue or issues."""
    text = _visit(server, browser, visits, page)["text"]
    found = [(pat, text[max(0, m.start() - 50): m.end() + 30]) for pat in INTERNAL_WORDS
             for m in [re.search(pat, text)] if m]
    assert not found, f"{page}: internal words on the page: {found}"


@pytest.mark.parametrize("page", _per_page(TOC_PAGES))
def test_no_url_contains_generated_and_every_footer_names_the_build(server, browser, visits, page):
    """Page addresses are clean (no /generated/), on the page and in its links; the
    footer says which commit the page was generated from, and when."""
    v = _visit(server, browser, visits, page)
    bad = [h for h in [v["url"], *v["hrefs"]] if h.startswith(server) and "/generated/" in h]
    assert not bad, f"{page}: URLs with /generated/: {bad[:5]}"
    assert re.search(r"generated from [0-9a-f]{7,}.* on \d{4}-\d{2}-\d{2}", v["text"]), \
        f"{page}: no 'generated from <commit> on <date>' in the footer"


def _in_first_screen(browser, needle: str) -> bool:
    """Whether text reading ``needle`` (possibly split over elements, as highlighted code is)
    is visible in the window without scrolling, inside any box that clips it."""
    return browser.execute_script(
        """
        const needle = arguments[0];
        const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
        const nodes = []; let text = ''; let node;
        while ((node = walker.nextNode())) { nodes.push([node, text.length]); text += node.textContent; }
        const at = (i) => { let k = nodes.length - 1; while (k > 0 && nodes[k][1] > i) k--; return [nodes[k][0], i - nodes[k][1]]; };
        const visible = (r, el) => {
          if (!(r.width > 0 && r.top >= 0 && r.bottom <= window.innerHeight && r.left >= 0 && r.right <= window.innerWidth)) return false;
          for (let e = el; e && e !== document.body; e = e.parentElement) {
            const s = getComputedStyle(e);
            if (s.visibility === 'hidden' || s.display === 'none') return false;
            if (s.overflowX !== 'visible' || s.overflowY !== 'visible') {
              const b = e.getBoundingClientRect();
              if (r.left < b.left - 1 || r.right > b.right + 1 || r.top < b.top - 1 || r.bottom > b.bottom + 1) return false;
            }
          }
          return true;
        };
        for (let i = text.indexOf(needle); i >= 0; i = text.indexOf(needle, i + 1)) {
          const [n0, o0] = at(i), [n1, o1] = at(i + needle.length - 1);
          const r = document.createRange(); r.setStart(n0, o0); r.setEnd(n1, o1 + 1);
          const rects = Array.from(r.getClientRects()).filter(b => b.width > 0);
          if (rects.length && rects.every(b => visible(b, n0.parentElement) && visible(b, n1.parentElement))) return true;
        }
        return false;
        """, needle)


@pytest.mark.xdist_group("browser:book/index.html")
def test_first_screen_says_what_was_found_how_to_reproduce_and_cite(server, browser, visits):
    """At 1280 x 1024, without scrolling, the landing page shows what the book found,
    the two commands, and a citation with the book's URL and the commit of the build."""
    page = "book/index.html"
    text = _visit(server, browser, visits, page)["text"]
    commit = re.search(r"generated from ([0-9a-f]{7,})", text)
    assert commit, "the footer names no commit"
    import yaml

    url = yaml.safe_load((REPO / "_config.yml").read_text())["repository"]["url"]
    browser.get(urljoin(server, page))
    browser.execute_script("window.scrollTo(0, 0)")
    for needle in ("What this book found", "make book", "make test", "@software{dpcompanion", url, commit.group(1)):
        assert _in_first_screen(browser, needle), f"{page}: {needle!r} is not on the first screen at 1280 x 1024"


@pytest.mark.xdist_group("browser:search")
def test_search_finds_the_page_stating_a_theorem_first_and_shows_no_raw_tex(server, browser):
    """Searching "Theorem 4.5" lists the page that states it first (ranked 5th
    before), and the snippets show no raw TeX delimiters."""
    build = require_build()
    stating = [p.relative_to(build).as_posix() for p in (build / "book").glob("*.html")
               if 'id="thm-4-5"' in p.read_text()]
    assert len(stating) == 1, f"pages stating Theorem 4.5: {stating}"
    browser.get(urljoin(server, "search.html?q=Theorem+4.5"))
    hrefs = browser.execute_async_script(
        """
        const done = arguments[arguments.length - 1]; const t0 = Date.now();
        (function poll() {
          const links = document.querySelectorAll('#search-results ul.search li a');
          const status = document.querySelector('#search-results p.search-summary');
          if (status && status.textContent.trim()) done(Array.from(links).map(a => a.href));
          else if (Date.now() - t0 > 30000) done(null); else setTimeout(poll, 200);
        })();
        """)
    assert hrefs, "the search page listed no results within 30 s"
    assert urlsplit(hrefs[0]).path.lstrip("/") == stating[0], f"first result {hrefs[0]}, expected {stating[0]}"
    browser.execute_async_script(
        "const done = arguments[arguments.length - 1]; setTimeout(() => done(), 3000);")  # snippets load per result
    snippets = browser.execute_script("return Array.from(document.querySelectorAll('#search-results p.context')).map(p => p.textContent)")
    assert snippets, "no result snippets"
    raw = [s for s in snippets if "\\(" in s or "\\)" in s or "\\[" in s]
    assert not raw, f"snippets with raw TeX: {raw[:3]}"
    # a snippet is the page's text, not its header buttons ("...Binder")
    buttons = [s for s in snippets if "Binder" in s or "Colab" in s]
    assert not buttons, f"snippets read from the header buttons: {buttons[:3]}"


def test_search_snippets_skip_the_header_buttons_and_one_search_box_on_desktop(server, browser):
    """Search snippets all read "...Binder" (the article's launch buttons are inside
    [role=main], where Sphinx reads a snippet); the header bar held only a second search box."""
    page = (require_build() / "book" / "h-tables.html").read_text()
    browser.get(urljoin(server, "search.html"))
    text = browser.execute_script("return window.dpcompanionSnippetText(arguments[0])", page)
    assert "Binder" not in text and "Colab" not in text, text[:200]
    assert "Table 1" in text  # the page's own text is kept
    browser.get(urljoin(server, "book/h-tables.html"))
    shown = browser.execute_script(
        "return Array.from(document.querySelectorAll('button.search-button__button, .bd-search'))"
        ".filter(e => { const r = e.getBoundingClientRect(); return e.getClientRects().length && r.bottom > 0 && r.right > 0"
        " && getComputedStyle(e).visibility !== 'hidden'; }).length")
    assert shown == 1, f"{shown} search boxes on the first screen at 1280 px"


def test_search_snippet_cleaner_drops_tex(server, browser):
    """The snippet cleaner itself, on a formula (probe for the search test above)."""
    browser.get(urljoin(server, "search.html"))
    out = browser.execute_script("return window.dpcompanionPlainTeX(arguments[0])", r"noise \(\sigma_t^2 \le \frac{1}{R}\) here")
    assert out == "noise σ_t^2 ≤ (1)/(R) here", out


@pytest.mark.parametrize("page", _per_page(TOC_PAGES))
def test_phone_width_and_dark_mode(server, browser, page):
    """At 390 px the page does not scroll sideways (tables scroll in their box);
    in dark mode figures sit on a light card and table text is light."""
    try:
        browser.set_window_size(390, 844)
        browser.get(urljoin(server, page))
        _wait_for_mathjax(browser)
        overflow = browser.execute_script(_OVERFLOW)
        assert overflow <= 1, f"{page} is wider than a 390 px window by {overflow} px: {browser.execute_script(_CULPRIT)}"
        browser.set_window_size(1280, 1024)
        browser.execute_script("document.documentElement.dataset.theme = 'dark'; document.documentElement.dataset.mode = 'dark'")
        look = browser.execute_script(
            """
            const lum = (c) => { const m = c.match(/\\d+(\\.\\d+)?/g).map(Number);
              return (0.2126 * m[0] + 0.7152 * m[1] + 0.0722 * m[2]) / 255; };
            const img = document.querySelector('.bd-article .cell_output img');
            const td = document.querySelector('.bd-article td');
            return {img: img ? getComputedStyle(img).backgroundColor : null,
                    td: td ? lum(getComputedStyle(td).color) : null};
            """)
        if page.endswith("index.html"):
            assert look["img"] == "rgb(255, 255, 255)", f"{page}: a figure in dark mode has background {look['img']}"
        if look["td"] is not None:
            assert look["td"] > 0.6, f"{page}: table text in dark mode is dark (luminance {look['td']:.2f})"
    finally:
        browser.set_window_size(1280, 1024)
        # the light theme back, and no mode left in the theme's storage for the next page to read
        browser.execute_script("document.documentElement.dataset.theme = 'light'; "
                               "document.documentElement.dataset.mode = 'light'; localStorage.clear()")


# --- figures with their data and code; typeset claim boxes ---------------------

NOTEBOOK_PAGES = [f"{f}.html" for f in toc_files() if f.split("/")[-1] in {p.stem for p in NOTEBOOKS.glob("*.ipynb")}]


def _experiment_pages() -> list[str]:
    """The pages of the table of contents' "Experiments" part, and the audit page."""
    toc = yaml.safe_load((REPO / "_toc.yml").read_text())
    files = [c["file"] for part in toc.get("parts", []) if part.get("caption") == "Experiments"
             for c in part.get("chapters", [])]
    files += [f for f in toc_files() if f.split("/")[-1] == "audit"]
    return [f"{f}.html" for f in files]


def _status(url: str) -> int | str:
    try:
        with urllib.request.urlopen(url, timeout=10) as r:
            return r.status
    except Exception as exc:  # noqa: BLE001
        return repr(exc)


@pytest.mark.parametrize("page", _per_page(NOTEBOOK_PAGES))
def test_every_figure_has_data_and_code_links_that_resolve(server, browser, visits, page):
    """Under every figure, the landing page's included: "Figure n", a data link (.csv) and a code
    link (.py), both served by the book's own static server (HTTP 200), the figure shown at
    least as wide as the plotting module assumes (dpcompanion.book.plotting.COLUMN_PX, from which its font sizes
    are checked), a rerun line with its command, and alt text that describes the figure."""
    from dpcompanion.book.plotting import COLUMN_PX

    bad = []
    for f in _visit(server, browser, visits, page)["figures"]:
        csv = [h for h in f["links"] if h.startswith(server) and h.endswith(".csv") and not h.endswith(".points.csv")]
        points = [h for h in f["links"] if h.startswith(server) and h.endswith(".points.csv")]
        py = [h for h in f["links"] if h.startswith(server) and h.endswith(".py")]
        if not f["caption"].startswith("Figure") or len(csv) != 1 or len(py) != 1:
            bad.append((f["src"][-20:], f["caption"][:80], "no data/code links"))
            continue
        for h in csv + py + points:
            if _status(h) != 200:
                bad.append((f["src"][-20:], h, _status(h)))
        # a folded figure (a smaller run's) fills its fold, which is narrower than the column by its padding
        if f["shown"] < min(f["natural"], COLUMN_PX, f["room"] if f["folded"] else COLUMN_PX) - 1:
            bad.append((f["src"][-20:], f"shown {f['shown']:.0f} px < {min(f['natural'], COLUMN_PX)} px"))
        if not re.search(r"rerun: python -m dpcompanion (experiment|reproduce) ", f["caption"]):
            bad.append((f["src"][-20:], f["caption"][-80:], "no rerun line"))
        # the alt text says what the figure shows (dpcompanion.book.plotting.describe_figure), not its caption
        if not f["alt"] or f["alt"].startswith("Figure") or "commit" in f["alt"]:
            bad.append((f["src"][-20:], f"alt text {f['alt'][:60]!r}"))
    assert not bad, f"{page}: {bad}"


@pytest.mark.parametrize("page", _per_page(_experiment_pages()))
def test_every_experiment_page_has_a_figure_with_data(server, browser, visits, page):
    figs = _visit(server, browser, visits, page)["figures"]
    assert any(any(h.endswith(".csv") for h in f["links"]) for f in figs), f"{page}: no figure with a data link"


@pytest.mark.parametrize("page", _per_page([p for p in TOC_PAGES if p in NOTEBOOK_PAGES]))
def test_no_ascii_math_in_claim_boxes(server, browser, visits, page):
    """Claim boxes typeset their math: outside formulas and code no ASCII math (sigma^2, sqrt(T))."""
    from dpcompanion.book.claims_page import ASCII_MATH

    bad = [(page, t[max(0, m.start() - 40): m.end() + 20]) for t in _visit(server, browser, visits, page)["claim_prose"]
           for m in ASCII_MATH.finditer(t)]
    assert not bad, f"ASCII math in claim boxes: {bad[:5]}"

"""The built book in a real browser (headless Chromium through Selenium): the math is
typeset by the book's own MathJax, every image loads, internal links answer 200, no page
scrolls sideways, no claim evidence shows raw JSON.

Each page of the table of contents is loaded once per run: the first test of a page loads it
in the module's browser session and records what every check reads (:func:`_visit`); the
tests of one page form one pytest-xdist group, so that they run on one worker, after another."""

from __future__ import annotations

import functools
import http.server
import shutil
import tempfile
import threading
import urllib.request
from urllib.parse import urljoin, urlsplit

import pytest

import yaml

from bookutil import NOTEBOOKS, REPO, require_build, toc_files

pytestmark = [pytest.mark.browser, pytest.mark.slow]

CHROMIUM = shutil.which("chromium")
CHROMEDRIVER = shutil.which("chromedriver")
# Pages whose math, images and links are checked: the landing page and one notebook page
# with math and figures.
PAGES = ["book/generated/index.html", "book/generated/h-f-theory.html"]
# Every page of the book's table of contents, as built (a page left in _build by an earlier
# build, e.g. after a rename, is not part of the book); _toc.yml is read at collection.
TOC_PAGES = [f"{f}.html" for f in toc_files()]


def _per_page(pages: list[str]) -> list:
    """One parameter per page, in the page's xdist group (the tests of a page share its load)."""
    return [pytest.param(p, id=p, marks=pytest.mark.xdist_group(f"browser:{p}")) for p in pages]


@pytest.fixture(scope="module")
def server():
    build = require_build()
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(build))
    handler.log_message = lambda *a, **k: None
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    t = threading.Thread(target=httpd.serve_forever, daemon=True)
    t.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/"
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture(scope="module")
def browser():
    if not (CHROMIUM and CHROMEDRIVER):
        pytest.skip("Chromium/chromedriver not installed (make test installs them with apt when run as root)")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    profile = tempfile.mkdtemp(prefix="dpcompanion-chromium-")
    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for flag in (
        "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync",
        "--disable-dev-shm-usage", f"--user-data-dir={profile}", "--window-size=1280,1024",
    ):
        opts.add_argument(flag)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=opts)
    driver.set_page_load_timeout(60)
    driver.set_script_timeout(60)
    driver.set_window_size(1280, 1024)  # issue 12: the width the horizontal-scroll check is about
    yield driver
    driver.quit()
    shutil.rmtree(profile, ignore_errors=True)


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
_TEXTS = (
    "return Array.from(document.querySelectorAll('.admonition')).filter(a => !a.closest('.admonition .admonition'))"
    ".map(a => Array.from(a.querySelectorAll('p, td, li')).filter(e => !e.closest('.dropdown, pre'))"
    ".map(e => e.innerText).join('\\n'))"
)
# The prose of every claim block (its math, code and dropdowns removed), read before MathJax runs.
_CLAIM_PROSE = (
    "return Array.from(document.querySelectorAll('.admonition')).filter(a => !a.closest('.admonition .admonition'))"
    ".map(a => { const c = a.cloneNode(true);"
    " c.querySelectorAll('.math, code, pre, .dropdown, mjx-container, script').forEach(e => e.remove());"
    " return c.innerText; })"
)
# Each figure of a notebook's output: its image, the line under it and that line's links.
_FIGURES = (
    "return Array.from(document.querySelectorAll('.cell_output img')).map(i => { const c = i.nextElementSibling;"
    " return {src: i.currentSrc || i.src, shown: i.getBoundingClientRect().width, natural: i.naturalWidth,"
    " caption: c ? c.innerText : '', links: c ? Array.from(c.querySelectorAll('a[href]')).map(a => a.href) : []}; })"
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
        v["figures"] = browser.execute_script(_FIGURES)
        v["overflow"] = browser.execute_script(_OVERFLOW)
        v["culprit"] = browser.execute_script(_CULPRIT) if v["overflow"] > 1 else []
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
            with urllib.request.urlopen(h, timeout=10) as r:
                if r.status != 200:
                    bad.append((h, r.status))
        except Exception as exc:  # noqa: BLE001
            bad.append((urlsplit(h).path, repr(exc)))
    assert not bad, f"{page}: broken internal links {bad}"


@pytest.mark.parametrize("page", _per_page(TOC_PAGES))
def test_no_page_scrolls_horizontally_at_1280px(server, browser, visits, page):
    """Issue 12: wide tables (h-tables, h-x-eer), long code and display math scroll inside
    their own box; the page itself never scrolls sideways at a 1280 px wide window."""
    v = _visit(server, browser, visits, page)
    assert v["overflow"] <= 1, (
        f"{page} is wider than a 1280 px window by {v['overflow']} px (first elements: {v['culprit']})"
    )


@pytest.mark.parametrize("page", _per_page([p for p in TOC_PAGES if "generated/" in p]))
def test_no_raw_json_in_claim_evidence(server, browser, visits, page):
    """Issue 12: evidence is rendered as small tables, never as raw or truncated JSON
    (``sweep: [{...``). Checked in the text of every claim block (not in its BibTeX snippet)."""
    bad = []
    for t in _visit(server, browser, visits, page)["claim_texts"]:
        for pat in ('{"', "[{", "{'", '": ', "': "):
            if pat in t:
                bad.append((page, pat, t[max(0, t.index(pat) - 60): t.index(pat) + 60]))
                break
    assert not bad, f"raw JSON in claim evidence: {bad[:5]}"


# --- figures with their data and code; typeset claim boxes (issue 23) ---------------------

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


@pytest.mark.parametrize("page", _per_page([p for p in NOTEBOOK_PAGES if not p.endswith("/index.html")]))
def test_every_figure_has_data_and_code_links_that_resolve(server, browser, visits, page):
    """Under every figure: "Figure n", a data link (.csv) and a code link (.py), both served
    by the book's own static server (HTTP 200), the figure shown at least as wide as the
    plotting module assumes (dpcompanion.book.plotting.COLUMN_PX, from which its font sizes
    are checked)."""
    from dpcompanion.book.plotting import COLUMN_PX

    bad = []
    for f in _visit(server, browser, visits, page)["figures"]:
        csv = [h for h in f["links"] if h.startswith(server) and h.endswith(".csv")]
        py = [h for h in f["links"] if h.startswith(server) and h.endswith(".py")]
        if not f["caption"].startswith("Figure") or len(csv) != 1 or len(py) != 1:
            bad.append((f["src"][-20:], f["caption"][:80], "no data/code links"))
            continue
        for h in csv + py:
            if _status(h) != 200:
                bad.append((f["src"][-20:], h, _status(h)))
        if f["shown"] < min(f["natural"], COLUMN_PX) - 1:
            bad.append((f["src"][-20:], f"shown {f['shown']:.0f} px < {min(f['natural'], COLUMN_PX)} px"))
    assert not bad, f"{page}: {bad}"


@pytest.mark.parametrize("page", _per_page(_experiment_pages()))
def test_every_experiment_page_has_a_figure_with_data(server, browser, visits, page):
    figs = _visit(server, browser, visits, page)["figures"]
    assert any(any(h.endswith(".csv") for h in f["links"]) for f in figs), f"{page}: no figure with a data link"


@pytest.mark.parametrize("page", _per_page([p for p in TOC_PAGES if p in NOTEBOOK_PAGES]))
def test_no_ascii_math_in_claim_boxes(server, browser, visits, page):
    """Claim boxes typeset their math: outside formulas and code no ASCII math (sigma^2, sqrt(T))."""
    from dpcompanion.claims.render import ASCII_MATH

    bad = [(page, t[max(0, m.start() - 40): m.end() + 20]) for t in _visit(server, browser, visits, page)["claim_prose"]
           for m in ASCII_MATH.finditer(t)]
    assert not bad, f"ASCII math in claim boxes: {bad[:5]}"

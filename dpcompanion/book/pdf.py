"""A PDF of the theory chapters, for courses (``make book`` runs this after the HTML build).

The chapters of the table of contents' part "Theory, checked by code" are joined into one
printable page (``book/theory-print.html`` in the build: each chapter's article, the book's
own stylesheets and MathJax), which headless Chromium prints to
``_build/html/dpcompanion-theory.pdf`` once MathJax has typeset it. Where no Chromium is
installed (``make browser`` installs Debian's), the build says so and skips the PDF without
failing: the landing page's link then has nothing behind it, and the browser test, which
needs Chromium too, is skipped as well.

    python -m dpcompanion.book.pdf [BUILD_DIR]      # default _build/html
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]
PDF_NAME = "dpcompanion-theory.pdf"
PRINT_PAGE = "book/theory-print.html"
THEORY_CAPTION = "Theory, checked by code"
BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")


def find_browser() -> str | None:
    """The first Chromium-like browser on PATH, or None."""
    for name in BROWSERS:
        path = shutil.which(name)
        if path:
            return path
    return None


def theory_pages(toc: Path = REPO / "_toc.yml") -> list[str]:
    """The ``file:`` entries of the theory part of ``_toc.yml``, in order."""
    data = yaml.safe_load(toc.read_text())
    for part in data.get("parts", []):
        if part.get("caption") == THEORY_CAPTION:
            return [c["file"] for c in part.get("chapters", []) if "file" in c]
    raise ValueError(f"{toc}: no part captioned {THEORY_CAPTION!r}")


_ARTICLE = re.compile(r'(<article class="bd-article"[^>]*>)(.*?)(</article>)', re.S)
_HEAD = re.compile(r"<head>(.*?)</head>", re.S)


def print_page(build: Path, pages: list[str]) -> str:
    """One HTML page holding every chapter's article (in a folder beside the chapters, so
    their relative image and style links still resolve), page breaks between chapters."""
    heads, bodies = [], []
    for page in pages:
        html = (build / f"{page}.html").read_text()
        if not heads:
            m = _HEAD.search(html)
            heads.append(m.group(1) if m else "")
        m = _ARTICLE.search(html)
        if not m:
            raise ValueError(f"{page}.html: no <article class=\"bd-article\"> (not a page of this book?)")
        bodies.append(f'<section class="dpc-print-chapter">{m.group(2)}</section>')
    head = re.sub(r"<title>.*?</title>", "<title>dpcompanion: theory, checked by code</title>", heads[0], flags=re.S)
    style = ("<style>.dpc-print-chapter{break-before:page}.dpc-print-chapter:first-child{break-before:auto}"
             "body{margin:0 1.5cm}.headerlink{display:none}</style>")
    return f"<!DOCTYPE html><html><head>{head}{style}</head><body><main>{''.join(bodies)}</main></body></html>"


def build_pdf(build: Path, *, browser: str | None = None, timeout: float = 300.0, out=sys.stdout) -> Path | None:
    """Write ``build/dpcompanion-theory.pdf``; return its path, or None (said on ``out``)
    when there is no browser. Raises ``RuntimeError`` when the browser fails."""
    browser = browser or find_browser()
    if browser is None:
        print("pdf: no Chromium found (make browser installs it); the theory PDF is skipped", file=out)
        return None
    pages = theory_pages()
    page = build / PRINT_PAGE
    page.parent.mkdir(parents=True, exist_ok=True)
    page.write_text(print_page(build, pages))
    target = build / PDF_NAME
    tmp = target.with_suffix(".pdf.tmp")
    profile = tempfile.mkdtemp(prefix="dpcompanion-pdf-")
    try:
        cmd = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
               "--no-first-run", f"--user-data-dir={profile}", "--run-all-compositor-stages-before-draw",
               "--virtual-time-budget=60000", "--no-pdf-header-footer", f"--print-to-pdf={tmp}",
               page.resolve().as_uri()]
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        if r.returncode != 0 or not tmp.exists() or tmp.stat().st_size == 0:
            tmp.unlink(missing_ok=True)
            raise RuntimeError(f"{Path(browser).name} could not print {page}: {r.stderr.strip()[-300:]}")
        tmp.replace(target)
    finally:
        shutil.rmtree(profile, ignore_errors=True)
    print(f"pdf: {len(pages)} theory chapters -> {target} ({target.stat().st_size // 1024} KiB)", file=out)
    return target


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    build = Path(args[0]) if args else REPO / "_build" / "html"
    if not (build / "index.html").exists():
        print(f"dpcompanion pdf: error: {build} holds no built book (run jupyter-book build first)", file=sys.stderr)
        return 2
    try:
        build_pdf(build)
    except (RuntimeError, ValueError, subprocess.TimeoutExpired) as exc:
        print(f"dpcompanion pdf: error: {' '.join(str(exc).split())}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

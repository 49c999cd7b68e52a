"""The book as a site: what every page says about its build, and how to cite it.

A Sphinx extension (listed in ``_config.yml`` under ``sphinx.extra_extensions``) that, at
build time, with the commit read from git (:func:`dpcompanion.core.provenance.git_state`):

* puts "generated from <commit> on <date>" in every page's footer (the theme's
  ``extra_footer``), with a link to the commit;
* provides the ``dpcompanion-cite`` directive: the BibTeX entry of this build (URL,
  version, commit, date; :func:`bibtex`), used by the landing page;
* writes ``CITATION.cff`` of this build (the committed one plus its ``commit``) beside the
  pages, so a reader can cite exactly what they read;
* points the launch buttons (Binder, Colab) at the committed notebook ``notebooks/<id>.ipynb``
  rather than the executed copy ``book/<id>.ipynb``, which is not in the repository.

One source of truth: the URL is ``repository.url`` of ``_config.yml`` (Sphinx's
``html_theme_options["repository_url"]``), the version that of the installed package.
"""

from __future__ import annotations

import datetime as _dt
import html
import os
import re
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
    config.html_theme_options = opts
    ctx = dict(config.html_context or {})
    ctx.update(dpcompanion_commit=info.commit, dpcompanion_date=info.date, dpcompanion_version=info.version)
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


def _build_finished(app, exc) -> None:
    if exc is not None or app.builder.format != "html":
        return
    committed = REPO / "CITATION.cff"
    if committed.exists():
        Path(app.outdir, "CITATION.cff").write_text(citation_cff(committed.read_text(), _info(app)))


def setup(app):
    class CiteDirective(Directive):
        """The BibTeX entry of this build (``dpcompanion-cite``)."""

        has_content = False

        def run(self):
            env = self.state.document.settings.env
            if not hasattr(env, "dpcompanion_cite_docs"):
                env.dpcompanion_cite_docs = set()
            env.dpcompanion_cite_docs.add(env.docname)
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
            env = app.env
            if not hasattr(env, "dpcompanion_cite_docs"):
                env.dpcompanion_cite_docs = set()
            env.dpcompanion_cite_docs.add(env.docname)

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
    app.connect("build-finished", _build_finished)
    # env_version: a change of what this extension records in the environment re-reads every page
    return {"parallel_read_safe": True, "parallel_write_safe": True, "version": _version(), "env_version": 1}

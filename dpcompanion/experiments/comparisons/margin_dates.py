"""When each declared margin was first committed, read from git, against the result it judges.

:func:`declaration` finds a rule's ``Margin(<value>, "<units>", ...)`` call in the package's sources;
:func:`first_committed` asks git when that literal first appeared (``git log --reverse -S`` over every
path, so a declaration moved between modules keeps its date); :func:`when` compares it with the judged
result's ``created``: a margin first committed after the data it judges reads ``margin chosen after the
results``. Without history (shallow clone, no git) the row says ``margin date unknown``; a literal in no
commit is after any result. Lookups are cached in the git directory (``dpcompanion-margin-dates.json``)
and in memory."""

from __future__ import annotations

import functools
import json
import subprocess
from datetime import datetime
from pathlib import Path

__all__ = ["AFTER", "BEFORE", "UNKNOWN", "declaration", "first_committed", "first_result_commit", "when", "shallow",
           "ROOT"]

#: the repository root (the package's parent)
ROOT = Path(__file__).resolve().parents[3]
#: what a row says of its margin's date
AFTER, BEFORE, UNKNOWN = "margin chosen after the results", "margin declared before the results", "margin date unknown"
_CACHE = "dpcompanion-margin-dates.json"


def _git(*args: str) -> str | None:
    try:
        out = subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout if out.returncode == 0 else None


@functools.lru_cache(maxsize=1)
def shallow() -> bool:
    """True where the clone's history cannot date a margin: shallow, or not a git repository."""
    out = _git("rev-parse", "--is-shallow-repository")
    return out is None or out.strip() != "false"


@functools.lru_cache(maxsize=1)
def _sources() -> tuple[tuple[str, tuple[str, ...]], ...]:
    pkg = ROOT / "dpcompanion" / "experiments"
    return tuple((str(p.relative_to(ROOT)), tuple(p.read_text(encoding="utf-8").splitlines()))
                 for p in sorted(pkg.rglob("*.py")))


def declaration(margin) -> tuple[str, int, str] | None:
    """``(path, line, literal)`` of the call that declares ``margin``: the first source line
    holding ``Margin(`` and its units as a string literal; the literal runs from ``Margin(``
    through the units. None where no such line is found."""
    units = json.dumps(margin.units)
    for path, lines in _sources():
        for i, line in enumerate(lines):
            k, u = line.find("Margin("), line.find(units)
            if k >= 0 and u > k:
                return path, i + 1, line[k:u + len(units)]
    return None


def _cache_path() -> Path | None:
    out = _git("rev-parse", "--absolute-git-dir")
    return Path(out.strip()) / _CACHE if out else None


@functools.lru_cache(maxsize=None)
def first_committed(literal: str) -> str | None:
    """ISO date of the first commit whose diff adds ``literal`` (``git log --reverse -S``), or
    ``""`` where no commit holds it (not yet committed); None where history cannot say
    (:func:`shallow`)."""
    if shallow():
        return None
    path = _cache_path()
    cache = {}
    if path is not None and path.is_file():
        try:
            cache = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            cache = {}
    if literal in cache:
        return cache[literal]
    out = _git("log", "--reverse", "--format=%cI", "-S", literal)
    if out is None:
        return None
    first = out.split("\n", 1)[0].strip()
    if first and path is not None:  # a first commit never changes: cache it (an uncommitted literal is not)
        cache[literal] = first
        try:
            path.write_text(json.dumps(cache, indent=1, sort_keys=True), encoding="utf-8")
        except OSError:
            pass
    return first


def first_result_commit(folder: str | None) -> str | None:
    """ISO date of the first commit that added a ``payload.json`` to the result folder ``folder``
    (any config, any digest since), None where git holds none or cannot say."""
    if not folder or shallow():
        return None
    try:
        rel = Path(folder).resolve().relative_to(ROOT.resolve()).as_posix()
    except ValueError:
        return None
    out = _git("log", "--reverse", "--format=%cI", "--", f"{rel}/payload.json")
    return (out or "").split("\n", 1)[0].strip() or None


def when(margin, created: str | None, folder: str | None = None) -> dict:
    """The date of ``margin`` against the judged result's: ``{"status", "committed", "created",
    "declared"}``, ``status`` one of :data:`AFTER`, :data:`BEFORE`, :data:`UNKNOWN`. The result's date
    is the earlier of its ``created`` and the first commit of a result in its ``folder``
    (:func:`first_result_commit`): a result recomputed later was seen at its first commit, and a
    margin chosen after that is chosen after the results.

    >>> when(None, "2026-01-01T00:00:00+00:00")["status"]
    'margin date unknown'
    """
    seen = first_result_commit(folder)
    if seen and created:
        try:
            created = min(created, seen, key=datetime.fromisoformat)
        except ValueError:
            pass
    out = {"status": UNKNOWN, "committed": None, "created": created, "declared": None}
    if margin is None or margin.value is None:
        return out
    found = declaration(margin)
    if found is None:
        return out
    path, line, literal = found
    out["declared"] = f"{path}:{line}"
    first = first_committed(literal)
    if first is None or not created:
        return out
    out["committed"] = first or None
    if not first:
        out["status"] = AFTER
        return out
    try:
        after = datetime.fromisoformat(first) > datetime.fromisoformat(created)
    except ValueError:
        return out
    out["status"] = AFTER if after else BEFORE
    return out

"""A stored result against git (a reseal must not launder an edit).

Committed results are the book's record. A result folder whose files differ from the last
commit that touched them was either rewritten by this store (a recomputation, a revalidation
or a seal, not yet committed) or edited by hand or by a script. The two look alike on disk:
the seal and the digest are recomputable by anyone (:mod:`.files`). So the store keeps a
**journal** of what it wrote, outside the work tree (``<git dir>/dpcompanion-results.journal``,
one JSON line per save: the folder and the sha256 of each of its files), and
:func:`modified` tells the two apart:

* the folder equals the last commit that touched it, or git does not track anything there
  (a new result, a git-ignored quick result), or the results folder is not in a git work
  tree: ``None`` (nothing to say);
* it differs, and the journal holds exactly its files: ``("<sha>", "written by this store
  since commit <sha>, not committed yet")``, not stale;
* it differs otherwise: ``("<sha>", "modified since commit <sha>")``, and the result is stale
  (:func:`dpcompanion.experiments.store.result_store.load`);
* a file of it is marked ``skip-worktree`` or ``assume-unchanged`` in the index (``git ls-files
  -v`` tags it ``S`` or in lower case): git status would not show an edit of it, so the result
  is treated as modified (stale), whatever its contents, the message naming the file and the
  ``git update-index`` that lets git compare it again.

The journal is not a signature either (whoever can write the files can write it); it keeps
an honest user's uncommitted results fresh and makes every edit that did not go through the
store visible. Only recomputation (``results --verify``) cannot be fooled.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import subprocess
from pathlib import Path

__all__ = ["JOURNAL", "repo_of", "forget", "state", "modified", "record", "file_hashes", "GIT_TIMEOUT_S"]

#: the journal's file name inside the git directory (never committed, never in the work tree)
JOURNAL = "dpcompanion-results.journal"
#: a git command taking longer than this is treated as absent (a listing never hangs on git)
GIT_TIMEOUT_S = 30
#: the files of a result folder the journal and the comparison cover
RESULT_FILES = ("payload.json", "arrays.npz", "provenance.json")


def _git(cwd: Path, *args: str) -> str | None:
    try:
        out = subprocess.run(["git", "-C", str(cwd), *args], capture_output=True, timeout=GIT_TIMEOUT_S,
                             env={**os.environ, "GIT_OPTIONAL_LOCKS": "0", "LC_ALL": "C"})
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.decode("utf-8", "replace") if out.returncode == 0 else None


@functools.lru_cache(maxsize=256)
def _repo_cached(folder: str) -> tuple[str, str] | None:
    top = _git(Path(folder), "rev-parse", "--show-toplevel")
    gitdir = _git(Path(folder), "rev-parse", "--absolute-git-dir")
    if not top or not gitdir:
        return None
    return top.strip(), gitdir.strip()


def repo_of(path: Path) -> tuple[Path, Path] | None:
    """``(work tree, git dir)`` of the git repository holding ``path`` (its nearest existing
    folder), or None when there is none (or git is missing)."""
    p = Path(path).absolute()
    while not p.is_dir() and p.parent != p:
        p = p.parent
    found = _repo_cached(str(p.resolve()))
    return None if found is None else (Path(found[0]), Path(found[1]))


def forget() -> None:
    """Forget which folders lie in which git repository (looked up once per folder): after a
    repository is created around results already looked at (tests)."""
    _repo_cached.cache_clear()


def file_hashes(folder: Path) -> dict[str, str]:
    """``{file: sha256}`` of the result files present in ``folder`` (regular files only)."""
    out = {}
    for name in RESULT_FILES:
        f = folder / name
        if f.is_file() and not f.is_symlink():
            h = hashlib.sha256()
            with open(f, "rb") as fh:
                for block in iter(lambda: fh.read(1 << 20), b""):
                    h.update(block)
            out[name] = h.hexdigest()
    return out


def _rel(folder: Path, top: Path) -> str | None:
    try:
        return Path(os.path.realpath(folder)).relative_to(os.path.realpath(top)).as_posix()
    except ValueError:
        return None


def record(folder: Path) -> None:
    """Append the folder's current file hashes to the journal (after a save by the store).
    Never raises: a journal that cannot be written only means that the result reads as
    modified until it is committed."""
    try:
        found = repo_of(folder)
        if found is None:
            return
        top, gitdir = found
        rel = _rel(folder, top)
        if rel is None:
            return
        line = json.dumps({"path": rel, "files": file_hashes(folder)}, sort_keys=True)
        with open(gitdir / JOURNAL, "a") as f:
            f.write(line + "\n")
    except OSError:
        pass


def _journaled(gitdir: Path, rel: str, hashes: dict[str, str]) -> bool:
    try:
        with open(gitdir / JOURNAL) as f:
            for line in f:
                try:
                    rec = json.loads(line)
                except ValueError:
                    continue
                if isinstance(rec, dict) and rec.get("path") == rel and rec.get("files") == hashes:
                    return True
    except OSError:
        return False
    return False


def state(folder: Path) -> tuple[str, str]:
    """``(kind, commit)`` of the result folder against git: ``no git`` (not in a work tree),
    ``committed`` (equal to the last commit that touched it, or git-ignored), ``untracked``
    (never committed), ``hidden`` (a file of it is marked skip-worktree or assume-unchanged, so
    git status would not show an edit: :func:`hidden`), ``journaled`` (differs, but the store
    wrote exactly these files) or ``modified`` (differs otherwise); ``commit`` is the last commit
    touching it (12 hex), or ''."""
    found = repo_of(folder)
    if found is None:
        return "no git", ""
    top, gitdir = found
    rel = _rel(folder, top)
    if rel is None:
        return "no git", ""
    status = _git(top, "status", "--porcelain=v1", "--untracked-files=all", "--", f"{rel}/")
    if status is None:
        return "no git", ""
    last = (_git(top, "log", "-1", "--format=%H", "--", f"{rel}/") or "").strip()[:12]
    if hidden(top, rel):
        # git status does not look at a file marked skip-worktree or assume-unchanged, so an edit
        # of it reads as clean: such a result is treated as modified, whatever its contents
        return "hidden", last
    if not status.strip():
        return "committed", last  # clean, or ignored (a quick result)
    if not last:
        return "untracked", ""
    if _journaled(gitdir, rel, file_hashes(folder)):
        return "journaled", last
    return "modified", last


def hidden(top: Path, rel: str) -> list[str]:
    """The files under ``rel`` (a folder of the work tree ``top``) that git is told not to
    compare with the index: ``git ls-files -v`` tags them ``S`` (``update-index
    --skip-worktree``) or in lower case (``--assume-unchanged``)."""
    out = _git(top, "ls-files", "-v", "--", f"{rel}/")
    names = []
    for line in (out or "").splitlines():
        tag, _, name = line.partition(" ")
        if tag == "S" or (len(tag) == 1 and tag.islower()):
            names.append(name)
    return names


def modified(folder: Path) -> tuple[str, str] | None:
    """``(commit, what)`` when the result folder's files differ from the last commit that
    touched them, else None (see the module docstring). ``what`` starts with ``modified
    since commit`` for an edit that did not go through the store."""
    kind, last = state(folder)
    if kind == "journaled":
        return last, f"written by this store since commit {last}, not committed yet"
    if kind == "modified":
        return last, (f"modified since commit {last} (not by this store; `python -m dpcompanion results --verify` "
                      "recomputes units of it)")
    if kind == "hidden":
        found = repo_of(folder)
        names = hidden(found[0], _rel(folder, found[0]) or "") if found else []
        return last, (f"modified since commit {last}, as far as this store can tell: git is told not to compare "
                      f"{', '.join(Path(n).name for n in names) or 'its files'} with the commit (skip-worktree or "
                      "assume-unchanged; `git update-index --no-skip-worktree --no-assume-unchanged <file>` lets "
                      "git compare it)")
    return None

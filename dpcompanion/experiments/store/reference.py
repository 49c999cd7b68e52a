"""Revalidation by a reference commit: the quick digest that a result's *own* code gives on
*this* machine (see the package docstring, :mod:`dpcompanion.experiments.store`).

A quick fingerprint recorded on one kind of CPU cannot be compared with a quick digest computed
on another: BLAS and torch pick other kernels there and the last bits move (H-F-MOM's quick
digest is d19b49cac0ac on the Intel Xeon that recorded it, e253ac98eb6b on an AMD EPYC, same
code). Sweep units record no fingerprint at all. The reference check compares like with like:

1. :func:`find_commit` finds a commit of this repository whose code, for the experiment, hashes
   to the code hash the result (or unit) recorded, by the same import walk as
   :func:`~dpcompanion.experiments.store.hashing.code_files`, over that commit's files read from
   git (``git ls-tree`` / ``git cat-file``), newest first after the commits the provenance names;
2. :func:`quick_digest_at` extracts that commit's package (``git archive``) into a temporary
   folder and computes the quick mode there, in a subprocess on this machine, into a temporary
   results folder; the subprocess also reports the code hash it sees, which must be the one
   recorded;
3. :func:`~dpcompanion.experiments.store.result_store.quick_payload_here` computes the current
   code's quick mode on this machine, into a temporary results folder (the store computes it:
   this module only finds and runs the reference commit, and imports no module that imports it).

Equal digests mean the code change changes no number of the quick mode on this machine: the
same evidence the recorded fingerprint gives on the CPU that recorded it. Nothing is written to
the results folder by either computation.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

from dpcompanion.experiments import base
from dpcompanion.experiments.store import hashing

__all__ = ["ReferenceUnavailable", "REPO", "code_hash_at", "find_commit", "quick_digest_at", "REFERENCE_TIMEOUT_S"]

#: the repository holding this package (its commits are the references)
REPO = hashing.PKG.parent
#: the longest a reference quick run may take (a quick mode is seconds to a few minutes)
REFERENCE_TIMEOUT_S = 1800


class ReferenceUnavailable(Exception):
    """No reference check possible (no git, no commit with the recorded code, or that code
    could not run here); the message says which, in one line."""


def _git(repo: Path, *args: str, data: bytes | None = None, timeout: float = 120) -> bytes:
    try:
        out = subprocess.run(["git", *args], cwd=repo, input=data, capture_output=True, timeout=timeout)
    except (OSError, subprocess.SubprocessError) as exc:
        raise ReferenceUnavailable(f"git {args[0]} failed: {exc}") from None
    if out.returncode != 0:
        msg = out.stderr.decode(errors="replace").strip().splitlines()
        raise ReferenceUnavailable(f"git {args[0]} failed: {msg[-1] if msg else out.returncode}")
    return out.stdout


class _Tree:
    """The package's files at commits of ``repo``, read through one ``git cat-file --batch``
    per call of :func:`find_commit`; blobs cached by id (most files are the same from one
    commit to the next)."""

    def __init__(self, repo: Path):
        self.repo = repo
        self.blobs: dict[str, bytes] = {}

    def files(self, commit: str) -> dict[str, str]:
        out = _git(self.repo, "ls-tree", "-r", "-z", commit, "--", "dpcompanion")
        table = {}
        for entry in out.split(b"\0"):
            if not entry:
                continue
            meta, path = entry.split(b"\t", 1)
            mode, kind, blob = meta.split()
            if kind == b"blob":
                table[path.decode()] = blob.decode()
        return table

    def read_many(self, blobs: list[str]) -> None:
        want = [b for b in dict.fromkeys(blobs) if b not in self.blobs]
        if not want:
            return
        out = _git(self.repo, "cat-file", "--batch", data=("\n".join(want) + "\n").encode())
        pos = 0
        for b in want:
            nl = out.index(b"\n", pos)
            header = out[pos:nl].split()
            size = int(header[2])
            self.blobs[b] = out[nl + 1: nl + 1 + size]
            pos = nl + 1 + size + 1

    def code_hash(self, exp: base.Experiment, commit: str) -> str | None:
        table = self.files(commit)
        self.read_many([b for p, b in table.items() if p.endswith(".py")])
        try:
            files = hashing.code_files_at(exp, lambda path: self.blobs.get(table[path]) if path in table else None)
        except (ValueError, SyntaxError):
            return None  # the experiment's modules are not at that commit (or do not parse there)
        return hashing.code_hash_of(files)


def code_hash_at(exp: base.Experiment, commit: str, repo: Path | None = None) -> str | None:
    """The code hash the experiment's code has at ``commit`` (None where its modules are not there)."""
    return _Tree(repo or REPO).code_hash(exp, commit)


def find_commit(exp: base.Experiment, code_hash: str, *, hints=(), repo: Path | None = None) -> str:
    """A commit of ``repo`` whose code for ``exp`` hashes to ``code_hash``: the ``hints`` first
    (the commits a provenance names), then every commit of ``HEAD``'s history, newest first.
    Raises :class:`ReferenceUnavailable` when none does."""
    repo = repo or REPO
    outside = [m for m in hashing.roots_of(exp) if hashing.module_paths(m) is None]
    if outside:
        raise ReferenceUnavailable(f"its code ({outside[0]}) is not in this repository's package")
    tree = _Tree(repo)
    seen = set()
    hinted = []
    for h in hints:  # abbreviated or unknown names: resolved one by one (rev-list gives full hashes)
        if not h or h == "unknown":
            continue
        try:
            hinted.append(_git(repo, "rev-parse", "--verify", "--quiet", f"{h}^{{commit}}").decode().strip())
        except ReferenceUnavailable:
            continue
    revs = _git(repo, "rev-list", "HEAD").decode().split()
    for full in hinted + revs:
        if full in seen:
            continue
        seen.add(full)
        if tree.code_hash(exp, full) == code_hash:
            return full
    raise ReferenceUnavailable(f"no commit of {repo} holds the code that made it (code hash {code_hash[:12]}; "
                               f"{len(seen)} commits searched)")


_SNIPPET = """
import json, sys
from pathlib import Path
from dpcompanion.experiments import base, store
exp_id, seed, device, root = sys.argv[1], int(sys.argv[2]), sys.argv[3], Path(sys.argv[4])
res = store.compute(exp_id, mode="quick", seed=seed, device=device, root=root)
print("REFERENCE " + json.dumps({"digest": res.digest, "code_hash": store.code_hash(base.get(exp_id))}))
"""


def quick_digest_at(exp: base.Experiment, commit: str, *, code_hash: str, seed: int = 0, device: str = "cpu",
                    repo: Path | None = None, timeout: float = REFERENCE_TIMEOUT_S) -> str:
    """The quick-mode digest the code at ``commit`` gives on this machine (see the module
    docstring); the code there must hash to ``code_hash``."""
    from dpcompanion.training import data  # the dataset cache of this checkout, shared with the reference run

    repo = repo or REPO
    archive = _git(repo, "archive", "--format=tar", commit, "dpcompanion", timeout=300)
    with tempfile.TemporaryDirectory(prefix="dpc-reference-") as tmp:
        with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
            tar.extractall(tmp, filter="data")
        env = {k: v for k, v in os.environ.items()
               if k not in ("DPCOMPANION_RESULTS", "DPCOMPANION_COMMIT", "DPCOMPANION_DIRTY")}
        env["PYTHONPATH"] = tmp + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
        env["DPCOMPANION_CACHE"] = str(data.cache_dir())
        try:
            out = subprocess.run([sys.executable, "-c", _SNIPPET, exp.id, str(int(seed)), device,
                                  str(Path(tmp) / "results")], cwd=tmp, env=env, capture_output=True, text=True,
                                 timeout=timeout)
        except subprocess.TimeoutExpired:
            raise ReferenceUnavailable(f"the quick run of commit {commit[:12]} took over {timeout:.0f} s") from None
        line = next((ln for ln in out.stdout.splitlines() if ln.startswith("REFERENCE ")), None)
        if out.returncode != 0 or line is None:
            err = out.stderr.strip().splitlines()
            raise ReferenceUnavailable(f"the quick run of commit {commit[:12]} failed here: "
                                       f"{err[-1] if err else 'exit ' + str(out.returncode)}")
    rec = json.loads(line[len("REFERENCE "):])
    if rec["code_hash"] != code_hash:
        raise ReferenceUnavailable(f"commit {commit[:12]} reports code hash {rec['code_hash'][:12]}, "
                                   f"not the recorded {code_hash[:12]}")
    return rec["digest"]


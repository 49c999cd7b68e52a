"""The results changelog, read from git history: for each committed result (``results/<id>/full/`` and
``.../paper/``), when its numbers last changed and by how much. Two versions differ when a numeric leaf
(a number of ``payload.json`` by JSON path, an element of ``arrays.npz``) differs, appears or disappears,
so a rewrite with the same numbers (a revalidation) is not a change. Without git, or in a shallow clone,
the page says so. Also the verdict changes against a committed baseline.
"""

from __future__ import annotations

import io
import json
import math
import re
import subprocess
from pathlib import Path
from typing import Any

import numpy as np

from dpcompanion.book.report import fmt, two_tables

REPO = Path(__file__).resolve().parents[2]
FILES = ("payload.json", "arrays.npz")
#: payload keys that record run time, left out of the comparison
TIMING = re.compile(r"wall|seconds|(^|_)time($|_)|elapsed")


def _git(root: Path, *args: str, binary: bool = False):
    out = subprocess.run(["git", *args], cwd=root, capture_output=True, check=True)
    return out.stdout if binary else out.stdout.decode()


def git_status(root: Path = REPO) -> str | None:
    """None when ``root`` is a git checkout with its full history; else a sentence saying why
    the history cannot be read (no git, not a checkout, a shallow clone)."""
    try:
        inside = _git(root, "rev-parse", "--is-inside-work-tree").strip() == "true"
    except FileNotFoundError:
        return "git is not installed here, so the history of the results cannot be read."
    except subprocess.CalledProcessError:
        inside = False
    if not inside:
        return "this copy of the book is not a git checkout, so the history of the results cannot be read."
    if _git(root, "rev-parse", "--is-shallow-repository").strip() == "true":
        return ("this checkout is a shallow clone: the history of the results is cut off, so when they last changed "
                "cannot be told (`git fetch --unshallow` restores it).")
    return None


def numeric_leaves(payload: Any, arrays: dict[str, np.ndarray] | None = None) -> dict[str, float]:
    """Every number of ``payload`` by its JSON path, and every element of ``arrays``.

    >>> numeric_leaves({"a": [1, 2.5], "b": {"c": True, "d": "x", "e": None}}, {"z": np.array([[3.0]])})
    {'a[0]': 1.0, 'a[1]': 2.5, 'arrays/z[0]': 3.0}
    >>> numeric_leaves({"x": 1, "wall_time": 3.2, "seconds": [1, 2]})
    {'x': 1.0}
    """
    out: dict[str, float] = {}

    def walk(x, path):
        if isinstance(x, bool) or x is None or isinstance(x, str):
            return
        if isinstance(x, (int, float)):
            out[path] = float(x)
        elif isinstance(x, dict):
            for k, v in x.items():
                walk(v, f"{path}.{k}" if path else str(k))
        elif isinstance(x, (list, tuple)):
            for i, v in enumerate(x):
                walk(v, f"{path}[{i}]")

    walk(payload, "")
    for k in [k for k in out if TIMING.search(k.rsplit(".", 1)[-1].split("[")[0])]:
        del out[k]  # how long a run took is not one of its numbers
    for name, a in (arrays or {}).items():
        a = np.asarray(a)
        if a.dtype.kind in "biuf":
            for i, v in enumerate(a.ravel().astype(float)):
                out[f"arrays/{name}[{i}]"] = float(v)
    return out


def difference(old: dict[str, float], new: dict[str, float]) -> dict[str, Any]:
    """How ``new`` differs from ``old`` (numeric leaves): leaves changed, added, removed, and the
    largest absolute and relative change over the leaves both have (NaN = NaN counts as equal).

    >>> d = difference({"a": 1.0, "b": 2.0, "c": 5.0}, {"a": 1.0, "b": 2.5, "d": 1.0})
    >>> d["changed"], d["added"], d["removed"], d["max_abs"], d["max_rel"]
    (1, 1, 1, 0.5, 0.25)
    """
    common = old.keys() & new.keys()
    changed, max_abs, max_rel, worst = 0, 0.0, 0.0, None
    for k in common:
        a, b = old[k], new[k]
        if a == b or (math.isnan(a) and math.isnan(b)):
            continue
        changed += 1
        d = abs(b - a) if math.isfinite(a) and math.isfinite(b) else math.inf
        r = d / abs(a) if a != 0 else math.inf
        if d > max_abs or worst is None:
            worst = k
        max_abs, max_rel = max(max_abs, d), max(max_rel, r)
    return {"changed": changed, "added": len(new.keys() - old.keys()), "removed": len(old.keys() - new.keys()),
            "leaves": len(new), "max_abs": max_abs, "max_rel": max_rel, "largest_change_at": worst}


def _version(root: Path, rev: str, folder: str) -> tuple[dict[str, float], str | None]:
    """Numeric leaves and stored digest of ``folder`` (results/<id>/full or paper) at ``rev``."""
    payload = json.loads(_git(root, "show", f"{rev}:{folder}/payload.json"))
    try:
        with np.load(io.BytesIO(_git(root, "show", f"{rev}:{folder}/arrays.npz", binary=True))) as z:
            arrays = {k: z[k] for k in z.files}
    except subprocess.CalledProcessError:
        arrays = {}
    try:
        digest = json.loads(_git(root, "show", f"{rev}:{folder}/provenance.json")).get("digest")
    except (subprocess.CalledProcessError, json.JSONDecodeError):
        digest = None
    return numeric_leaves(payload, arrays), digest


def history(root: Path = REPO) -> dict[str, Any]:
    """``{"status": None or why there is no history, "results": [...]}``; each result: ``id``, ``versions``,
    ``digest``, ``first`` (the commit that added it) and ``last_change`` (commits, dates, digests and
    :func:`difference`; None when every committed version has the same numbers)."""
    status = git_status(root)
    if status is not None:
        return {"status": status, "results": []}
    listed = _git(root, "ls-files", "--", "results/*/full/payload.json", "results/*/paper/payload.json").split()
    out = []
    for path in sorted(listed):
        folder = str(Path(path).parent)
        mode = Path(folder).name
        log = _git(root, "log", "--format=%H%x09%cs%x09%s", "--", *(f"{folder}/{f}" for f in FILES)).splitlines()
        revs = [line.split("\t", 2) for line in log if line.strip()]
        revs = [r for r in revs if _has(root, r[0], f"{folder}/payload.json")]
        entry: dict[str, Any] = {"id": Path(folder).parent.name + ("" if mode == "full" else f" ({mode})"),
                                 "mode": mode, "versions": len(revs), "last_change": None,
                                 "first": {"commit": revs[-1][0][:12], "date": revs[-1][1], "subject": revs[-1][2]}
                                 if revs else None}
        newer = None
        for i, (rev, date, subject) in enumerate(revs):
            leaves, digest = _version(root, rev, folder)
            if i == 0:
                entry["digest"] = digest
            if newer is not None:
                d = difference(leaves, newer[1])
                if d["changed"] or d["added"] or d["removed"]:
                    entry["last_change"] = {"commit": newer[0][0][:12], "date": newer[0][1], "subject": newer[0][2],
                                            "previous": rev[:12], "previous_date": date, "previous_digest": digest,
                                            "digest": newer[2], **d}
                    break
            newer = ((rev, date, subject), leaves, digest)
        out.append(entry)
    return {"status": None, "results": out}


def _has(root: Path, rev: str, path: str) -> bool:
    try:
        _git(root, "cat-file", "-e", f"{rev}:{path}")
        return True
    except subprocess.CalledProcessError:
        return False


def _short(d: str | None) -> str:
    return f"`{d[:12]}`" if d else "none stored"


def reader_subject(subject: str) -> str:
    """A commit subject as a reader sees it: our tracker's numbers ("issues 19-21", "issue #30's") are
    workshop words, not the reader's, and are dropped.

    >>> reader_subject("results: recomputed after issue #19's merges (issues 11-12)")
    'results: recomputed after merges'
    """
    out = re.sub(r"\s*\(issues? #?\d+(?:[-–]\d+)?\)", "", subject, flags=re.I)
    out = re.sub(r"\bissues? #?\d+(?:[-–]\d+)?(?:'s)?\s*", "", out, flags=re.I)
    return re.sub(r"\s{2,}", " ", out).strip()


def changelog_markdown(hist: dict[str, Any]) -> str:
    """The changelog page's table (or the sentence saying why there is none)."""
    if hist["status"] is not None:
        return f"**No changelog in this build:** {hist['status']}"
    if not hist["results"]:
        return "No full-mode or paper-mode result is committed."
    rows = []
    for e in hist["results"]:
        c = e["last_change"]
        if c is None:
            first = e["first"]
            rows.append([e["id"], e["versions"], f"unchanged since it was committed ({first['date']}, `{first['commit']}`)",
                         "", _short(e.get("digest")), "", "", ""])
            continue
        what = f"{c['changed']} of {c['leaves']} numbers changed"
        if c["added"] or c["removed"]:
            what += f", {c['added']} added, {c['removed']} removed"
        subject = reader_subject(c["subject"])
        subject = subject if len(subject) <= 70 else subject[:69] + "…"
        rows.append([e["id"], e["versions"], f"{c['date']}, `{c['commit']}` ({subject})", what,
                     f"{_short(c['previous_digest'])} ({c['previous_date']}) → {_short(c['digest'])}",
                     fmt(c["max_abs"], 3), fmt(c["max_rel"], 3),
                     # the key's path one part per code span, so that a long path wraps between its parts
                     " › ".join(f"`{part}`" for part in str(c["largest_change_at"]).split("."))])
    header = ["result", "committed versions", "numbers last changed", "how many", "stored digest: previous → now",
              "max abs change", "max rel change", "largest abs change at"]
    # two narrower tables sharing the result column (no table wider than its box)
    return two_tables(header, [[str(x) for x in r] for r in rows], split=5,
                      captions=("*When each result's numbers last changed, and its digests.*", "*By how much, and where.*"))


# ------------------------------------------------------------------ verdict changes

#: the verdicts of the last reviewed commit (``verdicts --json`` run on its checkout; see its ``how``)
VERDICT_BASELINE = REPO / "results" / "verdicts" / "baseline-df4a0e0.json"


def verdict_changes(before: list[dict], after: list[dict]) -> dict[str, Any]:
    """Rows matched by (page, item): ``changed`` (before, after verdict and today's note),
    ``new`` (absent before), ``gone`` (absent now), ``transitions`` (before -> after: count)
    and both verdict counts."""
    from collections import Counter

    bk = {(r["page"], r["item"]): r for r in before}
    ak = {(r["page"], r["item"]): r for r in after}
    changed = [{"page": k[0], "item": k[1], "before": bk[k]["verdict"], "after": r["verdict"],
                "why": str(r.get("note", "")).split(". Tolerance:")[0], "sentence": r.get("sentence")}
               for k, r in ak.items() if k in bk and bk[k]["verdict"] != r["verdict"]]
    trans = Counter((c["before"], c["after"]) for c in changed)
    return {"changed": changed, "new": [{"page": k[0], "item": k[1], "after": r["verdict"]} for k, r in ak.items()
                                        if k not in bk],
            "gone": [{"page": k[0], "item": k[1], "before": r["verdict"]} for k, r in bk.items() if k not in ak],
            "transitions": {f"{a} -> {b}": n for (a, b), n in sorted(trans.items())},
            "counts_before": dict(sorted(Counter(r["verdict"] for r in before).items())),
            "counts_after": dict(sorted(Counter(r["verdict"] for r in after).items()))}


def verdict_changes_markdown(changes: dict[str, Any], *, baseline: str) -> str:
    """The verdict-changes section: counts before and after, the transitions, and folded tables of the
    changed rows (with today's reason), the rows added and the rows removed."""
    from dpcompanion.book.claims_page import folded

    def counts(c):
        return ", ".join(f"{k} {v}" for k, v in c.items()) + f" ({sum(c.values())} rows)"

    def cell(s, n=240):
        s = str(s).replace("|", "/").replace("\n", " ")
        return s if len(s) <= n else s[: n - 1] + "…"

    out = [f"Against {baseline}: before {counts(changes['counts_before'])}; now {counts(changes['counts_after'])}.", ""]
    if changes["transitions"]:
        out += ["Verdicts that changed: " + "; ".join(f"{k}: {v}" for k, v in changes["transitions"].items()) + ".", ""]
        out += folded(f"Each changed row ({len(changes['changed'])}), with today's reason",
                      ["| page | row | before → now | why (today's rule) |", "| --- | --- | --- | --- |"]
                      + [f"| {c['page']} | {cell(c['item'], 80)} | {c['before']} → {c['after']} | "
                         f"{cell(c['sentence'] or c['why'], 200)} |" for c in changes["changed"]])
    else:
        out.append("No verdict of a row present in both changed.")
    for key, what, col in (("new", "Rows added since", "after"), ("gone", "Rows removed since", "before")):
        if changes[key]:
            out += [""] + folded(f"{what} then ({len(changes[key])})",
                                 ["| page | row | verdict |", "| --- | --- | --- |"]
                                 + [f"| {r['page']} | {cell(r['item'], 120)} | {r[col]} |" for r in changes[key]])
    return "\n".join(out)


def verdict_baseline(path: Path = VERDICT_BASELINE) -> dict[str, Any] | None:
    """The committed baseline (``rows``, ``commit``, ``how``), None where the file is absent."""
    return json.loads(path.read_text()) if path.exists() else None

"""``checks``: run the machine checks of the claim registry and report each claim's status.

``--mutants`` also runs every ``proved``/``verified`` entry's check with ``mutant=True`` (the
minimally false variant its declaration names) and reports ``mutant_caught`` and ``mutant``.
Exit status: 0 when every selected check ran (``refuted`` claims are findings, not failures)
and, with ``--mutants``, every such entry caught its mutant; 1 when a check raised (status
``error``) or a mutant went uncaught; 2 for bad input (an ``--id`` that matches no claim).
"""

from __future__ import annotations

import argparse
import time

from dpcompanion.claims.registry import load_all, run_checks
from dpcompanion.book.claims_page import status_counts
from dpcompanion.cli import UsageError
from dpcompanion.core import outputs

HELP = "run the claim checks (proved/checked/verified/identity/refuted/not-reproduced/illustrated) and print a table or JSON"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.formatter_class = argparse.RawDescriptionHelpFormatter
    p.epilog = """examples:
  python -m dpcompanion checks                 # table + counts per status
  python -m dpcompanion checks --id H-T4.4     # only ids starting with H-T4.4
  python -m dpcompanion checks --json          # JSON array (id, status, method, evidence, ...)"""
    p.add_argument("--id", dest="prefix", default=None, metavar="PREFIX",
                   help="only claims whose id starts with PREFIX (e.g. H-T4.4, W-)")
    p.add_argument("--json", action="store_true", help="print a JSON array of results instead of a table")
    p.add_argument("--mutants", action="store_true",
                   help="also run each proved/checked/verified check on its declared mutant and report mutant_caught")


def _summary(r: dict) -> str:
    ev = r.get("evidence") or {}
    if r["status"] == "error":
        return str(ev.get("exception", ""))
    for key in ("worst_margin", "residual", "fitted_exponent", "ratio_range", "ratio_min", "ratio_T_over_log"):
        if key in ev:
            v = ev[key]
            if isinstance(v, dict):
                v = ", ".join(f"{k}={x:.3g}" if isinstance(x, float) else f"{k}={x}" for k, x in list(v.items())[:3])
            elif isinstance(v, float):
                v = f"{v:.3g}"
            elif isinstance(v, list):
                v = "[" + ", ".join(f"{x:.3g}" if isinstance(x, float) else str(x) for x in v) + "]"
            s = f"{key}: {v}"
            break
    else:
        s = ""
    if r["status"] == "refuted" and "counterexample" in ev:
        s = f"counterexample: {outputs.json_text(ev['counterexample'], default=str)}"
    return s if len(s) <= 90 else s[:87] + "..."


def run(args: argparse.Namespace) -> int:
    if args.prefix is not None and not args.prefix.strip():
        raise UsageError(f"--id must be a non-empty id prefix such as H-T4.4 or W- (omit --id for every claim), got {args.prefix!r}")
    reg = load_all()
    if args.prefix is not None and not any(cid.startswith(args.prefix) for cid in reg):
        raise UsageError(f"--id {args.prefix!r} matches no registered claim ({len(reg)} claims; ids look like H-T4.4.T-opt)")
    t0 = time.perf_counter()
    results = run_checks(args.prefix, mutants=args.mutants)
    wall = time.perf_counter() - t0
    if args.json:
        print(outputs.json_text(results, indent=1, default=str))
    else:
        w = max(len(r["id"]) for r in results)
        mut = (lambda r: {True: "caught", False: "MISSED", None: "-"}[r.get("mutant_caught")]) if args.mutants else None
        head = f"{'id':<{w}}  {'status':<14}  {'method':<10}  {'s':>5}  "
        print(head + ("mutant  " if mut else "") + "evidence")
        for r in results:
            line = f"{r['id']:<{w}}  {r['status']:<14}  {r['method']:<10}  {r['seconds']:5.2f}  "
            print(line + (f"{mut(r):<6}  " if mut else "") + _summary(r))
        counts = status_counts(results)
        print()
        print(f"{len(results)} claims in {wall:.1f} s: " + ", ".join(f"{n} {s}" for s, n in counts.items() if n))
        if args.mutants:
            tried = [r for r in results if r.get("mutant_caught") is not None]
            print(f"mutants caught: {sum(bool(r['mutant_caught']) for r in tried)} of {len(tried)} proved/checked/verified entries")
    if any(r["status"] == "error" for r in results):
        return 1
    return 1 if args.mutants and any(r.get("mutant_caught") is False for r in results) else 0

"""``checks``: run the machine checks of the claim registry and report each claim's status.

Examples::

    python -m dpcompanion checks                 # table + counts per status
    python -m dpcompanion checks --id H-T4.4     # only ids starting with H-T4.4
    python -m dpcompanion checks --json          # JSON array (id, status, method, evidence, ...)

Exit status: 0 when every selected check ran (``refuted`` claims are findings, not
failures), 1 when a check raised (status ``error``), 2 for bad input (an ``--id`` prefix
that matches no claim).
"""

from __future__ import annotations

import argparse
import json
import sys
import time

HELP = "run the claim checks (proved/verified/refuted/illustrated) and print a table or JSON"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.formatter_class = argparse.RawDescriptionHelpFormatter
    p.epilog = """examples:
  python -m dpcompanion checks                 # table + counts per status
  python -m dpcompanion checks --id H-T4.4     # only ids starting with H-T4.4
  python -m dpcompanion checks --json          # JSON array (id, status, method, evidence, ...)"""
    p.add_argument("--id", dest="prefix", default=None, metavar="PREFIX",
                   help="only claims whose id starts with PREFIX (e.g. H-T4.4, W-)")
    p.add_argument("--json", action="store_true", help="print a JSON array of results instead of a table")


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
        s = f"counterexample: {json.dumps(ev['counterexample'], default=str)}"
    return s if len(s) <= 90 else s[:87] + "..."


def run(args: argparse.Namespace) -> int:
    from dpcompanion.claims.registry import load_all, run_checks
    from dpcompanion.claims.render import status_counts
    from dpcompanion.cli import UsageError

    if args.prefix is not None and not args.prefix.strip():
        raise UsageError(f"--id must be a non-empty id prefix such as H-T4.4 or W- (omit --id for every claim), got {args.prefix!r}")
    reg = load_all()
    if args.prefix is not None and not any(cid.startswith(args.prefix) for cid in reg):
        raise UsageError(f"--id {args.prefix!r} matches no registered claim ({len(reg)} claims; ids look like H-T4.4.T-opt)")
    t0 = time.perf_counter()
    results = run_checks(args.prefix)
    wall = time.perf_counter() - t0
    if args.json:
        json.dump(results, sys.stdout, indent=1, default=str)
        sys.stdout.write("\n")
    else:
        w = max(len(r["id"]) for r in results)
        print(f"{'id':<{w}}  {'status':<11}  {'method':<10}  {'s':>5}  evidence")
        for r in results:
            print(f"{r['id']:<{w}}  {r['status']:<11}  {r['method']:<10}  {r['seconds']:5.2f}  {_summary(r)}")
        counts = status_counts(results)
        print()
        print(f"{len(results)} claims in {wall:.1f} s: " + ", ".join(f"{n} {s}" for s, n in counts.items() if n))
    return 1 if any(r["status"] == "error" for r in results) else 0

"""``results``: list every stored experiment result and whether it is fresh.

``python -m dpcompanion results [--json] [--revalidate]``: one row (or JSON object) per
stored result with ``id, mode, fresh, commit, device, created, wall_s`` (and the digest
and why a stale result is stale). ``--revalidate`` first re-checks every stale full result
by its behavioural fingerprint (:func:`dpcompanion.experiments.store.revalidate`):
only the quick mode is recomputed.
"""

from __future__ import annotations

import argparse
import json

HELP = "list the stored experiment results (fresh or stale); --revalidate re-checks stale full results cheaply"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true", help="print a JSON list")
    p.add_argument("--revalidate", action="store_true",
                   help="re-check stale full results by recomputing their quick mode and comparing digests")
    p.add_argument("--device", default="cpu", help="device for --revalidate's quick runs (default cpu)")


def run(args: argparse.Namespace) -> int:
    from dpcompanion.core.provenance import resolve_device
    from dpcompanion.experiments import store

    from dpcompanion.cli import options

    device = options.flag("--device", resolve_device, args.device)
    events = []
    if args.revalidate:
        for r in store.list_results():
            if r.mode == "full" and not r.fresh:
                store.check_writable(r.path)
        for r in store.list_results():
            if r.mode == "full" and not r.fresh:
                events.append(store.revalidate(r.id, device=device))
    rows = []
    for r in store.list_results():
        rec = r.record()
        row = {k: rec[k] for k in ("id", "mode", "fresh", "commit", "dirty", "device", "created", "wall_s",
                                   "runs", "digest", "stale_reason", "path")}
        ev = [e for e in events if e["id"] == r.id and r.mode == "full"]
        if ev:
            row["revalidation"] = ev[0]
        rows.append(row)
    if args.json:
        print(json.dumps(rows, sort_keys=True))
        return 0
    for e in events:
        print(f"revalidate {e['id']}: {e['status']} ({e['detail']})")
    if not rows:
        print(f"no stored results under {store.results_root()}")
    for r in rows:
        state = "fresh" if r["fresh"] else f"STALE ({r['stale_reason']})"
        dirty = "+dirty" if r["dirty"] else ""
        print(f"{r['id']:<12} {r['mode']:<6} {state:<8} commit {r['commit']}{dirty}  {r['device']}  "
              f"{r['created']}  {r['wall_s']} s  digest {str(r['digest'])[:12]}")
    return 0

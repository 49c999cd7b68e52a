"""``results``: list every stored experiment result and whether it is fresh.

``python -m dpcompanion results [--json] [--revalidate | --seal] [--results-dir DIR]``: one
row (or JSON object) per stored result with ``id, mode, fresh, commit, device, created,
wall_s`` (and the digest and why a stale result is stale; ``complete: true``). A sweep in
progress (units stored in ``<id>/<mode>.units/``, not yet assembled: killed, interrupted, or
running) is listed as ``PARTIAL`` with ``units_done/units_total``, the units stored by older
code (recomputed on resume) and ``estimate_left_s``: per unit left, the mean wall time of the
finished units of its size (the experiment's ``unit_size``, when it declares one), or
``estimate_why`` when a size left has no finished unit, the units differ in size or none has finished
(``complete: false``: it is never shown as a result; ``fresh: true`` when every stored unit was
computed by the current code and config, so committed units of a sweep that spans sittings
read as fresh on a clone, and a unit stored by older code makes it stale). A damaged result (a file missing, unreadable or not
matching its digest) is listed as ``DAMAGED`` with the file and what is wrong (``damaged``
in the JSON); every other result is still listed. Paper-mode results (the paper's own sizes,
where an experiment defines them) and partial paper sweeps are listed like full ones.
``--revalidate`` first re-checks every stale full or paper result by its behavioural fingerprint
(:func:`dpcompanion.experiments.store.revalidate`): only the quick mode is recomputed; a result
whose fingerprint was recorded on another kind of CPU, and the units of a sweep in progress
stored by older code, by the reference check (:mod:`dpcompanion.experiments.store.reference`:
the quick mode of the commit whose code made them, computed here, against the current code's).
``--seal`` seals the provenance of results stored before provenance seals existed, without
recomputing (:func:`dpcompanion.experiments.store.seal_unsealed`).
"""

from __future__ import annotations

import argparse
import json

from dpcompanion.cli import UsageError, options
from dpcompanion.cli.commands.experiment import add_results_dir_argument, results_root_from_args
from dpcompanion.core.provenance import resolve_device
from dpcompanion.experiments import base, store
from dpcompanion.experiments.store import sweeps

HELP = "list the stored experiment results (fresh or stale); --revalidate re-checks stale full and paper results cheaply"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true", help="print a JSON list")
    p.add_argument("--revalidate", action="store_true",
                   help="re-check stale full and paper results by recomputing their quick mode and comparing digests")
    p.add_argument("--device", default="cpu", help="device for --revalidate's quick runs (default cpu)")
    p.add_argument("--seal", action="store_true",
                   help="seal the provenance of results stored before seals existed (intact ones only; "
                        "nothing is recomputed)")
    add_results_dir_argument(p)


def run(args: argparse.Namespace) -> int:
    device = options.flag("--device", resolve_device, args.device)
    root = results_root_from_args(args)
    if args.seal and args.revalidate:
        raise UsageError("give either --seal or --revalidate, not both")
    events = []
    seals = {}
    if args.seal:
        for r in store.list_results(root):
            store.check_writable(r.path)
        seals = {(e["id"], e["mode"]): e for e in store.seal_unsealed(root)}
    if args.revalidate:
        for r in store.list_results(root):
            if r.mode in base.FINGERPRINTED_MODES and not r.fresh:
                store.check_writable(r.path)
        for r in store.list_results(root):
            if r.mode in base.FINGERPRINTED_MODES and not r.fresh:
                events.append((r.mode, store.revalidate(r.id, device=device, root=root, mode=r.mode)))
        for part in store.list_partial(root):  # sweeps in progress with units of older code
            if part["mode"] in base.FINGERPRINTED_MODES and part["units_old_code"]:
                events.append((part["mode"], store.revalidate(part["id"], device=device, root=root,
                                                              mode=part["mode"])))
    rows = []
    for r in store.list_results(root):
        rec = r.record()
        row = {k: rec[k] for k in ("id", "mode", "fresh", "damaged", "commit", "dirty", "device", "created",
                                   "wall_s", "runs", "digest", "stale_reason", "path")}
        ev = [e for m, e in events if e["id"] == r.id and m == r.mode]
        if ev:
            row["revalidation"] = ev[0]
        if (r.id, r.mode) in seals:
            row["seal"] = {k: seals[(r.id, r.mode)][k] for k in ("status", "detail")}
        row["complete"] = True
        rows.append(row)
    for part in store.list_partial(root):
        # fresh: every stored unit was computed by this code and config (a unit stored by older
        # code is recomputed on resume); complete: false keeps it off every page and report
        row = {**part, "complete": False, "fresh": part["units_old_code"] == 0 and part["units_done"] > 0}
        ev = [e for m, e in events if e["id"] == part["id"] and m == part["mode"]]
        if ev:
            row["revalidation"] = ev[0]
        rows.append(row)
    if args.json:
        print(json.dumps(rows, sort_keys=True))
        return 0
    for m, e in events:
        what = e["id"] if m == "full" else f"{e['id']} {m}"
        print(f"revalidate {what}: {e['status']} ({e['detail']})")
    for e in seals.values():
        print(f"seal {e['id']} {e['mode']}: {e['status']}" + (f" ({e['detail']})" if e["detail"] else ""))
    if not rows:
        print(f"no stored results under {root}")
    for r in rows:
        if not r["complete"]:
            left = sweeps.estimate_phrase(r)
            old = f", {r['units_old_code']} stored by older code (recomputed)" if r["units_old_code"] else ""
            print(f"{r['id']:<12} {r['mode']:<6} PARTIAL {r['units_done']}/{r['units_total']} units{old}; "
                  f"{left}; `python -m dpcompanion experiment {r['id']} --mode {r['mode']}` "
                  "resumes it")
            continue
        if r["damaged"]:
            print(f"{r['id']:<12} {r['mode']:<6} DAMAGED ({r['damaged']}): not shown; "
                  f"`python -m dpcompanion experiment {r['id']} --mode {r['mode']}` recomputes it")
            continue
        state = "fresh" if r["fresh"] else f"STALE ({r['stale_reason']})"
        dirty = "+dirty" if r["dirty"] else ""
        print(f"{r['id']:<12} {r['mode']:<6} {state:<8} commit {r['commit']}{dirty}  {r['device']}  "
              f"{r['created']}  {r['wall_s']} s  digest {str(r['digest'])[:12]}")
    return 0

"""``results``: list every stored experiment result and whether it is fresh.

One row (or JSON object) per stored result: ``id, mode, fresh, commit, device, created,
wall_s``, the digest and why a stale result is stale (``complete: true``). A sweep in
progress (units stored in ``<id>/<mode>.units/``, not yet assembled) is ``PARTIAL`` with
``units_done/units_total`` and an estimate of the time left (``complete: false``: never shown
as a result; ``fresh`` when every stored unit was computed by the current code and config).
A damaged result (a file missing, unreadable or not matching its digest) is ``DAMAGED``.

``--revalidate`` re-checks every stale full or paper result by recomputing only its quick
mode (:func:`dpcompanion.experiments.store.revalidate`: by digest, else numerically within
tolerance).
``--verify ID`` recomputes ``--units K`` units chosen at random (the seed printed) and
compares them with the stored numbers (:func:`dpcompanion.experiments.store.verify`); exit 1
on a mismatch.
"""

from __future__ import annotations

import argparse

from dpcompanion.cli import UsageError, options
from dpcompanion.cli.commands.experiment_command import add_results_dir_argument, results_root_from_args
from dpcompanion.core import outputs
from dpcompanion.core.provenance import resolve_device
from dpcompanion.experiments import base, store
from dpcompanion.experiments.store.verify import CATCH_TARGET

HELP = "list the stored experiment results (fresh or stale); --revalidate re-checks stale full and paper results cheaply"

EXAMPLES = """examples:
  python -m dpcompanion results
  python -m dpcompanion results --verify h-f-curv --units 2
  python -m dpcompanion results --revalidate"""


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.formatter_class = argparse.RawDescriptionHelpFormatter
    p.epilog = EXAMPLES
    p.add_argument("--json", action="store_true", help="print a JSON list")
    p.add_argument("--revalidate", action="store_true",
                   help="re-check stale full and paper results by recomputing their quick mode and comparing "
                        "digests, else its numbers within tolerance (recording them where missing)")
    p.add_argument("--device", default="cpu", help="device for --revalidate's quick runs (default cpu)")
    p.add_argument("--verify", default=None, metavar="ID",
                   help="recompute --units randomly chosen units of ID's stored result and compare them with the "
                        "stored numbers (exit 1 on a mismatch)")
    p.add_argument("--units", default=None, metavar="K",
                   help="with --verify: how many units to recompute (default: enough to catch one forged unit with "
                        "probability 95%%, all when they took at most a minute; at least the number of units: all, "
                        "and the whole payload is compared)")
    p.add_argument("--seed", default=None, metavar="S",
                   help="with --verify: the seed of the choice of units (default: drawn at random, and printed)")
    p.add_argument("--mode", default=None, choices=base.ALL_MODES,
                   help="with --verify: which stored result (default: paper when stored, else full, else quick)")
    add_results_dir_argument(p)


def _unit_label(unit) -> str:
    text = outputs.json_text(unit, sort_keys=True, default=str) if isinstance(unit, dict) else str(unit)
    return text if len(text) <= 80 else text[:77] + "..."


def _deviation(u: dict) -> str:
    """Where a recomputed unit (or the whole payload) deviates most from the stored numbers."""
    if u.get("why"):
        return f"at {u['where']}: {u['why']}"
    if u["max_deviation"] == 0:
        return "every number identical"
    return f"at {u['where']} (nearest its tolerance) a relative deviation of {u['max_deviation']:.3g}"


def _verify(args, device: str, root) -> int:
    units = options.parse_int(args.units, "--units", minimum=1) if args.units is not None else None
    seed = options.parse_int(args.seed, "--seed", minimum=0) if args.seed is not None else None
    exp = options.flag("--verify", base.get, args.verify)
    if args.mode is not None:
        options.flag("--mode", base.validate_mode, args.mode, exp)
    mode = args.mode
    if mode is not None and store.load(exp.id, mode=mode, root=root) is None:
        raise UsageError(f"--verify {exp.id}: no {mode} result is stored under {root}")
    if mode is None and all(store.load(exp.id, mode=m, root=root) is None for m in base.modes_of(exp)):
        raise UsageError(f"--verify {exp.id}: no result of it is stored under {root}")
    rep = options.flag("--verify", store.verify, exp.id, mode=mode, units=units, seed=seed, device=device, root=root)
    if args.json:
        print(outputs.json_text(rep, sort_keys=True, default=str))
        return 0 if rep["ok"] else 1
    n, k = rep["units_total"], len(rep["chosen"])
    which = f"all {n} units" if k == n else f"units {rep['chosen']} of {n} (chosen with seed {rep['seed']})"
    print(f"verify {rep['id']} {rep['mode']}: {which}, recomputed with the current code")
    for u in rep["units"]:
        dev = "" if u["max_deviation"] is None else ", " + _deviation(u)
        status = u["status"] if u["status"] != "mismatch" else f"MISMATCH ({_unit_label(u.get('unit'))})"
        print(f"  unit {u['index']}: {status}{dev}")
    if rep["whole"] is not None:
        w = rep["whole"]
        print(f"  whole payload: {w['status'] if w['status'] != 'mismatch' else 'MISMATCH'}, {_deviation(w)}")
    if not rep["checked"]:
        print(f"  no recomputed unit is kept in the payload as such: `--units {rep['units_total']}` recomputes "
              "every unit and compares the whole payload")
    catch = rep["catch_probability"]
    what = ("and the whole payload combined again" if rep["whole"] is not None else
            f"{rep['units_checked']} of them found in the payload and compared; numbers combined from several "
            f"units are compared only when every unit is recomputed (`--units {n}`)")
    below = "" if catch >= CATCH_TARGET else f", below the {CATCH_TARGET:.0%} aimed at by default"
    print(f"  checked: {k} of {n} units ({rep['policy']}), {what}; one forged unit is caught with probability "
          f"{catch:.1%}{below}")
    bad = [u["index"] for u in rep["units"] if u["status"] == "mismatch"]
    if bad:
        print(f"  forged or recomputed differently: unit{'s' if len(bad) > 1 else ''} "
              + ", ".join(str(i) for i in bad))
    print(f"verify {rep['id']} {rep['mode']}: " + ("ok" if rep["ok"] else "MISMATCH: the stored numbers are not "
                                                   "what this code computes"))
    return 0 if rep["ok"] else 1


def run(args: argparse.Namespace) -> int:
    device = options.flag("--device", resolve_device, args.device)
    root = results_root_from_args(args)
    if args.verify is None:
        for flag, value in (("--units", args.units), ("--seed", args.seed), ("--mode", args.mode)):
            if value is not None:
                raise UsageError(f"{flag} goes with --verify ID")
    elif args.revalidate:
        raise UsageError("give --verify alone, without --revalidate")
    else:
        return _verify(args, device, root)
    events = []
    if args.revalidate:
        todo = [r for r in store.list_results(root) if r.mode in base.FINGERPRINTED_MODES and not r.fresh]
        for r in todo:
            store.check_writable(r.path)
        events += [(r.mode, store.revalidate(r.id, device=device, root=root, mode=r.mode)) for r in todo
                   if not r.damaged]
    rows = []
    for r in store.list_results(root):
        rec = r.record()
        row = {k: rec[k] for k in ("id", "mode", "fresh", "damaged", "commit", "dirty", "device", "created",
                                   "wall_s", "runs", "digest", "stale_reason", "path", "modified")}
        if not r.damaged:
            row["validation"] = r.validation()
        ev = [e for m, e in events if e["id"] == r.id and m == r.mode]
        if ev:
            row["revalidation"] = ev[0]
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
        print(outputs.json_text(rows, sort_keys=True))
        return 0
    for m, e in events:
        what = e["id"] if m == "full" else f"{e['id']} {m}"
        print(f"revalidate {what}: {e['status']} ({e['detail']})")
    if not rows:
        print(f"no stored results under {root}")
    for r in rows:
        if not r["complete"]:
            left = store.estimate_phrase(r)
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
        note = f"  ({r['modified']})" if r["modified"] and r["fresh"] else ""
        v = r.get("validation") or {}
        if r["fresh"] and v.get("method") == "numeric" and isinstance(v.get("max_deviation"), dict):
            d = v["max_deviation"]
            note += (f"  (revalidated numerically: largest deviation {d.get('abs', 0):.3g}, relative "
                     f"{d.get('rel', 0):.3g} at {d.get('key')})")
        print(f"{r['id']:<12} {r['mode']:<6} {state:<8} commit {r['commit']}{dirty}  {r['device']}  "
              f"{r['created']}  {r['wall_s']} s  digest {str(r['digest'])[:12]}{note}")
    return 0

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
(:func:`dpcompanion.experiments.store.revalidate`): only the quick mode is recomputed; where its
digest moved, its numbers are compared with the quick numbers the result recorded, within the
tolerance of :mod:`dpcompanion.experiments.store.numeric` (revalidated numerically,
the largest deviation recorded). Each row of ``--json`` says how the result was validated (``validation``: ``computed``,
``digest`` or ``numeric`` with the largest deviation; ``quick_numbers``: whether they are recorded).
``--seal`` seals the provenance of results stored before provenance seals existed, without
recomputing (:func:`dpcompanion.experiments.store.seal_unsealed`), and only what it can verify:
the payload matches its digest, the recorded config its hash and the payload's
sizes, and the files equal the last git commit that touched them; every other result is
refused with one line saying what failed, so a reseal never turns an edit into a fresh result.
A result whose files differ from the last commit that touched them, not written by the store,
is listed ``STALE (modified since commit <sha>)``; one the store rewrote and that is not yet
committed says so after its row.

``--verify ID [--units K] [--seed S] [--mode M]`` recomputes K units of the stored result
chosen at random (the seed drawn afresh unless given, and printed, so that a check can be
repeated) and compares them with the stored numbers
(:func:`dpcompanion.experiments.store.verify`): one line per unit, ``ok`` or ``MISMATCH`` with
the relative deviation of the number nearest its tolerance; with K at least the number of units the whole payload is
combined again and compared too. By default K is enough to catch one forged unit with
probability at least 95% (``ceil(0.95 n)`` of ``n``), and every unit when their recorded time is
at most a minute (:data:`dpcompanion.experiments.store.verify.VERIFY_ALL_S`); a line says what
was checked: how many units of how many, why, and the probability that one forged unit is
caught. Exit 1 on a mismatch: a forged number that a recomputed digest and seal hide is caught
here, the one check that cannot be fooled.
"""

from __future__ import annotations

import argparse

from dpcompanion.cli import UsageError, options
from dpcompanion.cli.commands.experiment_command import add_results_dir_argument, results_root_from_args
from dpcompanion.core import outputs
from dpcompanion.core.provenance import resolve_device
from dpcompanion.experiments import base, store
from dpcompanion.experiments.store import unit_sweeps
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
    p.add_argument("--seal", action="store_true",
                   help="seal the provenance of results stored before seals existed (intact ones only; "
                        "nothing is recomputed)")
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
        dev = ("" if u["max_deviation"] is None else f", at {u['where']}: {u['why']}" if u.get("why") else
               ", every number identical" if u["max_deviation"] == 0 else
               f", at {u['where']} (nearest its tolerance) a relative deviation of {u['max_deviation']:.3g}")
        status = u["status"] if u["status"] != "mismatch" else f"MISMATCH ({_unit_label(u.get('unit'))})"
        print(f"  unit {u['index']}: {status}{dev}")
    if rep["whole"] is not None:
        w = rep["whole"]
        dev = (f"at {w['where']}: {w['why']}" if w.get("why") else "every number identical" if w["max_deviation"] == 0
               else f"at {w['where']} (nearest its tolerance) a relative deviation of {w['max_deviation']:.3g}")
        print(f"  whole payload: {w['status'] if w['status'] != 'mismatch' else 'MISMATCH'}, {dev}")
    if not rep["checked"]:
        print(f"  no recomputed unit is kept in the payload as such: `--units {rep['units_total']}` recomputes "
              "every unit and compares the whole payload")
    catch = rep["catch_probability"]
    what = ("and the whole payload combined again" if rep["whole"] is not None else
            f"{rep['units_checked']} of them found in the payload and compared; numbers combined from several "
            f"units are compared only when every unit is recomputed (`--units {n}`)")
    below = "" if catch >= CATCH_TARGET else \
        f", below the {CATCH_TARGET:.0%} aimed at by default"
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
    if args.seal and args.revalidate:
        raise UsageError("give either --seal or --revalidate, not both")
    if args.verify is None:
        for flag, value in (("--units", args.units), ("--seed", args.seed), ("--mode", args.mode)):
            if value is not None:
                raise UsageError(f"{flag} goes with --verify ID")
    elif args.seal or args.revalidate:
        raise UsageError("give --verify alone, without --seal or --revalidate")
    else:
        return _verify(args, device, root)
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
            if r.mode in base.FINGERPRINTED_MODES and not r.fresh and not r.damaged:
                events.append((r.mode, store.revalidate(r.id, device=device, root=root, mode=r.mode)))
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
        print(outputs.json_text(rows, sort_keys=True))
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
            left = unit_sweeps.estimate_phrase(r)
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

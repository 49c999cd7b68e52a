"""``experiment``: compute (or find fresh) one experiment through the results store.

The result is stored under ``<DIR>/<ID>/<mode>/`` (``DIR``: ``--results-dir``, else
``$DPCOMPANION_RESULTS``, else ``results/``; see :mod:`dpcompanion.experiments.store`); every
unit is stored as it finishes (``<DIR>/<ID>/<mode>.units/``), so a killed run resumes where it
stopped. ``--mode paper`` (the paper's own sizes) exists for the experiments that define it.
Every option, the results folder included, is checked before a cluster starts or a file is
written.
"""

from __future__ import annotations

import argparse
import os
import sys

from dpcompanion.cli import UsageError, options
from dpcompanion.core import outputs
from dpcompanion.core.provenance import resolve_device
from dpcompanion.experiments import base, store

HELP = "compute (or load, when fresh) one experiment into results/<id>/<mode>/; --executor dask spreads its units"


def add_executor_arguments(p: argparse.ArgumentParser) -> None:
    """--executor/--workers/--scheduler/--recompute, shared with ``reproduce``."""
    p.add_argument("--executor", default="local", help="local (default: in this process) or dask")
    p.add_argument("--workers", default=None, metavar="N",
                   help="with --executor dask: start a LocalCluster of N single-threaded worker processes")
    p.add_argument("--scheduler", default=None, metavar="ADDRESS",
                   help="with --executor dask: use the running scheduler at ADDRESS (e.g. tcp://host:8786)")
    p.add_argument("--recompute", action="store_true", help="compute even when a fresh result is stored")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("id", metavar="ID", help="experiment id (an unknown id is refused with the list of known ones)")
    p.add_argument("--mode", default="quick", help="quick (default, small), full (the largest run committed; see each page's scale table: "
                                                    "not the paper's sizes) or paper (the paper's own sizes, hours: "
                                                    "only experiments that define it; resumable, commit its units)")
    p.add_argument("--device", default="cpu", help="cpu (default), cuda or auto")
    p.add_argument("--seed", default="0", help="non-negative integer seed (default 0)")
    add_executor_arguments(p)
    p.add_argument("--revalidate", action="store_true",
                   help="with --mode full or paper: re-check a stale result of that mode by recomputing only the "
                        "quick mode and comparing its digest with the recorded one")
    add_results_dir_argument(p)
    p.add_argument("--json", action="store_true", help="print one JSON object")


def add_results_dir_argument(p: argparse.ArgumentParser) -> None:
    p.add_argument("--results-dir", default=None, metavar="DIR",
                   help="the results folder (default: $DPCOMPANION_RESULTS when set, else results/ of the repository)")


def results_root_from_args(args: argparse.Namespace):
    """The results folder, checked by :func:`dpcompanion.cli.options.results_folder`:
    ``--results-dir`` (to be written), else the store's default (``$DPCOMPANION_RESULTS`` or
    ``results/``, read only: it may be missing)."""
    value = getattr(args, "results_dir", None)
    if value is None:
        env = os.environ.get("DPCOMPANION_RESULTS")
        return options.results_folder(store.results_root(), "$DPCOMPANION_RESULTS" if env else "the results folder",
                                      write=False)
    return options.results_folder(value, "--results-dir", write=True)


def run(args: argparse.Namespace) -> int:
    exp = base.get(args.id)
    options.flag("--mode", base.validate_mode, args.mode, exp)
    seed = options.parse_int(args.seed, "--seed", minimum=0, maximum=2**32 - 1)
    device = options.flag("--device", resolve_device, args.device)
    workers = options.parse_int(args.workers, "--workers", minimum=1)
    store.check_executor_options(args.executor, workers=workers, scheduler=args.scheduler)
    if args.revalidate and args.mode not in base.FINGERPRINTED_MODES:
        raise UsageError("--revalidate applies to --mode full or paper (it re-checks such a result by its quick digest)")
    root = results_root_from_args(args)
    store.check_writable(store.result_dir(exp.id, args.mode, root))
    if args.mode in base.FINGERPRINTED_MODES:
        store.check_writable(store.result_dir(exp.id, "quick", root))
    executor = store.make_executor(args.executor, workers=workers, scheduler=args.scheduler)  # a cluster starts
    try:
        if args.revalidate:
            out = store.revalidate(exp.id, device=device, executor=executor, root=root, mode=args.mode)
            res = store.load(exp.id, mode=args.mode, root=root)
            rec = (res.record() if res else {"id": exp.id, "mode": args.mode, "path": None, "cached": False,
                                              "fresh": False}) | {"revalidation": out}
        else:
            before = store.load(exp.id, mode=args.mode, root=root)
            res = store.load_or_compute(exp.id, mode=args.mode, seed=seed, device=device, executor=executor,
                                        recompute=args.recompute, root=root,
                                        progress=lambda line: print(line, file=sys.stderr, flush=True))
            rec = res.record()
            if before is not None and before.damaged:
                rec["replaced_damaged"] = before.damaged
    finally:
        executor.close()
    if args.json:
        print(outputs.json_text(rec, sort_keys=True))
    else:
        what = rec.get("revalidation", {}).get("detail") or ("loaded (fresh)" if rec["cached"] else "computed")
        if rec.get("replaced_damaged"):
            what += f" over a damaged result ({rec['replaced_damaged']})"
        print(f"{rec['id']} {rec['mode']}: {what}; digest {str(rec.get('digest'))[:16]}, {rec.get('runs')} runs, "
              f"{rec.get('wall_s')} s on {rec.get('device')} ({rec.get('executor')}); units: "
              f"{rec.get('units_computed')} computed, {rec.get('units_reused')} reused of {rec.get('units_total')} "
              f"-> {rec.get('path')}")
    return 0

"""``verdicts``: the reproduction report, every verdict row of the experiment pages and theory
tables (:func:`dpcompanion.experiments.comparisons.reproduction.report_rows`), judged on the
stored results (the fresh full result, else the fresh quick one); nothing is computed unless
``--compute`` is given.
"""

from __future__ import annotations

import argparse

from dpcompanion.cli import options
from dpcompanion.cli.commands.experiment_command import results_root_from_args
from dpcompanion.core import outputs
from dpcompanion.core.provenance import resolve_device
from dpcompanion.experiments.comparisons import reproduction

HELP = "the reproduction report: every verdict row of the book (stored results only unless --compute)"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true", help="print a JSON object {counts, rows}")
    p.add_argument("--csv", default=None, metavar="FILE", help="also write the rows as CSV to FILE (.csv)")
    p.add_argument("--page", action="append", default=None, metavar="ID",
                   help="only this experiment or theory table (repeatable, a repeated one counted once; default: every one)")
    p.add_argument("--compute", action="store_true",
                   help="compute the quick result of a page with no fresh stored result (default: never compute)")
    p.add_argument("--seed", default="0", help="seed of the quick results looked up (default 0)")
    p.add_argument("--device", default="cpu", help="device for --compute (default cpu)")


def run(args: argparse.Namespace) -> int:
    seed = options.parse_int(args.seed, "--seed", minimum=0)
    device = options.flag("--device", resolve_device, args.device)
    out = options.output_path(args.csv, "--csv", suffix=".csv") if args.csv is not None else None
    results_root_from_args(args)  # the store's folder: a symlink loop or a file is refused, not read as "no result"
    # a page given twice is reported once (each row counted once), in the order first given
    pages = None if args.page is None else list(dict.fromkeys(args.page))
    rows = options.flag("--page", reproduction.report_rows, pages=pages, compute=args.compute, seed=seed,
                        device=device)
    if out is not None:
        reproduction.write_csv(rows, out)
    counts = reproduction.counts(rows)
    if args.json:
        print(outputs.json_text({"counts": counts, "rows": rows}, sort_keys=True, default=str))
        return 0
    for r in rows:
        mode = r["result"]["mode"] or "none"
        o = r["ours"]
        ci = (f"[{o['ci_low']:.3g}, {o['ci_high']:.3g}]" if o["ci_low"] is not None and o["ci_high"] is not None else "")
        print(f"{r['verdict']:<15} {r['page']:<18} {mode:<8} {r['item'][:70]:<70} {ci}")
    print("counts: " + ", ".join(f"{k} {v}" for k, v in counts.items()) + f" ({len(rows)} rows)")
    if out is not None:
        print(f"wrote {out}")
    return 0

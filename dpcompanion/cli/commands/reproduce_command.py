"""``reproduce``: execute the book's notebooks with papermill (see :mod:`dpcompanion.book.runner`)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from dpcompanion.book import runner
from dpcompanion.cli import UsageError, options
from dpcompanion.cli.commands.experiment_command import add_executor_arguments, results_root_from_args
from dpcompanion.core import validate
from dpcompanion.core.provenance import resolve_device

HELP = "execute the book's notebooks with papermill (quick or full mode) into book/"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.formatter_class = argparse.RawDescriptionHelpFormatter
    p.epilog = """examples:
  python -m dpcompanion reproduce --list
  python -m dpcompanion reproduce --only accounting
  python -m dpcompanion reproduce --mode full --device cuda
  python -m dpcompanion reproduce --only h-f-infl --reexecute   # ignore the execution cache"""
    p.add_argument("--mode", default="quick", help="quick (CI-sized, default) or full (the largest run committed; see each page's "
                                                    "scale table: not the paper's sizes)")
    p.add_argument("--only", action="append", metavar="ID", help="run only this notebook id (repeatable or comma-separated)")
    p.add_argument("--device", default="auto", help="auto (default: cuda if available), cpu or cuda")
    p.add_argument("--seed", default="0", help="non-negative integer seed passed to every notebook (default 0)")
    p.add_argument("--list", action="store_true", help="list the notebook ids in execution order and exit")
    add_executor_arguments(p)
    p.add_argument("--reexecute", action="store_true",
                   help="execute every notebook even when its execution key (notebooks, parameters, library "
                        "source, installed packages, results store) is that of its copy in book/")
    p.add_argument("--notebooks", type=Path, default=None, help=argparse.SUPPRESS)
    p.add_argument("--output", type=Path, default=None, help=argparse.SUPPRESS)


def run(args: argparse.Namespace) -> int:
    seed = options.parse_int(args.seed, "--seed", minimum=0, maximum=2**32 - 1)
    if args.mode not in ("quick", "full"):
        raise UsageError(f"--mode must be quick or full, got {args.mode!r}")
    options.flag("--device", resolve_device, args.device)  # the one device check (cuda without a GPU refused here)
    if args.only is not None:
        ids = [i.strip() for item in args.only for i in item.split(",")]
        if not all(ids):
            raise UsageError(f"--only must name notebook ids (see --list), got {','.join(args.only)!r}")
    nb_dir = args.notebooks or runner.NOTEBOOKS
    if args.list:
        for nb in runner.discover(nb_dir):
            print(nb.id)
        return 0
    results_root_from_args(args)  # the store the notebooks read: a symlink loop or a file is refused here
    out_dir = args.output or runner.GENERATED
    # before any work: a probe file in the folder (or its nearest existing parent), not permission bits
    validate.writable_folder("--output" if args.output is not None else "output folder", out_dir)
    try:
        runner.reproduce(mode=args.mode, seed=seed, device=args.device, only=args.only, notebooks_dir=nb_dir,
                         out_dir=out_dir, executor=args.executor,
                         workers=options.parse_int(args.workers, "--workers", minimum=1), scheduler=args.scheduler,
                         recompute=args.recompute, reexecute=args.reexecute)
    except runner.NotebookFailed as exc:
        print(f"dpcompanion reproduce: error: {' '.join(str(exc).split())}", file=sys.stderr)
        return 1
    return 0

"""``bench``: our private step vs Opacus (ghost, hooks, functorch, ew) on the paper's workload.

See :mod:`dpcompanion.training.bench` for what is measured and how FLOPs are counted.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

HELP = ("benchmark our private step (one run and batched runs) against Opacus on the paper's MLP workload, and "
        "the linear/logistic trainer against a plain batched loop")

_DEFAULT_OUT = "default"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--quick", action="store_true", help="CI size (< 90 s on 2 cores); default is full mode")
    p.add_argument("--device", default="auto", help="auto (default: cuda if available), cpu or cuda")
    p.add_argument("--runs", default=None, help="independent runs for the batched/sequential comparison (default 100)")
    p.add_argument("--steps", default=None, help="steps per run (default: 10 quick, 100 full)")
    p.add_argument("--json", action="store_true", help="print the result as JSON instead of a table")
    p.add_argument("--out", nargs="?", const=_DEFAULT_OUT, default=None, metavar="FILE",
                   help="write the JSON (with a provenance sidecar) to FILE, or to results/bench/<device>-<mode>.json "
                        "when FILE is omitted (full mode writes there by default)")
    p.add_argument("--threads", default=None,
                   help="torch intra-op threads for every method (default: torch's choice, usually the core count)")
    p.add_argument("--seed", default="0", help="seed of the synthetic data and initial parameters (default 0)")
    p.add_argument("--opacus-modes", default=None, metavar="M1,M2",
                   help="comma-separated subset of ghost,hooks,functorch,ew (default: all)")
    p.add_argument("--size", default="paper", help=argparse.SUPPRESS)  # 'tiny': smoke size for tests


def _positive_int(name: str, value) -> int | None:
    from dpcompanion.cli import UsageError

    if value is None:
        return None
    try:
        v = int(value)
    except (TypeError, ValueError):
        raise UsageError(f"--{name} must be a positive integer, got {value!r}") from None
    if v < 1 or v > 100_000 or (name == "threads" and v > 1024):
        raise UsageError(f"--{name} must be an integer in [1, 100000], got {value!r}")
    return v


def run(args: argparse.Namespace) -> int:
    from dpcompanion.training import bench
    from dpcompanion.cli import UsageError
    from dpcompanion.core.provenance import DEVICES

    # validate everything before any work or file
    mode = "quick" if args.quick else "full"
    runs = _positive_int("runs", args.runs)
    steps = _positive_int("steps", args.steps)
    threads = _positive_int("threads", args.threads)
    try:
        seed = int(args.seed)
        if seed < 0:
            raise ValueError
    except ValueError:
        raise UsageError(f"--seed must be a non-negative integer, got {args.seed!r}") from None
    if args.device not in DEVICES:
        raise UsageError(f"--device must be one of {', '.join(DEVICES)}, got {args.device!r}")
    if args.size not in bench.WORKLOADS:
        raise UsageError(f"--size must be one of {', '.join(bench.WORKLOADS)}, got {args.size!r}")
    modes = bench.OPACUS_MODES
    if args.opacus_modes is not None:
        modes = tuple(m.strip() for m in args.opacus_modes.split(",") if m.strip())
        bad = [m for m in modes if m not in bench.OPACUS_MODES]
        if bad or not modes:
            raise UsageError(f"--opacus-modes must be a comma-separated subset of {','.join(bench.OPACUS_MODES)}, "
                             f"got {args.opacus_modes!r}")
    out: Path | None = None
    if args.out not in (None, _DEFAULT_OUT):
        out = Path(args.out)
        if out.exists() and out.is_dir():
            raise UsageError(f"--out must be a file path, got the directory {str(out)!r}")
        if out.suffix != ".json":
            raise UsageError(f"--out must end in .json, got {str(out)!r}")
    from dpcompanion.core.provenance import resolve_device

    resolve_device(args.device)  # ValueError (exit 2) for cuda without a GPU, before any work

    import sys

    log = (lambda s: print(f"bench: {s}", file=sys.stderr)) if not args.json else None
    result = bench.run_benchmark(mode=mode, device=args.device, runs=runs, steps=steps, size=args.size, seed=seed,
                                 threads=threads, opacus_modes=modes, log=log)
    write = out is not None or args.out == _DEFAULT_OUT or (mode == "full" and args.size == "paper")
    if write:
        from dpcompanion.core.provenance import save_json

        path = save_json(result, out or bench.default_output(result), prov=_prov(result))
        if log:
            log(f"wrote {path}")
    if args.json:
        print(json.dumps(result, indent=1, sort_keys=True, default=float))
    else:
        from dpcompanion.book.report import markdown_table

        print(markdown_table(["method", "steps/s (one run)", f"run-steps/s ({result['settings']['runs']} runs)",
                              "peak MiB"], bench.summary_rows(result)))
        print(f"\nratio_single_vs_opacus {result['ratio_single_vs_opacus']:.3g} "
              f"(vs Opacus {result['opacus_fastest_mode']}), ratio_batched_vs_sequential_opacus "
              f"{result['ratio_batched_vs_sequential_opacus']:.3g}, achieved {result['achieved_gflops']:.3g} GFLOP/s "
              f"= {result['fraction_of_matmul_peak']:.1%} of the {result['matmul_peak_gflops']:.3g} GFLOP/s matmul peak "
              f"({result['device']}, {result['threads']} threads, {mode} mode, {result['wall_s']:.0f} s)")
        print(f"linear/logistic workload: ours {result['linear_run_steps_per_s']:.4g} run-steps/s, plain loop "
              f"{result['linear_reference_run_steps_per_s']:.4g}, ratio_linear_batched_vs_reference "
              f"{result['ratio_linear_batched_vs_reference']:.3g} (median of per-round ratios)")
    return 0


def _prov(result: dict) -> dict:
    p = dict(result["provenance"])
    p.update({"command": "python -m dpcompanion bench", "mode": result["mode"], "device": result["device"],
              "seed": result["settings"]["seed"], "wall_s": round(result["wall_s"], 2)})
    return p

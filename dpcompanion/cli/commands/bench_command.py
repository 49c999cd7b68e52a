"""``bench``: our private step vs Opacus (ghost, hooks, functorch, ew) on the paper's workload.

See :mod:`dpcompanion.training.bench` for what is measured and how FLOPs are counted.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from dpcompanion.book.report import markdown_table
from dpcompanion.cli import UsageError, options
from dpcompanion.core import outputs
from dpcompanion.core.provenance import DEVICES, resolve_device, save_json

HELP = ("benchmark our private step (one run and batched runs) against Opacus on the paper's MLP workload and on "
        "W-F4's CNN (batch 256), the overhead of privacy, and the linear/logistic trainer against a plain batched loop")

EXAMPLES = """examples:
  python -m dpcompanion bench --quick --json
  python -m dpcompanion bench --quick --runs 20 --opacus-modes ghost,hooks
  python -m dpcompanion bench --linear-only --out        # the linear workload at T = 100, seconds
  python -m dpcompanion bench --device cuda --out results/bench/my-gpu.json
  python -m dpcompanion bench --paper-scale --out        # CPU time of H-F-EFF and W-F4 at the papers' sizes

keys of --json (CPU; interleaved rounds in one process; the cnn and overhead ratios: median of per-round ratios):
  cnn.ratio_vs_opacus_fastest      W-F4's CNN, 1x28x28, batch 256: Opacus's fastest step time / ours
  cnn.private_over_nonprivate      the same CNN: our private step / a plain torch step
  mlp.ratio_vs_opacus_fastest      the paper's MLP, one run: our steps/s / Opacus's fastest
  mlp.private_over_nonprivate      the MLP: our private step / a plain torch SGD step (the overhead of privacy)
  mlp.fraction_of_matmul_peak      counted FLOPs x batched run-steps/s / the measured matmul peak
  linear.fraction_of_matmul_peak   the logistic workload (4 N (D+1) FLOPs per run-step) / the same peak
  targets                          each key above with its value, the project's target and whether it is met"""

_DEFAULT_OUT = "default"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.formatter_class = argparse.RawDescriptionHelpFormatter
    p.epilog = EXAMPLES
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
    p.add_argument("--linear-only", action="store_true",
                   help="only the linear/logistic workload (ours vs a plain batched loop); --out then defaults to "
                        "results/bench/<device>-<mode>-linear.json")
    p.add_argument("--paper-scale", action="store_true",
                   help="estimate the CPU time of H-F-EFF and W-F4 at the papers' own sizes from a few measured steps "
                        "of their training calls (minutes); --out then defaults to "
                        "results/bench/<device>-paper-scale.json")
    p.add_argument("--size", default="paper", help=argparse.SUPPRESS)  # 'tiny': smoke size for tests


def run(args: argparse.Namespace) -> int:
    from dpcompanion.training import bench, bench_measure, bench_workloads  # torch and Opacus (2 s): not for --help

    # validate everything before any work or file
    mode = "quick" if args.quick else "full"
    runs = options.parse_int(args.runs, "--runs", maximum=100_000)
    steps = options.parse_int(args.steps, "--steps", maximum=100_000)
    threads = options.parse_int(args.threads, "--threads", maximum=1024)
    seed = options.parse_int(args.seed, "--seed", minimum=0, maximum=2**63 - 1)
    if args.device not in DEVICES:
        raise UsageError(f"--device must be one of {', '.join(DEVICES)}, got {args.device!r}")
    if args.size not in bench_workloads.WORKLOADS:
        raise UsageError(f"--size must be one of {', '.join(bench_workloads.WORKLOADS)}, got {args.size!r}")
    if args.linear_only and (args.runs is not None or args.opacus_modes is not None or args.steps is not None):
        raise UsageError("--linear-only measures the fixed linear workload: --runs, --steps and --opacus-modes do "
                         "not apply")
    if args.paper_scale and (args.quick or args.linear_only or args.runs is not None or args.steps is not None
                             or args.opacus_modes is not None):
        raise UsageError("--paper-scale measures fixed sizes: --quick, --linear-only, --runs, --steps and "
                         "--opacus-modes do not apply")
    modes = bench_workloads.OPACUS_MODES
    if args.opacus_modes is not None:
        modes = tuple(m.strip() for m in args.opacus_modes.split(","))
        bad = [m for m in modes if m not in bench_workloads.OPACUS_MODES]
        allowed = ",".join(bench_workloads.OPACUS_MODES)
        if bad:  # an empty name too ("ghost,,hooks", a trailing comma): not silently dropped
            what = ", ".join(repr(m) if m else "an empty name" for m in dict.fromkeys(bad))
            raise UsageError(f"--opacus-modes must be a comma-separated subset of {allowed}, got {args.opacus_modes!r} "
                             f"({what} is not a mode)")
        if len(set(modes)) != len(modes):
            dup = ", ".join(sorted({m for m in modes if modes.count(m) > 1}))
            raise UsageError(f"--opacus-modes must name each of {allowed} at most once, got {args.opacus_modes!r} "
                             f"({dup} repeated)")
    resolved = resolve_device(args.device)  # ValueError (exit 2) for cuda without a GPU, before any work
    if args.paper_scale:
        from dpcompanion.experiments import paper_scale
    write = args.out is not None or (mode == "full" and args.size == "paper" and not args.linear_only)
    out: Path | None = None
    if args.out not in (None, _DEFAULT_OUT):
        out = options.output_path(args.out, "--out", suffix=".json")
    elif write and args.paper_scale:
        out = options.output_path(paper_scale.default_output({"device": resolved, "size": args.size}), "--out",
                                  suffix=".json")
    elif write:  # the default file: its folder is checked now, not after the benchmark
        sections = ["linear"] if args.linear_only else None
        out = options.output_path(bench.default_output({"device": resolved, "mode": mode, "size": args.size,
                                                        "sections": sections}), "--out", suffix=".json")

    log = (lambda s: print(f"bench: {s}", file=sys.stderr)) if not args.json else None
    if args.paper_scale:
        with bench_measure.torch_threads(threads):
            result = paper_scale.measure(device=resolved, size=args.size, seed=seed, log=log)
    elif args.linear_only:
        result = bench.run_linear_only(mode=mode, device=args.device, size=args.size, seed=seed, threads=threads,
                                       log=log)
    else:
        result = bench.run_benchmark(mode=mode, device=args.device, runs=runs, steps=steps, size=args.size,
                                     seed=seed, threads=threads, opacus_modes=modes, log=log)
    if write:
        try:
            path = save_json(result, out, prov=_prov(result))
        except OSError as exc:
            raise UsageError(f"--out {str(out)!r}: cannot write it ({exc.strerror or exc})") from None
        if log:
            log(f"wrote {path}")
    if args.json:
        print(outputs.json_text(result, indent=1, sort_keys=True, default=float))
    elif args.paper_scale:
        hf, wf = result["h-f-eff"], result["w-f4"]
        print(f"h-f-eff at {hf['sizes']['hidden']} hidden units, {hf['sizes']['repeats']} repeats: about "
              f"{hf['estimate_s'] / 3600:.3g} CPU hours ({hf['run_steps_paper']:,} run-steps; the model predicts "
              f"{hf['calibration']['predicted_s']:.0f} s for the committed run, which recorded "
              f"{hf['calibration']['recorded_train_s']:.0f} s)")
        print(f"w-f4 at {wf['sizes']['n_train']:,} images, {wf['sizes']['epochs']} epochs, {wf['cells']} cells x "
              f"{wf['seeds']} seed(s): about {wf['estimate_s'] / 3600:.3g} CPU hours ({wf['cell_s'] / 60:.3g} min per "
              f"cell and seed; {wf['step_s'] * 1e3:.3g} ms per step)")
        return 0
    elif not args.linear_only:
        print(markdown_table(["method", "steps/s (one run)", f"run-steps/s ({result['settings']['runs']} runs)",
                              "peak MiB"], bench.summary_rows(result)))
        print(f"\nratio_single_vs_opacus {result['ratio_single_vs_opacus']:.3g} "
              f"(vs Opacus {result['opacus_fastest_mode']}), ratio_batched_vs_sequential_opacus "
              f"{result['ratio_batched_vs_sequential_opacus']:.3g}, achieved {result['achieved_gflops']:.3g} GFLOP/s "
              f"= {result['fraction_of_matmul_peak']:.1%} of the {result['matmul_peak_gflops']:.3g} GFLOP/s matmul peak "
              f"({result['device']}, {result['threads']} threads, {mode} mode, {result['wall_s']:.0f} s)")
        if result.get("cnn"):
            c = result["cnn"]
            print(f"cnn (W-F4's network, batch {c['workload']['batch']}): cnn.ratio_vs_opacus_fastest "
                  f"{c['ratio_vs_opacus_fastest']:.3g} (vs Opacus {c['opacus_fastest_mode']}), private_over_nonprivate "
                  f"{c['private_over_nonprivate']:.3g}; mlp.private_over_nonprivate "
                  f"{result['mlp']['private_over_nonprivate']:.3g}; linear.fraction_of_matmul_peak "
                  f"{result['linear']['fraction_of_matmul_peak']:.1%}")
    if not args.json and result.get("targets"):
        print("\n" + _targets_table(result["targets"]))
    if not args.json:
        print(f"linear/logistic workload: ours {result['linear_run_steps_per_s']:.4g} run-steps/s, plain loop "
              f"{result['linear_reference_run_steps_per_s']:.4g}, ratio_linear_batched_vs_reference "
              f"{result['ratio_linear_batched_vs_reference']:.3g} (median of per-round ratios)")
    return 0


def _targets_table(rows: list[dict]) -> str:
    met = {True: "met", False: "not met", None: "not measured"}
    return markdown_table(["key", "value", "target", "met"],
                          [[r["key"], "n/a" if r["value"] is None else r["value"], r["target"], met[r["met"]]]
                           for r in rows], digits=3)


def _prov(result: dict) -> dict:
    p = dict(result["provenance"])
    cmd = "python -m dpcompanion bench" + {("linear",): " --linear-only", ("paper-scale",): " --paper-scale"}.get(
        tuple(result.get("sections") or ()), "")
    p.update({"command": cmd, "mode": result["mode"], "device": result["device"],
              "seed": result["settings"]["seed"], "wall_s": round(result["wall_s"], 2)})
    return p

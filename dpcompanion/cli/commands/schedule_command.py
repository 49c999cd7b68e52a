"""``schedule``: a budget-exact noise schedule a DP-SGD user can plug in.

The budget is one :class:`dpcompanion.theory.budget.Budget`: ``--R`` (Hong et al.'s R = 2
rho: sum_t 1/sigma_t^2 = R) or ``--epsilon`` with ``--delta`` under ``--accountant``. With
``--sampling-rate p < 1`` the schedule is for Poisson-subsampled steps, calibrated by the RDP
accountant the training ledger enforces. With only ``--R``, epsilons are reported at
``--delta`` (default 1e-5). The kinds and their flags come from
:data:`dpcompanion.theory.schedules.KIND_TABLE`; ``train`` takes the same flags.

``R_spent`` is in R's units (the steps' costs ``p^2/sigma_t^2``, what the ledger charges);
for subsampled steps ``R_prime_spent`` is ``sum_t 1/sigma_t^2`` (H Sec. 4.3's ``R' = R/p^2``).
``--csv FILE`` writes ``t, sigma, cost_t`` (``p^2/sigma_t^2``), ``rho_t`` (``1/(2 sigma_t^2)``,
the step's zCDP as a Gaussian step, an upper bound that ignores the subsampling) and ``spent``
(cumulative ``cost_t``). Noise multipliers are in units of the clip norm for the *sum* of
clipped per-sample gradients (Opacus ``noise_multiplier``), which equals the paper's
``sigma_t C / N`` on the average (the FAccT version, Eq. 1).
"""

from __future__ import annotations

import argparse
import csv
import sys
from pathlib import Path

from dpcompanion.cli import options
from dpcompanion.core import outputs, validate
from dpcompanion.theory import accounting as acc
from dpcompanion.theory import schedules

HELP = "write a budget-exact noise schedule (uniform, optimal, gd-dynamic, exp, step, momentum-dynamic, ...)"

DEFAULT_DELTA = 1e-5

EXAMPLES = [
    "python -m dpcompanion schedule --kind gd-dynamic --T 100 --epsilon 4 --delta 1e-8 --kappa 50 --json",
    "python -m dpcompanion schedule --kind momentum-dynamic --T 50 --R 0.3927 --kappa 100 --beta 0.9 --variant proof",
    "python -m dpcompanion schedule --kind uniform --T 300 --epsilon 1 --delta 1e-5 --sampling-rate 0.01 --csv s.csv",
]


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.formatter_class = argparse.RawDescriptionHelpFormatter
    p.epilog = options.kinds_epilog(EXAMPLES)
    p.add_argument("--kind", required=True, help="schedule kind (see the table below)")
    p.add_argument("--T", dest="T", help="number of noisy steps (>= 1; for optimal, defaults to the file's length)")
    options.add_budget_arguments(p)
    p.add_argument("--budget", dest="accountant", help=argparse.SUPPRESS)  # old spelling of --accountant
    options.add_schedule_arguments(p)
    out = p.add_mutually_exclusive_group()
    out.add_argument("--json", action="store_true", help="print one JSON object")
    out.add_argument("--csv", type=Path, metavar="FILE",
                     help="write t, sigma, cost_t (p^2/sigma_t^2, in R's units), rho_t (1/(2 sigma_t^2)) and spent "
                          "(cumulative cost_t) to FILE")


def build(args: argparse.Namespace) -> dict:
    """Validate every option and compute the schedule; nothing is written here."""
    if args.accountant is None:
        args.accountant = "auto"
    T = options.parse_int(args.T, "--T", maximum=validate.MAX_STEPS)
    budget = options.budget_from_args(args, default_delta=DEFAULT_DELTA)
    if args.csv is not None:
        options.output_path(args.csv, "--csv")
    sigma, params = options.schedule_from_args(args, budget, kind_flag="--kind", T=T)
    delta = budget.delta
    shown = {k: v for k, v in params.items() if k not in ("q", "T")}
    out = {
        "kind": args.kind,
        "T": int(sigma.size),
        "R": budget.R,
        "budget": budget.as_dict(),
        "budget_from": "R" if args.R is not None else f"epsilon via {budget.accountant}",
        "delta": delta,
        "sampling_rate": budget.sampling_rate,
        "params": shown,
        "R_spent": acc.spent_R(sigma=sigma) if not budget.subsampled else _psgd_spent(sigma, budget.sampling_rate),
        "sigma": [float(s) for s in sigma],
    }
    if budget.subsampled:
        out["R_prime_spent"] = acc.spent_R(sigma=sigma)
        out["epsilon_rdp"] = budget.epsilon_of(sigma)
    else:
        out["epsilon_zcdp"] = acc.epsilon_at_R(R=out["R_spent"], delta=delta, accountant="zcdp")
        out["epsilon_exact"] = acc.exact_epsilon(sigma=sigma, delta=delta)
    if budget.epsilon is not None:  # by the accountant the budget was planned with (<= --epsilon), and the others
        out["accountant"] = budget.accountant
        out["epsilon_by_accountant"] = budget.epsilon_by_accountant(sigma)
        out["epsilon"] = out["epsilon_by_accountant"][budget.accountant]
    return out


def _psgd_spent(sigma, p: float) -> float:
    """``sum_t p^2/sigma_t^2`` added step by step in float64, as the training ledger adds it."""
    spent = 0.0
    for s in sigma:
        spent += acc.step_cost(float(s), p)
    return spent


CSV_COLUMNS = ("t", "sigma", "cost_t", "rho_t", "spent")


def write_csv_atomic(path: Path, sigma: list[float], sampling_rate: float = 1.0) -> None:
    """Write :data:`CSV_COLUMNS` to ``path`` by :func:`dpcompanion.core.outputs.write_text`."""

    def rows(fh) -> None:
        w = csv.writer(fh)
        w.writerow(CSV_COLUMNS)
        spent = 0.0
        for t, s in enumerate(sigma, start=1):
            cost_t = acc.step_cost(s, sampling_rate)
            spent += cost_t
            w.writerow([t, repr(s), repr(cost_t), repr(0.5 / (s * s)), repr(spent)])

    outputs.write_text(path, rows, name="--csv", newline="")


def run(args: argparse.Namespace) -> int:
    out = build(args)
    # budget-exact is not the same as usable: a schedule whose noise spans many orders of
    # magnitude ruins clipped training (H-X-EER breakdown); say so on stderr
    for w in schedules.schedule_warnings(out["sigma"]):
        print(f"dpcompanion schedule: warning: {w}", file=sys.stderr)
    if args.csv is not None:
        write_csv_atomic(args.csv, out["sigma"], out["sampling_rate"])
        eps = ", ".join(f"{k} = {out[k]:.4g}" for k in ("epsilon_zcdp", "epsilon_exact", "epsilon_rdp") if k in out)
        print(f"wrote {out['T']} steps to {args.csv} (R = {out['R']:.6g}, {eps} at delta = {out['delta']:g})")
        return 0
    if args.json:
        print(outputs.json_text(out))
        return 0
    s = out["sigma"]
    print(f"kind {out['kind']}  T {out['T']}  R {out['R']:.6g} ({out['budget_from']})  delta {out['delta']:g}"
          f"  sampling rate {out['sampling_rate']:g}")
    if "epsilon_by_accountant" in out:
        others = "  ".join(f"{a} {e:.6g}" for a, e in out["epsilon_by_accountant"].items() if a != out["accountant"])
        print(f"epsilon {out['epsilon']:.6g} by the {out['accountant']} accountant (the budget's)"
              + (f"; {others}" if others else ""))
    elif "epsilon_rdp" in out:
        print(f"epsilon_rdp {out['epsilon_rdp']:.6g} (the ledger's accountant)")
    else:
        print(f"epsilon_zcdp {out['epsilon_zcdp']:.6g}  epsilon_exact {out['epsilon_exact']:.6g}")
    print(f"sigma_1 {s[0]:.6g}  sigma_T {s[-1]:.6g}  min {min(s):.6g}  max {max(s):.6g}")
    return 0

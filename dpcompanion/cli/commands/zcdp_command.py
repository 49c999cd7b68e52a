"""``zcdp``: convert between (epsilon, delta)-DP, rho-zCDP and the paper's budget R = 2 rho.

Besides the paper's zCDP budget (Hong et al. 2022, Lemma C.3 and Sec. 5) it prints the
budget the exact Gaussian-DP accountant allows for the same (epsilon, delta) (``R_exact``),
the moments-accountant expression ``R_MA = epsilon^2/ln(1/delta)`` of Sec. 4.1.3, and the
exact epsilon of a schedule that spends the zCDP budget.
"""

from __future__ import annotations

import argparse
import math

from dpcompanion.cli import options
from dpcompanion.core import outputs
from dpcompanion.core import validate as v
from dpcompanion.theory import accounting as acc
from dpcompanion.theory import budget

HELP = "convert (epsilon, delta)-DP <-> rho-zCDP <-> the paper's budget R = 2 rho (plus exact GDP)"

#: ranges in which every conversion printed is finite and accurate in float64 (those of
#: :class:`dpcompanion.theory.budget.Budget`): outside them the command refuses
RANGES = {"epsilon": budget.EPSILON_RANGE, "rho": budget.RHO_RANGE, "R": budget.R_RANGE}

EXAMPLES = """examples:
  python -m dpcompanion zcdp --epsilon 4 --delta 1e-8 --json
  python -m dpcompanion zcdp --rho 0.1963 --delta 1e-8
  python -m dpcompanion zcdp --R 0.3927 --delta 1e-8"""


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.formatter_class = argparse.RawDescriptionHelpFormatter
    p.epilog = EXAMPLES
    g = p.add_mutually_exclusive_group(required=True)
    lo, hi = RANGES["epsilon"]
    g.add_argument("--epsilon", help=f"target epsilon in [{lo:g}, {hi:g}]: find rho and R")
    lo, hi = RANGES["rho"]
    g.add_argument("--rho", help=f"zCDP parameter rho in [{lo:g}, {hi:g}]: find epsilon")
    lo, hi = RANGES["R"]
    g.add_argument("--R", dest="R", help=f"the paper's budget R = 2 rho in [{lo:g}, {hi:g}]: find epsilon")
    p.add_argument("--delta", required=True, help="delta in (0, 1)")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of a table")


def validate(args: argparse.Namespace) -> None:
    args.delta = options.flag("--delta", v.delta, options.parse_float(args.delta, "--delta"))
    for opt in ("epsilon", "rho", "R"):
        text = getattr(args, opt)
        if text is not None:
            lo, hi = RANGES[opt]
            setattr(args, opt, options.flag(f"--{opt}", v.number, opt, options.parse_float(text, f"--{opt}"),
                                            lo=lo, hi=hi, lo_open=False, hi_open=False))


def compute(args: argparse.Namespace) -> dict[str, float]:
    delta = args.delta
    if args.epsilon is not None:
        epsilon = args.epsilon
        rho = acc.dp_to_zcdp(epsilon=epsilon, delta=delta)
    else:
        rho = args.rho if args.rho is not None else acc.rho_from_R(R=args.R)
        epsilon = acc.zcdp_to_dp(rho=rho, delta=delta)
    R = acc.R_from_rho(rho=rho)
    return {
        "epsilon": epsilon,
        "delta": delta,
        "rho": rho,
        "R": R,
        "R_exact": acc.R_exact(epsilon=epsilon, delta=delta),
        "R_ma": acc.R_ma(epsilon=epsilon, delta=delta),
        "epsilon_exact_at_R": acc.gdp_epsilon(mu=math.sqrt(R), delta=delta),
    }


def run(args: argparse.Namespace) -> int:
    validate(args)
    out = compute(args)
    if args.json:
        print(outputs.json_text(out))
        return 0
    rows = [
        ("epsilon", out["epsilon"], "target (or implied by rho via H Lemma C.3)"),
        ("delta", out["delta"], ""),
        ("rho", out["rho"], "zCDP parameter"),
        ("R", out["R"], "paper's budget R = 2 rho: sum_t 1/sigma_t^2 <= R"),
        ("R_exact", out["R_exact"], "largest R with exact (GDP) epsilon <= target"),
        ("R_ma", out["R_ma"], "epsilon^2/ln(1/delta) (H Sec. 4.1.3, moments accountant order)"),
        ("epsilon_exact_at_R", out["epsilon_exact_at_R"], "exact epsilon actually spent by R"),
    ]
    for name, value, note in rows:
        print(f"{name:<20} {value:<14.6g} {note}")
    return 0

"""``schedule``: a budget-exact noise schedule a DP-SGD user can plug in.

Examples::

    python -m dpcompanion schedule --kind gd-dynamic --T 100 --epsilon 4 --delta 1e-8 --kappa 50 --json
    python -m dpcompanion schedule --kind uniform --T 100 --R 0.3927 --csv sigma.csv
    python -m dpcompanion schedule --kind optimal --R 1 --influence q.txt --json

The budget is ``--R`` (Hong et al.'s R = 2 rho: sum_t 1/sigma_t^2 = R) or ``--epsilon`` with
``--delta``, converted by the paper's zCDP rule (``--budget zcdp``, default) or by the exact
Gaussian-DP accountant (``--budget exact``, a larger R for the same guarantee). With only
``--R``, the reported epsilons use ``--delta`` (default 1e-5).

Output: ``--json`` prints one object (``kind, T, R, delta, sigma`` (T noise multipliers),
``epsilon_zcdp``, ``epsilon_exact``, the kind's parameters); ``--csv FILE`` writes columns
``t, sigma, rho_t`` (the step's cost 1/sigma_t^2 in R units) and ``spent`` (cumulative),
atomically. Without either, a short summary. Every input is validated before anything is
written. Noise multipliers are in units of the clip norm for the *sum* of clipped
per-sample gradients (Opacus ``noise_multiplier``), which equals the paper's
``sigma_t C / N`` on the average (file 001, Eq. 1).
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import math
import os
import tempfile
from pathlib import Path

HELP = "write a budget-exact noise schedule (uniform, optimal, gd-dynamic, exp, step, momentum-dynamic, ...)"

DEFAULT_DELTA = 1e-5

#: options each kind needs (beyond --T and the budget)
REQUIRED = {
    "optimal": ("influence",),
    "gd-dynamic": ("kappa",),
    "exp": ("rate",),
    "momentum-dynamic": ("kappa", "beta"),
    "expinfl": ("gamma",),
    "momexpinfl": ("gamma",),
}


def add_arguments(p: argparse.ArgumentParser) -> None:
    from dpcompanion.theory.schedules import KINDS

    p.add_argument("--kind", required=True, choices=KINDS, help="schedule kind")
    p.add_argument("--T", type=int, dest="T", help="number of noisy steps (>= 1; for optimal, defaults to the file's length)")
    g = p.add_mutually_exclusive_group(required=True)
    g.add_argument("--R", type=float, dest="R", help="budget R = 2 rho (> 0)")
    g.add_argument("--epsilon", type=float, help="target epsilon (> 0); needs --delta")
    p.add_argument("--delta", type=float, help=f"delta in (0, 1) (default {DEFAULT_DELTA:g} with --R)")
    p.add_argument("--budget", choices=("zcdp", "exact"), default="zcdp",
                   help="how --epsilon becomes R: the paper's zCDP conversion (default) or exact Gaussian DP")
    p.add_argument("--kappa", type=float, help="curvature guess kappa = M/mu >= 1 (gd-dynamic, momentum-dynamic)")
    p.add_argument("--beta", type=float, help="momentum in [0, 1) (momentum-dynamic)")
    p.add_argument("--eta0", type=float, default=1.0, help="momentum step factor eta0 (gamma = 1 - eta0/kappa; default 1)")
    p.add_argument("--variant", choices=("corrected", "proof", "statement", "slides"), default="corrected",
                   help="momentum-dynamic influence: Thm 4.7 proof (default), statement as printed, or slides")
    p.add_argument("--rate", type=float, help="exp: sigma_t = sigma_0 exp(-rate t)")
    p.add_argument("--drop", type=float, default=0.5, help="step: noise factor per period (> 0, default 0.5)")
    p.add_argument("--period", type=int, help="step: steps per plateau (default ceil(T/4))")
    p.add_argument("--gamma", type=float, help="expinfl/momexpinfl influence rate gamma")
    p.add_argument("--c1", type=float, default=1.0, help="momexpinfl weight of gamma^(T+t) (default 1)")
    p.add_argument("--c2", type=float, default=1.0, help="momexpinfl weight of gamma^(T-t) (default 1)")
    p.add_argument("--a", type=float, default=20.0, help="adp: alpha_t^2 = (a + c t)^power (default a = 20)")
    p.add_argument("--c", type=float, default=1.0, help="adp: c (default 1)")
    p.add_argument("--power", type=float, default=0.5, help="adp: power (default 1/2, W's b_t = sqrt(a + c t))")
    p.add_argument("--influence", type=Path, help="optimal: file of q_t > 0, one per line or a CSV column named q")
    out = p.add_mutually_exclusive_group()
    out.add_argument("--json", action="store_true", help="print one JSON object")
    out.add_argument("--csv", type=Path, metavar="FILE", help="write t, sigma, rho_t, spent to FILE")


def read_influence(path: Path) -> list[float]:
    """q_t from a file: one number per line, or a CSV whose column ``q`` (or ``influence``,
    or its only column) holds them. Blank lines and ``#`` comments are skipped."""
    from dpcompanion.cli import UsageError

    try:
        text = Path(path).read_text()
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"--influence {path}: cannot read it ({exc.__class__.__name__}); give a readable text file") from None
    rows = [r for r in csv.reader(io.StringIO(text)) if r and not r[0].lstrip().startswith("#") and any(c.strip() for c in r)]
    if not rows:
        raise UsageError(f"--influence {path}: no values found; give one q_t > 0 per line or a CSV column named q")
    col = 0
    header = [c.strip().lower() for c in rows[0]]
    try:
        float(header[0])
        has_header = False
    except ValueError:
        has_header = True
    if has_header:
        names = [h for h in ("q", "influence") if h in header]
        if names:
            col = header.index(names[0])
        elif len(header) != 1:
            raise UsageError(f"--influence {path}: CSV has columns {', '.join(header)}; name the influence column q")
        rows = rows[1:]
    elif len(rows[0]) != 1:
        raise UsageError(f"--influence {path}: {len(rows[0])} columns and no header; add a header naming the column q")
    values = []
    for i, r in enumerate(rows, start=2 if has_header else 1):
        try:
            v = float(r[col])
        except (ValueError, IndexError):
            raise UsageError(f"--influence {path}: row {i} has no number in the q column, got {r!r}") from None
        if not (math.isfinite(v) and v > 0):
            raise UsageError(f"--influence {path}: q_t must be finite and > 0, got {v:g} at row {i}")
        values.append(v)
    if not values:
        raise UsageError(f"--influence {path}: no values found; give one q_t > 0 per line")
    return values


def _params(args: argparse.Namespace, T: int, q) -> dict:
    k = args.kind
    if k == "optimal":
        return {"q": q}
    if k == "gd-dynamic":
        return {"T": T, "kappa": args.kappa}
    if k == "exp":
        return {"T": T, "rate": args.rate}
    if k == "step":
        return {"T": T, "drop": args.drop, "period": args.period}
    if k == "momentum-dynamic":
        return {"T": T, "kappa": args.kappa, "beta": args.beta, "eta0": args.eta0, "variant": args.variant}
    if k == "expinfl":
        return {"T": T, "gamma": args.gamma}
    if k == "momexpinfl":
        return {"T": T, "gamma": args.gamma, "c1": args.c1, "c2": args.c2}
    if k == "adp":
        return {"T": T, "a": args.a, "c": args.c, "power": args.power}
    return {"T": T}


def build(args: argparse.Namespace) -> dict:
    """Validate every option and compute the schedule; nothing is written here."""
    from dpcompanion.theory import accounting as acc
    from dpcompanion.theory import schedules
    from dpcompanion.cli import UsageError

    def need(opt: str):
        if getattr(args, opt) is None:
            raise UsageError(f"--{opt} is required for --kind {args.kind}")

    for opt in REQUIRED.get(args.kind, ()):
        need(opt)
    if args.epsilon is not None:
        if not (math.isfinite(args.epsilon) and args.epsilon > 0):
            raise UsageError(f"--epsilon must be a finite number > 0, got {args.epsilon:g}")
        if args.delta is None:
            raise UsageError("--delta is required with --epsilon (a number in (0, 1))")
    if args.R is not None and not (math.isfinite(args.R) and args.R > 0):
        raise UsageError(f"--R must be a finite number > 0, got {args.R:g}")
    delta = DEFAULT_DELTA if args.delta is None else args.delta
    if not (0.0 < delta < 1.0):
        raise UsageError(f"--delta must be in (0, 1), got {delta:g}")
    if args.T is not None and args.T < 1:
        raise UsageError(f"--T must be an integer >= 1, got {args.T}")
    if args.kappa is not None and not (math.isfinite(args.kappa) and args.kappa >= 1):
        raise UsageError(f"--kappa must be a finite number >= 1, got {args.kappa:g}")
    if args.beta is not None and not (0.0 <= args.beta < 1.0):
        raise UsageError(f"--beta must be in [0, 1), got {args.beta:g}")
    if args.period is not None and args.period < 1:
        raise UsageError(f"--period must be an integer >= 1, got {args.period}")

    q = None
    T = args.T
    if args.kind == "optimal":
        q = read_influence(args.influence)
        if T is not None and T != len(q):
            raise UsageError(f"--T {T} does not match the {len(q)} values in --influence {args.influence}")
        T = len(q)
    elif T is None:
        raise UsageError(f"--T is required for --kind {args.kind} (an integer >= 1)")

    if args.R is not None:
        R, source = args.R, "R"
    elif args.budget == "zcdp":
        R, source = acc.R_zcdp(epsilon=args.epsilon, delta=delta), "epsilon via zCDP (H Lemma C.3)"
    else:
        R, source = acc.R_exact(epsilon=args.epsilon, delta=delta), "epsilon via exact Gaussian DP"

    params = _params(args, T, q)
    try:
        sigma = schedules.make(args.kind, R=R, **params)
    except ValueError as exc:
        raise UsageError(f"--kind {args.kind}: {exc}") from None
    shown = {k: v for k, v in params.items() if k not in ("q", "T")}
    return {
        "kind": args.kind,
        "T": int(T),
        "R": R,
        "budget_from": source,
        "delta": delta,
        "params": shown,
        "R_spent": acc.spent_R(sigma=sigma),
        "epsilon_zcdp": acc.zcdp_to_dp(rho=acc.rho_from_R(R=R), delta=delta),
        "epsilon_exact": acc.exact_epsilon(sigma=sigma, delta=delta),
        "sigma": [float(s) for s in sigma],
    }


def write_csv_atomic(path: Path, sigma: list[float]) -> None:
    """Write t, sigma, rho_t, spent to ``path`` through a temporary file in the same folder."""
    from dpcompanion.cli import UsageError

    path = Path(path)
    folder = path.parent if str(path.parent) else Path(".")
    if not folder.is_dir():
        raise UsageError(f"--csv {path}: folder {folder} does not exist; give a path in an existing folder")
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "w", newline="") as fh:
            w = csv.writer(fh)
            w.writerow(["t", "sigma", "rho_t", "spent"])
            spent = 0.0
            for t, s in enumerate(sigma, start=1):
                rho_t = 1.0 / (s * s)
                spent += rho_t
                w.writerow([t, repr(s), repr(rho_t), repr(spent)])
        os.replace(tmp, path)
    except OSError as exc:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise UsageError(f"--csv {path}: cannot write it ({exc.strerror or exc})") from None


def run(args: argparse.Namespace) -> int:
    out = build(args)
    if args.csv is not None:
        write_csv_atomic(args.csv, out["sigma"])
        print(f"wrote {out['T']} steps to {args.csv} (R = {out['R']:.6g}, epsilon_zcdp = {out['epsilon_zcdp']:.4g}, "
              f"epsilon_exact = {out['epsilon_exact']:.4g} at delta = {out['delta']:g})")
        return 0
    if args.json:
        print(json.dumps(out))
        return 0
    s = out["sigma"]
    print(f"kind {out['kind']}  T {out['T']}  R {out['R']:.6g} ({out['budget_from']})  delta {out['delta']:g}")
    print(f"epsilon_zcdp {out['epsilon_zcdp']:.6g}  epsilon_exact {out['epsilon_exact']:.6g}")
    print(f"sigma_1 {s[0]:.6g}  sigma_T {s[-1]:.6g}  min {min(s):.6g}  max {max(s):.6g}")
    return 0

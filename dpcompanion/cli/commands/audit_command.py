"""``audit``: an empirical lower bound on a trainer's epsilon (white-box canary test).

Trains the trainer many times on two datasets that differ in one canary example, with an
adversary that sees every iterate, and reports lower bounds on the epsilon the trainer really
has (``epsilon_lower_gdp``: a Gaussian-DP fit, full batch only; ``epsilon_lower_threshold``:
a distribution-free threshold test), each at 97.5 %, so that ``flagged`` (the larger exceeds
``epsilon_claimed``) is wrong with probability at most 5 %. A pass never proves privacy, a
flag refutes the claim. ``--noise-multiplier-scale S`` audits a trainer that adds S times the
noise its ledger is told about; ``--canary-label L`` audits the clip-and-sum step with a
canary labelled L. Method, sizes and limits: :mod:`dpcompanion.training.privacy_audit` and the
book page ``audit``.
"""

from __future__ import annotations

import argparse

from dpcompanion.cli import UsageError
from dpcompanion.core import validate
from dpcompanion.core import outputs
from dpcompanion.core.provenance import resolve_device
from dpcompanion.theory import accounting
from dpcompanion.theory.budget import R_RANGE, check_epsilon

HELP = "empirical privacy audit: a 95% lower bound on a trainer's epsilon vs the epsilon it claims"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.formatter_class = argparse.RawDescriptionHelpFormatter
    p.epilog = (
        "examples:\n"
        "  python -m dpcompanion audit --trainer pgd --epsilon 2 --delta 1e-5 --json\n"
        "  python -m dpcompanion audit --trainer psgd --epsilon 2 --delta 1e-5 --noise-multiplier-scale 0.25 --json\n"
        "  python -m dpcompanion audit --trainer adp --epsilon 2 --delta 1e-5 --trials 4000 --seed 3\n"
        "  python -m dpcompanion audit --trainer pgd --epsilon 2 --delta 1e-5 --canary-label 2 --json"
    )
    p.add_argument("--trainer", required=True, help="pgd, momentum (debiased momentum), psgd (Poisson sampling) or adp (ADP-SGD)")
    p.add_argument("--epsilon", type=float, required=True, help="target epsilon, a finite number > 0")
    p.add_argument("--delta", type=float, required=True, help="target delta in (0, 1)")
    p.add_argument("--trials", type=int, default=None,
                   help="trainings in all, half with the canary (default: 40000 full batch, 200000 psgd; 200 to 200000)")
    p.add_argument("--noise-multiplier-scale", type=float, default=1.0, dest="noise_multiplier_scale",
                   help="S: the trainer adds S times the noise its ledger claims (default 1: as shipped; "
                        "in [0.01, 100])")
    p.add_argument("--sampling-rate", type=float, default=None, dest="sampling_rate",
                   help="Poisson sampling rate for psgd (default 0.7) and adp (default 1: full batch), in (0, 1]")
    p.add_argument("--canary-label", type=float, default=None, dest="canary_label", metavar="L",
                   help="pgd only: audit one clip-and-sum step of the binary linear fast path with a canary "
                        "labelled L (any finite number; 2 or -1 give s = 2L - 1 = +-3), below the trainers' label check")
    p.add_argument("--seed", type=int, default=0, help="seed of data and runs, in [0, 2^32) (default 0)")
    p.add_argument("--device", default="cpu", help="auto, cpu or cuda (default cpu)")
    p.add_argument("--json", action="store_true", help="print one JSON object")


#: parameter of :func:`dpcompanion.training.privacy_audit.validate_audit` -> its flag here
FLAGS = {"trainer": "--trainer", "epsilon": "--epsilon", "delta": "--delta", "trials": "--trials",
         "noise_multiplier_scale": "--noise-multiplier-scale", "seed": "--seed", "sampling_rate": "--sampling-rate",
         "device": "--device"}


def _usage(exc: ValueError, flags: dict[str, str]) -> UsageError:
    """``exc``'s message with its leading parameter name spelled as its flag."""
    msg = str(exc)
    name = msg.split(" ", 1)[0]
    return UsageError(flags[name] + msg[len(name):] if name in flags else msg)


def _validate(args: argparse.Namespace):
    """All checks before any training (:func:`dpcompanion.training.privacy_audit.validate_audit`),
    its messages spelled with this command's flags."""
    from dpcompanion.training import privacy_audit  # torch: kept out of the command line's start

    try:
        # the budget checks every command shares
        check_epsilon(args.epsilon)
        validate.delta(args.delta)  # not subnormal, before the audit's own (0, 1) check
        if args.sampling_rate is not None:
            validate.sampling_rate(args.sampling_rate)
        privacy_audit.validate_audit(trainer=args.trainer, epsilon=args.epsilon, delta=args.delta, trials=args.trials,
                                     noise_multiplier_scale=args.noise_multiplier_scale, seed=args.seed,
                                     sampling_rate=args.sampling_rate)
        resolve_device(args.device)
    except ValueError as exc:
        raise _usage(exc, FLAGS) from None
    # the audit's ledger is built from R = R_zcdp(epsilon, delta): an R outside what a ledger
    # accepts is refused here, naming --epsilon
    R = accounting.R_zcdp(epsilon=args.epsilon, delta=args.delta)
    lo, hi = R_RANGE
    if not lo <= R <= hi:
        side = "smaller" if R < lo else "larger"
        raise UsageError(f"--epsilon {args.epsilon:g} at --delta {args.delta:g} gives the budget R = {R:.3g}, {side} than "
                         f"the ledger accepts (R in [{lo:g}, {hi:g}]); use a {'larger' if R < lo else 'smaller'} --epsilon "
                         f"or --delta")
    return privacy_audit


def _run_label(privacy_audit, args: argparse.Namespace) -> int:
    """``--canary-label``: :func:`dpcompanion.training.privacy_audit.label_audit`."""
    if args.trainer != "pgd":
        raise UsageError(f"--canary-label needs --trainer pgd (it audits the full-batch clip-and-sum step), got "
                         f"{args.trainer!r}")
    if args.noise_multiplier_scale != 1.0 or args.sampling_rate is not None:
        raise UsageError("--canary-label takes neither --noise-multiplier-scale nor --sampling-rate")
    kw = {} if args.trials is None else {"trials": args.trials}
    try:
        out = privacy_audit.label_audit(label=args.canary_label, epsilon=args.epsilon, delta=args.delta, seed=args.seed, **kw)
    except ValueError as exc:
        raise _usage(exc, {"label": "--canary-label", **FLAGS}) from None
    if args.json:
        print(outputs.json_text({k: v for k, v in out.items() if k not in ("test", "gdp_fit")}))
        return 0
    print(f"label audit of the clip-and-sum step at ({out['epsilon']:g}, {out['delta']:g}): canary label "
          f"{out['label']:g} (s = {out['s']:g}), {out['trials']} trials, fast path: {out['fast_path']}")
    print(f"canary shift / C        {out['shift_ratio']:.3f} +- {out['shift_ratio_se']:.3f}  (1 when clipped to C)")
    print(f"epsilon_lower           {out['epsilon_lower']:.4f}")
    print(f"epsilon_exact           {out['epsilon_exact']:.4f}  ({out['exact_accountant']})")
    print(f"epsilon_claimed         {out['epsilon_claimed']:.4f}  ({out['claim_accountant']}): "
          f"{'FLAGGED: the claim is refuted' if out['flagged'] else 'passed (not refuted)'}")
    return 0


def run(args: argparse.Namespace) -> int:
    privacy_audit = _validate(args)
    if args.canary_label is not None:
        return _run_label(privacy_audit, args)
    res = privacy_audit.run_audit(trainer=args.trainer, epsilon=args.epsilon, delta=args.delta, trials=args.trials,
                                  noise_multiplier_scale=args.noise_multiplier_scale, seed=args.seed,
                                  sampling_rate=args.sampling_rate, device=args.device)
    out = res.to_dict()
    if args.json:
        print(outputs.json_text(out))
    else:
        t = out["test"]
        print(f"audit of {out['trainer']} at ({out['epsilon']:g}, {out['delta']:g}), noise scale S = "
              f"{out['noise_multiplier_scale']:g}: {out['setup']['note']}")
        print(f"{out['trials']} trials ({t['trials_with_canary']} with the canary); threshold chosen on "
              f"{t['n_select_out'] + t['n_select_in']}, bound from {t['n_out'] + t['n_in']}: "
              f"{t['false_positives']} false positives, {t['false_negatives']} false negatives")
        gdp, fit = out["epsilon_lower_gdp"], out["gdp_fit"]
        if fit is None:
            print("epsilon_lower_gdp       n/a (Poisson sampling: no Gaussian fit)")
        elif gdp is None:
            print("epsilon_lower_gdp       withheld: the scores reject its Gaussian model (min p-value "
                  f"{min(v for k, v in fit['model_check'].items() if k.startswith('p_')):.2g})")
        else:
            print(f"epsilon_lower_gdp       {gdp:.4f}  (Gaussian-DP fit, mu >= {fit['mu_lower']:.4f}; assumes Gaussian "
                  "noise, model checks passed)")
        print(f"epsilon_lower_threshold {out['epsilon_lower_threshold']:.4f}  (threshold test, Clopper-Pearson)")
        print(f"epsilon_exact           {out['epsilon_exact']:.4f}  ({out['exact_accountant']}); tightness "
              + ("n/a" if out["tightness"] is None else f"{out['tightness']:.3f}"))
        print(f"epsilon_claimed         {out['epsilon_claimed']:.4f}  ({out['claim_accountant']}): "
              f"{'FLAGGED: the claim is refuted' if out['flagged'] else 'passed (not refuted)'} "
              f"(each bound {100 * t['confidence']:g}% one-sided, together 95%)")
        c = out["noise_check"]
        print(f"noise check (1 = as the accountant assumes): noise sd / (C sigma) {c['noise_ratio']:.4f} +- "
              f"{c['noise_ratio_se']:.4f}, canary shift / p {c['shift_ratio']:.3f} +- {c['shift_ratio_se']:.3f}")
        print(f"wall time {out['wall_time']:.1f} s")
    return 0

"""``train``: one private training run (PGD / momentum / PSGD) with a noise schedule.

The budget is one :class:`dpcompanion.theory.budget.Budget` (``--R``, or ``--epsilon`` with
``--delta``, under ``--accountant``), held by the one
:class:`~dpcompanion.training.trainers.config.TrainConfig` whose ledger enforces it. The
schedule is planned for that budget (:func:`dpcompanion.theory.budget.plan`; ``--schedule``
takes the kinds and flags of ``schedule``), so every planned step is taken; a plan that
cannot fit, or a constant ``--sigma S`` whose T steps do not, is refused up front (exit 2).
``epsilon`` is that of the steps taken, by the accountant the budget was planned with (at
most the ``--epsilon`` asked for). A run whose loss becomes NaN or infinite exits 1, unless
``--allow-divergence``.

**Noise.** Without ``--seed`` the run is secure (noise seeded from ``os.urandom``, never
recorded); ``--seed N`` makes it reproducible, its noise a function of N (``--secure`` keeps
the noise secret while N draws the data and initial parameters); the JSON's
``privacy_note`` says which. Statistics computed on the raw training data (``loss``,
``train_accuracy``, ``wall_time``, ...) are under ``non_private``: outside the guarantee, as
is the preprocessing. Defaults follow the paper's setup (the ICLR submission, App. D): lr 0.1,
clip 4, data scale 10.
"""

from __future__ import annotations

import argparse
import math
import sys

import numpy as np

from dpcompanion import training
from dpcompanion.cli import UsageError, options
from dpcompanion.core import outputs
from dpcompanion.core import validate as v
from dpcompanion.core.provenance import resolve_device
from dpcompanion.theory import budget as budgets
from dpcompanion.theory import schedules
from dpcompanion.training import data

HELP = "train one private model (PGD, momentum, PSGD) under a noise schedule and a budget"

DATASETS = ("synthetic", "gaussian", "mnist35", "mnist", "digits", "fashion")
MODELS = ("linear", "logistic", "mlp")

EXAMPLES = [
    "python -m dpcompanion train --dataset mnist35 --model mlp --hidden 1000 --schedule uniform "
    "--epsilon 4 --delta 1e-8 --T 50 --json",
    "python -m dpcompanion train --dataset synthetic --model logistic --schedule gd-dynamic --kappa 20 --R 0.3927 --T 80",
    "python -m dpcompanion train --dataset synthetic --model logistic --schedule uniform --sampling-rate 0.01 "
    "--epsilon 1 --delta 1e-5 --T 300 --json",
]


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.formatter_class = argparse.RawDescriptionHelpFormatter
    p.epilog = options.kinds_epilog(EXAMPLES)
    p.add_argument("--dataset", default="mnist35", help=f"one of {', '.join(DATASETS)} (default mnist35)")
    p.add_argument("--model", default="logistic", help=f"one of {', '.join(MODELS)} (default logistic)")
    p.add_argument("--hidden", default="100", help="hidden units of the mlp (default 100)")
    p.add_argument("--n", default=None, help="training samples (default: the dataset's, 1000)")
    p.add_argument("--scale", default="10", help="data scale max_n ||x_n|| (default 10)")
    p.add_argument("--schedule", default="uniform", help="schedule kind (see the table below; default uniform)")
    options.add_schedule_arguments(p)
    options.add_budget_arguments(p)
    p.add_argument("--T", dest="T", help="number of steps (required unless --schedule optimal)")
    p.add_argument("--sigma", help="force a constant noise multiplier (finite, > 0; instead of --schedule)")
    p.add_argument("--clip", default="4", help="per-sample clipping norm C (default 4)")
    p.add_argument("--lr", default="0.1", help="step size (default 0.1)")
    p.add_argument("--momentum", default="0", help="debiased momentum beta in [0, 1) (default 0)")
    p.add_argument("--seed", default=None,
                   help="seed for the data subset and init (default 0); also for the noise unless --secure; giving it "
                        "makes the run reproducible (--no-secure becomes the default)")
    p.add_argument("--secure", action=argparse.BooleanOptionalAction, default=None,
                   help="draw the noise from generators seeded by os.urandom, never recorded, not reproducible "
                        "(default without --seed); --no-secure: draw it from --seed, reproducibly (default with "
                        "--seed): the guarantee then holds only while that seed stays secret")
    p.add_argument("--device", default="auto", help="auto, cpu or cuda (default auto)")
    p.add_argument("--allow-divergence", action="store_true", dest="allow_divergence",
                   help="exit 0 even if the loss became NaN or infinite (default: exit 1 saying so)")
    p.add_argument("--no-progress", action="store_true", dest="no_progress",
                   help="no progress bar (it is shown on stderr only when that is a terminal)")
    p.add_argument("--json", action="store_true", help="print one JSON object")


#: --scale (the data's largest norm) accepted: much below it float32 features underflow toward 0,
#: much above it squared norms overflow float32 (a linear model's squared gradient norm grows like scale^4)
SCALE_RANGE = (1e-6, 1e6)

#: --clip accepted: outside it the float32 noise sigma C underflows or overflows
CLIP_RANGE = (1e-6, 1e6)

#: input dimension per dataset (before loading), for the memory check
_DIMS = {"synthetic": 100, "gaussian": 60, "mnist35": 784, "mnist": 784, "digits": 64, "fashion": 784}


def validate(args: argparse.Namespace) -> dict:
    """Check every option before any work; returns the resolved settings."""
    if args.dataset not in DATASETS:
        raise UsageError(f"--dataset must be one of {', '.join(DATASETS)}, got {args.dataset!r}")
    if args.model not in MODELS:
        raise UsageError(f"--model must be one of {', '.join(MODELS)}, got {args.model!r}")
    T = options.parse_int(args.T, "--T", maximum=v.MAX_STEPS)
    lo, hi = CLIP_RANGE
    clip = options.flag("--clip", v.number, "clip", options.parse_float(args.clip, "--clip"), lo=lo, hi=hi,
                        lo_open=False, hi_open=False,
                        allowed=f"in [{lo:g}, {hi:g}] (a much smaller clip norm makes the float32 noise sigma C "
                                "underflow to 0, a much larger one overflows it)")
    lr = options.flag("--lr", v.positive, "lr", options.parse_float(args.lr, "--lr"), allow_zero=True)
    momentum = options.flag("--momentum", v.number, "momentum", options.parse_float(args.momentum, "--momentum"),
                            lo=0.0, hi=1.0, lo_open=False)
    hidden = options.parse_int(args.hidden, "--hidden", maximum=1_000_000)
    n = options.parse_int(args.n, "--n", minimum=2)
    lo, hi = SCALE_RANGE
    scale = options.flag("--scale", v.number, "scale", options.parse_float(args.scale, "--scale"), lo=lo, hi=hi,
                         lo_open=False, hi_open=False,
                         allowed=f"in [{lo:g}, {hi:g}] (the data's largest norm: much smaller scales underflow the "
                                 "float32 features toward 0, much larger ones overflow float32 squared norms)")
    pca = data.DEFAULT_PCA_DIM.get(args.dataset)
    if n is not None and pca is not None and n < pca:
        raise UsageError(f"--n must be at least {pca} for --dataset {args.dataset} (its {pca}-dimensional PCA is "
                         f"fitted on the n training images), got {n}")
    seed = options.parse_int("0" if args.seed is None else args.seed, "--seed", minimum=0, maximum=2**63 - 1)
    # a practitioner's run is secure unless a seed is asked for (a reproducible run)
    secure = (args.seed is None) if args.secure is None else bool(args.secure)
    sigma_const = None
    if args.sigma is not None:
        sigma_const = options.flag("--sigma", lambda x: float(v.noise_multipliers([x], name="sigma")[0]),
                                   options.parse_float(args.sigma, "--sigma"))
    budget = options.budget_from_args(args)
    if sigma_const is not None:
        # the trainer's own check (float32, this clip norm), before any planning or advice: a sigma
        # whose noise overflows is refused naming the flag
        import torch  # torch and the trainers: kept out of the command line's start

        from dpcompanion.training.trainers.config import check_sigma

        options.flag("--sigma", check_sigma, np.full((1, 1), sigma_const), clip_norm=clip,
                     denominator=budget.sampling_rate * (n or 1000), dtype=torch.float32)
    # sizes against memory, before anything is allocated
    dim = _DIMS[args.dataset]
    n_rows = 2 * (n or 1000)
    if T is not None:
        options.check_memory("--T", T, 8.0 * 12 * T)
    options.check_memory("--n", n, 8.0 * 4 * n_rows * dim)
    if args.model == "mlp":
        options.check_memory("--hidden", hidden, 4.0 * 8 * hidden * (dim + 10) + 4.0 * 4 * n_rows * hidden)
    device = resolve_device(args.device)
    if sigma_const is not None:
        for name in ("k_" + k for k in ("kappa", "beta", "rate", "variant", "period", "gamma", "drop", "eta0",
                                         "c1", "c2", "a", "c", "power")):
            if getattr(args, name, None) is not None:
                raise UsageError(f"--{name[2:]} is a schedule flag and does not apply with --sigma (a constant schedule)")
        if T is None:
            raise UsageError("--T is required (an integer >= 1)")
        options.flag("--sigma", budgets.fit_constant, budget, sigma=sigma_const, T=T)
        sigma = np.full(T, sigma_const)
    else:
        sigma, _ = options.schedule_from_args(args, budget, kind_flag="--schedule", T=T)
    return {"budget": budget, "device": device, "sigma": sigma, "clip": clip, "lr": lr, "momentum": momentum,
            "hidden": hidden, "n": n, "scale": scale, "seed": seed, "secure": secure}


def seeded_note(seed: int) -> str:
    """The JSON's ``privacy_note`` of a seeded run (a secure run's is the History's)."""
    return (f"the (epsilon, delta) guarantee holds only if the noise seed stays secret: this run's noise is a "
            f"function of --seed {seed}, printed here, so anyone holding it can replay the noise and undo the "
            "privacy; use --secure for noise seeded from the operating system's CSPRNG, never recorded")


def run(args: argparse.Namespace) -> int:
    import torch  # torch and the models: kept out of the command line's start

    from dpcompanion.training.models import make_model

    cfg = validate(args)
    budget = cfg["budget"]
    for w in schedules.schedule_warnings(cfg["sigma"]):  # H-X-EER breakdown
        print(f"dpcompanion train: warning: {w}", file=sys.stderr)
    kw = {} if cfg["n"] is None else {"n": cfg["n"]}
    try:
        ds = data.load(args.dataset, seed=cfg["seed"], scale=cfg["scale"], **kw)
    except ValueError as exc:  # the data set's size is known once it is read: name the flag
        msg = str(exc)
        raise UsageError(f"--{msg}" if msg.startswith("n must") else msg) from None
    model = make_model(args.model, in_dim=ds.dim, n_classes=ds.n_classes, hidden=cfg["hidden"])
    # one config holds the Budget: each run's ledger enforces its R, delta and the epsilon asked for
    config = training.TrainConfig.build(sigma=cfg["sigma"], budget=budget, clip_norm=cfg["clip"], lr=cfg["lr"],
                                        beta=cfg["momentum"], seed=cfg["seed"], secure=cfg["secure"], N=len(ds.y_train),
                                        device=cfg["device"], dtype=torch.float32,
                                        progress=False if args.no_progress else None)
    h = training.train(model, ds.X_train, ds.y_train, config, X_test=ds.X_test, y_test=ds.y_test)
    p = budget.sampling_rate
    out = {
        "dataset": args.dataset,
        "model": args.model,
        "algorithm": h.meta["algorithm"],
        "schedule": "constant" if args.sigma is not None else args.schedule,
        "T": int(len(cfg["sigma"])),
        "steps_done": int(h.steps_done),
        "stopped_early": bool(h.stopped_early),
        "R": float(budget.R),
        "budget": budget.as_dict(),
        "R_spent": float(h.R_spent),
        "test_accuracy": None if h.test_accuracy is None else float(h.test_accuracy),
        "epsilon": None,
        "accountant": budget.accountant,
        "epsilon_by_accountant": None,
        "sigma": [float(s) for s in h.sigma[: int(h.steps_done)]],
        "clip": cfg["clip"],
        "lr": cfg["lr"],
        "momentum": cfg["momentum"],
        "sampling_rate": p,
        "seed": cfg["seed"],
        "secure": bool(h.meta["secure"]),
        "noise_seed": None if h.meta["secure"] else cfg["seed"],
        "privacy_note": h.meta["privacy_note"] if h.meta["secure"] else seeded_note(cfg["seed"]),
        "n_train": int(len(ds.y_train)),
        "neighbouring": h.neighbouring,
        "rounding": {"note": h.meta["rounding"], "excess_bound": h.meta["rounding_excess_bound"]},
        "N_public": int(h.meta["N_public"]),
        "non_private": {
            "note": h.meta["outside_guarantee_note"],
            "final_loss": float(h.final_loss) if math.isfinite(h.final_loss) else None,
            "train_accuracy": float(h.train_accuracy),
            "loss": [float(v) if math.isfinite(v) else None for v in h.loss[: int(h.steps_done)]],
            "diverged": None,
            "wall_time": h.wall_time,
        },
        "device": h.meta["device"],
        "preprocessing": data.PREPROCESSING_NOTE,
    }
    if budget.delta is not None:  # the epsilon of the steps taken, by the accountant the budget was planned with
        done = np.asarray(h.sigma[: int(h.steps_done)], dtype=np.float64)
        by = budget.epsilon_by_accountant(done)
        out["epsilon_by_accountant"] = by
        out["epsilon"] = by[budget.accountant]
    losses = np.append(np.asarray(h.loss[: int(h.steps_done)], dtype=float), float(h.final_loss))
    out["non_private"]["diverged"] = diverged = bool(not np.all(np.isfinite(losses)))
    if args.json:
        print(outputs.json_text(out))
    else:
        print(f"{out['algorithm']} on {args.dataset} ({out['n_train']} samples), model {args.model}, device {out['device']}")
        print(f"steps {out['steps_done']}/{args.T}{' (stopped early: budget)' if out['stopped_early'] else ''}, "
              f"R spent {out['R_spent']:.6g} of {out['R']:.6g}")
        acc = "" if out["test_accuracy"] is None else f", test accuracy {out['test_accuracy']:.4f}"
        print(f"final training loss {h.final_loss:.6g}, train accuracy {out['non_private']['train_accuracy']:.4f} "
              f"(not private: computed on the raw training data){acc}")
        if out["epsilon"] is not None:
            others = ", ".join(f"{a} {e:.6g}" for a, e in out["epsilon_by_accountant"].items() if a != out["accountant"])
            print(f"epsilon {out['epsilon']:.6g} at delta {budget.delta:g} by the {out['accountant']} accountant "
                  f"(the budget's{'; ' + others if others else ''})")
        print(f"noise: {'secure' if out['secure'] else 'seeded'}: {out['privacy_note']}")
        print(f"neighbours: {out['neighbouring']} (N_public = {out['N_public']})")
        print(f"preprocessing: {out['preprocessing']}")
        print(f"wall time {h.wall_time:.2f} s (not private: a timing of the computation on the raw data)")
    if out["stopped_early"]:  # a planned run always finishes: stopping means something is wrong
        print(f"dpcompanion train: error: the ledger stopped the run after {out['steps_done']} of {out['T']} planned "
              "steps", file=sys.stderr)
        return 1
    if diverged and not args.allow_divergence:
        bad = int(np.argmax(~np.isfinite(losses))) + 1
        where = f"at step {bad}" if bad <= len(out["non_private"]["loss"]) else "in the final loss"
        print(f"dpcompanion train: error: the run diverged (loss not finite {where}); lower --lr or --clip, "
              "or pass --allow-divergence to accept it", file=sys.stderr)
        return 1
    return 0

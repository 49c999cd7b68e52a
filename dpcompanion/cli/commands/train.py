"""``train``: one private training run (PGD / momentum / PSGD) with a noise schedule.

Examples::

    python -m dpcompanion train --dataset mnist35 --model mlp --hidden 1000 \\
        --schedule uniform --epsilon 4 --delta 1e-8 --T 50 --json
    python -m dpcompanion train --dataset synthetic --model logistic --schedule gd-dynamic \\
        --schedule-param kappa=20 --R 0.3927 --T 80 --json
    python -m dpcompanion train --dataset digits --model logistic --sigma 0.5 --R 0.3927 --T 100 --json

The budget is ``--R`` (the paper's units, R = 2 rho) or ``--epsilon/--delta`` converted
with :func:`dpcompanion.theory.accounting.R_zcdp` (Hong et al. 2022, file 001, Lemma C.3).
``--sigma S`` forces a constant multiplier instead of a schedule: if T such steps would
overspend, training stops at the last affordable step (``stopped_early: true``).
Defaults follow the paper's setup (file 000 App. D): lr 0.1, clip 4, data scale 10.
"""

from __future__ import annotations

import argparse
import json
import math

HELP = "train one private model (PGD, momentum, PSGD) under a noise schedule and a budget"

DATASETS = ("synthetic", "gaussian", "mnist35", "mnist", "digits", "fashion")
MODELS = ("linear", "logistic", "mlp")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--dataset", default="mnist35", help=f"one of {', '.join(DATASETS)} (default mnist35)")
    p.add_argument("--model", default="logistic", help=f"one of {', '.join(MODELS)} (default logistic)")
    p.add_argument("--hidden", type=int, default=100, help="hidden units of the mlp (default 100)")
    p.add_argument("--n", type=int, default=None, help="training samples (default: the dataset's, 1000)")
    p.add_argument("--scale", type=float, default=10.0, help="data scale max_n ||x_n|| (default 10)")
    p.add_argument("--schedule", default="uniform", help="schedule kind (dpcompanion.theory.schedules.KINDS; default uniform)")
    p.add_argument("--schedule-param", action="append", default=[], metavar="KEY=VALUE",
                   help="extra schedule parameter, e.g. kappa=20 or rate=0.01 (repeatable)")
    p.add_argument("--epsilon", type=float, help="target epsilon (with --delta)")
    p.add_argument("--delta", type=float, help="target delta in (0, 1) (with --epsilon)")
    p.add_argument("--R", type=float, dest="R", help="budget in the paper's units R = 2 rho")
    p.add_argument("--T", type=int, dest="T", required=True, help="number of steps")
    p.add_argument("--sigma", type=float, help="force a constant noise multiplier (overrides --schedule)")
    p.add_argument("--clip", type=float, default=4.0, help="per-sample clipping norm C (default 4)")
    p.add_argument("--lr", type=float, default=0.1, help="step size (default 0.1)")
    p.add_argument("--momentum", type=float, default=0.0, help="debiased momentum beta in [0, 1) (default 0)")
    p.add_argument("--sampling-rate", type=float, default=1.0, dest="sampling_rate",
                   help="Poisson sampling rate p in (0, 1]; p < 1 trains PSGD (default 1: full batch)")
    p.add_argument("--seed", type=int, default=0, help="seed for data subset, init and noise (default 0)")
    p.add_argument("--device", default="auto", help="auto, cpu or cuda (default auto)")
    p.add_argument("--no-progress", action="store_true", dest="no_progress",
                   help="no progress bar (it is shown on stderr only when that is a terminal)")
    p.add_argument("--json", action="store_true", help="print one JSON object")


def _parse_params(items: list[str]) -> dict[str, float]:
    from dpcompanion.cli import UsageError

    out = {}
    for item in items:
        key, sep, val = item.partition("=")
        if not sep or not key:
            raise UsageError(f"--schedule-param must be KEY=VALUE, got {item!r}")
        try:
            out[key.strip()] = float(val)
        except ValueError:
            raise UsageError(f"--schedule-param {key} must be a number, got {val!r}") from None
    return out


def validate(args: argparse.Namespace) -> dict:
    """Check every option before any work; returns the resolved settings."""
    from dpcompanion.theory import accounting, schedules
    from dpcompanion.cli import UsageError
    from dpcompanion.core.provenance import resolve_device

    if args.dataset not in DATASETS:
        raise UsageError(f"--dataset must be one of {', '.join(DATASETS)}, got {args.dataset!r}")
    if args.model not in MODELS:
        raise UsageError(f"--model must be one of {', '.join(MODELS)}, got {args.model!r}")
    if args.T < 1:
        raise UsageError(f"--T must be >= 1, got {args.T}")
    if not (math.isfinite(args.clip) and args.clip > 0):
        raise UsageError(f"--clip must be a finite number > 0, got {args.clip:g}")
    if not (math.isfinite(args.lr) and args.lr >= 0):
        raise UsageError(f"--lr must be a finite number >= 0, got {args.lr:g}")
    if not 0.0 <= args.momentum < 1.0:
        raise UsageError(f"--momentum must be in [0, 1), got {args.momentum:g}")
    if not 0.0 < args.sampling_rate <= 1.0:
        raise UsageError(f"--sampling-rate must be in (0, 1], got {args.sampling_rate:g}")
    if args.hidden < 1:
        raise UsageError(f"--hidden must be >= 1, got {args.hidden}")
    if args.n is not None and args.n < 2:
        raise UsageError(f"--n must be >= 2, got {args.n}")
    if not (math.isfinite(args.scale) and args.scale > 0):
        raise UsageError(f"--scale must be a finite number > 0, got {args.scale:g}")
    if args.sigma is not None and not (args.sigma > 0):
        raise UsageError(f"--sigma must be > 0, got {args.sigma:g}")
    has_eps = args.epsilon is not None or args.delta is not None
    if has_eps and args.R is not None:
        raise UsageError("give either --R or --epsilon/--delta, not both")
    if args.R is not None:
        if not (math.isfinite(args.R) and args.R > 0):
            raise UsageError(f"--R must be a finite number > 0, got {args.R:g}")
        R = args.R
    elif args.epsilon is not None and args.delta is not None:
        R = accounting.R_zcdp(epsilon=args.epsilon, delta=args.delta)  # validates both
    else:
        raise UsageError("a budget is required: --R R or --epsilon E --delta D")
    device = resolve_device(args.device)
    p = args.sampling_rate
    if args.sigma is not None:
        import numpy as np

        sigma = np.full(args.T, float(args.sigma))
    else:
        params = _parse_params(args.schedule_param)
        sigma = schedules.make(args.schedule, T=args.T, R=R / (p * p), **params)
    return {"R": R, "device": device, "sigma": sigma}


def run(args: argparse.Namespace) -> int:
    import torch

    from dpcompanion.training import data
    from dpcompanion.training.models import make_model
    from dpcompanion.training.trainers import train_pgd, train_psgd

    cfg = validate(args)
    kw = {} if args.n is None else {"n": args.n}
    ds = data.load(args.dataset, seed=args.seed, scale=args.scale, **kw)
    model = make_model(args.model, in_dim=ds.dim, n_classes=ds.n_classes, hidden=args.hidden)
    common = dict(sigma=cfg["sigma"], R=cfg["R"], clip_norm=args.clip, lr=args.lr, momentum=args.momentum,
                  seed=args.seed, X_test=ds.X_test, y_test=ds.y_test, device=cfg["device"], dtype=torch.float32,
                  progress=False if args.no_progress else None)
    delta = args.delta
    if args.sampling_rate < 1.0:
        h = train_psgd(model, ds.X_train, ds.y_train, sampling_rate=args.sampling_rate, delta=delta, **common)
    else:
        h = train_pgd(model, ds.X_train, ds.y_train, delta=delta, **common)
    out = {
        "dataset": args.dataset,
        "model": args.model,
        "algorithm": h.meta["algorithm"],
        "schedule": "constant" if args.sigma is not None else args.schedule,
        "T": args.T,
        "steps_done": int(h.steps_done),
        "stopped_early": bool(h.stopped_early),
        "R": float(cfg["R"]),
        "R_spent": float(h.R_spent),
        "final_loss": float(h.final_loss),
        "train_accuracy": float(h.train_accuracy),
        "test_accuracy": None if h.test_accuracy is None else float(h.test_accuracy),
        "epsilon": None if h.epsilon is None else float(h.epsilon),
        "sigma": [float(s) for s in h.sigma[: int(h.steps_done)]],
        "loss": [float(v) for v in h.loss[: int(h.steps_done)]],
        "clip": args.clip,
        "lr": args.lr,
        "momentum": args.momentum,
        "sampling_rate": args.sampling_rate,
        "seed": args.seed,
        "n_train": int(len(ds.y_train)),
        "device": h.meta["device"],
        "wall_time": h.wall_time,
    }
    if args.json:
        print(json.dumps(out))
    else:
        print(f"{out['algorithm']} on {args.dataset} ({out['n_train']} samples), model {args.model}, device {out['device']}")
        print(f"steps {out['steps_done']}/{args.T}{' (stopped early: budget)' if out['stopped_early'] else ''}, "
              f"R spent {out['R_spent']:.6g} of {out['R']:.6g}")
        acc = "" if out["test_accuracy"] is None else f", test accuracy {out['test_accuracy']:.4f}"
        print(f"final training loss {out['final_loss']:.6g}, train accuracy {out['train_accuracy']:.4f}{acc}")
        print(f"wall time {out['wall_time']:.2f} s")
    return 0

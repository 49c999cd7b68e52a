"""The record a private training run returns: per-step arrays and end-of-run numbers."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

import numpy as np
import torch

__all__ = ["History"]

#: per-step fields, shape (K, T) batched or (T,) for one run; NaN after a run stopped.
STEP_FIELDS = ("loss", "grad_norm", "clip_fraction", "sigma", "lr", "budget_spent")
#: per-run fields, shape (K,) batched or scalars for one run.
RUN_FIELDS = ("steps_done", "stopped_early", "R_spent", "final_loss", "train_accuracy", "test_accuracy", "epsilon")


@dataclass
class History:
    """Per-step history of one run (arrays ``(T,)``, scalars) or of ``K`` batched runs
    (arrays ``(K, T)``, ``(K,)``).

    Per step ``t = 1..T`` (NaN for steps not taken; None for a field not in ``record=``): ``loss``
    at theta_t (PSGD: over the step's batch), ``grad_norm`` of the averaged clipped gradient before
    noise, ``clip_fraction`` (samples whose norm exceeded C), ``sigma``, ``lr`` and ``budget_spent``
    (cumulative, in R units).

    Per run: ``steps_done``, ``stopped_early`` (the ledger refused a step), ``R_spent``,
    ``final_loss`` (full training loss at the released iterate), ``train_accuracy``,
    ``test_accuracy`` (None without test data), ``epsilon`` (at the budget's delta, by the run's
    ledger, :meth:`dpcompanion.theory.budget.PrivacyLedger.spent_epsilon`; None without a budget or
    delta). ``R``: the budget (None: no ledger); ``theta``: the final parameters ``(K, P)`` / ``(P,)``;
    ``meta``: algorithm, device, seeds, wall time (s), ``neighbouring``, ``N_public`` and the like.

    The released ``theta`` and the public schedule (``sigma``, ``lr``, ``budget_spent``, ``R_spent``,
    ``epsilon``) are covered by the guarantee (:attr:`neighbouring`); the fields in
    :attr:`outside_guarantee` are computed on the raw training data, for analysis only.
    """

    loss: np.ndarray | None
    grad_norm: np.ndarray | None
    clip_fraction: np.ndarray | None
    sigma: np.ndarray | None
    lr: np.ndarray | None
    budget_spent: np.ndarray | None
    steps_done: Any
    stopped_early: Any
    R: float | None
    R_spent: Any
    final_loss: Any
    train_accuracy: Any
    test_accuracy: Any = None
    epsilon: Any = None
    theta: torch.Tensor | None = None
    meta: dict = field(default_factory=dict)

    @property
    def runs(self) -> int | None:
        """Number of batched runs, or None for a single-run history."""
        return None if np.ndim(self.steps_done) == 0 else len(self.steps_done)

    @property
    def neighbouring(self) -> str | None:
        """The neighbouring relation the run's guarantee is for (``TrainConfig``'s ``NEIGHBOURING``)."""
        return self.meta.get("neighbouring")

    @property
    def outside_guarantee(self) -> tuple[str, ...]:
        """The fields computed on the raw training data: not covered by the guarantee."""
        return tuple(self.meta.get("outside_guarantee", ()))

    @property
    def wall_time(self) -> float:
        return float(self.meta.get("wall_time", float("nan")))

    def run(self, k: int) -> "History":
        """The single-run history of run ``k`` of a batched history."""
        if self.runs is None:
            raise ValueError("run(k) needs a batched history; this one holds a single run")
        kw = {}
        for f in fields(self):
            v = getattr(self, f.name)
            if f.name in STEP_FIELDS:
                v = None if v is None else v[k]
            elif f.name in RUN_FIELDS:
                v = None if v is None else _scalar(v[k])
            elif f.name == "theta" and v is not None:
                v = v[k]
            elif f.name == "meta":
                v = dict(v)
                if "seeds" in v:
                    v["seed"] = v["seeds"][k]
            kw[f.name] = v
        return History(**kw)

    @classmethod
    def concat(cls, parts: list["History"]) -> "History":
        """One batched History from batched histories of consecutive chunks of runs."""
        kw = {}
        for f in fields(cls):
            vals = [getattr(h, f.name) for h in parts]
            if f.name in STEP_FIELDS or f.name in RUN_FIELDS:
                kw[f.name] = None if vals[0] is None else np.concatenate([np.asarray(v) for v in vals])
            elif f.name == "theta":
                kw[f.name] = None if vals[0] is None else torch.cat(vals)
            elif f.name == "meta":
                meta = dict(vals[0])
                for key in ("ledgers", "noise_generators"):
                    if key in meta:
                        meta[key] = sum(v.get(key, 0) for v in vals)
                kw[f.name] = meta
            else:
                kw[f.name] = vals[0]
        return cls(**kw)

    def to_dict(self) -> dict:
        """JSON-friendly dict (lists, floats; no parameters)."""
        out = {}
        for f in fields(self):
            if f.name == "theta":
                continue
            v = getattr(self, f.name)
            if isinstance(v, np.ndarray):
                v = np.where(np.isnan(v), None, v).tolist() if v.dtype.kind == "f" else v.tolist()
            elif isinstance(v, (np.generic,)):
                v = v.item()
            out[f.name] = v
        return out


def _scalar(v):
    return v.item() if isinstance(v, np.generic) else v

"""Results store (placeholder API, to be completed under issue 8).

The public API that notebooks and commands use:

* ``load_or_compute(experiment_id, *, mode, seed=0, device="cpu", executor=None,
  recompute=False) -> StoredResult``: the stored result when fresh, else computed (and
  saved);
* ``load(experiment_id, *, mode) -> StoredResult | None``: the stored result, fresh or not,
  without computing.

This first version computes in-process through :func:`dpcompanion.experiments.base.run_local`
and stores nothing; the store proper (results/<id>/<mode>/, provenance, code hash,
digest, Dask executor) replaces the bodies, not the signatures.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from dpcompanion.experiments import base

__all__ = ["StoredResult", "load_or_compute", "load"]


@dataclasses.dataclass(frozen=True)
class StoredResult:
    """A result and what is known about it."""

    id: str
    mode: str
    payload: dict[str, Any]
    provenance: dict[str, Any]
    fresh: bool
    cached: bool
    path: Path | None


def load_or_compute(experiment_id: str, *, mode: str, seed: int = 0, device: str = "cpu",
                    executor: Any = None, recompute: bool = False) -> StoredResult:
    exp = base.get(experiment_id)
    payload = base.run_local(exp, mode, seed=seed, device=device)
    return StoredResult(id=exp.id, mode=mode, payload=payload,
                        provenance={"mode": mode, "seed": seed, "device": device},
                        fresh=True, cached=False, path=None)


def load(experiment_id: str, *, mode: str) -> StoredResult | None:
    base.get(experiment_id)
    return None

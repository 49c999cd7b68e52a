"""Private trainers (torch): PGD (Hong et al. Algorithm 1), debiased momentum, PSGD with
Poisson sampling, ADP-SGD (Wu et al. Algorithm 1), each batched over independent runs.

One entry, ``train(model, X, y, config) -> History`` (:func:`.engine.train`), with the settings
validated once into a frozen :class:`.config.TrainConfig` (its docstring says what each does);
``train_pgd``, ``train_psgd`` and ``train_adpsgd`` build the config from keywords.

* ``sigma``: a schedule ``(T,)`` or ``(K, T)``; **no noiseless step**: every entry finite, > 0
  and above :func:`.config.sigma_floor`, refused before any step otherwise.
* ``seed``: an int -> one run, arrays ``(T,)``; a list of K ints -> K batched runs, arrays
  ``(K, T)``. An int with a ``(K, T)`` sigma: K schedules on common random numbers.
* ``budget`` (or ``R`` with ``delta``): each run's :class:`dpcompanion.theory.budget.PrivacyLedger`
  is charged *before* each noisy step; a run stops at the first unaffordable step
  (``stopped_early``). ``R=None``: no ledger (analysis runs that deliberately overspend).
* ``secure=False`` draws the noise from the seed (the guarantee holds while the seed is secret;
  ``meta["privacy_note"]`` says so); ``True`` seeds it from ``os.urandom`` (:class:`.engine.NoiseSource`).

A run's numbers do not depend on the batch it runs in (float32: up to rounding). For Opacus,
``model.to_module(theta[k])`` is the same network and ``BCEWithLogitsLoss`` our logistic loss.

Example (a tiny logistic regression, three steps at sigma = 2 under R = 1)::

    >>> import numpy as np, torch
    >>> from dpcompanion.training.models import make_model
    >>> X = torch.tensor([[1.0, 0.0], [0.0, 1.0]]); y = torch.tensor([1, 0])
    >>> h = train_pgd(make_model("logistic", in_dim=2), X, y, sigma=np.full(3, 2.0), R=1.0,
    ...               lr=1.0, device="cpu", dtype=torch.float64)
    >>> h.steps_done, h.stopped_early, h.loss.shape, h.R_spent
    (3, False, (3,), 0.75)
    >>> train_pgd(make_model("logistic", in_dim=2), X, y, sigma=[2.0, np.inf], R=None, device="cpu")
    Traceback (most recent call last):
    ...
    ValueError: sigma must be finite and > 0 at every step (no noiseless step), got inf at step 2
"""

from dpcompanion.training.trainers.adp_sgd import train_adpsgd
from dpcompanion.training.trainers.config import TrainConfig
from dpcompanion.training.trainers.engine import as_runs, train, train_pgd, train_psgd
from dpcompanion.training.trainers.history import History

__all__ = ["History", "TrainConfig", "as_runs", "train", "train_pgd", "train_psgd", "train_adpsgd"]

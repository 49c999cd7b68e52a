"""Private trainers (torch): PGD (Hong et al. Algorithm 1), debiased momentum, PSGD with
Poisson sampling, ADP-SGD (Wu et al. Algorithm 1), each batched over independent runs.

Public API (everything keyword-only after the data)
---------------------------------------------------

Models (:mod:`dpcompanion.training.models`)::

    model = make_model("mlp", in_dim=60, n_classes=2, hidden=1000)   # or "linear",
    # "logistic", "cnn-mnist", "cnn-cifar"; DenseModel(...) / FuncModel(...) directly
    model.n_params                     # P; parameters are a flat tensor theta (K, P)
    model.init(generators=[...])       # (K, P) initial parameters, one CPU generator per run
    model.unflatten(theta)             # dict of named (K, *shape) views
    model.loss(theta, X, y)            # (K,) empirical risk; per_sample_loss -> (K, N)
    model.accuracy(theta, X, y)        # (K,); model.evaluate(theta, X, y) -> (loss, accuracy)
    model.clipped_grad_sum(theta, X, y, clip_norm=C, weights=None) -> ClipResult
        # .grad_sum (K, P) = sum_n w_kn min(1, C/||g_kn||) g_kn; .norms (K, N); .losses (K, N)
    model.per_sample_grads(theta, X, y)  # (K, N, P), torch.func reference
    model.to_module(theta[k])          # nn.Module with run k's parameters (for Opacus)

Training (this package): one entry, one config::

    config = TrainConfig.build(sigma=..., budget=Budget.from_epsilon(...) or R=..., lr=0.1,
                               clip_norm=4.0, seed=0, beta=0.0, sampling_rate=None (the budget's),
                               N=None, lr_rule=None, device="auto", dtype=torch.float32,
                               progress=None, record=None, memory_budget=4 GiB, fast=None,
                               secure=False, eval_every=None, on_eval=None, segment_noise=False,
                               on_refusal="stop")
    h = train(model, X, y, config, X_test=None, y_test=None, init=None) -> History

and thin wrappers that build the config from keywords::

    h = train_pgd(model, X, y, *, sigma, R (or budget=), clip_norm=4.0, lr=0.1, momentum=0.0,
                  seed=0, X_test=None, y_test=None, init=None, device="auto",
                  dtype=torch.float32, delta=None, progress=None, record=None,
                  memory_budget=4 GiB, fast=None) -> History
    h = train_psgd(model, X, y, *, sigma, R (or budget=), sampling_rate, ...same...) -> History
    h = train_adpsgd(model, X, y, *, R (or budget=), T, sampling_rate=1.0,
                     step_size="polynomial"|"adaptive", adaptive_noise=True, eta=1.0, a=20.0,
                     c=1.0, b0_sq=20.0, C=1e-3, beta=1.0, period=195, clip_norm=1.0, seed=0,
                     ...) -> History

* ``sigma``: a schedule array (:mod:`dpcompanion.theory.schedules`), ``(T,)``, or ``(K, T)`` with
  one row per run. **No noiseless step**: every entry must be finite, > 0 and above
  :func:`.config.sigma_floor` (inf, NaN, 0, negatives and values whose noise would vanish in
  the dtype are refused before any step; the noise step asserts its scale).
* ``seed``: an int -> one run and a single-run History (arrays ``(T,)``); a list of K
  ints -> K batched runs (arrays ``(K, T)``). An int with a ``(K, T)`` sigma runs K
  schedules with the *same* seed (common random numbers: same init, same noise
  vectors, only the scale differs - the influence-by-retraining setup).
* ``budget``: one :class:`dpcompanion.theory.budget.Budget` (or ``R``, the budget in Hong's
  units R = 2 rho, with ``delta``: ``Budget.from_R``). Each run has its own
  :class:`dpcompanion.theory.ledger.PrivacyLedger` (``PrivacyLedger.from_budget``), charged
  *before* each noisy step; a run stops at the first unaffordable step (``stopped_early``).
  No budget (``R=None``): no ledger (analysis runs that deliberately overspend, e.g.
  sweeping one sigma_t); cost still recorded.
* ``secure``: ``False`` (default; the book's reproducible runs) draws the noise from the seed,
  so the guarantee holds only while the seed stays secret (the History's ``meta`` carries
  ``secure`` and a ``privacy_note`` saying so); ``True`` (as Opacus's ``secure_mode``) seeds
  the noise from ``os.urandom`` afresh for each call, never recorded, not reproducible by
  design (:class:`.engine.NoiseSource` says what the source is and what it claims). The seed
  still draws the initial parameters.
* ``eval_every``, ``on_eval``: the evaluation hook, ``on_eval(step, theta, runs)`` after every
  ``eval_every`` steps and the last; ``segment_noise`` reseeds the noise at each
  evaluation point; ``on_refusal="hold"`` keeps a refused run in the batch at step size 0
  (:class:`.config.TrainConfig` says what each does; Wu et al.'s protocol uses all three).
* ``init``: ``(P,)`` or ``(K, P)`` initial parameters (default drawn from each seed).
* ``device``: ``auto|cpu|cuda`` (:func:`dpcompanion.core.provenance.resolve_device`); same
  code on both. Same seed -> same numbers on CPU, whatever the batch it runs in.
* ``progress``: tqdm bar; ``None`` = only when stderr is a TTY, ``False`` = never.
* ``record``: per-step fields to keep (default all; e.g. ``("clip_fraction",)`` for sweeps
  that need only final losses: the loss history costs a pass over the data per step).
* ``memory_budget``: bytes for the runs' state (default 4 GiB); runs are trained in chunks
  below it, with the same numbers as one call.
* ``fast``: ``None`` (default) uses the margin fast path for binary linear/logistic
  models (:mod:`.oracles`), ``False`` the general path.

The settings are validated once into a frozen :class:`.config.TrainConfig`; the loop
(:func:`.engine.train`) trusts it and is four named stages: charge (ledger, before the step), sample
(Poisson), private step, record.

:class:`History` fields: per step ``loss, grad_norm, clip_fraction, sigma, lr,
budget_spent``; per run ``steps_done, stopped_early, R_spent, final_loss,
train_accuracy, test_accuracy, epsilon``; ``R``, ``theta`` (final parameters),
``meta`` (device, wall_time, seeds, ...); ``h.run(k)`` extracts one run, ``h.to_dict()``
is JSON-friendly.

Speed. Dense models (linear, logistic, MLP) use ghost clipping: per-sample gradient
norms from activations and backprops, then one weighted matmul per layer, runs processed
in chunks (``DenseModel.chunk_elements``) so that memory stays reused and cache-sized.
CNNs (``FuncModel``) use ``torch.func`` per-sample gradients, vmapped over runs, in
chunks of ``FuncModel.sample_chunk`` samples. PSGD computes gradients only on the rows
some run sampled. In float64 a batched run reproduces its one-run history to ~1e-12
relative (tests); in float32 the two agree to rounding (~1e-7), not bit for bit, since
BLAS blocks batched and single products differently.

For Opacus comparisons: ``model.to_module(theta[k])`` is the same network; our binary
logistic loss ``softplus(-s z)`` with ``s = 2y - 1`` is ``BCEWithLogitsLoss`` on ``y``,
and noise std ``C sigma / N`` on the mean gradient is Opacus's full-batch convention.

The private step is a fixed sequence of named pieces in :mod:`.steps`
(``clip_and_sum -> add_noise -> scale -> momentum_update -> sgd_update``);
the loop is :func:`.engine.train`.

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
from dpcompanion.training.trainers.engine import as_runs, train
from dpcompanion.training.trainers.history import History
from dpcompanion.training.trainers.pgd import train_pgd, train_psgd

__all__ = ["History", "TrainConfig", "as_runs", "train", "train_pgd", "train_psgd", "train_adpsgd"]

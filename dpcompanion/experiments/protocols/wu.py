"""The experimental protocol of Wu et al. (ADP-SGD, arXiv 2110.07435, Sec. 6 and App. F), shared by
the experiments ``w-f1``, ``w-t1245``, ``w-t36`` and ``w-f4``.

* **Noise.** For a privacy level ``epsilon_bar``, W Thm 4.1 (Eq. 6) gives DP-SGD's noise
  (:func:`dpcompanion.theory.adp_accounting.w_moments_epsilons`), as a multiplier on the clipped *sum*
  of a Poisson batch of expected size ``m``: ``z_dp = sigma m / C``.
* **One accountant, two methods.** DP-SGD (``alpha_t = 1``) takes ``T`` steps at ``z_dp``; its epsilon
  by the RDP accountant of Poisson-subsampled Gaussian steps (Mironov, Talwar & Zhang, arXiv
  1908.10530v1, Sec. 3.3; dp-accounting's integer-order computation in numpy, since a different
  multiplier at every step costs dp-accounting about 0.1 s per step) is the target. ADP-SGD
  (``alpha_t = 1/sqrt(eta_t)``, W Thm 4.2 / Remark 4.1) takes steps at ``z alpha_t`` with ``z``
  root-found to the same epsilon (:func:`calibrate`); W instead equalise Thm 4.1's bound, which for
  unequal ``alpha_t`` does not give the same actual epsilon.
* **Ledger and trainer.** A run's budget is an :class:`~dpcompanion.theory.budget.EpsilonTarget`,
  charged before each noisy step (a step above the target is refused and the run stops);
  :func:`train_segments` trains K Poisson runs in one :func:`dpcompanion.training.train` call,
  evaluating every ``eval_every`` steps (W: every 20).
* **Transfer.** W pre-train their CNN on CIFAR-100 and fine-tune it privately on CIFAR-10 (after
  Abadi et al. 2016, arXiv 1607.00133v2, Sec. 5.3, who freeze the convolutional layers):
  :func:`transfer_features` pre-trains the CNN without privacy on the *public* set and returns the
  frozen first-dense-layer features of the private one; the private model is the CNN's last layer
  (one layer more frozen than Abadi et al., for two shared CPU cores; stated on the pages).
"""

from __future__ import annotations

import functools
import math
import os
import tempfile
from typing import Sequence

import numpy as np
import torch

from dpcompanion.theory import adp_accounting, accounting
from dpcompanion.theory.bounds import adp as adp_bounds
from dpcompanion.theory.budget import EpsilonTarget
from dpcompanion.training import data
from dpcompanion.training.dense_models import DenseModel
from dpcompanion.training.models import make_model
from dpcompanion.training.trainers import TrainConfig, train
from dpcompanion.training.trainers.engine import eval_points, segment_seed

__all__ = [
    "ORDERS",
    "STEP_SIZE_FAMILIES",
    "step_sizes",
    "adp_alpha",
    "rdp_total",
    "rdp_steps",
    "epsilon",
    "epsilon_curve",
    "dp_noise_multiplier",
    "calibrate",
    "plan",
    "fashion_available",
    "single_thread",
    "steps_for",
    "orders_for",
    "head_model",
    "train_segments",
    "transfer_features",
]

#: integer RDP orders of the accountant (the optimum for the epsilons here, 0.05-10 at
#: delta = 1e-5, lies well inside; :func:`epsilon` refuses a result at the last order)
ORDERS = np.arange(2, 129, dtype=np.float64)

#: W Sec. 6 step-size families: ``sqrt`` (Tables 2, 5; Fig. 1): eta_t = 1/sqrt(20 + t);
#: ``linear-sqrt`` (Tables 1, 4): eta_t = 0.1 - a_T sqrt(t) with eta_T = 1e-10.
STEP_SIZE_FAMILIES = ("sqrt", "linear-sqrt")


def step_sizes(*, family: str, T: int, a: float = 20.0, c: float = 1.0) -> np.ndarray:
    """W's step sizes eta_1..eta_T (Sec. 6, Fig. 2): ``sqrt``: ``1/sqrt(a + c t)`` (Fig. 1, Tables 2, 5:
    a = 20, c = 1; App. F.3: a = 2, c in {0, ..., 0.5}); ``linear-sqrt``: ``0.1 - a_T sqrt(t)`` reaching
    1e-10 at t = T (Tables 1, 4).

    >>> step_sizes(family="sqrt", T=2)
    array([0.21821789, 0.21320072])
    """
    if family not in STEP_SIZE_FAMILIES:
        raise ValueError(f"family must be one of {', '.join(STEP_SIZE_FAMILIES)}, got {family!r}")
    if not (isinstance(T, (int, np.integer)) and T >= 1):
        raise ValueError(f"T must be an integer >= 1, got {T!r}")
    if family == "sqrt":
        if not (math.isfinite(a) and a > 0 and math.isfinite(c) and c >= 0):
            raise ValueError(f"a must be > 0 and c >= 0, got a={a}, c={c}")
        return 1.0 / np.sqrt(a + c * np.arange(1, T + 1, dtype=np.float64))
    return adp_bounds.stepsize_linear_sqrt(T=int(T))[1:]


def adp_alpha(*, eta) -> np.ndarray:
    """ADP-SGD's noise allocation ``alpha_t = 1/sqrt(eta_t)`` (W Thm 4.2 / Remark 4.1 with
    ``alpha_t^2 = b_t`` and ``eta_t = eta / b_{t+1}``, eta = 1; W Fig. 1).

    >>> adp_alpha(eta=[0.25, 1.0])
    array([2., 1.])
    """
    e = np.asarray(eta, dtype=np.float64)
    if e.ndim != 1 or not np.all(np.isfinite(e) & (e > 0)):
        raise ValueError("eta must be a 1-D sequence of finite step sizes > 0")
    return 1.0 / np.sqrt(e)


# ------------------------------------------------------------------------- accountant
# theory/'s accountant (dpcompanion.theory.accounting) bound to this protocol's orders;
# ``epsilon`` refuses an optimum at the last order, ``orders_for`` gives about twice DP-SGD's optimum

rdp_total = functools.partial(accounting.rdp_curve, orders=ORDERS)
rdp_steps = functools.partial(accounting.rdp_per_step, orders=ORDERS)
epsilon = functools.partial(accounting.rdp_epsilon, orders=ORDERS, check_order=True)
epsilon_curve = functools.partial(accounting.rdp_epsilon_curve, orders=ORDERS)
orders_for = accounting.rdp_orders_for
calibrate = functools.partial(accounting.calibrate_multiplier, orders=ORDERS)


def dp_noise_multiplier(*, epsilon_bar: float, T: int, N: int, batch_size: int, delta: float) -> float:
    """DP-SGD's noise multiplier on the clipped sum for W's ``epsilon_bar`` at ``T`` steps on ``N``
    samples: W Thm 4.1 (Eq. 6) with ``alpha_t = 1`` and ``epsilon = 16 epsilon_bar``."""
    row = adp_accounting.w_moments_epsilons(epsilon_bar=[epsilon_bar], T=int(T), batch_size=int(batch_size), N=int(N),
                                        delta=delta)[0]
    return float(row["noise_multiplier"])


def plan(*, epsilon_bar: float, T: int, N: int, batch_size: int, delta: float, family: str) -> dict:
    """DP-SGD and ADP-SGD schedules for one cell of W's grid, with the same final epsilon.

    Returns ``eta`` (T,), ``alpha`` (T,), ``sigma_dp`` (T,), ``sigma_adp`` (T,),
    ``z_dp``, ``z_adp``, ``epsilon`` (the common target), ``epsilon_adp`` (ADP-SGD's, by the
    same accountant), ``sampling_rate``."""
    q = batch_size / N
    eta = step_sizes(family=family, T=T)
    alpha = adp_alpha(eta=eta)
    z_dp = dp_noise_multiplier(epsilon_bar=epsilon_bar, T=T, N=N, batch_size=batch_size, delta=delta)
    orders = orders_for(sigma=z_dp, T=T, sampling_rate=q, delta=delta)
    eps = epsilon(rdp=T * rdp_total(sigma=[z_dp], sampling_rate=q, orders=orders), delta=delta, orders=orders)
    # z_dp / alpha_t brackets the root: all steps noisier (or quieter) than DP-SGD's
    z = calibrate(alpha=alpha, sampling_rate=q, delta=delta, epsilon_target=eps, orders=orders,
                  bracket=(z_dp / alpha.max(), z_dp / alpha.min()))
    sig_adp = z * alpha
    eps_adp = epsilon(rdp=rdp_total(sigma=sig_adp, sampling_rate=q, orders=orders), delta=delta, orders=orders)
    return {"eta": eta, "alpha": alpha, "sigma_dp": np.full(T, z_dp), "sigma_adp": sig_adp, "z_dp": z_dp,
            "z_adp": z, "epsilon": eps, "epsilon_adp": eps_adp, "sampling_rate": q, "orders": orders}


# ---------------------------------------------------------------------------- trainer


def train_segments(model, X, y, *, X_val, y_val, sigma, lr, seeds: Sequence[int], clip_norm: float,
                   sampling_rate: float, delta: float, epsilon_target, eval_every: int, device: str = "cpu",
                   lr_rule_factory=None, orders: np.ndarray = ORDERS):
    """K Poisson mini-batch private runs (rows of ``sigma`` and ``lr``, ``(K, T)``) in one
    :func:`~dpcompanion.training.trainers.train` call, the validation accuracy measured every
    ``eval_every`` steps and after the last.

    Run k's budget: an :class:`~dpcompanion.theory.budget.EpsilonTarget` (``epsilon_target``, one or one
    per run). A refused step stops the run but keeps its place in the batch (``on_refusal="hold"``: its
    masks and noise still drawn, at step size 0), so the other runs see the same batch. Segment ``j`` of
    run ``k`` draws from a seed of ``(seeds[k], j)`` (``segment_noise``); training starts from
    ``model.init`` of ``segment_seed(seeds[k], 0)``, while the accuracy at step 0 is that of ``model.init``
    of ``seeds[k]`` (the same point for a head started at 0, not for W-F4's MLP): as the committed
    results were made. ``lr_rule_factory(K) -> callable(t, g, lr_t) -> lr`` (optional): step sizes
    from the privatized gradient (W's adaptive rule).

    Returns a dict: ``steps`` (evaluation points, 0..T), ``val_accuracy`` (K, n_eval),
    ``epsilon`` (K,) spent, ``stopped`` (K,), ``steps_done`` (K,), ``theta``, ``lr_used``
    (K, T) (the step sizes actually applied, 0 after a run stopped).
    """
    sig = np.array(sigma, dtype=np.float64, ndmin=2)
    lr_a = np.array(lr, dtype=np.float64, ndmin=2)
    K, T = sig.shape
    if lr_a.shape != (K, T):
        lr_a = np.broadcast_to(lr_a, (K, T)).copy()
    seeds = [int(s) for s in seeds]
    if len(seeds) != K:
        raise ValueError(f"got {len(seeds)} seeds for {K} schedule rows")
    if not (isinstance(eval_every, (int, np.integer)) and eval_every >= 1):
        raise ValueError(f"eval_every must be an integer >= 1, got {eval_every!r}")
    targets = np.broadcast_to(np.asarray(epsilon_target, dtype=np.float64), (K,))
    budget = tuple(EpsilonTarget(epsilon=float(e), delta=delta, orders=orders) for e in targets)
    Xv = torch.as_tensor(np.asarray(X_val), dtype=torch.float32)
    yv = torch.as_tensor(np.asarray(y_val), dtype=torch.long)
    steps = [0] + eval_points(T, eval_every)
    column = {s: i for i, s in enumerate(steps)}
    acc = np.empty((K, len(steps)))

    def evaluate(step, theta, runs):  # the evaluation hook
        acc[runs.start:runs.stop, column[step]] = model.evaluate(theta, Xv, yv)[1].double().numpy()

    evaluate(0, model.init(generators=[torch.Generator().manual_seed(s) for s in seeds]), range(K))
    lr_rule = None
    if lr_rule_factory is not None:
        rule = lr_rule_factory(K)

        def lr_rule(t, g, lr_t):  # a step planned at size 0 stays 0
            return rule(t, g, lr_t) * (lr_t > 0).to(lr_t.dtype)

    config = TrainConfig.build(sigma=sig, lr=lr_a, clip_norm=clip_norm, seed=seeds, budget=budget, N=len(y),
                               sampling_rate=sampling_rate, lr_rule=lr_rule, device=device, progress=False,
                               final_eval=False, eval_every=int(eval_every), on_eval=evaluate, segment_noise=True,
                               on_refusal="hold", algorithm=None if lr_rule is None else "adp-sgd-adaptive")
    init = model.init(generators=[torch.Generator().manual_seed(segment_seed(s, 0)) for s in seeds],
                      dtype=config.dtype, device=config.device)
    h = train(model, X, y, config, init=init)
    return {"steps": np.array(steps), "val_accuracy": acc, "epsilon": np.asarray(h.epsilon, dtype=np.float64),
            "stopped": h.stopped_early, "steps_done": h.steps_done, "theta": h.theta, "lr_used": np.nan_to_num(h.lr)}


# --------------------------------------------------------------------------- transfer


def _images(name: str, *, n: int | None, seed: int, data_dir=None, split: str = "train"):
    """(X (n, C*H*W) in [0, 1], y, image_shape) of a private or public image dataset."""
    if name == "digits-28":  # scikit-learn's 8x8 digits upsampled to 28x28 (always available)
        d = data.load("digits", seed=seed, n=1500, scale=None)
        X = d.X_train if split == "train" else d.X_test
        y = d.y_train if split == "train" else d.y_test
        up = torch.nn.functional.interpolate(torch.as_tensor(X, dtype=torch.float32).reshape(-1, 1, 8, 8),
                                             size=(28, 28), mode="bilinear", align_corners=False)
        return up.reshape(len(X), -1).numpy().astype(np.float64), y, (1, 28, 28)
    d = data.load(name, seed=seed, n=n, scale=None, pca_dim=None, path=data_dir)
    if split == "train":
        return d.X_train, d.y_train, tuple(d.meta["image_shape"])
    return d.X_test, d.y_test, tuple(d.meta["image_shape"])


#: the public dataset the CNN is pre-trained on, per private dataset (W: CIFAR-100 for CIFAR-10)
PUBLIC_FOR = {"fashion": "mnist", "mnist": "digits-28", "cifar10": None}


#: the CNN's layers pre-trained on the public set and frozen: up to the first dense layer and its
#: tanh (MNIST CNN: 512 -> 32); the last dense layer (32 -> 10) is trained privately
FROZEN_LAYERS = 9


@functools.lru_cache(maxsize=8)
def _pretrained_body(public: str | None, private: str, n: int, epochs: int, seed: int):
    """The frozen body (first :data:`FROZEN_LAYERS` layers) of the CNN pre-trained without privacy on
    ``public`` (Adam, batch 128; cached on disk) and its accuracy on the public images."""
    arch = "cnn-cifar" if private == "cifar10" else "cnn-mnist"
    fm = make_model(arch, n_classes=10)
    theta0 = fm.init(generators=[torch.Generator().manual_seed(seed)])[0]
    net = fm.to_module(theta0)
    body = lambda: torch.nn.Sequential(*list(net.children())[:FROZEN_LAYERS]).eval()  # noqa: E731
    if public is None:  # no public set: random, untrained features (said on the page)
        return body(), float("nan")
    path = data.cache_dir() / "wu-pretrained" / f"{arch}-{public}-n{n}-e{epochs}-s{seed}.pt"
    if path.exists():
        saved = torch.load(path, weights_only=True)
        net.load_state_dict(saved["state"])
        return body(), float(saved["accuracy"])
    X, y, shape = _images(public, n=n, seed=seed, data_dir=None)
    Xt = torch.as_tensor(X, dtype=torch.float32).reshape(-1, *shape)
    yt = torch.as_tensor(y, dtype=torch.long)
    g = torch.Generator().manual_seed(seed + 1)
    opt = torch.optim.Adam(net.parameters(), lr=2e-3)
    for _ in range(epochs):
        perm = torch.randperm(len(Xt), generator=g)
        for i in range(0, len(Xt), 128):
            idx = perm[i : i + 128]
            opt.zero_grad()
            loss = torch.nn.functional.cross_entropy(net(Xt[idx]), yt[idx])
            loss.backward()
            opt.step()
    with torch.no_grad():
        acc = float((net(Xt).argmax(1) == yt).float().mean())
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
    os.close(fd)
    torch.save({"state": net.state_dict(), "accuracy": acc}, tmp)
    os.replace(tmp, path)
    return body(), acc


def transfer_features(*, dataset: str, n_train: int, n_val: int, seed: int, pretrain_n: int, pretrain_epochs: int,
                      data_dir=None) -> dict:
    """Frozen features of the private ``dataset`` from a CNN pre-trained on its public partner
    (:data:`PUBLIC_FOR`): ``X_train, y_train, X_val, y_val`` (float64), ``public``, ``pretrain_accuracy``,
    ``dim``, ``dataset`` (the one used), ``requested``; memoised (shared arrays: do not modify)."""
    return _transfer_features(dataset, int(n_train), int(n_val), int(seed), int(pretrain_n), int(pretrain_epochs),
                              None if data_dir is None else str(data_dir))


@functools.lru_cache(maxsize=4)
def _transfer_features(dataset, n_train, n_val, seed, pretrain_n, pretrain_epochs, data_dir) -> dict:
    if dataset not in PUBLIC_FOR:
        raise ValueError(f"dataset must be one of {', '.join(PUBLIC_FOR)}, got {dataset!r}")
    requested = dataset
    if dataset == "fashion" and not fashion_available():
        dataset = "mnist"  # the pages say so
    public = PUBLIC_FOR[dataset]
    body, acc = _pretrained_body(public, dataset, int(pretrain_n), int(pretrain_epochs), int(seed))
    Xtr, ytr, shape = _images(dataset, n=n_train, seed=seed, data_dir=data_dir, split="train")
    Xte, yte, _ = _images(dataset, n=n_train, seed=seed, data_dir=data_dir, split="test")
    rng = np.random.default_rng(seed)
    vidx = np.sort(rng.choice(len(yte), size=min(n_val, len(yte)), replace=False))
    with torch.no_grad():
        def feats(X):
            t = torch.as_tensor(X, dtype=torch.float32).reshape(-1, *shape)
            return torch.cat([body(t[i : i + 1024]) for i in range(0, len(t), 1024)]).double().numpy()

        Ftr, Fva = feats(Xtr), feats(Xte[vidx])
    return {"X_train": Ftr, "y_train": ytr, "X_val": Fva, "y_val": yte[vidx], "public": public or "none",
            "pretrain_accuracy": acc, "dim": int(Ftr.shape[1]), "dataset": dataset, "requested": requested}


def fashion_available() -> bool:
    """Whether Debian's Fashion-MNIST files can be loaded here."""
    try:
        data.load("fashion", n=10, scale=None, pca_dim=None)
    except ValueError:
        return False
    return True


class single_thread:
    """Run a block with one torch thread (restored after): on shared cores, two threads made the
    private step about 25x slower."""

    def __enter__(self):
        self._n = torch.get_num_threads()
        torch.set_num_threads(1)
        return self

    def __exit__(self, *exc):
        torch.set_num_threads(self._n)
        return False


def steps_for(*, epochs: int, N: int, batch_size: int) -> int:
    """Steps of ``epochs`` passes at expected batch ``batch_size``: ``ceil(epochs N / m)``
    (W: 196 iterations per epoch for N = 50 000, m = 256)."""
    return int(math.ceil(epochs * N / batch_size))


def head_model(*, dim: int, n_classes: int = 10):
    """The CNN's last dense layer (``dim`` = 32 -> 10, softmax cross-entropy, started at 0),
    trained privately on the frozen features (ghost clipping)."""
    return DenseModel(in_dim=dim, n_classes=n_classes, hidden=(), loss="logistic", name="cnn-last-layer")

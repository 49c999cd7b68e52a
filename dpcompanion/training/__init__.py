"""Private training: data, models, trainers, and what measures them.

Data sets (:mod:`.data`), models with per-sample gradients (:mod:`.models`), the trainers
(:mod:`.trainers`: PGD, momentum, PSGD, ADP-SGD; each charges the ledger before each noisy
step; one entry, ``train(model, X, y, config)`` with a
:class:`TrainConfig` holding one ``Budget``), influence estimates, the empirical privacy audit and the benchmark.

May import: ``core``, ``theory``.
Imports torch: yes (importing any module of the layer imports this package, hence the trainers).
"""

from dpcompanion.training.trainers import TrainConfig, train

__all__ = ["train", "TrainConfig"]

"""Private training: data, models, trainers, and what measures them.

Data sets (:mod:`.data`), models with per-sample gradients (:mod:`.models`), the trainers
(:mod:`.trainers`, one entry ``train(model, X, y, config)``), influence estimates, the empirical
privacy audit and the benchmark.

May import: ``core``, ``theory``.
Imports torch: yes (importing any module of the layer imports this package, hence the trainers).
"""

from dpcompanion.training.trainers import TrainConfig, train

__all__ = ["train", "TrainConfig"]

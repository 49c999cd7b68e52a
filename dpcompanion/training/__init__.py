"""Private training: data, models, trainers, and what measures them.

Data sets (:mod:`.data`), models with per-sample gradients (:mod:`.models`), the trainers
(:mod:`.trainers`: PGD, momentum, PSGD, ADP-SGD; each charges the ledger before each noisy
step; one entry, ``train(model, X, y, config)`` with a
:class:`TrainConfig` holding one ``Budget``), influence estimates, the empirical privacy audit and the benchmark.

May import: ``core``, ``theory``.
Imports torch: yes (``data`` alone imports without it).
"""

__all__ = ["train", "TrainConfig"]


def __getattr__(name: str):
    """``dpcompanion.training.train`` and ``TrainConfig``, imported on first use (they pull in
    torch; ``import dpcompanion.training.data`` stays torch-free)."""
    if name in __all__:
        from dpcompanion.training import trainers

        return getattr(trainers, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

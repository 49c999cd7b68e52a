"""training layer."""

__all__ = ["train", "TrainConfig"]


def __getattr__(name: str):
    """``dpcompanion.training.train`` and ``TrainConfig``, imported on first use (they pull in
    torch; ``import dpcompanion.training.data`` stays torch-free)."""
    if name in __all__:
        from dpcompanion.training import trainers

        return getattr(trainers, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

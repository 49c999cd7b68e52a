"""The models of the private trainers by name: :data:`MODELS` and :func:`make_model`.

The models are :class:`~dpcompanion.training.dense_models.DenseModel` (linear, logistic, MLP) and
:class:`~dpcompanion.training.conv_models.GhostConvModel` (the CNNs), on the contract of
:mod:`dpcompanion.training.model_base`.
"""

from __future__ import annotations

from typing import Sequence

from dpcompanion.training.conv_models import CIFARCNN, MNISTCNN, GhostConvModel
from dpcompanion.training.dense_models import DenseModel
from dpcompanion.training.model_base import Model

__all__ = ["MODELS", "make_model"]


MODELS = ("linear", "logistic", "mlp", "cnn-mnist", "cnn-cifar")


def make_model(
    name: str,
    *,
    in_dim: int | None = None,
    n_classes: int = 2,
    hidden: int | Sequence[int] = 100,
    activation: str = "relu",
    loss: str | None = None,
    bias: bool = True,
) -> Model:
    """Build a model by name: ``linear`` (squared loss), ``logistic``, ``mlp`` (one
    hidden layer of ``hidden`` units, logistic/cross-entropy loss unless ``loss``),
    ``cnn-mnist`` (28x28x1), ``cnn-cifar`` (32x32x3).

    >>> make_model("mlp", in_dim=60, n_classes=2, hidden=1000).n_params
    62001
    """
    if name not in MODELS:
        raise ValueError(f"model must be one of {', '.join(MODELS)}, got {name!r}")
    if name in ("linear", "logistic", "mlp"):
        if in_dim is None:
            raise ValueError(f"in_dim is required for model {name!r}")
        if name == "mlp":
            hid = (hidden,) if isinstance(hidden, int) else tuple(hidden)
            return DenseModel(in_dim=in_dim, n_classes=n_classes, hidden=hid, loss=loss or "logistic",
                              activation=activation, bias=bias)
        return DenseModel(in_dim=in_dim, n_classes=n_classes, loss=loss or ("squared" if name == "linear" else "logistic"),
                          bias=bias)
    if name == "cnn-mnist":
        return GhostConvModel(lambda: MNISTCNN(n_classes), in_shape=(1, 28, 28), n_classes=n_classes, name=name)
    return GhostConvModel(lambda: CIFARCNN(n_classes), in_shape=(3, 32, 32), n_classes=n_classes, name=name)

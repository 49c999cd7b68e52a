"""Uniform stability of PGD, Hong et al. 2022 (FAccT, arXiv 2101.07413) Section 4.4: Thm 4.12 (after
Bassily et al.), which with Thm 4.11 gives ``TER <= EER + s``."""

from __future__ import annotations

from dpcompanion.core import validate

__all__ = ["stability_printed", "stability_gd"]


def stability_printed(*, G: float, eta: float, T: float, N: float) -> float:
    """Uniform-stability constant of PGD as printed in the FAccT version's Thm 4.12: ``s = G^2 T eta / N``.

    >>> stability_printed(G=1, eta=0.1, T=5, N=10)
    0.05
    """
    return validate.positive("G", G) ** 2 * validate.positive("T", T, allow_zero=True) * validate.positive("eta", eta) / validate.positive("N", N)


def stability_gd(*, G: float, eta: float, T: float, N: float) -> float:
    """Uniform-stability constant of full-batch (noisy) GD on convex, smooth, G-Lipschitz losses with
    ``eta <= 2/M``: ``s = 2 G^2 eta T / N`` (Hardt, Recht & Singer 2016 Thm 3.8's argument: replacing one
    of N samples moves each gradient by at most 2G/N, GD steps are non-expansive); attained by a linear loss.

    >>> stability_gd(G=1, eta=0.1, T=5, N=10)
    0.1
    """
    return 2 * stability_printed(G=G, eta=eta, T=T, N=N)

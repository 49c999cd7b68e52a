"""True excess risk (TER) extensions, Hong et al. 2022 (FAccT, arXiv 2101.07413)
Section 4.4: Thm 4.10 (high probability, after Shalev-Shwartz et al. 2009 Sec. 5.4), Thm 4.11
(uniform stability implies generalisation), Thm 4.12 (uniform stability of PGD, after
Bassily et al.), and ``TER <= EER + G^2 eta T / N``.
"""

from __future__ import annotations

import math

from dpcompanion.core import validate

__all__ = ["ter_high_probability", "stability_printed", "stability_gd", "ter_stability"]


def ter_high_probability(*, G: float, mu: float, N: float, p: float, excess: float) -> float:
    """Right-hand side of the FAccT version's Eq. (15): with probability >= 1 - p over the data set,
    ``TER(theta) <= sqrt(2 G^2/(mu N)) sqrt(f(theta) - f(theta*)) + 4 G^2/(p mu N)``;
    ``excess`` is the empirical excess risk ``f(theta) - f(theta*)``.

    >>> round(ter_high_probability(G=1, mu=1, N=200, p=0.1, excess=0.0), 6)
    0.2
    """
    G, mu, N = validate.positive("G", G), validate.positive("mu", mu), validate.positive("N", N)
    if not 0 < p <= 1:
        raise ValueError(f"p must be in (0, 1], got {p!r}")
    excess = validate.positive("excess", excess, allow_zero=True)
    return math.sqrt(2 * G**2 / (mu * N)) * math.sqrt(excess) + 4 * G**2 / (p * mu * N)


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


def ter_stability(*, eer: float, G: float, eta: float, T: float, N: float, corrected: bool = True) -> float:
    """``TER <= EER + s`` (the FAccT version, Sec. 4.4, Thm 4.11 + 4.12) with ``s`` from :func:`stability_gd`
    (``corrected=True``) or as printed.

    >>> ter_stability(eer=0.0, G=1, eta=0.1, T=5, N=10, corrected=False)
    0.05
    """
    s = stability_gd(G=G, eta=eta, T=T, N=N) if corrected else stability_printed(G=G, eta=eta, T=T, N=N)
    return validate.positive("eer", eer, allow_zero=True) + s

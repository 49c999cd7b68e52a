"""ADP-SGD's utility factors: Wu et al., "Adaptive Differentially Private Empirical Risk Minimization",
Thm 4.2 and Remark 4.1, Prop. 5.1 (Eq. 9, 10; App. D.1-D.2, Eq. 25, 26), Prop. 5.2, and the step-size
families of Sec. 6 / Figure 2. Step size ``eta_t = eta / b_t``, noise ``alpha_t c_t``,
``c_t ~ N(0, sigma^2 I)`` with ``sigma^2 ∝ sum_t 1/alpha_t^2``; the privacy part of Thm 4.2's bound is
proportional to ``M({alpha}, {b}) = sum_t (alpha_t/b_t)^2 * sum_t 1/alpha_t^2``, minimised at
``alpha_t^2 = b_t`` with ``M_adp = (sum_t 1/b_t)^2`` (Remark 4.1); DP-SGD has ``M_dp = T sum_t 1/b_t^2``."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from dpcompanion.core import validate

__all__ = ["M", "M_dp", "M_adp", "M_ratio", "b_poly", "privacy_term", "prop51_bound", "prop52_bound",
           "stepsize_sqrt", "stepsize_linear_sqrt"]


def M(*, alpha: Any, b: Any) -> float:
    """``M({alpha},{b}) = sum_t (alpha_t/b_t)^2 sum_t 1/alpha_t^2`` (W Thm 4.2, Eq. 7).

    >>> M(alpha=[1.0, 1.0], b=[1.0, 2.0])
    2.5
    """
    a, bb = validate.positive_array("alpha", alpha), validate.positive_array("b", b)
    if a.shape != bb.shape:
        raise ValueError(f"alpha and b must have the same length, got {a.size} and {bb.size}")
    return float(np.sum((a / bb) ** 2) * np.sum(1.0 / a**2))


def M_dp(*, b: Any) -> float:
    """DP-SGD's value ``M_dp = T sum_t 1/b_t^2`` (W Remark 4.1, alpha_t = 1).

    >>> M_dp(b=[1.0, 2.0])
    2.5
    """
    bb = validate.positive_array("b", b)
    return float(bb.size * np.sum(1.0 / bb**2))


def M_adp(*, b: Any) -> float:
    """ADP-SGD's value ``M_adp = (sum_t 1/b_t)^2``, attained at ``alpha_t^2 = b_t`` (W Remark 4.1).

    >>> M_adp(b=[1.0, 2.0])
    2.25
    """
    bb = validate.positive_array("b", b)
    return float(np.sum(1.0 / bb)) ** 2


def M_ratio(*, b: Any) -> float:
    """``M_dp / M_adp = T sum 1/b_t^2 / (sum 1/b_t)^2 >= 1`` (W Remark 4.1, Cauchy-Schwarz).

    >>> round(M_ratio(b=[1.0, 2.0]), 6)
    1.111111
    """
    return M_dp(b=b) / M_adp(b=b)


def b_poly(*, a: float, c: float, T: int, start: int = 1) -> np.ndarray:
    """Polynomial step-size denominators ``b_t = (a + c t)^{1/2}``, t = start..start+T-1 (W Prop. 5.1).

    >>> b_poly(a=20.0, c=1.0, T=2)
    array([4.58257569, 4.69041576])
    """
    a, c = validate.positive("a", a), validate.positive("c", c)
    T = validate.integer("T", T)
    start = validate.integer("start", start, minimum=0)
    t = np.arange(start, start + T, dtype=np.float64)
    return np.sqrt(a + c * t)


def privacy_term(*, alpha: Any, b: Any) -> float:
    """The privacy part of W's bound (App. C.2, Eq. 23), without the common factor
    ``eta d L (16G)^2 B_delta / (2 n^2 eps^2)``: ``M({alpha},{b}) / sum_t 1/b_t``.

    >>> privacy_term(alpha=[1.0, 1.0], b=[1.0, 1.0])
    2.0
    """
    bb = validate.positive_array("b", b)
    return M(alpha=alpha, b=bb) / float(np.sum(1.0 / bb))


def prop51_bound(*, T: int, a: float, c: float, which: str, version: str = "main") -> float:
    """Privacy part of W Prop. 5.1's bounds, without ``eta d L (16G)^2 B_delta / (2 n^2 eps^2)``
    (so it is comparable with :func:`privacy_term` for ``b_t = (a + c t)^{1/2}``):

    * ``which="adp"``: main text Eq. (9) ``sqrt(T/c)``; appendix Eq. (25) ``2 sqrt(T/c)``;
    * ``which="dp"``: main text Eq. (10) ``2 sqrt(T/c) log(1 + T c/a)``; appendix Eq. (26)
      ``log(1 + T c/a) (sqrt(T-1) + 1)/sqrt(c)``.

    >>> prop51_bound(T=100, a=1.0, c=1.0, which="adp"), prop51_bound(T=100, a=1.0, c=1.0, which="adp", version="appendix")
    (10.0, 20.0)
    """
    T = validate.integer("T", T, minimum=2)
    a, c = validate.positive("a", a), validate.positive("c", c)
    if version not in ("main", "appendix"):
        raise ValueError(f"version must be 'main' or 'appendix', got {version!r}")
    if which == "adp":
        return (1.0 if version == "main" else 2.0) * math.sqrt(T / c)
    if which == "dp":
        L = math.log1p(T * c / a)
        return 2 * math.sqrt(T / c) * L if version == "main" else L * (math.sqrt(T - 1) + 1) / math.sqrt(c)
    raise ValueError(f"which must be 'adp' or 'dp', got {which!r}")


def prop52_bound(*, T: int, nu: float, b0_sq: float, G: float, which: str) -> float:
    """Privacy part of W Prop. 5.2's bounds without ``eta d L B_delta sqrt(T) / (n^2 eps^2 nu)``:
    ADP ``128 G^3``; DP ``32 G^3 log(1 + T nu / b_0^2)``.

    >>> prop52_bound(T=11700, nu=1e-5, b0_sq=20.0, G=1.0, which="adp")
    128.0
    """
    T = validate.integer("T", T)
    nu, b0_sq, G = validate.positive("nu", nu), validate.positive("b0_sq", b0_sq), validate.positive("G", G)
    if which == "adp":
        return 128.0 * G**3
    if which == "dp":
        return 32.0 * G**3 * math.log1p(T * nu / b0_sq)
    raise ValueError(f"which must be 'adp' or 'dp', got {which!r}")


def stepsize_sqrt(*, T: int, a: float = 20.0) -> np.ndarray:
    """W Sec. 6 family ii): ``eta_t = 1/sqrt(a + t)``, t = 0..T-1 (Figure 2 blue, a = 20).

    >>> stepsize_sqrt(T=1, a=20.0)
    array([0.2236068])
    """
    T = validate.integer("T", T)
    a = validate.positive("a", a)
    return 1.0 / np.sqrt(a + np.arange(T, dtype=np.float64))


def stepsize_linear_sqrt(*, T: int, eta_start: float = 0.1, eta_end: float = 1e-10) -> np.ndarray:
    """W Sec. 6 family i): ``eta_t = 0.1 - a_T sqrt(t)`` with ``a_T`` chosen so that
    ``eta_T = eta_end`` (1e-10 in the paper); t = 0..T (Figure 2 orange).

    >>> e = stepsize_linear_sqrt(T=100)
    >>> float(e[0]), bool(abs(e[-1] - 1e-10) < 1e-15)
    (0.1, True)
    """
    T = validate.integer("T", T)
    eta_start, eta_end = validate.positive("eta_start", eta_start), validate.positive("eta_end", eta_end)
    if eta_end >= eta_start:
        raise ValueError(f"eta_end must be < eta_start = {eta_start}, got {eta_end}")
    a_T = (eta_start - eta_end) / math.sqrt(T)
    return eta_start - a_T * np.sqrt(np.arange(T + 1, dtype=np.float64))

"""What a privacy audit can certify: lower bounds on epsilon from a membership test.

An ``(epsilon, delta)``-DP mechanism bounds every test of whether one example was in the data:
``FPR + e^epsilon FNR >= 1 - delta`` and ``FNR + e^epsilon FPR >= 1 - delta`` (Kairouz, Oh & Viswanath
arXiv 1311.0776v4 Thm 2.1; Dong, Roth & Su arXiv 1905.02383v3 Sec. 2). Clopper-Pearson upper bounds on
the two error rates give a distribution-free lower bound (:func:`epsilon_lower_bound`); a Gaussian-DP fit
of an equal-variance Gaussian statistic a tighter one (:func:`epsilon_lower_gdp`). The statistics of
:mod:`dpcompanion.training.privacy_audit`."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from scipy import optimize, stats

from dpcompanion.theory import accounting

__all__ = ["CONFIDENCE", "SELECTION_FRACTION", "MODEL_CHECK_LEVEL", "clopper_pearson_upper",
           "epsilon_from_rates", "epsilon_lower_bound", "log_likelihood_ratio", "gdp_mu_lower_bound",
           "epsilon_lower_gdp", "gdp_model_check", "exact_epsilon_of"]

#: confidence of the audit's verdict: each of its two lower bounds is one-sided at (1 + CONFIDENCE) / 2
#: (dpcompanion.training.privacy_audit.BOUND_CONFIDENCE), so both hold together (union bound)
CONFIDENCE = 0.95

#: share of each world's trials used to choose the threshold (the rest give the bound)
SELECTION_FRACTION = 0.25


def clopper_pearson_upper(*, k, n: int, alpha: float):
    """One-sided ``1 - alpha`` Clopper-Pearson upper bound on a binomial rate from ``k`` successes in ``n``
    trials: the ``1 - alpha`` quantile of ``Beta(k + 1, n - k)`` (1 when ``k = n``; Clopper & Pearson 1934,
    Biometrika 26(4)); vectorised over ``k``.

    >>> round(float(clopper_pearson_upper(k=0, n=100, alpha=0.05)), 5)   # 1 - 0.05^(1/100)
    0.02951
    >>> float(clopper_pearson_upper(k=10, n=10, alpha=0.05))
    1.0
    """
    n = int(n)
    if n < 1:
        raise ValueError(f"n must be an integer >= 1, got {n}")
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    k = np.asarray(k)
    if np.any(k < 0) or np.any(k > n):
        raise ValueError(f"k must be in [0, n = {n}]")
    full = k >= n
    out = stats.beta.ppf(1.0 - alpha, k + 1, np.where(full, 1, n - k))
    return np.where(full, 1.0, out)


def epsilon_from_rates(*, fpr, fnr, delta: float):
    """The epsilon a test with rates ``fpr``, ``fnr`` certifies at ``delta``: the largest of
    ``log((1 - delta - fnr) / fpr)``, ``log((1 - delta - fpr) / fnr)`` and 0 (Kairouz et al. Thm 2.1). Vectorised.

    >>> round(float(epsilon_from_rates(fpr=0.01, fnr=0.5, delta=0.0)), 4)   # log(50)
    3.912
    >>> float(epsilon_from_rates(fpr=0.5, fnr=0.5, delta=1e-5))
    0.0
    """
    fpr, fnr = np.asarray(fpr, dtype=float), np.asarray(fnr, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        a = np.log(np.clip(1.0 - delta - fnr, 0.0, None)) - np.log(fpr)
        b = np.log(np.clip(1.0 - delta - fpr, 0.0, None)) - np.log(fnr)
    e = np.fmax(np.nan_to_num(a, nan=-np.inf), np.nan_to_num(b, nan=-np.inf))
    return np.maximum(e, 0.0)


def _bound_at(scores_out: np.ndarray, scores_in: np.ndarray, thresholds: np.ndarray, *, delta: float, alpha: float):
    """Per threshold tau ('canary in' when score > tau): false positives, false negatives, their
    Clopper-Pearson upper bounds at alpha/2 each, and the epsilon bound."""
    o, i = np.sort(scores_out), np.sort(scores_in)
    fp = o.size - np.searchsorted(o, thresholds, side="right")
    fn = np.searchsorted(i, thresholds, side="right")
    fpr_hi = clopper_pearson_upper(k=fp, n=o.size, alpha=alpha / 2)
    fnr_hi = clopper_pearson_upper(k=fn, n=i.size, alpha=alpha / 2)
    return fp, fn, fpr_hi, fnr_hi, epsilon_from_rates(fpr=fpr_hi, fnr=fnr_hi, delta=delta)


def epsilon_lower_bound(
    *,
    scores_out,
    scores_in,
    delta: float,
    confidence: float = CONFIDENCE,
    selection_fraction: float = SELECTION_FRACTION,
) -> dict[str, Any]:
    """One-sided ``confidence`` lower bound on epsilon at ``delta`` from a threshold test on the scores of
    trials without (``scores_out``) and with (``scores_in``) the canary. The first ``selection_fraction``
    of each chooses the threshold; the rest, independent of the choice, gives the bound, each rate bounded
    at ``(1 - confidence) / 2`` (union bound). Both inequalities are used, so no direction is chosen.

    >>> rng = np.random.default_rng(0)
    >>> r = epsilon_lower_bound(scores_out=rng.normal(size=4000), scores_in=rng.normal(3.0, 1, 4000), delta=1e-5)
    >>> 1.0 < r["epsilon_lower"] < 8.0, r["n_out"], r["n_in"]
    (True, 3000, 3000)
    """
    so, si = np.asarray(scores_out, dtype=float).ravel(), np.asarray(scores_in, dtype=float).ravel()
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    if not 0.0 < selection_fraction < 1.0:
        raise ValueError(f"selection_fraction must be in (0, 1), got {selection_fraction}")
    if not (np.all(np.isfinite(so)) and np.all(np.isfinite(si))):
        raise ValueError("scores must be finite")
    h0, h1 = int(so.size * selection_fraction), int(si.size * selection_fraction)
    if min(h0, h1) < 1 or min(so.size - h0, si.size - h1) < 1:
        raise ValueError(f"too few scores to split ({so.size} without, {si.size} with the canary)")
    alpha = 1.0 - confidence
    sel_o, sel_i, ev_o, ev_i = so[:h0], si[:h1], so[h0:], si[h1:]
    u = np.unique(np.concatenate([sel_o, sel_i]))
    cand = np.concatenate([[-np.inf], (u[:-1] + u[1:]) / 2, [np.inf]])  # midpoints between observed scores
    e_sel = _bound_at(sel_o, sel_i, cand, delta=delta, alpha=alpha)[4]
    tau = float(cand[int(np.argmax(e_sel))])
    fp, fn, fpr_hi, fnr_hi, eps = _bound_at(ev_o, ev_i, np.array([tau]), delta=delta, alpha=alpha)
    return {
        "epsilon_lower": float(eps[0]),
        "threshold": tau,
        "false_positives": int(fp[0]),
        "false_negatives": int(fn[0]),
        "fpr_upper": float(fpr_hi[0]),
        "fnr_upper": float(fnr_hi[0]),
        "n_out": int(ev_o.size),
        "n_in": int(ev_i.size),
        "n_select_out": h0,
        "n_select_in": h1,
        "confidence": float(confidence),
    }


def log_likelihood_ratio(*, s, sigma, sampling_rate: float = 1.0) -> np.ndarray:
    """Per run, the log likelihood ratio 'in' vs 'out' of projected updates ``s`` (``(K, T)``, clip-norm units)
    with multipliers ``sigma`` (``(T,)`` or ``(K, T)``), ``s_t ~ N(b_t, sigma_t^2)``, ``b_t = 0`` (out) or
    ``~ Bernoulli(p)`` (in): ``sum_t (s_t - 1/2) / sigma_t^2`` at full batch, else
    ``sum_t log(1 - p + p exp((s_t - 1/2) / sigma_t^2))``.

    >>> float(log_likelihood_ratio(s=np.array([[1.0, 0.0]]), sigma=np.array([1.0, 2.0]))[0])
    0.375
    """
    s = np.asarray(s, dtype=float)
    sig = np.broadcast_to(np.asarray(sigma, dtype=float), s.shape)
    x = (s - 0.5) / sig**2
    p = float(sampling_rate)
    if p == 1.0:
        return x.sum(-1)
    return np.logaddexp(math.log1p(-p), math.log(p) + x).sum(-1)


def gdp_mu_lower_bound(*, scores_out, scores_in, confidence: float = CONFIDENCE) -> dict[str, Any]:
    """One-sided ``confidence`` lower bound on the Gaussian-DP ``mu`` of a statistic ``N(m_0, s^2)`` without
    and ``N(m_0 + mu s, s^2)`` with the canary (the full-batch audit's model: the noise only shifts the
    mean; Nasr et al. 2023, arXiv 2302.07956).

    ``mu_hat = (mean_in - mean_out) / s_pooled``; ``t = mu_hat / k``, ``k = sqrt(1/n_out + 1/n_in)``, is
    noncentral t with ``n_out + n_in - 2`` degrees of freedom and noncentrality ``mu / k``, so ``mu_lower``
    solves ``P[T >= t_obs; mu_lower / k] = 1 - confidence`` (the normal approximation
    ``mu_hat - z sqrt(k^2 + mu_hat^2 / (2 df))`` where scipy cannot evaluate it). A suboptimal statistic
    only lowers ``mu``, so the bound stays sound; a wrong model does not (``sd_out``, ``sd_in`` reported).

    >>> rng = np.random.default_rng(0)
    >>> r = gdp_mu_lower_bound(scores_out=rng.normal(0, 2, 20000), scores_in=rng.normal(0.8, 2, 20000))
    >>> 0.37 < r["mu_hat"] < 0.43, 0.34 < r["mu_lower"] < r["mu_hat"], r["df"]   # true mu = 0.8 / 2
    (True, True, 39998)
    """
    so, si = np.asarray(scores_out, dtype=float).ravel(), np.asarray(scores_in, dtype=float).ravel()
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    if min(so.size, si.size) < 2:
        raise ValueError(f"too few scores for a Gaussian fit ({so.size} without, {si.size} with the canary; >= 2 each)")
    if not (np.all(np.isfinite(so)) and np.all(np.isfinite(si))):
        raise ValueError("scores must be finite")
    n0, n1 = so.size, si.size
    df = n0 + n1 - 2
    v0, v1 = float(so.var(ddof=1)), float(si.var(ddof=1))
    sd = math.sqrt(((n0 - 1) * v0 + (n1 - 1) * v1) / df)
    if sd == 0.0:
        raise ValueError("scores have zero variance: no noise to fit")
    mu_hat = (float(si.mean()) - float(so.mean())) / sd
    k = math.sqrt(1.0 / n0 + 1.0 / n1)
    alpha = 1.0 - confidence
    t_obs = mu_hat / k
    se = math.sqrt(k * k + mu_hat * mu_hat / (2.0 * df))
    approx = mu_hat - float(stats.norm.isf(alpha)) * se
    method = "noncentral t"
    try:
        def f(mu: float) -> float:
            return float(stats.nct.sf(t_obs, df, mu / k)) - alpha

        lo, hi = approx - 10.0 * se - 1.0, mu_hat + 10.0 * se + 1.0
        if not (f(lo) < 0.0 < f(hi)):
            raise ValueError("no bracket")
        mu_lower = float(optimize.brentq(f, lo, hi, xtol=1e-10, rtol=1e-12))
    except (ValueError, FloatingPointError, RuntimeError):
        mu_lower, method = approx, "normal approximation"
    return {
        "mu_hat": mu_hat,
        "mu_lower": mu_lower,
        "confidence": float(confidence),
        "method": method,
        "mean_out": float(so.mean()),
        "mean_in": float(si.mean()),
        "sd_out": math.sqrt(v0),
        "sd_in": math.sqrt(v1),
        "n_out": n0,
        "n_in": n1,
        "df": df,
    }


def epsilon_lower_gdp(*, scores_out, scores_in, delta: float, confidence: float = CONFIDENCE) -> dict[str, Any]:
    """Lower bound on epsilon at ``delta``: the exact epsilon of ``mu_lower``-GDP (Dong, Roth & Su Cor. 2.13),
    0 when ``mu_lower <= 0``. Valid with probability ``confidence`` only for an equal-variance Gaussian
    statistic (full batch), not for Poisson-subsampled training.

    >>> rng = np.random.default_rng(1)
    >>> r = epsilon_lower_gdp(scores_out=rng.normal(size=20000), scores_in=rng.normal(0.4, 1, 20000), delta=1e-5)
    >>> 1.3 < r["epsilon_lower"] < 1.8     # the exact epsilon of 0.4-GDP at 1e-5 is 1.555
    True
    """
    fit = gdp_mu_lower_bound(scores_out=scores_out, scores_in=scores_in, confidence=confidence)
    mu_lo = max(fit["mu_lower"], 0.0)
    return {"epsilon_lower": float(accounting.gdp_epsilon(mu=mu_lo, delta=delta)) if mu_lo > 0 else 0.0, **fit}


#: significance level of each test of :func:`gdp_model_check` (three tests per audit)
MODEL_CHECK_LEVEL = 1e-3


def gdp_model_check(*, scores_out, scores_in, level: float = MODEL_CHECK_LEVEL) -> dict[str, Any]:
    """Tests of the Gaussian-DP fit's model: equal variances (two-sided F test) and normality of each world's
    scores (``scipy.stats.normaltest``). ``ok`` is False when any p-value is below ``level`` (the audit then
    withholds its Gaussian-DP bound); a pass proves nothing.

    >>> rng = np.random.default_rng(0)
    >>> gdp_model_check(scores_out=rng.normal(0, 1, 5000), scores_in=rng.normal(1, 1, 5000))["ok"]
    True
    >>> gdp_model_check(scores_out=rng.normal(0, 1, 5000), scores_in=rng.normal(1, 1.2, 5000))["ok"]
    False
    >>> gdp_model_check(scores_out=rng.laplace(0, 1, 5000), scores_in=rng.laplace(1, 1, 5000))["ok"]
    False
    """
    so, si = np.asarray(scores_out, dtype=float).ravel(), np.asarray(scores_in, dtype=float).ravel()
    if min(so.size, si.size) < 20:
        raise ValueError(f"too few scores for the model check ({so.size} without, {si.size} with the canary; >= 20 each)")
    f = float(si.var(ddof=1) / so.var(ddof=1))
    tail = stats.f.sf(f, si.size - 1, so.size - 1) if f >= 1 else stats.f.cdf(f, si.size - 1, so.size - 1)
    p_var = float(min(1.0, 2.0 * tail))
    p_out, p_in = float(stats.normaltest(so).pvalue), float(stats.normaltest(si).pvalue)
    ok = min(p_var, p_out, p_in) >= level
    return {"ok": bool(ok), "level": float(level), "variance_ratio": f, "p_equal_variance": p_var,
            "p_normal_out": p_out, "p_normal_in": p_in}


def exact_epsilon_of(sigma, *, delta: float, sampling_rate: float = 1.0) -> tuple[float, str]:
    """The epsilon at ``delta`` the noise ``sigma`` really gives (the most any audit can certify), and the
    accountant: exact Gaussian DP at full batch, dp-accounting's PLD (errs upward) with Poisson sampling.

    >>> round(exact_epsilon_of([2.0] * 4, delta=1e-5)[0], 4)
    4.3772
    """
    if sampling_rate == 1.0:
        return float(accounting.exact_epsilon(sigma=sigma, delta=delta)), "exact (Gaussian DP)"
    e = accounting.accountant_epsilon(sigma=sigma, delta=delta, sampling_rate=sampling_rate, accountant="pld")
    return float(e), "pld (dp-accounting, tight up to its discretisation)"

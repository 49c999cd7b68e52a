"""Parameter sweeps of the Section 4.1 bounds for the theory pages (H-F-THEORY): plain
dictionaries of arrays, computed from :mod:`dpcompanion.theory.bounds.gd` (Hong et al. 2022,
the FAccT version, Thm 4.1, 4.2, 4.4, Eq. 24, 27) and plotted by :mod:`dpcompanion.book.theory_figures`.
"""

from __future__ import annotations

import math

import numpy as np

from dpcompanion.theory.bounds import gd

__all__ = ["schedules_for_kappas", "erub_vs_T", "erub_min_vs_N", "erub_min_vs_kappa", "optimal_T_vs_kappa"]


def schedules_for_kappas(*, T: int, R: float, kappas) -> dict:
    """Noise multipliers ``sigma_t`` of the uniform schedule and of the dynamic schedule
    (Thm 4.4) for each kappa, all spending budget R over T steps.

    >>> d = schedules_for_kappas(T=5, R=1.0, kappas=[10])
    >>> sorted(d), d["t"].tolist()
    (['dynamic', 't', 'uniform'], [1, 2, 3, 4, 5])
    """
    t = np.arange(1, T + 1)
    return {
        "t": t,
        "uniform": np.full(T, math.sqrt(T / R)),
        "dynamic": {float(k): np.sqrt(gd.sigma2_dynamic(T=T, kappa=k, R=R)) for k in kappas},
    }


def erub_vs_T(*, kappa: float, alpha: float, T_max: int) -> dict:
    """ERUB(T) for T = 1..T_max of both schedules, their exact integer minimisers, the
    uniform T of Eq. (24), the dynamic T of Eq. (27) and of the Thm 4.4 statement.

    >>> d = erub_vs_T(kappa=10, alpha=1e-3, T_max=60)
    >>> d["argmin"]["dynamic"][0], d["argmin"]["uniform"][0]
    (24, 21)
    """
    T = np.arange(1, T_max + 1, dtype=float)
    return {
        "T": T,
        "uniform": np.asarray(gd.erub_uniform(T=T, kappa=kappa, alpha=alpha)),
        "dynamic": np.asarray(gd.erub_dynamic(T=T, kappa=kappa, alpha=alpha)),
        "argmin": {"uniform": gd.argmin_uniform(kappa=kappa, alpha=alpha), "dynamic": gd.argmin_dynamic(kappa=kappa, alpha=alpha)},
        "T_eq24": gd.t_uniform(kappa=kappa, alpha=alpha),
        "T_eq27": gd.t_dynamic(kappa=kappa, alpha=alpha),
        "T_statement": gd.t_dynamic_statement(kappa=kappa, alpha=alpha),
    }


def erub_min_vs_N(*, Ns, kappa: float, D: float, R: float, G: float = 1.0, M: float = 1.0, f_gap: float = 1.0) -> dict:
    """Exact minima over integer T of the uniform and dynamic ERUB against the sample size,
    next to the non-private scale ``alpha(N)`` (Eq. 4).

    >>> d = erub_min_vs_N(Ns=[1e3, 1e4], kappa=10, D=10, R=0.3927)
    >>> bool(np.all(d["dynamic"] <= d["uniform"]))
    True
    """
    Ns = np.asarray(Ns, float)
    alpha = np.array([gd.alpha_of(D=D, G=G, R=R, M=M, N=n, f_gap=f_gap) for n in Ns])
    return {
        "N": Ns,
        "alpha": alpha,
        "uniform": np.array([gd.argmin_uniform(kappa=kappa, alpha=a)[1] for a in alpha]),
        "dynamic": np.array([gd.argmin_dynamic(kappa=kappa, alpha=a)[1] for a in alpha]),
    }


def erub_min_vs_kappa(*, kappas, alpha: float) -> dict:
    """Exact minima of both schedules against kappa, with Eq. (25) (uniform at Eq. 24's T)
    and the Theta expressions of Eq. (8) and Eq. (11).

    >>> d = erub_min_vs_kappa(kappas=[2, 20], alpha=1e-3)
    >>> bool(np.all(d["dynamic"] <= d["uniform"]))
    True
    """
    ks = np.asarray(kappas, float)
    return {
        "kappa": ks,
        "uniform": np.array([gd.argmin_uniform(kappa=k, alpha=alpha)[1] for k in ks]),
        "dynamic": np.array([gd.argmin_dynamic(kappa=k, alpha=alpha)[1] for k in ks]),
        "eq25": np.array([gd.erub_uniform_eq25(kappa=k, alpha=alpha) for k in ks]),
        "eq8": np.array([gd.theta_uniform(kappa=k, alpha=alpha) for k in ks]),
        "eq11": np.array([gd.theta_dynamic(kappa=k, alpha=alpha) for k in ks]),
    }


def optimal_T_vs_kappa(*, kappas, alpha: float) -> dict:
    """Optimal T against kappa: exact integer minimisers (brute force) next to the closed forms
    (Eq. 24 and the surrogate Eq. 23 for uniform; Eq. 27 and the Thm 4.4 statement for dynamic).

    >>> d = optimal_T_vs_kappa(kappas=[10], alpha=1e-3)
    >>> int(d["dynamic_exact"][0]), round(float(d["dynamic_eq27"][0]), 2)
    (24, 24.49)
    """
    ks = np.asarray(kappas, float)
    return {
        "kappa": ks,
        "uniform_exact": np.array([gd.argmin_uniform(kappa=k, alpha=alpha)[0] for k in ks]),
        "uniform_eq24": np.array([gd.t_uniform(kappa=k, alpha=alpha) for k in ks]),
        "uniform_eq23": np.array([gd.t_uniform_surrogate(kappa=k, alpha=alpha) for k in ks]),
        "dynamic_exact": np.array([gd.argmin_dynamic(kappa=k, alpha=alpha)[0] for k in ks]),
        "dynamic_eq27": np.array([gd.t_dynamic(kappa=k, alpha=alpha) for k in ks]),
        "dynamic_statement": np.array([gd.t_dynamic_statement(kappa=k, alpha=alpha) for k in ks]),
    }

"""The per-sample norms are taken in the training dtype (float32) with a proven error bound
(:func:`dpcompanion.training.model_base.sqnorms`, :func:`~dpcompanion.training.model_base.sqnorm_error`),
and the slack of the clip factor, which covers that bound, keeps each example's clipped
contribution within C.

* the bound holds: for rows of any length and of magnitudes from 1e-30 to 1e30 (huge, tiny and
  mixed rows, rows built so that a float32 running sum loses the most), along the last and a middle
  dimension, the estimate is never short of the exact squared norm (``math.fsum`` of the exact
  float64 squares) by more than ``E`` of it, nor above it by more than that;
* the slack covers it: ``(1 + u)^4 / sqrt(1 - E)`` with the float64 roundings, in exact
  rational arithmetic, is within the clip factor's ``1 + 8 u + 2^-47`` (it would not be with
  partials of 8 squares);
* the bound is needed: a plain float32 norm (torch's own reduction) under the slack of
  ``clip_scale`` lets a long adversarial row contribute more than C, and with the whole safety
  factor removed (the bound and the slack) ordinary clipped rows of the paper's MLP exceed C; with
  both in place neither does. The model-level property (every model kind, magnitudes 1e-30 to
  1e38) is ``tests/test_clip_bound.py``, whose cases include rows of 1,000 and 300 values.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from dpcompanion.training import model_base
from dpcompanion.training.model_base import clip_factors, norms64, sqnorm_error, sqnorms, sqnorms_upper
from dpcompanion.training.models import make_model

SLACK = 1 + 1e-12  # float64 rounding of the check itself


def _exact_sq(v: torch.Tensor, dim: int) -> np.ndarray:
    """Exact squared norms (float32 squares are exact in float64; fsum rounds the sum once)."""
    a = v.movedim(dim, -1).double().numpy()
    flat = a.reshape(-1, a.shape[-1])
    return np.array([math.fsum((row * row).tolist()) for row in flat]).reshape(a.shape[:-1])


def _adversarial(n: int) -> torch.Tensor:
    """A row whose float32 running sum of squares rounds down at almost every addition: squares
    ``1 + 2^-19``, a quarter ulp of partial sums from 64 on."""
    return torch.full((n,), math.sqrt(1 + 2.0**-19), dtype=torch.float32)


@settings(max_examples=120, deadline=None)
@given(n=st.integers(1, 3000), rows=st.integers(1, 4), exponent=st.floats(-30.0, 30.0),
       kind=st.sampled_from(["plain", "mixed", "tiny-in-huge", "adversarial", "zeros"]),
       middle=st.booleans(), seed=st.integers(0, 2**16))
def test_sqnorms_within_its_proven_error_of_the_exact_squared_norm(n, rows, exponent, kind, middle, seed):
    g = torch.Generator().manual_seed(seed)
    v = torch.randn(rows, n, generator=g, dtype=torch.float64) * 10.0**exponent
    if kind == "mixed":  # half the entries ordinary
        v[:, ::2] = torch.randn(rows, len(range(0, n, 2)), generator=g, dtype=torch.float64)
    elif kind == "tiny-in-huge":
        v[:, 1::2] *= 1e-40
    elif kind == "adversarial":
        v[:] = _adversarial(n).double() * 10.0**round(exponent / 4)
    elif kind == "zeros":
        v[0] = 0.0
    v = v.float()
    if middle:  # the (K, H, N) layout of the MLP path: norms along dimension 1
        v3 = v.t().unsqueeze(0).contiguous()  # (1, n, rows)
        est, exact = sqnorms(v3, dim=1)[0].numpy(), _exact_sq(v3, 1)[0]
    else:
        est, exact = sqnorms(v).numpy(), _exact_sq(v, -1)
    E, add = sqnorm_error(torch.float32, n)
    ok = np.isfinite(exact)
    assert np.all(exact[ok] * (1 - E) <= est[ok]), (est, exact)  # the proven side
    assert np.all(est[ok] <= exact[ok] * (1 + E) + 1.01 * add), (est, exact)  # and not loose


def test_the_bound_is_seven_ulps_and_the_clip_slack_covers_it():
    """Exact rational arithmetic: the clipped gradient from a float32 norm is formed with at most four
    float32 roundings (the clip factor and three products, :data:`model_base.CLIP_SLACK_ULPS`) and a
    few float64 ones, and its norm estimate is at least sqrt(1 - E) of the exact one; the product
    of these fits the clip factor's slack for every row up to NORM_MAX_PARTIALS partials. With
    partials of 8 squares it would not."""
    from fractions import Fraction as F

    u = F(1, 2**24)
    E, a = sqnorm_error(torch.float32, 1000)
    assert abs(E / 2.0**-24 - 7) < 1e-3 and a < 1e-41
    kappa = model_base.CLIP_SLACK_ULPS * u + F(model_base.CLIP_SLACK_NORM)
    n_max = model_base.NORM_BLOCK * (model_base.NORM_MAX_PARTIALS - 2)

    def fits(E) -> bool:
        need_sq = (1 + u) ** 8 / (1 - F(E)) * (1 + F(8, 2**53)) ** 2
        return need_sq <= (1 + kappa) ** 2

    assert fits(sqnorm_error(torch.float32, n_max)[0])
    g8 = 8 * u / (1 - 8 * u)
    assert not fits(g8)  # NORM_BLOCK = 8 would need more slack
    with pytest.raises(ValueError, match="float64"):
        sqnorm_error(torch.float64, 10)


def _contribution_ratio(G: torch.Tensor, n64: torch.Tensor, C: float) -> float:
    """Largest float64 norm of ``c_n g_n`` (float32, as the sums form it) over C."""
    c = clip_factors(n64, C, dtype=torch.float32)
    return float((norms64(c.unsqueeze(-1) * G) / C).max())


@pytest.mark.parametrize("n", [2**15, 2**17])
def test_a_plain_float32_norm_breaks_the_bound_on_long_rows(n):
    """The slack of clip_scale covers partials of 7 squares, not a float32 sum of n of them: torch's
    own float32 reduction of the adversarial row is about 2^-20 short of its norm, which lets its
    clipped contribution exceed C; the norm from partials keeps it within."""
    G = torch.stack([_adversarial(n) * s for s in (1.0, 0.37, 3.1)])
    C = 1.0
    plain = torch.linalg.vector_norm(G, dim=-1).double()  # float32 sum, as torch computes it
    assert _contribution_ratio(G, plain, C) > SLACK
    assert _contribution_ratio(G, sqnorms(G).sqrt(), C) <= SLACK


def test_without_the_safety_factor_the_papers_mlp_exceeds_C(monkeypatch):
    """The paper's network (1,000 hidden units) on ordinary data, every example clipped (C small):
    with the slack of clip_scale and the norms' safety factor removed (which cover the float32 norm's error), the clip factor is
    C over a norm that rounding left short about half the time, and some examples contribute more
    than C; with it, none does. Each example's contribution is its own one-example sum, measured in float64."""
    model = make_model("mlp", in_dim=20, hidden=1000)
    g = torch.Generator().manual_seed(3)
    X = torch.randn(40, 20, generator=g)
    y = torch.randint(0, 2, (40,), generator=g)
    theta = model.init(generators=[torch.Generator().manual_seed(k) for k in range(3)])
    C = 1e-3

    def worst() -> float:
        r = 0.0
        for i in range(X.shape[0]):
            gs = model.clipped_grad_sum(theta, X[i:i + 1], y[i:i + 1], clip_norm=C).grad_sum
            r = max(r, float((norms64(gs) / C).max()))
        return r

    with_factor = worst()
    with monkeypatch.context() as mp:
        mp.setattr(model_base, "CLIP_SLACK_ULPS", 0)
        mp.setattr(model_base, "CLIP_SLACK_NORM", 0.0)
        # the norms' own safety factor (reduction_upper's 1 / (1 - gamma_n)) removed as well
        mp.setattr(model_base, "reduction_upper", lambda S, n: S.double())
        without = worst()
    assert without > SLACK, without
    # the safety factor costs a clipped example at most gamma_n / 2 (3e-5 at 1,000 hidden units)
    assert 1 - 1e-4 < with_factor <= SLACK, with_factor


@given(n=st.integers(1, 3000), rows=st.integers(1, 4), exponent=st.floats(-30.0, 30.0),
       middle=st.booleans(), seed=st.integers(0, 2**16))
@settings(max_examples=60, deadline=None)
def test_sqnorms_upper_is_an_upper_bound_within_gamma_n(n, rows, exponent, middle, seed):
    """One float32 reduction, bounded above (sqnorms_upper, the ReLU MLP's norms): never below the
    exact squared norm (float64 squares of the float32 values, exact to 1e-15), at most gamma_n
    above it; also when the sums come from a GEMV (``D_n . W2`` with ``D = 1[a > 0] W2``)."""
    g = torch.Generator().manual_seed(seed)
    v = (torch.randn(rows, n, generator=g, dtype=torch.float64) * 10.0**exponent)
    if middle:  # one huge entry among small ones
        v[:, n // 2] *= 1e6
    v = v.float()
    exact = norms64(v).square()
    up = sqnorms_upper(v)
    u = 2.0**-24
    gam = n * u / (1 - n * u)
    assert bool((up >= exact * (1 - 1e-15)).all())
    assert bool((up <= exact * (1 + 2 * gam) + 1e-40).all())
    w2 = v[0].abs()
    mask = (torch.rand(rows, n, generator=g) > 0.5).float()
    D = mask * w2
    ex = norms64(D).square()
    up = sqnorms_upper(D, sums=(D @ w2.unsqueeze(-1))[..., 0])
    assert bool((up >= ex * (1 - 1e-15)).all())

"""The per-sample norms are taken in the training dtype (float32) with a proven upper bound
(:func:`dpcompanion.training.model_base.sqnorms_upper`, :func:`~dpcompanion.training.model_base.sqnorm_bound`),
and the bound is what keeps each example's clipped contribution within C.

* the bound holds: for rows of any length and of magnitudes from 1e-30 to 1e30 (huge, tiny and
  mixed rows, rows built so that a float32 running sum loses the most), along the last and a middle
  dimension, the bound is at least the exact squared norm (``math.fsum`` of the exact float64
  squares) and within its stated slack of it;
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
from dpcompanion.training.model_base import clip_factors, norms64, sqnorm_bound, sqnorms_upper
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
def test_sqnorms_upper_bounds_the_exact_squared_norm(n, rows, exponent, kind, middle, seed):
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
        up, exact = sqnorms_upper(v3, dim=1)[0].numpy(), _exact_sq(v3, 1)[0]
    else:
        up, exact = sqnorms_upper(v).numpy(), _exact_sq(v, -1)
    factor, add = sqnorm_bound(torch.float32, n)
    ok = np.isfinite(exact)
    assert np.all(up[ok] >= exact[ok]), (up, exact)
    # tight: within the bound's own slack (a float64 recomputation where the allowance would dominate)
    assert np.all(up[ok] <= exact[ok] * (1 + 2.1 * (factor - 1)) + 1.01 * factor * add), (up, exact)


def test_the_bound_is_eight_ulps_for_the_papers_rows():
    f, a = sqnorm_bound(torch.float32, 1000)
    u = 2.0**-24
    assert 8 * u < f - 1 < 8.01 * u and a < 1e-41
    with pytest.raises(ValueError, match="float64"):
        sqnorm_bound(torch.float64, 10)


def _contribution_ratio(G: torch.Tensor, n64: torch.Tensor, C: float) -> float:
    """Largest float64 norm of ``c_n g_n`` (float32, as the sums form it) over C."""
    c = clip_factors(n64, C, dtype=torch.float32)
    return float((norms64(c.unsqueeze(-1) * G) / C).max())


@pytest.mark.parametrize("n", [2**15, 2**17])
def test_a_plain_float32_norm_breaks_the_bound_on_long_rows(n):
    """The slack of clip_scale covers the products that form c g, not a float32 sum of n squares:
    torch's own float32 reduction of the adversarial row is 2^-20 short of its norm, which lets
    its clipped contribution exceed C; the bounded norm keeps it within."""
    G = torch.stack([_adversarial(n) * s for s in (1.0, 0.37, 3.1)])
    C = 1.0
    plain = torch.linalg.vector_norm(G, dim=-1).double()  # float32 sum, as torch computes it
    assert _contribution_ratio(G, plain, C) > SLACK
    assert _contribution_ratio(G, sqnorms_upper(G).sqrt(), C) <= SLACK


def test_without_the_safety_factor_the_papers_mlp_exceeds_C(monkeypatch):
    """The paper's network (1,000 hidden units) on ordinary data, every example clipped (C small):
    with the bound's factor and the slack of clip_scale removed, the clip factor is C over a norm
    that rounding left short about half the time, and some examples contribute more than C; with
    them, none does. Each example's contribution is its own one-example sum, measured in float64."""
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
        mp.setattr(model_base, "sqnorm_bound", lambda dtype, n: (1.0, 0.0))
        mp.setattr(model_base, "CLIP_SLACK_ULPS", 0)
        mp.setattr(model_base, "CLIP_SLACK_NORM", 0.0)
        without = worst()
    assert without > SLACK, without
    assert 1 - 1e-5 < with_factor <= SLACK, with_factor

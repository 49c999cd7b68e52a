"""The empirical privacy audit (:mod:`dpcompanion.training.privacy_audit`) and ``python -m dpcompanion
audit``: the statistics against independent references, the adversary's view of the
iterates, the audit's verdicts at S = 1 and on mis-calibrated trainers, and bad input."""

import json
import math

import numpy as np
import pytest
import torch
from scipy import stats

from dpcompanion import cli
from dpcompanion.theory import accounting, auditing
from dpcompanion.training import privacy_audit
from dpcompanion.training.model_base import Model


# ---------------------------------------------------------------- Clopper-Pearson and epsilon


def _cp_upper_by_bisection(k: int, n: int, alpha: float) -> float:
    """The defining property rewritten: the p at which P[Binomial(n, p) <= k] = alpha."""
    if k == n:
        return 1.0
    lo, hi = 0.0, 1.0
    for _ in range(200):
        mid = (lo + hi) / 2
        if stats.binom.cdf(k, n, mid) > alpha:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


@pytest.mark.parametrize("k,n,alpha", [(0, 10, 0.05), (3, 10, 0.025), (0, 3000, 0.025), (17, 3000, 0.025),
                                       (1499, 1500, 0.05), (50, 50, 0.05), (1, 1, 0.3)])
def test_clopper_pearson_upper_matches_its_definition(k, n, alpha):
    got = float(auditing.clopper_pearson_upper(k=k, n=n, alpha=alpha))
    assert got == pytest.approx(_cp_upper_by_bisection(k, n, alpha), rel=1e-9, abs=1e-12)


def test_clopper_pearson_zero_successes_closed_form():
    # k = 0: (1 - p)^n = alpha  ->  p = 1 - alpha^(1/n)
    for n in (1, 7, 200, 10_000):
        assert float(auditing.clopper_pearson_upper(k=0, n=n, alpha=0.025)) == pytest.approx(1 - 0.025 ** (1 / n))


def test_clopper_pearson_coverage_by_simulation():
    rng = np.random.default_rng(5)
    n, p, alpha = 200, 0.03, 0.05
    k = rng.binomial(n, p, size=4000)
    covered = np.mean(auditing.clopper_pearson_upper(k=k, n=n, alpha=alpha) >= p)
    assert covered >= 1 - alpha  # exact intervals are conservative


@pytest.mark.parametrize("mu", [0.4, 1.0, 1.6, 3.0])
@pytest.mark.parametrize("delta", [1e-5, 1e-3])
def test_epsilon_from_rates_recovers_the_gaussian_privacy_profile(mu, delta):
    """For mu-GDP the best threshold test certifies exactly the mechanism's epsilon (Dong, Roth &
    Su Cor. 2.13, computed independently by accounting.gdp_epsilon) and no test certifies more."""
    tau = np.linspace(-10, 15, 200_001)
    fpr, fnr = stats.norm.sf(tau), stats.norm.cdf(tau - mu)
    eps = auditing.epsilon_from_rates(fpr=fpr, fnr=fnr, delta=delta)
    true = accounting.gdp_epsilon(mu=mu, delta=delta)
    assert eps.max() <= true + 1e-6
    assert eps.max() == pytest.approx(true, rel=2e-3)


def test_epsilon_lower_bound_is_valid_and_has_power():
    rng = np.random.default_rng(11)
    mu, delta = 1.0, 1e-5
    true = accounting.gdp_epsilon(mu=mu, delta=delta)
    lows = [auditing.epsilon_lower_bound(scores_out=rng.normal(size=400), scores_in=rng.normal(mu, 1, 400),
                                      delta=delta)["epsilon_lower"] for _ in range(200)]
    assert np.mean(np.array(lows) > true) <= 0.05
    strong = auditing.epsilon_lower_bound(scores_out=rng.normal(size=5000), scores_in=rng.normal(4.0, 1, 5000),
                                       delta=delta)
    assert 2.5 < strong["epsilon_lower"] <= accounting.gdp_epsilon(mu=4.0, delta=delta)
    assert strong["n_out"] + strong["n_select_out"] == 5000


def test_log_likelihood_ratio_against_densities():
    rng = np.random.default_rng(2)
    s, sig = rng.normal(0.5, 2, size=(7, 4)), np.array([0.5, 1.0, 2.0, 3.0])
    full = (stats.norm.logpdf(s, 1, sig) - stats.norm.logpdf(s, 0, sig)).sum(-1)
    assert auditing.log_likelihood_ratio(s=s, sigma=sig) == pytest.approx(full, rel=1e-10)
    p = 0.3
    mix = np.log((1 - p) * stats.norm.pdf(s, 0, sig) + p * stats.norm.pdf(s, 1, sig)) - stats.norm.logpdf(s, 0, sig)
    assert auditing.log_likelihood_ratio(s=s, sigma=sig, sampling_rate=p) == pytest.approx(mix.sum(-1), rel=1e-10)


# ------------------------------------------------------------------ the model and the adversary


def test_canary_model_matches_the_generic_clipping_path():
    model = privacy_audit.CanaryModel()
    X, y = privacy_audit.canary_data(canary=True, n=9, clip_norm=1.5, seed=3)
    theta = torch.randn(4, 2, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    w = (torch.rand(4, 9, generator=torch.Generator().manual_seed(1)) < 0.5).double()
    for weights in (None, w):
        ours = model.clipped_grad_sum(theta, X, y, clip_norm=1.5, weights=weights)
        ref = Model.clipped_grad_sum(model, theta, X, y, clip_norm=1.5, weights=weights)  # torch.func
        torch.testing.assert_close(ours.grad_sum, ref.grad_sum)
        torch.testing.assert_close(ours.norms, ref.norms)
        torch.testing.assert_close(ours.losses, ref.losses)
    # the canary's clipped gradient is exactly -C e_0; the others have nothing along e_0
    assert float(X[0, 0]) == 3.0 and torch.all(X[1:, 0] == 0)


@pytest.mark.parametrize("momentum", [0.0, 0.5])
def test_adversary_recovers_the_noisy_sums(momentum):
    """From the iterates alone: projection on the canary = 1 + sigma_t z_t (mean 1, sd sigma_t),
    the ordinary examples' coordinate = their clipped sum + noise."""
    from dpcompanion.training.trainers import train_pgd

    K, C = 3000, 1.0
    sigma = np.array([0.5, 1.0, 2.0, 1.0])
    X, y = privacy_audit.canary_data(canary=True, n=8, clip_norm=C, seed=1)
    model = privacy_audit.CanaryModel()
    h = train_pgd(model, X, y, sigma=sigma, R=None, clip_norm=C, lr=[0.1, 0.2, 0.05, 0.1], momentum=momentum,
                  seed=list(range(K)), init=torch.zeros(2, dtype=torch.float64), device="cpu",
                  dtype=torch.float64, progress=False)
    its = torch.stack(model.iterates + [h.theta])
    sums = privacy_audit.noisy_sums_from_iterates(iterates=its, lr=h.lr, denominator=8, momentum=momentum)
    s = -sums[..., 0] / C
    se = sigma / math.sqrt(K)
    assert np.all(np.abs(s.mean(0) - 1.0) < 5 * se)
    assert s.std(0) == pytest.approx(sigma, rel=0.06)
    norms = X[1:, 1].abs().numpy()
    others = float((-X[1:, 1].numpy() * np.minimum(1, C / np.maximum(norms, 1e-30))).sum())
    assert np.all(np.abs(sums[..., 1].mean(0) - others) < 5 * se * C)


# -------------------------------------------------------------------------------- the audit


@pytest.mark.parametrize("trainer", privacy_audit.TRAINERS)
def test_shipped_trainers_pass_with_a_consistent_report(trainer):
    n = 200 if trainer == "psgd" else 400  # psgd: each subsampled step costs the ledger ~2.5 ms per run
    r = privacy_audit.run_audit(trainer=trainer, epsilon=2.0, delta=1e-5, trials=n, seed=1)
    assert r.passed and 0.0 <= r.epsilon_lower <= r.epsilon_claimed
    assert r.trials == n and r.test["trials_with_canary"] == n // 2
    assert r.sigma_used == r.sigma_claimed and len(r.sigma_used) == privacy_audit.SETUPS[trainer].T
    p = privacy_audit.SETUPS[trainer].sampling_rate
    # the claim, recomputed independently by dp-accounting / the zCDP conversion
    if p == 1.0:
        assert r.epsilon_claimed == pytest.approx(2.0, rel=1e-9)  # budget-exact schedule at R_zcdp(2, 1e-5)
        assert r.epsilon_exact == pytest.approx(accounting.exact_epsilon(sigma=r.sigma_used, delta=1e-5))
        assert r.epsilon_lower_gdp is not None and r.epsilon_lower == max(r.epsilon_lower_gdp, r.epsilon_lower_threshold)
    else:
        # dp-accounting (fractional orders too) is the independent reference: the ledger's
        # integer orders are never looser, and only slightly more conservative
        ref = accounting.accountant_epsilon(sigma=r.sigma_claimed, delta=1e-5, sampling_rate=p)
        assert ref <= r.epsilon_claimed <= ref * (1 + 1e-3) and r.epsilon_claimed <= 2.0
        assert r.epsilon_lower_gdp is None and r.gdp_fit is None and r.epsilon_lower == r.epsilon_lower_threshold
        pld = accounting.accountant_epsilon(sigma=r.sigma_used, delta=1e-5, sampling_rate=p, accountant="pld")
        assert r.epsilon_exact == pytest.approx(pld) and r.exact_accountant.startswith("pld")
    assert r.flagged is (not r.passed) and r.tightness == pytest.approx(r.epsilon_lower / r.epsilon_exact)


@pytest.mark.parametrize("trainer", ["pgd", pytest.param("psgd", marks=pytest.mark.slow)])
def test_grossly_miscalibrated_trainer_is_flagged_quickly(trainer):
    """S = 0.1 with few trials (pgd about 3 s; psgd about 10 s: RDP accounting of new noise levels)."""
    r = privacy_audit.run_audit(trainer=trainer, epsilon=2.0, delta=1e-5, trials=600 if trainer == "pgd" else 400,
                        noise_multiplier_scale=0.1, seed=2)
    assert not r.passed and r.epsilon_lower > r.epsilon_claimed
    assert np.allclose(r.sigma_used, 0.1 * np.array(r.sigma_claimed), rtol=1e-12)
    assert r.setup["R_ledger"] > r.setup["R"]  # the scaled schedule ran under a budget it fits


@pytest.mark.slow
@pytest.mark.parametrize("trainer", privacy_audit.TRAINERS)
def test_half_noise_is_flagged_at_the_default_size(trainer):
    """The acceptance case: S = 0.5 at (2, 1e-5) with the default trials (full batch about 2 s,
    psgd with 200,000 trials about 15 s), psgd by the threshold test alone."""
    r = privacy_audit.run_audit(trainer=trainer, epsilon=2.0, delta=1e-5, noise_multiplier_scale=0.5)
    assert r.flagged and r.epsilon_lower > r.epsilon_claimed and not r.passed
    assert r.epsilon_lower <= r.epsilon_exact  # never above what the noise really gives
    assert r.epsilon_lower_threshold <= r.epsilon_exact


def test_adp_schedule_really_scales_with_S():
    """ADP-SGD builds its own schedule: the audit checks the trainer used exactly S sigma."""
    r = privacy_audit.run_audit(trainer="adp", epsilon=1.0, delta=1e-5, trials=200, noise_multiplier_scale=0.5)
    assert np.allclose(r.sigma_used, 0.5 * np.array(r.sigma_claimed), rtol=1e-9)
    assert len(set(np.round(r.sigma_claimed, 12))) > 1  # a genuinely non-uniform allocation


def test_same_seed_same_result():
    a = privacy_audit.run_audit(trainer="pgd", epsilon=2.0, delta=1e-5, trials=300, seed=4).to_dict()
    b = privacy_audit.run_audit(trainer="pgd", epsilon=2.0, delta=1e-5, trials=300, seed=4).to_dict()
    a.pop("wall_time"), b.pop("wall_time")
    assert a == b


# ---------------------------------------------------------------------------- command line


def test_cli_json(capsys):
    rc = cli.main(["audit", "--trainer", "pgd", "--epsilon", "2", "--delta", "1e-5", "--trials", "300", "--json"])
    out, err = capsys.readouterr()
    assert rc == 0
    d = json.loads(out)
    assert {"epsilon_claimed", "epsilon_lower", "epsilon_lower_gdp", "epsilon_lower_threshold", "epsilon_exact",
            "tightness", "flagged", "trials", "passed"} <= set(d)
    assert d["trials"] == 300 and d["flagged"] is (d["epsilon_lower"] > d["epsilon_claimed"]) is (not d["passed"])
    assert d["epsilon_exact"] == pytest.approx(accounting.exact_epsilon(sigma=d["sigma_used"], delta=1e-5))
    assert d["tightness"] == pytest.approx(d["epsilon_lower"] / d["epsilon_exact"])


def test_cli_text_labels_both_bounds(capsys):
    rc = cli.main(["audit", "--trainer", "pgd", "--epsilon", "2", "--delta", "1e-5", "--trials", "300"])
    out = capsys.readouterr().out
    assert rc == 0
    for key in ("epsilon_lower_gdp", "assumes Gaussian noise", "epsilon_lower_threshold", "epsilon_exact",
                "tightness", "epsilon_claimed", "noise check"):
        assert key in out


def test_cli_help_lists_every_trainer():
    parser = cli.build_parser()
    sub = next(a for a in parser._actions if a.dest == "command").choices["audit"]
    text = sub.format_help()
    assert all(t in text for t in privacy_audit.TRAINERS) and "examples:" in text
    # the defaults the help states (typed there so that --help does not import torch)
    flat = " ".join(text.split())
    full = {privacy_audit.SETUPS[t].trials for t in privacy_audit.TRAINERS if privacy_audit.SETUPS[t].sampling_rate == 1.0}
    assert full == {40000} and privacy_audit.SETUPS["psgd"].trials == 200000 and "40000 full batch, 200000 psgd" in flat
    assert f"{privacy_audit.MIN_TRIALS} to {privacy_audit.MAX_TRIALS}" in flat
    assert f"psgd (default {privacy_audit.SETUPS['psgd'].sampling_rate:g})" in flat
    assert f"adp (default {privacy_audit.SETUPS['adp'].sampling_rate:g}: full batch)" in flat


def test_chunked_runs_give_the_same_result(monkeypatch):
    """Runs are split into trainer calls of CHUNK runs; each run's numbers depend only on its seed."""
    a = privacy_audit.run_audit(trainer="momentum", epsilon=2.0, delta=1e-5, trials=300, seed=9).to_dict()
    monkeypatch.setattr(privacy_audit, "CHUNK", 40)
    b = privacy_audit.run_audit(trainer="momentum", epsilon=2.0, delta=1e-5, trials=300, seed=9).to_dict()
    a.pop("wall_time"), b.pop("wall_time")
    assert a["epsilon_lower"] == pytest.approx(b["epsilon_lower"], rel=1e-9)
    assert a["test"]["false_positives"] == b["test"]["false_positives"]
    assert a["test"]["false_negatives"] == b["test"]["false_negatives"]


BAD = [
    (["--trainer", "sgd"], "--trainer"),
    (["--epsilon", "0"], "--epsilon"),
    (["--epsilon", "-1"], "--epsilon"),
    (["--epsilon", "inf"], "--epsilon"),
    (["--epsilon", "nan"], "--epsilon"),
    (["--delta", "0"], "--delta"),
    (["--delta", "1"], "--delta"),
    (["--delta", "nan"], "--delta"),
    (["--trials", "199"], "--trials"),
    (["--trials", "0"], "--trials"),
    (["--trials", "200001"], "--trials"),
    (["--trials", "1.5"], "--trials"),
    (["--noise-multiplier-scale", "0"], "--noise-multiplier-scale"),
    (["--noise-multiplier-scale", "-0.25"], "--noise-multiplier-scale"),
    (["--noise-multiplier-scale", "inf"], "--noise-multiplier-scale"),
    (["--noise-multiplier-scale", "nan"], "--noise-multiplier-scale"),
    (["--noise-multiplier-scale", "1e-300"], "--noise-multiplier-scale"),
    (["--sampling-rate", "0.5"], "--sampling-rate"),  # pgd is full batch
    (["--trainer", "psgd", "--sampling-rate", "0"], "--sampling-rate"),
    (["--trainer", "psgd", "--sampling-rate", "1.5"], "--sampling-rate"),
    (["--seed", "-1"], "--seed"),
    (["--seed", "4294967296"], "--seed"),
    (["--device", "tpu"], "--device"),
    (["--trainer", "psgd", "--epsilon", "50"], "does not fit"),  # refused before any training
]


@pytest.mark.parametrize("extra,needle", BAD, ids=[" ".join(e) for e, _ in BAD])
def test_cli_bad_input_one_line_exit_2(capsys, extra, needle):
    base = {"--trainer": "pgd", "--epsilon": "2", "--delta": "1e-5"}
    args = dict(base)
    args.update(dict(zip(extra[::2], extra[1::2])))
    argv = ["audit"] + [x for kv in args.items() for x in kv] + ["--json"]
    try:
        rc = cli.main(argv)
    except SystemExit as exc:  # argparse type errors
        rc = exc.code
    out, err = capsys.readouterr()
    assert rc == 2 and out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and needle in lines[0] and "Traceback" not in err


# ------------------------------------------------------------------------ the experiment


def test_experiment_units_and_one_small_unit():
    from dpcompanion.experiments import base
    from dpcompanion.experiments import audit as exp_audit

    exp = base.get("audit")
    assert exp is exp_audit.EXPERIMENT and set(exp_audit.TRAINERS) == set(privacy_audit.TRAINERS)
    for mode in base.MODES:
        cfg = base.config_for(exp, mode, seed=3)
        us = exp.units(cfg)
        pairs = {(u["trainer"], u["scale"]) for u in us}
        assert {(t, s) for t in privacy_audit.TRAINERS for s in (1.0, 0.5)} <= pairs and len(pairs) == len(us)
        assert len({u["seed"] for u in us}) == len(us)
        assert all(privacy_audit.MIN_TRIALS <= u["trials"] <= privacy_audit.MAX_TRIALS for u in us)
    unit = {**us[0], "trials": 200}
    out = exp.combine(cfg, [exp.run_unit(unit, "cpu")])
    assert out["audits"][0]["trainer"] == unit["trainer"] and out["audits"][0]["trials"] == 200
    json.dumps(out)  # the payload is JSON-able


# ------------------------------------------------------------- the Gaussian-DP fit


def test_gdp_mu_lower_bound_matches_the_normal_approximation_and_covers():
    """The noncentral-t bound agrees with its large-sample normal approximation, and on
    simulated equal-variance Gaussians it lies below the true mu in about `confidence` of
    the repetitions (400 repetitions at 97.5 %: about 10 misses expected, 20 is 3 sd above)."""
    rng = np.random.default_rng(7)
    big = auditing.gdp_mu_lower_bound(scores_out=rng.normal(0, 3, 30000), scores_in=rng.normal(1.5, 3, 30000),
                                   confidence=0.975)
    se = math.sqrt(2 / 30000 + big["mu_hat"] ** 2 / (2 * big["df"]))
    assert big["method"] == "noncentral t"
    assert big["mu_lower"] == pytest.approx(big["mu_hat"] - stats.norm.isf(0.025) * se, abs=2e-4)
    mu, n = 0.5, 150
    misses = 0
    for _ in range(400):
        r = auditing.gdp_mu_lower_bound(scores_out=rng.normal(0, 1, n), scores_in=rng.normal(mu, 1, n), confidence=0.975)
        misses += r["mu_lower"] > mu
    assert misses <= 20
    # and it is not vacuous: the bound is within a few standard errors of mu
    assert 0.2 < r["mu_lower"] < 0.8


def test_epsilon_lower_gdp_converts_with_the_library_accountant():
    rng = np.random.default_rng(3)
    r = auditing.epsilon_lower_gdp(scores_out=rng.normal(size=5000), scores_in=rng.normal(0.8, 1, 5000), delta=1e-5)
    assert r["epsilon_lower"] == pytest.approx(accounting.gdp_epsilon(mu=r["mu_lower"], delta=1e-5))
    none = auditing.epsilon_lower_gdp(scores_out=rng.normal(size=500), scores_in=rng.normal(-1.0, 1, 500), delta=1e-5)
    assert none["mu_lower"] < 0 and none["epsilon_lower"] == 0.0
    with pytest.raises(ValueError, match="zero variance"):
        auditing.gdp_mu_lower_bound(scores_out=np.zeros(10), scores_in=np.ones(10))
    with pytest.raises(ValueError, match="too few"):
        auditing.gdp_mu_lower_bound(scores_out=[1.0], scores_in=[1.0, 2.0])


@pytest.mark.slow
def test_gdp_bound_from_the_real_trainer_is_sound():
    """Soundness on the trainer's own outputs: 80,000 trials of the shipped pgd trainer split
    into 80 disjoint audits of 1,000; the Gaussian-DP bound (97.5 %) may exceed the exact epsilon
    of the noise in at most 5 % of them (about 2 expected)."""
    r, sc = privacy_audit.audit_scores(trainer="pgd", epsilon=2.0, delta=1e-5, trials=80_000, seed=21)
    exact = r.epsilon_exact
    so, si = sc["out"].reshape(80, 500), sc["in"].reshape(80, 500)
    lows = np.array([auditing.epsilon_lower_gdp(scores_out=a, scores_in=b, delta=1e-5,
                                             confidence=privacy_audit.BOUND_CONFIDENCE)["epsilon_lower"]
                     for a, b in zip(so, si)])
    assert np.mean(lows > exact) <= 0.05
    assert np.median(lows) > 0.5 * exact  # and each small audit still has power


def test_pgd_at_epsilon_2_is_tight_and_not_flagged():
    """Acceptance: pgd at (2, 1e-5), default trials (40,000, a few seconds): the
    Gaussian-DP bound is at least 80 % of the exact epsilon and the shipped trainer passes."""
    r = privacy_audit.run_audit(trainer="pgd", epsilon=2.0, delta=1e-5)
    assert r.trials == 40_000
    assert 0.8 * r.epsilon_exact <= r.epsilon_lower_gdp <= r.epsilon_exact
    assert r.tightness >= 0.8 and not r.flagged and r.passed
    assert r.epsilon_lower_threshold < r.epsilon_lower_gdp  # the distribution-free bound is looser
    assert r.gdp_fit["sd_in"] == pytest.approx(r.gdp_fit["sd_out"], rel=0.05)


@pytest.mark.parametrize("trainer", ["pgd", "momentum", "adp"])
def test_half_noise_is_flagged_full_batch(trainer):
    """S = 0.5 (true epsilon 3.39 against a claim of 2) is flagged with 4,000 trials, by the
    Gaussian-DP bound; S = 1 with the same seed and size is not."""
    bad = privacy_audit.run_audit(trainer=trainer, epsilon=2.0, delta=1e-5, trials=4000, noise_multiplier_scale=0.5, seed=5)
    assert bad.flagged and bad.epsilon_lower_gdp > bad.epsilon_claimed
    assert bad.epsilon_lower_gdp <= bad.epsilon_exact
    ok = privacy_audit.run_audit(trainer=trainer, epsilon=2.0, delta=1e-5, trials=4000, seed=5)
    assert not ok.flagged and ok.epsilon_lower_gdp <= ok.epsilon_exact < ok.epsilon_claimed


def test_noise_check_detects_the_wrong_noise_and_the_wrong_normalisation():
    rng = np.random.default_rng(0)
    sig = np.full(3, 2.0)
    good = privacy_audit.noise_check(proj_out=rng.normal(0, 2, (5000, 3)), proj_in=rng.normal(0, 2, (5000, 3))
                             + (rng.random((5000, 3)) < 0.7), sigma=sig, sampling_rate=0.7)
    assert abs(good["noise_ratio"] - 1) < 4 * good["noise_ratio_se"] and abs(good["shift_ratio"] - 1) < 4 * good["shift_ratio_se"]
    half = privacy_audit.noise_check(proj_out=rng.normal(0, 1, (5000, 3)), proj_in=rng.normal(1, 1, (5000, 3)), sigma=sig)
    assert half["noise_ratio"] < 0.6
    # the canary divided by the realised batch size (about p N + 1) instead of p N, with p N = 2.8
    shrunk = privacy_audit.noise_check(proj_out=rng.normal(0, 2, (5000, 3)), proj_in=rng.normal(0, 2, (5000, 3))
                               + (rng.random((5000, 3)) < 0.7) * 2.8 / 3.8, sigma=sig, sampling_rate=0.7)
    assert shrunk["shift_ratio"] < 1 - 4 * shrunk["shift_ratio_se"]


def test_psgd_normalises_by_the_fixed_expected_batch_size():
    """The accountant (add/remove, Poisson sampling) assumes the noisy clipped sum is divided by
    the fixed expected batch size p N, whatever the realised batch: with almost no noise the
    canary's recovered contribution is exactly 0 or 1 (never C / |B|), drawn with probability p,
    and the ordinary examples' coordinate is their sampled sum over p N."""
    from dpcompanion.training.trainers import train_psgd

    K, n, p, C = 4000, 16, 0.3, 1.0
    X, y = privacy_audit.canary_data(canary=True, n=n, clip_norm=C, seed=1)
    model = privacy_audit.CanaryModel()
    h = train_psgd(model, X, y, sigma=np.full(4, 1e-6), R=None, sampling_rate=p, clip_norm=C, lr=0.1,
                   seed=list(range(K)), init=torch.zeros(2, dtype=torch.float64), device="cpu",
                   dtype=torch.float64, progress=False)
    its = torch.stack(model.iterates + [h.theta])
    sums = privacy_audit.noisy_sums_from_iterates(iterates=its, lr=np.asarray(h.lr), denominator=p * n)
    s = -sums[..., 0] / C
    b = np.round(s)
    assert np.all(np.abs(s - b) < 1e-4) and set(np.unique(b)) <= {0.0, 1.0}
    assert abs(b.mean() - p) < 4 * math.sqrt(p * (1 - p) / b.size)
    # the other coordinate: a sum of clipped gradients of the sampled ordinary examples, so
    # it takes many values (it would be one value if the sum were rescaled to the batch size)
    assert np.unique(np.round(sums[..., 1], 6)).size > 100


def test_psgd_audit_reports_tightness_and_passes_the_noise_check():
    r = privacy_audit.run_audit(trainer="psgd", epsilon=2.0, delta=1e-5, trials=4000, seed=3)
    assert r.epsilon_lower_gdp is None and 0 < r.tightness < 1 and not r.flagged
    c = r.noise_check
    assert abs(c["noise_ratio"] - 1) < 4 * c["noise_ratio_se"] and abs(c["shift_ratio"] - 1) < 4 * c["shift_ratio_se"]


def test_gdp_model_check_rejects_unequal_variances_and_heavy_tails():
    rng = np.random.default_rng(4)
    ok = auditing.gdp_model_check(scores_out=rng.normal(0, 2, 20000), scores_in=rng.normal(1, 2, 20000))
    assert ok["ok"] and ok["p_equal_variance"] > 1e-3
    var = auditing.gdp_model_check(scores_out=rng.normal(0, 2, 20000), scores_in=rng.normal(1, 2.2, 20000))
    assert not var["ok"] and var["p_equal_variance"] < 1e-3
    t3 = auditing.gdp_model_check(scores_out=rng.standard_t(3, 20000), scores_in=1 + rng.standard_t(3, 20000))
    assert not t3["ok"] and min(t3["p_normal_out"], t3["p_normal_in"]) < 1e-3
    with pytest.raises(ValueError, match="too few"):
        auditing.gdp_model_check(scores_out=np.arange(5.0), scores_in=np.arange(30.0))


def test_audit_withholds_the_gdp_bound_when_its_model_is_rejected(monkeypatch):
    def rejected(**kw):
        return {"ok": False, "level": 1e-3, "variance_ratio": 2.0, "p_equal_variance": 1e-9,
                "p_normal_out": 0.5, "p_normal_in": 0.5}

    monkeypatch.setattr(privacy_audit, "gdp_model_check", rejected)
    r = privacy_audit.run_audit(trainer="pgd", epsilon=2.0, delta=1e-5, trials=4000, noise_multiplier_scale=0.5, seed=5)
    assert r.epsilon_lower_gdp is None and r.gdp_fit["epsilon_lower"] > r.epsilon_claimed
    assert r.epsilon_lower == r.epsilon_lower_threshold


def test_shipped_full_batch_scores_pass_the_model_check():
    for trainer in ("pgd", "momentum", "adp"):
        r = privacy_audit.run_audit(trainer=trainer, epsilon=2.0, delta=1e-5, trials=4000, seed=6)
        assert r.gdp_fit["model_check"]["ok"] and r.epsilon_lower_gdp is not None


# ------------------------------------------------------------------ the label canary


def _old_cap_oracle(model, X, y, *, clip_norm, fast=None):
    """The linear fast path as it was before the fix: its cap from ``||x||``, without ``|2y - 1|``."""
    from dpcompanion.training.model_base import clip_scale, norms64
    from dpcompanion.training.trainers.oracles import LinearOracle

    o = LinearOracle(model, X, y, clip_norm=clip_norm)
    feats = torch.cat([X, torch.ones(X.shape[0], 1, dtype=X.dtype)], dim=1) if model.bias else X
    o.cap[: o.N] = clip_scale(norms64(feats), clip_norm, dtype=X.dtype)
    o.neg_cap = -o.cap
    return o


@pytest.mark.parametrize("label", [2.0, -1.0])
def test_audit_canary_through_the_fast_path_with_s_3_contributes_at_most_C(label):
    """The audit's canary ``2C e_0`` labelled so that ``s = 2y - 1 = +-3``, fed to
    the linear fast path below the trainers' label check, adds at most C to the clipped sum
    (the old rule added 3 C)."""
    from dpcompanion.training.dense_models import DenseModel
    from dpcompanion.training.trainers.oracles import make_oracle

    model = DenseModel(in_dim=2, n_classes=2, loss="squared", bias=False)
    theta = torch.randn(5, 2, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    sums = {}
    for make in (make_oracle, _old_cap_oracle):
        for canary in (False, True):
            X, y = privacy_audit.label_canary_data(canary=canary, label=label)
            o = make(model, X, y, clip_norm=1.0)
            assert o.fast
            sums[make, canary] = o.clip_sum(theta).grad_sum
    new = torch.linalg.vector_norm(sums[make_oracle, True] - sums[make_oracle, False], dim=-1)
    old = torch.linalg.vector_norm(sums[_old_cap_oracle, True] - sums[_old_cap_oracle, False], dim=-1)
    assert torch.all(new <= 1.0) and torch.all(new > 0.999)
    assert torch.all(old > 2.99)


@pytest.mark.parametrize("label,loss", [(2.0, "squared"), (-1.0, "squared"), (5.0, "logistic"), (1.0, "squared")])
def test_label_audit_passes_the_fast_path(label, loss):
    """The label canary's audit of the fast path as shipped: not flagged, the
    canary's measured contribution is C (shift ratio 1 within 4 standard errors)."""
    r = privacy_audit.label_audit(label=label, loss=loss)
    assert r["fast_path"] and not r["flagged"] and r["passed"]
    assert r["epsilon_lower"] <= r["epsilon_exact"] <= r["epsilon_claimed"]
    assert abs(r["shift_ratio"] - 1.0) < 4 * r["shift_ratio_se"]
    assert r["wall_time"] < 5.0


@pytest.mark.parametrize("label", [2.0, -1.0])
def test_label_audit_flags_the_fast_path_before_issue_30(monkeypatch, label):
    """The case that would have caught the bug: with the old cap (``||x||`` without
    the label) the canary enters with 3 C and the audit's lower bound refutes the claim."""
    monkeypatch.setattr(privacy_audit, "make_oracle", _old_cap_oracle)
    r = privacy_audit.label_audit(label=label)
    assert r["flagged"] and r["epsilon_lower"] > r["epsilon_claimed"]
    assert abs(r["shift_ratio"] - 3.0) < 4 * r["shift_ratio_se"]


@pytest.mark.parametrize("kw,needle", [({"label": float("nan")}, "label must be a finite number, got nan"),
                                       ({"label": "x"}, "label must be a finite number"),
                                       ({"loss": "hinge"}, "loss must be one of squared, logistic, got 'hinge'"),
                                       ({"clip_norm": 0.0}, "clip_norm must be a finite number > 0, got 0.0"),
                                       ({"trials": 10}, "trials must be an integer in [200, 200000], got 10")])
def test_label_audit_bad_input(kw, needle):
    """The label audit's inputs are refused in one line naming the parameter."""
    with pytest.raises(ValueError) as e:
        privacy_audit.label_audit(**kw)
    assert needle in str(e.value)


def test_cli_label_audit_passes_the_shipped_fast_path(capsys):
    """``audit --canary-label 2``: the canary's shift is 1 C, not 3 C, and the claim stands."""
    import json

    from dpcompanion import cli

    assert cli.main(["audit", "--trainer", "pgd", "--epsilon", "2", "--delta", "1e-5", "--canary-label", "-1",
                     "--trials", "4000", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["fast_path"] and out["s"] == -3.0 and not out["flagged"]
    assert abs(out["shift_ratio"] - 1.0) < 5 * out["shift_ratio_se"] + 0.05

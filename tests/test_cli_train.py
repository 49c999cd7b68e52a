"""``python -m dpcompanion train``: JSON output, the ledger via the CLI, exit status 2 on
bad input with one line on stderr."""

import json
import math
import subprocess
import sys

import pytest
import torch

from dpcompanion import cli
from limits import HANG_GUARD_S

KEYS = {"steps_done", "R", "R_spent", "stopped_early", "sigma", "device", "preprocessing",
        "secure", "noise_seed", "privacy_note",  # whether the noise was secret, and what that means
        "neighbouring", "rounding", "N_public", "non_private"}  # which neighbours; what the guarantee does not cover


def _run(capsys, *argv):
    rc = cli.main(["train", *argv])
    out, err = capsys.readouterr()
    return rc, out, err


def test_json_keys_and_budget(capsys):
    rc, out, err = _run(capsys, "--dataset", "synthetic", "--model", "logistic", "--schedule", "uniform",
                        "--epsilon", "4", "--delta", "1e-8", "--T", "20", "--n", "200", "--device", "cpu", "--json")
    assert rc == 0
    d = json.loads(out)
    assert KEYS <= set(d)
    assert d["steps_done"] == 20 and d["stopped_early"] is False
    assert d["R"] == pytest.approx(0.3927, abs=1e-4)  # H Sec. 5: (4, 1e-8)-DP -> R = 0.3927
    assert d["R_spent"] == pytest.approx(d["R"], rel=1e-9) and len(d["sigma"]) == 20
    assert d["device"] == "cpu"
    assert d["secure"] is True and d["noise_seed"] is None  # no --seed: a practitioner's run, secure
    assert d["neighbouring"].startswith("add/remove one record") and d["N_public"] == d["n_train"]
    # every statistic computed on the raw training data sits under non_private, labelled, and nowhere else
    assert set(d["non_private"]) == {"note", "final_loss", "train_accuracy", "loss", "diverged", "wall_time"}
    assert "outside the (epsilon, delta) guarantee" in d["non_private"]["note"]
    assert not {"final_loss", "train_accuracy", "loss", "diverged", "grad_norm", "clip_fraction"} & set(d)


def test_forced_sigma_that_does_not_fit_is_refused_up_front(capsys):
    rc, out, err = _run(capsys, "--dataset", "digits", "--model", "linear", "--sigma", "3", "--R", "0.3927",
                        "--T", "10", "--device", "cpu", "--json")
    assert rc == 2 and out == ""
    assert "largest T that fits is 3" in err  # 3 x 1/9 <= 0.3927 < 4 x 1/9
    s_min = (10 / 0.3927) ** 0.5
    shown = float(err.split("sigma >= ")[1].split()[0])
    assert s_min <= shown <= s_min * (1 + 1e-5)
    rc, out, _ = _run(capsys, "--dataset", "digits", "--model", "linear", "--sigma", "3", "--R", "0.3927",
                      "--T", "3", "--device", "cpu", "--json")
    d = json.loads(out)
    assert rc == 0 and d["steps_done"] == 3 and not d["stopped_early"] and d["R_spent"] <= 0.3927


def test_momentum_schedule_param_and_mlp(capsys):
    rc, out, _ = _run(capsys, "--dataset", "gaussian", "--model", "mlp", "--hidden", "16", "--schedule", "gd-dynamic",
                      "--kappa", "10", "--R", "1", "--T", "5", "--momentum", "0.9", "--n", "100",
                      "--device", "cpu", "--json")
    assert rc == 0
    d = json.loads(out)
    assert d["algorithm"] == "pgd-momentum" and d["steps_done"] == 5


def test_psgd_reports_epsilon(capsys):
    rc, out, _ = _run(capsys, "--dataset", "synthetic", "--model", "logistic", "--epsilon", "4", "--delta", "1e-5",
                      "--T", "10", "--n", "100", "--sampling-rate", "0.5", "--device", "cpu", "--json")
    d = json.loads(out)
    assert rc == 0 and d["algorithm"] == "psgd" and d["epsilon"] > 0
    # planned with the ledger's own accountant: every step is taken, within the target
    assert d["steps_done"] == 10 and not d["stopped_early"]
    assert d["R_spent"] <= d["R"]
    assert d["epsilon"] <= 4.0


def test_psgd_with_R_and_delta(capsys):
    rc, out, err = _run(capsys, "--dataset", "synthetic", "--R", "1", "--delta", "1e-5", "--T", "20", "--n", "100",
                        "--sampling-rate", "0.1", "--device", "cpu", "--json")
    assert rc == 0, err
    d = json.loads(out)
    assert d["steps_done"] == 20 and d["budget"]["accountant"] == "rdp"


def test_acceptance_psgd_300_steps_at_epsilon_1(capsys):
    """p = 0.01, (1, 1e-5), T = 300 trains all 300 steps with epsilon <= 1, checked by
    accountants independent of the ledger's (dp-accounting's PLD and Opacus's RDP)."""
    import dp_accounting as dpa
    from opacus.accountants import RDPAccountant

    rc, out, err = _run(capsys, "--dataset", "synthetic", "--model", "logistic", "--schedule", "uniform",
                        "--sampling-rate", "0.01", "--epsilon", "1", "--delta", "1e-5", "--T", "300",
                        "--device", "cpu", "--json")
    assert rc == 0, err
    d = json.loads(out)
    assert d["steps_done"] == 300 and not d["stopped_early"] and d["epsilon"] <= 1.0
    pld = dpa.pld.PLDAccountant()
    pld.compose(dpa.PoissonSampledDpEvent(0.01, dpa.GaussianDpEvent(d["sigma"][0])), 300)
    assert pld.get_epsilon(1e-5) <= 1.0
    acc = RDPAccountant()
    for s in d["sigma"]:
        acc.step(noise_multiplier=s, sample_rate=0.01)
    assert acc.get_epsilon(1e-5) <= 1.0 + 1e-6


# the epsilon reported is the one of the accountant the budget was planned with.
# (accountant flag, resolved name, sampling rate, momentum).
ACCOUNTANT_CASES = [
    ("auto", "zcdp", 1.0, 0.0), ("zcdp", "zcdp", 1.0, 0.0), ("exact", "exact", 1.0, 0.0),
    ("exact", "exact", 1.0, 0.9), ("rdp", "rdp", 1.0, 0.0),
    ("pld", "pld", 1.0, 0.0),
    ("auto", "rdp", 0.1, 0.0), ("rdp", "rdp", 0.05, 0.0),
]


@pytest.mark.parametrize("epsilon", [0.5, 1.0, 2.0])
@pytest.mark.parametrize("flag,name,p,momentum", ACCOUNTANT_CASES)
def test_reported_epsilon_is_the_budget_accountants_and_within_target(capsys, flag, name, p, momentum, epsilon):
    from dpcompanion.theory import accounting

    rc, out, err = _run(capsys, "--dataset", "synthetic", "--accountant", flag, "--epsilon", str(epsilon),
                        "--delta", "1e-5", "--T", "12", "--n", "100", "--sampling-rate", str(p),
                        "--momentum", str(momentum), "--device", "cpu", "--json")
    assert rc == 0, err
    d = json.loads(out)
    assert d["steps_done"] == 12 and d["accountant"] == name == d["budget"]["accountant"]
    by = d["epsilon_by_accountant"]
    assert set(by) == ({"rdp"} if p < 1 else {"zcdp", "exact", "rdp", "pld"})
    assert d["epsilon"] == by[name] and d["epsilon"] <= epsilon  # exactly: no tolerance
    if p == 1.0:  # independent of the budget's code: the formulas on the reported sigmas
        R = sum(1 / s**2 for s in d["sigma"])
        assert by["zcdp"] == pytest.approx(R / 2 + 2 * math.sqrt(R / 2 * math.log(1e5)), rel=1e-12)
        assert by["exact"] == pytest.approx(accounting.exact_epsilon(sigma=d["sigma"], delta=1e-5), rel=1e-12)
        assert by["exact"] <= by["rdp"] <= by["zcdp"]
        if name == "exact":  # the case at stake: exact keeps to the budget, RDP's conversion reads more
            assert by["rdp"] > epsilon
    else:
        assert by["rdp"] == pytest.approx(
            accounting.rdp_epsilon(orders=accounting.RDP_ORDERS, delta=1e-5,
                                   rdp=accounting.rdp_curve(sigma=d["sigma"], sampling_rate=p)), rel=1e-12)


def test_text_output_names_the_accountant(capsys):
    rc, out, err = _run(capsys, "--dataset", "synthetic", "--accountant", "exact", "--epsilon", "1", "--delta", "1e-5",
                        "--T", "100", "--n", "100", "--device", "cpu")
    assert rc == 0, err
    line = next(ln for ln in out.splitlines() if ln.startswith("epsilon "))
    assert "by the exact accountant" in line and "zcdp" in line and "rdp" in line and "pld" in line
    assert float(line.split()[1]) <= 1.0


BAD = [
    ["--dataset", "imagenet", "--R", "1", "--T", "3"],
    ["--model", "resnet", "--R", "1", "--T", "3"],
    ["--schedule", "zigzag", "--R", "1", "--T", "3"],
    ["--clip", "-1", "--R", "1", "--T", "3"],
    ["--lr", "-0.1", "--R", "1", "--T", "3"],
    ["--R", "1", "--T", "0"],
    ["--T", "3"],
    ["--epsilon", "4", "--T", "3"],
    ["--epsilon", "4", "--delta", "2", "--T", "3"],
    ["--R", "1", "--epsilon", "4", "--delta", "1e-5", "--T", "3"],
    ["--R", "1", "--T", "3", "--sigma", "inf"],
    ["--R", "1", "--T", "3", "--momentum", "1.5"],
    ["--R", "1", "--T", "3", "--schedule", "gd-dynamic"],
    ["--R", "1", "--T", "3", "--schedule", "gd-dynamic", "--kappa", "abc"],
    ["--R", "1", "--T", "3", "--device", "tpu"],
]


@pytest.mark.parametrize("argv", BAD, ids=[" ".join(a) for a in BAD])
def test_bad_input_exit_2_one_line(capsys, argv):
    rc, out, err = _run(capsys, *argv, "--json")
    assert rc == 2 and out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("dpcompanion train: error:") and "Traceback" not in err


@pytest.mark.skipif(torch.cuda.is_available(), reason="a GPU is present")
def test_cuda_without_gpu(capsys):
    rc, _, err = _run(capsys, "--R", "1", "--T", "3", "--device", "cuda", "--json")
    assert rc == 2 and "cuda" in err and len(err.strip().splitlines()) == 1


def test_missing_optional_dataset(capsys, monkeypatch):
    from dpcompanion.training import data

    monkeypatch.setattr(data, "_fashion_dir", lambda: None)  # as on a machine without the package
    rc, _, err = _run(capsys, "--dataset", "fashion", "--R", "1", "--T", "3", "--json")
    assert rc == 2 and "dataset-fashion-mnist" in err and len(err.strip().splitlines()) == 1


@pytest.mark.slow
def test_module_entry_point_subprocess():
    r = subprocess.run([sys.executable, "-m", "dpcompanion", "train", "--dataset", "synthetic", "--n", "50",
                        "--R", "1", "--T", "3", "--device", "cpu", "--json"], capture_output=True, text=True, timeout=HANG_GUARD_S)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["steps_done"] == 3
    r = subprocess.run([sys.executable, "-m", "dpcompanion", "train", "--clip", "-2", "--R", "1", "--T", "3"],
                       capture_output=True, text=True, timeout=HANG_GUARD_S)
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr

"""Command-line tests of ``zcdp`` and ``schedule``: acceptance numbers and clean refusals."""

from __future__ import annotations

import csv
import json
import math
import subprocess
import sys

import numpy as np
import pytest

from dpcompanion.theory import accounting
from dpcompanion import cli
from limits import HANG_GUARD_S


def _run(argv, capsys):
    rc = cli.main(argv)
    out, err = capsys.readouterr()
    return rc, out, err


def test_acceptance_zcdp_command_reproduces_paper_anchor():
    # The acceptance command, as a user runs it (a real subprocess).
    proc = subprocess.run([sys.executable, "-m", "dpcompanion", "zcdp", "--epsilon", "4", "--delta", "1e-8", "--json"],
                          capture_output=True, text=True, timeout=HANG_GUARD_S)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    # Hong et al. 2022 (file 001) Sec. 5: "(4, 1e-8)-DP, equal to 0.1963-zCDP, which implies
    # R = 0.3927", compared at the printed 4 decimals (the paper truncates rho = 0.19635...).
    assert abs(out["rho"] - 0.1963) < 1e-4
    assert abs(out["R"] - 0.3927) <= 0.5e-4  # rounds to the printed 0.3927
    assert {"epsilon", "delta", "rho", "R", "R_exact", "R_ma"} <= set(out)
    assert out["R_exact"] > out["R"] and out["epsilon_exact_at_R"] < 4


def test_zcdp_rho_direction(capsys):
    rc, out, _ = _run(["zcdp", "--rho", "0.5", "--delta", "1e-5", "--json"], capsys)
    d = json.loads(out)
    assert rc == 0 and d["epsilon"] == pytest.approx(0.5 + 2 * math.sqrt(0.5 * math.log(1e5)))
    assert d["R"] == 1.0
    rc, out, _ = _run(["zcdp", "--R", "1.0", "--delta", "1e-5"], capsys)
    assert rc == 0 and "epsilon" in out and "R_exact" in out


@pytest.mark.parametrize("argv,needle", [
    (["zcdp", "--epsilon", "0", "--delta", "1e-5"], "--epsilon"),
    (["zcdp", "--epsilon", "-2", "--delta", "1e-5"], "--epsilon"),
    (["zcdp", "--epsilon", "1", "--delta", "1"], "--delta"),
    (["zcdp", "--epsilon", "1", "--delta", "0"], "--delta"),
    (["zcdp", "--rho", "-1", "--delta", "1e-5"], "--rho"),
])
def test_zcdp_bad_input(argv, needle, capsys):
    rc, out, err = _run(argv, capsys)
    assert rc == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and needle in err and "Traceback" not in err


def test_schedule_json(capsys):
    rc, out, _ = _run(["schedule", "--kind", "gd-dynamic", "--T", "50", "--epsilon", "4", "--delta", "1e-8",
                       "--kappa", "20", "--json"], capsys)
    d = json.loads(out)
    assert rc == 0 and d["kind"] == "gd-dynamic" and d["T"] == 50 and len(d["sigma"]) == 50
    assert d["R"] == pytest.approx(accounting.R_zcdp(epsilon=4, delta=1e-8))
    assert sum(1 / s**2 for s in d["sigma"]) == pytest.approx(d["R"], rel=1e-9)
    assert d["epsilon_zcdp"] == pytest.approx(4.0)
    assert d["epsilon_exact"] < 4.0
    rc, out, _ = _run(["schedule", "--kind", "uniform", "--T", "10", "--epsilon", "4", "--delta", "1e-8",
                       "--budget", "exact", "--json"], capsys)
    assert json.loads(out)["epsilon_exact"] == pytest.approx(4.0, rel=1e-6)


@pytest.mark.parametrize("acc,p", [("exact", "1"), ("rdp", "1"), ("zcdp", "1"), ("auto", "0.1"), ("rdp", "0.02")])
def test_schedule_reports_the_budget_accountants_epsilon(acc, p, capsys):
    """The epsilon shown is that of the accountant the budget was planned with, <= the target."""
    rc, out, _ = _run(["schedule", "--kind", "uniform", "--T", "100", "--epsilon", "2", "--delta", "1e-5",
                       "--accountant", acc, "--sampling-rate", p, "--json"], capsys)
    d = json.loads(out)
    name = {"auto": "rdp"}.get(acc, acc)
    assert rc == 0 and d["accountant"] == name and d["epsilon"] == d["epsilon_by_accountant"][name] <= 2.0
    assert set(d["epsilon_by_accountant"]) == ({"rdp"} if p != "1" else {"zcdp", "exact", "rdp", "pld"})
    rc, out, _ = _run(["schedule", "--kind", "uniform", "--T", "100", "--epsilon", "2", "--delta", "1e-5",
                       "--accountant", acc, "--sampling-rate", p], capsys)
    assert rc == 0 and f"by the {name} accountant" in out


def test_schedule_R_only_uses_default_delta(capsys):
    rc, out, _ = _run(["schedule", "--kind", "step", "--T", "8", "--R", "0.5", "--json"], capsys)
    d = json.loads(out)
    assert rc == 0 and d["delta"] == 1e-5 and d["R"] == 0.5


def test_schedule_csv_and_optimal_file(tmp_path, capsys):
    q = tmp_path / "q.csv"
    q.write_text("t,q\n1,0.5\n2,1.0\n3,2.0\n")
    target = tmp_path / "s.csv"
    rc, out, err = _run(["schedule", "--kind", "optimal", "--R", "1", "--influence", str(q), "--csv", str(target)], capsys)
    assert rc == 0, err
    rows = list(csv.DictReader(target.open()))
    assert list(rows[0]) == ["t", "sigma", "cost_t", "rho_t", "spent"]
    assert [r["t"] for r in rows] == ["1", "2", "3"]
    assert float(rows[-1]["spent"]) == pytest.approx(1.0, rel=1e-12)
    sig = np.array([float(r["sigma"]) for r in rows])
    # the step's cost in R units (1/sigma^2 at full batch) and its zCDP rho = cost/2 (R = 2 rho)
    assert np.allclose([float(r["cost_t"]) for r in rows], 1 / sig**2)
    assert np.allclose([float(r["rho_t"]) for r in rows], 1 / (2 * sig**2))
    assert sig[0] > sig[1] > sig[2]
    plain = tmp_path / "q.txt"
    plain.write_text("# influence\n0.5\n1.0\n\n2.0\n")
    rc, out, _ = _run(["schedule", "--kind", "optimal", "--R", "1", "--influence", str(plain), "--json"], capsys)
    assert rc == 0 and np.allclose(json.loads(out)["sigma"], sig)


@pytest.mark.parametrize("extra,needle", [
    (["--kind", "uniform", "--T", "10", "--epsilon", "-1", "--delta", "1e-5"], "--epsilon"),
    (["--kind", "uniform", "--T", "10", "--epsilon", "1", "--delta", "1.5"], "--delta"),
    (["--kind", "uniform", "--T", "10", "--epsilon", "1"], "--delta"),
    (["--kind", "uniform", "--T", "0", "--R", "1"], "--T"),
    (["--kind", "gd-dynamic", "--T", "10", "--R", "1"], "--kappa"),
    (["--kind", "gd-dynamic", "--T", "10", "--R", "1", "--kappa", "0.5"], "--kappa"),
    (["--kind", "momentum-dynamic", "--T", "10", "--R", "1", "--kappa", "10"], "--beta"),
    (["--kind", "momentum-dynamic", "--T", "10", "--R", "1", "--kappa", "10", "--beta", "1"], "--beta"),
    (["--kind", "exp", "--T", "10", "--R", "1"], "--rate"),
    (["--kind", "optimal", "--R", "1"], "--influence"),
    (["--kind", "optimal", "--R", "1", "--influence", "/nonexistent/q.txt"], "--influence"),
    (["--kind", "gd-dynamic", "--T", "100000", "--R", "1", "--kappa", "10"], "float64"),
])
def test_schedule_bad_input_writes_nothing(extra, needle, tmp_path, capsys):
    target = tmp_path / "out.csv"
    rc, out, err = _run(["schedule", *extra, "--csv", str(target)], capsys)
    assert rc == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and needle in err and "Traceback" not in err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("content", ["0.5\n-1\n", "0.5\nabc\n", "a,b\n1,2\n", "", "1,2\n3,4\n"])
def test_schedule_invalid_influence_file(content, tmp_path, capsys):
    q = tmp_path / "q.txt"
    q.write_text(content)
    target = tmp_path / "out.csv"
    rc, out, err = _run(["schedule", "--kind", "optimal", "--R", "1", "--influence", str(q), "--csv", str(target)], capsys)
    assert rc == 2 and "--influence" in err and len(err.strip().splitlines()) == 1
    assert not target.exists()


def test_schedule_csv_into_missing_folder(tmp_path, capsys):
    rc, out, err = _run(["schedule", "--kind", "uniform", "--T", "3", "--R", "1", "--csv",
                         str(tmp_path / "nope" / "deeper" / "s.csv")], capsys)
    assert rc == 2 and "--csv" in err and "Traceback" not in err
    assert list(tmp_path.iterdir()) == []  # nothing created

"""Every command refuses bad input up front: exit 2, one line on stderr naming the flag,
nothing on stdout, nothing written. One table, every command."""

from __future__ import annotations

import math

import pytest

from dpcompanion import cli
from dpcompanion.experiments import base

TRAIN = ["train", "--dataset", "synthetic", "--n", "50", "--device", "cpu", "--json"]
SCHED = ["schedule", "--kind", "uniform", "--T", "10", "--R", "1"]

#: (argv, text the one line must contain). {tmp} is a fresh empty folder; {file} a file in it.
CASES = [
    # zcdp
    (["zcdp", "--epsilon", "1e300", "--delta", "1e-5"], "--epsilon"),
    (["zcdp", "--epsilon", "inf", "--delta", "1e-5"], "--epsilon"),
    (["zcdp", "--epsilon", "nan", "--delta", "1e-5"], "--epsilon"),
    (["zcdp", "--epsilon", "-1", "--delta", "1e-5"], "--epsilon"),
    (["zcdp", "--epsilon", "1", "--delta", "1"], "--delta"),
    (["zcdp", "--R", "1e400", "--delta", "1e-5"], "--R"),
    (["zcdp", "--rho", "0", "--delta", "1e-5"], "--rho"),
    (["zcdp", "--epsilon", "abc", "--delta", "1e-5"], "--epsilon"),
    # schedule
    ([*SCHED[:-2], "--epsilon", "1e300", "--delta", "1e-5"], "--epsilon"),
    ([*SCHED, "--csv", "{tmp}/a/b/s.csv"], "--csv"),
    ([*SCHED, "--csv", "/proc/s.csv"], "--csv"),
    ([*SCHED, "--csv", "{file}/s.csv"], "--csv"),
    ([*SCHED, "--csv", "{tmp}"], "--csv"),
    ([*SCHED, "--kappa", "10"], "--kappa"),
    (["schedule", "--kind", "gd-dynamic", "--T", "10", "--R", "1", "--kappa", "0.5"], "--kappa"),
    (["schedule", "--kind", "step", "--T", "10", "--R", "1", "--period", "2.5"], "--period"),
    (["schedule", "--kind", "momentum-dynamic", "--T", "10", "--R", "1", "--kappa", "10", "--beta", "0.5",
      "--variant", "nope"], "--variant"),
    (["schedule", "--kind", "zigzag", "--T", "10", "--R", "1"], "--kind"),
    (["schedule", "--kind", "uniform", "--T", "1e9", "--R", "1"], "--T"),
    (["schedule", "--kind", "uniform", "--T", "0", "--R", "1"], "--T"),
    ([*SCHED, "--sampling-rate", "0"], "--sampling-rate"),
    ([*SCHED, "--accountant", "magic"], "--accountant"),
    (["schedule", "--kind", "uniform", "--T", "10", "--epsilon", "1", "--delta", "1e-5", "--sampling-rate", "0.1",
      "--accountant", "zcdp"], "--epsilon"),
    # train
    ([*TRAIN, "--R", "1", "--T", "10", "--sigma", "inf"], "--sigma"),
    ([*TRAIN, "--R", "1", "--T", "10", "--sigma", "nan"], "--sigma"),
    ([*TRAIN, "--R", "1", "--T", "10", "--sigma", "0"], "--sigma"),
    ([*TRAIN, "--R", "1", "--T", "10", "--sigma", "-1"], "--sigma"),
    ([*TRAIN, "--R", "1", "--T", "10", "--sigma", "1e-320"], "--sigma"),
    ([*TRAIN, "--R", "0.3927", "--T", "10", "--sigma", "3"], "largest T that fits is 3"),
    ([*TRAIN, "--R", "1", "--T", "1000000000", "--sigma", "1"], "--T"),
    ([*TRAIN[:4], "--n", "100000000", "--device", "cpu", "--R", "1", "--T", "10"], "--n"),
    ([*TRAIN, "--R", "1", "--T", "10", "--schedule-param", "kappa=10"], "--schedule-param"),
    ([*TRAIN, "--R", "1", "--T", "10", "--schedule", "gd-dynamic"], "--kappa"),
    ([*TRAIN, "--R", "1", "--T", "10", "--schedule", "gd-dynamic", "--kappa", "10", "--beta", "0.5"], "--beta"),
    ([*TRAIN, "--R", "1", "--T", "10", "--schedule", "optimal"], "--influence"),
    ([*TRAIN, "--R", "1", "--T", "10", "--sampling-rate", "0.1"], "delta"),
    ([*TRAIN, "--epsilon", "1", "--T", "10"], "--delta"),
    ([*TRAIN, "--R", "1", "--T", "10", "--lr", "inf"], "--lr"),
    ([*TRAIN, "--R", "1", "--T", "10", "--momentum", "1"], "--momentum"),
    ([*TRAIN, "--R", "1", "--T", "10", "--clip", "0"], "--clip"),
    ([*TRAIN, "--R", "1", "--T", "10", "--hidden", "0", "--model", "mlp"], "--hidden"),
    ([*TRAIN, "--R", "1", "--T", "10", "--seed", "-1"], "--seed"),
    # --scale that underflows/overflows float32, --n below an image set's PCA dimension or
    # above its size, a --sigma whose noise overflows (refused before any schedule advice)
    ([*TRAIN, "--R", "1", "--T", "10", "--scale", "1e-300"], "--scale: scale must be in [1e-06, 1e+06]"),
    ([*TRAIN, "--R", "1", "--T", "10", "--scale", "1e7"], "--scale"),
    (["train", "--dataset", "mnist", "--n", "50", "--device", "cpu", "--R", "1", "--T", "3"],
     "--n must be at least 60 for --dataset mnist"),
    (["train", "--dataset", "mnist35", "--n", "59", "--device", "cpu", "--R", "1", "--T", "3"],
     "--n must be at least 60 for --dataset mnist35"),
    (["train", "--dataset", "digits", "--n", "5000", "--device", "cpu", "--R", "1", "--T", "3"],
     "--n must be in [1, 1796] for digits"),
    ([*TRAIN, "--R", "1", "--T", "10", "--sigma", "1e300"], "--sigma: sigma must be <="),
    ([*TRAIN, "--R", "1", "--T", "10", "--sigma", "1e100"], "--sigma: sigma must be <="),
    ([*TRAIN, "--epsilon", "1", "--delta", "1e-5", "--T", "10", "--sampling-rate", "0.5", "--sigma", "1e300"],
     "--sigma: sigma must be <="),
    # checks
    (["checks", "--id", ""], "--id"),
    (["checks", "--id", "NO-SUCH-CLAIM"], "--id"),
    # bench
    (["bench", "--quick", "--size", "tiny", "--out", "{tmp}/a/b/x.json"], "--out"),
    (["bench", "--quick", "--size", "tiny", "--out", "/proc/x.json"], "--out"),
    (["bench", "--quick", "--size", "tiny", "--out", "{tmp}/x.txt"], "--out"),
    (["bench", "--quick", "--size", "tiny", "--out", "{tmp}"], "--out"),
    (["bench", "--quick", "--size", "tiny", "--runs", "0"], "--runs"),
    (["bench", "--quick", "--size", "tiny", "--steps", "1e9"], "--steps"),
    (["bench", "--quick", "--size", "tiny", "--opacus-modes", "nope"], "--opacus-modes"),
    # audit
    (["audit", "--trainer", "sgd", "--epsilon", "2", "--delta", "1e-5"], "--trainer"),
    (["audit", "--trainer", "pgd", "--epsilon", "inf", "--delta", "1e-5"], "--epsilon"),
    (["audit", "--trainer", "pgd", "--epsilon", "2", "--delta", "1"], "--delta"),
    (["audit", "--trainer", "pgd", "--epsilon", "2", "--delta", "1e-5", "--trials", "0"], "--trials"),
    (["audit", "--trainer", "pgd", "--epsilon", "2", "--delta", "1e-5", "--noise-multiplier-scale", "0"],
     "--noise-multiplier-scale"),
    # tiny sampling rates (p * p divided by zero), the audit's epsilon cap and floor
    ([*SCHED[:-2], "--epsilon", "1", "--delta", "1e-5", "--sampling-rate", "1e-300"], "--sampling-rate"),
    ([*SCHED, "--delta", "1e-5", "--sampling-rate", "1e-10"], "--sampling-rate"),
    ([*TRAIN, "--epsilon", "1", "--delta", "1e-5", "--T", "10", "--sampling-rate", "1e-300"], "--sampling-rate"),
    (["audit", "--trainer", "psgd", "--epsilon", "2", "--delta", "1e-5", "--sampling-rate", "1e-300"],
     "--sampling-rate"),
    (["audit", "--trainer", "pgd", "--epsilon", "1e7", "--delta", "1e-5"], "--epsilon must be in [1e-06, 1e+06]"),
    (["audit", "--trainer", "pgd", "--epsilon", "1e-300", "--delta", "1e-5"], "--epsilon must be in [1e-06, 1e+06]"),
    (["audit", "--trainer", "psgd", "--epsilon", "1e-300", "--delta", "1e-5"], "underflows"),
    # experiment, results
    (["experiment", "no-such-experiment"], "no-such-experiment"),
    (["experiment", "h-f-infl", "--executor", "spark"], "--executor"),
    (["experiment", "h-f-infl", "--executor", "dask", "--workers", "0"], "--workers"),
    (["experiment", "h-f-infl", "--executor", "dask", "--workers", "1000000000000"], "--workers must be at most"),
    (["experiment", "h-f-infl", "--executor", "dask", "--scheduler", "tls://127.0.0.1:1"], "--scheduler must be"),
    (["experiment", "h-f-infl", "--executor", "dask", "--scheduler", "tcp://127.0.0.1:99999"], "--scheduler must be"),
    (["experiment", "h-f-infl", "--executor", "dask", "--scheduler", "127.0.0.1"], "--scheduler must be"),
    (["reproduce", "--only", "h-f-infl", "--executor", "dask", "--workers", "1000000000000"], "--workers must be at most"),
    (["reproduce", "--only", "h-f-infl", "--executor", "dask", "--scheduler", "tls://127.0.0.1:1"],
     "--scheduler must be"),
    (["experiment", "h-f-infl", "--mode", "turbo"], "--mode"),
    # the list is the registry's (base.with_mode), not typed here
    (["experiment", "h-f-infl", "--mode", "paper"], "--mode: experiment h-f-infl has no paper config; experiments with "
                                                    "one: " + ", ".join(base.with_mode("paper"))),
    (["experiment", "h-f-infl", "--seed", "-1"], "--seed"),
    (["results", "--revalidate", "--device", "tpu"], "--device"),
    (["results", "--results-dir", "{file}"], "--results-dir"),
    (["results", "--results-dir", ""], "--results-dir"),
    (["results", "--results-dir", "/proc/x"], "--results-dir"),
    (["experiment", "h-f-infl", "--results-dir", "{file}"], "--results-dir"),
    (["experiment", "h-f-infl", "--results-dir", "{file}/sub"], "--results-dir"),
    (["experiment", "h-f-infl", "--results-dir", "/proc/x/y"], "--results-dir"),
    (["experiment", "h-f-infl", "--results-dir", ""], "--results-dir"),
    # verdicts
    (["verdicts", "--page", "no-such-page"], "--page"),
    (["verdicts", "--csv", "{tmp}/a/b/v.csv"], "--csv"),
    (["verdicts", "--csv", "{tmp}/v.txt"], "--csv"),
    (["verdicts", "--csv", "{tmp}"], "--csv"),
    (["verdicts", "--seed", "-1"], "--seed"),
    (["verdicts", "--device", "tpu"], "--device"),
    # reproduce
    (["reproduce", "--seed", "-1"], "--seed"),
    (["reproduce", "--mode", "turbo"], "--mode"),
    (["reproduce", "--device", "tpu"], "--device"),
    (["reproduce", "--only", ""], "--only"),
    # an unusable output folder is found before any computation (a probe file, not os.access)
    (["reproduce", "--only", "h-f-infl", "--output", "/proc/x"], "--output /proc/x cannot be written"),
    (["reproduce", "--only", "accounting", "--output", "/proc/x/y"], "--output /proc/x/y cannot be written"),
    (["reproduce", "--only", "h-f-infl", "--output", "{file}/gen"], "is not a folder"),
    # the adversarial review's probes of the command line: subnormal deltas (rho 0
    # printed, "math domain error"), overflowing schedule parameters, path segments over 255 bytes, an
    # --influence that never ends, refusals that blamed sigma or R, the pld accountant past its range
    (["zcdp", "--epsilon", "1", "--delta", "5e-324"], "--delta: delta must be in (0, 1) and at least 2.2e-308"),
    (["zcdp", "--epsilon", "1e6", "--delta", "5e-324"], "--delta"),
    (["zcdp", "--epsilon", "1", "--delta", "1e-310"], "--delta"),
    ([*SCHED[:-2], "--epsilon", "1", "--delta", "1e-310", "--sampling-rate", "0.1"], "--delta"),
    ([*TRAIN, "--R", "1", "--T", "10", "--delta", "1e-310"], "--delta"),
    (["audit", "--trainer", "pgd", "--epsilon", "1", "--delta", "1e-310"], "--delta"),
    (["schedule", "--kind", "gd-dynamic", "--T", "10", "--R", "1", "--kappa", "1e308"], "--kappa 1e308"),
    (["schedule", "--kind", "step", "--T", "10", "--R", "1", "--period", "99999999999999999999"],
     "--period must be an integer in [1, 10,000,000]"),
    ([*SCHED, "--csv", "{tmp}/" + "x" * 300 + "/s.csv"], "--csv: the path segment"),
    ([*SCHED, "--csv", "{tmp}/" + "x" * 300 + ".csv"], "--csv: the path segment"),
    (["verdicts", "--csv", "{tmp}/" + "x" * 300 + ".csv"], "--csv: the path segment"),
    (["results", "--results-dir", "{tmp}/" + "x" * 300], "--results-dir: the path segment"),
    (["experiment", "h-f-infl", "--results-dir", "{tmp}/" + "x" * 300], "--results-dir: the path segment"),
    (["schedule", "--kind", "optimal", "--R", "1", "--influence", "/dev/zero"], "--influence /dev/zero: not a regular file"),
    (["schedule", "--kind", "optimal", "--R", "1", "--influence", "{tmp}"], "not a regular file"),
    ([*TRAIN, "--R", "1", "--T", "10", "--clip", "1e-320"], "--clip: clip must be in [1e-06, 1e+06]"),
    (["audit", "--trainer", "pgd", "--epsilon", "1e-6", "--delta", "1e-5"], "--epsilon 1e-06 at --delta 1e-05 gives"),
    ([*SCHED[:-2], "--epsilon", "1e6", "--delta", "1e-5", "--accountant", "pld"], "--epsilon: epsilon must be small "
                                                                                   "enough that R <= 1e+06 for the pld"),
    (["audit", "--trainer", "pgd", "--epsilon", "2", "--delta", "1e-5", "--canary-label", "inf"], "--canary-label"),
    (["audit", "--trainer", "psgd", "--epsilon", "2", "--delta", "1e-5", "--canary-label", "2"], "--canary-label"),
    # the pld accountant below its tail truncation: its epsilon was inf, so the planner chose sigma 21,834
    # for epsilon 1 at delta 1e-17 (2.3 suffices), and the JSON printed Infinity
    ([*SCHED[:-2], "--epsilon", "1", "--delta", "1e-17", "--accountant", "pld"], "--delta: delta must be at least 1e-14"),
    ([*SCHED, "--delta", "1e-15", "--accountant", "pld", "--json"], "--delta: delta must be at least 1e-14"),
    ([*TRAIN, "--epsilon", "1", "--delta", "1e-17", "--T", "5", "--accountant", "pld"], "--delta: delta must be at least"),
]


def _fill(argv, tmp_path):
    f = tmp_path / "afile"
    f.write_text("x")
    return [a.replace("{tmp}", str(tmp_path)).replace("{file}", str(f)) for a in argv]


@pytest.mark.parametrize("argv,needle", CASES, ids=[" ".join(a) for a, _ in CASES])
def test_refused_up_front(argv, needle, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    argv = _fill(argv, tmp_path)
    before = sorted(p.name for p in tmp_path.rglob("*"))
    try:
        rc = cli.main(argv)
    except SystemExit as exc:  # argparse's own refusals (unknown flag)
        rc = exc.code
    out, err = capsys.readouterr()
    assert rc == 2, err
    assert out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"dpcompanion {argv[0]}: error: ") and "Traceback" not in err, err
    assert needle in lines[0], lines[0]
    assert sorted(p.name for p in tmp_path.rglob("*")) == before  # nothing written, no folder created


def test_every_command_is_covered():
    covered = {argv[0] for argv, _ in CASES}
    assert set(cli.COMMANDS) <= covered, "add bad-input rows for: " + ", ".join(sorted(set(cli.COMMANDS) - covered))


def test_one_missing_leaf_folder_is_created(tmp_path, capsys):
    target = tmp_path / "new" / "s.csv"
    assert cli.main([*SCHED, "--csv", str(target)]) == 0
    assert target.exists()


def test_divergence_exits_1_unless_allowed(capsys):
    argv = [*TRAIN, "--model", "mlp", "--hidden", "8", "--R", "1", "--T", "5", "--lr", "1e300"]
    assert cli.main(argv) == 1
    err = capsys.readouterr().err
    assert "diverged" in err and "--allow-divergence" in err
    assert cli.main([*argv, "--allow-divergence"]) == 0


@pytest.mark.parametrize("command", ["schedule", "train", "zcdp", "bench", "checks", "reproduce"])
def test_help_shows_examples(command, capsys):
    with pytest.raises(SystemExit):
        cli.main([command, "--help"])
    out = capsys.readouterr().out
    assert "examples:" in out and out.count("python -m dpcompanion") >= 2


@pytest.mark.parametrize("command", ["schedule", "train"])
def test_help_lists_every_kind_with_its_parameters(command, capsys):
    from dpcompanion.theory.schedules import KIND_TABLE

    with pytest.raises(SystemExit):
        cli.main([command, "--help"])
    out = capsys.readouterr().out
    for k in KIND_TABLE.values():
        assert k.signature() in out
    assert "default corrected" in out  # --variant's help names the real default


HELP_CASES = [["--help"], ["-h"]] + [[c, flag] for c in cli.COMMANDS for flag in ("--help", "-h")]


@pytest.mark.parametrize("argv", HELP_CASES, ids=[" ".join(a) for a in HELP_CASES])
def test_help_of_every_command_prints_and_exits_0(argv, capsys):
    """Top level and every command of cli.COMMANDS (a literal % in a help text made
    argparse's %-formatting crash ``--help``)."""
    with pytest.raises(SystemExit) as exc:
        cli.main(argv)
    out, err = capsys.readouterr()
    assert exc.value.code == 0 and err == "", err
    assert out.startswith("usage: dpcompanion")
    if argv[0].startswith("-"):
        for name in cli.COMMANDS:  # every command is listed with its one-line help
            assert name in out


def test_help_as_a_user_runs_it():
    """``python -m dpcompanion --help``, the README's first command, in a real process."""
    import subprocess
    import sys

    from limits import HANG_GUARD_S

    proc = subprocess.run([sys.executable, "-m", "dpcompanion", "--help"], capture_output=True, text=True,
                          timeout=HANG_GUARD_S)
    assert proc.returncode == 0 and proc.stderr == "" and "95% lower bound" in proc.stdout, proc.stderr


# --- a --scheduler whose peer is not a Dask scheduler: local sockets on port 0 only


@pytest.fixture(params=["garbage", "silent"])
def bad_peer(request):
    """A thread server on 127.0.0.1, port 0: ``garbage`` answers every connection with bytes that
    are not Dask's protocol (Dask read a length prefix and tried to allocate 3.07 EiB);
    ``silent`` accepts and never answers (Dask's own timeout did not end the wait)."""
    import socket
    import threading

    srv = socket.create_server(("127.0.0.1", 0))
    srv.settimeout(0.1)
    conns, stop = [], threading.Event()

    def serve():
        while not stop.is_set():
            try:
                c, _ = srv.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            conns.append(c)
            if request.param == "garbage":
                try:
                    c.sendall(b"HTTP/1.1 200 OK\r\n\r\n" + b"\xff" * 64)
                except OSError:
                    pass

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    yield f"tcp://127.0.0.1:{srv.getsockname()[1]}"
    stop.set()
    t.join()
    srv.close()
    for c in conns:
        c.close()


def test_scheduler_that_is_not_dask_is_one_line_within_the_deadline(bad_peer, tmp_path, monkeypatch, capsys,
                                                                    record_property):
    """One line naming --scheduler, exit 2, nothing written; the call returns (SCHEDULER_TIMEOUT_S is a
    hard deadline). The join below only turns a hang into a failure: it is 20 times the deadline, so
    the outcome does not depend on the machine's speed; the time taken is recorded."""
    import threading
    import time

    from dpcompanion.experiments import store

    monkeypatch.setenv("DPCOMPANION_RESULTS", str(tmp_path / "results"))
    box = {}

    def call():
        t0 = time.perf_counter()
        box["rc"] = cli.main(["experiment", "h-f-infl", "--executor", "dask", "--scheduler", bad_peer])
        box["s"] = time.perf_counter() - t0

    th = threading.Thread(target=call, daemon=True)
    th.start()
    th.join(20 * store.SCHEDULER_TIMEOUT_S)
    assert not th.is_alive(), f"experiment --scheduler {bad_peer} hung"
    record_property("seconds", box["s"])
    out, err = capsys.readouterr()
    assert box["rc"] == 2 and out == "", err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"dpcompanion experiment: error: --scheduler {bad_peer}: "
                                                   f"cannot connect within {store.SCHEDULER_TIMEOUT_S} s"), err
    assert "Traceback" not in err and "EiB" not in err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("argv", [["experiment", "h-f-infl"], ["reproduce", "--only", "h-f-infl", "--output", "{tmp}/gen"]],
                         ids=["experiment", "reproduce"])
def test_unusable_results_root_is_refused_before_any_work(argv, tmp_path, monkeypatch, capsys):
    """DPCOMPANION_RESULTS=/proc/x: os.access passes for root, a probe file does not."""
    monkeypatch.setenv("DPCOMPANION_RESULTS", "/proc/x")
    monkeypatch.chdir(tmp_path)
    assert cli.main(_fill(argv, tmp_path)) == 2
    out, err = capsys.readouterr()
    lines = err.strip().splitlines()
    assert out == "" and len(lines) == 1 and lines[0].startswith(f"dpcompanion {argv[0]}: error: results folder /proc/x"), err
    assert "DPCOMPANION_RESULTS" in lines[0]
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["afile"]


def test_influence_file_has_the_step_limit_of_T(tmp_path, monkeypatch, capsys):
    """--influence with more values than --T allows is refused with the one constant
    (validate.MAX_STEPS, lowered here so that the file is small; the real 10,000,001-value file is
    the slow test below)."""
    from dpcompanion.core import validate

    monkeypatch.setattr(validate, "MAX_STEPS", 5)
    f = tmp_path / "q.txt"
    for n, rc in ((5, 0), (6, 2)):
        f.write_text("# influences\n" + "1\n" * n)
        assert cli.main(["schedule", "--kind", "optimal", "--R", "1", "--influence", str(f), "--json"]) == rc
        out, err = capsys.readouterr()
        if rc == 2:
            lines = err.strip().splitlines()
            assert out == "" and len(lines) == 1 and lines[0].startswith("dpcompanion schedule: error: --influence")
            assert "more than 5 values" in lines[0] and "as for --T" in lines[0]
    assert cli.main(["schedule", "--kind", "uniform", "--R", "1", "--T", "6"]) == 2  # the same limit
    assert "--T must be an integer in [1, 5]" in capsys.readouterr().err


@pytest.mark.slow
def test_influence_file_of_ten_million_and_one_values_is_refused(tmp_path, capsys):
    from dpcompanion.core.validate import MAX_STEPS

    f = tmp_path / "q.txt"
    f.write_text("1\n" * (MAX_STEPS + 1))
    assert cli.main(["schedule", "--kind", "optimal", "--R", "1", "--influence", str(f)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and "--influence" in err and "more than 10,000,000 values" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["q.txt"]


@pytest.mark.parametrize("trainer", ["pgd", "psgd"])
def test_sigma_whose_square_overflows_is_a_value_error(trainer):
    """train_psgd(sigma=[1, 1e300]) raised OverflowError in the accounting."""
    import torch

    from dpcompanion.training.models import make_model
    from dpcompanion.training.trainers import train_pgd, train_psgd

    X, y = torch.randn(20, 3, dtype=torch.float64), torch.randint(0, 2, (20,))
    model = make_model("logistic", in_dim=3, n_classes=2)
    fn, kw = (train_pgd, {}) if trainer == "pgd" else (train_psgd, {"sampling_rate": 0.5, "delta": 1e-5})
    for R in (None, 1.0):
        with pytest.raises(ValueError, match=r"sigma must be <= 1.34e\+154 .* got 1e\+300 at step 2"):
            fn(model, X, y, sigma=[1.0, 1e300], R=R, clip_norm=1.0, lr=0.1, seed=0, progress=False,
               dtype=torch.float64, **kw)


# --- cases whose right answer is an answer (exit 0), not a refusal

#: (argv, epsilon target): the subsampled RDP budget outside the old root bracket (epsilon below
#: about 0.0038 or above about 3077 said "f(a) and f(b) must have different signs"), the pld
#: accountant at epsilon 1000 (120 s and 4.5 GB before) and train at epsilon 10000 (it died
#: after training while reporting its pld epsilon)
ANSWERS = [
    ([*SCHED[:-2], "--epsilon", "0.003", "--delta", "1e-5", "--sampling-rate", "0.1", "--json"], 0.003),
    ([*SCHED[:-2], "--epsilon", "4000", "--delta", "1e-5", "--sampling-rate", "0.1", "--json"], 4000.0),
    ([*SCHED[:-2], "--epsilon", "1000", "--delta", "1e-5", "--accountant", "pld", "--json"], 1000.0),
    ([*TRAIN, "--epsilon", "10000", "--delta", "1e-5", "--T", "10", "--seed", "0"], 10000.0),
    # below the pld accountant's delta floor the report leaves pld out instead of printing Infinity
    ([*SCHED[:-2], "--epsilon", "1", "--delta", "1e-17", "--json"], 1.0),
]


@pytest.mark.parametrize("argv,target", ANSWERS, ids=[" ".join(a) for a, _ in ANSWERS])
def test_edge_budgets_get_their_answer(argv, target, capsys):
    """Exit 0 and an epsilon within the target by the budget's accountant, every accountant named."""
    import json

    assert cli.main(argv) == 0
    out = json.loads(capsys.readouterr().out)
    assert 0 <= out["epsilon"] <= target
    assert out["epsilon"] == out["epsilon_by_accountant"][out["accountant"]]
    assert all(math.isfinite(v) for v in out["epsilon_by_accountant"].values())
    if out["sampling_rate"] == 1:
        pld = [] if out.get("delta", out.get("budget", {}).get("delta", 1)) < 1e-14 else ["pld"]
        assert sorted(out["epsilon_by_accountant"]) == sorted(["exact", "rdp", "zcdp", *pld])


# --- an output path is written through when it is not a regular file


def _schedule_csv(target) -> str:
    assert cli.main([*SCHED[:4], "3", "--R", "1", "--csv", str(target)]) == 0
    return "t,sigma,cost_t,rho_t,spent"


def test_csv_to_dev_null_leaves_it_a_character_device(capsys):
    """``schedule --csv /dev/null`` writes through: /dev/null stays the same character device
    (renamed over as root, it became a regular file)."""
    import os
    import stat

    before = os.stat("/dev/null")
    _schedule_csv("/dev/null")
    after = os.stat("/dev/null")
    assert stat.S_ISCHR(after.st_mode) and (after.st_ino, after.st_rdev) == (before.st_ino, before.st_rdev)


def test_csv_to_a_fifo_writes_through_it(tmp_path, capsys):
    """A FIFO stays a FIFO and its reader gets the CSV."""
    import os
    import stat
    import threading

    fifo = tmp_path / "pipe.csv"
    os.mkfifo(fifo)
    got = {}
    reader = threading.Thread(target=lambda: got.setdefault("text", fifo.read_text()), daemon=True)
    reader.start()
    header = _schedule_csv(fifo)
    reader.join(60)
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert got["text"].splitlines()[0] == header and len(got["text"].splitlines()) == 4
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pipe.csv"]  # no temporary file left


@pytest.mark.parametrize("command", ["schedule", "verdicts"])
def test_csv_to_a_symlink_writes_its_target(command, tmp_path, capsys):
    """The link stays a link, its target (a regular file) gets the content, atomically, with the
    target's mode kept."""
    import os

    target = tmp_path / "real.csv"
    target.write_text("old\n")
    os.chmod(target, 0o640)
    link = tmp_path / "link.csv"
    link.symlink_to(target)
    if command == "schedule":
        header = _schedule_csv(link)
    else:
        assert cli.main(["verdicts", "--page", "accounting", "--csv", str(link)]) == 0
        header = "page,"
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert target.read_text().startswith(header)
    assert oct(os.stat(target).st_mode & 0o777) == oct(0o640)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link.csv", "real.csv"]


def test_csv_new_file_gets_the_mode_open_would_give(tmp_path, capsys):
    """A new file is 0o666 less the umask, as ``open(path, "w")`` gives, not mkstemp's 0o600."""
    import os

    old = os.umask(0o027)
    try:
        _schedule_csv(tmp_path / "s.csv")
    finally:
        os.umask(old)
    assert oct(os.stat(tmp_path / "s.csv").st_mode & 0o777) == oct(0o640)


# --- output into a closed pipe ends quietly, as Unix tools do


CLOSED_PIPE = [
    ["zcdp", "--epsilon", "1", "--delta", "1e-5"],
    ["schedule", "--kind", "uniform", "--T", "10", "--R", "1", "--json"],
    ["checks", "--json", "--id", "H-C3.conversion"],
    ["verdicts", "--json", "--page", "accounting"],
    ["reproduce", "--list"],
]


@pytest.mark.parametrize("argv", CLOSED_PIPE, ids=[" ".join(a) for a in CLOSED_PIPE])
def test_closed_pipe_exits_141_without_a_traceback(argv, tmp_path):
    """stdout is a real pipe whose reading end is closed before the command starts (what
    ``| head -c 1`` leads to, made deterministic): exit 141 (128 + SIGPIPE), nothing on stderr
    (each case printed a BrokenPipeError traceback)."""
    import os
    import subprocess
    import sys

    from limits import HANG_GUARD_S

    r, w = os.pipe()
    os.close(r)
    try:
        proc = subprocess.run([sys.executable, "-m", "dpcompanion", *argv], stdout=w, stderr=subprocess.PIPE,
                              text=True, timeout=HANG_GUARD_S, cwd=tmp_path)
    finally:
        os.close(w)
    assert (proc.returncode, proc.stderr) == (cli.EXIT_CLOSED_PIPE, "")


# --- Ctrl-C while a Dask cluster starts


def test_sigint_while_a_dask_cluster_starts_is_one_line_and_130(tmp_path, monkeypatch, capsys):
    """SIGINT arrives inside ``LocalCluster``'s start (sent by a wrapper, so the timing is
    fixed): the cluster starts whole, is torn down, and the command prints one line
    ``interrupted`` with exit 130 (it died by the signal, -2, with no message, or left a
    half-started cluster whose exit handler raised)."""
    import os
    import signal

    distributed = pytest.importorskip("distributed")
    started = []

    class Interrupted(distributed.LocalCluster):
        def __init__(self, *a, **kw):
            kw["n_workers"] = 1
            super().__init__(*a, **kw)
            started.append(self)
            os.kill(os.getpid(), signal.SIGINT)

    monkeypatch.setattr(distributed, "LocalCluster", Interrupted)
    monkeypatch.setenv("DPCOMPANION_RESULTS", str(tmp_path / "results"))
    assert cli.main(["experiment", "h-f-infl", "--executor", "dask", "--workers", "1"]) == 130
    out, err = capsys.readouterr()
    assert out == "" and err == "dpcompanion experiment: interrupted\n"
    assert len(started) == 1 and started[0].status.name == "closed"

"""Every command refuses bad input up front: exit 2, one line on stderr naming the flag,
nothing on stdout, nothing written (issue 11, item 4). One table, every command."""

from __future__ import annotations

import pytest

from dpcompanion import cli

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
    # experiment, results
    (["experiment", "no-such-experiment"], "no-such-experiment"),
    (["experiment", "h-f-infl", "--executor", "spark"], "--executor"),
    (["experiment", "h-f-infl", "--executor", "dask", "--workers", "0"], "--workers"),
    (["experiment", "h-f-infl", "--mode", "turbo"], "--mode"),
    (["experiment", "h-f-infl", "--seed", "-1"], "--seed"),
    (["results", "--revalidate", "--device", "tpu"], "--device"),
    (["results", "--seal", "--revalidate"], "--seal"),
    (["results", "--results-dir", "{file}"], "--results-dir"),
    (["results", "--results-dir", ""], "--results-dir"),
    (["results", "--results-dir", "/proc/x"], "--results-dir"),
    (["experiment", "h-f-infl", "--results-dir", "{file}"], "--results-dir"),
    (["experiment", "h-f-infl", "--results-dir", "{file}/sub"], "--results-dir"),
    (["experiment", "h-f-infl", "--results-dir", "/proc/x/y"], "--results-dir"),
    (["experiment", "h-f-infl", "--results-dir", ""], "--results-dir"),
    # reproduce
    (["reproduce", "--seed", "-1"], "--seed"),
    (["reproduce", "--mode", "turbo"], "--mode"),
    (["reproduce", "--device", "tpu"], "--device"),
    (["reproduce", "--only", ""], "--only"),
    (["reproduce", "--only", "index", "--output", "/proc/x"], "--output /proc/x"),  # os.access says yes to root
    (["reproduce", "--only", "index", "--output", "{file}/generated"], "--output"),
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
    assert len(lines) == 1 and "error:" in lines[0] and "Traceback" not in err, err
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

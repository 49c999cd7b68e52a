"""Refusals of the command line: one line on stderr, a non-zero exit, no traceback, nothing
half-written and nothing made up, for output that cannot be written (stdout closed, stdout on
a full device, a full file system under the results store), an unusable ``--results-dir``,
JSON that would not be JSON, and lists with repeated or empty names."""

from __future__ import annotations

import dataclasses
import errno
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from dpcompanion import cli
from limits import HANG_GUARD_S

FULL = "/dev/full"


def _one_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


# --- stdout closed (`>&-`) or on a full device (`> /dev/full`), in this process

#: a cheap real call of every command (the closed-stdout refusal comes before any of them runs)
CHEAP = {
    "reproduce": ["reproduce", "--list"],
    "zcdp": ["zcdp", "--epsilon", "4", "--delta", "1e-8", "--json"],
    "schedule": ["schedule", "--kind", "uniform", "--T", "10", "--R", "1", "--json"],
    "checks": ["checks", "--json", "--id", "H-C3.conversion"],
    "train": ["train", "--dataset", "synthetic", "--n", "50", "--R", "1", "--T", "3", "--device", "cpu", "--json"],
    "bench": ["bench", "--quick", "--size", "tiny", "--json", "--opacus-modes", "ghost", "--runs", "2", "--steps", "2"],
    "audit": ["audit", "--trainer", "pgd", "--epsilon", "2", "--delta", "1e-5", "--trials", "300", "--json"],
    "experiment": ["experiment", "h-f-infl", "--results-dir", "{tmp}", "--json"],
    "results": ["results", "--results-dir", "{tmp}"],
    "verdicts": ["verdicts", "--page", "accounting"],
}

CLOSED = [["--help"]] + [[c, "--help"] for c in cli.COMMANDS] + [CHEAP[c] for c in cli.COMMANDS]


def test_every_command_has_a_cheap_call():
    assert sorted(CHEAP) == sorted(cli.COMMANDS)


@pytest.mark.parametrize("argv", CLOSED, ids=[" ".join(a) for a in CLOSED])
def test_closed_stdout_is_refused_before_anything_runs(argv, tmp_path, monkeypatch, capsys):
    """Python starts with ``sys.stdout = None`` when file descriptor 1 is closed: argparse's
    ``--help`` then wrote its text to stderr and exited 0, and every command died on
    ``print`` with an AttributeError traceback."""
    monkeypatch.setattr(sys, "stdout", None)
    rc = cli.main([a.replace("{tmp}", str(tmp_path)) for a in argv])
    monkeypatch.undo()
    line = _one_line(capsys.readouterr().err)
    assert rc == cli.EXIT_IO_ERROR and "stdout is closed" in line
    assert list(tmp_path.iterdir()) == []  # nothing ran


#: what `> /dev/full` is given: every command's --help, and real calls whose output is small (the
#: failure shows at the dispatcher's flush) or large (inside the command's print)
FULL_CASES = ([["--help"]] + [[c, "--help"] for c in cli.COMMANDS]
              + [CHEAP["zcdp"], CHEAP["reproduce"], CHEAP["checks"], CHEAP["results"],
                 ["schedule", "--kind", "uniform", "--T", "3000", "--R", "1", "--json"]])


@pytest.mark.parametrize("argv", FULL_CASES, ids=[" ".join(a)[:60] for a in FULL_CASES])
def test_stdout_on_a_full_device_is_one_line(argv, tmp_path, monkeypatch, capsys):
    """An OSError traceback (ENOSPC) in the commands; ``--help`` exited 0 having written
    nothing (argparse swallows the error of its write)."""
    assert os.path.exists(FULL), f"{FULL} is missing"
    with open(FULL, "w") as fh:
        monkeypatch.setattr(sys, "stdout", fh)  # here, not in a fixture: capsys takes sys.stdout when the test starts
        rc = cli.main([a.replace("{tmp}", str(tmp_path)) for a in argv])
        monkeypatch.undo()
    line = _one_line(capsys.readouterr().err)
    assert rc == cli.EXIT_IO_ERROR and line.endswith("error: cannot write to stdout (No space left on device)"), line


# --- the same end to end: a real process, the interpreter's final flush included


def _sh(cmd: str, tmp_path) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", "-c", cmd], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                          timeout=HANG_GUARD_S, cwd=tmp_path)


SHELL = [(argv, redirect) for argv in (["--help"], ["zcdp", "--epsilon", "4", "--delta", "1e-8", "--json"])
         for redirect in (">&-", "> /dev/full")]


@pytest.mark.parametrize("argv,redirect", SHELL, ids=[f"{' '.join(a)} {r}" for a, r in SHELL])
def test_closed_or_full_stdout_in_a_real_process(argv, redirect, tmp_path):
    proc = _sh(f"'{sys.executable}' -m dpcompanion {' '.join(argv)} {redirect}", tmp_path)
    line = _one_line(proc.stderr)
    assert proc.returncode == cli.EXIT_IO_ERROR, (proc.returncode, line)
    assert ("stdout is closed" if redirect == ">&-" else "No space left on device") in line


def test_help_into_a_closed_pipe_is_quiet(tmp_path):
    """``--help | head -c 1`` whose reader is gone: exit 141 and nothing on stderr, as every
    command's output into a closed pipe (the help text reaches the pipe at the final flush)."""
    r, w = os.pipe()
    os.close(r)
    try:
        proc = subprocess.run([sys.executable, "-m", "dpcompanion", "zcdp", "--help"], stdout=w,
                              stderr=subprocess.PIPE, text=True, timeout=HANG_GUARD_S, cwd=tmp_path)
    finally:
        os.close(w)
    assert (proc.returncode, proc.stderr) == (cli.EXIT_CLOSED_PIPE, "")


# --- --results-dir (and $DPCOMPANION_RESULTS): a folder, checked once


def _bad_folders(tmp: Path) -> dict[str, Path]:
    (tmp / "loop").symlink_to("loop")
    (tmp / "dangling").symlink_to(tmp / "nowhere")
    (tmp / "file").write_text("x")
    return {"loop": tmp / "loop", "through-loop": tmp / "loop" / "sub", "dangling": tmp / "dangling",
            "through-dangling": tmp / "dangling" / "sub", "file": tmp / "file", "through-file": tmp / "file" / "sub"}


BAD_DIRS = {"loop": "symlink loop", "through-loop": "symlink loop", "dangling": "does not exist",
            "through-dangling": "does not exist", "file": "not a folder", "through-file": "through a file"}


@pytest.mark.parametrize("command", ["results", "experiment"])
@pytest.mark.parametrize("case", sorted(BAD_DIRS))
def test_results_dir_that_is_no_folder_is_refused(command, case, tmp_path, capsys):
    """``results --results-dir <loop>`` listed 36 damaged results that do not exist; a loop
    under ``experiment`` ended in an OSError traceback."""
    folder = _bad_folders(tmp_path)[case]
    argv = ["results"] if command == "results" else ["experiment", "h-f-infl"]
    before = sorted(os.listdir(tmp_path))
    rc = cli.main([*argv, "--results-dir", str(folder)])
    line = _one_line(capsys.readouterr().err)
    assert rc == 2 and "--results-dir" in line and BAD_DIRS[case] in line, line
    assert sorted(os.listdir(tmp_path)) == before


@pytest.mark.parametrize("command", [["results"], ["verdicts", "--page", "accounting"], ["experiment", "h-f-infl"]])
def test_results_environment_variable_that_is_a_loop_is_refused(command, tmp_path, monkeypatch, capsys):
    """The default folder, ``$DPCOMPANION_RESULTS``, gets the same check (verdicts read a loop as
    'no fresh stored result')."""
    monkeypatch.setenv("DPCOMPANION_RESULTS", str(_bad_folders(tmp_path)["loop"]))
    rc = cli.main(command)
    line = _one_line(capsys.readouterr().err)
    assert rc == 2 and "$DPCOMPANION_RESULTS" in line and "symlink loop" in line, line


def test_results_dir_that_is_missing_is_listed_as_empty(tmp_path, capsys):
    assert cli.main(["results", "--results-dir", str(tmp_path / "new" / "sub")]) == 0
    assert "no stored results" in capsys.readouterr().out
    assert list(tmp_path.iterdir()) == []  # nothing created


# --- a full file system under the results store


def test_full_file_system_under_the_store_is_one_line_and_leaves_whole_files(tmp_path, monkeypatch, capsys):
    """ENOSPC while the store writes its second file (half of it written): one line, exit 74,
    no traceback; every file left in the results folder is whole (the half one was a
    temporary file, removed) and no result is assembled from them."""
    from dpcompanion.experiments import base, h_f_infl

    small = {**h_f_infl.CONFIGS["quick"], "n": 100, "T": 2, "levels": [20.0, 200.0], "repeats": 2,
             "repeats_per_unit": 2, "fit_steps": [1, 2]}
    tiny = {"quick": small, "full": {**small, "T": 3, "fit_steps": [1, 2, 3]}}
    exp = base.register(dataclasses.replace(h_f_infl.EXPERIMENT, id="test-refusals-infl", rules=(), configs=tiny))
    root = tmp_path / "results"
    real_write_text = Path.write_text
    written = []

    def write_text(self, data, *a, **kw):
        if root not in self.parents:
            return real_write_text(self, data, *a, **kw)
        written.append(self)
        if len(written) < 2:
            return real_write_text(self, data, *a, **kw)
        real_write_text(self, data[: len(data) // 2], *a, **kw)
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(Path, "write_text", write_text)
    try:
        rc = cli.main(["experiment", exp.id, "--results-dir", str(root), "--json"])
    finally:
        base.unregister(exp.id)
    monkeypatch.undo()
    out, err = capsys.readouterr()
    assert len(written) == 2
    # the progress lines of the sweep (if any), then one line: the refusal
    assert "Traceback" not in err and [ln for ln in err.splitlines() if "error" in ln] == err.splitlines()[-1:], err
    assert rc == cli.EXIT_IO_ERROR and err.splitlines()[-1].endswith("error: No space left on device"), err
    assert out == ""
    left = [p for p in root.rglob("*") if p.is_file()]
    assert left and not [p for p in left if ".tmp" in p.name], left
    for p in left:
        if p.suffix == ".json":
            json.loads(p.read_text())  # whole
    assert not (root / exp.id / "quick").exists()


# --- every --json is strict JSON


def _strict(text: str):
    def refuse(name):
        raise AssertionError(f"not JSON: bare {name}")

    return json.loads(text, parse_constant=refuse)


def test_audit_json_is_strict_json(capsys):
    """``audit --json`` printed ``-Infinity`` (its threshold test's threshold below every score)."""
    assert cli.main(CHEAP["audit"]) == 0
    out = _strict(capsys.readouterr().out)
    assert out["test"]["threshold"] == "-Infinity"


def test_every_command_module_writes_strict_json():
    """No command module writes JSON to stdout by the standard ``json.dumps``/``json.dump``: every
    ``--json`` goes through :func:`dpcompanion.core.outputs.json_text` (one writer, strict)."""
    import ast
    import importlib.util
    from pathlib import Path

    for name in cli.COMMANDS:
        src = Path(importlib.util.find_spec(cli.command_module(name)).origin).read_text()
        calls = [n for n in ast.walk(ast.parse(src)) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
                 and n.func.attr in ("dumps", "dump") and getattr(n.func.value, "id", None) == "json"]
        assert not calls, f"{name}: json.{calls[0].func.attr} at line {calls[0].lineno}; use outputs.json_text"
    from dpcompanion.core import outputs

    assert outputs.json_text({"a": float("nan")}) == '{"a": "NaN"}'


# --- repeated or empty names in a list


@pytest.mark.parametrize("pages,expected", [(["accounting", "accounting"], ["accounting"]),
                                            (["b", "a", "b", "a"], ["b", "a"])])
def test_verdicts_repeated_page_counts_its_rows_once(pages, expected, monkeypatch, capsys):
    from dpcompanion.experiments.comparisons import reproduction

    seen = []
    monkeypatch.setattr(reproduction, "report_rows", lambda *, pages, **kw: seen.append(pages) or [])
    argv = ["verdicts", "--json"] + [x for p in pages for x in ("--page", p)]
    assert cli.main(argv) == 0
    assert seen == [expected]


@pytest.mark.parametrize("modes", ["ghost,,hooks", ",ghost", "ghost,", "", " , ", "ghost,ghost"])
def test_bench_opacus_modes_with_an_empty_or_repeated_name_is_refused(modes, capsys):
    rc = cli.main(["bench", "--quick", "--size", "tiny", "--opacus-modes", modes])
    line = _one_line(capsys.readouterr().err)
    assert rc == 2 and "--opacus-modes" in line and "ghost,hooks,functorch,ew" in line, line

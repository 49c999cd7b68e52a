"""The runner (``python -m dpcompanion reproduce``): failures name the notebook and cell,
bad input is one line with exit 2, and nothing half-executed reaches the book."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from dpcompanion.book import runner
from dpcompanion.core.provenance import cuda_available
from limits import HANG_GUARD_S

REPO = Path(__file__).resolve().parent.parent


def _nb(cells: list[str], *, params=True) -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook()
    if params:
        c = nbformat.v4.new_code_cell('mode = "quick"\nseed = 0\ndevice = "cpu"')
        c.metadata["tags"] = ["parameters"]
        nb.cells.append(c)
    nb.cells += [nbformat.v4.new_code_cell(src) for src in cells]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    return nb


def _reproduce(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "dpcompanion", "reproduce", *args], capture_output=True, text=True, cwd=REPO, timeout=HANG_GUARD_S
    )


@pytest.fixture()
def nbdir(tmp_path: Path) -> Path:
    d = tmp_path / "notebooks"
    d.mkdir()
    nbformat.write(_nb(["x = 1 + 1", "print('ran', mode, seed, device)"]), d / "good.ipynb")
    nbformat.write(_nb(["y = 2", "raise RuntimeError('deliberate failure')", "z = 3"]), d / "bad.ipynb")
    return d


@pytest.mark.slow
def test_failing_notebook_exits_nonzero_naming_path_and_cell(nbdir: Path, tmp_path: Path):
    out = tmp_path / "generated"
    r = _reproduce("--only", "bad", "--device", "cpu", "--notebooks", str(nbdir), "--output", str(out))
    assert r.returncode != 0
    err = r.stderr.strip().splitlines()
    assert len(err) == 1, r.stderr
    assert str(nbdir / "bad.ipynb") in err[0]
    # cell 0 is the parameters cell; papermill injects a parameters cell after it, so
    # the raising cell (our third cell) has index 3 in the executed notebook
    assert "cell 3" in err[0] and "deliberate failure" in err[0]
    assert not (out / "bad.ipynb").exists(), "a failed notebook must not be left in the book"
    assert not list(out.glob("*.ipynb")) if out.exists() else True


@pytest.mark.slow
def test_good_notebook_is_executed_with_parameters(nbdir: Path, tmp_path: Path):
    out = tmp_path / "generated"
    r = _reproduce("--only", "good", "--device", "cpu", "--seed", "7", "--notebooks", str(nbdir), "--output", str(out))
    assert r.returncode == 0, r.stderr
    nb = nbformat.read(out / "good.ipynb", as_version=4)
    assert nb.metadata["papermill"]["parameters"] == {"mode": "quick", "seed": 7, "device": "cpu"}
    printed = "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []))
    assert "ran quick 7 cpu" in printed
    timings = json.loads((out / "timings.json").read_text())
    assert timings["notebooks"]["good"]["seconds"] > 0


@pytest.mark.slow
def test_a_temporary_copy_left_by_a_killed_run_is_removed(nbdir: Path, tmp_path: Path):
    """A run killed mid-execution leaves an empty ``.<id>-*.ipynb`` beside the pages (it broke
    the next Sphinx build, which read it): the next execution of that page removes it, and the
    book's configuration excludes such files anyway."""
    out = tmp_path / "generated"
    out.mkdir()
    (out / ".good-abc123.ipynb").write_text("")
    r = _reproduce("--only", "good", "--device", "cpu", "--notebooks", str(nbdir), "--output", str(out))
    assert r.returncode == 0, r.stderr
    assert not list(out.glob(".good-*.ipynb")) and (out / "good.ipynb").exists()
    import yaml

    assert "book/.*" in yaml.safe_load((Path(__file__).resolve().parents[1] / "_config.yml").read_text())["exclude_patterns"]


@pytest.mark.slow
def test_failure_removes_stale_copy(nbdir: Path, tmp_path: Path):
    out = tmp_path / "generated"
    out.mkdir()
    (out / "bad.ipynb").write_text("{}")  # a stale copy from an earlier run
    r = _reproduce("--only", "bad", "--device", "cpu", "--notebooks", str(nbdir), "--output", str(out))
    assert r.returncode != 0
    assert not (out / "bad.ipynb").exists()


@pytest.mark.parametrize(
    "args, needle",
    [
        (["--only", "no-such-notebook"], "unknown notebook id no-such-notebook"),
        (["--mode", "fast"], "--mode must be quick or full"),
        (["--device", "tpu"], "device must be one of auto, cpu, cuda"),
        (["--seed", "-3"], "--seed must be an integer in [0,"),
        (["--seed", "abc"], "--seed must be an integer in [0,"),
    ],
)
def test_bad_input_is_one_line_exit_2_and_writes_nothing(args, needle, nbdir: Path, tmp_path: Path):
    out = tmp_path / "generated"
    r = _reproduce(*args, "--notebooks", str(nbdir), "--output", str(out))
    assert r.returncode == 2, r
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and needle in lines[0], r.stderr
    assert "Traceback" not in r.stderr
    assert not out.exists()


@pytest.mark.skipif(cuda_available(), reason="a CUDA GPU is present, so --device cuda is valid here")
def test_cuda_without_gpu_is_refused(nbdir: Path, tmp_path: Path):
    out = tmp_path / "generated"
    r = _reproduce("--device", "cuda", "--notebooks", str(nbdir), "--output", str(out))
    assert r.returncode == 2
    assert "no CUDA GPU is available" in r.stderr and len(r.stderr.strip().splitlines()) == 1
    assert not out.exists()


def test_discover_orders_by_metadata(tmp_path: Path):
    a, b = _nb([]), _nb([])
    a.metadata["dpcompanion"] = {"order": 99}
    nbformat.write(a, tmp_path / "a.ipynb")
    nbformat.write(b, tmp_path / "b.ipynb")
    assert [n.id for n in runner.discover(tmp_path)] == ["b", "a"]


def test_list_shows_the_real_notebooks():
    r = _reproduce("--list")
    assert r.returncode == 0
    assert set(r.stdout.split()) == {p.stem for p in (REPO / "notebooks").glob("*.ipynb")}


@pytest.mark.slow
def test_experiment_of_a_notebook_is_computed_once_then_loaded(tmp_path: Path, monkeypatch):
    """A notebook named after a store experiment gets it computed before it runs, then
    loaded on the next run; timings.json records which (make book twice)."""
    import dataclasses

    from dpcompanion.experiments import base, h_f_infl

    tiny = {m: {**h_f_infl.CONFIGS["quick"], "n": 100, "T": 2, "levels": [20.0, 200.0], "repeats": 2,
                "repeats_per_unit": 2, "fit_steps": [1, 2]} for m in ("quick", "full")}
    exp = base.register(dataclasses.replace(h_f_infl.EXPERIMENT, id="test-runner-exp", rules=(), configs=tiny))
    monkeypatch.setenv("DPCOMPANION_RESULTS", str(tmp_path / "results"))
    d = tmp_path / "nbs"
    d.mkdir()
    nbformat.write(_nb(["print('plot only')"]), d / "test-runner-exp.ipynb")
    nbformat.write(_nb(["x = 1"]), d / "plain.ipynb")
    out = tmp_path / "out"
    try:
        t1 = runner.reproduce(notebooks_dir=d, out_dir=out, device="cpu", stream=open("/dev/null", "w"))
        assert t1["notebooks"]["test-runner-exp"]["experiment"] == "computed"
        assert "experiment" not in t1["notebooks"]["plain"]
        t2 = runner.reproduce(notebooks_dir=d, out_dir=out, device="cpu", stream=open("/dev/null", "w"))
        assert t2["notebooks"]["test-runner-exp"]["experiment"] == "loaded"
        assert t2["notebooks"]["test-runner-exp"]["digest"] == t1["notebooks"]["test-runner-exp"]["digest"]
    finally:
        base.unregister(exp.id)


def test_second_run_reuses_every_notebook_until_its_execution_key_changes(tmp_path: Path, monkeypatch):
    """``make book`` twice: a second run with nothing changed executes no notebook;
    a changed notebook, library file or results file, or --reexecute, executes again; a
    notebook with metadata dpcompanion.cache = false is always executed."""
    monkeypatch.setenv("DPCOMPANION_RESULTS", str(tmp_path / "results"))
    (tmp_path / "results").mkdir()
    lib = tmp_path / "lib"
    lib.mkdir()
    (lib / "plotting.py").write_text("COLOR = 'k'\n")
    monkeypatch.setattr(runner, "PACKAGE", lib)
    d = tmp_path / "nbs"
    d.mkdir()
    nbformat.write(_nb(["import time; print(time.time_ns())"]), d / "a.ipynb")
    nbformat.write(_nb(["x = 2"]), d / "b.ipynb")
    last = _nb(["x = 3"])
    last.metadata["dpcompanion"] = {"order": 99, "cache": False}
    nbformat.write(last, d / "z.ipynb")
    out = tmp_path / "out"

    def run(**kw):
        t = runner.reproduce(notebooks_dir=d, out_dir=out, device="cpu", stream=open("/dev/null", "w"), **kw)
        return {k: v["notebook"] for k, v in t["notebooks"].items()}, t["notebooks"]

    def printed():
        nb = nbformat.read(out / "a.ipynb", as_version=4)
        return "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []))

    how, _ = run()
    assert how == {"a": "executed", "b": "executed", "z": "executed"}
    first = printed()
    how, t = run()
    assert how == {"a": "reused", "b": "reused", "z": "executed"}
    assert printed() == first, "a reused page is the earlier copy, untouched"
    assert t["a"]["seconds"] == 0.0 and t["a"]["executed_seconds"] > 0
    assert "cache = false" in t["z"]["why"]
    (lib / "plotting.py").write_text("COLOR = 'r'\n")  # "only a plotting function changed"
    how, t = run()
    assert how["a"] == how["b"] == "executed" and t["a"]["why"] == "changed: library"
    assert printed() != first
    assert run()[0]["a"] == "reused"
    (tmp_path / "results" / "x.json").write_text("{}")  # a new stored result
    how, t = run()
    assert how["a"] == "executed" and t["a"]["why"] == "changed: results"
    nb_b = nbformat.read(d / "b.ipynb", as_version=4)
    nb_b.cells.append(nbformat.v4.new_code_cell("y = 1"))
    nbformat.write(nb_b, d / "b.ipynb")  # every notebook is part of every key (claim pages read them)
    how, t = run()
    assert how["a"] == "executed" and set(t["b"]["why"].removeprefix("changed: ").split(", ")) == {"notebooks", "notebook"}
    how, t = run(reexecute=True)
    assert how == {"a": "executed", "b": "executed", "z": "executed"} and t["a"]["why"] == "--reexecute"
    how, _ = run(seed=1)
    assert how["a"] == "executed", "other parameters, another key"
    (out / "b.ipynb").unlink()  # a page removed from the output is executed again
    how, t = run(seed=1)
    assert how["a"] == "reused" and how["b"] == "executed" and t["b"]["why"] == "no earlier copy"


def test_executed_pages_go_beside_the_hand_written_ones():
    """Page addresses are book/<id>.html: no 'generated' folder in any URL."""
    assert runner.GENERATED == REPO / "book"
    assert "generated" not in runner.GENERATED.relative_to(REPO).as_posix()

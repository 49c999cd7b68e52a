"""tests/xdist_groups.py: under ``-n 2 --dist loadgroup`` the tests of one xdist_group run on
one worker (pytest-xdist 3.8.0 alone splits them under pytest 9), and without xdist the marks
change nothing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from limits import HANG_GUARD_S

HERE = Path(__file__).resolve().parent

INNER = '''
import json, os
from pathlib import Path

import pytest

G = pytest.mark.xdist_group("g")


def _record(name):
    with open(Path(__file__).parent / "where.jsonl", "a") as f:
        f.write(json.dumps([name, os.environ.get("PYTEST_XDIST_WORKER", "main")]) + "\\n")


@pytest.mark.parametrize("i", range(8))
def test_alone(i):
    _record(f"alone{i}")


@G
@pytest.mark.parametrize("i", range(4))
def test_grouped(i):
    _record(f"grouped{i}")
'''
CONFTEST = 'pytest_plugins = ["xdist_groups"]\n'


def _run(tmp_path: Path, *args: str) -> tuple[int, str, dict[str, str]]:
    (tmp_path / "test_inner.py").write_text(INNER)
    (tmp_path / "conftest.py").write_text(CONFTEST)
    (tmp_path / "pytest.ini").write_text("[pytest]\nmarkers =\n    xdist_group(name): one worker\n")
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_ADDOPTS" and not k.startswith(("PYTEST_XDIST", "DPCOMPANION_XDIST"))}
    env["PYTHONPATH"] = os.pathsep.join([str(HERE), env.get("PYTHONPATH", "")])
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args, str(tmp_path)],
                       capture_output=True, text=True, cwd=tmp_path, env=env, timeout=HANG_GUARD_S)
    where = dict(json.loads(line) for line in (tmp_path / "where.jsonl").read_text().splitlines())
    return r.returncode, r.stdout + r.stderr, where


def test_a_group_runs_on_one_worker(tmp_path):
    rc, out, where = _run(tmp_path, "-n", "2", "--dist", "loadgroup")
    assert rc == 0 and "12 passed" in out, out
    assert len({where[f"grouped{i}"] for i in range(4)}) == 1, where
    assert set(where.values()) == {"gw0", "gw1"}, where  # the other tests are still spread


def test_without_xdist_nothing_changes(tmp_path):
    rc, out, where = _run(tmp_path, "-p", "no:xdist")
    assert rc == 0 and "12 passed" in out, out
    assert set(where.values()) == {"main"}

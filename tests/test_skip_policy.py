"""The CI skip policy (tests/skip_policy.py): under CI an unlisted skip fails the run with
one line naming the test and its reason; listed reasons stay skips and are counted."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from limits import HANG_GUARD_S

HERE = Path(__file__).resolve().parent

INNER = '''
import pytest

def test_listed():
    pytest.skip("no CUDA GPU on this machine")

def test_unlisted():
    pytest.skip("chromedriver not installed")

def test_ok():
    pass
'''
INI = """[pytest]
ci_allowed_skips =
    no CUDA GPU on this machine
"""


# a module skipped at collection (on every xdist worker that collects it)
INNER_MODULE_SKIP = """
import pytest

pytest.skip("no CUDA GPU on this machine (module)", allow_module_level=True)
"""


def _run(tmp_path: Path, ci: str | None, *args: str):
    (tmp_path / "test_inner.py").write_text(INNER)
    (tmp_path / "pytest.ini").write_text(INI)
    env = {k: v for k, v in os.environ.items()
           if k not in ("CI", "PYTEST_ADDOPTS") and not k.startswith("PYTEST_XDIST")}  # the outer run's worker
    if ci is not None:
        env["CI"] = ci
    env["PYTHONPATH"] = os.pathsep.join([str(HERE), env.get("PYTHONPATH", "")])
    r = subprocess.run([sys.executable, "-m", "pytest", "-p", "skip_policy", "-q", "-rs", "-p", "no:cacheprovider",
                        *args, str(tmp_path)], capture_output=True, text=True, cwd=tmp_path, env=env, timeout=HANG_GUARD_S)
    return r.returncode, r.stdout + r.stderr


def test_unlisted_skip_fails_under_ci(tmp_path):
    rc, out = _run(tmp_path, "true")
    assert rc == 1, out
    assert "1 failed, 1 passed, 1 skipped" in out, out
    lines = [ln for ln in out.splitlines() if "not on the allow-list" in ln]
    assert lines and "test_inner.py::test_unlisted" in lines[0] and "chromedriver not installed" in lines[0], out
    # the allow-list is printed with a count per reason
    assert "skips allowed under CI" in out and "   1  no CUDA GPU on this machine" in out, out


def test_skips_stay_skips_outside_ci(tmp_path):
    rc, out = _run(tmp_path, None)
    assert rc == 0, out
    assert "1 passed, 2 skipped" in out and "chromedriver not installed" in out, out
    assert "skips allowed under CI" not in out


def test_ci_false_is_not_ci(tmp_path):
    rc, out = _run(tmp_path, "false")
    assert rc == 0, out


def _check_ci_run_with_module_skip(rc: int, out: str):
    assert rc == 1, out
    assert "1 failed, 1 passed, 2 skipped" in out, out
    lines = [ln for ln in out.splitlines() if "not on the allow-list" in ln]
    assert lines and "test_inner.py::test_unlisted" in lines[0] and "chromedriver not installed" in lines[0], out
    # the list is printed once, counting the test skipped in its run and the module skipped at collection
    assert out.count("skips allowed under CI") == 1 and "   2  no CUDA GPU on this machine" in out, out


def test_collection_skip_is_counted_under_ci(tmp_path):
    (tmp_path / "test_inner_mod.py").write_text(INNER_MODULE_SKIP)
    _check_ci_run_with_module_skip(*_run(tmp_path, "true", "-p", "no:xdist"))


def test_policy_holds_on_xdist_workers(tmp_path):
    """`make test` runs on pytest-xdist workers: the workers judge the skips, the controller
    counts them (a module skipped on both workers once) and prints the list once."""
    (tmp_path / "test_inner_mod.py").write_text(INNER_MODULE_SKIP)
    _check_ci_run_with_module_skip(*_run(tmp_path, "true", "-n", "2"))

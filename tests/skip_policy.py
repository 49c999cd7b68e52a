"""Under CI nothing skips silently (pytest plugin, loaded by ``conftest.py``).

With ``CI`` set (``.ci/run``, ``fresh-clone-check``), a test that skips for a reason not on
the allow-list ``ci_allowed_skips`` (``[tool.pytest.ini_options]`` in pyproject.toml) is
reported as **failed**, with one line naming the test and its reason: a skip on CI hides a
missing install step as well as a failure does. Skips whose reason *contains* an allowed
entry stay skips, and the end of the run lists the allow-list with a count per reason.
Outside CI skips stay skips; ``-rs`` (in addopts) shows their reasons.

Under pytest-xdist (``make test``) a worker judges its own reports (``makereport``), and
the controller, which receives every report, counts the allowed skips and prints the list
once; a run in one process does both.
"""

from __future__ import annotations

import collections
import os

import pytest

INI = "ci_allowed_skips"


def pytest_addoption(parser):
    parser.addini(INI, type="linelist", default=[],
                  help="skip reasons allowed under CI (substring match); any other skip fails under CI")


def _under_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def _reason(longrepr) -> str:
    # skip reports carry (path, lineno, "Skipped: reason")
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        return str(longrepr[2]).removeprefix("Skipped: ")
    return str(longrepr)


class SkipPolicy:
    def __init__(self, config):
        self.allowed = [s for s in config.getini(INI) if s.strip()]
        self.counts: collections.Counter[str] = collections.Counter()

    def _allowed(self, report) -> str | None:
        """The allow-list entry a skip report's reason contains (None: not a skip, or unlisted)."""
        if not report.skipped or getattr(report, "wasxfail", None) is not None:
            return None
        reason = _reason(report.longrepr)
        return next((a for a in self.allowed if a in reason), None)

    def _judge(self, report, nodeid: str) -> None:
        if not report.skipped or getattr(report, "wasxfail", None) is not None or self._allowed(report) is not None:
            return
        reason = _reason(report.longrepr)
        report.outcome = "failed"
        report.longrepr = f"skipped under CI for a reason not on the allow-list ({INI}): {nodeid}: {reason}"

    def _count(self, report) -> None:
        hit = self._allowed(report)
        if hit is not None:
            self.counts[hit] += 1

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item, call):
        outcome = yield
        self._judge(outcome.get_result(), item.nodeid)

    @pytest.hookimpl(hookwrapper=True)
    def pytest_make_collect_report(self, collector):
        outcome = yield
        self._judge(outcome.get_result(), collector.nodeid)

    # Reports reach these hooks after makereport, in the process that prints the summary (the
    # xdist controller gets one collect report per distinct skip, however many workers saw it).
    def pytest_runtest_logreport(self, report):
        self._count(report)

    def pytest_collectreport(self, report):
        self._count(report)

    def pytest_terminal_summary(self, terminalreporter):
        tr = terminalreporter
        tr.section("skips allowed under CI")
        if not self.allowed:
            tr.write_line("allow-list is empty: every skip fails under CI")
        for a in self.allowed:
            tr.write_line(f"{self.counts[a]:4d}  {a}")


def pytest_configure(config):
    if _under_ci():
        config.pluginmanager.register(SkipPolicy(config), "dpcompanion-skip-policy")

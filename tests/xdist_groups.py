"""``--dist loadgroup`` that honours ``xdist_group`` marks under pytest 9 (plugin, loaded by
``conftest.py``), and schedules the slow tests first.

pytest-xdist 3.8.0 groups tests by appending ``@name`` to each marked item's ``_nodeid`` on
the workers; pytest 9 keeps a node's id in ``_id``, so the suffix never reaches the
scheduler and every group is silently split over the workers (each worker then sets up the
group's expensive fixture: the browser, the session's claim runs). Here each worker writes
what the scheduler needs of its collected items (their group, whether marked ``slow``) to a
file in a folder the controller made; the controller's scheduler (through xdist's public
``pytest_xdist_make_scheduler`` hook) reads it: a group is one unit of work, any other test
its own unit, the units with a slow test are handed out first (so that a long test does not
start last), then the rest in collection order. Without xdist, or with another ``--dist``,
this plugin does nothing.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

import pytest

ENV = "DPCOMPANION_XDIST_GROUPS"
_DIR = pytest.StashKey[str]()


def _loadgroup(config) -> bool:
    return (config.pluginmanager.hasplugin("xdist") and config.getoption("dist", "no") == "loadgroup"
            and bool(config.getoption("numprocesses", None)))


def _group(item) -> str | None:
    names = {str(m.args[0] if m.args else m.kwargs.get("name", "default")) for m in item.iter_markers("xdist_group")}
    return "_".join(sorted(names)) or None


def pytest_configure(config):
    # the controller (not a worker) makes the folder; workers inherit the variable when started
    if not hasattr(config, "workerinput") and _loadgroup(config):
        config.stash[_DIR] = os.environ[ENV] = tempfile.mkdtemp(prefix="dpcompanion-xdist-groups-")


def pytest_unconfigure(config):
    d = config.stash.get(_DIR, None)
    if d is not None:
        shutil.rmtree(d, ignore_errors=True)
        os.environ.pop(ENV, None)


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config, items):
    d = os.environ.get(ENV)
    if not hasattr(config, "workerinput") or not d:
        return
    info = {it.nodeid: {"group": _group(it), "slow": it.get_closest_marker("slow") is not None} for it in items}
    path = Path(d) / f"{config.workerinput['workerid']}.json"
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(info))
    os.replace(tmp, path)


@pytest.hookimpl(optionalhook=True)  # a hook of xdist's: unknown under -p no:xdist
def pytest_xdist_make_scheduler(config, log):
    d = config.stash.get(_DIR, None)
    if d is None:
        return None
    from xdist.scheduler import LoadScopeScheduling

    class MarkGroupScheduling(LoadScopeScheduling):
        """LoadScopeScheduling whose scope is the test's xdist_group (else the test itself)."""

        _info: dict | None = None

        def _items(self) -> dict:
            if self._info is None:
                info: dict = {}
                for f in sorted(Path(d).glob("*.json")):  # every worker collected the same tests
                    info.update(json.loads(f.read_text()))
                self._info = info
            return self._info

        def _split_scope(self, nodeid: str) -> str:
            group = self._items().get(nodeid, {}).get("group")
            return f"xdist_group:{group}" if group else nodeid

        def schedule(self) -> None:
            first = self.collection is None
            super().schedule()
            if first and self.workqueue:  # what is left after the first units: slow units first
                info = self._items()
                units = sorted(self.workqueue.items(),
                               key=lambda kv: not any(info.get(n, {}).get("slow") for n in kv[1]))
                self.workqueue.clear()
                self.workqueue.update(units)

    return MarkGroupScheduling(config, log)

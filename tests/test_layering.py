"""The math layer never imports torch (STYLE 3): schedules, accounting, bounds and claims
must be usable, and fast to import, without it."""

from __future__ import annotations

import importlib.util
import subprocess
import sys

import pytest

MATH_LAYER = [
    "dpcompanion.accounting",
    "dpcompanion.ledger",
    "dpcompanion.schedules",
    "dpcompanion.bounds",
    "dpcompanion.report",
    "dpcompanion.claims",
    "dpcompanion.exact_risk",
    "dpcompanion.runner",
    "dpcompanion.cli",
]


@pytest.mark.parametrize("module", MATH_LAYER)
def test_math_layer_does_not_import_torch(module):
    if importlib.util.find_spec(module) is None:
        pytest.skip(f"{module} does not exist")
    code = (
        f"import sys, importlib; importlib.import_module({module!r}); "
        "import dpcompanion.claims.registry as r; "
        f"r.load_all() if {module!r} == 'dpcompanion.claims' else None; "
        "print('torch' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "False", f"importing {module} pulled in torch"

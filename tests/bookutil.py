"""Helpers shared by the product tests: the table of contents and the built book."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parent.parent
BUILD = REPO / "_build" / "html"
NOTEBOOKS = REPO / "notebooks"


def toc_files() -> list[str]:
    """Every ``file:`` of _toc.yml (root first), without suffix."""
    toc = yaml.safe_load((REPO / "_toc.yml").read_text())
    files = [toc["root"]]

    def walk(entries):
        for e in entries or []:
            if "file" in e:
                files.append(e["file"])
            walk(e.get("sections"))

    for part in toc.get("parts", []):
        walk(part.get("chapters"))
    walk(toc.get("chapters"))
    return files


def require_build() -> Path:
    """The built book; a missing build fails under CI (``.ci/run`` builds it first), skips elsewhere."""
    if not (BUILD / "index.html").exists():
        if os.environ.get("CI"):
            pytest.fail("the book is not built: .ci/run must run `make book` before `make test`")
        pytest.skip("the book is not built here: run `make book` first")
    return BUILD

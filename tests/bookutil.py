"""Helpers shared by the product tests: the table of contents and the built book."""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parent.parent
BUILD = REPO / "_build" / "html"
NOTEBOOKS = REPO / "notebooks"
CHROMIUM = shutil.which("chromium")
CHROMEDRIVER = shutil.which("chromedriver")


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


@contextlib.contextmanager
def chromium(*, network_log: bool = False, hang_guard_s: float):
    """Headless Chromium at a 1280 x 1024 window (the width the layout checks are about), its
    console's errors logged (``network_log``: every request the pages make too, as DevTools events);
    skips the test where Chromium or its driver is not installed (make test installs them as root)."""
    if not (CHROMIUM and CHROMEDRIVER):
        pytest.skip("Chromium/chromedriver not installed (make test installs them with apt when run as root)")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    profile = tempfile.mkdtemp(prefix="dpcompanion-chromium-")
    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for flag in (
        "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync",
        "--disable-dev-shm-usage", f"--user-data-dir={profile}", "--window-size=1280,1024",
    ):
        opts.add_argument(flag)
    opts.set_capability("goog:loggingPrefs", {"browser": "SEVERE", **({"performance": "ALL"} if network_log else {})})
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=opts)
    try:
        driver.set_page_load_timeout(hang_guard_s)
        driver.set_script_timeout(hang_guard_s)
        driver.set_window_size(1280, 1024)
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)

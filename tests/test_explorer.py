"""The schedule explorer of the theory pages (``book/_static/dpc-explorer.js``, shown by
:func:`dpcompanion.book.explorer.show_explorer`): its JavaScript is a port of the library's formulas, and
here it is held to them.

* In headless Chromium, on a standalone page opened from ``file://``, ``window.dpcExplorer.compute()``
  matches the library (:mod:`dpcompanion.theory.accounting`, :mod:`~dpcompanion.theory.schedules`,
  :mod:`~dpcompanion.theory.bounds.gd`, :mod:`~dpcompanion.theory.bounds.momentum`) to 1e-9 relative on a
  grid of settings, refusing where the library refuses; a moved slider updates the numbers shown; the page
  asks for nothing but ``file://``.
* On the built book, the pages of Sec. 4.1 and 4.2 render it from ``file://`` and from a static server,
  with no console error, no sideways scroll at 400 px and readable numbers in dark mode.
* Without a browser: :func:`show_explorer` displays the container.

The browser tests carry the marks of ``tests/test_browser.py`` (``browser``, ``slow``; they skip without
Chromium and chromedriver) and share one browser, in one xdist group; the last test needs neither.
"""

from __future__ import annotations

import functools
import http.server
import itertools
import json
import math
import shutil
import threading
from pathlib import Path

import numpy as np
import pytest

from bookutil import REPO, chromium, require_build
from limits import HANG_GUARD_S

from dpcompanion.book import explorer
from dpcompanion.theory import accounting, schedules
from dpcompanion.theory.bounds import gd, momentum

JS = REPO / "book" / "_static" / "dpc-explorer.js"
CSS = REPO / "book" / "_static" / "dpcompanion.css"
#: relative agreement required of the port
REL = 1e-9
#: the pages that show the explorer, as built
PAGES = ["book/h-sec-4-1.html", "book/h-sec-4-2.html"]
#: numbers that are integers (compared exactly)
INTEGER_KEYS = {"argmin_uniform_T", "argmin_dynamic_T", "T_hat"}
#: the settings compared with the library
GRID = [dict(epsilon=e, delta=d, T=T, kappa=k, N=N, beta=b) for e, d, T, k, N, b in itertools.product(
    [0.5, 4, 16], [1e-8, 1e-5], [1, 7, 60, 400], [1.5, 10, 300], [1000, 60000], [0.5, 0.9])] + [
    # the sliders' corners: the dynamic schedule beyond float64 (refused), the smallest R and alpha,
    # one step with the largest budget
    dict(epsilon=4, delta=1e-8, T=2000, kappa=1.5, N=60000, beta=0.2),
    dict(epsilon=0.05, delta=1e-10, T=2000, kappa=1000, N=1e6, beta=0.99),
    dict(epsilon=50, delta=1e-2, T=1, kappa=1.5, N=100, beta=0.05),
]


def library(s: dict) -> dict:
    """Every number of the explorer for setting ``s``, from the library (None where it raises ValueError)."""
    e, d, T, k, N, b, D = s["epsilon"], s["delta"], s["T"], s["kappa"], s["N"], s["beta"], s.get("D", explorer.D_FIXED)
    out: dict = {}

    def put(keys, fn):
        try:
            v = fn()
        except ValueError:
            v = (None,) * len(keys)
        else:
            v = v if len(keys) > 1 else (v,)
        out.update(zip(keys, v))

    out["R"] = R = accounting.R_zcdp(epsilon=e, delta=d)
    out["alpha"] = a = gd.alpha_of(D=D, G=1, R=R, M=1, N=N, f_gap=1)
    out["gamma"] = g = 1 - 1 / k
    put(["sigma_uniform"], lambda: schedules.uniform(T=T, R=R))
    put(["sigma_dynamic"], lambda: schedules.gd_dynamic(T=T, R=R, kappa=k))
    put(["sigma_momentum"], lambda: schedules.momentum_dynamic(T=T, R=R, kappa=k, beta=b))
    put(["erub_uniform"], lambda: gd.erub(sigma=out["sigma_uniform"], kappa=k, alpha=a, R=R))
    put(["erub_dynamic"], lambda: gd.erub(sigma=out["sigma_dynamic"], kappa=k, alpha=a, R=R))
    out["erub_uniform_closed"] = gd.erub_uniform(T=T, kappa=k, alpha=a)
    out["erub_dynamic_closed"] = gd.erub_dynamic(T=T, kappa=k, alpha=a)
    out["T_uniform_eq24"] = gd.t_uniform(kappa=k, alpha=a)
    out["T_uniform_surrogate"] = gd.t_uniform_surrogate(kappa=k, alpha=a)
    out["erub_uniform_eq25"] = gd.erub_uniform_eq25(kappa=k, alpha=a)
    out["T_dynamic_eq27"] = gd.t_dynamic(kappa=k, alpha=a)
    out["T_dynamic_statement"] = gd.t_dynamic_statement(kappa=k, alpha=a)
    out["erub_dynamic_min"] = gd.erub_dynamic_min(kappa=k, alpha=a)
    put(["argmin_uniform_T", "argmin_uniform_erub"], lambda: gd.argmin_uniform(kappa=k, alpha=a))
    put(["argmin_dynamic_T", "argmin_dynamic_erub"], lambda: gd.argmin_dynamic(kappa=k, alpha=a))
    put(["eta0_max"], lambda: momentum.eta0_max(beta=b, gamma=g))
    put(["T_hat"], lambda: momentum.T_hat(beta=b, gamma=g))
    return out


def differences(setting: dict, js: dict) -> tuple[list[str], float]:
    """What disagrees between the port's result ``js`` and the library at ``setting``, and the largest
    relative difference found."""
    bad, worst = [], 0.0
    for key, want in library(setting).items():
        got = js.get(key, "missing")
        if want is None or got is None:
            if not (want is None and got is None):
                bad.append(f"{key}: library {'refuses' if want is None else 'gives a value'}, the port "
                           f"{'refuses: ' + str(js['errors'].get(key)) if got is None else 'gives ' + str(got)[:60]}")
            continue
        if key in INTEGER_KEYS:
            if got != want:
                bad.append(f"{key}: {got} != {want}")
            continue
        w, g = np.atleast_1d(np.asarray(want, dtype=float)), np.atleast_1d(np.asarray(got, dtype=float))
        if w.shape != g.shape:
            bad.append(f"{key}: shape {g.shape} != {w.shape}")
            continue
        rel = float(np.max(np.abs(g - w) / np.maximum(np.abs(w), np.finfo(float).tiny)))
        worst = max(worst, rel)
        if not rel <= REL:
            bad.append(f"{key}: relative difference {rel:.2e}")
    return bad, worst


@pytest.fixture(scope="module")
def browser():
    """Headless Chromium (bookutil.chromium), every request the pages make logged."""
    with chromium(network_log=True, hang_guard_s=HANG_GUARD_S) as driver:
        yield driver


@pytest.fixture(scope="module")
def server():
    """The built book from a static server on 127.0.0.1 (tests/test_browser.py's, quiet)."""
    build = require_build()

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def handle(self):
            try:
                super().handle()
            except (BrokenPipeError, ConnectionResetError):
                pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(build)))
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/"
    httpd.shutdown()
    httpd.server_close()


def _severe(driver) -> list[str]:
    return [e["message"] for e in driver.get_log("browser") if e.get("level") == "SEVERE"]


def _requests(driver) -> list[str]:
    """The URLs requested since the last call (DevTools' Network.requestWillBeSent), and those the page's
    Resource Timing lists (Chromium lists no file:// resource there)."""
    urls = []
    for entry in driver.get_log("performance"):
        msg = json.loads(entry["message"])["message"]
        if msg.get("method") == "Network.requestWillBeSent":
            urls.append(msg["params"]["request"]["url"])
    return urls + driver.execute_script(_RESOURCES)


# every [data-key] of the first explorer: key -> [text shown, full value]
_SHOWN = ("const root = document.querySelector('.dpc-explorer'); const out = {};"
          "root.querySelectorAll('[data-key]').forEach(e => { out[e.dataset.key] = [e.textContent, e.dataset.value]; });"
          "return out;")
_RESOURCES = "return performance.getEntriesByType('resource').map(e => e.name)"
# the explorer's width against the window's, and what it drew
_LOOK = """
const root = document.querySelector('.dpc-explorer'); const r = root.getBoundingClientRect();
const lum = (c) => { const m = c.match(/\\d+(\\.\\d+)?/g).map(Number); return (0.2126 * m[0] + 0.7152 * m[1] + 0.0722 * m[2]) / 255; };
const line = root.querySelector('.dpc-x-line.dpc-x-uniform');
const behind = (e) => { for (; e; e = e.parentElement) { const c = getComputedStyle(e).backgroundColor;
  if (c && c !== 'transparent' && !/rgba\\(.*, 0\\)$/.test(c)) return c; } return 'rgb(255, 255, 255)'; };
return {right: r.right, window: document.documentElement.clientWidth, scroll: root.scrollWidth - root.clientWidth,
        lines: root.querySelectorAll('svg .dpc-x-line').length, svg: root.querySelectorAll('svg').length,
        text: lum(getComputedStyle(root.querySelector('[data-key=R]')).color),
        stroke: line ? lum(getComputedStyle(line).stroke) : null,
        background: lum(behind(root.querySelector('[data-key=R]')))};
"""


# open the explorer's fold and let its toggle event redraw the plot at the column's width
_OPEN = ("const done = arguments[arguments.length - 1];"
         "document.querySelectorAll('details.dpc-explorer-wrap').forEach(d => { d.open = true; });"
         "setTimeout(() => done(document.querySelector('.dpc-explorer svg').getBoundingClientRect().width), 100);")


def _shown_matches(shown: dict, res: dict) -> list[str]:
    """The numbers shown (text and full value) against compute()'s result ``res``."""
    bad = []
    for key, (text, value) in shown.items():
        v = res[key]
        if v is None:
            if text != "\u2014" or value != "":
                bad.append(f"{key}: shows {text!r} for a refused number")
            continue
        if float(value) != float(v):
            bad.append(f"{key}: data-value {value} != {v}")
        if not math.isclose(float(text), float(v), rel_tol=5e-5, abs_tol=0.0):
            bad.append(f"{key}: shows {text!r} for {v}")
    return bad


@pytest.fixture(scope="module")
def standalone(tmp_path_factory) -> Path:
    """A page with one explorer (the library's own container, momentum drawn), the script and the styles
    beside it."""
    d = tmp_path_factory.mktemp("explorer")
    shutil.copy(JS, d / JS.name)
    shutil.copy(CSS, d / CSS.name)
    (d / "page.html").write_text(
        '<!DOCTYPE html><html><head><meta charset="utf-8"><meta name="viewport" content="width=device-width">'
        f'<title>explorer</title><link rel="stylesheet" href="{CSS.name}"><script src="{JS.name}"></script></head>'
        f"<body><main>{explorer.explorer_html(momentum=True)}</main></body></html>", encoding="utf-8")
    return d / "page.html"


@pytest.mark.browser
@pytest.mark.slow
@pytest.mark.xdist_group("browser:explorer")
def test_the_port_matches_the_library_and_the_sliders_update_the_numbers(browser, standalone, record_property):
    _requests(browser)  # what earlier pages asked for
    browser.get(standalone.as_uri())
    assert browser.execute_script("return !!(window.dpcExplorer && document.querySelector('.dpc-explorer svg'))"), \
        "the explorer did not render"
    results = browser.execute_script("return arguments[0].map(a => window.dpcExplorer.compute(a))", GRID)
    bad, worst = [], 0.0
    for setting, res in zip(GRID, results):
        b, w = differences(setting, res)
        worst = max(worst, w)
        bad += [f"{setting}: {x}" for x in b]
    record_property("largest_relative_difference", worst)
    print(f"largest relative difference, port vs library, over {len(GRID)} settings: {worst:.3e}")
    assert not bad, f"{len(bad)} disagreements, e.g. {bad[:5]}"

    # the numbers shown are compute()'s for the sliders' setting, and move with a slider
    before = browser.execute_script(_SHOWN)
    assert {"R", "alpha", "erub_uniform", "erub_dynamic", "T_uniform_eq24", "T_dynamic_eq27", "T_dynamic_statement",
            "argmin_uniform_T", "argmin_dynamic_T", "eta0_max", "T_hat", "epsilon", "kappa", "D"} <= set(before)
    assert before["D"][1] == str(explorer.D_FIXED)
    for param, pos in (("kappa", 700), ("epsilon", 200), ("T", 1000), ("beta", 300), ("N", 0), ("delta", 999)):
        browser.execute_script(
            "const i = document.querySelector('.dpc-explorer input[data-param=' + arguments[0] + ']');"
            "i.value = String(arguments[1]); i.dispatchEvent(new Event('input', {bubbles: true}));", param, pos)
        after = browser.execute_script(_SHOWN)
        setting = {k: float(after[k][1]) for k in ("epsilon", "delta", "T", "kappa", "N", "beta")}
        setting["T"] = int(setting["T"])
        assert after[param] != before[param], f"moving {param} did not change the {param} shown"
        res = browser.execute_script("return window.dpcExplorer.compute(arguments[0])", setting)
        assert not (m := _shown_matches(after, res)), f"after moving {param}: {m[:5]}"
        b, _w = differences(setting, res)
        assert not b, f"after moving {param} to {setting}: {b[:5]}"
        changed = [k for k in after if after[k] != before[k]]
        assert len(changed) > 1, f"moving {param} changed only {changed}"
        before = after
    assert browser.execute_script("return document.querySelectorAll('.dpc-explorer svg .dpc-x-line').length") >= 1

    # every slider at both ends: no error, something drawn
    for param in ("epsilon", "delta", "T", "kappa", "N", "beta"):
        for pos in (0, 1000):
            browser.execute_script(
                "const i = document.querySelector('.dpc-explorer input[data-param=' + arguments[0] + ']');"
                "i.value = String(arguments[1]); i.dispatchEvent(new Event('input', {bubbles: true}));", param, pos)
            assert browser.execute_script("return document.querySelectorAll('.dpc-explorer svg .dpc-x-line').length") >= 1

    # at 400 px the explorer, opened, shrinks with the page
    try:
        browser.set_window_size(400, 900)
        assert 200 < browser.execute_async_script(_OPEN) <= 400
        look = browser.execute_script(_LOOK)
        assert look["right"] <= look["window"] + 1 and look["scroll"] <= 1, f"at 400 px: {look}"
        overflow = browser.execute_script(
            "const d = document.documentElement; return Math.max(d.scrollWidth, document.body.scrollWidth) - d.clientWidth;")
        assert overflow <= 1, f"the standalone page scrolls sideways at 400 px by {overflow} px"
    finally:
        browser.set_window_size(1280, 1024)

    names = _requests(browser)
    assert {standalone.as_uri(), (standalone.parent / JS.name).as_uri()} <= set(names), f"requests not seen: {names}"
    assert all(n.startswith("file://") for n in names), f"requests other than file://: {names}"
    assert not _severe(browser), _severe(browser)


@pytest.mark.browser
@pytest.mark.slow
@pytest.mark.xdist_group("browser:explorer")
@pytest.mark.parametrize("page", PAGES)
def test_the_built_pages_render_the_explorer_from_file_and_from_a_server(browser, server, page):
    build = require_build()
    assert (build / page).exists(), f"{page} is not in the built book"
    for url in ((build / page).as_uri(), server + page):
        _requests(browser)
        browser.get(url)
        look = browser.execute_script(_LOOK)
        assert look["svg"] == 1 and look["lines"] >= 1, f"{url}: the explorer drew nothing: {look}"
        shown = browser.execute_script(_SHOWN)
        res = browser.execute_script("return document.querySelector('.dpc-explorer').dpcResult")
        assert shown["R"][0] not in ("", "\u2014") and not _shown_matches(shown, res), f"{url}: {shown}"
        origin = "file://" if url.startswith("file:") else server
        names = [n for n in _requests(browser) if not n.startswith("data:")]
        assert any("dpc-explorer.js" in n for n in names), f"{url}: the explorer's script was not requested: {names}"
        assert all(n.startswith(origin) for n in names), f"{url}: requests elsewhere: {[n for n in names if not n.startswith(origin)]}"
        assert not (errors := _severe(browser)), f"{url}: console errors {errors[:3]}"
    # the server's page at 400 px and in dark mode, the explorer opened
    try:
        browser.set_window_size(400, 900)
        assert 200 < browser.execute_async_script(_OPEN) <= 400
        look = browser.execute_script(_LOOK)
        assert look["right"] <= look["window"] + 1 and look["scroll"] <= 1, f"{page} at 400 px: {look}"
        browser.set_window_size(1280, 1024)
        browser.execute_script("document.documentElement.dataset.theme = 'dark'; document.documentElement.dataset.mode = 'dark'")
        look = browser.execute_script(_LOOK)
        assert look["text"] > 0.6 and look["stroke"] > 0.4 and look["background"] < 0.2, f"{page} in dark mode: {look}"
    finally:
        browser.set_window_size(1280, 1024)
        browser.execute_script("document.documentElement.dataset.theme = 'light'; "
                               "document.documentElement.dataset.mode = 'light'; localStorage.clear()")


def test_show_explorer_displays_the_container(monkeypatch):
    shown = []
    monkeypatch.setattr(explorer, "display", shown.append)
    assert explorer.show_explorer() is None
    (obj,) = shown
    h = obj.data
    assert '<div class="dpc-explorer"' in h and "<noscript>" in h and 'data-momentum="false"' in h
    assert h.count('class="dpc-explorer"') == 1 and "dpc-online-only" in h and "<summary>" in h
    for fn in ("accounting.R_zcdp", "bounds.gd.alpha_of", "schedules.uniform", "schedules.gd_dynamic", "bounds.gd.erub",
               "bounds.gd.t_uniform", "t_dynamic_statement", "argmin_dynamic", "bounds.momentum.eta0_max", "T_hat"):
        assert fn in h, fn
    assert obj._repr_html_() == h

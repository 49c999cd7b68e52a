"""The schedule explorer of the theory pages (Hong et al. Sec. 4.1 and 4.2): the container that
``book/_static/dpc-explorer.js`` renders into, with the line saying what each number ports.

The widget is plain JavaScript served with the book (``html_js_files`` in ``_config.yml``): it runs
from ``file://`` and from any static server, with no network. Its formulas are ports of
:mod:`dpcompanion.theory.accounting`, :mod:`dpcompanion.theory.schedules`,
:mod:`dpcompanion.theory.bounds.gd` and :mod:`dpcompanion.theory.bounds.momentum`, which stay the one
source; ``tests/test_explorer.py`` checks the port against them in a browser.

A notebook shows it with::

    from dpcompanion.book.explorer import show_explorer
    show_explorer()                 # Sec. 4.1; show_explorer(momentum=True) on Sec. 4.2
"""

from __future__ import annotations

import html

from IPython.display import HTML, display

from dpcompanion.book.claims_page import ONLINE_ONLY
from dpcompanion.theory.bounds import momentum as _mom

__all__ = ["D_FIXED", "MOMENTUM_ETA0", "PORTS", "explorer_html", "show_explorer"]

#: the diameter D fixed in the widget's alpha (G = M = f(theta_1) - f* = 1)
D_FIXED = 10

#: the step size the momentum numbers take, as Thm 4.5-4.7 define gamma (gamma = 1 - eta0/kappa, eta_t = eta0/(2M))
MOMENTUM_ETA0 = (" with \u03b7\u2080 = 1, the library's default: Thm 4.5 defines \u03b3 = 1 \u2212 \u03b7\u2080/\u03ba "
                 "(\u03b7\u209c = \u03b7\u2080/(2M)), so \u03b3 = 1 \u2212 1/\u03ba here; the theorem admits \u03b7\u2080 = 1 "
                 "only where the largest \u03b7\u2080 shown is at least 1 (at \u03b2 = 0.9, \u03b3 = 0.99 it is "
                 f"{_mom.eta0_max(beta=0.9, gamma=0.99):.2g}), so elsewhere the momentum schedule and T\u0302 are Lemma 4.3 and Lemma C.7 evaluated outside "
                 "Thm 4.5's range of \u03b7\u2080")

#: what each number of the widget ports: (the number, the library functions, how they are called)
PORTS: tuple[tuple[str, tuple[str, ...], str], ...] = (
    ("R", ("accounting.R_zcdp",), ""),
    ("\u03b1", ("bounds.gd.alpha_of",), f" with D = {D_FIXED}, G = M = f(\u03b8\u2081) \u2212 f* = 1"),
    ("\u03c3\u209c", ("schedules.uniform", "schedules.gd_dynamic", "schedules.momentum_dynamic"), ""),
    ("the bound of Thm 4.1", ("bounds.gd.erub", "bounds.gd.erub_uniform", "bounds.gd.erub_dynamic"),
     " (the schedule's, then the closed forms)"),
    ("the best T", ("bounds.gd.t_uniform", "bounds.gd.t_dynamic", "bounds.gd.t_dynamic_statement",
                    "bounds.gd.argmin_uniform", "bounds.gd.argmin_dynamic"), ""),
    ("momentum", ("bounds.momentum.eta0_max", "bounds.momentum.T_hat", "schedules.momentum_dynamic"), MOMENTUM_ETA0),
)

#: the sliders' first setting (epsilon, delta and N as in the paper's experiments: the script's defaults);
#: on Sec. 4.2 gamma = 0.99 and beta = 0.9, the example of momentum.T_hat (T_hat = 230)
_DEFAULTS = {False: {"T": 100, "kappa": 10, "beta": 0.5}, True: {"T": 100, "kappa": 100, "beta": 0.9}}

#: what the folded explorer holds (folded: the page of Sec. 4.1 is near the book's height limit)
_SUMMARY = "Sliders for \u03b5, \u03b4, T, \u03ba, N and \u03b2: the schedules and the bounds of Thm 4.1-4.4"
_SUMMARY_MOMENTUM = "Sliders for \u03b5, \u03b4, T, \u03ba, N and \u03b2: the schedules and the numbers of Thm 4.5-4.7"


def explorer_html(*, momentum: bool = False) -> str:
    """The explorer's HTML: the ``div.dpc-explorer`` the script renders into (a sentence for readers
    without JavaScript inside) and one line naming the library function each number ports, folded under a
    line saying what it does. Online only (the theory PDF leaves it out, with its section: the book's
    CSS). ``momentum=True`` also draws Thm 4.7's schedule.

    >>> h = explorer_html()
    >>> '<div class="dpc-explorer"' in h and "<noscript>" in h and "accounting.R_zcdp" in h
    True
    >>> 'data-momentum="true"' in explorer_html(momentum=True)
    True
    """
    attrs = " ".join(f'data-{k.lower()}="{v}"' for k, v in _DEFAULTS[bool(momentum)].items())
    ports = "; ".join(f"{html.escape(what)}: " + ", ".join(f"<code>{html.escape(f)}</code>" for f in fns) + html.escape(how)
                      for what, fns, how in PORTS)
    summary = _SUMMARY_MOMENTUM if momentum else _SUMMARY
    return (
        f'<details class="dpc-explorer-wrap {ONLINE_ONLY}"><summary>{html.escape(summary)}</summary>'
        f'<div class="dpc-explorer" data-momentum="{"true" if momentum else "false"}" data-d="{D_FIXED}" {attrs}>'
        "<noscript><p>The explorer needs JavaScript: with it, sliders for \u03b5, \u03b4, T, \u03ba, N and \u03b2 "
        "redraw the noise schedules and recompute the bounds of this section.</p></noscript>"
        "</div>"
        '<p class="dpc-explorer-ports">Each number is the library\u2019s formula, ported to JavaScript '
        "(<code>book/_static/dpc-explorer.js</code>) and checked against it by "
        f"<code>tests/test_explorer.py</code>: {ports}.</p>"
        "</details>"
    )


def show_explorer(*, momentum: bool = False) -> None:
    """Display :func:`explorer_html` (an HTML output, which myst-nb keeps in a ``remove-input`` cell)."""
    display(HTML(explorer_html(momentum=momentum)))

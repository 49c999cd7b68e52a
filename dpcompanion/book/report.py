"""Generated prose for the book: Markdown tables and the paper-vs-ours cell.

Notebooks display these with ``IPython.display.Markdown``; the book renders code-cell
Markdown as MyST (``nb_render_markdown_format: myst``), so generated text may contain
directives and roles. No number shown this way is typed by hand: the cells pass computed
values, and verdicts are computed from them by the caller (see :func:`verdict`).
"""

from __future__ import annotations

from typing import Any, Iterable, Sequence

#: a row whose sizes differ from the paper's is "not comparable", its note starting with
#: "not compared (sizes differ)" (dpcompanion.experiments.comparisons.NOT_COMPARED)
VERDICTS = ("agrees", "partly", "disagrees", "not comparable")


def fmt(x: Any, digits: int = 4) -> str:
    """Format a number for prose: ``digits`` significant digits, ints as ints.

    >>> fmt(0.392698), fmt(12), fmt(1.5e-8)
    ('0.3927', '12', '1.5e-08')
    """
    if isinstance(x, bool) or x is None:
        return str(x)
    if isinstance(x, int):
        return str(x)
    try:
        xf = float(x)
    except (TypeError, ValueError):
        return str(x)
    if xf == int(xf) and abs(xf) < 1e15:
        return str(int(xf))
    return f"{xf:.{digits}g}"


def markdown_table(header: Sequence[str], rows: Iterable[Sequence[Any]], digits: int = 4) -> str:
    """A GitHub/MyST Markdown table.

    >>> print(markdown_table(["a", "b"], [[1, 0.5]]))
    | a | b |
    | --- | --- |
    | 1 | 0.5 |
    """
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join("---" for _ in header) + " |"]
    for r in rows:
        lines.append("| " + " | ".join(fmt(v, digits).replace("|", "\\|") for v in r) + " |")
    return "\n".join(lines)


def verdict(*, paper: float, ours: float, rtol: float, partly_rtol: float | None = None) -> str:
    """Compare a reported number with ours: ``agrees`` within ``rtol`` (relative),
    ``partly`` within ``partly_rtol``, else ``disagrees``.

    >>> verdict(paper=0.3927, ours=0.39270, rtol=1e-3)
    'agrees'
    >>> verdict(paper=1.0, ours=1.3, rtol=0.1, partly_rtol=0.5)
    'partly'
    """
    rel = abs(ours - paper) / max(abs(paper), 1e-300)
    if rel <= rtol:
        return "agrees"
    if partly_rtol is not None and rel <= partly_rtol:
        return "partly"
    return "disagrees"


def paper_vs_ours(rows: Iterable[dict[str, Any]], digits: int = 4) -> str:
    """The paper-vs-ours table: each row has ``item``, ``paper``, ``ours``, ``verdict``
    (one of :data:`VERDICTS`, computed by the caller) and optionally ``note``."""
    out = []
    for r in rows:
        if r["verdict"] not in VERDICTS:
            raise ValueError(f"verdict must be one of {VERDICTS}, got {r['verdict']!r}")
        out.append([r["item"], r["paper"], r["ours"], f"**{r['verdict']}**", r.get("note", "")])
    return markdown_table(["", "paper reported", "we measured", "verdict", "note"], out, digits)

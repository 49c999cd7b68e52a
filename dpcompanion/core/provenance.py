"""Provenance of every executed notebook, figure and results file: a notebook starts with
``prov = Provenance.start(...)`` and ends with ``prov.finish()`` (the provenance line: commit,
mode, device, seed, wall time, versions); figures use ``prov.caption(...)``; results files are
written with :func:`save_json`, which adds a ``.provenance.json`` sidecar.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import json
import os
import platform
import subprocess
import time
from importlib import metadata
from pathlib import Path
from typing import Any

from dpcompanion.core import outputs

MODES = ("quick", "full")
DEVICES = ("auto", "cpu", "cuda")
REPO = Path(__file__).resolve().parents[2]


def validate_mode(mode: str) -> str:
    if mode not in MODES:
        raise ValueError(f"mode must be one of {', '.join(MODES)}, got {mode!r}")
    return mode


def validate_seed(seed: Any) -> int:
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    return seed


def cuda_available() -> bool:
    """Whether torch sees a CUDA device (imports torch only when asked)."""
    try:
        import torch
    except ImportError:  # pragma: no cover - torch is a pinned dependency
        return False
    return bool(torch.cuda.is_available())


def resolve_device(device: str) -> str:
    """``auto`` -> ``cuda`` if available else ``cpu``; ``cuda`` without a GPU is an error."""
    if device not in DEVICES:
        raise ValueError(f"device must be one of {', '.join(DEVICES)}, got {device!r}")
    if device == "cpu":
        return "cpu"
    has_cuda = cuda_available()
    if device == "cuda" and not has_cuda:
        raise ValueError("device 'cuda' was requested but no CUDA GPU is available; use --device cpu or auto")
    return "cuda" if has_cuda else "cpu"


def _version(pkg: str) -> str:
    try:
        return metadata.version(pkg)
    except metadata.PackageNotFoundError:
        if pkg == "dpcompanion":  # imported from a source tree, not installed (a GPU machine's PYTHONPATH)
            from dpcompanion import __version__
            return f"{__version__} (source tree, not installed)"
        return "absent"


def git_state(repo: Path = REPO) -> tuple[str, bool]:
    """(commit, dirty) of the checkout holding the package; ('unknown', False) outside git.
    Dirty: a tracked file outside ``results/`` differs from the commit.
    ``DPCOMPANION_COMMIT``/``DPCOMPANION_DIRTY`` override it (the runner sets them, so that
    every notebook of one reproduce run reports the same state)."""
    if os.environ.get("DPCOMPANION_COMMIT"):
        return os.environ["DPCOMPANION_COMMIT"], os.environ.get("DPCOMPANION_DIRTY") == "1"
    try:
        commit = subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], cwd=repo, capture_output=True, text=True,
                                check=True).stdout.strip()
        dirty = bool(subprocess.run(["git", "status", "--porcelain", "--untracked-files=no", "--", ".",
                                     ":(exclude)results"], cwd=repo, capture_output=True, text=True,
                                    check=True).stdout.strip())
        return commit, dirty
    except (OSError, subprocess.CalledProcessError):
        return "unknown", False


def versions() -> dict[str, str]:
    return {"python": platform.python_version(), "torch": _version("torch"), "numpy": _version("numpy"),
            "sympy": _version("sympy"), "dpcompanion": _version("dpcompanion")}


@dataclasses.dataclass
class Provenance:
    notebook: str
    mode: str
    seed: int
    device: str  # resolved: cpu or cuda
    commit: str
    dirty: bool
    started: str
    versions: dict[str, str]
    _t0: float = dataclasses.field(default=0.0, repr=False)
    wall_s: float | None = None

    @classmethod
    def start(cls, *, notebook: str, mode: str, seed: int, device: str) -> "Provenance":
        validate_mode(mode)
        validate_seed(seed)
        commit, dirty = git_state()
        return cls(notebook=notebook, mode=mode, seed=seed, device=resolve_device(device), commit=commit, dirty=dirty,
                   started=_dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"), versions=versions(),
                   _t0=time.perf_counter())

    @property
    def quick(self) -> bool:
        return self.mode == "quick"

    def elapsed(self) -> float:
        return time.perf_counter() - self._t0

    def record(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        d.pop("_t0")
        d["wall_s"] = round(self.wall_s if self.wall_s is not None else self.elapsed(), 2)
        return d

    def line(self) -> str:
        r = self.record()
        v = r["versions"]
        dirty = " (dirty tree)" if r["dirty"] else ""
        return (f"Provenance: notebook {r['notebook']} | commit {r['commit']}{dirty} | mode {r['mode']} | "
                f"device {r['device']} | seed {r['seed']} | wall time {r['wall_s']:.1f} s | "
                f"python {v['python']}, torch {v['torch']}, numpy {v['numpy']}, sympy {v['sympy']} | "
                f"started {r['started']}")

    def caption(self, text: str, *, repeats: int | None = None) -> str:
        """A figure caption ending in its provenance (commit, mode, device, seed, repeats)."""
        rep = f", {repeats} repeats" if repeats is not None else ""
        dirty = "+dirty" if self.dirty else ""
        return (f"{text} [{self.notebook}: commit {self.commit}{dirty}, {self.mode} mode, {self.device}, "
                f"seed {self.seed}{rep}, {self.elapsed():.1f} s into the run]")

    def finish(self) -> None:
        """Fix the wall time and show the provenance line (Markdown in a notebook, printed elsewhere)."""
        self.wall_s = self.elapsed()
        text = self.line()
        try:
            from IPython import get_ipython
            from IPython.display import display
        except ImportError:  # pragma: no cover
            get_ipython = lambda: None  # noqa: E731
        if get_ipython() is not None:
            display({"text/markdown": f"<small>{text}</small>", "text/plain": text}, raw=True)
        else:
            print(text)


def save_json(obj: Any, path: str | os.PathLike, prov: Provenance | dict | None = None) -> Path:
    """Write ``obj`` as JSON to ``path`` and its provenance to ``path.provenance.json``, each
    by :func:`dpcompanion.core.outputs.write_text`."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    record = prov.record() if isinstance(prov, Provenance) else (prov or {"commit": git_state()[0], "versions": versions()})
    for p, data in ((path, obj), (path.with_suffix(path.suffix + ".provenance.json"), record)):
        outputs.write_text(p, json.dumps(data, indent=1, sort_keys=True, default=float) + "\n", name="output file")
    return path

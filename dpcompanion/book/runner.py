"""Execute the book's notebooks with papermill (``python -m dpcompanion reproduce``).

Each ``notebooks/<id>.ipynb`` runs with ``mode``, ``seed`` and ``device`` into a temporary file, moved to
``book/<id>.ipynb`` (beside the hand-written pages) only when it ran to the end; a failed run removes
the stale copy, so the book build fails instead of showing old results. Every experiment a notebook
shows is computed or found fresh first, so the notebook only loads it.

A notebook is re-executed only when its execution key (notebooks, parameters, package sources, installed
distributions, results store: :func:`run_key_parts`, :func:`notebook_key_parts`) changed, unless
``--reexecute`` or ``metadata.dpcompanion.cache = false``. ``metadata.dpcompanion.order`` (default 50)
orders the runs. ``book/timings.json`` records what was computed, loaded, executed or reused.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import shutil
import sys
import tempfile
import time
from importlib import metadata
from pathlib import Path

import nbformat
from jupyter_client.kernelspec import KernelSpecManager

from dpcompanion.core import validate
from dpcompanion.core.provenance import git_state, resolve_device, validate_mode, validate_seed
from dpcompanion.experiments import base, store

REPO = Path(__file__).resolve().parents[2]
NOTEBOOKS = REPO / "notebooks"
PACKAGE = REPO / "dpcompanion"
#: where the executed notebooks go (beside book/*.md, so the page URLs are book/<id>.html)
GENERATED = REPO / "book"
DEFAULT_ORDER = 50
#: where the execution key of each executed notebook is kept, inside the output folder
KEY_DIR = ".execution-keys"


class NotebookFailed(Exception):
    """A notebook raised: carries its path and the index of the failing cell."""

    def __init__(self, path: Path, cell_index: int | None, detail: str):
        self.path, self.cell_index, self.detail = path, cell_index, detail
        where = f"cell {cell_index}" if cell_index is not None else "before any cell ran"
        super().__init__(f"notebook {path} failed at {where}: {detail}")


@dataclasses.dataclass(frozen=True)
class Notebook:
    id: str
    path: Path
    order: int
    cache: bool = True


def discover(notebooks_dir: Path = NOTEBOOKS) -> list[Notebook]:
    """All notebooks of ``notebooks_dir`` in execution order (metadata order, then id)."""
    if not notebooks_dir.is_dir():
        raise ValueError(f"notebooks directory {notebooks_dir} does not exist")
    found = []
    for p in sorted(notebooks_dir.glob("*.ipynb")):
        try:
            meta = json.loads(p.read_text()).get("metadata", {})
        except json.JSONDecodeError as exc:
            raise ValueError(f"notebook {p} is not valid JSON: {exc}") from None
        own = meta.get("dpcompanion", {})
        found.append(Notebook(id=p.stem, path=p, order=int(own.get("order", DEFAULT_ORDER)),
                              cache=bool(own.get("cache", True))))
    return sorted(found, key=lambda n: (n.order, n.id))


def select(notebooks: list[Notebook], only: list[str] | None) -> list[Notebook]:
    """The notebooks named in ``only`` (ids, case-insensitive); all when ``only`` is empty."""
    if not only:
        return notebooks
    by_id = {n.id.lower(): n for n in notebooks}
    wanted = [w.strip().lower() for item in only for w in item.split(",") if w.strip()]
    unknown = [w for w in wanted if w not in by_id]
    if unknown:
        raise ValueError(
            f"unknown notebook id {', '.join(unknown)}; known ids: {', '.join(sorted(by_id))}"
        )
    return [n for n in notebooks if n.id.lower() in set(wanted)]


def _kernel_name() -> str:
    """The kernelspec installed into this environment by the Makefile, else python3."""
    return "dpcompanion" if "dpcompanion" in KernelSpecManager().find_kernel_specs() else "python3"


def execute(nb: Notebook, *, out_dir: Path, mode: str, seed: int, device: str, kernel: str) -> float:
    """Execute one notebook; on success move it to ``out_dir/<id>.ipynb``; return seconds."""
    import papermill as pm  # slow to import: only when a notebook runs

    out_dir.mkdir(parents=True, exist_ok=True)
    target = out_dir / f"{nb.id}.ipynb"
    for stale in out_dir.glob(f".{nb.id}-*.ipynb"):  # left by a run killed mid-execution
        stale.unlink(missing_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{nb.id}-", suffix=".ipynb", dir=out_dir)
    os.close(fd)
    tmp = Path(tmp_name)
    shutil.rmtree(out_dir / "figures" / nb.id, ignore_errors=True)  # no figure data of an earlier run stays
    t0 = time.perf_counter()
    try:
        pm.execute_notebook(
            str(nb.path),
            str(tmp),
            parameters={"mode": mode, "seed": seed, "device": device},
            kernel_name=kernel,
            cwd=str(nb.path.parent),
            progress_bar=False,
            log_output=False,
            request_save_on_cell_execute=False,
            # the kernel's own log (e.g. ipykernel's "running over TCP" warning) would
            # otherwise reach our stderr; cell outputs, warnings included, are unaffected
            extra_arguments=["--IPKernelApp.log_level=CRITICAL"],
        )
    except Exception as exc:  # a cell raised, or the kernel died, an invalid notebook, a missing kernel ...
        tmp.unlink(missing_ok=True)
        target.unlink(missing_ok=True)
        if isinstance(exc, pm.PapermillExecutionError):
            raise NotebookFailed(nb.path, exc.cell_index, f"{exc.ename}: {exc.evalue}") from None
        raise NotebookFailed(nb.path, None, f"{type(exc).__name__}: {exc}") from None
    _hide_injected_parameters_like_original(tmp)
    tmp.replace(target)
    return time.perf_counter() - t0


def _hide_injected_parameters_like_original(path: Path) -> None:
    """Give papermill's injected-parameters cell the display tags of the notebook's own
    ``parameters`` cell (a page that hides its parameters hides the injected ones too)."""
    nb = nbformat.read(path, as_version=4)
    tags_of = lambda c: c.metadata.get("tags", [])  # noqa: E731
    original = next((c for c in nb.cells if "parameters" in tags_of(c)), None)
    display_tags = [t for t in tags_of(original) if t.startswith(("remove-", "hide-"))] if original else []
    if not display_tags:
        return
    for c in nb.cells:
        if "injected-parameters" in tags_of(c):
            c.metadata["tags"] = sorted(set(tags_of(c)) | set(display_tags))
    nbformat.write(nb, path)


def reproduce(
    *,
    mode: str = "quick",
    seed: int = 0,
    device: str = "cpu",
    only: list[str] | None = None,
    notebooks_dir: Path = NOTEBOOKS,
    out_dir: Path = GENERATED,
    stream=sys.stdout,
    executor: str = "local",
    workers: int | None = None,
    scheduler: str | None = None,
    recompute: bool = False,
    reexecute: bool = False,
) -> dict:
    """Validate the request, then execute the selected notebooks in order (computing or
    finding fresh each one's experiment first, see the module docstring).

    Raises ``ValueError`` for bad input (before anything is written) and
    :class:`NotebookFailed` for the first notebook that raises.
    """
    validate_mode(mode)
    validate_seed(seed)
    resolved = resolve_device(device)  # cuda without a GPU is refused here, before any run
    chosen = select(discover(notebooks_dir), only)
    if not chosen:
        raise ValueError(f"no notebooks found in {notebooks_dir}")
    validate.writable_folder("out_dir", out_dir)  # a probe file: found before any computation
    exp_ids = set(base.all_experiments())  # imports the experiment modules, hence torch
    with_exp = [nb for nb in chosen if nb.id in exp_ids]
    if with_exp or executor not in (None, "local") or workers is not None or scheduler is not None or recompute:
        store.check_executor_options(executor, workers=workers, scheduler=scheduler)
    for nb in with_exp:
        store.check_writable(store.result_dir(nb.id, mode))
    commit, dirty = git_state()
    os.environ.update(DPCOMPANION_COMMIT=commit, DPCOMPANION_DIRTY="1" if dirty else "0")
    # the book's figures write their data and code beside the executed notebooks
    # (dpcompanion.book.plotting.publish: <out_dir>/figures/<id>/<id>-figure-<n>.csv and .py)
    os.environ["DPCOMPANION_BOOK_DIR"] = str(out_dir.resolve())
    os.environ.pop("MPLBACKEND", None)  # the kernel's inline backend renders the figures
    kernel = _kernel_name()
    timings_path = out_dir / "timings.json"
    timings = json.loads(timings_path.read_text()) if timings_path.exists() else {}
    earlier = dict(timings.get("notebooks", {}))
    runs = timings.setdefault("notebooks", {})
    t_all = time.perf_counter()
    # 1. every experiment computed, or found fresh, before any notebook runs (so that the
    #    results store, part of every execution key, no longer changes during the run)
    exp_entries: dict[str, dict] = {}
    if with_exp:
        ex = store.make_executor(executor, workers=workers, scheduler=scheduler)
        try:
            for nb in with_exp:
                t0 = time.perf_counter()
                res = store.load_or_compute(nb.id, mode=mode, seed=seed, device=resolved, executor=ex,
                                            recompute=recompute)
                how = "loaded" if res.cached else "computed"
                exp_entries[nb.id] = {"experiment": how, "experiment_seconds": round(time.perf_counter() - t0, 2),
                                      "digest": res.digest}
                print(f"experiment {nb.id} ({mode}): {how} in {exp_entries[nb.id]['experiment_seconds']:.1f} s "
                      f"({ex.describe()})", file=stream, flush=True)
        finally:
            ex.close()
    # 2. each notebook executed unless its execution key is that of its copy in out_dir
    shared = run_key_parts(notebooks_dir, results_root=store.results_root())
    executed = 0
    for i, nb in enumerate(chosen, 1):
        key = {**shared, **notebook_key_parts(nb, mode=mode, seed=seed, device=resolved)}
        target, key_file = out_dir / f"{nb.id}.ipynb", out_dir / KEY_DIR / f"{nb.id}.json"
        old = _read_json(key_file)
        entry = {"mode": mode, "device": resolved, "seed": seed, "commit": commit, **exp_entries.get(nb.id, {})}
        if nb.cache and not (reexecute or recompute) and old == key and target.exists():
            before = earlier.get(nb.id, {})
            runs[nb.id] = {**entry, "notebook": "reused", "seconds": 0.0,
                           "executed_seconds": before.get("executed_seconds", before.get("seconds")),
                           "executed_commit": before.get("executed_commit", before.get("commit"))}
            print(f"[{i}/{len(chosen)}] {nb.id}: reused (execution key unchanged)", file=stream, flush=True)
            _write_json(timings_path, timings)
            continue
        why = _why_executed(nb, old, key, target, reexecute=reexecute, recompute=recompute)
        print(f"[{i}/{len(chosen)}] {nb.id} ({mode}, {resolved}; {why}) ...", file=stream, flush=True)
        key_file.unlink(missing_ok=True)  # a failed run leaves no key behind
        seconds = execute(nb, out_dir=out_dir, mode=mode, seed=seed, device=resolved, kernel=kernel)
        executed += 1
        if nb.cache:
            _write_json(key_file, key)
        runs[nb.id] = {**entry, "notebook": "executed", "why": why, "seconds": round(seconds, 2),
                       "executed_seconds": round(seconds, 2), "executed_commit": commit}
        print(f"    ok in {seconds:.1f} s", file=stream, flush=True)
        _write_json(timings_path, timings)
    total = time.perf_counter() - t_all
    print(f"reproduce: {len(chosen)} notebook(s) in {total:.1f} s ({executed} executed, "
          f"{len(chosen) - executed} reused) -> {out_dir}", file=stream)
    return timings


def _hash_files(paths, root: Path) -> str:
    """sha256 over the relative names and bytes of ``paths`` (sorted)."""
    h = hashlib.sha256()
    for p in sorted(paths):
        h.update(p.relative_to(root).as_posix().encode() + b"\0")
        h.update(hashlib.sha256(p.read_bytes()).digest())
    return h.hexdigest()


def _sha(obj) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True).encode()).hexdigest()


def run_key_parts(notebooks_dir: Path, *, results_root: Path) -> dict[str, str]:
    """The execution key's parts shared by every notebook: hashes of ``notebooks`` (claim pages derive
    from them), ``library`` (package sources), ``environment`` (distributions) and ``results``."""
    dists = sorted({f"{d.metadata['Name']}=={d.version}" for d in metadata.distributions() if d.metadata["Name"]})
    results = [p for p in results_root.rglob("*") if p.is_file()] if results_root.is_dir() else []
    return {
        "notebooks": _hash_files(notebooks_dir.glob("*.ipynb"), notebooks_dir),
        "library": _hash_files((p for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts), PACKAGE),
        "environment": _sha([sys.version, *dists]),
        "results": _hash_files(results, results_root),
    }


def notebook_key_parts(nb: Notebook, *, mode: str, seed: int, device: str) -> dict[str, str]:
    """The parts of the execution key proper to one notebook: its bytes and its parameters."""
    return {"notebook": hashlib.sha256(nb.path.read_bytes()).hexdigest(),
            "parameters": _sha({"id": nb.id, "mode": mode, "seed": seed, "device": device})}


def _why_executed(nb: Notebook, old: dict | None, key: dict, target: Path, *, reexecute: bool,
                  recompute: bool) -> str:
    if not nb.cache:
        return "never reused (metadata dpcompanion.cache = false)"
    if reexecute or recompute:
        return "--reexecute" if reexecute else "--recompute"
    if old is None or not target.exists():
        return "no earlier copy"
    changed = [k for k in key if old.get(k) != key[k]]
    return "changed: " + ", ".join(changed) if changed else "no earlier copy"


def _read_json(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text())
    except (OSError, json.JSONDecodeError):
        return None


def _write_json(path: Path, data: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    tmp.replace(path)

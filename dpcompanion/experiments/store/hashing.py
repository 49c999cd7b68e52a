"""A result's identity: the digest of its payload, the hash of its config and the hash of
the code that made it (see the package docstring, :mod:`dpcompanion.experiments.store`).

* :func:`digest`: sha256 over a canonical encoding of the payload only (dict keys sorted,
  floats by ``repr``, ints and strings tagged, arrays by dtype, shape and bytes; the entries
  named in :data:`TIME_KEYS` left out), so the same config and seed give the same digest on
  any executor;
* :func:`config_hash`: the same encoding of the config, floats rounded to
  :data:`CONFIG_DIGITS` significant digits;
* :func:`code_files` / :func:`code_hash`: the sources of the experiment's module and of every
  ``dpcompanion`` module it imports, transitively (read with ``ast``, imports inside
  functions included: an experiment lists no dependencies by hand), less
  :data:`CODE_HASH_EXCLUDE`, with the executors' :data:`RUN_POLICY`.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

from dpcompanion.experiments import base
from dpcompanion.experiments.store.executors import RUN_POLICY

__all__ = ["digest", "config_hash", "code_files", "code_hash", "code_files_at", "code_hash_of", "walk_code", "TIME_KEYS", "CONFIG_DIGITS", "CODE_HASH_EXCLUDE",
           "PKG"]

PKG = Path(__file__).resolve().parents[2]
#: modules (and packages, with their submodules) left out of every code hash: the store
#: stores numbers, the verdict rules judge them and the scale tables quote the papers' sizes;
#: none makes them
CODE_HASH_EXCLUDE = frozenset({"dpcompanion.experiments.store", "dpcompanion.experiments.comparisons",
                               "dpcompanion.experiments.scale_tables"})


#: payload keys that hold a measured time (seconds): kept in the payload, which pages show,
#: but left out of :func:`digest`, so that the same config and seed give the same digest on
#: any machine and executor, and a revalidation (which compares digests) can succeed
TIME_KEYS = frozenset({"wall_s", "train_wall_s", "wall_time"})


def _canon(obj: Any) -> Any:
    """A JSON-able canonical form of a payload: tagged scalars, arrays by dtype/shape/bytes;
    dict entries named in :data:`TIME_KEYS` are left out."""
    if isinstance(obj, np.ndarray):
        if obj.dtype.kind not in "biufc":
            raise ValueError(f"payload arrays must be numeric, got dtype {obj.dtype}")
        a = np.ascontiguousarray(obj, dtype=obj.dtype.newbyteorder("<"))
        return ["a", a.dtype.str, list(a.shape), hashlib.sha256(a.tobytes()).hexdigest()]
    if isinstance(obj, np.generic):
        obj = obj.item()
    if isinstance(obj, bool):
        return ["b", obj]
    if isinstance(obj, int):
        return ["i", str(obj)]
    if isinstance(obj, float):
        return ["f", repr(obj)]
    if isinstance(obj, str):
        return ["s", obj]
    if obj is None:
        return ["n"]
    if isinstance(obj, (list, tuple)):
        return ["l", [_canon(v) for v in obj]]
    if isinstance(obj, dict):
        bad = [k for k in obj if not isinstance(k, str)]
        if bad:
            raise ValueError(f"payload dict keys must be strings, got {bad[0]!r}")
        return ["d", [[k, _canon(obj[k])] for k in sorted(obj) if k not in TIME_KEYS]]
    raise ValueError(f"payload values must be numbers, strings, arrays, lists or dicts, got {type(obj).__name__}")


def digest(payload: Any) -> str:
    """sha256 of the canonical encoding of a numeric payload (not of provenance, times or paths).

    >>> digest({"b": [1, 2.0], "a": np.arange(3)}) == digest({"a": np.arange(3), "b": (1, 2.0)})
    True
    >>> digest({"x": 1}) == digest({"x": 1.0})
    False
    >>> digest({"x": 1, "wall_s": 3.2}) == digest({"x": 1, "wall_s": 0.7})   # times are not results
    True
    """
    enc = json.dumps(_canon(payload), separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(enc.encode()).hexdigest()


#: significant digits a config's floats keep in :func:`config_hash` (a grid from ``np.geomspace``
#: differs in its last bit between machines; issue 21: kappa 3.615183284464984 vs ...9845)
CONFIG_DIGITS = 12


def _round_floats(obj: Any) -> Any:
    """``obj`` with every float (and float array) rounded to :data:`CONFIG_DIGITS` significant digits."""
    if isinstance(obj, np.ndarray) and obj.dtype.kind == "f":
        return [_round_floats(float(v)) for v in obj.ravel()]
    if isinstance(obj, np.generic):
        obj = obj.item()
    if isinstance(obj, float):
        return float(f"{obj:.{CONFIG_DIGITS}g}")
    if isinstance(obj, (list, tuple)):
        return [_round_floats(v) for v in obj]
    if isinstance(obj, dict):
        return {k: _round_floats(v) for k, v in obj.items()}
    return obj


def config_hash(config: dict) -> str:
    """sha256 of the config (canonical encoding, as for :func:`digest`), its floats rounded to
    :data:`CONFIG_DIGITS` significant digits so that the last bit of a computed grid does not
    make a result stale.

    >>> config_hash({"kappa": [3.615183284464984]}) == config_hash({"kappa": [3.6151832844649845]})
    True
    >>> config_hash({"kappa": [3.6151832844]}) == config_hash({"kappa": [3.6151832845]})
    False
    """
    return digest(_round_floats(config))


def _module_file(name: str) -> Path | None:
    if name != "dpcompanion" and not name.startswith("dpcompanion."):
        return None
    parts = name.split(".")[1:]
    base_path = PKG.joinpath(*parts) if parts else PKG
    for cand in (base_path.with_suffix(".py"), base_path / "__init__.py"):
        if cand.is_file():
            return cand
    return None


def module_paths(name: str) -> tuple[str, str] | None:
    """The two paths (relative to the repository, posix) a dpcompanion module can live at:
    ``dpcompanion/a/b.py`` and ``dpcompanion/a/b/__init__.py``; None outside the package."""
    if name != "dpcompanion" and not name.startswith("dpcompanion."):
        return None
    rel = "/".join(name.split("."))
    return f"{rel}.py", f"{rel}/__init__.py"


@functools.lru_cache(maxsize=8192)
def imports_in_source(source_sha: str, source: bytes, module: str, is_pkg: bool) -> frozenset[str]:
    """Every module name ``module`` (source ``source``, a package's ``__init__`` when
    ``is_pkg``) imports, imports inside functions included, with the parents of each (a
    submodule import also runs its parents' ``__init__``); not yet filtered to those that
    exist. Cached by the source's sha256."""
    tree = ast.parse(source, filename=module)
    pkg = module if is_pkg else module.rpartition(".")[0]
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                anchor = pkg.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                mod = ".".join(anchor + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            out.add(mod)
            out.update(f"{mod}.{a.name}" for a in node.names)  # `from pkg import module`
    for m in list(out):
        while "." in m:
            m = m.rpartition(".")[0]
            out.add(m)
    return frozenset(out)


def walk_code(roots, source_of) -> dict[str, str]:
    """``{module: sha256 of its source}`` for the modules ``roots`` and every module they
    import, transitively, minus :data:`CODE_HASH_EXCLUDE`. ``source_of(name)`` gives a module's
    ``(source bytes, is_pkg)``, or None for a module that is not there (outside the package,
    or a name imported from a module rather than a module): the one walk behind
    :func:`code_files` (this checkout's files) and :func:`code_files_at` (a commit's)."""
    todo = list(roots)
    seen: dict[str, str] = {}
    first = set(roots)
    while todo:
        m = todo.pop()
        if m in seen or any(m == x or m.startswith(x + ".") for x in CODE_HASH_EXCLUDE):
            continue
        src = source_of(m)
        if src is None:
            if m in first:
                raise ValueError(f"cannot find the source of module {m}")
            continue
        data, is_pkg = src
        sha = hashlib.sha256(data).hexdigest()
        seen[m] = sha
        todo.extend(n for n in imports_in_source(sha, data, m, is_pkg)
                    if n not in seen and module_paths(n) is not None)
    return dict(sorted(seen.items()))


def _source_here(name: str) -> tuple[bytes, bool] | None:
    """A module's source in this checkout (or, outside the package, an already imported
    module's file: an experiment defined in a test, say)."""
    f = _module_file(name)
    if f is None and name in sys.modules and getattr(sys.modules[name], "__file__", None):
        f = Path(sys.modules[name].__file__)
    return None if f is None else (f.read_bytes(), f.name == "__init__.py")


def roots_of(exp: base.Experiment) -> list[str]:
    """The modules defining the experiment's ``run_unit``, ``combine`` and ``units``."""
    return [exp.run_unit.__module__, exp.combine.__module__, exp.units.__module__]


def code_files(exp: base.Experiment) -> dict[str, str]:
    """``{module: sha256 of its source}`` for the experiment's module (the module defining its
    ``run_unit``, ``units`` and ``combine``), every dpcompanion module it imports
    (transitively, imports inside functions included), minus :data:`CODE_HASH_EXCLUDE`."""
    try:
        return walk_code(roots_of(exp), _source_here)
    except ValueError as exc:
        raise ValueError(f"experiment {exp.id}: {exc}") from None


def _hash_of(files: dict[str, str]) -> str:
    return hashlib.sha256(json.dumps({"files": files, "run_policy": RUN_POLICY}, sort_keys=True).encode()).hexdigest()


def code_files_at(exp: base.Experiment, read) -> dict[str, str]:
    """:func:`code_files` as the code of another commit has them: ``read(path)`` gives the
    bytes of a repository path at that commit, or None where it has no such file
    (:mod:`.reference` reads them from git). The experiment's modules are named as this
    code names them."""
    def source_of(name):
        paths = module_paths(name)
        if paths is None:
            return None
        for path, is_pkg in zip(paths, (False, True)):
            data = read(path)
            if data is not None:
                return data, is_pkg
        return None
    return walk_code(roots_of(exp), source_of)


def code_hash_of(files: dict[str, str]) -> str:
    """The code hash of a :func:`code_files` (or :func:`code_files_at`) dict, with
    :data:`RUN_POLICY`."""
    return _hash_of(files)


def code_hash(exp: base.Experiment) -> str:
    """sha256 over :func:`code_files` (module names and their source hashes) and
    :data:`RUN_POLICY` (how the store runs a unit, which can change its last bits)."""
    return _hash_of(code_files(exp))


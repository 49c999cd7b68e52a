"""A result's identity: its payload's digest, its config's hash and its code hash (the compute code
an experiment runs, walked from its ``units``, ``run_unit`` and ``combine`` through what they import)."""

from __future__ import annotations

import ast
import functools
import hashlib
import json
import math
import sys
from pathlib import Path
from typing import Any

import numpy as np

from dpcompanion.experiments import base


#: how every unit is run (``result_store.run_one``), part of every code hash: change it with that
RUN_POLICY = "unit single-threaded: torch 1 intra-op thread, BLAS 1 thread"


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
#: differs in its last bit between machines, e.g. kappa 3.615183284464984 vs ...9845)
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


def module_paths(name: str) -> tuple[str, str] | None:
    """``dpcompanion/a/b.py`` and ``dpcompanion/a/b/__init__.py`` (relative to the repository)
    for module ``dpcompanion.a.b``; None outside the package."""
    if name != "dpcompanion" and not name.startswith("dpcompanion."):
        return None
    rel = "/".join(name.split("."))
    return f"{rel}.py", f"{rel}/__init__.py"


def _from_module(node: ast.ImportFrom, module: str, is_pkg: bool) -> str:
    """The module a ``from ... import`` in ``module`` (a package's ``__init__`` when ``is_pkg``)
    reads from, relative imports resolved."""
    if not node.level:
        return node.module or ""
    anchor = (module if is_pkg else module.rpartition(".")[0]).split(".")
    anchor = anchor[: len(anchor) - (node.level - 1)]
    return ".".join(anchor + ([node.module] if node.module else []))


@functools.lru_cache(maxsize=8192)
def imports_in_source(source_sha: str, source: bytes, module: str, is_pkg: bool) -> frozenset[str]:
    """Every module name ``module`` imports (inside functions too), with the parents of each (a
    submodule import runs its parents' ``__init__``); not filtered to those that exist."""
    tree = ast.parse(source, filename=module)
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            mod = _from_module(node, module, is_pkg)
            out.add(mod)
            out.update(f"{mod}.{a.name}" for a in node.names)  # `from pkg import module`
    for m in list(out):
        while "." in m:
            m = m.rpartition(".")[0]
            out.add(m)
    return frozenset(out)


#: the names of an experiment module its result is computed from (besides the functions named
#: by the experiment's ``units``, ``run_unit`` and ``combine``): the rest of the module (rules,
#: margins, quotations, sentences, page code) judges or shows a result and is left out of the hash
COMPUTE_NAMES = ("CONFIGS",)


def _strip_docstrings(tree: ast.AST) -> ast.AST:
    """``tree`` with the docstring of every module, class and function removed (in place)."""
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                    and isinstance(body[0].value.value, str):
                node.body = body[1:] or [ast.Pass()]
    return tree


@functools.lru_cache(maxsize=4096)
def _parsed(source_sha: str, source: bytes, module: str) -> ast.Module:
    return ast.parse(source, filename=module)


def normalized_sha(source: bytes, module: str) -> str:
    """sha256 of a module's code as Python runs it: its syntax tree without comments, layout or
    docstrings (an edited comment or docstring changes no result)."""
    tree = _strip_docstrings(ast.parse(source, filename=module))
    return hashlib.sha256(ast.dump(tree).encode()).hexdigest()


def _is_experiment_module(tree: ast.Module) -> bool:
    """A module that declares an experiment (a top-level ``EXPERIMENT = ...``)."""
    return any(isinstance(n, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "EXPERIMENT" for t in n.targets)
               for n in tree.body)


def _bound_names(node: ast.stmt) -> set[str]:
    """The top-level names a statement binds (a def, a class, an assignment's names, an import's
    aliases, those of a compound statement's body)."""
    out: set[str] = set()
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {node.name}
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return {(a.asname or a.name).split(".")[0] for a in node.names}
    if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        for t in targets:
            out.update(n.id for n in ast.walk(t) if isinstance(n, ast.Name) and isinstance(t, (ast.Name, ast.Tuple, ast.List)))
        return out
    for field in ("body", "orelse", "finalbody", "handlers"):
        for child in getattr(node, field, []) or []:
            if isinstance(child, ast.stmt):
                out |= _bound_names(child)
            elif isinstance(child, ast.ExceptHandler):
                for c in child.body:
                    out |= _bound_names(c)
    return out


def _import_targets(node: ast.stmt, module: str, is_pkg: bool) -> dict[str, tuple[str, str | None]]:
    """``{alias: (module, attribute or None)}`` of an import statement: ``import a.b as x`` binds
    ``x`` to module ``a.b``; ``from a import y`` binds ``y`` to ``(a, y)`` (a name of ``a``, or its
    submodule ``a.y``)."""
    out: dict[str, tuple[str, str | None]] = {}
    if isinstance(node, ast.Import):
        for a in node.names:
            out[a.asname or a.name.split(".")[0]] = (a.name if a.asname else a.name.split(".")[0], None)
    elif isinstance(node, ast.ImportFrom):
        mod = _from_module(node, module, is_pkg)
        for a in node.names:
            out[a.asname or a.name] = (mod, a.name)
    return out


def _slice(tree: ast.Module, module: str, is_pkg: bool,
           wanted: set[str]) -> tuple[str, set[tuple[str, str | None, str | None]]]:
    """The part of an experiment module that computes its result: the top-level statements that
    bind a name in ``wanted`` and, transitively, every top-level name they use (and any
    top-level statement that changes one of them), docstrings removed. Returns the sha256 of
    that slice and what it uses elsewhere: ``(module, name, attribute)``, an imported ``name`` of
    ``module`` (None: the module itself) and the ``attribute`` read from it (None: used bare)."""
    stmts = list(tree.body)
    binds = [_bound_names(s) for s in stmts]
    imports: dict[str, tuple[str, str | None]] = {}
    for s in stmts:
        imports.update(_import_targets(s, module, is_pkg))
    reached: set[str] = set()
    todo = list(wanted)
    keep: set[int] = set()
    outside: set[tuple[str, str | None, str | None]] = set()

    def use(node: ast.AST) -> None:
        bases = set()
        for n in ast.walk(node):
            if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id in imports:
                bases.add(id(n.value))
                outside.add((*imports[n.value.id], n.attr))
        for n in ast.walk(node):
            if isinstance(n, (ast.Import, ast.ImportFrom)):  # an import inside a function
                for mod, attr in _import_targets(n, module, is_pkg).values():
                    outside.add((mod, attr, None))
            elif isinstance(n, ast.Name) and id(n) not in bases:
                if n.id in imports:
                    outside.add((*imports[n.id], None))
                elif n.id not in reached:
                    todo.append(n.id)

    while True:
        while todo:
            name = todo.pop()
            if name in reached or name in imports:
                continue
            hit = [i for i, b in enumerate(binds) if name in b]
            if not hit:
                continue  # a builtin or a local name
            reached.add(name)
            for i in hit:
                if i not in keep:
                    keep.add(i)
                    use(stmts[i])
        # a top-level statement that changes a reached name (``CONFIGS["paper"] = ...``, ``X.update(...)``)
        more = [i for i, s in enumerate(stmts) if i not in keep and not binds[i]
                and not isinstance(s, (ast.Import, ast.ImportFrom))
                and any(isinstance(n, ast.Name) and n.id in reached for n in ast.walk(s))]
        if not more:
            break
        for i in more:
            keep.add(i)
            use(stmts[i])
    body = [_strip_docstrings(ast.Module(body=[stmts[i]], type_ignores=[])) for i in sorted(keep)
            if not isinstance(stmts[i], (ast.Import, ast.ImportFrom))]
    sha = hashlib.sha256(json.dumps([ast.dump(b) for b in body]).encode()).hexdigest()
    return sha, outside


def walk_code(roots, source_of, names=None) -> dict[str, str]:
    """``{module: sha256 of its code}`` for ``roots`` and every module they use, transitively, less
    :data:`CODE_HASH_EXCLUDE`: an experiment module only its :func:`_slice` (of ``names[module]`` and
    :data:`COMPUTE_NAMES`), any other whole (:func:`normalized_sha`). ``source_of(name)``:
    ``(source bytes, is_pkg)``, or None for a module that is not there."""
    names = dict(names or {})
    first = set(roots)
    wanted: dict[str, set[str]] = {m: set(COMPUTE_NAMES) | set(names.get(m, ())) for m in roots}
    whole: list[str] = []
    seen: dict[str, str] = {}
    sliced_done: dict[str, frozenset[str]] = {}
    sources: dict[str, tuple[bytes, bool, str] | None] = {}

    def excluded(m: str) -> bool:
        return any(m == x or m.startswith(x + ".") for x in CODE_HASH_EXCLUDE)

    def source(m: str):
        if m not in sources:
            src = source_of(m) if (module_paths(m) is not None or m in first) else None
            sources[m] = None if src is None else (src[0], src[1], hashlib.sha256(src[0]).hexdigest())
        return sources[m]

    def want(mod: str, attr: str | None) -> None:
        """``mod``'s name ``attr`` (the whole ``mod`` for None)."""
        if excluded(mod) or source(mod) is None:
            return
        parts = mod.split(".")
        whole.extend(".".join(parts[:k]) for k in range(1, len(parts)))  # a submodule runs its parents
        data, is_pkg, sha = source(mod)
        if _is_experiment_module(_parsed(sha, data, mod)):
            wanted.setdefault(mod, set(COMPUTE_NAMES))
            if attr is not None:
                wanted[mod].add(attr)
            else:
                wanted[mod] |= {b for s in _parsed(sha, data, mod).body for b in _bound_names(s)}
        else:
            whole.append(mod)

    for m in roots:
        if source(m) is None:
            raise ValueError(f"cannot find the source of module {m}")
        parts = m.split(".")
        whole.extend(".".join(parts[:k]) for k in range(1, len(parts)))  # importing it runs its parents
        if not _is_experiment_module(_parsed(source(m)[2], source(m)[0], m)):
            whole.append(m)
    while True:
        progressed = False
        for m in list(wanted):
            if m in first or (source(m) is not None and _is_experiment_module(_parsed(source(m)[2], source(m)[0], m))):
                data, is_pkg, sha = source(m)
                key = frozenset(wanted[m])
                if sliced_done.get(m) == key:
                    continue
                sliced_done[m] = key
                progressed = True
                seen[m], used = _slice(_parsed(sha, data, m), m, is_pkg, set(key))
                for mod, name, attr in used:
                    if name is not None and source(f"{mod}.{name}") is not None:
                        want(f"{mod}.{name}", attr)  # a submodule, or one of its names
                    elif name is None:
                        want(mod, attr)
                    else:
                        want(mod, name)
        while whole:
            m = whole.pop()
            if m in seen and m not in wanted or excluded(m) or source(m) is None:
                continue
            if m in wanted:
                continue
            data, is_pkg, sha = source(m)
            seen[m] = normalized_sha(data, m)
            progressed = True
            for n in imports_in_source(sha, data, m, is_pkg):
                if n not in seen and module_paths(n) is not None:
                    want(n, None)
        if not progressed:
            break
    return dict(sorted(seen.items()))


def source_here(name: str) -> tuple[bytes, bool] | None:
    """A module's source in this checkout (or, outside the package, an already imported
    module's file: an experiment defined in a test, say)."""
    paths = module_paths(name) or ()
    f = next((PKG.parent / p for p in paths if (PKG.parent / p).is_file()), None)
    if f is None and name in sys.modules and getattr(sys.modules[name], "__file__", None):
        f = Path(sys.modules[name].__file__)
    return None if f is None else (f.read_bytes(), f.name == "__init__.py")


def roots_of(exp: base.Experiment) -> list[str]:
    """The modules defining the experiment's ``run_unit``, ``combine`` and ``units``."""
    return list(dict.fromkeys([exp.run_unit.__module__, exp.combine.__module__, exp.units.__module__]))


def names_of(exp: base.Experiment) -> dict[str, set[str]]:
    """Per root module (:func:`roots_of`), the names of the experiment's compute functions it defines."""
    out: dict[str, set[str]] = {}
    for f in (exp.units, exp.run_unit, exp.combine):
        out.setdefault(f.__module__, set()).add(f.__name__)
    return out


def code_files(exp: base.Experiment) -> dict[str, str]:
    """``{module: sha256 of its code}`` of the experiment's compute code (:func:`walk_code` from
    the modules defining its ``units``, ``run_unit`` and ``combine``)."""
    try:
        return walk_code(roots_of(exp), source_here, names_of(exp))
    except ValueError as exc:
        raise ValueError(f"experiment {exp.id}: {exc}") from None


def code_files_at(exp: base.Experiment, read) -> dict[str, str]:
    """:func:`code_files` of other sources: ``read(path)`` gives the bytes of a repository path,
    or None where there is no such file."""
    def source_of(name):
        paths = module_paths(name)
        if paths is None:
            return None
        for path, is_pkg in zip(paths, (False, True)):
            data = read(path)
            if data is not None:
                return data, is_pkg
        return None
    return walk_code(roots_of(exp), source_of, names_of(exp))


def code_hash_of(files: dict[str, str]) -> str:
    """The code hash of a :func:`code_files` (or :func:`code_files_at`) dict, with :data:`RUN_POLICY`."""
    return hashlib.sha256(json.dumps({"files": files, "run_policy": RUN_POLICY}, sort_keys=True).encode()).hexdigest()


def code_hash(exp: base.Experiment) -> str:
    """sha256 over :func:`code_files` (module names and their source hashes) and
    :data:`RUN_POLICY` (how the store runs a unit, which can change its last bits)."""
    return code_hash_of(code_files(exp))

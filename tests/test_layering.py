"""The package's folders are its layers, and imports only go down (STYLE 3, CONTRIBUTING
"Layout"):

    core  <-  theory  <-  claims
                 ^
                 +----  training  <-  integrations  <-  experiments  <-  book  <-  cli

``ALLOWED`` below is the rule; each layer's ``__init__`` docstring states it in words (its
``May import:`` and ``Imports torch:`` lines), and a test checks that the two agree. A
sub-folder may have a rule of its own within its layer (``WITHIN``): ``experiments/protocols``
(what every experiment of a paper shares) imports no other module of experiments, so that no
protocol depends on an experiment, the store or a verdict rule.

The test reads every module's imports from its source (``ast``), so it checks folders,
not a list of files: a new module is covered the day it is added. Another test imports
each torch-free layer in a fresh interpreter and asserts torch stayed out, and one runs
``python -m dpcompanion --help`` and the torch-free commands in a real process.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parents[1] / "dpcompanion"

#: layer -> the layers it may import (itself always allowed)
ALLOWED: dict[str, set[str]] = {
    "core": set(),
    "theory": {"core"},
    "claims": {"core", "theory"},
    "training": {"core", "theory"},
    "integrations": {"core", "theory", "training"},
    "experiments": {"core", "theory", "training", "integrations", "claims"},
    "book": {"core", "theory", "experiments", "claims"},
    "cli": {"core", "theory", "training", "integrations", "experiments", "claims", "book"},
}
#: layers that must import without torch (top-level imports of every module in them; in cli,
#: of every module but those of the commands that need torch)
TORCH_FREE = ["core", "theory", "claims", "book", "cli"]
#: commands that never need torch: their modules import without it and they run without it
#: (the others may import torch at their top: cli.COMMANDS imports a command's module only
#: when that command runs)
TORCH_FREE_COMMANDS = {"zcdp", "schedule", "checks"}
#: sub-folder of a layer -> the other modules and sub-folders of that layer it may import
WITHIN: dict[str, set[str]] = {
    "experiments/protocols": set(),
}
#: top-level modules of the package besides the layer folders
TOP_LEVEL = {"__init__.py", "__main__.py"}


def _modules():
    for path in sorted(PKG.rglob("*.py")):
        rel = path.relative_to(PKG)
        yield rel, path


def _imported_dpcompanion(path: Path) -> list[tuple[str, int, bool]]:
    """(dotted module, line, at top level?) for every import of dpcompanion in ``path``."""
    tree = ast.parse(path.read_text(), filename=str(path))
    top = {id(n) for n in tree.body}
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("dpcompanion"):
            out.append((node.module, node.lineno, id(node) in top))
            # ``from dpcompanion.x import y``: y may be a module (it is named, as x.y, too)
            out.extend((f"{node.module}.{a.name}", node.lineno, id(node) in top) for a in node.names)
        elif isinstance(node, ast.Import):
            out.extend((a.name, node.lineno, id(node) in top) for a in node.names if a.name.startswith("dpcompanion"))
    return out


def test_every_module_lives_in_a_layer_folder():
    stray = [str(rel) for rel, _ in _modules() if len(rel.parts) == 1 and rel.name not in TOP_LEVEL]
    assert not stray, f"modules outside the layer folders {sorted(ALLOWED)}: {stray}"
    folders = {rel.parts[0] for rel, _ in _modules() if len(rel.parts) > 1}
    assert folders <= set(ALLOWED), f"unknown layer folders: {folders - set(ALLOWED)}"


def test_no_two_modules_share_a_file_name():
    """Every module's file name is unique in the package (``__init__.py`` and
    ``__main__.py`` aside), so that a name read alone (a traceback, a search, a code hash's list
    of modules, an editor's tab) says which module it is and what it is for."""
    where: dict[str, list[str]] = {}
    for rel, _ in _modules():
        if rel.name not in TOP_LEVEL:
            where.setdefault(rel.name, []).append(rel.as_posix())
    shared = {name: paths for name, paths in sorted(where.items()) if len(paths) > 1}
    assert not shared, "modules sharing a file name (rename them to say what each is for):\n" + "\n".join(
        f"{name}: {', '.join(paths)}" for name, paths in shared.items())


@pytest.mark.parametrize("layer", sorted(ALLOWED))
def test_imports_only_go_down(layer):
    bad = []
    for rel, path in _modules():
        if len(rel.parts) == 1 or rel.parts[0] != layer:
            continue
        for mod, line, _ in _imported_dpcompanion(path):
            parts = mod.split(".")
            if len(parts) < 2 or parts[1] == "__version__":
                continue
            target = parts[1]
            if target != layer and target not in ALLOWED[layer]:
                bad.append(f"{rel}:{line} imports {mod}")
    assert not bad, f"{layer} may import only {sorted(ALLOWED[layer])}:\n" + "\n".join(bad)


@pytest.mark.parametrize("folder", sorted(WITHIN))
def test_sub_folder_rules(folder):
    layer, sub = folder.split("/")
    allowed = WITHIN[folder] | {sub}
    bad = []
    for rel, path in _modules():
        if rel.parts[:2] != (layer, sub):
            continue
        for mod, line, _ in _imported_dpcompanion(path):
            parts = mod.split(".")
            if len(parts) > 2 and parts[1] == layer and parts[2] not in allowed:
                bad.append(f"{rel}:{line} imports {mod}")
    assert (PKG / layer / sub).is_dir(), f"{folder} is not a folder of the package"
    assert not bad, f"{folder} may import from {layer} only {sorted(allowed)}:\n" + "\n".join(bad)


def _layer_doc_lines(layer: str) -> dict[str, str]:
    """The ``May import:`` and ``Imports torch:`` paragraphs of the layer's ``__init__``
    docstring (each up to the next line that starts another such paragraph or is blank)."""
    doc = ast.get_docstring(ast.parse((PKG / layer / "__init__.py").read_text())) or ""
    found, key = {}, None
    for line in doc.splitlines():
        head = next((k for k in ("May import:", "Imports torch:") if line.startswith(k)), None)
        if head:
            key = head
            found[key] = line[len(head):]
        elif key and line.strip():
            found[key] += " " + line
        else:
            key = None
    return found


@pytest.mark.parametrize("layer", sorted(ALLOWED))
def test_layer_docstring_states_the_rule(layer):
    """Each layer's docstring names exactly the layers ``ALLOWED`` lets it import, and says
    ``Imports torch: no`` exactly for the layers of ``TORCH_FREE``."""
    lines = _layer_doc_lines(layer)
    assert set(lines) == {"May import:", "Imports torch:"}, (
        f"dpcompanion/{layer}/__init__.py: its docstring needs a 'May import:' and an 'Imports torch:' line")
    named = set(re.findall(r"``(\w+)``", lines["May import:"])) & set(ALLOWED)
    assert named == ALLOWED[layer], (f"dpcompanion/{layer}/__init__.py says it may import {sorted(named)}; "
                                     f"tests/test_layering.py ALLOWED says {sorted(ALLOWED[layer])}")
    says_no = lines["Imports torch:"].split()[0].strip(",.;") == "no"
    assert says_no == (layer in TORCH_FREE), f"dpcompanion/{layer}/__init__.py: 'Imports torch:' disagrees with TORCH_FREE"


def test_no_private_name_imported_across_modules():
    """A name starting with ``_`` belongs to its module: ``from x import _y`` across
    modules is refused (move the helper where both can use it, publicly)."""
    bad = []
    for rel, path in _modules():
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("dpcompanion"):
                bad.extend(f"{rel}:{node.lineno} {node.module}.{a.name}" for a in node.names
                           if a.name.startswith("_") and not a.name.startswith("__"))
    assert not bad, "private names imported across modules:\n" + "\n".join(bad)


def _module_aliases(tree: ast.AST) -> set[str]:
    """Local names bound to dpcompanion modules: ``from dpcompanion.x import y`` where ``y``
    is a module (file or package) of the package, ``import dpcompanion.x as y``."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("dpcompanion"):
            base = PKG.joinpath(*node.module.split(".")[1:])
            names.update(a.asname or a.name for a in node.names
                         if (base / f"{a.name}.py").exists() or (base / a.name / "__init__.py").exists())
        elif isinstance(node, ast.Import):
            names.update(a.asname for a in node.names if a.name.startswith("dpcompanion") and a.asname)
    return names


def test_no_private_name_used_across_modules():
    """Nor ``module._y`` through an imported dpcompanion module (``gd._helper``)."""
    bad = []
    for rel, path in _modules():
        tree = ast.parse(path.read_text())
        aliases = _module_aliases(tree)
        for node in ast.walk(tree):
            if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases
                    and node.attr.startswith("_") and not node.attr.startswith("__")):
                bad.append(f"{rel}:{node.lineno} {node.value.id}.{node.attr}")
    assert not bad, "private names used across modules:\n" + "\n".join(bad)


@pytest.mark.parametrize("layer", TORCH_FREE)
def test_torch_free_layers_do_not_import_torch(layer):
    mods = []
    for rel, _ in _modules():
        if (rel.parts[:2] == ("cli", "commands") and rel.stem != "__init__"
                and rel.stem.removesuffix("_command") not in TORCH_FREE_COMMANDS):
            continue
        if rel.parts[0] == layer and rel.name != "__main__.py":
            mods.append("dpcompanion." + ".".join(rel.with_suffix("").parts).removesuffix(".__init__"))
    code = (
        "import sys, importlib\n"
        f"for m in {mods!r}: importlib.import_module(m)\n"
        "print('torch' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "False", f"importing the {layer} layer pulled in torch"


#: a real process per case (``python -m dpcompanion ...``): the CLI's start and the torch-free
#: commands leave torch out of ``sys.modules``
CLI_CASES = [
    ["--help"],
    ["zcdp", "--epsilon", "1", "--delta", "1e-5"],
    ["schedule", "--kind", "uniform", "--epsilon", "1", "--delta", "1e-5", "--T", "5"],
    ["checks", "--id", "H-E26"],
    ["no-such-command"],
]


def test_torch_free_commands_are_known():
    from dpcompanion import cli

    assert TORCH_FREE_COMMANDS <= set(cli.COMMANDS)
    assert {c[0] for c in CLI_CASES if c[0] in cli.COMMANDS} == TORCH_FREE_COMMANDS


@pytest.mark.parametrize("argv", CLI_CASES, ids=[" ".join(a[:2]) for a in CLI_CASES])
def test_cli_start_and_torch_free_commands_leave_torch_out(argv):
    from limits import HANG_GUARD_S

    code = (
        "import runpy, sys\n"
        f"sys.argv = ['dpcompanion', *{argv!r}]\n"
        "try:\n"
        "    runpy.run_module('dpcompanion', run_name='__main__')\n"
        "except SystemExit as exc:\n"
        "    code = exc.code\n"
        "print('torch' in sys.modules, code, file=sys.stderr)"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=HANG_GUARD_S)
    assert proc.returncode == 0, proc.stderr[-2000:]
    torch_loaded, rc = proc.stderr.strip().splitlines()[-1].split()
    assert rc == ("2" if argv[0] == "no-such-command" else "0"), proc.stderr
    assert torch_loaded == "False", f"python -m dpcompanion {' '.join(argv)} imported torch"


def test_help_reads_each_command_help_without_importing_it():
    """``dpcompanion --help`` lists every command with its ``HELP``, read from the source:
    the same string as the module's."""
    import importlib

    from dpcompanion import cli

    for name in cli.COMMANDS:
        module = importlib.import_module(cli.command_module(name))
        assert cli.command_help(name) == module.HELP


def test_contributing_layout_table_states_the_rule():
    """CONTRIBUTING's Layout table has one row per layer whose "may import" column names the
    layers of ``ALLOWED`` ("no other layer", "every layer" for none and all)."""
    text = (PKG.parent / "CONTRIBUTING.md").read_text()
    rows = dict(re.findall(r"^\| `dpcompanion/(\w+)/` \|[^|]*\| ([^|]*) \|", text, re.M))
    assert set(rows) == set(ALLOWED), f"CONTRIBUTING's Layout table lists {sorted(rows)}"
    for layer, cell in rows.items():
        cell = cell.strip()
        named = (set(ALLOWED) - {layer} if cell == "every layer" else set() if cell == "no other layer"
                 else {w.strip() for w in cell.split(",")})
        assert named == ALLOWED[layer], f"CONTRIBUTING says {layer} may import {cell!r}; ALLOWED: {sorted(ALLOWED[layer])}"


#: where an accounting library may be imported: theory/ (the one accountant), claims/ (its
#: independent test references) and the Opacus bridge (its own accountant, named a reference)
ACCOUNTING_LIBRARIES = ("dp_accounting", "opacus.accountants", "prv_accountant")
ACCOUNTING_ALLOWED = ("theory", "claims", "integrations/opacus.py")


def test_only_theory_computes_privacy_accounting():
    """Outside theory/ (claims' references and the Opacus bridge's cross-check aside) no module
    imports an accounting library: every RDP curve and epsilon comes from dpcompanion.theory
    (one accountant for the planner, the ledger, the trainers, Wu's protocol and the
    audit)."""
    bad = []
    for rel, path in _modules():
        where = rel.as_posix()
        if any(where == a or where.startswith(a + "/") for a in ACCOUNTING_ALLOWED):
            continue
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            names = ([node.module or ""] if isinstance(node, ast.ImportFrom)
                     else [a.name for a in node.names] if isinstance(node, ast.Import) else [])
            bad += [f"{where}:{node.lineno} imports {n}" for n in names
                    if any(n == lib or n.startswith(lib + ".") for lib in ACCOUNTING_LIBRARIES)]
    assert not bad, "accounting outside theory/:\n" + "\n".join(bad)


#: the longest a module of the package may be, in lines (a module past it holds more than one
#: concept; split it along a real seam, never only to fit a count)
MAX_MODULE_LINES = 1200
def test_no_module_is_over_1200_lines():
    """No module of the package is over :data:`MAX_MODULE_LINES` lines."""
    lengths = {rel.as_posix(): len(path.read_text().splitlines()) for rel, path in _modules()}
    over = {m: n for m, n in lengths.items() if n > MAX_MODULE_LINES}
    assert not over, f"modules over {MAX_MODULE_LINES} lines (split them along their seams): {over}"

def _module_name(rel: Path) -> str:
    """``dpcompanion.a.b`` for ``a/b.py`` and for ``a/b/__init__.py``."""
    parts = rel.with_suffix("").parts
    return ".".join(("dpcompanion",) + (parts[:-1] if parts[-1] == "__init__" else parts))


def _import_graph() -> dict[str, dict[str, int]]:
    """``{module: {module it imports: first line}}`` over the package: every ``import`` and
    ``from ... import`` anywhere in a module (inside functions and classes included, relative
    ones resolved), each named as the most specific module of the package it reaches
    (``from x import y`` reaches ``x.y`` when that is a module, else ``x``), with the packages a
    dotted import also runs (``a.b.c`` runs ``a.b``'s ``__init__``) unless they hold the
    importer. Imports of a module by itself and of its own packages are left out."""
    names = {_module_name(rel): (rel, path) for rel, path in _modules()}

    def reach(name: str) -> str | None:
        while name and name not in names:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, dict[str, int]] = {}
    for mod, (rel, path) in names.items():
        out = graph.setdefault(mod, {})
        pkg = mod if rel.name == "__init__.py" else mod.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = pkg.split(".")[: len(pkg.split(".")) - (node.level - 1)]
                    base = ".".join(anchor + ([base] if base else []))
                if not base.startswith("dpcompanion"):
                    continue
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in names else reach(base) for a in node.names]
            elif isinstance(node, ast.Import):
                targets = [reach(a.name) for a in node.names if a.name.startswith("dpcompanion")]
            else:
                continue
            for target in filter(None, targets):
                parent = target
                while parent.count(".") >= 1:  # the module and the packages the import runs
                    if parent != mod and not mod.startswith(parent + "."):
                        out.setdefault(parent, node.lineno)
                    parent = parent.rpartition(".")[0]
    return graph


def _cycles(graph: dict[str, set[str] | dict[str, int]]) -> list[list[str]]:
    """One cycle per edge that closes one in a depth-first walk (``[a, b, ..., a]``); [] when
    the graph has none."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []
    found = []

    def visit(node: str) -> None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                found.append(path[path.index(nxt):] + [nxt])
            elif nxt not in state:
                visit(nxt)
        path.pop()
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node)
    return found


def test_cycles_finds_a_circle_and_no_false_one():
    """The cycle finder of :func:`test_no_import_circle` names a circle of two, a
    circle through a chain, and none in a graph whose imports only go one way."""
    assert _cycles({"a": {"b"}, "b": {"a"}}) == [["a", "b", "a"]]
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c", "a"]]
    assert _cycles({"a": {"b", "c"}, "b": {"c"}, "c": set()}) == []


def test_no_import_circle():
    """No two modules of the package import each other, directly or through a
    chain, imports inside functions included (a circle works only while one side imports late,
    and the order the package loads in then decides what works); nor do two sub-packages of a
    layer (``experiments/store`` and ``experiments/comparisons``, say), counted over all
    their modules, so that what is shared sits in a module below both. A folder and the
    folders inside it are not compared (``experiments/store`` imports ``experiments/base.py``,
    and experiments import the store)."""
    graph = _import_graph()

    def where(cycle: list[str]) -> str:
        return " -> ".join(f"{a.removeprefix('dpcompanion.')} (line {graph[a][b]})" for a, b in zip(cycle, cycle[1:])) \
            + " -> " + cycle[-1].removeprefix("dpcompanion.")

    circles = [where(c) for c in _cycles(graph)]
    assert not circles, "import circles between modules (move what both need to a lower module):\n" + "\n".join(circles)

    folder_of = {_module_name(rel): "/".join(rel.parent.parts) for rel, _ in _modules()}
    folders: dict[str, set[str]] = {}
    via: dict[tuple[str, str], str] = {}
    for mod, targets in graph.items():
        for target in targets:
            a, b = folder_of[mod], folder_of[target]
            if a != b and not (a + "/").startswith(b + "/") and not (b + "/").startswith(a + "/"):
                folders.setdefault(a, set()).add(b)
                via.setdefault((a, b), f"{mod.removeprefix('dpcompanion.')} imports {target.removeprefix('dpcompanion.')}")
    circles = [" -> ".join(c) + "  (" + "; ".join(via[a, b] for a, b in zip(c, c[1:])) + ")" for c in _cycles(folders)]
    assert not circles, "import circles between sub-packages:\n" + "\n".join(circles)

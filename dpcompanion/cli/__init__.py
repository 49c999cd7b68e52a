"""Command line of dpcompanion: ``python -m dpcompanion <command> ...`` or ``dpcompanion``.

Each command lives in its own module, ``dpcompanion/cli/commands/<name>_command.py``, and exposes

* ``HELP``: one line shown in ``dpcompanion --help``;
* ``add_arguments(parser)``: declares its options on an ``argparse`` parser;
* ``run(args) -> int``: does the work and returns the exit status.

Bad input is reported in one line on stderr, ``dpcompanion <command>: error: <what is
wrong and what is allowed>``, with exit status 2 and no traceback. When the reader of stdout
closes the pipe (``dpcompanion zcdp ... | head -c 1``) the command stops quietly with exit
status 141 (128 + SIGPIPE), as a Unix tool ended by SIGPIPE does. Commands signal it by
raising :class:`UsageError` (or ``ValueError`` from the math layer, whose messages
already name the parameter, the value and the allowed range). Commands validate all
input before writing anything, so a refused call leaves no half-written file.

May import: ``core``, ``theory``, ``claims``, ``training``, ``integrations``, ``experiments``,
``book``.
Imports torch: no at its start (``dpcompanion --help`` imports no command module; the
commands ``zcdp``, ``schedule`` and ``checks`` never import torch); a command that needs
torch imports it in its module or, to keep its ``--help`` quick, in its ``run``: its module
is imported only when that command is given.
"""

from __future__ import annotations

import argparse
import ast
import importlib
import importlib.util
import os
import sys
from pathlib import Path
from types import ModuleType

#: the commands, in the order ``dpcompanion --help`` lists them. Command ``name`` lives in
#: ``dpcompanion/cli/commands/<name>_command.py`` (:func:`command_module`; one scheme for every
#: command, so that no command's module shares its file name with another module of the package,
#: issue 32). A command's module is imported only when that command is given (to run or to show its
#: ``--help``), so it may import what it needs at its top; ``dpcompanion --help`` reads every
#: command's ``HELP`` from its source instead.
COMMANDS: tuple[str, ...] = ("reproduce", "zcdp", "schedule", "checks", "train", "bench", "audit", "experiment",
                             "results", "verdicts")


class UsageError(Exception):
    """Invalid input from the user: reported in one line, exit status 2."""


class _Parser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are one line (no usage block) with exit status 2."""

    def error(self, message: str):  # noqa: D401 - argparse API
        self.exit(2, f"{self.prog}: error: {message}\n")


def command_module(name: str) -> str:
    """The dotted name of command ``name``'s module: ``dpcompanion.cli.commands.<name>_command``."""
    return f"{__name__}.commands.{name}_command"


def load_command(name: str) -> ModuleType:
    """The module of command ``name`` (imported now)."""
    return importlib.import_module(command_module(name))


def command_help(name: str) -> str:
    """The one-line ``HELP`` of command ``name``, read from its module's source without
    importing it: ``HELP`` must be a string literal at the module's top level."""
    path = Path(importlib.util.find_spec(command_module(name)).origin)
    for node in ast.parse(path.read_text(), filename=str(path)).body:
        if isinstance(node, ast.Assign) and [getattr(t, "id", None) for t in node.targets] == ["HELP"]:
            return ast.literal_eval(node.value)
    raise LookupError(f"{path}: no top-level HELP = '...' string")


def build_parser(load: list[str] | None = None) -> argparse.ArgumentParser:
    """The parser of the command line: every command is listed with its ``HELP``; the commands
    in ``load`` (default: all) are imported and declare their arguments."""
    parser = _Parser(prog="dpcompanion", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True
    parser.command_parsers = {}
    for name in COMMANDS:
        module = load_command(name) if load is None or name in load else None
        text = module.HELP if module else command_help(name)
        # argparse %-formats an argument's help (not a description): a literal % must be %%
        p = sub.add_parser(name, help=text.replace("%", "%%"), description=text)
        if module:
            module.add_arguments(p)
            p.set_defaults(_run=module.run, _prog=p.prog)
        parser.command_parsers[name] = p
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    # the top level has no option taking a value: the first word not starting with - is the command
    command = next((a for a in argv if not a.startswith("-")), None)
    parser = build_parser([command] if command in COMMANDS else [])
    args, extra = parser.parse_known_args(argv)
    if extra:  # refused by the command's parser, so that the line names the command
        parser.command_parsers[args.command].error(f"unrecognized arguments: {' '.join(extra)}")
    try:
        rc = int(args._run(args) or 0)
        sys.stdout.flush()  # a closed pipe shows here, not at the interpreter's exit
        return rc
    except BrokenPipeError:
        return _closed_pipe()
    except (UsageError, ValueError) as exc:
        msg = " ".join(str(exc).split())  # one line, whatever the message
        print(f"{args._prog}: error: {msg}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"{args._prog}: interrupted", file=sys.stderr)
        return 130


#: Exit status when the reader of stdout went away (``... | head -c 1``): 128 + SIGPIPE, what a
#: shell reports for a Unix tool that SIGPIPE ended.
EXIT_CLOSED_PIPE = 128 + 13


def _closed_pipe() -> int:
    """stdout's reader closed the pipe: stop quietly, as Unix tools do (Python's documented
    recipe, "Note on SIGPIPE" in the ``signal`` module: point stdout at devnull so that the
    interpreter's final flush raises nothing) and exit :data:`EXIT_CLOSED_PIPE`."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):  # stdout has no file descriptor (captured): nothing to redirect
        pass
    return EXIT_CLOSED_PIPE


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())

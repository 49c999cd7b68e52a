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

Input and output failures are one line too, with exit status 74 (``EX_IOERR`` of
``sysexits.h``, :data:`EXIT_IO_ERROR`): stdout closed (``dpcompanion ... >&-``) is refused
before anything runs (``--help`` included); stdout that cannot take the output
(``> /dev/full``, a write error) ends the command with ``cannot write to stdout (<why>)``;
any other ``OSError`` a command lets through (e.g. a full file system under the results
store, which writes every file atomically, so the previous result stays whole) is
``<file>: <why>``. Every ``--json`` is strict JSON (:func:`dpcompanion.core.outputs.json_text`:
a float that is not finite is the string ``"Infinity"``, ``"-Infinity"`` or ``"NaN"``), for
every command: each prints its JSON through that one writer (a test reads every command module).

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
import errno
import importlib
import importlib.util
import os
import sys
from pathlib import Path
from types import ModuleType

from dpcompanion.core import outputs

#: the commands, in the order ``dpcompanion --help`` lists them. Command ``name`` lives in
#: ``dpcompanion/cli/commands/<name>_command.py`` (:func:`command_module`; one scheme for every
#: command, so that no command's module shares its file name with another module of the package).
#: A command's module is imported only when that command is given (to run or to show its
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
    """Run the command line ``argv`` (default ``sys.argv[1:]``); returns the exit status
    (argparse's own exits, ``--help`` and its errors, stay ``SystemExit``)."""
    argv = sys.argv[1:] if argv is None else list(argv)
    # the top level has no option taking a value: the first word not starting with - is the command
    command = next((a for a in argv if not a.startswith("-")), None)
    prog = f"dpcompanion {command}" if command in COMMANDS else "dpcompanion"
    if sys.stdout is None:  # started with stdout closed (`>&-`): descriptor 1 is free; refuse before any file is opened
        _say(f"{prog}: error: stdout is closed; give the output somewhere to go (e.g. > /dev/null or > FILE)")
        return EXIT_IO_ERROR
    real, sys.stdout = sys.stdout, _Stdout(sys.stdout)
    try:
        try:
            return _dispatch(argv, command)
        except SystemExit:  # --help, or argparse's one-line error: its text is in stdout's buffer
            sys.stdout.flush()
            raise
    except StdoutFailed as exc:
        if exc.errno == errno.EPIPE:
            return _closed_pipe()
        _silence_stdout()
        _say(f"{prog}: error: cannot write to stdout ({exc.strerror or exc.__class__.__name__})")
        return EXIT_IO_ERROR
    finally:
        sys.stdout = real


def _dispatch(argv: list[str], command: str | None) -> int:
    parser = build_parser([command] if command in COMMANDS else [])
    args, extra = parser.parse_known_args(argv)
    if extra:  # refused by the command's parser, so that the line names the command
        parser.command_parsers[args.command].error(f"unrecognized arguments: {' '.join(extra)}")
    try:
        rc = int(args._run(args) or 0)
        sys.stdout.flush()  # a closed pipe or a full device shows here, not at the interpreter's exit
        return rc
    except BrokenPipeError:  # a pipe the command wrote past sys.stdout (its StdoutFailed goes on to main)
        return _closed_pipe()
    except (UsageError, ValueError) as exc:
        msg = " ".join(str(exc).split())  # one line, whatever the message
        _say(f"{args._prog}: error: {msg}")
        return 2
    except OSError as exc:  # e.g. ENOSPC under a results folder: the store writes atomically, nothing is half-written
        where = f"{exc.filename}: " if exc.filename else ""
        why = " ".join(str(exc.strerror or exc).split()) or exc.__class__.__name__
        _say(f"{args._prog}: error: {where}{why}")
        return EXIT_IO_ERROR
    except KeyboardInterrupt:
        _say(f"{args._prog}: interrupted")
        return 130


#: Exit status when the reader of stdout went away (``... | head -c 1``): 128 + SIGPIPE, what a
#: shell reports for a Unix tool that SIGPIPE ended.
EXIT_CLOSED_PIPE = 128 + 13

#: Exit status of an input/output failure: stdout closed or not writable (``>&-``,
#: ``> /dev/full``), or an ``OSError`` such as a full file system (``EX_IOERR`` of ``sysexits.h``).
EXIT_IO_ERROR = 74


class StdoutFailed(Exception):
    """A write to (or flush of) stdout failed: the ``OSError`` it raised, as ``__cause__``;
    ``errno`` and ``strerror`` are its. Not an ``OSError`` itself, so that no command's handler
    of file errors mistakes stdout for its file."""

    def __init__(self, exc: OSError):
        super().__init__(str(exc))
        self.errno, self.strerror = exc.errno, exc.strerror


class _Stdout:
    """``sys.stdout`` while a command runs: the real stream, except that an ``OSError`` of a
    write or flush becomes :class:`StdoutFailed`, so that :func:`main` can tell stdout's
    failure (one line, :data:`EXIT_IO_ERROR`; a closed pipe: :data:`EXIT_CLOSED_PIPE`) from
    a file's. argparse's ``--help`` swallows an ``OSError`` of its write; this one reaches
    :func:`main`."""

    def __init__(self, stream):
        self._stream = stream

    def write(self, text):
        try:
            return self._stream.write(text)
        except OSError as exc:
            raise StdoutFailed(exc) from exc

    def writelines(self, lines):
        for line in lines:
            self.write(line)

    def flush(self):
        try:
            return self._stream.flush()
        except OSError as exc:
            raise StdoutFailed(exc) from exc

    def __getattr__(self, name):
        return getattr(self._stream, name)


def _say(line: str) -> None:
    """``line`` on stderr (nothing when stderr is closed or cannot be written)."""
    try:
        if sys.stderr is not None:
            print(line, file=sys.stderr, flush=True)
    except (OSError, ValueError):
        pass


def _closed_pipe() -> int:
    """stdout's reader closed the pipe: stop quietly, as Unix tools do, and exit
    :data:`EXIT_CLOSED_PIPE`."""
    _silence_stdout()
    return EXIT_CLOSED_PIPE


def _silence_stdout() -> None:
    """Point stdout's file descriptor at devnull, so that the interpreter's final flush of what
    could not be written raises nothing (Python's documented recipe, "Note on SIGPIPE" in the
    ``signal`` module)."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):  # stdout has no file descriptor (captured): nothing to redirect
        pass


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())

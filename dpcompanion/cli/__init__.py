"""Command line of dpcompanion: ``python -m dpcompanion <command> ...`` or ``dpcompanion``.

A command is ``dpcompanion/cli/commands/<name>_command.py`` with ``HELP`` (one line for
``dpcompanion --help``), ``add_arguments(parser)`` and ``run(args) -> int`` (the exit status).

Exit statuses: bad input (:class:`UsageError`, or a ``ValueError`` of the math layer, whose
message names the parameter) is one line ``dpcompanion <command>: error: ...`` and 2;
stdout closed, unwritable, or any other ``OSError`` is one line and 74
(:data:`EXIT_IO_ERROR`); a closed pipe (``... | head -c 1``) stops quietly with 141
(:data:`EXIT_CLOSED_PIPE`). Commands validate all input before writing anything. Every
``--json`` is strict JSON, printed by :func:`dpcompanion.core.outputs.json_text`.

May import: ``core``, ``theory``, ``claims``, ``training``, ``integrations``, ``experiments``,
``book``.
Imports torch: no at its start (``dpcompanion --help`` imports no command module; the
commands ``zcdp``, ``schedule`` and ``checks`` never import torch); a command that needs
torch imports it in its module or, to keep its ``--help`` quick, in its ``run``.
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

#: the commands, in the order ``dpcompanion --help`` lists them. A command's module is imported
#: only when that command is given; ``dpcompanion --help`` reads each ``HELP`` from its source.
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


def command_help(name: str) -> str:
    """The ``HELP`` of command ``name``, a top-level string literal read without importing it."""
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
        module = importlib.import_module(command_module(name)) if load is None or name in load else None
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


#: Exit status when the reader of stdout went away: 128 + SIGPIPE, as for a Unix tool SIGPIPE ended.
EXIT_CLOSED_PIPE = 128 + 13

#: Exit status of an input/output failure (``EX_IOERR`` of ``sysexits.h``).
EXIT_IO_ERROR = 74


class StdoutFailed(Exception):
    """A write to (or flush of) stdout failed (the ``OSError`` is its ``__cause__``). Not an
    ``OSError`` itself, so that no command's handler of file errors mistakes stdout for its file."""

    def __init__(self, exc: OSError):
        super().__init__(str(exc))
        self.errno, self.strerror = exc.errno, exc.strerror


class _Stdout:
    """``sys.stdout`` while a command runs: an ``OSError`` of a write or flush becomes
    :class:`StdoutFailed`, so that :func:`main` tells stdout's failure from a file's (and
    argparse's ``--help``, which swallows an ``OSError``, cannot hide it)."""

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
    """stdout's reader closed the pipe: stop quietly, as Unix tools do."""
    _silence_stdout()
    return EXIT_CLOSED_PIPE


def _silence_stdout() -> None:
    """Point stdout's descriptor at devnull, so that the interpreter's final flush raises nothing
    (the "Note on SIGPIPE" recipe of the ``signal`` module)."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):  # stdout has no file descriptor (captured): nothing to redirect
        pass


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())

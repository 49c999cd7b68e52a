"""Command line of dpcompanion: ``python -m dpcompanion <command> ...`` or ``dpcompanion``.

Each command lives in its own module under :mod:`dpcompanion.cli.commands` and exposes

* ``HELP``: one line shown in ``dpcompanion --help``;
* ``add_arguments(parser)``: declares its options on an ``argparse`` parser;
* ``run(args) -> int``: does the work and returns the exit status.

Bad input is reported in one line on stderr, ``dpcompanion <command>: error: <what is
wrong and what is allowed>``, with exit status 2 and no traceback. Commands signal it by
raising :class:`UsageError` (or ``ValueError`` from the math layer, whose messages
already name the parameter, the value and the allowed range). Commands validate all
input before writing anything, so a refused call leaves no half-written file.
"""

from __future__ import annotations

import argparse
import importlib
import sys

#: command name -> module under dpcompanion.cli.commands (imported lazily, so that
#: ``zcdp`` never pays for importing torch).
COMMANDS: dict[str, str] = {
    "reproduce": "reproduce",
    "zcdp": "zcdp",
    "schedule": "schedule",
    "checks": "checks",
    "train": "train",
    "bench": "bench",
    "audit": "audit",
    "experiment": "experiment",
    "results": "results",
    "verdicts": "verdicts",
}


class UsageError(Exception):
    """Invalid input from the user: reported in one line, exit status 2."""


class _Parser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are one line (no usage block) with exit status 2."""

    def error(self, message: str):  # noqa: D401 - argparse API
        self.exit(2, f"{self.prog}: error: {message}\n")


def _available_commands() -> dict[str, object]:
    found = {}
    for name, module in COMMANDS.items():
        try:
            found[name] = importlib.import_module(f"dpcompanion.cli.commands.{module}")
        except ModuleNotFoundError as exc:  # a command whose module is not written yet
            if exc.name != f"dpcompanion.cli.commands.{module}":
                raise
    return found


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="dpcompanion", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True
    parser.command_parsers = {}
    for name, module in _available_commands().items():
        # argparse %-formats an argument's help (not a description): a literal % must be %%
        p = sub.add_parser(name, help=module.HELP.replace("%", "%%"), description=module.HELP)
        module.add_arguments(p)
        p.set_defaults(_run=module.run, _prog=p.prog)
        parser.command_parsers[name] = p
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    if extra:  # refused by the command's parser, so that the line names the command
        parser.command_parsers[args.command].error(f"unrecognized arguments: {' '.join(extra)}")
    try:
        return int(args._run(args) or 0)
    except (UsageError, ValueError) as exc:
        msg = " ".join(str(exc).split())  # one line, whatever the message
        print(f"{args._prog}: error: {msg}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"{args._prog}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())

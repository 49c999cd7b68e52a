"""Options shared by several commands: the budget, the schedule kinds (flags generated from
:data:`dpcompanion.theory.schedules.KIND_TABLE`), output paths and sizes. Each check runs
before any work and raises :class:`dpcompanion.cli.UsageError` in one line naming the flag.
"""

from __future__ import annotations

import argparse
import csv
import errno
import io
import itertools
import math
import os
import stat
from pathlib import Path
from typing import Any, Callable

import numpy as np

from dpcompanion.cli import UsageError
from dpcompanion.core import validate
from dpcompanion.theory import accounting
from dpcompanion.theory import budget as budgets
from dpcompanion.theory import schedules
from dpcompanion.theory.budget import ACCOUNTANTS, Budget


def flag(name: str, fn: Callable[..., Any], *args, **kw) -> Any:
    """Run a validator; its ValueError becomes a UsageError that names the flag ``name``."""
    try:
        return fn(*args, **kw)
    except ValueError as exc:
        raise UsageError(f"{name}: {' '.join(str(exc).split())}") from None


# ------------------------------------------------------------------------------ budget

def add_budget_arguments(p: argparse.ArgumentParser, *, sampling_rate: bool = True) -> None:
    p.add_argument("--epsilon", help="target epsilon (> 0), with --delta")
    p.add_argument("--delta", help="delta in (0, 1): with --epsilon the target; with --R the delta epsilons are "
                                   "reported at (needed with --R when --sampling-rate < 1)")
    p.add_argument("--R", dest="R", help="budget in the paper's units R = 2 rho (> 0): sum_t 1/sigma_t^2 <= R")
    p.add_argument("--accountant", default="auto",
                   help="how epsilon is accounted: auto (default: zcdp, the paper's conversion, for full batch; rdp "
                        "when --sampling-rate < 1), zcdp, exact (Gaussian DP), rdp or pld (full batch only)")
    if sampling_rate:
        p.add_argument("--sampling-rate", dest="sampling_rate", default="1",
                       help="Poisson sampling rate p in (0, 1]; p < 1: subsampled steps, accounted by RDP (default 1)")


def budget_from_args(args: argparse.Namespace, *, default_delta: float | None = None):
    """The one :class:`~dpcompanion.theory.budget.Budget` of a command line."""
    p = 1.0
    if getattr(args, "sampling_rate", None) is not None:
        p = flag("--sampling-rate", validate.sampling_rate, parse_float(args.sampling_rate, "--sampling-rate"))
    acc = args.accountant
    if acc not in ("auto",) + ACCOUNTANTS:
        raise UsageError(f"--accountant must be one of auto, {', '.join(ACCOUNTANTS)}, got {acc!r}")
    eps = None if args.epsilon is None else flag("--epsilon", validate.positive, "epsilon",
                                                 parse_float(args.epsilon, "--epsilon"))
    delta = None if args.delta is None else flag("--delta", validate.delta, parse_float(args.delta, "--delta"))
    R = None if args.R is None else flag("--R", validate.positive, "R", parse_float(args.R, "--R"))
    if acc == "pld" and delta is not None:
        flag("--delta", accounting.pld_delta, delta)
    if eps is not None and R is not None:
        raise UsageError("give either --R or --epsilon (with --delta), not both")
    if eps is not None:
        if delta is None:
            raise UsageError("--delta is required with --epsilon (a number in (0, 1))")
        return flag("--epsilon", Budget.from_epsilon, epsilon=eps, delta=delta, accountant=acc, sampling_rate=p)
    if R is not None:
        if delta is None and default_delta is not None:
            delta = default_delta
        return flag("--R", Budget.from_R, R=R, delta=delta, accountant=acc, sampling_rate=p)
    raise UsageError("a budget is required: --R R, or --epsilon E with --delta D")


def parse_float(text, name: str) -> float | None:
    """A command-line number (None for None): ``inf``, ``nan`` and overflowing literals are
    refused (a float that does not fit is not silently infinity)."""
    if text is None:
        return None
    try:
        v = float(str(text).strip())
    except ValueError:
        raise UsageError(f"{name} must be a number, got {text!r}") from None
    if not math.isfinite(v):
        raise UsageError(f"{name} must be a finite number, got {text!r}")
    return v


def parse_int(text, name: str, *, minimum: int = 1, maximum: int | None = None) -> int | None:
    """A command-line integer in [minimum, maximum] (one line naming the flag otherwise)."""
    if text is None:
        return None
    allowed = f"an integer >= {minimum}" if maximum is None else f"an integer in [{minimum}, {maximum:,}]"
    try:
        v = int(str(text).strip())
    except ValueError:
        try:
            f = float(str(text).strip())
        except ValueError:
            raise UsageError(f"{name} must be {allowed}, got {text!r}") from None
        if not (math.isfinite(f) and f.is_integer()):
            raise UsageError(f"{name} must be {allowed}, got {text!r}") from None
        v = int(f)
    if v < minimum or (maximum is not None and v > maximum):
        raise UsageError(f"{name} must be {allowed}, got {text!r}")
    return v


# ---------------------------------------------------------------------------- schedules


def _cli_params():
    """(name -> (Param, [kinds using it])) over the table, CLI parameters only."""
    out: dict[str, tuple[Any, list[str]]] = {}
    for k in schedules.KIND_TABLE.values():
        for prm in k.params:
            if not prm.cli or prm.name == "q":
                continue
            if prm.name in out:
                out[prm.name][1].append(k.name)
            else:
                out[prm.name] = (prm, [k.name])
    return out


def add_schedule_arguments(p: argparse.ArgumentParser) -> None:
    """One flag per parameter of the table of kinds (``--kappa``, ``--beta``, ``--rate``,
    ``--variant``, ``--period``, ...) and ``--influence`` for ``optimal``'s q."""
    for name, (prm, kinds) in _cli_params().items():
        extra = f"; one of {', '.join(prm.choices)}" if prm.choices else ""
        dflt = "" if prm.required else f"; default {prm.shown_default}"
        p.add_argument(prm.flag, dest=f"k_{name}", metavar=name.upper() if prm.type != "str" else "NAME",
                       help=f"{prm.meaning} ({prm.type}, {prm.allowed}{extra}{dflt}; kinds: {', '.join(kinds)})")
    p.add_argument("--influence", type=Path, metavar="FILE",
                   help="optimal: the influences q_t > 0, one per line or a CSV column named q (T = their number)")


def schedule_params(args: argparse.Namespace, kind_name: str, *, kind_flag: str) -> dict:
    """The keyword parameters of ``kind_name`` from the flags (typed as the table says);
    a flag of another kind is refused, naming the kind's own flags."""
    if kind_name not in schedules.KINDS:
        raise UsageError(f"{kind_flag} must be one of {', '.join(schedules.KINDS)}, got {kind_name!r}")
    k = schedules.KIND_TABLE[kind_name]
    own = {prm.name: prm for prm in k.params if prm.cli}
    flags = ", ".join(prm.flag if prm.name != "q" else "--influence" for prm in own.values()) or "none"
    for name in _cli_params():
        if getattr(args, f"k_{name}", None) is not None and name not in own:
            raise UsageError(f"--{name.replace('_', '-')} does not apply to {kind_flag} {kind_name} (its flags: {flags})")
    if getattr(args, "influence", None) is not None and "q" not in own:
        raise UsageError(f"--influence applies to {kind_flag} optimal only, not {kind_name}")
    out: dict[str, Any] = {}
    for name, prm in own.items():
        if name == "q":
            if args.influence is None:
                raise UsageError(f"--influence FILE is required for {kind_flag} optimal (the influences q_t > 0)")
            out["q"] = read_influence(args.influence)
            continue
        text = getattr(args, f"k_{name}", None)
        if text is None:
            if prm.required:
                raise UsageError(f"{prm.flag} is required for {kind_flag} {kind_name} ({prm.type}, {prm.allowed})")
            continue
        if prm.type == "int":  # a count of steps: at most MAX_STEPS (10^20 overflowed a C long)
            out[name] = parse_int(text, prm.flag, maximum=validate.MAX_STEPS)
        elif prm.type == "str":
            if prm.choices and text not in prm.choices:
                raise UsageError(f"{prm.flag} must be one of {', '.join(prm.choices)}, got {text!r}")
            out[name] = text
        else:
            out[name] = parse_float(text, prm.flag)
    return out


def schedule_from_args(args: argparse.Namespace, budget: Budget, *, kind_flag: str, T: int | None) -> tuple:
    """(sigma, params) of ``args``' kind (the value of ``kind_flag``) planned for ``budget``
    by :func:`dpcompanion.theory.budget.make_schedule`; errors name the flag."""
    kind = getattr(args, kind_flag.lstrip("-").replace("-", "_"))
    params = schedule_params(args, kind, kind_flag=kind_flag)
    if not schedules.KIND_TABLE[kind].takes_T:
        n = len(params["q"])
        if T is not None and T != n:
            raise UsageError(f"--T {T} does not match the {n} values in --influence {args.influence}")
    elif T is None:
        raise UsageError(f"--T is required for {kind_flag} {kind} (an integer >= 1)")
    try:
        with np.errstate(over="ignore", divide="ignore", invalid="ignore"):  # the kinds check finiteness themselves
            sigma = budgets.make_schedule(budget, kind, T=T, **params)
    except ValueError as exc:
        msg = " ".join(str(exc).split())
        first = msg.split(" ", 1)[0]
        names = {prm.name for prm in schedules.KIND_TABLE[kind].params} | {"T", "R"}
        where = f"--{first.replace('_', '-')}" if first in names else f"{kind_flag} {kind}"
        raise UsageError(f"{where}: {msg}") from None
    except (OverflowError, ZeroDivisionError) as exc:  # e.g. --kappa 1e308: 1 - 1/kappa rounds to 1
        given = [f"{prm.flag} {getattr(args, f'k_{prm.name}')}" for prm in schedules.KIND_TABLE[kind].params
                 if prm.cli and prm.name != "q" and getattr(args, f"k_{prm.name}", None) is not None]
        where = ", ".join(given) if given else f"{kind_flag} {kind}"
        raise UsageError(f"{where}: the {kind} schedule cannot be computed in float64 at this size ({exc}); "
                         "use a parameter of smaller magnitude") from None
    return sigma, params


#: Largest ``--influence`` file read: 64 bytes for each of the at most ``MAX_STEPS`` values
#: (a number per line with room for a comment); a larger file is refused unread.
MAX_INFLUENCE_BYTES: int = 64 * validate.MAX_STEPS


def read_capped(path, name: str, *, max_bytes: int) -> str:
    """The text of the regular file ``path`` of at most ``max_bytes`` bytes (a device, FIFO or
    folder, e.g. ``/dev/zero``, may never end and is refused; so is a file that grows past the cap)."""
    where = f"{name} {path}"
    checked_path(name, path)
    try:
        st = os.stat(path)
    except OSError as exc:
        raise UsageError(f"{where}: cannot read it ({exc.strerror or exc.__class__.__name__}); give a readable text file") from None
    if not stat.S_ISREG(st.st_mode):
        raise UsageError(f"{where}: not a regular file (a device, FIFO or folder is not read: it may never end); "
                         "give a text file")
    too_big = f"{where}: larger than {max_bytes:,} bytes, the most this option reads; give a smaller file"
    if st.st_size > max_bytes:
        raise UsageError(too_big)
    try:
        with open(path, "rb") as fh:
            data = fh.read(max_bytes + 1)
        if len(data) > max_bytes:
            raise UsageError(too_big)
        return data.decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"{where}: cannot read it ({exc.__class__.__name__}); give a readable text file") from None


def read_influence(path: Path) -> list[float]:
    """q_t from a file: one number per line, or a CSV whose column ``q`` (or ``influence``,
    or its only column) holds them. Blank lines and ``#`` comments are skipped."""
    text = read_capped(path, "--influence", max_bytes=MAX_INFLUENCE_BYTES)
    reader = (r for r in csv.reader(io.StringIO(text))
              if r and not r[0].lstrip().startswith("#") and any(c.strip() for c in r))
    first = next(reader, None)
    if first is None:
        raise UsageError(f"--influence {path}: no values found; give one q_t > 0 per line or a CSV column named q")
    col = 0
    header = [c.strip().lower() for c in first]
    try:
        float(header[0])
        has_header = False
    except ValueError:
        has_header = True
    if has_header:
        names = [h for h in ("q", "influence") if h in header]
        if names:
            col = header.index(names[0])
        elif len(header) != 1:
            raise UsageError(f"--influence {path}: CSV has columns {', '.join(header)}; name the influence column q")
        rows = reader
    else:
        if len(first) != 1:
            raise UsageError(f"--influence {path}: {len(first)} columns and no header; add a header naming the column q")
        rows = itertools.chain([first], reader)
    values = []
    for i, r in enumerate(rows, start=2 if has_header else 1):
        if len(values) == validate.MAX_STEPS:  # the limit --T has (one float64 per step in memory), one constant
            raise UsageError(f"--influence {path}: more than {validate.MAX_STEPS:,} values; T (one step per value) must be at "
                             f"most {validate.MAX_STEPS:,} (one float64 per step in memory), as for --T")
        try:
            v = float(r[col])
        except (ValueError, IndexError):
            raise UsageError(f"--influence {path}: row {i} has no number in the q column, got {r!r}") from None
        if not (math.isfinite(v) and v > 0):
            raise UsageError(f"--influence {path}: q_t must be finite and > 0, got {v:g} at row {i}")
        values.append(v)
    if not values:
        raise UsageError(f"--influence {path}: no values found; give one q_t > 0 per line")
    return values


def kinds_epilog(examples: list[str]) -> str:
    """``--help`` epilog: the kinds with their parameters (from the table) and examples."""
    ex = "\n".join(f"  {e}" for e in examples)
    return f"schedule kinds (parameters in [brackets] are optional):\n{schedules.kinds_help()}\n\nexamples:\n{ex}"


# ---------------------------------------------------------------------------- outputs


def output_path(path, name: str, *, suffix: str | None = None) -> Path:
    """Check an output file path before any work: not a directory, the right ``suffix``, its
    folder writable, or missing as a single leaf whose parent is (nothing is created here). An
    existing device or FIFO, or a symlink to one, is written through
    (:mod:`dpcompanion.core.outputs`): it must be writable itself, not its folder."""
    if str(path).strip() == "":
        raise UsageError(f"{name} must be a file path, got an empty string")
    out = checked_path(name, path)
    real = Path(os.path.realpath(out)) if os.path.islink(out) else out
    if real.exists() and real.is_dir():
        raise UsageError(f"{name} must be a file path, got the directory {str(out)!r}")
    if suffix is not None and out.suffix != suffix:
        raise UsageError(f"{name} must end in {suffix}, got {str(out)!r}")
    if real.exists() and not real.is_file():  # a device, a FIFO: opened and written, its folder untouched
        if not os.access(real, os.W_OK):
            raise UsageError(f"{name} {str(out)!r}: it exists and is not writable")
        return out
    folder = real.parent if str(real.parent) else Path(".")
    if folder.exists():
        if not folder.is_dir():
            raise UsageError(f"{name} {str(out)!r}: {str(folder)!r} is not a folder")
        if not validate.can_create_file_in(folder):
            raise UsageError(f"{name} {str(out)!r}: folder {str(folder)!r} is not writable")
    else:
        parent = folder.parent if str(folder.parent) else Path(".")
        if not parent.is_dir():
            raise UsageError(f"{name} {str(out)!r}: folder {str(folder)!r} does not exist and neither does its parent; "
                             "give a path in an existing folder (at most one missing folder is created)")
        if not validate.can_create_file_in(parent):
            raise UsageError(f"{name} {str(out)!r}: cannot create {str(folder)!r} ({str(parent)!r} is not writable)")
    if real.exists() and not os.access(real, os.W_OK):
        raise UsageError(f"{name} {str(out)!r}: the file exists and is not writable")
    return out


def results_folder(value, name: str = "--results-dir", *, write: bool = True) -> Path:
    """The results folder ``value``, checked before any work: a folder that can be listed, and
    with ``write`` one a file can be created in, or, missing, one that can be created. A
    symlink loop, a dangling link, a file or an unreadable folder (or a path through one) is
    refused. Without ``write`` a missing folder is accepted (it holds no results)."""
    if str(value).strip() == "":
        raise UsageError(f"{name} must be a folder path, got an empty string")
    root = checked_path(name, value)
    where = f"{name} {str(value)!r}"

    def refuse(path: Path, exc: OSError):
        at = "" if path == root else f" ({str(path)!r})"
        if exc.errno == errno.ELOOP:
            why = "is a symlink loop, not a folder"
        elif exc.errno == errno.ENOTDIR:
            why = "goes through a file, not a folder"
        else:
            why = f"cannot be used ({exc.strerror or exc.__class__.__name__})"
        raise UsageError(f"{where}{at} {why}; give a folder{' that can be written' if write else ''}") from None

    try:
        st = os.stat(root)
    except FileNotFoundError as exc:
        if os.path.lexists(root):
            raise UsageError(f"{where} is a symlink to {os.readlink(root)!r}, which does not exist; "
                             "give a folder") from None
        if not write:
            return root
        probe = root.parent
        while True:  # the nearest existing parent: a folder that can be written
            try:
                pst = os.stat(probe)
                break
            except FileNotFoundError as exc:
                if os.path.lexists(probe):
                    raise UsageError(f"{where}: {str(probe)!r} is a symlink to {os.readlink(probe)!r}, which "
                                     "does not exist; give a folder that can be written") from None
                if probe.parent == probe:
                    refuse(probe, exc)
                probe = probe.parent
            except OSError as exc:
                refuse(probe, exc)
        if not stat.S_ISDIR(pst.st_mode):
            raise UsageError(f"{where}: {str(probe)!r} is not a folder")
        if not validate.can_create_file_in(probe):
            raise UsageError(f"{where} cannot be written (give a writable folder, or a new one inside a "
                             f"writable folder; {str(probe)!r} is not writable)")
        return root
    except OSError as exc:
        refuse(root, exc)
    if not stat.S_ISDIR(st.st_mode):
        raise UsageError(f"{where} is not a folder")
    try:
        with os.scandir(root) as entries:
            next(entries, None)
    except OSError as exc:
        raise UsageError(f"{where} cannot be read ({exc.strerror or exc.__class__.__name__}); "
                         "give a folder that can be listed") from None
    if not os.access(root, os.R_OK | os.X_OK):
        raise UsageError(f"{where} cannot be read (permission denied); give a folder that can be listed")
    if write and not validate.can_create_file_in(root):
        raise UsageError(f"{where} cannot be written (give a writable folder, or a new one inside a writable folder)")
    return root


def checked_path(name: str, path) -> Path:
    """``path`` within the system's length limits (:func:`dpcompanion.core.validate.path_lengths`)."""
    try:
        return validate.path_lengths(name, path)
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def check_memory(name: str, value, nbytes: float) -> None:
    """Refuse a size whose arrays would need more than half of the available memory."""
    avail = available_memory()
    if avail is not None and nbytes > 0.5 * avail:
        raise UsageError(f"{name} {value} would need about {nbytes / 2**30:.3g} GiB, more than half of the "
                         f"{avail / 2**30:.3g} GiB of memory available; use a smaller {name}")


def available_memory() -> float | None:
    """Bytes of memory available (Linux ``MemAvailable``), or None if unknown."""
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return float(line.split()[1]) * 1024
    except OSError:
        pass
    return None

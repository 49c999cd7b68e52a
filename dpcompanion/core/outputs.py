"""The one writer of every output file a command names; it respects what is at the path:

* a regular file, or a path that does not exist yet, is replaced atomically (a temporary file
  in the same folder renamed over it), with the mode ``open(path, "w")`` would give;
* an existing non-regular file (a device such as ``/dev/null``, a FIFO) is written through,
  never replaced, as a shell's ``>`` does (renaming over ``/dev/null`` as root replaced it);
* a symbolic link is followed, and stays a link. A directory is refused.

Errors are one-line ``ValueError`` naming the option. :func:`json_text` makes every JSON a
command prints: strict JSON, a float that is not finite written as ``"Infinity"``,
``"-Infinity"`` or ``"NaN"``.
"""

from __future__ import annotations

import json
import math
import os
import stat
import tempfile
from pathlib import Path
from typing import Callable, TextIO, Union

__all__ = ["write_text", "default_file_mode", "json_text", "NONFINITE"]

#: how :func:`json_text` writes a float that is not finite (strict JSON has no such number)
NONFINITE: dict[str, str] = {"inf": "Infinity", "-inf": "-Infinity", "nan": "NaN"}


def default_file_mode() -> int:
    """The mode a new file gets from ``open(path, "w")``: ``0o666`` less the process's umask.

    >>> default_file_mode() & 0o600
    384
    """
    mask = os.umask(0o022)
    os.umask(mask)
    return 0o666 & ~mask


def write_text(path, text: Union[str, Callable[[TextIO], None]], *, name: str = "output",
               newline: str | None = None) -> Path:
    """Write ``text`` (a string, or a function that writes to the open file) to ``path`` by the
    rules of this module; returns the path written (a symlink's target). ``name`` is the option
    reported in errors.

    >>> import tempfile, os
    >>> d = tempfile.mkdtemp()
    >>> p = write_text(os.path.join(d, "a.csv"), "t,sigma\\n", name="--csv")
    >>> open(p).read()
    't,sigma\\n'
    >>> write_text("/dev/null", "x", name="--csv")   # written through: /dev/null stays a device
    PosixPath('/dev/null')
    """
    given = Path(path)
    target = Path(os.path.realpath(given)) if os.path.islink(given) else given
    try:
        st = os.stat(target)
    except FileNotFoundError:
        st = None
    except OSError as exc:
        raise ValueError(f"{name} {str(given)!r}: cannot write it ({exc.strerror or exc})") from None
    try:
        if st is not None and stat.S_ISDIR(st.st_mode):
            raise ValueError(f"{name} must be a file path, got the directory {str(given)!r}")
        if st is not None and not stat.S_ISREG(st.st_mode):
            # a device, a FIFO: written through, never replaced
            with open(target, "w", newline=newline) as fh:
                _put(fh, text)
            return target
        folder = target.parent if str(target.parent) else Path(".")
        folder.mkdir(exist_ok=True)  # at most one missing leaf folder (the options' checks allow no more)
        mode = stat.S_IMODE(st.st_mode) if st is not None else default_file_mode()
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=folder)
        try:
            with os.fdopen(fd, "w", newline=newline) as fh:
                _put(fh, text)
            os.chmod(tmp, mode)
            os.replace(tmp, target)
        except BaseException:
            if os.path.lexists(tmp):
                os.unlink(tmp)
            raise
    except OSError as exc:
        raise ValueError(f"{name} {str(given)!r}: cannot write it ({exc.strerror or exc})") from None
    return target


def _put(fh: TextIO, text) -> None:
    if isinstance(text, str):
        fh.write(text)
    else:
        text(fh)


def json_text(obj, *, default: Callable | None = None, **kw) -> str:
    """``json.dumps(obj, **kw)`` as strict JSON: a float that is not finite (numpy's included,
    also as a key) becomes its string of :data:`NONFINITE`. ``default`` converts what ``json``
    cannot, as ``json.dumps``'s does; its result is mapped by the same rule.

    >>> json_text({"a": float("-inf"), "b": [1.5, float("nan")], float("inf"): 2})
    '{"a": "-Infinity", "b": [1.5, "NaN"], "Infinity": 2}'
    """
    return json.dumps(_finite(obj, default), allow_nan=False, **kw)


def _float(x: float):
    return x if math.isfinite(x) else NONFINITE[repr(float(x))]


def _finite(obj, default):
    if isinstance(obj, (str, bool, int)) or obj is None:
        return obj
    if isinstance(obj, float):
        return _float(obj)
    if isinstance(obj, dict):
        return {(_float(k) if isinstance(k, float) else k): _finite(v, default) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_finite(v, default) for v in obj]
    if default is not None:
        return _finite(default(obj), default)
    return obj  # json raises its TypeError, naming the type

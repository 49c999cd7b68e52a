"""A stored result as files: where it lives, its seal, saves that never lose the previous result,
reads that check everything (a damaged result raises :class:`Damaged`) and its files and its code
against git. Its identity (digest, config hash, code hash) is :mod:`.identity`'s."""

from __future__ import annotations

import contextlib
import errno
import functools
import hashlib
import io
import json
import math
import os
import shutil
import socket
import stat
import subprocess
import time
import zipfile
import zlib
from pathlib import Path
from typing import Any, Iterator

import numpy as np

try:
    import fcntl
except ImportError:  # not POSIX: saves of one result are then not serialised
    fcntl = None  # type: ignore[assignment]

from dpcompanion.core.provenance import REPO
from dpcompanion.core.validate import can_create_file_in
from dpcompanion.experiments import base
from dpcompanion.experiments.store.identity import (PKG, source_here, code_files, digest, module_paths,
                                                 names_of, roots_of, walk_code)


def uncommitted_code(exp: base.Experiment) -> list[str]:
    """The modules of the experiment's compute code (:func:`code_files`) whose code here is not
    what the checkout's last commit holds: a tracked file edited (beyond its docstrings and
    comments) or a new file. ``[]`` when none, outside git, or when git cannot tell. A full or
    paper result is committed beside its code, so one made or revalidated with such code is stale
    until that code is committed: it is never shown as fresh from code no commit holds."""
    found = repo_of(PKG)
    prefix = _rel(PKG.parent, found[0]) if found else None
    if prefix is None:
        return []
    prefix = "" if prefix == "." else prefix + "/"
    changed = _changed_paths(found[0], prefix + PKG.name)
    here = code_files(exp)
    if not changed or not any(prefix + p in changed for m in here for p in module_paths(m) or ()):
        return []

    def at_head(name):
        paths = module_paths(name)
        if paths is None or not any(prefix + p in changed for p in paths):
            return source_here(name)
        for path, is_pkg in zip(paths, (False, True)):
            data = _committed(found[0], prefix + path)
            if data is not None:
                return data, is_pkg
        return None
    head = walk_code(roots_of(exp), at_head, names_of(exp))
    return sorted(m for m in set(here) | set(head) if here.get(m) != head.get(m))


def _changed_paths(top: Path, folder: str) -> set[str]:
    """The files under ``folder`` (relative to the work tree ``top``) that differ from the last
    commit or are new: git status, untracked files included."""
    out = git(top, "status", "--porcelain=v1", "--untracked-files=all", "--", f"{folder}/")
    return {line[3:].split(" -> ")[-1] for line in (out or "").splitlines() if len(line) > 3}


def _committed(top: Path, path: str) -> bytes | None:
    """The bytes of ``path`` at the last commit (HEAD), None where it holds no such file."""
    out = git(top, "show", f"HEAD:{path}")
    return None if out is None else out.encode()


#: arrays with more elements than this go to ``arrays.npz``; smaller ones stay in the JSON
INLINE_MAX = 64


# --- where results live --------------------------------------------------------------

def results_root() -> Path:
    """``results/`` of the repository, or ``$DPCOMPANION_RESULTS`` when set (tests, clusters)."""
    env = os.environ.get("DPCOMPANION_RESULTS")
    return Path(env) if env else REPO / "results"


def result_dir(experiment_id: str, mode: str, root: Path | None = None) -> Path:
    return (root or results_root()) / experiment_id / mode


def check_writable(path: Path) -> None:
    """ValueError unless ``path`` is (or can be created as) a writable directory; leaves nothing
    behind (a probe file is created and removed: ``os.access`` passes for root, e.g. in /proc)."""
    p = Path(path)
    for _ in range(SWAP_ATTEMPTS):
        probe = p
        while not probe.exists():
            if probe.parent == probe:
                break
            probe = probe.parent
        if probe.is_dir() and can_create_file_in(probe):
            return
        if probe.exists():
            break
        # the folder probed was swapped away by a concurrent save of that result: look again
    why = "is not a directory" if probe.exists() and not probe.is_dir() else "is not writable"
    raise ValueError(f"results folder {p} cannot be written ({probe} {why}); "
                     "set DPCOMPANION_RESULTS to a writable directory")


# --- payload files -------------------------------------------------------------------

def encode_array(a: np.ndarray, arrays: dict[str, np.ndarray]) -> dict:
    """An array as JSON: inline up to :data:`INLINE_MAX` elements, else a reference to its entry
    of ``arrays`` (written to the ``.npz``); the same for results and for units."""
    if a.size > INLINE_MAX:
        key = f"a{len(arrays)}"
        arrays[key] = a
        return {"__npz__": key}
    return {"__array__": a.tolist(), "dtype": a.dtype.str, "shape": list(a.shape)}


def decode_array(obj: dict, arrays) -> np.ndarray | None:
    """The array an :func:`encode_array` entry stands for; None for any other dict."""
    if set(obj) == {"__npz__"}:
        return np.asarray(arrays[obj["__npz__"]])
    if "__array__" in obj:
        return np.asarray(obj["__array__"], dtype=np.dtype(obj["dtype"])).reshape(obj["shape"])
    return None


def _split_arrays(obj: Any, arrays: dict[str, np.ndarray]) -> Any:
    if isinstance(obj, np.ndarray):
        return encode_array(obj, arrays)
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, dict):
        return {k: _split_arrays(v, arrays) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_split_arrays(v, arrays) for v in obj]
    return obj


def _join_arrays(obj: Any, arrays) -> Any:
    if isinstance(obj, dict):
        a = decode_array(obj, arrays)
        return a if a is not None else {k: _join_arrays(v, arrays) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_join_arrays(v, arrays) for v in obj]
    return obj


def npz_keys(obj: Any) -> list[str]:
    """The ``arrays.npz`` entries a payload.json refers to."""
    if isinstance(obj, dict):
        if set(obj) == {"__npz__"}:
            return [str(obj["__npz__"])]
        return [k for v in obj.values() for k in npz_keys(v)]
    if isinstance(obj, list):
        return [k for v in obj for k in npz_keys(v)]
    return []


def sorted_keys(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {k: sorted_keys(obj[k]) for k in sorted(obj)}
    if isinstance(obj, (list, tuple)):
        return [sorted_keys(v) for v in obj]
    return obj


def _write_json(path: Path, data: Any) -> None:
    path.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")


# --- the provenance seal -------------------------------------------------------------

#: the provenance field holding the seal: ``{field: sha256[:16] of its JSON value}`` for every
#: other field (see the module docstring)
SEAL = "provenance_seal"


def _seal_of(provenance: dict) -> dict[str, str]:
    data = json.loads(json.dumps(provenance))  # exactly as stored (tuples as lists, keys as strings)
    return {k: hashlib.sha256(json.dumps(v, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
                              .encode()).hexdigest()[:16]
            for k, v in sorted(data.items()) if k != SEAL}


def sealed(provenance: dict) -> dict:
    """``provenance`` with its seal (:data:`SEAL`) over every other field."""
    p = {k: v for k, v in provenance.items() if k != SEAL}
    return {**p, SEAL: _seal_of(p)}


def seal_problem(provenance: dict) -> str:
    """'' when the seal matches every field, else ``provenance edited: <field>`` (or unsealed)."""
    seal = provenance.get(SEAL)
    if seal is None:
        return "provenance not sealed (the store seals every result it writes: recompute it)"
    if not isinstance(seal, dict):
        return f"provenance edited: {SEAL}"
    now = _seal_of(provenance)
    for k in sorted(set(now) | set(seal)):
        if k not in seal:
            return f"provenance edited: {k} (added)"
        if k not in now:
            return f"provenance edited: {k} (removed)"
        if now[k] != seal[k]:
            return f"provenance edited: {k}"
    return ""


# --- one writer at a time per result ---------------------------------------------------

def lock_path(target: Path) -> Path:
    """``<id>/.<mode>.lock``: the lock file of the result folder ``target`` (beside it, since
    a save replaces the folder itself)."""
    return target.parent / f".{target.name}.lock"


@contextlib.contextmanager
def result_lock(target: Path, *, blocking: bool = True) -> Iterator[bool]:
    """Hold the result's lock (``fcntl.flock`` on :func:`lock_path`, per open file, so threads
    conflict too) for the ``with`` block. Yields True once held; with ``blocking=False``, False at
    once when another holds it. The file is removed on release (no lock file beside committed
    results), so whoever acquires it checks that the path still names the file it locked. Without
    ``fcntl`` (not POSIX) it yields True and locks nothing."""
    if fcntl is None:
        yield True
        return
    path = lock_path(target)
    path.parent.mkdir(parents=True, exist_ok=True)
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o666)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | (0 if blocking else fcntl.LOCK_NB))
        except BlockingIOError:
            os.close(fd)
            yield False
            return
        except BaseException:
            os.close(fd)
            raise
        try:
            same = os.path.samestat(os.fstat(fd), os.stat(path, follow_symlinks=False))
        except FileNotFoundError:
            same = False
        if same:
            break
        os.close(fd)  # removed (or replaced) by the holder before us: lock the file there now
    try:
        yield True
    finally:
        try:
            os.unlink(path)
        except OSError:
            pass
        os.close(fd)  # releases the flock


# --- saving: never losing the previous result ----------------------------------------

#: a temporary folder (``.<mode>.tmp-*``, ``.<mode>.old-*``) or file (``.provenance.tmp-*``)
#: older than this, or whose writer (same host) is no longer running, is left over from a
#: killed save and is removed by the next save or listing
STALE_TEMP_S = 600
#: how often :func:`check_writable` looks again when a concurrent save swaps the folder away
SWAP_ATTEMPTS = 20
_HOST = "".join(c for c in socket.gethostname() if c.isalnum())[:32] or "host"


def _checkpoint(step: str) -> None:
    """Called between the steps of a save (a no-op): tests stop a save here to simulate a kill."""


def temp_name(target: Path, kind: str, suffix: str = "") -> Path:
    """``.<name>.<kind>-<host>-<pid>-<time ns>-<random><suffix>`` beside ``target``."""
    return target.parent / (f".{target.name}.{kind}-{_HOST}-{os.getpid()}-{time.time_ns()}-"
                            f"{os.urandom(4).hex()}{suffix}")


def temp_is_stale(name: str, now_ns: int) -> bool:
    """Whether the temporary file/folder ``name`` (from :func:`temp_name`) was left by a save
    that is over: its writer on this host has exited, or it is older than :data:`STALE_TEMP_S`."""
    parts = name.split("-")
    try:
        host, pid, t_ns = parts[-4], int(parts[-3]), int(parts[-2])
    except (IndexError, ValueError):
        return False  # not ours
    if now_ns - t_ns > STALE_TEMP_S * 1e9:
        return True
    if host == _HOST and pid != os.getpid() and os.name == "posix":  # (os.kill(pid, 0) kills on Windows)
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        except OSError:
            return False
    return False


def olds(target: Path) -> list[Path]:
    """The ``.<mode>.old-*`` folders beside ``target``, newest first."""
    def when(p: Path) -> int:
        try:
            return int(p.name.split("-")[-2])
        except (IndexError, ValueError):
            return 0
    try:
        found = [p for p in target.parent.glob(f".{target.name}.old-*") if p.is_dir()]
    except OSError:
        return []
    return sorted(found, key=when, reverse=True)


def cleanup(target: Path) -> None:
    """Tidy what killed saves of ``target`` left (never raises): the previous result (``.old-``)
    put back where ``target`` is missing, stale ``.tmp-``/``.old-`` folders and ``.provenance.tmp-``
    files removed. Only when the result's lock is free at once (a listing never waits on a writer)."""
    try:
        if not target.parent.is_dir() or not_a_folder(target):  # never writes through a symlink
            return
        with result_lock(target, blocking=False) as held:
            if held:
                _cleanup_unlocked(target)
    except OSError:
        pass


def _cleanup_unlocked(target: Path) -> None:
    try:
        now = time.time_ns()
        if not target.exists():
            for old in olds(target):
                if temp_is_stale(old.name, now) and (old / "provenance.json").is_file():
                    try:
                        _rename(old, target)
                    except OSError:
                        pass
                    break
        for p in target.parent.glob(f".{target.name}.*-*"):
            kind = p.name[len(target.name) + 2:].split("-")[0]
            if kind in ("tmp", "old") and temp_is_stale(p.name, now):
                shutil.rmtree(p, ignore_errors=True)
        if target.is_dir():
            for p in target.glob(".provenance.json.tmp-*"):
                if temp_is_stale(p.name.removesuffix(".json"), now):
                    p.unlink(missing_ok=True)
    except OSError:
        pass


def _rename(src: Path, dst: Path) -> None:
    os.rename(src, dst)


def save(target: Path, payload: dict, provenance: dict) -> None:
    """Write ``payload`` and ``provenance`` into ``target``, under the result's lock, so that no kill
    loses the previous result: all into ``.<mode>.tmp-…``, then two renames (``<mode>`` to
    ``.<mode>.old-…``, which readers use and :func:`cleanup` puts back if killed here; the new
    folder to ``<mode>``). Without a lock (not POSIX) a save racing another of the same result can
    fail (the previous result kept): run it again."""
    target.parent.mkdir(parents=True, exist_ok=True)
    with result_lock(target):
        _cleanup_unlocked(target)
        tmp = temp_name(target, "tmp")
        os.mkdir(tmp)  # mode 0o777 less the umask (tempfile.mkdtemp would give 0o700)
        try:
            _checkpoint("tmp made")
            arrays: dict[str, np.ndarray] = {}
            _write_json(tmp / "payload.json", _split_arrays(payload, arrays))
            _checkpoint("payload written")
            if arrays:
                np.savez_compressed(tmp / "arrays.npz", **arrays)
                _checkpoint("arrays written")
            _write_json(tmp / "provenance.json", provenance)
            _checkpoint("provenance written")
            _swap_in(tmp, target)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        record_in_journal(target)  # written by the store: not "modified since commit" until committed


def _swap_in(tmp: Path, target: Path) -> None:
    """The two renames of :func:`save`, under the result's lock (no other save moves ``target`` meanwhile)."""
    old = None
    if target.exists():
        old = temp_name(target, "old")
        _rename(target, old)
    _checkpoint("old moved away")
    try:
        _rename(tmp, target)
    except OSError:
        if old is not None and not target.exists():
            _rename(old, target)
        raise
    _checkpoint("new in place")
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)
    _checkpoint("old removed")


class Replaced(Exception):
    """The result's provenance is no longer the one a rewrite was computed from (another save
    or rewrite landed meanwhile): nothing was written (:func:`replace_provenance`)."""


def replace_provenance(target: Path, provenance: dict, *, expect: dict) -> None:
    """Replace ``target/provenance.json`` atomically, under the result's lock, only if the stored
    provenance is still ``expect`` (compare and swap), else :class:`Replaced` and nothing written:
    a revalidation that raced a save never puts the old payload's provenance beside the new one."""
    with result_lock(target):
        try:
            now = read_json(target / "provenance.json")
        except Damaged as exc:
            raise Replaced(f"{target}: the result changed while being rewritten ({exc})") from None
        if json.dumps(now, sort_keys=True) != json.dumps(expect, sort_keys=True):  # as JSON: NaN != NaN
            raise Replaced(f"{target}: another save or rewrite replaced the result meanwhile; nothing written")
        _checkpoint("provenance checked")
        # the umask's permissions (tempfile.mkstemp would give 0o600)
        write_atomic(target / "provenance.json", lambda tmp: _write_json(tmp, provenance))
        record_in_journal(target)


def write_atomic(path: Path, write) -> None:
    """``write(tmp)`` into a temporary file beside ``path``, then renamed over it (a kill leaves no half file)."""
    tmp = temp_name(path, "tmp", path.suffix)
    try:
        write(tmp)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


class Damaged(Exception):
    """A file of a stored result is missing, unreadable or inconsistent: ``<file>: <what>``."""


#: the largest ``payload.json`` / ``provenance.json`` read (bytes): the committed ones are under
#: 300 kB; a bigger file is refused by name instead of filling memory
MAX_JSON_BYTES = 64 * 2**20
#: the deepest nesting of lists and dicts read from a result's JSON (the committed ones nest
#: under 10 deep); deeper is refused by name instead of ``RecursionError``
MAX_JSON_DEPTH = 64


def read_regular(path: Path, *, limit: int = MAX_JSON_BYTES) -> bytes:
    """The bytes of ``path`` when it is a regular file of at most ``limit`` bytes, else
    :class:`Damaged` naming it. Opened with ``O_NONBLOCK`` and checked with ``fstat`` before
    reading, so that a FIFO or a device in its place is refused at once, never waited on."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0))
    except FileNotFoundError:
        raise Damaged(f"{path}: missing") from None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise Damaged(f"{path}: a symlink loop, not a file") from None
        raise Damaged(f"{path}: cannot be read ({type(exc).__name__}: {exc})") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise Damaged(f"{path}: not a regular file ({_kind_of(st.st_mode)})")
        if st.st_size > limit:
            raise Damaged(f"{path}: {st.st_size:,} bytes, more than the {limit:,} read")
        with os.fdopen(fd, "rb", closefd=False) as f:
            data = f.read(limit + 1)
        if len(data) > limit:
            raise Damaged(f"{path}: more than the {limit:,} bytes read")
        return data
    except OSError as exc:
        raise Damaged(f"{path}: cannot be read ({type(exc).__name__}: {exc})") from None
    finally:
        os.close(fd)


def _kind_of(mode: int) -> str:
    for test, name in ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "not a plain file"


def json_depth(data: Any) -> int:
    """The nesting depth of lists and dicts in ``data`` (a scalar: 0), found without recursion.

    >>> json_depth(1), json_depth([1, {"a": [2]}]), json_depth({})
    (0, 3, 1)
    """
    deepest, todo = 0, [(data, 1)]
    while todo:
        obj, d = todo.pop()
        if isinstance(obj, dict):
            obj = list(obj.values())
        elif not isinstance(obj, list):
            continue
        deepest = max(deepest, d)
        todo.extend((v, d + 1) for v in obj if isinstance(v, (list, dict)))
    return deepest


def read_json(path: Path, *, limit: int = MAX_JSON_BYTES, max_depth: int = MAX_JSON_DEPTH) -> Any:
    """The JSON value in ``path``, read through :func:`read_regular` (a regular file, at most
    ``limit`` bytes) and nested at most ``max_depth`` deep; :class:`Damaged` naming the file
    otherwise (a FIFO, a device, a huge file, a 200,000-deep array: one line, no hang, no
    ``RecursionError``)."""
    raw = read_regular(path, limit=limit)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise Damaged(f"{path}: cannot be read ({type(exc).__name__}: {exc})") from None
    try:
        data = json.loads(text)
    except RecursionError:
        raise Damaged(f"{path}: nested more than {max_depth} deep") from None
    except ValueError as exc:  # json.JSONDecodeError (also a truncated file)
        raise Damaged(f"{path}: not valid JSON ({exc})") from None
    if json_depth(data) > max_depth:
        raise Damaged(f"{path}: nested more than {max_depth} deep")
    return data


def _read_json_object(path: Path) -> dict:
    data = read_json(path)
    if not isinstance(data, dict):
        raise Damaged(f"{path}: not a JSON object")
    return data


def not_a_folder(target: Path) -> str:
    """'' when ``target`` (a result's ``<id>/<mode>`` folder) is a real folder or absent, else
    ``<path>: <what>``: a symlink (a link would let a listing read, or a save replace, what lies
    elsewhere), a file, a FIFO, or a path that cannot be looked at."""
    for p in (target.parent, target):
        try:
            st = os.lstat(p)
        except FileNotFoundError:
            return ""
        except OSError as exc:
            what = "a symlink loop" if exc.errno == errno.ELOOP else f"cannot be looked at ({exc.strerror})"
            return f"{p}: {what}, not a folder"
        if stat.S_ISLNK(st.st_mode):
            try:
                to = os.readlink(p)
            except OSError:
                to = "?"
            loop = " (a symlink loop)" if not os.path.exists(p) and os.path.lexists(p) and _loops(p) else ""
            return f"{p}: a symlink to {to}{loop}, not a folder"
        if not stat.S_ISDIR(st.st_mode):
            return f"{p}: {_kind_of(st.st_mode) if not stat.S_ISREG(st.st_mode) else 'a file'}, not a folder"
    return ""


def _loops(p: Path) -> bool:
    try:
        os.stat(p)
    except OSError as exc:
        return exc.errno == errno.ELOOP
    return False


def _check_provenance(path: Path, prov: dict) -> None:
    for key, kind in (("digest", str), ("config", dict), ("config_hash", str), ("code_hash", str)):
        if not isinstance(prov.get(key), kind):
            raise Damaged(f"{path}: field {key!r} missing or not a {kind.__name__}")
    seed = prov["config"].get("seed", 0)
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**32:
        raise Damaged(f"{path}: config seed must be an integer in [0, 2**32), got {seed!r}")


#: what reading a damaged ``arrays.npz`` can raise (zip, zlib, npy header, I/O)
NPZ_ERRORS = (OSError, EOFError, ValueError, KeyError, TypeError, zipfile.BadZipFile, zlib.error)

#: the most bytes the arrays of one ``.npz`` file may hold once read (an array's size is whatever
#: its ``.npy`` header declares: a 1 KB file can declare 10**12 float64), checked from the headers
#: before any data is decompressed; the committed files hold under 0.5 MB of arrays
MAX_ARRAY_BYTES = 64 * 2**20
#: the most arrays one ``.npz`` may hold (the committed ones hold under 30)
MAX_NPZ_MEMBERS = 4096
_NPY_HEADER_MAX = 10_000  # numpy's own limit on a header it reads safely (``max_header_size``)


def read_npz(path: Path, keys: list[str] | None = None, *, limit: int | None = None) -> dict[str, np.ndarray]:
    """The arrays ``keys`` (default: all) of the ``.npz`` file ``path``: a regular file of at most
    ``limit`` (default :data:`MAX_ARRAY_BYTES`) bytes plus what headers and deflate add, at most
    :data:`MAX_NPZ_MEMBERS` arrays, their declared sizes summed at most ``limit`` (checked from
    each header before its data), no object dtype (nothing is unpickled); else :class:`Damaged`
    naming the file. An absent key is left out of the answer."""
    limit = MAX_ARRAY_BYTES if limit is None else limit
    raw = read_regular(path, limit=limit + limit // 8 + 65536)
    try:
        zf = zipfile.ZipFile(io.BytesIO(raw))
    except NPZ_ERRORS as exc:
        raise Damaged(f"{path}: cannot be read ({type(exc).__name__}: {exc})") from None
    with zf:
        infos = zf.infolist()
        if len(infos) > MAX_NPZ_MEMBERS:
            raise Damaged(f"{path}: {len(infos):,} arrays, more than the {MAX_NPZ_MEMBERS:,} read")
        members = {i.filename.removesuffix(".npy"): i for i in infos}
        wanted = list(members) if keys is None else [k for k in dict.fromkeys(keys) if k in members]
        out: dict[str, np.ndarray] = {}
        total = 0
        for key in wanted:
            info = members[key]
            try:
                with zf.open(info) as f:
                    version = np.lib.format.read_magic(f)
                    if version == (1, 0):
                        shape, fortran, dtype = np.lib.format.read_array_header_1_0(f, max_header_size=_NPY_HEADER_MAX)
                    elif version == (2, 0):
                        shape, fortran, dtype = np.lib.format.read_array_header_2_0(f, max_header_size=_NPY_HEADER_MAX)
                    else:
                        raise Damaged(f"{path}: array {key}: .npy format version {version} is not read")
                    if dtype.hasobject:
                        raise Damaged(f"{path}: array {key}: object dtype (not read: it would unpickle)")
                    count = math.prod(int(n) for n in shape)
                    nbytes = count * dtype.itemsize
                    if count > limit or total + nbytes > limit:
                        raise Damaged(f"{path}: array {key} declares shape {tuple(shape)} {dtype} ({nbytes:,} bytes)"
                                      + (f", {total:,} already read" if total else "")
                                      + f": more than the {limit:,} bytes read (MAX_ARRAY_BYTES)")
                    total += nbytes
                    data = f.read(nbytes)
                    if len(data) < nbytes:
                        raise Damaged(f"{path}: array {key}: {len(data):,} of its {nbytes:,} bytes present (truncated)")
                    flat = np.empty(count, dtype=dtype)
                    if nbytes:
                        flat.view(np.uint8)[:] = np.frombuffer(data, dtype=np.uint8)
            except Damaged:
                raise
            except NPZ_ERRORS as exc:
                raise Damaged(f"{path}: array {key} cannot be read ({type(exc).__name__}: {exc})") from None
            out[key] = flat.reshape(shape[::-1]).T if fortran else flat.reshape(shape)
        return out


def read_files(d: Path) -> tuple[dict, dict]:
    """``(provenance, payload)`` of the result in folder ``d``, every file checked; raises
    :class:`Damaged` (with the provenance read so far in ``args[1]``)."""
    prov: dict = {}
    try:
        prov = _read_json_object(d / "provenance.json")
        _check_provenance(d / "provenance.json", prov)
        raw = _read_json_object(d / "payload.json")
        keys = npz_keys(raw)
        npz = d / "arrays.npz"
        arrays: dict[str, np.ndarray] = {}
        if keys and (npz.is_symlink() or npz.exists()) and not npz.is_file():
            raise Damaged(f"{npz}: not a regular file")
        if keys and not npz.is_file():
            raise Damaged(f"{npz}: missing ({d / 'payload.json'} refers to {keys[0]})")
        if keys:
            arrays = read_npz(npz, keys)  # headers checked against MAX_ARRAY_BYTES before any data
            absent = [k for k in keys if k not in arrays]
            if absent:
                raise Damaged(f"{npz}: array {absent[0]} missing ({d / 'payload.json'} refers to it)")
        try:
            payload = _join_arrays(raw, arrays)
            got = digest(payload)
        except (ValueError, TypeError, KeyError) as exc:
            raise Damaged(f"{d / 'payload.json'}: malformed ({type(exc).__name__}: {exc})") from None
        if got != prov["digest"]:
            with_npz = " (with arrays.npz)" if keys else ""
            raise Damaged(f"{d / 'payload.json'}: the payload{with_npz} does not match the digest recorded "
                           "in provenance.json")
        return prov, payload
    except Damaged as exc:
        raise Damaged(str(exc), prov) from None


# --- against git ----------------------------------------------------------------------
# A result folder differing from its last commit was rewritten by this store (not committed yet)
# or by hand: the store journals what it writes (in the git directory); any other difference is stale.

#: the journal's file name inside the git directory (never committed, never in the work tree)
JOURNAL = "dpcompanion-results.journal"
#: a git command taking longer than this is treated as absent (a listing never hangs on git)
GIT_TIMEOUT_S = 30
#: the files of a result folder the journal and the comparison cover
RESULT_FILES = ("payload.json", "arrays.npz", "provenance.json")


def git(cwd: Path, *args: str) -> str | None:
    try:
        out = subprocess.run(["git", "-C", str(cwd), *args], capture_output=True, timeout=GIT_TIMEOUT_S,
                             env={**os.environ, "GIT_OPTIONAL_LOCKS": "0", "LC_ALL": "C"})
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.decode("utf-8", "replace") if out.returncode == 0 else None


@functools.lru_cache(maxsize=256)
def _repo_cached(folder: str) -> tuple[str, str] | None:
    top = git(Path(folder), "rev-parse", "--show-toplevel")
    gitdir = git(Path(folder), "rev-parse", "--absolute-git-dir")
    if not top or not gitdir:
        return None
    return top.strip(), gitdir.strip()


def repo_of(path: Path) -> tuple[Path, Path] | None:
    """``(work tree, git dir)`` of the git repository holding ``path`` (its nearest existing
    folder), or None when there is none (or git is missing)."""
    p = Path(path).absolute()
    while not p.is_dir() and p.parent != p:
        p = p.parent
    found = _repo_cached(str(p.resolve()))
    return None if found is None else (Path(found[0]), Path(found[1]))


def forget() -> None:
    """Forget which folders lie in which git repository (after one is created around results already looked at)."""
    _repo_cached.cache_clear()


def file_hashes(folder: Path) -> dict[str, str]:
    """``{file: sha256}`` of the result files present in ``folder`` (regular files only)."""
    out = {}
    for name in RESULT_FILES:
        f = folder / name
        if f.is_file() and not f.is_symlink():
            out[name] = hashlib.sha256(f.read_bytes()).hexdigest()
    return out


def _rel(folder: Path, top: Path) -> str | None:
    try:
        return Path(os.path.realpath(folder)).relative_to(os.path.realpath(top)).as_posix()
    except ValueError:
        return None


def record_in_journal(folder: Path) -> None:
    """Append the folder's file hashes to the journal (after a save by the store). Never raises: an
    unwritable journal only makes the result read as modified until it is committed."""
    try:
        found = repo_of(folder)
        if found is None:
            return
        top, gitdir = found
        rel = _rel(folder, top)
        if rel is None:
            return
        line = json.dumps({"path": rel, "files": file_hashes(folder)}, sort_keys=True)
        with open(gitdir / JOURNAL, "a") as f:
            f.write(line + "\n")
    except OSError:
        pass


def _journaled(gitdir: Path, rel: str, hashes: dict[str, str]) -> bool:
    try:
        with open(gitdir / JOURNAL) as f:
            for line in f:
                try:
                    rec = json.loads(line)
                except ValueError:
                    continue
                if isinstance(rec, dict) and rec.get("path") == rel and rec.get("files") == hashes:
                    return True
    except OSError:
        pass
    return False


def state(folder: Path) -> tuple[str, str]:
    """``(kind, commit)`` of the result folder against git: ``no git``, ``committed`` (equal to the
    last commit touching it, or git-ignored), ``untracked``, ``hidden`` (:func:`hidden`),
    ``journaled`` (differs, but the store wrote exactly these files) or ``modified``; ``commit``:
    the last commit touching it (12 hex), or ''."""
    found = repo_of(folder)
    if found is None:
        return "no git", ""
    top, gitdir = found
    rel = _rel(folder, top)
    if rel is None:
        return "no git", ""
    status = git(top, "status", "--porcelain=v1", "--untracked-files=all", "--", f"{rel}/")
    if status is None:
        return "no git", ""
    last = (git(top, "log", "-1", "--format=%H", "--", f"{rel}/") or "").strip()[:12]
    if hidden(top, rel):  # git status would not show an edit of it: treated as modified
        return "hidden", last
    if not status.strip():
        return "committed", last  # clean, or ignored (a quick result)
    if not last:
        return "untracked", ""
    if _journaled(gitdir, rel, file_hashes(folder)):
        return "journaled", last
    return "modified", last


def hidden(top: Path, rel: str) -> list[str]:
    """The files under ``rel`` (in the work tree ``top``) that git is told not to compare:
    ``git ls-files -v`` tags them ``S`` (skip-worktree) or in lower case (assume-unchanged)."""
    out = git(top, "ls-files", "-v", "--", f"{rel}/")
    names = []
    for line in (out or "").splitlines():
        tag, _, name = line.partition(" ")
        if tag == "S" or (len(tag) == 1 and tag.islower()):
            names.append(name)
    return names


def modified(folder: Path) -> tuple[str, str] | None:
    """``(commit, what)`` when the result folder's files differ from the last commit touching
    them, else None; ``what`` starts with ``modified since commit`` (stale) unless the store wrote them."""
    kind, last = state(folder)
    if kind == "journaled":
        return last, f"written by this store since commit {last}, not committed yet"
    if kind == "modified":
        return last, (f"modified since commit {last} (not by this store; `python -m dpcompanion results --verify` "
                      "recomputes units of it)")
    if kind == "hidden":
        top = repo_of(folder)[0]
        names = hidden(top, _rel(folder, top) or "")
        return last, (f"modified since commit {last}, as far as this store can tell: git is told not to compare "
                      f"{', '.join(Path(n).name for n in names) or 'its files'} with the commit (skip-worktree or "
                      "assume-unchanged; `git update-index --no-skip-worktree --no-assume-unchanged <file>` lets "
                      "git compare it)")
    return None

"""Migration of stored results' recorded config hashes.

:func:`dpcompanion.experiments.store.config_hash` rounds a config's floats to
:data:`~dpcompanion.experiments.store.CONFIG_DIGITS` significant digits, so that the last bit
of a computed grid (``np.geomspace``) no longer decides freshness. Results saved before that
change record the old hash and read as "config changed". :func:`migrate_config_hashes`
rewrites the recorded ``config_hash`` of a stored result **without recomputing it** when, and
only when, its recorded config equals the current config of its mode once floats are rounded
(the same config up to the last bits); any other difference leaves it stale. Each rewrite is
logged in the provenance (``config_hash_migrated``).

``python -m dpcompanion.experiments.store.migrate [--dry-run]`` runs it over ``results/``.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import tempfile
from pathlib import Path

from dpcompanion.experiments import base, store

__all__ = ["migrate_config_hashes"]


def _write_provenance(folder: Path, provenance: dict) -> None:
    """Replace ``folder/provenance.json`` atomically (a temporary file in the folder, renamed)."""
    fd, name = tempfile.mkstemp(prefix=".provenance-", suffix=".json", dir=folder)
    try:
        with os.fdopen(fd, "w") as f:
            f.write(json.dumps(provenance, indent=1, sort_keys=True) + "\n")
        os.replace(name, folder / "provenance.json")
    except BaseException:
        Path(name).unlink(missing_ok=True)
        raise


def migrate_config_hashes(root: Path | None = None, *, dry_run: bool = False) -> list[dict]:
    """One ``{"id", "mode", "status", "detail"}`` per stored result: ``unchanged`` (its hash is
    current), ``migrated`` (same config up to rounding: hash rewritten), ``differs`` (the config
    really changed: left stale)."""
    out = []
    for exp_id, exp in base.all_experiments().items():
        for mode in base.modes_of(exp):
            res = store.load(exp_id, mode=mode, root=root)
            if res is None:
                continue
            p = res.provenance
            stored = p.get("config", {})
            current = base.config_for(base.get(exp_id), mode, seed=int(stored.get("seed", 0)))
            new = store.config_hash(current)
            row = {"id": exp_id, "mode": mode}
            if res.stale_reason.startswith(("damaged", "provenance")):
                out.append({**row, "status": "differs", "detail": f"left alone: {res.stale_reason}"})
                continue
            if p.get("config_hash") == new:
                out.append({**row, "status": "unchanged", "detail": "recorded hash is current"})
                continue
            if store.config_hash(stored) != new:
                out.append({**row, "status": "differs", "detail": "the config changed beyond float rounding; recompute"})
                continue
            event = {"date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
                     "from": p.get("config_hash"), "to": new,
                     "why": f"config_hash rounds floats to {store.CONFIG_DIGITS} significant digits"}
            if not dry_run:
                store.check_writable(res.path)
                # re-sealed: the seal was intact (checked above) and only the hash changes
                _write_provenance(res.path, store.sealed({**p, "config_hash": new, "config_hash_migrated":
                                                          list(p.get("config_hash_migrated") or []) + [event]}))
            out.append({**row, "status": "migrated", "detail": f"{str(p.get('config_hash'))[:12]} -> {new[:12]}"})
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m dpcompanion.experiments.store.migrate", description=__doc__.splitlines()[0])
    ap.add_argument("--dry-run", action="store_true", help="report, write nothing")
    args = ap.parse_args(argv)
    print(json.dumps(migrate_config_hashes(dry_run=args.dry_run), indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

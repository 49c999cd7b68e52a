"""Results store: experiments computed once, saved with their provenance, loaded by the book.

An experiment (:mod:`dpcompanion.experiments.base`) is ``compute(config) -> payload``, split into
independent units. Its result lives in ``results/<id>/<mode>/``: ``payload.json`` (small arrays
inline), ``arrays.npz`` (arrays of more than :data:`INLINE_MAX` elements) and ``provenance.json``
(commit and dirty flag, config and its hash, code hash and the hash of each source file it covers,
device, CPU, versions, times, units and runs, executor, ``digest``; for a full or paper result
also its quick-mode digest and numbers, and the revalidation history; the seal). Quick results
are a local cache (git-ignored); full and paper results are committed. Modes: ``quick``,
``full`` and, where an experiment defines it, ``paper``; a page shows the first fresh one of
:data:`SHOWN_FIRST` (:func:`best_fresh`).

A result is **fresh** when its files read back intact (:func:`load` checks every file, sizes
capped; a damaged result is listed and named, never shown), its provenance seal matches (a
sha256 per field: an edited field makes it stale), it is consistent (:func:`inconsistency`), its
files equal their last commit unless the store wrote them (:mod:`.files`, the journal in the git
directory), and its config hash and code hash equal the current ones; a full or paper result also needs
its compute code committed (:func:`.files.uncommitted_code`: code no commit holds never makes a
fresh result). The **digest** covers the
payload only (canonical encoding, times left out), so the same config and seed give the same
digest on any executor. The **code hash** covers an experiment's ``units``, ``run_unit``,
``combine``, ``CONFIGS`` and what they use, transitively, every other ``dpcompanion`` module as
its syntax tree without docstrings; the store, the verdict rules and the scale tables are left
out (:data:`CODE_HASH_EXCLUDE`), the run policy (:data:`RUN_POLICY`) is in.

Saves are atomic and never lose the previous result; one writer at a time per result (a lock
file beside it), and a provenance rewrite is a compare and swap. A sweep stores each unit as it
finishes, so a killed run resumes; stored units are spot-checked by
recomputation before reuse. **Revalidation** (:func:`revalidate`): when the code hash changes,
only the quick mode is recomputed; an equal quick digest on the same kind of CPU, or quick
numbers within the experiment's tolerance (:mod:`.numeric`), keeps the result fresh for the new
code. Seals, digests and the journal can be recomputed by anyone, so a forged number committed
by someone with write access reads as fresh: only ``results --verify`` (:mod:`.verify`, units
recomputed at random) finds it.

Modules: :mod:`.identity` (digest, config hash, code hash), :mod:`.files` (layout, seal, saves, checked
reads, the files and the code against git), :mod:`.result_store`
(compute on an executor, resumable sweeps, load, freshness, revalidation, listing),
:mod:`.numeric`, :mod:`.verify`. Callers use the names exported here
(``from dpcompanion.experiments import store``; ``store.load_or_compute(...)``).
"""

from __future__ import annotations

from dpcompanion.experiments.store.files import INLINE_MAX, SEAL, check_writable, result_dir, results_root, sealed
from dpcompanion.experiments.store.identity import (
    CODE_HASH_EXCLUDE, CONFIG_DIGITS, RUN_POLICY, TIME_KEYS, code_files, code_hash, config_hash, digest)
from dpcompanion.experiments.store.result_store import (
    EXECUTORS, SCHEDULER_TIMEOUT_S, SHOWN_FIRST, DaskExecutor, LocalExecutor, StoredResult, best_fresh,
    check_executor_options, check_scheduler_address, compute, fresh_full, fresh_paper, inconsistency, list_results,
    load, load_or_compute, make_executor, max_workers, result_to_show, revalidate, committed_units, list_partial,
    save_unit, sweep_progress, unit_key, units_dir, estimate_phrase)
from dpcompanion.experiments.store.verify import verify

__all__ = [
    "StoredResult", "load_or_compute", "units_dir", "unit_key", "sweep_progress", "list_partial", "save_unit", "load",
    "compute", "revalidate", "list_results", "sealed", "digest", "config_hash", "code_files",
    "code_hash", "results_root", "result_dir", "check_writable", "LocalExecutor", "DaskExecutor", "make_executor",
    "check_executor_options", "EXECUTORS", "INLINE_MAX", "check_scheduler_address", "max_workers", "fresh_full",
    "result_to_show", "fresh_paper", "committed_units", "SEAL", "CONFIG_DIGITS",
    "CODE_HASH_EXCLUDE", "TIME_KEYS", "RUN_POLICY", "SCHEDULER_TIMEOUT_S", "verify", "inconsistency", "best_fresh",
    "SHOWN_FIRST", "estimate_phrase",
]

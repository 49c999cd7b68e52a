"""Results store: experiments computed once, saved with their provenance, loaded by the book.

An experiment (:mod:`dpcompanion.experiments.base`) is ``compute(config) -> payload``, split
into independent units. Its result lives in ``results/<id>/<mode>/``:

* ``payload.json``: the numeric payload (scalars, strings, small arrays inline);
* ``arrays.npz``: arrays of more than :data:`INLINE_MAX` elements (referenced from the JSON);
* ``provenance.json``: commit and dirty flag, config and its hash, code hash (and the hash
  of each source file it covers), device, library versions, created, wall time, units and
  runs, executor, ``digest``; for a full result also the quick-mode digest of the same code
  (the behavioural fingerprint, see :func:`revalidate`), the quick-mode numbers themselves
  (``quick_numbers``, :mod:`.numeric`) and the revalidation history; and
  the **seal** (``provenance_seal``, below).

Writes are atomic and never lose the previous result (:func:`.files.save`): everything goes to a
temporary folder ``.<mode>.tmp-…`` beside ``<mode>/`` (made with the umask's permissions),
then two renames swap it in (``<mode>`` to ``.<mode>.old-…``, the new folder to ``<mode>``).
A failing computation or write leaves nothing behind; a save killed between the two renames
leaves the previous result in ``.<mode>.old-…``, which readers use while ``<mode>`` is
missing and the next save or listing puts back; temporary folders of killed saves (writer
gone, or older than :data:`.files.STALE_TEMP_S`) are removed by the next save or listing.
**One writer at a time**: saves, provenance rewrites (revalidation, ``results --seal``) and the
tidying of killed saves of one result hold its lock (:func:`.files.result_lock`: ``fcntl.flock``
on ``<id>/.<mode>.lock``, removed by its last holder), so two saves take turns, the last one
wins; and a rewrite of the provenance is a compare and swap (:func:`.files.replace_provenance`):
under the lock, it writes only if the stored provenance is still the one it was computed from,
so a revalidation that a save overtook writes nothing (status ``replaced``) and never puts the
old payload's provenance beside the new payload. (Without ``fcntl``, off POSIX, the compare and
swap is not atomic, and two saves racing at the swap both succeed, the last one wins.) Results stay plain folders of plain
files (git stores them). Quick results are a local cache (``results/*/quick/`` is
git-ignored, so a fresh clone recomputes them); full results are committed.

**Resumable sweeps** (:mod:`.unit_sweeps`, driven by :func:`.result_store.compute`): every unit is stored as it finishes in
``results/<id>/<mode>.units/<key>.json`` (and ``<key>.npz`` for arrays of more than
:data:`INLINE_MAX` elements), each file written to a temporary name and renamed into place
(the ``.npz`` first; the ``.json`` marks the unit done). The key (:func:`unit_key`) hashes
everything that determines the unit's numbers besides the code: experiment id, mode, the
unit's own dict (canonical, as :func:`digest`), the seed and the device; the experiment's
code hash is recorded in the file, and a unit stored by older code is recomputed (the
``progress`` line says how many). A unit file keeps its result's types exactly (numpy
scalars with their dtype, tuples, arrays), and carries the result's digest: a unit file
that does not read back or does not match is recomputed. A run killed or failing part-way
therefore leaves its finished units, and the next run (local or Dask: the calling process
stores each unit as the executor hands it back, ``map(..., on_done=)``) computes only the
others; the payload is combined from all units in their order, exactly as in a straight run,
so its digest is the same. Before reusing stored units, a sweep recomputes those whose recorded
times fit in :data:`.unit_sweeps.REUSE_CHECK_S` seconds (in a random order: all of them when
they are cheap) and compares them with the stored numbers; one that differs is not reused (its
file is rewritten with this code's numbers, a progress line names it). ``units_total``,
``units_computed``, ``units_reused`` (and ``units_checked``, ``units_rejected`` where units were
stored) are recorded in the provenance and in :meth:`StoredResult.record`. Once the result is saved its units
folder is removed (the result holds the numbers; the repository stays small). Until then
:func:`sweep_progress` / :func:`list_partial` report ``units_done/units_total`` and an
estimate of the compute left (mean wall time of the finished units times the units left);
a partial result is never shown (the page says how far a partial sweep got:
:func:`dpcompanion.book.show.full_absent_note`, :func:`dpcompanion.book.show.paper_progress_note`).
``quick.units/`` is git-ignored; a full or paper sweep's units may be committed, so that a
fresh clone on another machine resumes it.

**Modes**: ``quick`` and ``full`` (every experiment), ``paper`` (optional: the paper's own
sizes, where an experiment defines ``configs["paper"]``), see
:mod:`dpcompanion.experiments.base`. A paper result is stored, resumed, committed and
revalidated as a full one; a page shows it instead of the full one when it is fresh. Which
stored result a page shows and a verdict is judged on is one rule, :func:`best_fresh` (paper,
else full, else quick, fresh only; :data:`SHOWN_FIRST`).

**Reading checks everything** (:func:`load`): both JSON files parse, every array the payload
refers to is in ``arrays.npz`` and readable, and the payload has its recorded digest. A
result failing any check is **damaged**: ``StoredResult.damaged`` is ``<file>: <what>``, its
``stale_reason`` ``damaged: <file>: <what>``; it is stale (never shown, recomputed by the
next :func:`load_or_compute`), and listing goes on with the other results. Files are read only
when they are regular files (opened non-blocking: a FIFO or a device is refused, never waited
on), of at most :data:`.files.MAX_JSON_BYTES`, nested at most :data:`.files.MAX_JSON_DEPTH` deep;
the arrays of an ``.npz`` (``arrays.npz``, a unit's ``<key>.npz``) at most
:data:`.files.MAX_ARRAY_BYTES` together, checked from their ``.npy`` headers before any data
is decompressed (:func:`.files.read_npz`: a 1 KB header declaring 10**12 float64 is one line,
at once), and so are the quick numbers' compressed arrays;
a result folder that is a symlink (to itself or anywhere) or not a folder is damaged too, named,
never dropped from the listing.

**seal** (``provenance_seal``): ``{field: sha256[:16] of its JSON value}`` for every other
provenance field (device, commit, created, wall time, runs, run-steps, units, executor,
config, digest ...), written at save. A field edited, added or removed since makes the
result stale with reason ``provenance edited: <field>``; a result without a seal is stale
too (``results --seal``, :func:`seal_unsealed`, seals results stored before seals existed,
without recomputing, and only what it can verify: intact, consistent, and equal to its git
commit). The seal covers every field, so a revalidation,
which changes the code hash and appends to ``revalidated``, re-seals; it only runs on a
result whose seal was intact (an edited one is stale for that reason, not for code). The
seal detects edits and accidents, it is not a signature: anyone can recompute it.

**digest**: sha256 over a canonical encoding of the payload only (:func:`digest`): dict keys
sorted, floats by ``repr``, ints and strings tagged, arrays by dtype, shape and bytes. It
does not cover provenance, times or paths, so the same config and seed give the same digest
on any executor.

**code hash** (:func:`code_hash`, :func:`code_files`): the sha256 of the code that computes the
result. Of an experiment module it covers only ``units``, ``run_unit``, ``combine``,
``CONFIGS`` and the top-level names they use, transitively: its rules, margins, quotations,
sentences and page code judge or show a result, and editing them stales none. Every other
``dpcompanion`` module they use counts whole, with the modules it imports (found by reading
the imports with ``ast``, at top level and inside functions: an experiment lists no
dependencies by hand), as its syntax tree without docstrings, so an edited comment or
docstring stales nothing either. The store itself is left out (it stores numbers, it does
not make them), so are the verdict rules (:mod:`dpcompanion.experiments.comparisons`: they
judge numbers), and so is everything the computation does not use: the book layer (plotting,
report) in particular, so editing a figure never invalidates a result. The store's
:data:`RUN_POLICY` (every unit runs single-threaded) is hashed with them.

**Consistency** (:func:`inconsistency`): the recorded config must hash to the recorded
config hash, agree with the payload's own record of its config, and with the sizes the payload
holds (:func:`dpcompanion.experiments.scale_tables.size_mismatches`: array lengths, stored
counts), and make the recorded number of units; otherwise the result is ``inconsistent: ...``.

**Against git** (:mod:`.vcs`): a result whose files differ from the last commit that touched
them, and that the store did not write itself (its journal in the git directory), is stale:
``modified since commit <sha>``; so is a result one of whose files git is told not to compare
(``git update-index --skip-worktree`` or ``--assume-unchanged``: ``git ls-files -v`` tags it
``S`` or in lower case), whatever its contents. A digest and a seal can be recomputed by anyone;
what cannot be fooled is recomputation: ``results --verify`` (:mod:`.verify`) recomputes units
chosen at random (by default enough to catch one forged unit with probability at least 95%,
all of them when cheap) and compares them with the stored numbers.

**What the store defends against, and what it cannot.** It defends a result against *stale
code* (the code hash; a revalidation recomputes the quick mode), against *edits* (the seal over
the provenance, the digest over the payload, and the comparison with git above: an edit that
did not go through the store, or that git is told not to look at, makes the result stale),
against *damage* (every file checked as it is read, sizes capped, the array headers checked
against :data:`.files.MAX_ARRAY_BYTES` before any data: a damaged result is listed, named,
never shown, never a crash) and against *concurrent writers* (saves and provenance rewrites of
one result take turns under its lock, and a rewrite is a compare and swap: no interleaving of
saves and revalidations loses a payload). It cannot defend against a *forged result committed
by someone with write access*: the seal and the digest are recomputable by anyone, and so is
the journal (a line appended to ``<git dir>/dpcompanion-results.journal`` makes an uncommitted
edit read as the store's own), so a forged number, committed or journaled, reads as fresh as an
honest one. Only recomputation finds it: ``results --verify`` (exit 1, naming the unit), which
CI runs on a few cheap committed results on every run. The units of a sweep in progress are
files too: a resumed sweep (``experiment``, ``--recompute`` included, which recomputes the
result but resumes its stored units) recomputes and compares the stored units whose recorded
times fit in :data:`.unit_sweeps.REUSE_CHECK_S` (a minute) and replaces any that differ; a unit
file claiming a longer time is trusted as stored, and the result sealed from it holds its
numbers until ``results --verify`` recomputes them.

A result is **fresh** when it is not damaged, its seal matches, it is consistent, not modified
since its commit by anything but the store, and its config hash and code hash both equal the
current ones.

**Revalidation** (:func:`revalidate`): a refactor that changes no number should not force
hours of recomputation. When a full (or paper) result is computed, the quick mode of the same
code and seed is computed too and its digest recorded (``quick_digest``). When the code hash later
changes, :func:`revalidate` recomputes only the quick mode; if its digest equals the recorded
one, the full result is marked fresh for the new code hash (the event is appended to
``revalidated`` in its provenance, with the date), otherwise it stays stale. The fingerprint
holds on one kind of CPU (results and units record ``cpu``, full and paper results also
``quick_cpu``). On another kind, and for the units of a sweep in progress (which record no
fingerprint), :func:`revalidate` takes the **reference check** (:mod:`.reference`): it finds the
commit whose code made the result (by its recorded code hash), computes that commit's quick
mode on this machine in a subprocess, and compares it with the current code's quick mode,
computed here too. Equal digests revalidate it (``method: reference`` in the event, with the
commit, this CPU and the digest, which later serves as this CPU's fingerprint); a unit so
revalidated is restamped for the current code and reused by the resumed sweep. Otherwise the
stale message says why (digests differ, no commit with that code, or it could not run here).

**Numeric revalidation** (:mod:`.numeric`): a faster engine moves the last bits of
every number, so every quick digest. A full or paper result also records its quick numbers
(``quick_numbers``: the quick payload, exact and compact, with their digest, CPU and commit).
When the current code's quick digest is not the recorded one (on this CPU or any other), its
quick numbers are compared with the recorded ones: the same keys, list lengths, array shapes
and dtypes, every integer, flag and string exactly, and every float ``x`` against the recorded
``y`` within ``|x - y| <= max(rtol * max(|x|, |y|), atol)``, the tolerance declared per
experiment (:data:`.numeric.TOLERANCES`, each with its reason: every experiment of the book
trains in float32, rtol 1e-5, atol 1e-6) or, for one not declared, by dtype (float32 1e-5 /
1e-6, float64 1e-10 / 1e-12). Within it the result is fresh for the new code hash (``method:
numeric`` in the event, with the largest deviation: key, absolute, relative, share of the
tolerance; the commit that made the result and the current one; the new quick digest); the
recorded numbers are kept, so later changes are compared with the same numbers and
deviations never accumulate. Beyond it the result stays stale and the reason names the
largest deviation (on another CPU the reference check is still tried). Results stored before
quick numbers were recorded get them at the first revalidation that finds their quick digest
equal (fingerprint or reference), or, when fresh, at ``results --revalidate`` (their code is
the current code); from then on they revalidate numerically. ``results --json`` says per
result how it was validated (:meth:`StoredResult.validation`).

The package, by role: :mod:`.hashing` (digest, config hash, code hash), :mod:`.files` (the
files of a result: layout, seal, atomic saves, checked reads), :mod:`.unit_sweeps` (resumable
sweeps: units stored as they finish), :mod:`.executors` (local and Dask), :mod:`.result_store`
(compute, load, freshness, revalidation, listing), :mod:`.reference` (the reference check),
:mod:`.numeric` (the quick numbers and the tolerance of a numeric revalidation), :mod:`.vcs`
(a result against git), :mod:`.verify` (the spot check by recomputation) and :mod:`.migrate` (a one-off rewrite of
recorded config hashes). Callers use the names this package exports
(``from dpcompanion.experiments import store``; ``store.load_or_compute(...)``).
"""

from __future__ import annotations

from dpcompanion.experiments.store.executors import (
    EXECUTORS, RUN_POLICY, SCHEDULER_TIMEOUT_S, DaskExecutor, LocalExecutor, check_executor_options,
    check_scheduler_address, make_executor, max_workers)
from dpcompanion.experiments.store.files import (
    INLINE_MAX, SEAL, SEAL_COMMAND, check_writable, result_dir, results_root, sealed)
from dpcompanion.experiments.store.hashing import (
    CODE_HASH_EXCLUDE, CONFIG_DIGITS, TIME_KEYS, code_files, code_hash, config_hash, digest)
from dpcompanion.experiments.store.result_store import (
    SHOWN_FIRST, StoredResult, best_fresh, compute, fresh_full, fresh_paper, inconsistency, list_results, load,
    load_or_compute, quick_payload_here, result_to_show, revalidate, seal_unsealed)
from dpcompanion.experiments.store.unit_sweeps import (
    committed_units, list_partial, save_unit, sweep_progress, unit_key, units_dir)
from dpcompanion.experiments.store.verify import verify

__all__ = [
    "StoredResult", "load_or_compute", "units_dir", "unit_key", "sweep_progress", "list_partial", "save_unit", "load",
    "compute", "revalidate", "list_results", "seal_unsealed", "sealed", "digest", "config_hash", "code_files",
    "code_hash", "results_root", "result_dir", "check_writable", "LocalExecutor", "DaskExecutor", "make_executor",
    "check_executor_options", "EXECUTORS", "INLINE_MAX", "check_scheduler_address", "max_workers", "fresh_full",
    "result_to_show", "fresh_paper", "quick_payload_here", "committed_units", "SEAL", "SEAL_COMMAND", "CONFIG_DIGITS", "CODE_HASH_EXCLUDE", "TIME_KEYS",
    "RUN_POLICY", "SCHEDULER_TIMEOUT_S", "verify", "inconsistency", "best_fresh", "SHOWN_FIRST",
]

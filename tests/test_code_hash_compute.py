"""A result's identity is its computation: editing how an experiment is judged or shown (a
rule, a margin, a quotation, a sentence, a comment, a docstring) leaves its code hash and so
every stored result fresh; editing what computes it (its units, run_unit, combine, a constant
they use, a protocol or library module) changes the hash and makes the results stale.
The edits are made to the sources as another commit would hold them
(:func:`identity.code_files_at`), so the checkout is never touched."""

from __future__ import annotations

from pathlib import Path

import pytest

from dpcompanion.experiments import base
from dpcompanion.experiments.store import identity

REPO = Path(__file__).resolve().parents[1]


def _hash_with(exp, path: str, edit) -> str:
    """The experiment's code hash with the file ``path`` edited by ``edit(text) -> text``."""
    target = (REPO / path).read_text()
    changed = edit(target)
    assert changed != target, f"the edit did not change {path}"

    def read(p: str):
        if p == path:
            return changed.encode()
        f = REPO / p
        return f.read_bytes() if f.is_file() else None
    return identity.code_hash_of(identity.code_files_at(exp, read))


def _here(exp) -> str:
    return identity.code_hash_of(identity.code_files_at(exp, lambda p: (REPO / p).read_bytes()
                                                      if (REPO / p).is_file() else None))


JUDGING_EDITS = {
    "a comment appended": ("dpcompanion/experiments/h_f_eff.py", lambda s: s + "\n# a note for the reader\n"),
    "a rule's tolerance text": ("dpcompanion/experiments/h_f_infl.py",
                                lambda s: s.replace("as the paper defines it; ours / paper within a factor",
                                                    "as the paper defines it (App. D); ours / paper within a factor")),
    "a rule's ratio band": ("dpcompanion/experiments/h_f_infl.py",
                            lambda s: s.replace("INFL_RATIO = (1.5, 4.0)", "INFL_RATIO = (2.0, 4.0)")),
    "a page sentence": ("dpcompanion/experiments/h_f_eff.py",
                        lambda s: s.replace("stand-in for the paper's stated range", "substitute for the paper's stated range")),
    "the docstring of run_unit": ("dpcompanion/experiments/h_f_eff.py",
                                  lambda s: s.replace('def run_unit(unit, device) -> dict:\n    """',
                                                      'def run_unit(unit, device) -> dict:\n    """Edited. ')),
}

COMPUTE_EDITS = {
    "run_unit's body": ("dpcompanion/experiments/h_f_eff.py",
                        lambda s: s.replace("def run_unit(unit, device) -> dict:\n",
                                            "def run_unit(unit, device) -> dict:\n    unit = dict(unit)\n")),
    "a constant combine uses": ("dpcompanion/experiments/h_f_eff.py",
                                lambda s: s.replace("PAPER_HIDDEN = 1000", "PAPER_HIDDEN = 1001")),
    "the protocol module": ("dpcompanion/experiments/protocols/hong.py", lambda s: s + "\nEXTRA = 1\n"),
    "the engine": ("dpcompanion/training/trainers/engine.py", lambda s: s + "\n_EXTRA = 1\n"),
}


@pytest.mark.parametrize("what", sorted(JUDGING_EDITS))
def test_editing_the_judging_keeps_the_hash(what):
    path, edit = JUDGING_EDITS[what]
    eid = "h-f-infl" if "h_f_infl" in path else "h-f-eff"
    exp = base.get(eid)
    assert _hash_with(exp, path, edit) == _here(exp) == identity.code_hash(exp), what


@pytest.mark.parametrize("what", sorted(COMPUTE_EDITS))
def test_editing_the_computation_changes_the_hash(what):
    path, edit = COMPUTE_EDITS[what]
    exp = base.get("h-f-eff")
    assert _hash_with(exp, path, edit) != _here(exp), what


def test_an_experiment_built_on_another_counts_only_what_it_uses_of_it():
    """h-f-eff-exact runs h-f-eff's units: h-f-eff's computation is in its hash, h-f-eff's
    rules and page code are not."""
    exp = base.get("h-f-eff-exact")
    path = "dpcompanion/experiments/h_f_eff.py"
    assert _hash_with(exp, path, lambda s: s.replace("stand-in for the paper's stated range", "substitute for the paper's stated range")) == _here(exp)
    assert _hash_with(exp, path, lambda s: s.replace("def run_unit(unit, device) -> dict:\n",
                                                     "def run_unit(unit, device) -> dict:\n    unit = dict(unit)\n")) \
        != _here(exp)


def test_every_committed_result_is_fresh_under_this_hash():
    """The stored results were revalidated under this hash: none is stale for its code."""
    from dpcompanion.experiments import store

    stale = [(r.id, r.mode, r.stale_reason) for r in store.list_results() if not r.fresh
             and r.stale_reason.startswith("code changed")]
    assert not stale, stale

"""Saves and revalidations of one result exclude each other, and no interleaving loses a
payload: a revalidation writes the provenance only if the stored one is still the one it
started from (compare and swap, :func:`dpcompanion.experiments.store.files.replace_provenance`),
under the result's lock (``fcntl.flock`` on ``<id>/.<mode>.lock``, :func:`files.result_lock`),
which every save holds too.

The result is a toy full result (two units of 100 draws, milliseconds) in ``tmp_path``; its
code hash is set by the test, so a "code change" (which makes the full result stale and lets
``revalidate`` work) costs nothing. Only the full payload carries the number of the save that
made it (``gen``), so the quick fingerprint stays the same and every revalidation succeeds
unless a save gets in its way."""

from __future__ import annotations

import random
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

from dpcompanion.experiments import base, store
from dpcompanion.experiments.store import files, identity

EID = "test-race"
#: the number of the save whose payload is being computed (read by combine, full mode only)
GEN = [0]
#: the toy's code hash, set by the test ("a code change" is a new value)
CODE = ["c0"]
#: seconds of random pause inserted at each step of a save and in each unit (0: none), so that
#: the threads of a round meet at other points every time
JITTER = [0.0]
#: called at the start of every unit (the deterministic test saves from inside a revalidation)
HOOK: list = []
ROUNDS = 50


def _units(config):
    return [{"i": i, "seed": config["seed"], "n": 100} for i in range(2)]


def _run_unit(unit, device):
    for hook in list(HOOK):
        hook(unit)
    if JITTER[0]:
        time.sleep(random.uniform(0, JITTER[0]))
    return {"x": np.random.default_rng([unit["seed"], unit["i"]]).standard_normal(unit["n"])}


def _combine(config, results):
    out = {"xs": np.stack([r["x"] for r in results]), "total": float(sum(r["x"].sum() for r in results))}
    if config["mode"] == "full":
        out["gen"] = GEN[0]
    return out


@pytest.fixture()
def toy(tmp_path, monkeypatch):
    exp = base.register(base.Experiment(id=EID, title="race toy", configs={"quick": {"n": 1}, "full": {"n": 2}},
                                        units=_units, run_unit=_run_unit, combine=_combine))
    monkeypatch.setenv("DPCOMPANION_RESULTS", str(tmp_path / "results"))
    real = identity.code_hash
    monkeypatch.setattr(identity, "code_hash", lambda e: CODE[0] if e.id == EID else real(e))
    GEN[0], CODE[0], JITTER[0] = 0, "c0", 0.0
    HOOK.clear()
    yield exp
    HOOK.clear()
    base.unregister(EID)


def _jitter_saves(monkeypatch):
    def checkpoint(step):
        if JITTER[0]:
            time.sleep(random.uniform(0, JITTER[0]))
    monkeypatch.setattr(files, "_checkpoint", checkpoint)


def _consistent(gen: int) -> store.StoredResult:
    """The stored full result: intact (its payload has the digest its provenance records),
    fresh, and the payload of save ``gen``; the quick result intact too."""
    res = store.load(EID, mode="full")
    assert res is not None and not res.damaged, res and res.damaged
    assert res.provenance["digest"] == store.digest(res.payload)
    assert res.payload["gen"] == gen, (res.payload["gen"], gen)
    assert res.fresh, res.stale_reason
    quick = store.load(EID, mode="quick")
    assert quick is not None and not quick.damaged, quick and quick.damaged
    return res


def test_a_save_landing_during_a_revalidation_keeps_its_payload(toy):
    """The losing interleaving of the review, forced: the revalidation reads the full result
    (save 0), and while it computes its quick mode a save of save 1's payload lands. The
    revalidation finds another provenance than the one it read, writes nothing and says so
    (``replaced``); save 1's payload and provenance are intact and fresh. (It used to write save
    0's provenance beside save 1's payload: both lost, the result damaged.)"""
    store.compute(EID, mode="full")
    CODE[0] = "c1"  # a code change: the full result is stale, revalidation recomputes quick mode
    assert store.load(EID, mode="full").stale_reason.startswith("code changed")
    saved = []

    def save_now(unit):
        if not saved:  # the first unit of the revalidation's quick run
            saved.append(1)
            GEN[0] = 1
            store.compute(EID, mode="full")

    HOOK.append(save_now)
    out = store.revalidate(EID, mode="full")
    HOOK.clear()
    assert saved and out["status"] == "replaced", out
    assert "nothing written" in out["detail"]
    res = _consistent(1)
    assert res.provenance["code_hash"] == "c1" and res.provenance["revalidated"] == []


def test_a_revalidation_landing_before_a_save_is_replaced_by_it(toy):
    """The other order: the revalidation writes first (save 0 revalidated for code c1), then
    save 1 lands: save 1's payload is what is stored."""
    store.compute(EID, mode="full")
    CODE[0] = "c1"
    assert store.revalidate(EID, mode="full")["status"] == "revalidated"
    assert store.load(EID, mode="full").fresh
    GEN[0] = 1
    store.compute(EID, mode="full")
    _consistent(1)


def test_revalidations_racing_saves_never_lose_a_payload(toy, monkeypatch):
    """ROUNDS rounds, each a code change then, at once, a save of a new payload and a
    revalidation of the stored result (in two threads; the revalidation starts after a random
    pause between none and twice what a save takes here, measured first, so its
    read and its write fall before, around and after the save's swap; random pauses at every
    step of both): after every round the stored result is intact and fresh and holds the last
    save's payload. The outcomes of the revalidation are counted and printed: ``revalidated``
    (it wrote before the save landed), ``replaced`` (the save landed while it computed: nothing
    written) or ``fresh`` (the save landed before it read)."""
    _jitter_saves(monkeypatch)
    store.compute(EID, mode="full")
    CODE[0], JITTER[0] = "c0'", 0.003
    t0 = time.perf_counter()
    store.compute(EID, mode="full")  # what a save takes here, with the pauses
    save_s = time.perf_counter() - t0
    outcomes: dict[str, int] = {}
    for r in range(1, ROUNDS + 1):
        CODE[0] = f"c{r}"
        JITTER[0] = 0.003
        errors: list = []
        out: list = []

        def revalidate(pause=random.uniform(0, 2 * save_s)):
            try:
                time.sleep(pause)
                out.append(store.revalidate(EID, mode="full"))
            except BaseException as exc:  # noqa: BLE001 - reported below
                errors.append(exc)

        def save(gen=r):
            try:
                GEN[0] = gen
                store.compute(EID, mode="full")
            except BaseException as exc:  # noqa: BLE001 - reported below
                errors.append(exc)

        threads = [threading.Thread(target=save), threading.Thread(target=revalidate)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        JITTER[0] = 0.0
        assert not errors and not any(t.is_alive() for t in threads), errors
        assert out[0]["status"] in ("revalidated", "replaced", "fresh"), out
        outcomes[out[0]["status"]] = outcomes.get(out[0]["status"], 0) + 1
        _consistent(r)
    print(f"{ROUNDS} rounds (a save here: {save_s:.3f} s), revalidation outcomes: {outcomes}")
    assert sum(outcomes.values()) == ROUNDS


def test_saves_of_one_result_take_turns(toy, monkeypatch):
    """With the lock, two saves of one result never interleave: the steps of each save (its
    checkpoints) come in one block, although the first pauses between its two renames long
    enough for the other to get in if it could."""
    store.compute(EID, mode="full")
    steps: list[tuple[str, str]] = []

    def checkpoint(step):
        steps.append((threading.current_thread().name, step))
        if step == "old moved away" and threading.current_thread().name == "first":
            time.sleep(0.3)

    monkeypatch.setattr(files, "_checkpoint", checkpoint)
    res = store.load(EID, mode="full")
    saves = {name: (res.path, res.payload, store.sealed({**res.provenance, "created": name}))
             for name in ("first", "second")}
    first = threading.Thread(target=files.save, args=saves["first"], name="first")
    first.start()
    while not any(s == ("first", "tmp made") for s in steps):
        time.sleep(0.001)
    second = threading.Thread(target=files.save, args=saves["second"], name="second")
    second.start()
    first.join(60)
    second.join(60)
    names = [n for n, _ in steps]
    assert names == sorted(names, key=lambda n: n != "first"), steps  # all of first's, then second's
    back = store.load(EID, mode="full")
    assert back.fresh and back.provenance["created"] == "second"
    assert not files.lock_path(res.path).exists()  # the lock file goes with its last holder


_HOLD_CHILD = """
import sys, time
from pathlib import Path
from dpcompanion.experiments.store import files
target, go = Path(sys.argv[1]), Path(sys.argv[2])
with files.result_lock(target):
    print("held", flush=True)
    t0 = time.monotonic()
    while not go.exists() and time.monotonic() - t0 < 60:
        time.sleep(0.01)
"""


def test_the_lock_holds_across_processes(toy, tmp_path):
    """Another process holding the result's lock (a save or a revalidation there) makes a save
    here wait until it lets go: the save has not landed while the other holds the lock, and
    lands once it is released."""
    store.compute(EID, mode="full")
    res = store.load(EID, mode="full")
    go = tmp_path / "go"
    child = subprocess.Popen([sys.executable, "-c", _HOLD_CHILD, str(res.path), str(go)], stdout=subprocess.PIPE,
                             text=True)
    try:
        assert child.stdout.readline().strip() == "held"
        saver = threading.Thread(target=files.save,
                                 args=(res.path, res.payload, store.sealed({**res.provenance, "created": "here"})))
        saver.start()
        time.sleep(0.3)
        assert saver.is_alive() and store.load(EID, mode="full").provenance["created"] != "here"
        go.touch()
        saver.join(60)
        assert not saver.is_alive()
    finally:
        go.touch()
        child.wait(60)
    assert store.load(EID, mode="full").provenance["created"] == "here"

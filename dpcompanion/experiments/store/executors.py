"""Executors: where an experiment's units run. :class:`LocalExecutor` (in this process, in
order) and :class:`DaskExecutor` (a ``LocalCluster`` of single-threaded workers, or a running
scheduler); each runs every unit single-threaded (:func:`run_one`, :data:`RUN_POLICY`, part
of every code hash) and hands each result back to the calling process as it finishes
(``map(run_unit, units, device, on_done)``), where the store saves it.
"""

from __future__ import annotations

import functools
import logging
import os
import socket
import threading
import time
from typing import Any, Callable, Sequence
from urllib.parse import urlsplit

from threadpoolctl import threadpool_limits

__all__ = ["LocalExecutor", "DaskExecutor", "make_executor", "check_executor_options", "check_scheduler_address",
           "max_workers", "run_one", "cpu_model", "worker_environ", "EXECUTORS", "SCHEDULER_TIMEOUT_S", "WORKERS_PER_CORE", "RUN_POLICY"]

#: seconds allowed to connect to a running Dask scheduler (``--scheduler``): a hard deadline,
#: kept even when the peer accepts the connection and never answers
SCHEDULER_TIMEOUT_S = 3
#: most ``--workers`` per core of this machine: each worker is a single-threaded process
#: (one unit at a time), so more than a few per core only adds processes and memory
WORKERS_PER_CORE = 4
EXECUTORS = ("local", "dask")
#: how :func:`run_one` runs every unit; part of every code hash (change it when the way
#: units are run changes, since that can change their last bits)
RUN_POLICY = "unit single-threaded: torch 1 intra-op thread, BLAS 1 thread"


@functools.cache
def cpu_model() -> str:
    """This machine's processor as the kernel names it (``/proc/cpuinfo``'s first "model name"),
    else :func:`platform.processor` or the architecture. Recorded with every result and unit:
    the same code, config and seed give the same digest on one kind of CPU, but BLAS and torch
    pick other kernels on another (measured: H-F-MOM quick, digest d19b49cac0ac on an Intel Xeon,
    e253ac98eb6b on an AMD EPYC, same commit), so a fingerprint revalidates only on its CPU kind.
    Read once per process. (``training.bench.provenance_extras`` reads the same line for the
    benchmark files: the one shared home, ``core.provenance``, is in every result's code hash.)

    >>> isinstance(cpu_model(), str) and len(cpu_model()) > 0
    True
    """
    import platform

    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as fh:
            for line in fh:
                if line.lower().startswith("model name") and ":" in line:
                    name = " ".join(line.split(":", 1)[1].split())
                    if name:
                        return name
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown"


def run_one(run_unit: Callable[[dict, str], dict], unit: dict, device: str) -> tuple[dict, dict]:
    """Run one unit single-threaded on the CPU side, whatever the executor: torch at one
    intra-op thread and numpy's BLAS/LAPACK at one thread, restored afterwards.

    Why: a reduction split over two threads rounds differently from one over a single
    thread, so a unit run with torch's default threads in this process and the same unit in
    a single-threaded Dask worker gave different digests (measured on H-F-INFL quick, N =
    1000; tiny sizes stay below torch's parallel grain and hide it). Fixing the thread count
    makes a unit's numbers depend on its config only. Parallelism comes from running units
    side by side (``--executor dask --workers N``); on a loaded 2-core machine one thread
    per unit was also by far the faster choice.

    Returns ``(unit result, counts)``: ``counts`` are the runs and run-steps the unit
    trained, from the trainer engine's tally (``engine.tally``), for the provenance."""
    import torch  # torch and the engine only here: the store imports without torch (the CLI, the book)

    from dpcompanion.training.trainers import engine

    before = torch.get_num_threads()
    if before != 1:
        torch.set_num_threads(1)
    try:
        with threadpool_limits(limits=1, user_api="blas"):
            before_tally = engine.tally()
            t0 = time.perf_counter()
            result = run_unit(unit, device)
            wall = time.perf_counter() - t0
            after = engine.tally()
            return result, {**{k: after[k] - before_tally[k] for k in after}, "wall_s": wall}
    finally:
        if before != 1:
            torch.set_num_threads(before)


def _run_in_worker(run_unit: Callable[[dict, str], dict], unit: dict, device: str) -> tuple[dict, dict]:
    """Run one unit in a Dask worker process (single-threaded, as every unit: :func:`run_one`;
    N workers fill N cores)."""
    return run_one(run_unit, unit, device)


def worker_environ() -> dict:
    """The environment a ``LocalCluster`` worker starts with: Dask's
    ``distributed.nanny.pre-spawn-environ`` without ``MALLOC_TRIM_THRESHOLD_``.

    Why: Dask sets that variable (65536) so that idle workers hand memory back to the system.
    Setting any of glibc's malloc thresholds turns off its dynamic mmap threshold, so every
    allocation above 128 KiB (most tensors of a training step) is a fresh ``mmap`` whose pages
    the kernel faults in and zeroes, and is unmapped when freed. Measured here (AMD EPYC, one
    thread, the other core busy): W-F4's CNN step on 256 samples took 0.14 to 0.16 s with it
    against 0.045 to 0.078 s without; an H-F-EFF worker at N = 4000 had spent more time in the
    kernel (931 s) than in its own code (734 s), with 463 million page faults. The values a
    unit computes do not depend on it (torch aligns every buffer to 64 bytes either way). The
    thread caps (``OMP_NUM_THREADS`` ...) stay. A cluster started elsewhere
    (``--scheduler``) keeps its own settings: start its workers without the variable."""
    import dask

    env = dict(dask.config.get("distributed.nanny.pre-spawn-environ", default={}) or {})
    env.pop("MALLOC_TRIM_THRESHOLD_", None)
    return env


class LocalExecutor:
    """Every unit in this process, in order."""

    name = "local"

    def map(self, run_unit, units: Sequence[dict], device: str, on_done=None) -> list[tuple[dict, dict]]:
        """``on_done(i, (result, counts))`` is called as each unit finishes (the store saves it)."""
        out = []
        for i, u in enumerate(units):
            out.append(run_one(run_unit, u, device))
            if on_done is not None:
                on_done(i, out[-1])
        return out

    def close(self) -> None:
        pass

    def describe(self) -> str:
        return "local"


class DaskExecutor:
    """Units as Dask tasks: ``workers=N`` starts a ``LocalCluster`` of N single-threaded worker
    processes; ``scheduler=ADDRESS`` connects to a running scheduler (``dask-jobqueue``,
    ``dask scheduler`` ...) within :data:`SCHEDULER_TIMEOUT_S` seconds."""

    name = "dask"

    def __init__(self, *, workers: int | None = None, scheduler: str | None = None):
        import dask  # optional: the dask extra
        from distributed import Client, LocalCluster

        self.cluster = None
        if scheduler is not None:
            self.client = _connect(scheduler)
            self.where = scheduler
        else:
            n = workers or os.cpu_count() or 1

            def start() -> None:
                with dask.config.set({"distributed.nanny.pre-spawn-environ": worker_environ()}):
                    self.cluster = LocalCluster(n_workers=n, threads_per_worker=1, processes=True,
                                                dashboard_address=None, silence_logs=logging.ERROR)
                self.client = Client(self.cluster)

            self.client = None
            if _sigint_deferred(start):  # Ctrl-C while it started: torn down whole, then the interrupt
                self.close()
                raise KeyboardInterrupt
            self.where = f"LocalCluster({n} workers x 1 thread)"

    def map(self, run_unit, units: Sequence[dict], device: str, on_done=None) -> list[tuple[dict, dict]]:
        """``on_done(i, (result, counts))`` is called in this process as each unit finishes,
        in the order they finish (the store saves it here, not on the worker). A failing unit
        does not stop the others: every unit that succeeds is handed to ``on_done`` (so a
        rerun reuses it), then the first failure is raised."""
        from distributed import as_completed

        futures = self.client.map(_run_in_worker, [run_unit] * len(units), list(units),
                                  [device] * len(units), pure=False)
        index = {f.key: i for i, f in enumerate(futures)}
        out: list = [None] * len(units)
        failed: BaseException | None = None
        for fut in as_completed(futures):
            i = index[fut.key]
            try:
                out[i] = fut.result()
            except Exception as exc:  # noqa: BLE001 (re-raised below, once the others are in)
                failed = failed or exc
                continue
            if on_done is not None:
                on_done(i, out[i])
        if failed is not None:
            raise failed
        return out

    def close(self) -> None:
        if self.client is not None:
            self.client.close()
        if self.cluster is not None:
            self.cluster.close()

    def describe(self) -> str:
        return f"dask {self.where}"


def _sigint_deferred(start: Callable[[], None]) -> bool:
    """Run ``start`` with SIGINT held back; True when one arrived meanwhile. A KeyboardInterrupt
    inside ``LocalCluster``'s start left a half-started cluster whose exit handler failed
    (``AssertionError: Status.init``) and a worker process behind; held back, the
    cluster starts whole and the caller tears it down before raising the interrupt. Off the
    main thread (where no handler can be set) ``start`` simply runs."""
    import signal

    if threading.current_thread() is not threading.main_thread():
        start()
        return False
    got: list[int] = []
    previous = signal.signal(signal.SIGINT, lambda signum, frame: got.append(signum))
    try:
        start()
    finally:
        signal.signal(signal.SIGINT, previous)
    return bool(got)


def _connect(scheduler: str):
    """A Dask ``Client`` of the running scheduler at ``scheduler``, or ValueError within
    :data:`SCHEDULER_TIMEOUT_S` seconds. The connection is attempted in a thread with a hard
    deadline: Dask's own ``timeout`` does not bound a peer that accepts the connection and
    never answers, and a peer that answers with other bytes makes Dask read a length prefix
    and try to allocate exabytes; both become one line here."""
    from distributed import Client

    deadline = time.monotonic() + SCHEDULER_TIMEOUT_S
    quiet = [logging.getLogger(n) for n in ("distributed", "distributed.client", "distributed.comm",
                                            "distributed.core", "distributed.protocol")]
    levels = [lg.level for lg in quiet]
    for lg in quiet:
        lg.setLevel(logging.CRITICAL)
    lock = threading.Lock()
    box: dict[str, Any] = {}

    def restore_logging() -> None:
        for lg, lv in zip(quiet, levels):
            lg.setLevel(lv)

    def attempt() -> None:
        try:
            # a plain TCP connection first: a refused or unreachable address fails at once
            # (Dask retries a refused connection until its timeout)
            parts = urlsplit("tcp://" + scheduler.strip().split("://", 1)[-1])
            socket.create_connection((parts.hostname, parts.port), timeout=SCHEDULER_TIMEOUT_S).close()
            client = Client(scheduler, timeout=f"{SCHEDULER_TIMEOUT_S}s")
        except Exception as exc:  # noqa: BLE001 - OSError, TimeoutError, MemoryError (non-Dask bytes), ...
            client, error = None, exc
        else:
            error = None
        with lock:
            if box.get("abandoned"):  # too late: the caller has reported the failure
                if client is not None:
                    client.close()
                restore_logging()
                return
            box["client"], box["error"], box["done"] = client, error, True

    worker = threading.Thread(target=attempt, name="dpcompanion-dask-connect", daemon=True)
    worker.start()
    worker.join(max(0.0, deadline - time.monotonic()))
    with lock:
        if not box.get("done"):
            box["abandoned"] = True  # the thread restores the logging levels if it ever ends
            raise ValueError(f"--scheduler {scheduler}: cannot connect within {SCHEDULER_TIMEOUT_S} s (nothing answered "
                             "as a Dask scheduler); is a Dask scheduler running there?")
    restore_logging()
    if box["error"] is not None:
        exc = box["error"]
        what = ("the peer's reply is not Dask's protocol" if isinstance(exc, MemoryError) else type(exc).__name__)
        raise ValueError(f"--scheduler {scheduler}: cannot connect within {SCHEDULER_TIMEOUT_S} s ({what}); "
                         "is a Dask scheduler running there?")
    return box["client"]


def max_workers() -> int:
    """The most ``--workers`` accepted: :data:`WORKERS_PER_CORE` per core of this machine."""
    return WORKERS_PER_CORE * (os.cpu_count() or 1)


def check_scheduler_address(scheduler: Any) -> str:
    """``tcp://HOST:PORT`` (or ``HOST:PORT``, which Dask reads as tcp), checked without
    contacting it; ValueError naming ``--scheduler`` otherwise. TLS and the other protocols
    need a security configuration (certificates) that this command does not take."""
    allowed = ("an address tcp://HOST:PORT (PORT in 1..65535; tls:// and other protocols are not supported: "
               "they need a security configuration)")
    if not isinstance(scheduler, str) or not scheduler.strip():
        raise ValueError(f"--scheduler must be {allowed}, got {scheduler!r}")
    text = scheduler.strip()
    scheme, sep, rest = text.partition("://")
    if not sep:
        scheme, rest = "tcp", text
    try:
        parts = urlsplit(f"tcp://{rest}")
        ok = (scheme == "tcp" and bool(parts.hostname) and parts.port is not None and 1 <= parts.port <= 65535
              and not (parts.path or parts.query or parts.fragment) and parts.username is None)
    except ValueError:  # a port that is not a number, a malformed [IPv6] host
        ok = False
    if not ok:
        raise ValueError(f"--scheduler must be {allowed}, got {scheduler!r}")
    return text


def make_executor(executor: str | None = "local", *, workers: int | None = None,
                  scheduler: str | None = None):
    """Validate the executor options (ValueError naming the flag) and build the executor."""
    check_executor_options(executor, workers=workers, scheduler=scheduler)
    if (executor or "local") == "local":
        return LocalExecutor()
    return DaskExecutor(workers=workers, scheduler=scheduler)


def check_executor_options(executor: str | None = "local", *, workers: int | None = None,
                           scheduler: str | None = None) -> None:
    """The checks of :func:`make_executor`, without starting or contacting anything."""
    executor = executor or "local"
    if executor not in EXECUTORS:
        raise ValueError(f"--executor must be one of {', '.join(EXECUTORS)}, got {executor!r}")
    if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int) or workers < 1):
        raise ValueError(f"--workers must be an integer >= 1, got {workers!r}")
    if workers is not None and workers > max_workers():
        raise ValueError(f"--workers must be at most {max_workers()} ({WORKERS_PER_CORE} single-threaded worker "
                         f"processes per core, {os.cpu_count() or 1} cores here), got {workers!r}")
    if executor == "local" and (workers is not None or scheduler is not None):
        raise ValueError("--workers and --scheduler need --executor dask")
    if workers is not None and scheduler is not None:
        raise ValueError("give either --workers (start a LocalCluster) or --scheduler (use a running one), not both")
    if scheduler is not None:
        check_scheduler_address(scheduler)


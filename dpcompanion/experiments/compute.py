"""The compute table: what each experiment's committed full (or paper) result cost on this machine, the
command that reruns it, its sizes against the paper's, and an estimate for one GPU.

Every number of a row is read from the stored result's provenance, never typed; a stale result still
shows what it cost, with its status. The GPU estimate is a stated model (:data:`GPU_MODEL`), not a
measurement: ``CPU wall seconds x this machine's measured float32 matmul rate / GPU_ASSUMED_GFLOPS``
(an assumption; launch latency ignored, so optimistic for small per-step workloads).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from dpcompanion.core.provenance import REPO
from dpcompanion.experiments import base, store
from dpcompanion.experiments.scale_tables import at_paper_scale, scale_of

__all__ = ["GPU_ASSUMED_GFLOPS", "GPU_MODEL", "rerun_command", "gpu_estimate_s", "table", "display_rows",
           "DISPLAY_HEADER", "COMMAND_HEADER", "command_rows", "short_executor", "duration", "measured_cpu_peak", "load_bench_json", "PAPER_SCALE_HEADER",
           "paper_scale_rows", "total_wall_s"]

#: assumption (not measured): sustained float32 GFLOP/s of one data-centre GPU on these workloads
GPU_ASSUMED_GFLOPS = 10_000.0
#: the model, in words, for the page
GPU_MODEL = ("GPU seconds = CPU wall seconds x (this machine's measured float32 matmul rate, {cpu:.4g} GFLOP/s) / "
             "(an assumed sustained GPU rate of {gpu:,.0f} GFLOP/s): the GPU is assumed to run the same work at the same "
             "fraction of its rate as the CPU did of its matmul peak; launch latency is ignored, so for small per-step "
             "workloads the estimate is optimistic. An estimate, not a measurement.")


def load_bench_json(name: str, root: Path | None = None) -> dict[str, Any] | None:
    """``<root>/bench/<name>`` (a ``bench --out`` file; root default ``results/``), None when unreadable."""
    path = (root or REPO / "results") / "bench" / name
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def measured_cpu_peak(root: Path | None = None) -> tuple[float, str] | None:
    """This machine's float32 matmul rate (GFLOP/s) and the committed benchmark file recording it, or None."""
    for name in ("cpu-paper-scale.json", "cpu-quick.json", "cpu-full.json"):
        data = load_bench_json(name, root)
        v = None if data is None else data.get("matmul_peak_gflops")
        if isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0:
            return float(v), f"results/bench/{name}"
    return None


def rerun_command(experiment_id: str, provenance: dict[str, Any], mode: str = "full") -> str:
    """The command that recomputes the stored ``mode`` result, with its device, seed and executor.

    >>> rerun_command("w-f4", {"device": "cpu", "executor": "local", "config": {"seed": 0}})
    'python -m dpcompanion experiment w-f4 --mode full'
    >>> rerun_command("h-f-eff", {"device": "cuda", "executor": "dask LocalCluster(2 workers x 1 thread)",
    ...                           "config": {"seed": 3}})
    'python -m dpcompanion experiment h-f-eff --mode full --device cuda --seed 3 --executor dask --workers 2'
    """
    cmd = f"python -m dpcompanion experiment {experiment_id} --mode {mode}"
    dev = provenance.get("device")
    if dev and dev != "cpu":
        cmd += f" --device {dev}"
    seed = (provenance.get("config") or {}).get("seed", 0)
    if seed:
        cmd += f" --seed {seed}"
    ex = str(provenance.get("executor") or "local")
    if ex.startswith("dask"):
        m = re.search(r"LocalCluster\((\d+) workers", ex)
        cmd += " --executor dask" + (f" --workers {m.group(1)}" if m else " --scheduler ADDRESS")
    return cmd


def gpu_estimate_s(wall_s: float | None, *, cpu_peak_gflops: float | None,
                   gpu_gflops: float = GPU_ASSUMED_GFLOPS) -> float | None:
    """``wall_s * cpu_peak_gflops / gpu_gflops`` (None without a wall time or a measured CPU rate).

    >>> gpu_estimate_s(600.0, cpu_peak_gflops=100.0, gpu_gflops=10_000.0)
    6.0
    """
    if wall_s is None or cpu_peak_gflops is None:
        return None
    return float(wall_s) * float(cpu_peak_gflops) / float(gpu_gflops)


def table(*, root: Path | None = None, cpu_peak_gflops: float | None = None,
          gpu_gflops: float = GPU_ASSUMED_GFLOPS, mode: str = "full") -> list[dict[str, Any]]:
    """One row per experiment defining ``mode``, in id order, from its stored result under ``root``: ``id``,
    ``mode``, ``title``, ``stored``, ``status`` (``fresh``, ``stale: <why>``, ``damaged: ...``, ``partial: k/n
    units`` while a sweep is partial, or ``not stored``), ``wall_s`` (over sittings: the units' summed time,
    ``over_sittings``), ``device``, ``executor``, ``runs``, ``run_steps``, ``units``, ``created``, ``commit``,
    ``command``, ``scale_note``, ``scale`` (recomputed from the recorded config), ``at_paper_scale``,
    ``differs``, ``gpu_measured`` and ``gpu_estimate_s`` (None for a run already on a GPU)."""
    if cpu_peak_gflops is None:
        found = measured_cpu_peak(root)
        cpu_peak_gflops = found[0] if found else None
    base.validate_mode(mode)
    rows = []
    for eid, exp in base.all_experiments().items():
        if mode not in base.modes_of(exp):
            continue
        res = store.load(eid, mode=mode, root=root)
        prov = {} if res is None else res.provenance
        config = prov.get("config") if isinstance(prov.get("config"), dict) else base.config_for(exp, mode)
        scale = scale_of(eid, config)  # the paper's values and quotations from this code, ours from the config
        summed = None if res is None else res.over_sittings_s
        over_sittings = summed is not None
        wall = summed if over_sittings else prov.get("wall_s")  # over sittings: all its units' time, not the last sitting's
        device = prov.get("device")
        status = ("not stored" if res is None else res.stale_reason if res.damaged
                  else "fresh" if res.fresh else f"stale: {res.stale_reason}")
        part = store.sweep_progress(eid, mode, root) if res is None else None
        if part is not None:  # a sweep in progress: its stored units' time, never shown as a result
            status = f"partial: {part['units_done']}/{part['units_total']} units"
            wall = part["wall_s_done"]
            device = part.get("device")
        on_gpu = isinstance(device, str) and device.startswith("cuda")
        rows.append({
            "id": eid, "mode": mode, "title": exp.title, "stored": res is not None and not res.damaged,
            "status": status,
            "wall_s": wall, "over_sittings": over_sittings,
            "device": device, "executor": prov.get("executor"), "runs": prov.get("runs"),
            "run_steps": prov.get("run_steps"), "units": prov.get("units"), "created": prov.get("created"),
            "commit": prov.get("commit"),
            "command": rerun_command(eid, prov or {"config": config}, mode),
            "scale_note": exp.scale_note, "scale": scale,
            "at_paper_scale": at_paper_scale(scale) if scale else None,
            "differs": [k for k, d in scale.items() if d.get("match") is False],
            "gpu_measured": on_gpu,
            "gpu_estimate_s": None if on_gpu else gpu_estimate_s(wall, cpu_peak_gflops=cpu_peak_gflops,
                                                                 gpu_gflops=gpu_gflops),
        })
    return rows


def duration(s: float | None) -> str:
    """Seconds for a page: ``'42 s'``, ``'9.8 min'``, ``'13.2 h'``; ``'n/a'`` for None.

    >>> duration(0.29), duration(42.4), duration(586.3), duration(47_520.0), duration(None)
    ('0.29 s', '42 s', '9.8 min', '13.2 h', 'n/a')
    """
    if s is None:
        return "n/a"
    s = float(s)
    if s < 1:
        return f"{s:.2g} s"
    if s < 100:
        return f"{s:.0f} s"
    if s < 6000:
        return f"{s / 60:.1f} min"
    return f"{s / 3600:.1f} h"


#: the columns of :func:`display_rows` (the commands are :func:`command_rows`: two narrow tables)
DISPLAY_HEADER = ["experiment", "wall time here", "device, executor", "runs / run-steps / units",
                  "sizes vs the paper's", "one GPU (estimate)", "status"]
#: the columns of :func:`command_rows`
COMMAND_HEADER = ["experiment", "the command that reruns it", "its sizes, against the paper's"]


def short_executor(executor: str | None) -> str:
    """The executor in a few words: ``'local'``, ``'dask, 2 workers'``.

    >>> short_executor("dask LocalCluster(2 workers x 1 thread)"), short_executor("local"), short_executor(None)
    ('dask, 2 workers', 'local', 'n/a')
    """
    if not executor:
        return "n/a"
    m = re.match(r"dask LocalCluster\((\d+) workers?", executor)
    return f"dask, {m.group(1)} worker{'s' if m.group(1) != '1' else ''}" if m else executor


def display_rows(rows: list[dict[str, Any]]) -> list[list[str]]:
    """The rows of :func:`table` as text cells under :data:`DISPLAY_HEADER`."""
    out = []
    for r in rows:
        if not r["stored"]:
            so_far = (f"{duration(r['wall_s'])} so far" if r["status"].startswith("partial") and r["wall_s"] is not None
                      else "n/a")
            out.append([f"`{r['id']}`", so_far, r.get("device") or "n/a", "n/a",
                        "the paper's sizes" if r.get("mode") == "paper" else "n/a", "n/a", r["status"]])
            continue
        sizes = ("the paper's scale" if r["at_paper_scale"] else
                 ("differs: " + ", ".join(r["differs"]) if r["differs"] else "the paper prints no size"))
        g = r["gpu_estimate_s"]
        gpu = ("measured (run on a GPU)" if r["gpu_measured"]
               else "estimate: < 1 s" if g is not None and g < 1 else f"estimate: {duration(g)}")
        count = lambda v: "?" if v is None else f"{int(v):,}"  # noqa: E731
        took = duration(r["wall_s"]) + (" (units summed over sittings)" if r.get("over_sittings") else "")
        out.append([f"`{r['id']}`", took, f"{r['device']}, {short_executor(r['executor'])}",
                    f"{count(r['runs'])} / {count(r['run_steps'])} / {count(r['units'])}",
                    sizes, gpu, _short_status(r["status"])])
    return out


def command_rows(rows: list[dict[str, Any]]) -> list[list[str]]:
    """The rows of :func:`table` under :data:`COMMAND_HEADER`."""
    return [[f"`{r['id']}`", f"`{r['command']}`",
             "the paper's sizes (`--mode paper`)" if r.get("mode") == "paper" else (r["scale_note"] or "n/a")]
            for r in rows]


def _short_status(status: str) -> str:
    """``fresh``, ``stale (code changed)``, ``damaged``...: the status without its details.

    >>> _short_status("stale: code changed: dpcompanion.experiments.w_f4"), _short_status("fresh")
    ('stale (code changed)', 'fresh')
    """
    head, _, rest = status.partition(": ")
    return head if not rest else f"{head} ({rest.split(':')[0]})"


#: the columns of :func:`paper_scale_rows`
PAPER_SCALE_HEADER = ["experiment", "the paper's sizes", "measured here", "work at the paper's sizes",
                      "estimated time: CPU; one GPU"]


def paper_scale_rows(est: dict[str, Any], *, gpu_gflops: float = GPU_ASSUMED_GFLOPS) -> list[list[str]]:
    """Rows under :data:`PAPER_SCALE_HEADER` from a ``bench --paper-scale`` result
    (:func:`dpcompanion.experiments.paper_scale.measure`)."""
    peak = est.get("matmul_peak_gflops")
    hf, wf = est["h-f-eff"], est["w-f4"]
    hs, ws = hf["sizes"], wf["sizes"]
    cal = hf["calibration"]
    m0 = hf["per_N"][0]["measured"]
    ratios = "; ".join(f"N = {r['N']}: {r['width_ratio']:.3g}x" for r in hf["per_N"])
    rows = [[
        "`h-f-eff`",
        f"{hs['hidden']} hidden units, {hs['repeats']} repeats, T tuned in [{hs['T range'][0]}, {hs['T range'][1]}] "
        f"on an {hs['tuning']} ({hs['tune_repeats']} tuning repeats), N = {', '.join(str(n) for n in hs['N'])}",
        f"the experiment's trainer call at {hs['hidden']} and at {hs['committed']['hidden']} hidden units, "
        f"{m0['runs']} runs batched, calls of {m0['steps']} steps, {m0['rounds']} interleaved rounds: a run-step at "
        f"{hs['hidden']} costs {ratios} one at {hs['committed']['hidden']}; applied to the committed run's recorded "
        f"training time ({duration(cal['recorded_train_s'])}). From the measured seconds per run-step alone: "
        f"{duration(hf['estimate_absolute_s'])} (that model puts the committed run at {duration(cal['predicted_s'])})",
        f"{hf['run_steps_paper']:,} run-steps (the committed run's tuning candidates at {hs['tune_repeats']} tuning "
        f"repeats, its choices at {hs['repeats']} repeats)",
        f"**{duration(hf['estimate_s'])}**; estimate: "
        + duration(gpu_estimate_s(hf["estimate_s"], cpu_peak_gflops=peak, gpu_gflops=gpu_gflops)),
    ], [
        "`w-f4`",
        f"{ws['n_train']:,} MNIST images, {ws['model']} from scratch, {ws['epochs']} epochs, batch {ws['batch']}, "
        f"{len(ws['cs'])} values of c x {len(ws['sigmas'])} sigmas, {ws['seeds']} seed(s) per cell",
        f"on {wf['measured']['n_train']:,} images, one torch thread: {wf['step_s'] * 1e3:.3g} ms per private step, "
        f"{wf['eval_test_s']:.3g} s per test-set evaluation; a "
        f"{wf['check']['segment_steps']}-step segment of the experiment's own trainer took "
        f"{wf['check']['measured_over_predicted']:.2f}x the sum of these parts",
        f"{wf['cells']} cells x {ws['seeds']} seed(s) x {wf['steps_per_run']:,} steps ({wf['steps_per_epoch']} per "
        f"epoch); {duration(wf['cell_s'])} per cell and seed",
        f"**{duration(wf['estimate_s'])}**; estimate: "
        + duration(gpu_estimate_s(wf["estimate_s"], cpu_peak_gflops=peak, gpu_gflops=gpu_gflops)),
    ]]
    return rows


def total_wall_s(rows: list[dict[str, Any]]) -> float:
    """The CPU wall time of every stored full result of :func:`table`, added."""
    return float(sum(r["wall_s"] or 0.0 for r in rows if r["stored"]))

"""The contract every experiment module follows.

An experiment module ``dpcompanion/experiments/<name>.py`` declares its facts and its functions
by name, then its ``EXPERIMENT`` with :func:`from_module` (:data:`REQUIRED_NAMES`,
:data:`OPTIONAL_NAMES`)::

    TITLE = "PGD on two losses of different curvature (the ICLR submission, Fig. 1)"
    SCALE_NOTE = "..."          # optional: one sentence, full mode against the paper's protocol
    REPEATS_KEY = "repeats"     # optional: the config key counting runs
    CONFIGS = {"quick": {...}, "full": {...}}  # JSON-able dicts; full = the largest committed run
    # optional: CONFIGS["paper"] = {...}  # the paper's own sizes (hours here; run over several sittings)
    def units(config): ...        # -> list of JSON-able unit dicts, each self-contained
    def run_unit(unit, device): ...  # -> dict of numpy arrays / numbers / strings
    def combine(config, results): ...  # (config, [unit results, in units order]) -> payload dict
    # optional: def unit_size(unit): ...  # -> str, e.g. "N=4000 exp": units of one label take about
    #                                       # the same time (the time-left estimate of a partial sweep)
    # optional: def describe(payload): ...      # -> str, the page's sizes paragraph
    # optional: def verdict_rows(payload): ...  # -> rows of the page's paper-vs-ours table (the rules')
    # optional: def report_verdict_rows(payload): ...  # -> every row the verdicts report judges,
    #                                                  # where it has more than the page's table

    # optional: what the paper prints and how it is judged (declared here, nowhere else)
    PAPER_DIMS = {"repeats": Dim(100, "<version, section: quotation>", config_key("repeats")), ...}
    STORED_SIZES = {...}        # our sizes read from a payload, where its config may differ
    RULES = (Rule("h-f-curv/sharp-vs-flat", item, paper, tolerance, judge, design=..., margin=...,
                  case=Case(statement, agrees={...}, disagrees={...})), ...)
    SEQUENTIAL = Plan(...)      # a group-sequential plan, declared before its added runs

    EXPERIMENT = from_module(__name__, id="h-f-curv")  # lower-case SPEC ID = notebook = page name

The :class:`Experiment` is everything the rest of the package knows of an experiment: the
store, the pages (:mod:`dpcompanion.book.show`), the verdicts report, the rule registry
(:func:`dpcompanion.experiments.comparisons.all_rules`), the scale tables
(:mod:`dpcompanion.experiments.scale_tables`) and the CLI read its fields, never the module
(the ``EXPERIMENT`` line comes last, so that :func:`from_module` finds every name it reads).

* ``units(config)`` splits the work into independent pieces (one schedule at one data
  size, a block of repeats...). Each unit carries everything it needs, its seed included
  (derived from ``config["seed"]``), so its result does not depend on where or in which
  order it runs: the same config gives the same payload on any executor.
* ``run_unit`` may batch inside a unit (many runs in one torch program); it must be a
  module-level function (picklable, for Dask).
* ``combine`` is pure and cheap. The payload holds numbers only (numpy arrays, floats,
  ints, strings, and lists/dicts of them); its digest is the result's identity.

``config["seed"]`` is set by the caller (``--seed``); ``config["mode"]`` is the mode.

Modes (:data:`MODES`, :data:`OPTIONAL_MODES`): ``quick`` (the book's, seconds) and ``full``
(the committed result, minutes) are required; ``paper``, the paper's own sizes, is optional
(hours on two cores: a resumable sweep run over several sittings, its finished units
committed). A ``full`` or ``paper`` result records the quick-mode digest of its code and
seed and is revalidated by it (:data:`FINGERPRINTED_MODES`). The config hash covers the mode,
so adding a ``paper`` config changes no quick or full result's config hash.

The provenance's ``runs`` and ``run_steps`` are counted by the trainer engine while each unit
runs (:func:`dpcompanion.training.trainers.engine.tally`), not reported by the unit. The results store
(:mod:`dpcompanion.experiments.store`) runs the units on an executor, saves the payload and
decides freshness; the code hash covers what computes the result: of the module defining
``run_unit``/``units``/``combine``, those functions, ``CONFIGS`` and the top-level names they
use (not the rules, margins, sentences or page code beside them), and every dpcompanion module
they use, transitively (read from the sources, imports inside functions included), so an
experiment lists no dependencies by hand: a module it uses is one it imports. :func:`register` adds an experiment
defined outside the package (tests).
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import pkgutil
import sys
from typing import Any, Callable, Mapping

import dpcompanion.experiments as pkg

__all__ = ["Experiment", "from_module", "REQUIRED_NAMES", "OPTIONAL_NAMES", "totals", "sizes_line", "MODES", "OPTIONAL_MODES", "ALL_MODES",
           "FINGERPRINTED_MODES", "modes_of", "with_mode", "validate_mode", "all_experiments", "get", "config_for",
           "run_local", "register", "unregister"]

#: the modes every experiment defines
MODES = ("quick", "full")
#: the modes an experiment may define: ``paper``, the paper's own sizes
OPTIONAL_MODES = ("paper",)
ALL_MODES = MODES + OPTIONAL_MODES
#: the modes whose results are committed and revalidated by their quick-mode digest
FINGERPRINTED_MODES = ("full", "paper")


@dataclasses.dataclass(frozen=True)
class Experiment:
    """One experiment: configs per mode, units, and the functions that run and combine them."""

    id: str
    title: str
    configs: Mapping[str, Mapping[str, Any]]
    units: Callable[[dict], list[dict]]
    run_unit: Callable[[dict, str], dict]
    combine: Callable[[dict, list[dict]], dict]
    #: one sentence: what full mode is, against the paper's protocol
    scale_note: str = ""
    #: optional: a unit's size label; a partial sweep's time left charges each unit left the mean
    #: time of the finished units of its label (None: all units alike)
    unit_size: Callable[[dict], str] | None = None
    #: the page's sizes paragraph from a payload (``ExperimentPage.sizes``); None: the page has none
    describe: Callable[[dict], str] | None = None
    #: the rows of the page's paper-vs-ours table from a payload (``ExperimentPage.verdicts``, the
    #: verdicts report); None: the experiment is judged by no rule
    verdict_rows: Callable[[Any], list[dict]] | None = None
    #: every row the reproduction report judges, where the report has more than the page's table
    #: (h-f-eff's row per N, w-t1245's row per cell, w-t36's pooled table rows); None: ``verdict_rows``
    report_verdict_rows: Callable[[Any], list[dict]] | None = None
    #: the config key counting our runs per compared estimate (``repeats``, ``seeds``...), for
    #: verdict rows whose rule does not know n (``<dnn_key>`` for a row about the DNN where the
    #: config has one); None: no such key
    repeats_key: str | None = None
    #: the verdict rules of its page (:class:`~dpcompanion.experiments.comparisons.rule.Rule`,
    #: ids ``<id>/<panel>``): the registry (:func:`dpcompanion.experiments.comparisons.all_rules`)
    #: collects them from here
    rules: tuple = ()
    #: what the paper prints of its scale, per dimension (:class:`~dpcompanion.experiments.scale_tables.Dim`:
    #: the paper's value, its quotation, how ours is read from a config); None: the page has no scale block
    paper_scale: Mapping[str, Any] | None = None
    #: per dimension, our size read from a stored payload (the sizes the result really has),
    #: where it can differ from the config's (:func:`dpcompanion.experiments.scale_tables.stored_sizes`)
    stored_sizes: Mapping[str, Callable[[dict], Any]] | None = None
    #: its group-sequential plan (:class:`~dpcompanion.experiments.comparisons.sequential.Plan`),
    #: declared before the seeds beyond its first look ran; None: none
    sequential: Any = None

    def __post_init__(self):
        missing = [m for m in MODES if m not in self.configs]
        if missing:
            raise ValueError(f"experiment {self.id}: configs lack modes {missing}")
        unknown = [m for m in self.configs if m not in ALL_MODES]
        if unknown:
            raise ValueError(f"experiment {self.id}: configs have unknown modes {unknown} "
                             f"(allowed: {', '.join(ALL_MODES)})")
        if self.report_verdict_rows is not None and self.verdict_rows is None:
            raise ValueError(f"experiment {self.id}: report_verdict_rows without verdict_rows")
        foreign = [r.id for r in self.rules if not r.id.startswith(f"{self.id}/")]
        if foreign:
            raise ValueError(f"experiment {self.id}: rules {foreign} are not '{self.id}/<panel>'")
        if len({r.id for r in self.rules}) != len(self.rules):
            raise ValueError(f"experiment {self.id}: a rule id is declared twice")
        if self.stored_sizes is not None and self.paper_scale is None:
            raise ValueError(f"experiment {self.id}: stored_sizes without paper_scale")

    def judged_rows(self, payload: Any) -> list[dict]:
        """Every verdict row the reproduction report judges for ``payload``: ``report_verdict_rows``
        where declared, else ``verdict_rows`` (ValueError for an experiment with neither)."""
        if self.verdict_rows is None:
            raise ValueError(f"experiment {self.id} has no verdict rows")
        return list((self.report_verdict_rows or self.verdict_rows)(payload))


#: the names an experiment module defines, and the :class:`Experiment` field each becomes
#: (:func:`from_module`): the contract's required ones, then the optional ones (absent: the field's
#: default)
REQUIRED_NAMES = {"TITLE": "title", "CONFIGS": "configs", "units": "units", "run_unit": "run_unit",
                  "combine": "combine"}
OPTIONAL_NAMES = {"SCALE_NOTE": "scale_note", "REPEATS_KEY": "repeats_key", "RULES": "rules",
                  "PAPER_DIMS": "paper_scale", "STORED_SIZES": "stored_sizes", "SEQUENTIAL": "sequential",
                  "unit_size": "unit_size", "describe": "describe", "verdict_rows": "verdict_rows",
                  "report_verdict_rows": "report_verdict_rows"}


def from_module(module: str, *, id: str) -> Experiment:
    """The experiment ``id`` defined by module ``module`` (pass ``__name__``, at the very end of the
    module, after every name it reads): the names of :data:`REQUIRED_NAMES` (ValueError naming
    any missing) and those of :data:`OPTIONAL_NAMES` it defines, each as the :class:`Experiment`
    field that table names (``PAPER_DIMS`` becomes ``paper_scale``...). Nothing else of the module
    is read, then or later: the rest of the package reads the object."""
    mod = sys.modules[module]
    missing = [name for name in REQUIRED_NAMES if not hasattr(mod, name)]
    if missing:
        raise ValueError(f"experiment module {module} lacks {', '.join(missing)} (the contract of "
                         f"dpcompanion.experiments.base)")
    fields = {field: getattr(mod, name) for name, field in REQUIRED_NAMES.items()}
    fields.update({field: getattr(mod, name) for name, field in OPTIONAL_NAMES.items() if hasattr(mod, name)})
    if "rules" in fields:
        fields["rules"] = tuple(fields["rules"])
    return Experiment(id=id, **fields)


def totals(results: list[dict]) -> dict[str, Any]:
    """``run_steps`` and ``wall_s`` summed over the units' results (every payload records both).

    >>> totals([{"run_steps": 3, "wall_s": 0.5}, {"run_steps": 4, "wall_s": 1.0}])
    {'run_steps': 7, 'wall_s': 1.5}
    """
    return {"run_steps": int(sum(r["run_steps"] for r in results)), "wall_s": float(sum(r["wall_s"] for r in results))}


def sizes_line(config: Mapping[str, Any], text: str) -> str:
    """The head of a page's sizes paragraph: ``**Sizes (<mode> mode).** <text>``."""
    return f"**Sizes ({config['mode']} mode).** {text}"


#: experiments registered at run time (tests, user code), besides the package's modules
_REGISTERED: dict[str, Experiment] = {}


def register(exp: Experiment) -> Experiment:
    """Make ``exp`` known to :func:`get` (an experiment defined outside the package, e.g. in
    a test); its id must not be one of the package's."""
    if exp.id in _package_experiments() or (exp.id in _REGISTERED and _REGISTERED[exp.id] is not exp):
        raise ValueError(f"experiment id {exp.id} is already defined")
    _REGISTERED[exp.id] = exp
    return exp


def unregister(experiment_id: str) -> None:
    """Forget an experiment added with :func:`register`."""
    _REGISTERED.pop(experiment_id, None)


def all_experiments() -> dict[str, Experiment]:
    """Every experiment of the package, by ID (the modules, not sub-packages, of this package
    defining EXPERIMENT), plus those added with :func:`register`. The package's are found once
    per process (:func:`_package_experiments`)."""
    found = dict(_package_experiments())
    for eid, exp in _REGISTERED.items():
        found.setdefault(eid, exp)
    return dict(sorted(found.items()))


@functools.lru_cache(maxsize=1)
def _package_experiments() -> dict[str, Experiment]:
    """The experiments the package's modules define (read once: the rule registry and the
    scale tables ask for them row by row)."""
    found: dict[str, Experiment] = {}
    for info in pkgutil.iter_modules(pkg.__path__):
        # one module per experiment; the packages (store, protocols, comparisons) hold none
        if info.ispkg or info.name == "base" or info.name.startswith("_"):
            continue
        mod = importlib.import_module(f"{pkg.__name__}.{info.name}")
        if getattr(getattr(mod, "__spec__", None), "_initializing", False):
            raise RuntimeError(f"the experiments were asked for while {mod.__name__} is being imported: "
                               "an experiment module must not read the registry at import time")
        exp = getattr(mod, "EXPERIMENT", None)
        if isinstance(exp, Experiment):
            if exp.id in found:
                raise RuntimeError(f"experiment id {exp.id} defined twice")
            found[exp.id] = exp
    return found


def get(experiment_id: str) -> Experiment:
    """The experiment with this ID; ValueError naming the known IDs otherwise."""
    exps = all_experiments()
    if experiment_id not in exps:
        raise ValueError(f"unknown experiment {experiment_id!r}; known: {', '.join(exps) or 'none'}")
    return exps[experiment_id]


def modes_of(exp: Experiment) -> tuple[str, ...]:
    """The modes ``exp`` defines, in the order of :data:`ALL_MODES` (quick, full, then paper
    when it has a paper config)."""
    return tuple(m for m in ALL_MODES if m in exp.configs)


def with_mode(mode: str) -> list[str]:
    """The IDs of the experiments that define ``mode``, sorted."""
    return [eid for eid, exp in all_experiments().items() if mode in exp.configs]


def validate_mode(mode: Any, exp: Experiment | None = None) -> str:
    """``mode`` when it is one of :data:`ALL_MODES` (and, given ``exp``, one it defines);
    ValueError otherwise, naming the experiments that define an optional mode."""
    if mode not in ALL_MODES:
        raise ValueError(f"mode must be one of {', '.join(ALL_MODES)}, got {mode!r}")
    if exp is not None and mode not in exp.configs:
        having = with_mode(mode)
        raise ValueError(f"experiment {exp.id} has no {mode} config; experiments with one: "
                         f"{', '.join(having) or 'none'}")
    return mode


def config_for(exp: Experiment, mode: str, *, seed: int = 0) -> dict[str, Any]:
    """The config of ``exp`` in ``mode`` with the seed and mode set (ValueError for a mode it
    does not define)."""
    validate_mode(mode, exp)
    return {**exp.configs[mode], "mode": mode, "seed": int(seed)}


def run_local(exp: Experiment, mode: str, *, seed: int = 0, device: str = "cpu") -> dict[str, Any]:
    """Run every unit in this process, in order, and combine (no store, no provenance)."""
    config = config_for(exp, mode, seed=seed)
    results = [exp.run_unit(u, device) for u in exp.units(config)]
    return exp.combine(config, results)

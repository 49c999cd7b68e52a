"""The contract every experiment module follows.

An experiment module ``dpcompanion/experiments/<name>.py`` defines, by name (:data:`REQUIRED_NAMES`,
:data:`OPTIONAL_NAMES`), ``TITLE``, ``CONFIGS`` (JSON-able dicts per mode: ``quick``, ``full``, optionally
``paper``), ``units(config)`` (self-contained JSON-able unit dicts, each with its seed, so the same config
gives the same payload on any executor), ``run_unit(unit, device)`` (module-level: picklable for Dask)
and ``combine(config, results)`` (pure; the payload holds numbers, strings, arrays and lists/dicts of
them), optionally what its page and the verdicts read (``SCALE_NOTE``, ``REPEATS_KEY``, ``unit_size``,
``describe``, ``verdict_rows``, ``report_verdict_rows``, ``RULES``, ``PAPER_DIMS``, ``STORED_SIZES``,
``SEQUENTIAL``), and last ``EXPERIMENT = from_module(__name__, id="<id>")``. The rest of the package reads
the :class:`Experiment`, never the module. ``config["seed"]`` and ``config["mode"]`` are set by the caller.
A ``full`` or ``paper`` result is revalidated by its quick-mode digest (:data:`FINGERPRINTED_MODES`); the
store's code hash covers the compute functions, ``CONFIGS`` and what they use, transitively.
:func:`register` adds an experiment defined outside the package (tests).
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
           "register", "unregister"]

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
    #: a unit's size label (a partial sweep's time left; None: all units alike)
    unit_size: Callable[[dict], str] | None = None
    #: the page's sizes paragraph from a payload
    describe: Callable[[dict], str] | None = None
    #: the rows of the page's paper-vs-ours table from a payload; None: judged by no rule
    verdict_rows: Callable[[Any], list[dict]] | None = None
    #: every row the verdicts report judges, where it has more than the page's; None: ``verdict_rows``
    report_verdict_rows: Callable[[Any], list[dict]] | None = None
    #: the config key counting our runs per compared estimate (``repeats``, ``seeds``...)
    repeats_key: str | None = None
    #: its verdict rules (ids ``<id>/<panel>``), collected by :func:`dpcompanion.experiments.comparisons.all_rules`
    rules: tuple = ()
    #: what the paper prints of its scale, per dimension (:class:`~dpcompanion.experiments.scale_tables.Dim`)
    paper_scale: Mapping[str, Any] | None = None
    #: per dimension, our size read from a stored payload, where it can differ from the config's
    stored_sizes: Mapping[str, Callable[[dict], Any]] | None = None
    #: its group-sequential plan (:class:`~dpcompanion.experiments.comparisons.sequential.Plan`)
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
REQUIRED_NAMES = {"TITLE": "title", "CONFIGS": "configs", "units": "units", "run_unit": "run_unit",
                  "combine": "combine"}
OPTIONAL_NAMES = {"SCALE_NOTE": "scale_note", "REPEATS_KEY": "repeats_key", "RULES": "rules",
                  "PAPER_DIMS": "paper_scale", "STORED_SIZES": "stored_sizes", "SEQUENTIAL": "sequential",
                  "unit_size": "unit_size", "describe": "describe", "verdict_rows": "verdict_rows",
                  "report_verdict_rows": "report_verdict_rows"}


def from_module(module: str, *, id: str) -> Experiment:
    """The experiment ``id`` defined by module ``module`` (``__name__``, at the end of the module): its
    :data:`REQUIRED_NAMES` (ValueError naming any missing) and :data:`OPTIONAL_NAMES` as fields."""
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
    """Make ``exp`` (defined outside the package, e.g. in a test) known to :func:`get`."""
    if exp.id in _package_experiments() or (exp.id in _REGISTERED and _REGISTERED[exp.id] is not exp):
        raise ValueError(f"experiment id {exp.id} is already defined")
    _REGISTERED[exp.id] = exp
    return exp


def unregister(experiment_id: str) -> None:
    """Forget an experiment added with :func:`register`."""
    _REGISTERED.pop(experiment_id, None)


def all_experiments() -> dict[str, Experiment]:
    """Every experiment of the package's modules, by ID, plus those added with :func:`register`."""
    found = dict(_package_experiments())
    for eid, exp in _REGISTERED.items():
        found.setdefault(eid, exp)
    return dict(sorted(found.items()))


@functools.lru_cache(maxsize=1)
def _package_experiments() -> dict[str, Experiment]:
    """The experiments the package's modules define (read once per process)."""
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
    """The modes ``exp`` defines, in the order of :data:`ALL_MODES`."""
    return tuple(m for m in ALL_MODES if m in exp.configs)


def with_mode(mode: str) -> list[str]:
    """The IDs of the experiments that define ``mode``, sorted."""
    return [eid for eid, exp in all_experiments().items() if mode in exp.configs]


def validate_mode(mode: Any, exp: Experiment | None = None) -> str:
    """``mode`` when it is one of :data:`ALL_MODES` (and, given ``exp``, one it defines); else ValueError."""
    if mode not in ALL_MODES:
        raise ValueError(f"mode must be one of {', '.join(ALL_MODES)}, got {mode!r}")
    if exp is not None and mode not in exp.configs:
        having = with_mode(mode)
        raise ValueError(f"experiment {exp.id} has no {mode} config; experiments with one: "
                         f"{', '.join(having) or 'none'}")
    return mode


def config_for(exp: Experiment, mode: str, *, seed: int = 0) -> dict[str, Any]:
    """The config of ``exp`` in ``mode`` with the seed and mode set."""
    validate_mode(mode, exp)
    return {**exp.configs[mode], "mode": mode, "seed": int(seed)}

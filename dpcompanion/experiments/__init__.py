"""Experiments as pure computations (compute, then render).

Each experiment is one module of this package that defines ``EXPERIMENT``, an
:class:`~dpcompanion.experiments.base.Experiment`: a config per mode, a list of
independent seedable *units*, a function that runs one unit and one that combines the
units' results into the stored payload, and what its page and the verdicts report read
(``describe``, ``verdict_rows``, ``repeats_key``, its verdict rules and the paper's scale):
the rest of the package reads the object, never the module. The results store runs the units in-process or on
Dask and saves the payload with provenance; notebooks only load and plot. Besides the
experiment modules: the store and its executors, :mod:`.protocols` (what every experiment
of one paper shares: constants, data, models, the numbers the paper printed; it imports no
other module of this layer), :mod:`.comparisons` (the judges, the registry of every rule,
the rules of the pages without an experiment) and :mod:`.scale_tables` (the scale machinery).

May import: ``core``, ``theory``, ``claims``, ``training``, ``integrations``.
Imports torch: yes (the experiment modules and protocols train; the store and the verdict
rules import without it).
"""

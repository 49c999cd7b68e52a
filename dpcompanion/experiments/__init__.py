"""Experiments as pure computations (compute, then render).

Each experiment is one module of this package defining ``EXPERIMENT`` (the contract:
:mod:`~dpcompanion.experiments.base`); the rest of the package reads that object, never the module.
Besides them: the results store and its executors, :mod:`.protocols` (what every experiment of one
paper shares; it imports no other module of this layer), :mod:`.comparisons` (the judges and the rule
registry) and :mod:`.scale_tables` (the scale machinery).

May import: ``core``, ``theory``, ``claims``, ``training``, ``integrations``.
Imports torch: yes (the experiment modules and protocols train; the store and the verdict
rules import without it).
"""

"""The mathematics of both papers, as plain functions of numbers and arrays.

Privacy accounting (zCDP and (epsilon, delta), exact GDP, subsampled RDP), the budget and
its planner, the ledger that refuses overspending, every noise schedule (one table of
kinds), the papers' closed-form bounds (:mod:`.bounds`), exact risks and moments on
quadratics, schedule diagnostics. One source of truth: every formula lives once, here.

May import: ``core``.
Imports torch: no (numpy, scipy and dp-accounting only).
"""

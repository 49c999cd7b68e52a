"""The mathematics of both papers, as plain functions of numbers and arrays: privacy accounting, the
budget, its planner and ledger, the noise schedules, the papers' bounds (:mod:`.bounds`), exact risks
and moments on quadratics, schedule diagnostics. Every formula lives once, here.

May import: ``core``.
Imports torch: no (numpy, scipy and dp-accounting only)."""

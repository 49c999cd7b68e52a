"""Bridges from dpcompanion's schedules to other libraries (these modules may import torch).

* :mod:`dpcompanion.integrations.opacus`: make an Opacus ``DPOptimizer`` follow a schedule
  step by step (``ScheduleNoise``, ``make_private_with_schedule``) and account it with
  Opacus's own RDP accountant (``opacus_epsilon``).
"""

"""Bridges to other libraries' training loops.

- :mod:`.opacus`: a noise schedule of :mod:`dpcompanion.theory.schedules` applied to an
  Opacus ``PrivacyEngine`` (per-step noise multipliers, our ledger charged before each
  step).

May import: ``core``, ``theory``, ``training``.
Imports torch: yes (and Opacus where a bridge needs it).
"""

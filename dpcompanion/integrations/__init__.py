"""Bridges to other libraries' training loops.

- :mod:`.opacus`: a noise schedule of :mod:`dpcompanion.theory.schedules` applied to an
  Opacus ``PrivacyEngine`` (per-step noise multipliers, our ledger charged before each
  step).

May import ``core``, ``theory`` and ``training``; imported by ``experiments``, ``book``
and ``cli``. Imports torch (and Opacus where a bridge needs it, lazily).
"""

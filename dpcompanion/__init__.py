"""dpcompanion: reproducible companion to Hong, Wang & Zhou (FAccT 2022, arXiv 2101.07413)
and Wu et al. (ADP-SGD, 2021).

The math layer (``accounting``, ``ledger``, ``schedules``, ``bounds``, ``claims``) uses
numpy/scipy/sympy only and never imports torch; the trainers import it, never the reverse.
"""

__version__ = "0.1.0"

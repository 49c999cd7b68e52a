"""Closed forms of the papers' bounds, as plain numpy functions (no torch); import the submodules explicitly:

- :mod:`.gd` -- Hong et al. 2022 Sec. 4.1: Thm 4.1 (any schedule), 4.2 (uniform), Lemma 4.3, Thm 4.4 (dynamic).
- :mod:`.momentum` -- Sec. 4.2 (Thm 4.5-4.7, 4.9); :mod:`.psgd` -- Sec. 4.3, Thm 4.8.
- :mod:`.true_risk` -- Sec. 4.4, Thm 4.11-4.12 (uniform stability: true excess risk).
- :mod:`.tables` -- Tables 1 and 2 row by row, functions of N, D, R, p; :mod:`.bound_sweeps` -- the pages' sweeps.
- :mod:`.adp` -- Wu et al. (ADP-SGD, arXiv 2110.07435) Thm 4.1, 4.2, Prop. 5.1, 5.2."""

"""Closed forms of the papers' bounds, as plain numpy functions (no torch).

Submodules (import them explicitly; nothing is re-exported here):

- :mod:`dpcompanion.theory.bounds.gd` -- Hong et al. 2022 Sec. 4.1: ERUB of PGD for any
  schedule (Thm 4.1), the uniform schedule (Thm 4.2, Eq. 8, 9, 22-25), the dynamic schedule
  (Lemma 4.3, Eq. 26, Thm 4.4, Eq. 11, 27), brute-force minimisers over integer T.
- :mod:`dpcompanion.theory.bounds.psgd` -- Sec. 4.3, Thm 4.8 (PSGD adds alpha_g sigma_g^2).
- :mod:`dpcompanion.theory.bounds.true_risk` -- Sec. 4.4, Thm 4.11-4.12 (uniform stability: true excess risk).
- :mod:`dpcompanion.theory.bounds.tables` -- every row of Tables 1 and 2 as functions of N, D, R, p.
- :mod:`dpcompanion.theory.bounds.momentum` -- Sec. 4.2 (Thm 4.5-4.7, 4.9), momentum variant.
- :mod:`dpcompanion.theory.bounds.adp` -- Wu et al. (ADP-SGD, arXiv 2110.07435) Thm 4.1, 4.2, Prop. 5.1, 5.2.
"""

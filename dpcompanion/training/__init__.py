"""Private training: data, models, trainers, and what measures them.

Data sets (:mod:`.data`), models with per-sample gradients (:mod:`.models`), the trainers
(:mod:`.trainers`: PGD, momentum, PSGD, ADP-SGD; each charges the ledger before each noisy
step), influence estimates, the empirical privacy audit and the benchmark.

May import: ``core``, ``theory``.
Imports torch: yes (``data`` alone imports without it).
"""

"""The papers' experimental protocols: what every experiment of one paper shares.

- :mod:`.hong`: Hong et al.'s constants, seeds per unit, the batched trainer call and the
  statistics the verdicts use;
- :mod:`.wu`: Wu et al.'s data, models, learning-rate schedules and the ADP-SGD / DP-SGD
  runs of their Sec. 5 and App. F;
- :mod:`.wu_paper`: the numbers Wu et al. printed in their Tables 1-6 (transcribed, not
  measured);
- :mod:`.tuning`: the tuning protocol both papers' experiments share (a method's
  hyperparameters chosen on seeds disjoint from the reported ones, grids extended until the
  choice is interior, power of the comparison).

No module here defines an experiment (``EXPERIMENT``): those are the modules
``dpcompanion/experiments/<id>.py``.
"""

"""The papers' experimental protocols: what every experiment of one paper shares (:mod:`.hong`,
:mod:`.wu`), the numbers Wu et al. printed (:mod:`.wu_paper`) and the tuning protocol both papers'
experiments follow (:mod:`.tuning`). No module here defines an experiment.
"""

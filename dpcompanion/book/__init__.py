"""The book: the notebook runner (:mod:`.runner`), figures (:mod:`.plotting`, the plot functions of
:mod:`.theory_figures`, :mod:`.hong_figures`, :mod:`.wu_figures`, :mod:`.library_figures`, :mod:`.forest`,
and :mod:`.figure_files`), generated Markdown, the Sphinx extension (:mod:`.site`), the PDF (:mod:`.pdf`)
and the schedule explorer's container (:mod:`.explorer`; its script: ``book/_static/dpc-explorer.js``).

May import: ``core``, ``theory``, ``claims``, ``experiments``.
Imports torch: no (a notebook that trains imports ``training`` itself).
"""

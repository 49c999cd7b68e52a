"""The book: executing its notebooks, their figures and generated text, the site.

The notebook runner (:mod:`.runner`, ``python -m dpcompanion reproduce``), the plot
functions (:mod:`.plotting`), generated Markdown (:mod:`.report`, :mod:`.landing`,
:mod:`.changelog`), the Sphinx extension (:mod:`.site`) and the theory chapters' PDF
(:mod:`.pdf`).

May import: ``core``, ``theory``, ``claims``, ``experiments``.
Imports torch: no (a notebook that trains imports ``training`` itself).
"""

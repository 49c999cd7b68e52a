"""The book: executing its notebooks, their figures and generated text, the site.

The notebook runner (:mod:`.runner`, ``python -m dpcompanion reproduce``), the figures
(:mod:`.plotting`, the machinery every figure shares; the plot functions, one module per family
of pages: :mod:`.theory_figures`, :mod:`.hong_figures`, :mod:`.wu_figures`,
:mod:`.library_figures`, :mod:`.forest`; a figure's data and code files: :mod:`.figure_files`),
generated Markdown (:mod:`.report`, :mod:`.landing`, :mod:`.changelog`), the Sphinx extension
(:mod:`.site`) and the theory chapters' PDF (:mod:`.pdf`).

May import: ``core``, ``theory``, ``claims``, ``experiments``.
Imports torch: no (a notebook that trains imports ``training`` itself).
"""

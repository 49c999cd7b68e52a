"""One module per command of :mod:`dpcompanion.cli` (``HELP``, ``add_arguments``, ``run``)."""

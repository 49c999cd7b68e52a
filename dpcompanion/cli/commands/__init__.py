"""One module per command of :mod:`dpcompanion.cli`, ``<name>_command.py`` (``HELP``, ``add_arguments``, ``run``)."""

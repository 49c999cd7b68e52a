"""``python -m dpcompanion ...``: see :mod:`dpcompanion.cli`."""

from dpcompanion.cli import main

raise SystemExit(main())

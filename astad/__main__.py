"""``python -m astad show-derivative ...``: the command line (see :mod:`astad.cli`)."""

from .cli import main

raise SystemExit(main())

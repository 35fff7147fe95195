"""``python -m astad show-derivative ...``: the command line (see :mod:`astad.cli`)."""

from .cli import main

if __name__ == "__main__":
    raise SystemExit(main())

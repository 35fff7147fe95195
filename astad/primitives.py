"""Where generated code, and the files cached from it, import their runtime
helpers from (``from astad.primitives import unstack``).  The table of
primitives and its rules live in :mod:`astad.rules`."""

from __future__ import annotations

from .rules import RUNTIME, TABLE, DerivativeKind, ShapeError, infer  # noqa: F401  (for code written against this module)

globals().update(RUNTIME)

__all__ = sorted(RUNTIME)

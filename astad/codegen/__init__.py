"""Codegen: target IR -> Python source (:mod:`astad.codegen.python`)."""

from .python import IN_PLACE_MIN_SIZE, MAX_INLINED, MAX_TERMS, generate
# the statement printer, shared with forward-mode codegen (astad/codegen_forward.py on branch fwd)
from .python import _Function, _funcdef  # noqa: F401

__all__ = ["IN_PLACE_MIN_SIZE", "MAX_INLINED", "MAX_TERMS", "generate"]

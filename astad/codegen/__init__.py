"""Codegen: target IR -> Python source.  :mod:`astad.codegen.python` prints a
reverse program (``NAME_forward``/``NAME_backward``), its loops (and the scalar
fast path) :mod:`astad.codegen.loops`, :mod:`astad.codegen.forward`
a forward-mode program (``NAME_jvp``) with the same statement printer."""

from .forward import generate_forward
from .python import IN_PLACE_MIN_SIZE, MAX_INLINED, MAX_TERMS, generate

__all__ = ["IN_PLACE_MIN_SIZE", "MAX_INLINED", "MAX_TERMS", "generate", "generate_forward"]

"""astad: automatic differentiation of numpy code by source transformation.

``@astad.reverse`` reads a function's source, lowers it to a typed λ-calculus
IR with explicit contraction (``dup``) and weakening (``drop``), applies the
CHAD reverse-mode macro, simplifies, and generates readable Python.
"""

from .api import Pullback, Reverse, clear_caches, grad, reverse, value_and_grad, vjp
from .cache import config
from .errors import (AstadError, AstadTypeError, InternalError, NonScalarOutputError, SourceUnavailableError,
                     UnsupportedFunctionError, UnsupportedSyntaxError)
from .pipeline import STAGES, Derivative
from .version import __version__

__all__ = [
    "reverse", "grad", "value_and_grad", "vjp", "clear_caches", "config", "Reverse", "Pullback", "Derivative",
    "STAGES", "AstadError", "AstadTypeError", "InternalError", "NonScalarOutputError", "SourceUnavailableError",
    "UnsupportedFunctionError", "UnsupportedSyntaxError", "__version__",
]

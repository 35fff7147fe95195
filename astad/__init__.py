"""astad: automatic differentiation of numpy code by source transformation.

``@astad.reverse`` reads a function's source, lowers it to a typed λ-calculus
IR with explicit contraction (``dup``) and weakening (``drop``), applies the
CHAD reverse-mode macro, simplifies, and generates readable Python.
``@astad.forward`` applies the forward-mode macro (dual numbers) instead;
``jvp``, ``jacfwd``, ``jacrev``, ``jacobian``, ``hessian`` and ``hvp`` are built
on the two, and ``grad(grad(f))`` differentiates astad's own output (forward
mode over the inner derivative's IR program).
"""

from .api import Pullback, Reverse, clear_caches, reverse
from .api_forward import Forward, Pushforward, forward
from .api_higher import Derived, grad, jvp, value_and_grad, vjp
from .api_jacobians import jacfwd, jacrev
from .api_second import hessian, hvp, jacobian
from .cache import config
from .errors import (AstadError, AstadTypeError, InternalError, NonScalarOutputError, SourceUnavailableError,
                     UnsupportedFunctionError, UnsupportedSyntaxError)
from .pipeline import STAGES, Derivative
from .version import __version__

__all__ = [
    "reverse", "forward", "jvp", "jacfwd", "jacrev", "jacobian", "hessian", "hvp", "Forward", "Pushforward",
    "Derived", "grad", "value_and_grad", "vjp", "clear_caches", "config", "Reverse", "Pullback", "Derivative",
    "STAGES", "AstadError", "AstadTypeError", "InternalError", "NonScalarOutputError", "SourceUnavailableError",
    "UnsupportedFunctionError", "UnsupportedSyntaxError", "__version__",
]

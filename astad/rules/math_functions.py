"""Python's ``math`` functions on numbers: each is the entry of the numpy
function it computes (``math.asin`` is ``np.arcsin``), with that entry's
derivative rules, and differs only in what it is as a value: it takes a
number (a Python float or int, a numpy scalar, a 0-d array), returns a Python
float (``floor``/``ceil``/``trunc`` an int, the classifiers a bool), and is
printed as ``math.fn(x)`` (several times faster than ``np.fn`` on a float;
it raises where Python's does, ``math.log(0.0)``, as the primal did).

The numpy entries' rules are safe for Python floats: a denominator that can
be zero is a numpy value (``np.sqrt``, ``np.reciprocal``, ``log_domain``), so
a derivative is inf or nan where numpy's is, never a ZeroDivisionError; only
``sqrt``'s ``0.5 / log_domain(out)`` divides by the result made a numpy float
(``math.sqrt`` gives a Python float; ``log_domain`` makes -0.0 0, so the derivative is +inf there).
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any, Callable

import libcst as cst

from .. import pyexpr as px
from ..ir import Num, Prim, Type
from .derive import unary
from .table import TABLE, DerivativeKind, Primitive, ShapeError, num, register

#: ``math.<name>`` -> the numpy entry it computes
DIFFERENTIABLE = {
    "exp": "exp", "log": "log", "log1p": "log1p", "expm1": "expm1", "log2": "log2", "log10": "log10", "sqrt": "sqrt",
    "sin": "sin", "cos": "cos", "tan": "tan", "asin": "arcsin", "acos": "arccos", "atan": "arctan",
    "atan2": "arctan2", "sinh": "sinh", "cosh": "cosh", "tanh": "tanh", "asinh": "arcsinh", "acosh": "arccosh",
    "atanh": "arctanh", "hypot": "hypot", "pow": "power", "fabs": "fabs", "copysign": "copysign",
    "degrees": "rad2deg", "radians": "deg2rad",
}
#: ``math.<name>`` with a discrete result: its dtype
DISCRETE = {"floor": "int64", "ceil": "int64", "trunc": "int64", "isnan": "bool", "isinf": "bool", "isfinite": "bool"}


def op_name(name: str) -> str:
    """The table's name of ``math.<name>``."""
    return f"math_{name}"


def _scalar(name: str, dtype: str) -> Callable[[list[Type], dict], Type]:
    def infer(ts: list[Type], params: dict) -> Type:
        for t in ts:
            if num(t).shape != ():
                raise ShapeError(f"math.{name} takes numbers, not an array of shape {num(t).shape}",
                                 f"np.{DIFFERENTIABLE.get(name, name)} for arrays")
        return Num((), dtype, py=True)

    return infer


def _printed(name: str) -> Callable[[list[cst.BaseExpression], dict], cst.BaseExpression]:
    return lambda a, ps: px.call(f"math.{name}", a)


def _differentiable(name: str, numpy: str, entry: Primitive | None = None) -> Primitive:
    fn = getattr(math, name)
    entry = entry or TABLE[numpy]
    return replace(entry, name=op_name(name), impl=fn, infer=_scalar(name, "float64"), emit=_printed(name),
                   method=None, stmts=None, jvp=_in_float64(entry.jvp), vjp=_in_float64(entry.vjp))


def _in_float64(rule: Any) -> Any:
    """The numpy entry's ``rule`` on its arguments as Python floats: ``math.fn`` converts a float32 to a
    float first and computes in float64, so its derivative is computed in float64 too (``np.cos`` of the
    float32 was float32's: the tangent of ``math.sin(x32[0])`` had float32's digits)."""
    if rule is None:
        return None

    def in_float64(b: Any, p: Prim, out: Any, given: Any) -> Any:
        args = tuple(b.prim("convert_float", a, dtype="float64", py=True)
                     if isinstance(a.type, Num) and a.type.dtype in _NARROW else a for a in p.args)
        return rule(b, p if all(x is y for x, y in zip(args, p.args)) else Prim(p.op, args, p.params), out, given)

    return in_float64


_NARROW = frozenset({"float16", "float32"})


def _sqrt_derivative(b: Any, x: Any, out: Any) -> Any:
    return b.prim("div", b.const(0.5), b.prim("log_domain", out))  # inf at ±0 (0.5 / 0.0 would raise)


register(
    *(_differentiable(name, numpy) for name, numpy in DIFFERENTIABLE.items() if name != "sqrt"),
    _differentiable("sqrt", "sqrt", replace(TABLE["sqrt"], **unary(_sqrt_derivative))),
    *(Primitive(op_name(name), getattr(math, name), _scalar(name, dtype), _printed(name), kind=DerivativeKind.DISCRETE)
      for name, dtype in DISCRETE.items()),
)

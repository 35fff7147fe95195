"""The call table's family of elementwise numpy functions and ufuncs (and `math` functions mapped to them): each entry maps a name a user calls
to the primitive(s) it lowers to (see :mod:`.api_specs` for the spec makers).

``math.<fn>`` is looked up by its function object (``math.exp`` or ``from
math import exp``) in ``BUILTINS``; it lowers to the table's ``math_<fn>``
entry, which has the rules of the numpy function it computes
(:mod:`astad.rules.math_functions`)."""

from __future__ import annotations

import math
from typing import Any, Callable

import libcst as cst
import numpy as np

from ..ir import Atom, Const, Num
from ..rules.math_functions import DIFFERENTIABLE, DISCRETE, op_name
from .api_specs import ApiSpec, Lowerer, atoms, elementwise, sig, spec, static_params
from .scopes import Value

_UNARY = ("sinh", "cosh", "arcsinh", "arccosh", "arctanh", "arcsin", "arccos", "arctan", "log1p", "expm1", "log2",
          "log10", "exp2", "cbrt", "reciprocal", "sinc", "deg2rad", "rad2deg", "fabs", "fix", "isinf", "isfinite",
          "positive")
_BINARY = ("arctan2", "hypot", "logaddexp", "logaddexp2", "copysign", "heaviside", "float_power")


def real_atom(lw: Lowerer, value: Value, node: cst.Call, what: str) -> Atom:
    """The argument of ``np.real``/``np.conj``: real numbers only (astad differentiates real functions)."""
    x = lw.atom(value, node)
    if isinstance(x.type, Num) and np.dtype(x.type.dtype).kind == "c":
        raise lw.type_error(f"{what} of a complex array: astad differentiates real numbers only", node,
                            "real inputs (np.real and np.conj of a real array are the array itself)")
    return x


def _lower_real(lw: Lowerer, b: dict, node: cst.Call) -> Value:
    return real_atom(lw, b["val"], node, "np.real")  # the same array (numpy returns it, or a view of it)


def _lower_conj(lw: Lowerer, b: dict, node: cst.Call) -> Value:
    return lw.emit("conjugate", [real_atom(lw, b["x"], node, "np.conj")])


def _lower_conj_method(lw: Lowerer, b: dict, node: cst.Call) -> Value:
    return real_atom(lw, b["x"], node, "x.conj()")  # the array itself: numpy returns it (np.conj makes a copy)


def _lower_nan_to_num(lw: Lowerer, b: dict, node: cst.Call) -> Value:
    if lw.static(lw.const_or(b["copy"]), node, "copy") is False:
        raise lw.type_error("np.nan_to_num(..., copy=False) replaces the entries of its argument in place", node,
                            "leave `copy` out and use the result: y = np.nan_to_num(x)")
    params = {k: lw.static(lw.const_or(b[k]), node, k) for k in ("nan", "posinf", "neginf")}
    params = {k: (None if v is None else float(v)) for k, v in params.items()}
    return lw.emit("nan_to_num", atoms(lw, b, node, "x"), params)


def _round(title: str) -> ApiSpec:
    return static_params("round", "a, decimals=0", ("a",), ("decimals",))(title)


FUNCTIONS: dict[str, Callable[[str], ApiSpec]] = {
    **{n: elementwise(n) for n in _UNARY},
    **{n: elementwise(n, "x1, x2") for n in _BINARY},
    "power": elementwise("power", "x1, x2"),  # numpy's semantics (nan, not Python's complex, for (-2.0) ** 0.5)
    "radians": elementwise("deg2rad"),
    "degrees": elementwise("rad2deg"),
    "round": _round,
    "around": _round,
    "real": spec("val", _lower_real),
    "conj": spec("x", _lower_conj),
    "conjugate": spec("x", _lower_conj),
    "nan_to_num": spec("x, copy=True, nan=0.0, posinf=None, neginf=None", _lower_nan_to_num),
}
#: array methods by name (``x.<name>()``), merged into ``numpy_api.METHODS``
METHODS: dict[str, Callable[[str], ApiSpec]] = {
    "round": _round,
    "conj": spec("x", _lower_conj_method),
    "conjugate": spec("x", _lower_conj_method),
}


# --------------------------------------------------------------------------- Python's math module


def _numbers(lw: Lowerer, args: list[Atom], node: cst.Call, name: str) -> list[Atom]:
    for a in args:
        if not (isinstance(a.type, Num) and a.type.shape == ()):
            numpy = DIFFERENTIABLE.get(name, name)
            raise lw.type_error(f"math.{name} takes numbers, not arrays", node, f"np.{numpy} for arrays")
    return args


def _math(name: str, signature: str = "x") -> ApiSpec:
    names = [n for n, _ in sig(signature)]

    def lower(lw: Lowerer, b: dict, node: cst.Call) -> Value:
        return lw.emit(op_name(name), _numbers(lw, atoms(lw, b, node, *names), node, name))

    return ApiSpec(f"math.{name}", sig(signature), lower)


def _lower_math_log(lw: Lowerer, b: dict, node: cst.Call) -> Value:
    """``math.log(x, base)`` is ``math.log(x) / math.log(base)`` (exactly: CPython computes it so)."""
    log_x = lw.emit(op_name("log"), _numbers(lw, atoms(lw, b, node, "x"), node, "log"))
    base = lw.const_or(b["base"])
    if isinstance(base, Const) and base.value is None:
        return log_x
    return lw.emit("div", [log_x, lw.emit(op_name("log"), _numbers(lw, [lw.atom(base, node)], node, "log"))])


_SIGNATURES = {"atan2": "y, x", "hypot": "x, y", "pow": "x, y", "copysign": "x, y"}

#: builtins by object (looked up by identity), merged into ``numpy_api.BUILTINS``
BUILTINS: dict[Any, ApiSpec] = {
    **{getattr(math, n): _math(n, _SIGNATURES.get(n, "x")) for n in [*DIFFERENTIABLE, *DISCRETE] if n != "log"},
    math.log: ApiSpec("math.log", sig("x, base=None"), _lower_math_log),
}

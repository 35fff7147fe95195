"""The call table's family of Python builtins and conventions (keys: the builtin object): each entry maps a name a user calls
to the primitive(s) it lowers to (see :mod:`.api_specs` for the spec makers).

``float(x)``, ``int(x)``, ``bool(x)`` and numpy's scalar types (``np.float64(x)``,
``np.float32(x)``, ``np.int64(x)``...) convert (a float result: the identity
derivative, cast to its dtype); ``round``, ``abs``, ``min``, ``max`` and
``pow`` compute as Python does (``max(a, b)`` prints ``max(a, b)``: the same
value, of the same type, as in the primal)."""

from __future__ import annotations

import builtins
from typing import Any, Callable

import libcst as cst
import numpy as np

from ..ir import Atom, Const, ListT, Num
from ..rules.python import convert
from .abstract import literal_type
from .api_specs import ApiSpec, sig, spec
from .core import LowererCore as Lowerer
from .scopes import Value

#: numpy functions by name (as ``np.<name>``), merged into ``numpy_api.API``
FUNCTIONS: dict[str, Callable[[str], ApiSpec]] = {}
#: array methods by name (``x.<name>()``), merged into ``numpy_api.METHODS``
METHODS: dict[str, Callable[[str], ApiSpec]] = {}


def _number(lw: Lowerer, value: Value, node: cst.Call, what: str) -> Atom:
    x = lw.atom(lw.const_or(value), node)
    if not isinstance(x.type, Num):
        raise lw.type_error(f"{what} takes a number or an array, not {x.type}", node)
    return x


def _literal(value: Any) -> Const:
    return Const.literal(value, literal_type(value))


def _is_literal(x: Atom) -> bool:
    return isinstance(x, Const) and x.name is None and isinstance(x.value, (bool, int, float))


def converter(dtype: str, py: bool, title: str) -> ApiSpec:
    """``float(x)`` / ``int(x)`` / ``bool(x)`` (``py``) or ``np.<dtype>(x)``."""

    def lower(lw: Lowerer, b: dict, node: cst.Call) -> Value:
        x = _number(lw, b["x"], node, f"{title}()")
        t = x.type
        assert isinstance(t, Num)
        if py and _is_literal(x):
            return _literal(convert(x.value, dtype, py))  # type: ignore[union-attr]
        if py and t.py and t.dtype == dtype:
            return x  # float(x) of a float
        op = "convert_float" if np.dtype(dtype).kind == "f" else "convert_discrete"
        return lw.emit(op, [x], {"dtype": dtype, "py": py})

    return ApiSpec(title, sig("x"), lower)


def scalar_type(dtype: str) -> ApiSpec | None:
    """``np.float64(x)``-style constructors: numpy's scalar type of a float, int or bool dtype."""
    if np.dtype(dtype).kind not in "fbiu":
        return None
    return converter(dtype, False, f"np.{'bool_' if dtype == 'bool' else dtype}")


def _lower_round(lw: Lowerer, b: dict, node: cst.Call) -> Value:
    x = _number(lw, b["number"], node, "round()")
    ndigits = lw.static(lw.const_or(b["ndigits"]), node, "ndigits")
    if ndigits is not None and not isinstance(ndigits, int):
        raise lw.type_error("round's `ndigits` must be an int", node)
    if _is_literal(x):
        return _literal(builtins.round(x.value) if ndigits is None else builtins.round(x.value, ndigits))  # type: ignore[union-attr]
    if ndigits is None:
        if isinstance(x.type, Num) and x.type.py and x.type.dtype in ("int64", "bool") and not x.type.shape:
            return x if x.type.dtype == "int64" else lw.emit("convert_discrete", [x], {"dtype": "int64", "py": True})
        return lw.emit("py_round", [x])
    return lw.emit("py_round_digits", [x], {"ndigits": ndigits})


class _Extremum(ApiSpec):
    """``max(a, b, ...)`` or ``max(iterable)`` (``min`` alike): no ``key=`` or ``default=``."""

    def bind(self, args: list, kwargs: dict) -> dict:
        if kwargs:
            raise TypeError(f"keyword arguments ({', '.join(kwargs)}) are not supported")
        if not args:
            raise TypeError("expected at least 1 argument, got 0")
        return {"args": args}


def _extremum(name: str) -> Callable[[Lowerer, dict, cst.Call], Value]:
    pick = builtins.max if name == "max" else builtins.min

    def lower(lw: Lowerer, b: dict, node: cst.Call) -> Value:
        items = b["args"]
        if len(items) == 1 and not hasattr(items[0], "items"):  # a list built at run time, or a 1-d array
            return _of_sequence(lw, name, lw.atom(items[0], node))
        if len(items) == 1:
            items = list(items[0].items)
            if not items:
                raise lw.type_error(f"{name}() of an empty sequence", node)
        atoms = [_number(lw, v, node, f"{name}()") for v in items]
        acc = atoms[0]
        for x in atoms[1:]:
            if _is_literal(acc) and _is_literal(x):
                acc = _literal(pick(acc.value, x.value))  # type: ignore[union-attr]
            else:
                acc = lw.emit(f"py_{name}", [acc, x])
        return acc

    return lower


def _of_sequence(lw: Lowerer, name: str, xs: Atom) -> Value:
    """``max(xs)``: the item where Python's ``max`` takes its value (the derivative flows to it)."""
    i = lw.emit(f"index_of_{name}", [xs])
    if isinstance(xs.type, ListT):
        return lw.emit("list_get", [xs, i])
    return lw.emit("getitem", [xs, i], {"index": (("arg", 1),)})


def _lower_pow(lw: Lowerer, b: dict, node: cst.Call) -> Value:
    if lw.static(lw.const_or(b["mod"]), node, "mod") is not None:
        raise lw.type_error("pow(base, exp, mod) is not supported", node, "pow(base, exp) or base ** exp")
    return lw.emit("pow", [_number(lw, b["base"], node, "pow()"), _number(lw, b["exp"], node, "pow()")])


#: builtins by object (looked up by identity), merged into ``numpy_api.BUILTINS``
BUILTINS: dict[Any, ApiSpec] = {
    builtins.float: converter("float64", True, "float"),
    builtins.int: converter("int64", True, "int"),
    builtins.bool: converter("bool", True, "bool"),
    builtins.round: ApiSpec("round", sig("number, ndigits=None"), _lower_round),
    builtins.abs: spec("x", lambda lw, b, node: lw.emit("py_abs", [_number(lw, b["x"], node, "abs()")]))("abs"),
    builtins.max: _Extremum("max", sig("args"), _extremum("max")),
    builtins.min: _Extremum("min", sig("args"), _extremum("min")),
    builtins.pow: ApiSpec("pow", sig("base, exp, mod=None"), _lower_pow),
}

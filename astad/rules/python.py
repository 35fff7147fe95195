"""Python's builtins and statements: scalar conversions (``float(x)``,
``int(x)``, ``bool(x)``, ``np.float32(x)``...), ``round``, ``abs``, ``min``
and ``max`` of scalars, and the effects ``print``, ``raise`` and ``assert``.

The conversions to a float are linear (the identity with a cast of the
dtype): the JVP casts the tangent to the result's dtype, the VJP casts the
cotangent back to the argument's.  ``max(a, b)`` returns ``a`` unless
``b > a`` (Python's rule, also at a nan): the derivative is the one of the
argument returned, as ``np.maximum``'s.

An *effect* (``effect=True``) returns None and is kept where it is by every
pass: the frontend's and the optimiser's dead-code elimination keep it (and
the branches and loops holding one), common subexpressions and hoisting skip
it (it is printed by ``stmts``).  The macros copy it into the primal pass as
any discrete primitive, so it runs once per run of the primal, with the
primal values.  Its arguments are atoms; ``layout`` tells how the printed
values are made of them (strings, f-strings, tuples and lists of atoms).
"""

from __future__ import annotations

import builtins
import linecache
from typing import Any

import libcst as cst
import numpy as np

from .. import pyexpr as px
from ..errors import AstadTypeError
from ..ir import INT, Atom, ListT, Loc, NoneT, Num, Type
from .derive import Partial, elementwise as by_partials, linear, unary
from .table import DerivativeKind, Expr, Primitive, ShapeError, num, register, runtime
from .types import elementwise

RULE, ZERO, DISCRETE = DerivativeKind.RULE, DerivativeKind.ZERO, DerivativeKind.DISCRETE

#: Python's own conversions by result dtype (a ``py`` result)
_PY_TYPES = {"float64": builtins.float, "int64": builtins.int, "bool": builtins.bool}


# --------------------------------------------------------------------------- conversions


def convert(x: Any, dtype: str, py: bool) -> Any:
    """``float(x)`` / ``int(x)`` / ``bool(x)`` (``py``), else ``np.<dtype>(x)``."""
    return _PY_TYPES[dtype](x) if py else np.dtype(dtype).type(x)


def _convert_infer(ts: list[Type], ps: dict) -> Type:
    x = num(ts[0])
    if ps["py"]:
        name = _PY_TYPES[ps["dtype"]].__name__
        if x.shape:
            raise ShapeError(f"{name}() of an array of shape {x.shape}: it takes a scalar",
                             f"{name}(x[i]) of one element, or np.sum(x) first")
        value = None if x.value is None or ps["dtype"] == "float64" else _PY_TYPES[ps["dtype"]](x.value)
        return Num((), ps["dtype"], py=True, value=value)
    return Num(x.shape, ps["dtype"])


def _emit_convert(a: list[Expr], ps: dict) -> Expr:
    if ps["py"]:
        return px.call(_PY_TYPES[ps["dtype"]].__name__, a)
    return px.call(f"np.{'bool_' if ps['dtype'] == 'bool' else ps['dtype']}", a)


def cast_to(b: Any, v: Atom, like: Type) -> Atom:
    """``v`` (a float) with the dtype and kind (Python or numpy scalar) of ``like``."""
    t, u = num(v.type), num(like)
    if t.dtype == u.dtype and (t.py == u.py or bool(u.shape)):  # (an array's cotangent may be a numpy scalar)
        return v
    return b.prim("convert_float", v, dtype=u.dtype, py=u.py and not u.shape)


def _convert_transpose(b, p, out, ct):
    x = p.args[0]
    return [cast_to(b, ct, x.type) if num(x.type).differentiable else None]


# --------------------------------------------------------------------------- min, max, round


def _scalars(name: str):
    def infer(ts: list[Type], ps: dict) -> Type:
        xs = [num(t) for t in ts]
        if any(x.shape for x in xs):
            raise ShapeError(f"{name}() of arrays: Python compares them as a whole",
                             f"np.{ {'max': 'maximum', 'min': 'minimum'}.get(name, name)}(a, b) elementwise, "
                             f"or np.{name}(x) over an array")
        if xs[0] == xs[1]:
            return xs[0]
        dtype = np.result_type(*(np.dtype(x.dtype) for x in xs)).name
        narrow = next((x for x in xs if not x.py and x.dtype != dtype), None)
        if narrow is not None:  # the result is one operand as it is: numpy computes with each at its own precision
            raise ShapeError(f"{name}() of a numpy {narrow.dtype} and a {'Python number' if any(x.py for x in xs) else 'wider number'}"
                             f" is one of them as it is, so its dtype is known only when it runs",
                             f"operands of one dtype: np.{narrow.dtype}(...) of the other, or float(...) of the {narrow.dtype}"
                             if narrow.differentiable else f"operands of one dtype: float(...) of the {narrow.dtype}")
        py = all(x.py for x in xs)
        return Num((), dtype, py=py, weak=not py and any(x.py or x.weak for x in xs))  # one of them as it is

    return infer


def _extremum(loses: str):
    """``max(x, y)`` is ``y`` exactly where ``x < y`` (``min``: ``x > y``), else ``x``."""

    def partials(b, p, out):
        x, y = p.args
        mask = b.prim(loses, x, y)
        return [Partial(lambda m, v: m.prim("select", mask, v, branch=False)),
                Partial(lambda m, v: m.prim("select", mask, v, branch=True))]

    return by_partials(partials, floats=True)


@runtime
def index_of_max(xs: Any) -> int:
    """Where ``max(xs)`` takes its value: it keeps an item until a later one is
    strictly greater (so the first of equal items, and a nan first item)."""
    if len(xs) == 0:
        raise ValueError("max() iterable argument is empty")
    best = 0
    for k in range(1, len(xs)):
        if xs[k] > xs[best]:
            best = k
    return best


@runtime
def index_of_min(xs: Any) -> int:
    """Where ``min(xs)`` takes its value (as :func:`index_of_max`)."""
    if len(xs) == 0:
        raise ValueError("min() iterable argument is empty")
    best = 0
    for k in range(1, len(xs)):
        if xs[k] < xs[best]:
            best = k
    return best


def _index_of_infer(ts: list[Type], ps: dict) -> Type:
    t = ts[0]
    elem = t.elem if isinstance(t, ListT) else None
    if isinstance(elem, Num) and not elem.shape or (isinstance(t, Num) and t.ndim == 1):
        return INT
    raise ShapeError(f"max()/min() of {t}: Python compares its items, which must be numbers",
                     "np.max(x) / np.min(x) of an array; max(a, b) of numbers")


def _round_infer(ts: list[Type], ps: dict) -> Type:
    x = num(ts[0])
    if x.shape:
        raise ShapeError(f"round() of an array of shape {x.shape}: arrays have no __round__", "np.round(x, decimals)")
    if ps.get("ndigits") is None:
        return Num((), "int64", py=True)
    return x


def _round(x: Any, ndigits: int | None = None) -> Any:
    return builtins.round(x) if ndigits is None else builtins.round(x, ndigits)


def _emit_round(a: list[Expr], ps: dict) -> Expr:
    return px.call("round", a + ([px.literal(ps["ndigits"])] if ps.get("ndigits") is not None else []))


# --------------------------------------------------------------------------- effects: print, raise, assert
#
# A layout is a tree of tuples: ("arg", i) the i-th argument; ("str", s) a string;
# ("seq", "tuple" | "list", items); ("dict", keys, items); ("fstr", parts) an f-string, each part
# ("text", s) or ("field", layout, conversion or None, format spec or None);
# ("cat", items) strings written side by side.


def value_of(layout: tuple, args: tuple) -> Any:
    """The Python value a layout stands for, given its arguments' values."""
    kind = layout[0]
    if kind == "arg":
        return args[layout[1]]
    if kind == "str":
        return layout[1]
    if kind == "seq":
        items = [value_of(i, args) for i in layout[2]]
        return tuple(items) if layout[1] == "tuple" else items
    if kind == "cat":
        return "".join(value_of(i, args) for i in layout[1])
    if kind == "dict":
        return {k: value_of(i, args) for k, i in zip(layout[1], layout[2])}
    out = []
    for part in layout[1]:
        if part[0] == "text":
            out.append(part[1])
            continue
        v = value_of(part[1], args)
        v = {"r": repr, "s": str, "a": ascii}[part[2]](v) if part[2] else v
        out.append(format(v, part[3] or ""))
    return "".join(out)


def _escape(text: str, braces: bool) -> str:
    out = []
    for ch in text:
        if ch in "\\\"":
            out.append("\\" + ch)
        elif braces and ch in "{}":
            out.append(ch * 2)
        elif ch.isprintable():
            out.append(ch)
        else:
            out.append(ch.encode("unicode_escape").decode("ascii"))
    return "".join(out)


def expr_of(layout: tuple, args: list[Expr]) -> Expr:
    """The Python expression a layout is printed as."""
    kind = layout[0]
    if kind == "arg":
        return args[layout[1]]
    if kind == "str":
        return cst.SimpleString('"' + _escape(layout[1], False) + '"')
    if kind == "seq":
        items = [expr_of(i, args) for i in layout[2]]
        return px.tuple_(items) if layout[1] == "tuple" else cst.List([cst.Element(e) for e in items])
    if kind == "dict":
        return cst.Dict([cst.DictElement(expr_of(("str", k) if isinstance(k, str) else ("int", k), []), expr_of(i, args))
                         for k, i in zip(layout[1], layout[2])])
    if kind == "int":
        return px.literal(layout[1])
    if kind == "cat":
        parts = [expr_of(i, args) for i in layout[1]]
        node = parts[0]
        for p in parts[1:]:
            node = cst.ConcatenatedString(node, p)  # type: ignore[arg-type]
        return node
    if any(part[0] == "field" and _has_string(part[1]) for part in layout[1]):
        return _str_format(layout, args)
    parts: list[cst.BaseFormattedStringContent] = []
    for part in layout[1]:
        if part[0] == "text":
            parts.append(cst.FormattedStringText(_escape(part[1], True)))
            continue
        spec = [cst.FormattedStringText(_escape(part[3], True))] if part[3] else None
        parts.append(cst.FormattedStringExpression(expr_of(part[1], args), conversion=part[2], format_spec=spec))
    return cst.FormattedString(parts, start='f"', end='"')


def _has_string(layout: tuple) -> bool:
    """Whether a layout is printed with a string literal in it (a string, an f-string, a dict's key)."""
    if layout[0] in ("str", "cat", "fstr"):
        return True
    if layout[0] == "dict":
        return any(isinstance(k, str) for k in layout[1]) or any(_has_string(i) for i in layout[2])
    return layout[0] == "seq" and any(_has_string(i) for i in layout[2])


def _str_format(layout: tuple, args: list[Expr]) -> Expr:
    """An f-string one of whose fields holds a string, as ``"...{!r:>5}...".format(v, ...)``: before
    Python 3.12 a field cannot hold the f-string's quote or a backslash."""
    text = []
    for part in layout[1]:
        if part[0] == "text":
            text.append(_escape(part[1], True))
        else:
            text.append("{" + (f"!{part[2]}" if part[2] else "") + (f":{_escape(part[3], True)}" if part[3] else "") + "}")
    fields = [expr_of(part[1], args) for part in layout[1] if part[0] == "field"]
    return px.method(cst.SimpleString('"' + "".join(text) + '"'), "format", fields)


def _print(*args: Any, layout: tuple, sep: str | None = None, end: str | None = None, flush: bool = False) -> None:
    builtins.print(*(value_of(i, args) for i in layout), sep=sep, end=end, flush=flush)


def _print_stmts(target: Expr, a: list[Expr], ps: dict) -> list[cst.BaseSmallStatement]:
    kw = {k: expr_of(("str", ps[k]), []) for k in ("sep", "end") if ps.get(k) is not None}
    if ps.get("flush"):
        kw["flush"] = px.literal(True)
    return [cst.Expr(px.call("print", [expr_of(i, a) for i in ps["layout"]], **kw))]


def _raise(*args: Any, exc: str, layout: tuple) -> None:
    raise getattr(builtins, exc)(*(value_of(i, args) for i in layout))


def _raise_stmts(target: Expr, a: list[Expr], ps: dict) -> list[cst.BaseSmallStatement]:
    call = px.call(ps["exc"], [expr_of(i, a) for i in ps["layout"]]) if ps["layout"] else px.name(ps["exc"])
    return [cst.Raise(exc=call)]


def _assert(cond: Any, *args: Any, layout: tuple | None = None) -> None:
    if layout is None:
        assert cond
    else:
        assert cond, value_of(layout, args)


def _assert_stmts(target: Expr, a: list[Expr], ps: dict) -> list[cst.BaseSmallStatement]:
    msg = None if ps.get("layout") is None else expr_of(ps["layout"], a[1:])
    return [cst.Assert(test=a[0], msg=msg)]


#: the error of a Python power that is complex (``(-8.0) ** (1 / 3)``): at transform time where both are known
COMPLEX_POWER = ("`a ** b` of Python numbers with a negative `a` and a non-integer float `b` is a complex number in "
                 "Python, which astad does not differentiate")
COMPLEX_POWER_HINT = ("a real power: `abs(a) ** b`, an integer exponent, or `np.float64(a) ** b` "
                      "(nan for a negative `a`, as numpy)")


@runtime
def complex_power(file: str, line: int, col: int) -> None:
    """Refuse a Python power that gave a complex number (``real_power`` checked it), at the user's line."""
    raise AstadTypeError(COMPLEX_POWER, Loc(file, line, col, linecache.getline(file, line)), COMPLEX_POWER_HINT)


def _real_power(value: Any, *, file: str, line: int, col: int) -> None:
    if type(value) is complex:
        complex_power(file, line, col)


def _real_power_stmts(target: Expr, a: list[Expr], ps: dict) -> list[cst.BaseSmallStatement]:
    """``type(t2) is complex and complex_power("f.py", 3, 12)``: one test where the power is real."""
    test = cst.Comparison(px.call("type", [a[0]]), [cst.ComparisonTarget(cst.Is(), px.name("complex"))])
    refuse = px.call("complex_power", [expr_of(("str", ps["file"]), []), px.literal(ps["line"]), px.literal(ps["col"])])
    return [cst.Expr(cst.BooleanOperation(test, cst.And(), refuse))]


def _keep(*values: Any) -> None:
    """A value nothing reads, computed because computing it may raise, as in Python (:mod:`astad.frontend.unused`)."""


def _keep_stmts(target: Expr, a: list[Expr], ps: dict) -> list[cst.BaseSmallStatement]:
    return [cst.Expr(v) for v in a]


def _effect(name: str, impl: Any, stmts: Any) -> Primitive:
    return Primitive(name, impl, lambda ts, ps: NoneT(), None, stmts=stmts, kind=DISCRETE, effect=True)


register(
    Primitive("convert_float", convert, _convert_infer, _emit_convert, zero_in=(0,), kind=RULE,
              **linear(_convert_transpose)),
    Primitive("convert_discrete", convert, _convert_infer, _emit_convert, kind=DISCRETE),
    Primitive("py_abs", builtins.abs, elementwise(builtins.abs), lambda a, ps: px.call("abs", a), zero_in=(0,), kind=RULE,
              **unary(lambda b, x, out: b.prim("sign", x))),
    Primitive("py_max", builtins.max, _scalars("max"), lambda a, ps: px.call("max", a), kind=RULE, **_extremum("lt")),
    Primitive("py_min", builtins.min, _scalars("min"), lambda a, ps: px.call("min", a), kind=RULE, **_extremum("gt")),
    Primitive("index_of_max", index_of_max, _index_of_infer, lambda a, ps: px.call("index_of_max", a), kind=DISCRETE),
    Primitive("index_of_min", index_of_min, _index_of_infer, lambda a, ps: px.call("index_of_min", a), kind=DISCRETE),
    Primitive("py_round", _round, _round_infer, _emit_round, kind=DISCRETE),
    Primitive("py_round_digits", _round, _round_infer, _emit_round, kind=ZERO),
    _effect("print", _print, _print_stmts),
    _effect("raise", _raise, _raise_stmts),
    _effect("assert", _assert, _assert_stmts),
    _effect("real_power", _real_power, _real_power_stmts),
    _effect("keep", _keep, _keep_stmts),
)

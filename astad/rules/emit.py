"""How entries are printed as Python (libcst expressions): operators, ``np.fn``
calls with their static keywords, runtime helpers."""

from __future__ import annotations

from typing import Any, Callable

import libcst as cst

from .. import pyexpr as px
from .table import Expr


#: the printers that print their operands as pyexpr's helpers do, whatever the parameters: what
#: codegen prints as text (astad.codegen.text_expr): ("binop", "+"), ("call", "np.sin"), ("neg", "")
TEXT_FORMS: dict[Callable, tuple[str, str]] = {}


def binop(op: str) -> Callable[[list[Expr], dict], Expr]:
    emit = lambda a, ps: px.binop(op, a[0], a[1])  # noqa: E731
    TEXT_FORMS[emit] = ("binop", op)
    return emit


def neg(a: list[Expr], ps: dict) -> Expr:
    return px.neg(a[0])


TEXT_FORMS[neg] = ("neg", "")


def compare(op: str) -> Callable[[list[Expr], dict], Expr]:
    return lambda a, ps: px.compare(op, a[0], a[1])


def np_call(fn: str, *static: str) -> Callable[[list[Expr], dict], Expr]:
    """Print as ``np.fn(args..., static_kw=...)``, leaving out defaults."""
    func = f"np.{fn}"
    if not static:  # (most: np.sin, np.exp)
        plain = lambda a, ps: px.call(func, a)  # noqa: E731
        TEXT_FORMS[plain] = ("call", func)
        return plain

    def emit(a: list[Expr], ps: dict) -> Expr:
        kw = {k: px.literal(ps[k]) for k in static if ps.get(k) not in (None, False, 0) or (k == "axis" and ps.get(k) == 0)}
        return px.call(func, a, **kw)

    return emit


def reduction(fn: str) -> Callable[[list[Expr], dict], Expr]:
    def emit(a: list[Expr], ps: dict) -> Expr:
        kw = {}
        if ps.get("axis") is not None:
            kw["axis"] = px.literal(ps["axis"])
        if ps.get("keepdims"):
            kw["keepdims"] = px.literal(True)
        if ps.get("dtype"):
            kw["dtype"] = px.name(f"np.{ps['dtype']}")
        return px.call(f"np.{fn}", a, **kw)

    return emit


def with_k(fn: str) -> Callable[[list[Expr], dict], Expr]:
    """``np.fn(x)`` or ``np.fn(x, k)``."""
    return lambda a, ps: px.call(f"np.{fn}", a + ([px.literal(ps["k"])] if ps.get("k") else []))


def sequence(fn: str) -> Callable[[list[Expr], dict], Expr]:
    """``np.fn([a, b, ...], axis=...)`` of arguments."""

    def emit(a: list[Expr], ps: dict) -> Expr:
        kw = {"axis": px.literal(ps["axis"])} if ps.get("axis", 0) != 0 else {}
        return px.call(f"np.{fn}", [px.list_(a)], **kw)

    return emit


def sequence_value(fn: str) -> Callable[[list[Expr], dict], Expr]:
    """``np.fn(xs, axis=...)`` of a run-time list."""

    def emit(a: list[Expr], ps: dict) -> Expr:
        kw = {"axis": px.literal(ps["axis"])} if ps.get("axis", 0) != 0 else {}
        return px.call(f"np.{fn}", a, **kw)

    return emit


def constructor(fn: str) -> Callable[[list[Expr], dict], Expr]:
    def emit(a: list[Expr], ps: dict) -> Expr:
        kw = {"dtype": px.name(f"np.{ps['dtype']}")} if ps.get("dtype") not in (None, "float64") else {}
        return px.call(f"np.{fn}", [px.tuple_(a)] if fn in ("zeros", "ones") else a, **kw)

    return emit


def like(fn: str) -> Callable[[list[Expr], dict], Expr]:
    def emit(a: list[Expr], ps: dict) -> Expr:
        kw = {"dtype": px.name(f"np.{ps['dtype']}")} if ps.get("dtype") else {}
        return px.call(f"np.{fn}", a, **kw)

    return emit


def runtime(fn: str, *static: str) -> Callable[[list[Expr], dict], Expr]:
    """A call of a runtime helper (``RUNTIME``) with its static keywords."""

    def emit(a: list[Expr], ps: dict) -> Expr:
        return px.call(fn, a, **{k: px.literal(ps.get(k)) for k in static})

    return emit


def list_display(a: list[Expr], ps: dict) -> Expr:
    return px.list_(a)


def assign(target: Expr, value: Expr) -> cst.Assign:
    return cst.Assign(targets=[cst.AssignTarget(target)], value=value)


def literal(v: Any) -> Expr:
    return px.literal(v)

"""Where a generator expression or ``map(...)`` is read: only where Python consumes it at once.

Python evaluates ``(x * i for i in range(3))`` and ``map(f, xs)`` lazily: each
element when it is asked for, with the values its names have *then*, once.
astad lowers either as the list it yields, evaluated where it is written.  The
two agree only where the iterator is consumed, whole, before anything can
change what it reads:

- as the first argument of ``sum``, ``list``, ``tuple``, ``min``, ``max``,
  ``sorted``, ``any`` or ``all`` (``sum(x * i for i in range(3))``);
- as what a comprehension runs over (``[g(v) for v in map(f, xs)]``);
- unpacked by an assignment (``a, b = (f(v) for v in xs)``);
- assigned to a name read once in the whole function, by the next statement,
  which is one such call of it (``ys = map(f, x2)`` then ``w = sum(ys)``, CHAD's
  Fig. 2).

Anywhere else (``g = (x * i ...)`` read after ``x`` is reassigned, consumed
twice, the iterable of a ``for`` statement whose body may reassign what it
reads, an argument of ``np.array``, which makes an array of one generator
object) the lowering refuses it (:func:`check`).
"""

from __future__ import annotations

from typing import Any

import libcst as cst

from ..deep import syntax_children
from .syntax import stmts_of

#: the builtins that consume an iterator at once (by name: see the module docstring)
CONSUMERS = frozenset({"sum", "list", "tuple", "min", "max", "sorted", "any", "all"})


def check(lw: Any, node: cst.CSTNode, what: str) -> None:
    """Refuse ``node`` (a generator expression or a ``map`` call: ``what``) unless Python
    consumes it at once where it is (see the module docstring)."""
    funcdef = lw.scope.parsed.funcdef
    known = lw.__dict__.setdefault("_consumed_at_once", {})  # id of the def -> (def, ids of the nodes)
    found = known.get(id(funcdef))
    if found is None or found[0] is not funcdef:
        found = known[id(funcdef)] = (funcdef, consumed_at_once(funcdef))
    if id(node) not in found[1]:
        raise lw.syntax_error(
            f"{what} is evaluated by Python lazily (when consumed, with the values its names have then, once): "
            "astad reads it only where it is consumed at once (by sum, list, min or max, a comprehension, or "
            "the next statement's sum(g) of `g = ...`)",
            "a list, evaluated where it is written: [f(v) for v in xs] or list(map(f, xs))", node)


def _consumer_arg(value: Any) -> cst.BaseExpression | None:
    """The first argument of ``value`` when it is a call of a consuming builtin (by name)."""
    if (type(value) is cst.Call and type(value.func) is cst.Name and value.func.value in CONSUMERS
            and value.args and not value.args[0].keyword and not value.args[0].star):
        return value.args[0].value
    return None


def consumed_at_once(funcdef: cst.FunctionDef) -> frozenset[int]:
    """The ids of the expressions of ``funcdef`` (nested functions included) in a place where
    Python consumes an iterator at once (see the module docstring)."""
    ok: set[int] = set()
    names: dict[str, int] = {}  # how often each name occurs (a read, an assignment)
    pairs: list[tuple[str, cst.BaseExpression]] = []  # `g = <expression>` consumed by the next statement
    todo: list[cst.CSTNode] = [funcdef]
    while todo:
        n = todo.pop()
        cls = type(n)
        if cls is cst.Name:
            names[n.value] = names.get(n.value, 0) + 1
        elif cls is cst.Call:
            arg = _consumer_arg(n)
            if arg is not None:
                ok.add(id(arg))
        elif cls is cst.CompFor:
            ok.add(id(n.iter))
        elif cls is cst.Assign and all(type(t.target) in (cst.Tuple, cst.List) for t in n.targets):
            ok.add(id(n.value))  # unpacked: consumed at once
        body = getattr(n, "body", None)
        if isinstance(body, cst.BaseSuite):
            stmts = stmts_of(body)
            for first, second in zip(stmts, stmts[1:]):
                found = _assigned_then_consumed(first, second)
                if found is not None:
                    pairs.append(found)
        todo.extend(syntax_children(n))
    for name, value in pairs:
        if names.get(name) == 2:  # assigned here, read there, nowhere else
            ok.add(id(value))
    return frozenset(ok)


def _assigned_then_consumed(first: cst.CSTNode, second: cst.CSTNode) -> tuple[str, cst.BaseExpression] | None:
    """``(g, value)`` where ``first`` is ``g = value`` and ``second`` is one statement whose whole
    value is a consuming call of ``g`` (its other arguments names or numbers)."""
    if type(first) is not cst.SimpleStatementLine or type(second) is not cst.SimpleStatementLine:
        return None
    if len(first.body) != 1 or len(second.body) != 1:
        return None
    assign, use = first.body[0], second.body[0]
    if type(assign) is not cst.Assign or len(assign.targets) != 1 or type(assign.targets[0].target) is not cst.Name:
        return None
    value = getattr(use, "value", None)
    arg = _consumer_arg(value)
    name = assign.targets[0].target.value
    if type(arg) is not cst.Name or arg.value != name:
        return None
    if not all(type(a.value) in (cst.Name, cst.Integer, cst.Float) and not a.star for a in value.args[1:]):
        return None
    return name, assign.value

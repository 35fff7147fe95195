"""Facts about the user's syntax tree (libcst nodes), memoised where they
are asked for often: the names a block mentions or assigns, whether a
statement can leave its block, a block's statements.
"""

from __future__ import annotations

import functools
from typing import Iterator

import libcst as cst

from .. import deep


#: the names in each parsed function, found by the walk that checks its syntax
#: (:func:`astad.frontend.parse.check_subset`): no walk of its own
NAMES: dict[cst.CSTNode, frozenset[str]] = {}


def user_names(node: cst.CSTNode) -> frozenset[str]:
    """The names (``Name`` nodes) in the tree under ``node``."""
    found = NAMES.get(node)
    return found if found is not None else _user_names(node)


@functools.lru_cache(maxsize=4096)  # libcst nodes are immutable and hash by identity
def _user_names(node: cst.CSTNode) -> frozenset[str]:
    return frozenset(n.value for n in deep.walk(node) if type(n) is cst.Name)


def target_names(target: cst.BaseExpression) -> list[cst.BaseExpression]:
    if isinstance(target, (cst.Tuple, cst.List)):
        return [el.value for el in target.elements]
    return [target]


@functools.lru_cache(maxsize=4096)
def assigned_names(node: cst.CSTNode) -> tuple[str, ...]:
    """Names assigned anywhere in a statement block, in order of first assignment."""
    names: dict[str, None] = {}  # in order

    def add(target: cst.BaseExpression) -> None:
        # (`y[i] = v` binds `y` to the updated array; `ys[0][1] = v`: `ys` to the updated list)
        names.update(dict.fromkeys(bound_by(target, items=True)))

    todo = [node]  # parents before children, children in source order (as a libcst visitor goes)
    while todo:
        n = todo.pop()
        cls = type(n)
        if cls in _TARGETED:
            add(n.target)  # type: ignore[attr-defined]
        elif cls is cst.Call and is_append(n):
            add(n.func.value)  # type: ignore[attr-defined]
        elif cls is cst.Call and (_puts_along_axis(n) or adds_at(n) and bool(n.args)
                                  and isinstance(n.args[0].value, cst.Name)):
            add(n.args[0].value)  # np.put_along_axis(y, ...), np.add.at(y, ...) bind `y` to the updated array
        elif cls is cst.FunctionDef:
            add(n.name)
            continue  # its assignments are its own
        elif cls is cst.Lambda or cls is cst.CompFor:
            continue  # a comprehension's variables are its own
        elif cls is _Body:  # a nested loop's body: its names, walked once (its own loop asks for them too)
            for name in assigned_names(n.block):
                names.setdefault(name)
            continue
        kids = deep.syntax_children(n)  # (no target is in whitespace, comments or punctuation)
        if cls is cst.For or cls is cst.While:
            body = n.body  # type: ignore[attr-defined]
            kids = [_Body(c) if c is body else c for c in kids]
        todo.extend(reversed(kids))
    return tuple(names)


class _Body:
    """(assigned_names) the body of a loop nested in the block walked, in its place."""

    __slots__ = ("block",)

    def __init__(self, block: cst.CSTNode) -> None:
        self.block = block


def _puts_along_axis(call: cst.Call) -> bool:
    return (isinstance(call.func, cst.Attribute) and call.func.attr.value == "put_along_axis" and bool(call.args)
            and isinstance(call.args[0].value, cst.Name))


def adds_at(call: cst.Call) -> bool:
    """Whether a call is written ``<...>.add.at(...)`` (``np.add.at``, by its syntax)."""
    f = call.func
    return (isinstance(f, cst.Attribute) and f.attr.value == "at" and isinstance(f.value, cst.Attribute)
            and f.value.attr.value == "add")


def bound_by(target: cst.BaseExpression, items: bool) -> Iterator[str]:
    """The names an assignment to ``target`` binds, in order (unpacking tuples and lists, starred ones
    too); with ``items``, also the variable whose item ``y[i] = v`` updates (astad reads the update
    functionally: it binds ``y`` to the updated value)."""
    if isinstance(target, cst.Name):
        yield target.value
    elif isinstance(target, (cst.Tuple, cst.List)):
        for el in target.elements:
            yield from bound_by(el.value, items)
    elif isinstance(target, cst.StarredElement) or items and isinstance(target, cst.Subscript):
        yield from bound_by(target.value, items)


#: the statements that assign their ``target``
_TARGETED = frozenset({cst.AssignTarget, cst.AugAssign, cst.AnnAssign, cst.For})


@functools.lru_cache(maxsize=1024)
def local_names(fn: cst.FunctionDef | cst.Lambda) -> frozenset[str]:
    """The names Python makes local to a nested ``def`` or ``lambda``: its parameters and the names its own
    statements bind (assignment targets, ``for`` targets, nested ``def`` names), not those of the functions and
    comprehensions inside it, and not ``y`` of ``y[i] = v`` (an item of the enclosing function's ``y``)."""
    ps = fn.params
    found = {p.name.value for p in (*ps.posonly_params, *ps.params, *ps.kwonly_params)}
    found |= {p.name.value for p in (ps.star_arg, ps.star_kwarg) if isinstance(p, cst.Param)}
    if isinstance(fn, cst.Lambda):
        return frozenset(found)

    def add(target: cst.BaseExpression) -> None:
        found.update(bound_by(target, items=False))  # (`y[i] = v` changes the enclosing function's `y`)

    todo: list[cst.CSTNode] = [fn.body]
    while todo:
        n = todo.pop()
        cls = type(n)
        if cls in _TARGETED:
            add(n.target)  # type: ignore[attr-defined]
        elif cls is cst.FunctionDef:
            found.add(n.name.value)  # type: ignore[attr-defined]
            continue
        elif cls is cst.Lambda or cls is cst.CompFor:
            continue
        todo.extend(deep.syntax_children(n))
    return frozenset(found)


def breaks_out(body: cst.CSTNode) -> bool:
    """Whether a loop body has a ``break`` of its own (not of a loop nested in it)."""
    return _loop_exit_found(body, (cst.Break,))


def leaves_loop(stmt: cst.CSTNode) -> bool:
    """Whether a statement has a ``break`` or ``continue`` of the loop around it."""
    return _loop_exit_found(stmt, (cst.Break, cst.Continue))


def can_leave(stmt: cst.CSTNode) -> bool:
    """Whether a statement can leave its block: ``return``, or ``break``/``continue``
    of the enclosing loop."""
    return contains_return(stmt) or _loop_exit_found(stmt, (cst.Break, cst.Continue))


def _loop_exit_found(node: cst.CSTNode, kinds: tuple[type, ...]) -> bool:
    return deep.found_below(node, kinds, (cst.For, cst.While, cst.FunctionDef, cst.BaseExpression),
                            FOUND.setdefault(kinds, {}))


def contains_return(stmt: cst.CSTNode) -> bool:
    """Whether a statement contains a ``return`` (a nested def's `return` is its own)."""
    return deep.found_below(stmt, (cst.Return,), (cst.FunctionDef, cst.BaseExpression),
                            FOUND.setdefault((cst.Return,), {}))


#: what deep.found_below found, per kinds of node looked for (cleared with the parse cache);
#: the kinds are statements, never inside an expression (a lambda's body is
#: one), so the search does not go into expressions
FOUND: dict[tuple[type, ...], dict[cst.CSTNode, bool]] = {}


def stmts_of(suite: cst.BaseSuite) -> list[cst.BaseStatement]:
    """The statements of a block; a one-line block (``if c: return x``) as one line."""
    if isinstance(suite, cst.SimpleStatementSuite):
        return [cst.SimpleStatementLine(body=suite.body)]
    return list(suite.body)


def else_stmts_of(stmt: cst.If) -> list[cst.BaseStatement]:
    if stmt.orelse is None:
        return []
    if isinstance(stmt.orelse, cst.If):  # elif
        return [stmt.orelse]
    return stmts_of(stmt.orelse.body)


def is_append(value: cst.BaseExpression) -> bool:
    return (isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute)
            and value.func.attr.value == "append" and isinstance(value.func.value, cst.Name))

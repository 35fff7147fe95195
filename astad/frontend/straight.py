"""Straight-line code, as Python's parser reads it: a function body of assignments
to names and a final ``return`` of expressions made of names, numbers, operators,
attributes and calls of attributes (``np.sin(x)``, ``x.sum()``).  Such a body's libcst nodes are made only where something
reads them (:class:`astad.deep.LazyNodes`): the lowering reads Python's tree
(:mod:`.fast`), so a long straight-line function is read once, not twice.

:func:`straight_line` says whether a body is such code, and finds on the way
the names and the called names :mod:`.from_ast` would note making its nodes
(every construct here is one :mod:`.from_ast` makes without declining).
"""

from __future__ import annotations

import ast

_NAME, _CONSTANT, _BINOP, _CALL, _ATTRIBUTE, _UNARY = (ast.Name, ast.Constant, ast.BinOp, ast.Call, ast.Attribute,
                                                        ast.UnaryOp)


def straight_line(stmts: list[ast.stmt], names: set[str], called: set[str]) -> bool:
    """Whether ``stmts`` are assignments ``name = e`` (the name where the statement starts: no
    parentheses) and a last ``return e``, a docstring first or not; if so, the values of the names of their nodes (an
    attribute's name and an argument's keyword too) added to ``names``, and the names called
    (``f(...)``: none, only attributes are called here) to ``called``.  (An explicit stack: an expression may be nested deeply.)"""
    last = len(stmts) - 1
    todo: list[ast.expr] = []
    for i, st in enumerate(stmts):
        cls = type(st)
        if i == 0 and i < last and is_docstring(st):
            continue
        if cls is ast.Assign and i < last:
            if len(st.targets) != 1:
                return False
            t = st.targets[0]
            if type(t) is not _NAME or not _target_at_start(st):
                return False
            names.add(t.id)
        elif cls is not ast.Return or i != last or st.value is None:
            return False
        todo.append(st.value)  # type: ignore[arg-type]
    return _expressions(todo, names, called)


def targets_where_statements_start(stmts: list[ast.stmt]) -> bool:
    """Whether the target of each assignment of ``stmts`` is where its statement starts (no parentheses),
    as :func:`straight_line` asks."""
    for st in stmts:  # (_target_at_start's test, inline: one statement after another, no call each)
        if type(st) is ast.Assign:
            t = st.targets[0]
            if t.col_offset != st.col_offset or t.lineno != st.lineno:
                return False
    return True


def _target_at_start(st: ast.Assign) -> bool:
    """Whether the (first) target of ``st`` starts where ``st`` does (no parentheses around it)."""
    t = st.targets[0]
    return t.col_offset == st.col_offset and t.lineno == st.lineno


def is_docstring(st: ast.stmt) -> bool:
    """Whether ``st`` is a string alone (a docstring, where it is first: nothing to lower)."""
    return type(st) is ast.Expr and type(st.value) is _CONSTANT and type(st.value.value) is str  # type: ignore[attr-defined]


def _expressions(todo: list[ast.expr], names: set[str], called: set[str]) -> bool:
    add = names.add
    while todo:
        n = todo.pop()
        cls = type(n)
        if cls is _NAME:
            add(n.id)  # type: ignore[attr-defined]
        elif cls is _BINOP:
            todo.append(n.left)  # type: ignore[attr-defined]
            todo.append(n.right)  # type: ignore[attr-defined]
        elif cls is _CONSTANT:
            kind = type(n.value)  # type: ignore[attr-defined]
            if kind is not float and kind is not int:  # (True, None, strings: not here)
                return False
        elif cls is _CALL:
            f = n.func  # type: ignore[attr-defined]
            if type(f) is not _ATTRIBUTE:  # (`g(x)`, `float(x)`: the user's functions, builtins; not here)
                return False
            todo.append(f)
            todo.extend(n.args)  # type: ignore[attr-defined]  (a starred one: refused below)
            for k in n.keywords:  # type: ignore[attr-defined]
                if k.arg is None:  # (**kwargs)
                    return False
                add(k.arg)
                todo.append(k.value)
        elif cls is _ATTRIBUTE:
            add(n.attr)  # type: ignore[attr-defined]
            todo.append(n.value)  # type: ignore[attr-defined]
        elif cls is _UNARY:
            todo.append(n.operand)  # type: ignore[attr-defined]
        else:
            return False
    return True

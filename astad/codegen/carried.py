"""Loop variables bound to their next values where they are computed (forward mode's loops).

A printed loop body ends with the next values of its carried variables,
``step, x, x_t = step_2, x_2, x_2_t``.  Where a next value is a name ``x_2`` that
one statement of the body binds first, and the loop variable ``x`` is not read
after that statement (nor by the other next values), ``x_2`` is renamed ``x``:
the statement binds ``x`` itself (``x = x - step``) and the pair leaves the final
assignment, as a person writes a loop.  Only names whose lifetimes do not
overlap are merged, so the code computes the same values; each iteration saves
the tuple of the final assignment and its copies.
"""

from __future__ import annotations

import dataclasses
from typing import Sequence

import libcst as cst

from .. import deep


def names_in(node: cst.CSTNode) -> set[str]:
    """The variables ``node`` mentions (an attribute's or a keyword argument's name is none)."""
    found: set[str] = set()
    todo = [node]
    while todo:
        n = todo.pop()
        cls = type(n)
        if cls is cst.Name:
            found.add(n.value)
        elif cls is cst.Attribute or cls is cst.Arg:  # (`x.shape`, `f(axis=0)`: the value only)
            todo.append(n.value)
        else:
            fields = _NAMED.get(cls)
            if fields is None:
                todo += deep.children(n)
                continue
            for f in fields:
                value = getattr(n, f)
                if type(value) is tuple or type(value) is list:
                    todo += value
                elif value is not None:
                    todo.append(value)
    return found


#: the fields that may hold a name, of the classes codegen's statements are mostly made of (the
#: others: whitespace, parentheses, operators, commas, comments); the fields of any other class are all read
_NAMED: dict[type, tuple[str, ...]] = {
    cst.SimpleStatementLine: ("body",), cst.Assign: ("targets", "value"), cst.AssignTarget: ("target",),
    cst.AugAssign: ("target", "value"), cst.Expr: ("value",), cst.Return: ("value",),
    cst.BinaryOperation: ("left", "right"), cst.UnaryOperation: ("expression",), cst.Call: ("func", "args"),
    cst.Subscript: ("value", "slice"), cst.SubscriptElement: ("slice",), cst.Index: ("value",),
    cst.Slice: ("lower", "upper", "step"), cst.Tuple: ("elements",), cst.List: ("elements",),
    cst.Element: ("value",), cst.Comparison: ("left", "comparisons"), cst.ComparisonTarget: ("comparator",),
    cst.Integer: (), cst.Float: (), cst.SimpleString: (),
}


def renaming(node: cst.CSTNode, renames: dict[str, str]) -> cst.CSTNode:
    """``node`` with the variables ``renames`` names renamed (not an attribute's or a keyword
    argument's name); the nodes holding none of them are ``node``'s own."""
    cls = type(node)
    if cls is cst.Name:
        new = renames.get(node.value)  # type: ignore[attr-defined]
        return node if new is None else node.with_changes(value=new)
    if cls is cst.Attribute or cls is cst.Arg:
        value = renaming(node.value, renames)  # type: ignore[attr-defined]
        return node if value is node.value else node.with_changes(value=value)  # type: ignore[attr-defined]
    changes: dict[str, object] = {}
    fields = _NAMED.get(cls)
    if fields is None:
        fields = _FIELDS.get(cls)
        if fields is None:
            fields = _FIELDS[cls] = tuple(f.name for f in dataclasses.fields(cls))
    for f in fields:
        value = getattr(node, f)
        if type(value) is tuple or type(value) is list:
            if value and deep.is_node(value[0]):
                items = [renaming(item, renames) for item in value]
                if any(new is not old for new, old in zip(items, value)):
                    changes[f] = items
        elif deep.is_node(value):
            new = renaming(value, renames)
            if new is not value:
                changes[f] = new
    return node.with_changes(**changes) if changes else node


_FIELDS: dict[type, tuple[str, ...]] = {}  # a node class's fields


def _bound_names(node: cst.CSTNode) -> set[str]:
    """The names ``node`` assigns to (``v = ...``, ``a, v = ...``, anywhere inside it)."""
    found: set[str] = set()
    for n in deep.walk(node):
        if type(n) is cst.AssignTarget:
            found.update(names_in(n.target))
    return found


def _final_pairs(stmt: cst.BaseStatement) -> list[tuple[str, cst.BaseExpression]] | None:
    """``[(x, x_2), ...]`` of a body's last statement ``x, ... = x_2, ...``; None for any other statement."""
    if not isinstance(stmt, cst.SimpleStatementLine) or len(stmt.body) != 1 or not isinstance(stmt.body[0], cst.Assign):
        return None
    assign = stmt.body[0]
    if len(assign.targets) != 1:
        return None
    target, value = assign.targets[0].target, assign.value
    if isinstance(target, cst.Name):
        return [(target.value, value)]
    if not isinstance(target, cst.Tuple) or not isinstance(value, cst.Tuple) or len(target.elements) != len(value.elements):
        return None
    if not all(isinstance(e.value, cst.Name) for e in target.elements):
        return None
    return [(e.value.value, v.value) for e, v in zip(target.elements, value.elements)]  # type: ignore[attr-defined]


def _mergeable(p: str, v: cst.BaseExpression, others: Sequence[cst.BaseExpression],
               statements: Sequence[cst.BaseStatement], mentions: list[set[str]]) -> bool:
    """Whether the next value ``v`` of the loop variable ``p`` may be named ``p`` where it is bound."""
    if not isinstance(v, cst.Name) or v.value == p or any(p in names_in(o) or v.value in names_in(o) for o in others):
        return False
    first = next((j for j, m in enumerate(mentions) if v.value in m), None)
    if first is None or v.value not in _bound_names(statements[first]):
        return False  # not bound in the body: a value from outside the loop, or another loop variable
    simple = isinstance(statements[first], cst.SimpleStatementLine)  # reads `p` before binding `v`: allowed
    return (simple or p not in mentions[first]) and not any(p in m for m in mentions[first + 1:])


def renamed(body: cst.IndentedBlock) -> cst.IndentedBlock:
    """``body`` (a loop's) with each next value it can be bound to its loop variable (see the module docstring)."""
    if not body.body:
        return body
    *statements, last = body.body
    pairs = _final_pairs(last)
    if not pairs:
        return body
    mentions = [names_in(s) for s in statements]
    values = [v for _, v in pairs]
    renames = {v.value: p for k, (p, v) in enumerate(pairs)  # type: ignore[attr-defined]
               if _mergeable(p, v, values[:k] + values[k + 1:], statements, mentions)}
    if not renames:
        return body
    kept = [(p, v) for p, v in pairs if not (isinstance(v, cst.Name) and v.value in renames)]
    lines = _without_self_assignments([renaming(s, renames) for s in statements])
    if kept:
        lines.append(_assignment(last, kept))
    return body.with_changes(body=lines or [cst.SimpleStatementLine(body=[cst.Pass()])])


def _without_self_assignments(lines: list) -> list:
    """``lines`` less the ``x = x`` a renaming made (``items_2 = items`` before an append);
    a dropped line's comment heads the next line."""
    out: list = []
    comment: Sequence = ()
    for line in lines:
        small = line.body[0] if isinstance(line, cst.SimpleStatementLine) and len(line.body) == 1 else None
        if isinstance(small, cst.Assign) and len(small.targets) == 1 and isinstance(small.value, cst.Name) and \
                isinstance(small.targets[0].target, cst.Name) and small.targets[0].target.value == small.value.value:
            comment = comment or line.leading_lines
            continue
        if comment and not line.leading_lines:
            line = line.with_changes(leading_lines=comment)
        comment = ()
        out.append(line)
    return out


def _assignment(last: cst.BaseStatement, pairs: list[tuple[str, cst.BaseExpression]]) -> cst.SimpleStatementLine:
    if len(pairs) == 1:
        lhs: cst.BaseExpression = cst.Name(pairs[0][0])
        value = pairs[0][1]
    else:
        lhs = cst.Tuple([cst.Element(cst.Name(p)) for p, _ in pairs], lpar=[], rpar=[])
        value = cst.Tuple([cst.Element(v) for _, v in pairs], lpar=[], rpar=[])
    assert isinstance(last, cst.SimpleStatementLine)
    return last.with_changes(body=[cst.Assign([cst.AssignTarget(lhs)], value)])

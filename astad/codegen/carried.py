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

from typing import Sequence

import libcst as cst


class _Names(cst.CSTVisitor):
    """The variables a statement mentions (an attribute's or a keyword argument's name is none)."""

    def __init__(self) -> None:
        self.found: set[str] = set()

    def visit_Name(self, node: cst.Name) -> None:
        self.found.add(node.value)

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        node.value.visit(self)
        return False

    def visit_Arg(self, node: cst.Arg) -> bool:
        node.value.visit(self)
        return False


class _Rename(cst.CSTTransformer):
    def __init__(self, renames: dict[str, str]) -> None:
        self.renames = renames

    def leave_Name(self, original: cst.Name, updated: cst.Name) -> cst.Name:
        new = self.renames.get(updated.value)
        return updated if new is None else updated.with_changes(value=new)

    def leave_Attribute(self, original: cst.Attribute, updated: cst.Attribute) -> cst.Attribute:
        return updated.with_changes(attr=original.attr)

    def leave_Arg(self, original: cst.Arg, updated: cst.Arg) -> cst.Arg:
        return updated.with_changes(keyword=original.keyword)


def names_in(node: cst.CSTNode) -> set[str]:
    visitor = _Names()
    node.visit(visitor)
    return visitor.found


def _bound_names(node: cst.CSTNode) -> set[str]:
    """The names ``node`` assigns to (``v = ...``, ``a, v = ...``, anywhere inside it)."""
    found: set[str] = set()

    class Targets(cst.CSTVisitor):
        def visit_AssignTarget(self, target: cst.AssignTarget) -> None:
            found.update(names_in(target.target))

    node.visit(Targets())
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
    rename = _Rename(renames)
    kept = [(p, v) for p, v in pairs if not (isinstance(v, cst.Name) and v.value in renames)]
    lines = _without_self_assignments([s.visit(rename) for s in statements])  # type: ignore[misc]
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

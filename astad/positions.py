"""Where each node of a parsed function is in its source.

libcst's ``PositionProvider`` prints the tree to find positions and recurses a
few frames per level: on a fresh thread it reaches about 130 calls nested in
calls.  Python's own parser reaches further (up to its limit of 200 nested
parentheses) and its tree is walked here with an explicit stack, so a deeper
function still gets positions, statement by statement: every node has the
position of the statement it is in (libcst and Python list the statements of
a function in the same order).
"""

from __future__ import annotations

import ast
from typing import Any

import libcst as cst
from libcst.metadata import CodePosition, CodeRange, MetadataWrapper, PositionProvider
from libcst.metadata.position_provider import PositionProvidingCodegenState

from . import deep

_STATEMENTS = (cst.BaseSmallStatement, cst.BaseCompoundStatement)


def resolve(module: cst.Module, source: str) -> Any:
    """The position of every node of ``module`` (parsed from ``source``): libcst's
    where it reaches, else those of the statements (None: neither reaches)."""
    try:
        return deep.fresh(_by_codegen, module)
    except RecursionError:
        return deep.fresh(by_statement, module, source)


class _State(PositionProvidingCodegenState):
    """libcst's state for positions, which splits every token at line breaks: a
    token without one (nearly all) only moves the column."""

    def _update_position(self, value: str) -> None:
        if "\n" in value or "\r" in value:
            PositionProvidingCodegenState._update_position(self, value)
        else:
            self.column += len(value)


def _by_codegen(module: cst.Module) -> Any:
    """libcst's ``PositionProvider``, run as ``MetadataWrapper.resolve`` runs it
    but without the visit of the whole tree that the wrapper makes for batched
    providers (there are none here): a third of the time.  Through the wrapper
    when libcst's internals are not as expected."""
    try:
        provider = PositionProvider()
        provider._computed = {}
        module._codegen(_State(default_indent=module.default_indent, default_newline=module.default_newline,
                               provider=provider))
        return provider._computed
    except (AttributeError, TypeError):
        return MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)


def by_statement(module: cst.Module, source: str) -> dict[cst.CSTNode, CodeRange] | None:
    """Each node at the position of the statement it is in (Python's parser)."""
    try:
        tree = deep.parse_ast(source)
    except (SyntaxError, RecursionError, MemoryError):
        return None
    ranges = [CodeRange(CodePosition(s.lineno, s.col_offset), CodePosition(s.end_lineno or s.lineno, s.end_col_offset or 0))
              for s in _preorder(tree) if isinstance(s, ast.stmt)]
    nodes = [n for n in deep.walk(module) if isinstance(n, _STATEMENTS)]
    if len(nodes) != len(ranges):
        return None
    at = dict(zip(nodes, ranges))
    first = ranges[0] if ranges else CodeRange(CodePosition(1, 0), CodePosition(1, 0))
    positions: dict[cst.CSTNode, CodeRange] = {}
    todo: list[tuple[cst.CSTNode, CodeRange]] = [(module, first)]
    while todo:
        node, where = todo.pop()
        if isinstance(node, (cst.SimpleStatementLine, cst.SimpleStatementSuite)) and node.body:
            where = at.get(node.body[0], where)
        where = at.get(node, where)
        positions[node] = where
        todo.extend((c, where) for c in deep.children(node))
    return positions


def _preorder(tree: ast.AST) -> list[ast.AST]:
    out, todo = [], [tree]
    while todo:
        node = todo.pop()
        out.append(node)
        todo.extend(reversed(list(ast.iter_child_nodes(node))))
    return out

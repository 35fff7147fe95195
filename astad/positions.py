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
from typing import Any, Iterator

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


class Positions(dict):
    """Each node's position as libcst's ``PositionProvider`` gives it, kept as
    ``(line, column, end line, end column)`` and made a ``CodeRange`` when read
    (a few nodes are asked about; every node of the tree has one)."""

    def __getitem__(self, node: cst.CSTNode) -> CodeRange:
        a, b, c, d = dict.__getitem__(self, node)
        return CodeRange(CodePosition(a, b), CodePosition(c, d))

    def get(self, node: cst.CSTNode, default: Any = None) -> Any:
        return self[node] if node in self else default

    # (a mapping to CodeRanges however it is read: dict(positions) copies through these too)
    def __iter__(self) -> Iterator[cst.CSTNode]:
        return iter(self.keys())

    def values(self) -> Any:
        return [self[node] for node in self.keys()]

    def items(self) -> Any:
        return [(node, self[node]) for node in self.keys()]


class Starts(dict):
    """Where each node of a function read with Python's parser starts, as libcst's
    ``PositionProvider`` would have it: ``(line, column)`` (:mod:`astad.frontend.from_ast`;
    the frontend reads only where nodes start), by the node's ``id``: libcst's ``__hash__``
    is a Python function (a frame per look-up, some 16 thousand in the reading of a 500-line
    function), and every node keyed is one of the tree read, alive while it is.

    ``kept``: where the function's block is read when first asked for (:class:`astad.deep.LazyNodes`),
    Python's tree of its statements, whose nodes the lowering reads and keys here too, and the libcst
    leaves it made for them by the id of theirs (:meth:`astad.frontend.fast.Fast.ast_leaf`): alive
    while these starts are."""

    kept: tuple = ()  # (set where there is a block read lazily: an instance's own)


def has_start(positions: Any, node: cst.CSTNode) -> bool:
    """Whether ``positions`` (``resolve``'s, or :class:`Starts`) has ``node``."""
    return (id(node) if type(positions) is Starts else node) in positions


def start_of(positions: Any, node: cst.CSTNode) -> tuple[int, int]:
    """Where ``node`` starts in ``positions`` (``resolve``'s, or :class:`Starts`): line (1-based), column (0-based)."""
    if type(positions) is Starts:
        return dict.__getitem__(positions, id(node))
    if type(positions) is Positions:
        found = dict.__getitem__(positions, node)
        return found[0], found[1]
    start = positions[node].start
    return start.line, start.column


class _State(PositionProvidingCodegenState):
    """libcst's state for positions, as libcst computes them (the same numbers),
    cheaper: every token is split at line breaks there (a token without one,
    nearly all, only moves the column); positions are tuples here, not
    dataclasses; the syntactic position of a node is recorded by a small
    context manager, not a generator's."""

    def _update_position(self, value: str) -> None:
        if "\n" in value or "\r" in value:
            PositionProvidingCodegenState._update_position(self, value)
        else:
            self.column += len(value)

    def before_codegen(self, node: cst.CSTNode) -> None:
        self._stack.append((self.line, self.column))

    def after_codegen(self, node: cst.CSTNode) -> None:
        start = self._stack.pop()  # (popped whatever happens: the stack stays balanced)
        computed = self.provider._computed
        if node not in computed:  # a syntactic position recorded already stays
            computed[node] = (start[0], start[1], self.line, self.column)

    def record_syntactic_position(self, node: cst.CSTNode, *, start_node: cst.CSTNode | None = None,
                                  end_node: cst.CSTNode | None = None) -> "_Syntactic":
        return _Syntactic(self, node, start_node, end_node)


class _Syntactic:
    """libcst's ``record_syntactic_position``: the node's position is where its
    printing starts and ends, or those of ``start_node`` and ``end_node``."""

    __slots__ = ("state", "node", "start_node", "end_node", "line", "column")

    def __init__(self, state: _State, node: cst.CSTNode, start_node: cst.CSTNode | None,
                 end_node: cst.CSTNode | None) -> None:
        self.state, self.node, self.start_node, self.end_node = state, node, start_node, end_node

    def __enter__(self) -> None:
        self.line, self.column = self.state.line, self.state.column

    def __exit__(self, *exc: Any) -> None:
        state = self.state
        computed = state.provider._computed
        start = computed[self.start_node][:2] if self.start_node is not None else (self.line, self.column)
        end = computed[self.end_node][2:] if self.end_node is not None else (state.line, state.column)
        computed[self.node] = start + end


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
        return Positions(provider._computed)
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

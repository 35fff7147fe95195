"""A function's source read with Python's parser (``ast``), made directly the
libcst nodes the frontend reads, with where each starts: what libcst's parser
and ``PositionProvider`` would give (the same nodes, whitespace and comments
left at their defaults; the same starts), for a fraction of their time.

Any construct not known here raises :class:`Decline`: libcst's parser then
reads the function, as before (and :func:`.parse.check_subset` says precisely
what it does not support).  On the way it notes what the check of the syntax
would walk the tree for (:class:`Found`): that check then looks at the
signature alone.  ``tests/test_from_ast.py`` checks both readings give the
same trees and starts, and both checks the same answers.
"""

from __future__ import annotations

import ast
import functools
import re
import unicodedata
from typing import Any, NamedTuple

import libcst as cst

from .. import deep
from ..deep import LazyNodes
from ..positions import Starts
from ..source import odd_breaks
from .from_ast_expr import Decline, Expressions, Pos, Text, new
from .straight import is_docstring, straight_line, targets_where_statements_start

__all__ = ["Decline", "Found", "read"]



class Found(NamedTuple):
    """What the reading met on the way, which the check of the syntax would walk the tree for
    (:func:`.parse.check_subset`): the values of its ``Name`` nodes, the names it calls
    (``f(...)``), how many ``def`` it holds (itself included), and the ``def`` inside it, each
    before those inside it (the order the walk of the check meets them)."""

    names: frozenset[str]
    called: frozenset[str]
    defs: int
    nested: tuple[cst.FunctionDef, ...] = ()


def read(source: str, name: str, tree: ast.FunctionDef | None = None,
         shift: int = 0, lazy: bool = False, names: set[str] | None = None) -> tuple[cst.FunctionDef, Starts, Found]:
    """The ``def`` of ``name`` first in ``source``, where each of its nodes starts,
    and what the reading found in it.  Raises :class:`Decline` (or SyntaxError,
    RecursionError) where libcst's parser should read it.  ``tree``: that ``def``'s
    tree, Python's parser's reading of ``source`` but for its line numbers, ``shift``
    more (its module's, :func:`astad.source.module_def`), read without parsing ``source``
    again; the starts are then on the module's lines (``source`` ``shift`` lines down).
    ``lazy``: the nodes of the function's statements made only when first read, where they are
    straight-line code (:mod:`.straight`: the lowering reads Python's tree of them, :mod:`.fast`).
    ``names``: the names the body of ``tree`` mentions, where :func:`astad.straight_code.names_if_matches`
    found them (its body is then straight-line code, but perhaps for a target in parentheses)."""
    if odd_breaks(source):  # (line breaks other than "\n", form feeds: Python and libcst count lines differently)
        raise Decline("line breaks")
    if not source.isascii() and not unicodedata.is_normalized("NFKC", source):
        raise Decline("NFKC")  # Python's parser normalises names (`ﬁ` is `fi`): check_subset says which
    if tree is None:
        module = deep.parse_ast(source)
        fn = next((s for s in module.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))), None)
        shift = 0
    else:
        fn = tree
    if type(fn) is not ast.FunctionDef or fn.name != name:
        raise Decline("no def")
    straight = _straight_body(fn, source, names if tree is not None else None) if lazy else None
    try:
        reader = _Reader(source, shift) if straight is None else _lazy_reader(source, shift, straight)
        made = reader.s_FunctionDef(fn)
    except _NotLazy:
        reader = _Reader(source, shift)
        made = reader.s_FunctionDef(fn)
    return made, reader.starts, Found(frozenset(reader.names), frozenset(reader.called), reader.defs,
                                      tuple(reader.nested))


class _NotLazy(Exception):
    """Straight-line statements in a block on the line of the ``def``'s ``:``: made as they are read."""


def _lazy_reader(source: str, shift: int, straight: tuple[list[ast.stmt], set[str], set[str]]) -> _Reader:
    """The reader of a function whose statements are made when first read: of its text but for the
    lines after its first statement's (the reading of the ``def``'s own lines needs no more)."""
    stmts = straight[0]
    first = stmts[1 if is_docstring(stmts[0]) else 0].lineno - shift  # (a docstring is read: the lines to its end)
    reader = _Reader("\n".join(source.split("\n", first)[:first]), shift)
    reader.source = source
    reader.lazy = straight
    return reader


def _straight_body(fn: ast.FunctionDef, source: str, known: set[str] | None = None
                   ) -> tuple[list[ast.stmt], set[str], set[str]] | None:
    """``fn``'s statements, and the names and called names in them, where they are straight-line code
    (:mod:`.straight`) in a text of ASCII characters (columns in bytes are columns in characters).
    ``known``: the names its statements mention, where they were found straight-line code but perhaps for
    their targets' places (:func:`astad.straight_code.names_if_matches`: no walk of them again)."""
    names: set[str] = set()
    called: set[str] = set()  # (straight-line code calls attributes alone: no name)
    if not source.isascii():
        return None
    if known is not None and targets_where_statements_start(fn.body):
        return fn.body, known, called
    if not straight_line(fn.body, names, called):
        return None
    return fn.body, names, called



def lazy_block(fd: cst.FunctionDef) -> LazyNodes | None:
    """The statements of ``fd``'s block where they are straight-line code not made yet (read with
    ``lazy``: :class:`astad.deep.LazyNodes`), else None."""
    block = fd.body
    body = block.body if type(block) is cst.IndentedBlock else None
    return body if type(body) is LazyNodes and not body.is_made() else None

#: what a line on which a simple statement ends holds where the next one may be on its logical line
_MAY_JOIN = re.compile(r"[;\\]")
_SIMPLE = frozenset({ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Expr, ast.Return, ast.Pass, ast.Break,
                     ast.Continue, ast.Raise, ast.Assert})
_AUGMENTED = {ast.Add: new.AddAssign, ast.Sub: new.SubtractAssign, ast.Mult: new.MultiplyAssign,
              ast.Div: new.DivideAssign, ast.FloorDiv: new.FloorDivideAssign, ast.Mod: new.ModuloAssign,
              ast.Pow: new.PowerAssign, ast.MatMult: new.MatrixMultiplyAssign, ast.LShift: new.LeftShiftAssign,
              ast.RShift: new.RightShiftAssign, ast.BitOr: new.BitOrAssign, ast.BitXor: new.BitXorAssign,
              ast.BitAnd: new.BitAndAssign}


class _Reader(Expressions):
    """Statements (expressions: :class:`Expressions`)."""

    def __init__(self, source: str, shift: int = 0) -> None:
        self.source, self.shift = source, shift
        self.text = Text(source, shift)
        self.joins = ";" in source or "\\" in source  # (else no simple statement shares its line with the next)
        self.starts = Starts()
        self.names: set[str] = set()
        self.called: set[str] = set()
        self.defs = 0
        self.nested: list[Any] = []  # the defs inside the function, each before those inside it
        #: the function's statements, made when first read, and the names and called names in them, where
        #: they are straight-line code (:func:`_straight_body`)
        self.lazy: tuple[list[ast.stmt], set[str], set[str]] | None = None

    def statements(self, stmts: list[ast.stmt]) -> list[cst.BaseStatement]:
        """The statements of a block; simple ones on one line (``a = 1; b = 2``) as one line.  Read
        through :func:`astad.deep.call`, as the lowering reads a block: a block in a block in ... goes
        on with a fresh stack, and its statements' expressions need no look at the stack of their own
        (:meth:`.Expressions.expr`: one a block, not one a statement)."""
        return deep.call(self._statements, stmts)

    def _statements(self, stmts: list[ast.stmt]) -> list[cst.BaseStatement]:
        out: list[cst.BaseStatement] = []
        line: list[Any] = []
        text, starts, joins = self.text, self.starts, self.joins
        last = len(stmts) - 1
        for i, st in enumerate(stmts):
            cls = type(st)
            make = _STATEMENTS.get(cls)
            if make is None:
                raise Decline(cls.__name__)
            if cls not in _SIMPLE:
                out.append(make(self, st))
                continue
            line.append(make(self, st))
            if joins and i < last and type(stmts[i + 1]) in _SIMPLE and _MAY_JOIN.search(text.lines[st.end_lineno - 1]):
                end = text.end(st)
                if text.lines[end[0] - 1][end[1]:].lstrip(" \t\f").startswith((";", "\\")):
                    semi = text.next(end)
                    if text.char(semi) == ";" and text.one_line_after(semi, text.start(stmts[i + 1])):
                        continue
            made = _simple_line(tuple(line))
            starts[id(made)] = starts[id(line[0])]
            out.append(made)
            line = []
        return out

    def suite(self, stmts: list[ast.stmt]) -> cst.BaseSuite:
        """A compound statement's block: indented, or on the line of its ``:``."""
        colon = self.text.prev(self.text.start(stmts[0]))
        if self.text.char(colon) != ":":
            raise Decline("block")
        body = self.statements(stmts)
        if self.text.one_line_after(colon, self.text.start(stmts[0])):
            if len(body) != 1 or type(body[0]) is not cst.SimpleStatementLine:
                raise Decline("block")
            small = body[0].body  # type: ignore[attr-defined]
            made: Any = new.SimpleStatementSuite(small)
            self.starts[id(made)] = self.starts[id(small[0])]
            del self.starts[id(body[0])]  # (the line is not in the tree: every node keyed by its id is, alive)
            return made
        made = new.IndentedBlock(tuple(body))
        self.starts[id(made)] = self.starts[id(body[0])]
        return made

    def lazy_suite(self, stmts: list[ast.stmt]) -> cst.IndentedBlock | None:
        """The function's block, its statements made when first read (:class:`astad.deep.LazyNodes`),
        where they are straight-line code (``self.lazy``) in an indented block; else None."""
        text = self.text
        first = text.start(stmts[0])
        if text.char(text.prev(first)) != ":" or text.one_line_after(text.prev(first), first):
            raise _NotLazy  # (a block on the line of its `:`, or what suite() declines: read by suite())
        if is_docstring(stmts[0]):  # (one libcst's parser should read declines the reading now, not when made)
            starts, self.starts = self.starts, Starts()
            try:
                self.s_Expr(stmts[0])  # type: ignore[arg-type]
            finally:
                self.starts = starts
        self.names |= self.lazy[1]
        self.called |= self.lazy[2]
        source, shift = self.source, self.shift
        body = LazyNodes(functools.partial(_statements_of, source, shift, self.starts, stmts),
                         (stmts, [""] * shift + source.split("\n")))
        made = new.IndentedBlock(body)
        # (the block is not given the statements once made: it and its LazyNodes would hold each other, a
        # cycle keeping the trees of Python and libcst alive until a full collection)
        self.starts[id(made)] = first
        self.starts.kept = (stmts, {})
        return made  # type: ignore[no-any-return]

    def small(self, made: Any, at: Pos) -> Any:
        self.starts[id(made)] = at
        return made

    def s_FunctionDef(self, n: ast.FunctionDef) -> cst.FunctionDef:
        slot = len(self.nested) if self.defs else None  # (a def inside: its place among them, made below)
        if slot is not None:
            self.nested.append(None)
        self.defs += 1
        text = self.text
        decorators = []
        for d in n.decorator_list:
            value, at, _ = self.expr(d)
            sign = text.prev(at)
            if text.char(sign) != "@":
                raise Decline("decorator")
            decorators.append(self.small(new.Decorator(value), sign))
        s = text.start(n)
        if not text.lines[s[0] - 1].startswith("def", s[1]):
            raise Decline("def")
        name_at = text.next((s[0], s[1] + 3))
        name = self.name(n.name, name_at)
        paren = text.next((name_at[0], name_at[1] + len(n.name)))
        if text.char(paren) != "(":
            raise Decline("def")
        params = self.parameters(n.args, text.next((paren[0], paren[1] + 1)))
        returns = None if n.returns is None else self.annotation(n.returns)
        body = self.lazy_suite(n.body) if slot is None and self.lazy is not None else None
        made = new.FunctionDef(name, params, body or self.suite(n.body), tuple(decorators), returns)
        self.starts[id(made)] = s
        if slot is not None:
            self.nested[slot] = made
        return made

    def s_If(self, n: ast.If) -> cst.If:
        test, _, _ = self.expr(n.test)
        body = self.suite(n.body)
        orelse: Any = None
        if n.orelse:
            at = self.text.next(self.text.end(n.body[-1]))
            while self.text.char(at) == ";":
                at = self.text.next((at[0], at[1] + 1))
            line = self.text.lines[at[0] - 1]
            if line.startswith("elif", at[1]) and len(n.orelse) == 1 and type(n.orelse[0]) is ast.If:
                orelse = self.s_If(n.orelse[0])
            elif line.startswith("else", at[1]):
                orelse = self.small(new.Else(self.suite(n.orelse)), at)
            else:
                raise Decline("else")
        return self.small(new.If(test, body, orelse), self.text.start(n))

    def s_For(self, n: ast.For) -> cst.For:
        if n.orelse:
            raise Decline("for else")  # (refused: check_subset says where)
        target, _, _ = self.expr(n.target)
        it, _, _ = self.expr(n.iter)
        return self.small(new.For(target, it, self.suite(n.body)), self.text.start(n))

    def s_While(self, n: ast.While) -> cst.While:
        if n.orelse:
            raise Decline("while else")
        test, _, _ = self.expr(n.test)
        return self.small(new.While(test, self.suite(n.body)), self.text.start(n))

    def s_Assign(self, n: ast.Assign) -> cst.Assign:
        targets, first, starts = [], None, self.starts
        for t in n.targets:
            target, at, _ = self.expr(t)
            made = _assign_target(target)
            starts[id(made)] = at
            targets.append(made)
            first = first or at
        value, _, _ = self.expr(n.value)
        made = _assign(tuple(targets), value)
        starts[id(made)] = first
        return made  # type: ignore[no-any-return]

    def s_AugAssign(self, n: ast.AugAssign) -> cst.AugAssign:
        target, at, _ = self.expr(n.target)
        value, _, _ = self.expr(n.value)
        return self.small(new.AugAssign(target, _AUGMENTED[type(n.op)](), value), at)

    def s_AnnAssign(self, n: ast.AnnAssign) -> cst.AnnAssign:
        target, at, _ = self.expr(n.target)
        annotation = self.annotation(n.annotation)
        value = None if n.value is None else self.expr(n.value)[0]
        return self.small(new.AnnAssign(target, annotation, value), at)

    def s_Expr(self, n: ast.Expr) -> cst.Expr:
        value, at, _ = self.expr(n.value)
        return self.small(new.Expr(value), at)

    def s_Return(self, n: ast.Return) -> cst.Return:
        value = None if n.value is None else self.expr(n.value)[0]
        return self.small(new.Return(value), self.text.start(n))

    def s_Pass(self, n: ast.Pass) -> cst.Pass:
        return self.small(new.Pass(), self.text.start(n))

    def s_Break(self, n: ast.Break) -> cst.Break:
        return self.small(new.Break(), self.text.start(n))

    def s_Continue(self, n: ast.Continue) -> cst.Continue:
        return self.small(new.Continue(), self.text.start(n))

    def s_Raise(self, n: ast.Raise) -> cst.Raise:
        if n.cause is not None:
            raise Decline("raise from")
        exc = None if n.exc is None else self.expr(n.exc)[0]
        return self.small(new.Raise(exc), self.text.start(n))

    def s_Assert(self, n: ast.Assert) -> cst.Assert:
        test, _, _ = self.expr(n.test)
        msg = None if n.msg is None else self.expr(n.msg)[0]
        return self.small(new.Assert(test, msg), self.text.start(n))


def _statements_of(source: str, shift: int, starts: Starts, stmts: list[ast.stmt]) -> list[cst.BaseStatement]:
    """The nodes of a block's statements (:meth:`_Reader.lazy_suite`), their starts noted in ``starts``:
    read when asked for (the reading of the function kept only its text and Python's tree)."""
    reader = _Reader(source, shift)
    reader.starts = starts
    return reader.statements(stmts)


#: the maker of each statement's node (``_Reader.s_<its class's name>``)
_STATEMENTS = {getattr(ast, name[2:]): make for name, make in vars(_Reader).items() if name.startswith("s_")}
_simple_line, _assign_target, _assign = new.SimpleStatementLine, new.AssignTarget, new.Assign

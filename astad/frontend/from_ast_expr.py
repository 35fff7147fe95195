"""Expressions of a function read with Python's parser (``ast``), made the
libcst nodes the frontend reads, each with where libcst's ``PositionProvider``
starts it (line 1-based, column 0-based in characters): see :mod:`.from_ast`.

Python's tree keeps no parentheses, commas or keywords: the few libcst
positions that are theirs (a parenthesised expression's parentheses, a
comparison's operator, a comprehension's ``for``) are found by looking at the
characters next to what Python's tree gives (:class:`Text`).
"""

from __future__ import annotations

import ast
import dataclasses
import io
import operator
import re
import tokenize
from itertools import repeat
from typing import Any

import libcst as cst

from .. import deep
from ..pyexpr import maker

Pos = tuple[int, int]


class _Makers:
    """``new.Name(...)``: :func:`astad.pyexpr.maker` of ``cst.Name``, called as ``cst.Name`` is
    (what is made here is what libcst's parser would make: tests/test_from_ast.py)."""

    def __getattr__(self, name: str) -> Any:
        made = maker(getattr(cst, name))
        setattr(self, name, made)
        return made


new: Any = _Makers()


class Decline(Exception):
    """A construct the reading with ``ast`` does not know: libcst's parser reads the function."""


_WS = " \t\f\\"  # (outside strings and comments a backslash only continues a line)
#: what may follow an expression that has parentheses of its own (after blanks; or the line's end):
#: ``)``, a comment, a line continuation (or a tab, a form feed)
_CLOSING = re.compile(r"[)#\\\t\f]")
#: a line's code before its comment: anything but a quote or ``#``, and strings on one line
_CODE = re.compile(r"""(?:[^#'"]|'(?:[^'\\\n]|\\.)*'|"(?:[^"\\\n]|\\.)*")*""")


class Text:
    """The source's lines, and the significant characters next to a position
    (skipping blanks, line continuations, line breaks and comments: a scan
    starts between tokens and stops at the first other character, so it never
    looks into a string)."""

    def __init__(self, source: str, shift: int = 0) -> None:
        lines = source.split("\n")
        #: the lines, from the first of the module ``shift`` lines above ``source`` (those empty here): the
        #: lines of a tree read from the module (:func:`astad.source.module_def`), numbered as its tree's
        self.lines = [""] * shift + lines if shift else lines
        self.ascii = [True] * shift + list(map(str.isascii, lines))  # (map: loops in C)
        self.all_ascii = source.isascii()
        rests = list(map(str.lstrip, lines, repeat(_WS)))
        #: per line, the first significant character of the lines after it ("" none): what follows its end
        #: (and a comment or a line continuation on it: :meth:`_closing` goes on there too)
        after = [""] * len(lines)
        following = ""
        for j in range(len(lines) - 1, -1, -1):
            after[j] = following
            if rests[j] and rests[j][0] != "#":
                following = rests[j][0]
        #: the positions blanks and then :data:`_CLOSING` or the line's end follow, where a ``)`` follows
        #: there or (the line's end, a comment, a continuation) on a line after: where an expression
        #: ending there may have parentheses of its own
        self.closers: set[Pos] = set()
        closers = self.closers
        add = closers.add
        # the characters of _CLOSING but `)` (else no line has them: not looked for; `in`, each a scan in C)
        special = "#" in source or "\\" in source or "\t" in source or "\f" in source
        for i, line in enumerate(lines, shift + 1):
            n = len(line)
            closed = after[i - shift - 1] == ")"
            if closed:
                k = len(line.rstrip(" "))  # the line's end, and the blanks before it
                if k == n:
                    add((i, n))
                else:
                    closers.update([(i, c) for c in range(k, n + 1)])
            c = line.find(")")  # (str.find, not a regular expression: a match's set-up costs more here)
            while c >= 0:
                if c and line[c - 1] == " ":
                    closers.update([(i, b) for b in range(len(line[:c].rstrip(" ")), c + 1)])
                else:
                    add((i, c))
                c = line.find(")", c + 1)
            if special and ("#" in line or "\\" in line or "\t" in line or "\f" in line):
                for m in _CLOSING.finditer(line):
                    c = m.start()
                    if closed or line[c] not in "#\\":
                        closers.update([(i, b) for b in range(len(line[:c].rstrip(" ")), c + 1)])
        #: where the last significant character before may be a ``(`` (:meth:`prev`'s answer): right after
        #: one and the blanks after it, and each line's first significant character (before it: an earlier
        #: line); elsewhere :meth:`opening` finds none
        self.openers: set[Pos] = set()
        openers = self.openers
        openers.update(zip(range(shift + 1, shift + 1 + len(lines)), map(operator.sub, map(len, lines), map(len, rests))))
        for i, line in enumerate(lines, shift + 1):
            c = line.find("(")
            while c >= 0:
                b = c + 1
                openers.add((i, b))
                while b < len(line) and line[b] in _WS:
                    b += 1
                    openers.add((i, b))
                c = line.find("(", b)
        self.code_ends: dict[int, int] = {}
        self.string_ends: dict[int, int] = {}  # a line a string spanning lines ends on -> its end there
        self.closings: dict[Pos, tuple[list[Pos], str]] = {}

    def col(self, line: int, byte_col: int) -> int:
        """``ast``'s column (UTF-8 bytes) in characters."""
        if self.ascii[line - 1]:
            return byte_col
        return len(self.lines[line - 1].encode()[:byte_col].decode())

    def start(self, n: Any) -> Pos:
        line = n.lineno
        return (line, n.col_offset) if self.ascii[line - 1] else (line, self.col(line, n.col_offset))

    def end(self, n: Any) -> Pos:
        line = n.end_lineno
        return (line, n.end_col_offset) if self.ascii[line - 1] else (line, self.col(line, n.end_col_offset))

    def char(self, pos: Pos) -> str:
        line = self.lines[pos[0] - 1] if pos[0] <= len(self.lines) else ""
        return line[pos[1]] if pos[1] < len(line) else ""

    def code_end(self, i: int) -> int:
        """Where line ``i``'s code ends (its comment, if any, after)."""
        found = self.code_ends.get(i)
        if found is None:
            line = self.lines[i - 1]
            found = len(line)
            if "#" in line:
                end = _CODE.match(line, self.string_ends.get(i, 0)).end()  # type: ignore[union-attr]
                found = end if line.startswith("#", end) else len(line)
            self.code_ends[i] = found
        return found

    def next(self, pos: Pos) -> Pos:
        """The first significant character at or after ``pos``."""
        line, col = pos
        lines = self.lines
        while line <= len(lines):
            s = lines[line - 1]
            col = len(s) - len(s[col:].lstrip(_WS))
            if col < len(s) and s[col] != "#":
                return line, col
            line, col = line + 1, 0
        return line, 0

    def prev(self, pos: Pos) -> Pos:
        """The last significant character before ``pos`` ((0, 0): none)."""
        line, col = pos
        while line >= 1:
            s = self.lines[line - 1]
            while col > 0 and s[col - 1] in _WS:
                col -= 1
            if col > 0:
                return line, col - 1
            line -= 1
            if line >= 1:
                col = self.code_end(line)
        return 0, 0

    def opening(self, pos: Pos, most: int) -> list[Pos]:
        """The ``(`` right before ``pos`` (at most ``most``), nearest first."""
        found: list[Pos] = []
        while len(found) < most:
            p = self.prev(pos)
            if p[0] == 0 or self.lines[p[0] - 1][p[1]] != "(":
                break
            found.append(p)
            pos = p
        return found

    def closing(self, pos: Pos) -> tuple[list[Pos], str]:
        """The ends of the ``)`` right after ``pos``, and the character after them (the same for
        the expressions ending at ``pos``, ``a + b`` and ``b``: kept)."""
        known = self.closings.get(pos)
        if known is None:
            known = self.closings[pos] = self._closing(pos)
        return known

    def _closing(self, pos: Pos) -> tuple[list[Pos], str]:
        found: list[Pos] = []
        lines = self.lines
        n = len(lines)
        line, col = pos
        while True:  # (self.next and self.char, inline)
            while line <= n:
                s = lines[line - 1]
                rest = s[col:].lstrip(_WS)
                if rest and rest[0] != "#":
                    break
                line, col = line + 1, 0
            else:
                return found, ""
            c = rest[0]
            if c != ")":
                return found, c
            col = len(s) - len(rest) + 1
            found.append((line, col))

    def one_line_after(self, a: Pos, b: Pos) -> bool:
        """Whether ``b`` is on ``a``'s logical line (lines between continued by a backslash)."""
        return all(self.lines[i - 1][:self.code_end(i)].rstrip(" \t\f").endswith("\\") for i in range(a[0], b[0]))

    def segment(self, s: Pos, e: Pos) -> str:
        """The text from ``s`` to ``e``."""
        (l1, c1), (l2, c2) = s, e
        if l1 == l2:
            return self.lines[l1 - 1][c1:c2]
        return "\n".join([self.lines[l1 - 1][c1:], *self.lines[l1:l2 - 1], self.lines[l2 - 1][:c2]])


#: arithmetic operators: one node of each, shared by the trees made (a leaf of no position,
#: immutable as every libcst node is; libcst's parser makes one per operation)
_BINARY = {k: make() for k, make in {
    ast.Add: new.Add, ast.Sub: new.Subtract, ast.Mult: new.Multiply, ast.Div: new.Divide,
    ast.FloorDiv: new.FloorDivide, ast.Mod: new.Modulo, ast.Pow: new.Power, ast.MatMult: new.MatrixMultiply,
    ast.LShift: new.LeftShift, ast.RShift: new.RightShift, ast.BitOr: new.BitOr, ast.BitXor: new.BitXor,
    ast.BitAnd: new.BitAnd}.items()}
_UNARY = {k: make() for k, make in {ast.UAdd: new.Plus, ast.USub: new.Minus, ast.Not: new.Not,
                                     ast.Invert: new.BitInvert}.items()}
# (`in`, `not in`, `is`, `is not` are refused by check_subset: libcst's reading says where)
_COMPARE = {ast.Lt: new.LessThan, ast.LtE: new.LessThanEqual, ast.Gt: new.GreaterThan, ast.GtE: new.GreaterThanEqual,
            ast.Eq: new.Equal, ast.NotEq: new.NotEqual}
_NAMED = {True: "True", False: "False", None: "None"}

#: an expression nested in this many others is read through :func:`astad.deep.call` (as the lowering
#: does: :data:`astad.frontend.expressions._ROOM_EVERY`); an expression of a statement (or of a signature) is not: its
#: block is (:meth:`astad.frontend.from_ast._Reader.statements`)
_ROOM_EVERY = 8


class Expressions:
    """Makes the libcst node of each ``ast`` expression, noting where it starts
    in ``starts``; each maker returns the node and where it starts and ends
    with its own parentheses (its "outer" extent), which its parent needs."""

    text: Text
    depth = 0  # how many expressions the one being read is nested in
    own_start: Pos  # where the expression made last starts, where its maker says (_OWN_START)
    starts: dict[cst.CSTNode, Pos]
    names: set[str]  # the values of the ``Name`` nodes made
    called: set[str]  # the names called (``f(...)``)

    def expr(self, n: ast.expr, opened: int = 0, closed: int = 0) -> tuple[Any, Pos, Pos]:
        """``n``'s node.  ``opened``/``closed``: a ``(`` of the parent is right
        before it / a ``)`` of the parent right after it unless a comma is
        (a call's only argument: ``f((a))`` has one pair of ``a``'s)."""
        cls = type(n)
        text = self.text
        if text.all_ascii:  # (else columns in characters: text.start(n), text.end(n))
            s, e = (n.lineno, n.col_offset), (n.end_lineno, n.end_col_offset)
        else:
            s, e = text.start(n), text.end(n)
        start = s
        if cls is _AST_NAME:  # (a name has no maker: made here, inline: nearly half the expressions)
            value = n.id
            self.names.add(value)
            node = _new(_NAME)
            _name_value(node, value)
            _name_lpar(node, ())
            _name_rpar(node, ())
        else:
            make = _MAKERS.get(cls)
            if make is None:
                raise Decline(cls.__name__)
            depth = self.depth
            self.depth = depth + 1  # (not restored on an error: the reading stops)
            if depth % _ROOM_EVERY or not depth:  # (most levels, and a statement's own: no look at the stack)
                node = make(self, n, s, e)
            else:  # a deeply nested expression goes on with a fresh stack (else: a RecursionError, and
                node = deep.call(make, self, n, s, e)  # libcst's reading, slower: 800 terms, 5 s)
            self.depth = depth
            if cls in _OWN_START:  # (a tuple's or a generator's own parentheses: libcst starts it inside)
                start = self.own_start
        if e in text.closers:  # (else no `)` follows: no parentheses of its own)
            known = text.closings.get(e)  # (text.closing(e), inline)
            if known is None:
                known = text.closings[e] = text._closing(e)
            found, stop = known
            f = len(found) - (closed if stop != "," else 0)
            if f > 0 and s in text.openers:  # (else no `(` before it: no parentheses of its own)
                opening = text.opening(s, f + opened)
                g = min(len(opening) - opened, f)
                if g > 0:
                    s, e = opening[g - 1], found[g - 1]
                    _add_parentheses(node, g)
        self.starts[id(node)] = start
        return node, s, e

    def name(self, value: str, at: Pos) -> cst.Name:
        node = new.Name(value)
        self.names.add(value)
        self.starts[id(node)] = at
        return node

    def e_Constant(self, n: ast.Constant, s: Pos, e: Pos) -> Any:
        v = n.value
        if v is None or v is True or v is False:
            self.names.add(_NAMED[v])
            return new.Name(_NAMED[v])
        if v is Ellipsis:
            return new.Ellipsis()
        raw = self.text.segment(s, e)
        if type(v) is int:
            return new.Integer(raw)
        if type(v) is float:
            return new.Float(raw)
        if type(v) in (str, bytes) and n.kind is None:
            if s[0] != e[0] or "#" in raw:  # (a comment's `#` is after a string's end, where it is found)
                self.text.string_ends[e[0]] = e[1]
            tokens = list(tokenize.generate_tokens(io.StringIO(raw).readline))
            if [t.type for t in tokens[:1]] == [tokenize.STRING] and tokens[0].end == (raw.count("\n") + 1,
                                                                                       len(raw) - raw.rfind("\n") - 1):
                return new.SimpleString(raw)
        raise Decline("constant")  # strings side by side, complex numbers, u"": libcst's reading

    def e_BinOp(self, n: ast.BinOp, s: Pos, e: Pos) -> Any:
        left, _, _ = self.expr(n.left)
        right, _, _ = self.expr(n.right)
        node = _new(_BINARY_OPERATION)  # (new.BinaryOperation(left, operator, right), inline: the most common)
        _binary_left(node, left)
        _binary_operator(node, _BINARY[type(n.op)])
        _binary_right(node, right)
        _binary_lpar(node, ())
        _binary_rpar(node, ())
        return node

    def e_UnaryOp(self, n: ast.UnaryOp, s: Pos, e: Pos) -> Any:
        operand, _, _ = self.expr(n.operand)
        return new.UnaryOperation(_UNARY[type(n.op)], operand)

    def e_BoolOp(self, n: ast.BoolOp, s: Pos, e: Pos) -> Any:
        op = new.And if type(n.op) is ast.And else new.Or
        node, _, _ = self.expr(n.values[0])
        for i, v in enumerate(n.values[1:]):
            right, _, _ = self.expr(v)
            node = new.BooleanOperation(node, op(), right)
            if i < len(n.values) - 2:
                self.starts[id(node)] = s  # ((a and b) and c): the inner ones start where it does
        return node

    def e_Compare(self, n: ast.Compare, s: Pos, e: Pos) -> Any:
        left, _, after = self.expr(n.left)
        targets = []
        for op, v in zip(n.ops, n.comparators):
            make = _COMPARE.get(type(op))
            if make is None:
                raise Decline("comparison")
            comparator, _, end = self.expr(v)
            target = new.ComparisonTarget(make(), comparator)
            self.starts[id(target)] = after  # (its operator's blanks before it are its own)
            targets.append(target)
            after = end
        return new.Comparison(left, tuple(targets))

    def e_IfExp(self, n: ast.IfExp, s: Pos, e: Pos) -> Any:
        body, _, _ = self.expr(n.body)
        test, _, _ = self.expr(n.test)
        orelse, _, _ = self.expr(n.orelse)
        return new.IfExp(test, body, orelse)

    def e_Attribute(self, n: ast.Attribute, s: Pos, e: Pos) -> Any:
        value, _, _ = self.expr(n.value)
        return new.Attribute(value, self.name(n.attr, (e[0], e[1] - len(n.attr))))

    def e_Call(self, n: ast.Call, s: Pos, e: Pos) -> Any:
        func, _, after = self.expr(n.func)
        if type(func) is cst.Name:
            self.called.add(func.value)
        parts = sorted([*n.args, *n.keywords], key=lambda a: (a.lineno, a.col_offset)) if n.keywords else n.args
        last = len(parts) - 1
        args = []
        for i, a in enumerate(parts):
            if type(a) is ast.keyword:
                value, _, _ = self.expr(a.value, 0, i == last)
                at = self.text.start(a)
                if a.arg is None:
                    arg = new.Arg(value, star="**")
                else:
                    arg = new.Arg(value, keyword=self.name(a.arg, at))
            elif type(a) is ast.Starred:
                value, _, _ = self.expr(a.value, 0, i == last)
                at = self.text.start(a)
                arg = new.Arg(value, star="*")
            elif type(a) is ast.GeneratorExp and last == 0 and self.text.start(a) == self.text.next(after):
                value, at = self.generator(a)  # `f(x for x in xs)`: Python's tree gives it the call's ()
                arg = new.Arg(value)
            else:
                value, at, _ = self.expr(a, i == 0, i == last)
                arg = new.Arg(value)
            self.starts[id(arg)] = at
            args.append(arg)
        return new.Call(func, tuple(args))

    def e_Subscript(self, n: ast.Subscript, s: Pos, e: Pos) -> Any:
        value, _, _ = self.expr(n.value)
        sl = n.slice
        items = sl.elts if type(sl) is ast.Tuple and sl.elts and not self.own_parens(sl) else [sl]
        elements = []
        for item in items:
            if type(item) is ast.Slice:
                made, at = self.slice(item)
            else:
                value_, at, _ = self.expr(item)
                made = new.Index(value_)
                self.starts[id(made)] = at
            element = new.SubscriptElement(made)
            self.starts[id(element)] = at
            elements.append(element)
        return new.Subscript(value, tuple(elements))

    def slice(self, n: ast.Slice) -> tuple[cst.Slice, Pos]:
        parts = [None if p is None else self.expr(p)[0] for p in (n.lower, n.upper, n.step)]
        made = new.Slice(parts[0], parts[1], parts[2])
        at = self.text.start(n)
        self.starts[id(made)] = at
        return made, at

    def own_parens(self, n: ast.Tuple) -> bool:
        """Whether a tuple's first ``(`` is its own (``(a, b)``, not ``(a), b``)."""
        first = n.elts[0]
        found, _ = self.text.closing(self.text.end(first))  # (a comma follows it: its own alone)
        s = self.text.start(first)
        opening = self.text.opening(s, len(found))
        return self.text.start(n) < (opening[len(found) - 1] if found else s)

    def elements(self, elts: list[ast.expr], own: bool) -> tuple[tuple[cst.Element, ...], Pos | None]:
        made, first = [], None
        for i, el in enumerate(elts):
            if type(el) is ast.Starred:
                raise Decline("starred")
            value, at, _ = self.expr(el, own and i == 0, own and i == len(elts) - 1)
            element = new.Element(value)
            self.starts[id(element)] = at
            first = first or at
            made.append(element)
        return tuple(made), first

    def e_Tuple(self, n: ast.Tuple, s: Pos, e: Pos) -> Any:
        own = not n.elts or self.own_parens(n)
        elements, first = self.elements(n.elts, own)
        if not own:
            self.own_start = s
            return new.Tuple(elements, lpar=(), rpar=())  # (libcst's default has parentheses)
        # its own parentheses: the expression's; libcst starts it after them
        self.own_start = first or self.text.prev(e)
        return _parenthesised(new.Tuple(elements))

    def e_List(self, n: ast.List, s: Pos, e: Pos) -> Any:
        return new.List(self.elements(n.elts, False)[0])

    def comprehension(self, gens: list[ast.comprehension], after: Pos) -> cst.CompFor:
        fors = []
        for g in gens:
            if g.is_async:
                raise Decline("async for")
            target, _, _ = self.expr(g.target)
            it, _, end = self.expr(g.iter)
            ifs, start = [], after
            for t in g.ifs:
                test, _, end2 = self.expr(t)
                made = new.CompIf(test)
                self.starts[id(made)] = end
                ifs.append(made)
                end = end2
            fors.append((target, it, tuple(ifs), start))
            after = end
        inner = None
        for target, it, ifs, start in reversed(fors):
            inner = new.CompFor(target, it, ifs, inner)
            self.starts[id(inner)] = start
        return inner  # type: ignore[return-value]

    def e_ListComp(self, n: ast.ListComp, s: Pos, e: Pos) -> Any:
        elt, _, after = self.expr(n.elt)
        return new.ListComp(elt, self.comprehension(n.generators, after))

    def generator(self, n: ast.GeneratorExp) -> tuple[cst.GeneratorExp, Pos]:
        elt, at, after = self.expr(n.elt)
        made = new.GeneratorExp(elt, self.comprehension(n.generators, after), lpar=(), rpar=())
        self.starts[id(made)] = at
        return made, at

    def e_GeneratorExp(self, n: ast.GeneratorExp, s: Pos, e: Pos) -> Any:
        made, self.own_start = self.generator(n)
        return _parenthesised(made)

    def e_Lambda(self, n: ast.Lambda, s: Pos, e: Pos) -> Any:
        params = self.parameters(n.args, self.text.next((s[0], s[1] + 6)), lambda_=True)
        body, _, _ = self.expr(n.body)
        return new.Lambda(params, body)

    def parameters(self, a: ast.arguments, at: Pos, lambda_: bool = False) -> cst.Parameters:
        if a.posonlyargs or a.vararg or a.kwonlyargs or a.kwarg:
            raise Decline("parameters")  # (refused where nested; a module-level function: libcst's reading)
        defaults = [None] * (len(a.args) - len(a.defaults)) + list(a.defaults)
        params = []
        for i, (p, d) in enumerate(zip(a.args, defaults)):
            last = 0 if lambda_ else int(i == len(a.args) - 1)
            ps = self.text.start(p)
            annotation = None if p.annotation is None else self.annotation(p.annotation, int(d is None and last))
            default = None if d is None else self.expr(d, 0, last)[0]
            made = new.Param(self.name(p.arg, ps), annotation, default=default, star="")
            self.starts[id(made)] = ps
            params.append(made)
        made = new.Parameters(tuple(params))
        self.starts[id(made)] = at
        return made

    def annotation(self, n: ast.expr, closed: int = 0) -> cst.Annotation:
        value, at, _ = self.expr(n, 0, closed)
        made = new.Annotation(value)
        self.starts[id(made)] = at
        return made


_MAKERS = {getattr(ast, name[2:]): make for name, make in vars(Expressions).items() if name.startswith("e_")}
#: the expressions whose maker says where they start (``own_start``: their own parentheses are not theirs
#: to libcst); every other starts where Python's tree says
_OWN_START = frozenset({ast.Tuple, ast.GeneratorExp})


def _add_parentheses(node: Any, g: int) -> None:
    """Give ``node`` ``g`` pairs of parentheses more: ``with_changes``, but in place (the node
    was just made, and nothing holds it yet)."""
    _set(node, "lpar", (*node.lpar, *[new.LeftParen() for _ in range(g)]))
    _set(node, "rpar", (*node.rpar, *[new.RightParen() for _ in range(g)]))


_set = object.__setattr__  # (libcst's nodes are frozen dataclasses)
_new = object.__new__
#: the nodes made inline (as :func:`astad.pyexpr.maker` makes them: each field by its slot's own setter,
#: lpar and rpar libcst's default, the empty tuple; tests/test_from_ast.py checks they are libcst's)
_AST_NAME, _NAME, _BINARY_OPERATION = ast.Name, cst.Name, cst.BinaryOperation
_name_value, _name_lpar, _name_rpar = (getattr(cst.Name, f).__set__ for f in ("value", "lpar", "rpar"))
_binary_left, _binary_operator, _binary_right, _binary_lpar, _binary_rpar = (
    getattr(cst.BinaryOperation, f).__set__ for f in ("left", "operator", "right", "lpar", "rpar"))
assert [f.name for f in dataclasses.fields(cst.Name)] == ["value", "lpar", "rpar"] and [
    f.name for f in dataclasses.fields(cst.BinaryOperation)] == ["left", "operator", "right", "lpar", "rpar"] and all(
    f.default == () for f in (*dataclasses.fields(cst.Name)[1:], *dataclasses.fields(cst.BinaryOperation)[3:]))


def _parenthesised(node: Any) -> Any:
    """``node`` with the parentheses Python's tree counts as its own (a tuple's, a generator's);
    :meth:`Expressions.expr` gives it those it has besides."""
    _set(node, "lpar", (new.LeftParen(),))
    _set(node, "rpar", (new.RightParen(),))
    return node

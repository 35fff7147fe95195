"""The text of a generated module: libcst's own printing (``Module.code``),
done here for the node classes codegen builds.

libcst prints a tree by calling each node's ``_codegen``, which wraps the
node's printing in hooks, context managers and keyword defaults: some 10
Python calls a node, a fifth of transforming a 500-statement function.  The
functions below write the same tokens, reading every field libcst reads
(whitespace, commas, parentheses), for the classes codegen makes; any other
node (or an unusual field value: a comment inside parentheses) is printed by
libcst itself, into the same token list.  ``render(module) == module.code``
always (tests/test_render.py checks it on every generated program it makes).
The statements are printed here, the expressions in :mod:`astad.codegen.render_expr`.
"""

from __future__ import annotations

import functools
from typing import Any

import libcst as cst

try:  # libcst's printing state: where its own printing of a node writes
    from libcst._nodes.internal import CodegenState
except ImportError:  # pragma: no cover - another libcst: its own printing only
    CodegenState = None  # type: ignore[assignment,misc]

from .render_expr import _DEFAULT, _WS, PRINTERS, State, _op, _ws, node as _node

#: the printer of a node's class, or None (``PRINTERS.get``, bound once: read for every node printed)
_printer = PRINTERS.get

#: the end of a line shared by the lines codegen makes (no comment, the default newline)
EOL = cst.TrailingWhitespace()


class Line:
    """A plain statement line printed when codegen made it (reverse mode's printer makes these rather than
    ``SimpleStatementLine``s of an ``Assign`` of an ``AssignTarget``, three nodes a line printed later):
    its leading lines (libcst's ``EmptyLine``s: the comment quoting the user's line) and its text, without
    indentation or newline.  A body of them prints as the ``SimpleStatementLine``s would
    (tests/test_render.py prints a module both ways)."""

    __slots__ = ("leading_lines", "text")

    def __init__(self, leading_lines: Any, text: str) -> None:
        self.leading_lines = leading_lines
        self.text = text

    def _codegen(self, st: State) -> None:  # (printed by libcst's printing of a node holding it: a `try`)
        _text_line(self, st)


class Comment(tuple):
    """The leading lines of a line that are one comment, as codegen makes them: an ``EmptyLine``
    (indented, no whitespace, the default newline) holding ``comment``, which a block prints at its
    indentation without printing the node (tests/test_render.py prints a module both ways)."""

    comment: str

    def __new__(cls, comment: str) -> "Comment":
        made = super().__new__(cls, (cst.EmptyLine(comment=cst.Comment(comment)),))
        made.comment = comment
        return made


@functools.lru_cache(maxsize=4096)
def comment_lines(line: int, text: str) -> Comment:
    """The leading line of the comment quoting the user's line ``line``, ``text`` (one node for
    each, as the forward and backward passes head the same groups with the same lines; the
    comment checked)."""
    return Comment(f"# line {line}: {text.strip()}")


def text_state() -> Any:
    """A printing state for :func:`text` (None where this libcst has none: then print nodes, not text)."""
    return None if CodegenState is None else CodegenState(default_indent="    ", default_newline="\n")


def text(n: cst.CSTNode, st: State) -> str:
    """What ``n`` (a small statement or an expression: no line of its own, nothing indented) prints as
    (an expression is printed faster by :func:`astad.codegen.render_expr.text`)."""
    tokens = st.tokens = []
    f = _printer(type(n))
    if f is None:
        n._codegen(st)
    else:
        f(n, st)
    return "".join(tokens)


def render(module: cst.Module) -> str:
    """``module.code``."""
    if CodegenState is None:
        return module.code
    st = CodegenState(default_indent=module.default_indent, default_newline=module.default_newline)
    for h in module.header:
        _node(h, st)
    for s in module.body:
        _node(s, st)
    for f in module.footer:
        _node(f, st)
    if module.has_trailing_newline:
        if not st.tokens:
            st.tokens.append(st.default_newline)
    else:
        st.pop_trailing_newline()
    return "".join(st.tokens)

def _small(n: cst.BaseSmallStatement, st: State, default_semicolon: bool) -> None:
    """A statement of a line of several (``a = 1; b = 2``)."""
    f = _printer(type(n))
    if f is None:
        n._codegen(st, default_semicolon=default_semicolon)  # libcst's own
    else:
        f(n, st, default_semicolon=default_semicolon)

def _semicolon(n: Any, st: State, default_semicolon: bool) -> None:
    semicolon = n.semicolon
    if isinstance(semicolon, cst.MaybeSentinel):
        if default_semicolon:
            st.tokens.append("; ")
    else:
        semicolon._codegen(st)

# ------------------------------------------------------------------ statements


def _empty_line(n: cst.EmptyLine, st: State) -> None:
    tokens = st.tokens
    if n.indent:
        tokens.extend(st.indent_tokens)
    w = n.whitespace
    if type(w) is not _WS:
        w._codegen(st)
    elif w.value:
        tokens.append(w.value)
    if n.comment is not None:
        tokens.append(n.comment.value)
    newline = n.newline
    tokens.append(st.default_newline if newline.value is None else newline.value)  # (_newline's)


def _newline(n: cst.Newline, st: State) -> None:
    st.tokens.append(st.default_newline if n.value is None else n.value)


def _trailing(n: cst.TrailingWhitespace, st: State) -> None:
    _ws(n.whitespace, st)
    if n.comment is not None:
        st.tokens.append(n.comment.value)
    _newline(n.newline, st)


def _leading(n: Any, st: State) -> None:
    for line in n.leading_lines:
        _node(line, st)
    st.tokens.extend(st.indent_tokens)


def _text_line(n: Line, st: State) -> None:
    for line in n.leading_lines:
        if type(line) is cst.EmptyLine:
            _empty_line(line, st)
        else:
            _node(line, st)
    tokens = st.tokens
    tokens.extend(st.indent_tokens)
    tokens.append(n.text)
    tokens.append(st.default_newline)


def _simple_line(n: cst.SimpleStatementLine, st: State) -> None:
    tokens = st.tokens
    for line in n.leading_lines:
        if type(line) is cst.EmptyLine:
            _empty_line(line, st)
        else:
            _node(line, st)
    tokens.extend(st.indent_tokens)
    body = n.body
    if len(body) == 1:  # (most lines)
        small = body[0]
        if type(small) is cst.Assign:
            _assign(small, st)
        else:
            _node(small, st)
    elif body:
        last = len(body) - 1
        for i, small in enumerate(body):
            _small(small, st, i != last)
    else:
        st.tokens.append("pass")
    end = n.trailing_whitespace
    if end is EOL:
        tokens.append(st.default_newline)  # (nearly every line)
    elif type(end) is cst.TrailingWhitespace and end.comment is None and type(end.whitespace) is _WS \
            and not end.whitespace.value and type(end.newline) is cst.Newline and end.newline.value is None:
        st.tokens.append(st.default_newline)  # (most lines)
    else:
        _node(end, st)


def _assign(n: cst.Assign, st: State, default_semicolon: bool = False) -> None:
    tokens = st.tokens
    for target in n.targets:
        if type(target) is not cst.AssignTarget:
            target._codegen(st)
            continue
        name = target.target
        if type(name) is cst.Name and not name.lpar:  # (_node's, inlined for a name)
            tokens.append(name.value)
        else:
            _node(name, st)
        before, after = target.whitespace_before_equal, target.whitespace_after_equal
        if type(before) is _WS and type(after) is _WS:  # (every assignment codegen makes)
            tokens.append(before.value + "=" + after.value)
        else:
            _ws(before, st)
            tokens.append("=")
            _ws(after, st)
    value = n.value
    f = _printer(type(value))
    if f is None:
        value._codegen(st)
    else:
        f(value, st)
    if n.semicolon is not _DEFAULT or default_semicolon:
        _semicolon(n, st, default_semicolon)


def _aug_assign(n: cst.AugAssign, st: State, default_semicolon: bool = False) -> None:
    _node(n.target, st)
    _op(n.operator, st)
    _node(n.value, st)
    _semicolon(n, st, default_semicolon)


def _expr(n: cst.Expr, st: State, default_semicolon: bool = False) -> None:
    _node(n.value, st)
    _semicolon(n, st, default_semicolon)


def _return(n: cst.Return, st: State, default_semicolon: bool = False) -> None:
    st.tokens.append("return")
    if isinstance(n.whitespace_after_return, cst.MaybeSentinel):
        if n.value is not None:
            st.tokens.append(" ")
    else:
        _ws(n.whitespace_after_return, st)
    if n.value is not None:
        _node(n.value, st)
    _semicolon(n, st, default_semicolon)


def _pass(n: cst.Pass, st: State, default_semicolon: bool = False) -> None:
    st.tokens.append("pass")
    _semicolon(n, st, default_semicolon)


def _if(n: cst.If, st: State, is_elif: bool = False) -> None:
    _leading(n, st)
    st.tokens.append("elif" if is_elif else "if")
    _ws(n.whitespace_before_test, st)
    _node(n.test, st)
    _ws(n.whitespace_after_test, st)
    st.tokens.append(":")
    _node(n.body, st)
    if type(n.orelse) is cst.If:
        _if(n.orelse, st, is_elif=True)
    elif n.orelse is not None:
        _node(n.orelse, st)


def _else(n: cst.Else, st: State) -> None:
    _leading(n, st)
    st.tokens.append("else")
    _ws(n.whitespace_before_colon, st)
    st.tokens.append(":")
    _node(n.body, st)


def _for(n: cst.For, st: State) -> None:
    _leading(n, st)
    if n.asynchronous is not None:
        n.asynchronous._codegen(st)
    st.tokens.append("for")
    _ws(n.whitespace_after_for, st)
    _node(n.target, st)
    _ws(n.whitespace_before_in, st)
    st.tokens.append("in")
    _ws(n.whitespace_after_in, st)
    _node(n.iter, st)
    _ws(n.whitespace_before_colon, st)
    st.tokens.append(":")
    _node(n.body, st)
    if n.orelse is not None:
        _node(n.orelse, st)


def _while(n: cst.While, st: State) -> None:
    _leading(n, st)
    st.tokens.append("while")
    _ws(n.whitespace_after_while, st)
    _node(n.test, st)
    _ws(n.whitespace_before_colon, st)
    st.tokens.append(":")
    _node(n.body, st)
    if n.orelse is not None:
        _node(n.orelse, st)


def _block(n: cst.IndentedBlock, st: State) -> None:
    _node(n.header, st)
    st.indent_tokens.append(st.default_indent if n.indent is None else n.indent)
    if n.body:
        tokens, indent, newline = st.tokens, "".join(st.indent_tokens), st.default_newline
        run: list[str] = []  # the lines of text (codegen.plain's) met since the last line of another kind
        for s in n.body:
            cls = type(s)
            if cls is str:  # (a line of a function's own body, its text: printed with the others of its run, at once)
                run.append(s)
                continue
            if run:
                tokens.append(indent + (newline + indent).join(run) + newline)
                run = []
            if cls is Line:  # (_node's, inlined for the most common lines; _text_line's, for a line alone)
                leading = s.leading_lines
                if not leading:
                    tokens.append(f"{indent}{s.text}{newline}")
                elif type(leading) is Comment:  # (_empty_line's, for its one line)
                    tokens.append(f"{indent}{leading.comment}{newline}{indent}{s.text}{newline}")
                else:
                    _text_line(s, st)
            elif cls is cst.SimpleStatementLine:
                _simple_line(s, st)
            else:
                _node(s, st)
        if run:
            tokens.append(indent + (newline + indent).join(run) + newline)
    else:
        st.tokens.extend(st.indent_tokens)
        st.tokens.append("pass")
        st.tokens.append(st.default_newline)
    for f in n.footer:
        _node(f, st)
    st.indent_tokens.pop()


def _funcdef(n: cst.FunctionDef, st: State) -> None:
    for line in n.leading_lines:
        _node(line, st)
    for decorator in n.decorators:
        decorator._codegen(st)
    for line in n.lines_after_decorators:
        _node(line, st)
    st.tokens.extend(st.indent_tokens)
    if n.asynchronous is not None:
        n.asynchronous._codegen(st)
    st.tokens.append("def")
    _ws(n.whitespace_after_def, st)
    _node(n.name, st)
    _ws(n.whitespace_after_name, st)
    st.tokens.append("(")
    _ws(n.whitespace_before_params, st)
    _parameters(n.params, st)
    st.tokens.append(")")
    if n.returns is not None:
        n.returns._codegen(st, default_indicator="->")
    _ws(n.whitespace_before_colon, st)
    st.tokens.append(":")
    _node(n.body, st)


def _parameters(n: cst.Parameters, st: State) -> None:
    """``a, b, c``: parameters without defaults, annotations, stars or their own whitespace (others: libcst's)."""
    if type(n) is not cst.Parameters or n.posonly_params or n.kwonly_params or n.star_kwarg is not None \
            or n.star_arg is not _DEFAULT or n.posonly_ind is not _DEFAULT \
            or not all(type(p) is cst.Param and _plain(p) for p in n.params):
        n._codegen(st)
        return
    st.tokens.append(", ".join(p.name.value for p in n.params))


def _plain(p: cst.Param) -> bool:
    return (p.star is _DEFAULT or p.star == "") and p.annotation is None and p.equal is _DEFAULT \
        and p.default is None and p.comma is _DEFAULT and type(p.name) is cst.Name and not p.name.lpar \
        and type(p.whitespace_after_star) is _WS and not p.whitespace_after_star.value \
        and type(p.whitespace_after_param) is _WS and not p.whitespace_after_param.value

PRINTERS.update({
    cst.EmptyLine: _empty_line, cst.TrailingWhitespace: _trailing, cst.SimpleStatementLine: _simple_line,
    cst.Assign: _assign, cst.AugAssign: _aug_assign, cst.Expr: _expr, cst.Return: _return, cst.Pass: _pass,
    cst.If: _if, cst.Else: _else, cst.For: _for, cst.While: _while, cst.IndentedBlock: _block,
    cst.FunctionDef: _funcdef, Line: _text_line,
})

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
"""

from __future__ import annotations

from typing import Any, Callable

import libcst as cst

from .. import pyexpr as px

try:  # libcst's printing state: where its own printing of a node writes
    from libcst._nodes.internal import CodegenState
except ImportError:  # pragma: no cover - another libcst: its own printing only
    CodegenState = None  # type: ignore[assignment,misc]

_DEFAULT = cst.MaybeSentinel.DEFAULT
_WS = cst.SimpleWhitespace
#: the classes of a node printed as its ``value`` where it has no parentheses
_LEAVES = frozenset({cst.Name, cst.Integer, cst.Float, cst.SimpleString})

_NO_SPACE = px.NO_SPACE  # (the whitespace of pyexpr's arguments)

#: the end of a line shared by the lines codegen makes (no comment, the default newline)
EOL = cst.TrailingWhitespace()

State = Any
Printer = Callable[..., None]


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


def _node(n: cst.CSTNode, st: State) -> None:
    f = _PRINTERS.get(type(n))
    if f is None:
        n._codegen(st)  # libcst's own
    else:
        f(n, st)


def _small(n: cst.BaseSmallStatement, st: State, default_semicolon: bool) -> None:
    """A statement of a line of several (``a = 1; b = 2``)."""
    f = _PRINTERS.get(type(n))
    if f is None:
        n._codegen(st, default_semicolon=default_semicolon)  # libcst's own
    else:
        f(n, st, default_semicolon=default_semicolon)


def _ws(w: Any, st: State) -> None:
    if type(w) is _WS:
        if w.value:
            st.tokens.append(w.value)
    else:
        w._codegen(st)


def _op(op: Any, st: State) -> None:
    """A one-token operator between two whitespaces (``+``, ``=``, ``,``, ``.``, ``<``, ``+=``)."""
    token = _TOKENS.get(type(op))
    if token is None:
        op._codegen(st)
        return
    before, after = op.whitespace_before, op.whitespace_after
    if type(before) is _WS and type(after) is _WS:  # (nearly every one: one token with its whitespace)
        st.tokens.append(before.value + token + after.value)
        return
    _ws(before, st)
    st.tokens.append(token)
    _ws(after, st)


def _open(n: Any, st: State) -> None:
    """``n``'s left parentheses (called where it has some)."""
    for p in n.lpar:
        if type(p) is cst.LeftParen:
            st.tokens.append("(")
            _ws(p.whitespace_after, st)
        else:
            p._codegen(st)


def _close(n: Any, st: State) -> None:
    for p in n.rpar:
        if type(p) is cst.RightParen:
            _ws(p.whitespace_before, st)
            st.tokens.append(")")
        else:
            p._codegen(st)


def _comma(comma: Any, st: State, default: bool, text: str = ", ") -> None:
    if comma is _DEFAULT:
        if default:
            st.tokens.append(text)
    elif type(comma) is cst.Comma:
        _op(comma, st)
    elif isinstance(comma, cst.CSTNode):
        comma._codegen(st)


def _semicolon(n: Any, st: State, default_semicolon: bool) -> None:
    semicolon = n.semicolon
    if isinstance(semicolon, cst.MaybeSentinel):
        if default_semicolon:
            st.tokens.append("; ")
    else:
        semicolon._codegen(st)


# ------------------------------------------------------------------ expressions


def _token(n: Any, st: State) -> None:  # Name, Integer, Float, SimpleString
    if n.lpar:
        _open(n, st)
        st.tokens.append(n.value)
        _close(n, st)
    else:
        st.tokens.append(n.value)


def _attribute(n: cst.Attribute, st: State) -> None:
    if n.lpar:
        _open(n, st)
    tokens = st.tokens
    value, dot, attr = n.value, n.dot, n.attr
    if type(value) is cst.Name and not value.lpar:  # (_node's, inlined for a name: `np.exp`)
        tokens.append(value.value)
    else:
        _node(value, st)
    text = _SHARED_OPERATORS.get(id(dot))
    if text is None:
        _op(dot, st)
    else:
        tokens.append(text)
    if type(attr) is cst.Name and not attr.lpar:
        tokens.append(attr.value)
    else:
        _node(attr, st)
    if n.rpar:
        _close(n, st)


def _call(n: cst.Call, st: State) -> None:
    if n.lpar:
        _open(n, st)
    _node(n.func, st)
    _ws(n.whitespace_after_func, st)
    st.tokens.append("(")
    _ws(n.whitespace_before_args, st)
    tokens = st.tokens
    last = len(n.args) - 1
    for i, arg in enumerate(n.args):
        if type(arg) is cst.Arg and arg.whitespace_after_star is _NO_SPACE and arg.whitespace_after_arg is _NO_SPACE \
                and arg.keyword is None and arg.equal is _DEFAULT and arg.comma is _DEFAULT and not arg.star:
            value = arg.value  # (_arg's, inlined for a positional argument as pyexpr makes it)
            if type(value) in _LEAVES and not value.lpar:
                tokens.append(value.value)
            else:
                _node(value, st)
            if i != last:
                tokens.append(", ")
        else:
            _arg(arg, st, default_comma=(i != last))
    tokens.append(")")
    if n.rpar:
        _close(n, st)


def _arg(n: cst.Arg, st: State, default_comma: bool = False) -> None:
    if type(n) is not cst.Arg:
        n._codegen(st, default_comma=default_comma)
        return
    tokens = st.tokens
    if n.star:
        tokens.append(n.star)
    _ws(n.whitespace_after_star, st)
    if n.keyword is not None:
        _node(n.keyword, st)
    if n.equal is _DEFAULT:
        if n.keyword is not None:
            tokens.append(" = ")
    elif isinstance(n.equal, cst.AssignEqual):
        _op(n.equal, st)
    _node(n.value, st)
    _comma(n.comma, st, default_comma)
    _ws(n.whitespace_after_arg, st)


def _binary(n: cst.BinaryOperation, st: State) -> None:
    if n.lpar:
        _open(n, st)
    tokens = st.tokens
    left, op, right = n.left, n.operator, n.right
    if type(left) in _LEAVES and not left.lpar:  # (_node's, inlined for a name or a number)
        tokens.append(left.value)
    else:
        _node(left, st)
    text = _SHARED_OPERATORS.get(id(op))
    if text is None:
        _op(op, st)
    else:
        tokens.append(text)
    if type(right) in _LEAVES and not right.lpar:
        tokens.append(right.value)
    else:
        _node(right, st)
    if n.rpar:
        _close(n, st)


def _unary(n: cst.UnaryOperation, st: State) -> None:
    if n.lpar:
        _open(n, st)
    op = n.operator
    token = _UNARY.get(type(op))
    if token is None:
        op._codegen(st)
    else:
        st.tokens.append(token)
        _ws(op.whitespace_after, st)
    _node(n.expression, st)
    if n.rpar:
        _close(n, st)


def _comparison(n: cst.Comparison, st: State) -> None:
    if n.lpar:
        _open(n, st)
    _node(n.left, st)
    for target in n.comparisons:
        _op(target.operator, st)
        _node(target.comparator, st)
    if n.rpar:
        _close(n, st)


def _elements(elements: Any, st: State, single: bool = False) -> None:
    if not single and all(type(el) is cst.Element and el.comma is _DEFAULT and type(el.value) in _LEAVES
                          and not el.value.lpar for el in elements):  # (names: a tuple of residuals)
        st.tokens.append(", ".join([el.value.value for el in elements]))
        return
    last = len(elements) - 1
    for i, el in enumerate(elements):
        if type(el) is not cst.Element:
            el._codegen(st, default_comma=single or i < last, default_comma_whitespace=not single)
            continue
        _node(el.value, st)
        _comma(el.comma, st, single or i < last, "," if single else ", ")


def _tuple(n: cst.Tuple, st: State) -> None:
    if n.lpar:
        _open(n, st)
    _elements(n.elements, st, single=len(n.elements) == 1)
    if n.rpar:
        _close(n, st)


def _list(n: cst.List, st: State) -> None:
    if n.lpar:
        _open(n, st)
    _bracket(n.lbracket, "[", st)
    _elements(n.elements, st)
    _bracket(n.rbracket, "]", st)
    if n.rpar:
        _close(n, st)


def _bracket(b: Any, token: str, st: State) -> None:
    if type(b) is cst.LeftSquareBracket:
        st.tokens.append(token)
        _ws(b.whitespace_after, st)
    elif type(b) is cst.RightSquareBracket:
        _ws(b.whitespace_before, st)
        st.tokens.append(token)
    else:
        b._codegen(st)


def _subscript(n: cst.Subscript, st: State) -> None:
    if n.lpar:
        _open(n, st)
    _node(n.value, st)
    _ws(n.whitespace_after_value, st)
    _bracket(n.lbracket, "[", st)
    last = len(n.slice) - 1
    for i, el in enumerate(n.slice):
        if type(el) is not cst.SubscriptElement:
            el._codegen(st, default_comma=(i != last))
            continue
        _node(el.slice, st)
        _comma(el.comma, st, i != last)
    _bracket(n.rbracket, "]", st)
    if n.rpar:
        _close(n, st)


def _index(n: cst.Index, st: State) -> None:
    if n.star is not None:
        st.tokens.append(n.star)
    if n.whitespace_after_star is not None:
        _ws(n.whitespace_after_star, st)
    _node(n.value, st)


def _slice(n: cst.Slice, st: State) -> None:
    if n.lower is not None:
        _node(n.lower, st)
    _op(n.first_colon, st)
    if n.upper is not None:
        _node(n.upper, st)
    if n.second_colon is _DEFAULT and n.step is not None:
        st.tokens.append(":")
    elif isinstance(n.second_colon, cst.Colon):
        _op(n.second_colon, st)
    if n.step is not None:
        _node(n.step, st)


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
    f = _PRINTERS.get(type(value))
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
        for s in n.body:
            if type(s) is cst.SimpleStatementLine:  # (_node's, inlined for the most common line)
                _simple_line(s, st)
            else:
                _node(s, st)
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


_PRINTERS: dict[type, Printer] = {
    cst.Name: _token, cst.Integer: _token, cst.Float: _token, cst.SimpleString: _token,
    cst.Attribute: _attribute, cst.Call: _call, cst.BinaryOperation: _binary, cst.UnaryOperation: _unary,
    cst.Comparison: _comparison, cst.Tuple: _tuple, cst.List: _list, cst.Subscript: _subscript,
    cst.Index: _index, cst.Slice: _slice,
    cst.EmptyLine: _empty_line, cst.TrailingWhitespace: _trailing, cst.SimpleStatementLine: _simple_line,
    cst.Assign: _assign, cst.AugAssign: _aug_assign, cst.Expr: _expr, cst.Return: _return, cst.Pass: _pass,
    cst.If: _if, cst.Else: _else, cst.For: _for, cst.While: _while, cst.IndentedBlock: _block,
    cst.FunctionDef: _funcdef,
}

#: one-token operators printed between their two whitespaces, by class
_TOKENS: dict[type, str] = {
    cls: cls()._get_token()  # type: ignore[abstract]
    for cls in (cst.Add, cst.Subtract, cst.Multiply, cst.Divide, cst.FloorDivide, cst.Modulo, cst.MatrixMultiply,
                cst.Power, cst.BitAnd, cst.BitOr, cst.BitXor, cst.LeftShift, cst.RightShift,
                cst.LessThan, cst.LessThanEqual, cst.GreaterThan, cst.GreaterThanEqual, cst.Equal, cst.NotEqual,
                cst.In, cst.Is, cst.And, cst.Or,
                cst.AddAssign, cst.SubtractAssign, cst.MultiplyAssign, cst.DivideAssign, cst.MatrixMultiplyAssign,
                cst.PowerAssign, cst.FloorDivideAssign, cst.ModuloAssign,
                cst.AssignEqual, cst.Comma, cst.Dot, cst.Colon)
}

#: unary operators: the token, then the whitespace after it
_UNARY: dict[type, str] = {cls: cls()._get_token() for cls in (cst.Minus, cst.Plus, cst.BitInvert, cst.Not)}

#: the text of each of the shared operators (:mod:`astad.pyexpr`'s, one instance of each: immortal, so
#: their ids are theirs) with the whitespace about them
_SHARED_OPERATORS: dict[int, str] = {}


def share_operators(operators: Any) -> None:
    """Print ``operators`` (nodes kept alive by the caller as long as the process lives) by table."""
    for op in operators:
        before, after = op.whitespace_before, op.whitespace_after
        if type(op) in _TOKENS and type(before) is _WS and type(after) is _WS:
            _SHARED_OPERATORS[id(op)] = before.value + _TOKENS[type(op)] + after.value


share_operators([*px.OPERATORS, px.DOT])

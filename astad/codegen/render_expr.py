"""The printing of expressions for :mod:`astad.codegen.render` (libcst's ``_codegen``, done
here for the expression nodes codegen builds): the dispatch by class (``PRINTERS``, which the
statements' printers join), whitespace, operators, parentheses, names, calls, operations,
tuples, lists, subscripts.  Any other node is printed by libcst itself."""

from __future__ import annotations

from typing import Any, Callable

import libcst as cst

from .. import pyexpr as px

_DEFAULT = cst.MaybeSentinel.DEFAULT
_WS = cst.SimpleWhitespace
#: the classes of a node printed as its ``value`` where it has no parentheses
_LEAVES = frozenset({cst.Name, cst.Integer, cst.Float, cst.SimpleString})

_NO_SPACE = px.NO_SPACE  # (the whitespace of pyexpr's arguments)
_KEYWORD_EQUAL, _MINUS, _PARENS = px._KEYWORD_EQUAL, px._MINUS, px._PARENS  # (pyexpr's shared nodes)

State = Any
Printer = Callable[..., None]

def node(n: cst.CSTNode, st: State) -> None:
    f = _printer(type(n))
    if f is None:
        n._codegen(st)  # libcst's own
    else:
        f(n, st)

def text(n: Any, st: State) -> str:
    """What expression ``n`` prints as: the nodes :mod:`astad.pyexpr` makes (names, numbers, operations
    with its shared operators, calls of its arguments, ``-x``, in its parentheses or none), their texts
    joined as strings; any other node (another whitespace, a tuple, a subscript) by the printers below,
    into ``st``'s tokens (tests/test_render.py compares both with libcst's printing)."""
    cls = type(n)
    if cls in _LEAVES:
        if not n.lpar:
            return n.value  # type: ignore[no-any-return]
        inner: str | None = n.value
    elif cls is cst.BinaryOperation:
        op = _SHARED_OPERATORS.get(id(n.operator))
        if op is None:
            inner = None
        else:
            left, right = n.left, n.right
            inner = (left.value if type(left) in _LEAVES and not left.lpar else text(left, st)) + op + \
                (right.value if type(right) in _LEAVES and not right.lpar else text(right, st))
    elif cls is cst.Call:
        inner = _call_text(n, st)
    elif cls is cst.Attribute:
        dot, attr = _SHARED_OPERATORS.get(id(n.dot)), n.attr
        inner = None if dot is None or type(attr) is not cst.Name or attr.lpar else text(n.value, st) + dot + attr.value
    elif cls is cst.UnaryOperation and n.operator is _MINUS:
        inner = "-" + text(n.expression, st)
    else:
        inner = None
    if inner is not None:
        lpar = n.lpar
        if not lpar:
            return inner
        if lpar is _PARENS[0] and n.rpar is _PARENS[1]:
            return "(" + inner + ")"
    tokens = st.tokens = []
    node(n, st)
    return "".join(tokens)


def _call_text(n: cst.Call, st: State) -> str | None:
    """``text`` of a call pyexpr makes (None: another)."""
    w, w2 = n.whitespace_after_func, n.whitespace_before_args
    if type(w) is not _WS or w.value or type(w2) is not _WS or w2.value:
        return None
    parts = []
    for arg in n.args:
        if type(arg) is not cst.Arg or arg.whitespace_after_star is not _NO_SPACE \
                or arg.whitespace_after_arg is not _NO_SPACE or arg.comma is not _DEFAULT or arg.star:
            return None
        keyword, value = arg.keyword, arg.value
        value = value.value if type(value) in _LEAVES and not value.lpar else text(value, st)
        if keyword is None:
            if arg.equal is not _DEFAULT:
                return None
            parts.append(value)
        elif arg.equal is _KEYWORD_EQUAL and type(keyword) is cst.Name and not keyword.lpar:
            parts.append(keyword.value + "=" + value)
        else:
            return None
    return text(n.func, st) + "(" + ", ".join(parts) + ")"


def _ws(w: Any, st: State) -> None:
    if type(w) is _WS:
        if w.value:
            st.tokens.append(w.value)
    else:
        w._codegen(st)


def _operand(n: Any, st: State) -> None:
    """``node(n, st)``, a name or a number without parentheses printed at once (most operands)."""
    if type(n) in _LEAVES and not n.lpar:
        st.tokens.append(n.value)
    else:
        node(n, st)


def _op(op: Any, st: State) -> None:
    """A one-token operator between two whitespaces (``+``, ``=``, ``,``, ``.``, ``<``, ``+=``)."""
    text = _SHARED_OPERATORS.get(id(op))  # (pyexpr's shared operators: their text by table)
    if text is not None:
        st.tokens.append(text)
        return
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
    _operand(n.value, st)
    _op(n.dot, st)
    _operand(n.attr, st)
    if n.rpar:
        _close(n, st)


def _call(n: cst.Call, st: State) -> None:
    if n.lpar:
        _open(n, st)
    node(n.func, st)
    _ws(n.whitespace_after_func, st)
    st.tokens.append("(")
    _ws(n.whitespace_before_args, st)
    tokens = st.tokens
    last = len(n.args) - 1
    for i, arg in enumerate(n.args):
        if type(arg) is cst.Arg and arg.whitespace_after_star is _NO_SPACE and arg.whitespace_after_arg is _NO_SPACE \
                and arg.keyword is None and arg.equal is _DEFAULT and arg.comma is _DEFAULT and not arg.star:
            _operand(arg.value, st)  # (_arg's, inlined for a positional argument as pyexpr makes it)
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
        node(n.keyword, st)
    if n.equal is _DEFAULT:
        if n.keyword is not None:
            tokens.append(" = ")
    elif isinstance(n.equal, cst.AssignEqual):
        _op(n.equal, st)
    node(n.value, st)
    _comma(n.comma, st, default_comma)
    _ws(n.whitespace_after_arg, st)


def _binary(n: cst.BinaryOperation, st: State) -> None:
    if n.lpar:
        _open(n, st)
    _operand(n.left, st)
    _op(n.operator, st)
    _operand(n.right, st)
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
    node(n.expression, st)
    if n.rpar:
        _close(n, st)


def _comparison(n: cst.Comparison, st: State) -> None:
    if n.lpar:
        _open(n, st)
    node(n.left, st)
    for target in n.comparisons:
        _op(target.operator, st)
        node(target.comparator, st)
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
        node(el.value, st)
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
    node(n.value, st)
    _ws(n.whitespace_after_value, st)
    _bracket(n.lbracket, "[", st)
    last = len(n.slice) - 1
    for i, el in enumerate(n.slice):
        if type(el) is not cst.SubscriptElement:
            el._codegen(st, default_comma=(i != last))
            continue
        node(el.slice, st)
        _comma(el.comma, st, i != last)
    _bracket(n.rbracket, "]", st)
    if n.rpar:
        _close(n, st)


def _index(n: cst.Index, st: State) -> None:
    if n.star is not None:
        st.tokens.append(n.star)
    if n.whitespace_after_star is not None:
        _ws(n.whitespace_after_star, st)
    node(n.value, st)


def _slice(n: cst.Slice, st: State) -> None:
    if n.lower is not None:
        node(n.lower, st)
    _op(n.first_colon, st)
    if n.upper is not None:
        node(n.upper, st)
    if n.second_colon is _DEFAULT and n.step is not None:
        st.tokens.append(":")
    elif isinstance(n.second_colon, cst.Colon):
        _op(n.second_colon, st)
    if n.step is not None:
        node(n.step, st)

PRINTERS: dict[type, Printer] = {
    cst.Name: _token, cst.Integer: _token, cst.Float: _token, cst.SimpleString: _token,
    cst.Attribute: _attribute, cst.Call: _call, cst.BinaryOperation: _binary, cst.UnaryOperation: _unary,
    cst.Comparison: _comparison, cst.Tuple: _tuple, cst.List: _list, cst.Subscript: _subscript,
    cst.Index: _index, cst.Slice: _slice,
}
#: the printer of a node's class, or None (``PRINTERS.get``, bound once: read for every node printed)
_printer = PRINTERS.get

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

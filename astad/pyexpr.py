"""Small builders of libcst expression nodes that parenthesise by precedence.

libcst prints exactly the tree it is given, so nesting ``a + b`` under ``*``
needs explicit parentheses; these helpers add them where Python needs them and
nowhere else, so generated code reads like hand-written code.
"""

from __future__ import annotations

import functools
import math
from typing import Any, Sequence

import libcst as cst

_BINOPS: dict[str, tuple[type, int]] = {
    "+": (cst.Add, 10),
    "-": (cst.Subtract, 10),
    "*": (cst.Multiply, 11),
    "/": (cst.Divide, 11),
    "//": (cst.FloorDivide, 11),
    "%": (cst.Modulo, 11),
    "@": (cst.MatrixMultiply, 11),
    "**": (cst.Power, 13),
    "&": (cst.BitAnd, 8),
    "|": (cst.BitOr, 6),
}
_CMPOPS: dict[str, type] = {
    "<": cst.LessThan,
    "<=": cst.LessThanEqual,
    ">": cst.GreaterThan,
    ">=": cst.GreaterThanEqual,
    "==": cst.Equal,
    "!=": cst.NotEqual,
}
_UNARY = 12
# Nodes are immutable: one instance of an operator (and of empty whitespace) serves every
# expression (libcst makes a node for each default field of each node otherwise)
_OPERATORS = {op: cls() for op, (cls, _) in _BINOPS.items()}
_NO_SPACE = cst.SimpleWhitespace("")
_KEYWORD_EQUAL = cst.AssignEqual(whitespace_before=_NO_SPACE, whitespace_after=_NO_SPACE)
_ATOM = 20


def precedence(node: cst.BaseExpression) -> int:
    if node.lpar:
        return _ATOM
    cls = type(node)  # (looked up by class: isinstance of libcst's abstract classes is slow)
    if cls is cst.BinaryOperation:
        return _OPERATOR_PRECEDENCE.get(type(node.operator), _ATOM)
    return _PRECEDENCE.get(cls, _ATOM)


_OPERATOR_PRECEDENCE = {cls: p for cls, p in _BINOPS.values()}
_PRECEDENCE = {cst.UnaryOperation: _UNARY, cst.Comparison: 5, cst.IfExp: 1, cst.Tuple: 0}


def paren(node: cst.BaseExpression) -> cst.BaseExpression:
    return node.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])


def _at_least(node: cst.BaseExpression, prec: int) -> cst.BaseExpression:
    return node if precedence(node) >= prec else paren(node)


def binop(op: str, left: cst.BaseExpression, right: cst.BaseExpression) -> cst.BaseExpression:
    p = _BINOPS[op][1]
    if op == "**":  # right-associative; a unary operand on the left needs parentheses
        left, right = _at_least(left, p + 1), _at_least(right, _UNARY)
    else:
        left, right = _at_least(left, p), _at_least(right, p + 1)
    return cst.BinaryOperation(left=left, operator=_OPERATORS[op], right=right)


def compare(op: str, left: cst.BaseExpression, right: cst.BaseExpression) -> cst.BaseExpression:
    return cst.Comparison(
        left=_at_least(left, 6),
        comparisons=[cst.ComparisonTarget(operator=_CMPOPS[op](), comparator=_at_least(right, 6))],
    )


def neg(operand: cst.BaseExpression) -> cst.BaseExpression:
    return cst.UnaryOperation(operator=cst.Minus(), expression=_at_least(operand, _UNARY))


@functools.lru_cache(maxsize=4096)
def name(text: str) -> cst.BaseExpression:
    """A dotted name such as ``np.tanh`` (one node for each text: nodes are immutable)."""
    parts = text.split(".")
    node: cst.BaseExpression = cst.Name(parts[0])
    for part in parts[1:]:
        node = cst.Attribute(value=node, attr=cst.Name(part))
    return node


def attr(value: cst.BaseExpression, attribute: str) -> cst.BaseExpression:
    return cst.Attribute(value=_at_least(value, _ATOM), attr=cst.Name(attribute))


def call(func: str | cst.BaseExpression, args: Sequence[cst.BaseExpression] = (), **kwargs: cst.BaseExpression) -> cst.BaseExpression:
    fn = name(func) if isinstance(func, str) else _at_least(func, _ATOM)
    arglist = [cst.Arg(value=a, whitespace_after_star=_NO_SPACE, whitespace_after_arg=_NO_SPACE) for a in args] + [
        cst.Arg(value=v, keyword=cst.Name(k), equal=_KEYWORD_EQUAL, whitespace_after_star=_NO_SPACE,
                whitespace_after_arg=_NO_SPACE)
        for k, v in kwargs.items()
    ]
    return cst.Call(func=fn, args=arglist)


def method(obj: cst.BaseExpression, meth: str, args: Sequence[cst.BaseExpression] = (), **kwargs: cst.BaseExpression) -> cst.BaseExpression:
    return call(attr(obj, meth), args, **kwargs)


def subscript(value: cst.BaseExpression, items: Sequence[cst.BaseExpression | cst.Slice]) -> cst.BaseExpression:
    elements = [cst.SubscriptElement(slice=i if isinstance(i, cst.Slice) else cst.Index(value=i)) for i in items]
    return cst.Subscript(value=_at_least(value, _ATOM), slice=elements)


def tuple_(items: Sequence[cst.BaseExpression]) -> cst.BaseExpression:
    elements = [cst.Element(value=i) for i in items]
    if len(items) == 1:
        elements = [cst.Element(value=items[0], comma=cst.Comma())]
    return cst.Tuple(elements=elements)


def literal(value: Any) -> cst.BaseExpression:
    """Python source for a constant: numbers, booleans, None, tuples of them."""
    if value is None or isinstance(value, bool):
        return cst.Name(repr(value))
    if isinstance(value, tuple):
        return tuple_([literal(v) for v in value])
    if isinstance(value, int):
        node: cst.BaseExpression = cst.Integer(str(abs(value)))
        return neg(node) if value < 0 else node
    if isinstance(value, float):
        if math.isnan(value):
            return name("np.nan")
        if math.isinf(value):
            return neg(name("np.inf")) if value < 0 else name("np.inf")
        node = cst.Float(repr(abs(value)))
        return neg(node) if value < 0 or (value == 0 and math.copysign(1, value) < 0) else node
    raise TypeError(f"no literal for {value!r}")


def slice_(start: cst.BaseExpression | None, stop: cst.BaseExpression | None, step: cst.BaseExpression | None) -> cst.Slice:
    return cst.Slice(lower=start, upper=stop, step=step)

"""Small builders of libcst expression nodes that parenthesise by precedence.

libcst prints exactly the tree it is given, so nesting ``a + b`` under ``*``
needs explicit parentheses; these helpers add them where Python needs them and
nowhere else, so generated code reads like hand-written code.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import types
from typing import Any, Callable, Sequence

import libcst as cst


def maker(cls: type, *given: str, **fixed: Any) -> Callable[..., Any]:
    """``make(*values, **others)``: libcst's ``cls(**dict(zip(given, values)), **fixed, **others)``,
    made as its dataclass ``__init__`` makes it, less its ``_validate`` (what is made
    here is what libcst would make: tests/test_render.py, tests/test_from_ast.py) and
    its default factories: each field neither given nor passed holds its ``fixed``
    value or one default instance, shared by every node (nodes are immutable).  The
    parameters: the ``given`` fields, then the others in the class's order (so
    ``maker(cls)`` is called as ``cls`` is).  A third of the time of making a node;
    codegen makes some 25 thousand for a 500-statement function."""
    fields = [f.name for f in dataclasses.fields(cls)]
    assert set(given) | set(fixed) <= set(fields) and not set(given) & set(fixed), (cls, given, fixed)
    scope: dict[str, Any] = {"_new": object.__new__, "_set": object.__setattr__, "_cls": cls}
    params = list(given)
    for f in dataclasses.fields(cls):
        if f.name in given:
            continue
        if f.name in fixed:
            scope["_d_" + f.name] = fixed[f.name]
        elif f.default is not dataclasses.MISSING:
            scope["_d_" + f.name] = f.default
        elif f.default_factory is not dataclasses.MISSING:  # type: ignore[misc]
            scope["_d_" + f.name] = f.default_factory()  # type: ignore[misc]
        params.append(f"{f.name}=_d_{f.name}" if "_d_" + f.name in scope else f.name)
    lines = []
    for f in fields:  # a slot's own setter where the field is one (a third faster than object.__setattr__)
        slot = getattr(cls, f, None)
        if isinstance(slot, types.MemberDescriptorType):
            scope["_s_" + f] = slot.__set__
            lines.append(f"    _s_{f}(_node, {f})\n")
        else:
            lines.append(f"    _set(_node, {f!r}, {f})\n")
    body = "".join(lines)
    exec(f"def make({', '.join(params)}):\n    _node = _new(_cls)\n{body}    return _node\n", scope)  # noqa: S102
    return scope["make"]  # type: ignore[no-any-return]


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
OPERATORS = tuple(_OPERATORS.values())  # (printed by table: astad.codegen.render)
_NO_SPACE = NO_SPACE = cst.SimpleWhitespace("")
_KEYWORD_EQUAL = cst.AssignEqual(whitespace_before=_NO_SPACE, whitespace_after=_NO_SPACE)
_MINUS = cst.Minus()
_PARENS = ((cst.LeftParen(),), (cst.RightParen(),))
_ATOM = 20

_binary = maker(cst.BinaryOperation, "left", "operator", "right")
_unary_minus = maker(cst.UnaryOperation, "expression", operator=_MINUS)
_call = maker(cst.Call, "func", "args")
_arg = maker(cst.Arg, "value", whitespace_after_star=_NO_SPACE, whitespace_after_arg=_NO_SPACE)
_element = maker(cst.Element, "value")
_tuple = maker(cst.Tuple, "elements")
_float = maker(cst.Float, "value")
_integer = maker(cst.Integer, "value")


def precedence(node: cst.BaseExpression) -> int:
    if node.lpar:
        return _ATOM
    cls = type(node)  # (looked up by class: isinstance of libcst's abstract classes is slow)
    if cls is cst.BinaryOperation:
        return _OPERATOR_PRECEDENCE.get(type(node.operator), _ATOM)
    return _PRECEDENCE.get(cls, _ATOM)


_OPERATOR_PRECEDENCE = {cls: p for cls, p in _BINOPS.values()}
_PRECEDENCE = {cst.UnaryOperation: _UNARY, cst.Comparison: 5, cst.IfExp: 1, cst.Tuple: 0}
#: classes whose nodes are atoms with or without parentheses (``precedence`` is ``_ATOM``)
_ATOMS = frozenset({cst.Name, cst.Integer, cst.Float, cst.SimpleString, cst.Call, cst.Attribute, cst.Subscript,
                    cst.List}) - _PRECEDENCE.keys() - {cst.BinaryOperation}


def paren(node: cst.BaseExpression) -> cst.BaseExpression:
    """``node`` in parentheses (``node.with_changes(lpar=..., rpar=...)``, less its validation: balanced)."""
    cls = type(node)
    names = _FIELDS.get(cls)
    if names is None:
        names = _FIELDS[cls] = tuple(f.name for f in dataclasses.fields(cls) if f.name not in ("lpar", "rpar"))
    copy = object.__new__(cls)
    for f in names:
        object.__setattr__(copy, f, getattr(node, f))
    object.__setattr__(copy, "lpar", _PARENS[0])
    object.__setattr__(copy, "rpar", _PARENS[1])
    return copy


_FIELDS: dict[type, tuple[str, ...]] = {}


def _at_least(node: cst.BaseExpression, prec: int) -> cst.BaseExpression:
    return node if precedence(node) >= prec else paren(node)


def binop(op: str, left: cst.BaseExpression, right: cst.BaseExpression) -> cst.BaseExpression:
    p = _BINOPS[op][1]
    if op == "**":  # right-associative; a unary operand on the left needs parentheses
        left, right = _at_least(left, p + 1), _at_least(right, _UNARY)
    else:  # (_at_least's, inlined: most operands are names, calls, numbers)
        if type(left) not in _ATOMS and precedence(left) < p:
            left = paren(left)
        if type(right) not in _ATOMS and precedence(right) <= p:
            right = paren(right)
    return _binary(left, _OPERATORS[op], right)


def compare(op: str, left: cst.BaseExpression, right: cst.BaseExpression) -> cst.BaseExpression:
    return cst.Comparison(
        left=_at_least(left, 6),
        comparisons=[cst.ComparisonTarget(operator=_CMPOPS[op](), comparator=_at_least(right, 6))],
    )


def neg(operand: cst.BaseExpression) -> cst.BaseExpression:
    return _unary_minus(_at_least(operand, _UNARY))


@functools.lru_cache(maxsize=4096)
def name(text: str) -> cst.BaseExpression:
    """A dotted name such as ``np.tanh`` (one node for each text: nodes are immutable)."""
    parts = text.split(".")
    node: cst.BaseExpression = identifier(parts[0])
    for part in parts[1:]:
        node = _attribute(node, identifier(part))
    return node


def attr(value: cst.BaseExpression, attribute: str) -> cst.BaseExpression:
    return cst.Attribute(value=_at_least(value, _ATOM), attr=cst.Name(attribute))


def call(func: str | cst.BaseExpression, args: Sequence[cst.BaseExpression] = (), **kwargs: cst.BaseExpression) -> cst.BaseExpression:
    fn = name(func) if isinstance(func, str) else _at_least(func, _ATOM)
    arglist = [_arg(a) for a in args]
    if kwargs:
        arglist += [cst.Arg(value=v, keyword=cst.Name(k), equal=_KEYWORD_EQUAL, whitespace_after_star=_NO_SPACE,
                            whitespace_after_arg=_NO_SPACE) for k, v in kwargs.items()]
    return _call(fn, arglist)


def method(obj: cst.BaseExpression, meth: str, args: Sequence[cst.BaseExpression] = (), **kwargs: cst.BaseExpression) -> cst.BaseExpression:
    return call(attr(obj, meth), args, **kwargs)


def subscript(value: cst.BaseExpression, items: Sequence[cst.BaseExpression | cst.Slice]) -> cst.BaseExpression:
    elements = [_subscript_element(i if isinstance(i, cst.Slice) else _index(i)) for i in items]
    return _subscript(_at_least(value, _ATOM), elements)


def tuple_(items: Sequence[cst.BaseExpression]) -> cst.BaseExpression:
    if len(items) == 1:
        return _tuple([cst.Element(value=items[0], comma=cst.Comma())])
    return _tuple([_element(i) for i in items])


def list_(items: Sequence[cst.BaseExpression]) -> cst.BaseExpression:
    """``[a, b, ...]``."""
    return _list([_element(i) for i in items])


def bare_tuple(items: Sequence[cst.BaseExpression]) -> cst.BaseExpression:
    """``a, b`` (a tuple of at least two items, without parentheses: a target, a return value)."""
    return _bare_tuple([_element(i) for i in items])


_bare_tuple = maker(cst.Tuple, "elements", lpar=(), rpar=())
_list = maker(cst.List, "elements")
_name = maker(cst.Name, "value")
_attribute = maker(cst.Attribute, "value", "attr")


@functools.lru_cache(maxsize=4096)
def identifier(text: str) -> cst.Name:
    """``cst.Name(text)``, of a plain identifier made faster (libcst's check kept: an identifier; one
    node for each text, as :func:`name`'s)."""
    return _name(text) if text.isidentifier() else cst.Name(text)


def literal(value: Any) -> cst.BaseExpression:
    """Python source for a constant: numbers, booleans, None, tuples of them."""
    cls = type(value)
    if (cls is float or cls is int) and value and value == value:  # (one node for each number: nodes are
        node = _NUMBERS.get((cls, value))  # immutable; not zero, whose sign equality does not tell, nor NaN)
        if node is None:
            node = _literal(value)
            if len(_NUMBERS) < 4096:
                _NUMBERS[cls, value] = node
        return node
    return _literal(value)


_NUMBERS: dict[tuple[type, Any], cst.BaseExpression] = {}


def _literal(value: Any) -> cst.BaseExpression:
    if value is None or isinstance(value, bool):
        return cst.Name(repr(value))
    if isinstance(value, tuple):
        return tuple_([literal(v) for v in value])
    if isinstance(value, int):
        node: cst.BaseExpression = _integer(str(abs(value)))
        return neg(node) if value < 0 else node
    if isinstance(value, float):
        if math.isnan(value):
            return name("np.nan")
        if math.isinf(value):
            return neg(name("np.inf")) if value < 0 else name("np.inf")
        node = _float(repr(abs(value)))
        return neg(node) if value < 0 or (value == 0 and math.copysign(1, value) < 0) else node
    raise TypeError(f"no literal for {value!r}")


def slice_(start: cst.BaseExpression | None, stop: cst.BaseExpression | None, step: cst.BaseExpression | None) -> cst.Slice:
    return _slice(start, stop, step)


_subscript = maker(cst.Subscript, "value", "slice")
_subscript_element = maker(cst.SubscriptElement, "slice")
_index = maker(cst.Index, "value")
_slice = maker(cst.Slice, "lower", "upper", "step")
#: the dot of every dotted name :func:`name` makes (one instance: printed by table, astad.codegen.render)
DOT = _attribute(_name("a"), _name("b")).dot

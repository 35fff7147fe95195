"""Expressions printed as they are made: reverse mode's common operations (``a * b``, ``np.sin(x)``,
``-x``, of names, numbers and such expressions) as text, without libcst nodes.

Codegen builds an expression bottom-up (an operation of its operands, a temporary read once inlined
into the expression reading it) and prints it when a line assigns it.  :class:`Text` is such an
expression already printed: its text, its precedence (:func:`astad.pyexpr.precedence`'s), and how its
libcst node is made where something needs the node (an operation printed by another rule, a walk):
the node :mod:`astad.pyexpr` would have made, which prints as the text (the parentheses are put where
pyexpr puts them).  tests/test_render.py checks that on drawn expressions, and that every generated
module prints as libcst prints it made of nodes (``codegen.python.TEXT_LINES`` off).
"""

from __future__ import annotations

import functools
from typing import Any, Callable, Sequence

from .. import pyexpr as px
from .render_expr import _SHARED_OPERATORS, text as node_text

_ATOM, _UNARY = px._ATOM, px._UNARY
#: each binary operator's precedence and text with its spaces (`` * ``)
BINOPS = {op: (p, _SHARED_OPERATORS[id(px._OPERATORS[op])]) for op, (_, p) in px._BINOPS.items()}


class Text:
    """An expression already printed (see the module's docstring)."""

    __slots__ = ("text", "prec", "_node", "_make", "_parts")

    def __init__(self, text: str, prec: int, node: Any = None, make: Callable[..., Any] | None = None,
                 parts: tuple = ()) -> None:
        self.text, self.prec, self._node, self._make, self._parts = text, prec, node, make, parts

    def node(self) -> Any:
        """The libcst node pyexpr makes of this expression (made once, when first asked for)."""
        made = self._node
        if made is None:
            made = self._node = self._make(*[p.node() if type(p) is Text else p for p in self._parts])
        return made


#: the variables' Texts kept (more: all forgotten, then made again as asked for)
NAMES_HELD = 4096


class _Names(dict):
    """A variable's name -> its Text (one for each name, as :func:`astad.pyexpr.name`'s nodes), made when
    first asked for: ``NAMES[n]`` costs a dict's lookup where a ``functools.lru_cache`` call costs twice that
    (codegen reads a name's Text for nearly every operand it prints)."""

    def __missing__(self, text: str) -> Text:
        if len(self) >= NAMES_HELD:
            self.clear()
        made = self[text] = Text(text, _ATOM, None, px.name, (text,))
        return made


NAMES = _Names()


def name(text: str) -> Text:
    """A variable (one for each name, as :func:`astad.pyexpr.name`'s nodes)."""
    return NAMES[text]


def of(node: Any, st: Any) -> Text:
    """A node already made (another rule's expression), printed."""
    return Text(node_text(node, st), px.precedence(node), node)


def binop(op: str, left: Text, right: Text) -> Text:
    """:func:`astad.pyexpr.binop`, printed."""
    return binop_of(op, (left, right))


def binop_of(op: str, operands: Sequence[Text]) -> Text:
    """``binop(op, *operands)`` (a table's printer: ``functools.partial(binop_of, op)``, no frame of its own)."""
    left, right = operands
    p, token = BINOPS[op]
    if op == "**":  # right-associative; a unary operand on the left needs parentheses
        lt = left.text if left.prec >= p + 1 else "(" + left.text + ")"
        rt = right.text if right.prec >= _UNARY else "(" + right.text + ")"
    else:
        lt = left.text if left.prec >= p else "(" + left.text + ")"
        rt = right.text if right.prec > p else "(" + right.text + ")"
    return Text(lt + token + rt, p, None, px.binop, (op, left, right))


def call(func: str, args: Sequence[Text]) -> Text:
    """:func:`astad.pyexpr.call` of positional arguments, printed."""
    return Text(func + "(" + ", ".join([a.text for a in args]) + ")", _ATOM, None, call_node, (func, *args))


def call_node(func: str, *args: Any) -> Any:
    return px.call(func, args)


def neg(operand: Text) -> Text:
    """:func:`astad.pyexpr.neg`, printed."""
    inner = operand.text if operand.prec >= _UNARY else "(" + operand.text + ")"
    return Text("-" + inner, _UNARY, None, px.neg, (operand,))


def printer(form: tuple[str, str]) -> Callable[[list[Text]], Text]:
    """How a form of :data:`astad.rules.emit.TEXT_FORMS` prints its operands."""
    kind, what = form
    if kind == "binop":
        return functools.partial(binop_of, what)
    if kind == "call":
        return functools.partial(call, what)
    assert kind == "neg", form
    return lambda args: neg(args[0])

"""Lowering what a function does besides computing: ``print(...)``,
``raise SomeError(message)`` and ``assert cond, message``.  Each becomes an
effect primitive (:mod:`astad.rules.python`) that the macros keep in the
primal pass, where it runs with the primal values, as in the user's code.
Its message is a *layout* of atoms: strings, f-strings, tuples and lists of
values, printed back as the user wrote them (f-strings only here).
"""

from __future__ import annotations

import ast
import builtins

import libcst as cst

from ..values import PyDict, PyTuple, Ref
from ..ir import Atom, Const, NoneT, Var
from .abstract import literal_type
from .scopes import Value
from .syntax import else_stmts_of, stmts_of
from .core import LowererCore


class Effects(LowererCore):
    """``print``, ``raise`` and ``assert``."""

    def is_print(self, node: cst.BaseExpression) -> bool:
        """Whether an expression statement is a call of the builtin ``print``."""
        if not isinstance(node, cst.Call):
            return False
        func = self.expr(node.func)
        return isinstance(func, Ref) and func.kind == "print"

    def print_call(self, node: cst.Call) -> Value:
        """``print(*values, sep=..., end=..., flush=...)``: printed when the primal would print."""
        args: list[Atom] = []
        layout, params = [], {}
        for arg in node.args:
            if arg.star:
                raise self.syntax_error("`*` in print(...) is not supported", "the values, one by one", arg)
            if arg.keyword is None:
                layout.append(self.layout(arg.value, args))
            elif arg.keyword.value in ("sep", "end", "flush"):
                params[arg.keyword.value] = self.static(self.expr(arg.value), arg.value, arg.keyword.value)
            else:
                raise self.type_error(f"print(..., {arg.keyword.value}=...) is not supported", arg,
                                      "print to standard output, with sep=, end= or flush=")
        for key in ("sep", "end"):
            if params.get(key) is not None and not isinstance(params[key], str):
                raise self.type_error(f"print's `{key}` must be a string or None", node)
        self.emit("print", args, {"layout": tuple(layout), **params})
        return Const.literal(None, NoneT())

    def raise_statement(self, node: cst.Raise) -> None:
        """``raise SomeError(message)`` (a builtin exception): raised in the primal pass, as in the primal."""
        if node.exc is None or node.cause is not None:
            raise self.syntax_error("only `raise SomeError(message)` is supported (no bare `raise`, no `from`)",
                                    "raise ValueError(f\"...\")", node)
        call = node.exc if isinstance(node.exc, cst.Call) else None
        name = self.exception_name(call.func if call is not None else node.exc)
        args: list[Atom] = []
        layout = []
        for arg in call.args if call is not None else ():
            if arg.star or arg.keyword is not None:
                raise self.syntax_error("the exception's arguments must be plain values", "raise ValueError(message)", arg)
            layout.append(self.layout(arg.value, args))
        self.emit("raise", args, {"exc": name, "layout": tuple(layout)})

    def exception_name(self, node: cst.BaseExpression) -> str:
        """The name of a builtin exception class (the generated code names it, as the user did)."""
        name = node.value if isinstance(node, cst.Name) else None
        obj = self.expr(node) if name is not None else None
        if not (isinstance(obj, Ref) and isinstance(obj.obj, type) and issubclass(obj.obj, BaseException)
                and getattr(builtins, name or "", None) is obj.obj):  # type: ignore[arg-type]
            raise self.type_error("only Python's builtin exceptions can be raised", node,
                                  "raise ValueError(...), TypeError(...), RuntimeError(...), ...")
        return name  # type: ignore[return-value]

    def assert_statement(self, node: cst.Assert) -> None:
        """``assert cond, message``: checked in the primal pass (nothing when ``cond`` is known to hold)."""
        cond = self.condition(node.test)
        if cond is True:
            return
        message: list[Atom] = []  # the message's atoms, after the condition
        layout = None if node.msg is None else self.layout(node.msg, message)
        test = Const.literal(False, literal_type(False)) if cond is False else cond
        self.emit("assert", [test, *message], {"layout": layout})

    def split_raising_if(self, stmt: cst.If, following: list[cst.BaseStatement]) -> list[cst.BaseStatement] | None:
        """An ``if`` one of whose ways ends with ``raise`` as a guard and the other way after
        it, as Python runs them (so the names the other way assigns, or the value it returns,
        are those after the ``if``):

        * ``if c: ... raise E`` ``else: B`` -> ``if c: ... raise E``, then ``B``;
        * ``if c: A`` ``else: ... raise E`` -> ``if not c: ... raise E``, then ``A``;
        * ``if c: ... return v``, then ``... raise E`` -> ``if not c: ... raise E``, then ``... return v``.

        The statements to lower instead of ``stmt`` and ``following``; None: not of these forms."""
        body = stmts_of(stmt.body)
        if stmt.orelse is not None and _ends_with(body, cst.Raise):
            guard, after = cst.If(test=stmt.test, body=stmt.body), else_stmts_of(stmt) + following
        elif isinstance(stmt.orelse, cst.Else) and _ends_with(stmts_of(stmt.orelse.body), cst.Raise):
            guard, after = cst.If(test=cst.UnaryOperation(cst.Not(), stmt.test), body=stmt.orelse.body), body + following
        elif stmt.orelse is None and _ends_with(body, cst.Return) and _ends_with(following, cst.Raise):
            guard = cst.If(test=cst.UnaryOperation(cst.Not(), stmt.test), body=cst.IndentedBlock(following))
            after = body
        else:
            return None
        self.alias(guard, stmt)  # errors in the guard point at the user's `if`
        return [guard, *after]

    # ------------------------------------------------------------------ messages

    def layout(self, node: cst.BaseExpression, args: list[Atom]) -> tuple:
        """How a printed value is made of atoms (:mod:`astad.rules.python`); its atoms
        are appended to ``args``."""
        if isinstance(node, cst.FormattedString):
            return ("fstr", tuple(q for p in node.parts for q in self.fstring_parts(node, p, args)))
        if isinstance(node, cst.ConcatenatedString):
            return ("cat", (self.layout(node.left, args), self.layout(node.right, args)))
        return self.value_layout(self.expr(node), node, args)

    def value_layout(self, value: Value, node: cst.CSTNode, args: list[Atom]) -> tuple:
        if isinstance(value, Ref) and value.kind == "string" and isinstance(value.obj, str):
            return ("str", value.obj)
        if isinstance(value, PyTuple) and value.fields is None:
            items = tuple(self.value_layout(v, node, args) for v in value.items)
            return ("seq", "list" if value.is_list else "tuple", items)
        if isinstance(value, PyDict):
            return ("dict", value.keys, tuple(self.value_layout(v, node, args) for v in value.items))
        if not isinstance(value, (Var, Const)):
            raise self.type_error("only numbers, arrays, strings, and tuples, lists and dicts of them can be printed "
                                  "or put in a message", node, "print(x), print(f\"x = {x}\"), print(\"x:\", x)")
        args.append(value)
        return ("arg", len(args) - 1)

    def fstring_parts(self, node: cst.FormattedString, part: cst.BaseFormattedStringContent,
                      args: list[Atom]) -> list[tuple]:
        if isinstance(part, cst.FormattedStringText):
            return [("text", _text(node, part.value))]
        assert isinstance(part, cst.FormattedStringExpression)
        spec = None
        if part.format_spec:
            if not all(isinstance(s, cst.FormattedStringText) for s in part.format_spec):
                raise self.syntax_error("a format spec computed from values is not supported", "a literal spec, "
                                        "e.g. f\"{x:.3f}\"", part)
            spec = "".join(s.value for s in part.format_spec)  # type: ignore[union-attr]
        value = self.layout(part.expression, args)
        conversion = part.conversion
        if part.equal is not None:  # f"{x=}": the text of the expression, then its repr (the user's text)
            code = cst.Module([]).code_for_node(part.expression)
            eq = part.equal
            text = (f"{_ws(part.whitespace_before_expression)}{code}{_ws(part.whitespace_after_expression)}"
                    f"{_ws(eq.whitespace_before)}={_ws(eq.whitespace_after)}")
            return [("text", text), ("field", value, conversion or (None if spec else "r"), spec)]
        return [("field", value, conversion, spec)]


def _ends_with(stmts: list[cst.BaseStatement], kind: type) -> bool:
    """Whether a block ends with a ``raise`` (``return``) at its own level."""
    last = stmts[-1] if stmts else None
    return isinstance(last, cst.SimpleStatementLine) and isinstance(last.body[-1], kind)


def _ws(w: cst.BaseParenthesizableWhitespace) -> str:
    return cst.Module([]).code_for_node(w) if isinstance(w, cst.CSTNode) else ""


def _text(node: cst.FormattedString, raw: str) -> str:
    """The text of an f-string's literal part, as Python reads it (escapes, ``{{``)."""
    tree = ast.parse(f"{node.start}{raw}{node.end}", mode="eval").body
    assert isinstance(tree, ast.JoinedStr)
    return "".join(v.value for v in tree.values if isinstance(v, ast.Constant))

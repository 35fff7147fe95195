"""Lowering straight-line code (:mod:`.straight`) from Python's tree, without its
libcst nodes: the steps the lowering of libcst's nodes takes in its commonest
cases (names, numbers, arithmetic, a module's attributes, an array's
attributes, calls of numpy functions), in the same order, each node of Python's
tree standing for the libcst node :mod:`.from_ast` would make of it (where it
starts: the same place).

Where an expression's node starts is not noted (:class:`astad.positions.Starts`): its
own ``lineno`` and ``col_offset`` say it (:meth:`.core.LowererCore.emit`,
:meth:`.parse.Parsed.loc`), the start of the libcst node it stands for.

Anything else (another value, another call, any error) is not lowered here:
the lowering starts again from the beginning and lowers the function's libcst
nodes (:meth:`.statements.Statements.lower_function`), which give what they
give, the same errors at the same places.  ``tests/test_frontend_s12.py``
checks both ways give the same IR.
"""

from __future__ import annotations

import ast
import operator
from typing import Any

import libcst as cst

from .. import deep, rules
from ..deep import LazyNodes
from ..ir import Bind, Const, Num, Prim, Var
from ..positions import Starts
from ..values import PyTuple, Ref
from .core import _FOLDABLE, LowererCore
from .expressions import _BIN_OPS, _ROOM_EVERY
from .from_ast_expr import _BINARY
from .numpy_api import API, numpy_name
from .scopes import Value, is_list_value


class Declined(Exception):
    """What the lowering of Python's tree leaves to the lowering of libcst's nodes."""


#: the operation of each of Python's binary operators (those :mod:`.expressions` lowers)
_OPS = {k: _BIN_OPS[type(v)] for k, v in _BINARY.items() if type(v) in _BIN_OPS}
_new = object.__new__
_name_value, _name_lpar, _name_rpar = (getattr(cst.Name, f).__set__ for f in ("value", "lpar", "rpar"))
_LITERALS = {int: cst.Integer, float: cst.Float}
#: where a node of Python's tree starts: its libcst node's start (straight-line code is ASCII text)
_start = operator.attrgetter("lineno", "col_offset")
_NAME, _CONSTANT, _ATTRIBUTE = ast.Name, ast.Constant, ast.Attribute
_TABLE = rules.TABLE


class _Unfollowed:
    """The alias analysis (:class:`astad.aliases.Aliases`) of straight-line code lowered here: its bindings'
    roots are not noted (two objects a binding), since nothing here asks for them; anything that
    would (an update in place, ``out=``, a list made) declines, and the lowering of libcst's nodes
    starts again with the analysis followed."""

    def prim(self, var: Any, op: str, args: list, params: dict, immutable: bool) -> None:
        pass

    def same(self, new: Any, old: Any) -> None:
        pass

    def __getattr__(self, name: str) -> Any:
        raise Declined(f"aliases.{name}")


_UNFOLLOWED = _Unfollowed()


class Fast(LowererCore):
    """Straight-line code read from Python's tree."""

    fast_lines: list[str]  # the lines the nodes of Python's tree are on (their numbers: 1 the first)

    def lower_straight(self, block: LazyNodes) -> Value:
        """:meth:`.statements.Statements.lower_body` of straight-line statements.  Which values may share
        memory is not followed (:class:`_Unfollowed`): nothing here updates a value in place."""
        stmts, self.fast_lines = block.source
        if type(self.root.positions) is not Starts or self.root.aliases:  # (never: a block read lazily is read
            raise Declined("positions")  # with Python's parser, which keeps its nodes' starts, of a `def`)
        self.aliases = _UNFOLLOWED  # type: ignore[assignment]
        return deep.call(self._lower_straight, stmts)

    def _lower_straight(self, stmts: list[ast.stmt]) -> Value:
        positions = self.root.positions
        env = self.scope.env
        for st in stmts:
            positions[id(st)] = _start(st)  # (the statement's libcst node starts there)
            self.node = st
            if type(st) is ast.Expr:  # (a docstring)
                continue
            if type(st) is ast.Return:
                return self.give_back(self.expr(st.value))  # type: ignore[arg-type]
            name = st.targets[0].id  # type: ignore[attr-defined]
            node = st.value  # type: ignore[attr-defined]
            kind = type(node)
            if (kind is ast.BinOp or kind is ast.Call) and self.roomy and not self.expr_depth:
                # (self.expr's steps for a statement's own level, inline, the user's name given to the binding
                # made: name_result's renaming without the temporary's variable and binding; the same names drawn)
                self.node, self.expr_depth = node, 1
                try:
                    value = self.ast_BinOp(node, name) if kind is ast.BinOp else self.ast_Call(node, name)
                finally:
                    self.node, self.expr_depth = st, 0
                env[name] = value if value is self.named else self.name_result(value, name)
                continue
            value = self.expr(node)
            env[name] = self.name_result(value, name)
        raise Declined("no return")  # (straight-line code ends with its return: not reached)

    def ast_leaf(self, n: ast.expr) -> Any:
        """The libcst node of a name or a number (its constant, where the number was read before); one
        per node of Python's tree, kept with the starts where it is keyed (:class:`astad.positions.Starts`)."""
        positions = self.root.positions
        if type(n) is not ast.Name:  # (a number: its text, as written, is its key among the constants)
            raw = self.fast_lines[n.lineno - 1][n.col_offset:n.end_col_offset]
            known = self.literals.get(raw)
            if known is not None and type(known.value) is type(n.value):  # type: ignore[attr-defined]
                return known
        leaves = positions.kept[1]
        node = leaves.get(id(n))
        if node is None:
            if type(n) is ast.Name:
                node = _new(cst.Name)
                _name_value(node, n.id)
                _name_lpar(node, ())
                _name_rpar(node, ())
            else:
                node = _LITERALS[type(n.value)](raw)  # type: ignore[attr-defined]
            node = leaves.setdefault(id(n), node)  # (another thread's, where it made one first: one node kept)
            positions[id(node)] = _start(n)
        return node

    def ast_BinOp(self, n: ast.BinOp, name: str | None = None) -> Value:
        """:meth:`.expressions.Expressions.expr_BinaryOperation` (``name``: the user's, for the binding
        made: :meth:`.core.LowererCore.emit`).  An operand that is a name of the running scope, or a number
        written before, is read as :meth:`.expressions.Expressions.expr` and :meth:`ast_leaf` read it first
        (inline: most operands are)."""
        op = _OPS.get(type(n.op))
        if op is None:
            raise Declined("operator")
        env = self.stack[-1].env
        left, right = self._operand(n.left, env), self._operand(n.right, env)
        kind, other = type(left), type(right)
        if not ((kind is Var or kind is Const) and (other is Var or other is Const)
                and (op != "add" or type(left.type) is Num)):  # type: ignore[union-attr]
            if op == "add" and is_list_value(left):
                raise Declined("lists")
            if op == "mul" and (isinstance(left, PyTuple) or isinstance(right, PyTuple)):
                raise Declined("repeated")
            if not (kind is Var or kind is Const):
                left = self.atom(left, n.left)
            if not (other is Var or other is Const):
                right = self.atom(right, n.right)
        elif op != "pow" and (kind is not Const or other is not Const):  # (nothing to fold, no power to test)
            infer = _TABLE[op].infer
            # (its results by the ids of the operands' types, kept with them: a program repeats them; a rule
            # without them, AttributeError: lowered from libcst's nodes)
            hit = infer.pairs.get((id(left.type), id(right.type)))  # type: ignore[union-attr]
            if hit is not None:
                return self._bound(op, (left, right), hit[-1], name, n)  # type: ignore[arg-type]
            try:
                t = infer([left.type, right.type], {})  # type: ignore[union-attr]
            except rules.ShapeError:
                t = None  # (emit's refusal, below)
            if t is not None:
                return self._bound(op, (left, right), t, name, n)  # type: ignore[arg-type]
        return self.emit(op, [left, right], None, name)  # type: ignore[list-item]

    def _operand(self, side: ast.expr, env: dict) -> Value:
        """An operand of :meth:`ast_BinOp`: a name of the running scope or a number written before read as
        :meth:`.expressions.Expressions.expr` and :meth:`ast_leaf` read it first; anything else :meth:`_nested`."""
        kind = type(side)
        if kind is _NAME:
            value = env.get(side.id)  # type: ignore[attr-defined]
        elif kind is _CONSTANT:  # (ast_leaf's first step)
            text = self.fast_lines[side.lineno - 1][side.col_offset:side.end_col_offset]  # type: ignore[attr-defined]
            value = self.literals.get(text)
            if value is not None and type(value.value) is not type(side.value):  # type: ignore[attr-defined]
                value = None
        else:
            value = None
        return self._nested(side) if value is None else value

    def _nested(self, n: ast.expr) -> Value:
        """:meth:`.expressions.Expressions.expr` of an expression inside another: an operation or a call by its
        method here, found by its class (not after the cases of names and numbers, which are read inline before
        this is asked), with expr's steps (``self.node``, the depth, a fresh stack every few levels); any other
        by expr."""
        method = _NESTED.get(type(n))
        if method is None:
            return self.expr(n)
        saved, depth = self.node, self.expr_depth
        self.node, self.expr_depth = n, depth + 1
        try:
            if (depth % _ROOM_EVERY or not depth) and self.roomy:
                return method(self, n)
            return deep.call(method, self, n)  # (a deeply nested expression goes on with a fresh stack)
        finally:
            self.node, self.expr_depth = saved, depth

    def _bound(self, op: str, args: tuple, t: Any, name: str | None, n: ast.BinOp | ast.UnaryOp | ast.Call) -> Var:
        """:meth:`.core.LowererCore.emit`'s steps for ``op(*args)`` of type ``t`` where there is nothing to
        fold and no power to test, at ``n`` (``self.node``: where it starts is its Loc's place),
        the aliases unfollowed (:class:`_Unfollowed`): the same names drawn, the same binding made."""
        namer = self.namer
        temp = namer.temp()
        if name is not None:
            var = self.named = Var(namer.fresh(name), t)
        else:
            var = Var(temp, t)
        at = (n.lineno, n.col_offset)
        root = self.root
        loc = root.locs.get(at)
        if loc is None:
            loc = root.loc_at(at)
        self.binds.append(Bind((var,), Prim(op, args, ()), loc))
        return var

    def ast_UnaryOp(self, n: ast.UnaryOp) -> Value:
        """:meth:`.expressions.Expressions.expr_UnaryOperation` (but ``not``)."""
        kind = type(n.op)
        if kind is ast.Not:
            raise Declined("not")
        operand = n.operand
        value = self.stack[-1].env.get(operand.id) if type(operand) is _NAME else None  # type: ignore[attr-defined]
        operand = self.atom(value if value is not None else self._nested(operand), operand)
        if kind is ast.USub:
            if type(operand) is Var:  # (nothing to fold: emit's steps, its type where the rule has it)
                hit = _TABLE["neg"].infer.pairs.get((id(operand.type),))  # type: ignore[attr-defined]
                if hit is not None:
                    return self._bound("neg", (operand,), hit[-1], None, n)
            return self.emit("neg", [operand])
        if kind is ast.UAdd:
            if not (isinstance(operand.type, Num) and operand.type.py):
                return self.emit("positive", [operand])
            return self.emit("add", [Const.integer(0), operand]) if operand.type.dtype == "bool" else operand
        return self.emit("invert", [operand])

    def ast_Attribute(self, n: ast.Attribute) -> Value:
        """:meth:`.expressions.Expressions.expr_Attribute` of a module or of an array."""
        base = self.expr(n.value)
        attr = n.attr
        if isinstance(base, Ref) and base.kind == "module":
            key = (id(base.obj), base.path, attr)
            known = self._attributes.get(key)
            if known is not None and known[0] is base.obj:
                return known[1]  # (its node's place unasked for: no binding made, nothing refused)
            value = self.module_attribute(base, attr, n)  # type: ignore[attr-defined]
            if type(value) is Ref or type(value) is Const:
                self._attributes[key] = (base.obj, value)
            return value
        if isinstance(base, (Var, Const)) and isinstance(base.type, Num):
            return self.array_attribute(base, attr, n)  # type: ignore[attr-defined]
        raise Declined("attribute")

    def ast_Call(self, n: ast.Call, name: str | None = None) -> Value:
        """:meth:`.calls.Calls.expr_Call` of a numpy function or of an array's method (``name``: as
        :meth:`ast_BinOp`'s, for a function of one argument bound by :meth:`_bound`).  A module's function
        read before (``np.sin``), and an argument that is a name of the running scope, are read as
        :meth:`.expressions.Expressions.expr` and :meth:`ast_Attribute` read them first (inline)."""
        running = self.stack[-1]
        env = running.env
        f, func = n.func, None
        if type(f) is _ATTRIBUTE and type(f.value) is _NAME and running.parent is None and f.value.id not in env:
            known = self._globals.get((id(running.parsed), running.path, f.value.id))  # type: ignore[attr-defined]
            base = known[1] if known is not None and known[0] is running.parsed else None
            if type(base) is Ref and base.kind == "module":
                known = self._attributes.get((id(base.obj), base.path, f.attr))
                if known is not None and known[0] is base.obj:
                    func = known[1]
        if func is None:
            func = self.expr(f)
        if not (isinstance(func, Ref) and (func.kind == "numpy" or func.kind == "method")):
            raise Declined("call")
        args = []
        for a in n.args:  # (the keywords after them, as in the text)
            value = env.get(a.id) if type(a) is _NAME else None  # type: ignore[attr-defined]
            args.append(value if value is not None else self._nested(a))
        kwargs = {k.arg: self.expr(k.value) for k in n.keywords}
        if func.kind == "method":  # (an array's: x.sum())
            return self.apply(func.obj, [func.self_value, *args], kwargs, n)  # type: ignore[attr-defined,arg-type]
        spec = API.get(numpy_name(func.obj))  # type: ignore[arg-type]
        if spec is None:
            raise Declined("numpy")
        op = spec.unary
        if op is not None and len(args) == 1 and not kwargs and type(args[0]) is Var and op not in _FOLDABLE:
            # (apply's steps for np.sin(v): bound as emit binds it, its type where the rule has it, else asked)
            x = args[0]
            hit = _TABLE[op].infer.pairs.get((id(x.type),))  # type: ignore[attr-defined]
            if hit is not None:
                return self._bound(op, (x,), hit[-1], name, n)
        return self.apply(spec, args, kwargs, n)  # type: ignore[attr-defined,arg-type]


#: the methods :meth:`Fast._nested` lowers an expression inside another with, by its class (expr's for these)
_NESTED = {ast.BinOp: Fast.ast_BinOp, ast.Call: Fast.ast_Call, ast.UnaryOp: Fast.ast_UnaryOp}

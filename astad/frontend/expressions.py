"""Lowering expressions: literals, tuples and lists, comprehensions,
attributes, operators, comparisons, ``and``/``or``/``not`` and
conditional expressions.
"""

from __future__ import annotations

import ast
import math
import types
from typing import Any, Callable

import libcst as cst
import numpy as np

from .. import deep, imported
from ..values import PyTuple, Ref
from ..errors import UnsupportedFunctionError
from ..ir import FLOAT, Atom, Bind, Const, ListT, NoneT, Num, Var, Loop, trip_count
from ..positions import has_start
from . import lazy
from .numpy_api import API, METHODS
from .parse import UNSUPPORTED
from .abstract import literal_type
from .scopes import Value, Scope, is_list_value
from .core import LowererCore



#: what a refused attribute's message suggests, by what it is read from
_ATTRIBUTE_HINT = {
    "list": "on a list: xs.append(v), xs = xs + [v], xs[i], len(xs)",
    "tuple": "on a tuple: t[i], len(t), unpacking (a, b = t)",
    "array": "array attributes .T .shape .ndim .size",
}

class Expressions(LowererCore):
    """Expressions (but names, subscripts and calls: see lookup, indexing, calls)."""

    def expr(self, node: cst.BaseExpression) -> Value:
        cls = type(node)
        if cls is _NAME or cls is _AST_NAME:
            # Lookup.expr_Name's first steps, before the dispatch: a variable of the running scope (or around
            # it), or a global read before (never True, False or None); a name of Python's tree (straight-line
            # code, astad.frontend.fast) as libcst's
            running = self.stack[-1]
            name = node.value if cls is _NAME else node.id
            found = running.env.get(name)  # (_lookup's first step, inline: most names read are the running scope's)
            if found is None and running.parent is not None:
                found = self._lookup(running, name)
            if found is not None:
                return found
            known = self._globals.get((id(running.parsed), running.path, name))
            if known is not None and known[0] is running.parsed:
                return known[1]
            if cls is _AST_NAME:
                node = self.ast_leaf(node)  # type: ignore[attr-defined]  (its libcst node)
                cls = type(node)
        elif cls is _FLOAT:  # expr_Float's first step (a number written before: its constant), before the dispatch
            known = self.literals.get(node.value)
            if known is not None and type(known.value) is float:
                return known
        elif cls is _AST_CONSTANT:
            node = self.ast_leaf(node)  # type: ignore[attr-defined]  (a number's constant, or its libcst node)
            cls = type(node)
            if cls is Const:
                return node
        method = self.expr_methods.get(cls)
        if method is None:
            method = getattr(type(self), ("ast_" if cls.__module__ == "ast" else "expr_") + cls.__name__, None)
            if method is None:
                entry = UNSUPPORTED.get(cls)
                message, hint = entry if entry else (f"`{cls.__name__}` expressions are not supported",
                                                     "arithmetic, numpy calls, indexing")
                raise self.syntax_error(message, hint, node)
            self.expr_methods[cls] = method
        saved, depth = self.node, self.expr_depth
        self.node = node
        try:
            if cls in _LEAVES:  # nothing nested to lower: no need for room on the stack
                return method(self, node)
            self.expr_depth = depth + 1
            if (depth % _ROOM_EVERY or not depth) and self.roomy:  # (most levels, a statement's own: no look)
                return method(self, node)
            return deep.call(method, self, node)  # a deeply nested expression goes on with a fresh stack
        finally:
            self.node, self.expr_depth = saved, depth

    def expr_Integer(self, node: cst.Integer) -> Value:
        known = self.literals.get(node.value)  # (a constant, immutable: one per text)
        if known is not None and type(known.value) is int:
            return known
        try:
            v = int(node.value, 0)  # (libcst's evaluated_value runs ast.literal_eval: a parse, and a cycle of closures)
        except ValueError:
            v = int(node.evaluated_value)
        made = self.literals[node.value] = Const.literal(v, literal_type(v))
        return made

    def expr_Float(self, node: cst.Float) -> Value:
        known = self.literals.get(node.value)
        if known is not None and type(known.value) is float:
            return known
        try:
            made = Const.literal(float(node.value), FLOAT)
        except ValueError:
            made = Const.literal(float(node.evaluated_value), FLOAT)
        self.literals[node.value] = made
        return made

    def expr_Tuple(self, node: cst.Tuple) -> Value:
        return PyTuple(tuple(self.element(e) for e in node.elements))

    def expr_List(self, node: cst.List) -> Value:
        return self.new_list(tuple(self.element(e) for e in node.elements))

    def element(self, e: cst.BaseElement) -> Value:
        if isinstance(e, cst.StarredElement):
            raise self.syntax_error("`*` unpacking is not supported", "explicit elements", e)
        return self.expr(e.value)

    def expr_ListComp(self, node: cst.ListComp) -> Value:
        return self.comprehension(node, node.elt, node.for_in)

    def expr_GeneratorExp(self, node: cst.GeneratorExp) -> Value:
        lazy.check(self, node, "a generator expression")  # (Python evaluates it lazily)
        return self.comprehension(node, node.elt, node.for_in)  # consumed as a list

    def comprehension(self, node: cst.CSTNode, elt: cst.BaseExpression, for_in: cst.CompFor) -> Value:
        """``[e for x in xs if c]``: the loop ``items = []; for x in xs: if c:
        items.append(e)`` (over ``range``, arrays, lists or structured values),
        its names local to it as in Python."""
        key = self.namer.hidden("items")
        body: cst.BaseStatement = cst.SimpleStatementLine([cst.Expr(cst.Call(
            cst.Attribute(cst.Name(key), cst.Name("append")), [cst.Arg(elt)]))])
        clauses = []
        f: cst.CompFor | None = for_in
        while f is not None:
            clauses.append(f)
            f = f.inner_for_in
        for clause in reversed(clauses):
            for cond in reversed(clause.ifs):
                body = cst.If(test=cond.test, body=cst.IndentedBlock([body]))
            body = cst.For(target=clause.target, iter=clause.iter, body=cst.IndentedBlock([body]))
        self.alias(body, node)
        # a scope of its own: its variables are not the enclosing function's (nor its functions')
        items = self.new_list(())
        scope = Scope(self.scope.parsed, self.scope.path, {key: items}, parent=self.scope)
        self.stack.append(scope)
        start = len(self.binds)
        try:
            self.lower_stmts([body])
        finally:
            self.stack.pop()
        items = scope.env[key]
        n = _trip_count(self.binds[start:]) if len(clauses) == 1 and not clauses[0].ifs else None
        if n is not None and isinstance(items, Var) and isinstance(items.type, ListT):
            return self.emit("list_of_length", [items], {"n": n})  # np.stack of it has a known first axis
        return items

    def alias(self, made: cst.CSTNode, user: cst.CSTNode) -> None:
        """Point errors and line comments of the nodes astad made at the user's node."""
        positions, aliases = self.scope.parsed.positions, self.scope.parsed.aliases

        class V(cst.CSTVisitor):
            def on_visit(self, n: cst.CSTNode) -> bool:
                if not has_start(positions, n):
                    aliases[n] = user
                    return True
                return False

        deep.visit(made, V())

    def expr_SimpleString(self, node: cst.SimpleString) -> Value:
        return Ref("string", node.evaluated_value)  # only as a dict key

    def expr_Attribute(self, node: cst.Attribute) -> Value:
        base = self.expr(node.value)
        attr = node.attr.value
        if isinstance(base, Ref) and base.kind == "module":
            key = (id(base.obj), base.path, attr)
            known = self._attributes.get(key)
            if known is not None and known[0] is base.obj:
                return known[1]  # (read before: the code's dependence on it is noted)
            value = self.module_attribute(base, attr, node)
            if type(value) is Ref or type(value) is Const:
                self._attributes[key] = (base.obj, value)
            return value
        if isinstance(base, Ref) and base.kind == "object":
            return self.object_attribute(base, attr, node)
        if isinstance(base, (Var, Const)) and isinstance(base.type, Num):
            return self.array_attribute(base, attr, node)
        if isinstance(base, PyTuple) and base.fields is not None and attr in base.fields:
            return base.items[base.fields.index(attr)]
        raise self.syntax_error(f"attribute `.{attr}` is not supported here", _ATTRIBUTE_HINT[
            "list" if is_list_value(base) else "tuple" if isinstance(base, PyTuple) else "array"], node)

    def module_attribute(self, base: Ref, attr: str, node: cst.Attribute) -> Value:
        """``np.sin``, ``np.pi``, ``np.linalg``: a module's attribute."""
        if not hasattr(base.obj, attr):
            raise UnsupportedFunctionError(f"`{base.obj.__name__}.{attr}` does not exist", self.loc(node))
        obj = getattr(base.obj, attr)
        if attr not in vars(base.obj):  # made by the module's __getattr__ (np.core.umath): not a name to check
            raise UnsupportedFunctionError(f"`{base.obj.__name__}.{attr}` is made by the module's __getattr__ on "
                                           "each read (a deprecated alias), which astad cannot check", self.loc(node),
                                           "the name numpy documents (np.sin, np.linalg.norm)")
        path = base.path + (attr,) if base.path else ()
        if path:  # a module's attribute may be assigned (a mock of np.sin): the derivative is of this one
            self.depend(path, obj)
        if isinstance(obj, type) and issubclass(obj, np.generic):
            try:
                return Ref("dtype", np.dtype(obj).name)
            except TypeError:  # np.floating, np.integer, np.generic: abstract, no dtype
                raise UnsupportedFunctionError(f"`np.{attr}` (an abstract numpy type) is not supported",
                                               self.loc(node), "isinstance(x, float), or an array's dtype") from None
        module = "math" if base.obj is math else "np"
        if isinstance(obj, float):  # (generated code reads np and math as astad imported them)
            if obj is not imported.as_imported(base.obj, attr):  # a constant replaced (math.pi = 3.0)
                return Const.literal(obj, FLOAT)
            return Const(obj, FLOAT, f"{module}.{attr}", (module, attr))
        if type(obj) is np.bool_ and obj is imported.as_imported(base.obj, attr):  # np.True_, np.False_: by name
            return Const(obj, Num((), "bool"), f"np.{attr}", ("np", attr))  # (a numpy bool has no literal)
        return self.global_value(f"{module}.{attr}", obj, node, path if isinstance(obj, types.ModuleType) else ())

    def array_attribute(self, x: Atom, attr: str, node: cst.CSTNode) -> Value:
        t = x.type
        assert isinstance(t, Num)
        if t.py and not hasattr({"f": float, "i": int, "b": bool}.get(np.dtype(t.dtype).kind, float), attr):
            raise self.type_error(f"a Python number has no attribute `.{attr}` (Python raises AttributeError)", node,
                                  f"np.{attr}(x)" if attr in API else f"np.float64(x).{attr}")
        if attr == "T":
            return self.emit("transpose", [x])
        if attr == "shape":
            return self.shape_of(x)
        if attr == "ndim":
            return Const.integer(t.ndim)
        if attr == "size":
            return self.emit("size", [x])
        if attr == "dtype" and not t.py:
            return Ref("dtype", t.dtype)
        if attr == "real" and np.dtype(t.dtype).kind != "c":
            return x  # numpy: the array itself
        if attr in METHODS:
            if attr == "dot" and not t.shape:  # (a numpy scalar has none; a 0-d array has)
                raise self.type_error("`.dot()` of a number: a numpy scalar has no such method (Python raises "
                                      "AttributeError)", node, "np.dot(x, y)")
            return Ref("method", METHODS[attr], x)
        raise self.syntax_error(f"array attribute `.{attr}` is not supported",
                                "attributes .T .shape .ndim .size .dtype .real and methods " + ", ".join(sorted(METHODS)), node)

    def expr_UnaryOperation(self, node: cst.UnaryOperation) -> Value:
        if isinstance(node.operator, cst.Not):
            c = self.bool_atom(self.expr(node.expression), node)
            return Const.literal(not c, literal_type(not c)) if isinstance(c, bool) else self.emit("not_", [c])
        operand = self.atom(self.expr(node.expression), node.expression)
        if isinstance(node.operator, cst.Minus):
            return self.emit("neg", [operand])
        if isinstance(node.operator, cst.Plus):  # numpy's `+x` is np.positive(x): a new array
            if not (isinstance(operand.type, Num) and operand.type.py):
                return self.emit("positive", [operand])
            return self.emit("add", [Const.integer(0), operand]) if operand.type.dtype == "bool" else operand  # +True: 1
        if isinstance(node.operator, cst.BitInvert):  # ~mask (of bools or ints: no derivative)
            return self.emit("invert", [operand])
        raise self.syntax_error("this unary operator is not supported", "unary - and +", node)

    def expr_BinaryOperation(self, node: cst.BinaryOperation) -> Value:
        op = _BIN_OPS.get(type(node.operator))
        if op is None:
            raise self.syntax_error("this operator is not supported", "+ - * / // % ** @ & |", node)
        left_value = self.expr(node.left)
        if op == "add" and is_list_value(left_value):
            return self.concatenate_lists(left_value, self.expr(node.right), node)
        right = self.expr(node.right)
        if op == "mul" and (isinstance(left_value, PyTuple) or isinstance(right, PyTuple)):
            made = self.repeated(left_value, right, node)
            if made is not None:
                return made
        left = left_value if type(left_value) is Var or type(left_value) is Const else self.atom(left_value, node.left)
        if not (type(right) is Var or type(right) is Const):  # (an atom as it is, else what atom says of it)
            right = self.atom(right, node.right)
        return self.emit(op, [left, right])

    def repeated(self, a: Value, b: Value, node: cst.BinaryOperation) -> Value | None:
        """``[v] * k`` (``k * [v]``, ``(v,) * k``) of a list or tuple known element by element and an int ``k``
        known when transforming: the same elements ``k`` times (the same objects, as in Python)."""
        seq, k = (a, b) if isinstance(a, PyTuple) else (b, a)
        t = getattr(k, "type", None)
        if not (isinstance(t, Num) and t.py and not t.shape and t.dtype in ("int64", "bool")):
            return None  # (not an int: what an operand of `*` is, refused where it is a list)
        count = self.static(k, node, "the number of repetitions of a list")
        if seq.fields is not None:
            raise self.type_error("a NamedTuple repeated with `*`", node, "tuple(t) * k")
        return self.new_list(seq.items * count) if seq.is_list else PyTuple(seq.items * count)

    def concatenate_lists(self, a: Value, b: Value, node: cst.BinaryOperation) -> Value:
        """``xs + [v, w]``: a new list holding the same elements (what the refusal of an
        ``xs.append(v)`` that others would see suggests)."""
        if not (isinstance(b, PyTuple) and b.is_list):
            raise self.type_error("a list is concatenated with `+` to a list written out (`[v]`, `[v, w]`, "
                                  "a slice of one, a list made so)", node, "xs + [v], or xs.append(v) in a loop")
        if isinstance(a, PyTuple):  # known element by element: so is the new list
            return self.new_list(a.items + b.items)
        for v in b.items:  # a list known only at run time: the new one is taken for the same list (conservative)
            a = self.emit("append", [a, self.atom(v, node)])
        return a

    def expr_Comparison(self, node: cst.Comparison) -> Value:
        """``a < b``; a chain ``a < b < c`` means ``a < b and b < c`` (``b`` evaluated once).  ``x is None``
        (the subset check allows no other ``is``) is known when transforming: astad's types tell None apart."""
        if isinstance(node.comparisons[0].operator, (cst.Is, cst.IsNot)):
            return self.none_test(node)
        left_value = self.expr(node.left)
        right = None
        if isinstance(left_value, PyTuple) and len(node.comparisons) == 1 and isinstance(
                node.comparisons[0].operator, (cst.Equal, cst.NotEqual)):
            right = self.expr(node.comparisons[0].comparator)
            known = self.tuple_equality(left_value, right, node)
            if known is not None:
                return known
        left = self.atom(left_value, node.left)
        return self._comparisons(left, list(node.comparisons), node, id(node) in self.truth_only, right)

    def tuple_equality(self, left: PyTuple, right: Value, node: cst.Comparison) -> Value | None:
        """``x.shape == (3, 4)`` (``!=``): tuples of numbers known when transforming, compared as Python
        does (a tuple and a list are never equal); None where it is not such a comparison."""
        comp = node.comparisons[0]
        if not isinstance(right, PyTuple):
            return None

        def known(v: Value) -> Any:
            if isinstance(v, PyTuple):
                items = [known(i) for i in v.items]
                return None if any(i is None for i in items) else (list if v.is_list else tuple)(items)
            if isinstance(v, Const) and isinstance(v.value, (bool, int, float)):
                return v.value
            if isinstance(v, Var) and isinstance(v.type, Num) and v.type.value is not None:
                return v.type.value
            return None

        a, b = known(left), known(right)
        if a is None or b is None:
            return None  # (a value known only when running: refused where the tuple is used as a number)
        answer = (a == b) == isinstance(comp.operator, cst.Equal)
        return Const.literal(answer, literal_type(answer))

    def _comparisons(self, left: Atom, comps: list[cst.ComparisonTarget], node: cst.Comparison, truth: bool,
                     evaluated: Value | None = None) -> Value:
        """``left < b < c ...``: ``b < c ...`` lowered only where ``left < b`` holds, as Python evaluates
        it (``0.0 < x < math.sqrt(x)`` at x = -1 is False in Python: no math domain error).  ``evaluated``:
        ``b`` where it is already."""
        comp = comps[0]
        op = _CMP_OPS.get(type(comp.operator))
        if op is None:
            raise self.syntax_error("this comparison is not supported", "< <= > >= == !=", comp)
        right = self.atom(self.expr(comp.comparator) if evaluated is None else evaluated, comp.comparator)
        test = self.emit(op, [left, right])
        if len(comps) == 1:
            return test
        return self.short_circuit(test, lambda: self._comparisons(right, comps[1:], node, truth), True, node, truth)

    def none_test(self, node: cst.Comparison) -> Const:
        """``x is None`` / ``x is not None``: whether ``x``'s type is None's (a value's type is fixed when
        transforming: an argument's comes from the call, and a name holds one type on every path)."""
        (comp,) = node.comparisons
        values = [self.expr(node.left), self.expr(comp.comparator)]  # (both evaluated, in Python's order)
        found = all(isinstance(v, (Const, Var)) and isinstance(v.type, NoneT) for v in values)
        answer = found if isinstance(comp.operator, cst.Is) else not found
        return Const.literal(answer, literal_type(answer))

    def expr_IfExp(self, node: cst.IfExp) -> Value:
        c = self.condition(node.test)
        if isinstance(c, bool):
            return self.expr(node.body if c else node.orelse)
        t_binds, _, t_val = self.branch(lambda: self.expr(node.body))
        e_binds, _, e_val = self.branch(lambda: self.expr(node.orelse))
        return self.join(c, [("the value of the conditional expression", t_val, e_val)], t_binds, e_binds)[0]

    def expr_BooleanOperation(self, node: cst.BooleanOperation) -> Value:
        is_and = isinstance(node.operator, cst.And)
        truth = self.truth_only
        if id(node) not in truth:
            return self.short_circuit(self.expr(node.left), lambda: self.expr(node.right), is_and, node)
        parts = (id(node.left), id(node.right))  # (their truth is all that matters too)
        truth.update(parts)
        try:
            left = self.expr(node.left)
            return self.short_circuit(left, lambda: self.expr(node.right), is_and, node, truth=True)
        finally:
            truth.difference_update(parts)

    def short_circuit(self, left: Value, right: Callable[[], Value], is_and: bool,
                      node: cst.CSTNode | None = None, truth: bool = False) -> Value:
        """``a and b`` / ``a or b`` on booleans, evaluating ``b`` only when Python would; the value is
        the operand Python returns, of its type (``np.True_ or b`` is ``np.True_``, not ``True``),
        or, where only its ``truth`` matters (an ``if``'s test), a Python bool of its value."""
        c = self.bool_atom(left, node)
        if isinstance(c, bool):
            if c != is_and:
                return self._bool_value(left, c, node, truth)
            r = right()
            return self._bool_value(r, self.bool_atom(r, node), node, truth)
        def right_value() -> Atom:
            r = right()
            return self._bool_value(r, self.bool_atom(r, node), node, truth)

        r_binds, _, r_val = self.branch(right_value)
        # Python's value where it does not evaluate the right operand: the left one (a numpy bool stays one)
        fixed = Const.literal(not is_and, literal_type(not is_and)) if truth or c.type.py else c
        t_binds, e_binds = (r_binds, []) if is_and else ([], r_binds)
        t_val, e_val = (r_val, fixed) if is_and else (fixed, r_val)
        return self.join(c, [("the value of `and`/`or`", t_val, e_val)], t_binds, e_binds)[0]

    def _bool_value(self, value: Value, known: Atom | bool, node: cst.CSTNode | None, truth: bool) -> Atom:
        """An operand of ``and``/``or`` as their value: the operand itself (a Python bool or a numpy one)."""
        if not isinstance(known, bool):
            return known
        if truth:
            return Const.literal(known, literal_type(known))
        a = self.atom(value, node or self.node)
        return Const.literal(known, literal_type(known)) if a.type.py else a

    def bool_atom(self, value: Value, node: cst.CSTNode | None) -> Atom | bool:
        a = self.atom(value, node or self.node)
        if not (isinstance(a.type, Num) and a.type.shape == () and a.type.dtype == "bool"):
            raise self.type_error(f"`and`/`or`/`not` need booleans, not {a.type}", node,
                                  "comparisons combined with and/or/not; `&`/`|` on boolean arrays")
        if isinstance(a, Const) and a.name is None:
            return bool(a.value)
        if a.type.value is not None:
            return bool(a.type.value)
        return a


def _trip_count(binds: list[Bind]) -> int | None:
    """How often the ``for`` loop among ``binds`` (a comprehension's) runs, when its bounds are known."""
    loops = [b.rhs for b in binds if isinstance(b.rhs, Loop)]
    return trip_count(loops[0]) if len(loops) == 1 else None


#: an expression nested in this many others goes through :func:`astad.deep.call` (which looks at the
#: stack's depth at every few of its own levels); between, the lowering of an expression nests a few
#: frames a level, well within the room a segment of the stack leaves (a look costs microseconds:
#: at every expression, a sixth of the lowering of straight-line code); not an expression of a statement
#: of the function lowered (its block went through it: :meth:`.statements.Statements.lower_stmts`)
_ROOM_EVERY = 8

#: expressions with no expression inside them to lower
_LEAVES = frozenset({cst.Name, cst.Integer, cst.Float, cst.SimpleString})
_NAME, _FLOAT = cst.Name, cst.Float
_AST_NAME, _AST_CONSTANT = ast.Name, ast.Constant


_BIN_OPS: dict[type, str] = {
    cst.Add: "add", cst.Subtract: "sub", cst.Multiply: "mul", cst.Divide: "div", cst.FloorDivide: "floordiv",
    cst.Modulo: "mod", cst.Power: "pow", cst.MatrixMultiply: "matmul", cst.BitAnd: "and_", cst.BitOr: "or_",
}


_CMP_OPS: dict[type, str] = {
    cst.LessThan: "lt", cst.LessThanEqual: "le", cst.GreaterThan: "gt", cst.GreaterThanEqual: "ge",
    cst.Equal: "eq", cst.NotEqual: "ne",
}

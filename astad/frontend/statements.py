"""Lowering a function's body and its simple statements: parameters,
the statements in order, ``return``, assignments, augmented assignments
(checked for in-place updates) and ``list.append``.
"""

from __future__ import annotations

from typing import Callable

import libcst as cst
import numpy as np

from .. import deep
from ..deep import LazyNodes
from ..aliases import CALLER
from .. import outputs
from ..values import PyDict, PyTuple, Ref
from .unused import keep_unread_raising
from ..errors import AstadTypeError, UnsupportedFunctionError, UnsupportedSyntaxError
from ..source import reversed_function
from ..ir import Atom, Bind, Block, Const, Function, ListT, MakeTuple, Num, StructT, TupleT, Type, Var
from .syntax import can_leave, stmts_of, is_append
from .api_reductions import in_place_method
from .parse import UNSUPPORTED
from .scopes import Value, Scope, is_list_value, make_call_key
from .core import LowererCore, ref_name
from .from_ast import lazy_block
from .weak_joins import check_weak_joins


class Statements(LowererCore):
    """A function's body and its simple statements."""

    def lower_function(self, arg_types: list[Type]) -> Function:
        block = lazy_block(self.root.funcdef)
        if block is not None:  # straight-line code: lowered from Python's tree (astad.frontend.fast)
            try:
                return self._lower_function(arg_types, block)
            except Exception:  # (anything but its commonest cases: lowered again, from libcst's nodes)
                self.start_again()
        return self._lower_function(arg_types, None)

    def start_again(self) -> None:
        """Forget what the lowering did: the state of a lowerer just made (but what its maker set)."""
        root, functions = self.root, self.functions
        self.__dict__.clear()
        LowererCore.__init__(self, root)
        self.functions = functions

    def _lower_function(self, arg_types: list[Type], block: LazyNodes | None) -> Function:
        fd = self.root.funcdef
        self.stack.append(Scope(self.root))
        params: list[Var] = []
        types = iter(arg_types)
        for p in (*fd.params.params, *fd.params.kwonly_params):
            name = p.name.value
            self.scope.env[name] = (self.fixed_value(name, self.root.fixed[name], p) if name in self.root.fixed
                                    else self.parameter(name, next(types), params))
        self.scope.call_key = make_call_key(self.root.fn, self.scope.env, self._static_keys)
        self.note_open_call(self.scope)
        lower = (lambda: self.lower_body(fd)) if block is None else lambda: self.lower_straight(block)  # type: ignore[attr-defined]
        result = self.unrolled_or_loops(self.scope, lower, lambda found: self.lower_as_loops(self.root, found))
        self.out_template = outputs.template(result)  # which of the output's tuples are lists (astad.outputs)
        atom = self.result_atom(result, self.node)
        fn = Function(self.root.name, tuple(params), Block(tuple(self.binds), atom))
        check_weak_joins(fn)
        return keep_unread_raising(fn, self.namer.temp)

    def parameter(self, name: str, t: Type, params: list[Var]) -> Value:
        """A parameter; a structured one as its structure, with one parameter per
        leaf (``params_w`` for ``params["w"]``)."""
        if not isinstance(t, StructT):
            v = Var(self.namer.fresh(name), t)
            params.append(v)
            self.exact_numbers.add(v.name)  # (calls.exact_number)
            self.aliases.made(v.name, () if isinstance(t, Num) and t.py else (CALLER,))
            return v
        keys = t.keys or tuple(range(len(t.items)))
        items = tuple(self.parameter(f"{name}_{k}" if str(k).isidentifier() or isinstance(k, int) else f"{name}_{i}",
                                     it, params) for i, (k, it) in enumerate(zip(keys, t.items)))
        if t.kind == "dict":
            return PyDict(t.keys, items)
        named = t.kind == "namedtuple"
        value = PyTuple(items, is_list=t.kind == "list", fields=t.keys if named else None, cls=t.cls if named else None)
        if value.is_list:
            self.aliases.caller_list(value)
        return value

    def result_atom(self, value: Value, node: cst.CSTNode) -> Atom:
        if isinstance(value, PyTuple):
            items = tuple(self.result_atom(v, node) for v in value.items)
            var = Var(self.namer.temp(), TupleT(tuple(i.type for i in items)))
            self.binds.append(Bind((var,), MakeTuple(items), self.loc(node)))
            return var
        return self.atom(value, node)

    def lower_body(self, fd: cst.FunctionDef) -> Value:
        body = stmts_of(fd.body)
        value = self.lower_stmts(body)
        if value is None:
            raise self.syntax_error("the function must end with `return <value>`",
                                    "return a float, an array or a tuple on every path", body[-1] if body else fd)
        return value

    def lower_stmts(self, stmts: list[cst.BaseStatement]) -> Value | None:
        """Lower statements in order; the returned value if they return, else None."""
        return deep.call(self._lower_stmts, stmts)  # a block in a block in ...: on with a fresh stack

    def _lower_stmts(self, stmts: list[cst.BaseStatement]) -> Value | None:
        for i, stmt in enumerate(stmts):
            cls = type(stmt)  # (libcst's node classes are abstract-based: `type(...) is` is the cheap test)
            if cls is cst.If:
                split = self.split_raising_if(stmt, stmts[i + 1:])
                if split is not None:  # `if c: raise ...` `else: ...`: the other way runs after the guard
                    return self.lower_stmts(split)
                if can_leave(stmt):  # the rest of the block continues each branch that does not return/break/continue
                    return self.lower_if(stmt, stmts[i + 1:])
                self.lower_if(stmt, None)
                continue
            if cls is cst.FunctionDef:
                self.scope.env[stmt.name.value] = self.closure(stmt)
                continue
            if cls is cst.For or cls is cst.While:
                completed: list | None = [] if stmt.orelse is not None else None
                returned = self.lower_for(stmt, completed) if cls is cst.For else self.lower_while(stmt, completed)
                rest = stmts[i + 1:]
                if completed is not None:  # `else`: run where the loop ended without `break`, then the rest
                    orelse = stmts_of(stmt.orelse.body)
                    if returned is not None:
                        return self.after_return(stmt, *returned, rest, lambda: self.lower_branches(
                            completed[0], orelse + rest, rest, True, stmt))
                    if can_leave(stmt.orelse):  # (a `return` in it: the rest continues each way)
                        return self.lower_branches(completed[0], orelse + rest, rest, True, stmt)
                    self.lower_branches(completed[0], orelse, [], False, stmt)
                    continue
                if returned is not None:  # `return` inside the loop: it or the rest of the block gives the value
                    return self.after_return(stmt, *returned, rest)
                continue
            if cls is not cst.SimpleStatementLine:
                entry = UNSUPPORTED.get(type(stmt), (f"`{type(stmt).__name__}` statements are not supported", ""))
                raise self.syntax_error(entry[0], entry[1] or "assignments, `if` and `return`", stmt)
            for small in stmt.body:
                self.node = small
                kind = type(small)
                if kind is cst.Break or kind is cst.Continue:
                    return self.exits[-1]("break" if kind is cst.Break else "continue")
                if kind is cst.Return:
                    if small.value is None:
                        raise self.syntax_error("`return` without a value", "return a float, an array or a tuple",
                                                small)
                    return self.give_back(self.expr(small.value))
                self.statement(small)
        return None

    def give_back(self, value: Value) -> Value:
        """``return value``: the function's value, or, inside a loop body, leaving the loop with it."""
        return self.exits[-1]("return", value) if self.exits else value

    def after_return(self, stmt: cst.CSTNode, returned: Atom, value: Value,
                     rest: list[cst.BaseStatement], after: Callable[[], Value | None] | None = None) -> Value:
        """After a loop that may have returned: its value if it did, else the rest of the block
        (``after``: what lowers it, a loop's ``else`` block first)."""
        self.node = stmt
        if isinstance(returned, Const):  # `while True:` ends only by its `return`
            return self.give_back(value)
        (t_binds, _, t_val), (e_binds, _, e_val) = self.branches(
            lambda: self.give_back(value), after if after is not None else lambda: self.lower_block(rest, True))
        self.node = stmt
        if e_val is None:
            raise self.syntax_error("not every path after this loop returns a value",
                                    "return a value after the loop too", stmt)
        return self.join(returned, [("the returned value", t_val, e_val)], t_binds, e_binds)[0]

    def numpy_in_place(self, node: cst.BaseExpression) -> tuple[str, str] | None:
        """``(name, what to write)`` when an expression statement calls a numpy function that changes
        its argument in place (``np.put(y, idx, v)``), else None."""
        if not isinstance(node, cst.Call):
            return None
        try:
            func = self.expr(node.func)
        except (UnsupportedFunctionError, UnsupportedSyntaxError, AstadTypeError):
            return None
        obj = getattr(func, "obj", None)
        return next(((f"np.{f.__name__}", hint) for f, hint in _IN_PLACE if obj is f), None)

    def statement(self, node: cst.BaseSmallStatement) -> None:
        if isinstance(node, cst.Assign):
            value = self.expr(node.value)
            last = node.targets[-1]
            for target in node.targets:  # `a = b = v`: b gets the value under the name a gave it
                self.assign(target.target, value)
                if target is not last:
                    value = self.assigned_value(target.target, value)
        elif isinstance(node, cst.AnnAssign):
            if node.value is None:
                return
            self.assign(node.target, self.expr(node.value))
        elif isinstance(node, cst.AugAssign):
            self.aug_assign(node)
        elif isinstance(node, cst.Expr) and isinstance(node.value, (cst.SimpleString, cst.ConcatenatedString)):
            return  # docstring
        elif isinstance(node, cst.Expr) and is_append(node.value):
            self.append(node.value)
        elif isinstance(node, cst.Expr) and self.is_add_at(node.value):
            self.add_at(node.value)  # type: ignore[arg-type]
        elif isinstance(node, cst.Pass):
            return
        elif isinstance(node, cst.Expr) and self.is_print(node.value):
            self.expr(node.value)
        elif isinstance(node, cst.Raise):
            self.raise_statement(node)
        elif isinstance(node, cst.Assert):
            self.assert_statement(node)
        elif isinstance(node, cst.Expr) and self.is_put_along_axis(node.value):
            self.put_along_axis(node.value)  # type: ignore[arg-type]
        elif isinstance(node, cst.Expr) and in_place_method(node.value):
            self.expr(node.value)  # refused by its entry, with the hint to write the copying function
        elif isinstance(node, cst.Expr):
            in_place = self.numpy_in_place(node.value)
            if in_place is not None:
                name, hint = in_place
                raise self.syntax_error(f"{name} changes its first argument in place, which astad does not follow "
                                        "(it reads code functionally)", hint, node)
            raise self.syntax_error("an expression statement has no effect astad can differentiate",
                                    "assign the value to a name, or remove the statement", node)
        else:
            raise self.syntax_error(f"`{type(node).__name__}` statements are not supported",
                                    "assignments and a final `return`", node)

    def assigned_value(self, target: cst.BaseExpression, value: Value) -> Value:
        """``value`` after its assignment to ``target``, which may have renamed what it computes (a
        name takes over the binding of a temporary)."""
        if isinstance(target, cst.Name):
            return self.scope.env[target.value]
        if isinstance(target, (cst.Tuple, cst.List)) and isinstance(value, PyTuple):
            return PyTuple(tuple(self.assigned_value(e.value, v) for e, v in zip(target.elements, value.items)),
                           value.is_list, value.fields, value.cls)
        return value

    def assign(self, target: cst.BaseExpression, value: Value, shared: frozenset = frozenset()) -> None:
        """``target = value``; ``shared``: the variables an enclosing unpacking assigns more than once."""
        if isinstance(target, cst.Name):
            self.scope.env[target.value] = self.name_result(value, target.value)
        elif isinstance(target, (cst.Tuple, cst.List)):
            if not isinstance(value, PyTuple):
                value = self.unpacked(target, value)
            if not isinstance(value, PyTuple):
                k = len(target.elements)
                raise self.type_error(f"cannot unpack {_what(value)} into {k} names: astad unpacks tuples and lists",
                                      target, hint="index it: " + ", ".join(f"a{i}" for i in range(k)) + " = "
                                      + ", ".join(f"x[{i}]" for i in range(k)))
            if len(value.items) != len(target.elements):
                raise self.type_error(f"cannot unpack {len(value.items)} values into {len(target.elements)} names", target)
            # (`a, b = v, v`: neither name takes over v's binding, both read it; also where the tuple is nested)
            self.unpack_items(target, value, shared | _repeated_vars(value))
        elif isinstance(target, cst.Subscript):
            self.assign_item(target, value)
        else:
            raise self.syntax_error("only names and tuples of names can be assigned to",
                                    "`name = ...` or `a, b = ...`", target)

    def unpack_items(self, target: cst.Tuple | cst.List, value: PyTuple, shared: frozenset) -> None:
        """``a, b = value``: each name its item, left to right (a variable ``shared`` keeps its name)."""
        for k, (el, v) in enumerate(zip(target.elements, value.items)):
            if isinstance(el, cst.StarredElement):
                raise self.syntax_error("`*` in unpacking is not supported", "name each element", el)
            # the values still to be assigned are read after this target is (`y[0], y[1] = y[1], y[0]` of
            # rows: the second is a view of the row the first changed): an update they see is refused
            held = [("a value this assignment assigns after it shares its memory (Python assigns left to right: "
                     "copy it on the right, `y[1].copy()`)", w) for w in value.items[k + 1:]]
            self.iterated += held
            try:
                if isinstance(el.value, cst.Name) and isinstance(v, Var) and v in shared:
                    self.scope.env[el.value.value] = v
                else:
                    self.assign(el.value, v, shared)
            finally:
                del self.iterated[len(self.iterated) - len(held):]

    def unpacked(self, target: cst.Tuple | cst.List, value: Value) -> Value:
        """``a, b = x`` of an array of ``k`` rows (of a list of ``k`` elements), ``k`` the number of names and
        known when transforming: its rows ``x[0], x[1]`` (views of a matrix, numpy scalars of a vector), as
        Python's iteration gives them; ``value`` itself where it is none of these."""
        k = len(target.elements)
        if not isinstance(value, Var) or any(isinstance(e, cst.StarredElement) for e in target.elements):
            return value
        t = value.type
        n = t.shape[0] if isinstance(t, Num) and t.shape else t.length if isinstance(t, ListT) else None
        if n is None:
            return value
        if n != k:
            raise self.type_error(f"cannot unpack {_what(value)} of {n} {'rows' if isinstance(t, Num) else 'elements'} "
                                  f"into {k} names (Python raises ValueError)", target)
        if isinstance(t, Num):
            return PyTuple(self.rows(value, k))
        return PyTuple(tuple(self.emit("list_get", [value, Const.integer(i)]) for i in range(k)))

    def aug_assign(self, node: cst.AugAssign) -> None:
        target = node.target
        op = _AUG_OPS.get(type(node.operator))
        if op is None:
            raise self.syntax_error("this augmented assignment is not supported", "+= -= *= /=", node)
        if isinstance(target, cst.Subscript):
            return self.assign_item(target, self.expr(node.value), op, _AUG_SYMBOL[op])
        if not isinstance(target, cst.Name):
            raise self.syntax_error("augmented assignment is supported on a name or an element of an array",
                                    "x = x + ... on a whole name", target)
        old = self.expr(target)
        if is_list_value(old):
            raise self.type_error(f"`{target.value} {_AUG_SYMBOL[op]}= ...` on a list is not supported (`+=` extends "
                                  f"the list in place)", node, f"{target.value}.append(v), or a new list: "
                                  f"{target.value} = {target.value} + [v]")
        old_atom = self.atom(old, target)
        if isinstance(old_atom.type, Num) and not old_atom.type.py:  # a 0-d array changes in place too
            self.check_in_place(old_atom, target.value, _AUG_SYMBOL[op], node)
        value = self.emit(op, [old_atom, self.atom(self.expr(node.value), node.value)])
        maybe_array = isinstance(old_atom.type, Num) and (  # a 0-d one too, unless a numpy scalar for sure
            old_atom.type.shape or not old_atom.type.py and self.aliases.roots(old_atom))
        if maybe_array and old_atom.type.shape and value.type.shape == old_atom.type.shape and (  # type: ignore[union-attr]
                value.type.dtype != old_atom.type.dtype and  # type: ignore[union-attr]
                np.can_cast(value.type.dtype, old_atom.type.dtype, "same_kind")):  # type: ignore[union-attr]
            # numpy computes in the wider dtype and casts back into the array (casting="same_kind"): f32 += f64
            kind = np.dtype(old_atom.type.dtype).kind  # type: ignore[union-attr]
            value = self.emit("astype" if kind == "f" else "astype_discrete", [value],
                              {"dtype": old_atom.type.dtype, "scalar": False})  # type: ignore[union-attr]
        if maybe_array and (
                value.type.shape != old_atom.type.shape or value.type.dtype != old_atom.type.dtype):  # type: ignore[union-attr]
            raise self.type_error(f"in-place `{_AUG_SYMBOL[op]}=` cannot change {old_atom.type} into {value.type}", node,
                                  f"{target.value} = {target.value} {_AUG_SYMBOL[op]} ...")
        self.scope.env[target.value] = self.name_result(value, target.value)

    def append(self, call: cst.Call) -> None:
        """``xs.append(v)``: the list named ``xs`` is rebound to the longer list."""
        assert isinstance(call.func, cst.Attribute) and isinstance(call.func.value, cst.Name)
        name = call.func.value.value
        if len(call.args) != 1 or call.args[0].keyword or call.args[0].star:
            raise self.type_error("list.append takes one argument", call)
        old = self.expr(call.func.value)
        loc = self.loc(call)

        def fail(why: str) -> Exception:
            return UnsupportedSyntaxError(f"`{name}.append` changes the list in place, and {why}", loc,
                                          f"build a new list: {name} = {name} + [v]")

        if is_list_value(old):
            self.aliases.update_list(old, self.readable_besides(name) + self.held_by_itself(old), fail)
        given = self.expr(call.args[0].value)
        if isinstance(old, PyTuple) and old.is_list:  # it holds what a list literal holds: functions, tuples, lists
            new = self.scope.env[name] = PyTuple(old.items + (given,), is_list=True)
            self.aliases.new_list(new, self.aliases.list_identity(old))
        elif isinstance(old, Var) and isinstance(old.type, ListT):
            self.check_element(given, call)
            v = self.atom(given, call.args[0].value)
            self.scope.env[name] = self.name_result(self.emit("append", [old, v]), name)
        else:
            raise self.type_error(f"`{name}` is not a list", call, "append to a list made by [] or [a, b]")

    def check_element(self, given: Value, call: cst.Call) -> None:
        """Refuse, by name, a function or a decorated function's pair appended to a list built at run time
        (in a loop, a comprehension, a ``map``), which holds numbers and arrays only."""
        arg = call.args[0].value
        if isinstance(given, PyTuple) and len(given.items) == 2 and isinstance(given.items[1], Ref) and (
                given.items[1].kind == "derivative"):  # `[helper(v) for v in x]`, `map(helper, x)`
            f = reversed_function(given.items[1].obj).__name__
            kind = "pushforward" if getattr(type(given.items[1].obj), "_MODE", "") == "forward" else "pullback"
            raise UnsupportedFunctionError(
                f"a list built at run time (a loop, a comprehension or a map over an array) holds numbers and arrays "
                f"only, and `{f}(...)` returns a pair (value, {kind}): `{f}` is decorated with astad", self.loc(arg),
                f"its value, `{f}(...)[0]` (differentiated through), or the undecorated function")
        if isinstance(given, Ref) and given.kind in _FUNCTIONS:
            made = isinstance(self.scope.parsed.aliases.get(call), (cst.ListComp, cst.GeneratorExp))
            what = "a comprehension makes a list of functions" if made else "a function is appended to a list in a loop"
            raise self.type_error(f"{what} (`{ref_name(given)}`): a list built at run time holds numbers and arrays "
                                  "only", arg, "a list written out, fs = [f, g, h], or one function taking what varies "
                                  "as a parameter: lambda v, k: v * k, called as f(x, k)")

    def dynamic_list(self, value: PyTuple, node: cst.CSTNode) -> Atom:
        """A list known element by element, as a run-time list (to carry it through a loop)."""
        var = self.emit("list", [self.atom(v, node) for v in value.items])
        if value.is_list:
            self.aliases.converted(var, value)
        return var

    def check_in_place(self, x: Atom, name: str, symbol: str, node: cst.CSTNode) -> None:
        """``x += v`` changes the array in place: the functional reading is only
        right when nothing that can still be read shares its memory (another
        name, a view, a list or tuple holding it, a function's default, the
        caller's argument, a module constant): see :mod:`astad.aliases`."""
        loc = self.loc(node)

        def fail(why: str) -> Exception:
            return UnsupportedSyntaxError(f"`{name} {symbol}= ...` changes the array in place, and {why}", loc,
                                          self.view_hint(x, name, symbol, why) or f"{name} = {name} {symbol} ...")

        self.aliases.update_array(x, self.readable_besides(name), fail)


_AUG_OPS: dict[type, str] = {
    cst.AddAssign: "add", cst.SubtractAssign: "sub", cst.MultiplyAssign: "mul", cst.DivideAssign: "div",
    cst.PowerAssign: "pow", cst.MatrixMultiplyAssign: "matmul",
}


#: kinds of :class:`Ref` that are functions (refused by name as the elements of a list built at run time)
_FUNCTIONS = frozenset({"closure", "user", "decorated", "numpy", "builtin"})

_AUG_SYMBOL = {"add": "+", "sub": "-", "mul": "*", "div": "/", "pow": "**", "matmul": "@"}


#: numpy functions that change their first argument in place, and what to write instead
_IN_PLACE = tuple((f, hint) for f, hint in (
    (getattr(np, "put", None), "an indexed assignment on a copy: y = y.copy(); y[idx] = v (for a 1-d y: np.put "
     "indexes the flattened array)"),
    (getattr(np, "putmask", None), "y = np.where(mask, v, y)"),
    (getattr(np, "place", None), "y = y.copy(); y[mask] = v"),
    (getattr(np, "copyto", None), "y = src.copy(), or y = np.where(mask, src, y) with where=mask"),
    (getattr(np, "fill_diagonal", None), "y = y.copy(); y[np.arange(n), np.arange(n)] = v"),
) if f is not None)


def _what(value: Value) -> str:
    """What a value that is not a tuple is, for a message: an array, a number, ..."""
    t = getattr(value, "type", None)
    if isinstance(t, Num):
        return f"an array ({t})" if t.shape else "a number"
    return "a value that is not a tuple"


def _repeated_vars(value: PyTuple) -> frozenset:
    """The variables a tuple or list (nested) holds more than once."""
    seen: set = set()
    twice: set = set()

    def walk(v: Value) -> None:
        if isinstance(v, PyTuple):
            for item in v.items:
                walk(item)
        elif isinstance(v, Var):
            (twice if v in seen else seen).add(v)

    walk(value)
    return frozenset(twice)

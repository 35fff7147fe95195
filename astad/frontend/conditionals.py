"""Lowering ``if``/``elif``/``else``: conditions (a static bool lowers only
the branch taken), each branch into bindings of its own, and the
branches' values joined into new variables.
"""

from __future__ import annotations

from typing import Any

import libcst as cst
import numpy as np

from ..values import PyTuple, Ref
from ..ir import Atom, Bind, Block, If, Const, ListT, MakeTuple, Num, TupleT, Type, Var
from .syntax import stmts_of, else_stmts_of
from .abstract import literal_type
from .scopes import Value, is_list_value, rebuild
from .core import LowererCore


#: `if`s nested deeper than this are refused: the generated code would nest past Python's 100 levels of
#: indentation (and the IR's walks, recursive, past the interpreter's recursion limit)
MAX_IF_DEPTH = 100


class Conditionals(LowererCore):
    """``if`` statements and the joins of two branches."""

    if_depth = 0  # how many `if`s (not known statically) the statement being lowered is in

    def lower_block(self, stmts: list[cst.BaseStatement], to_the_end: bool) -> Value | None:
        """A branch; when it runs to the end of a loop body, that is a ``continue``."""
        value = self.lower_stmts(stmts)
        if value is None and to_the_end and self.exits:
            return self.exits[-1]("end")
        return value

    def condition(self, node: cst.BaseExpression) -> Atom | bool:
        """A branch condition: a scalar boolean atom, or a bool known statically
        (constants and shapes), in which case only the branch taken is lowered."""
        self.truth_only.add(id(node))
        try:
            a = self.atom(self.expr(node), node)
        finally:
            self.truth_only.discard(id(node))
        t = a.type
        if not (isinstance(t, Num) and t.shape == ()):
            raise self.type_error(f"a condition must be a scalar, not {t}", node,
                                  "np.where(condition, a, b) for elementwise choices on arrays")
        if isinstance(a, Const) and a.name is None:
            return bool(a.value)
        if t.value is not None:
            return bool(t.value)
        if t.dtype != "bool":
            zero = Const.literal(0, literal_type(0))
            a = self.emit("ne", [a, zero])
        return a

    def lower_if(self, stmt: cst.If, rest: list[cst.BaseStatement] | None) -> Value | None:
        """``if``/``elif``/``else``.  Without ``rest``, the names the branches assign are
        joined after it; with ``rest`` (a branch returns), the rest of the function
        continues each branch and the joined value is what the function returns."""
        then_stmts = stmts_of(stmt.body) + (rest or [])
        else_stmts = else_stmts_of(stmt) + (rest or [])
        self.node = stmt
        return self.lower_branches(self.condition(stmt.test), then_stmts, else_stmts, rest is not None, stmt)

    def lower_branches(self, c: Atom | bool, then_stmts: list[cst.BaseStatement], else_stmts: list[cst.BaseStatement],
                       to_the_end: bool, stmt: cst.CSTNode) -> Value | None:
        """``then_stmts`` where ``c`` holds, else ``else_stmts`` (an ``if``; a loop's ``else`` block);
        ``to_the_end``: they run to the end of the block, whose value (if it returns) is joined."""
        if isinstance(c, bool):
            return self.lower_stmts(then_stmts if c else else_stmts)
        if self.if_depth >= MAX_IF_DEPTH:  # (an `elif` is an `if` in the `else` of the one before)
            raise self.syntax_error(
                f"`if`s and `elif`s nested more than {MAX_IF_DEPTH} deep: the derivative's code would nest too "
                "deeply for Python, here", "fewer nested blocks: a long if/elif chain as a lookup "
                "(`y = x * scale[k]`) or as separate `if` statements, each assigning", stmt)
        self.if_depth += 1
        try:
            (t_binds, t_env, t_val), (e_binds, e_env, e_val) = self.branches(
                lambda: self.lower_block(then_stmts, to_the_end), lambda: self.lower_block(else_stmts, to_the_end))
        finally:
            self.if_depth -= 1
        self.node = stmt
        if to_the_end:
            if t_val is None or e_val is None:
                raise self.syntax_error("not every path through this `if` returns a value",
                                        "return a value on every path", stmt)
            return self.join(c, [("the returned value", t_val, e_val)], t_binds, e_binds)[0]
        before = self.scope.env
        names = [k for k in list(t_env) + [k for k in e_env if k not in t_env]
                 if k in t_env and k in e_env and not (t_env[k] is before.get(k) and e_env[k] is before.get(k))]
        joined = self.join(c, [(k, t_env[k], e_env[k]) for k in names], t_binds, e_binds)
        for k, v in zip(names, joined):
            self.scope.env[k] = v
        for k in [k for k in t_env if k not in e_env] + [k for k in e_env if k not in t_env]:
            if k not in before:  # (not defined after the `if` on every path: a later read is refused)
                self.branch_locals.setdefault((self.scope.path, k), self.loc(stmt).line)
        return None

    def join(self, cond: Atom, values: list[tuple[str, Value, Value]], t_binds: list[Bind],
             e_binds: list[Bind]) -> list[Value]:
        """Bind ``if cond`` with the two branches' values joined into new variables."""
        pairs: list[tuple[str, Atom, Atom]] = []
        rebuilt = [self._pair_up(name, tv, ev, pairs, (t_binds, e_binds)) for name, tv, ev in values]
        outs = [Var(self.namer.fresh(name) if name.isidentifier() else self.namer.temp(),
                    self.join_type(name, a.type, b.type)) for name, a, b in pairs]

        def block(binds: list[Bind], atoms: list[Atom]) -> Block:
            tup = Var(self.namer.temp(), TupleT(tuple(a.type for a in atoms)))
            return Block(tuple(binds) + (Bind((tup,), MakeTuple(tuple(atoms)), self.loc()),), tup)

        self.binds.append(Bind(tuple(outs), If(cond, block(t_binds, [a for _, a, _ in pairs]),
                                                block(e_binds, [b for _, _, b in pairs])), self.loc()))
        for out, (_, a, b) in zip(outs, pairs):
            self.aliases.joined(out, a, b)
        it = iter(outs)
        results = [rebuild(r, it) for r in rebuilt]
        for result, (_, tv, ev) in zip(results, values):
            self.aliases.joined(result, tv, ev)
        return results

    def _pair_up(self, name: str, tv: Value, ev: Value, pairs: list, binds: tuple[list[Bind], list[Bind]]) -> Any:
        """Match the structure of two branches' values; collect the atom pairs to
        join.  A list of another length in each branch (appended to in one of
        them) is joined as a list built at run time."""
        if isinstance(tv, PyTuple) and isinstance(ev, PyTuple) and len(tv.items) == len(ev.items):
            items = tuple(self._pair_up(name, a, b, pairs, binds) for a, b in zip(tv.items, ev.items))
            return ("list", items) if tv.is_list and ev.is_list else items
        if is_list_value(tv) and is_list_value(ev):
            pairs.append((name, *(self._in_branch(v, b) for v, b in zip((tv, ev), binds))))
            return ("atom",)
        if isinstance(tv, Ref) or isinstance(ev, Ref):
            if tv == ev:
                return ("same", tv)
            raise self.type_error(f"`{name}` is a different kind of value in each branch", None,
                                  "the same kind of value (number, array or tuple) in both branches")
        if isinstance(tv, PyTuple) or isinstance(ev, PyTuple):
            kind = "list" if any(isinstance(v, PyTuple) and v.is_list for v in (tv, ev)) else "tuple"
            raise self.type_error(f"`{name}` is a {kind} in one branch and not in the other (or of another length)",
                                  None, "values of the same structure in both branches")
        pairs.append((name, self.atom(tv, self.node), self.atom(ev, self.node)))
        return ("atom",)

    def _in_branch(self, value: Value, binds: list[Bind]) -> Atom:
        """A list as a run-time list, made (if it must be) at the end of a branch's bindings."""
        if not isinstance(value, PyTuple):
            return self.atom(value, self.node)
        saved, self.binds = self.binds, binds
        try:
            return self.dynamic_list(value, self.node)
        finally:
            self.binds = saved

    def join_type(self, name: str, a: Type, b: Type, loop: cst.CSTNode | None = None) -> Type:
        """The type of ``name``, ``a`` in one branch and ``b`` in the other (or, for a ``loop``, ``a``
        where an iteration starts and ``b`` where it ends)."""
        if a == b:
            return a
        if isinstance(a, ListT) and isinstance(b, ListT):
            if a.elem is None or b.elem is None:
                return ListT(a.elem if b.elem is None else b.elem)
            return ListT(self.join_type(name, a.elem, b.elem, loop))
        if isinstance(a, Num) and isinstance(b, Num):
            if a.shape == b.shape and (a.dtype == b.dtype or not a.shape):
                dtype = np.result_type(a.dtype, b.dtype).name
                narrow = next((t for t in (a, b) if not t.py and t.dtype != dtype), None)
                if narrow is None:
                    py = a.py and b.py
                    weak = not py and not a.shape and (a.py or b.py or a.weak or b.weak)  # either, when it runs
                    return Num(a.shape, dtype, py, a.value if a.value == b.value else None, weak)
                # a numpy value of one dtype on one path, a wider one (or a Python scalar) on the other:
                # numpy computes with each at its own precision afterwards, so no one type is both
                raise self._dtype_join_error(name, a, b, narrow, loop)
            if a.ndim == b.ndim and a.dtype == b.dtype:  # sizes that differ are known only at run time
                return Num(tuple(d if d == e else None for d, e in zip(a.shape, b.shape)), a.dtype)
        if loop is not None:
            kind = "while" if isinstance(loop, cst.While) else "for"
            raise self.type_error(f"`{name}` is {a} where an iteration of the `{kind}` loop at line "
                                  f"{self.loc(loop).line} starts and {b} where it ends: a variable the loop "
                                  "carries keeps its shape and dtype", None,
                                  "the same shape and dtype on every iteration: convert before the loop "
                                  "(s = s.astype(np.float64)), or keep the dtype in it (s * np.float32(2.0))")
        raise self.type_error(f"`{name}` is {a} in one branch and {b} in the other", None,
                              "the same shape and dtype in both branches")

    def _dtype_join_error(self, name: str, a: Num, b: Num, narrow: Num, loop: cst.CSTNode | None) -> Exception:
        """``name`` is a numpy scalar of ``narrow``'s dtype on one path and a value that numpy treats as of
        another dtype (a Python scalar is "weak": it takes the other operand's dtype) on the other."""
        other = b if narrow is a else a
        py = other.py and not other.shape
        why = (f"a Python {str(other)} on one path and a numpy {narrow.dtype} on the other" if py else
               f"{narrow.dtype} on one path and {other.dtype} on the other")
        make = f"np.{narrow.dtype}({'0.0' if narrow.differentiable else '0'})"
        hint = (f"one dtype on every path: make the Python number a numpy {narrow.dtype} ({make}), or the "
                f"numpy value a Python number ({'float' if narrow.differentiable else 'int'}(...)); numpy computes with a Python number at the other "
                "operand's precision, so what follows would differ between the paths" if py else
                f"one dtype on every path: convert with .astype(np.{other.dtype}) or np.{other.dtype}(...)")
        if loop is not None:
            kind = "while" if isinstance(loop, cst.While) else "for"
            return self.type_error(f"`{name}` is {a} where an iteration of the `{kind}` loop at line "
                                   f"{self.loc(loop).line} starts and {b} where it ends: {why}", None,
                                   hint.replace("one dtype on every path", "one dtype on every iteration"))
        return self.type_error(f"`{name}` is {a} in one branch and {b} in the other: {why}", None, hint)

"""Lowering loops: ``for`` over ``range``, arrays, lists, ``enumerate``, ``zip``
and ``reversed``, and ``while``; the names a body updates are carried from one
iteration to the next, ``break`` and ``return`` stop it; loops over
structured values are unrolled.
"""

from __future__ import annotations

import builtins
from contextlib import contextmanager
from typing import Any, Callable, Iterator, Sequence

import libcst as cst
import numpy as np

from ..values import PyDict, PyTuple, Ref
from ..ir import BOOL, INT, Atom, Bind, Block, Const, ListT, Loop, MakeTuple, Num, NoneT, TupleT, Type, Var
from .syntax import target_names, assigned_names, breaks_out, can_leave, contains_return, leaves_loop, stmts_of
from . import lazy
from .abstract import literal_type
from .scopes import Value, rebuild, forget_value
from .core import LowererCore


class Loops(LowererCore):
    """``for`` and ``while`` loops."""

    def lower_for(self, stmt: cst.For, completed: list | None = None) -> tuple[Atom, Value] | None:
        """``for i in range(...)``: the names the body assigns that exist before the
        loop are carried from one iteration to the next and joined after it.  ``completed``
        (a loop with an ``else`` block): gets whether the loop ended without ``break``."""
        self.node = stmt
        if stmt.asynchronous is not None:
            raise self.syntax_error("`async for` is not supported", "a plain `for` loop", stmt)
        self.check_else(stmt)
        it = stmt.iter
        func = self.expr(it.func) if isinstance(it, cst.Call) else None
        kind = func.obj if isinstance(func, Ref) and func.kind == "iterator" else None
        if kind is builtins.range or kind is builtins.reversed and self.ranged(it):
            if not isinstance(stmt.target, cst.Name):
                raise self.syntax_error("the loop variable must be a single name", "for i in range(n):", stmt.target)
            bounds = self.range_bounds(it) if kind is builtins.range else self.reversed_range(it.args[0].value)
            return self.lower_loop(stmt, stmt.target.value, tuple(bounds), None, completed=completed)
        # over arrays (first axis), enumerate(...), reversed(...) or zip(...): a loop over the index
        seqs, names, index_target, start, backwards = self.for_head(stmt, it, kind)
        values = [self.expr(s) for s in seqs]
        lazy.check_zip(self, seqs, values)
        if all(isinstance(v, (PyTuple, PyDict)) for v in values):
            with self.iterating(values, seqs):
                self.unroll(stmt, values, names, index_target, start, backwards)
            if completed is not None:
                completed.append(True)  # (no `break` in a loop that is unrolled)
            return None
        arrays = [self.dynamic_list(v, s) if isinstance(v, PyTuple) else self.atom(v, s) for v, s in zip(values, seqs)]
        for a, s in zip(arrays, seqs):
            if not (isinstance(a.type, Num) and a.type.ndim >= 1 or isinstance(a.type, ListT)):
                raise self.type_error(f"a `for` loop runs over arrays (their first axis) and lists, not {a.type}", s,
                                      "for i in range(n), for row in x, enumerate(x), zip(x, y), reversed(x)")
        lengths = [self.emit("list_len", [a]) if isinstance(a.type, ListT) else self.shape_of(a).items[0]
                   for a in arrays]
        bound = lengths[0]
        for other in lengths[1:]:
            bound = self.emit_call_min(bound, other)
        flat = [m for n in names for m in _flat_names(n)]  # (`for a, b in pts`: a row unpacked into names)
        for n in flat + ([index_target] if index_target is not None else []):
            if not isinstance(n, cst.Name):
                raise self.syntax_error("the loop variables must be names", "for a, b in zip(x, y):", n)
        # the loop's own index runs over the elements' positions (backwards for `reversed`); the user's
        # index is it, or (`enumerate(x, start)`, `enumerate(reversed(x))`) computed from it
        computed = index_target is not None and (start is not None or backwards)
        index_name = index_target.value if index_target is not None and not computed else f"{flat[0].value}_index"
        last = self.emit("sub", [bound, Const.integer(1)]) if backwards else None
        element_names = ([index_target.value] if computed else []) + [n.value for n in flat]

        def elements(index: Var) -> None:
            if computed:
                count: Atom = index if last is None else self.emit("sub", [last, index])
                if start is not None:
                    count = self.emit("add", [count, start])
                self.scope.env[index_target.value] = self.name_result(count, index_target.value)
            for n, a in zip(names, arrays):
                element = (self.emit("list_get", [a, index]) if isinstance(a.type, ListT) else
                           self.emit("getitem", [a, index], {"index": (("arg", 1),)}))
                if isinstance(n, cst.Name):
                    self.scope.env[n.value] = self.name_result(element, n.value)
                else:  # a row of known length, unpacked into its elements
                    self.assign(n, element)

        bounds = (bound,) if last is None else (last, Const.integer(-1), Const.integer(-1))
        with self.iterating(arrays, seqs):
            return self.lower_loop(stmt, index_name, bounds, None, prelude=elements,
                                   hidden=index_target is None or computed, element_names=element_names,
                                   completed=completed)

    def check_else(self, stmt: cst.For | cst.While) -> None:
        """A loop's ``else`` block may not ``break`` or ``continue`` the loop around it (astad reads
        whether a statement can leave its block without looking into loops)."""
        if stmt.orelse is not None and any(leaves_loop(s) for s in stmts_of(stmt.orelse.body)):
            raise self.syntax_error("`break` or `continue` in a loop's `else` block is not supported",
                                    "set a flag there, and `break` or `continue` after the loop where it is set",
                                    stmt.orelse)

    def for_head(self, stmt: cst.For, it: cst.BaseExpression, kind: Any) -> tuple[
            list[cst.BaseExpression], list[cst.BaseExpression], cst.BaseExpression | None, Atom | None, bool]:
        """What a `for` loop that is not over a range runs over: the sequences, the names of their
        elements, the index's name (`enumerate`), the index's start (`enumerate(x, k)`), and whether it runs
        backwards (`reversed(x)`, `enumerate(reversed(x))`)."""
        if kind is None:
            return [it], [stmt.target], None, None, False
        assert isinstance(it, cst.Call)
        targets = target_names(stmt.target)
        if kind is builtins.reversed:
            return [self.reversed_of(it)], [stmt.target], None, None, True
        if kind is builtins.zip:
            if len(targets) != len(it.args):
                raise self.syntax_error("name one loop variable per zipped array", "for a, b in zip(x, y):", it)
            return [a.value for a in it.args], targets, None, None, False
        assert kind is builtins.enumerate
        args = it.args
        if not (1 <= len(args) <= 2 and len(targets) == 2 and not any(a.star for a in args) and args[0].keyword is None
                and (len(args) == 1 or args[1].keyword is None or args[1].keyword.value == "start")):
            raise self.syntax_error("use `for i, v in enumerate(x):` or `enumerate(x, start)`",
                                    "for i, v in enumerate(x): (or enumerate(x, 1), enumerate(x, start=k))", it)
        start = self.enumerate_start(args[1].value) if len(args) == 2 else None
        seq, backwards = args[0].value, False
        func = self.expr(seq.func) if isinstance(seq, cst.Call) else None
        if isinstance(func, Ref) and func.kind == "iterator" and func.obj is builtins.reversed:
            assert isinstance(seq, cst.Call)
            seq, backwards = self.reversed_of(seq), True
        zipped = None if backwards else self.zipped(seq)
        if zipped is None:
            return [seq], [targets[1]], targets[0], start, backwards
        # `for i, (a, b) in enumerate(zip(x, y)):` the index and one name per array
        names = target_names(targets[1])
        if not isinstance(targets[1], (cst.Tuple, cst.List)) or len(names) != len(zipped.args):
            raise self.syntax_error("name one loop variable per zipped array",
                                    "for i, (a, b) in enumerate(zip(x, y)):", it)
        return [a.value for a in zipped.args], names, targets[0], start, False

    def enumerate_start(self, node: cst.BaseExpression) -> Atom:
        """The ``start`` of ``enumerate(x, start)``: an integer."""
        start = self.atom(self.expr(node), node)
        if not (isinstance(start.type, Num) and start.type.shape == () and start.type.dtype in ("int64", "int32")):
            raise self.type_error(f"enumerate's start must be an integer, not {start.type}", node,
                                  "enumerate(x, 1), enumerate(x, start=k) with an int k")
        return start

    def reversed_of(self, node: cst.Call) -> cst.BaseExpression:
        """The sequence of ``reversed(seq)`` (over an array's first axis, a list, a tuple)."""
        if len(node.args) != 1 or node.args[0].keyword is not None or node.args[0].star:
            raise self.syntax_error("reversed() takes one sequence", "for v in reversed(x):", node)
        seq = node.args[0].value
        func = self.expr(seq.func) if isinstance(seq, cst.Call) else None
        if isinstance(func, Ref) and func.kind == "iterator" and func.obj is not builtins.range:
            raise self.syntax_error(f"`reversed` runs here over an array, a list or a `range(...)`, not over "
                                    f"`{func.obj.__name__}(...)`", "for v in reversed(x):, for i in reversed(range(n)):,"
                                    " or a loop over the indices backwards: for i in range(n - 1, -1, -1):", node)
        return seq

    def ranged(self, node: cst.Call) -> bool:
        """Whether ``node`` (a call of ``reversed``) is ``reversed(range(...))``."""
        seq = self.reversed_of(node)
        func = self.expr(seq.func) if isinstance(seq, cst.Call) else None
        return isinstance(func, Ref) and func.obj is builtins.range

    def reversed_range(self, node: cst.BaseExpression) -> list[Atom]:
        """The bounds of ``range(...)`` backwards (``reversed(range(...))``): ``range(n)`` as
        ``range(n - 1, -1, -1)``, ``range(a, b)`` as ``range(b - 1, a - 1, -1)``; with a step ``s``
        (known when transforming), from the last element ``a + (len - 1) * s`` down to ``a - s``."""
        bounds = self.range_bounds(node)
        if len(bounds) == 1:
            bounds = [Const.integer(0)] + bounds
        first, stop = bounds[0], bounds[1]
        if len(bounds) == 2:
            return [self.emit("sub", [stop, Const.integer(1)]), self.emit("sub", [first, Const.integer(1)]),
                    Const.integer(-1)]
        step = bounds[2].type.value if isinstance(bounds[2].type, Num) else None
        if not isinstance(step, int) or step == 0:
            raise self.type_error("reversed(range(a, b, step)) needs a nonzero step known when transforming (a "
                                  "number written in the code)", node,
                                  "reversed(range(a, b, 2)), or the range backwards: range(last, a - step, -step)")
        # the number of elements: ceil((stop - first) / step); none (a negative count) gives an empty range
        n = self.emit("floordiv", [self.emit("add", [self.emit("sub", [stop, first]),
                                                     Const.integer(step - 1 if step > 0 else step + 1)]),
                                   Const.integer(step)])
        last = self.emit("add", [first, self.emit("mul", [self.emit("sub", [n, Const.integer(1)]),
                                                          Const.integer(step)])])
        return [last, self.emit("sub", [first, Const.integer(step)]), Const.integer(-step)]

    @contextmanager
    def iterating(self, values: Sequence[Value], seqs: Sequence[cst.BaseExpression]) -> Iterator[None]:
        """While a `for` loop's body is lowered: the loop reads its next elements from the objects it runs
        over, so an update of one of them in place (or an append) would be seen by the iterations after
        it; it is refused (aliases), as an update of any other value that can still be read."""
        held = [(f"the `for` loop at line {self.loc(s).line} reads its next elements from it (loop over the "
                 f"indices instead: `for i in range(len(...)):`, reading the element by index)", v)
                for v, s in zip(values, seqs)]
        self.iterated += held
        try:
            yield
        finally:
            del self.iterated[len(self.iterated) - len(held):]

    def zipped(self, node: cst.BaseExpression) -> cst.Call | None:
        """``node`` where it is a call of ``zip`` (what a loop's ``enumerate`` runs over), else None."""
        if not isinstance(node, cst.Call):
            return None
        func = self.expr(node.func)
        return node if isinstance(func, Ref) and func.kind == "iterator" and func.obj is builtins.zip else None

    def unroll(self, stmt: cst.For, values: list[Value], names: list[cst.BaseExpression],
               index_target: cst.BaseExpression | None, start: Atom | None = None, backwards: bool = False) -> None:
        """A loop over tuples, lists or dicts known element by element (structured
        arguments): the body once per element (a dict gives its keys), last to first ``backwards``."""
        if can_leave(stmt.body):
            raise self.syntax_error("`break`, `continue` and `return` are not supported in a loop over a tuple, "
                                    "list or dict (it is unrolled)", "a loop without them, or a loop over an array",
                                    stmt)
        elements = [list(v.items) if isinstance(v, PyTuple) else
                    [Ref("string", k) if isinstance(k, str) else Const.literal(k, literal_type(k)) for k in v.keys]
                    for v in values]
        if backwards:
            elements = [e[::-1] for e in elements]
        for k in range(min(map(len, elements))):
            if index_target is not None:
                self.assign(index_target, Const.literal(k, literal_type(k)) if start is None else
                            self.emit("add", [Const.integer(k), start]))
            for name, items in zip(names, elements):
                self.assign(name, items[k])
            self.lower_stmts(stmts_of(stmt.body))

    def emit_call_min(self, a: Value, b: Value) -> Atom:
        x, y = self.atom(a, self.node), self.atom(b, self.node)
        if isinstance(x.type, Num) and isinstance(y.type, Num) and x.type.value is not None and y.type.value is not None:
            v = min(x.type.value, y.type.value)
            return x if v == x.type.value else y
        return self.emit("minimum", [x, y])

    def lower_while(self, stmt: cst.While, completed: list | None = None) -> tuple[Atom, Value] | None:
        """``while cond:``: a loop whose last carried value is the condition,
        computed before the loop and again at the end of each iteration."""
        self.node = stmt
        self.check_else(stmt)
        go = self.condition(stmt.test)
        if go is False:
            if completed is not None:
                completed.append(True)
            return None
        return self.lower_loop(stmt, None, (), stmt.test, Const.literal(True, BOOL) if go is True else go,
                               completed=completed)

    def lower_loop(self, stmt: cst.For | cst.While, index_name: str | None, bounds: tuple[Atom, ...],
                   test: cst.BaseExpression | None, go: Atom | None = None,
                   prelude: Callable[[Var], None] | None = None, hidden: bool = False,
                   element_names: Sequence[str] = (), completed: list | None = None) -> tuple[Atom, Value] | None:
        """A loop: the names its body assigns that exist before it are carried
        from one iteration to the next (a tuple as its items, a list as a run-time
        list).  ``break`` stops it; ``return`` stops it too, carrying whether it
        returned and the value, which it gives back as ``(returned, value)``.
        ``completed``: gets whether it ended without ``break`` (a ``for`` carries that as
        ``running``; a ``while`` with ``break`` carries it as ``completed``, before its condition)."""
        before = self.scope.env
        carried = [n for n in assigned_names(stmt.body) if n in before and n != index_name
                   and n not in element_names and not (isinstance(before[n], Ref) and before[n].kind == "after_loop")]
        shapes, init, names = [], [], []
        for n in carried:
            shape, leaves = self.flatten(before[n], n, stmt)
            shapes.append(shape)
            init += leaves
            names += _slot_names(n, len(leaves))
        has_return = contains_return(stmt.body)
        has_break = breaks_out(stmt.body) or has_return
        running = has_break and test is None  # a `for` with `break` carries whether it still runs
        flag = completed is not None and test is not None and breaks_out(stmt.body)  # `while ... else` with `break`
        ret_shape: Any = None
        ret_slots = 0
        extra = ([Const.literal(True, BOOL)] if flag else []) + ([go] if go is not None else []) + (
            [Const.literal(True, BOOL)] if running else [])
        extra_names = (["completed"] if flag else []) + (["go"] if go is not None else []) + (
            ["running"] if running else [])
        types = [forget_value(a.type) for a in init + extra]
        for _ in range(4):  # until the carried types are stable (e.g. a Python float becoming np.float64)
            index = Var(self.namer.fresh(index_name), INT) if index_name is not None else None
            slot_names = names + (["returned"] + _slot_names("result", ret_slots) if ret_shape else []) + extra_names
            params = [Var(self.namer.fresh(n), t) for n, t in zip(slot_names, types)]
            n_state = len(names) + (1 + ret_slots if ret_shape else 0)
            goes_on: list[Atom] = []  # this pass's conditions for another iteration (`while` only)

            for p, a in zip(params, init + extra):
                self.aliases.carried(p, a)
            if index is not None:
                self.aliases.made(index.name, ())
                self.exact_numbers.add(index.name)  # an int (calls.exact_number)

            endless: list[cst.BaseExpression] = []  # a condition always true where the loop cannot stop (this pass)

            def body() -> list[Atom]:
                if index is not None:
                    self.scope.env[index_name] = index  # type: ignore[index]
                if prelude is not None:
                    assert index is not None
                    prelude(index)
                it = iter(params)
                for n, shape in zip(carried, shapes):
                    self.scope.env[n] = rebuild(shape, it)
                if not running:
                    return iteration()
                t_binds, _, t_outs = self.branch(iteration)  # `if running:` the body, else nothing changes
                return [self.atom(v, stmt) for v in self.join(params[-1], [
                    (n, t, e) for n, t, e in zip(slot_names, t_outs, params)], t_binds, [])]

            def iteration() -> list[Atom]:
                def leave(kind: str, value: Value = None) -> Value:
                    """The loop's state where the body is left: by its end or `continue`,
                    `break`, or `return value`; and whether the loop stops."""
                    state: list[Atom] = []
                    for n, shape in zip(carried, shapes):
                        state += self.flatten(self.scope.env[n], n, stmt, shape)[1]
                    if kind == "return":
                        if ret_shape is None:
                            found, leaves = self.flatten(value, "the returned value", stmt)
                            raise _ReturnSeen(found, [a.type for a in leaves])
                        state += [Const.literal(True, BOOL)] + self.flatten(value, "the returned value", stmt,
                                                                            ret_shape)[1]
                    elif ret_shape is not None:
                        state += params[len(names):n_state]
                    stop = kind in ("break", "return")
                    if flag:
                        state.append(Const.literal(not stop, BOOL))
                    if test is not None:  # a `while` goes on unless it stops here, if its condition holds now
                        if not stop:
                            goes_on.append(self.next_go(test, has_break, endless))
                        state.append(Const.literal(False, BOOL) if stop else goes_on[-1])
                    elif running:
                        state.append(Const.literal(not stop, BOOL))
                    self.aliases.leaving(stop, state)
                    return PyTuple(tuple(state))

                self.exits.append(leave)
                try:
                    ended = self.lower_stmts(stmts_of(stmt.body))
                finally:
                    self.exits.pop()
                items = (ended if isinstance(ended, PyTuple) else leave("end")).items
                return [self.atom(v, stmt) for v in items]

            # the state to go back to: all of it where the body may `return` (its first pass ends there,
            # undone), else the aliases alone (what a pass whose types did not settle undoes)
            snapshot = self.snapshot() if has_return else (self.aliases.snapshot(),)
            self.aliases.enter_loop()
            try:
                binds, _, outs = self.branch(body)
            except _ReturnSeen as seen:  # the returned value's structure is known now: carry it
                assert has_return, "a `return` found in a loop body without one"
                self.aliases.loops.pop()
                self.restore(snapshot)
                ret_shape, ret_slots = seen.shape, len(seen.types)
                placeholders = [Const.literal(False, BOOL)] + [self.placeholder(t, stmt) for t in seen.types]
                init += placeholders
                types = types[:len(names)] + [forget_value(a.type) for a in placeholders] + types[len(names):]
                continue
            new = [forget_value(self.join_type(n, t, o.type, stmt)) for n, t, o in zip(slot_names, types, outs)]
            if new == types:
                if endless:  # (on the first pass a shape may be the one before the loop: `while len(v) > 1`)
                    raise self.syntax_error("this `while` loop never ends: its condition is always true",
                                            "a condition on the values the loop changes, or a `break`", endless[0])
                break
            self.aliases.loops.pop()
            self.aliases.restore(snapshot[-1])  # this pass's checks are made again by the next
            types = new
        else:
            raise self.type_error("the types of the loop's variables do not settle", stmt)
        self.node = stmt
        tup = Var(self.namer.temp(), TupleT(tuple(o.type for o in outs)))
        block = Block(tuple(binds) + (Bind((tup,), MakeTuple(tuple(outs)), self.loc(stmt)),), tup)
        finals = tuple(Var(self.namer.fresh(n), t) for n, t in zip(slot_names, types))
        self.aliases.exit_loop(params, outs, list(finals))
        self.binds.append(Bind(finals, Loop(bounds, index, tuple(params), tuple(init + extra), block),
                               self.loc(stmt)))
        it = iter(finals)
        for n, shape in zip(carried, shapes):
            self.scope.env[n] = rebuild(shape, it)
        for name in ([] if hidden or index_name is None else [index_name]) + list(element_names):
            self.scope.env[name] = Ref("after_loop", name)
        for name in assigned_names(stmt.body):  # (not carried out of the loop: a later read is refused)
            if name not in self.scope.env:
                self.loop_locals.setdefault((self.scope.path, name), self.loc(stmt).line)
        if completed is not None:
            ended = None if not breaks_out(stmt.body) else "running" if running else "completed"  # (a `return`
            # ends the function: only where the loop did not return is the flag read)
            completed.append(True if ended is None else finals[len(slot_names) - len(extra_names) +
                                                                 extra_names.index(ended)])
        if ret_shape is None:
            return None
        returned = next(it)
        # `while True:` ends only by its `return`: its condition holds before the first iteration and
        # after every one (not only before the first, as `k = 0; while k < 10:`'s)
        only_by_return = all(isinstance(g, Const) and g.value is True for g in [go] + goes_on) and not breaks_out(
            stmt.body)
        return (Const.literal(True, BOOL) if only_by_return else returned), rebuild(ret_shape, it)

    def flatten(self, value: Value, name: str, node: cst.CSTNode, shape: Any = None) -> tuple[Any, list[Atom]]:
        """A value as the atoms a loop carries (a list as a run-time list) and its
        structure; with ``shape``, the value must have that structure."""
        leaves: list[Atom] = []

        def walk(v: Value, want: Any) -> Any:
            if isinstance(v, PyTuple) and not v.is_list and (want is None or (
                    isinstance(want, tuple) and want[:1] not in (("atom",), ("same",)) and len(want) == len(v.items))):
                return tuple(walk(x, None if want is None else w) for x, w in zip(v.items, want or [None] * len(v.items)))
            if isinstance(v, Ref):
                if want is None or want == ("same", v):
                    return ("same", v)
            elif want is None or want == ("atom",):
                leaves.append(self.dynamic_list(v, node) if isinstance(v, PyTuple) else self.atom(v, node))
                return ("atom",)
            if isinstance(v, Ref) or (isinstance(want, tuple) and want[:1] == ("same",)):  # a function's name
                raise self.type_error(f"`{name}` changes structure in the loop: it is bound to another function "
                                      f"(or a function and a value) in its body than before it", node,
                                      "another name for the function the body makes, or a loop over a tuple "
                                      "(`for c in (1.0, 2.0):`, unrolled)")
            raise self.type_error(f"`{name}` changes structure in the loop (a tuple of another length, a tuple "
                                  f"and a number, or another function)", node,
                                  "values of the same structure in every iteration")

        return walk(value, shape), leaves

    def placeholder(self, t: Type, node: cst.CSTNode) -> Atom:
        """A value of type ``t`` for a loop to carry before it has one (never read)."""
        if isinstance(t, Num) and not t.shape:
            value = np.zeros((), t.dtype).item()
            return Const.literal(value, Num((), t.dtype, py=True, value=None if t.dtype == "float64" else value))
        if isinstance(t, Num) and all(isinstance(d, int) for d in t.shape):
            return self.emit("zeros", [Const.literal(d, literal_type(d)) for d in t.shape], {"dtype": t.dtype})
        if isinstance(t, ListT):
            return self.emit("list", [])
        if isinstance(t, NoneT):
            return Const.literal(None, t)
        raise self.type_error(f"a {t} returned from inside a loop is not supported", node,
                              "assign the value to a variable, `break`, and return it after the loop")

    def next_go(self, test: cst.BaseExpression, can_stop: bool, endless: list) -> Atom:
        """Whether a ``while`` loop runs again after an iteration that goes on: its
        condition, on the values the names have where the iteration ends (``test`` noted in
        ``endless`` where it is always true and the loop cannot stop otherwise)."""
        c = self.condition(test)
        if c is True and not can_stop:
            endless.append(test)
        return Const.literal(c, BOOL) if isinstance(c, bool) else c

    def range_bounds(self, node: cst.BaseExpression) -> list[Atom]:
        func = self.expr(node.func) if isinstance(node, cst.Call) else None
        if not (isinstance(func, Ref) and func.obj is builtins.range):
            raise self.syntax_error("only `for ... in range(...)` loops are supported yet", "for i in range(n):",
                                    node)
        assert isinstance(node, cst.Call)
        if not 1 <= len(node.args) <= 3 or any(a.keyword or a.star for a in node.args):
            raise self.type_error("range() takes one to three positional arguments", node)
        bounds = [self.atom(self.expr(a.value), a.value) for a in node.args]
        for i, (a, arg) in enumerate(zip(bounds, node.args)):
            if isinstance(a.type, Num) and a.type.py and a.type.dtype == "bool" and a.type.shape == ():
                # a Python bool is an int to range() (`range(flag)`: 0 or 1 iterations)
                bounds[i] = a = (Const.integer(int(a.value)) if isinstance(a, Const) and a.name is None else
                                 self.atom(self.emit("convert_discrete", [a], {"dtype": "int64", "py": True}), arg.value))
            if not (isinstance(a.type, Num) and a.type.shape == () and a.type.dtype in ("int64", "int32")):
                raise self.type_error(f"range() needs integers, not {a.type}", arg.value,
                                      "integers, e.g. from len(x) or x.shape[0]")
        return bounds


class _ReturnSeen(Exception):
    """Raised the first time a loop body is lowered, at a ``return``: the loop
    then carries a value of this structure and types."""

    def __init__(self, shape: Any, types: list[Type]) -> None:
        super().__init__("return in a loop")
        self.shape, self.types = shape, types


def _slot_names(name: str, n: int) -> list[str]:
    """The names of the atoms a loop carries for one variable (``state_0``,
    ``state_1`` for a tuple)."""
    return [name] if n == 1 else [f"{name}_{i}" for i in range(n)]


def _flat_names(target: cst.BaseExpression) -> list[cst.BaseExpression]:
    """The names a loop's target binds: itself, or those of a tuple (list) of names, nested."""
    if isinstance(target, (cst.Tuple, cst.List)) and not any(isinstance(e, cst.StarredElement) for e in target.elements):
        return [m for e in target.elements for m in _flat_names(e.value)]
    return [target]

"""Codegen of loops: a forward loop recording its tape, a backward loop over
the tape in reverse, and the scalar fast path of :mod:`astad.optimise.scalars`
(vectors read from lists, ``math`` functions of floats, one tape list per
recorded variable, cotangents accumulated in lists; a guarded loop printed
twice, in ``try``/``except``, the array path's loop as the fallback).

:class:`LoopPrinting` is a part of :class:`astad.codegen.python.Printer`
(its ``bind``, ``atom``, ``flush``, ``assign`` and bookkeeping).
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Callable

import libcst as cst

from .. import pyexpr as px
from . import carried
from ..blocks import result_items
from ..errors import InternalError
from ..ir import (Atom, Bind, Block, Loop, LoopBack, Num, Plus, Prim, Var, bound_var_names, nested_blocks, trip_count,
                 use_counts)
from ..optimise.scalars import CAUGHT, FastLoop, ScalarPlan


class LoopPrinting:
    """Loops, for :class:`astad.codegen.python.Printer`."""

    plan: ScalarPlan
    fast: FastLoop | None  # the fast path (or its fallback) of the loop being printed
    zip_elements = False  # forward mode: a loop whose index only reads rows iterates over them (zipped_rows)
    zipped: set[str] = frozenset()  # type: ignore[assignment]  # rows a loop's head binds, not the body
    lines: list
    uses: Counter
    inlined: dict
    depth: dict
    reach: int

    def emit_loop(self, b: Bind, rhs: Loop | LoopBack) -> None:
        """A forward loop (recording its tape) or a backward loop (over the tape in reverse); on the
        fast path, its vectors' lists first, and a guarded one in ``try``, the array path in ``except``."""
        fast = self.plan.loops.get(id(rhs)) if self.fast is None else None
        if fast is not None and isinstance(rhs, LoopBack):  # what is computed again reads recorded values
            self.uses.update(a.name for r in fast.recompute for a in r.rhs.args if isinstance(a, Var))  # type: ignore
        leading = self.comment(b.loc)  # type: ignore[attr-defined]
        inits = [self.atom(a) for a in rhs.init]  # type: ignore[attr-defined]
        if self.zip_elements and fast is None and self.fast is None and isinstance(rhs, Loop) and rhs.tape is None \
                and zipped_rows(rhs):
            for a in rhs.bounds:  # the loop's length (`xs.shape[0]`), read by nothing else: not computed
                if isinstance(a, Var) and a.name in self.inlined:
                    self.atom(a)  # type: ignore[attr-defined]
        self.flush()  # type: ignore[attr-defined]
        if fast is None:
            self.lines += self.loop_lines(b, rhs, inits, self.fast, leading)
            return
        if fast.lists or fast.floats:  # vectors read as lists, numpy floats as Python floats
            names = [cst.Name(n) for n in (*fast.lists.values(), *fast.floats.values())]
            values = [px.method(cst.Name(x), "tolist") for x in fast.lists] + \
                [px.call("float", [cst.Name(x)]) for x in fast.floats]
            self.lines.append(cst.SimpleStatementLine(body=[cst.Assign(
                [cst.AssignTarget(_flat_tuple(names))], _flat_tuple(values))], leading_lines=leading))
            leading = []
        last_loc = self.last_loc  # type: ignore[has-type]
        lines = self.loop_lines(b, rhs, inits, fast, [] if fast.guarded else leading)
        if not fast.guarded:
            self.lines += lines
            return
        self.last_loc = last_loc
        numpy = {v.name for v in rhs.saved if v.name in fast.demoted and _float(v)} if isinstance(rhs, LoopBack) \
            else set()
        fallback = FastLoop(tapes=fast.tapes, recompute=fast.recompute, index=fast.index, numpy=numpy)
        again = self.loop_lines(b, rhs, inits, fallback, [])
        comment = cst.Comment("# Python floats raise where numpy warns: then the loop again, on numpy scalars")
        self.lines.append(cst.Try(body=cst.IndentedBlock(body=lines), leading_lines=leading, handlers=[cst.ExceptHandler(
            body=cst.IndentedBlock(body=again), type=px.tuple_([cst.Name(n) for n in CAUGHT]),
            leading_lines=[cst.EmptyLine(comment=comment)])]))

    def loop_lines(self, b: Bind, rhs: Loop | LoopBack, inits: list, fast: FastLoop | None, leading: list) -> list:
        """The lines of one loop: its variables' first values, the loop, the results out."""
        saved_lines, saved_fast, self.lines, self.fast = self.lines, self.fast, [], fast
        top, self.top = self.top, False  # (lines libcst may print: a guarded loop's go in a `try`)
        try:
            self._loop(b, rhs, inits, leading)
            return self.lines
        finally:
            self.lines, self.fast, self.top = saved_lines, saved_fast, top

    def _loop(self, b: Bind, rhs: Loop | LoopBack, inits: list, leading: list) -> None:
        fast = self.fast
        tapes = fast.tapes if fast is not None else {}
        params = rhs.carried if isinstance(rhs, Loop) else rhs.params
        for p, value in zip(params, inits):
            if fast is not None and p.name in fast.accumulators:
                value = px.binop("*", cst.List([cst.Element(px.literal(0.0))]), px.literal(fast.accumulators[p.name]))
            self.assign((p,), value, None)  # type: ignore[attr-defined]
        if isinstance(rhs, Loop):
            bounds = [self.atom(a) for a in rhs.bounds]  # type: ignore[attr-defined]
            if rhs.tape is not None and tapes:
                names = [cst.Name(tapes[v.name]) for v in rhs.save if v.name in tapes]
                self.lines.append(cst.SimpleStatementLine(body=[cst.Assign(
                    [cst.AssignTarget(_flat_tuple(names))], _flat_tuple([cst.List([]) for _ in names]))]))
            elif rhs.tape is not None:
                self.assign((rhs.tape,), cst.List([]), None)  # type: ignore[attr-defined]
            rows = zipped_rows(rhs) if self.zip_elements and self.fast is None and rhs.tape is None else None
            if rows:  # `for z, z_t in zip(xs, xs_t)`: the rows bound by the loop's head, not by `xs[i]`
                self.zipped = self.zipped | {t.name for t, _ in rows}
                target = _flat_tuple([cst.Name(t.name) for t, _ in rows])
                arrays = [cst.Name(x.name) for _, x in rows]
                iterable = arrays[0] if len(arrays) == 1 else px.call("zip", arrays)
            elif rhs.index is not None:
                target: cst.BaseExpression = cst.Name(rhs.index.name)  # type: ignore[no-redef]
                iterable = px.call("range", bounds)
        else:
            names = [cst.Name(v.name) for v in rhs.saved]
            target = px.tuple_(names) if names else cst.Name("_")
            iterable = px.call("reversed", [cst.Name(rhs.tape.name)])
            if tapes:
                read = [v for v in rhs.saved if v.name in tapes or (fast.index and v.name == fast.index[0])]  # type: ignore
                target = _flat_tuple([cst.Name(v.name) for v in read])
                columns = [px.call("reversed", [self._column(v)]) for v in read]
                iterable = columns[0] if len(columns) == 1 else px.call("zip", columns)

        def tail(items: tuple[Atom, ...]) -> None:
            if isinstance(rhs, Loop) and rhs.tape is not None:
                self.flush()  # type: ignore[attr-defined]  # what the tape records is computed first
                if tapes:
                    for v in (v for v in rhs.save if v.name in tapes):
                        self.lines.append(cst.SimpleStatementLine(body=[cst.Expr(px.method(
                            cst.Name(tapes[v.name]), "append", [cst.Name(v.name)]))]))
                else:
                    entry = px.tuple_([cst.Name(v.name) for v in rhs.save])
                    self.lines.append(cst.SimpleStatementLine(body=[cst.Expr(px.method(
                        cst.Name(rhs.tape.name), "append", [entry]))]))
            # the next values of the loop's variables (one that does not change is not reassigned)
            changed = [(p, self.atom(a)) for p, a in zip(params, items)  # type: ignore[attr-defined]
                       if not (isinstance(a, Var) and a.name == p.name)]
            changed = [(p, v) for p, v in changed if not (isinstance(v, cst.Name) and v.value == p.name)]
            self.flush()  # type: ignore[attr-defined]
            if changed:
                lhs = px.tuple_([cst.Name(p.name) for p, _ in changed]).with_changes(lpar=[], rpar=[])
                value = px.tuple_([v for _, v in changed]).with_changes(lpar=[], rpar=[])
                if len(changed) == 1:
                    lhs, value = cst.Name(changed[0][0].name), changed[0][1]
                self.lines.append(cst.SimpleStatementLine(body=[cst.Assign([cst.AssignTarget(lhs)], value)]))

        owned = {p.name for k, (p, a) in enumerate(zip(params, rhs.init))
                 if self.in_place and self._loop_owns(p, a, rhs.body, k)}  # type: ignore[attr-defined]
        outside, self.fresh = self.fresh, set()  # type: ignore  # an array made before the loop is not reused in it
        updatable, copied, self.updatable, self.copied = self.updatable, self.copied, owned, Counter()  # type: ignore
        in_if, self.in_if = self.in_if, 0  # type: ignore  # an `if` in the body sets its residuals to None in each iteration
        body = self.nested(rhs.body, tail, fast.recompute if fast is not None and isinstance(rhs, LoopBack) else ())
        if self.rename_carried:  # type: ignore[attr-defined]  # forward mode (codegen/carried.py)
            body = carried.renamed(body)
        self.fresh, self.in_if, self.updatable, self.copied = outside, in_if, updatable, copied  # type: ignore
        self.updatable |= {t.name for t, p in zip(b.targets, params) if p.name in owned}  # type: ignore
        if isinstance(rhs, Loop) and rhs.index is None:  # while: the last carried value says whether to go on
            self.lines.append(cst.While(test=cst.Name(rhs.carried[-1].name), body=body, leading_lines=leading))
        else:
            self.lines.append(cst.For(target=target, iter=iterable, body=body, leading_lines=leading))
        for t, p, a in zip(b.targets, params, rhs.init):
            if self.uses[t.name]:  # a loop result nothing reads is not copied out
                self.assign((t,), self._out(p, a, rhs), None)  # type: ignore[attr-defined]

    def _column(self, v: Var) -> cst.BaseExpression:
        """What a backward loop on the fast path reads ``v`` from, in reverse: its tape list (as numpy
        scalars in the fallback), or for the index of a loop of known bounds, their range."""
        fast = self.fast
        assert fast is not None
        if fast.index is not None and v.name == fast.index[0]:
            return px.call("range", [px.literal(n) for n in fast.index[1]])
        tape = cst.Name(fast.tapes[v.name])
        return px.call("np.array", [tape]) if v.name in fast.numpy else tape

    def _out(self, p: Var, init: Atom, rhs: Loop | LoopBack) -> cst.BaseExpression:
        """A loop variable's value after the loop: a list of cotangents as an array, a Python float
        where the array path has a numpy scalar as one again; a Python number it starts from, where the
        loop may run no iteration, is the array path's value then (``acc = 0.0; for i in range(n): acc =
        acc + x[i]``: ``y / acc`` raises ZeroDivisionError at n = 0, and ``acc ** 0.5`` is Python's)."""
        fast = self.fast
        if fast is not None and p.name in fast.accumulators:
            return px.call("np.array", [cst.Name(p.name)])
        if fast is not None and p.name in fast.demoted and isinstance(p.type, Num) and p.type.shape == () \
                and p.type.dtype in ("float64", "bool"):
            out = px.call(f"np.{p.type.dtype}" if p.type.dtype == "float64" else "np.bool_", [cst.Name(p.name)])
            if isinstance(rhs, Loop) and rhs.index is not None and isinstance(init.type, Num) and init.type.py \
                    and not trip_count(rhs):
                bounds = [self.atom(a) for a in rhs.bounds]  # type: ignore[attr-defined]
                ran = px.compare(">", bounds[0], px.literal(0)) if len(bounds) == 1 else \
                    px.call("len", [px.call("range", bounds)])
                return cst.IfExp(test=ran, body=out, orelse=cst.Name(p.name))
            return out
        return cst.Name(p.name)

    def fast_prim(self, b: Bind, rhs: Prim) -> bool:
        """On the fast path: ``x[i]`` from ``x``'s list, ``math.f(t)`` for ``np.f(t)``, ``acc[i] += v`` into
        a list of cotangents (its result is that list).  False: printed as on the array path."""
        fast, target = self.fast, b.targets[0]
        if fast is None:
            if target.name not in self.plan.calls:
                return False
            self.put(b, px.call(self.plan.calls[target.name], [self.atom(rhs.args[0])]))  # type: ignore
            return True
        if target.name in fast.scatters:
            acc, ct, _, index = (self.atom(a) for a in rhs.args)  # type: ignore[attr-defined]
            self.emit(cst.AugAssign(target=px.subscript(acc, [index]), operator=cst.AddAssign(), value=ct),  # type: ignore
                      b.loc)
            self.inlined[target.name], self.depth[target.name] = cst.Name(fast.scatters[target.name]), 0
            return True
        if target.name in fast.elements:
            value = px.subscript(cst.Name(fast.elements[target.name]), [self.atom(rhs.args[1])])  # type: ignore
        elif target.name in fast.calls:
            value = px.call(fast.calls[target.name], [self.atom(rhs.args[0])])  # type: ignore[attr-defined]
        else:
            return False
        self.put(b, value)  # type: ignore[attr-defined]
        return True

    def nested(self, block: Block, tail: Callable[[tuple[Atom, ...]], None], first: tuple[Bind, ...] = ()) \
            -> cst.IndentedBlock:
        """The lines of a branch or loop body: its bindings (after ``first``, what a backward loop on
        the fast path computes again), then ``tail`` given the tuple the block ends with (what it passes on)."""
        saved, self.lines = self.lines, []
        top, self.top = self.top, False  # (lines libcst may print: a body in a `try`)
        try:
            items = result_items(block)
            if items is None:
                raise InternalError("codegen: a branch or loop body must end with the tuple of what it passes on")
            self.bind_all((*first, *block.binds[:-1]))  # type: ignore[attr-defined]
            tail(items)
            lines = self.lines or [cst.SimpleStatementLine(body=[cst.Pass()])]
        finally:
            self.lines, self.top = saved, top
        return cst.IndentedBlock(body=lines)


def zipped_rows(loop: Loop) -> list[tuple[Var, Var]] | None:
    """``for i in range(n)`` whose index is read only by ``x[i]`` of arrays from outside the loop
    that have exactly ``n`` rows (their types say so), each array once, at the top of the body: the
    pairs (row, array), so that the loop is printed ``for z, z_t in zip(xs, xs_t)``, as a person
    writes it.  Iterating an array gives the rows ``x[i]`` gives (a numpy scalar of a vector, a view
    of a matrix), in order, for a fraction of the cost of indexing.  None: the loop keeps its index."""
    n = trip_count(loop)
    if n is None or len(loop.bounds) != 1 or loop.index is None:
        return None
    index = loop.index.name
    inside = bound_var_names(loop.body) | {v.name for v in loop.inputs}
    rows: list[tuple[Var, Var]] = []
    for b in loop.body.binds:
        rhs = b.rhs
        if not (isinstance(rhs, Prim) and rhs.op == "getitem" and len(rhs.args) == 2 and len(b.targets) == 1
                and rhs.param("index") == (("arg", 1),) and isinstance(rhs.args[1], Var)
                and rhs.args[1].name == index):
            continue
        x = rhs.args[0]
        if not (isinstance(x, Var) and x.name not in inside and isinstance(x.type, Num) and x.type.ndim >= 1
                and x.type.shape[0] == n and all(x.name != y.name for _, y in rows)):
            return None
        rows.append((b.targets[0], x))
    if not rows or use_counts(loop.body)[index] != len(rows):
        return None  # the index read otherwise too (`seq[t + 1]`), or by nothing
    return rows


def _flat_tuple(items: list[Any]) -> cst.BaseExpression:
    return items[0] if len(items) == 1 else px.tuple_(items).with_changes(lpar=[], rpar=[])


def _float(v: Var) -> bool:
    return isinstance(v.type, Num) and v.type.shape == () and v.type.dtype == "float64"


def taped_and_summed(block: Block, taped: set[str], pairs: dict[str, str]) -> None:
    """Into ``taped``, what the loops anywhere in ``block`` record on tapes; into ``pairs``, for each
    sum of two variables ``x + y`` anywhere in it, x -> y and y -> x (one walk for both)."""
    for rhs in [b.rhs for b in block.binds if type(b.rhs) is not Prim]:  # (most are primitives: none of these)
        cls = type(rhs)  # (no class of the IR has subclasses)
        if cls is Plus:
            items = rhs.items  # type: ignore[union-attr]
            if len(items) == 2 and type(items[0]) is Var and type(items[1]) is Var:
                x, y = items
                pairs[x.name], pairs[y.name] = y.name, x.name  # type: ignore[union-attr]
            continue  # (no block inside)
        if cls is Loop:
            taped.update(v.name for v in rhs.save)  # type: ignore[union-attr]
        for inner in nested_blocks(rhs):
            taped_and_summed(inner, taped, pairs)

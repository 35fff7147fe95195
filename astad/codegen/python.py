"""Codegen: target IR -> Python source, built as a libcst tree.

The reverse program becomes a pair of plain functions: ``<name>_forward``
computes the value and returns it with the residuals the backward pass needs;
``<name>_backward`` takes the residuals and the output cotangent and returns one
cotangent per parameter.  Temporaries used once are inlined into the
expression that reads them, so the code reads like the user's; every group of
statements is headed by the line of the user's source it comes from.
Deterministic: the same program always prints to the same text.  Expressions
are libcst nodes, but reverse mode's common operations, printed as they are made
(:mod:`.text_expr`); reverse mode prints each plain line when it is made
(:class:`astad.codegen.render.Line`), compound statements stay nodes.
"""

from __future__ import annotations

from collections import Counter
from typing import Callable, Sequence

import libcst as cst

from .. import backends, deep, rules
from . import inplace
from .. import pyexpr as px
from ..errors import InternalError
from ..names import Namer
from ..ir import (Atom, Bind, Block, Const, If, ListT, Loc, Loop, LoopBack, MakeTuple, NoneT, Num, Plus, Prim, ReverseProgram, TupleT,
                 Unpack, Var, bound_var_names, kinds, use_counts)
from ..optimise.scalars import ScalarPlan, plan as scalar_plan
from .loops import LoopPrinting, taped_and_summed
from .plain import MAX_INLINED, MAX_TERMS, SUM, Form, PlainPrinting, form as plain_form
from .memory import FRESH as _FRESH, UPDATES as _UPDATES, MemoryPrinting, copying_reads as _copying_reads
from .release import released
from .module import funcdef, module_source
from .render import EOL, Line, comment_lines as _comment_lines, text, text_state
from .render_expr import text as expression_text
from . import order, text_expr as tx
from .text_expr import Text

Expr = cst.BaseExpression
# shared by every line (nodes are immutable; libcst would make new ones for each)
_SPACE, _EOL = cst.SimpleWhitespace(" "), EOL
_line = px.maker(cst.SimpleStatementLine, "body", "leading_lines", trailing_whitespace=_EOL)
_assign = px.maker(cst.Assign, "targets", "value")
_target = px.maker(cst.AssignTarget, "target", whitespace_before_equal=_SPACE, whitespace_after_equal=_SPACE)

#: reverse mode's lines printed as they are made (:class:`astad.codegen.render.Line`); False: libcst's nodes,
#: printed with the module (what tests/test_render.py compares them with)
TEXT_LINES = True


def _zero(t: object) -> Expr:
    if isinstance(t, Num) and None not in t.shape:
        if not t.shape:  # (a numpy scalar of another dtype than float64 as one: its cotangent has its dtype)
            return px.literal(0.0) if t.py or t.dtype == "float64" else px.call(f"np.{t.dtype}", [px.literal(0.0)])
        kw = {"dtype": px.name(f"np.{t.dtype}")} if t.dtype != "float64" else {}
        return px.call("np.zeros", [px.literal(tuple(t.shape))], **kw)
    if isinstance(t, ListT) and not t.differentiable:  # no element has a cotangent (nothing appended yet)
        return px.literal(None)
    if _leafless(t) is not None:  # the empty tuple is its own zero (a function returning ``()``), as ``((), ())``
        return px.literal(_leafless(t))
    raise InternalError(f"codegen: cannot materialise a zero of type {t}")


def _leafless(t: object) -> tuple | None:
    """The value of a tuple type of no leaf (``()``, ``((),)``, ``((), ())``): its own zero; else None."""
    if not isinstance(t, TupleT):
        return None
    items = [_leafless(i) for i in t.items]
    return None if any(i is None for i in items) else tuple(items)


class Printer(PlainPrinting, LoopPrinting, MemoryPrinting):
    """Prints one block as the body of one Python function."""

    rename_carried = False  # loop variables bound where their next values are computed (codegen/carried.py)

    def __init__(self, block: Block, extra_uses: Sequence[Atom] = (), in_place: bool = False,
                 plan: ScalarPlan | None = None, text_lines: bool = False) -> None:
        # plain lines printed as they are made (None: as libcst nodes; forward mode's reuse renames in those)
        self.state = text_state() if text_lines else None
        self.constants: dict[int, Text] = {}  # id(a constant's node) -> it printed
        self.constant_atoms: dict[int, tuple[Atom, Text]] = {}  # id(a constant) -> (it, it printed)
        self.plan = plan or ScalarPlan()  # the loops on the scalar fast path (codegen/loops.py)
        # operations of _PLAIN printed by `plain` (where no fast path is printed either): no call on the fast path
        self.text_plain = self.state is not None and not self.plan.calls
        self.fast = None
        self.uses: Counter = use_counts(block)
        returned = [a.name for a in extra_uses if isinstance(a, Var)]
        if returned:  # residuals are returned by name: never inline them (2 more reads each, counted in C:
            self.uses.update(returned * 2)  # a Counter's `c[k] += 2` calls dict.__setitem__ through Python's
            # slot, its class defining __delitem__, some 200 ns a name)
        self.inlined: dict[str, Expr] = {}
        self.depth: dict[str, int] = {}  # an inlined temporary -> how many inlined ones it nests
        self.raising: dict[str, str] = {}  # pending inlined temporaries whose expressions may raise -> what (.order)
        self.reach = 0  # the deepest inlined temporary read since the last bind began
        self.lines: list[cst.SimpleStatementLine] = []
        # the lines of the function's own body (not a loop's or a branch's): a plain line is its text (a str,
        # printed by render's _block alone), not a Line, and the comment ahead of it a str of its own
        self.top = True
        self.last_loc: tuple | None = None
        self.in_place = in_place
        self.in_if = 0  # how many `if`s the lines being printed are in (within the innermost loop body)
        self.fresh: set[str] = set()  # variables holding an array this function allocated
        self.updatable: set[str] = set()  # loop variables (and loop results) holding an array only they hold
        self._copied: Counter = Counter()  # (see copied)
        self.pending_reads: list[str] = []  # reads of bind_plain's not yet counted in copied (never replaced)
        self.views: dict[str, str] = {}  # a view read once -> the variable it is a view of
        # what must be bound whichever branch ran: the residuals and what loops record on tapes (none where the
        # block has no loop: its kinds are known, mostly, and no walk is made for the sums then: see summed_with)
        taped: set[str] = set()
        self._block, self._summed = block, None
        if "Loop" in kinds(block):
            self._summed = {}
            taped_and_summed(block, taped, self._summed)
        self.residuals = set(returned) | (taped - self.plan.recomputed)
        self.deferred: dict[str, tuple[Bind, list[Expr]]] = {}  # scatters waiting for the sum that reads them
        self.masked: dict[str, tuple[Expr, Expr]] = {}  # pending `mask * share` a sum may add in place
        self.big_types: dict[int, tuple[object, bool]] = {}  # id(type) -> (type, inplace.big(type))
        # id(a type) -> its kind for bind_plain (plain._BIG, _ARRAY, _LIST, _OTHER), the type held in `typed`
        self.type_kinds: dict[int, str] = {}
        self.typed: list[object] = []

    @property
    def copied(self) -> Counter:
        """Reads, so far in this block, by operations whose result is new memory (read by the in-place forms):
        :meth:`bind_plain`'s reads, kept in ``pending_reads``, counted when it is first asked for after them (a
        block with no array written in place never asks: they are never counted)."""
        copied, pending = self._copied, self.pending_reads
        if pending:
            copied.update(pending)
            pending.clear()
        return copied

    @copied.setter
    def copied(self, value: Counter) -> None:  # (the reads made before counted in the Counter they were made for)
        self.copied  # noqa: B018
        self._copied = value

    @property
    def summed_with(self) -> dict[str, str]:
        """x -> y for each sum x + y of two variables anywhere in the block, found when first asked for (by
        an in-place form of a sum: a straight-line block with no big array never asks)."""
        summed = self._summed
        if summed is None:
            summed = self._summed = {}
            taped_and_summed(self._block, set(), summed)
        return summed

    def atom(self, a: Atom) -> Expr:
        cls = type(a)  # (no class of the IR has subclasses)
        if cls is Var:
            name = a.name
            if name in self.inlined:
                value = self.pending(name)
                return value.node() if type(value) is Text else value
            fast = self.fast
            if fast is not None and name in fast.floats:  # (a numpy float read as a Python float)
                return px.name(fast.floats[name])
            return px.name(name)
        if cls is Const:
            return px.name(a.name) if a.name is not None else px.literal(a.value)  # type: ignore[union-attr]
        return _zero(a.type)

    def pending(self, name: str) -> Expr | Text:
        """The inlined expression of temporary ``name``, read now (it nests the ones it nests)."""
        depth = self.depth.pop(name)
        if depth > self.reach:
            self.reach = depth
        return self.inlined.pop(name)

    def text_atom(self, a: Atom) -> Text:
        """``atom(a)``, printed (:mod:`.text_expr`; called where no fast path is being printed)."""
        if type(a) is Var:
            if a.name in self.inlined:
                value = self.pending(a.name)
                return value if type(value) is Text else tx.of(value, self.state)
            return tx.name(a.name)
        held = self.constant_atoms.get(id(a))  # (a constant read again: a program reads a few many times)
        if held is not None and held[0] is a:
            return held[1]
        node = self.atom(a)  # (a constant: printed once for each node, pyexpr sharing a number's)
        known = self.constants.get(id(node))
        if known is None:
            known = self.constants[id(node)] = tx.of(node, self.state)  # (the node held: its id its own)
        self.constant_atoms[id(a)] = (a, known)  # (the atom held: its id its own)
        return known

    def text_atoms(self, atoms: Sequence[Atom]) -> list[Text]:
        """``[text_atom(a) for a in atoms]`` (text_atom's, inlined for a variable: the operands of most lines)."""
        inlined, out = self.inlined, []
        for a in atoms:
            if type(a) is not Var:
                out.append(self.text_atom(a))
            elif a.name in inlined:
                value = self.pending(a.name)
                out.append(value if type(value) is Text else tx.of(value, self.state))
            else:
                out.append(tx.name(a.name))
        return out

    def comment(self, loc: Loc | None) -> Sequence[cst.EmptyLine]:
        if loc is None:
            return ()
        at = (loc.file, loc.line)
        if at == self.last_loc:
            return ()
        self.last_loc = at
        return _comment_lines(loc.line, loc.text)

    def emit(self, small: cst.BaseSmallStatement, loc: Loc | None) -> None:
        if self.state is None:
            self.lines.append(_line([small], self.comment(loc)))
        else:
            self.lines.append(Line(self.comment(loc), text(small, self.state)))

    def assign(self, targets: Sequence[Var], value: Expr, loc: Loc | None) -> None:
        self.assign_line((targets[0].name,) if len(targets) == 1 else [t.name for t in targets], value,
                         self.comment(loc))

    def assign_line(self, names: Sequence[str], value: Expr, leading: Sequence[cst.EmptyLine]) -> None:
        """``a = value`` (``a, b = value``) after the ``leading`` lines."""
        st = self.state
        if type(value) is Text:
            value = value.node() if st is None else value
        if st is None:
            target = px.identifier(names[0]) if len(names) == 1 else px.bare_tuple([px.identifier(n) for n in names])
            self.lines.append(_line([_assign([_target(target)], value)], leading))
            return
        target = names[0] if len(names) == 1 else ", ".join(names)
        if len(names) > 1 or not target.isidentifier():
            for name in names:
                px.identifier(name)  # (libcst's check of a name not an identifier)
        self.lines.append(Line(leading, target + " = " + (
            value.text if type(value) is Text else value.value if type(value) is cst.Name and not value.lpar
            else expression_text(value, st))))

    def bind_all(self, binds: Sequence[Bind]) -> None:
        """``bind`` each of ``binds``, an operation of _PLAIN printed by :meth:`bind_plain` (most of them)."""
        self.bind_plain(binds, _PLAIN)

    def bind(self, b: Bind) -> None:
        rhs = b.rhs
        self.reach = 0
        if type(rhs) is Prim:  # (no class of the IR has subclasses)
            op = rhs.op
            target = b.targets[0]
            if self.zipped and target.name in self.zipped:
                return  # a row the loop's head binds (codegen/loops.py: zipped_rows)
            if self.raising:
                order.keep_order(self, [a.name for a in rhs.args if type(a) is Var], order.may_raise(rhs, target.type), b.loc)
            if (self.fast is not None or self.plan.calls) and self.fast_prim(b, rhs):
                return
            entry = _TABLE[op]
            params = dict(rhs.params) if rhs.params else {}
            reads = self.count_copies(rhs)
            if op == "getitem" and not reads and isinstance(rhs.args[0], Var) and self.uses[target.name] == 1:
                self.views[target.name] = rhs.args[0].name
            # (every in-place form writes a result of at least inplace.MIN_SIZE elements: not asked otherwise)
            if self.in_place:  # (inplace.big's answer kept for each type object, held meanwhile: its id is its own)
                t = target.type
                big = self.big_types.get(id(t))
                if big is None or big[0] is not t:
                    big = self.big_types[id(t)] = (t, inplace.big(t))
                if big[1] and self.in_place_form(b, rhs):
                    return
            # printed as text where the table's printer prints as pyexpr does (text_expr)
            printed = _TEXT.get(entry.emit) if self.state is not None and self.fast is None else None
            if printed is not None and (entry.stmts is not None or entry.method or op in _SPECIAL or op in _CHEAPER):
                printed = None
            if printed is not None:
                args = self.text_atoms(rhs.args)
            elif self.fast is None:  # (atom's, inlined for a variable not pending)
                inlined = self.inlined
                args = [px.name(a.name) if type(a) is Var and a.name not in inlined else self.atom(a) for a in rhs.args]
            else:
                args = [self.atom(a) for a in rhs.args]
            if op in _SPECIAL:
                if op in _LIST_IN_PLACE:
                    self.flush_reading(rhs.args[0])
                if op in _UPDATES:  # a copy of the array updated, or the array itself where nothing else reads it
                    self.fresh.add(target.name)
                    params["in_place"] = self.in_place and self._owned(rhs.args[0])
                    if params["in_place"]:
                        self.flush_reading(rhs.args[0])  # what read the array before is computed before
                if op == "scatter" and self.defer(b, args):
                    return
            if entry.stmts is not None:
                name = target.name
                into = op == "scatter_add" and isinstance(args[0], cst.Name) and self.uses[name] == 1
                stmts = entry.stmts(args[0] if into else cst.Name(name), args, params)
                for small in stmts[1:] if into else stmts:  # `acc[i] += v`: no `t = acc` before it
                    self.emit(small, b.loc)
                if into:  # the result is the accumulator itself, read once, by its name
                    self.inlined[name], self.depth[name] = args[0], 0
                return
            if entry.emit is None:
                raise InternalError(f"codegen: no printer for {op}")
            (target,) = b.targets
            if op in _FRESH and isinstance(target.type, Num) and target.type.shape:
                self.fresh.add(target.name)
            # (no second `accumulate` here: what it reads (fresh, uses, copied, deferred, the types) is as
            # it was above but for `target` now fresh, never an argument of its own binding)
            if printed is not None:
                self.put(b, printed(args))
                return
            cheaper = _CHEAPER.get(op)
            value = (cheaper and cheaper(rhs, args)) or entry.emit(args, params)
            if entry.method:
                first = rhs.args[0].type if rhs.args else None
                if isinstance(first, Num) and first.shape and isinstance(value, cst.Call):
                    value = px.method(value.args[0].value, entry.method, [a.value for a in value.args[1:] if not a.keyword],
                                      **{a.keyword.value: a.value for a in value.args[1:] if a.keyword})
            self.put(b, value)
        elif isinstance(rhs, MakeTuple):
            self.assign(b.targets, px.tuple_([self.atom(a) for a in rhs.items]), b.loc)
        elif isinstance(rhs, Unpack) and len(b.targets) == 1:  # `(x,) = t`: a tuple of one
            self.emit(cst.Assign(targets=[cst.AssignTarget(px.tuple_([cst.Name(b.targets[0].name)]))],
                                 value=self.atom(rhs.tup)), b.loc)
        elif isinstance(rhs, Unpack):
            self.assign(b.targets, self.atom(rhs.tup), b.loc)
        elif isinstance(rhs, If):
            self.emit_if(b, rhs)
        elif isinstance(rhs, (Loop, LoopBack)):
            self.emit_loop(b, rhs)
        elif isinstance(rhs, Plus):
            many = len(rhs.items) > 1  # (a sum of one would be its item itself)
            if many:
                self.fresh.add(b.targets[0].name)
            if self.scatter_into(b, list(rhs.items)):
                return
            if many:  # read into the sum's memory
                copied = self.copied
                for a in rhs.items:
                    if type(a) is Var:
                        copied[a.name] = copied.get(a.name, 0) + 1
            big = self.in_place and inplace.big(b.targets[0].type)
            if big and (inplace.masked_sum(self, b) or self.accumulate(b, list(rhs.items), "+")):
                return
            self.sum(b, list(rhs.items))
        else:
            raise InternalError(f"codegen: unexpected {type(rhs).__name__} in optimised code")

    def count_copies(self, rhs: Prim) -> bool:
        """Count in ``copied`` the variables ``rhs`` reads into new memory (for a view, the array it
        views too); whether it reads any."""
        copied = self.copied
        if rhs.op in _FRESH and not self.views:  # (most: a computation of its operands, no view pending)
            found = False
            for a in rhs.args:
                if type(a) is Var:
                    copied[a.name] = copied.get(a.name, 0) + 1
                    found = True
            return found
        reads, views = _copying_reads(rhs), self.views
        for name in [n for n in reads if n in views]:  # `y[a:b] + v`: the view is read into new memory
            viewed = views.pop(name)
            reads[viewed] = reads.get(viewed, 0) + reads[name]
        for name, n in reads.items():
            copied[name] = copied.get(name, 0) + n
        return bool(reads)

    def put(self, b: Bind, value: Expr) -> None:
        """``target = value``, or ``value`` inlined where its temporary is read (once)."""
        name = b.targets[0].name
        # (a value a tape records is bound in its branch, not inlined where the tape is written)
        if Namer.is_temp(name) and self.uses[name] == 1 and self.reach < MAX_INLINED \
                and not (self.in_if and name in self.residuals):
            self.inlined[name], self.depth[name] = value, self.reach + 1
            raises = self.raised(b.rhs, b.targets[0].type)  # (assigned, it raises where it is: nothing kept)
            if raises:
                self.raising[name] = raises
            return
        self.assign(b.targets, value, b.loc)

    def raised(self, rhs: object, t: object) -> str | None:
        """What the expression of ``rhs`` (of type ``t``, its operands read) may raise (:mod:`.order`):
        its operation, or an operand pending that may (no longer pending: forgotten)."""
        if type(rhs) is not Prim:
            return None
        raises, raising = order.may_raise(rhs, t), self.raising
        if raising:
            for a in rhs.args:
                if type(a) is Var and a.name in raising:
                    raises = order.joined(raises, raising.pop(a.name))
        return raises

    def sum(self, b: Bind, items: list[Atom]) -> None:
        """``t = a + b + ...``, in statements of at most :data:`MAX_TERMS` terms
        each (``t = t + ...`` goes on), so that no expression nests deeply."""
        target = b.targets[0]
        lists = isinstance(target.type, ListT)
        text = self.state is not None and self.fast is None and not lists  # printed as text (text_expr)
        atom, plus = (self.text_atom, tx.binop) if text else (self.atom, px.binop)
        value = atom(items[0])
        for i, a in enumerate(items[1:], 1):
            if i % MAX_TERMS == 0:
                self.assign(b.targets, value, b.loc)
                value = tx.name(target.name) if text else cst.Name(target.name)
            value = px.call("list_add", [value, atom(a)]) if lists else plus("+", value, atom(a))  # type: ignore
        self.assign(b.targets, value, b.loc)

    def emit_if(self, b: Bind, rhs: If) -> None:
        """``if c:`` with each branch assigning the joined variables at its end.  A
        residual bound in one branch is set to None in the other, so the forward
        pass can always return every residual."""
        test = self.atom(rhs.cond)
        self.flush()  # what comes before the `if` is computed before it, not in one branch
        leading = self.comment(b.loc)
        if not self.in_if:  # the outermost `if` of a body: its residuals start as None, once (not in every branch)
            for name in sorted((bound_var_names(rhs.then) ^ bound_var_names(rhs.orelse)) & self.residuals
                               | _one_path(rhs) & self.residuals):
                self.assign((Var(name, NoneT()),), px.name("None"), None)

        def tail(items: tuple[Atom, ...]) -> None:
            for t, a in zip(b.targets, items):
                self.assign((t,), self.atom(a), None)

        self.in_if += 1
        copied = self.copied
        try:
            bodies = []
            for blk in (rhs.then, rhs.orelse):
                self.copied = Counter(copied)
                bodies.append(self.nested(blk, tail))
        finally:
            self.in_if -= 1
            self.copied = copied
        empty = len(bodies[1].body) == 1 and isinstance(bodies[1].body[0], cst.SimpleStatementLine) and isinstance(
            bodies[1].body[0].body[0], cst.Pass)
        self.lines.append(cst.If(test=test, body=bodies[0], orelse=None if empty else cst.Else(body=bodies[1]),  # type: ignore[arg-type]
                                 leading_lines=leading))

    def flush(self) -> None:
        """Assign the pending inlined expressions: nothing computed before a loop
        may be moved into it (it would be computed on every iteration)."""
        for name in list(self.deferred):
            self.print_deferred(name)
        pending, self.inlined, self.depth = self.inlined, {}, {}
        self.raising.clear()
        for name, value in pending.items():
            self.assign_line([name], value, ())

    def flush_reading(self, a: Atom) -> None:
        """Assign the pending inlined expressions that read list ``a`` before it is
        changed in place (an element read before an append stays that element)."""
        if not isinstance(a, Var):
            return
        for name in [n for n, value in self.inlined.items()
                     if _mentions(value.node() if type(value) is Text else value, a.name)]:
            self.assign_line([name], self.inlined.pop(name), ())

    def returns(self, value: Expr) -> None:
        self.lines.append(cst.SimpleStatementLine(body=[cst.Return(value=value)]))


def _mentions(expr: Expr, name: str) -> bool:
    """Whether ``expr`` reads the variable ``name``."""
    return any(type(n) is cst.Name and n.value == name for n in deep.walk(expr))



def _one_path(rhs: If) -> frozenset[str]:
    """Names bound in both branches of ``rhs`` but, inside them, on one path of a
    nested ``if`` (or in a loop body) only: not bound whichever way the code goes."""
    return (bound_var_names(rhs.then) & bound_var_names(rhs.orelse)) - (_always_bound(rhs.then) & _always_bound(rhs.orelse))


def _always_bound(block: Block) -> frozenset[str]:
    """The names ``block`` binds whichever path it takes."""
    names: set[str] = set()
    for b in block.binds:
        names.update(t.name for t in b.targets)
        if isinstance(b.rhs, If):
            names |= _always_bound(b.rhs.then) & _always_bound(b.rhs.orelse)
    return frozenset(names)


IN_PLACE_MIN_SIZE = inplace.MIN_SIZE

def _array_of_list(p: Prim, args: list[Expr]) -> Expr | None:
    """``np.array(xs)`` for stacking a list along its first axis: the same array
    (an empty list gives an empty array rather than an error: of shape ``(0, *shape)``
    for elements of ``shape``, as typed, where numpy's is ``(0,)``), made without
    turning every element into an array first (20x faster for scalars)."""
    (l,) = p.args
    elem = l.type.elem if isinstance(l.type, ListT) else None
    if not isinstance(elem, Num) or p.param("axis", 0) not in (0, -elem.ndim - 1):
        return None
    kw = {"dtype": px.name(f"np.{elem.dtype}")} if elem.dtype != "float64" else {}
    made = px.call("np.array", args, **kw)
    if elem.ndim and all(type(d) is int for d in elem.shape):  # an empty list of arrays: (0, *shape), as typed
        return px.method(made, "reshape", [px.literal(-1)] + [px.literal(d) for d in elem.shape])
    return made


#: printers used instead of the table's where the argument types allow a cheaper call (None: they do not)
_CHEAPER: dict[str, Callable[[Prim, list[Expr]], Expr | None]] = {"stack_list": _array_of_list}

_TABLE = rules.TABLE
#: the table's printers that print as pyexpr does, as text (text_expr), by printer
_TEXT = {emit: tx.printer(form) for emit, form in rules.emit.TEXT_FORMS.items()}

class _Plain(dict):
    """op -> the form (:func:`.plain.form`) of an operation ``bind`` prints by :meth:`Printer.bind_plain`,
    None where it is not one: printed as text (_TEXT), by no form of its own; filled as operations are
    met (the table's entries are never replaced).  ``Plus`` -> :data:`.plain.SUM`."""

    def __missing__(self, op: str) -> Form | None:
        if op is Plus:  # (a sum: printed by bind_plain where it is short)
            self[op] = SUM
            return SUM
        entry = _TABLE.get(op)  # (None: an operation of the fast path's, bind's to print)
        printer = _TEXT.get(entry.emit) if entry is not None and entry.emit is not None else None
        if printer is not None and (entry.stmts is not None or entry.method or op in _SPECIAL or op in _CHEAPER  # type: ignore[union-attr]
                                    or op == "getitem"):
            printer = None
        made = self[op] = None if printer is None else plain_form(op, entry.emit, printer)  # type: ignore[union-attr]
        return made


_PLAIN = _Plain()


#: primitives that change the list they are given (its first operand) in place
_LIST_IN_PLACE = {"append_in_place", "list_set_in_place", "list_pop", "list_scatter_add"}
#: the operations ``bind`` looks at before printing them (the others: none of these)
_SPECIAL = _LIST_IN_PLACE | _UPDATES | {"scatter"}


def generate(prog: ReverseProgram, residuals: Sequence[Var], header: str,
             called: Sequence[tuple[ReverseProgram, Sequence[Var]]] = ()) -> str:
    """The generated module's source text; ``called``: the programs (with their residuals) of the
    functions of its own the program calls (:mod:`astad.ad.calls`), generated before it."""
    functions = [f for p, r in called for f in _pair(p, r)]
    return released(module_source(header, functions + _pair(prog, residuals)))


def _residual_lines(fwd: Printer, bwd: Printer, result: Atom, names: list[str], unpacked: bool) -> None:
    """``return value, (a, b, ...)`` ending the forward pass and ``a, b, ... = residuals`` (``unpacked``)
    beginning the backward pass, printed as text: as libcst prints ``_pair``'s nodes of them."""
    passed = "(" + ", ".join(names) + ("," if len(names) == 1 else "") + ")"  # (`()`, `(a,)`, `(a, b)`)
    fwd.lines.append(Line((), "return " + fwd.text_atom(result).text + ", " + passed))
    if unpacked:
        bwd.lines.append(Line((), (passed if len(names) < 2 else passed[1:-1]) + " = residuals"))


def _pair(prog: ReverseProgram, residuals: Sequence[Var]) -> list[cst.FunctionDef]:
    """A reverse program's forward and backward functions."""
    # the scalar fast path reads arrays with .tolist(): numpy only (it would compute a Dask array)
    # (a program without a loop has none: its blocks' kinds are known by now, its bindings not walked again)
    plan = scalar_plan(prog, residuals) if backends.current() == backends.NUMPY and "Loop" in kinds(prog.forward) \
        else ScalarPlan()
    fwd = Printer(prog.forward, residuals, in_place=backends.allows_in_place(), plan=plan, text_lines=TEXT_LINES)
    fwd.bind_all(prog.forward.binds)
    # a tape on the fast path is one list per recorded variable: the residuals are those lists
    names = [n for v in residuals for n in plan.tapes.get(v.name, (v.name,))] if plan.tapes else [v.name for v in residuals]
    bwd = Printer(prog.backward, in_place=backends.allows_in_place(), plan=plan, text_lines=TEXT_LINES)
    if fwd.state is not None and all(map(str.isidentifier, names)):  # printed as text (a thousand names, say)
        _residual_lines(fwd, bwd, prog.forward.result, names, bool(residuals))
    else:
        passed = [px.identifier(n) for n in names]
        fwd.returns(px.tuple_([fwd.atom(prog.forward.result), px.tuple_(passed)]).with_changes(lpar=[], rpar=[]))
        if residuals:
            unpack = px.tuple_(passed)
            if len(passed) > 1:
                unpack = unpack.with_changes(lpar=[], rpar=[])
            bwd.lines.append(cst.SimpleStatementLine(body=[cst.Assign([cst.AssignTarget(unpack)], cst.Name("residuals"))]))
    binds, result = prog.backward.binds, prog.backward.result
    final = binds[-1] if binds else None
    returns_tuple = final is not None and final.targets == (result,) and isinstance(final.rhs, MakeTuple)
    bwd.bind_all(binds[:-1] if returns_tuple else binds)
    if returns_tuple:  # return the tuple directly rather than naming it (`bind`'s MakeTuple, returned)
        value = px.tuple_([bwd.atom(a) for a in final.rhs.items])  # type: ignore[union-attr]
        if not isinstance(value, cst.Tuple) or value.elements:  # (a function of no parameters returns `()`)
            value = value.with_changes(lpar=[], rpar=[])
        bwd.lines.append(cst.SimpleStatementLine(body=[cst.Return(value=value)],
                                                 leading_lines=bwd.comment(final.loc)))  # type: ignore[union-attr]
    else:
        bwd.returns(bwd.atom(result))

    ps = [p.name for p in prog.params]
    return [
        funcdef(f"{prog.name}_forward", ps, fwd.lines,
                f"Primal of {prog.name}: returns (value, residuals for {prog.name}_backward)."),
        funcdef(f"{prog.name}_backward", ["residuals", prog.ct_in.name], bwd.lines,
                f"Reverse pass of {prog.name}: cotangent of the value -> one cotangent per parameter."),
    ]

"""Reverse-mode target IR lowered to core IR, so the reverse macro runs over it again.

The reverse macro's optimised output, made one function by
:func:`astad.ad.vjp_function.vjp_function` (function values already inlined
by ``copowers.remove_functions``), is first-order code that still holds
constructs the core IR does not: a loop recording a tape, the backward loop
over that tape, statically-zero atoms, and primitives the optimiser made
in place.  :func:`lower` rewrites each, one rule per construct, into core IR
with the same values:

- ``for ... saving (s_1, ..., s_k) on tape``: the tape becomes ``k`` lists,
  carried by the loop (first, so a ``while`` loop's condition stays last) and
  appended to at the end of each iteration (reverse mode supports lists built
  in loops);
- ``for (s_1, ..., s_k) in reversed(tape) from (c = init)``: a core loop
  ``for j in range(n)`` over the tape's indices in reverse, binding
  ``s_i = list_get(tape_i, n - 1 - j)`` (renamed apart) before its body;
- a ``zero`` atom: a zero of its type (``0.0``, ``zeros(shape)``, a tuple of
  zeros), or refused where its size is known only at run time;
- ``plus``: kept (the reverse macro's rule for ``plus`` gives each summand the
  sum's cotangent), its zero summands dropped;
- the in-place primitives (``append_in_place``, ``list_set_in_place``, ``list_pop``,
  ``list_popped``, ``scatter_add``, ``list_scatter_add``): their functional
  equivalents, whose code does not overwrite a value another part of the
  new program may read.

The result goes through the structural pass and the reverse macro: reverse
mode over reverse mode (:func:`reverse_of_function`).
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

from .. import rules
from ..errors import UnsupportedSyntaxError
from dataclasses import replace

from ..ir import (Atom, Bind, Block, Const, Function, If, ListT, Loc, Loop, LoopBack, MakeTuple, NoneT, Num, Plus,
                  Prim, TupleT, Type, Unpack, Var, Zero, map_atoms, read_set, substitute_block)
from ..names import Namer


class _Lower:
    def __init__(self, fn: Function) -> None:
        self.namer = Namer.of(fn)
        self.tapes: dict[str, tuple[Var, ...]] = {}  # a tape -> its lists, one per saved value
        self.binds: list[Bind] = []
        self.loc: Loc | None = None

    # helpers --------------------------------------------------------------

    def prim(self, op: str, *args: Atom, **params: Any) -> Var:
        var = Var(self.namer.temp(), rules.infer(op, [a.type for a in args], params))
        self.emit((var,), Prim(op, args, tuple(sorted(params.items()))))
        return var

    def emit(self, targets: tuple[Var, ...], rhs: Any) -> None:
        self.binds.append(Bind(targets, rhs, self.loc))

    def zero(self, t: Type) -> Atom:
        """A real zero of type ``t`` (its shape known when transforming)."""
        if isinstance(t, Num) and not t.shape:
            return Const.literal(0.0, t) if t.py else self.prim("zeros", dtype=t.dtype)
        if isinstance(t, Num) and None not in t.shape:
            return self.prim("zeros", *(Const.literal(d, Num((), "int64", py=True)) for d in t.shape), dtype=t.dtype)
        if isinstance(t, TupleT):
            items = tuple(self.zero(i) for i in t.items)
            var = Var(self.namer.temp(), t)
            self.emit((var,), MakeTuple(items))
            return var
        raise UnsupportedSyntaxError(
            f"reverse mode over reverse mode needs a zero of {t}, whose size is known only at run time", self.loc,
            hint="differentiate the derivative by forward mode (astad.jacfwd / astad.jvp)")

    def dummy(self, t: Type) -> Atom:
        """A value of type ``t`` for a branch that does not bind what the other exports (never read)."""
        if isinstance(t, NoneT):
            return Const.literal(None, t)
        if isinstance(t, Num) and t.py and not t.shape:
            return Const.literal({"bool": False, "int64": 0}.get(t.dtype, 0.0), t)
        if isinstance(t, ListT):
            var = Var(self.namer.temp(), t)
            self.emit((var,), Prim("list", ()))
            return var
        if isinstance(t, Num) and None in t.shape:  # empty along the run-time dimensions
            var = Var(self.namer.temp(), t)
            dims = tuple(Const.literal(d or 0, Num((), "int64", py=True)) for d in t.shape)
            self.emit((var,), Prim("zeros", dims, (("dtype", t.dtype),)))
            return var
        return self.zero(t)

    def atom(self, a: Atom) -> Atom:
        return self.zero(a.type) if isinstance(a, Zero) else a

    def block(self, block: Block) -> Block:
        saved, self.binds = self.binds, []
        try:
            for b in block.binds:
                self.loc = b.loc
                rule: Callable[[Bind, Any], None] = getattr(self, "rule_" + type(b.rhs).__name__, self.rule_other)
                rule(b, b.rhs)
            result = self.atom(block.result)
            return Block(tuple(self.binds), result)
        finally:
            self.binds = saved

    # one rule per construct -------------------------------------------------

    def rule_other(self, b: Bind, rhs: Any) -> None:
        self.emit(b.targets, map_atoms(rhs, self.atom))

    def rule_Prim(self, b: Bind, rhs: Prim) -> None:
        args = tuple(self.atom(a) for a in rhs.args)
        functional = IN_PLACE.get(rhs.op)
        if functional is not None:
            out = functional(self, args, dict(rhs.params))
            self.emit(b.targets, _copy(out))
            return
        entry = rules.TABLE[rhs.op]
        if entry.vjp is None and b.targets and b.targets[0].type.differentiable and \
                any(a.type.differentiable for a in args):
            raise UnsupportedSyntaxError(f"reverse mode over reverse mode: {rhs.op} has no reverse-mode rule", b.loc,
                                         hint="differentiate the derivative by forward mode (astad.jacfwd / astad.jvp)")
        self.emit(b.targets, Prim(rhs.op, args, rhs.params))

    def rule_Plus(self, b: Bind, rhs: Plus) -> None:
        items = tuple(a for a in rhs.items if not isinstance(a, Zero))
        (out,) = b.targets
        if not items:
            self.emit(b.targets, _copy(self.zero(out.type)))
        elif len(items) == 1:
            self.emit(b.targets, _copy(items[0]))
        else:
            self.emit(b.targets, Plus(items))

    def rule_If(self, b: Bind, rhs: If) -> None:
        self.emit(b.targets, If(self.atom(rhs.cond), self.block(rhs.then), self.block(rhs.orelse)))

    def rule_Loop(self, b: Bind, rhs: Loop) -> None:
        if rhs.tape is None:
            self.emit(b.targets, Loop(tuple(map(self.atom, rhs.bounds)), rhs.index, rhs.carried,
                                      tuple(map(self.atom, rhs.init)), self.block(rhs.body)))
            return
        name = rhs.tape.name
        body = self.block(rhs.body)
        # nothing saved (the optimiser pruned the tape): a list of one mark per iteration, to count them
        save: tuple[Atom, ...] = self.expand(rhs.save) or (Const.literal(0, Num((), "int64", py=True)),)
        starts = []
        for s in save:
            empty = Var(self.namer.fresh(f"{name}_{_label(s)}_0"), ListT(s.type))
            self.emit((empty,), Prim("list", ()))
            starts.append(empty)
        lists = tuple(Var(self.namer.fresh(f"{name}_{_label(s)}"), ListT(s.type)) for s in save)
        outs = tuple(Var(self.namer.fresh(f"{name}_{_label(s)}_all"), ListT(s.type)) for s in save)
        saved, self.binds = self.binds, list(body.binds)
        try:
            nexts = [self.prim("append", l, s) for l, s in zip(lists, save)]
            items = tuple(Var(self.namer.temp(), t) for t in body.result.type.items)  # type: ignore[union-attr]
            self.emit(items, Unpack(body.result))
            result = Var(self.namer.temp(), TupleT(tuple(a.type for a in (*nexts, *items))))
            self.emit((result,), MakeTuple((*nexts, *items)))
            body = Block(tuple(self.binds), result)
        finally:
            self.binds = saved
        loop = Loop(tuple(map(self.atom, rhs.bounds)), rhs.index, lists + rhs.carried,
                    tuple(starts) + tuple(map(self.atom, rhs.init)), body)
        self.emit(outs + b.targets[:-1], loop)
        self.tapes[name] = outs

    def expand(self, save: tuple[Var, ...]) -> tuple[Var, ...]:
        """What a loop saves, an inner loop's tape as its lists."""
        return tuple(v for s in save for v in self.tapes.get(s.name, (s,)))

    def rule_LoopBack(self, b: Bind, rhs: LoopBack) -> None:
        lists = self.tapes.get(rhs.tape.name)
        if not lists:
            raise UnsupportedSyntaxError("reverse mode over reverse mode: a backward loop whose tape is empty",
                                         b.loc, hint="differentiate the derivative by forward mode (astad.jacfwd)")
        n = self.prim("list_len", lists[0])
        last = self.prim("sub", n, Const.literal(1, Num((), "int64", py=True)))
        j = Var(self.namer.fresh(f"{rhs.tape.name}_j"), Num((), "int64", py=True))
        fresh = {s.name: Var(self.namer.fresh(s.name), s.type) for s in rhs.saved}
        for s in rhs.saved:  # an inner loop's tape, saved on this one: its lists, renamed
            if s.name in self.tapes:
                self.tapes[fresh[s.name].name] = tuple(Var(self.namer.fresh(v.name), v.type) for v in self.tapes[s.name])
        saved, self.binds = self.binds, []
        try:
            k = self.prim("sub", last, j)
            for s, l in zip(self.expand(tuple(fresh[v.name] for v in rhs.saved)), lists):
                self.emit((s,), Prim("list_get", (l, k)))
            inner = self.block(substitute_block(rhs.body, dict(fresh)))
            body = Block(tuple(self.binds) + inner.binds, inner.result)
        finally:
            self.binds = saved
        self.emit(b.targets, Loop((n,), j, rhs.params, tuple(map(self.atom, rhs.init)), body))


    # scopes ----------------------------------------------------------------

    def scoped(self, block: Block, later: frozenset[str] = frozenset()) -> Block:
        """The block with each ``if`` exporting what its branches bind and code after it
        reads (the backward ``if`` reads the forward branch's values: in core IR they
        must be joined values); ``later``: what code after the block reads."""
        binds = list(block.binds)
        out: list[Bind] = []
        for i, b in enumerate(binds):
            rest = read_set(Block(tuple(binds[i + 1:]), block.result)) | later
            rhs = b.rhs
            if isinstance(rhs, If):
                b = self.exported(b, rhs, rest)
            elif isinstance(rhs, Loop):
                b = Bind(b.targets, replace(rhs, body=self.scoped(rhs.body)), b.loc)
            out.append(b)
        return Block(tuple(out), block.result)

    def exported(self, b: Bind, rhs: If, rest: frozenset[str]) -> Bind:
        branches = [self.scoped(blk, rest) for blk in (rhs.then, rhs.orelse)]
        own = {t.name for t in b.targets}
        found: dict[str, Var] = {}
        for blk in branches:
            for bb in blk.binds:
                found.update((t.name, t) for t in bb.targets if t.name in rest and t.name not in own)
        if not found:
            return Bind(b.targets, If(rhs.cond, *branches), b.loc)
        extra = tuple(found.values())
        self.loc = b.loc
        return Bind(b.targets + extra, If(rhs.cond, *(self.ending_with(blk, extra) for blk in branches)), b.loc)

    def ending_with(self, block: Block, extra: tuple[Var, ...]) -> Block:
        """``block`` whose result tuple ends with ``extra`` (a dummy for what it does not bind)."""
        saved, self.binds = self.binds, list(block.binds)
        try:
            bound = {t.name for bb in block.binds for t in bb.targets}
            values = [v if v.name in bound else self.dummy(v.type) for v in extra]
            items = tuple(Var(self.namer.temp(), t) for t in block.result.type.items)  # type: ignore[union-attr]
            self.emit(items, Unpack(block.result))
            result = Var(self.namer.temp(), TupleT(tuple(a.type for a in (*items, *values))))
            self.emit((result,), MakeTuple((*items, *values)))
            return Block(tuple(self.binds), result)
        finally:
            self.binds = saved


def _label(a: Atom) -> str:
    return a.name if isinstance(a, Var) else "n"


def _copy(a: Atom) -> Any:
    from ..ir import Copy
    return Copy(a)


def _scatter_add(low: _Lower, args: Sequence[Atom], ps: dict) -> Atom:
    acc, ct, x, *rest = args
    return low.prim("add", acc, low.prim("scatter", ct, x, *rest, index=ps["index"]))


def _list_scatter_add(low: _Lower, args: Sequence[Atom], ps: dict) -> Atom:
    acc, i, ct = args
    total = Var(low.namer.temp(), acc.type)
    low.emit((total,), Plus((acc, low.prim("list_onehot", acc, i, ct))))
    return total


#: the optimiser's in-place primitives, as the functional ones they stand for
IN_PLACE: dict[str, Callable[[_Lower, Sequence[Atom], dict], Atom]] = {
    "append_in_place": lambda low, a, ps: low.prim("append", *a),
    "list_set_in_place": lambda low, a, ps: low.prim("list_set", *a),
    "list_pop": lambda low, a, ps: low.prim("list_get", a[0], Const.literal(-1, Num((), "int64", py=True))),
    "list_popped": lambda low, a, ps: low.prim("list_init", *a),
    "scatter_add": _scatter_add,
    "list_scatter_add": _list_scatter_add,
}


def lower(fn: Function) -> Function:
    """``fn`` (reverse-mode target IR, first order) as core IR with the same values."""
    low = _Lower(fn)
    return Function(fn.name, fn.params, low.scoped(low.block(fn.body)))


"""The types of the backward block made right again after a function value's backward map is inlined.

A function value's backward map is built once (:meth:`astad.ad.reverse.Reverse.rule_Lam`), from the
cotangent of its result typed as that result: a Python float for ``def g(t): return y * y``.  A call may
give it a numpy float64 (``v = g(x)`` joined with ``np.sin(v)`` by an ``if``: the cotangent of a join is
one), and the map's own operations may make one of a Python float (``np.sin(y)``'s cotangent).  Inlined at
the call (:mod:`.copowers`), the map's bindings keep the types they were built with, and so do the
call's cotangents and what is computed from them: a numpy float64 typed a Python float, which ``finish``
(:mod:`.outputs`) returns as it is where the parameter is a Python float, and which every rule that
reads a Python float's semantics from its type (a power, a division) would misread.

``retype`` infers again the type of each binding that reads a value whose type is not the one it was
built with (from the call sites :mod:`.copowers` names), and of what reads those in turn; it runs only
where such a call site exists (most programs: none, and no walk)."""

from __future__ import annotations

import operator
from dataclasses import replace

from .. import rules
from ..blocks import result_items
from ..ir import Atom, Bind, Block, Copy, If, LoopBack, MakeTuple, Num, Plus, Prim, TupleT, Type, Unpack, Var, map_atoms


def retype(block: Block, suspects: set[str]) -> Block:
    """``block`` with the types of the bindings that read ``suspects`` (variables whose readers may be
    typed for another type) inferred again, and those of their readers in turn."""
    return _Retype(suspects).block(block)


def _wider(old: Type, new: Type) -> Type:
    """``new`` where it differs from ``old`` in what a type says of a value (not a known value alone)."""
    if type(old) is Num and type(new) is Num:
        return old if (old.shape, old.dtype, old.py) == (new.shape, new.dtype, new.py) else new
    return old if old == new else new


def _numpy_if_any(t: Type, items: tuple[Atom, ...]) -> Type:
    """A Python scalar's sum with a numpy scalar among its items is a numpy scalar."""
    if type(t) is Num and t.py and not t.shape and any(type(a.type) is Num and not a.type.py for a in items):
        return Num((), t.dtype)
    return t


class _Retype:
    def __init__(self, suspects: set[str]) -> None:
        self.suspects = suspects
        self.env: dict[str, Var] = {}  # a variable retyped -> itself with its new type

    def atom(self, a: Atom) -> Atom:
        return self.env.get(a.name, a) if type(a) is Var else a

    def touched(self, atoms: tuple[Atom, ...]) -> bool:
        return any(type(a) is Var and (a.name in self.env or a.name in self.suspects) for a in atoms)

    def target(self, v: Var, t: Type) -> Var:
        t = _wider(v.type, t)
        if t is v.type:
            return v
        new = self.env[v.name] = Var(v.name, t)
        return new

    def block(self, block: Block) -> Block:
        binds = [self.bind(b) for b in block.binds]
        return Block(tuple(binds), self.atom(block.result))

    def bind(self, b: Bind) -> Bind:
        rhs = b.rhs
        cls = type(rhs)
        if cls is If:
            then, orelse = self.block(rhs.then), self.block(rhs.orelse)
            items = list(zip(result_items(then) or (), result_items(orelse) or ()))
            targets = tuple(self.target(t, _numpy_if_any(t.type, items[i])) if i < len(items) else t
                            for i, t in enumerate(b.targets))
            return Bind(targets, If(rhs.cond, then, orelse), b.loc)
        if cls is LoopBack:
            return self.loop_back(b, rhs)
        if cls is Prim:
            if not self.touched(rhs.args):
                return b
            args = tuple(map(self.atom, rhs.args))
            rhs = Prim(rhs.op, args, rhs.params)
            if len(b.targets) == 1:
                return Bind((self.target(b.targets[0], rules.infer(rhs.op, [a.type for a in args], dict(rhs.params))),),
                            rhs, b.loc)
            return Bind(b.targets, rhs, b.loc)
        if cls is Plus:
            if not self.touched(rhs.items):
                return b
            items = tuple(map(self.atom, rhs.items))
            return Bind((self.target(b.targets[0], _numpy_if_any(b.targets[0].type, items)),), Plus(items), b.loc)
        if cls is Copy:
            if not self.touched((rhs.atom,)):
                return b
            a = self.atom(rhs.atom)
            return Bind((self.target(b.targets[0], a.type),), Copy(a), b.loc)
        if cls is MakeTuple:
            if not self.touched(rhs.items):
                return b
            items = tuple(map(self.atom, rhs.items))
            return Bind((self.target(b.targets[0], TupleT(tuple(a.type for a in items))),), MakeTuple(items), b.loc)
        if cls is Unpack:
            if not self.touched((rhs.tup,)):
                return b
            tup = self.atom(rhs.tup)
            ts = tup.type.items if type(tup.type) is TupleT else ()
            return Bind(tuple(self.target(v, ts[i]) if i < len(ts) else v for i, v in enumerate(b.targets)),
                        Unpack(tup), b.loc)
        if not self.env:
            return b
        return Bind(b.targets, map_atoms(rhs, self.atom), b.loc)

    def loop_back(self, b: Bind, rhs: LoopBack) -> Bind:
        """A loop's cotangents: each parameter typed as its start and its value after an iteration (to a
        fixed point: a parameter made a numpy scalar may make another one)."""
        init = tuple(map(self.atom, rhs.init))
        params = tuple(self.target(p, _numpy_if_any(p.type, (a,))) for p, a in zip(rhs.params, init))
        for _ in range(len(params) + 1):
            body = self.block(rhs.body)
            ends = result_items(body) or ()
            widened = tuple(self.target(p, _numpy_if_any(p.type, (e,))) for p, e in zip(params, ends))
            if all(map(operator.is_, widened, params)):  # (Vars compare by name: not ==)
                break
            params = widened
        targets = tuple(self.target(t, _numpy_if_any(t.type, (p,))) for t, p in zip(b.targets, params))
        return Bind(targets, replace(rhs, params=params, init=init, body=body), b.loc)

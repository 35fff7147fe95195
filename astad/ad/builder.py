"""What the reverse (and forward) macro builds the target IR with: :class:`Builder`, which the derivative
rules in the table call (``b.prim``, ``b.const``), and :func:`with_tapes`, the forward block with its loops'
tapes and its calls split."""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Callable

from .. import rules
from ..frontend import literal_type
from ..ir import (App, Atom, Bind, Block, Comp, Const, If, Lam, Loc, Loop, Prim, TupleT, Type, Var, bound_vars)
from ..names import _TEMPS, Namer
from .calls import split as split_call

_TABLE = rules.TABLE


_PLAIN = frozenset({int, bool, str, type(None)})


def _plain(params: tuple[tuple[str, Any], ...]) -> tuple | None:
    """Static parameters as part of a key that tells apart only what is the same value (each
    value's class with it: ``True`` is not ``1``); None where a value is not of a class whose
    equal values are the same (a float: ``-0.0 == 0.0``, an array, an object)."""
    out = []
    for k, v in params:
        cls = type(v)
        if cls is tuple:
            for x in v:
                if type(x) is not int:
                    return None
        elif cls not in _PLAIN:
            return None
        out.append((k, cls, v))
    return tuple(out)


class Builder:
    """Appends target-IR bindings; what the VJP rules in the table call."""

    def __init__(self, namer: Namer) -> None:
        self.namer = namer
        self.binds: list[Bind] = []
        self.loc: Loc | None = None  # the source line whose backward pass is being built
        # the result types of primitives, by the primitive, its arguments' type objects (their ids: no
        # type's __hash__ or __eq__ runs; the types are kept, so the ids stay theirs) and its parameters
        self.types: dict[tuple, tuple[Type, list[Type]]] = {}

    def prim(self, op: str, *args: Atom, **params: Any) -> Atom:
        n = len(args)
        key = (op, id(args[0].type), id(args[1].type)) if n == 2 else (op, id(args[0].type)) if n == 1 else \
            (op, *[id(a.type) for a in args])
        ps = ()
        if params:
            ps = tuple(sorted(params.items()))
            plain = _plain(ps)
            key = None if plain is None else (key, plain)
        known = None if key is None else self.types.get(key)
        if known is None:
            types = [a.type for a in args]
            known = (_TABLE[op].infer(types, params), types)
            if key is not None:
                self.types[key] = known
        # (Namer.temp, its common case written out: the next temporary's name, free)
        namer = self.namer
        used, n = namer.used, namer.temps + 1
        if n < len(_TEMPS) and _TEMPS[n] not in used and namer.taken is used and namer.log is None:
            name = _TEMPS[n]
            namer.temps = n
            used.add(name)
        else:
            name = namer.temp()
        var = Var(name, known[0])
        self.binds.append(Bind((var,), Prim(op, args, ps), self.loc))
        return var

    def const(self, value: Any) -> Const:
        if isinstance(value, tuple):
            return Const.literal(value, TupleT(tuple(literal_type(v) for v in value)))
        return Const.literal(value, literal_type(value))

    def bind(self, targets: tuple[Var, ...], rhs: Comp) -> None:
        self.binds.append(Bind(targets, rhs, self.loc))


#: the kinds (``ir.kinds``) of the bindings ``with_tapes`` changes
_TAPED = frozenset({"call", "If", "Loop", "Lam", "App"})


def with_tapes(block: Block, namer: Namer, active: Callable[[Atom], bool] | None = None,
               calls: dict[str, Prim] | None = None) -> Block:
    """Give every loop a tape on which it records, per iteration, what its body
    binds (the optimiser keeps only what the backward pass reads); split each
    call of a function of its own into its forward part and its residuals
    (:func:`astad.ad.calls.split`, which notes it in ``calls``)."""
    binds = []
    for b in block.binds:
        rhs = b.rhs
        cls = type(rhs)  # (no class of the IR has subclasses)
        if cls is Prim:
            if rhs.op == "call" and calls is not None:
                binds += split_call(b, active or _always, namer, calls)
                continue
        elif cls is If:
            b = Bind(b.targets, If(rhs.cond, with_tapes(rhs.then, namer, active, calls),
                                   with_tapes(rhs.orelse, namer, active, calls)), b.loc)
        elif cls is Loop:
            body = with_tapes(rhs.body, namer, active, calls)
            save = (*rhs.inputs, *bound_vars(body))
            tape = Var(namer.fresh(f"{(rhs.index or rhs.carried[-1]).name}_tape"), TupleT(()))
            b = Bind(b.targets + (tape,), Loop(rhs.bounds, rhs.index, rhs.carried, rhs.init, body, save, tape), b.loc)
        elif cls is Lam:  # each call records what the function's backward map needs
            body = with_tapes(rhs.body, namer, active, calls)
            b = Bind(b.targets, replace(rhs, body=body, save=(*rhs.params, *bound_vars(body))), b.loc)
        elif cls is App:
            record = Var(namer.fresh(f"{rhs.fn.name}_record"), TupleT(()))
            b = Bind(b.targets + (record,), rhs, b.loc)
        binds.append(b)
    return Block(tuple(binds), block.result)




def _always(a: Atom) -> bool:
    return True

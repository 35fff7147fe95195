"""Small helpers that take blocks of the target IR apart and put them together
again, shared by the optimiser's passes."""

from __future__ import annotations

from dataclasses import replace
from operator import is_
from typing import Callable, Sequence

from .ir import Atom, Bind, Block, Comp, If, Lam, Loop, LoopBack, MakeTuple, Prim

#: the classes of right-hand side with blocks inside (``ir.nested_blocks``)
NESTING = frozenset({If, Loop, LoopBack, Lam})


def same(new: Sequence[object], old: Sequence[object]) -> bool:
    """Whether ``new`` holds the very objects of ``old``, in order."""
    return len(new) == len(old) and all(map(is_, new, old))


def same_or_new(block: Block, binds: Sequence[Bind], result: Atom | None = None) -> Block:
    """``block`` itself when ``binds`` are its own bindings and ``result`` (default:
    its own) is its result (what is remembered about it is kept), else a new block."""
    result = block.result if result is None else result
    if result is block.result and same(binds, block.binds):
        return block
    return Block(tuple(binds), result)


def rebound(b: Bind, rhs: Comp) -> Bind:
    """``b`` with the right-hand side ``rhs``: ``b`` itself when that is its own."""
    return b if rhs is b.rhs else Bind(b.targets, rhs, b.loc)


def with_branches(b: Bind, rhs: Comp, f: Callable[[Block], Block]) -> Bind:
    """The binding with ``f`` applied to the blocks nested in it (branches, loop
    bodies); ``b`` itself where that changes nothing (no binding is rebuilt, so
    what is remembered about its blocks is kept)."""
    cls = type(rhs)
    if cls is If:
        then, orelse = f(rhs.then), f(rhs.orelse)
        if then is rhs.then and orelse is rhs.orelse:
            return b if rhs is b.rhs else Bind(b.targets, rhs, b.loc)
        return Bind(b.targets, If(rhs.cond, then, orelse), b.loc)
    if cls is Loop or cls is LoopBack:
        body = f(rhs.body)
        if body is rhs.body:
            return b if rhs is b.rhs else Bind(b.targets, rhs, b.loc)
        return Bind(b.targets, replace(rhs, body=body), b.loc)
    return b if rhs is b.rhs else Bind(b.targets, rhs, b.loc)


def result_items(block: Block) -> tuple[Atom, ...] | None:
    """The items of the tuple a branch ends with."""
    last = block.binds[-1] if block.binds else None
    if last is not None and last.targets == (block.result,) and isinstance(last.rhs, MakeTuple):
        return last.rhs.items
    return None


#: primitives whose result is all zeros (made at run time, when its size is known only then)
ZERO_MAKERS = {"zeros", "zeros_like", "list_zeros_like"}


_PRIMS = frozenset({Prim})


def prim_rhss(block: Block) -> list[Prim] | None:
    """The right-hand sides of ``block``'s bindings where all are primitives (straight-line code, mostly: the
    fast paths of the walks after the lowering), else None.  (A comprehension: its attribute reads are the
    interpreter's specialised ones, cheaper than attrgetter's in map; the classes then by ``map`` of ``type``,
    in C.)  Computed once per block (the caller must not change it): the lowering's checks of a function's
    body ask three times of the same block."""
    memo = block.__dict__
    if "_prim_rhss" in memo:
        return memo["_prim_rhss"]
    rhss = [b.rhs for b in block.binds]
    found = memo["_prim_rhss"] = rhss if set(map(type, rhss)) <= _PRIMS else None
    return found  # type: ignore[return-value]


def prim_op(b: Bind) -> str | None:
    """The primitive a binding applies, if it applies one."""
    return b.rhs.op if isinstance(b.rhs, Prim) else None

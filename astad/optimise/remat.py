"""Rematerialisation: a residual array that costs less to compute again than
to keep is computed again in the backward pass instead of being kept.

Keeping an array from the forward pass to the backward pass costs its memory
for the whole call (per iteration, for a value a loop records on its tape:
``z = (x - means[j]) * s`` of a (1000, 64) ``x`` over 100 iterations keeps
100 arrays of 512 kB), and a fresh allocation where the forward pass could
have reused the memory.  Computing it again costs a pass or two over memory in
the backward pass.  So a residual array bound by one of the :data:`CHEAP`
elementwise operations (``x > 0``, ``-x``, ``a * b``, views of those) is
recomputed, just before the backward pass first reads it, when what it reads
is there anyway: the parameters, constants, scalars (kept for nearly nothing)
and the residuals kept anyway, or values recomputed the same way, at most
:data:`MAX_COST` elementwise passes per residual.  The same operation on the
same operands gives the same bits: the derivative does not change.

Two scopes: the top-level forward block with the top-level backward block
(residuals), and each top-level loop's body with its backward loop's body
(values on the tape).  ``dce`` afterwards drops what the forward pass no longer
needs to keep (``prune_tapes`` drops the tape entries).
"""

from __future__ import annotations

import math
import re
from dataclasses import replace

from ..blocks import same_or_new
from ..rules import is_advanced
from ..ir import (Atom, Bind, Block, Loop, LoopBack, Num, Prim, ReverseProgram, Var, bound_set, kinds, nested_blocks,
                  read_set, substitute, vars_of)
from ..ir.walk import ops_of, outside_reads, positions
from ..names import Namer

#: elementwise operations that cost one pass over memory (no transcendental function)
CHEAP = frozenset({"add", "sub", "mul", "div", "neg", "abs", "sign", "maximum", "minimum", "eq", "ne", "lt", "le",
                   "gt", "ge", "and_", "or_", "isnan", "where"})
#: operations that make a view (no pass over memory): free to redo, never worth a residual of their own
VIEWS = frozenset({"expand_dims", "reshape", "transpose", "broadcast_to"})
#: the most elementwise passes the backward pass makes to recompute one residual
MAX_COST = 2
#: arrays smaller than this (elements) are kept: recomputing them saves little memory
MIN_SIZE = 4096


def rematerialise(prog: ReverseProgram) -> ReverseProgram:
    """``prog`` with its cheap residual arrays (and taped arrays) computed again in the backward pass."""
    if "LoopBack" not in kinds(prog.backward) and not _any_candidate(prog.forward):
        return prog  # no big array made by a cheap operation (without a walk of the backward block)
    top_defs = _defs(prog.forward)
    residual_reads = outside_reads(prog.backward)
    if "LoopBack" not in kinds(prog.backward) and not _candidates(top_defs, residual_reads):
        return prog  # nothing worth recomputing (what ``_recompute`` would find first)
    params = {p.name for p in prog.params}
    top_scalars = {n for n, b in top_defs.items() if _scalar(b.targets[0])}
    top_free = params | top_scalars
    loops = {b.rhs.tape.name: b.rhs for b in prog.forward.binds if isinstance(b.rhs, Loop) and b.rhs.tape is not None}
    namer = Namer.of(prog)  # (walks the program only when the first value is recomputed)

    binds = []
    for b in prog.backward.binds:
        rhs = b.rhs
        if isinstance(rhs, LoopBack) and rhs.tape.name in loops:
            loop = loops[rhs.tape.name]
            defs = _defs(loop.body)
            inner_free = (top_free | residual_reads | {v.name for v in loop.inputs if _scalar(v)}
                          | {n for n, d in defs.items() if _scalar(d.targets[0])})
            taped = {v.name for v in rhs.saved}
            body = _recompute(rhs.body, defs, taped, inner_free, namer)
            if body is not rhs.body:
                b = Bind(b.targets, replace(rhs, body=body), b.loc)
        binds.append(b)
    backward = _recompute(same_or_new(prog.backward, binds), top_defs, residual_reads, top_free, namer)
    if backward is prog.backward:
        return prog
    return ReverseProgram(prog.name, prog.params, prog.forward, prog.ct_in, backward)


def _defs(block: Block) -> dict[str, Bind]:
    """The primitive bindings of one target each at the top level of ``block``, by name."""
    return {b.targets[0].name: b for b in block.binds if type(b.rhs) is Prim and len(b.targets) == 1}


def _any_candidate(block: Block) -> bool:
    """Whether ``_candidates(_defs(block), _defs(block).keys())`` has a name, without making them:
    ``_big`` asked once per type object (the passes share the objects: nearly every binding's is one
    seen before; each is alive while the block is, so no two of them have the same ``id``).  Only the bindings
    of those operations looked at, found without a Python loop over every binding (``ops_of``, which ``dce``
    remembers on the blocks it makes)."""
    big: dict[int, bool] = {}
    binds = block.binds
    for at in positions(ops_of(block), CHEAP):  # (a primitive's op; the others' class names are none of these)
        targets = binds[at].targets
        if len(targets) == 1:
            t = targets[0]
            known = big.get(id(t.type))
            if known is None:
                known = big[id(t.type)] = _big(t)
            if known:
                return True
    return False


def _candidates(defs: dict[str, Bind], wanted: set[str] | frozenset[str]) -> set[str]:
    """The names in ``wanted`` bound in ``defs`` to a big array by a cheap operation."""
    return {n for n in wanted if n in defs and defs[n].rhs.op in CHEAP and _big(defs[n].targets[0])}  # type: ignore[union-attr]


def _scalar(v: Var) -> bool:
    return isinstance(v.type, Num) and v.type.shape == ()


def _big(v: Var) -> bool:
    t = v.type
    return isinstance(t, Num) and bool(t.shape) and t.known_shape and math.prod(t.shape) >= MIN_SIZE


def _recomputable(defs: dict[str, Bind], wanted: set[str] | frozenset[str], free: set[str]) -> set[str]:
    """The names in ``wanted`` worth recomputing: big arrays made by a cheap operation from
    what is ``free`` (there anyway), what is kept anyway, or what is recomputed too."""
    planner = _Planner(defs, wanted, free)
    return {n for n in planner.candidates if (c := planner.plan(n)) is not None and c <= MAX_COST}


class _Planner:
    """What recomputing each name costs (an object, not a function calling itself from
    inside ``_recomputable``: that would be a cycle holding ``defs`` until the collector ran)."""

    def __init__(self, defs: dict[str, Bind], wanted: set[str] | frozenset[str], free: set[str]) -> None:
        self.defs, self.wanted, self.free = defs, wanted, free
        self.candidates = _candidates(defs, wanted)
        self.cost: dict[str, int | None] = {}

    def plan(self, name: str) -> int | None:
        """The passes recomputing ``name`` costs (None: it cannot be recomputed cheaply)."""
        cost, defs, plan = self.cost, self.defs, self.plan
        if name in cost:
            return cost[name]
        cost[name] = None  # (no cycles in SSA; this guards anyway)
        rhs = defs[name].rhs if name in defs else None
        if not isinstance(rhs, Prim) or rhs.op not in CHEAP | VIEWS and not _basic_getitem(rhs):
            return None
        total = 1 if rhs.op in CHEAP else 0
        for a in rhs.args:
            if not isinstance(a, Var) or a.name in self.free:
                continue
            if a.name in self.candidates:
                if plan(a.name) is None or plan(a.name) > MAX_COST:
                    continue  # kept anyway
                continue  # recomputed anyway: paid for by its own plan
            if a.name in self.wanted:
                continue  # a residual kept anyway
            inner = plan(a.name)
            if inner is None:
                return None
            total += inner
        cost[name] = total
        return total


def _reads(b: Bind) -> set[str]:
    """The names one binding reads, inside its nested blocks too."""
    names = {v.name for v in vars_of(b.rhs)}
    for inner in nested_blocks(b.rhs):
        names |= read_set(inner)
    return names


def _basic_getitem(p: Prim) -> bool:
    """``x[i]``, ``x[a:b]``: a view (or a scalar), no gather."""
    if p.op != "getitem":
        return False
    return not is_advanced(p.param("index"))


def _recompute(block: Block, defs: dict[str, Bind], wanted: set[str] | frozenset[str], free: set[str],
               namer: Namer) -> Block:
    """``block`` with the residuals of ``wanted`` worth recomputing bound again in it, each (and
    what it needs) just before the first binding that reads it, under a new name (the forward
    and backward passes are one function again in forward mode over reverse mode)."""
    chosen = _recomputable(defs, wanted, free)
    if not chosen:
        return block
    order = list(defs)
    done: set[str] = set()
    binds: list[Bind] = []

    def emit(name: str) -> None:
        if name in done:
            return
        done.add(name)
        d = defs[name]
        for a in d.rhs.args:  # type: ignore[union-attr]
            if isinstance(a, Var) and a.name in defs and a.name not in free and (
                    a.name in chosen or a.name not in wanted):
                emit(a.name)
        binds.append(d)

    for b in block.binds:
        for name in sorted(_reads(b) & chosen, key=order.index):
            emit(name)
        binds.append(b)
    if done & bound_set(block):  # (a name the block binds itself: left as it is)
        return block
    made = {id(defs[n]) for n in done}
    env: dict[str, Atom] = {}
    for n in sorted(done, key=order.index):
        t = defs[n].targets[0]
        env[n] = Var(namer.temp() if Namer.is_temp(n) else namer.fresh(re.sub(r"_\d+$", "", n)), t.type)
    renamed = [Bind(tuple(env[t.name] for t in b.targets) if id(b) in made else b.targets, substitute(b.rhs, env), b.loc)
               for b in binds]
    return Block(tuple(renamed), env.get(block.result.name, block.result) if isinstance(block.result, Var)
                 else block.result)

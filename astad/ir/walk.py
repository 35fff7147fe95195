"""Walks over the IR: what a block binds and reads, use counts, and
substitution and mapping of atoms.  Facts about a block are computed once
(blocks are immutable) and remembered on it."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from itertools import compress
from typing import Any, Callable, Collection, Iterator, Sequence

from .nodes import (App, AppBack, Atom, Bind, Block, CaseCopower, Comp, Copower, Copy, Drop, Dup, If, Lam, Loop,
                    LoopBack, MakeTuple, Plus, Prim, Unpack, Var, nested_blocks)


def lam_free_vars(rhs: Lam) -> tuple[Var, ...]:
    """What a function value captures: the variables its body reads from outside."""
    own = {v.name for v in rhs.params}
    return tuple(v for v in free_vars(rhs.body) if v.name not in own)


def function_values(block: "Block") -> dict[str, Lam]:
    """Each ``lam`` of a block (also nested) by the variable it is bound to, which
    its type names (copies made by ``dup`` have the same type)."""
    if "Lam" not in kinds(block):  # (most programs make none: kinds is remembered on the block, often known)
        return {}
    found: dict[str, Lam] = {}
    for b in block.binds:
        if isinstance(b.rhs, Lam):
            found[b.targets[0].name] = b.rhs
        for inner in nested_blocks(b.rhs):
            found.update(function_values(inner))
    return found


def loop_free_vars(rhs: "Loop | LoopBack") -> tuple[Var, ...]:
    """What a loop body reads from outside (not its own inputs)."""
    own = {v.name for v in (rhs.saved + rhs.params if isinstance(rhs, LoopBack) else rhs.inputs)}
    return tuple(v for v in free_vars(rhs.body) if v.name not in own)


def _memo(block: Block, key: str, compute: Callable[[Block], Any]) -> Any:
    """``compute(block)``, remembered on the block: blocks are immutable, so a
    fact about one (its free variables, the names it binds) never changes.  A
    pass that asks at every level of a nested block then pays for each block
    once, not once per enclosing level (which is quadratic in the depth)."""
    memo = block.__dict__
    if key not in memo:
        memo[key] = compute(block)
    return memo[key]


def free_vars(block: Block) -> tuple[Var, ...]:
    """The variables a block reads and does not bind, in order of first use."""
    return _memo(block, "_free_vars", _free_vars)


def _free_vars(block: Block) -> tuple[Var, ...]:
    bound: set[str] = set()
    seen: dict[str, Var] = {}
    for b in block.binds:
        for v in vars_of(b.rhs):
            if v.name not in bound and v.name not in seen:
                seen[v.name] = v
        bound.update(t.name for t in b.targets)
    r = block.result
    if isinstance(r, Var) and r.name not in bound and r.name not in seen:
        seen[r.name] = r
    return tuple(seen.values())


def all_binds(block: Block) -> Iterator[Bind]:
    """Every binding of a block, also inside its branches, in order (each
    binding before those nested in it).  A stack, not nested generators: a
    binding deep down is passed up through no generator per level."""
    stack: list[Iterator[Bind]] = []
    binds = iter(block.binds)
    while True:
        for b in binds:
            yield b
            if type(b.rhs) in _NESTING:
                inners = nested_blocks(b.rhs)
                stack.append(binds)  # (resumed after the nested blocks, where it stopped)
                stack.extend(iter(inner.binds) for inner in reversed(inners[1:]))
                binds = iter(inners[0].binds)
                break
        else:
            if not stack:
                return
            binds = stack.pop()


#: the classes of right-hand side with blocks inside (``nested_blocks``)
_NESTING = frozenset({If, Loop, LoopBack, Lam})
#: the kinds (``kinds``) of the right-hand sides with blocks inside
NESTING_KINDS = frozenset(cls.__name__ for cls in _NESTING)


def _bound_here(b: Bind, backward: bool) -> Iterator[Var]:
    """What one binding binds at its own level: its targets, a loop's inputs, a
    lam's parameters and, with ``backward``, a backward loop's saved values and parameters."""
    yield from b.targets
    if isinstance(b.rhs, Loop):
        yield from b.rhs.inputs
    if backward and isinstance(b.rhs, LoopBack):
        yield from b.rhs.saved + b.rhs.params
    if isinstance(b.rhs, Lam):
        yield from b.rhs.params


def bound_names(block: Block) -> Iterator[str]:
    """Every name a block binds, also inside its branches."""
    for b in all_binds(block):
        yield from (v.name for v in _bound_here(b, True))


def bound_vars(block: Block) -> Iterator[Var]:
    """Every variable a block binds, also inside its branches, in order."""
    for b in all_binds(block):
        yield from _bound_here(b, False)


def bound_set(block: Block) -> frozenset[str]:
    """``bound_names`` as a set, computed once per block (from its nested blocks' sets)."""
    return _memo(block, "_bound_set", lambda blk: _names_below(blk, True, bound_set))


def bound_var_names(block: Block) -> frozenset[str]:
    """The names of ``bound_vars``, computed once per block (from its nested blocks' sets)."""
    return _memo(block, "_bound_var_names", lambda blk: _names_below(blk, False, bound_var_names))


def _names_below(block: Block, backward: bool, inner_names: Callable[[Block], frozenset[str]]) -> frozenset[str]:
    names: set[str] = set()
    add = names.add
    for b in block.binds:
        if type(b.rhs) is Prim:  # the most common: binds its targets only, no blocks inside
            for t in b.targets:
                add(t.name)
            continue
        names.update(v.name for v in _bound_here(b, backward))
        for inner in nested_blocks(b.rhs):
            names |= inner_names(inner)
    return frozenset(names)


def read_names(block: Block) -> set[str]:
    """Every name a block reads, also inside its branches (a new set: the caller may change it)."""
    return set(read_set(block))


def kinds(block: Block) -> frozenset[str]:
    """What a block is made of, also inside its branches: the op of each
    primitive (``"scatter"``) and the class of every other right-hand side
    (``"LoopBack"``), computed once per block: a pass that rewrites only what a
    program lacks returns it as it is without walking it."""
    return _memo(block, "_kinds", _kinds)


def _kinds(block: Block) -> frozenset[str]:
    binds = block.binds
    # (one set comprehension: the fastest walk of a long block; ops and class names never coincide)
    found = {b.rhs.op if type(b.rhs) is Prim else type(b.rhs).__name__ for b in binds}
    if not found.isdisjoint(NESTING_KINDS):  # (a block nested at some depth is nested in one of these)
        for b in binds:
            if type(b.rhs) in _NESTING:
                for inner in nested_blocks(b.rhs):
                    found |= kinds(inner)
    return frozenset(found)


def ops_of(block: Block) -> list[str]:
    """What each binding of a block (not of its nested blocks) is made of, in order: the op of a primitive,
    the class name of any other right-hand side (``OTHER_KINDS``; the set of it is ``kinds`` without the
    nested blocks'), computed once per block (the caller must not change it): a pass that rewrites a few ops
    finds them with ``positions``."""
    return _memo(block, "_ops", _ops)


def _ops(block: Block) -> list[str]:
    # (one comprehension: the fastest walk of a long block)
    return [b.rhs.op if type(b.rhs) is Prim else type(b.rhs).__name__ for b in block.binds]


#: the names ``ops_of`` gives the right-hand sides that are not primitives
OTHER_KINDS = frozenset(cls.__name__ for cls in (MakeTuple, Unpack, Dup, Drop, Plus, Copy, If, Loop, LoopBack, Lam,
                                                 App, AppBack, Copower, CaseCopower))


def positions(items: Sequence[Any], values: Collection[Any]) -> list[int]:
    """Where any of ``values`` (hashable) is in ``items``, in order, without a Python loop (``compress``
    of the indices by ``map`` of the set's own test, each written in C)."""
    return list(compress(range(len(items)), map(frozenset(values).__contains__, items)))


def read_set(block: Block) -> frozenset[str]:
    """``read_names``, computed once per block (from its nested blocks' sets)."""
    return _memo(block, "_read_set", _read_set)


def _read_set(block: Block) -> frozenset[str]:
    rhss = [b.rhs for b in block.binds]
    # (primitives, the most common, read their arguments only: one comprehension)
    names = {a.name for rhs in rhss if type(rhs) is Prim for a in rhs.args if type(a) is Var}
    if isinstance(block.result, Var):
        names.add(block.result.name)
    for rhs in [rhs for rhs in rhss if type(rhs) is not Prim]:
        names.update(v.name for v in vars_of(rhs))
        for inner in nested_blocks(rhs):
            names |= read_set(inner)
    return frozenset(names)


def outside_reads(block: Block) -> frozenset[str]:
    """The names a block reads and binds nowhere in it (``read_set`` less ``bound_set``:
    a backward block's residuals and its parameter), computed once per block."""
    return _memo(block, "_outside_reads", lambda blk: read_set(blk) - bound_set(blk))


def if_free_vars(rhs: If) -> tuple[Var, ...]:
    """The variables the branches of an ``if`` read from outside, in order."""
    seen: dict[str, Var] = {}
    for v in free_vars(rhs.then) + free_vars(rhs.orelse):
        seen.setdefault(v.name, v)
    return tuple(seen.values())


def map_block(block: Block, f: Callable[[Atom], Atom]) -> Block:
    """A block with every free occurrence of a variable replaced by ``f``
    (variables the block binds itself are left alone)."""
    bound: set[str] = set()

    def g(a: Atom) -> Atom:
        return a if isinstance(a, Var) and a.name in bound else f(a)

    binds = []
    for b in block.binds:
        binds.append(Bind(b.targets, map_atoms(b.rhs, g), b.loc))
        bound.update(t.name for t in b.targets)
    return Block(tuple(binds), g(block.result))


def atoms_of(rhs: Comp) -> tuple[Atom, ...]:
    """The atoms a computation reads (for a branch or a loop: what it reads from outside)."""
    cls = type(rhs)  # (no class of the IR has subclasses)
    if cls is Prim:  # the most common first
        return rhs.args
    if cls is MakeTuple or cls is Plus:
        return rhs.items
    if cls is Copy:
        return (rhs.atom,)
    if cls is Unpack:
        return (rhs.tup,)
    if isinstance(rhs, If):
        return (rhs.cond, *if_free_vars(rhs))
    if isinstance(rhs, Loop):
        return (*rhs.bounds, *rhs.init, *loop_free_vars(rhs))
    if isinstance(rhs, LoopBack):
        return (rhs.tape, *rhs.init, *loop_free_vars(rhs))
    if isinstance(rhs, Lam):
        return lam_free_vars(rhs)
    if isinstance(rhs, App):
        return (rhs.fn, *rhs.args)
    if isinstance(rhs, AppBack):
        return (rhs.fn, rhs.record, rhs.ct)
    if isinstance(rhs, Copower):
        return (rhs.record, rhs.ct)
    if isinstance(rhs, CaseCopower):
        return (rhs.copower, rhs.fn)
    if isinstance(rhs, Prim):
        return rhs.args
    if isinstance(rhs, (MakeTuple, Plus)):
        return rhs.items
    if isinstance(rhs, Unpack):
        return (rhs.tup,)
    if isinstance(rhs, (Dup, Drop)):
        return (rhs.var,)
    if isinstance(rhs, Copy):
        return (rhs.atom,)
    raise TypeError(rhs)


def vars_of(rhs: Comp) -> list[Var]:
    cls = type(rhs)
    if cls is Copy:  # (one atom: no tuple made)
        a = rhs.atom
        return [a] if type(a) is Var else []
    return [a for a in atoms_of(rhs) if type(a) is Var]


def use_counts(block: Block) -> "Counter[str]":
    """How often each variable is read: inside nested blocks, by loop bounds,
    initial values and tapes too, and as the block's result.  A new Counter
    (the caller may change it); the counts of each block are computed once."""
    counts = Counter(_memo(block, "_use_counts", _nested_use_counts))
    if isinstance(block.result, Var):
        counts[block.result.name] += 1
    return counts


def use_counts_dict(block: Block) -> dict[str, int]:
    """``use_counts`` as a plain dict (a name not read is absent: read a count with ``.get(name, 0)``), which
    a pass that changes many counts reads and writes faster than a Counter (a dict subclass)."""
    counts = dict(_memo(block, "_use_counts", _nested_use_counts))
    if isinstance(block.result, Var):
        name = block.result.name
        counts[name] = counts.get(name, 0) + 1
    return counts


def binding_reads(block: Block) -> "Counter[str]":
    """``use_counts`` less the block's result: how often its bindings read each name (a new Counter)."""
    return Counter(_memo(block, "_use_counts", _nested_use_counts))


def flat_reads(binds: Sequence[Bind]) -> list[str]:
    """The names bindings without blocks inside read, each time it is read."""
    return [v.name for b in binds for v in vars_of(b.rhs)]


def remember_binding_reads(block: Block, reads: "Counter[str]", lowered: Sequence[str] | None = None) -> None:
    """``binding_reads`` of a new block, known to the pass that made it (from the block it came
    from): remembered as if counted, so ``use_counts`` of it costs no walk.  Names read no more
    (counts of 0 or less) are dropped, as a count would not have them.  ``lowered``: where given,
    the only names whose counts may be 0 or less (the others' are positive): ``reads`` itself
    is remembered, those dropped from it, not a copy made of all of it."""
    if "_use_counts" in block.__dict__:
        return
    if lowered is None:
        reads = +reads
    else:
        for name in lowered:
            if name in reads and reads[name] <= 0:
                del reads[name]
    block.__dict__["_use_counts"] = reads


def known_binding_reads(block: Block) -> "Counter[str]":
    """``binding_reads`` itself, not a copy: for a caller that only reads it (the counts of each
    block are made once and kept; a change to them would be a wrong count for every pass after)."""
    return _memo(block, "_use_counts", _nested_use_counts)


def _nested_use_counts(blk: Block) -> "Counter[str]":
    """The reads of a block's bindings, nested blocks included (not its result)."""
    rhss = [b.rhs for b in blk.binds]
    # the direct reads of the bindings of primitives (the most common), counted at once
    read = [a.name for rhs in rhss if type(rhs) is Prim for a in rhs.args if type(a) is Var]
    others = [rhs for rhs in rhss if type(rhs) is not Prim]
    if _NESTING.isdisjoint(map(type, others)):  # (most: no blocks inside; a sum's items read without a call)
        read += [a.name for rhs in others for a in (rhs.items if type(rhs) is Plus else atoms_of(rhs))
                 if type(a) is Var]  # (in the same order as the loop below: the Counter's keys too)
        return Counter(read)
    nested = []
    for rhs in others:
        if isinstance(rhs, If):
            direct: tuple[Atom, ...] = (rhs.cond,)
        elif isinstance(rhs, Loop):
            direct = (*rhs.bounds, *rhs.init, *rhs.save)
        elif isinstance(rhs, LoopBack):
            direct = (rhs.tape, *rhs.init)
        elif isinstance(rhs, Lam):
            direct = ()
        else:
            read.extend([v.name for v in vars_of(rhs)])
            continue
        read.extend([a.name for a in direct if isinstance(a, Var)])
        nested.extend(nested_blocks(rhs))
    counts = Counter(read)
    for inner in nested:
        counts.update(_memo(inner, "_use_counts", _nested_use_counts))
    return counts


def map_atoms(rhs: Comp, f: Callable[[Atom], Atom]) -> Comp:
    """The same computation with every atom it reads replaced by ``f(atom)``, in order."""
    if isinstance(rhs, Prim):
        return Prim(rhs.op, tuple(f(a) for a in rhs.args), rhs.params)
    if isinstance(rhs, MakeTuple):
        return MakeTuple(tuple(f(a) for a in rhs.items))
    if isinstance(rhs, Plus):
        return Plus(tuple(f(a) for a in rhs.items))
    if isinstance(rhs, Unpack):
        return Unpack(f(rhs.tup))
    if isinstance(rhs, Copy):
        return Copy(f(rhs.atom))
    if isinstance(rhs, If):
        return If(f(rhs.cond), map_block(rhs.then, f), map_block(rhs.orelse, f))
    if isinstance(rhs, Loop):
        own = {v.name for v in rhs.inputs}
        body = map_block(rhs.body, lambda a: a if isinstance(a, Var) and a.name in own else f(a))
        return Loop(tuple(f(a) for a in rhs.bounds), rhs.index, rhs.carried, tuple(f(a) for a in rhs.init), body,
                    rhs.save, rhs.tape)
    if isinstance(rhs, LoopBack):
        own = {v.name for v in rhs.saved + rhs.params}
        body = map_block(rhs.body, lambda a: a if isinstance(a, Var) and a.name in own else f(a))
        tape = f(rhs.tape)
        assert isinstance(tape, Var)
        return LoopBack(tape, rhs.saved, rhs.params, tuple(f(a) for a in rhs.init), body)
    if isinstance(rhs, Lam):
        own = {v.name for v in rhs.params}
        return replace(rhs, body=map_block(rhs.body, lambda a: a if isinstance(a, Var) and a.name in own else f(a)))
    if isinstance(rhs, App):
        return App(as_var(f(rhs.fn)), tuple(f(a) for a in rhs.args))
    if isinstance(rhs, AppBack):
        return AppBack(as_var(f(rhs.fn)), as_var(f(rhs.record)), f(rhs.ct))
    if isinstance(rhs, Copower):
        return Copower(as_var(f(rhs.record)), f(rhs.ct))
    if isinstance(rhs, CaseCopower):
        return CaseCopower(f(rhs.copower), as_var(f(rhs.fn)))
    if isinstance(rhs, (Dup, Drop)):
        a = f(rhs.var)
        if not isinstance(a, Var):
            raise TypeError("dup/drop of a non-variable")
        return type(rhs)(a)
    raise TypeError(rhs)


def as_var(a: Atom) -> Var:
    if not isinstance(a, Var):
        raise TypeError(f"expected a variable, got {a}")
    return a


def substitute(rhs: Comp, env: dict[str, Atom]) -> Comp:
    """Replace variables read by ``rhs`` according to ``env`` (name -> atom).

    A branch, loop or function value that reads none of ``env``'s names from
    outside is returned as it is, without a walk of its blocks: what it reads
    from outside is known once per block (``free_vars``), so substituting at
    every level of a deeply nested block costs each level once."""
    if not env:
        return rhs
    cls = type(rhs)
    if cls is Prim:  # the most common: itself when it reads none of env's names
        for a in rhs.args:
            if type(a) is Var and a.name in env:
                return Prim(rhs.op, tuple([env.get(a.name, a) if type(a) is Var else a for a in rhs.args]), rhs.params)
        return rhs
    if cls is Copy:  # (the next most common, made by the reverse macro: one atom)
        a = rhs.atom
        return Copy(env[a.name]) if type(a) is Var and a.name in env else rhs
    if cls is Plus or cls is MakeTuple:
        for a in rhs.items:
            if type(a) is Var and a.name in env:
                return cls(tuple([env.get(a.name, a) if type(a) is Var else a for a in rhs.items]))
        return rhs
    if cls is not If and cls is not Loop and cls is not LoopBack and cls is not Lam:  # (no blocks inside)
        if all(v.name not in env for v in vars_of(rhs)):
            return rhs  # (what map_atoms would make again)
        return map_atoms(rhs, lambda a: env.get(a.name, a) if isinstance(a, Var) else a)
    if all(v.name not in env for v in vars_of(rhs)):
        return rhs
    if isinstance(rhs, If):
        cond = env.get(rhs.cond.name, rhs.cond) if isinstance(rhs.cond, Var) else rhs.cond
        return If(cond, substitute_block(rhs.then, env), substitute_block(rhs.orelse, env))
    if isinstance(rhs, Loop):
        return Loop(tuple(_subst(a, env) for a in rhs.bounds), rhs.index, rhs.carried,
                    tuple(_subst(a, env) for a in rhs.init), substitute_block(rhs.body, _without(env, rhs.inputs)),
                    rhs.save, rhs.tape)
    if isinstance(rhs, LoopBack):
        return LoopBack(as_var(_subst(rhs.tape, env)), rhs.saved, rhs.params, tuple(_subst(a, env) for a in rhs.init),
                        substitute_block(rhs.body, _without(env, rhs.saved + rhs.params)))
    if isinstance(rhs, Lam):
        return replace(rhs, body=substitute_block(rhs.body, _without(env, rhs.params)))
    raise TypeError(rhs)


def substitute_block(block: Block, env: dict[str, Atom]) -> Block:
    """``substitute`` on every free occurrence in a block (names the block binds
    itself are left alone, as ``map_block`` does); a block that reads none of
    ``env``'s names from outside is returned as it is."""
    if not env or all(v.name not in env for v in free_vars(block)):
        return block
    binds = []
    for b in block.binds:
        binds.append(Bind(b.targets, substitute(b.rhs, env), b.loc))
        if any(t.name in env for t in b.targets):  # bound here: later reads are this block's own
            env = _without(env, b.targets)
    return Block(tuple(binds), _subst(block.result, env))


def _subst(a: Atom, env: dict[str, Atom]) -> Atom:
    return env.get(a.name, a) if isinstance(a, Var) else a


def _without(env: dict[str, Atom], own: Sequence[Var]) -> dict[str, Atom]:
    """``env`` less the names a block binds for itself (loop inputs, parameters)."""
    names = {v.name for v in own}
    return env if names.isdisjoint(env) else {k: a for k, a in env.items() if k not in names}


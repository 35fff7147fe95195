"""What the backward pass returns: only the cotangents asked for (``restrict``),
statically-zero parameter cotangents made real zeros and read-only broadcast
views made arrays (``finish``)."""

from __future__ import annotations

from operator import is_

from ..blocks import result_items, same_or_new, with_branches
from ..ir import Bind, Block, Const, If, MakeTuple, NoneT, Num, Prim, ReverseProgram, TupleT, Var, Zero, kinds
from ..names import Namer


def restrict(prog: ReverseProgram, wrt: frozenset[int] | None) -> ReverseProgram:
    """Keep only the cotangents of the parameters in ``wrt`` (all when None): what
    ``grad(f, argnums)`` needs, so the others are never computed."""
    if wrt is None:
        return prog
    final = prog.backward.binds[-1]
    assert isinstance(final.rhs, MakeTuple) and final.targets == (prog.backward.result,)
    items = tuple(a if i in wrt else Const.literal(None, NoneT()) for i, a in enumerate(final.rhs.items))
    result = Var(final.targets[0].name, TupleT(tuple(a.type for a in items)))  # None where left out
    binds = prog.backward.binds[:-1] + (Bind((result,), MakeTuple(items), final.loc),)
    return ReverseProgram(prog.name, prog.params, prog.forward, prog.ct_in, Block(binds, result))


def finish(prog: ReverseProgram) -> ReverseProgram:
    """Materialise zero parameter cotangents; return writable arrays, not broadcast views."""
    backward = prog.backward
    result = backward.result
    binds = backward.binds
    k = next((i for i in range(len(binds) - 1, -1, -1) if isinstance(result, Var) and binds[i].targets == (result,)), None)
    final = binds[k] if k is not None else None
    if final is None or not isinstance(final.rhs, MakeTuple):
        return prog
    items = []
    made: list[Bind] = []  # the bindings put before the final tuple
    namer = Namer.of(prog)  # (walks the program only when a name is first asked for)

    for p, a in zip(prog.params, final.rhs.items):
        if isinstance(p.type, Num) and p.type.py and not p.type.shape and p.type.differentiable \
                and isinstance(a, Var) and not (isinstance(a.type, Num) and a.type.py):
            v = Var(namer.temp(), p.type)  # a float for a float argument: `return float(x_ct)`
            made.append(Bind((v,), Prim("to_float", (a,))))
            a = v
        if isinstance(a, Zero):
            t = p.type
            if isinstance(t, Num) and t.py:
                a = Const.literal(0.0, t)
            else:
                zv = Var(namer.fresh(f"{p.name}_ct"), t)
                made.append(Bind((zv,), Prim("zeros_like", (p,))))
                a = zv
        items.append(a)
    if not made and all(map(is_, items, final.rhs.items)):  # the final tuple as it was
        block = backward
    else:
        block = Block(binds[:k] + tuple(made) + (Bind(final.targets, MakeTuple(tuple(items)), final.loc),)
                      + binds[k + 1:], result)
    found = kinds(block)  # (remembered: ``static_zeros`` and ``lists_in_place`` ask too)
    if "broadcast_to" not in found:
        materialised = block  # (no view to materialise: no walk)
    else:
        returned = _flowing_into(block, {a.name for a in items if isinstance(a, Var)})
        materialised = _materialise(block, returned)
    if materialised is backward:
        return prog
    return ReverseProgram(prog.name, prog.params, prog.forward, prog.ct_in, materialised)


def _flowing_into(block: Block, names: set[str]) -> set[str]:
    """The variables whose values can be returned as one of ``names`` (through
    the branches of an ``if`` too)."""
    names = set(names)
    for b in reversed(block.binds):
        if isinstance(b.rhs, If) and any(t.name in names for t in b.targets):
            for branch in (b.rhs.then, b.rhs.orelse):
                items = result_items(branch) or ()
                picked = {a.name for t, a in zip(b.targets, items) if t.name in names and isinstance(a, Var)}
                names |= _flowing_into(branch, picked)
                names |= picked
    return names


def _materialise(block: Block, returned: set[str]) -> Block:
    """A read-only broadcast view that would be returned to the user becomes an array."""
    binds = []
    for b in block.binds:
        rhs = b.rhs
        if isinstance(rhs, If):
            b = with_branches(b, rhs, lambda blk: _materialise(blk, returned))
        elif isinstance(rhs, Prim) and rhs.op == "broadcast_to" and b.targets[0].name in returned:
            t = b.targets[0].type
            dtype = (("dtype", t.dtype),) if isinstance(t, Num) else ()
            b = Bind(b.targets, Prim("full", rhs.args, dtype), b.loc)
        binds.append(b)
    return same_or_new(block, binds)

"""Residuals kept only for their shape keep the shape.

Undoing broadcasting against an array whose size is known only at run time
(``sum_to_shape(ct, t8)``) reads nothing of ``t8`` but its shape, yet keeps
``t8`` alive until the backward pass (on a loop's tape: one array per
iteration).  Where the backward block reads a forward array only so (as the
shape ``sum_to`` undoes broadcasting to, or by ``np.shape``), the forward
block records ``t8_shape = np.shape(t8)`` right after ``t8`` is made, and the
backward block reads that (``sum_to_dims(ct, t8_shape)``): the tape keeps a
tuple, the array is freed.
"""

from __future__ import annotations

from dataclasses import replace

from ..blocks import with_branches
from ..ir import Atom, Bind, Block, Loop, Num, Prim, ReverseProgram, Var, bound_vars, kinds, nested_blocks, vars_of
from ..names import Namer
from ..rules import infer
from .structure import rename_deep

#: (primitive, argument position) reading only the argument's shape
_SHAPE_READS = {("sum_to", 1), ("shape", 0)}


def shapes_not_arrays(prog: ReverseProgram) -> ReverseProgram:
    if {op for op, _ in _SHAPE_READS}.isdisjoint(kinds(prog.backward)):
        return prog  # nothing read only for its shape
    forward_vars = {v.name: v for v in (*prog.params, *bound_vars(prog.forward))}
    uses: dict[str, bool] = {}  # forward name -> read only for its shape
    _classify(prog.backward, forward_vars, uses)
    chosen = {n: forward_vars[n] for n, only in uses.items() if only and _run_time_shape(forward_vars[n])}
    if not chosen:
        return prog
    namer = Namer.of(prog)
    shapes = {n: Var(namer.fresh(f"{n}_shape"), infer("shape", [v.type], {})) for n, v in chosen.items()}
    first = tuple(Bind((shapes[p.name],), Prim("shape", (p,))) for p in prog.params if p.name in chosen)
    forward = _record(prog.forward, chosen, shapes)
    env: dict[str, Atom] = {}
    backward = rename_deep(_read_shapes(prog.backward, shapes, env), env)
    return ReverseProgram(prog.name, prog.params, Block(first + forward.binds, forward.result), prog.ct_in, backward)


def _run_time_shape(v: Var) -> bool:
    """An array whose shape is not known when transforming (else it is a literal already)."""
    return isinstance(v.type, Num) and v.type.ndim > 0 and None in v.type.shape


def _classify(block: Block, forward_vars: dict, uses: dict[str, bool]) -> None:
    def read(name: str, shape_only: bool) -> None:
        if name in forward_vars:
            uses[name] = uses.get(name, True) and shape_only

    for b in block.binds:
        rhs = b.rhs
        if isinstance(rhs, Prim):
            for i, a in enumerate(rhs.args):
                if isinstance(a, Var):
                    read(a.name, (rhs.op, i) in _SHAPE_READS)
        else:
            for a in vars_of(rhs):
                read(a.name, False)
            for blk in nested_blocks(rhs):
                _classify(blk, forward_vars, uses)
    if isinstance(block.result, Var):
        read(block.result.name, False)


def _record(block: Block, chosen: dict, shapes: dict) -> Block:
    """The forward block with each chosen array's shape taken right after it is made."""
    binds = []
    for b in block.binds:
        b = with_branches(b, b.rhs, lambda blk: _record(blk, chosen, shapes))
        if isinstance(b.rhs, Loop):  # a carried value's shape at the start of each iteration
            body = b.rhs.body
            made = tuple(Bind((shapes[v.name],), Prim("shape", (v,)), b.loc) for v in b.rhs.carried if v.name in chosen)
            b = Bind(b.targets, replace(b.rhs, body=Block(made + body.binds, body.result)), b.loc)
        binds.append(b)
        binds.extend(Bind((shapes[t.name],), Prim("shape", (t,)), b.loc) for t in b.targets if t.name in chosen)
    return Block(tuple(binds), block.result)


def _read_shapes(block: Block, shapes: dict, env: dict[str, Atom]) -> Block:
    """The backward block reading the recorded shapes; ``np.shape(a)`` of a chosen
    array is dropped and its name goes to ``env`` (renamed to the recorded shape)."""
    binds = []
    for b in block.binds:
        rhs = b.rhs
        if isinstance(rhs, Prim) and rhs.op == "sum_to" and _named(rhs.args[1], shapes):
            b = Bind(b.targets, Prim("sum_to_dims", (rhs.args[0], shapes[rhs.args[1].name]), rhs.params), b.loc)
        elif isinstance(rhs, Prim) and rhs.op == "shape" and _named(rhs.args[0], shapes):
            env[b.targets[0].name] = shapes[rhs.args[0].name]
            continue
        binds.append(with_branches(b, b.rhs, lambda blk: _read_shapes(blk, shapes, env)))
    return Block(tuple(binds), block.result)


def _named(a: Atom, shapes: dict) -> bool:
    return isinstance(a, Var) and a.name in shapes

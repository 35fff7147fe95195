"""Rewrites of array operations: broadcasts sunk through elementwise operations
(``sink_broadcasts``), a sum of outer products made one matrix product
(``outer_sums``), zeros of a static shape made by ``np.zeros(shape)`` (``static_zeros``)."""

from __future__ import annotations

from bisect import bisect_left
from itertools import compress
from operator import attrgetter, not_

from .. import rules
from ..blocks import NESTING, rebound, same_or_new, with_branches
from ..frontend import literal_type
from ..ir import Atom, Bind, Block, Const, If, Loop, LoopBack, Num, Plus, Prim, ReverseProgram, TupleT, Var, kinds
from ..ir.walk import (NESTING_KINDS, binding_reads, flat_reads, known_binding_reads, ops_of, positions,
                       remember_binding_reads)
from ..names import Namer


_ELEMENTWISE = {"add", "sub", "mul", "div", "neg", "select"}
#: what ``_sink`` rewrites or records
_SUNK = _ELEMENTWISE | {"broadcast_to", "expand_dims"}


def sink_broadcasts(prog: ReverseProgram) -> ReverseProgram:
    """Push ``broadcast_to`` down through elementwise operations: ``mul(broadcast_to(s,
    S), y)`` with ``y`` of shape ``S`` is ``mul(s, y)``, and an operation on
    broadcasts of small values is done on the small values, then broadcast.  A
    cotangent that is a broadcast scalar (from ``sum``/``mean``) is thus never
    materialised as a full array unless it has to be."""
    found = kinds(prog.backward)
    if "broadcast_to" not in found:
        return prog  # nothing to sink
    sunk = _sink(prog.backward, {}, Namer.of(prog))
    if sunk is prog.backward:
        return prog  # (nothing sunk: no new program)
    if REMEMBER_KINDS and "expand_dims" not in found and found.isdisjoint(NESTING_KINDS):
        # (``_sink`` of a block without nested blocks keeps each binding, or makes it again with the same
        # primitive, or adds a ``broadcast_to``, which the block has: only an ``expand_dims`` may go.  So the
        # new block is made of what the old one is: remembered as ``kinds`` would find it, without a walk)
        sunk.__dict__.setdefault("_kinds", found)
    return ReverseProgram(prog.name, prog.params, prog.forward, prog.ct_in, sunk)


#: whether ``sink_broadcasts`` remembers the kinds of the block it makes (tests turn it off)
REMEMBER_KINDS = True

#: whether ``outer_sums`` remembers the ``ops_of`` of the block it makes without nested blocks (tests turn it off)
REMEMBER_OPS = True

#: whether ``outer_sums`` remembers the outside reads and the names of the block it makes without nested blocks
#: (tests turn it off)
REMEMBER_NAMES = True


def sink_forward_broadcasts(prog: ReverseProgram) -> ReverseProgram:
    """:func:`sink_broadcasts` in the forward block (forward mode: a tangent that is a
    broadcast of a small one, ``x - means[j]`` with no tangent of ``x``, stays small
    through the products it enters)."""
    if "broadcast_to" not in kinds(prog.forward):
        return prog  # nothing to sink
    sunk = _sink(prog.forward, {}, Namer.of(prog))
    return prog if sunk is prog.forward else ReverseProgram(prog.name, prog.params, sunk, prog.ct_in, prog.backward)


def _sink(block: Block, small: dict[str, Atom], namer: Namer) -> Block:
    small = dict(small)  # variable bound to broadcast_to(src, shape) -> src
    out: list[Bind] = []
    for b in block.binds:
        rhs = b.rhs
        if type(rhs) is Prim:
            if rhs.op not in _SUNK or not small and rhs.op != "broadcast_to":
                out.append(b)  # (the most common: nothing to sink)
                continue
            if rhs.op != "broadcast_to":  # (the next most common: no broadcast read, ``_reads_any`` written out)
                for a in rhs.args:
                    if type(a) is Var and a.name in small:
                        break
                else:
                    out.append(b)
                    continue
        elif isinstance(rhs, (If, Loop, LoopBack)):
            out.append(with_branches(b, rhs, lambda blk: _sink(blk, small, namer)))
            continue
        if type(rhs) is not Prim:
            pass  # (nothing to sink)
        elif rhs.op == "broadcast_to":
            src = rhs.args[0]
            small[b.targets[0].name] = small.get(src.name, src) if isinstance(src, Var) else src
        elif not _reads_any(rhs.args, small) or not _known_shape(b.targets[0]):
            pass  # no broadcast read; or a length known only at run time: no constant shape to broadcast to
        elif (isinstance(rhs, Prim) and rhs.op == "expand_dims" and isinstance(rhs.args[0], Var)
              and rhs.args[0].name in small and _is_scalar(small[rhs.args[0].name])):
            # a broadcast scalar with an axis inserted is the scalar broadcast to the new shape
            src, target = small[rhs.args[0].name], b.targets[0]
            out.append(Bind(b.targets, Prim("broadcast_to", (src, _shape_const(target))), b.loc))
            small[target.name] = src
            continue
        elif isinstance(rhs, Prim) and rhs.op in _ELEMENTWISE:  # (reading a broadcast)
            args = tuple(small.get(a.name, a) if isinstance(a, Var) else a for a in rhs.args)
            target = b.targets[0]
            t = rules.infer(rhs.op, [a.type for a in args], dict(rhs.params))
            if t.shape == target.type.shape:  # type: ignore[union-attr]
                out.append(Bind(b.targets, Prim(rhs.op, args, rhs.params), b.loc))
                continue
            reduced = Var(namer.temp(), t)
            out.append(Bind((reduced,), Prim(rhs.op, args, rhs.params), b.loc))
            out.append(Bind(b.targets, Prim("broadcast_to", (reduced, _shape_const(target))), b.loc))
            small[target.name] = reduced
            continue
        out.append(b)
    return same_or_new(block, out)


def _reads_any(args: tuple[Atom, ...], names: dict[str, Atom]) -> bool:
    for a in args:
        if type(a) is Var and a.name in names:
            return True
    return False


def _known_shape(v: Var) -> bool:
    return not (isinstance(v.type, Num) and None in v.type.shape)


def _kept(binds: list[Bind], old: tuple[Bind, ...], outer_at: list[int], outers: dict[str, Bind], summed: set[str],
          sum_at: list[int], extra: list[int]) -> list[bool]:
    """Which of ``binds`` (``outer_sums``'s new bindings) are kept: all but the outer products summed, each
    copied as it was from ``old`` (where: ``outer_at``), and in ``binds`` where it was plus the bindings made
    in place of the sums before it, less those sums (``sum_at``, ``extra``): found without a look at each binding."""
    keep = [True] * len(binds)
    for at in outer_at:
        name = old[at].targets[0].name
        if name in summed:
            k = bisect_left(sum_at, at)
            new = at + (extra[k - 1] if k else 0)
            if new >= len(binds) or binds[new] is not outers[name]:  # (not expected: found by its identity, one look at each binding)
                left_out = {id(outers[n]) for n in summed}
                return list(map(not_, map(left_out.__contains__, map(id, binds))))
            keep[new] = False
    return keep


def _is_scalar(a: Atom) -> bool:
    return isinstance(a.type, Num) and a.type.shape == ()


def _shape_const(v: Var) -> Const:
    shape = tuple(v.type.shape)  # type: ignore[union-attr]
    return Const.literal(shape, TupleT(tuple(Num((), "int64", True, d) for d in shape)))


def static_zeros(block: Block) -> Block:
    """Zeros of a shape known when transforming are made by ``np.zeros(shape)``,
    not ``np.zeros_like(x)`` (a fifth of the cost for a small array)."""
    if "zeros_like" not in kinds(block) and "scatter" not in kinds(block):
        return block  # (nothing to rewrite; the kinds are remembered for ``lists_in_place``)
    binds = []
    for b in block.binds:
        rhs = b.rhs
        if type(rhs) is Prim and rhs.op != "zeros_like" and rhs.op != "scatter":
            binds.append(b)  # (the most common: as it is)
            continue
        if isinstance(rhs, Prim) and rhs.op in ("zeros_like", "scatter"):
            like = rhs.args[0 if rhs.op == "zeros_like" else 1]
            shape = _static_shape(like.type)
            if shape is not None and rhs.op == "zeros_like":
                dtype = rhs.param("dtype") or like.type.dtype  # type: ignore[union-attr]
                rhs = Prim("zeros", tuple(Const.literal(d, literal_type(d)) for d in shape), (("dtype", dtype),))
            elif shape is not None:
                rhs = Prim(rhs.op, rhs.args, tuple(sorted(rhs.params + (("zeros", (shape, like.type.dtype)),))))  # type: ignore[union-attr]
        binds.append(with_branches(b, rhs, static_zeros) if type(rhs) in NESTING else rebound(b, rhs))
    return same_or_new(block, binds)


def _static_shape(t: object) -> tuple[int, ...] | None:
    if isinstance(t, Num) and t.shape and all(isinstance(d, int) for d in t.shape):
        return tuple(int(d) for d in t.shape)  # type: ignore[arg-type]
    return None


#: the fewest outer products a sum must have to be made one matrix product
_OUTER_SUM_MIN = 4

#: what ``outer_sums`` looks at: sums and the right-hand sides with blocks inside; and the outer products
_LOOKED_AT = NESTING_KINDS | {"Plus"}
_FOUND = _LOOKED_AT | {"outer"}

_NAME = attrgetter("name")  # (a variable's name, a constant's or None)


def outer_sums(block: Block, namer: Namer) -> Block:
    """A sum of outer products is one matrix product: ``outer(u_1, v_1) + ... +
    outer(u_n, v_n)`` is ``stack(u_1..u_n).T @ stack(v_1..v_n)`` (the cotangent of
    a weight matrix applied at many places, as in a recursive model): two stacks
    and one product instead of n products and n - 1 sums of matrices; other terms of
    the sum are added to the product.  The outer products such a sum read (nothing
    else reads them) are left out too."""
    all_binds = block.binds
    ops = ops_of(block)
    found = positions(ops, _FOUND)  # (one look at the ops for both: the outer products, and what is looked at)
    outer_at = [at for at in found if ops[at] == "outer"]
    outers = {b.targets[0].name: b for b in [all_binds[i] for i in outer_at]
              if all(isinstance(a.type, Num) and a.type.ndim == 1 for a in b.rhs.args)}
    # (how often the bindings read each name, not copied: read only; the block's result counted where read)
    reads = known_binding_reads(block)
    result = block.result.name if isinstance(block.result, Var) else None
    binds: list[Bind] = []
    made_ops: list[str] = []  # what each binding of ``binds`` is made of (``ops_of``), where the block is flat
    summed: set[str] = set()  # the outer products made one matrix product
    replaced: list[Bind] = []  # the sums made a matrix product, and the outer products they read
    made_here: list[Bind] = []  # the bindings made for them
    flat = True
    done = 0  # (the bindings before this were copied)
    sum_at: list[int] = []  # where each sum made a matrix product was, in ``block``
    extra: list[int] = []  # the bindings made in place of those sums so far, less the sums (in ``binds``)
    # (the bindings with blocks inside, and the sums of enough terms reading an outer product of those (one look
    # at each such sum's names, in C): any other, the most common, is copied as it is)
    names = outers.keys()
    looked = [at for at in found if (op := ops[at]) != "outer" and (
              op != "Plus" or (len(items := all_binds[at].rhs.items) >= _OUTER_SUM_MIN  # type: ignore[union-attr]
                               and not names.isdisjoint(map(_NAME, items))))]  # (none where no outer is)
    if not looked:
        return block
    for at in looked:
        binds.extend(all_binds[done:at])
        made_ops.extend(ops[done:at])
        done = at + 1
        b = all_binds[at]
        rhs = b.rhs
        if type(rhs) in NESTING:
            b = with_branches(b, rhs, lambda blk: outer_sums(blk, namer))
            flat = False
        rhs = b.rhs
        mine = [a for a in rhs.items if isinstance(a, Var) and a.name in outers
                and reads[a.name] + (a.name == result) == 1] if isinstance(rhs, Plus) else []  # (``use_counts`` 1)
        if len(mine) < _OUTER_SUM_MIN:
            binds.append(b)
            made_ops.append(ops[at])
            continue
        found = [outers[a.name].rhs for a in mine]
        taken = {a.name for a in mine}
        others = tuple(a for a in rhs.items if not (type(a) is Var and a.name in taken))  # type: ignore[union-attr]
        target = b.targets[0] if not others else Var(namer.temp(), b.targets[0].type)
        summed.update(a.name for a in mine)
        replaced.append(b)
        replaced.extend([outers[a.name] for a in mine])  # (and the outer products it read)
        first = len(binds)
        us, vs = (tuple(p.args[k] for p in found) for k in (0, 1))
        made = []
        for op, args, params in (("stack", us, {"axis": 0}), ("stack", vs, {"axis": 0})):
            v = Var(namer.temp(), rules.infer(op, [a.type for a in args], params))
            made.append(v)
            binds.append(Bind((v,), Prim(op, args, tuple(sorted(params.items()))), b.loc))
        ut = Var(namer.temp(), rules.infer("transpose", [made[0].type], {}))
        binds.append(Bind((ut,), Prim("transpose", (made[0],)), b.loc))
        binds.append(Bind((target,), Prim("matmul", (ut, made[1])), b.loc))
        made_ops.extend(("stack", "stack", "transpose", "matmul"))
        if others:  # the other terms (a function's cotangents of the weight: astad.ad.calls) added to the product
            binds.append(Bind(b.targets, Plus((*others, target)), b.loc))
            made_ops.append("Plus")
        made_here.extend(binds[first:])
        sum_at.append(at)
        extra.append((extra[-1] if extra else 0) + len(binds) - first - 1)
    binds.extend(all_binds[done:])
    made_ops.extend(ops[done:])
    if not summed:
        return same_or_new(block, binds)
    keep = _kept(binds, all_binds, outer_at, outers, summed, sum_at, extra)
    out = Block(tuple(compress(binds, keep)), block.result)
    if flat:  # what the new block's bindings read: the old block's, less what the removed ones read, plus the new ones'
        if REMEMBER_OPS:  # (and what each is made of, as ``ops_of`` would find it: ``shared_products`` asks)
            out.__dict__.setdefault("_ops", list(compress(made_ops, keep)))
        reads = binding_reads(block)
        lowered = flat_reads(replaced)
        reads.subtract(lowered)
        reads.update(flat_reads(made_here))
        remember_binding_reads(out, reads, lowered)
        if REMEMBER_NAMES:
            # (what it reads from outside is what the old block read: the operands of the outer products are read
            # by the stacks now, the other terms by the sum; its names are the old block's less the outer
            # products' (each read only by its sum), plus the names made here)
            memo, known = out.__dict__, block.__dict__
            if "_outside_reads" in known:
                memo.setdefault("_outside_reads", known["_outside_reads"])
            if "_program_names" in known:
                memo.setdefault("_program_names", (known["_program_names"] - summed)
                                | {t.name for b in made_here for t in b.targets})
    return out

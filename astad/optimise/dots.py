"""Tangent sums of products as dot products (``dot_sums``): in the forward program,
``sum(u * c * v)`` of two vectors ``u``, ``v`` of one shape and scalars ``c`` is
``c * (u @ v)``: one BLAS dot instead of a product array (and one more per
scalar) and its sum.  ``(x_t * e).sum()`` of a logsumexp becomes ``x_t @ e``,
``(A @ w_t * 2 * r).sum()`` of a least-squares loss ``2 * (A @ w_t @ r)``.

Only tangent arithmetic is rewritten (the primal's rounding is unchanged), only
a full ``sum`` of float vectors, and only through products read once (what the
rewrite leaves unread, ``dce`` removes)."""

from __future__ import annotations

from .. import rules
from ..blocks import with_branches
from ..ir import Atom, Bind, Block, Function, Num, Prim, Var, all_binds, use_counts
from ..names import Namer, program_names
from .factor import tangent_names


def dot_sums(fn: Function, n_primal: int) -> Function:
    """``fn``: a forward program whose parameters after the first ``n_primal`` are tangents."""
    tainted = tangent_names(fn, fn.params[n_primal:])
    counts = use_counts(fn.body)
    products = {b.targets[0].name: b.rhs for b in all_binds(fn.body) if len(b.targets) == 1
                and isinstance(b.rhs, Prim) and b.rhs.op == "mul" and counts[b.targets[0].name] == 1}
    namer = Namer.adding_to(program_names(fn), fn.name)

    def factors(a: Atom) -> list[Atom]:
        rhs = products.get(a.name) if isinstance(a, Var) else None
        return [f for x in rhs.args for f in factors(x)] if rhs is not None else [a]

    def block(blk: Block) -> Block:
        out: list[Bind] = []
        for b in blk.binds:
            b = with_branches(b, b.rhs, block)
            new = _as_dot(b, factors, namer) if b.targets[0].name in tainted and len(b.targets) == 1 else None
            out.extend(new or [b])
        return Block(tuple(out), blk.result)

    return Function(fn.name, fn.params, block(fn.body))


def _vector(a: Atom) -> bool:
    t = getattr(a, "type", None)
    return isinstance(t, Num) and len(t.shape) == 1 and t.dtype.startswith("float")


def _scalar(a: Atom) -> bool:
    t = getattr(a, "type", None)
    return isinstance(t, Num) and t.shape == ()


def _as_dot(b: Bind, factors, namer: Namer) -> list[Bind] | None:
    rhs = b.rhs
    if not isinstance(rhs, Prim) or rhs.op != "sum" or dict(rhs.params) != {"axis": None, "keepdims": False}:
        return None
    fs = factors(rhs.args[0])
    vectors = [f for f in fs if _vector(f)]
    scalars = [f for f in fs if _scalar(f)]
    if len(fs) < 2 or len(vectors) != 2 or len(vectors) + len(scalars) != len(fs) or \
            vectors[0].type.shape != vectors[1].type.shape or None in vectors[0].type.shape:
        return None
    binds: list[Bind] = []

    def prim(op: str, *args: Atom) -> Atom:
        var = Var(namer.temp(), rules.infer(op, [a.type for a in args], {}))
        binds.append(Bind((var,), Prim(op, args), b.loc))
        return var

    acc = prim("matmul", *vectors)
    for s in scalars:
        acc = prim("mul", s, acc)
    if acc.type != b.targets[0].type:
        return None
    binds[-1] = Bind(b.targets, binds[-1].rhs, b.loc)
    return binds

"""Tangent sums of products as dot products (``dot_sums``): in the forward program,
``sum(u * c * v)`` of two vectors ``u``, ``v`` of one shape and scalars ``c`` is
``c * (u @ v)``: one BLAS dot instead of a product array (and one more per
scalar) and its sum.  ``(x_t * e).sum()`` of a logsumexp becomes ``x_t @ e``,
``(A @ w_t * 2 * r).sum()`` of a least-squares loss ``2 * (A @ w_t @ r)``.

Constant factors leave a sum the same way: ``0.5 * (2.0 * z_t * z).sum(axis=1)``
(the tangent of ``0.5 * np.sum(z * z, axis=1)``) is ``(z_t * z).sum(axis=1)``.
A sum over the last axis of matrices times vectors broadcast along it is a
matrix-vector product: ``(u * z * w).sum(axis=1)`` of ``u``, ``z`` of shape
``(n, d)`` and ``w`` of shape ``(d,)`` is ``(u * z) @ w`` (a GMM's tangent).

Only tangent arithmetic is rewritten (the primal's rounding is unchanged), a
dot product only of a full ``sum`` of float vectors, and only through products
read once (what the rewrite leaves unread, ``dce`` removes)."""

from __future__ import annotations

from typing import Callable

from .. import rules
from ..blocks import same_or_new, with_branches
from ..ir import Atom, Bind, Block, Const, Function, Num, Prim, Var, all_binds, use_counts
from ..names import Namer
from .factor import tangent_names


def dot_sums(fn: Function, n_primal: int) -> Function:
    """``fn``: a forward program whose parameters after the first ``n_primal`` are tangents."""
    tainted = tangent_names(fn, fn.params[n_primal:])
    counts = use_counts(fn.body)
    once = {b.targets[0].name: b.rhs for b in all_binds(fn.body) if len(b.targets) == 1
            and isinstance(b.rhs, Prim) and counts[b.targets[0].name] == 1}
    products = {n: rhs for n, rhs in once.items() if rhs.op == "mul"}
    namer = Namer.of(fn)

    def factors(a: Atom) -> list[Atom]:
        """The factors of a product of products, left to right (a loop: chains run thousands deep)."""
        out: list[Atom] = []
        todo = [a]
        while todo:
            x = todo.pop()
            rhs = products.get(x.name) if isinstance(x, Var) else None
            if rhs is None:
                out.append(x)
            else:
                todo.extend(reversed(rhs.args))
        return out

    def block(blk: Block) -> Block:
        out: list[Bind] = []
        for b in blk.binds:
            b = with_branches(b, b.rhs, block)
            tangent = len(b.targets) == 1 and b.targets[0].name in tainted
            new = (_as_dot(b, factors, namer) or _as_matvec(b, factors, namer) or
                   _constants_out(b, once, factors, namer)) if tangent else None
            out.extend(new or [b])
        return same_or_new(blk, out)

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


def _number(a: Atom) -> bool:
    return isinstance(a, Const) and a.name is None and type(a.value) in (float, int) and isinstance(a.type, Num) \
        and a.type.shape == ()


def _constants_out(b: Bind, once: dict, factors, namer: Namer) -> list[Bind] | None:
    """``c1 * sum(c2 * x * ...)`` -> ``(c1 * c2) * sum(x * ...)``, no product when ``c1 * c2 == 1``."""
    rhs = b.rhs
    if not isinstance(rhs, Prim) or rhs.op != "mul" or not any(map(_number, rhs.args)):
        return None
    c1, total = rhs.args if _number(rhs.args[0]) else rhs.args[::-1]
    inner = once.get(total.name) if isinstance(total, Var) else None
    if inner is None or inner.op != "sum":
        return None
    fs = factors(inner.args[0])
    numbers = [f for f in fs if _number(f)]
    rest = [f for f in fs if not _number(f)]
    if not numbers or not rest:
        return None
    binds, prim = _emitter(b, namer)

    acc = _summed(rest, inner.params, prim)
    scale = c1.value
    for n in numbers:
        scale = scale * n.value
    if scale != 1:
        acc = prim("mul", (Const.literal(float(scale), Num((), "float64", py=True)), acc))
    if acc.type != b.targets[0].type:
        return None
    binds[-1] = Bind(b.targets, binds[-1].rhs, b.loc)
    return binds


def _matrix(a: Atom) -> bool:
    t = getattr(a, "type", None)
    return isinstance(t, Num) and len(t.shape) == 2 and t.dtype.startswith("float") and None not in t.shape


def _matvec_parts(fs: list[Atom], params: tuple) -> tuple[list[Atom], list[Atom]] | None:
    """``(matrices, vectors)`` of a product summed over its last axis whose factors are matrices of
    one shape ``(n, d)``, vectors of shape ``(d,)`` (at least one of each) and scalars (put with the vectors)."""
    if dict(params) not in ({"axis": 1, "keepdims": False}, {"axis": -1, "keepdims": False}):
        return None
    matrices = [f for f in fs if _matrix(f)]
    if not matrices or any(m.type.shape != matrices[0].type.shape for m in matrices):
        return None
    width = matrices[0].type.shape[1]
    vectors = [f for f in fs if _vector(f) and f.type.shape == (width,)]
    scalars = [f for f in fs if _scalar(f)]
    if not vectors or len(matrices) + len(vectors) + len(scalars) != len(fs):
        return None
    return matrices, vectors + scalars


def _summed(fs: list[Atom], params: tuple, prim) -> Atom:
    """``sum(f1 * f2 * ..., **params)`` bound by ``prim(op, args, params)``: a matrix-vector
    product where :func:`_matvec_parts` finds one, else the product and its sum."""
    parts = _matvec_parts(fs, params)
    if parts is None:
        acc = fs[0]
        for f in fs[1:]:
            acc = prim("mul", (acc, f))
        return prim("sum", (acc,), params)
    products = []
    for group in parts:
        acc = group[0]
        for f in group[1:]:
            acc = prim("mul", (acc, f))
        products.append(acc)
    return prim("matmul", tuple(products))


def _as_matvec(b: Bind, factors, namer: Namer) -> list[Bind] | None:
    rhs = b.rhs
    if not isinstance(rhs, Prim) or rhs.op != "sum":
        return None
    fs = factors(rhs.args[0])
    if len(fs) < 2 or _matvec_parts(fs, rhs.params) is None:
        return None
    binds, prim = _emitter(b, namer)

    acc = _summed(fs, rhs.params, prim)
    if acc.type != b.targets[0].type:
        return None
    binds[-1] = Bind(b.targets, binds[-1].rhs, b.loc)
    return binds


def _emitter(b: Bind, namer: Namer) -> tuple[list[Bind], Callable[..., Atom]]:
    """A list of new bindings (at ``b``'s line) and ``prim(op, args, params)``, which
    binds a fresh temporary to a primitive there and returns it."""
    binds: list[Bind] = []

    def prim(op: str, args: tuple[Atom, ...], params: tuple = ()) -> Atom:
        var = Var(namer.temp(), rules.infer(op, [a.type for a in args], dict(params)))
        binds.append(Bind((var,), Prim(op, args, params), b.loc))
        return var

    return binds, prim

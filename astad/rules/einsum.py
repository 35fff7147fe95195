"""Contractions: ``np.einsum`` (any subscripts: implicit output, ``...``,
repeated indices, size-1 broadcasting) and the products written through it,
``np.tensordot``, ``np.inner``, ``np.vdot`` and ``np.kron``.

Each is linear in every operand: the JVP sums, over the operands, the same
contraction with one operand replaced by its tangent; the VJP of operand k is
the contraction of the cotangent with the other operands that gives operand k's
subscripts, ``np.einsum('ik,jk->ij', ct, b)`` for ``'ij,jk->ik'``.  Three
things einsum cannot say directly are added around it:

* a letter repeated in operand k (``'ii->i'``, the diagonal): its later
  occurrences get fresh letters tied to the first by an identity matrix
  operand, ``np.einsum('i,ij->ij', ct, np.eye(3))``, which scatters the
  cotangent back onto the diagonal;
* a letter only operand k has (``'ij->i'``, summed out): the result lacks that
  axis; it is put back by ``np.expand_dims`` and ``np.broadcast_to``;
* an axis of size 1 broadcast against a larger one (``...`` or a named letter):
  the cotangent is summed over it (keepdims).
"""

from __future__ import annotations

import functools
import string
from typing import Any, Optional, Sequence

import libcst as cst
import numpy as np

from .. import pyexpr as px
from ..ir import Atom, Num, Type
from .derive import add_all, bilinear, like_scalar
from .shape import reshape_like
from .table import DerivativeKind, Primitive, ShapeError, num, register
from .types import fmt_shape

RULE = DerivativeKind.RULE
LETTERS = string.ascii_letters


# --------------------------------------------------------------------------- subscripts


@functools.lru_cache(maxsize=None)
def parse(subscripts: str, ndims: tuple[int, ...]) -> tuple[tuple[str, ...], str]:
    """The subscripts of each operand and of the output, made explicit: ``...``
    replaced by letters the subscripts do not use, the implicit output (the
    broadcast ``...`` axes, then the letters used once, sorted) written out."""
    spec = subscripts.replace(" ", "")
    lhs, arrow, out = spec.partition("->")
    ins = lhs.split(",")
    if len(ins) != len(ndims):
        raise ShapeError(f"einsum: the subscripts {subscripts!r} name {len(ins)} operand(s), {len(ndims)} given")
    for s in ins + ([out] if arrow else []):
        named = s.replace("...", "")
        if s.count("...") > 1 or set(named) - set(LETTERS):
            raise ShapeError(f"einsum: invalid subscripts {subscripts!r}",
                             "letters a-z A-Z, one `...` per operand at most, `->` before the output")
    free = [c for c in LETTERS if c not in spec]
    lengths = []
    for s, nd in zip(ins, ndims):
        named = len(s.replace("...", ""))
        if ("..." in s and named > nd) or ("..." not in s and named != nd):
            raise ShapeError(f"einsum: the subscripts {s!r} do not fit an operand of dimension {nd}")
        lengths.append(nd - named if "..." in s else 0)
    ell = "".join(free[:max(lengths, default=0)])
    ins = [s.replace("...", ell[len(ell) - k:]) for s, k in zip(ins, lengths)]
    if arrow:
        if "..." not in out and ell:
            raise ShapeError(f"einsum: the output of {subscripts!r} needs `...` for the broadcast axes")
        out = out.replace("...", ell)
    else:
        once = sorted(c for c in set("".join(ins)) - set(ell) if "".join(ins).count(c) == 1)
        out = ell + "".join(once)
    if len(set(out)) != len(out) or set(out) - set("".join(ins)):
        raise ShapeError(f"einsum: output subscripts of {subscripts!r} must be distinct letters of the operands")
    return tuple(ins), out


def letter_sizes(ins: Sequence[str], shapes: Sequence[tuple]) -> dict[str, Any]:
    """Each letter's size after broadcasting (None: unknown)."""
    sizes: dict[str, Any] = {}
    for s, shape in zip(ins, shapes):
        own: dict[str, Any] = {}
        for c, d in zip(s, shape):
            if c in own and d != own[c]:
                raise ShapeError(f"einsum: the repeated index {c!r} has sizes {own[c]} and {d} in one operand")
            own[c] = d
            if c not in sizes:  # (not seen yet: a size 0 stays 0, as in numpy)
                sizes[c] = d
                continue
            seen = sizes[c]
            if d is None or seen is None:
                sizes[c] = None if 1 not in (d, seen) else (seen if d == 1 else d)
            elif 1 not in (d, seen) and d != seen:
                raise ShapeError(f"einsum: index {c!r} has sizes {seen} and {d}; shapes "
                                 + ", ".join(fmt_shape(s) for s in shapes) + " do not fit")
            elif seen == 1:
                sizes[c] = d
    return sizes


def _einsum_infer(ts: list[Type], params: dict) -> Type:
    xs = [num(t) for t in ts]
    ins, out = parse(params["subscripts"], tuple(x.ndim for x in xs))
    sizes = letter_sizes(ins, [x.shape for x in xs])
    return Num(tuple(sizes[c] for c in out), np.result_type(*[x.dtype for x in xs]).name)


def _emit_einsum(a: list, ps: dict) -> Any:
    optimize = ps.get("optimize")
    kw = {"optimize": cst.SimpleString(repr(optimize)) if isinstance(optimize, str) else px.literal(optimize)} if optimize else {}
    return px.call("np.einsum", [cst.SimpleString(repr(ps["subscripts"])), *a], **kw)


# --------------------------------------------------------------------------- the derivative rules


def contract_vjp(b: Any, ins: Sequence[str], out: str, operands: Sequence[Atom], ct: Atom, k: int,
                 optimize: Any = False, broadcasting: bool = True) -> Atom:
    """The cotangent of operand ``k`` of the contraction ``ins -> out`` (explicit subscripts);
    ``broadcasting``: the operands' axes may broadcast against each other (einsum's may, tensordot's not)."""
    x = operands[k]
    shape = num(x.type).shape
    sizes = letter_sizes(ins, [num(o.type).shape for o in operands])
    used = "".join(ins)
    last = max(used, default="a")
    unused = iter(c for c in sorted(LETTERS, key=lambda c: (c <= last, c)) if c not in used)  # 'ii->i': j
    target, terms = [], [(ct, out)] + [(o, s) for j, (o, s) in enumerate(zip(operands, ins)) if j != k]
    for i, c in enumerate(ins[k]):
        if c in ins[k][:i]:  # a repeated index: a fresh letter tied to the first by the identity
            fresh = next(unused)
            n = shape[i] if shape[i] is not None else b.prim("dim", x, axis=i)
            terms.append((b.prim("eye", n if not isinstance(n, int) else b.const(n)), c + fresh))
            c = fresh
        target.append(c)
    have = set("".join(s for _, s in terms))
    shared = set("".join(s for j, s in enumerate(ins) if j != k))  # letters another operand broadcasts against
    if broadcasting and _sizes_at_run_time(terms, target, shape, shared):
        # which axes broadcast is known only at run time (x[x > 1] of one entry against three): a
        # term of ones shaped like operand k gives every letter its broadcast size, summed down then
        terms.append((b.prim("ones_like", x), "".join(target)))
        return like_scalar(b, b.prim("sum_to", _einsum_of(b, terms, "".join(target), optimize), x), x)
    kept = "".join(c for c in target if c in have)
    v = _einsum_of(b, terms, kept, optimize)
    broadcast = tuple(i for i, c in enumerate(kept) if shape[target.index(c)] == 1 and sizes.get(c, 1) != 1)
    if broadcast:
        v = b.prim("sum", v, axis=broadcast if len(broadcast) != 1 else broadcast[0], keepdims=True)
    missing = tuple(i for i, c in enumerate(target) if c not in have)
    if missing:
        v = b.prim("expand_dims", v, axis=missing if len(missing) != 1 else missing[0])
    # a letter of size 1 in every other term but not in operand k ('abc,abc->b' of shapes (1, 3, 1)
    # and (2, 1, 3)): the contraction gives size 1 there, broadcast back to operand k's
    term_sizes = letter_sizes([s for _, s in terms], [num(a.type).shape for a, _ in terms])
    if missing or any(term_sizes.get(c) == 1 and shape[i] != 1 for i, c in enumerate(target) if c in have):
        v = b.prim("broadcast_to", v, b.const(tuple(shape)) if None not in shape else b.prim("shape", x))
    return like_scalar(b, v, x)


def _sizes_at_run_time(terms: list[tuple[Atom, str]], target: list[str], shape: tuple, shared: set) -> bool:
    """Does a letter of operand k (``target``, ``shape``) shared with another operand have a size
    known only at run time, in operand k or, facing a size other than 1, in the others?"""
    sizes = letter_sizes([s for _, s in terms], [num(a.type).shape for a, _ in terms])
    return any(shape[i] is None or (sizes.get(c) is None and shape[i] != 1) for i, c in enumerate(target) if c in shared)


def _einsum_of(b: Any, terms: list[tuple[Atom, str]], out: str, optimize: Any) -> Atom:
    if len(terms) == 1 and terms[0][1] == out:
        return terms[0][0]
    subscripts = ",".join(s for _, s in terms) + "->" + out
    params = {"subscripts": subscripts, **({"optimize": optimize} if optimize else {})}
    return b.prim("einsum", *[a for a, _ in terms], **params)


def _einsum_jvp(b, p, out, ts):
    params = dict(p.params)
    terms = [b.prim("einsum", *[t if j == k else a for j, a in enumerate(p.args)], **params)
             for k, t in enumerate(ts) if t is not None]
    return add_all(b, terms)


def _einsum_vjp(b, p, out, ct):
    ins, o = parse(p.param("subscripts"), tuple(num(a.type).ndim for a in p.args))
    return [contract_vjp(b, ins, o, p.args, ct, k, p.param("optimize", False)) if num(a.type).differentiable else None
            for k, a in enumerate(p.args)]


# --------------------------------------------------------------------------- tensordot, inner, vdot: named contractions


def tensordot_subscripts(nda: int, ndb: int, axes: tuple[tuple[int, ...], tuple[int, ...]]) -> tuple[tuple[str, str], str]:
    ax_a = [a % nda if nda else a for a in axes[0]]
    ax_b = [a % ndb if ndb else a for a in axes[1]]
    sa = LETTERS[:nda]
    sb = list(LETTERS[nda:nda + ndb])
    for i, j in zip(ax_a, ax_b):
        sb[j] = sa[i]
    out = "".join(c for i, c in enumerate(sa) if i not in ax_a) + "".join(c for j, c in enumerate(sb) if j not in ax_b)
    return (sa, "".join(sb)), out


def norm_tensordot_axes(axes: Any, nda: int, ndb: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """numpy's ``axes``: an int n (the last n of ``a`` with the first n of ``b``) or a pair of axis lists."""
    if isinstance(axes, int):
        if not 0 <= axes <= min(nda, ndb):
            raise ShapeError(f"tensordot: axes={axes} does not fit arrays of dimensions {nda} and {ndb}")
        return tuple(range(nda - axes, nda)), tuple(range(axes))
    try:
        xa, xb = axes
    except (TypeError, ValueError):
        raise ShapeError(f"tensordot: axes={axes!r} is neither an int nor a pair", "axes=2 or axes=([1, 2], [0, 1])") from None
    xa = (xa,) if isinstance(xa, int) else tuple(xa)
    xb = (xb,) if isinstance(xb, int) else tuple(xb)
    if len(xa) != len(xb):
        raise ShapeError("tensordot: the two lists of axes have different lengths")
    for ax, nd in ((xa, nda), (xb, ndb)):
        for a in ax:
            if not -nd <= a < nd:
                raise ShapeError(f"tensordot: axis {a} is out of bounds for dimension {nd}")
    return tuple(a % nda for a in xa), tuple(a % ndb for a in xb)


def _tensordot_parse(p_or_ts: Any, params: dict) -> tuple[tuple[str, str], str]:
    a, c = (num(t) for t in p_or_ts)
    return tensordot_subscripts(a.ndim, c.ndim, norm_tensordot_axes(params["axes"], a.ndim, c.ndim))


def _inner_parse(ts: Any, params: dict) -> tuple[tuple[str, str], str]:
    a, c = (num(t) for t in ts)
    if a.ndim == 0 or c.ndim == 0:
        raise ShapeError("np.inner of a scalar: write a * b")
    return tensordot_subscripts(a.ndim, c.ndim, ((a.ndim - 1,), (c.ndim - 1,)))


def _named_infer(parse_: Any) -> Any:
    def infer(ts: list[Type], params: dict) -> Type:
        ins, out = parse_(ts, params)
        xs = [num(t) for t in ts]
        for c in set(ins[0]) & set(ins[1]):
            da, db = xs[0].shape[ins[0].index(c)], xs[1].shape[ins[1].index(c)]
            if None not in (da, db) and da != db:
                raise ShapeError(f"shapes {fmt_shape(xs[0].shape)} and {fmt_shape(xs[1].shape)} are not aligned ({da} != {db})")
        sizes = letter_sizes(ins, [x.shape for x in xs])
        return Num(tuple(sizes[c] for c in out), np.result_type(*[x.dtype for x in xs]).name)

    return infer


def _named_vjp(parse_: Any) -> Any:
    def vjp(b, p, out, ct):
        ins, o = parse_([a.type for a in p.args], dict(p.params))
        return [contract_vjp(b, ins, o, p.args, ct, k, broadcasting=False) if num(a.type).differentiable else None
                for k, a in enumerate(p.args)]

    return vjp


def _vdot_infer(ts: list[Type], params: dict) -> Type:
    a, c = num(ts[0]), num(ts[1])
    if a.known_shape and c.known_shape and int(np.prod(a.shape)) != int(np.prod(c.shape)):
        raise ShapeError(f"np.vdot needs arrays of one size, not {fmt_shape(a.shape)} and {fmt_shape(c.shape)}")
    return Num((), np.result_type(a.dtype, c.dtype).name)


def _vdot_vjp(b, p, out, ct):
    a, c = p.args
    return [like_scalar(b, b.prim("mul", ct, reshape_like(b, c, a)), a), like_scalar(b, b.prim("mul", ct, reshape_like(b, a, c)), c)]


# --------------------------------------------------------------------------- kron: an outer product, interleaved


def _kron_shapes(ts: Sequence[Type]) -> tuple[tuple, tuple]:
    a, c = num(ts[0]), num(ts[1])
    nd = max(a.ndim, c.ndim)
    sa, sc = (1,) * (nd - a.ndim) + a.shape, (1,) * (nd - c.ndim) + c.shape
    if None in sa or None in sc:
        raise ShapeError("np.kron needs shapes known when transforming")
    return sa, sc


def _kron_infer(ts: list[Type], params: dict) -> Type:
    sa, sc = _kron_shapes(ts)
    return Num(tuple(x * y for x, y in zip(sa, sc)), np.result_type(num(ts[0]).dtype, num(ts[1]).dtype).name)


def _kron_vjp(b, p, out, ct):
    """``ct`` read as ``(a0, b0, a1, b1, ...)`` and contracted with the other factor."""
    sa, sc = _kron_shapes([a.type for a in p.args])
    nd = len(sa)
    split = b.prim("reshape", ct, *[b.const(d) for pair in zip(sa, sc) for d in pair])
    la, lc = LETTERS[:nd], LETTERS[nd:2 * nd]
    both = "".join(x + y for x, y in zip(la, lc))
    cts: list[Optional[Atom]] = []
    for k, (mine, other_letters, other, other_shape) in enumerate(((la, lc, p.args[1], sc), (lc, la, p.args[0], sa))):
        x = p.args[k]
        if not num(x.type).differentiable:
            cts.append(None)
            continue
        o = b.prim("reshape", other, *[b.const(d) for d in other_shape]) if num(other.type).shape != other_shape else other
        v = b.prim("einsum", split, o, subscripts=f"{both},{other_letters}->{mine}")
        cts.append(like_scalar(b, reshape_like(b, v, x), x))
    return cts


# --------------------------------------------------------------------------- the entries


register(
    Primitive("einsum", lambda *xs, subscripts, optimize=False: np.einsum(subscripts, *xs, optimize=optimize),
              _einsum_infer, _emit_einsum, zero_in=(0,), kind=RULE, jvp=_einsum_jvp, vjp=_einsum_vjp),
    Primitive("tensordot", lambda a, c, axes=2: np.tensordot(a, c, axes), _named_infer(_tensordot_parse),
              lambda a, ps: px.call("np.tensordot", a, axes=px.literal(ps["axes"])), zero_in=(0, 1), kind=RULE,
              **bilinear(_named_vjp(_tensordot_parse))),
    Primitive("inner", np.inner, _named_infer(_inner_parse), lambda a, ps: px.call("np.inner", a), zero_in=(0, 1),
              kind=RULE, **bilinear(_named_vjp(_inner_parse))),
    Primitive("vdot", np.vdot, _vdot_infer, lambda a, ps: px.call("np.vdot", a), zero_in=(0, 1), kind=RULE,
              **bilinear(_vdot_vjp)),
    Primitive("kron", np.kron, _kron_infer, lambda a, ps: px.call("np.kron", a), zero_in=(0, 1), kind=RULE,
              **bilinear(_kron_vjp)),
)

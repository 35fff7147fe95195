"""Shifted tangents cancelled (``cancel_shifts``): a weighted mean of tangents
``sum(Y * E, axis) / S`` with ``S = sum(E, axis)`` does not see a shift ``A``
of ``Y`` that is constant along ``axis``, so for ``Y = X - A``

    A + sum((X - A) * E, axis) / S   ->  sum(X * E, axis) / S         (logsumexp)
    (X - A) - sum((X - A) * E, axis) / S   ->  X - sum(X * E, axis) / S   (log-softmax)

The tangent of the max a stable logsumexp or log-softmax subtracts (``m +
log(sum(exp(x - m)))``) is then read by nothing, and ``dce`` removes it with
its argmax mask.  Only tangents are rewritten (the primal's rounding is
unchanged); ``S`` may be wrapped in ``log_domain`` (the derivative of ``log``),
``X - A`` in a ``broadcast_to`` of its own shape; every binding the rewrite
replaces is read only there, so nothing is computed twice."""

from __future__ import annotations

from typing import Callable

from ..blocks import NESTING, same_or_new, with_branches
from ..ir import Atom, Bind, Block, Function, Prim, Var, all_binds, use_counts
from ..names import Namer
from .factor import tangent_names

Defs = Callable[[Atom, str, int], Prim | None]


def cancel_shifts(fn: Function, n_primal: int) -> Function:
    """``fn``: a forward program whose parameters after the first ``n_primal`` are tangents."""
    tainted = tangent_names(fn, fn.params[n_primal:])
    rhs_of = {b.targets[0].name: b.rhs for b in all_binds(fn.body) if len(b.targets) == 1 and isinstance(b.rhs, Prim)}
    counts = use_counts(fn.body)

    def bound(a: Atom, op: str, reads: int = 0) -> Prim | None:
        """The primitive ``op`` bound to ``a`` (read exactly ``reads`` times, unless 0)."""
        rhs = rhs_of.get(a.name) if isinstance(a, Var) else None
        ok = rhs is not None and rhs.op == op and (not reads or counts[a.name] == reads)
        return rhs if ok else None

    namer = Namer.of(fn)
    return Function(fn.name, fn.params, _block(fn.body, tainted, bound, namer))


def _block(block: Block, tainted: set[str], bound: Defs, namer: Namer) -> Block:
    out: list[Bind] = []
    for b in block.binds:
        if type(b.rhs) in NESTING:
            b = with_branches(b, b.rhs, lambda blk: _block(blk, tainted, bound, namer))
        t = b.targets[0] if len(b.targets) == 1 else None
        new = _cancelled(t, b.rhs, bound) if t is not None and t.name in tainted and isinstance(b.rhs, Prim) else None
        if new is None:
            out.append(b)
            continue
        fresh: dict[str, Var] = {}  # the bindings' targets stand for new variables, but the last's is t
        for target, rhs in new:
            rhs = Prim(rhs.op, tuple(fresh.get(a.name, a) if isinstance(a, Var) else a for a in rhs.args), rhs.params)
            var = t if target is new[-1][0] else fresh.setdefault(target.name, Var(namer.temp(), target.type))
            out.append(Bind((var,), rhs, b.loc))
    return same_or_new(block, out)


def _cancelled(t: Var, rhs: Prim, bound: Defs) -> list[tuple[Var, Prim]] | None:
    """The bindings (each target standing for the fresh variable it becomes; the
    last one is ``t``'s) that compute ``rhs`` without the shift, or None."""
    if rhs.op == "add":  # A + mean(X - A), either order
        for a, q in (rhs.args, rhs.args[::-1]):
            found = _weighted_mean(q, bound, 1)
            if found is not None and found[0][1] == a:
                (x, _), rest = found
                return rest(x)
    if rhs.op == "sub":  # (X - A) - mean(X - A), X - A read by both
        y, q = rhs.args
        found = _weighted_mean(q, bound, 2, y)
        if found is not None:
            (x, _), rest = found
            mean = rest(x)
            return mean + [(t, Prim("sub", (x, mean[-1][0])))]
    return None


def _weighted_mean(q: Atom, bound: Defs, reads: int, outer: Atom | None = None):
    """``q = sum(Y * E, axis) / S`` (S: ``sum(E, axis)``, maybe in ``log_domain``) with
    ``Y = X - A`` read ``reads`` times (by the mean, and by ``outer``) and ``A``
    constant along ``axis``: ``((X, A), rest)``, ``rest(X)`` the bindings of the mean of X."""
    div = bound(q, "div", 1)
    if div is None:
        return None
    num, den = div.args
    total = bound(num, "sum", 1)
    weights = bound(den, "sum") or _sum_in_log_domain(den, bound)
    product = bound(total.args[0], "mul", 1) if total is not None else None
    if total is None or weights is None or product is None or weights.params != total.params:
        return None
    e = weights.args[0]
    if e not in product.args:
        return None
    y = product.args[1] if product.args[0] == e else product.args[0]
    widened = bound(y, "broadcast_to", 1)
    inner = widened.args[0] if widened is not None else y
    if outer is not None and inner != outer:
        return None
    shift = bound(inner, "sub", reads)
    if shift is None or not _constant_along(shift.args[1], total, getattr(shift.args[0], "type", None)):
        return None
    x = shift.args[0]
    if getattr(x, "type", None) != y.type:  # X has the product's shape (a broadcast was only A's)
        return None
    mul_var, sum_var = total.args[0], num
    assert isinstance(mul_var, Var) and isinstance(sum_var, Var) and isinstance(q, Var)

    def rest(x: Atom) -> list[tuple[Var, Prim]]:
        args = (x, e) if product.args[1] == e else (e, x)
        return [(mul_var, Prim("mul", args)), (sum_var, Prim("sum", (mul_var,), total.params)),
                (q, Prim("div", (sum_var, den)))]

    return (x, shift.args[1]), rest


def _sum_in_log_domain(den: Atom, bound: Defs) -> Prim | None:
    inner = bound(den, "log_domain")
    return bound(inner.args[0], "sum") if inner is not None else None


def _constant_along(a: Atom, total: Prim, x_type) -> bool:
    """Whether ``a``, broadcast against an array of ``x_type``, is constant along the axes ``total`` sums."""
    shape = getattr(getattr(a, "type", None), "shape", None)
    full = getattr(x_type, "shape", None)
    if shape is None or full is None:
        return False
    if shape == ():
        return True
    axis = total.param("axis")
    if not total.param("keepdims") or len(shape) != len(full):
        return False
    axes = range(len(full)) if axis is None else [ax % len(full) for ax in
                                                    (axis if isinstance(axis, tuple) else (axis,))]
    return all(shape[i] == 1 for i in axes)


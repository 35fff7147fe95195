"""Reductions along axes: ``sum`` and ``mean`` are linear (given by their
transpose: the cotangent broadcast back over the reduced axes), ``max``/``min``
pick the extremum (ties share it), ``prod`` takes the product of the others
(through the runtime helper ``prod_vjp``, exact at zeros)."""

from __future__ import annotations

import numpy as np

from ..ir import Atom
from . import emit
from .derive import expand_reduced, explicit, like_scalar, linear, may_be_nan, shape_atom
from .table import DerivativeKind, Primitive, norm_axes, num, register
from .types import reduction

RULE = DerivativeKind.RULE


def _mean_dtype(d: str) -> str:
    return d if np.dtype(d).kind in "fc" else "float64"


def _sum_dtype(d: str) -> str:
    return "int64" if np.dtype(d).kind in "bi" else d


def _sum_transpose(b, p, out, ct):
    x = p.args[0]
    if num(x.type).py:
        return [like_scalar(b, ct, x)]
    return [b.prim("broadcast_to", expand_reduced(b, ct, p), shape_atom(b, x))]


def _mean_transpose(b, p, out, ct):
    x = p.args[0]
    xt = num(x.type)
    axes = norm_axes(p.param("axis"), xt.ndim)
    counts = [xt.shape[a] for a in axes]
    if None in counts:
        count: Atom = b.prim("div", b.prim("size", x), b.prim("size", out))
    else:
        count = b.const(int(np.prod(counts, dtype=int)))
    if xt.py:
        return [like_scalar(b, b.prim("div", ct, count), x)]
    return [b.prim("broadcast_to", expand_reduced(b, b.prim("div", ct, count), p), shape_atom(b, x))]


def _extremum_share(b, p, out):
    """Where ``x`` is the result (or nan where the result is nan), divided by the number of such places."""
    x = p.args[0]
    mask = b.prim("eq", x, expand_reduced(b, out, p))
    if may_be_nan(x):
        mask = b.prim("or_", mask, b.prim("isnan", x))
    count = b.prim("sum", mask, axis=p.param("axis"), keepdims=True, dtype=num(x.type).dtype)
    return mask, count


def vjp_maxmin(b, p, out, ct):
    """``np.max`` / ``np.min``: the cotangent goes to the entries equal to the
    result (ties share it), and to the nans where the result is nan."""
    mask, count = _extremum_share(b, p, out)
    return [b.prim("mul", mask, b.prim("div", expand_reduced(b, ct, p), count))]


def jvp_maxmin(b, p, out, ts):
    """The transpose of :func:`vjp_maxmin`: the tangents at the extremum, averaged over ties."""
    if ts[0] is None:
        return None
    mask, count = _extremum_share(b, p, out)
    share = b.prim("div", b.prim("mul", mask, ts[0]), count)
    return b.prim("sum", share, axis=p.param("axis"), keepdims=p.param("keepdims", False))


def vjp_prod(b, p, out, ct):
    x = p.args[0]
    return [b.prim("prod_vjp", x, expand_reduced(b, ct, p), axis=p.param("axis"))]


def jvp_prod(b, p, out, ts):
    """``sum(t * (product of the others))``, exact at zeros (no division by ``x``)."""
    if ts[0] is None:
        return None
    axis = p.param("axis")
    return b.prim("sum", b.prim("prod_vjp", p.args[0], ts[0], axis=axis), axis=axis, keepdims=p.param("keepdims", False))


def _sum(x, axis=None, keepdims=False, dtype=None):
    return np.sum(x, axis=axis, keepdims=keepdims, dtype=dtype)


register(
    Primitive("sum", _sum, reduction(_sum_dtype), emit.reduction("sum"), zero_in=(0,), method="sum", kind=RULE,
              **linear(_sum_transpose)),
    Primitive("mean", np.mean, reduction(_mean_dtype), emit.reduction("mean"), zero_in=(0,), method="mean", kind=RULE,
              **linear(_mean_transpose)),
    Primitive("max", np.max, reduction(), emit.reduction("max"), method="max", kind=RULE, **explicit(jvp_maxmin, vjp_maxmin)),
    Primitive("min", np.min, reduction(), emit.reduction("min"), method="min", kind=RULE, **explicit(jvp_maxmin, vjp_maxmin)),
    Primitive("prod", np.prod, reduction(), emit.reduction("prod"), method="prod", kind=RULE, **explicit(jvp_prod, vjp_prod)),
)

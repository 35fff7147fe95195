"""The one table of primitives: for each, its numpy implementation (used by the
IR interpreter), its type/shape rule, the Python it is printed as, the kind of
its derivative (:class:`DerivativeKind`: a rule, zero by truth, a discrete result,
or never differentiated) and, for kind RULE, its vector-Jacobian product (the
transposed derivative used by the reverse macro), side by side.  Adding a numpy
function is one entry here (plus its row in ``NUMPY_API`` if users call it by a
numpy name) and its sample arguments in tests/test_primitive_rules.py, which
checks every entry's kind against finite differences.

A VJP rule receives a builder ``b`` (see :class:`astad.reverse.Builder`), the
primitive application ``p``, its output variable ``out`` and the output
cotangent ``ct``; it returns one cotangent atom per argument (``None`` where
the argument has none).  Rules are written naively: statically-zero
cotangents and unused results are folded away by the optimiser.
"""

from __future__ import annotations

import enum
import operator
from dataclasses import dataclass, field, replace
from typing import Any, Callable

import libcst as cst
import numpy as np

from . import pyexpr as px
from .errors import InternalError
from .ir import Atom, Num, Prim, TupleT, Type, Var
from .vjp_rules import (ShapeError, VjpRule, expand_reduced, like_scalar, shape_atom, sum_to, vjp_arange,
                        vjp_clip, vjp_extremum, vjp_fmod, vjp_maxmin, vjp_mod, vjp_pow)
from .vjp_rules import norm_axes as _norm_axes, num as _num

__all__ = ["TABLE", "DerivativeKind", "Primitive", "ShapeError", "infer", "RUNTIME"]

Expr = cst.BaseExpression


class DerivativeKind(enum.Enum):
    """What an entry's derivative is: every entry states it (``kind=``), and
    tests/test_primitive_rules.py checks each against finite differences."""

    RULE = "differentiable almost everywhere: its VJP rule"
    ZERO = "piecewise constant: a float result whose derivative is zero almost everywhere"
    DISCRETE = "an integer, bool or shape result: no cotangent"
    BACKWARD_ONLY = "made only in derivative code (reverse macro, optimiser): never differentiated"


@dataclass(frozen=True)
class Primitive:
    name: str
    impl: Callable[..., Any]  # impl(*args, **params)
    infer: Callable[[list[Type], dict], Type]
    emit: Callable[[list[Expr], dict], Expr] | None = None
    vjp: VjpRule | None = None  # given exactly for kind RULE
    zero_in: tuple[int, ...] = ()  # arguments in which a zero gives a zero result
    stmts: Callable[[Expr, list[Expr], dict], list[cst.BaseSmallStatement]] | None = None
    method: str | None = None  # the ndarray method computing the same from the first argument (no dispatch cost)
    kind: DerivativeKind = field(kw_only=True)


TABLE: dict[str, Primitive] = {}


def _register(*prims: Primitive) -> None:
    for p in prims:
        TABLE[p.name] = _with_kind_rule(p)


def _with_kind_rule(p: Primitive) -> Primitive:
    """The entry with the VJP its kind implies; a rule exactly for kind RULE."""
    if not isinstance(p.kind, DerivativeKind) or (p.vjp is not None) != (p.kind is DerivativeKind.RULE):
        raise InternalError(f"primitive {p.name}: kind {p.kind!r} needs a VJP rule exactly when it is DerivativeKind.RULE")
    if p.kind is DerivativeKind.RULE:
        return p
    return replace(p, vjp=_vjp_never if p.kind is DerivativeKind.BACKWARD_ONLY else _vjp_zero)


def _vjp_never(b, p, out, ct):
    raise InternalError(f"{p.op} is made only in derivative code and has no derivative of its own")


# --------------------------------------------------------------------------- type rules


def _sample(t: Type) -> Any:
    if not isinstance(t, Num):
        raise ShapeError(f"expected a number or an array, got {t}")
    if t.py and not t.shape:
        if t.value is not None:
            return t.value
        return {"float64": 1.5, "int64": 3, "bool": True}[t.dtype]
    return np.ones((), dtype=t.dtype)


def _from_sample(value: Any, shape: tuple, keep_value: bool) -> Num:
    if isinstance(value, (bool, int, float)) and not isinstance(value, np.generic):
        dtype = {bool: "bool", int: "int64", float: "float64"}[type(value)]
        known = value if keep_value and dtype != "float64" else None
        return Num(shape, dtype, py=True, value=known)
    return Num(shape, np.asarray(value).dtype.name)


def broadcast_shapes(*shapes: tuple) -> tuple:
    ndim = max((len(s) for s in shapes), default=0)
    out = []
    for i in range(ndim):
        dims = {s[len(s) - ndim + i] for s in shapes if len(s) - ndim + i >= 0}
        known = {d for d in dims if d is not None and d != 1}
        if len(known) > 1:
            raise ShapeError("shapes " + " and ".join(_fmt_shape(s) for s in shapes) + " do not broadcast together")
        out.append(known.pop() if known else (None if None in dims else 1))
    return tuple(out)


def _fmt_shape(s: tuple) -> str:
    return "(" + ", ".join("?" if d is None else str(d) for d in s) + ("," if len(s) == 1 else "") + ")"


def elementwise(impl: Callable) -> Callable[[list[Type], dict], Type]:
    """Type rule of an elementwise (broadcasting) operation: numpy's own
    promotion, found by applying ``impl`` to scalar samples of the types."""

    def infer(ts: list[Type], params: dict) -> Type:
        samples = [_sample(t) for t in ts]
        shape = broadcast_shapes(*(t.shape for t in ts))  # type: ignore[union-attr]
        with np.errstate(all="ignore"):
            try:
                value = _apply(impl, samples, params)
            except ZeroDivisionError:
                value = _apply(impl, [_sample(Num(t.shape, t.dtype, t.py)) for t in ts], params)  # type: ignore[union-attr]
        keep = all(isinstance(t, Num) and t.value is not None for t in ts)
        return _from_sample(value, shape, keep)

    return infer


def _apply(impl: Callable, samples: list, params: dict) -> Any:
    try:
        return impl(*samples, **params)
    except (TypeError, ValueError) as e:  # numpy refuses the dtypes: -x of a bool array, bool - bool, & of floats
        raise ShapeError(str(e).rstrip("."), "numpy refuses these dtypes: ~m or np.logical_not(m) for a bool m, "
                         "m.astype(float) to compute with it") from None


def reduction(dtype_rule: Callable[[str], str] = lambda d: d) -> Callable[[list[Type], dict], Type]:
    def infer(ts: list[Type], params: dict) -> Type:
        x = _num(ts[0])
        axes = _norm_axes(params.get("axis"), x.ndim)
        keep = params.get("keepdims", False)
        shape = tuple((1 if i in axes else d) for i, d in enumerate(x.shape) if keep or i not in axes)
        return Num(shape, params.get("dtype") or dtype_rule(x.dtype))

    return infer


def _mean_dtype(d: str) -> str:
    return d if np.dtype(d).kind in "fc" else "float64"


def _sum_dtype(d: str) -> str:
    return "int64" if np.dtype(d).kind in "bi" else d


def _same(ts: list[Type], params: dict) -> Type:
    x = _num(ts[0])
    return Num(x.shape, x.dtype, x.py and not x.shape)


def _matmul_infer(ts: list[Type], params: dict) -> Type:
    a, b = _num(ts[0]), _num(ts[1])
    if a.ndim == 0 or b.ndim == 0:
        raise ShapeError("matmul needs arrays of at least one dimension (use * for scalars)")
    ka = a.shape[-1]
    kb = b.shape[0] if b.ndim == 1 else b.shape[-2]
    if ka is not None and kb is not None and ka != kb:
        raise ShapeError(f"matmul: shapes {_fmt_shape(a.shape)} and {_fmt_shape(b.shape)} are not aligned ({ka} != {kb})")
    if a.ndim == 1 and b.ndim == 1:
        shape: tuple = ()
    elif a.ndim == 1:
        shape = b.shape[:-2] + b.shape[-1:]
    elif b.ndim == 1:
        shape = a.shape[:-1]
    else:
        shape = broadcast_shapes(a.shape[:-2], b.shape[:-2]) + (a.shape[-2], b.shape[-1])
    dtype = np.result_type(a.dtype, b.dtype).name
    return Num(shape, dtype)


def _dot_infer(ts: list[Type], params: dict) -> Type:
    a, b = _num(ts[0]), _num(ts[1])
    if a.ndim > 2 or b.ndim > 2:
        raise ShapeError("np.dot of arrays with more than two dimensions is not supported: use np.matmul or @")
    return _matmul_infer(ts, params)


def _outer_infer(ts: list[Type], params: dict) -> Type:
    a, b = _num(ts[0]), _num(ts[1])
    size = lambda t: None if not t.known_shape else int(np.prod(t.shape, dtype=int))  # noqa: E731
    return Num((size(a), size(b)), np.result_type(a.dtype, b.dtype).name)


def _transpose_infer(ts: list[Type], params: dict) -> Type:
    x = _num(ts[0])
    axes = params.get("axes") or tuple(reversed(range(x.ndim)))
    if sorted(a % max(x.ndim, 1) for a in axes) != list(range(x.ndim)):
        raise ShapeError(f"axes {axes} do not match an array of dimension {x.ndim}")
    return Num(tuple(x.shape[a] for a in axes), x.dtype)


def _known_ints(ts: Sequence[Type]) -> list[Any]:
    return [t.value if isinstance(t, Num) else None for t in ts]


def _reshape_infer(ts: list[Type], params: dict) -> Type:
    x = _num(ts[0])
    dims = _known_ints(ts[1:])
    for t in ts[1:]:
        if not (isinstance(t, Num) and t.shape == () and np.dtype(t.dtype).kind in "iu"):
            raise ShapeError("reshape needs integer dimensions")
    total = int(np.prod(x.shape)) if x.known_shape else None
    if dims.count(-1) == 1 and total is not None and all(d is not None for d in dims):
        rest = int(np.prod([d for d in dims if d != -1]))
        if rest == 0 or total % rest:
            raise ShapeError(f"cannot reshape an array of size {total} into shape {tuple(dims)}")
        dims = [total // rest if d == -1 else d for d in dims]
    elif all(d is not None for d in dims) and total is not None and int(np.prod(dims)) != total:
        raise ShapeError(f"cannot reshape an array of size {total} into shape {tuple(dims)}")
    return Num(tuple(None if d in (None, -1) else d for d in dims), x.dtype)


def _concat_infer(ts: list[Type], params: dict) -> Type:
    xs = [_num(t) for t in ts]
    nd = xs[0].ndim
    if nd == 0 or any(x.ndim != nd for x in xs):
        raise ShapeError("concatenate needs arrays of the same number (at least one) of dimensions")
    axis = _norm_axes(params.get("axis", 0), nd)[0]
    shape = []
    for i in range(nd):
        dims = [x.shape[i] for x in xs]
        if i == axis:
            shape.append(None if None in dims else sum(dims))  # type: ignore[arg-type]
        else:
            shape.append(broadcast_shapes(*[(d,) for d in dims])[0] if len({d for d in dims if d is not None}) <= 1 else _mismatch(xs))
    return Num(tuple(shape), np.result_type(*[x.dtype for x in xs]).name)


def _mismatch(xs: Sequence[Num]) -> Any:
    raise ShapeError("array shapes " + ", ".join(_fmt_shape(x.shape) for x in xs) + " do not fit together")


def _stack_infer(ts: list[Type], params: dict) -> Type:
    xs = [_num(t) for t in ts]
    if len({x.shape for x in xs}) != 1:
        _mismatch(xs)
    nd = xs[0].ndim + 1
    axis = _norm_axes(params.get("axis", 0), nd)[0]
    shape = list(xs[0].shape)
    shape.insert(axis, len(xs))
    return Num(tuple(shape), np.result_type(*[x.dtype for x in xs]).name)


def _diag_infer(ts: list[Type], params: dict) -> Type:
    x, k = _num(ts[0]), params.get("k", 0)
    if x.ndim == 1:
        n = None if x.shape[0] is None else x.shape[0] + abs(k)
        return Num((n, n), x.dtype)
    if x.ndim == 2:
        r, c = x.shape
        if r is None or c is None:
            return Num((None,), x.dtype)
        return Num((max(0, min(r + min(k, 0), c - max(k, 0))),), x.dtype)
    raise ShapeError("np.diag needs a 1-D or 2-D array")


def _tri_infer(ts: list[Type], params: dict) -> Type:
    x = _num(ts[0])
    if x.ndim < 2:
        raise ShapeError("np.tril/np.triu need an array of at least two dimensions")
    return Num(x.shape, x.dtype)


def _shape_infer(ts: list[Type], params: dict) -> Type:
    x = _num(ts[0])
    return TupleT(tuple(Num((), "int64", py=True, value=d) for d in x.shape))


def _len_infer(ts: list[Type], params: dict) -> Type:
    x = ts[0]
    if isinstance(x, TupleT):
        return Num((), "int64", py=True, value=len(x.items))
    x = _num(x)
    if x.ndim == 0:
        raise ShapeError("len() of a scalar")
    return Num((), "int64", py=True, value=x.shape[0])


def _size_infer(ts: list[Type], params: dict) -> Type:
    x = _num(ts[0])
    return Num((), "int64", py=True, value=int(np.prod(x.shape)) if x.known_shape else None)


def _constructor_infer(ts: list[Type], params: dict) -> Type:
    dims = _known_ints(ts)
    return Num(tuple(dims), params.get("dtype", "float64"))


def _like_infer(ts: list[Type], params: dict) -> Type:
    x = _num(ts[0])
    return Num(x.shape, params.get("dtype") or x.dtype)


def _eye_infer(ts: list[Type], params: dict) -> Type:
    dims = _known_ints(ts)
    return Num((dims[0], dims[-1]), params.get("dtype", "float64"))


def _arange_infer(ts: list[Type], params: dict) -> Type:
    vals = _known_ints(ts)
    dtype = "float64" if any(_num(t).dtype == "float64" for t in ts) else "int64"
    n = len(np.arange(*vals)) if all(v is not None for v in vals) else None
    return Num((n,), dtype)


def index_shape(shape: tuple, index: tuple, arg_types: Sequence[Type]) -> tuple:
    """The shape of ``x[index]`` for a basic index template (see ``getitem``)."""
    n_consumed = sum(1 for it in index if it is not None and it is not Ellipsis)
    if n_consumed > len(shape):
        raise ShapeError(f"too many indices for an array of dimension {len(shape)}")
    items: list = []
    for it in index:
        if it is Ellipsis:
            items.extend([("slice", None, None, None)] * (len(shape) - n_consumed))
        else:
            items.append(it)
    items.extend([("slice", None, None, None)] * (len(shape) - sum(1 for it in items if it is not None)))
    out: list = []
    dims = iter(shape)

    def value(spec: Any) -> Any:
        if isinstance(spec, tuple) and spec and spec[0] == "arg":
            return _num(arg_types[spec[1]]).value
        return spec

    for it in items:
        if it is None:
            out.append(1)
            continue
        d = next(dims)
        if isinstance(it, tuple) and it[0] == "slice":
            bounds = [value(s) for s in it[1:]]
            given = [s for s in it[1:]]
            if d is None or any(b is None and g is not None for b, g in zip(bounds, given)):
                out.append(None)
            else:
                out.append(len(range(*slice(*bounds).indices(d))))
        else:
            v = value(it)
            if v is not None and d is not None and not -d <= v < d:
                raise ShapeError(f"index {v} is out of bounds for an axis of size {d}")
    return tuple(out)


def _getitem_infer(ts: list[Type], params: dict) -> Type:
    x = _num(ts[0])
    if x.ndim == 0:
        raise ShapeError("cannot index a scalar")
    return Num(index_shape(x.shape, params["index"], ts), x.dtype)


def _scatter_infer(ts: list[Type], params: dict) -> Type:
    return Num(tuple(params["shape"]), _num(ts[0]).dtype)


def _broadcast_to_infer(ts: list[Type], params: dict) -> Type:
    x, shape = _num(ts[0]), ts[1]
    dims = tuple(t.value for t in shape.items) if isinstance(shape, TupleT) else None  # type: ignore[union-attr]
    if dims is None:
        raise ShapeError("broadcast_to needs a shape")
    return Num(dims, x.dtype)


def _sum_to_infer(ts: list[Type], params: dict) -> Type:
    x, like = _num(ts[0]), _num(ts[1])
    return Num(like.shape, x.dtype, like.py and not like.shape)


def _expand_infer(ts: list[Type], params: dict) -> Type:
    x = _num(ts[0])
    shape = list(x.shape)
    for a in sorted(params["axis"]):
        shape.insert(a, 1)
    return Num(tuple(shape), x.dtype)


def _select_infer(ts: list[Type], params: dict) -> Type:
    c, v = _num(ts[0]), _num(ts[1])
    return Num(broadcast_shapes(c.shape, v.shape), v.dtype)


def _clip_infer(ts: list[Type], params: dict) -> Type:
    given = [isinstance(t, Num) for t in ts[1:]]  # a bound may be None

    def clip(x: Any, *bounds: Any) -> Any:
        it = iter(bounds)
        lo, hi = (next(it) if g else None for g in given)
        return np.clip(x, lo, hi)

    return elementwise(clip)([ts[0], *(t for t, g in zip(ts[1:], given) if g)], params)


def _where_infer(ts: list[Type], params: dict) -> Type:
    c, a, b = (_num(t) for t in ts)
    shape = broadcast_shapes(c.shape, a.shape, b.shape)
    with np.errstate(all="ignore"):
        dtype = np.result_type(_sample(a), _sample(b)).name
    return Num(shape, dtype)


# --------------------------------------------------------------------------- VJP helpers


def _swap_last(b: Any, x: Atom) -> Atom:
    nd = _num(x.type).ndim
    if nd == 2:
        return b.prim("transpose", x)
    return b.prim("transpose", x, axes=tuple(range(nd - 2)) + (nd - 1, nd - 2))


# --------------------------------------------------------------------------- VJP rules


def _vjp_add(b, p, out, ct):
    return [sum_to(b, ct, a) for a in p.args]


def _vjp_sub(b, p, out, ct):
    x, y = p.args
    return [sum_to(b, ct, x), b.prim("neg", sum_to(b, ct, y))]


def _vjp_mul(b, p, out, ct):
    x, y = p.args
    return [sum_to(b, b.prim("mul", ct, y), x), sum_to(b, b.prim("mul", ct, x), y)]


def _vjp_div(b, p, out, ct):
    x, y = p.args
    gx = b.prim("div", ct, y)
    return [sum_to(b, gx, x), sum_to(b, b.prim("neg", b.prim("mul", gx, out)), y)]


def _vjp_log(b, p, out, ct):
    x = p.args[0]  # ct / x, nan where x < 0 (where the primal is nan) and inf at 0, not finite values or an exception
    return [b.prim("div", ct, b.prim("log_domain", x))]


def _vjp_neg(b, p, out, ct):
    return [b.prim("neg", ct)]


def _unary(deriv: Callable[[Any, Atom, Var], Atom]) -> VjpRule:
    """VJP of an elementwise function from its derivative ``f'(x)`` (which may use ``out = f(x)``)."""

    def rule(b, p, out, ct):
        return [b.prim("mul", ct, deriv(b, p.args[0], out))]

    return rule


def _vjp_zero(b, p, out, ct):
    """Kinds ZERO and DISCRETE: no cotangent flows back."""
    return [None for _ in p.args]


def _vjp_sum(b, p, out, ct):
    x = p.args[0]
    if _num(x.type).py:
        return [like_scalar(b, ct, x)]
    return [b.prim("broadcast_to", expand_reduced(b, ct, p), shape_atom(b, x))]


def _vjp_mean(b, p, out, ct):
    x = p.args[0]
    xt = _num(x.type)
    axes = _norm_axes(p.param("axis"), xt.ndim)
    counts = [xt.shape[a] for a in axes]
    if None in counts:
        count: Atom = b.prim("div", b.prim("size", x), b.prim("size", out))
    else:
        count = b.const(int(np.prod(counts, dtype=int)))
    if xt.py:
        return [like_scalar(b, b.prim("div", ct, count), x)]
    return [b.prim("broadcast_to", expand_reduced(b, b.prim("div", ct, count), p), shape_atom(b, x))]


def _vjp_prod(b, p, out, ct):
    x = p.args[0]
    return [b.prim("prod_vjp", x, expand_reduced(b, ct, p), axis=p.param("axis"))]


def _vjp_matmul(b, p, out, ct):
    x, y = p.args
    nx, ny = _num(x.type).ndim, _num(y.type).ndim
    if nx == 1 and ny == 1:
        return [b.prim("mul", ct, y), b.prim("mul", ct, x)]
    if nx == 1:
        if ny > 2:
            return _batched_matmul_vjp(b, x, y, ct)
        return [b.prim("matmul", y, ct), b.prim("outer", x, ct)]
    if ny == 1:
        if nx > 2:
            return _batched_matmul_vjp(b, x, y, ct)
        return [b.prim("outer", ct, y), b.prim("matmul", ct, x)]
    return [
        sum_to(b, b.prim("matmul", ct, _swap_last(b, y)), x),
        sum_to(b, b.prim("matmul", _swap_last(b, x), ct), y),
    ]


def _batched_matmul_vjp(b, x, y, ct):
    """Vectors on one side of a batched matmul: lift them to matrices first."""
    nx, ny = _num(x.type).ndim, _num(y.type).ndim
    xm = b.prim("expand_dims", x, axis=0) if nx == 1 else x
    ym = b.prim("expand_dims", y, axis=-1) if ny == 1 else y
    ctm = b.prim("expand_dims", ct, axis=-2 if nx == 1 else -1)
    gx = b.prim("matmul", ctm, _swap_last(b, ym))
    gy = b.prim("matmul", _swap_last(b, xm), ctm)
    gx = b.prim("sum", gx, axis=tuple(range(_num(gx.type).ndim - 1))) if nx == 1 else sum_to(b, gx, x)
    gy = b.prim("sum", b.prim("reshape", gy, b.const(-1), *[b.const(d) for d in _num(y.type).shape]), axis=0) if ny == 1 else sum_to(b, gy, y)
    return [gx, gy]


def _vjp_outer(b, p, out, ct):
    x, y = p.args
    gx = b.prim("matmul", ct, b.prim("ravel", y))
    gy = b.prim("matmul", b.prim("ravel", x), ct)
    return [_reshape_like(b, gx, x), _reshape_like(b, gy, y)]


def _reshape_like(b: Any, v: Atom, like: Atom) -> Atom:
    lt = _num(like.type)
    if _num(v.type).shape == lt.shape and lt.known_shape:
        return like_scalar(b, v, like)
    if lt.known_shape:
        return like_scalar(b, b.prim("reshape", v, *[b.const(d) for d in lt.shape]), like)
    return b.prim("reshape_like", v, like)


def _vjp_transpose(b, p, out, ct):
    axes = p.param("axes")
    if _num(p.args[0].type).ndim < 2:
        return [like_scalar(b, ct, p.args[0])]
    if axes is None:
        return [b.prim("transpose", ct)]
    nd = len(axes)
    return [b.prim("transpose", ct, axes=tuple(int(i) for i in np.argsort([a % nd for a in axes])))]


def _vjp_reshape(b, p, out, ct):
    return [_reshape_like(b, ct, p.args[0])] + [None] * (len(p.args) - 1)


def _vjp_ravel(b, p, out, ct):
    return [_reshape_like(b, ct, p.args[0])]


def _vjp_concatenate(b, p, out, ct):
    nd = _num(out.type).ndim
    axis = _norm_axes(p.param("axis", 0), nd)[0]
    result, start = [], 0
    for a in p.args:
        size = _num(a.type).shape[axis]
        if size is None:
            raise ShapeError("concatenate: the sizes along the axis must be known to differentiate")
        index = (("slice", None, None, None),) * axis + (("slice", start, start + size, None),)
        result.append(b.prim("getitem", ct, index=index))
        start += size
    return result


def _vjp_stack(b, p, out, ct):
    nd = _num(out.type).ndim
    axis = _norm_axes(p.param("axis", 0), nd)[0]
    return [b.prim("getitem", ct, index=(("slice", None, None, None),) * axis + (i,)) for i in range(len(p.args))]


def _vjp_getitem(b, p, out, ct):
    x = p.args[0]
    return [b.prim("scatter", ct, x, *p.args[1:], index=p.param("index"))] + [None] * (len(p.args) - 1)


def _vjp_where(b, p, out, ct):
    c, x, y = p.args
    return [None, like_scalar(b, sum_to(b, b.prim("select", c, ct, branch=True), x), x),
            like_scalar(b, sum_to(b, b.prim("select", c, ct, branch=False), y), y)]


def _vjp_diag(b, p, out, ct):
    x = p.args[0]
    k = p.param("k", 0)
    if _num(x.type).ndim == 1:
        return [b.prim("diag", ct, k=k)]
    return [b.prim("diag_embed", ct, x, k=k)]


def _vjp_tri(name: str) -> VjpRule:
    def rule(b, p, out, ct):
        return [b.prim(name, ct, k=p.param("k", 0))]

    return rule


def _vjp_expand(b, p, out, ct):
    return [_reshape_like(b, ct, p.args[0])]


def _vjp_broadcast_to(b, p, out, ct):
    return [sum_to(b, ct, p.args[0]), None]


def _vjp_sum_to(b, p, out, ct):
    return [b.prim("broadcast_to", ct, shape_atom(b, p.args[0])), None]


# --------------------------------------------------------------------------- printing


def _bin(op: str) -> Callable[[list[Expr], dict], Expr]:
    return lambda a, ps: px.binop(op, a[0], a[1])


def _cmp(op: str) -> Callable[[list[Expr], dict], Expr]:
    return lambda a, ps: px.compare(op, a[0], a[1])


def _np(fn: str, *static: str) -> Callable[[list[Expr], dict], Expr]:
    """Print as ``np.fn(args..., static_kw=...)``, leaving out defaults."""

    def emit(a: list[Expr], ps: dict) -> Expr:
        kw = {k: px.literal(ps[k]) for k in static if ps.get(k) not in (None, False, 0) or (k == "axis" and ps.get(k) == 0)}
        return px.call(f"np.{fn}", a, **kw)

    return emit


def _emit_reduction(fn: str) -> Callable[[list[Expr], dict], Expr]:
    def emit(a: list[Expr], ps: dict) -> Expr:
        kw = {}
        if ps.get("axis") is not None:
            kw["axis"] = px.literal(ps["axis"])
        if ps.get("keepdims"):
            kw["keepdims"] = px.literal(True)
        if ps.get("dtype"):
            kw["dtype"] = px.name(f"np.{ps['dtype']}")
        return px.call(f"np.{fn}", a, **kw)

    return emit


def _emit_transpose(a: list[Expr], ps: dict) -> Expr:
    if ps.get("axes") is None:
        return px.attr(a[0], "T")
    return px.call("np.transpose", [a[0], px.literal(ps["axes"])])


def _emit_reshape(a: list[Expr], ps: dict) -> Expr:
    # np.reshape, not the method: the argument may be a Python float (a scalar cotangent)
    return px.call("np.reshape", [a[0], px.tuple_(a[1:]) if len(a) != 2 else a[1]])


def index_exprs(index: tuple, args: list[Expr]) -> list[Any]:
    """libcst subscript items for an index template; ``args`` are the dynamic indices."""

    def one(spec: Any) -> Expr | None:
        if spec is None:
            return None
        if isinstance(spec, tuple) and spec[0] == "arg":
            return args[spec[1]]
        return px.literal(spec)

    items: list[Any] = []
    for it in index:
        if it is None:
            items.append(px.name("None"))
        elif it is Ellipsis:
            items.append(cst.Ellipsis())
        elif isinstance(it, tuple) and it[0] == "slice":
            items.append(px.slice_(one(it[1]), one(it[2]), one(it[3])))
        else:
            items.append(one(it))
    return items


def _emit_getitem(a: list[Expr], ps: dict) -> Expr:
    return px.subscript(a[0], index_exprs(ps["index"], a))


def _stmts_scatter(target: Expr, a: list[Expr], ps: dict) -> list[cst.BaseSmallStatement]:
    """``x_ct = np.zeros_like(x); x_ct[index] = ct``: the transpose of basic indexing."""
    ct, x, *rest = a
    index = index_exprs(ps["index"], [x, *rest])
    zeros = px.call("np.zeros_like", [x]) if ps.get("zeros") is None else _emit_constructor("zeros")(
        [px.literal(d) for d in ps["zeros"][0]], {"dtype": ps["zeros"][1]})
    return [
        cst.Assign(targets=[cst.AssignTarget(target)], value=zeros),
        cst.Assign(targets=[cst.AssignTarget(px.subscript(target, index))], value=ct),
    ]


def _stmts_scatter_add(target: Expr, a: list[Expr], ps: dict) -> list[cst.BaseSmallStatement]:
    """``acc[index] += ct``: a read ``x[index]`` inside a loop, accumulated in place."""
    acc, ct, x, *rest = a
    index = index_exprs(ps["index"], [x, *rest])
    return [
        cst.Assign(targets=[cst.AssignTarget(target)], value=acc),
        cst.AugAssign(target=px.subscript(target, index), operator=cst.AddAssign(), value=ct),
    ]


def _scatter_add_value(acc: Any, ct: Any, x: Any, *args: Any, index: tuple) -> Any:
    acc[_index_value(index, (x, *args))] += ct
    return acc


def _emit_select(a: list[Expr], ps: dict) -> Expr:
    zero = px.literal(0.0)
    return px.call("np.where", [a[0], a[1], zero] if ps["branch"] else [a[0], zero, a[1]])


def _emit_stack(fn: str) -> Callable[[list[Expr], dict], Expr]:
    def emit(a: list[Expr], ps: dict) -> Expr:
        kw = {"axis": px.literal(ps["axis"])} if ps.get("axis", 0) != 0 else {}
        return px.call(f"np.{fn}", [cst.List([cst.Element(e) for e in a])], **kw)

    return emit


def _emit_stack_seq(fn: str) -> Callable[[list[Expr], dict], Expr]:
    """``np.stack(xs, axis=...)`` of a run-time list."""

    def emit(a: list[Expr], ps: dict) -> Expr:
        kw = {"axis": px.literal(ps["axis"])} if ps.get("axis", 0) != 0 else {}
        return px.call(f"np.{fn}", a, **kw)

    return emit


def _emit_constructor(fn: str) -> Callable[[list[Expr], dict], Expr]:
    def emit(a: list[Expr], ps: dict) -> Expr:
        kw = {"dtype": px.name(f"np.{ps['dtype']}")} if ps.get("dtype") not in (None, "float64") else {}
        return px.call(f"np.{fn}", [px.tuple_(a)] if fn in ("zeros", "ones") else a, **kw)

    return emit


def _emit_like(fn: str) -> Callable[[list[Expr], dict], Expr]:
    def emit(a: list[Expr], ps: dict) -> Expr:
        kw = {"dtype": px.name(f"np.{ps['dtype']}")} if ps.get("dtype") else {}
        return px.call(f"np.{fn}", a, **kw)

    return emit


def _emit_runtime(fn: str, *static: str) -> Callable[[list[Expr], dict], Expr]:
    def emit(a: list[Expr], ps: dict) -> Expr:
        return px.call(fn, a, **{k: px.literal(ps.get(k)) for k in static})

    return emit


# --------------------------------------------------------------------------- runtime helpers


def sum_to_shape(ct: Any, like: Any) -> Any:
    """Sum ``ct`` down to the shape of ``like`` (broadcasting undone at run time)."""
    shape = np.shape(like)
    lead = np.ndim(ct) - len(shape)
    axes = tuple(range(lead)) + tuple(lead + i for i, d in enumerate(shape) if d == 1 and np.shape(ct)[lead + i] != 1)
    out = np.sum(ct, axis=axes) if axes else ct
    return np.reshape(out, shape) if np.shape(out) != shape else out


def prod_vjp(x: Any, ct: Any, axis: Any) -> Any:
    """Cotangent of ``np.prod(x, axis)``: the product of the other entries, also at zeros."""
    axes = _norm_axes(axis, np.ndim(x))
    moved = np.moveaxis(x, axes, tuple(range(-len(axes), 0)))
    flat = moved.reshape(moved.shape[: moved.ndim - len(axes)] + (-1,))
    ones = np.ones(flat.shape[:-1] + (1,), dtype=flat.dtype)
    before = np.cumprod(np.concatenate([ones, flat[..., :-1]], axis=-1), axis=-1)
    after = np.flip(np.cumprod(np.concatenate([ones, np.flip(flat, -1)[..., :-1]], axis=-1), axis=-1), -1)
    others = np.moveaxis((before * after).reshape(moved.shape), tuple(range(-len(axes), 0)), axes)
    return others * ct


def log_domain(x: Any) -> Any:
    """``x`` where ``log`` is defined (``x >= 0``), nan elsewhere, as numpy
    floats: the derivative ``ct / x`` of ``log`` is then nan outside its domain,
    as the primal is, and inf at 0 (a Python float would raise there)."""
    if np.ndim(x) == 0:
        x = x if isinstance(x, np.floating) else np.float64(x)
        return x if x >= 0 else x.dtype.type(np.nan)
    if (x < 0).any():
        return np.where(x >= 0, x, np.nan)
    return x


def diag_embed(ct: Any, like: Any, k: int) -> Any:
    """Cotangent of ``np.diag(x, k)`` for a 2-D ``x``: ``ct`` put back on the k-th diagonal."""
    out = np.zeros_like(like, dtype=np.result_type(ct, like))
    rows, cols = np.shape(like)
    i = np.arange(len(ct))
    out[i + max(-k, 0), i + max(k, 0)] = ct
    return out


# --------------------------------------------------------------------------- the table


def _unary_entry(name: str, impl: Callable, deriv: Callable | None) -> Primitive:
    return Primitive(name, impl, elementwise(impl), _np(name), _unary(deriv) if deriv else None, zero_in=(0,) if name != "sign" else (),
                     kind=DerivativeKind.RULE if deriv else DerivativeKind.ZERO)


_register(
    # arithmetic (Python operators)
    Primitive("add", operator.add, elementwise(operator.add), _bin("+"), _vjp_add, kind=DerivativeKind.RULE),
    Primitive("sub", operator.sub, elementwise(operator.sub), _bin("-"), _vjp_sub, kind=DerivativeKind.RULE),
    Primitive("mul", operator.mul, elementwise(operator.mul), _bin("*"), _vjp_mul, zero_in=(0, 1), kind=DerivativeKind.RULE),
    Primitive("div", operator.truediv, elementwise(operator.truediv), _bin("/"), _vjp_div, zero_in=(0,), kind=DerivativeKind.RULE),
    Primitive("floordiv", operator.floordiv, elementwise(operator.floordiv), _bin("//"), None, kind=DerivativeKind.ZERO),
    Primitive("mod", operator.mod, elementwise(operator.mod), _bin("%"), vjp_mod, kind=DerivativeKind.RULE),
    Primitive("fmod", np.fmod, elementwise(np.fmod), _np("fmod"), vjp_fmod, kind=DerivativeKind.RULE),
    Primitive("pow", operator.pow, elementwise(operator.pow), _bin("**"), vjp_pow, kind=DerivativeKind.RULE),
    Primitive("neg", operator.neg, elementwise(operator.neg), lambda a, ps: px.neg(a[0]), _vjp_neg, zero_in=(0,), kind=DerivativeKind.RULE),
    Primitive("matmul", operator.matmul, _matmul_infer, _bin("@"), _vjp_matmul, zero_in=(0, 1), kind=DerivativeKind.RULE),
    # comparisons (discrete results)
    *(Primitive(n, f, elementwise(f), _cmp(s), None, kind=DerivativeKind.DISCRETE) for n, f, s in [
        ("lt", operator.lt, "<"), ("le", operator.le, "<="), ("gt", operator.gt, ">"),
        ("ge", operator.ge, ">="), ("eq", operator.eq, "=="), ("ne", operator.ne, "!="),
    ]),
    Primitive("not_", operator.not_, elementwise(operator.not_),
              lambda a, ps: cst.UnaryOperation(operator=cst.Not(), expression=px.paren(a[0]) if px.precedence(a[0]) < 5 else a[0]),
              None, kind=DerivativeKind.DISCRETE),
    Primitive("and_", operator.and_, elementwise(operator.and_), _bin("&"), None, kind=DerivativeKind.DISCRETE),
    Primitive("or_", operator.or_, elementwise(operator.or_), _bin("|"), None, kind=DerivativeKind.DISCRETE),
    # elementwise numpy functions: f'(x) written with x and, where cheaper, out = f(x)
    _unary_entry("exp", np.exp, lambda b, x, out: out),
    Primitive("log", np.log, elementwise(np.log), _np("log"), _vjp_log, zero_in=(0,), kind=DerivativeKind.RULE),
    _unary_entry("sin", np.sin, lambda b, x, out: b.prim("cos", x)),
    _unary_entry("cos", np.cos, lambda b, x, out: b.prim("neg", b.prim("sin", x))),
    _unary_entry("tan", np.tan, lambda b, x, out: b.prim("add", b.const(1.0), b.prim("mul", out, out))),
    _unary_entry("tanh", np.tanh, lambda b, x, out: b.prim("sub", b.const(1.0), b.prim("mul", out, out))),
    _unary_entry("sqrt", np.sqrt, lambda b, x, out: b.prim("div", b.const(0.5), out)),
    _unary_entry("abs", np.abs, lambda b, x, out: b.prim("sign", x)),
    *(_unary_entry(name, getattr(np, name), None) for name in ("sign", "floor", "ceil", "trunc", "rint")),
    Primitive("isnan", np.isnan, elementwise(np.isnan), _np("isnan"), None, kind=DerivativeKind.DISCRETE),
    Primitive("maximum", np.maximum, elementwise(np.maximum), _np("maximum"), vjp_extremum("ge", "lt"), kind=DerivativeKind.RULE),
    Primitive("minimum", np.minimum, elementwise(np.minimum), _np("minimum"), vjp_extremum("le", "gt"), kind=DerivativeKind.RULE),
    Primitive("power", np.power, elementwise(np.power), _np("power"), vjp_pow, kind=DerivativeKind.RULE),
    Primitive("where", np.where, _where_infer, _np("where"), _vjp_where, kind=DerivativeKind.RULE),
    Primitive("clip", np.clip, _clip_infer, _np("clip"), vjp_clip, kind=DerivativeKind.RULE),
    # reductions
    Primitive("sum", lambda x, axis=None, keepdims=False, dtype=None: np.sum(x, axis=axis, keepdims=keepdims, dtype=dtype), reduction(_sum_dtype), _emit_reduction("sum"), _vjp_sum, zero_in=(0,), method="sum", kind=DerivativeKind.RULE),
    Primitive("mean", np.mean, reduction(_mean_dtype), _emit_reduction("mean"), _vjp_mean, zero_in=(0,), method="mean", kind=DerivativeKind.RULE),
    Primitive("max", np.max, reduction(), _emit_reduction("max"), vjp_maxmin, method="max", kind=DerivativeKind.RULE),
    Primitive("min", np.min, reduction(), _emit_reduction("min"), vjp_maxmin, method="min", kind=DerivativeKind.RULE),
    Primitive("prod", np.prod, reduction(), _emit_reduction("prod"), _vjp_prod, method="prod", kind=DerivativeKind.RULE),
    # linear algebra and shapes
    Primitive("dot", np.dot, _dot_infer, _np("dot"), _vjp_matmul, zero_in=(0, 1), kind=DerivativeKind.RULE),
    Primitive("outer", np.outer, _outer_infer, _np("outer"), _vjp_outer, zero_in=(0, 1), kind=DerivativeKind.RULE),
    Primitive("transpose", lambda x, axes=None: np.transpose(x, axes), _transpose_infer, _emit_transpose, _vjp_transpose, zero_in=(0,), kind=DerivativeKind.RULE),
    Primitive("reshape", lambda x, *dims: np.reshape(x, dims), _reshape_infer, _emit_reshape, _vjp_reshape, zero_in=(0,), kind=DerivativeKind.RULE),
    Primitive("reshape_like", lambda x, like: np.reshape(x, np.shape(like)), lambda ts, ps: Num(_num(ts[1]).shape, _num(ts[0]).dtype),
              lambda a, ps: px.call("np.reshape", [a[0], px.call("np.shape", [a[1]])]), None, zero_in=(0,), kind=DerivativeKind.BACKWARD_ONLY),
    Primitive("ravel", np.ravel, lambda ts, ps: Num((_size_infer(ts, ps).value,), _num(ts[0]).dtype), _np("ravel"), _vjp_ravel, zero_in=(0,), kind=DerivativeKind.RULE),
    Primitive("expand_dims", lambda x, axis: np.expand_dims(x, axis), lambda ts, ps: _expand_infer(ts, {"axis": _norm_axes(ps["axis"], _num(ts[0]).ndim + (len(ps["axis"]) if isinstance(ps["axis"], tuple) else 1))}),
              lambda a, ps: px.call("np.expand_dims", [a[0], px.literal(ps["axis"])]), _vjp_expand, zero_in=(0,), kind=DerivativeKind.RULE),
    Primitive("concatenate", lambda *xs, axis=0: np.concatenate(xs, axis=axis), _concat_infer, _emit_stack("concatenate"), _vjp_concatenate, kind=DerivativeKind.RULE),
    Primitive("stack", lambda *xs, axis=0: np.stack(xs, axis=axis), _stack_infer, _emit_stack("stack"), _vjp_stack, kind=DerivativeKind.RULE),
    Primitive("diag", lambda x, k=0: np.diag(x, k), _diag_infer, lambda a, ps: px.call("np.diag", a + ([px.literal(ps["k"])] if ps.get("k") else [])), _vjp_diag, zero_in=(0,), kind=DerivativeKind.RULE),
    Primitive("tril", lambda x, k=0: np.tril(x, k), _tri_infer, lambda a, ps: px.call("np.tril", a + ([px.literal(ps["k"])] if ps.get("k") else [])), _vjp_tri("tril"), zero_in=(0,), kind=DerivativeKind.RULE),
    Primitive("triu", lambda x, k=0: np.triu(x, k), _tri_infer, lambda a, ps: px.call("np.triu", a + ([px.literal(ps["k"])] if ps.get("k") else [])), _vjp_tri("triu"), zero_in=(0,), kind=DerivativeKind.RULE),
    Primitive("getitem", lambda x, *ix, index: x[_index_value(index, (x, *ix))], _getitem_infer, _emit_getitem, _vjp_getitem, zero_in=(0,), kind=DerivativeKind.RULE),
    # discrete: shapes and constructors
    Primitive("shape", np.shape, _shape_infer, lambda a, ps: px.call("np.shape", a), None, kind=DerivativeKind.DISCRETE),
    Primitive("dim", lambda x, axis: np.shape(x)[axis], lambda ts, ps: Num((), "int64", py=True, value=_num(ts[0]).shape[ps["axis"]]),
              lambda a, ps: px.subscript(px.attr(a[0], "shape"), [px.literal(ps["axis"])]), None, kind=DerivativeKind.DISCRETE),
    Primitive("len", len, _len_infer, lambda a, ps: px.call("len", a), None, kind=DerivativeKind.DISCRETE),
    Primitive("size", np.size, _size_infer, lambda a, ps: px.call("np.size", a), None, kind=DerivativeKind.DISCRETE),
    Primitive("zeros", lambda *d, dtype="float64": np.zeros(d, dtype), _constructor_infer, _emit_constructor("zeros"), None, kind=DerivativeKind.ZERO),
    Primitive("ones", lambda *d, dtype="float64": np.ones(d, dtype), _constructor_infer, _emit_constructor("ones"), None, kind=DerivativeKind.ZERO),
    Primitive("zeros_like", lambda x, dtype=None: np.zeros_like(x, dtype), _like_infer, _emit_like("zeros_like"), None, kind=DerivativeKind.ZERO),
    Primitive("ones_like", lambda x, dtype=None: np.ones_like(x, dtype), _like_infer, _emit_like("ones_like"), None, kind=DerivativeKind.ZERO),
    Primitive("eye", lambda *d, dtype="float64": np.eye(*d, dtype=dtype), _eye_infer, _emit_constructor("eye"), None, kind=DerivativeKind.ZERO),
    Primitive("arange", lambda *a: np.arange(*a), _arange_infer, _np("arange"), vjp_arange, kind=DerivativeKind.RULE),
    # linear operations that only the AD macro introduces
    Primitive("select", lambda c, v, branch: np.where(c, v, 0.0) if branch else np.where(c, 0.0, v), _select_infer, _emit_select, None, zero_in=(1,), kind=DerivativeKind.BACKWARD_ONLY),
    Primitive("broadcast_to", lambda x, shape: np.broadcast_to(x, shape), _broadcast_to_infer, _np("broadcast_to"), _vjp_broadcast_to, zero_in=(0,), kind=DerivativeKind.RULE),
    Primitive("full", lambda x, shape, dtype=None: np.full(shape, x, dtype), lambda ts, ps: Num(_broadcast_to_infer(ts, ps).shape, ps.get("dtype") or _num(ts[0]).dtype),
              lambda a, ps: px.call("np.full", [a[1], a[0]], **({"dtype": px.name(f"np.{ps['dtype']}")} if ps.get("dtype") not in (None, "float64") else {})), None, zero_in=(0,), kind=DerivativeKind.BACKWARD_ONLY),
    Primitive("to_float", float, lambda ts, ps: Num((), _num(ts[0]).dtype, py=True), lambda a, ps: px.call("float", a),
              lambda b, p, out, ct: [ct], zero_in=(0,), kind=DerivativeKind.RULE),
    Primitive("sum_to", sum_to_shape, _sum_to_infer, _emit_runtime("sum_to_shape"), _vjp_sum_to, zero_in=(0,), kind=DerivativeKind.RULE),
    Primitive("scatter", lambda ct, x, *ix, index, zeros=None: _scatter_value(ct, x, ix, index), lambda ts, ps: Num(_num(ts[1]).shape, _num(ts[0]).dtype), None, None, zero_in=(0,), stmts=_stmts_scatter, kind=DerivativeKind.BACKWARD_ONLY),
    Primitive("scatter_add", _scatter_add_value, lambda ts, ps: ts[0], None, None, stmts=_stmts_scatter_add, kind=DerivativeKind.BACKWARD_ONLY),
    Primitive("prod_vjp", prod_vjp, lambda ts, ps: Num(_num(ts[0]).shape, _num(ts[1]).dtype), _emit_runtime("prod_vjp", "axis"), None, zero_in=(1,), kind=DerivativeKind.BACKWARD_ONLY),
    Primitive("log_domain", log_domain, lambda ts, ps: _log_domain_infer(ts[0]), _emit_runtime("log_domain"), None, kind=DerivativeKind.BACKWARD_ONLY),
    Primitive("diag_embed", diag_embed, lambda ts, ps: Num(_num(ts[1]).shape, _num(ts[0]).dtype), _emit_runtime("diag_embed", "k"), None, zero_in=(0,), kind=DerivativeKind.BACKWARD_ONLY),
)


def _log_domain_infer(t: Type) -> Num:
    """A float (numpy) with the shape of ``t``: ints become float64."""
    x = _num(t)
    return Num(x.shape, x.dtype if x.dtype in ("float32", "float64") else "float64")


def _index_value(index: tuple, args: Sequence[Any]) -> Any:
    def one(spec: Any) -> Any:
        if isinstance(spec, tuple) and spec and spec[0] == "arg":
            return args[spec[1]]
        return spec

    out = []
    for it in index:
        if isinstance(it, tuple) and it[0] == "slice":
            out.append(slice(one(it[1]), one(it[2]), one(it[3])))
        else:
            out.append(one(it))
    return tuple(out)


def _scatter_value(ct: Any, x: Any, args: Sequence[Any], index: tuple) -> Any:
    out = np.zeros_like(x)
    out[_index_value(index, (x, *args))] = ct
    return out


# --------------------------------------------------------------------------- lists


def list_onehot(like: list, i: int, ct: Any) -> list:
    """Cotangent of ``xs[i]``: zeros like each element, ``ct`` at ``i``."""
    out = list_zeros_like(like)
    out[i] = ct
    return out


def _list_scatter_add_value(acc: list, i: int, ct: Any) -> list:
    out = list(acc)
    out[i] = out[i] + ct
    return out


def _stmts_list_scatter_add(target: Expr, a: list[Expr], ps: dict) -> list[cst.BaseSmallStatement]:
    """``acc[i] = acc[i] + ct``: a read ``xs[i]`` inside a loop, accumulated into
    the loop's own list of cotangents (its elements are replaced, never changed)."""
    acc, i, ct = a
    item = px.subscript(target, [i])
    return [
        cst.Assign(targets=[cst.AssignTarget(target)], value=acc),
        cst.Assign(targets=[cst.AssignTarget(item)], value=px.binop("+", item, ct)),
    ]


def list_add(a: list, b: list) -> list:
    """Cotangents of a list, added element by element."""
    return [x + y for x, y in zip(a, b)]


def list_zeros_like(like: list) -> list:
    return [np.zeros(e.shape, e.dtype) if isinstance(e, np.ndarray) else 0.0 for e in like]


def or_zeros_like(ct: Any, like: Any) -> Any:
    """``ct``, or zeros like ``like`` when ``ct`` is the zero of a list (None)."""
    if ct is None:
        return list_zeros_like(like) if isinstance(like, list) else np.zeros_like(like)
    return ct


def unstack(ct: Any, axis: int) -> list:
    """Cotangent of ``np.stack(xs, axis)``: one slice per element."""
    return list(np.moveaxis(ct, axis, 0))


def split_like(ct: Any, like: list, axis: int) -> list:
    """Cotangent of ``np.concatenate(xs, axis)``: ``ct`` cut at the elements' sizes."""
    cuts = np.cumsum([np.shape(e)[axis] for e in like])[:-1]
    return list(np.split(ct, cuts, axis=axis))


def _list_t(t: Type) -> Any:
    from .ir import ListT

    if not isinstance(t, ListT):
        raise ShapeError(f"expected a list, got {t}")
    return t


def _list_infer(ts: list[Type], params: dict) -> Type:
    from .ir import ListT

    elem = ts[0] if ts else None
    for t in ts[1:]:
        if t != elem:
            raise ShapeError("the elements of a list that is built in a loop must have one type")
    return ListT(elem)


def _append_infer(ts: list[Type], params: dict) -> Type:
    from .ir import ListT

    l, v = _list_t(ts[0]), ts[1]
    if l.elem is not None and l.elem != v:
        if isinstance(l.elem, Num) and isinstance(v, Num) and l.elem.shape == v.shape:
            return ListT(Num(v.shape, np.result_type(l.elem.dtype, v.dtype).name))
        raise ShapeError(f"appending {v} to a list of {l.elem}")
    return ListT(v)


def _unknown_length(t: Type) -> Type:
    from .ir import ListT

    return ListT(t.elem) if isinstance(t, ListT) else t


def _list_of_length_infer(ts: list[Type], params: dict) -> Type:
    from .ir import ListT

    return ListT(_list_t(ts[0]).elem, params["n"])


def _list_elem(ts: list[Type], params: dict) -> Type:
    l = _list_t(ts[0])
    if l.elem is None:
        raise ShapeError("reading an element of a list nothing has been appended to")
    return l.elem


def _stack_list_infer(ts: list[Type], params: dict) -> Type:
    e = _num(_list_elem(ts, params))
    nd = e.ndim + 1
    axis = _norm_axes(params.get("axis", 0), nd)[0]
    shape = list(e.shape)
    shape.insert(axis, _list_t(ts[0]).length)
    return Num(tuple(shape), e.dtype)


def _concat_list_infer(ts: list[Type], params: dict) -> Type:
    e = _num(_list_elem(ts, params))
    axis = _norm_axes(params.get("axis", 0), e.ndim)[0]
    n = _list_t(ts[0]).length
    size = None if n is None or e.shape[axis] is None else n * e.shape[axis]
    return Num(tuple(size if i == axis else d for i, d in enumerate(e.shape)), e.dtype)


def _vjp_list(b, p, out, ct):
    return [b.prim("list_get", ct, b.const(k)) for k in range(len(p.args))]


def _vjp_append(b, p, out, ct):
    return [b.prim("list_init", ct), b.prim("list_get", ct, b.const(-1))]


def _vjp_list_get(b, p, out, ct):
    return [b.prim("list_onehot", p.args[0], p.args[1], ct), None]


def _vjp_stack_list(b, p, out, ct):
    return [b.prim("unstack", ct, axis=_norm_axes(p.param("axis", 0), _num(out.type).ndim)[0])]


def _vjp_concat_list(b, p, out, ct):
    return [b.prim("split_like", ct, p.args[0], axis=_norm_axes(p.param("axis", 0), _num(out.type).ndim)[0])]


def _emit_list(a: list[Expr], ps: dict) -> Expr:
    return cst.List([cst.Element(e) for e in a])


_register(
    Primitive("list", lambda *xs: list(xs), _list_infer, _emit_list, _vjp_list, kind=DerivativeKind.RULE),
    Primitive("append", lambda l, v: l + [v], _append_infer, lambda a, ps: px.binop("+", a[0], _emit_list([a[1]], ps)),
              _vjp_append, kind=DerivativeKind.RULE),
    Primitive("list_get", lambda l, i: l[i], _list_elem, lambda a, ps: px.subscript(a[0], [a[1]]), _vjp_list_get,
              zero_in=(0,), kind=DerivativeKind.RULE),
    Primitive("list_init", lambda l: l[:-1], lambda ts, ps: _unknown_length(ts[0]),
              lambda a, ps: px.subscript(a[0], [px.slice_(None, px.literal(-1), None)]), None, zero_in=(0,), kind=DerivativeKind.BACKWARD_ONLY),
    # in place, where the optimiser proved the old list is read by nothing else (O(1), not O(length))
    Primitive("append_in_place", lambda l, v: l + [v], lambda ts, ps: _append_infer(ts, ps), None, None,
              stmts=lambda t, a, ps: [cst.Assign([cst.AssignTarget(t)], a[0]),
                                      cst.Expr(px.method(t, "append", [a[1]]))], kind=DerivativeKind.BACKWARD_ONLY),
    Primitive("list_pop", lambda l: l[-1], _list_elem, None, None, zero_in=(0,),
              stmts=lambda t, a, ps: [cst.Assign([cst.AssignTarget(t)], px.method(a[0], "pop"))], kind=DerivativeKind.BACKWARD_ONLY),
    Primitive("list_popped", lambda l: l[:-1], lambda ts, ps: _unknown_length(ts[0]), lambda a, ps: a[0], None, zero_in=(0,), kind=DerivativeKind.BACKWARD_ONLY),
    # a list whose length is known when transforming (a comprehension over a range or an array's rows)
    Primitive("list_of_length", lambda l, n: l, _list_of_length_infer, lambda a, ps: a[0],
              lambda b, p, out, ct: [ct], zero_in=(0,), kind=DerivativeKind.RULE),
    Primitive("list_len", len, lambda ts, ps: Num((), "int64", py=True), lambda a, ps: px.call("len", a), None, kind=DerivativeKind.DISCRETE),
    Primitive("stack_list", lambda l, axis=0: np.stack(l, axis=axis), _stack_list_infer, _emit_stack_seq("stack"),
              _vjp_stack_list, kind=DerivativeKind.RULE),
    Primitive("concatenate_list", lambda l, axis=0: np.concatenate(l, axis=axis), _concat_list_infer,
              _emit_stack_seq("concatenate"), _vjp_concat_list, kind=DerivativeKind.RULE),
    Primitive("list_onehot", list_onehot, lambda ts, ps: ts[0], _emit_runtime("list_onehot"), None, zero_in=(2,), kind=DerivativeKind.BACKWARD_ONLY),
    Primitive("list_scatter_add", _list_scatter_add_value, lambda ts, ps: ts[0], None, None, stmts=_stmts_list_scatter_add, kind=DerivativeKind.BACKWARD_ONLY),
    Primitive("unstack", unstack, lambda ts, ps: _unstack_infer(ts, ps), _emit_runtime("unstack", "axis"), None,
              zero_in=(0,), kind=DerivativeKind.BACKWARD_ONLY),
    Primitive("split_like", split_like, lambda ts, ps: ts[1], _emit_runtime("split_like", "axis"), None, zero_in=(0,), kind=DerivativeKind.BACKWARD_ONLY),
    Primitive("list_zeros_like", list_zeros_like, lambda ts, ps: ts[0], _emit_runtime("list_zeros_like"), None, kind=DerivativeKind.BACKWARD_ONLY),
    # a cotangent leaving a branch or loop body whose zero is made at run time (a
    # list, an array of run-time length): the simplifier turns it into the
    # cotangent, or into zeros like the primal if the cotangent is zero
    Primitive("or_zeros_like", or_zeros_like, lambda ts, ps: ts[1], None, None, kind=DerivativeKind.BACKWARD_ONLY),
)


def _unstack_infer(ts: list[Type], params: dict) -> Type:
    from .ir import ListT

    x = _num(ts[0])
    shape = list(x.shape)
    del shape[params["axis"]]
    return ListT(Num(tuple(shape), x.dtype))


#: Names the generated code may use besides ``np``: runtime helpers.
RUNTIME = {"sum_to_shape": sum_to_shape, "log_domain": log_domain, "prod_vjp": prod_vjp, "diag_embed": diag_embed, "list_onehot": list_onehot,
           "list_add": list_add, "list_zeros_like": list_zeros_like, "unstack": unstack, "split_like": split_like}


def infer(op: str, arg_types: list[Type], params: dict) -> Type:
    return TABLE[op].infer(arg_types, params)


# ``x.copy()``: the same value in new memory (astad.aliases: an in-place update of it changes nothing else)
_register(Primitive("copy", np.copy, lambda ts, ps: ts[0], lambda a, ps: px.method(a[0], "copy", []),
                    lambda b, p, out, ct: [ct], zero_in=(0,), kind=DerivativeKind.RULE))

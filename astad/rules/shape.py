"""Functions that move entries around or make arrays: transposes, reshapes,
joins, broadcasting, copies, shapes and constructors.  The movers are linear:
each is given by its transpose, and its JVP is itself applied to the tangent."""

from __future__ import annotations

from typing import Any

import libcst as cst
import numpy as np

from .. import backends
from .. import pyexpr as px
from ..ir import Atom, Num, TupleT, Type
from . import emit
from .derive import broadcast_like, explicit, like_scalar, linear, shape_atom, sum_to
from .table import DerivativeKind, Primitive, ShapeError, norm_axes, num, register, runtime
from .types import broadcast_shapes, known_ints, mismatch, result_dtype, size_infer, size_of

RULE, ZERO, DISCRETE, BACKWARD = (DerivativeKind.RULE, DerivativeKind.ZERO, DerivativeKind.DISCRETE,
                                  DerivativeKind.BACKWARD_ONLY)


# --------------------------------------------------------------------------- type rules


def _transpose_infer(ts: list[Type], params: dict) -> Type:
    x = num(ts[0])
    axes = params.get("axes") or tuple(reversed(range(x.ndim)))
    if any(not -x.ndim <= a < x.ndim for a in axes):
        raise ShapeError(f"axes {axes} are out of bounds for an array of dimension {x.ndim}")
    if sorted(a % max(x.ndim, 1) for a in axes) != list(range(x.ndim)):
        raise ShapeError(f"axes {axes} do not match an array of dimension {x.ndim}")
    return Num(tuple(x.shape[a] for a in axes), x.dtype)


def _reshape_infer(ts: list[Type], params: dict) -> Type:
    x = num(ts[0])
    dims = known_ints(ts[1:])
    for t in ts[1:]:
        if not (isinstance(t, Num) and t.shape == () and np.dtype(t.dtype).kind in "iu"):
            raise ShapeError("reshape needs integer dimensions")
    total = size_of(x.shape) if x.known_shape else None
    if dims.count(-1) == 1 and total is not None and all(d is not None for d in dims):
        rest = size_of([d for d in dims if d != -1])
        if rest == 0 or total % rest:
            raise ShapeError(f"cannot reshape an array of size {total} into shape {tuple(dims)}")
        dims = [total // rest if d == -1 else d for d in dims]
    elif all(d is not None for d in dims) and total is not None and size_of(dims) != total:
        raise ShapeError(f"cannot reshape an array of size {total} into shape {tuple(dims)}")
    return Num(tuple(None if d in (None, -1) else d for d in dims), x.dtype)


def _concat_infer(ts: list[Type], params: dict) -> Type:
    xs = [num(t) for t in ts]
    nd = xs[0].ndim
    if nd == 0 or any(x.ndim != nd for x in xs):
        raise ShapeError("concatenate needs arrays of the same number (at least one) of dimensions")
    axis = norm_axes(params.get("axis", 0), nd)[0]
    shape = []
    for i in range(nd):
        dims = [x.shape[i] for x in xs]
        if i == axis:
            shape.append(None if None in dims else sum(dims))  # type: ignore[arg-type]
        else:
            shape.append(broadcast_shapes(*[(d,) for d in dims])[0] if len({d for d in dims if d is not None}) <= 1 else mismatch(xs))
    return Num(tuple(shape), result_dtype(*[x.dtype for x in xs]))


def _stack_infer(ts: list[Type], params: dict) -> Type:
    xs = [num(t) for t in ts]
    if len({x.shape for x in xs}) != 1:
        mismatch(xs)
    nd = xs[0].ndim + 1
    axis = norm_axes(params.get("axis", 0), nd)[0]
    shape = list(xs[0].shape)
    shape.insert(axis, len(xs))
    return Num(tuple(shape), result_dtype(*[x.dtype for x in xs]))


def _expand_infer(ts: list[Type], params: dict) -> Type:
    x = num(ts[0])
    axis = params["axis"]
    axes = norm_axes(axis, x.ndim + (len(axis) if isinstance(axis, tuple) else 1))
    shape = list(x.shape)
    for a in sorted(axes):
        shape.insert(a, 1)
    return Num(tuple(shape), x.dtype)


def _broadcast_to_infer(ts: list[Type], params: dict) -> Type:
    x, shape = num(ts[0]), ts[1]
    dims = tuple(t.value for t in shape.items) if isinstance(shape, TupleT) else None  # type: ignore[union-attr]
    if dims is None:
        raise ShapeError("broadcast_to needs a shape")
    return Num(dims, x.dtype)


def _sum_to_infer(ts: list[Type], params: dict) -> Type:
    x, like = num(ts[0]), num(ts[1])
    return Num(like.shape, x.dtype, like.py and not like.shape)


def _shape_infer(ts: list[Type], params: dict) -> Type:
    x = num(ts[0])
    return TupleT(tuple(Num((), "int64", py=True, value=d) for d in x.shape))


def _len_infer(ts: list[Type], params: dict) -> Type:
    x = ts[0]
    if isinstance(x, TupleT):
        return Num((), "int64", py=True, value=len(x.items))
    x = num(x)
    if x.ndim == 0:
        raise ShapeError("len() of a scalar")
    return Num((), "int64", py=True, value=x.shape[0])


def _constructor_infer(ts: list[Type], params: dict) -> Type:
    return Num(tuple(known_ints(ts)), params.get("dtype", "float64"))


def _like_infer(ts: list[Type], params: dict) -> Type:
    x = num(ts[0])
    return Num(x.shape, params.get("dtype") or x.dtype)


def _eye_infer(ts: list[Type], params: dict) -> Type:
    dims = known_ints(ts)
    return Num((dims[0], dims[-1]), params.get("dtype", "float64"))


def _arange_infer(ts: list[Type], params: dict) -> Type:
    vals = known_ints(ts)
    dtype = "float64" if any(num(t).dtype == "float64" for t in ts) else "int64"
    n = len(np.arange(*vals)) if all(v is not None for v in vals) else None
    return Num((n,), dtype)


# --------------------------------------------------------------------------- transposes


def reshape_like(b: Any, v: Atom, like: Atom) -> Atom:
    """``v`` reshaped to the shape of ``like``."""
    lt = num(like.type)
    if num(v.type).shape == lt.shape and lt.known_shape:
        return like_scalar(b, v, like)
    if lt.known_shape:
        return like_scalar(b, b.prim("reshape", v, *[b.const(d) for d in lt.shape]), like)
    return b.prim("reshape_like", v, like)


def _transpose_transpose(b, p, out, ct):
    axes = p.param("axes")
    if num(p.args[0].type).ndim < 2:
        return [like_scalar(b, ct, p.args[0])]
    if axes is None:
        return [b.prim("transpose", ct)]
    nd = len(axes)
    return [b.prim("transpose", ct, axes=tuple(int(i) for i in np.argsort([a % nd for a in axes])))]


def _reshape_transpose(b, p, out, ct):
    return [reshape_like(b, ct, p.args[0])] + [None] * (len(p.args) - 1)


def _concatenate_transpose(b, p, out, ct):
    """The cotangent cut back into the pieces: slices along the axis, at offsets
    known when transforming or, where a piece's size is known only at run time,
    read from the piece's shape then (``a.shape[axis]``)."""
    nd = num(out.type).ndim
    axis = norm_axes(p.param("axis", 0), nd)[0]
    result: list = []
    start: Any = 0
    for a in p.args:
        size = num(a.type).shape[axis]
        step = size if size is not None else b.prim("dim", a, axis=axis)
        if isinstance(start, int) and isinstance(step, int):
            stop = start + step
        elif start == 0:
            stop = step
        else:
            stop = b.prim("add", b.const(start) if isinstance(start, int) else start,
                          b.const(step) if isinstance(step, int) else step)
        dynamic = [x for x in (start, stop) if not isinstance(x, int)]  # getitem's extra arguments
        lo = start if isinstance(start, int) else ("arg", 1)
        hi = stop if isinstance(stop, int) else ("arg", len(dynamic))
        index = (("slice", None, None, None),) * axis + (("slice", lo or None, hi, None),)
        result.append(b.prim("getitem", ct, *dynamic, index=index))
        start = stop
    return result


def _stack_transpose(b, p, out, ct):
    axis = norm_axes(p.param("axis", 0), num(out.type).ndim)[0]
    return [b.prim("getitem", ct, index=(("slice", None, None, None),) * axis + (i,)) for i in range(len(p.args))]


def _broadcast_to_transpose(b, p, out, ct):
    return [sum_to(b, ct, p.args[0]), None]


def _sum_to_transpose(b, p, out, ct):
    return [b.prim("broadcast_to", ct, shape_atom(b, p.args[0])), None]


def _full_transpose(b, p, out, ct):
    return [like_scalar(b, sum_to(b, ct, p.args[0]), p.args[0]), None]


def _identity_transpose(b, p, out, ct):
    return [ct]


def vjp_arange(b, p, out, ct):
    """``np.arange(start, stop, step)[i] = start + i * step``: d/dstart = sum(ct),
    d/dstep = sum(i * ct); ``stop`` (and a lone argument) only sets the length."""
    if len(p.args) == 1:
        return [None]
    start = like_scalar(b, b.prim("sum", ct), p.args[0])
    if len(p.args) == 2:
        return [start, None]
    i = b.prim("arange", b.prim("size", ct))
    return [start, None, like_scalar(b, b.prim("sum", b.prim("mul", ct, i)), p.args[2])]


def jvp_arange(b, p, out, ts):
    """The transpose of :func:`vjp_arange`: ``t_start + i * t_step``."""
    if len(p.args) == 1:
        return None
    terms = []
    if ts[0] is not None:
        terms.append(broadcast_like(b, ts[0], out))
    if len(p.args) == 3 and ts[2] is not None:
        terms.append(b.prim("mul", b.prim("arange", b.prim("size", out)), ts[2]))
    if not terms:
        return None
    return terms[0] if len(terms) == 1 else b.prim("add", *terms)


# --------------------------------------------------------------------------- runtime helpers and printing


def _emit_to_float(a: list[Any], ps: dict) -> Any:
    """``float(x)``: astad's own conversion of a cotangent to the Python float it stands
    for; on a Dask (CuPy) backend the 0-d array itself (``float`` would compute it)."""
    return px.call("float", a) if backends.current() == backends.NUMPY else a[0]


@runtime
def sum_to_shape(ct: Any, like: Any) -> Any:
    """Sum ``ct`` down to the shape of ``like`` (broadcasting undone at run time)."""
    return sum_to_dims(ct, np.shape(like))


@runtime
def sum_to_dims(ct: Any, shape: tuple) -> Any:
    """Sum ``ct`` down to ``shape`` (broadcasting undone at run time)."""
    lead = np.ndim(ct) - len(shape)
    axes = tuple(range(lead)) + tuple(lead + i for i, d in enumerate(shape) if d == 1 and np.shape(ct)[lead + i] != 1)
    out = np.sum(ct, axis=axes) if axes else ct
    return np.reshape(out, shape) if np.shape(out) != shape else out


def _emit_transpose(a: list, ps: dict) -> Any:
    if ps.get("axes") is None:
        return px.attr(a[0], "T")
    return px.call("np.transpose", [a[0], px.literal(ps["axes"])])


def _emit_reshape(a: list, ps: dict) -> Any:
    # np.reshape, not the method: the argument may be a Python float (a scalar cotangent)
    return px.call("np.reshape", [a[0], px.tuple_(a[1:]) if len(a) != 2 else a[1]])


def _emit_stack(a: list, ps: dict) -> Any:
    """``np.stack([x, y])``; numbers written in the code as ``np.array([0, 2])``."""
    def number(e: Any) -> bool:
        return isinstance(e, (cst.Integer, cst.Float)) or (isinstance(e, cst.UnaryOperation) and number(e.expression))

    if ps.get("axis", 0) == 0 and a and all(number(e) for e in a):
        return px.call("np.array", [cst.List([cst.Element(e) for e in a])])
    return emit.sequence("stack")(a, ps)


def _emit_full(a: list, ps: dict) -> Any:
    return px.call("np.full", [a[1], a[0]], **({"dtype": px.name(f"np.{ps['dtype']}")} if ps.get("dtype") not in (None, "float64") else {}))


# --------------------------------------------------------------------------- the entries


register(
    # linear: moving entries
    Primitive("transpose", lambda x, axes=None: np.transpose(x, axes), _transpose_infer, _emit_transpose, zero_in=(0,), kind=RULE,
              **linear(_transpose_transpose)),
    Primitive("reshape", lambda x, *dims: np.reshape(x, dims), _reshape_infer, _emit_reshape, zero_in=(0,), kind=RULE,
              **linear(_reshape_transpose, 0)),
    Primitive("ravel", np.ravel, lambda ts, ps: Num((size_infer(ts, ps).value,), num(ts[0]).dtype), emit.np_call("ravel"),
              zero_in=(0,), kind=RULE, **linear(lambda b, p, out, ct: [reshape_like(b, ct, p.args[0])])),
    Primitive("expand_dims", lambda x, axis: np.expand_dims(x, axis), _expand_infer,
              lambda a, ps: px.call("np.expand_dims", [a[0], px.literal(ps["axis"])]), zero_in=(0,), kind=RULE,
              **linear(lambda b, p, out, ct: [reshape_like(b, ct, p.args[0])])),
    Primitive("concatenate", lambda *xs, axis=0: np.concatenate(xs, axis=axis), _concat_infer, emit.sequence("concatenate"),
              kind=RULE, **linear(_concatenate_transpose)),
    Primitive("stack", lambda *xs, axis=0: np.stack(xs, axis=axis), _stack_infer, _emit_stack, kind=RULE,
              **linear(_stack_transpose)),
    Primitive("broadcast_to", lambda x, shape: np.broadcast_to(x, shape), _broadcast_to_infer, emit.np_call("broadcast_to"),
              zero_in=(0,), kind=RULE, **linear(_broadcast_to_transpose, 0)),
    Primitive("sum_to", sum_to_shape, _sum_to_infer, emit.runtime("sum_to_shape"), zero_in=(0,), kind=RULE,
              **linear(_sum_to_transpose, 0)),
    # ``sum_to`` given the shape (the optimiser keeps a shape, not an array, for it: optimise/shapes.py)
    Primitive("sum_to_dims", sum_to_dims, lambda ts, ps: Num(_broadcast_to_infer([num(ts[0]), ts[1]], ps).shape,
                                                             num(ts[0]).dtype),
              emit.runtime("sum_to_dims"), zero_in=(0,), kind=BACKWARD,
              **linear(lambda b, p, out, ct: [b.prim("broadcast_to", ct, p.args[1]), None], 0)),
    Primitive("to_float", float, lambda ts, ps: Num((), "float64", py=True), _emit_to_float,  # (float() is a float64)
              zero_in=(0,), kind=RULE, **linear(_identity_transpose)),
    # ``x.copy()``: the same value in new memory (astad.aliases: an in-place update of it changes nothing else);
    # ``array``: ``np.copy(x)`` of a 0-d value (a 0-d array also of a numpy scalar, whose ``.copy()`` is one)
    Primitive("copy", np.copy, lambda ts, ps: ts[0],
              lambda a, ps: px.call("np.copy", a) if ps.get("array") else px.method(a[0], "copy", []), zero_in=(0,),
              kind=RULE, **linear(_identity_transpose)),
    # ``np.full(shape, v)``: linear in ``v`` (also made in derivative code: a scalar cotangent spread over a shape)
    Primitive("full", lambda x, shape, dtype=None: np.full(shape, x, dtype),
              lambda ts, ps: Num(_broadcast_to_infer(ts, ps).shape, ps.get("dtype") or num(ts[0]).dtype), _emit_full,
              zero_in=(0,), kind=RULE, **linear(_full_transpose, 0)),
    # made only in derivative code: ``reshape_like``
    Primitive("reshape_like", lambda x, like: np.reshape(x, np.shape(like)), lambda ts, ps: Num(num(ts[1]).shape, num(ts[0]).dtype),
              lambda a, ps: px.call("np.reshape", [a[0], px.call("np.shape", [a[1]])]), zero_in=(0,), kind=BACKWARD,
              **linear(lambda b, p, out, ct: [reshape_like(b, ct, p.args[0]), None], 0)),
    # discrete: shapes
    Primitive("shape", np.shape, _shape_infer, lambda a, ps: px.call("np.shape", a), kind=DISCRETE),
    Primitive("dim", lambda x, axis: np.shape(x)[axis], lambda ts, ps: Num((), "int64", py=True, value=num(ts[0]).shape[ps["axis"]]),
              lambda a, ps: px.subscript(px.attr(a[0], "shape"), [px.literal(ps["axis"])]), kind=DISCRETE),
    Primitive("len", len, _len_infer, lambda a, ps: px.call("len", a), kind=DISCRETE),
    Primitive("size", np.size, size_infer, lambda a, ps: px.call("np.size", a), kind=DISCRETE),
    # constructors
    Primitive("zeros", lambda *d, dtype="float64": np.zeros(d, dtype), _constructor_infer, emit.constructor("zeros"), kind=ZERO),
    Primitive("ones", lambda *d, dtype="float64": np.ones(d, dtype), _constructor_infer, emit.constructor("ones"), kind=ZERO),
    Primitive("zeros_like", lambda x, dtype=None: np.zeros_like(x, dtype), _like_infer, emit.like("zeros_like"), kind=ZERO),
    Primitive("ones_like", lambda x, dtype=None: np.ones_like(x, dtype), _like_infer, emit.like("ones_like"), kind=ZERO),
    Primitive("eye", lambda *d, dtype="float64": np.eye(*d, dtype=dtype), _eye_infer, emit.constructor("eye"), kind=ZERO),
    Primitive("arange", lambda *a: np.arange(*a), _arange_infer, emit.np_call("arange"), kind=RULE,
              **explicit(jvp_arange, vjp_arange)),
)

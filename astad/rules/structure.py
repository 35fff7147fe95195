"""Structure: functions that reorder, repeat, pick or pad entries (``squeeze``,
``flip``, ``roll``, ``tile``, ``repeat``, ``take``, ``take_along_axis``,
``pad``) and constants built from numbers (``linspace``, ``tri``).

All but the constants are linear in the array, each given by its transpose:
``flip`` and ``roll`` undo themselves, ``tile`` and ``repeat`` sum the copies,
``take`` and ``take_along_axis`` scatter-add the cotangent back
(``np.add.at``, repeated indices summed), ``pad`` keeps the inner part (edge
mode adds the padded borders onto the edges).  ``linspace`` is linear in
``(start, stop)`` together."""

from __future__ import annotations

from typing import Any

import libcst as cst
import numpy as np

from .. import pyexpr as px
from ..ir import Atom, Num, Type
from . import emit
from .derive import like_scalar, linear
from .shape import reshape_like
from .table import DerivativeKind, Primitive, ShapeError, norm_axes, num, register, runtime
from .types import broadcast_shapes, fmt_shape, known_ints, sample

RULE, ZERO, BACKWARD = DerivativeKind.RULE, DerivativeKind.ZERO, DerivativeKind.BACKWARD_ONLY
ALL = ("slice", None, None, None)


def dims_of(b: Any, x: Atom, shape: tuple) -> list[Atom]:
    """``shape`` (of ``x``'s axes, None where not known) as atoms for ``reshape``."""
    return [b.const(d) if d is not None else b.prim("dim", x, axis=i) for i, d in enumerate(shape)]


def _same_infer(ts: list[Type], params: dict) -> Type:
    x = num(ts[0])
    if params.get("axis") is not None:
        norm_axes(params["axis"], x.ndim)
    return Num(x.shape, x.dtype)


# --------------------------------------------------------------------------- squeeze, flip, roll


def _squeeze_infer(ts: list[Type], params: dict) -> Type:
    x, axis = num(ts[0]), params.get("axis")
    if axis is None:
        if not x.known_shape:
            raise ShapeError("np.squeeze without `axis` needs a shape known when transforming", "name the axis: axis=0")
        axes = tuple(i for i, d in enumerate(x.shape) if d == 1)
    else:
        axes = norm_axes(axis, x.ndim)
        if any(x.shape[a] not in (1, None) for a in axes):
            raise ShapeError(f"cannot squeeze an axis of size other than 1 (shape {fmt_shape(x.shape)}, axis {axis})")
    return Num(tuple(d for i, d in enumerate(x.shape) if i not in axes), x.dtype)


def _flip_transpose(b, p, out, ct):
    return [like_scalar(b, b.prim("flip", ct, **dict(p.params)), p.args[0])]


def _roll_transpose(b, p, out, ct):
    shift = p.param("shift")
    back = tuple(-s for s in shift) if isinstance(shift, tuple) else -shift
    return [b.prim("roll", ct, shift=back, axis=p.param("axis"))]


def _emit_roll(a: list, ps: dict) -> Any:
    kw = {"axis": px.literal(ps["axis"])} if ps.get("axis") is not None else {}
    return px.call("np.roll", [a[0], px.literal(ps["shift"])], **kw)


# --------------------------------------------------------------------------- tile, repeat: copies, summed back


def _tile_reps(x: Num, reps: Any) -> tuple[tuple, tuple]:
    reps = (reps,) if isinstance(reps, int) else tuple(reps)
    nd = max(x.ndim, len(reps))
    return (1,) * (nd - x.ndim) + x.shape, (1,) * (nd - len(reps)) + reps


def _tile_infer(ts: list[Type], params: dict) -> Type:
    shape, reps = _tile_reps(num(ts[0]), params["reps"])
    return Num(tuple(None if d is None else d * r for d, r in zip(shape, reps)), num(ts[0]).dtype)


def _tile_transpose(b, p, out, ct):
    """``ct`` read as ``(r0, s0, r1, s1, ...)``, summed over the copies ``r``."""
    x = p.args[0]
    shape, reps = _tile_reps(num(x.type), p.param("reps"))
    if all(r == 1 for r in reps):
        return [reshape_like(b, ct, x)]
    if None in shape:
        raise ShapeError("np.tile: the shape must be known when transforming to differentiate")
    split = b.prim("reshape", ct, *[b.const(d) for pair in zip(reps, shape) for d in pair])
    axes = tuple(2 * i for i, r in enumerate(reps) if r != 1)
    return [reshape_like(b, b.prim("sum", split, axis=axes if len(axes) != 1 else axes[0], keepdims=False), x)]


def _repeat_infer(ts: list[Type], params: dict) -> Type:
    x, axis = num(ts[0]), params.get("axis")
    if len(ts) > 1:
        r = num(ts[1])
        if r.ndim > 1 or np.dtype(r.dtype).kind not in "iu":
            raise ShapeError("np.repeat needs an int or a 1-D array of ints as `repeats`")
        total = None
    else:
        total = params["repeats"]
    if axis is None:
        size = int(np.prod(x.shape)) if x.known_shape else None
        return Num((None if size is None or total is None else size * total,), x.dtype)
    a = norm_axes(axis, x.ndim)[0]
    n = x.shape[a]
    return Num(x.shape[:a] + (None if n is None or total is None else n * total,) + x.shape[a + 1:], x.dtype)


def _repeat_transpose(b, p, out, ct):
    x, axis = p.args[0], p.param("axis")
    t = num(x.type)
    if len(p.args) > 1:  # repeats per entry: a take of np.repeat(np.arange(n), repeats)
        n = b.prim("size", x) if axis is None else b.prim("dim", x, axis=norm_axes(axis, t.ndim)[0])
        idx = b.prim("repeat", b.prim("arange", n), p.args[1], axis=None)
        if axis is None:
            return [reshape_like(b, b.prim("take_transpose", ct, b.prim("ravel", x), idx, axis=0), x), None]
        return [b.prim("take_transpose", ct, x, idx, axis=axis), None]
    r = p.param("repeats")
    if axis is None:
        groups = b.prim("reshape", ct, b.const(-1), b.const(r))
        return [reshape_like(b, b.prim("sum", groups, axis=1, keepdims=False), x)]
    a = norm_axes(axis, t.ndim)[0]
    shape = dims_of(b, x, t.shape)
    groups = b.prim("reshape", ct, *shape[:a + 1], b.const(r), *shape[a + 1:])
    return [b.prim("sum", groups, axis=a + 1, keepdims=False)]


def _emit_repeat(a: list, ps: dict) -> Any:
    kw = {"axis": px.literal(ps["axis"])} if ps.get("axis") is not None else {}
    return px.call("np.repeat", [a[0], a[1] if len(a) > 1 else px.literal(ps["repeats"])], **kw)


# --------------------------------------------------------------------------- take, take_along_axis: gathers, scatter-added back


def _take_infer(ts: list[Type], params: dict) -> Type:
    x, idx, axis = num(ts[0]), num(ts[1]), params.get("axis")
    if np.dtype(idx.dtype).kind not in "iu":
        raise ShapeError(f"np.take needs integer indices, not {idx}")
    if axis is None:
        return Num(idx.shape, x.dtype)
    a = norm_axes(axis, x.ndim)[0]
    return Num(x.shape[:a] + idx.shape + x.shape[a + 1:], x.dtype)


def _take_transpose(b, p, out, ct):
    x, axis = p.args[0], p.param("axis")
    if axis is None:  # np.take of the flattened array
        return [reshape_like(b, b.prim("take_transpose", ct, b.prim("ravel", x), p.args[1], axis=0), x), None]
    return [b.prim("take_transpose", ct, x, p.args[1], axis=axis), None]


def _take_transpose_value(ct: Any, x: Any, idx: Any, axis: int = 0) -> Any:
    out = np.zeros_like(x, dtype=np.result_type(x, ct))
    np.add.at(out, (slice(None),) * (axis % np.ndim(x)) + (idx,), ct)
    return out


def _stmts_take_transpose(target: Any, a: list, ps: dict) -> list:
    """``x_ct = np.zeros_like(x); np.add.at(x_ct, np.s_[:, idx], ct)``: repeated indices summed."""
    ct, x, idx = a
    axis = ps.get("axis", 0)
    if axis == 0:
        where = idx
    elif axis < 0:  # np.s_[..., idx, :]: counted from the end (a negative axis was np.s_[idx], axis 0)
        where = px.subscript(px.name("np.s_"), [cst.Ellipsis(), idx] + [px.slice_(None, None, None)] * (-axis - 1))
    else:
        where = px.subscript(px.name("np.s_"), [px.slice_(None, None, None)] * axis + [idx])
    return [emit.assign(target, px.call("np.zeros_like", [x])),
            cst.Expr(px.call("np.add.at", [target, where, ct]))]


def _take_transpose_infer(ts: list[Type], params: dict) -> Type:
    x = num(ts[1])
    return Num(x.shape, np.result_type(x.dtype, num(ts[0]).dtype).name)


def _take_transpose_transpose(b, p, out, ct):
    return [b.prim("take", ct, p.args[2], axis=p.param("axis", 0)), None, None]


def _along_infer(ts: list[Type], params: dict) -> Type:
    x, idx, axis = num(ts[0]), num(ts[1]), params.get("axis")
    if np.dtype(idx.dtype).kind not in "iu":
        raise ShapeError(f"np.take_along_axis needs integer indices, not {idx}")
    if axis is None:
        if idx.ndim != 1:
            raise ShapeError("np.take_along_axis with axis=None needs 1-D indices")
        return Num(idx.shape, x.dtype)
    if idx.ndim != x.ndim:
        raise ShapeError(f"np.take_along_axis needs indices of the array's dimension {x.ndim}, not {idx.ndim}")
    a = norm_axes(axis, x.ndim)[0]
    rest = broadcast_shapes(tuple(d for i, d in enumerate(x.shape) if i != a), tuple(d for i, d in enumerate(idx.shape) if i != a))
    return Num(rest[:a] + (idx.shape[a],) + rest[a:], x.dtype)


@runtime
def add_along_axis(ct: Any, like: Any, indices: Any, axis: Any) -> Any:
    """The transpose of ``np.take_along_axis(like, indices, axis)``: ``ct``
    added into zeros shaped like ``like`` where the entries were taken from."""
    out = np.zeros(np.shape(like), dtype=np.result_type(like, ct))
    if axis is None:
        np.add.at(out.reshape(-1), indices, ct)  # a view: ``out`` is contiguous
        return out
    nd = np.ndim(like)
    axis %= nd
    where = tuple(indices if i == axis else np.arange(n).reshape((1,) * i + (-1,) + (1,) * (nd - i - 1))
                  for i, n in enumerate(np.shape(like)))
    np.add.at(out, where, ct)
    return out


def _along_transpose(b, p, out, ct):
    return [b.prim("add_along_axis", ct, p.args[0], p.args[1], axis=p.param("axis")), None]


def _add_along_transpose(b, p, out, ct):
    return [b.prim("take_along_axis", ct, p.args[2], axis=p.param("axis")), None, None]


# --------------------------------------------------------------------------- pad


def norm_pad_width(width: Any, ndim: int) -> tuple[tuple[int, int], ...]:
    """numpy's ``pad_width`` (``n``, ``(n,)``, ``(before, after)`` or one pair per axis) as one pair per axis."""
    w = np.asarray(width)
    if w.dtype.kind not in "iu" or (w < 0).any():
        raise ShapeError(f"np.pad: pad_width {width!r} must be non-negative integers")
    try:
        w = np.broadcast_to(w.reshape((-1, 2)) if w.ndim == 1 and w.size == 2 else w, (ndim, 2))
    except ValueError:
        raise ShapeError(f"np.pad: pad_width {width!r} does not fit an array of dimension {ndim}") from None
    return tuple((int(a), int(c)) for a, c in w)


def _pad_infer(ts: list[Type], params: dict) -> Type:
    x = num(ts[0])
    if x.ndim == 0:
        raise ShapeError("np.pad of a scalar")
    if len(ts) > 1 and num(ts[1]).ndim:
        raise ShapeError("np.pad: constant_values must be one number", "pad with one value, or concatenate")
    width = norm_pad_width(params["pad_width"], x.ndim)
    return Num(tuple(None if d is None else d + a + c for d, (a, c) in zip(x.shape, width)), x.dtype)


def _inner_index(width: tuple) -> tuple:
    return tuple(("slice", a or None, -c if c else None, None) for a, c in width)


def _pad_transpose(b, p, out, ct):
    """The inner part goes to the array; the rest, the padding, to ``constant_values``."""
    x = p.args[0]
    width = norm_pad_width(p.param("pad_width"), num(x.type).ndim)
    if p.param("mode") == "edge":
        return [b.prim("unpad_edge", ct, pad_width=width)]
    inner = b.prim("getitem", ct, index=_inner_index(width))
    if len(p.args) == 1:
        return [inner]
    c = p.args[1]
    rest = b.prim("sub", b.prim("sum", ct), b.prim("sum", inner))
    return [inner, like_scalar(b, rest, c) if num(c.type).differentiable else None]


def _emit_pad(a: list, ps: dict) -> Any:
    kw = {"mode": cst.SimpleString(repr(ps["mode"]))} if ps["mode"] != "constant" else {}
    if len(a) > 1 and not (isinstance(a[1], (cst.Integer, cst.Float)) and float(a[1].value) == 0.0):
        kw["constant_values"] = a[1]
    return px.call("np.pad", [a[0], px.literal(ps["pad_width"])], **kw)


@runtime
def unpad_edge(ct: Any, pad_width: tuple) -> Any:
    """The transpose of ``np.pad(x, pad_width, mode='edge')``: the inner part of
    ``ct``, with what was padded on each side added onto the edge it copies."""
    for axis, (before, after) in enumerate(pad_width):
        ct = np.moveaxis(ct, axis, 0)
        n = ct.shape[0] - before - after
        inner = ct[before:before + n].copy()
        inner[0] += ct[:before].sum(axis=0)
        inner[-1] += ct[before + n:].sum(axis=0)
        ct = np.moveaxis(inner, 0, axis)
    return ct


def _unpad_infer(ts: list[Type], params: dict) -> Type:
    x = num(ts[0])
    return Num(tuple(None if d is None else d - a - c for d, (a, c) in zip(x.shape, params["pad_width"])), x.dtype)


# --------------------------------------------------------------------------- constants: linspace, tri


def _linspace_infer(ts: list[Type], params: dict) -> Type:
    start, stop = num(ts[0]), num(ts[1])
    if start.ndim or stop.ndim:
        raise ShapeError("np.linspace of arrays is not supported", "numbers as start and stop")
    # numpy's dtype: result_type(start, stop, float(num)), a Python float weak (NEP 50): float32 of float32s
    return Num((params["num"],), np.linspace(sample(start), sample(stop), 2).dtype.name)


def _linspace_transpose(b, p, out, ct):
    """``out = start * (1 - w) + stop * w`` with ``w = np.linspace(0.0, 1.0, num)``."""
    start, stop = p.args
    w = b.prim("linspace", b.const(0.0), b.const(1.0), **dict(p.params))
    to_stop = b.prim("sum", b.prim("mul", ct, w))
    to_start = b.prim("sub", b.prim("sum", ct), to_stop)
    return [like_scalar(b, to_start, start) if num(start.type).differentiable else None,
            like_scalar(b, to_stop, stop) if num(stop.type).differentiable else None]


def _emit_linspace(a: list, ps: dict) -> Any:
    kw = {"endpoint": px.literal(False)} if not ps.get("endpoint", True) else {}
    return px.call("np.linspace", [*a, px.literal(ps["num"])], **kw)


def _tri_infer(ts: list[Type], params: dict) -> Type:
    n, m = known_ints(ts) + [None] * (2 - len(ts))
    return Num((n, m if len(ts) > 1 else n), "float64")


def _emit_tri(a: list, ps: dict) -> Any:
    return px.call("np.tri", a, **({"k": px.literal(ps["k"])} if ps.get("k") else {}))


# --------------------------------------------------------------------------- the entries


register(
    Primitive("squeeze", lambda x, axis=None: np.squeeze(x, axis), _squeeze_infer, emit.np_call("squeeze", "axis"),
              zero_in=(0,), kind=RULE, **linear(lambda b, p, out, ct: [reshape_like(b, ct, p.args[0])])),
    Primitive("flip", lambda x, axis=None: np.flip(x, axis), lambda ts, ps: Num(_same_infer(ts, ps).shape, num(ts[0]).dtype),
              emit.np_call("flip", "axis"), zero_in=(0,), kind=RULE, **linear(_flip_transpose)),
    Primitive("roll", lambda x, shift, axis=None: np.roll(x, shift, axis), _same_infer, _emit_roll, zero_in=(0,),
              kind=RULE, **linear(_roll_transpose)),
    Primitive("tile", lambda x, reps: np.tile(x, reps), _tile_infer,
              lambda a, ps: px.call("np.tile", [a[0], px.literal(ps["reps"])]), zero_in=(0,), kind=RULE,
              **linear(_tile_transpose)),
    Primitive("repeat", lambda x, *r, repeats=None, axis=None: np.repeat(x, r[0] if r else repeats, axis), _repeat_infer,
              _emit_repeat, zero_in=(0,), kind=RULE, **linear(_repeat_transpose, 0)),
    Primitive("take", lambda x, idx, axis=None: np.take(x, idx, axis), _take_infer, emit.np_call("take", "axis"),
              zero_in=(0,), kind=RULE, **linear(_take_transpose, 0)),
    Primitive("take_along_axis", lambda x, idx, axis: np.take_along_axis(x, idx, axis), _along_infer,
              lambda a, ps: px.call("np.take_along_axis", a, axis=px.literal(ps["axis"])), zero_in=(0,), kind=RULE,
              **linear(_along_transpose, 0)),
    Primitive("pad", lambda x, *c, pad_width, mode="constant": np.pad(x, pad_width, mode, **({"constant_values": c[0]} if c else {})),
              _pad_infer, _emit_pad, kind=RULE, **linear(_pad_transpose)),
    Primitive("linspace", lambda start, stop, num, endpoint=True: np.linspace(start, stop, num, endpoint=endpoint),
              _linspace_infer, _emit_linspace, kind=RULE, **linear(_linspace_transpose)),
    Primitive("tri", lambda *nm, k=0: np.tri(*nm, k=k), _tri_infer, _emit_tri, kind=ZERO),
    # made only in derivative code: the scatter-adds that transpose the gathers, the transpose of edge padding
    Primitive("take_transpose", _take_transpose_value, _take_transpose_infer, None, zero_in=(0,),
              stmts=_stmts_take_transpose, kind=BACKWARD, **linear(_take_transpose_transpose, 0)),
    Primitive("add_along_axis", add_along_axis, _take_transpose_infer, emit.runtime("add_along_axis", "axis"),
              zero_in=(0,), kind=BACKWARD, **linear(_add_along_transpose, 0)),
    Primitive("unpad_edge", unpad_edge, _unpad_infer, emit.runtime("unpad_edge", "pad_width"), zero_in=(0,), kind=BACKWARD,
              **linear(lambda b, p, out, ct: [b.prim("pad", ct, pad_width=p.param("pad_width"), mode="edge")])),
)

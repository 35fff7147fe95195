"""Type rules shared by the entries: numpy's promotion for elementwise
functions (found by applying the implementation to scalar samples),
broadcasting of shapes, reductions."""

from __future__ import annotations

import functools
import math
from typing import Any, Callable, Sequence

import numpy as np

from ..ir import Num, Type
from .table import ShapeError, norm_axes, not_a_number, num


def _sample(t: Type) -> Any:
    if not isinstance(t, Num):
        raise not_a_number(t)
    if t.py and not t.shape:
        if t.value is not None:
            return t.value
        return {"float64": 1.5, "int64": 3, "bool": True}[t.dtype]
    return np.ones((), dtype=t.dtype)


def _one(t: Type) -> Any:
    """A sample of ``t`` whose powers do not overflow (a Python float 1.0 for 1.5)."""
    return {"float64": 1.0, "int64": 1}.get(num(t).dtype, True) if num(t).py and not num(t).shape else _sample(t)


sample = _sample  # for the type rules of other modules


@functools.lru_cache(maxsize=None)
def result_dtype(*dtypes: str) -> str:
    """``np.result_type(*dtypes).name`` of dtype names, remembered (numpy's look-up
    costs microseconds, and the type rules ask it for every product and concatenation)."""
    return np.result_type(*dtypes).name


def size_of(shape: tuple) -> int:
    """The number of elements of a known shape, a Python int (``math.prod``, not numpy's: no array made)."""
    return int(math.prod(shape))


def broadcast_shapes(*shapes: tuple) -> tuple:
    arrays = {s for s in shapes if s}  # a scalar's () broadcasts to anything
    if len(arrays) <= 1:  # one shape (the most common): itself
        return tuple(arrays.pop()) if arrays else ()
    ndim = max((len(s) for s in shapes), default=0)
    out = []
    for i in range(ndim):
        dims = {s[len(s) - ndim + i] for s in shapes if len(s) - ndim + i >= 0}
        known = {d for d in dims if d is not None and d != 1}
        if len(known) > 1:
            raise ShapeError("shapes " + " and ".join(fmt_shape(s) for s in shapes) + " do not broadcast together")
        out.append(known.pop() if known else (None if None in dims else 1))
    return tuple(out)


def fmt_shape(s: tuple) -> str:
    return "(" + ", ".join("?" if d is None else str(d) for d in s) + ("," if len(s) == 1 else "") + ")"


def elementwise(impl: Callable) -> Callable[[list[Type], dict], Type]:
    """Type rule of an elementwise (broadcasting) operation: numpy's own
    promotion, found by applying ``impl`` to scalar samples of the types."""

    found: dict[tuple, tuple] = {}  # the operands' kinds and the params -> (dtype, py, value, weak) of numpy's result
    known: dict[tuple, Type] = {}  # the operands' types and the params -> the result's (a program repeats them)

    # the operands' types by identity, without parameters -> (those types, kept alive: their ids stay
    # theirs; the result): no type hashed (a dataclass's hash, per operand) where a program repeats them
    # (``infer.pairs``: the lowering of straight-line code looks there first for two operands' result)
    same: dict[tuple, tuple[tuple, Type]] = {}

    def infer(ts: list[Type], params: dict) -> Type:
        if not params:
            ids = (id(ts[0]), id(ts[1])) if len(ts) == 2 else tuple(map(id, ts))
            hit = same.get(ids)
            if hit is not None:
                return hit[1]
        try:
            whole: tuple | None = (tuple(ts), _keyed(params) if params else ())
            out = known.get(whole)  # type: ignore[arg-type]
        except TypeError:  # an unhashable parameter (or value)
            whole, out = None, None
        if out is None:
            out = _infer(ts, params)
            if whole is not None:
                if len(known) >= 4096:  # (bounded: a long session sees many shapes)
                    known.clear()
                known[whole] = out
        if not params:
            if len(same) >= 4096:
                same.clear()
            same[ids] = (tuple(ts), out)
        return out

    infer.pairs = same  # type: ignore[attr-defined]  (read by astad.frontend.fast: a hit's result is its last item)

    def _infer(ts: list[Type], params: dict) -> Type:
        kinds = [_kind(t) for t in ts]
        shape = broadcast_shapes(*(t.shape for t in ts))  # type: ignore[union-attr]
        try:
            key: tuple | None = (*kinds, *_keyed(params))
            result = found.get(key)  # type: ignore[arg-type]
        except TypeError:  # an unhashable parameter
            key, result = None, None
        if result is None:
            samples = [_sample(t) for t in ts]
            with np.errstate(all="ignore"):
                try:
                    value = _apply(impl, samples, params)
                except ZeroDivisionError:
                    value = _apply(impl, [_sample(Num(t.shape, t.dtype, t.py)) for t in ts], params)  # type: ignore[union-attr]
                except OverflowError:  # (1.5 ** 2000 of Python floats: the result's type is that of 1.0 ** 2000,
                    value = _apply(impl, [_one(t) for t in ts], params)  # its value unknown: Python raises there)
                    result = _result_kind(value)[:2] + (None,)
            dtype, py, value = result if result is not None else _result_kind(value)
            weak = not py and any(t.weak for t in ts) and _weak_result(impl, ts, params, dtype)  # type: ignore[union-attr]
            result = (dtype, py, value, weak)
            if key is not None:
                found[key] = result
        keep = all(isinstance(t, Num) and t.value is not None for t in ts)
        dtype, py, value, weak = result
        return Num(shape, dtype, py=True, value=value if keep and dtype != "float64" else None) if py \
            else Num(shape, dtype, weak=weak)

    return infer


def _keyed(params: dict) -> tuple:
    """``params`` as a memo key: each value with its class (``True == 1`` and ``0.0 == -0.0``
    as dict keys, but numpy's result may differ between them)."""
    return tuple((k, type(v), v) for k, v in params.items()) if params else ()


def _kind(t: Type) -> Any:
    """What of ``t`` numpy's result type depends on: the dtype, or a Python scalar's type and value (and
    whether a numpy scalar may be a Python number: ``weak``)."""
    if not isinstance(t, Num):
        raise not_a_number(t)
    if t.py and not t.shape:
        v = _sample(t)
        return type(v), v
    return (t.dtype, "weak") if t.weak else t.dtype


_PY_OF_KIND = {"f": 1.5, "i": 3, "u": 3, "b": True}


def _weak_result(impl: Callable, ts: list[Type], params: dict, dtype: str) -> bool:
    """Whether ``impl`` of the operands, those that may be Python numbers taken as Python numbers, may give
    a Python number (``acc * 2.0``, ``abs(acc)``: still either; ``np.sin(acc)``: a numpy float64).  A numpy
    float32 (or int32, ...) that may be a Python number (``sum(x32[m])``: the int 0 where ``m`` selects
    nothing) is taken as a Python number of its kind; where that gives another dtype than ``dtype`` (numpy's
    result: ``s * 2.0`` a Python float, not a float32) no one type is the result's, refused."""
    samples = [(_sample(Num(t.shape, t.dtype, py=True)) if t.dtype in ("float64", "int64", "bool")  # type: ignore[union-attr]
                else _PY_OF_KIND[np.dtype(t.dtype).kind]) if t.weak else _sample(t) for t in ts]  # type: ignore[union-attr]
    with np.errstate(all="ignore"):
        try:
            value = _apply(impl, samples, params)
        except (ArithmeticError, ValueError, ShapeError):
            return True  # (what raises on Python numbers: they may be such; kept weak)
    kind = _result_kind(value)
    narrow = [t for t in ts if t.weak and t.dtype not in ("float64", "int64", "bool")]  # type: ignore[union-attr]
    if narrow and kind[0] != dtype:
        raise ShapeError(f"an operand is a numpy {narrow[0].dtype} or a Python number, depending on the "  # type: ignore[union-attr]
                         f"values when the code runs, and the result is then a {dtype} or a {kind[0]}",
                         f"one dtype on every path: make the number a numpy {narrow[0].dtype} "  # type: ignore[union-attr]
                         f"(np.{narrow[0].dtype}(...)) before this operation")  # type: ignore[union-attr]
    return kind[1]


def _result_kind(value: Any) -> tuple[str, bool, Any]:
    """``(dtype, py, value)`` of an implementation's result on samples: a Python scalar's type
    (and value, kept for ints and bools of known value) or a numpy result's dtype."""
    if isinstance(value, (bool, int, float)) and not isinstance(value, np.generic):
        return {bool: "bool", int: "int64", float: "float64"}[type(value)], True, value
    return np.asarray(value).dtype.name, False, None


def _apply(impl: Callable, samples: list, params: dict) -> Any:
    try:
        return impl(*samples, **params)
    except (TypeError, ValueError) as e:  # numpy refuses the dtypes: -x of a bool array, bool - bool, & of floats
        raise ShapeError(str(e).rstrip("."), "numpy refuses these dtypes: ~m or np.logical_not(m) for a bool m, "
                         "m.astype(float) to compute with it") from None


def reduction(dtype_rule: Callable[[str], str] = lambda d: d) -> Callable[[list[Type], dict], Type]:
    def infer(ts: list[Type], params: dict) -> Type:
        x = num(ts[0])
        axes = norm_axes(params.get("axis"), x.ndim)
        keep = params.get("keepdims", False)
        shape = tuple((1 if i in axes else d) for i, d in enumerate(x.shape) if keep or i not in axes)
        return Num(shape, params.get("dtype") or dtype_rule(x.dtype))

    return infer


def known_ints(ts: Sequence[Type]) -> list[Any]:
    return [t.value if isinstance(t, Num) else None for t in ts]


def mismatch(xs: Sequence[Num]) -> Any:
    raise ShapeError("array shapes " + ", ".join(fmt_shape(x.shape) for x in xs) + " do not fit together")


def size_infer(ts: list[Type], params: dict) -> Type:
    x = num(ts[0])
    return Num((), "int64", py=True, value=size_of(x.shape) if x.known_shape else None)

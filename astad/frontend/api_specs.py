"""The machinery of the call tables (:mod:`astad.frontend.numpy_api` and the
``api_*`` family modules): an :class:`ApiSpec` binds a call's arguments to the
numpy signature and lowers it to a primitive through the lowerer; the helpers
below make the common shapes of spec (elementwise, reduction, constructor...)."""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any, Callable

import libcst as cst
import numpy as np

from ..ir import Atom, Const, ListT, NoneT, Num, Var
from ..values import PyTuple
from .core import LowererCore as Lowerer  # an entry uses only the steps every room of the lowerer shares
from .scopes import Value

REQUIRED = object()

Lower = Callable[["Lowerer", dict, cst.Call], "Value"]


class BindError(TypeError):
    """A call's arguments do not fit the signature; ``hint`` says what to write instead."""

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.hint = hint


#: what to write instead of numpy's keywords astad leaves out
KEYWORD_HINTS = {
    "out": "leave out `out=` and assign the result (y = np.sinh(x)); to fill part of an array, "
           "assign to that part (y[i] = ...)",
    "where": "leave out `where=` and select: np.where(mask, np.sinh(x), fallback)",
    "dtype": "leave out `dtype=` and convert the argument or the result: np.sinh(x).astype(np.float32)",
    "casting": "leave out `casting=`: astad follows numpy's default casting",
    "order": "leave out `order=`: the memory layout does not change the values",
}


@dataclass(frozen=True)
class ApiSpec:
    title: str
    params: tuple[tuple[str, Any], ...]  # (name, default or REQUIRED)
    lower: Lower
    # the primitive a call of the one parameter ``x`` is lowered to, bound to it alone (``elementwise(op)``'s; None
    # for any other entry): astad.frontend.fast binds it so, where its argument is a variable
    unary: str | None = field(default=None, kw_only=True)

    @functools.cached_property
    def names(self) -> list[str]:
        return [n for n, _ in self.params]

    def bind(self, args: list, kwargs: dict) -> dict:
        names = self.names
        if len(args) > len(names):
            raise TypeError(f"takes at most {len(names)} positional arguments ({len(args)} given)")
        bound = dict(zip(names, args))
        for k, v in kwargs.items():
            if k not in names:
                raise BindError(f"unsupported keyword argument `{k}` (supported: {', '.join(names)})",
                                KEYWORD_HINTS.get(k, "leave it out, or write the computation it asks for in numpy"))
            if k in bound:
                raise TypeError(f"got multiple values for `{k}`")
            bound[k] = v
        for n, default in self.params:
            if n not in bound:
                if default is REQUIRED:
                    raise TypeError(f"missing argument `{n}`")
                bound[n] = default
        return bound


def sig(text: str) -> tuple[tuple[str, Any], ...]:
    out = []
    for part in filter(None, (p.strip() for p in text.split(","))):
        name, _, default = part.partition("=")
        out.append((name, REQUIRED if not _ else eval(default, {})))  # noqa: S307 - literal defaults of our own table
    return tuple(out)


def atoms(lw: "Lowerer", bound: dict, node: cst.Call, *names: str) -> list[Atom]:
    out = []
    for n in names:  # (a loop, an atom as it is: this runs at every call of a numpy function)
        v = bound[n]
        out.append(v if type(v) is Var or type(v) is Const else lw.atom(lw.const_or(v), node))
    return out


def numpy_scalars(lw: "Lowerer", xs: list[Atom]) -> list[Atom]:
    """numpy's function of Python numbers is a numpy scalar (``np.add(x, 0.5)`` an np.float64), and computes as
    numpy does (divided by 0: inf, not Python's ZeroDivisionError; ``np.square(1e200)``: inf, not OverflowError):
    where every operand is a Python number, the first is made numpy's (``np.float64(x) + 0.5``)."""
    if not xs or not all(isinstance(x.type, Num) and x.type.py and not x.type.shape for x in xs):
        return xs
    x = xs[0]
    op = "astype" if np.dtype(x.type.dtype).kind == "f" else "astype_discrete"  # type: ignore[union-attr]
    return [lw.emit(op, [x], {"dtype": x.type.dtype, "scalar": True}), *xs[1:]]  # type: ignore[union-attr]


def arrays_of_numbers(lw: "Lowerer", xs: list[Atom]) -> list[Atom]:
    """Each Python number made numpy's scalar of its dtype (np.float64, np.int64, np.bool_): what
    np.dot and np.inner compute with, as they make every operand an array (np.asarray(2.0) is float64,
    not a weak Python float: ``np.dot(x32, 2.0)`` is float64)."""
    out = []
    for x in xs:
        if isinstance(x.type, Num) and x.type.py and not x.type.shape:
            op = "astype" if np.dtype(x.type.dtype).kind == "f" else "astype_discrete"
            x = lw.emit(op, [x], {"dtype": x.type.dtype, "scalar": True})
        out.append(x)
    return out


def elementwise(op: str, signature: str = "x") -> Callable[[str], ApiSpec]:
    names = [n for n, _ in sig(signature)]
    return lambda title: ApiSpec(title, sig(signature), lambda lw, b, node: lw.emit(op, atoms(lw, b, node, *names)),
                                 unary=op if names == ["x"] else None)


def refuse_axis_list(lw: "Lowerer", b: dict, node: cst.Call) -> None:
    """numpy's reductions take an int or a tuple as ``axis``: a list is numpy's TypeError."""
    if isinstance(b.get("axis"), PyTuple) and b["axis"].is_list:
        raise lw.type_error("`axis` is a list: numpy raises TypeError (an int or a tuple of ints)", node,
                            "axis=(0, 1)")


def stacked_list(lw: "Lowerer", value: "Value", node: cst.Call) -> "Value":
    """A reduction's array: a list or tuple of numbers or of arrays of one shape written out (``np.sum([a, b])``,
    ``np.mean([f(v) for v in xs])`` of a known length) as numpy reads it, their stack along a new first axis;
    ``value`` itself where it is none of these."""
    if isinstance(value, PyTuple) and value.items and value.fields is None and all(
            isinstance(v, (Var, Const)) and isinstance(v.type, Num) for v in value.items):
        return lw.emit("stack", [lw.atom(v, node) for v in value.items], {"axis": 0})
    if isinstance(value, Var) and isinstance(value.type, ListT) and value.type.length and isinstance(
            value.type.elem, Num):  # (a comprehension of known length; an empty list is numpy's 0.0, not a stack)
        return lw.emit("stack_list", [value], {"axis": 0})
    return value


def reduction(op: str) -> Callable[[str], ApiSpec]:
    # numpy's positional order: np.sum(a, axis, dtype, out, keepdims, initial, where); np.max(a, axis, out,
    # keepdims, initial, where); np.mean(a, axis, dtype, out, keepdims)
    signature = ("a, axis=None, out=None, keepdims=False, initial=None, where=True" if op in ("max", "min") else
                 "a, axis=None, dtype=None, out=None, keepdims=False" + (", initial=None, where=True" if op != "mean"
                                                                        else ""))

    def lower(lw: "Lowerer", b: dict, node: cst.Call) -> "Value":
        for unsupported in ("dtype", "out"):
            if unsupported in b and lw.static(lw.const_or(b[unsupported]), node, unsupported) is not None:
                raise lw.type_error(f"`{unsupported}=` is not supported in reductions", node,
                                    "leave it out (a positional argument after `axis` is numpy's `dtype`/`out`; "
                                    "pass keepdims=... by keyword)")
        refuse_axis_list(lw, b, node)
        if isinstance(b["a"], (PyTuple, Var)):
            b = {**b, "a": stacked_list(lw, b["a"], node)}
        axis = lw.static(lw.const_or(b["axis"]), node, "axis")
        keep = bool(lw.static(lw.const_or(b["keepdims"]), node, "keepdims"))
        if "initial" in b and (not _is_value(b["initial"], None) or not _is_value(b["where"], True)):
            return masked_reduction(lw, op, b, node, axis, keep)
        return lw.emit(op, atoms(lw, b, node, "a"), {"axis": axis, "keepdims": keep})

    return lambda title: ApiSpec(title, sig(signature), lower)


def masked_reduction(lw: "Lowerer", op: str, b: dict, node: cst.Call, axis: Any, keep: bool) -> "Value":
    """``np.sum(a, initial=c, where=mask)`` (also ``prod``, ``max``, ``min``) as numpy defines it: the
    reduction of ``np.where(mask, a, e)`` with ``e`` the operation's identity (0, 1, -inf, inf), then
    combined with ``c`` (``+``, ``*``, ``np.maximum``, ``np.minimum``).  ``c`` must not change the
    result's dtype (numpy casts it to ``a``'s): a Python number, or a scalar of ``a``'s dtype."""
    x = atoms(lw, b, node, "a")[0]
    t = x.type
    if not isinstance(t, Num):
        raise lw.type_error(f"np.{op} needs an array", node)
    kind = np.dtype(t.dtype).kind
    extreme = op in ("max", "min")
    given = not _is_value(b["initial"], None)
    if extreme and not given:
        raise lw.type_error(f"np.{op} with `where=` needs `initial=` (numpy: the reduction has no identity)", node,
                            f"np.{op}(x, initial={'-' if op == 'max' else ''}np.inf, where=mask)")
    if kind not in "fiu" or (extreme and kind != "f"):
        raise lw.type_error(f"np.{op} with `initial=`/`where=` is supported on {'float' if extreme else 'number'} "
                            f"arrays, not {t}", node, "x.astype(np.float64) first")
    if not _is_value(b["where"], True):
        mask = lw.atom(lw.const_or(b["where"]), node)
        mt = mask.type
        if not (isinstance(mt, Num) and mt.dtype == "bool" and mt.ndim <= t.ndim and all(
                d == 1 or d is None or e is None or d == e for d, e in zip(reversed(mt.shape), reversed(t.shape)))):
            raise lw.type_error(f"np.{op}: `where=` must be a boolean mask that broadcasts to the array's shape, "
                                f"not {mt}", node, f"np.{op}(x, where=x > 0)")
        identity = {"sum": 0, "prod": 1, "max": -np.inf, "min": np.inf}[op]
        e = float(identity) if kind == "f" else int(identity)
        if extreme:
            inf = Const(float("inf"), Num((), "float64", py=True), "np.inf", ("np", "inf"))
            e_atom = lw.emit("neg", [inf]) if op == "max" else inf
        else:
            e_atom = Const.literal(e, Num((), "float64" if kind == "f" else "int64", py=True))
        start = b["initial"] if given else Const.literal(0.0, Num((), "float64", py=True))
        if op == "sum" and kind == "f" and isinstance(start, Const) and type(start.value) in (float, int) \
                and start.name is None and lw.emit("where", [mask, x, e_atom]).type == t:  # (numpy's sum with
            params = {"axis": axis, "keepdims": keep, **({"initial": start.value} if given else {})}  # where= adds
            return lw.emit("masked_sum", [x, mask], params)  # one entry after another: not its pairwise sum's bits)
        x = lw.emit("where", [mask, x, e_atom])
        if x.type != t:  # (a mask of fewer dimensions: the same shape, as numpy's reduction reads it)
            raise lw.type_error(f"np.{op}: `where=` changed the array's type to {x.type}", node)
    if extreme and t.ndim:
        axes = range(t.ndim) if axis is None else axis if isinstance(axis, tuple) else (axis,)
        if any(not isinstance(a, int) or t.shape[a % t.ndim] in (0, None) for a in axes):
            # numpy gives `initial` where the reduced axes are empty; the reduction before it raises there
            raise lw.type_error(f"np.{op} with `initial=` of an array whose reduced axes may be empty (a size "
                                "known only when the function runs) is not supported", node,
                                f"np.{op} of an array of known shape (a mask's selection has none)")
    if not given:
        return lw.emit(op, [x], {"axis": axis, "keepdims": keep})
    c = lw.atom(lw.const_or(b["initial"]), node)
    ct = c.type
    if not (isinstance(ct, Num) and ct.shape == () and (ct.py and (kind == "f" or np.dtype(ct.dtype).kind in "iub")
                                                          or ct.dtype == t.dtype)):
        raise lw.type_error(f"np.{op}: `initial=` must be a number numpy keeps as it is in a {t.dtype} result, not "
                            f"{ct}", node, f"a Python number, or np.{op}(x) combined with it yourself")
    if op in ("sum", "prod"):  # numpy starts from c (np.sum(x) + c rounds otherwise)
        return lw.emit(f"{op}_initial", [x, c], {"axis": axis, "keepdims": keep})
    out = lw.emit(op, [x], {"axis": axis, "keepdims": keep})
    return lw.emit({"max": "maximum", "min": "minimum"}[op], [out, c])


def _is_value(v: Any, value: Any) -> bool:
    """Whether an argument is the literal ``value`` (None, True): a default left as it is."""
    return v is value or (isinstance(v, Const) and v.name is None and v.value is value) or (
        isinstance(v, Const) and v.value is value and isinstance(v.type, (Num, NoneT)) and v.type.py)


def static_params(op: str, signature: str, values: tuple[str, ...], statics: tuple[str, ...]) -> Callable[[str], ApiSpec]:
    def lower(lw: "Lowerer", b: dict, node: cst.Call) -> "Value":
        params = {s: lw.static(lw.const_or(b[s]), node, s) for s in statics}
        return lw.emit(op, atoms(lw, b, node, *values), params)

    return lambda title: ApiSpec(title, sig(signature), lower)


def sequence(op: str) -> Callable[[str], ApiSpec]:
    def lower(lw: "Lowerer", b: dict, node: cst.Call) -> "Value":
        seq = b["arrays"]
        axis = lw.static(lw.const_or(b["axis"]), node, "axis")
        if axis is None and op != "concatenate":
            raise lw.type_error(f"np.{op} takes an integer axis, not None", node, f"np.{op}(xs, axis=0)")
        if isinstance(seq, Var) and isinstance(seq.type, ListT):
            if axis is None:  # numpy flattens: the elements (one shape) joined, raveled
                e = seq.type.elem
                if e is None or not isinstance(e, Num):
                    raise lw.type_error("np.concatenate(xs, axis=None) of a list of unknown elements", node,
                                        "np.concatenate(xs).ravel()")
                joined = lw.emit("stack_list" if e.ndim == 0 else "concatenate_list", [seq], {"axis": 0})
                return joined if e.ndim <= 1 else lw.emit("ravel", [joined])
            return lw.emit(f"{op}_list", [seq], {"axis": axis})
        if not hasattr(seq, "items"):
            raise lw.type_error(f"np.{op} needs a list or tuple of arrays", node)
        items = [lw.atom(v, node) for v in seq.items]
        if axis is None:  # numpy flattens the arrays first
            items, axis = [lw.emit("ravel", [x]) for x in items], 0
        return lw.emit(op, items, {"axis": axis})

    return lambda title: ApiSpec(title, sig("arrays, axis=0"), lower)


def dims(lw: "Lowerer", shape: Any, node: cst.Call) -> list[Atom]:
    items = shape.items if hasattr(shape, "items") else (shape,)
    return [lw.atom(lw.const_or(d), node) for d in items]


def constructor(op: str) -> Callable[[str], ApiSpec]:
    def lower(lw: "Lowerer", b: dict, node: cst.Call) -> "Value":
        return lw.emit(op, dims(lw, b["shape"], node), dtype_params(lw, b, node))

    return lambda title: ApiSpec(title, sig("shape, dtype=None"), lower)


def dtype_params(lw: "Lowerer", b: dict, node: cst.Call) -> dict:
    d = b.get("dtype")
    if d is None:
        return {}
    value = lw.static(lw.const_or(d), node, "dtype")
    if value is float:
        value = "float64"
    try:
        return {"dtype": np.dtype(value).name}
    except TypeError:
        raise lw.type_error(f"unsupported dtype {value!r}", node, "np.float64, np.float32, int, bool") from None


def like(op: str) -> Callable[[str], ApiSpec]:
    def lower(lw: "Lowerer", b: dict, node: cst.Call) -> "Value":
        return lw.emit(op, atoms(lw, b, node, "a"), dtype_params(lw, b, node))

    return lambda title: ApiSpec(title, sig("a, dtype=None"), lower)


def spec(signature: str, lower: Lower) -> Callable[[str], ApiSpec]:
    return lambda title: ApiSpec(title, sig(signature), lower)




class Refused(ApiSpec):
    """An entry that refuses its call with a hint (``x.sort()``: ``np.sort(x)``):
    named here so the README's list of supported functions leaves it out."""

    def bind(self, args: list, kwargs: dict) -> dict:
        return {"a": args[0] if args else None}

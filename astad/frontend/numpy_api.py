"""How the numpy functions, array methods and builtins a user calls map onto
primitives: each entry binds the call's arguments to the numpy signature and
emits the primitive (with its static parameters) through the lowerer."""

from __future__ import annotations

import builtins
from dataclasses import dataclass
from typing import Any, Callable

import libcst as cst
import numpy as np

from ..ir import Atom, Const, ListT, Num, Var
from .core import LowererCore as Lowerer  # an entry uses only the steps every room of the lowerer shares
from .scopes import Value

_REQUIRED = object()

Lower = Callable[["Lowerer", dict, cst.Call], "Value"]


@dataclass(frozen=True)
class ApiSpec:
    title: str
    params: tuple[tuple[str, Any], ...]  # (name, default or _REQUIRED)
    lower: Lower

    def bind(self, args: list, kwargs: dict) -> dict:
        names = [n for n, _ in self.params]
        if len(args) > len(names):
            raise TypeError(f"takes at most {len(names)} positional arguments ({len(args)} given)")
        bound = dict(zip(names, args))
        for k, v in kwargs.items():
            if k not in names:
                raise TypeError(f"unsupported keyword argument `{k}` (supported: {', '.join(names)})")
            if k in bound:
                raise TypeError(f"got multiple values for `{k}`")
            bound[k] = v
        for n, default in self.params:
            if n not in bound:
                if default is _REQUIRED:
                    raise TypeError(f"missing argument `{n}`")
                bound[n] = default
        return bound


def _sig(text: str) -> tuple[tuple[str, Any], ...]:
    out = []
    for part in filter(None, (p.strip() for p in text.split(","))):
        name, _, default = part.partition("=")
        out.append((name, _REQUIRED if not _ else eval(default, {})))  # noqa: S307 - literal defaults of our own table
    return tuple(out)


def _atoms(lw: "Lowerer", bound: dict, node: cst.Call, *names: str) -> list[Atom]:
    return [lw.atom(lw.const_or(bound[n]), node) for n in names]


def elementwise(op: str, sig: str = "x") -> Callable[[str], ApiSpec]:
    names = [n for n, _ in _sig(sig)]
    return lambda title: ApiSpec(title, _sig(sig), lambda lw, b, node: lw.emit(op, _atoms(lw, b, node, *names)))


def reduction(op: str) -> Callable[[str], ApiSpec]:
    # numpy's positional order: np.sum(a, axis, dtype, out, keepdims); np.max(a, axis, out, keepdims)
    sig = "a, axis=None, out=None, keepdims=False" if op in ("max", "min") else "a, axis=None, dtype=None, out=None, keepdims=False"

    def lower(lw: "Lowerer", b: dict, node: cst.Call) -> "Value":
        for unsupported in ("dtype", "out"):
            if unsupported in b and lw.static(lw.const_or(b[unsupported]), node, unsupported) is not None:
                raise lw.type_error(f"`{unsupported}=` is not supported in reductions", node,
                                    "leave it out (a positional argument after `axis` is numpy's `dtype`/`out`; "
                                    "pass keepdims=... by keyword)")
        axis = lw.static(lw.const_or(b["axis"]), node, "axis")
        keep = bool(lw.static(lw.const_or(b["keepdims"]), node, "keepdims"))
        return lw.emit(op, _atoms(lw, b, node, "a"), {"axis": axis, "keepdims": keep})

    return lambda title: ApiSpec(title, _sig(sig), lower)


def static_params(op: str, sig: str, values: tuple[str, ...], statics: tuple[str, ...]) -> Callable[[str], ApiSpec]:
    def lower(lw: "Lowerer", b: dict, node: cst.Call) -> "Value":
        params = {s: lw.static(lw.const_or(b[s]), node, s) for s in statics}
        return lw.emit(op, _atoms(lw, b, node, *values), params)

    return lambda title: ApiSpec(title, _sig(sig), lower)


def sequence(op: str) -> Callable[[str], ApiSpec]:
    def lower(lw: "Lowerer", b: dict, node: cst.Call) -> "Value":
        seq = b["arrays"]
        if isinstance(seq, Var) and isinstance(seq.type, ListT):
            axis = lw.static(lw.const_or(b["axis"]), node, "axis")
            return lw.emit(f"{op}_list", [seq], {"axis": axis})
        if not hasattr(seq, "items"):
            raise lw.type_error(f"np.{op} needs a list or tuple of arrays", node)
        axis = lw.static(lw.const_or(b["axis"]), node, "axis")
        return lw.emit(op, [lw.atom(v, node) for v in seq.items], {"axis": axis})

    return lambda title: ApiSpec(title, _sig("arrays, axis=0"), lower)


def _dims(lw: "Lowerer", shape: Any, node: cst.Call) -> list[Atom]:
    items = shape.items if hasattr(shape, "items") else (shape,)
    return [lw.atom(lw.const_or(d), node) for d in items]


def constructor(op: str) -> Callable[[str], ApiSpec]:
    def lower(lw: "Lowerer", b: dict, node: cst.Call) -> "Value":
        return lw.emit(op, _dims(lw, b["shape"], node), _dtype(lw, b, node))

    return lambda title: ApiSpec(title, _sig("shape, dtype=None"), lower)


def _dtype(lw: "Lowerer", b: dict, node: cst.Call) -> dict:
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
        return lw.emit(op, _atoms(lw, b, node, "a"), _dtype(lw, b, node))

    return lambda title: ApiSpec(title, _sig("a, dtype=None"), lower)


def _lower_reshape(lw: "Lowerer", b: dict, node: cst.Call) -> "Value":
    return lw.emit("reshape", [lw.atom(b["a"], node), *_dims(lw, b["shape"], node)])


def _lower_reshape_method(lw: "Lowerer", b: dict, node: cst.Call) -> "Value":
    dims = b["shape"]
    if len(dims) == 1 and hasattr(dims[0], "items"):
        dims = dims[0].items
    return lw.emit("reshape", [lw.atom(b["a"], node), *[lw.atom(d, node) for d in dims]])


def _transpose(lw: "Lowerer", x: Atom, params: dict) -> "Value":
    if isinstance(x.type, Num) and x.type.ndim < 2 and params.get("axes") is None:
        return x  # the identity (and a Python float has no `.T`)
    return lw.emit("transpose", [x], params)


def _lower_transpose(lw: "Lowerer", b: dict, node: cst.Call) -> "Value":
    axes = lw.static(lw.const_or(b["axes"]), node, "axes")
    return _transpose(lw, lw.atom(b["a"], node), {"axes": axes} if axes is not None else {})


def _lower_transpose_method(lw: "Lowerer", b: dict, node: cst.Call) -> "Value":
    axes = b["axes"]
    if len(axes) == 1 and hasattr(axes[0], "items"):
        axes = axes[0].items
    params = {"axes": tuple(lw.static(a, node, "axes") for a in axes)} if axes else {}
    return _transpose(lw, lw.atom(b["a"], node), params)


def _lower_shape(lw: "Lowerer", b: dict, node: cst.Call) -> "Value":
    return lw.shape_of(lw.atom(b["a"], node))


def _lower_len(lw: "Lowerer", b: dict, node: cst.Call) -> "Value":
    x = b["a"]
    if isinstance(x, Var) and isinstance(x.type, ListT):
        n = 0 if x.type.elem is None else x.type.length  # no append on any path yet: empty
        if n is not None:
            return Const.literal(n, Num((), "int64", py=True, value=n))
        return lw.emit("list_len", [x])
    if hasattr(x, "items"):
        n = len(x.items)
        return Const.literal(n, Num((), "int64", py=True, value=n))
    items = lw.shape_of(lw.atom(x, node)).items
    if not items:
        raise lw.type_error("len() of a scalar", node)
    return items[0]


def _lower_dot(lw: "Lowerer", b: dict, node: cst.Call) -> "Value":
    x, y = _atoms(lw, b, node, "a", "b")
    scalar = any(isinstance(t.type, Num) and t.type.ndim == 0 for t in (x, y))
    return lw.emit("mul" if scalar else "dot", [x, y])


def _lower_square(lw: "Lowerer", b: dict, node: cst.Call) -> "Value":
    two = Const.literal(2, Num((), "int64", py=True, value=2))
    return lw.emit("pow", [*_atoms(lw, b, node, "x"), two])


def _lower_copy(lw: "Lowerer", b: dict, node: cst.Call) -> "Value":
    return lw.copy(lw.atom(b["a"], node))


def _lower_arange(lw: "Lowerer", b: dict, node: cst.Call) -> "Value":
    given = [b[n] for n in ("start", "stop", "step") if b[n] is not None]
    return lw.emit("arange", [lw.atom(lw.const_or(v), node) for v in given])


def _lower_eye(lw: "Lowerer", b: dict, node: cst.Call) -> "Value":
    dims = [b["N"]] + ([b["M"]] if b["M"] is not None else [])
    return lw.emit("eye", [lw.atom(lw.const_or(d), node) for d in dims], _dtype(lw, b, node))


def _spec(sig: str, lower: Lower) -> Callable[[str], ApiSpec]:
    return lambda title: ApiSpec(title, _sig(sig), lower)


_FUNCTIONS: dict[str, Callable[[str], ApiSpec]] = {
    **{n: elementwise(n) for n in ("exp", "log", "sin", "cos", "tan", "tanh", "sqrt", "abs", "sign", "floor", "ceil",
                                   "trunc", "rint", "isnan")},
    "absolute": elementwise("abs"),
    "negative": elementwise("neg"),
    "square": _spec("x", _lower_square),
    "maximum": elementwise("maximum", "x1, x2"),
    "minimum": elementwise("minimum", "x1, x2"),
    "power": elementwise("pow", "x1, x2"),
    "add": elementwise("add", "x1, x2"),
    "subtract": elementwise("sub", "x1, x2"),
    "multiply": elementwise("mul", "x1, x2"),
    "divide": elementwise("div", "x1, x2"),
    "true_divide": elementwise("div", "x1, x2"),
    "floor_divide": elementwise("floordiv", "x1, x2"),
    "mod": elementwise("mod", "x1, x2"),
    "remainder": elementwise("mod", "x1, x2"),
    "fmod": elementwise("fmod", "x1, x2"),
    "where": elementwise("where", "condition, x, y"),
    "clip": elementwise("clip", "a, a_min, a_max"),
    **{n: reduction(n) for n in ("sum", "mean", "max", "min", "prod")},
    "amax": reduction("max"),
    "amin": reduction("min"),
    "matmul": elementwise("matmul", "a, b"),
    "dot": _spec("a, b", _lower_dot),
    "outer": elementwise("outer", "a, b"),
    "transpose": _spec("a, axes=None", _lower_transpose),
    "reshape": _spec("a, shape", _lower_reshape),
    "ravel": elementwise("ravel", "a"),
    "copy": _spec("a", _lower_copy),
    "expand_dims": static_params("expand_dims", "a, axis", ("a",), ("axis",)),
    "concatenate": sequence("concatenate"),
    "stack": sequence("stack"),
    "diag": static_params("diag", "v, k=0", ("v",), ("k",)),
    "tril": static_params("tril", "m, k=0", ("m",), ("k",)),
    "triu": static_params("triu", "m, k=0", ("m",), ("k",)),
    "zeros": constructor("zeros"),
    "ones": constructor("ones"),
    "zeros_like": like("zeros_like"),
    "ones_like": like("ones_like"),
    "eye": _spec("N, M=None, dtype=None", _lower_eye),
    "arange": _spec("start, stop=None, step=None", _lower_arange),
    "shape": _spec("a", _lower_shape),
    "array": _spec("object", lambda lw, b, node: sequence("stack")("np.array").lower(lw, {"arrays": b["object"], "axis": 0}, node)),
}

#: numpy functions by name.
API: dict[str, ApiSpec] = {name: make(f"np.{name}") for name, make in _FUNCTIONS.items()}

_METHODS: dict[str, Callable[[str], ApiSpec]] = {
    **{n: reduction(n) for n in ("sum", "mean", "max", "min", "prod")},
    "dot": _spec("a, b", _lower_dot),
    "ravel": elementwise("ravel", "a"),
    "flatten": _spec("a", lambda lw, b, node: lw.copy(lw.emit("ravel", [lw.atom(b["a"], node)]))),  # a copy
    "copy": _spec("a", _lower_copy),
}

#: array methods (``x.sum(...)``); the array is bound to the first parameter.
METHODS: dict[str, ApiSpec] = {name: make(f".{name}()") for name, make in _METHODS.items()}


class _VarArgs(ApiSpec):
    """A method taking ``*args`` after the array (``x.reshape(2, 3)``, ``x.transpose(1, 0)``)."""

    def bind(self, args: list, kwargs: dict) -> dict:
        if kwargs:
            raise TypeError("keyword arguments are not supported here")
        first, rest = self.params[0][0], self.params[1][0]
        return {first: args[0], rest: list(args[1:])}


METHODS["reshape"] = _VarArgs(".reshape()", _sig("a, shape"), _lower_reshape_method)
METHODS["transpose"] = _VarArgs(".transpose()", _sig("a, axes"), _lower_transpose_method)

#: builtins the subset allows.
def _lower_builtin_sum(lw: "Lowerer", b: dict, node: cst.Call) -> "Value":
    """Python's ``sum(xs, start=0)``: the items added in order (a list built at
    run time, or an array: summed along its first axis), then ``start``."""
    xs, start = b["iterable"], lw.atom(lw.const_or(b["start"]), node)
    if hasattr(xs, "items"):
        if not xs.items:
            return start
        total = lw.atom(xs.items[0], node)
        for x in xs.items[1:]:
            total = lw.emit("add", [total, lw.atom(x, node)])
    else:
        if isinstance(xs, Var) and isinstance(xs.type, ListT):
            xs = sequence("stack")("sum").lower(lw, {"arrays": xs, "axis": 0}, node)
        total = lw.emit("sum", [lw.atom(xs, node)], {"axis": 0, "keepdims": False})
    if isinstance(start, Const) and start.value == 0 and not isinstance(start.value, bool):
        return total
    return lw.emit("add", [start, total])


BUILTINS: dict[Any, ApiSpec] = {
    builtins.len: ApiSpec("len", _sig("a"), _lower_len),
    builtins.sum: ApiSpec("sum", _sig("iterable, start=0"), _lower_builtin_sum),
    builtins.abs: elementwise("abs")("abs"),
}


def builtin_spec(obj: Any) -> ApiSpec | None:
    """The spec of a supported builtin (looked up by identity: ``obj`` may be an array)."""
    return next((spec for k, spec in BUILTINS.items() if k is obj), None)


def _numpy_names() -> dict[int, str]:
    names: dict[int, str] = {}
    for name in list(_FUNCTIONS)[::-1]:
        obj = getattr(np, name, None)
        if obj is not None:
            names[id(obj)] = name
    return names


_NAMES = _numpy_names()


def numpy_name(obj: Any) -> str | None:
    """The numpy name of a numpy function object (also ones astad does not support), else None."""
    name = _NAMES.get(id(obj))
    if name is not None:
        return name
    if isinstance(obj, np.ufunc):
        return obj.__name__
    module = getattr(obj, "__module__", None) or ""
    if callable(obj) and module.startswith("numpy") and not isinstance(obj, type):
        sub = module.split(".")[1] if module.count(".") and module.split(".")[1] in ("linalg", "fft", "random") else ""
        return f"{sub}.{obj.__name__}" if sub else obj.__name__
    return None

"""Jacobians assembled in Python from JVPs and VJPs, over structured values.

A value is a "pytree": tuples, lists, dicts and NamedTuples of floats and
arrays.  :func:`basis` gives one tangent per real input element,
:func:`out_basis` one cotangent per real output element, and
:func:`from_columns` / :func:`from_rows` put the JVPs (columns) or VJPs
(rows) together into JAX's layout: for each output leaf, the inputs' structure
of arrays of shape ``out.shape + in.shape`` (a tuple ``argnums``: a tuple).
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from . import pipeline
from .errors import AstadError, AstadTypeError

def flatten(v: Any) -> tuple[list[Any], Callable[[list[Any]], Any]]:
    """The leaves of a tuple/list/dict/NamedTuple structure and a function rebuilding one like it."""
    if isinstance(v, (tuple, list)) or isinstance(v, dict):
        items = list(v.values()) if isinstance(v, dict) else list(v)
        parts = [flatten(x) for x in items]
        counts = [len(p[0]) for p in parts]

        def rebuild(leaves: list[Any]) -> Any:
            out, at = [], 0
            for (_, r), c in zip(parts, counts):
                out.append(r(leaves[at:at + c]))
                at += c
            if isinstance(v, dict):
                return dict(zip(v.keys(), out))
            if hasattr(type(v), "_fields"):
                return type(v)(*out)
            return type(v)(out)

        return [x for p in parts for x in p[0]], rebuild
    return [v], lambda leaves: leaves[0]


def is_real(x: Any) -> bool:
    if isinstance(x, (bool, np.bool_)):
        return False
    return isinstance(x, (float, np.floating)) or (isinstance(x, np.ndarray) and x.dtype.kind == "f")


def _unit(leaf: Any, k: int) -> Any:
    if isinstance(leaf, float) or np.ndim(leaf) == 0:
        return type(leaf)(1.0) if isinstance(leaf, (float, np.floating)) else np.ones((), np.asarray(leaf).dtype)
    e = np.zeros(np.shape(leaf), np.asarray(leaf).dtype)
    e.flat[k] = 1.0
    return e


def _zero(leaf: Any) -> Any:
    if not is_real(leaf):
        return None
    return type(leaf)(0.0) if isinstance(leaf, (float, np.floating)) else np.zeros_like(leaf)


def require_real(args: Sequence[Any], nums: Sequence[int]) -> None:
    for i in nums:
        if not any(is_real(x) for x in flatten(args[i])[0]):
            complex_ = any(np.iscomplexobj(x) for x in flatten(args[i])[0])
            raise AstadTypeError(f"argument {i} is {_described(args[i])}, which has no derivative"
                                 + (" (complex numbers are not supported)" if complex_ else ""),
                                 hint="differentiate with respect to float arguments (argnums)")


def _described(x: Any) -> str:
    """What an argument is, for a refusal: its dtype where it has one (``a numpy array of dtype int64``)."""
    if isinstance(x, np.ndarray):
        return f"a numpy array of dtype {x.dtype}"
    if isinstance(x, np.generic):
        return f"a numpy {x.dtype} scalar"
    if isinstance(x, (tuple, list, dict)):
        return f"a {type(x).__name__} with no float in it"
    return f"a {type(x).__name__}"


def basis(args: Sequence[Any], nums: Sequence[int]) -> list[list[Any]]:
    """One tangent list per real input element of the arguments ``nums`` (None elsewhere)."""
    require_real(args, nums)
    out = []
    flat = {i: flatten(args[i]) for i in nums}
    # many scalar arguments (200 floats): zero tangents for the others, so that every column runs one
    # forward program (one per argument: as many transformations, in time quadratic in the arguments);
    # few, or arrays: one each (a column runs only its own argument's tangents: zero arrays of the
    # others would cost each column a pass over every argument)
    shared = len(nums) > _OWN_PROGRAMS and all(np.size(x) <= 1 for i in nums for x in flat[i][0])
    for i in nums:
        leaves, rebuild = flat[i]
        for j, leaf in enumerate(leaves):
            if not is_real(leaf):
                continue
            for k in range(int(np.size(leaf))):
                tangents: list[Any] = [None] * len(args)
                if shared:
                    for o in nums:
                        tangents[o] = flat[o][1]([_zero(x) for x in flat[o][0]])
                tangents[i] = rebuild([_unit(x, k) if m == j else _zero(x) for m, x in enumerate(leaves)])
                out.append(tangents)
    return out


#: up to this many arguments differentiated, the columns along each run a forward program of their own
_OWN_PROGRAMS = 8


def _shaped(x: Any, shape: tuple) -> np.ndarray:
    """A tangent as an array of ``shape`` (a statically zero one is None or a scalar zero)."""
    a = np.asarray(0.0 if x is None else x)
    return a if a.shape == shape else np.broadcast_to(a, shape)


def skeleton(v: Any) -> Any:
    """Arguments like ``v`` holding no memory of the caller's (zeros, broadcast): kept for .source and .ir."""
    if type(v) is np.ndarray:
        return np.broadcast_to(np.zeros((), v.dtype), v.shape)
    leaves, rebuild = flatten(v) if isinstance(v, (tuple, list, dict)) else ([v], None)
    if rebuild is None:
        return v
    return rebuild([skeleton(x) for x in leaves])


def example(t: Any) -> Any:
    """A value of type ``t`` holding no memory (for .source after a reverse-mode call)."""
    from .ir import Num, StructT

    if isinstance(t, StructT):
        return t.unflatten(iter([example(x) for x in pipeline._leaf_types(t)]))
    if not isinstance(t, Num) or not t.known_shape:
        raise AstadError(f"astad cannot show the code for an argument of type {t} without an example",
                         hint="pass example arguments, e.g. .ir('core', x)")
    if t.py:
        return {"float64": 0.0, "int64": int(t.value or 0), "bool": bool(t.value)}.get(t.dtype, 0.0)
    if not t.shape:
        return np.dtype(t.dtype).type(t.value or 0)
    return np.broadcast_to(np.zeros((), t.dtype), t.shape)


def _as_result(a: np.ndarray, leaf: Any) -> Any:
    """A block of the Jacobian for the input ``leaf``: an array, or for a scalar block a number like ``leaf``
    (a Python float for a Python float, a numpy scalar for a numpy scalar; a 0-d array for a 0-d array, as JAX)."""
    if a.ndim or type(leaf) is np.ndarray:
        return a
    if type(leaf) is float and a.dtype == np.float64:
        return float(a)
    return a[()]  # (a Python float's block of another dtype, float32: a numpy scalar of it)


def from_columns(value: Any, cols: list[Any], args: Sequence[Any], nums: Sequence[int], single: bool,
                 rows: bool = False) -> Any:
    """The Jacobian (out.shape + in.shape per pair of leaves) from one output tangent per input element
    (``rows``: a jacrev's, whose blocks have the inputs' dtypes, as its rows by reverse mode have)."""
    out_leaves, out_rebuild = flatten(value)
    col_leaves = [leaves_like(value, c) for c in cols]
    result = []
    for o, leaf in enumerate(out_leaves):
        if not is_real(np.asarray(leaf)):  # a discrete output has no derivative
            result.append(None)
            continue
        shape = np.shape(leaf)
        stacked = np.stack([_shaped(c[o], shape) for c in col_leaves], axis=-1) if cols else np.zeros(shape + (0,))
        result.append(_split_inputs(stacked, shape, args, nums, single, rows))
    return out_rebuild(result)


def leaves_like(value: Any, t: Any) -> list[Any]:
    """The leaves of ``t``, the tangent of ``value``, one per leaf of ``value``: None for each leaf of a
    part whose tangent is None (a part with no real leaf: ``()``, ``(n, n)`` of ints), where flattening
    ``t`` would give one None for the whole part and shift the leaves after it."""
    if isinstance(value, (tuple, list, dict)):
        if t is None:
            return [None] * len(flatten(value)[0])
        keys = list(value) if isinstance(value, dict) else range(len(value))
        return [x for k in keys for x in leaves_like(value[k], t[k])]
    return [t]


def _split_inputs(stacked: np.ndarray, out_shape: tuple, args: Sequence[Any], nums: Sequence[int],
                  single: bool, rows: bool = False) -> Any:
    """``stacked`` (out_shape + (n,)) cut into one array per real input leaf, in the inputs' structure."""
    at, per_arg = 0, []
    for i in nums:
        leaves, rebuild = flatten(args[i])
        parts = []
        for leaf in leaves:
            if not is_real(leaf):
                parts.append(None)
                continue
            size = int(np.size(leaf))
            block = stacked[..., at:at + size].reshape(out_shape + np.shape(leaf))
            parts.append(_as_result(block.astype(np.asarray(leaf).dtype, copy=False) if rows else block, leaf))
            at += size
        per_arg.append(rebuild(parts))
    return per_arg[0] if single else tuple(per_arg)



def out_basis(value: Any) -> list[Any]:
    """One output cotangent per real output element (zeros elsewhere; discrete leaves get zeros too)."""
    leaves, rebuild = flatten(value)
    out = []
    for j, leaf in enumerate(leaves):
        if not is_real(leaf) and not is_real(np.asarray(leaf)):
            continue
        for k in range(int(np.size(leaf))):
            out.append(rebuild([_unit(x, k) if m == j else (_zero(x) if is_real(x) else np.zeros(np.shape(x)))
                                for m, x in enumerate(leaves)]))
    return out


def from_rows(value: Any, rows: list[tuple], args: Sequence[Any], nums: Sequence[int], single: bool) -> Any:
    """The Jacobian from one tuple of cotangents (per argument in ``nums``) per output element."""
    out_leaves, out_rebuild = flatten(value)
    result, at = [], 0
    for leaf in out_leaves:
        if not is_real(leaf) and not is_real(np.asarray(leaf)):
            result.append(None)
            continue
        shape = np.shape(leaf)
        mine = rows[at:at + int(np.size(leaf))]
        at += int(np.size(leaf))
        per_arg = []
        for n, i in enumerate(nums):
            in_leaves, in_rebuild = flatten(args[i])
            ct_leaves = [leaves_like(args[i], r[n]) for r in mine]
            parts = []
            for j, x in enumerate(in_leaves):
                if not is_real(x):
                    parts.append(None)
                    continue
                stacked = np.stack([np.broadcast_to(np.asarray(0.0 if c[j] is None else c[j]), np.shape(x))
                                    for c in ct_leaves]) if mine else np.zeros((0,) + np.shape(x))
                parts.append(_as_result(stacked.reshape(shape + np.shape(x)), x))
            per_arg.append(in_rebuild(parts))
        result.append(per_arg[0] if single else tuple(per_arg))
    return out_rebuild(result)



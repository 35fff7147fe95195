"""Derived callables assembled from several IR programs (a Jacobian from its columns or rows).

A :class:`Assembly` is a list of parts, each an IR program and its extras (see
:mod:`astad.programs`), and ``build``, a linear and structural map from the
parts' outputs to the callable's output (``from_columns``, ``from_rows``).
Because ``build`` is linear, the JVP of the callable is ``build`` of the
parts' JVPs; and the columns of a callable assembled from parts are the JVPs
of those parts along each input element, each a program again: Jacobians of
Jacobians to any depth (``jacfwd(jacfwd(jacfwd(f)))``, ``jacfwd(hessian(f))``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np

from .jacobians import is_real, basis, flatten, from_columns, from_rows, leaves_like, out_basis, skeleton, _split_inputs
from .programs import NoProgram, Program


@dataclass
class Assembly:
    """``build([select(part(args, extras)) for each part])`` is the callable's output."""

    parts: list  # (Program, extras)
    build: Callable[[list], Any]
    value: Any = None  # the output of what build makes a Jacobian of (its structure and shapes shape build's)
    unbuild: Callable[[Any], Any] | None = None  # for one part: the transpose of build (see as_program)
    empty: Program | None = None  # with no parts (no input or output element): the program one would have
    #: ``part_ct(ct, k)``: the cotangent of part k's output given the assembled output's (the transpose of
    #: build, one part at a time); None where unknown (then vjp_by_jvps takes one JVP per input element)
    part_ct: Callable[[Any, int], Any] | None = None

    def first(self) -> Program | None:
        """The first program it is assembled from (what ``.source`` shows)."""
        return self.parts[0][0] if self.parts else self.empty


def one(prog: Program, extras: tuple) -> Assembly:
    return Assembly([(prog, tuple(extras))], _first)


def _first(outs: list) -> Any:
    return outs[0]


def columns(base: Assembly, value: Any, args: Sequence[Any], nums: Sequence[int], single: bool,
            rows: bool = False) -> Assembly:
    """The Jacobian of the callable ``base`` assembles (its output at ``args``: ``value``) with
    respect to the arguments ``nums``: one JVP of each of its parts per input element."""
    from .frontend import abstract

    units = basis(args, nums)
    along: dict[int, list] = {}  # per argument: each part's JVP program along it (looked up once, not per element)
    parts = []
    for u in units:
        i = next(k for k, t in enumerate(u) if t is not None)
        if i not in along:
            t = abstract(args[i], f"argument {i}")
            along[i] = [(prog.tangent_program(i, t), extras) for prog, extras in base.parts]
        for (q, _, split), extras in along[i]:
            parts.append((q, extras + (u[i],) + ((None,) if split else ())))
    n, shapes = len(base.parts), skeleton(tuple(args))

    def build(outs: list) -> Any:
        cols = [base.build(outs[k * n:(k + 1) * n]) for k in range(len(units))]
        return from_columns(value, cols, shapes, nums, single, rows)

    def unbuild(ct: Any) -> Any:  # (one part, one column: the Jacobian's blocks are that column reshaped)
        col = _column_of(value, ct, shapes, nums, single)
        return base.unbuild(col) if base.unbuild else col
    def part_ct(ct: Any, k: int) -> Any:  # (one base part: part k is the column of input element k)
        col = _element_column_of(value, ct, shapes, nums, single, k)
        return base.unbuild(col) if base.unbuild else col
    empty = None
    if not parts and base.first() is not None and nums:  # (an argument of no elements)
        empty = base.first().tangent_program(nums[0], abstract(args[nums[0]], f"argument {nums[0]}"))[0]  # type: ignore
    transposable = n == 1 and (base.build is _first or base.unbuild is not None)
    return Assembly(parts, build, value, unbuild if n == 1 else None, empty, part_ct if transposable else None)


def n_columns(args: Sequence[Any], nums: Sequence[int]) -> int:
    """How many real input elements the arguments ``nums`` hold (the columns of a Jacobian in them)."""
    return sum(int(np.size(leaf)) for i in nums for leaf in flatten(args[i])[0] if is_real(leaf))


def vjp_rows(prog: Program, value: Any, args: Sequence[Any], nums: Sequence[int], single: bool) -> Assembly:
    """The Jacobian by reverse mode: ``prog`` (the VJP program of a plain function, see
    api_higher.vjp_of) along one cotangent per output element."""
    shapes = skeleton(tuple(args))
    return Assembly([(prog, (ct,)) for ct in out_basis(value)],
                    lambda outs: from_rows(value, [(o,) if single else tuple(o) for o in outs], shapes, nums, single),
                    value, lambda ct: _row_of(value, ct, shapes, nums, single), prog,
                    lambda ct, k: _row_of(value, ct, shapes, nums, single, k))


def _like(block: Any, leaf: Any, shape: tuple) -> Any:
    """``block`` reshaped to ``shape``, of the kind of ``leaf`` (a float for a float, a numpy scalar, an array)."""
    a = np.reshape(np.asarray(block), shape)
    if type(leaf) is float:
        return float(a)
    if isinstance(leaf, np.generic):
        return a.astype(leaf.dtype)[()]
    return a.astype(np.asarray(leaf).dtype, copy=False)


def _blocks(per_arg: Any, args: Sequence[Any], nums: Sequence[int], single: bool) -> list[tuple[Any, Any]]:
    """``(block, input leaf)`` for each real input leaf of a Jacobian's entry for one output leaf."""
    out = []
    for n, i in enumerate(nums):
        entry = per_arg if single else per_arg[n]
        leaves = flatten(args[i])[0]
        for leaf, block in zip(leaves, leaves_like(args[i], entry)):
            if is_real(leaf):
                out.append((block, leaf))
    return out


def _column_of(value: Any, ct: Any, args: Sequence[Any], nums: Sequence[int], single: bool) -> Any:
    """The transpose of from_columns for one column (one input element): ``ct``, a cotangent of the
    Jacobian, as a cotangent of the column (``value``'s structure)."""
    def of(leaf: Any, entry: Any) -> Any:
        (block, _), = [b for b in _blocks(entry, args, nums, single) if np.size(b[1]) == 1]
        return _like(block, leaf, np.shape(leaf))

    return _per_output(value, ct, of)


def _per_output(value: Any, ct: Any, of: Callable[[Any, Any], Any]) -> Any:
    """``value``'s structure holding ``of(leaf, entry)`` for each real output leaf with an entry of ``ct``
    (a cotangent of the Jacobian, one entry per output leaf), None for the others."""
    out_leaves, rebuild = flatten(value)
    return rebuild([None if not is_real(np.asarray(leaf)) or entry is None else of(leaf, entry)
                    for leaf, entry in zip(out_leaves, leaves_like(value, ct))])


def _row_of(value: Any, ct: Any, args: Sequence[Any], nums: Sequence[int], single: bool, k: int | None = None) -> Any:
    """The transpose of from_rows for one row (output element ``k`` of the real ones; None: the only one):
    ``ct``, a cotangent of the Jacobian, as a cotangent of the VJP program's output (the arguments ``nums``'
    cotangents; one, when ``single``)."""
    found = [(np.size(x), e) for x, e in zip(flatten(value)[0], leaves_like(value, ct)) if is_real(np.asarray(x))]
    if k is None:
        ((_, entry),) = [(m, e) for m, e in found if m]
        at = None
    else:  # (the output leaf holding element k, and k's index in it)
        for m, entry in found:
            if k < m:
                break
            k -= int(m)
        at = k
    per_arg = []
    for n, i in enumerate(nums):
        sub = entry if single else entry[n]
        leaves, rebuild = flatten(args[i])
        per_arg.append(rebuild([_like(_element(b, np.shape(x), at, rows=True), x, np.shape(x))
                                if is_real(x) and b is not None else None
                                for x, b in zip(leaves, leaves_like(args[i], sub))]))
    return per_arg[0] if single else tuple(per_arg)


def _element(block: Any, shape: tuple, k: int | None, rows: bool) -> Any:
    """Element ``k``'s slice of a Jacobian block: its row (``rows``: the block is out.shape + ``shape``, an input
    leaf's) or column (out.shape + ``shape``, ``shape`` an input leaf's; the slice has out.shape)."""
    if k is None:
        return block
    a = np.asarray(block)
    if rows:
        return a.reshape((-1,) + shape)[k]
    return a.reshape(a.shape[:a.ndim - len(shape)] + (-1,))[..., k]


def _element_column_of(value: Any, ct: Any, args: Sequence[Any], nums: Sequence[int], single: bool, k: int) -> Any:
    """The transpose of from_columns for column ``k`` (input element k of the real ones, in basis's order):
    ``ct``, a cotangent of the Jacobian, as a cotangent of that column (``value``'s structure)."""
    where = None  # (argument n, its leaf j, the element's index e in it)
    for n, i in enumerate(nums):
        for j, x in enumerate(flatten(args[i])[0]):
            if is_real(x):
                if k < np.size(x):
                    where = (n, j, k)
                    break
                k -= int(np.size(x))
        if where is not None:
            break
    assert where is not None
    n, j, e = where
    x = flatten(args[nums[n]])[0][j]

    def of(leaf: Any, entry: Any) -> Any:
        block = leaves_like(args[nums[n]], entry if single else entry[n])[j]
        return None if block is None else _like(_element(block, np.shape(x), e, rows=False), leaf, np.shape(leaf))

    return _per_output(value, ct, of)


def jvps(a: Assembly, primals: tuple, tangent_list: list) -> list[tuple[Any, Any]]:
    """``(value, tangent)`` of the assembled callable along each tangents tuple (build is linear)."""
    out = []
    for tangents in tangent_list:
        pairs = [prog.jvp(primals, extras, tangents) for prog, extras in a.parts]
        out.append((a.build([v for v, _ in pairs]), a.build([t for _, t in pairs])))
    return out


def _signature(value: Any) -> tuple:
    return tuple((np.shape(x), np.asarray(x).dtype.str) for x in flatten(value)[0])


def as_program(a: Assembly, key: Any) -> tuple[Program, tuple]:
    """The one part of ``a`` as a program whose output is the assembled output (a 1-element input's
    column reshaped to the Jacobian's shape), cached on the part by ``key`` and the shapes build reads."""
    if len(a.parts) != 1:
        raise NoProgram("assembled from several derivatives")
    prog, extras = a.parts[0]
    if a.build is _first:
        return prog, extras
    assert a.unbuild is not None
    return prog.reselected((key, _signature(a.value)), lambda out: a.build([out]), a.unbuild), extras


def vjp_by_jvps(a: Assembly, args: tuple) -> tuple[Any, Callable[[Any], tuple]]:
    """``(value, pullback)`` of an assembled callable at ``args``: each argument element's cotangent
    is ``<ct, J e>``, by one JVP per element (computed now: the pullback is the derivative at the values
    of the call; each cotangent an array of its own)."""
    from . import fresh
    from .api import check_cotangent_like

    if a.part_ct is not None and a.parts:
        return _vjp_by_parts(a, args)
    nums = [i for i, x in enumerate(args) if any(is_real(leaf) for leaf in flatten(x)[0])]
    pairs = jvps(a, args, basis(args, nums)) if nums else []
    value = pairs[0][0] if pairs else a.build([p.value(args, e) for p, e in a.parts])
    tangents = [t for _, t in pairs]
    shapes = skeleton(tuple(args))

    def pullback(ct: Any) -> tuple:
        check_cotangent_like(value, ct)
        cts = leaves_like(value, ct)
        dots = []
        for t in tangents:
            s = 0.0
            for c, d in zip(cts, leaves_like(value, t)):
                if c is not None and d is not None:
                    s = s + np.sum(np.asarray(c, np.float64) * np.asarray(d, np.float64))
            dots.append(s)
        if not nums:
            return tuple(None for _ in args)
        got = _split_inputs(np.asarray(dots, np.float64), (), shapes, nums, False, rows=True)
        by = dict(zip(nums, got))
        return fresh.distinct(tuple(by.get(i) for i in range(len(args))), set())
    return value, pullback


def _vjp_by_parts(a: Assembly, args: tuple) -> tuple[Any, Callable[[Any], tuple]]:
    """``(value, pullback)`` of an assembled callable whose build's transpose is known part by part:
    the sum of each part's VJP along its share of the cotangent (one reverse pass per part, where
    vjp_by_jvps takes one JVP of every part per input element)."""
    from . import fresh
    from .api import check_cotangent_like
    from .api_vjp import program_vjp

    assert a.part_ct is not None
    pairs = [program_vjp(prog, extras, args) for prog, extras in a.parts]
    value = a.build([v for v, _ in pairs])
    part_ct = a.part_ct

    def pullback(ct: Any) -> tuple:
        check_cotangent_like(value, ct)
        total: list[Any] = [None] * len(args)
        for k, (_, back) in enumerate(pairs):
            for i, c in enumerate(back(part_ct(ct, k))):
                total[i] = _add(total[i], c)
        return fresh.distinct(tuple(total), fresh.owners(args, ct))  # (a part's may be a view of ct)
    return value, pullback


def _add(a: Any, b: Any) -> Any:
    """The sum of two cotangents of one argument (structures alike; None is zero)."""
    if a is None:
        return b
    if b is None:
        return a
    if isinstance(a, (tuple, list, dict)):
        leaves_a, rebuild = flatten(a)
        return rebuild([_add(x, y) for x, y in zip(leaves_a, flatten(b)[0])])
    return np.asarray(a + b) if type(a) is np.ndarray and not a.ndim else a + b  # (a 0-d array's: a 0-d array)

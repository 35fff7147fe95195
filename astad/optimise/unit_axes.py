"""Backward-pass operations over an axis of length 1 (known when transforming),
as the cheaper numpy call that gives the same values (``unit_axes``).

A model run on a batch of one row makes them at every step: the cotangent of
``W`` in ``x @ W`` for a row ``x`` of shape ``(1, m)`` is ``x.T @ ct``, a
matrix product of a ``(m, 1)`` and a ``(1, n)`` matrix whose every entry is one
product ``x[0, i] * ct[0, j]``, and the cotangent of a bias ``b`` broadcast to
``(1, n)`` is ``ct.sum(axis=0)``, a sum of one term.  numpy's ``matmul`` takes
about twice as long as the broadcast product ``x.T * ct``, and a reduction
several times as long as the view ``ct[0]``; both give the same numbers (a sum
of one product is that product; a sum of one term is that term).  So in the
backward pass:

- a ``matmul`` of two float matrices whose contracted axis has length 1 is a
  ``mul`` (broadcasting makes the outer product);
- a ``sum`` of a float array over one axis of length 1 (``keepdims=False``, an
  array left) is ``getitem`` of index 0 on that axis: a view, which the code
  printer does not write into (only arrays it allocated are updated in place).

The forward pass (the user's own operations) is left as written.
"""

from __future__ import annotations

from ..blocks import NESTING, same_or_new, with_branches
from ..ir import Atom, Bind, Block, Const, Num, Prim, kinds
from ..ir.walk import NESTING_KINDS, OTHER_KINDS, ops_of, positions
from ..rules.structure import ALL


def _float(t: object) -> bool:
    return isinstance(t, Num) and t.dtype.startswith("float")


def _column_times_row(args: tuple[Atom, ...]) -> bool:
    if len(args) != 2:
        return False
    a, b = args[0].type, args[1].type
    # (the shapes first: a matrix product of a vector, the most common, is told without a look at the dtypes)
    return (isinstance(a, Num) and isinstance(b, Num) and len(a.shape) == 2 and len(b.shape) == 2
            and type(a.shape[1]) is int and a.shape[1] == 1 and type(b.shape[0]) is int and b.shape[0] == 1
            and _float(a) and _float(b))


def _unit_sum(rhs: Prim) -> Prim | None:
    """``getitem(x, 0)`` on the axis of length 1 a ``sum`` removes; None for any other sum."""
    axis, x = rhs.param("axis"), rhs.args[0]
    if len(rhs.args) != 1 or rhs.param("keepdims", False) or rhs.param("dtype") or type(axis) is not int \
            or not _float(x.type) or x.type.ndim < 2:  # type: ignore[union-attr]
        return None
    t = x.type
    assert isinstance(t, Num)
    k = axis + t.ndim if axis < 0 else axis
    if not 0 <= k < t.ndim or type(t.shape[k]) is not int or t.shape[k] != 1:
        return None
    return Prim("getitem", (x, Const.integer(0)), (("index", (ALL,) * k + (("arg", 1),)),))


#: the ops ``unit_axes`` replaces
_REPLACED = frozenset({"matmul", "sum"})

#: what ``unit_axes`` looks at: the ops it replaces and the right-hand sides that may have blocks inside
_LOOKED_AT = OTHER_KINDS | _REPLACED


def unit_axes(block: Block) -> Block:
    """``block`` (a backward block) with those operations replaced."""
    if "matmul" not in kinds(block) and "sum" not in kinds(block):
        return block  # nothing to replace
    binds: list[Bind] | None = None  # (the bindings, copied at the first one made again: else none made)
    ops = ops_of(block)
    # (only the bindings of these and those with blocks inside, found without a Python loop: the others, the
    # most common, have nothing to replace; of a block without nested blocks, only these)
    for at in positions(ops, _LOOKED_AT if not kinds(block).isdisjoint(NESTING_KINDS) else _REPLACED):
        b = old = block.binds[at]
        rhs = b.rhs
        if type(rhs) in NESTING:
            b = with_branches(b, rhs, unit_axes)
        rhs = b.rhs
        if type(rhs) is Prim and rhs.op == "matmul" and _column_times_row(rhs.args):
            b = Bind(b.targets, Prim("mul", rhs.args), b.loc)
        elif type(rhs) is Prim and rhs.op == "sum":
            new = _unit_sum(rhs)
            if new is not None:
                b = Bind(b.targets, new, b.loc)
        if b is not old:
            if binds is None:
                binds = list(block.binds)
            binds[at] = b
    return block if binds is None else same_or_new(block, binds)

"""Outer products of column and row matrices by broadcasting (``broadcast_outers``).

The cotangent of ``W`` in ``x @ W`` for a row ``x`` of shape ``(1, m)`` is
``x.T @ ct``: a matrix product of a ``(m, 1)`` and a ``(1, n)`` matrix, whose
every entry is one product ``x[0, i] * ct[0, j]``.  numpy's ``matmul`` takes
about twice as long as the broadcast product ``x.T * ct`` for it (an LSTM of
batch 1 makes two per step and layer), which gives the same entries: a sum of
one product is that product.  So in the backward pass a ``matmul`` of two
float matrices whose contracted dimension is 1 (known when transforming) is a
``mul``.  The forward pass (the user's own products) is left as written.
"""

from __future__ import annotations

from ..blocks import with_branches
from ..ir import Atom, Bind, Block, Num, Prim


def _column_times_row(args: tuple[Atom, ...]) -> bool:
    if len(args) != 2:
        return False
    a, b = (x.type for x in args)
    return (isinstance(a, Num) and isinstance(b, Num) and a.ndim == 2 and b.ndim == 2
            and a.dtype.startswith("float") and b.dtype.startswith("float")
            and type(a.shape[1]) is int and a.shape[1] == 1 and type(b.shape[0]) is int and b.shape[0] == 1)


def broadcast_outers(block: Block) -> Block:
    """``block`` (a backward block) with each outer product of a column and a row a broadcast product."""
    binds = []
    for b in block.binds:
        b = with_branches(b, b.rhs, broadcast_outers)
        rhs = b.rhs
        if type(rhs) is Prim and rhs.op == "matmul" and _column_times_row(rhs.args):
            b = Bind(b.targets, Prim("mul", rhs.args), b.loc)
        binds.append(b)
    if all(x is y for x, y in zip(binds, block.binds)):
        return block
    return Block(tuple(binds), block.result)

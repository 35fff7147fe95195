"""A cotangent made of slices that tile an array is their concatenation (``tiles``).

Cutting an array into parts along one axis (an LSTM's gates: ``g[:, :3 * H]``
and ``g[:, 3 * H:]``, then the three sigmoids' parts of the first) makes, in
the backward pass, zeros of the array's shape with each part's cotangent
written into its slice::

    g_ct = np.zeros((1, 128))
    g_ct[:, :96] = a_ct
    g_ct[:, 96:] += b_ct

Each ``+=`` on a slice is three numpy calls (a view, the addition, the write),
so on small arrays the parts cost more than the arithmetic.  When the slices'
bounds are known when transforming, do not overlap and cover the axis, and
each part has its slice's shape (no broadcasting), the array is
``np.concatenate([a_ct, b_ct], axis=1)``: one call, the same numbers (each
entry is one part's entry; ``0.0 + x`` is ``x``).

The chain it replaces is a ``scatter`` into zeros followed by ``scatter_add``
of the other parts, each intermediate read only by the next: what the
backward pass of ``a[i:j]``, ``a[j:k]``, ... makes.  Any other chain (a slice
of unknown bounds, overlapping parts, a gap left zero, an index that is not a
slice) is left as it is.
"""

from __future__ import annotations

from ..blocks import same_or_new, with_branches
from ..ir import Atom, Bind, Block, Const, Num, Prim, Var, kinds, use_counts
from ..rules.structure import ALL


def _static(a: Atom) -> int | None:
    if isinstance(a, Const) and type(a.value) is int:
        return a.value
    t = a.type
    return t.value if isinstance(t, Num) and type(t.value) is int else None


def _part(rhs: Prim, base: int, shape: tuple) -> tuple[int, int, int, Atom] | None:
    """(axis, start, stop, value) of a ``scatter``/``scatter_add`` of a static slice along one axis;
    ``base``: the position of the array indexed (``('arg', k)`` is ``rhs.args[base + k]``)."""
    index, value = rhs.param("index"), rhs.args[base - 1]
    if not isinstance(index, tuple) or not 0 < len(index) <= len(shape):
        return None
    index = index + (ALL,) * (len(shape) - len(index))  # (the axes an index leaves out are whole)
    cut = [i for i, e in enumerate(index) if e != ALL]
    if len(cut) != 1 or not isinstance(index[cut[0]], tuple) or index[cut[0]][0] != "slice":
        return None
    k = cut[0]
    _, start, stop, step = index[k]
    if step is not None:
        return None
    bounds = []
    for e, default in ((start, 0), (stop, shape[k])):
        if e is None:
            v: int | None = default
        elif isinstance(e, int):
            v = e
        elif isinstance(e, tuple) and e[0] == "arg" and base + e[1] < len(rhs.args):
            v = _static(rhs.args[base + e[1]])
        else:
            v = None
        if v is None:
            return None
        v = v + shape[k] if v < 0 else v
        bounds.append(min(max(v, 0), shape[k]))
    lo, hi = bounds
    t = value.type
    want = shape[:k] + (hi - lo,) + shape[k + 1:]
    if not isinstance(t, Num) or t.shape != want or lo >= hi:
        return None
    return k, lo, hi, value


def tiles(block: Block) -> Block:
    """``block`` (a backward block) with each chain of parts that tile an array one ``concatenate``."""
    if "scatter" not in kinds(block):
        return block  # no chain starts
    block = same_or_new(block, [with_branches(b, b.rhs, tiles) for b in block.binds])
    binds = block.binds
    counts = use_counts(block)
    chains: dict[str, list[int]] = {}  # the last target of a chain so far -> the positions of its bindings
    found: list[list[int]] = []
    for i, b in enumerate(binds):
        rhs = b.rhs
        if type(rhs) is not Prim or len(b.targets) != 1 or not isinstance(b.targets[0].type, Num):
            continue
        if rhs.op == "scatter":  # (into zeros of its second argument's shape)
            chains[b.targets[0].name] = [i]
        elif rhs.op == "scatter_add" and isinstance(rhs.args[0], Var) and rhs.args[0].name in chains \
                and counts[rhs.args[0].name] == 1:
            chain = chains.pop(rhs.args[0].name)
            chain.append(i)
            chains[b.targets[0].name] = chain
            found.append(chain)
    replaced: dict[int, Bind | None] = {}
    for chain in sorted(found, key=len, reverse=True):  # the longest chain through each scatter
        if any(i in replaced for i in chain):
            continue
        made = _concatenated([binds[i] for i in chain])
        if made is not None:
            replaced.update({i: None for i in chain[:-1]})
            replaced[chain[-1]] = made
    if not replaced:
        return block
    out = [replaced.get(i, b) for i, b in enumerate(binds)]
    return Block(tuple(b for b in out if b is not None), block.result)


def _concatenated(chain: list[Bind]) -> Bind | None:
    target = chain[-1].targets[0]
    t = target.type
    if not isinstance(t, Num) or not t.known_shape or not t.dtype.startswith("float"):
        return None
    shape = tuple(t.shape)
    parts = [_part(b.rhs, 1 if b.rhs.op == "scatter" else 2, shape) for b in chain]  # type: ignore[union-attr]
    if any(p is None for p in parts) or len({p[0] for p in parts}) != 1:  # type: ignore[index]
        return None
    ordered = sorted(parts, key=lambda p: p[1])  # type: ignore[arg-type,index,return-value]
    k = ordered[0][0]  # type: ignore[index]
    edges = [0] + [e for p in ordered for e in (p[1], p[2])] + [shape[k]]  # type: ignore[index]
    if any(edges[j] != edges[j + 1] for j in range(0, len(edges), 2)):  # a gap or an overlap
        return None
    if any(p[3].type.dtype != t.dtype for p in ordered):  # type: ignore[index,union-attr]
        return None
    values = tuple(p[3] for p in ordered)  # type: ignore[index]
    return Bind((target,), Prim("concatenate", values, (("axis", k),)), chain[-1].loc)

"""Structural pass: make contraction and weakening explicit.

After this pass every variable is used exactly once: a variable read ``n >= 2``
times is split by ``let (x_1, ..., x_n) = dup x`` right after it is bound,
and a variable never read is ended by ``drop x``.  The reverse macro maps
``dup`` to cotangent addition and ``drop`` to a zero cotangent (CHAD: the
comonoid of contraction/weakening becomes the monoid ``(+, 0)``).
"""

from __future__ import annotations

from collections import Counter

from .errors import InternalError
from .ir import Atom, Bind, Block, Comp, Drop, Dup, Function, Var, map_atoms, vars_of


class _Fresh:
    def __init__(self, fn: Function) -> None:
        self.used = {p.name for p in fn.params} | {t.name for b in fn.body.binds for t in b.targets}

    def copies(self, v: Var, n: int) -> tuple[Var, ...]:
        out, i = [], 1
        while len(out) < n:
            name = f"{v.name}_{i}"
            i += 1
            if name not in self.used:
                self.used.add(name)
                out.append(Var(name, v.type))
        return tuple(out)


def _use_counts(block: Block) -> Counter:
    counts: Counter = Counter(v.name for b in block.binds for v in vars_of(b.rhs))
    if isinstance(block.result, Var):
        counts[block.result.name] += 1
    return counts


def make_explicit(fn: Function) -> Function:
    """Insert ``dup`` and ``drop`` so that every variable is used exactly once."""
    counts = _use_counts(fn.body)
    fresh = _Fresh(fn)
    pending: dict[str, list[Var]] = {}  # variable -> its copies not yet consumed, in order of use

    def introduce(v: Var, loc: object) -> list[Bind]:
        n = counts[v.name]
        if n == 0:
            return [Bind((), Drop(v), loc)]  # type: ignore[arg-type]
        if n == 1:
            return []
        copies = fresh.copies(v, n)
        pending[v.name] = list(copies)
        return [Bind(copies, Dup(v), loc)]  # type: ignore[arg-type]

    binds: list[Bind] = []
    for p in fn.params:
        binds += introduce(p, None)
    for b in fn.body.binds:
        binds.append(Bind(b.targets, _rename_occurrences(b.rhs, pending), b.loc))
        for t in b.targets:
            binds += introduce(t, b.loc)
    result = fn.body.result
    if isinstance(result, Var) and result.name in pending:
        result = pending[result.name].pop(0)
    out = Function(fn.name, fn.params, Block(tuple(binds), result))
    check_linear(out)
    return out


def _rename_occurrences(rhs: Comp, pending: dict[str, list[Var]]) -> Comp:
    """Replace each occurrence of a duplicated variable by its next unused copy
    (occurrences are visited left to right, so ``mul(h, h)`` becomes ``mul(h_1, h_2)``)."""

    def take(a: Atom) -> Atom:
        if isinstance(a, Var) and a.name in pending:
            return pending[a.name].pop(0)
        return a

    return map_atoms(rhs, take)


def check_linear(fn: Function) -> None:
    """Every variable bound (or a parameter) is used exactly once."""
    counts = _use_counts(fn.body)
    bound = [p.name for p in fn.params] + [t.name for b in fn.body.binds for t in b.targets]
    bad = {name: counts[name] for name in bound if counts[name] != 1}
    unbound = set(counts) - set(bound)
    if bad or unbound:
        raise InternalError(f"structural pass: not linear in {fn.name}: uses {bad}, unbound {sorted(unbound)}")

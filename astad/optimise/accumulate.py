"""Cotangents added in place in backward loops: a read ``x[i]`` or ``xs[i]``
gives a one-hot cotangent, which is added into the loop's own accumulator (or
list of cotangents) in place instead of being made whole and summed."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from typing import Callable

from ..blocks import ZERO_MAKERS, prim_op, result_items, with_branches
from ..ir import Atom, Bind, Block, If, ListT, LoopBack, MakeTuple, Num, Plus, Prim, Var, Zero, kinds, use_counts, vars_of
from .lists_in_place import FRESH_LISTS, fresh_list


def accumulates(block: Block) -> bool:
    """Whether :func:`accumulate_in_loops` may change ``block``: only where it has a
    backward loop (whose sums start from zeros), a one-hot cotangent (``scatter``,
    ``list_onehot``) or a new list of cotangents (added into in place)."""
    return bool(kinds(block) & _REWRITTEN)


def accumulate_in_loops(block: Block, taken: set[str], accumulators: frozenset[str] = frozenset(),
                        owned: frozenset[str] = frozenset()) -> Block:
    """One-hot cotangents (of reading ``x[i]``) are added in place: in a loop's
    backward pass ``acc_new = acc + scatter(v, x, i)`` becomes ``acc[i] += v``,
    O(1) per read instead of a one-hot array the size of ``x``; anywhere,
    ``scatter(a, x, i) + scatter(b, x, j)`` fills one array of zeros.  An inner
    loop's sums start from the outer loop's accumulators instead of zeros.
    ``taken``: every name in the program (the names this pass makes are added);
    ``owned``: the loop's carried lists of cotangents that it owns (``_owned_params``)."""
    block = _nested_sums(block, accumulators)
    block, into_branches, sums = _sums_into_branches(block, accumulators | owned)
    zeros = {b.targets[0].name for b in block.binds if isinstance(b.rhs, Prim) and b.rhs.op in ZERO_MAKERS}
    binds = []
    for b in block.binds:
        rhs = b.rhs
        if isinstance(rhs, LoopBack):  # its accumulators: the sums that start from zeros (owned buffers)
            inner = frozenset(p.name for p, i in zip(rhs.params, rhs.init)
                              if isinstance(i, Var) and (i.name in zeros or i.name in accumulators))
            body = accumulate_in_loops(rhs.body, taken, inner, _owned_params(rhs, block))
            b = Bind(b.targets, replace(rhs, body=body), b.loc)
        else:
            b = with_branches(b, rhs, lambda blk: accumulate_in_loops(blk, taken, frozenset(), into_branches))
        binds.append(b)
    return _scatter_adds(Block(tuple(binds), block.result), taken, accumulators, owned | sums)


def _sums_into_branches(block: Block, owned: frozenset[str]) -> tuple[Block, frozenset[str], frozenset[str]]:
    """``t = j + acc`` where ``j`` is a list (or array) of cotangents an ``if``
    joins (a read ``xs[i]`` or ``x[i]`` in one branch) and ``acc`` a list (or
    array) this block owns, read only there: each branch adds its part into
    ``acc`` instead (a one-hot list or array becomes an add in place, zeros
    become ``acc``), so ``j`` is the sum.
    Returns the block, the lists the branches may now add into in place, and
    the joined sums (lists this block owns)."""
    uses = Counter(v.name for b in block.binds for v in vars_of(b.rhs))
    if isinstance(block.result, Var):
        uses[block.result.name] += 1
    defs = {b.targets[0].name: b for b in block.binds if len(b.targets) == 1}
    at = {t.name: k for k, b in enumerate(block.binds) for t in b.targets}
    binds: list[Bind | None] = list(block.binds)
    moved: set[str] = set()  # the lists added into in the branches
    sums: set[str] = set()  # the joined sums: owned here
    for i, b in enumerate(block.binds):
        rhs = b.rhs
        if not (isinstance(rhs, Plus) and _in_place(b.targets[0].type)) or binds[i] is None:
            continue
        visited: set[str] = set()
        items = [leaf for a in rhs.items for leaf in _leaves(a, defs, uses, visited)]
        joined = [a for a in items if isinstance(a, Var) and isinstance(block.binds[at.get(a.name, i)].rhs, If)
                  and uses[a.name] == 1]
        accs = [a for a in items if isinstance(a, Var) and a not in joined and uses[a.name] == 1
                and (a.name in owned or _owned_list(a, defs, uses)) and at.get(a.name, -1) < at[joined[0].name]] \
            if joined else []
        # (the ``if`` as rewritten so far: one ``if`` may join several sums' parts)
        new_if = _add_in_branches(binds[at[joined[0].name]], joined[0], accs[0]) if accs else None  # type: ignore[arg-type]
        if new_if is None:
            continue
        binds[at[joined[0].name]] = new_if
        for name in visited:  # the sums this one reads, now part of it
            binds[at[name]] = None
        binds[i] = Bind(b.targets, Plus(tuple(a for a in items if a != accs[0])), b.loc)
        moved.add(accs[0].name)
        sums.add(joined[0].name)
    return Block(tuple(b for b in binds if b is not None), block.result), frozenset(moved), frozenset(sums)


def _leaves(a: Atom, defs: dict[str, Bind], uses: Counter, visited: set[str]) -> list[Atom]:
    """The items of the sum ``a`` is, through sums read only once."""
    d = defs.get(a.name) if isinstance(a, Var) else None
    if d is not None and isinstance(d.rhs, Plus) and uses[a.name] == 1:
        visited.add(a.name)
        return [leaf for item in d.rhs.items for leaf in _leaves(item, defs, uses, visited)]
    return [a]


def _add_in_branches(b: Bind, j: Var, acc: Var) -> Bind | None:
    """The ``if`` at ``b`` with ``acc`` added, in each branch, to the part of ``j``
    it makes (None where a branch makes it otherwise)."""
    rhs = b.rhs
    assert isinstance(rhs, If)
    pos = b.targets.index(j)
    branches = []
    for branch in (rhs.then, rhs.orelse):
        items = result_items(branch)
        r = items[pos] if items is not None else None
        if isinstance(r, Zero):  # the branch passes ``acc`` on
            last = branch.binds[-1]
            passed = MakeTuple(tuple(acc if n == pos else a for n, a in enumerate(items)))  # type: ignore[arg-type]
            branches.append(Block((*branch.binds[:-1], Bind(last.targets, passed, last.loc)), branch.result))
            continue
        k = next((n for n, d in enumerate(branch.binds) if d.targets == (r,)
                  or (isinstance(d.rhs, If) and r in d.targets)), None)
        if k is None or use_counts(branch)[r.name] != 1:  # type: ignore[union-attr]
            return None
        d = branch.binds[k].rhs
        binds = list(branch.binds)
        if isinstance(d, If):  # an ``elif``: its branches add into ``acc``
            inner = _add_in_branches(binds[k], r, acc)  # type: ignore[arg-type]
            if inner is None:
                return None
            binds[k] = inner
        elif isinstance(d, Prim) and d.op in _SCATTER_ADD and not _of_lists(d):
            binds[k] = Bind(binds[k].targets, _SCATTER_ADD[d.op](acc, d), binds[k].loc)
        elif isinstance(d, Prim) and d.op in ZERO_MAKERS:  # the branch passes ``acc`` on
            last = binds[-1]
            binds[-1] = Bind(last.targets, MakeTuple(tuple(acc if a == r else a for a in items)), last.loc)
            del binds[k]
        elif isinstance(d, Plus):
            binds[k] = Bind(binds[k].targets, Plus((acc, *d.items)), binds[k].loc)
        else:
            return None
        branches.append(Block(tuple(binds), branch.result))
    return Bind(b.targets, If(rhs.cond, branches[0], branches[1]), b.loc)


def _in_place(t: object) -> bool:
    """A list or an array: added into in place (a scalar is not)."""
    return isinstance(t, ListT) or (isinstance(t, Num) and t.shape != ())


def _owned_params(loop: LoopBack, block: Block) -> frozenset[str]:
    """The carried lists of cotangents a backward loop owns: each starts as a new
    list read nowhere else, and each iteration passes on a new list it made
    (or the sum of such lists), so one that is read once in the body may be
    added into in place."""
    uses = Counter(v.name for b in block.binds for v in vars_of(b.rhs))
    defs = {b.targets[0].name: b for b in block.binds if len(b.targets) == 1}
    body_defs = {b.targets[0].name: b for b in loop.body.binds if len(b.targets) == 1}
    body_uses = use_counts(loop.body)
    items = result_items(loop.body) or ()
    owned = set()
    for p, start, nxt in zip(loop.params, loop.init, items):
        made = body_defs.get(nxt.name) if isinstance(nxt, Var) else None
        if fresh_list(start, defs, uses) and body_uses[p.name] == 1 and made is not None \
                and (isinstance(made.rhs, Plus) or prim_op(made) in FRESH_LISTS):
            owned.add(p.name)
    return frozenset(owned)


def _nested_sums(block: Block, accumulators: frozenset[str]) -> Block:
    """``acc_new = acc + inner_sum`` where ``inner_sum`` is an inner loop's sum
    started from zeros: the inner loop starts from ``acc`` instead."""
    uses = Counter(v.name for b in block.binds for v in vars_of(b.rhs))
    if isinstance(block.result, Var):
        uses[block.result.name] += 1
    binds = list(block.binds)
    zeros = {b.targets[0].name for b in binds if isinstance(b.rhs, Prim) and b.rhs.op in ZERO_MAKERS}
    made_by_loop = {t.name: (j, k) for j, b in enumerate(binds) if isinstance(b.rhs, LoopBack)
                    for k, t in enumerate(b.targets)}
    for i, b in enumerate(binds):
        rhs = b.rhs
        if not (isinstance(rhs, Plus) and len(rhs.items) == 2 and all(isinstance(a, Var) for a in rhs.items)):
            continue
        acc, inner = rhs.items
        if acc.name not in accumulators or uses[acc.name] != 1 or uses[inner.name] != 1 \
                or inner.name not in made_by_loop:
            continue
        j, k = made_by_loop[inner.name]
        loop = binds[j]
        start = loop.rhs.init[k]  # type: ignore[union-attr]
        if not (isinstance(start, Var) and start.name in zeros and uses[start.name] == 1):
            continue
        init = loop.rhs.init[:k] + (acc,) + loop.rhs.init[k + 1:]  # type: ignore[union-attr]
        targets = loop.targets[:k] + (b.targets[0],) + loop.targets[k + 1:]
        binds[j] = Bind(targets, replace(loop.rhs, init=init), loop.loc)  # type: ignore[arg-type]
        binds[i] = None  # type: ignore[call-overload]
    return Block(tuple(b for b in binds if b is not None), block.result)


#: a one-hot cotangent (of reading ``x[i]`` or ``xs[i]``) added to an accumulator ``acc``: added in place
_SCATTER_ADD: dict[str, Callable[[Atom, Prim], Prim]] = {
    "scatter": lambda acc, p: Prim("scatter_add", (acc, *p.args), p.params),
    "list_onehot": lambda acc, p: Prim("list_scatter_add", (acc, p.args[1], p.args[2])),
}


#: what :func:`accumulate_in_loops` rewrites (or starts from): without any, a block is left as it is
_REWRITTEN = frozenset({"LoopBack", *_SCATTER_ADD, *FRESH_LISTS})


def _of_lists(p: Prim) -> bool:
    """A one-hot list of lists (reverse over reverse saves an inner loop's tape on the
    outer one's): its elements are added by ``list_add``, not in place by ``+``."""
    return p.op == "list_onehot" and isinstance(p.args[2].type, ListT)


def _owned_list(a: Atom, defs: dict[str, Bind], uses: Counter) -> bool:
    """A list of cotangents that this block makes as a new list and reads once
    (not a one-hot list, which is added into a list like this one): its
    elements may be replaced in place (the list persists nowhere else)."""
    return fresh_list(a, defs, uses) and prim_op(defs[a.name]) not in _SCATTER_ADD


def _scatter_adds(block: Block, taken: set[str], accumulators: frozenset[str],
                  owned: frozenset[str] = frozenset()) -> Block:
    uses = Counter(v.name for b in block.binds for v in vars_of(b.rhs))
    if isinstance(block.result, Var):
        uses[block.result.name] += 1
    defs = {b.targets[0].name: b for b in block.binds if len(b.targets) == 1}
    dropped: set[str] = set()

    rewritten: dict[int, list[Bind]] = {}
    for i, b in enumerate(block.binds):
        rhs = b.rhs
        if not isinstance(rhs, Plus) or b.targets[0].name in dropped:
            continue
        into_acc = isinstance(rhs.items[0], Var) and rhs.items[0].name in accumulators
        acc: Atom | None = rhs.items[0] if into_acc else None
        visited: set[str] = set()
        rest = [leaf for item in rhs.items[int(into_acc):] for leaf in _leaves(item, defs, uses, visited)]
        if acc is None:  # a list of cotangents made here and read only here is added into in place
            acc = next((leaf for leaf in rest if _owned_list(leaf, defs, uses)
                        or (isinstance(leaf, Var) and leaf.name in owned and uses[leaf.name] == 1)), None)
            if acc is not None:
                rest.remove(acc)
                into_acc = True
        new: list[Bind] = []
        others = []
        scattered: set[str] = set()
        for leaf in rest:
            d = defs.get(leaf.name) if isinstance(leaf, Var) else None
            if d is not None and isinstance(d.rhs, Prim) and d.rhs.op in _SCATTER_ADD and uses[leaf.name] == 1 \
                    and not _of_lists(d.rhs):
                scattered.add(leaf.name)
                nxt = Var(_fresh(f"{b.targets[0].name}_", len(new) + 1, taken), b.targets[0].type)
                new.append(Bind((nxt,), d.rhs if acc is None else _SCATTER_ADD[d.rhs.op](acc, d.rhs), d.loc))
                acc = nxt  # the first one-hot array is new: the others are added into it
            else:
                others.append(leaf)
        if len(new) < (1 if into_acc else 2):
            continue
        dropped.update(visited | scattered)
        last = new[-1]
        if others:
            new.append(Bind(b.targets, Plus((acc, *others)), b.loc))  # type: ignore[arg-type]
        else:
            new[-1] = Bind(b.targets, last.rhs, last.loc)
        rewritten[i] = new
    final: list[Bind] = []
    for i, b in enumerate(block.binds):
        if i in rewritten:
            final.extend(rewritten[i])
        elif b.targets and all(t.name in dropped for t in b.targets):
            continue
        else:
            final.append(b)
    return Block(tuple(final), block.result)


def _fresh(base: str, n: int, taken: set[str]) -> str:
    """``base`` numbered from ``n`` on, skipping names the program has."""
    while f"{base}{n}" in taken:
        n += 1
    taken.add(f"{base}{n}")
    return f"{base}{n}"

"""Lists changed in place where nothing else can see them: O(1) a step where the
functional IR copies a list.

The IR is functional: ``xs.append(v)`` makes a new list, and a loop carries it.
A list that only grows (appended to, read by element or length) is
persistent: the list after the loop holds every iteration's as a prefix.  So a
loop whose list starts as a new list that nothing else reads may append to it
in place (element reads of the old list come before the append, reads of the
new one after it); the backward loop, whose list of cotangents starts as a new
list it owns, takes each append's cotangent off its end with ``pop`` (reads of
the list add theirs into it in place: ``accumulate``).  ``xs[i] = v`` (``list_set``) in
such a loop is done in place too, where the old list is read only by element reads
before it, in a forward loop (with appends, in any order) and in a backward one (the
cotangent's ``xs_ct[i] = 0.0``, then reads' cotangents added in place); a loop that
updated its new list in place hands it on as a new list, for the next loop.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

from ..blocks import prim_op, result_items, with_branches
from ..ir import (Atom, Bind, Block, Const, If, ListT, Loop, LoopBack, Prim, ReverseProgram, Var, kinds, read_set,
                 use_counts, vars_of)


#: primitives that make a new list object (elements shared, never changed in place)
FRESH_LISTS = {"list", "list_init", "list_onehot", "list_zeros_like", "list_add", "list_scatter_add", "list_set", "unstack",
               "split_like", "list_fill"}


def fresh_list(a: Atom, defs: dict[str, Bind], uses: Counter) -> bool:
    """A list that this block makes as a new list and reads once."""
    d = defs.get(a.name) if isinstance(a, Var) else None
    return d is not None and isinstance(a.type, ListT) and prim_op(d) in FRESH_LISTS and uses[a.name] == 1


def lists_in_place(prog: ReverseProgram) -> ReverseProgram:
    """A list a loop builds by appending, which nothing else reads, is appended
    to in place; the backward loop taking the cotangents of those appends off
    the end of a list of its own pops them.  O(1) per step instead of a copy of
    the list."""
    if not (kinds(prog.forward) | kinds(prog.backward)) & {"Loop", "LoopBack"}:
        return prog  # no loop: no list is built by one
    fwd_uses = use_counts(prog.forward)
    fwd_uses.update(read_set(prog.backward))  # residuals: one more read of each (counted in C)
    back_uses = use_counts(prog.backward)
    forward = _lists_in_place(prog.forward, fwd_uses, _APPEND)
    return ReverseProgram(prog.name, prog.params, forward, prog.ct_in,
                          _lists_in_place(prog.backward, back_uses, _POP))


#: (what makes a fresh list, the update of a loop's list that may be done in place)
_APPEND = (("list",), "append")
_POP = (tuple(FRESH_LISTS), "list_init")


def _lists_in_place(block: Block, uses: Counter, rule: tuple) -> Block:
    fresh_ops, update = rule
    fresh = {b.targets[0].name for b in block.binds if isinstance(b.rhs, Prim) and b.rhs.op in fresh_ops}
    binds: list[Bind] = []
    for b in block.binds:
        rhs = b.rhs
        if isinstance(rhs, (Loop, LoopBack)):
            params = rhs.carried if isinstance(rhs, Loop) else rhs.params
            body = _lists_in_place(rhs.body, uses, rule)
            items = result_items(body) or ()
            for k, (p, start, out) in enumerate(zip(params, rhs.init, items)):
                # (the new list read before the loop only by element reads and its length: ``len(xs)`` as bounds)
                if isinstance(p.type, ListT) and isinstance(start, Var) and start.name in fresh \
                        and (uses[start.name] == 1 or _only_read(binds, start, uses[start.name] - 1)) \
                        and isinstance(out, Var):
                    new = _in_place(body, p, out, uses, update, uses[p.name])
                    body = new or body
                    if new is not None or isinstance(rhs, LoopBack) and _only_added_into(body, p, out, uses):
                        fresh.add(b.targets[k].name)  # the loop hands on the new list it started with
            b = Bind(b.targets, replace(rhs, body=body), b.loc)
        else:
            b = with_branches(b, rhs, lambda blk: _lists_in_place(blk, uses, rule))
        binds.append(b)
    return Block(tuple(binds), block.result)


#: reads of a list that make no new name for it: they may come before an append in place
_LIST_READS = {"list_get", "list_len", "stack_list", "concatenate_list", "py_sum"}


def _in_place(block: Block, p: Var, out: Var, uses: Counter, update: str, n_p: int) -> Block | None:
    """``block`` (a loop body, or a branch in one) with the update that makes
    ``out`` from the loop's list ``p`` done in place, or None where it may not
    be.  ``n_p``: how often ``block`` reads ``p``.  ``out = append(p, v)`` with
    ``p`` read only there, or also by element reads before it, becomes an
    append in place; ``out = list_init(p)`` with ``p`` read only there and by
    ``list_get(p, -1)`` becomes ``list_pop`` (also when ``out`` is reached from
    it by adds of one-hot cotangents in place, ``list_scatter_add``, after the
    pop, or ``p`` reaches the ``list_init`` so); ``out`` joined by an ``if``
    whose branches each do that or pass ``p`` on: in each branch."""
    at = {t.name: i for i, b in enumerate(block.binds) for t in b.targets}
    i = at.get(out.name)
    if i is not None and isinstance(block.binds[i].rhs, If):
        return _in_place_if(block, i, p, out, uses, update, n_p)
    if i is not None and prim_op(block.binds[i]) in _STEPS[update]:
        chain = _set_in_place(block, at, p, out, uses, update, n_p)
        if chain is not None:
            return chain
    chain: list[int] = []  # the adds in place between ``list_init(p)`` and ``out``
    while update != "append" and i is not None and prim_op(block.binds[i]) == "list_scatter_add" \
            and uses[block.binds[i].targets[0].name] == 1:
        chain.append(i)
        acc = block.binds[i].rhs.args[0]  # type: ignore[union-attr]
        i = at.get(acc.name) if isinstance(acc, Var) else None
    d = block.binds[i].rhs if i is not None else None
    if not (isinstance(d, Prim) and d.op == update and (d.args[0] == p or update != "append")):
        return None
    end = block.binds[i].targets[0]  # type: ignore[index]
    binds = list(block.binds)
    if update == "append":
        if not (_only_read(binds[:i], p, n_p - 1) and _out_read(binds, i, end, uses)):
            return None
        binds[i] = Bind(block.binds[i].targets, Prim("append_in_place", d.args), block.binds[i].loc)
        return Block(tuple(binds), block.result)
    if uses[end.name] != 1:
        return None
    q = d.args[0]  # p, or p after adds in place of one-hot cotangents (reads of the list after the append)
    if not (isinstance(q, Var) and _added_into(q, p, block.binds, at, uses, n_p)):
        return None
    last = [j for j, b in enumerate(binds) if isinstance(b.rhs, Prim) and b.rhs.op == "list_get"
            and b.rhs.args[0] == q and isinstance(b.rhs.args[1], Const) and b.rhs.args[1].value == -1]
    if (n_p if q == p else uses[q.name]) != 2 or len(last) != 1 or any(k < last[0] for k in chain):
        return None
    j = last[0]
    binds[i] = Bind(binds[i].targets, Prim("list_popped", (q,)), binds[i].loc)
    binds[j] = Bind(binds[j].targets, Prim("list_pop", (q,)), binds[j].loc)
    return Block(tuple(binds), block.result)


#: the updates on the way from a loop's list to its next value where one of them is ``xs[i] = v``
#: (``list_set``): in a forward loop appends too, in a backward one adds in place of one-hot cotangents
_STEPS = {"append": ("list_set", "append"), "list_init": ("list_set", "list_scatter_add")}
_IN_PLACE = {"list_set": "list_set_in_place", "append": "append_in_place"}


def _set_in_place(block: Block, at: dict[str, int], p: Var, out: Var, uses: Counter, update: str,
                  n_p: int) -> Block | None:
    """``out`` made from ``p`` by a chain of updates (``_STEPS``) with ``xs[i] = v`` among them, each
    list on the way read otherwise only by element reads before the next update (``p`` ``n_p``
    times in all), ``out`` as ``_in_place`` asks: each ``list_set`` (and append) done in place,
    O(1) instead of a copy of the list."""
    steps: list[int] = []
    node: Atom = out
    while node != p:
        k = at.get(node.name) if isinstance(node, Var) else None
        if k is None or prim_op(block.binds[k]) not in _STEPS[update]:
            return None
        steps.append(k)
        node = block.binds[k].rhs.args[0]  # type: ignore[union-attr]
    steps.reverse()
    binds = list(block.binds)
    if not any(prim_op(binds[k]) == "list_set" for k in steps) or not _only_read(binds[:steps[0]], p, n_p - 1):
        return None
    for k, nxt in zip(steps, steps[1:]):
        mid = binds[k].targets[0]
        if not _only_read(binds[k + 1:nxt], mid, uses[mid.name] - 1):
            return None
    if not (_out_read(binds, steps[-1], out, uses) if update == "append" else uses[out.name] == 1):
        return None
    for k in steps:
        d = binds[k].rhs
        assert isinstance(d, Prim)
        if d.op in _IN_PLACE:
            binds[k] = Bind(binds[k].targets, Prim(_IN_PLACE[d.op], d.args, d.params), binds[k].loc)
    return Block(tuple(binds), block.result)


def _in_place_if(block: Block, i: int, p: Var, out: Var, uses: Counter, update: str, n_p: int) -> Block | None:
    """``out`` joined by the ``if`` at ``i``: each branch updates ``p`` in place
    or passes it on (reading only its elements); ``block`` reads ``p`` elsewhere
    only by element reads before the ``if``."""
    b = block.binds[i]
    rhs = b.rhs
    assert isinstance(rhs, If)
    k = b.targets.index(out)
    branches, inside = [], 0
    for branch in (rhs.then, rhs.orelse):
        items = result_items(branch)
        n = use_counts(branch)[p.name]
        inside += n
        r = items[k] if items is not None else None
        if r == p and _only_read(list(branch.binds[:-1]), p, n - 1):
            branches.append(branch)
            continue
        new = _in_place(branch, p, r, uses, update, n) if isinstance(r, Var) and r != p else None
        if new is None:
            return None
        branches.append(new)
    if branches == [rhs.then, rhs.orelse] or not _only_read(list(block.binds[:i]), p, n_p - inside) \
            or not (_out_read(list(block.binds), i, out, uses) if update == "append" else uses[out.name] == 1):
        return None
    binds = list(block.binds)
    binds[i] = Bind(b.targets, If(rhs.cond, branches[0], branches[1]), b.loc)
    return Block(tuple(binds), block.result)


def _out_read(binds: list[Bind], i: int, out: Var, uses: Counter) -> bool:
    """The new list ``out`` made at ``i`` is read only by the block's result (its
    last binding) and by element reads after ``i``."""
    return _only_read(binds[i + 1:-1], out, uses[out.name] - 1)


def _added_into(q: Var, p: Var, binds: tuple[Bind, ...], at: dict[str, int], uses: Counter, n_p: int) -> bool:
    """Whether ``q`` is ``p``, or ``p`` with one-hot cotangents added in place
    (``list_scatter_add``), each step read only by the next."""
    while q != p:
        k = at.get(q.name)
        acc = binds[k].rhs.args[0] if k is not None and prim_op(binds[k]) == "list_scatter_add" else None  # type: ignore[union-attr]
        if not (isinstance(acc, Var) and (n_p if acc == p else uses[acc.name]) == 1):
            return False
        q = acc
    return True


def _only_added_into(body: Block, p: Var, out: Var, uses: Counter) -> bool:
    """Whether a backward loop's list ``out`` is its list ``p`` passed on untouched, or
    ``p`` with one-hot cotangents added in place, each step read only by the next (and
    ``p`` read no other way): then the list after the loop is the new list it started
    with, which no other name holds."""
    n_p = use_counts(body)[p.name]
    if out == p:
        return n_p == 1  # only the tuple the body ends with
    at = {t.name: i for i, b in enumerate(body.binds) for t in b.targets}
    return _added_into(out, p, body.binds, at, uses, n_p)


def _only_read(binds: list[Bind], v: Var, n: int) -> bool:
    """Whether the ``n`` other uses of ``v`` are all in ``binds``, each a read of
    an element or the length (no other name for the list)."""
    reads = [b for b in binds if v in vars_of(b.rhs)]
    return len(reads) == n and all(prim_op(b) in _LIST_READS for b in reads)

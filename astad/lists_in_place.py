"""Lists changed in place where nothing else can see them: O(1) a step where the
functional IR copies a list.

The IR is functional: ``xs.append(v)`` makes a new list, and a loop carries it.
A list that only grows (appended to, read by element or length) is
persistent: the list after the loop holds every iteration's as a prefix.  So a
loop whose list starts as a new list that nothing else reads may append to it
in place (element reads of the old list come before the append, reads of the
new one after it); the backward loop, whose list of cotangents starts as a new
list it owns, takes each append's cotangent off its end with ``pop`` (reads of
the list add theirs into it in place: ``accumulate``).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

from .blocks import prim_op, result_items, with_branches
from .ir import Atom, Bind, Block, Const, ListT, Loop, LoopBack, Prim, ReverseProgram, Var, read_names, use_counts, vars_of


#: primitives that make a new list object (elements shared, never changed in place)
FRESH_LISTS = {"list", "list_init", "list_onehot", "list_zeros_like", "list_add", "list_scatter_add", "unstack",
               "split_like"}


def fresh_list(a: Atom, defs: dict[str, Bind], uses: Counter) -> bool:
    """A list that this block makes as a new list and reads once."""
    d = defs.get(a.name) if isinstance(a, Var) else None
    return d is not None and isinstance(a.type, ListT) and prim_op(d) in FRESH_LISTS and uses[a.name] == 1


def lists_in_place(prog: ReverseProgram) -> ReverseProgram:
    """A list a loop builds by appending, which nothing else reads, is appended
    to in place; the backward loop taking the cotangents of those appends off
    the end of a list of its own pops them.  O(1) per step instead of a copy of
    the list."""
    fwd_uses = use_counts(prog.forward)
    for name in read_names(prog.backward):
        fwd_uses[name] += 1  # residuals
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
    binds = []
    for b in block.binds:
        rhs = b.rhs
        if isinstance(rhs, (Loop, LoopBack)):
            params = rhs.carried if isinstance(rhs, Loop) else rhs.params
            body = _lists_in_place(rhs.body, uses, rule)
            items = result_items(body) or ()
            for p, start, out in zip(params, rhs.init, items):
                if isinstance(p.type, ListT) and isinstance(start, Var) and start.name in fresh \
                        and uses[start.name] == 1 and isinstance(out, Var):
                    body = _in_place(body, p, out, uses, update)
            b = Bind(b.targets, replace(rhs, body=body), b.loc)
        else:
            b = with_branches(b, rhs, lambda blk: _lists_in_place(blk, uses, rule))
        binds.append(b)
    return Block(tuple(binds), block.result)


#: reads of a list that make no new name for it: they may come before an append in place
_LIST_READS = {"list_get", "list_len", "stack_list", "concatenate_list"}


def _in_place(body: Block, p: Var, out: Var, uses: Counter, update: str) -> Block:
    """In a loop body: ``out = append(p, v)`` with ``p`` read only there, or also
    by element reads before it, becomes an append in place; ``out = list_init(p)``
    with ``p`` read only there and by ``list_get(p, -1)`` becomes ``list_pop``
    (also when ``out`` is reached from it by adds of one-hot cotangents in
    place, ``list_scatter_add``, after the pop)."""
    defs = {b.targets[0].name: i for i, b in enumerate(body.binds) if len(b.targets) == 1}
    i = defs.get(out.name)
    chain: list[int] = []  # the adds in place between ``list_init(p)`` and ``out``
    while update != "append" and i is not None and prim_op(body.binds[i]) == "list_scatter_add" \
            and uses[body.binds[i].targets[0].name] == 1:
        chain.append(i)
        acc = body.binds[i].rhs.args[0]  # type: ignore[union-attr]
        i = defs.get(acc.name) if isinstance(acc, Var) else None
    d = body.binds[i].rhs if i is not None else None
    if not (isinstance(d, Prim) and d.op == update and (d.args[0] == p or update != "append")):
        return body
    end = body.binds[i].targets[0]  # type: ignore[index]
    binds = list(body.binds)
    if update == "append":  # p may be read before the append, the new list after it (the body's last binding
        # is its result tuple) by reads that name neither
        if not (_only_read(binds[:i], p, uses[p.name] - 1) and _only_read(binds[i + 1:-1], end, uses[end.name] - 1)):
            return body
        binds[i] = Bind(body.binds[i].targets, Prim("append_in_place", d.args), body.binds[i].loc)
        return Block(tuple(binds), body.result)
    if uses[end.name] != 1:
        return body
    q = d.args[0]  # p, or p after adds in place of one-hot cotangents (reads of the list after the append)
    if not (isinstance(q, Var) and _added_into(q, p, body.binds, defs, uses)):
        return body
    last = [j for j, b in enumerate(binds) if isinstance(b.rhs, Prim) and b.rhs.op == "list_get"
            and b.rhs.args[0] == q and isinstance(b.rhs.args[1], Const) and b.rhs.args[1].value == -1]
    if uses[q.name] != 2 or len(last) != 1 or any(k < last[0] for k in chain):
        return body
    j = last[0]
    binds[i] = Bind(binds[i].targets, Prim("list_popped", (q,)), binds[i].loc)
    binds[j] = Bind(binds[j].targets, Prim("list_pop", (q,)), binds[j].loc)
    return Block(tuple(binds), body.result)


def _added_into(q: Var, p: Var, binds: tuple[Bind, ...], defs: dict[str, int], uses: Counter) -> bool:
    """Whether ``q`` is ``p``, or ``p`` with one-hot cotangents added in place
    (``list_scatter_add``), each step read only by the next."""
    while q != p:
        k = defs.get(q.name)
        acc = binds[k].rhs.args[0] if k is not None and prim_op(binds[k]) == "list_scatter_add" else None  # type: ignore[union-attr]
        if not (isinstance(acc, Var) and uses[acc.name] == 1):
            return False
        q = acc
    return True


def _only_read(binds: list[Bind], v: Var, n: int) -> bool:
    """Whether the ``n`` other uses of ``v`` are all in ``binds``, each a read of
    an element or the length (no other name for the list)."""
    reads = [b for b in binds if v in vars_of(b.rhs)]
    return len(reads) == n and all(prim_op(b) in _LIST_READS for b in reads)

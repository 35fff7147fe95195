"""Dead code: bindings nothing reads are removed (backward first, then forward,
keeping what the backward reads: the residuals); each loop's tape records
exactly what its backward pass reads (``prune_tapes``)."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from itertools import compress
from ..blocks import NESTING, same, same_or_new, with_branches
from ..ir import (Bind, Block, Const, Copy, If, Loop, LoopBack, MakeTuple, Plus, Prim, ReverseProgram, Unpack, Var, all_binds,
                  atoms_of, bound_names, bound_set, bound_vars, kinds, nested_blocks, read_names, read_set, vars_of)
from ..ir.walk import NESTING_KINDS, outside_reads, remember_binding_reads
from ..rules import has_effect
from .program_fold import ALL_LIVE
from .simplify import select_items


def _dce(block: Block, live: set[str], keep: set[str]) -> Block:
    """Remove bindings nothing reads; ``keep`` are names read from elsewhere (the
    residuals, which may be bound inside branches)."""
    return _dce_reads(block, live, keep)[0]


def _dce_reads(block: Block, live: set[str], keep: set[str], reads: list[str] | None = None,
               ops: list[str] | None = None) -> tuple[Block, set[str], bool, list[str] | None, list[str]]:
    """``_dce``, with what the block left reads (``live`` and the reads of the bindings
    kept), whether none of those has blocks inside (then they are ``read_set``), the
    names of the constants they read (None where one is not a primitive, sum, tuple, copy
    or unpack) and the names of their targets.  ``reads``, where given, receives each read
    of a variable by a binding kept (where none has blocks inside: what ``use_counts`` counts).
    ``ops``, where given, receives what each binding kept is made of (``walk.ops_of``), last first."""
    live = set(live)
    add = live.add
    kept = []
    bound: list[str] = []  # the names of the targets of the bindings kept
    flat = True
    named: list[str] | None = []  # the names of the constants read
    for b in reversed(block.binds):
        rhs = b.rhs
        cls = type(rhs)
        if cls is Prim or cls is Plus and len(b.targets) == 1:  # (the most common: no blocks inside)
            targets = b.targets
            if len(targets) == 1:  # (one target, the most common: no loop over them)
                name = targets[0].name
                if name not in live and name not in keep and not (cls is Prim and has_effect(rhs)):
                    continue
                bound.append(name)
            else:
                for t in targets:
                    if t.name in live or t.name in keep:
                        break
                else:
                    if not has_effect(rhs):
                        continue
                bound.extend([t.name for t in targets])
            kept.append(b)
            if ops is not None:
                ops.append(rhs.op if cls is Prim else "Plus")  # type: ignore[union-attr]
            for a in rhs.args if cls is Prim else rhs.items:
                if type(a) is Var:
                    add(a.name)
                    if reads is not None:
                        reads.append(a.name)
                elif type(a) is Const and a.name is not None and named is not None:
                    named.append(a.name)
            continue
        if type(rhs) in NESTING:
            flat = False
        if isinstance(b.rhs, If):
            alive = [i for i, t in enumerate(b.targets) if t.name in live or t.name in keep]
            inner = bound_set(b.rhs.then) | bound_set(b.rhs.orelse)
            if not alive and keep.isdisjoint(inner) and not has_effect(b.rhs):
                continue
            then, orelse = select_items(b.rhs.then, alive), select_items(b.rhs.orelse, alive)
            then = _dce(then, read_names(Block((), then.result)), keep)
            orelse = _dce(orelse, read_names(Block((), orelse.result)), keep)
            b = Bind(tuple(b.targets[i] for i in alive), If(b.rhs.cond, then, orelse), b.loc)
        elif isinstance(b.rhs, Loop):
            if not any(t.name in live or t.name in keep for t in b.targets) and not has_effect(b.rhs):
                continue
            saved = {v.name for v in b.rhs.save}  # also when bound inside a branch of the body
            body_live = read_names(Block((), b.rhs.body.result)) | saved
            b = with_branches(b, b.rhs, lambda blk: _dce(blk, body_live, keep | saved))
        elif isinstance(b.rhs, LoopBack):
            b = _live_slots(b, live, keep)
            if b is None:
                continue
        elif not any(t.name in live or t.name in keep for t in b.targets) and not has_effect(b.rhs):
            continue
        kept.append(b)
        if ops is not None:
            ops.append(type(b.rhs).__name__)  # (not a primitive)
        bound.extend([t.name for t in b.targets])
        read = [v.name for v in vars_of(b.rhs)]
        live.update(read)
        if reads is not None:
            reads.extend(read)
        if named is not None:
            if type(b.rhs) in _ATOMS_ONLY:
                named.extend([a.name for a in atoms_of(b.rhs) if type(a) is Const and a.name is not None])
            else:
                named = None
    kept.reverse()
    return same_or_new(block, kept), live, flat, named, bound


#: the right-hand sides without blocks inside that read atoms and have no other names
_ATOMS_ONLY = frozenset({Plus, MakeTuple, Copy, Unpack})


def _remember_names(block: Block, live: set[str], named: list[str] | None, bound: list[str]) -> None:
    """``names.program_names`` of a block ``_dce_reads`` kept, without nested blocks, from what
    it found: what the kept bindings and the result read (``live``), the names of their targets
    (``bound``) and of the constants read; remembered on the block as ``names._block_names`` would
    (then a pass asking for a new name does not walk the block for them).  ``live`` is
    ``_dce_reads``'s own set, which its caller reads no more: the names are added to it, not to a copy."""
    if named is None or "_program_names" in block.__dict__:
        return
    found = live
    found.update(bound)
    found.update(named)
    r = block.result
    if type(r) is Const and r.name is not None:
        found.add(r.name)
    block.__dict__["_program_names"] = frozenset(found)


def _ops_unless_nested(block: Block) -> list[str] | None:
    """A list for ``_dce_reads``'s ``ops``, unless the kinds of ``block`` are known to have nested blocks."""
    known = block.__dict__.get("_kinds")
    return [] if REMEMBER_OPS and (known is None or known.isdisjoint(NESTING_KINDS)) else None


def _remember_ops(block: Block, ops: list[str]) -> None:
    """``walk.ops_of`` and ``kinds`` of a block ``_dce_reads`` kept, without nested blocks, from what it found
    (``ops``, last first): remembered on the block as they would be (later passes ask, and dce's output is
    a new block), without a walk of it."""
    ops.reverse()
    memo = block.__dict__
    memo.setdefault("_ops", ops)
    memo.setdefault("_kinds", frozenset(ops))


#: whether ``dce`` remembers the ``ops_of`` and ``kinds`` of a block it made without nested blocks (tests turn
#: it off)
REMEMBER_OPS = True


def _live_slots(b: Bind, live: set[str], keep: set[str]) -> Bind | None:
    """A backward loop carrying only what is read after it (the cotangents and
    sums the rest of the program reads) and what the body needs to compute
    those: an accumulator nobody reads (the cotangent of a value that depends
    on no input, summed over the iterations) is dropped with its work."""
    rhs = b.rhs
    assert isinstance(rhs, LoopBack)
    alive = {i for i, t in enumerate(b.targets) if t.name in live}
    while alive:
        keep_items = sorted(alive)
        chosen = select_items(rhs.body, keep_items)
        body = _dce(chosen, read_names(Block((), chosen.result)), keep)
        read = read_set(body)
        grown = alive | {i for i, p in enumerate(rhs.params) if p.name in read}
        if grown == alive:
            if len(alive) == len(rhs.params):
                return Bind(b.targets, replace(rhs, body=body), b.loc)
            return Bind(tuple(b.targets[i] for i in keep_items),
                        replace(rhs, params=tuple(rhs.params[i] for i in keep_items),
                                init=tuple(rhs.init[i] for i in keep_items), body=body), b.loc)
        alive = grown
    return None


def dce(prog: ReverseProgram, count_reads: bool = False) -> ReverseProgram:
    """``count_reads``: the backward block's ``use_counts`` counted in the same walk and remembered
    (where it has no nested blocks), for a pass after this one that asks (``arrays.outer_sums``)."""
    counted: list[str] | None = [] if count_reads else None
    ops = _ops_unless_nested(prog.backward)
    cleaned, reads, flat, named, bound = _dce_reads(prog.backward, read_names(Block((), prog.backward.result)), set(),
                                                    counted, ops)
    prog = ReverseProgram(prog.name, prog.params, prog.forward, prog.ct_in, cleaned)
    if not flat or "Loop" in kinds(prog.forward):  # (a flat backward block has no backward loop: no tapes)
        prog = prune_tapes(prog)
    backward = prog.backward
    if flat and backward is cleaned:  # what it reads and does not bind, without a walk of it
        needed = frozenset(reads.difference(bound))
        backward.__dict__.setdefault("_outside_reads", needed)  # (remembered as ``outside_reads`` would)
        _remember_names(backward, reads, named, bound)
        if ops is not None:
            _remember_ops(backward, ops)
        if counted is not None:  # (each read by a binding kept, as ``walk._nested_use_counts`` counts them)
            remember_binding_reads(backward, Counter(counted), ())
    else:
        needed = outside_reads(backward)
    return _forward_dce(prog, backward, needed)


def _forward_dce(prog: ReverseProgram, backward: Block, needed: frozenset[str]) -> ReverseProgram:
    """``dce``'s forward block (keeping the residuals ``needed``: what ``backward`` reads from outside)."""
    forward = prog.forward
    done = forward.__dict__.get("_dce_needed")
    if done != needed and ALL_LIVE in forward.__dict__:  # (every binding live for the result alone: see there)
        forward.__dict__["_dce_needed"] = needed
    elif done is not None and done != needed and SKIP_FORWARD and done.difference(needed) <= read_set(forward):
        # ``forward`` is dce's output for the residuals ``done`` (a block without nested blocks: every binding
        # live), and each residual the backward block reads no more is read by the forward block itself: it is
        # dce's output for ``needed`` too.  (Were some binding dead now, take the last one: its target, live
        # before, was a residual or read by a later binding; a later binding is live, being after the last dead
        # one; a residual read no more is read by the forward block, by a live binding, again: it is live.
        # Residuals added kill nothing.)
        forward.__dict__["_dce_needed"] = needed
    elif done != needed:  # (else it is dce's output for these residuals: itself)
        ops = _ops_unless_nested(forward)
        forward, reads, flat, named, bound = _dce_reads(forward, read_names(Block((), forward.result)), needed,
                                                        None, ops)
        if flat:  # (of a block without nested blocks, dce's output is its own dce's output)
            forward.__dict__["_dce_needed"] = needed
            forward.__dict__.setdefault("_read_set", frozenset(reads))  # (remembered as ``read_set`` would)
            _remember_names(forward, reads, named, bound)
            if ops is not None:
                _remember_ops(forward, ops)
    return ReverseProgram(prog.name, prog.params, forward, prog.ct_in, backward)


#: whether ``dce`` leaves a forward block as it is where it can tell that its ``dce`` would (tests turn it off)
SKIP_FORWARD = True


def dce_rewritten(prog: ReverseProgram, old: Block, changed: list[int], counts: dict[str, int],
                  where: dict[str, int]) -> ReverseProgram | None:
    """``dce(prog)``, where ``prog.backward`` is ``old`` with the bindings at ``changed`` made again (the
    same targets, new right-hand sides: primitives) and nothing else changed, ``old`` being ``dce``'s output
    without nested blocks (every binding live) with its ``ops_of``, outside reads and names remembered, and
    ``counts`` its ``use_counts`` as a plain dict (``walk.use_counts_dict``; changed here).  Without a walk: a
    binding is dead now only where the reads its targets lost (those the old right-hand sides read and the new
    ones read not, and, in turn, those of the bindings removed) were its last; ``where``: the positions of some targets (the others found by a
    walk where one is wanted).  The names, outside reads and ops of the new block are the old ones less what
    went and plus what came, remembered as ``dce`` remembers them.  None where it cannot tell (a named
    constant read by a binding made again, a forward block with loops: ``dce`` then)."""
    memo = old.__dict__
    outside, names, ops = memo.get("_outside_reads"), memo.get("_program_names"), memo.get("_ops")
    if outside is None or names is None or ops is None or not COUNT_REWRITES or "Loop" in kinds(prog.forward):
        return None
    binds, new_binds = old.binds, prog.backward.binds
    get = counts.get  # (a name not read is not in counts: 0)
    touched: list[str] = []  # the names whose counts went down
    came: list[str] = []  # names read now that were not read before
    ops = list(ops)
    for at in changed:
        before, after = binds[at].rhs, new_binds[at].rhs
        if type(before) is not Prim or type(after) is not Prim or len(new_binds[at].targets) != 1:
            return None
        for a in before.args:
            if type(a) is Var:
                counts[a.name] = get(a.name, 0) - 1
                touched.append(a.name)
            elif type(a) is Const and a.name is not None:
                return None
        for a in after.args:
            if type(a) is Var:
                n = get(a.name, 0)
                if n <= 0:
                    came.append(a.name)
                counts[a.name] = n + 1
            elif type(a) is Const and a.name is not None:
                return None
        ops[at] = after.op
    result = old.result.name if type(old.result) is Var else None
    removed: set[int] = set()
    went: set[str] = set()  # names read before that are not now, bound nowhere in the block
    index: dict[str, int] | None = None
    while touched:
        name = touched.pop()
        if get(name, 0) > 0:
            continue
        if name in outside:
            went.add(name)
            continue
        at = where.get(name)
        if at is None:
            if index is None:
                index = {t.name: i for i, b in enumerate(new_binds) for t in b.targets}
            at = index.get(name)
            if at is None:
                return None  # (not expected: a name read and bound nowhere)
        b = new_binds[at]
        if at in removed or name == result or any(get(t.name, 0) > 0 or t.name == result for t in b.targets) \
                or has_effect(b.rhs):
            continue
        removed.add(at)
        for a in atoms_of(b.rhs):
            if type(a) is Var:
                counts[a.name] = get(a.name, 0) - 1
                touched.append(a.name)
            elif type(a) is Const and a.name is not None:
                return None
    added = {n for n in came if get(n, 0) > 0 and n not in outside and n not in names}  # (bound in the block: named)
    went = {n for n in went if get(n, 0) <= 0}
    if removed:
        flags = [True] * len(new_binds)  # (the few removed marked: no look at every binding)
        for at in removed:
            flags[at] = False
        backward = Block(tuple(compress(new_binds, flags)), old.result)
        ops = list(compress(ops, flags))
        went.update([t.name for i in removed for t in new_binds[i].targets])  # (names bound no more)
    else:
        backward = prog.backward
    memo = backward.__dict__
    needed = _changed(outside, went, added)
    memo.setdefault("_outside_reads", needed)
    memo.setdefault("_program_names", _changed(names, went, added))
    memo.setdefault("_ops", ops)
    memo.setdefault("_kinds", frozenset(ops))
    return _forward_dce(ReverseProgram(prog.name, prog.params, prog.forward, prog.ct_in, backward), backward,
                        needed)


def _changed(names: frozenset[str], went: set[str], added: set[str]) -> frozenset[str]:
    """``names`` less ``went``, plus ``added`` (a new set only where one of them changes it)."""
    if went and not went.isdisjoint(names):
        names = names.difference(went)
    return names.union(added) if added else names


#: whether ``products.shared_products`` finds what its rewrites left unread itself (``dce_rewritten``), not by
#: ``dce`` (tests turn it off)
COUNT_REWRITES = True


def prune_tapes(prog: ReverseProgram) -> ReverseProgram:
    """Each loop records on its tape exactly what its backward pass reads of
    what the loop binds: no more, and no less when a value was moved into the
    loop's body from an inner loop (``hoist_invariants``)."""
    if "Loop" not in kinds(prog.forward) and "LoopBack" not in kinds(prog.backward):
        return prog  # no tapes
    keep: dict[str, tuple[Var, ...]] = {}
    inside: dict[str, set[str]] = {}  # tape -> what its loop binds (outer values are not taped)

    def scan(block: Block) -> None:
        for b in block.binds:
            if isinstance(b.rhs, Loop) and b.rhs.tape is not None:
                r = b.rhs
                inside[r.tape.name] = {*(v.name for v in r.inputs), *bound_names(r.body)}
            for inner in nested_blocks(b.rhs):
                scan(inner)

    scan(prog.forward)
    if not inside and not any(isinstance(b.rhs, LoopBack) for b in all_binds(prog.backward)):
        return prog  # no tapes
    forward_vars: dict[str, Var] = {}  # made when a tape misses a value

    def back(block: Block) -> Block:
        binds = []
        for b in block.binds:
            b = with_branches(b, b.rhs, back)
            if isinstance(b.rhs, LoopBack):
                # what the body reads from this loop's iteration (not what nested loops bind themselves)
                read = (read_set(b.rhs.body) - bound_set(b.rhs.body)) & inside.get(b.rhs.tape.name, set())
                saved = tuple(v for v in b.rhs.saved if v.name in read)
                missing = read - {v.name for v in saved}  # once, not per forward variable
                if missing and not forward_vars:
                    forward_vars.update((v.name, v) for v in bound_vars(prog.forward))
                saved += tuple(v for n, v in forward_vars.items() if n in missing)
                keep[b.rhs.tape.name] = saved
                if not same(saved, b.rhs.saved):
                    b = Bind(b.targets, replace(b.rhs, saved=saved), b.loc)
            binds.append(b)
        return same_or_new(block, binds)

    def fwd(block: Block) -> Block:
        binds = []
        for b in block.binds:
            b = with_branches(b, b.rhs, fwd)
            if isinstance(b.rhs, Loop) and b.rhs.tape is not None:
                if b.rhs.tape.name not in keep:  # no backward pass reads this tape
                    b = Bind(b.targets[:-1], replace(b.rhs, save=(), tape=None), b.loc)
                elif not same(keep[b.rhs.tape.name], b.rhs.save):
                    b = Bind(b.targets, replace(b.rhs, save=keep[b.rhs.tape.name]), b.loc)
            binds.append(b)
        return same_or_new(block, binds)

    backward = back(prog.backward)
    forward = fwd(prog.forward)
    if forward is prog.forward and backward is prog.backward:
        return prog
    return ReverseProgram(prog.name, prog.params, forward, prog.ct_in, backward)

"""The zero/plus algebra (``fold``): a statically-zero cotangent is never
materialised: ``plus`` drops zeros, a primitive that is zero-preserving in a
zero argument is zero, tuples of zeros are zero, ``unpack`` of a known tuple is
its items, copies are propagated.  ``name_cotangents``: a cotangent computed into
a temporary and then named ``x_ct`` is computed straight into ``x_ct``."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

from .. import rules
from ..blocks import NESTING, ZERO_MAKERS, rebound, result_items, same_or_new, with_branches
from ..ir import (Atom, Bind, Block, Const, Copy, Drop, Dup, If, ListT, Loop, LoopBack, MakeTuple, Plus, Prim,
                  ReverseProgram, TupleT, Unpack, Var, Zero, bound_set, kinds, read_set, substitute, substitute_block,
                  vars_of)
from ..ir.walk import NESTING_KINDS, OTHER_KINDS
from ..structural import BEFORE_STRUCTURE
from .structure import forget_forward, forget_structure, rename_deep, rename_vars, subst_atom


def _is_zero_tuple(items: tuple[Atom, ...]) -> bool:
    return all(isinstance(a, Zero) for a in items)


def select_items(block: Block, keep: list[int]) -> Block:
    """A branch or loop body passing on only its result items ``keep``."""
    items = result_items(block)
    assert items is not None and isinstance(block.result, Var)
    chosen = tuple(items[i] for i in keep)
    tup = Var(block.result.name, TupleT(tuple(a.type for a in chosen)))
    return Block(block.binds[:-1] + (Bind((tup,), MakeTuple(chosen), block.binds[-1].loc),), tup)


def _fold_if(b: Bind, rhs: If, env: dict[str, Atom], keep_copies: bool, renamed: Renamed,
             keep: frozenset[str] = frozenset()) -> Bind | None:
    """Fold both branches; a joined value that is zero in both, or the same
    outside value in both, needs no ``if``: it is that value."""
    then, orelse = fold(rhs.then, keep_copies, renamed, keep), fold(rhs.orelse, keep_copies, renamed, keep)
    ti, ei = result_items(then), result_items(orelse)
    if ti is None or ei is None:
        return Bind(b.targets, If(rhs.cond, then, orelse), b.loc)
    inside = bound_set(then) | bound_set(orelse)
    kept = []
    for i, t in enumerate(b.targets):
        a, c = _through_copies(ti[i], then), _through_copies(ei[i], orelse)
        if _zero_valued(a, then) and _zero_valued(c, orelse):
            env[t.name] = Zero(t.type)
        elif a == c and not isinstance(a, Zero) and not (isinstance(a, Var) and a.name in inside):
            env[t.name] = a
        else:
            kept.append(i)
    # an `if` that prints or raises stays, and one binding a name read elsewhere (a residual: ``keep``)
    if not kept and not rules.has_effect(If(rhs.cond, then, orelse)) and keep.isdisjoint(inside):
        return None
    return Bind(tuple(b.targets[i] for i in kept),
                If(rhs.cond, select_items(then, kept), select_items(orelse, kept)), b.loc)


def _fold_loop_back(b: Bind, rhs: LoopBack, env: dict[str, Atom], keep_copies: bool,
                    made_zero: set[str], renamed: Renamed, keep: frozenset[str] = frozenset()) -> Bind | None:
    """Fold the body.  A carried value that starts as zero and that the body
    keeps zero (given that it is zero) is zero throughout, and one the body
    passes on unchanged is its start throughout: neither is carried any more,
    and the loop's result for it is that value.  The largest such set is found
    by starting from every zero start and dropping the ones some iteration
    changes."""
    zero = {i for i, a in enumerate(rhs.init) if isinstance(a, Zero) or (isinstance(a, Var) and a.name in made_zero)}
    while True:
        body = fold(substitute_block(rhs.body, {rhs.params[i].name: Zero(rhs.params[i].type) for i in zero}),
                    keep_copies, renamed, keep)
        items = result_items(body)
        if items is None:
            return Bind(b.targets, replace(rhs, body=fold(rhs.body, keep_copies, renamed, keep)), b.loc)
        still = {i for i in zero if _zero_valued(_through_copies(items[i], body), body)}
        if still == zero:
            break
        zero = still
    fixed = {i: Zero(b.targets[i].type) for i in zero}
    fixed.update({i: rhs.init[i] for i in range(len(rhs.params))
                  if i not in zero and _through_copies(items[i], body) == rhs.params[i]})
    if not fixed:
        return Bind(b.targets, replace(rhs, body=body), b.loc)
    for i, value in fixed.items():
        env[b.targets[i].name] = value
    kept = [i for i in range(len(rhs.params)) if i not in fixed]
    if not kept:
        return None
    body = substitute_block(body, {rhs.params[i].name: rhs.init[i] for i in fixed if i not in zero})
    return Bind(tuple(b.targets[i] for i in kept),
                replace(rhs, params=tuple(rhs.params[i] for i in kept), init=tuple(rhs.init[i] for i in kept),
                        body=select_items(body, kept)), b.loc)


def _zero_valued(a: Atom, block: Block) -> bool:
    """Whether a branch's result item is zero: statically, or made by a zeros
    primitive in the branch (needed only if the other branch is not zero)."""
    if isinstance(a, Zero):
        return True
    return isinstance(a, Var) and a in _zeros_made(block)


def _zeros_made(block: Block) -> set[Var]:
    """The targets of a block's bindings of one target made by a zeros primitive, found once per block (asked
    for each result item of a branch or a loop's body)."""
    memo = block.__dict__
    if "_zeros_made" not in memo:
        memo["_zeros_made"] = {bd.targets[0] for bd in block.binds
                               if len(bd.targets) == 1 and type(bd.rhs) is Prim and bd.rhs.op in ZERO_MAKERS}
    return memo["_zeros_made"]


def _through_copies(a: Atom, block: Block) -> Atom:
    """The atom a branch's result item is a copy of (``let x_ct = y_ct``)."""
    memo = block.__dict__  # (the copies of a block found once: asked for each of its result items)
    copies = memo.get("_copies")
    if copies is None:
        copies = memo["_copies"] = {bd.targets[0].name: bd.rhs.atom for bd in block.binds if type(bd.rhs) is Copy}
    while isinstance(a, Var) and a.name in copies:
        a = copies[a.name]
    return a


def _fold_one(b: Bind, rhs: object, tuples: dict[str, tuple[Atom, ...]], env: dict[str, Atom], keep_copies: bool,
              result: Atom, made_zero: set[str], renamed: Renamed, keep: frozenset[str] = frozenset()) -> Bind | None:
    """Simplify one binding; returns None when it was absorbed into ``env``.  ``keep``: names read
    elsewhere (residuals), whose bindings stay.  (``fold`` folds most primitives itself.)"""
    if isinstance(rhs, If):
        return _fold_if(b, rhs, env, keep_copies, renamed, keep)
    if isinstance(rhs, LoopBack):
        return _fold_loop_back(b, rhs, env, keep_copies, made_zero, renamed, keep)
    if isinstance(rhs, Loop):
        return with_branches(b, rhs, lambda blk: fold(blk, keep_copies, renamed, keep))
    if isinstance(rhs, Plus):
        items = tuple(a for a in rhs.items if not isinstance(a, Zero))
        if len(items) <= 1:
            env[b.targets[0].name] = items[0] if items else Zero(b.targets[0].type)
            return None
        return rebound(b, rhs if len(items) == len(rhs.items) else Plus(items))
    if isinstance(rhs, Prim) and rhs.op == "or_zeros_like":
        ct, like = rhs.args
        if not isinstance(ct, Zero):
            env[b.targets[0].name] = ct
            return None
        return Bind(b.targets, Prim("list_zeros_like" if isinstance(like.type, ListT) else "zeros_like", (like,)), b.loc)
    if isinstance(rhs, Prim):
        zero_in = rules.TABLE[rhs.op].zero_in
        if any(isinstance(rhs.args[i], Zero) for i in zero_in):
            env[b.targets[0].name] = Zero(b.targets[0].type)
            return None
        return rebound(b, rhs)
    if isinstance(rhs, MakeTuple):
        if _is_zero_tuple(rhs.items) and b.targets[0] != result:
            env[b.targets[0].name] = Zero(b.targets[0].type)
            return None
        tuples[b.targets[0].name] = rhs.items
        return rebound(b, rhs)
    if isinstance(rhs, Unpack):
        src = rhs.tup
        items = None
        if isinstance(src, Zero):
            items = tuple(Zero(t.type) for t in b.targets)
        elif isinstance(src, Var) and src.name in tuples:
            items = tuples[src.name]
        if items is None:
            return rebound(b, rhs)
        for t, a in zip(b.targets, items):
            env[t.name] = a
        return None
    if isinstance(rhs, Copy):
        if keep_copies and not isinstance(rhs.atom, (Zero, Const)):
            return rebound(b, rhs)
        env[b.targets[0].name] = rhs.atom
        return None
    return rebound(b, rhs)  # type: ignore[arg-type]


#: where ``fold`` records every name it replaced (in every nested block) by what replaced it
Renamed = "dict[str, Atom] | None"


def fold(block: Block, keep_copies: bool = True, renamed: Renamed = None, keep: frozenset[str] = frozenset(),
         env: dict[str, Atom] | None = None, forget: bool = False) -> Block:
    """The zero/plus algebra on ``block`` (see ``_fold``)."""
    folded = _fold(block, keep_copies, renamed, keep, env, forget)
    assert folded is not None
    return folded


def fold_named(block: Block, env: dict[str, Atom] | None = None) -> Block:
    """``name_cotangents(fold(block, env=env))``, of a block without nested blocks: in one walk
    where that can tell (nearly always), else in two."""
    named = _fold(block, env=env, named=True)
    return named if named is not None else name_cotangents(fold(block, env=env))


def _fold(block: Block, keep_copies: bool = True, renamed: Renamed = None, keep: frozenset[str] = frozenset(),
          env: dict[str, Atom] | None = None, forget: bool = False, named: bool = False) -> Block | None:
    """The zero/plus algebra on ``block``; the names it replaces are added to
    ``renamed`` (when given) with what replaced them.  ``env``: names the block
    reads from outside, renamed as it is folded (a renaming of a block without
    a backward loop: ``structure.rename_deep`` would rename a loop's tape values too).
    ``forget``: ``structure.forget_forward`` in the same walk, of a block without
    nested blocks (a copy ``dup`` made is renamed as what it copies, ``drop`` left out).
    ``named``: ``name_cotangents`` of the result in the same walk, of a block without nested
    blocks (copies kept): None where a temporary a copy named is read after that copy (then
    the walk cannot tell: fold, then ``name_cotangents``)."""
    env = dict(env) if env else {}
    # (named) each name a binding of one target binds, not read yet -> where in ``out``; -1: a temporary named
    # by the copy that read it (``name_cotangents``'s use count of 1, if nothing reads it after)
    watch: dict[str, int] = {}
    tuples: dict[str, tuple[Atom, ...]] = {}
    made_zero: set[str] = set()  # variables bound to zeros made at run time
    out = []
    # (named) a primitive renamed, by where in ``out`` its binding (the old one) is: its binding is made once its
    # target is known (a copy naming it may come), not made and then made again
    renamed_at: dict[int, Prim] = {}
    table = rules.TABLE
    forgotten = 0  # (forget) the bindings of ``dup`` and ``drop`` left out
    for b in block.binds:
        rhs = b.rhs
        if type(rhs) is Prim:  # (what ``substitute`` makes, without a call)
            args = rhs.args
            plain = True  # (no argument renamed, none a zero: then none of the zero-preserving ones is zero)
            for a in args:
                if type(a) is Var:
                    if a.name in env:
                        if len(args) == 2:  # (the most common: no comprehension)
                            a, c = args
                            args = (env.get(a.name, a) if type(a) is Var else a,
                                    env.get(c.name, c) if type(c) is Var else c)
                            # (plain where neither argument is a zero now: then none is looked at again)
                            plain = type(args[0]) is not Zero and type(args[1]) is not Zero
                        else:
                            args = tuple([env.get(a.name, a) if type(a) is Var else a for a in args])
                            plain = False
                        rhs = Prim(rhs.op, args, rhs.params)
                        break
                elif type(a) is Zero:
                    plain = False
        elif type(rhs) is Copy:  # (the next most common: ``substitute`` and ``_fold_one``'s rule, without a call)
            src = rhs.atom
            if type(src) is Var:
                src = env.get(src.name, src)
            if not keep_copies or type(src) is not Var:
                env[b.targets[0].name] = src
                continue
            if named:  # (``name_cotangents``'s rule: no copy made, it names or renames)
                at = watch.pop(src.name, None)
                if at is not None:
                    if at < 0:
                        return None
                    if src.name[:1] == "t" and src.name[1:].isdigit():  # (``Namer.is_temp``)
                        old = out[at]
                        out[at] = Bind(b.targets, renamed_at.pop(at, old.rhs), old.loc)
                        watch[src.name] = -1
                        continue
                env[b.targets[0].name] = src
                continue
            out.append(b if src is rhs.atom else Bind(b.targets, Copy(src), b.loc))
            continue
        elif type(rhs) is Plus:  # (a cotangent sum: ``substitute``'s test and ``_fold_one``'s rule, without a call)
            items = rhs.items
            plain = len(items) > 1  # (of one item or none, ``_fold_one`` makes that item or a zero)
            for a in items:
                if type(a) is Zero or type(a) is Var and a.name in env:
                    plain = False
                    break
            if plain:  # (the most common: nothing renamed, no zero, kept as it is: ``_fold_one`` and what follows it)
                if named:
                    for a in items:
                        if type(a) is Var and a.name in watch and watch.pop(a.name) < 0:
                            return None
                    if len(b.targets) == 1:
                        watch[b.targets[0].name] = len(out)
                out.append(b)
                continue
            rhs = substitute(rhs, env)
        elif forget and type(rhs) is Dup and type(env.get(rhs.var.name, rhs.var)) is Var:
            var = env.get(rhs.var.name, rhs.var)  # (``forget_forward``'s rule below, without ``substitute``'s call)
            for t in b.targets:
                env[t.name] = var
            forgotten += 1
            continue
        else:
            rhs = substitute(rhs, env)
        if type(rhs) is Prim and rhs.op != "or_zeros_like":  # the most common: zero if zero-preserving in a zero
            for i in () if plain else table[rhs.op].zero_in:
                if type(rhs.args[i]) is Zero:
                    env[b.targets[0].name] = Zero(b.targets[0].type)
                    break
            else:
                if named:
                    for a in rhs.args:
                        if type(a) is Var and a.name in watch and watch.pop(a.name) < 0:
                            return None
                    if len(b.targets) == 1:
                        watch[b.targets[0].name] = len(out)
                        if rhs is not b.rhs and DEFER_BINDS:
                            renamed_at[len(out)] = rhs
                            out.append(b)
                            continue
                out.append(b if rhs is b.rhs else Bind(b.targets, rhs, b.loc))
                if rhs.op in ZERO_MAKERS:
                    made_zero.add(b.targets[0].name)
            continue
        if forget and type(rhs) is Dup:
            for t in b.targets:
                env[t.name] = rhs.var
            forgotten += 1
            continue
        if forget and type(rhs) is Drop:
            forgotten += 1
            continue
        new = _fold_one(b, rhs, tuples, env, keep_copies, block.result, made_zero, renamed, keep)
        if new is not None:
            if named:
                for v in vars_of(new.rhs):
                    if v.name in watch and watch.pop(v.name) < 0:
                        return None
                if len(new.targets) == 1:
                    watch[new.targets[0].name] = len(out)
            out.append(new)
            if isinstance(new.rhs, Prim) and new.rhs.op in ZERO_MAKERS:
                made_zero.add(new.targets[0].name)
    if renamed is not None:
        renamed.update(env)
    result = subst_atom(block.result, env)
    if named and type(result) is Var and watch.get(result.name) == -1:
        return None
    for at, rhs in renamed_at.items():  # (the renamed primitives no copy named)
        old = out[at]
        out[at] = Bind(old.targets, rhs, old.loc)
    folded = same_or_new(block, out, result)
    known = block.__dict__.get("_kinds")
    if folded is not block and known is not None and REMEMBER_KINDS and len(out) + forgotten == len(block.binds) \
            and known.isdisjoint(_KINDS_CHANGED):
        # (of a block without nested blocks, each binding the fold keeps is made again, if at all, of what it was
        # made of (a renamed primitive has its op, a sum stays a sum): where it left out none but ``dup`` and
        # ``drop`` (every one of them, with ``forget``), the new block is made of what the old one is, less those.
        # Remembered as ``kinds`` would find it, without a walk: ``sink_broadcasts`` and ``hoist_invariants`` ask)
        folded.__dict__.setdefault("_kinds", known - _FORGOTTEN if forget else known)
    return folded


#: whether ``_fold`` remembers the kinds of a block it made where it can tell them (tests turn it off)
REMEMBER_KINDS = True

#: the kinds of the bindings ``_fold`` may make again of something else (``or_zeros_like``) or with blocks inside
_KINDS_CHANGED = NESTING_KINDS | {"or_zeros_like"}

#: the kinds ``_fold`` leaves out with ``forget``
_FORGOTTEN = frozenset({"Dup", "Drop"})


def fold_forward(prog: ReverseProgram) -> ReverseProgram:
    """Fold the forward block (copies too).  A forward name the fold replaces (a
    value an ``if`` joins that is the same in both branches, a copy) may be a
    residual: the backward block and the tapes read what replaced it, so the
    two blocks agree."""
    residuals = frozenset(read_set(prog.backward) - bound_set(prog.backward))  # an `if` binding one stays
    forward, env = _fold_forward_block(prog.forward, residuals)
    return ReverseProgram(prog.name, prog.params, forward, prog.ct_in, rename_deep(prog.backward, env))


def _fold_forward_block(forward: Block, residuals: frozenset[str],
                        forget: bool = False) -> tuple[Block, dict[str, Atom]]:
    """``fold_forward``'s forward block, and what each name it replaced is now (``forget``: see ``fold``)."""
    renamed: dict[str, Atom] = {}
    forward = fold(forward, keep_copies=False, renamed=renamed, keep=residuals, forget=forget)
    if forget and FINAL_AT_ONCE:
        # (a block without nested blocks: what the fold put in for a name is an atom it had renamed already,
        # or a zero; a name is put in only at its own binding, and an atom read there is bound before it,
        # so no name replacing another is ever replaced itself: each is final)
        return forward, renamed

    def final(a: Atom) -> Atom:
        while isinstance(a, Var) and a.name in renamed:
            a = renamed[a.name]
        return a

    env = {name: final(a) for name, a in renamed.items()}
    # (kinds: remembered on the block, which the passes after this one ask too)
    return _rename_saves(forward, env) if env and "Loop" in kinds(forward) else forward, env


#: whether ``_fold``'s named walk makes the binding of a renamed primitive once its target is known (tests turn
#: it off: then it is made at once, and made again where a copy names it)
DEFER_BINDS = True

#: whether ``_fold_forward_block`` takes the names a fold of a block without nested blocks replaced as final
#: (tests turn it off: then each is followed to the end)
FINAL_AT_ONCE = True


def fold_program(prog: ReverseProgram) -> ReverseProgram:
    """``structure.forget_structure``, ``fold_forward``, then ``fold`` of the
    backward block, which renames what it reads of the forward block (the copies
    ``dup`` made, the names the forward fold replaced) as it folds: one walk of
    the backward block, not three.  (Where the backward block has a backward
    loop, whose tape values are renamed too, the three passes in turn.)  Then
    ``name_cotangents`` of the backward block (in the fold's own walk where it has no nested blocks)."""
    if "LoopBack" in kinds(prog.backward):
        prog = fold_forward(forget_structure(prog))
        return ReverseProgram(prog.name, prog.params, prog.forward, prog.ct_in, name_cotangents(fold(prog.backward)))
    if kinds(prog.forward).isdisjoint(NESTING_KINDS):
        # forget_forward in the forward fold's own walk: what it renames is renamed with what the
        # fold replaces (no residuals to keep: they matter only at an `if`)
        known = _before_structure(prog.forward)
        forward, env = known if known is not None else _fold_forward_block(prog.forward, frozenset(), forget=True)
        return ReverseProgram(prog.name, prog.params, forward, prog.ct_in, _fold_backward(prog.backward, env))
    copies: dict[str, Atom] = {}  # (each a variable of the forward block)
    forward = forget_forward(prog.forward, copies)
    # the backward block's residuals, as ``fold_forward`` would find them after ``forget_structure``
    # (no backward loop: what the backward block binds is the same, none of it a copy's name);
    # the fold reads them only at an `if`
    residuals = frozenset(copies[n].name if n in copies else n  # type: ignore[union-attr]
                          for n in read_set(prog.backward) - bound_set(prog.backward)) \
        if "If" in kinds(forward) else frozenset()
    forward, env = _fold_forward_block(forward, residuals)
    both = {name: env.get(a.name, a) for name, a in copies.items()}  # type: ignore[union-attr]
    both.update(env)
    return ReverseProgram(prog.name, prog.params, forward, prog.ct_in, _fold_backward(prog.backward, both))


#: the key under which a block without nested blocks is remembered as one whose every binding is live for its
#: result alone (its every target and parameter read, each name bound once): ``dce`` of it, for any residuals,
#: is itself
ALL_LIVE = "_all_live"


def _before_structure(forward: Block) -> tuple[Block, dict[str, Atom]] | None:
    """``_fold_forward_block(forward, frozenset(), forget=True)`` without a walk that makes bindings again, where
    ``forward`` (without nested blocks) is the body of what ``structural.make_explicit`` made of a function whose
    body is primitives alone, none reading a zero, that body remembered (``BEFORE_STRUCTURE``): ``forget_forward``
    of ``forward`` is that body (``dup`` and ``drop`` left out, each copy renamed as what it copies: what the pass
    did, undone) and the fold of that changes nothing (nothing renamed, no zero, no copy, no ``or_zeros_like``):
    the body itself, and what was renamed is each copy ``dup`` made, as what it copies.  None where not known so.
    Where the pass ended no name with ``drop`` (it ends each that nothing reads, parameters too), each binding
    of that body is live (``ALL_LIVE``; a target is read, by a binding after it or the result: the last
    binding's by the result, and so on back) and its names are the function's (each parameter is read)."""
    before = forward.__dict__.get(BEFORE_STRUCTURE)
    found = kinds(forward)
    if before is None or not USE_BEFORE_STRUCTURE or not found.isdisjoint(_NOT_PRIMITIVES):
        return None
    core, names = before
    binds = forward.binds
    made = [b for b in binds if type(b.rhs) is not Prim]  # (``dup`` and ``drop`` alone: ``kinds`` says)
    # (the pass keeps each binding and adds one per ``dup`` or ``drop``: where the body has as many bindings as
    # the rest, each of those is the pass's, none the body's own, and the body is primitives alone)
    if len(core.binds) + len(made) != len(binds):
        return None
    atoms = [a for b in core.binds for a in b.rhs.args]  # type: ignore[union-attr]
    if Zero in set(map(type, atoms)):
        return None
    env: dict[str, Atom] = {t.name: b.rhs.var for b in made if type(b.rhs) is Dup  # type: ignore[union-attr]
                            for t in b.targets}
    memo = core.__dict__
    # (kinds of a block of primitives: the ops of the structural pass's output, which made each again with its op)
    memo.setdefault("_kinds", found - _FORGOTTEN)
    if REMEMBER_READS:  # (what ``use_counts`` and ``ops_of`` of a block of primitives find: codegen and
        # ``shared_products`` ask, of the forward block, which is this one where no pass before them changed it)
        memo.setdefault("_use_counts", Counter([a.name for a in atoms if type(a) is Var]))
        memo.setdefault("_ops", [b.rhs.op for b in core.binds])  # type: ignore[union-attr]
    if "Drop" not in found:
        memo.setdefault(ALL_LIVE, True)
        if names is not None:  # (the function's, each parameter read: its body's)
            memo.setdefault("_program_names", names)
    return core, env


#: the kinds of what is not a primitive, but for ``dup`` and ``drop``, and the primitive the fold makes again
_NOT_PRIMITIVES = (OTHER_KINDS - {"Dup", "Drop"}) | {"or_zeros_like"}

#: whether ``fold_program`` takes the block the structural pass made its forward block of, where it can tell
#: (tests turn it off)
USE_BEFORE_STRUCTURE = True

#: whether ``_before_structure`` remembers the reads of the block it takes, counted from the atoms it looks at
#: (tests turn it off)
REMEMBER_READS = True


def _fold_backward(backward: Block, env: dict[str, Atom]) -> Block:
    """``name_cotangents(fold(backward, env=env))``."""
    found = kinds(backward)
    if found.isdisjoint(NESTING_KINDS):
        if found.isdisjoint(_FOLDED_KINDS) and RENAMES_ONLY:
            renamed = _renamed_only(backward, env)
            if renamed is not None:
                return renamed
        # (``name_cotangents`` renames only where a copy names a temporary, and the fold makes no copy: of a block
        # without one, the fold's output is its own; no names watched in the walk)
        return fold_named(backward, env) if "Copy" in found else fold(backward, env=env)
    return name_cotangents(fold(backward, env=env))


#: the kinds whose bindings the fold may change other than by renaming (a sum or a tuple only where it has
#: too few items: ``_renamed_only`` looks)
_FOLDED_KINDS = (OTHER_KINDS - {"Plus", "MakeTuple"}) | {"or_zeros_like"}


#: the items ``_renamed_only`` looks at for a sum or a tuple of fewer than two items: one zero, which it looks for
_FEW = (Zero(TupleT(())),)


def _renamed_only(block: Block, env: dict[str, Atom]) -> Block | None:
    """``fold(block, env=env)`` of a block of primitives (not ``or_zeros_like``), sums and tuples (``kinds``
    says) where the fold only renames what ``env`` renames: each sum of two items or more, each tuple of one or
    more, no zero read, also after renaming.  (The backward block, nearly always: the fold's walk is then one
    comprehension finding the few bindings to make again.)  None where not so (then the fold)."""
    binds = block.binds
    # the bindings reading a name env renames or a zero (a binding once per such atom), and the sums and tuples
    # of fewer than two items (``_FEW``: a sum of one item or none is that item or a zero, a tuple of none a zero)
    at = [i for i, r in enumerate([b.rhs for b in binds])
          for a in (r.args if type(r) is Prim else r.items if len(r.items) > 1 else _FEW)  # type: ignore[union-attr]
          if (a.name in env if type(a) is Var else type(a) is Zero)]
    out = list(binds)
    for i in at:
        b = binds[i]
        if type(b.rhs) is not Prim and len(b.rhs.items) < 2:  # type: ignore[union-attr]
            return None  # (a tuple of one item is kept, but this path is not worth it for one)
        rhs = substitute(b.rhs, env)  # (what the fold makes: each atom renamed once)
        if Zero in map(type, rhs.args if type(rhs) is Prim else rhs.items):  # type: ignore[union-attr]
            return None  # (a zero, read or put in: the fold knows what it makes)
        out[i] = Bind(b.targets, rhs, b.loc)
    folded = same_or_new(block, out, subst_atom(block.result, env))
    known = block.__dict__.get("_kinds")
    if folded is not block and known is not None and REMEMBER_KINDS:
        folded.__dict__.setdefault("_kinds", known)  # (each binding made again of what it was made of)
    return folded


#: whether ``_fold_backward`` takes ``_renamed_only`` where it can (tests turn it off)
RENAMES_ONLY = True


def _rename_saves(block: Block, env: dict[str, Atom]) -> Block:
    """What each loop records on its tape, renamed by ``env``."""
    binds = []
    for b in block.binds:
        rhs = b.rhs
        if isinstance(rhs, Loop):
            rhs = replace(rhs, save=rename_vars(rhs.save, env), body=_rename_saves(rhs.body, env))
            binds.append(Bind(b.targets, rhs, b.loc))
        elif isinstance(rhs, If):
            binds.append(with_branches(b, rhs, lambda blk: _rename_saves(blk, env)))
        else:
            binds.append(b)
    return same_or_new(block, binds)


def name_cotangents(block: Block, outer: dict[str, Atom] | None = None) -> Block:
    """``let t5 = e; let x_ct = t5`` (t5 used nowhere else) becomes ``let x_ct = e``.
    ``outer``: the copies the enclosing blocks removed (name -> what replaces it);
    a nested block applies them with its own in one walk."""
    binds = block.binds
    rhss = [b.rhs for b in binds]
    # the reads of the primitives (the most common) in one comprehension, then the rest's
    read = [a.name for rhs in rhss if type(rhs) is Prim for a in rhs.args if type(a) is Var]
    for rhs in rhss:
        cls = type(rhs)
        if cls is Prim:
            continue
        if cls is Copy:  # (the next most common: one atom)
            if type(rhs.atom) is Var:
                read.append(rhs.atom.name)
        else:
            read.extend([v.name for v in vars_of(rhs)])
    uses = Counter(read)
    if isinstance(block.result, Var):
        uses[block.result.name] += 1
    out: list[Bind] = []
    at: dict[str, int] = {}  # each name bound by a binding of one target without blocks inside -> where in ``out``
    env: dict[str, Atom] = dict(outer or {})  # (a name is read only after its binding: what env has so far serves)
    for b in binds:
        rhs = b.rhs
        cls = type(rhs)
        if cls is Prim:  # the most common: ``substitute``'s own test, without a call
            if env:
                for a in rhs.args:
                    if type(a) is Var and a.name in env:  # (what ``substitute`` makes)
                        rhs = Prim(rhs.op, tuple([env.get(a.name, a) if type(a) is Var else a for a in rhs.args]),
                                   rhs.params)
                        b = Bind(b.targets, rhs, b.loc)
                        break
            if len(b.targets) == 1:
                at[b.targets[0].name] = len(out)
            out.append(b)
            continue
        if cls is Copy:
            src = rhs.atom  # type: ignore[union-attr]
            if type(src) is Var:
                src = env.get(src.name, src)
            if type(src) is Var and src.name[:1] == "t" and src.name[1:].isdigit() and uses[src.name] == 1 \
                    and src.name in at:  # (``Namer.is_temp``)
                old = out[at[src.name]]
                out[at[src.name]] = Bind(b.targets, old.rhs, old.loc)
            else:
                env[b.targets[0].name] = src
            continue
        if cls in NESTING:  # (each nested block applies env with its own copies, in a copy of it)
            b = with_branches(b, rhs, lambda blk: name_cotangents(blk, env))
        elif len(b.targets) == 1:
            at[b.targets[0].name] = len(out)
        out.append(rebound(b, substitute(b.rhs, env)))
    return same_or_new(block, out, subst_atom(block.result, env))

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
                  TupleT, Unpack, Var, Zero, bound_set, substitute, substitute_block, vars_of)
from ..ir.walk import NESTING_KINDS
from .structure import subst_atom


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


#: whether ``_fold``'s named walk makes the binding of a renamed primitive once its target is known (tests turn
#: it off: then it is made at once, and made again where a copy names it)
DEFER_BINDS = True

#: whether ``_fold`` remembers the kinds of a block it made where it can tell them (tests turn it off)
REMEMBER_KINDS = True

#: the kinds of the bindings ``_fold`` may make again of something else (``or_zeros_like``) or with blocks inside
_KINDS_CHANGED = NESTING_KINDS | {"or_zeros_like"}

#: the kinds ``_fold`` leaves out with ``forget``
_FORGOTTEN = frozenset({"Dup", "Drop"})


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

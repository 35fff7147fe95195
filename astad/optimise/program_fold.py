"""The fold of a reverse program (``fold_program``): ``fold`` (:mod:`.simplify`) of its forward block, copies
too (``fold_forward``), then of its backward block with what the forward fold replaced, and the cotangents
named (``name_cotangents``); with the shortcuts for a program the structural pass made of primitives alone
(``BEFORE_STRUCTURE``: the block before its dups is the folded forward block) and for a backward block the
fold only renames (``_renamed_only``)."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

from ..blocks import same_or_new, with_branches
from ..ir import (Atom, Bind, Block, Dup, If, Loop, Prim, ReverseProgram, TupleT, Var, Zero, bound_set, kinds, read_set,
                  substitute)
from ..ir.walk import NESTING_KINDS, OTHER_KINDS
from ..structural import BEFORE_STRUCTURE
from . import simplify
from .simplify import fold, fold_named, name_cotangents
from .structure import forget_forward, forget_structure, rename_deep, rename_vars, subst_atom


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
    memo.setdefault("_kinds", found - simplify._FORGOTTEN)
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
    if folded is not block and known is not None and simplify.REMEMBER_KINDS:
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

"""The simplifier for the target IR of the reverse macro.

Passes, each a function from program to program:

- ``forget_structure``: ``dup`` copies become aliases of the original, ``drop``
  disappears (the primal needs neither; they were there for the macro);
- ``fold``: the zero/plus algebra — a statically-zero cotangent is never
  materialised: ``plus`` drops zeros, a primitive that is zero-preserving in
  a zero argument is zero, tuples of zeros are zero, ``unpack`` of a known
  tuple is its items, copies are propagated;
- ``dce``: bindings nothing reads are removed (backward first, then forward,
  keeping what the backward reads: the residuals);
- ``name_cotangents``: a cotangent computed into a temporary and then named
  ``x_ct`` is computed straight into ``x_ct``;
- ``finish``: parameter cotangents that are statically zero become real
  zeros, and read-only broadcast views returned to the user become arrays.

Two passes live in modules of their own: ``accumulate.accumulate_in_loops``
(one-hot cotangents added in place) and ``lists_in_place.lists_in_place``
(lists appended to and popped in place); ``blocks`` holds the helpers they share.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

from . import rules
from .accumulate import accumulate_in_loops
from .blocks import ZERO_MAKERS as _ZERO_MAKERS, result_items, with_branches as _with_branches
from .frontend import literal_type
from .names import Namer
from .ir import (Atom, Bind, Block, Const, Copy, Drop, Dup, If, ListT, Loop, LoopBack, MakeTuple, NoneT,
                 Num, Plus, Prim,
                 ReverseProgram, nested_blocks, trip_count,
                 TupleT, Unpack, Var, Zero, all_binds, bound_names, bound_set, bound_vars, read_names, read_set, substitute,
                 substitute_block, use_counts, vars_of)
from .lists_in_place import lists_in_place


def _subst_atom(a: Atom, env: dict[str, Atom]) -> Atom:
    return env.get(a.name, a) if isinstance(a, Var) else a


def _subst_block(block: Block, env: dict[str, Atom]) -> Block:
    return substitute_block(block, env)


def forget_structure(prog: ReverseProgram) -> ReverseProgram:
    env: dict[str, Atom] = {}  # names are unique in a program, so one map serves every block

    def run(block: Block) -> Block:
        binds = []
        for b in block.binds:
            rhs = substitute(b.rhs, env)
            if isinstance(rhs, Dup):
                for t in b.targets:
                    env[t.name] = rhs.var
            elif isinstance(rhs, Loop):
                body = run(rhs.body)
                binds.append(Bind(b.targets, replace(rhs, body=body, save=_renamed(rhs.save, env)), b.loc))
            elif isinstance(rhs, (If, LoopBack)):
                binds.append(_with_branches(b, rhs, run))
            elif not isinstance(rhs, Drop):
                binds.append(Bind(b.targets, rhs, b.loc))
        return Block(tuple(binds), _subst_atom(block.result, env))

    forward = run(prog.forward)
    return ReverseProgram(prog.name, prog.params, forward, prog.ct_in, _rename_deep(prog.backward, env))


def _renamed(vs: tuple[Var, ...], env: dict[str, Atom]) -> tuple[Var, ...]:
    """Variables renamed by ``env`` (copies become their original), each once."""
    out: dict[str, Var] = {}
    for v in vs:
        r = env.get(v.name, v)
        if isinstance(r, Var):
            out.setdefault(r.name, r)
    return tuple(out.values())


def _rename_deep(block: Block, env: dict[str, Atom]) -> Block:
    """``env`` applied to every occurrence, also to the values a backward loop
    binds from its tape (they are the forward loop's, renamed the same way)."""
    binds = []
    for b in block.binds:
        rhs = b.rhs
        if isinstance(rhs, LoopBack):
            rhs = replace(rhs, init=tuple(_subst_atom(a, env) for a in rhs.init), saved=_renamed(rhs.saved, env),
                          body=_rename_deep(rhs.body, env))
        elif isinstance(rhs, If):
            rhs = If(_subst_atom(rhs.cond, env), _rename_deep(rhs.then, env), _rename_deep(rhs.orelse, env))
        else:
            rhs = substitute(rhs, env)
        binds.append(Bind(b.targets, rhs, b.loc))
    return Block(tuple(binds), _subst_atom(block.result, env))


def _is_zero_tuple(items: tuple[Atom, ...]) -> bool:
    return all(isinstance(a, Zero) for a in items)


def _select(block: Block, keep: list[int]) -> Block:
    items = result_items(block)
    assert items is not None and isinstance(block.result, Var)
    chosen = tuple(items[i] for i in keep)
    tup = Var(block.result.name, TupleT(tuple(a.type for a in chosen)))
    return Block(block.binds[:-1] + (Bind((tup,), MakeTuple(chosen), block.binds[-1].loc),), tup)


def _fold_if(b: Bind, rhs: If, env: dict[str, Atom], keep_copies: bool, renamed: Renamed) -> Bind | None:
    """Fold both branches; a joined value that is zero in both, or the same
    outside value in both, needs no ``if``: it is that value."""
    then, orelse = fold(rhs.then, keep_copies, renamed), fold(rhs.orelse, keep_copies, renamed)
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
    if not kept:
        return None
    return Bind(tuple(b.targets[i] for i in kept), If(rhs.cond, _select(then, kept), _select(orelse, kept)), b.loc)


def _fold_loop_back(b: Bind, rhs: LoopBack, env: dict[str, Atom], keep_copies: bool,
                    made_zero: set[str], renamed: Renamed) -> Bind | None:
    """Fold the body.  A carried value that starts as zero and that the body
    keeps zero (given that it is zero) is zero throughout, and one the body
    passes on unchanged is its start throughout: neither is carried any more,
    and the loop's result for it is that value.  The largest such set is found
    by starting from every zero start and dropping the ones some iteration
    changes."""
    zero = {i for i, a in enumerate(rhs.init) if isinstance(a, Zero) or (isinstance(a, Var) and a.name in made_zero)}
    while True:
        body = fold(_subst_block(rhs.body, {rhs.params[i].name: Zero(rhs.params[i].type) for i in zero}),
                    keep_copies, renamed)
        items = result_items(body)
        if items is None:
            return Bind(b.targets, replace(rhs, body=fold(rhs.body, keep_copies, renamed)), b.loc)
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
    body = _subst_block(body, {rhs.params[i].name: rhs.init[i] for i in fixed if i not in zero})
    return Bind(tuple(b.targets[i] for i in kept),
                replace(rhs, params=tuple(rhs.params[i] for i in kept), init=tuple(rhs.init[i] for i in kept),
                        body=_select(body, kept)), b.loc)


def _zero_valued(a: Atom, block: Block) -> bool:
    """Whether a branch's result item is zero: statically, or made by a zeros
    primitive in the branch (needed only if the other branch is not zero)."""
    if isinstance(a, Zero):
        return True
    return isinstance(a, Var) and any(bd.targets == (a,) and isinstance(bd.rhs, Prim) and bd.rhs.op in _ZERO_MAKERS
                                      for bd in block.binds)


def _through_copies(a: Atom, block: Block) -> Atom:
    """The atom a branch's result item is a copy of (``let x_ct = y_ct``)."""
    copies = {bd.targets[0].name: bd.rhs.atom for bd in block.binds if isinstance(bd.rhs, Copy)}
    while isinstance(a, Var) and a.name in copies:
        a = copies[a.name]
    return a


def _fold_one(b: Bind, rhs: object, tuples: dict[str, tuple[Atom, ...]], env: dict[str, Atom], keep_copies: bool,
              result: Atom, made_zero: set[str], renamed: Renamed) -> Bind | None:
    """Simplify one binding; returns None when it was absorbed into ``env``."""
    if isinstance(rhs, If):
        return _fold_if(b, rhs, env, keep_copies, renamed)
    if isinstance(rhs, LoopBack):
        return _fold_loop_back(b, rhs, env, keep_copies, made_zero, renamed)
    if isinstance(rhs, Loop):
        return _with_branches(b, rhs, lambda blk: fold(blk, keep_copies, renamed))
    if isinstance(rhs, Plus):
        items = tuple(a for a in rhs.items if not isinstance(a, Zero))
        if len(items) <= 1:
            env[b.targets[0].name] = items[0] if items else Zero(b.targets[0].type)
            return None
        return Bind(b.targets, Plus(items), b.loc)
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
        return Bind(b.targets, rhs, b.loc)
    if isinstance(rhs, MakeTuple):
        if _is_zero_tuple(rhs.items) and b.targets[0] != result:
            env[b.targets[0].name] = Zero(b.targets[0].type)
            return None
        tuples[b.targets[0].name] = rhs.items
        return Bind(b.targets, rhs, b.loc)
    if isinstance(rhs, Unpack):
        src = rhs.tup
        items = None
        if isinstance(src, Zero):
            items = tuple(Zero(t.type) for t in b.targets)
        elif isinstance(src, Var) and src.name in tuples:
            items = tuples[src.name]
        if items is None:
            return Bind(b.targets, rhs, b.loc)
        for t, a in zip(b.targets, items):
            env[t.name] = a
        return None
    if isinstance(rhs, Copy):
        if keep_copies and not isinstance(rhs.atom, (Zero, Const)):
            return Bind(b.targets, rhs, b.loc)
        env[b.targets[0].name] = rhs.atom
        return None
    return Bind(b.targets, rhs, b.loc)  # type: ignore[arg-type]


#: where ``fold`` records every name it replaced (in every nested block) by what replaced it
Renamed = "dict[str, Atom] | None"


def fold(block: Block, keep_copies: bool = True, renamed: Renamed = None) -> Block:
    """The zero/plus algebra on ``block``; the names it replaces are added to
    ``renamed`` (when given) with what replaced them."""
    env: dict[str, Atom] = {}
    tuples: dict[str, tuple[Atom, ...]] = {}
    made_zero: set[str] = set()  # variables bound to zeros made at run time
    out = []
    for b in block.binds:
        new = _fold_one(b, substitute(b.rhs, env), tuples, env, keep_copies, block.result, made_zero, renamed)
        if new is not None:
            out.append(new)
            if isinstance(new.rhs, Prim) and new.rhs.op in _ZERO_MAKERS:
                made_zero.add(new.targets[0].name)
    if renamed is not None:
        renamed.update(env)
    return Block(tuple(out), _subst_atom(block.result, env))


def fold_forward(prog: ReverseProgram) -> ReverseProgram:
    """Fold the forward block (copies too).  A forward name the fold replaces (a
    value an ``if`` joins that is the same in both branches, a copy) may be a
    residual: the backward block and the tapes read what replaced it, so the
    two blocks agree."""
    renamed: dict[str, Atom] = {}
    forward = fold(prog.forward, keep_copies=False, renamed=renamed)

    def final(a: Atom) -> Atom:
        while isinstance(a, Var) and a.name in renamed:
            a = renamed[a.name]
        return a

    env = {name: final(a) for name, a in renamed.items()}
    return ReverseProgram(prog.name, prog.params, _rename_saves(forward, env), prog.ct_in,
                          _rename_deep(prog.backward, env))


def _rename_saves(block: Block, env: dict[str, Atom]) -> Block:
    """What each loop records on its tape, renamed by ``env``."""
    binds = []
    for b in block.binds:
        rhs = b.rhs
        if isinstance(rhs, Loop):
            rhs = replace(rhs, save=_renamed(rhs.save, env), body=_rename_saves(rhs.body, env))
        elif isinstance(rhs, If):
            rhs = If(rhs.cond, _rename_saves(rhs.then, env), _rename_saves(rhs.orelse, env))
        binds.append(Bind(b.targets, rhs, b.loc))
    return Block(tuple(binds), block.result)


_ELEMENTWISE = {"add", "sub", "mul", "div", "neg", "select"}


def sink_broadcasts(prog: ReverseProgram) -> ReverseProgram:
    """Push ``broadcast_to`` down through elementwise operations: ``mul(broadcast_to(s,
    S), y)`` with ``y`` of shape ``S`` is ``mul(s, y)``, and an operation on
    broadcasts of small values is done on the small values, then broadcast.  A
    cotangent that is a broadcast scalar (from ``sum``/``mean``) is thus never
    materialised as a full array unless it has to be."""
    return ReverseProgram(prog.name, prog.params, prog.forward, prog.ct_in, _sink(prog.backward, {}, Namer.of(prog)))


def _sink(block: Block, small: dict[str, Atom], namer: Namer) -> Block:
    small = dict(small)  # variable bound to broadcast_to(src, shape) -> src
    out: list[Bind] = []
    for b in block.binds:
        rhs = b.rhs
        if isinstance(rhs, (If, Loop, LoopBack)):
            out.append(_with_branches(b, rhs, lambda blk: _sink(blk, small, namer)))
            continue
        if isinstance(rhs, Prim) and rhs.op == "broadcast_to":
            src = rhs.args[0]
            small[b.targets[0].name] = small.get(src.name, src) if isinstance(src, Var) else src
        elif not _known_shape(b.targets[0]):
            pass  # a length known only at run time: no constant shape to broadcast to
        elif (isinstance(rhs, Prim) and rhs.op == "expand_dims" and isinstance(rhs.args[0], Var)
              and rhs.args[0].name in small and _is_scalar(small[rhs.args[0].name])):
            # a broadcast scalar with an axis inserted is the scalar broadcast to the new shape
            src, target = small[rhs.args[0].name], b.targets[0]
            out.append(Bind(b.targets, Prim("broadcast_to", (src, _shape_const(target))), b.loc))
            small[target.name] = src
            continue
        elif isinstance(rhs, Prim) and rhs.op in _ELEMENTWISE and any(isinstance(a, Var) and a.name in small
                                                                       for a in rhs.args):
            args = tuple(small.get(a.name, a) if isinstance(a, Var) else a for a in rhs.args)
            target = b.targets[0]
            t = rules.infer(rhs.op, [a.type for a in args], dict(rhs.params))
            if t.shape == target.type.shape:  # type: ignore[union-attr]
                out.append(Bind(b.targets, Prim(rhs.op, args, rhs.params), b.loc))
                continue
            reduced = Var(namer.temp(), t)
            out.append(Bind((reduced,), Prim(rhs.op, args, rhs.params), b.loc))
            out.append(Bind(b.targets, Prim("broadcast_to", (reduced, _shape_const(target))), b.loc))
            small[target.name] = reduced
            continue
        out.append(b)
    return Block(tuple(out), block.result)


def _known_shape(v: Var) -> bool:
    return not (isinstance(v.type, Num) and None in v.type.shape)


def _is_scalar(a: Atom) -> bool:
    return isinstance(a.type, Num) and a.type.shape == ()


def _shape_const(v: Var) -> Const:
    shape = tuple(v.type.shape)  # type: ignore[union-attr]
    return Const.literal(shape, TupleT(tuple(Num((), "int64", True, d) for d in shape)))


def _atom_key(a: Atom) -> object:
    if isinstance(a, Var):
        return ("v", a.name)
    if isinstance(a, Const):
        return ("c", a.key if a.name is None else a.name)
    return ("z", str(a.type))


#: new arrays that may be written into (accumulators): each must stay its own
_BUFFERS = {"zeros", "zeros_like", "ones", "ones_like", "full", "eye", "list", "list_zeros_like", "list_onehot"}


def cse(prog: ReverseProgram) -> ReverseProgram:
    """Common subexpressions: a primitive applied again to the same atoms is the
    earlier result (the backward pass reuses forward values as residuals).  A
    branch sees what was computed before its ``if``, not the other way round."""
    env: dict[str, Atom] = {}

    def run(block: Block, seen: dict[object, Var]) -> Block:
        seen = dict(seen)
        out = []
        for b in block.binds:
            rhs = substitute(b.rhs, env)
            if isinstance(rhs, (If, Loop, LoopBack)):
                out.append(_with_branches(b, rhs, lambda blk: run(blk, seen)))
                continue
            if isinstance(rhs, Prim) and rules.TABLE[rhs.op].stmts is None and rhs.op not in _BUFFERS:
                key = (rhs.op, tuple(_atom_key(a) for a in rhs.args), rhs.params)
                if key in seen:
                    env[b.targets[0].name] = seen[key]
                    continue
                seen[key] = b.targets[0]
            out.append(Bind(b.targets, rhs, b.loc))
        if block is prog.forward:
            top.update(seen)
        return Block(tuple(out), _subst_atom(block.result, env))

    top: dict[object, Var] = {}
    forward = run(prog.forward, {})
    return ReverseProgram(prog.name, prog.params, forward, prog.ct_in, run(prog.backward, top))


def _dce(block: Block, live: set[str], keep: set[str]) -> Block:
    """Remove bindings nothing reads; ``keep`` are names read from elsewhere (the
    residuals, which may be bound inside branches)."""
    live = set(live)
    kept = []
    for b in reversed(block.binds):
        if isinstance(b.rhs, If):
            alive = [i for i, t in enumerate(b.targets) if t.name in live or t.name in keep]
            inner = bound_set(b.rhs.then) | bound_set(b.rhs.orelse)
            if not alive and keep.isdisjoint(inner):
                continue
            then, orelse = _select(b.rhs.then, alive), _select(b.rhs.orelse, alive)
            then = _dce(then, read_names(Block((), then.result)), keep)
            orelse = _dce(orelse, read_names(Block((), orelse.result)), keep)
            b = Bind(tuple(b.targets[i] for i in alive), If(b.rhs.cond, then, orelse), b.loc)
        elif isinstance(b.rhs, Loop):
            if not any(t.name in live or t.name in keep for t in b.targets):
                continue
            body_live = read_names(Block((), b.rhs.body.result)) | {v.name for v in b.rhs.save}
            b = _with_branches(b, b.rhs, lambda blk: _dce(blk, body_live, keep))
        elif isinstance(b.rhs, LoopBack):
            if not any(t.name in live for t in b.targets):
                continue
            b = _with_branches(b, b.rhs, lambda blk: _dce(blk, read_names(Block((), blk.result)), keep))
        elif not any(t.name in live or t.name in keep for t in b.targets):
            continue
        kept.append(b)
        live.update(v.name for v in vars_of(b.rhs))
    return Block(tuple(reversed(kept)), block.result)


def dce(prog: ReverseProgram) -> ReverseProgram:
    backward = _dce(prog.backward, read_names(Block((), prog.backward.result)), set())
    prog = prune_tapes(ReverseProgram(prog.name, prog.params, prog.forward, prog.ct_in, backward))
    backward = prog.backward
    needed = read_set(backward) - bound_set(backward)
    forward = _dce(prog.forward, read_names(Block((), prog.forward.result)), needed)
    return ReverseProgram(prog.name, prog.params, forward, prog.ct_in, backward)


def prune_tapes(prog: ReverseProgram) -> ReverseProgram:
    """Each loop records on its tape exactly what its backward pass reads of
    what the loop binds: no more, and no less when a value was moved into the
    loop's body from an inner loop (``hoist_invariants``)."""
    forward_vars = {v.name: v for v in bound_vars(prog.forward)}
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

    def back(block: Block) -> Block:
        binds = []
        for b in block.binds:
            b = _with_branches(b, b.rhs, back)
            if isinstance(b.rhs, LoopBack):
                # what the body reads from this loop's iteration (not what nested loops bind themselves)
                read = (read_set(b.rhs.body) - bound_set(b.rhs.body)) & inside.get(b.rhs.tape.name, set())
                saved = tuple(v for v in b.rhs.saved if v.name in read)
                missing = read - {v.name for v in saved}  # once, not per forward variable
                saved += tuple(v for n, v in forward_vars.items() if n in missing)
                keep[b.rhs.tape.name] = saved
                b = Bind(b.targets, replace(b.rhs, saved=saved), b.loc)
            binds.append(b)
        return Block(tuple(binds), block.result)

    def fwd(block: Block) -> Block:
        binds = []
        for b in block.binds:
            b = _with_branches(b, b.rhs, fwd)
            if isinstance(b.rhs, Loop) and b.rhs.tape is not None:
                if b.rhs.tape.name in keep:
                    b = Bind(b.targets, replace(b.rhs, save=keep[b.rhs.tape.name]), b.loc)
                else:  # no backward pass reads this tape
                    b = Bind(b.targets[:-1], replace(b.rhs, save=(), tape=None), b.loc)
            binds.append(b)
        return Block(tuple(binds), block.result)

    backward = back(prog.backward)
    return ReverseProgram(prog.name, prog.params, fwd(prog.forward), prog.ct_in, backward)


#: primitives that never raise on operands of statically known shapes: numpy only
#: warns (``np.log(0.0)``), and Python's ``+ - *`` on floats give ``inf``.
#: Computing one before a loop that would not have run it is harmless.
_TOTAL = {"add", "sub", "mul", "neg", "abs", "sign", "sin", "cos", "tan", "tanh", "exp", "log", "sqrt", "maximum",
          "minimum", "select", "where", "lt", "le", "gt", "ge", "eq", "ne", "shape", "dim", "size", "transpose"}
#: primitives that raise only when Python does the arithmetic (``1.0 / 0.0``), not numpy
_TOTAL_IN_NUMPY = {"div", "pow", "power"}


def _may_hoist(b: Bind, runs: bool) -> bool:
    """Whether ``b``, with every operand bound outside a loop, may be computed
    once before it: a pure primitive or sum making a number (not a list, which
    may be popped in place, nor a buffer that is written in place), and,
    unless the loop surely runs, one that cannot raise."""
    rhs = b.rhs
    if not all(isinstance(t.type, Num) for t in b.targets):
        return False
    if isinstance(rhs, Plus):
        return True
    if not isinstance(rhs, Prim) or rhs.op in _BUFFERS or rules.TABLE[rhs.op].stmts is not None:
        return False
    if runs:
        return True
    nums = [a.type for a in rhs.args if isinstance(a.type, Num) and a.type.known_shape]
    if len(nums) < len(rhs.args):  # a shape known only at run time may not broadcast
        return False
    floats = all(t.dtype.startswith("float") for t in nums) and not all(t.py for t in nums)
    return rhs.op in _TOTAL or (rhs.op in _TOTAL_IN_NUMPY and floats)


def hoist_invariants(prog: ReverseProgram) -> ReverseProgram:
    """Loop-invariant code motion: a primitive in a loop body (forward or
    backward) whose operands are all bound outside the loop is computed once,
    just before the loop (``1.0 + a * a`` in a loop over ``xs``).  Inner loops
    first, so a value moves out as far as it can.  A forward value that moved
    is no longer recorded per iteration: the backward pass reads it as a
    residual, or from the tape of the loop it moved into (``prune_tapes``), so
    in the backward pass more is invariant: it moves second."""
    running = {b.rhs.tape.name for b in all_binds(prog.forward)
               if isinstance(b.rhs, Loop) and b.rhs.tape is not None and _surely_runs(b.rhs)}
    prog = prune_tapes(ReverseProgram(prog.name, prog.params, _hoist(prog.forward, running), prog.ct_in,
                                      prog.backward))
    return ReverseProgram(prog.name, prog.params, prog.forward, prog.ct_in, _hoist(prog.backward, running))


def _surely_runs(loop: Loop) -> bool:
    """A ``for`` loop over a range whose bounds are known statically and not empty."""
    return (trip_count(loop) or 0) > 0


def _hoist(block: Block, running: set[str]) -> Block:
    """``running``: the tapes of the forward loops that surely run (so do their backward passes)."""
    binds: list[Bind] = []
    for b in block.binds:
        b = _with_branches(b, b.rhs, lambda blk: _hoist(blk, running))
        rhs = b.rhs
        if isinstance(rhs, (Loop, LoopBack)):
            surely = _surely_runs(rhs) if isinstance(rhs, Loop) else rhs.tape.name in running
            inside = {v.name for v in (rhs.inputs if isinstance(rhs, Loop) else rhs.saved + rhs.params)}
            kept = []
            for inner in rhs.body.binds:
                if _may_hoist(inner, surely) and not any(v.name in inside for v in vars_of(inner.rhs)):
                    binds.append(inner)
                else:
                    kept.append(inner)
                    inside.update(t.name for t in inner.targets)
            b = Bind(b.targets, replace(rhs, body=Block(tuple(kept), rhs.body.result)), b.loc)
        binds.append(b)
    return Block(tuple(binds), block.result)


def name_cotangents(block: Block, outer: dict[str, Atom] | None = None) -> Block:
    """``let t5 = e; let x_ct = t5`` (t5 used nowhere else) becomes ``let x_ct = e``.
    ``outer``: the copies the enclosing blocks removed (name -> what replaces it);
    a nested block applies them with its own in one walk."""
    uses = Counter(v.name for b in block.binds for v in vars_of(b.rhs))
    if isinstance(block.result, Var):
        uses[block.result.name] += 1
    defined_at = {t.name: i for i, b in enumerate(block.binds) for t in b.targets
                  if len(b.targets) == 1 and not nested_blocks(b.rhs)}
    binds: list[Bind | None] = list(block.binds)
    env: dict[str, Atom] = dict(outer or {})
    for i, b in enumerate(block.binds):
        if not isinstance(b.rhs, Copy):
            continue
        src = _subst_atom(b.rhs.atom, env)
        target = b.targets[0]
        if (isinstance(src, Var) and Namer.is_temp(src.name) and uses[src.name] == 1 and src.name in defined_at
                and binds[defined_at[src.name]] is not None):
            j = defined_at[src.name]
            old = binds[j]
            assert old is not None
            binds[j] = Bind((target,), old.rhs, old.loc)
            binds[i] = None
        else:
            env[target.name] = src
            binds[i] = None
    binds = [b if b is None else _with_branches(b, b.rhs, lambda blk: name_cotangents(blk, env)) for b in binds]
    out = tuple(Bind(b.targets, substitute(b.rhs, env), b.loc) for b in binds if b is not None)
    return Block(out, _subst_atom(block.result, env))


def finish(prog: ReverseProgram) -> ReverseProgram:
    """Materialise zero parameter cotangents; return writable arrays, not broadcast views."""
    backward = prog.backward
    result = backward.result
    binds = list(backward.binds)
    final = next((b for b in binds if isinstance(result, Var) and b.targets == (result,)), None)
    if final is None or not isinstance(final.rhs, MakeTuple):
        return prog
    items = []
    namer = Namer.of(prog)
    for p, a in zip(prog.params, final.rhs.items):
        if isinstance(p.type, Num) and p.type.py and not p.type.shape and p.type.differentiable \
                and isinstance(a, Var) and not (isinstance(a.type, Num) and a.type.py):
            v = Var(namer.temp(), p.type)  # a float for a float argument: `return float(x_ct)`
            binds.insert(binds.index(final), Bind((v,), Prim("to_float", (a,))))
            a = v
        if isinstance(a, Zero):
            t = p.type
            if isinstance(t, Num) and t.py:
                a = Const.literal(0.0, t)
            else:
                zv = Var(namer.fresh(f"{p.name}_ct"), t)
                binds.insert(binds.index(final), Bind((zv,), Prim("zeros_like", (p,))))
                a = zv
        items.append(a)
    binds[binds.index(final)] = Bind(final.targets, MakeTuple(tuple(items)), final.loc)
    returned = _flowing_into(Block(tuple(binds), result), {a.name for a in items if isinstance(a, Var)})
    return ReverseProgram(prog.name, prog.params, prog.forward, prog.ct_in,
                          _materialise(Block(tuple(binds), result), returned))


def _flowing_into(block: Block, names: set[str]) -> set[str]:
    """The variables whose values can be returned as one of ``names`` (through
    the branches of an ``if`` too)."""
    names = set(names)
    for b in reversed(block.binds):
        if isinstance(b.rhs, If) and any(t.name in names for t in b.targets):
            for branch in (b.rhs.then, b.rhs.orelse):
                items = result_items(branch) or ()
                picked = {a.name for t, a in zip(b.targets, items) if t.name in names and isinstance(a, Var)}
                names |= _flowing_into(branch, picked)
                names |= picked
    return names


def _materialise(block: Block, returned: set[str]) -> Block:
    """A read-only broadcast view that would be returned to the user becomes an array."""
    binds = []
    for b in block.binds:
        rhs = b.rhs
        if isinstance(rhs, If):
            b = _with_branches(b, rhs, lambda blk: _materialise(blk, returned))
        elif isinstance(rhs, Prim) and rhs.op == "broadcast_to" and b.targets[0].name in returned:
            t = b.targets[0].type
            dtype = (("dtype", t.dtype),) if isinstance(t, Num) else ()
            b = Bind(b.targets, Prim("full", rhs.args, dtype), b.loc)
        binds.append(b)
    return Block(tuple(binds), block.result)


def restrict(prog: ReverseProgram, wrt: frozenset[int] | None) -> ReverseProgram:
    """Keep only the cotangents of the parameters in ``wrt`` (all when None): what
    ``grad(f, argnums)`` needs, so the others are never computed."""
    if wrt is None:
        return prog
    final = prog.backward.binds[-1]
    assert isinstance(final.rhs, MakeTuple) and final.targets == (prog.backward.result,)
    items = tuple(a if i in wrt else Const.literal(None, NoneT()) for i, a in enumerate(final.rhs.items))
    binds = prog.backward.binds[:-1] + (Bind(final.targets, MakeTuple(items), final.loc),)
    return ReverseProgram(prog.name, prog.params, prog.forward, prog.ct_in, Block(binds, prog.backward.result))


def static_zeros(block: Block) -> Block:
    """Zeros of a shape known when transforming are made by ``np.zeros(shape)``,
    not ``np.zeros_like(x)`` (a fifth of the cost for a small array)."""
    binds = []
    for b in block.binds:
        rhs = b.rhs
        if isinstance(rhs, Prim) and rhs.op in ("zeros_like", "scatter"):
            like = rhs.args[0 if rhs.op == "zeros_like" else 1]
            shape = _static_shape(like.type)
            if shape is not None and rhs.op == "zeros_like":
                dtype = rhs.param("dtype") or like.type.dtype  # type: ignore[union-attr]
                rhs = Prim("zeros", tuple(Const.literal(d, literal_type(d)) for d in shape), (("dtype", dtype),))
            elif shape is not None:
                rhs = Prim(rhs.op, rhs.args, tuple(sorted(rhs.params + (("zeros", (shape, like.type.dtype)),))))  # type: ignore[union-attr]
        binds.append(_with_branches(b, rhs, static_zeros))
    return Block(tuple(binds), block.result)


def _static_shape(t: object) -> tuple[int, ...] | None:
    if isinstance(t, Num) and t.shape and all(isinstance(d, int) for d in t.shape):
        return tuple(int(d) for d in t.shape)  # type: ignore[arg-type]
    return None


#: the fewest outer products a sum must have to be made one matrix product
_OUTER_SUM_MIN = 4


def outer_sums(block: Block, namer: Namer) -> Block:
    """A sum of outer products is one matrix product: ``outer(u_1, v_1) + ... +
    outer(u_n, v_n)`` is ``stack(u_1..u_n).T @ stack(v_1..v_n)`` (the cotangent of
    a weight matrix applied at many places, as in a recursive model): two stacks
    and one product instead of n products and n - 1 sums of matrices."""
    outers = {b.targets[0].name: b.rhs for b in block.binds if isinstance(b.rhs, Prim) and b.rhs.op == "outer"
              and all(isinstance(a.type, Num) and a.type.ndim == 1 for a in b.rhs.args)}
    uses = use_counts(block)
    binds: list[Bind] = []
    for b in block.binds:
        b = _with_branches(b, b.rhs, lambda blk: outer_sums(blk, namer))
        rhs = b.rhs
        found = [outers[a.name] for a in rhs.items if isinstance(a, Var) and a.name in outers and uses[a.name] == 1] \
            if isinstance(rhs, Plus) else []
        if len(found) < _OUTER_SUM_MIN or len(found) != len(rhs.items):  # type: ignore[union-attr]
            binds.append(b)
            continue
        us, vs = (tuple(p.args[k] for p in found) for k in (0, 1))
        made = []
        for op, args, params in (("stack", us, {"axis": 0}), ("stack", vs, {"axis": 0})):
            v = Var(namer.temp(), rules.infer(op, [a.type for a in args], params))
            made.append(v)
            binds.append(Bind((v,), Prim(op, args, tuple(sorted(params.items()))), b.loc))
        ut = Var(namer.temp(), rules.infer("transpose", [made[0].type], {}))
        binds.append(Bind((ut,), Prim("transpose", (made[0],)), b.loc))
        binds.append(Bind(b.targets, Prim("matmul", (ut, made[1])), b.loc))
    return Block(tuple(binds), block.result)


def optimise(prog: ReverseProgram, wrt: frozenset[int] | None = None) -> ReverseProgram:
    return optimise_passes(restrict(prog, wrt), finishing=True)


def optimise_passes(prog: ReverseProgram, finishing: bool = False) -> ReverseProgram:
    """The passes of ``optimise``; ``finish`` (parameter cotangents materialised) only
    with ``finishing`` (forward mode over a reverse program returns something else)."""
    prog = forget_structure(prog)
    prog = fold_forward(prog)
    prog = ReverseProgram(prog.name, prog.params, prog.forward, prog.ct_in, fold(prog.backward))
    prog = ReverseProgram(prog.name, prog.params, prog.forward, prog.ct_in, name_cotangents(prog.backward))
    prog = dce(cse(hoist_invariants(sink_broadcasts(prog))))
    taken = Namer.of(prog).taken  # every name of the program and what generated code reads
    prog = dce(ReverseProgram(prog.name, prog.params, prog.forward, prog.ct_in,
                              accumulate_in_loops(prog.backward, taken)))
    prog = dce(ReverseProgram(prog.name, prog.params, prog.forward, prog.ct_in,
                              outer_sums(prog.backward, Namer.of(prog))))
    prog = finish(prog) if finishing else prog
    return lists_in_place(ReverseProgram(prog.name, prog.params, prog.forward, prog.ct_in,
                                         static_zeros(prog.backward)))


def residuals(prog: ReverseProgram) -> tuple[Var, ...]:
    """The forward variables (and parameters) the backward block reads, in forward order."""
    read = read_set(prog.backward) - bound_set(prog.backward) - {prog.ct_in.name}
    order = list(prog.params) + list(bound_vars(prog.forward))
    return tuple(v for v in order if v.name in read)


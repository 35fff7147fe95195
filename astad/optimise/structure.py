"""``dup`` and ``drop`` forgotten: copies become aliases of the original, ``drop``
disappears (the primal needs neither; they were there for the macro).  The
renamings here are shared with ``program_fold.fold_forward``."""

from __future__ import annotations

from dataclasses import replace

from ..blocks import rebound, same_or_new, with_branches
from ..ir import Atom, Bind, Block, Drop, Dup, If, Loop, LoopBack, Prim, ReverseProgram, Var, substitute


def subst_atom(a: Atom, env: dict[str, Atom]) -> Atom:
    """``a`` renamed by ``env``."""
    return env.get(a.name, a) if isinstance(a, Var) else a


def forget_structure(prog: ReverseProgram) -> ReverseProgram:
    env: dict[str, Atom] = {}  # names are unique in a program, so one map serves every block
    forward = forget_forward(prog.forward, env)
    return ReverseProgram(prog.name, prog.params, forward, prog.ct_in, rename_deep(prog.backward, env))


def forget_forward(block: Block, env: dict[str, Atom]) -> Block:
    """``block`` without ``dup`` and ``drop``, the copies ``dup`` made added to ``env``.
    (A function of the module, not one nested in ``forget_structure`` that calls
    itself: that would be a cycle holding the program until the collector ran.)"""
    binds = []
    for b in block.binds:
        rhs = substitute(b.rhs, env)
        if type(rhs) is Prim:  # the most common
            binds.append(b if rhs is b.rhs else Bind(b.targets, rhs, b.loc))
        elif isinstance(rhs, Dup):
            for t in b.targets:
                env[t.name] = rhs.var
        elif isinstance(rhs, Loop):
            body = forget_forward(rhs.body, env)
            binds.append(Bind(b.targets, replace(rhs, body=body, save=rename_vars(rhs.save, env)), b.loc))
        elif isinstance(rhs, (If, LoopBack)):
            binds.append(with_branches(b, rhs, lambda blk: forget_forward(blk, env)))
        elif not isinstance(rhs, Drop):
            binds.append(rebound(b, rhs))
    return same_or_new(block, binds, subst_atom(block.result, env))


def rename_vars(vs: tuple[Var, ...], env: dict[str, Atom]) -> tuple[Var, ...]:
    """Variables renamed by ``env`` (copies become their original), each once."""
    out: dict[str, Var] = {}
    for v in vs:
        r = env.get(v.name, v)
        if isinstance(r, Var):
            out.setdefault(r.name, r)
    return tuple(out.values())


def rename_deep(block: Block, env: dict[str, Atom]) -> Block:
    """``env`` applied to every occurrence, also to the values a backward loop
    binds from its tape (they are the forward loop's, renamed the same way)."""
    binds = []
    for b in block.binds:
        rhs = b.rhs
        if type(rhs) is Prim:  # the most common
            rhs = substitute(rhs, env)
            binds.append(b if rhs is b.rhs else Bind(b.targets, rhs, b.loc))
            continue
        if isinstance(rhs, LoopBack):
            rhs = replace(rhs, init=tuple(subst_atom(a, env) for a in rhs.init), saved=rename_vars(rhs.saved, env),
                          body=rename_deep(rhs.body, env))
        elif isinstance(rhs, If):
            rhs = If(subst_atom(rhs.cond, env), rename_deep(rhs.then, env), rename_deep(rhs.orelse, env))
        else:
            rhs = substitute(rhs, env)
        binds.append(rebound(b, rhs))
    return same_or_new(block, binds, subst_atom(block.result, env))

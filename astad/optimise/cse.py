"""Common subexpressions: a primitive applied again to the same atoms is the earlier result."""

from __future__ import annotations

from .. import rules
from ..blocks import with_branches
from ..ir import Atom, Bind, Block, Const, If, Loop, LoopBack, Prim, ReverseProgram, Var, substitute
from .structure import subst_atom


def _atom_key(a: Atom) -> object:
    if isinstance(a, Var):
        return ("v", a.name)
    if isinstance(a, Const):
        return ("c", a.key if a.name is None else a.name)
    return ("z", str(a.type))


#: new arrays that may be written into (accumulators): each must stay its own
BUFFERS = {"zeros", "zeros_like", "ones", "ones_like", "full", "eye", "list", "list_zeros_like", "list_onehot"}


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
                out.append(with_branches(b, rhs, lambda blk: run(blk, seen)))
                continue
            if isinstance(rhs, Prim) and rules.TABLE[rhs.op].stmts is None and rhs.op not in BUFFERS:
                key = (rhs.op, tuple(_atom_key(a) for a in rhs.args), rhs.params)
                if key in seen:
                    env[b.targets[0].name] = seen[key]
                    continue
                seen[key] = b.targets[0]
            out.append(Bind(b.targets, rhs, b.loc))
        if block is prog.forward:
            top.update(seen)
        return Block(tuple(out), subst_atom(block.result, env))

    top: dict[object, Var] = {}
    forward = run(prog.forward, {})
    backward = run(prog.backward, top)
    del run  # (it calls itself: a cycle that would hold ``prog`` until the collector finds it)
    return ReverseProgram(prog.name, prog.params, forward, prog.ct_in, backward)

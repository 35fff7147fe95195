"""Common subexpressions: a primitive applied again to the same atoms is the earlier result."""

from __future__ import annotations

from .. import rules
from ..blocks import same_or_new, with_branches
from ..ir import Atom, Bind, Block, Const, If, Loop, LoopBack, Plus, Prim, ReverseProgram, Var, substitute
from .structure import subst_atom


def _atom_key(a: Atom) -> object:
    if isinstance(a, Var):
        return ("v", a.name)
    if isinstance(a, Const):
        return ("c", a.key if a.name is None else a.name)
    return ("z", str(a.type))


#: new arrays that may be written into (accumulators): each must stay its own
BUFFERS = {"zeros", "zeros_like", "ones", "ones_like", "full", "eye", "list", "list_zeros_like", "list_onehot"}


class _Shared(dict):  # type: ignore[type-arg]
    """Per primitive, whether a second application to the same atoms is the first's result (filled as met:
    ``_SHARED[op]`` finds it where it is not there yet, no test in the caller)."""

    def __missing__(self, op: str) -> bool:
        shared = self[op] = rules.TABLE[op].stmts is None and op not in BUFFERS
        return shared


_SHARED = _Shared()


def cse(prog: ReverseProgram) -> ReverseProgram:
    """Common subexpressions: a primitive applied again to the same atoms is the
    earlier result (the backward pass reuses forward values as residuals).  A
    branch sees what was computed before its ``if``, not the other way round."""
    env: dict[str, Atom] = {}
    top: dict[object, Var] = {}
    forward = _cse(prog.forward, top, env, top, own=True)  # (what the forward block computes: ``top`` itself)
    return ReverseProgram(prog.name, prog.params, forward, prog.ct_in, _cse(prog.backward, top, env, None, own=True))


def _cse(block: Block, seen: dict[object, Var], env: dict[str, Atom], top: dict[object, Var] | None,
         own: bool = False) -> Block:
    """``block`` with the common subexpressions of what it and ``seen`` compute
    removed (``env``: each name removed -> what replaces it); ``top``, when given,
    receives what the block computes (the forward block's, which the backward
    block may reuse).  ``own``: ``seen`` is the caller's no more (added to, not copied)."""
    if not own:
        seen = dict(seen)
    out = []
    shared_of = _SHARED
    for b in block.binds:
        rhs = b.rhs
        if type(rhs) is Prim:  # the most common
            op, args = rhs.op, rhs.args
            shared = shared_of[op]
            if shared and len(args) == 2:  # (the most common: ``substitute``'s test and the key, written out; no
                a, c = args                 # comprehension, one tuple of four, which equals no other arity's tuple
                # of three; a variable's key is its name (no tuple made): a string equals no other atom's key)
                # (env is empty until the first common subexpression: a forward block without one never renames)
                if type(a) is Var and type(c) is Var:  # (the most common: each name read once)
                    ka, kc = a.name, c.name
                    if not env or ka not in env and kc not in env:  # (nothing renamed: the binding itself kept)
                        target = b.targets[0]
                        first = seen.setdefault((op, ka, kc, rhs.params), target)  # (the key hashed once)
                        if first is target:
                            out.append(b)
                        else:
                            env[target.name] = first
                        continue
                    rhs = substitute(rhs, env)  # (renamed: made again, keyed by what it reads now)
                    a, c = rhs.args  # type: ignore[union-attr]
                elif env and (type(a) is Var and a.name in env or type(c) is Var and c.name in env):
                    rhs = substitute(rhs, env)
                    a, c = rhs.args  # type: ignore[union-attr]
                ka, kc = a.name if type(a) is Var else _atom_key(a), c.name if type(c) is Var else _atom_key(c)
                key: object = (op, ka, kc, rhs.params)  # type: ignore[union-attr]
                target = b.targets[0]
                first = seen.setdefault(key, target)  # (the key hashed once)
                if first is not target:
                    env[target.name] = first
                    continue
                out.append(b if rhs is b.rhs else Bind(b.targets, rhs, b.loc))
                continue
            if env:  # (``substitute``'s own test, without a call)
                for a in args:
                    if type(a) is Var and a.name in env:
                        rhs = substitute(rhs, env)
                        args = rhs.args  # type: ignore[union-attr]
                        break
            if shared:
                if len(args) == 1:  # (the next most common: a tuple of three, the argument's key in it: no
                    a = args[0]     # tuple of it, and equal to no other arity's, whose is a tuple of 0 or 3+)
                    key = (op, a.name if type(a) is Var else _atom_key(a), rhs.params)  # type: ignore[union-attr]
                else:
                    key = (op, tuple([a.name if type(a) is Var else _atom_key(a) for a in args]),
                           rhs.params)  # type: ignore[union-attr]
                target = b.targets[0]
                first = seen.setdefault(key, target)
                if first is not target:
                    env[target.name] = first
                    continue
            out.append(b if rhs is b.rhs else Bind(b.targets, rhs, b.loc))
            continue
        if type(rhs) is Plus:  # (a cotangent sum, the next most common: ``substitute``'s test, without a call)
            if env:
                for a in rhs.items:
                    if type(a) is Var and a.name in env:
                        b = Bind(b.targets, substitute(rhs, env), b.loc)
                        break
            out.append(b)
            continue
        rhs = substitute(rhs, env)
        if isinstance(rhs, (If, Loop, LoopBack)):
            out.append(with_branches(b, rhs, lambda blk: _cse(blk, seen, env, None)))
            continue
        out.append(b if rhs is b.rhs else Bind(b.targets, rhs, b.loc))
    if top is not None and top is not seen:
        top.update(seen)
    return same_or_new(block, out, subst_atom(block.result, env))

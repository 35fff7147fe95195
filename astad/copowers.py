"""The optimiser's first pass: function values and their copowers removed.

The reverse macro gives a function value (``lam``) CHAD's treatment (§7.2):
each call records what the function's backward map needs, the call's
backward map gives the cotangent of the argument, and the function's own
cotangent is a copower ``!record ⊗ ct`` per call, summed (concatenated) over
the calls and consumed by ``case``, which runs the captured part of each
call's backward map.  Every call site of a function value is known in the
program (functions do not escape it), so:

- the copower is folded where it is made: ``case`` of a sum of copowers is
  the sum of the ``case`` of each, and the ``case`` of ``!record ⊗ ct`` is the
  captured part of that call's backward map, which the call's backward step
  already computed beside it.  A copower variable thus becomes the
  cotangent of what the function captures (one variable, or nothing);
- each call is inlined: in the forward block the function's body, with its
  parameters replaced by the arguments and its variables renamed; in the
  backward block its backward map, reading the values the inlined body bound
  (a loop saves them on its tape).

What is left is first-order code for the rest of the optimiser.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Callable

from .errors import InternalError
from .frontend import Namer
from .ir import (App, AppBack, Atom, Bind, Block, CaseCopower, Const, Copower, CopowerT, Copy, Dup, FunT, If, Lam,
                 Loop, LoopBack, MakeTuple, ReverseProgram, TupleT, Type, Unpack, Var, Zero, bound_names, bound_vars,
                 lam_free_vars, map_atoms, nested_blocks)


def remove_functions(prog: ReverseProgram) -> ReverseProgram:
    """The program without ``lam``, calls, copowers and ``case``."""
    lams = _lams(prog.forward, {})
    if not lams:
        return prog
    names = {p.name for p in prog.params} | set(bound_names(prog.forward)) | set(bound_names(prog.backward))
    for lam in lams.values():
        if lam.back is not None:
            names |= set(bound_names(lam.back))
    namer = Namer(names)
    namer.taken |= names  # every name is taken: new ones are fresh
    inliner = _Inliner(lams, namer)
    forward = inliner.forward(prog.forward)
    backward = inliner.backward(_fold_copowers(prog.backward, lams, namer))
    return ReverseProgram(prog.name, prog.params, forward, prog.ct_in, backward)


def _var(a: Atom) -> Var:
    if not isinstance(a, Var):
        raise InternalError("a function value returns a variable")
    return a


def _lams(block: Block, found: dict[str, Lam]) -> dict[str, Lam]:
    """Each function value by the name its type carries (copies made by ``dup`` share it)."""
    for b in block.binds:
        if isinstance(b.rhs, Lam):
            found[b.targets[0].name] = b.rhs
        for inner in nested_blocks(b.rhs):
            _lams(inner, found)
    return found


# --------------------------------------------------------------------------- copowers


def _folded_type(t: Type, lams: dict[str, Lam]) -> Type:
    """What a copower becomes: the cotangent of what its function captures (one
    variable), or the empty tuple (nothing)."""
    if not isinstance(t, CopowerT):
        return t
    captured = lams[t.fn.name].captured
    if len(captured) > 1:
        raise InternalError("copowers of functions capturing two or more variables are not removed yet")
    return captured[0].type if captured else TupleT(())


def _fold_copowers(block: Block, lams: dict[str, Lam], namer: Namer) -> Block:
    """Fold every copower where it is made (see the module's docstring)."""
    captured_at: dict[str, tuple[Var, ...]] = {}  # record -> the captured part of that call's backward map

    def find(blk: Block) -> None:
        for b in blk.binds:
            if isinstance(b.rhs, AppBack):
                n = len(lams[b.rhs.fn.type.name].captured)  # type: ignore[union-attr]
                captured_at[b.rhs.record.name] = b.targets[:n]
            for inner in nested_blocks(b.rhs):
                find(inner)

    find(block)
    names: dict[str, str] = {}

    def name(v: Var) -> str:
        """``f_ct_sum`` folded is the sum of cotangents of what ``f`` captures, ``x_ct_sum``."""
        if not isinstance(v.type, CopowerT) or len(lams[v.type.fn.name].captured) != 1:
            return v.name
        fn, captured = v.type.fn.name, lams[v.type.fn.name].captured[0].name
        if v.name not in names:
            names[v.name] = namer.fresh(captured + v.name[len(fn):]) if v.name.startswith(fn + "_ct") else v.name
        return names[v.name]

    return _retype(_rewrite(block, captured_at), lambda t: _folded_type(t, lams), name)


def _rewrite(block: Block, captured_at: dict[str, tuple[Var, ...]]) -> Block:
    binds = []
    for b in block.binds:
        rhs = b.rhs
        if isinstance(rhs, Copower):
            part = captured_at[rhs.record.name]
            rhs = Copy(part[0]) if part else MakeTuple(())
        elif isinstance(rhs, CaseCopower):
            if not b.targets:
                continue
            rhs = Copy(rhs.copower)
        elif isinstance(rhs, If):
            rhs = If(rhs.cond, _rewrite(rhs.then, captured_at), _rewrite(rhs.orelse, captured_at))
        elif isinstance(rhs, LoopBack):
            rhs = replace(rhs, body=_rewrite(rhs.body, captured_at))
        binds.append(Bind(b.targets, rhs, b.loc))
    return Block(tuple(binds), block.result)


def _retype(block: Block, new: Callable[[Type], Type], name: Callable[[Var], str]) -> Block:
    """Every variable and zero given the type ``new`` makes of its own (a tuple's
    items too), and variables the name ``name`` gives them."""

    def ty(t: Type) -> Type:
        if isinstance(t, TupleT):
            return TupleT(tuple(ty(i) for i in t.items))
        return new(t)

    def var(v: Var) -> Var:
        return Var(name(v), ty(v.type))

    def atom(a: Atom) -> Atom:
        if isinstance(a, Var):
            return var(a)
        if isinstance(a, Zero):
            return Zero(ty(a.type))
        return a

    def run(blk: Block) -> Block:
        binds = []
        for b in blk.binds:
            rhs = map_atoms(b.rhs, atom) if not isinstance(b.rhs, (If, LoopBack)) else b.rhs
            if isinstance(rhs, If):
                rhs = If(atom(rhs.cond), run(rhs.then), run(rhs.orelse))
            elif isinstance(rhs, LoopBack):
                rhs = LoopBack(var(rhs.tape), tuple(map(var, rhs.saved)), tuple(map(var, rhs.params)),
                               tuple(map(atom, rhs.init)), run(rhs.body))
            binds.append(Bind(tuple(map(var, b.targets)), rhs, b.loc))
        return Block(tuple(binds), atom(blk.result))

    return run(block)


# --------------------------------------------------------------------------- inlining


class _Inliner:
    def __init__(self, lams: dict[str, Lam], namer: Namer) -> None:
        self.lams = lams
        self.namer = namer
        self.records: dict[str, dict[str, Atom]] = {}  # a call's record -> what its saved names are at that call
        self.tapes: dict[str, tuple[Var, ...]] = {}  # a loop's tape -> what it saves now

    def rename(self, block: Block, env: dict[str, Atom], result: Var | None = None) -> list[Bind]:
        """The bindings of a straight-line block with fresh names (``env`` gets
        them); the variable it returns is named ``result`` if given."""
        out = []
        for b in block.binds:
            if isinstance(b.rhs, (If, Loop, LoopBack, Lam, App)):
                raise InternalError("a function value's body is straight-line code")
            targets = tuple(result if result is not None and t == block.result else
                            Var(self.namer.temp() if Namer.is_temp(t.name) else self.namer.fresh(t.name), t.type)
                            for t in b.targets)
            out.append(Bind(targets, map_atoms(b.rhs, lambda a: env.get(a.name, a) if isinstance(a, Var) else a),
                            b.loc))
            env.update((t.name, n) for t, n in zip(b.targets, targets))
        return out

    def forward(self, block: Block) -> Block:
        binds: list[Bind] = []
        for b in block.binds:
            rhs = b.rhs
            if isinstance(rhs, Lam) or (isinstance(rhs, Dup) and isinstance(rhs.var.type, FunT)):
                continue
            if isinstance(rhs, App):
                binds += self.call(b, rhs)
                continue
            if isinstance(rhs, If):
                rhs = If(rhs.cond, self.forward(rhs.then), self.forward(rhs.orelse))
            elif isinstance(rhs, Loop):
                body = self.forward(rhs.body)
                old = {v.name for v in bound_vars(rhs.body)}
                made = [v for v in bound_vars(body) if v.name not in old]
                save = tuple(v for v in rhs.save if v.name not in self.records) + tuple(made)
                if rhs.tape is not None:
                    self.tapes[rhs.tape.name] = save
                rhs = replace(rhs, body=body, save=save)
            binds.append(Bind(b.targets, rhs, b.loc))
        return Block(tuple(binds), block.result)

    def call(self, b: Bind, rhs: App) -> list[Bind]:
        lam = self.lams[rhs.fn.type.name]  # type: ignore[union-attr]
        env: dict[str, Atom] = {p.name: a for p, a in zip(lam.params, rhs.args)}
        binds = self.rename(lam.body, env, b.targets[0])
        result = lam.body.result
        if isinstance(result, Var) and result.name in {p.name for p in lam.params} | {v.name for v in lam_free_vars(lam)}:
            binds.append(Bind(b.targets[:1], Dup(_var(env.get(result.name, result))), b.loc))  # an alias
        elif not isinstance(result, Var):
            raise InternalError("a function value returns a variable")
        if len(b.targets) == 2:
            self.records[b.targets[1].name] = {v.name: env.get(v.name, v) for v in lam.save}
        return binds

    def backward(self, block: Block) -> Block:
        binds: list[Bind] = []
        for b in block.binds:
            rhs = b.rhs
            if isinstance(rhs, AppBack):
                binds += self.call_back(b, rhs)
                continue
            if isinstance(rhs, If):
                rhs = If(rhs.cond, self.backward(rhs.then), self.backward(rhs.orelse))
            elif isinstance(rhs, LoopBack):
                rhs = replace(rhs, saved=self.tapes.get(rhs.tape.name, rhs.saved), body=self.backward(rhs.body))
            binds.append(Bind(b.targets, rhs, b.loc))
        return Block(tuple(binds), block.result)

    def call_back(self, b: Bind, rhs: AppBack) -> list[Bind]:
        lam = self.lams[rhs.fn.type.name]  # type: ignore[union-attr]
        assert lam.back is not None and lam.back_ct is not None
        env: dict[str, Atom] = dict(self.records[rhs.record.name])
        env[lam.back_ct.name] = rhs.ct
        binds = self.rename(lam.back, env)
        result = lam.back.result
        tup = env.get(result.name, result) if isinstance(result, Var) else result
        binds.append(Bind(b.targets, Unpack(tup), b.loc))
        return binds


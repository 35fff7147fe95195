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
from ..errors import InternalError
from ..names import Namer
from .retype import retype
from ..ir import (App, AppBack, Atom, Bind, Block, CaseCopower, Copower, CopowerT, Copy, Drop, Dup, FunT, If, Lam, Loop,
                 LoopBack, MakeTuple, Num, Plus, Prim, ReverseProgram, TupleT, Type, Unpack, Var, Zero,
                 bound_vars, function_values, lam_free_vars, map_atoms, nested_blocks)


def remove_functions(prog: ReverseProgram) -> ReverseProgram:
    """The program without ``lam``, calls, copowers and ``case``."""
    lams = function_values(prog.forward)
    if not lams:
        return prog
    namer = Namer.of(prog)
    inliner = _Inliner(lams, namer)
    forward = inliner.walk(prog.forward)  # first: the records and tapes the backward block reads
    backward = inliner.walk(_fold_copowers(prog.backward, lams, namer))
    if inliner.suspects:  # a backward map inlined where its types are not those it was built with
        backward = retype(backward, inliner.suspects)
    return ReverseProgram(prog.name, prog.params, forward, prog.ct_in, backward)


# --------------------------------------------------------------------------- copowers


class _Folder:
    """Folds every copower where it is made (see the module's docstring): a
    variable holding a copower of a function that captures ``x`` and ``y``
    becomes two, holding cotangents of ``x`` and ``y`` (``f_ct_sum`` becomes
    ``x_ct_sum`` and ``y_ct_sum``), and every construct that passes it on
    (sums, copies, loops, branches, tuples) passes those on instead."""

    def __init__(self, lams: dict[str, Lam], namer: Namer, captured_at: dict[str, tuple[Var, ...]]) -> None:
        self.lams, self.namer, self.captured_at = lams, namer, captured_at
        self.names: dict[str, tuple[Var, ...]] = {}

    def captured(self, t: CopowerT) -> tuple[Var, ...]:
        return self.lams[t.fn.name].captured

    def types(self, t: Type) -> list[Type]:
        if isinstance(t, CopowerT):
            return [v.type for v in self.captured(t)]
        if isinstance(t, TupleT):
            return [TupleT(tuple(i for item in t.items for i in self.types(item)))]
        return [t]

    def vars(self, v: Var) -> list[Var]:
        if isinstance(v.type, CopowerT):
            if v.name not in self.names:
                fn = v.type.fn.name
                self.names[v.name] = tuple(Var(self.name(v.name, fn, c.name), c.type) for c in self.captured(v.type))
            return list(self.names[v.name])
        return [Var(v.name, self.types(v.type)[0])]

    def name(self, name: str, fn: str, captured: str) -> str:
        if Namer.is_temp(name):
            return self.namer.temp()
        return self.namer.fresh(captured + name[len(fn):] if name.startswith(fn + "_ct") else f"{name}_{captured}")

    def atoms(self, a: Atom) -> list[Atom]:
        if isinstance(a, Var):
            return list(self.vars(a))
        if isinstance(a, Zero):
            return [Zero(t) for t in self.types(a.type)]
        return [a]

    def atom(self, a: Atom) -> Atom:
        (one,) = self.atoms(a)
        return one

    def init_atoms(self, a: Atom, made: list[Bind]) -> list[Atom]:
        """A loop's initial accumulator: an empty copower's zeros, one made like its captured value
        where that value's shape is known only at run time (codegen cannot make such a zero)."""
        if not (isinstance(a, Zero) and isinstance(a.type, CopowerT)):
            return self.atoms(a)
        out: list[Atom] = []
        for c in self.captured(a.type):
            if isinstance(c.type, Num) and None in c.type.shape:
                out.append(Var(self.namer.temp(), c.type))
                made.append(Bind((out[-1],), Prim("zeros_like", (c,)), None))
            else:
                out.append(Zero(c.type))
        return out

    def targets(self, ts: tuple[Var, ...]) -> tuple[Var, ...]:
        return tuple(v for t in ts for v in self.vars(t))

    def many(self, atoms: tuple[Atom, ...]) -> tuple[Atom, ...]:
        return tuple(x for a in atoms for x in self.atoms(a))

    def block(self, block: Block) -> Block:
        binds: list[Bind] = []
        for b in block.binds:
            binds += self.bind(b)
        return Block(tuple(binds), self.atom(block.result))

    def bind(self, b: Bind) -> list[Bind]:
        rhs, loc = b.rhs, b.loc
        if isinstance(rhs, Copower):  # !record ⊗ ct: the captured part of that call's backward map
            return [Bind((t,), Copy(c), loc) for t, c in zip(self.targets(b.targets), self.captured_at[rhs.record.name])]
        if isinstance(rhs, CaseCopower):  # case of a folded copower: what it holds
            return [Bind((t,), Copy(c), loc) for t, c in zip(b.targets, self.atoms(rhs.copower))]
        if isinstance(rhs, (Plus, Copy)) and isinstance(b.targets[0].type, CopowerT):
            parts = [self.atoms(a) for a in (rhs.items if isinstance(rhs, Plus) else (rhs.atom,))]
            return [Bind((t,), Plus(tuple(p[i] for p in parts)) if isinstance(rhs, Plus) else Copy(parts[0][i]), loc)
                    for i, t in enumerate(self.targets(b.targets))]
        if isinstance(rhs, MakeTuple):
            rhs = MakeTuple(self.many(rhs.items))
        elif isinstance(rhs, If):
            rhs = If(rhs.cond, self.block(rhs.then), self.block(rhs.orelse))
        elif isinstance(rhs, LoopBack):
            made: list[Bind] = []
            init = tuple(x for a in rhs.init for x in self.init_atoms(a, made))
            return made + [Bind(self.targets(b.targets), LoopBack(rhs.tape, rhs.saved, self.targets(rhs.params), init,
                                                                  self.block(rhs.body)), loc)]
        elif not isinstance(rhs, Unpack):
            rhs = map_atoms(rhs, self.atom)
        else:
            rhs = Unpack(self.atom(rhs.tup))
        return [Bind(self.targets(b.targets), rhs, loc)]


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
    return _Folder(lams, namer, captured_at).block(block)


# --------------------------------------------------------------------------- inlining


class _Inliner:
    def __init__(self, lams: dict[str, Lam], namer: Namer) -> None:
        self.lams = lams
        self.namer = namer
        self.records: dict[str, dict[str, Atom]] = {}  # a call's record -> what its saved names are at that call
        self.tapes: dict[str, tuple[Var, ...]] = {}  # a loop's tape -> what it saves now
        self.suspects: set[str] = set()  # what backward maps inlined read with other types than they were built for

    def rename(self, block: Block, env: dict[str, Atom], result: Var | None = None) -> list[Bind]:
        """The bindings of a straight-line block with fresh names (``env`` gets
        them); the variable it returns is named ``result`` if given."""
        out = []
        for b in block.binds:
            if isinstance(b.rhs, (If, Loop, LoopBack, Lam, App)):
                raise InternalError("a function value's body is straight-line code")
            if isinstance(b.rhs, (Dup, Drop)) and not isinstance(env.get(b.rhs.var.name, b.rhs.var), Var):
                # a parameter given a constant (`g(0.5)`, `g(G)`): its copies are the constant, its drop nothing
                const = env[b.rhs.var.name]
                for t in b.targets:
                    if result is not None and t == block.result:
                        out.append(Bind((result,), Copy(const), b.loc))
                    env[t.name] = const
                continue
            targets = tuple(result if result is not None and t == block.result else
                            Var(self.namer.temp() if Namer.is_temp(t.name) else self.namer.fresh(t.name), t.type)
                            for t in b.targets)
            out.append(Bind(targets, map_atoms(b.rhs, lambda a: env.get(a.name, a) if isinstance(a, Var) else a),
                            b.loc))
            env.update((t.name, n) for t, n in zip(b.targets, targets))
        return out

    def walk(self, block: Block) -> Block:
        """The block with its calls inlined (the functions' definitions and copies gone)."""
        binds: list[Bind] = []
        for b in block.binds:
            rhs = b.rhs
            if isinstance(rhs, Lam) or (isinstance(rhs, Dup) and isinstance(rhs.var.type, FunT)):
                continue
            if isinstance(rhs, (App, AppBack)):
                binds += self.call(b, rhs) if isinstance(rhs, App) else self.call_back(b, rhs)
                continue
            if isinstance(rhs, If):
                rhs = If(rhs.cond, self.walk(rhs.then), self.walk(rhs.orelse))
            elif isinstance(rhs, Loop):
                rhs = self.loop(rhs)
            elif isinstance(rhs, LoopBack):
                rhs = replace(rhs, saved=self.tapes.get(rhs.tape.name, rhs.saved), body=self.walk(rhs.body))
            binds.append(Bind(b.targets, rhs, b.loc))
        return Block(tuple(binds), block.result)

    def loop(self, rhs: Loop) -> Loop:
        """A forward loop with its calls inlined: its tape saves what the inlined
        bodies bind (the backward maps read it), not the calls' records."""
        body = self.walk(rhs.body)
        if rhs.tape is None:  # nothing is saved (a loop of the primal alone, or of forward mode)
            return replace(rhs, body=body)
        old = {v.name for v in bound_vars(rhs.body)}
        made = [v for v in bound_vars(body) if v.name not in old]
        save = tuple(v for v in rhs.save if v.name not in self.records) + tuple(made)
        self.tapes[rhs.tape.name] = save
        return replace(rhs, body=body, save=save)

    def call(self, b: Bind, rhs: App) -> list[Bind]:
        lam = self.lams[rhs.fn.type.name]  # type: ignore[union-attr]
        env: dict[str, Atom] = {p.name: a for p, a in zip(lam.params, rhs.args)}
        binds = self.rename(lam.body, env, b.targets[0])
        result = lam.body.result
        if isinstance(result, Var) and result.name in {p.name for p in lam.params} | {v.name for v in lam_free_vars(lam)}:
            alias = env.get(result.name, result)  # (a constant argument: a copy of it)
            binds.append(Bind(b.targets[:1], Dup(alias) if isinstance(alias, Var) else Copy(alias), b.loc))
        elif not isinstance(result, Var):
            raise InternalError("a function value returns a variable")
        if len(b.targets) == 2:
            self.records[b.targets[1].name] = {v.name: env.get(v.name, v) for v in lam.save}
        return binds

    def call_back(self, b: Bind, rhs: AppBack) -> list[Bind]:
        lam = self.lams[rhs.fn.type.name]  # type: ignore[union-attr]
        assert lam.back is not None and lam.back_ct is not None
        env: dict[str, Atom] = dict(self.records[rhs.record.name])
        env[lam.back_ct.name] = rhs.ct
        binds = self.rename(lam.back, env)
        result = lam.back.result
        tup = env.get(result.name, result) if isinstance(result, Var) else result
        if isinstance(rhs.ct, Var) and rhs.ct.type != lam.back_ct.type:
            self.suspects.add(rhs.ct.name)  # (a numpy float64 given a map built for a Python float: retype)
        if isinstance(tup, Var) and isinstance(tup.type, TupleT) and tup.type.items != tuple(t.type for t in b.targets):
            self.suspects.add(tup.name)  # (the map makes a numpy float64 of a Python float: retype)
        binds.append(Bind(b.targets, Unpack(tup), b.loc))
        return binds


"""Structural pass: make contraction and weakening explicit.

After this pass every variable is used exactly once: a variable read ``n >= 2``
times is split by ``let (x_1, ..., x_n) = dup x`` right after it is bound,
and a variable never read is ended by ``drop x``.  The reverse macro maps
``dup`` to cotangent addition and ``drop`` to a zero cotangent (CHAD: the
comonoid of contraction/weakening becomes the monoid ``(+, 0)``).

An ``if`` is one use of each variable its branches read from outside; inside
each branch those variables are the branch's inputs, dropped in a branch that
does not read them and split there if it reads them more than once.
"""

from __future__ import annotations

from collections import Counter
from typing import Iterable

from .errors import InternalError
from .blocks import rebound
from .names import Namer, program_names, remember_names
from .ir import (Atom, Bind, Block, Comp, Drop, Dup, Function, If, Lam, Loc, Loop, Prim, Var, atoms_of,
                 if_free_vars, lam_free_vars, loop_free_vars, map_atoms, substitute_block)


class _Fresh:
    def __init__(self, fn: Function) -> None:
        self.namer = Namer.of(fn)
        self.where = fn.name  # (for the message of a check that fails)
        self.made: list[str] = []  # the names of the copies
        # whether the output's names are the input's and the copies' (not where a loop's tape or a
        # function value's backward map, which the pass leaves out, has names of its own)
        self.exact = True
        #: the top block as the reverse macro's forward block has it (see :func:`primal`), or None
        self.primal: Block | None = None
        #: where ``primal`` is made, what the output's top block (and it) is made of (``ir.kinds``)
        self.kinds: frozenset[str] | None = None

    def copies(self, v: Var, n: int) -> tuple[list[str], tuple[Var, ...]]:
        """The names of ``n`` copies of ``v`` (drawn), and the copies."""
        t = v.type
        names = self.namer.copies(v.name, n)
        self.made += names
        return names, tuple([Var(name, t) for name in names])


def _reads(rhs: Comp) -> tuple[Atom, ...]:
    """``atoms_of(rhs)``, a primitive's arguments and a ``dup``'s or ``drop``'s variable read directly
    (most bindings are of one of these: atoms_of tests the other classes first)."""
    cls = type(rhs)
    if cls is Prim:
        return rhs.args
    if cls is Dup or cls is Drop:
        return (rhs.var,)
    return atoms_of(rhs)


def _use_counts(block: Block) -> Counter:
    """Uses in this block; an ``if`` uses each variable its branches read once."""
    counts: Counter = Counter([a.name for b in block.binds
                               for a in (b.rhs.args if type(b.rhs) is Prim else _reads(b.rhs)) if type(a) is Var])
    if isinstance(block.result, Var):
        counts[block.result.name] += 1
    return counts


def make_explicit(fn: Function) -> Function:
    """Insert ``dup`` and ``drop`` so that every variable is used exactly once."""
    fresh = _Fresh(fn)
    out = Function(fn.name, fn.params, _linearize(fn.body, fn.params, fresh, primal=[]))  # (checked as it is made)
    known = fn.__dict__.get("_program_names")  # (the input's, remembered: a frozenset, its union one, not copied)
    if fresh.exact:  # the next pass's namer starts from them, without walking the output again
        remember_names(out, (program_names(fn) if known is None else known).union(fresh.made))
    # (the body it was made of, for the optimiser's first fold, which undoes this pass: see optimise.simplify)
    before = (fn.body, known)
    out.body.__dict__.setdefault(BEFORE_STRUCTURE, before)
    if fresh.primal is not None:
        fresh.primal.__dict__.setdefault(BEFORE_STRUCTURE, before)
        out.__dict__["_primal"] = fresh.primal
        # (ir.kinds of both, known from the walk: the reverse macro asks, and would walk the output again)
        out.body.__dict__.setdefault("_kinds", fresh.kinds)
        fresh.primal.__dict__.setdefault("_kinds", fresh.kinds)
    return out


#: the key under which :func:`make_explicit` remembers, on the body it made (and on :func:`primal`'s block),
#: the body of the function it made it of and that function's names where known (``names.remember_names``'s,
#: or None): a pair, not the function (which is let go: see ``pipeline.each_stage``)
BEFORE_STRUCTURE = "_before_structure"


def primal(fn: Function) -> Block | None:
    """Of the output of :func:`make_explicit` whose top block binds only primitives (and the ``dup``s and
    ``drop``s the pass made), that block with each primitive as it was: reading the variable a copy copies,
    not the copy (None for any other function).  It has the output's bindings, one for one (a primitive for
    a primitive, the same ``dup`` or ``drop`` for one), and computes the same values: the reverse macro
    returns it as its forward block, and its replayed rules read the primal values in the backward block as
    it reads them, so the optimiser's first fold, which makes each copy the variable it copies, has none to
    rename (in either block) but those of a rule applied for the first time."""
    return fn.__dict__.get("_primal")


def _linearize(block: Block, inputs: Iterable[Var], fresh: _Fresh, env: dict[str, Var] | None = None,
               primal: list[Bind] | None = None) -> Block:
    """``block`` with ``dup`` and ``drop`` made explicit; ``env``: what its inputs are called outside
    (a branch's free variables are renamed here, in this one walk, not by substituting the branch
    first: that walked an if/elif chain once per level, in time quadratic in its length).
    The output is checked as it is made: ``check_linear``'s check of each block, from the reads of its
    bindings and result and the names it binds, collected as each binding is made (not in a walk after).
    ``primal`` (a list, of the top block only): where the block binds only primitives, :func:`primal`'s
    block made in it as well, kept as ``fresh.primal``."""
    counts = _use_counts(block)
    pending: dict[str, list[Var]] = {}  # variable -> its copies not yet consumed, in order of use
    used: list[str] = []  # the names the output's bindings and result read, each time read
    bound: list[str] = []  # the output's inputs (as called outside) and the targets of its bindings
    ops: set[str] = set()  # (where ``primal`` is made) the ops of its primitives, "Dup" and "Drop" where made

    def introduce(v: Var, loc: Loc | None, w: Var | None = None) -> list[Bind]:
        n = counts[v.name]
        w = v if w is None else w  # (the name it has outside)
        if n == 0:
            used.append(w.name)
            ops.add("Drop")
            return [Bind((), Drop(w), loc)]
        if n == 1:
            if w is not v:
                pending[v.name] = [w]
            return []
        names, copies = fresh.copies(w, n)
        pending[v.name] = list(copies)
        used.append(w.name)
        bound.extend(names)
        ops.add("Dup")
        return [Bind(copies, Dup(w), loc)]

    binds: list[Bind] = []
    for v in inputs:
        bound.append(v.name if env is None else env[v.name].name)
        binds += introduce(v, None, None if env is None else env[v.name])
    if primal is not None:
        primal += binds
    for b in block.binds:
        rhs = b.rhs
        if type(rhs) is Prim:  # the most common (written out): itself when it reads no duplicated variable
            if primal is not None:
                primal.append(b)
                ops.add(rhs.op)
            args = rhs.args
            if len(args) == 2:  # (the most common: _renamed_prim without a comprehension, the reads noted)
                x, y = args
                renamed = False
                if type(x) is Var:
                    copies = pending.get(x.name)
                    if copies is not None:
                        x = copies.pop(0)
                        renamed = True
                    used.append(x.name)
                if type(y) is Var:
                    copies = pending.get(y.name)
                    if copies is not None:
                        y = copies.pop(0)
                        renamed = True
                    used.append(y.name)
                if renamed:
                    b = Bind(b.targets, Prim(rhs.op, (x, y), rhs.params), b.loc)
            else:
                for a in args:
                    if type(a) is Var and a.name in pending:
                        b = Bind(b.targets, _renamed_prim(rhs, pending), b.loc)
                        break
                for a in b.rhs.args:  # type: ignore[union-attr]
                    if type(a) is Var:
                        used.append(a.name)
            binds.append(b)
        else:
            primal = None
            if (type(rhs) is Loop and (rhs.save or rhs.tape is not None)) or \
                    (type(rhs) is Lam and (rhs.save or rhs.back is not None or rhs.back_ct is not None or rhs.captured)):
                fresh.exact = False  # (names the output does not have)
            if isinstance(rhs, If):  # (its branches renamed as they are walked: see above)
                cond = _take(rhs.cond, pending)
                fv = if_free_vars(rhs)
                outside = {v.name: _take(v, pending) for v in fv}
                rhs = If(cond, _linearize(rhs.then, fv, fresh, outside), _linearize(rhs.orelse, fv, fresh, outside))
            else:
                rhs = _rename_occurrences(rhs, pending)
                if isinstance(rhs, Loop):
                    inputs_ = (*rhs.inputs, *loop_free_vars(rhs))
                    rhs = Loop(rhs.bounds, rhs.index, rhs.carried, rhs.init, _linearize(rhs.body, inputs_, fresh))
                elif isinstance(rhs, Lam):  # a function value uses what it captures once; its body, its own way
                    rhs = Lam(rhs.params, _linearize(rhs.body, (*rhs.params, *lam_free_vars(rhs)), fresh))
            binds.append(rebound(b, rhs))
            used.extend([a.name for a in _reads(rhs) if type(a) is Var])
        targets = b.targets
        if len(targets) == 1:  # (the most common)
            name = targets[0].name
            bound.append(name)
            if counts[name] != 1:
                made = introduce(targets[0], b.loc)
                binds += made
                if primal is not None:
                    primal += made
        else:
            for t in targets:
                bound.append(t.name)
                if counts[t.name] != 1:
                    made = introduce(t, b.loc)
                    binds += made
                    if primal is not None:
                        primal += made
    result = block.result
    if primal is not None:
        fresh.primal = Block(tuple(primal), result)
        fresh.kinds = frozenset(ops)
    if isinstance(result, Var) and result.name in pending:
        result = pending[result.name].pop(0)
    if isinstance(result, Var):
        used.append(result.name)
    _check_reads(used, bound, fresh.where)
    return Block(tuple(binds), result)


def _take(a: Atom, pending: dict[str, list[Var]]) -> Atom:
    """A duplicated variable's next unused copy (any other atom: itself)."""
    if isinstance(a, Var) and a.name in pending:
        return pending[a.name].pop(0)
    return a


def _rename_occurrences(rhs: Comp, pending: dict[str, list[Var]]) -> Comp:
    """Replace each occurrence of a duplicated variable by its next unused copy
    (occurrences are visited left to right, so ``mul(h, h)`` becomes ``mul(h_1, h_2)``;
    an ``if`` takes one copy for all the reads of its branches)."""

    def take(a: Atom) -> Atom:
        if isinstance(a, Var) and a.name in pending:
            return pending[a.name].pop(0)
        return a

    if type(rhs) is Prim:  # the most common: itself when it reads no duplicated variable
        for a in rhs.args:
            if type(a) is Var and a.name in pending:
                return _renamed_prim(rhs, pending)
        return rhs
    if isinstance(rhs, If):
        cond = take(rhs.cond)
        env = {v.name: take(v) for v in if_free_vars(rhs)}
        return If(cond, substitute_block(rhs.then, env), substitute_block(rhs.orelse, env))
    if isinstance(rhs, Loop):
        bounds = tuple(take(a) for a in rhs.bounds)
        init = tuple(take(a) for a in rhs.init)
        env = {v.name: take(v) for v in loop_free_vars(rhs)}
        body = substitute_block(rhs.body, env)
        return Loop(bounds, rhs.index, rhs.carried, init, body)
    if isinstance(rhs, Lam):
        env = {v.name: take(v) for v in lam_free_vars(rhs)}
        return Lam(rhs.params, substitute_block(rhs.body, env))
    return map_atoms(rhs, take)


#: the classes of right-hand side the structural pass goes into
_NESTED = frozenset({If, Loop, Lam})


def _renamed_prim(rhs: Prim, pending: dict[str, list[Var]]) -> Prim:
    """``_rename_occurrences`` of a primitive that reads a duplicated variable."""
    return Prim(rhs.op, tuple([pending[a.name].pop(0) if type(a) is Var and a.name in pending else a
                               for a in rhs.args]), rhs.params)


def _check_reads(used: list[str], bound: list[str], where: str) -> None:
    """A block's reads (``used``: each name each time it is read, the result too) are its inputs and the
    targets of its bindings (``bound``), each read once."""
    # every name read once (no name twice among the reads) and every name read bound (sets: no counts made)
    read = set(used)
    if not (len(read) == len(used) and read == set(bound)):  # (else: what is wrong)
        counts = Counter(used)
        bad = {name: counts[name] for name in bound if counts[name] != 1}
        unbound = set(counts) - set(bound)
        if bad or unbound:
            raise InternalError(f"structural pass: not linear in {where}: uses {bad}, unbound {sorted(unbound)}")


def check_linear(fn: Function) -> None:
    """Every variable bound (or a parameter, or an input of a branch) is used exactly once."""
    _check_block(fn.body, [p.name for p in fn.params], fn.name)


def _check_block(block: Block, inputs: list[str], where: str) -> None:
    used = [a.name for b in block.binds for a in (b.rhs.args if type(b.rhs) is Prim else _reads(b.rhs))
            if type(a) is Var]
    if isinstance(block.result, Var):
        used.append(block.result.name)
    _check_reads(used, inputs + [t.name for b in block.binds for t in b.targets], where)
    for b in block.binds:
        if type(b.rhs) not in _NESTED:
            continue
        if isinstance(b.rhs, If):
            fv = [v.name for v in if_free_vars(b.rhs)]
            _check_block(b.rhs.then, fv, where)
            _check_block(b.rhs.orelse, fv, where)
        elif isinstance(b.rhs, Loop):
            r = b.rhs
            _check_block(r.body, [v.name for v in (*r.inputs, *loop_free_vars(r))], where)
        elif isinstance(b.rhs, Lam):
            _check_block(b.rhs.body, [v.name for v in (*b.rhs.params, *lam_free_vars(b.rhs))], where)

"""The lowerer, assembled from its rooms (one file each: statements,
conditionals, loops, expressions, indexing, calls, effects, lookup; the state and
the steps they share in :mod:`.core`), and :func:`lower`, which runs it."""

from __future__ import annotations

from itertools import filterfalse
from typing import Any

from ..blocks import prim_rhss
from ..ir import Bind, Block, Const, Function, If, Loop, Prim, Type, Var, vars_of
from ..names import Namer, program_names, remember_names
from ..rules import TABLE, has_effect
from .calls import Calls
from .conditionals import Conditionals
from .effects import Effects
from .expressions import Expressions
from .fast import Fast
from .indexing import Indexing
from .lookup import Lookup
from .loops import Loops
from .parse import Parsed
from .statements import Statements


class Lowerer(Statements, Conditionals, Loops, Expressions, Indexing, Calls, Effects, Lookup, Fast):
    """Lowers one function (and, inlined, the user functions it calls)."""


def lower(parsed: Parsed, arg_types: list[Type]) -> tuple[Function, dict[str, Any]]:
    """Lower a parsed function at the given argument types.  Returns the core
    IR and the module-level constants it reads (name -> value)."""
    lowerer = Lowerer(parsed)
    fn = lowerer.lower_function(arg_types)
    return drop_dead_temporaries(fn), {n: obj for n, (_, obj) in lowerer.constants.items()}


is_temp = Namer.is_temp


def drop_dead_temporaries(fn: Function) -> Function:
    """Remove bindings of temporaries the lowering made and nothing reads
    (e.g. the dimensions of ``x.shape`` that are not used).  Unused *user*
    variables stay: the structural pass ends them with an explicit ``drop``.
    The names of the function made are remembered (:func:`.names.remember_names`),
    collected on the way: the structural pass's namer walks nothing."""
    names: set[str] = {p.name for p in fn.params}
    out = Function(fn.name, fn.params, _drop_dead(fn.body, names))
    remember_names(out, names)
    return out


def _drop_dead(block: Block, names: set[str] | None = None) -> Block:
    """``block`` less its dead temporaries (the same block where it has none); with ``names``,
    the names of the block made added to it (those of nested blocks too)."""
    rhss = prim_rhss(block)
    if rhss is not None and _none_dead(block, rhss, names):
        return block
    result = block.result
    used = {result.name} if type(result) is Var else set()
    kept = []
    changed = False
    for b in reversed(block.binds):
        rhs = b.rhs
        targets = b.targets
        if targets:  # (a loop, not all() of a generator: this runs at every binding)
            for t in targets:
                if t.name in used or not is_temp(t.name):
                    break
            else:
                if not (TABLE[rhs.op].effect if type(rhs) is Prim else has_effect(rhs)):
                    changed = True
                    continue
        if type(rhs) is Prim:  # (the most common: its arguments read directly)
            kept.append(b)
            for a in rhs.args:
                if type(a) is Var:
                    used.add(a.name)
                elif names is not None and type(a) is Const and a.name is not None:
                    names.add(a.name)
            if names is not None:
                for t in targets:
                    names.add(t.name)
            continue
        if isinstance(rhs, If):
            then, orelse = _drop_dead(rhs.then), _drop_dead(rhs.orelse)
            if then is not rhs.then or orelse is not rhs.orelse:
                b = Bind(targets, If(rhs.cond, then, orelse), b.loc)
                changed = True
        elif isinstance(rhs, Loop):
            body = _drop_dead(rhs.body)
            if body is not rhs.body:
                b = Bind(targets, Loop(rhs.bounds, rhs.index, rhs.carried, rhs.init, body), b.loc)
                changed = True
        kept.append(b)
        used.update(v.name for v in vars_of(b.rhs))
        if names is not None:
            names |= program_names(b)
    if names is not None:
        names |= used  # (what the kept bindings read, and the result)
        if type(result) is Const and result.name is not None:
            names.add(result.name)
    if not changed:
        return block
    return Block(tuple(reversed(kept)), result)


def _none_dead(block: Block, rhss: list[Prim], names: set[str] | None) -> bool:
    """Whether no temporary of ``block`` (primitives alone) is dead: each is read by a binding or the
    result (a temporary is bound once, and read only after: a binding's reads are those of the
    bindings after it, which the walk of :func:`_drop_dead` keeps where none is dead); if so, with
    ``names``, its names added to it, as the walk adds them.  (Comprehensions: their attribute reads are
    the interpreter's specialised ones, cheaper than attrgetter's in map.)"""
    # the names the arguments read: the variables' and the named constants' (a literal's: None), in one walk; a
    # program's names are distinct, so no temporary is read as a constant's name (where one were, it is kept)
    read = {a.name for r in rhss for a in r.args}
    read.discard(None)
    result = block.result
    if type(result) is Var or (type(result) is Const and result.name is not None):
        read.add(result.name)
    targets = [t.name for b in block.binds for t in b.targets]
    if any(map(is_temp, filterfalse(read.__contains__, targets))):
        return False  # (one may be dead: the walk says)
    if names is not None:
        names |= read
        names.update(targets)
    return True

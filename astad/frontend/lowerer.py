"""The lowerer, assembled from its rooms (one file each: statements,
conditionals, loops, expressions, indexing, calls, effects, lookup; the state and
the steps they share in :mod:`.core`), and :func:`lower`, which runs it."""

from __future__ import annotations

from typing import Any

from ..ir import Bind, Block, Function, If, Loop, Type, Var, vars_of
from ..names import Namer
from ..rules import has_effect
from .calls import Calls
from .conditionals import Conditionals
from .effects import Effects
from .expressions import Expressions
from .indexing import Indexing
from .lookup import Lookup
from .loops import Loops
from .parse import Parsed
from .statements import Statements


class Lowerer(Statements, Conditionals, Loops, Expressions, Indexing, Calls, Effects, Lookup):
    """Lowers one function (and, inlined, the user functions it calls)."""


def lower(parsed: Parsed, arg_types: list[Type]) -> tuple[Function, dict[str, Any]]:
    """Lower a parsed function at the given argument types.  Returns the core
    IR and the module-level constants it reads (name -> value)."""
    lowerer = Lowerer(parsed)
    fn = lowerer.lower_function(arg_types)
    return drop_dead_temporaries(fn), {n: obj for n, (_, obj) in lowerer.constants.items()}


def drop_dead_temporaries(fn: Function) -> Function:
    """Remove bindings of temporaries the lowering made and nothing reads
    (e.g. the dimensions of ``x.shape`` that are not used).  Unused *user*
    variables stay: the structural pass ends them with an explicit ``drop``."""
    return Function(fn.name, fn.params, _drop_dead(fn.body))


def _drop_dead(block: Block) -> Block:
    used = {block.result.name} if isinstance(block.result, Var) else set()
    kept = []
    for b in reversed(block.binds):
        if b.targets and all(Namer.is_temp(t.name) and t.name not in used for t in b.targets) and not has_effect(b.rhs):
            continue
        if isinstance(b.rhs, If):
            b = Bind(b.targets, If(b.rhs.cond, _drop_dead(b.rhs.then), _drop_dead(b.rhs.orelse)), b.loc)
        elif isinstance(b.rhs, Loop):
            r = b.rhs
            b = Bind(b.targets, Loop(r.bounds, r.index, r.carried, r.init, _drop_dead(r.body)), b.loc)
        kept.append(b)
        used.update(v.name for v in vars_of(b.rhs))
    return Block(tuple(reversed(kept)), block.result)

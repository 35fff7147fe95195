"""A call of the user's function lowered once per static key, then replayed.

A recursion over a tree of tuples (``def node(t): return f(node(t[0]),
node(t[1])) if isinstance(t, tuple) else t``) calls the function once per
node, but with only as many different static keys as the tree has depths:
two calls whose arguments are the same when transforming (types, shapes,
known ints, the structure of tuples, constants, which arguments are the same
variable) lower to the same bindings, up to the names of the variables.  The
first such call is lowered as usual and recorded as a :class:`Template`: its
bindings, the argument variables they read, the result, and the names the
namer gave (in order); each later call replays it: the same bindings with the
arguments substituted and the names made again by the namer, in the same
order, so the code reads as if each call had been lowered (``t12``, ``h_3``).
At most :data:`MAX_NESTED` calls are recorded one inside another (each checks
the bindings of those inside it: a recursion 200 deep checks ~10 times its
bindings, not 200 times); a call deeper is lowered.

Only a lowering that is a function of its key alone is recorded: its
bindings are primitives without effects, on numbers and arrays (no branches,
loops, lists or function values, whose lowering reads more of the state
around it), it made no in-place update (whose check reads what the caller can
still read), read no argument's binding (``s[0]`` of ``s = a[2:]`` is read as
``a[2]``: ``LowererCore.definition_of``), nor whether a caller holds an argument
(``b = a`` renames the binding of a temporary nothing holds) and undid nothing; its arguments and
result are variables, constants and tuples of them.  Anything else is lowered at every call, as
before.  Replaying gives each binding the aliasing facts a lowering gives it
(``Aliases.prim``), so in-place updates after the call are checked alike.

In reverse mode (``Lowerer.functions``), a recorded call of a function that calls
itself at more than one place (a recursion over a tree), made inside a call of that
function, with at least :data:`MIN_BINDS` bindings and one array it made as its
result, becomes a function of its own (:func:`as_function`): its bindings are
replaced by ``call(inputs, fn=...)`` and every later call with its key is that call
(:func:`call`), which :mod:`astad.ad.calls` differentiates and the generated code
calls (``node_1_forward``, ``node_1_backward``): each stage after lowering sees one
body per such key, not one per node.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Callable

from ..ir import Bind, Block, Const, Function, KeyFunction, ListT, Num, Prim, Var, substitute_block
from ..rules import has_effect
from ..values import PyTuple


#: a recursion's calls made functions of their own in reverse mode (:func:`as_function`; tests switch it off)
FUNCTIONS = True

#: a call is made a function when its lowering has at least this many bindings: a smaller one is replayed
#: inline (a recursion's lowest levels inline, where the optimiser's products over many nodes are worth more
#: than the call, then a function for the subtrees above them)
MIN_BINDS = 32

#: at most this many calls recorded one inside another (each checks the bindings of those inside it)
MAX_NESTED = 10


class _NoKey(Exception):
    pass


@dataclass(frozen=True)
class Template:
    """One recorded lowering of a call: ``binds`` read ``inputs`` (the call's
    argument variables, in order); ``names``: what the namer was asked, in
    order (``("temp", None)`` or ``("fresh", base)``) and the name it gave."""

    inputs: tuple[Var, ...]
    binds: tuple[Bind, ...]
    names: tuple[tuple[str, str | None, str], ...]
    result: Any
    function: KeyFunction | None = None  # called, not replayed (:func:`as_function`)


@dataclass
class Recording:
    """Where the lowering of one call started."""

    key: tuple
    inputs: tuple[Var, ...]
    binds: list[Bind]
    n_binds: int
    n_names: int
    n_read: int
    counters: tuple


def key_of(static_key: tuple, env: dict[str, Any], trying: bool) -> tuple[tuple, tuple[Var, ...]] | None:
    """The key under which a call of the callee with parameters ``env`` is recorded, and its argument
    variables in order; None: not a call to record (a list, dict, function or other reference in it)."""
    inputs: list[Var] = []
    seen: dict[str, int] = {}

    def shape(v: Any) -> Any:
        if type(v) is Var:
            if isinstance(v.type, ListT):
                raise _NoKey
            if v.name not in seen:
                seen[v.name] = len(inputs)
                inputs.append(v)
            return seen[v.name]
        if type(v) is Const:
            return "c", v.key, v.name
        if type(v) is PyTuple and not v.is_list:
            return "t", v.fields, tuple(shape(i) for i in v.items)
        raise _NoKey

    try:
        pattern = tuple((k, shape(v)) for k, v in sorted(env.items()))
    except _NoKey:
        return None
    return (static_key, pattern, trying), tuple(inputs)


def counters(lowerer: Any) -> tuple:
    """What must not change while a recorded call is lowered: the undos, the in-place update checks."""
    return lowerer.restores, lowerer.aliases.updates, len(lowerer.aliases.pending)


def start(lowerer: Any, key: tuple, inputs: tuple[Var, ...]) -> Recording:
    namer = lowerer.namer
    if namer.log is None:
        namer.log = []
    return Recording(key, inputs, lowerer.binds, len(lowerer.binds), len(namer.log), len(lowerer.definitions_read),
                     counters(lowerer))


def finish(lowerer: Any, rec: Recording, result: Any, outermost: bool) -> Template | None:
    """The template of the call just lowered, if its lowering is one to replay."""
    namer = lowerer.namer
    log = namer.log
    try:
        if lowerer.binds is not rec.binds or len(rec.binds) < rec.n_binds or counters(lowerer) != rec.counters:
            return None
        binds = tuple(rec.binds[rec.n_binds:])
        names = tuple(log[rec.n_names:])
        given = {n for _, _, n in names}
        known = {v.name for v in rec.inputs}
        for b in binds:
            rhs = b.rhs
            if (len(b.targets) != 1 or type(rhs) is not Prim or rhs.op in ("setitem", "add_at") or has_effect(rhs)
                    or isinstance(b.targets[0].type, ListT) or b.targets[0].name not in given):
                return None
            for a in rhs.args:
                if type(a) is Var:
                    if a.name not in known or isinstance(a.type, ListT):
                        return None
                elif type(a) is not Const:
                    return None
            known.add(b.targets[0].name)
        if not _made_of(result, known):
            return None
        # a variable the lowering read how it was made (a slice of a slice composed) or whether a caller holds
        # it (a temporary assigned to a name is renamed where nothing holds it): one the call made, or no template
        if any(name not in given for name in lowerer.definitions_read[rec.n_read:]):
            return None
        return Template(rec.inputs, binds, names, result)
    finally:
        if outermost:
            namer.log = None


def _made_of(value: Any, known: set[str]) -> bool:
    if type(value) is Var:
        return value.name in known and not isinstance(value.type, ListT)
    if type(value) is Const:
        return True
    if type(value) is PyTuple and not value.is_list:
        return all(_made_of(v, known) for v in value.items)
    return False


def replay(lowerer: Any, template: Template, inputs: tuple[Var, ...]) -> Any:
    """The template's bindings for a call with argument variables ``inputs``; returns the call's value."""
    namer = lowerer.namer
    targets = {b.targets[0].name for b in template.binds}
    new: dict[str, Any] = {old.name: v for old, v in zip(template.inputs, inputs)}
    for method, base, old in template.names:
        if method == "temp":
            made = namer.temp()
        elif method == "fresh" and old in targets:
            made = namer.fresh(base)  # type: ignore[arg-type]
        else:
            continue
        new[old] = made
    for b in template.binds:
        target, rhs = b.targets[0], b.rhs
        var = Var(new[target.name], target.type)
        new[target.name] = var
        args = tuple(new[a.name] if type(a) is Var else a for a in rhs.args)  # type: ignore[union-attr]
        lowerer.bind_prim(var, Prim(rhs.op, args, rhs.params), b.loc)  # type: ignore[union-attr]
    return _substituted(template.result, new)


def _substituted(value: Any, new: dict[str, Any]) -> Any:
    if type(value) is Var:
        return new[value.name]
    if type(value) is PyTuple:
        return PyTuple(tuple(_substituted(v, new) for v in value.items), value.is_list, value.fields, value.cls)
    return value


# --------------------------------------------------------------------------- a template as a function


def as_function(lowerer: Any, rec: Recording, template: Template, name: Callable[[], str], loc: Any,
                env: dict[str, Any]) -> Template | None:
    """The template of a call just lowered, as a function of its own (:class:`KeyFunction`) that this
    call and every later one with its key calls (reverse mode generates it once, not at each call: a
    recursion over a tree of depth 8 is a few functions, not 255 inlined bodies); None where the
    template is not one: fewer than :data:`MIN_BINDS` bindings, a result that is not one array the
    call made (a view of an argument, whose in-place update would change the argument, is inlined as
    before), or an argument that is a Python float (whose cotangent's type the caller's code decides).
    The call's bindings are replaced by ``let result = call(inputs, fn=function)``."""
    result = template.result
    targets = {b.targets[0].name for b in template.binds}
    if len(template.binds) < MIN_BINDS or type(result) is not Var or result.name not in targets:
        return None
    t = result.type
    if not isinstance(t, Num) or t.py or not t.differentiable:
        return None
    if any(not isinstance(v.type, Num) or (v.type.py and v.type.differentiable) for v in template.inputs):
        return None
    if not lowerer.aliases.roots(result) <= {"A:" + n for n in targets}:
        return None
    made = name()
    params, body = _named_by_parameters(template, env)
    fn = KeyFunction(made, Function(made, params, body), names=lowerer.namer.used)
    del lowerer.binds[rec.n_binds:]
    lowerer.bind_prim(result, Prim("call", template.inputs, (("fn", fn),)), loc)
    return replace(template, function=fn)


def _named_by_parameters(template: Template, env: dict[str, Any]) -> tuple[tuple[Var, ...], Block]:
    """The function's parameters named after the callee's (``W``, ``t_0_1`` for ``t[0][1]``), not after
    the first call's arguments, and its body reading them (the names of the first call where one would
    be a name the body binds)."""
    names: dict[str, str] = {}

    def visit(v: Any, path: str) -> None:
        if type(v) is Var:
            names.setdefault(v.name, path)
        elif type(v) is PyTuple and not v.is_list:
            for i, item in enumerate(v.items):
                visit(item, f"{path}_{i}")

    for k, v in sorted(env.items()):
        visit(v, k)
    body = Block(template.binds, template.result)
    wanted = [names.get(v.name, v.name) for v in template.inputs]
    bound = {b.targets[0].name for b in template.binds}
    if len(set(wanted)) != len(wanted) or bound & set(wanted) or not all(w.isidentifier() for w in wanted):
        return template.inputs, body
    params = tuple(Var(w, v.type) for w, v in zip(wanted, template.inputs))
    return params, substitute_block(body, {v.name: p for v, p in zip(template.inputs, params)})


def call(lowerer: Any, template: Template, inputs: tuple[Var, ...], loc: Any) -> Var:
    """A later call with the key of ``template``, which is a function: ``let y = call(inputs)``."""
    fn = template.function
    assert fn is not None
    var = Var(lowerer.namer.temp(), template.result.type)
    lowerer.bind_prim(var, Prim("call", inputs, (("fn", fn),)), loc)
    return var

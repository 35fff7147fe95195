"""Activity analysis: which values the derivative needs, decided before either macro runs.

A value is *active* when it depends on a differentiated input (it is
*varied*: a forward pass from the parameters in ``wrt``) and the output
depends on it (it is *useful*: a backward pass from the result).  Only an
active value gets a cotangent (reverse mode) or a tangent (forward mode):
the nodes ``t = -1.0 + np.arange(n) * 2.0 / (n - 1.0)`` of a polynomial, an
integer counter, an argument not in ``wrt`` or a value the output never
reads get neither, so no accumulator, and no tape slot for one's sake.

Dependence flows through a binding only where a derivative can: not into a
value of a type without one (ints, bools, shapes), not through a primitive
whose derivative is zero (``floor``, ``sign``: kind ZERO) or discrete.  One
rule per construct, in :data:`VARIED` (forward) and :data:`USEFUL`
(backward).  A branch or loop body is analysed item by item of the tuple it
ends with; a loop-carried value is varied (useful) if any iteration makes it
so, and useful wherever the loop's result is (the loop may not run): the
body is analysed again until the sets stop growing (a fixed point).  A
function value's parameters are taken as varied (whatever its calls pass);
it may read what is bound after it, so with one the backward pass is done
again until nothing grows.  A construct without a rule of its own makes
everything it touches active: when unsure, active.  Never a wrong derivative.

``Activity.pretty()`` is the stage ``activity`` of ``.ir(...)``: the
structural IR with each binding none of whose values is active marked
``# inactive`` (``# inactive: a, b`` for the inactive ones of several).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from .. import rules
from ..blocks import result_items
from ..ir import (App, Atom, Bind, Block, Copy, Drop, Dup, Function, If, Lam, Loop, LoopBack, MakeTuple, Num, Plus,
                  Prim, Type, Unpack, Var, lam_free_vars, vars_of)
from ..ir.types import DIFFERENTIABLE, DIFFERENTIABLE_DTYPE as DTYPE_DIFF

#: primitives whose result has a zero derivative (or none): nothing flows through them
_NO_DERIVATIVE = (rules.DerivativeKind.ZERO, rules.DerivativeKind.DISCRETE)

#: whether a dtype is differentiable, where it is (else None: ask DTYPE_DIFF), read from a plain dict by its bound
#: ``get`` (see astad.ir.types.DIFFERENTIABLE; a name bound by an import is called as an attribute, a method made)
_diff = DIFFERENTIABLE.get


def differentiable(t: Type) -> bool:
    return bool(t.differentiable)


@dataclass
class Activity:
    """The result of the analysis of ``fn`` for the parameters ``wrt`` (None: all):
    the names of its varied and of its useful values, and every name it saw."""

    fn: Function
    wrt: frozenset[int] | None
    varied: set[str] = field(default_factory=set)
    useful: set[str] = field(default_factory=set)
    known: set[str] = field(default_factory=set)
    ends: set[str] = field(default_factory=set)  # the tuples branch and loop bodies end with
    lams: bool = field(default=False, repr=False)  # whether the forward pass met a function value

    def active(self, v: Atom) -> bool:
        """Whether ``v`` gets a cotangent or tangent (a name the analysis never saw: yes)."""
        if not isinstance(v, Var):
            return False
        return v.name not in self.known or (v.name in self.varied and v.name in self.useful)

    def inactive(self) -> frozenset[str]:
        """The names :meth:`active` says no to (besides what is not a variable)."""
        return frozenset(self.known - (self.varied & self.useful))

    def mark(self, b: Bind) -> str:
        """The comment a binding gets in :meth:`pretty`."""
        if not b.targets or isinstance(b.rhs, Drop) or b.targets[0].name in self.ends:
            return ""
        if not any(self.active(t) for t in b.targets):
            return "  # inactive"
        named = [t.name for t in b.targets if not self.active(t)]
        return f"  # inactive: {', '.join(named)}" if named else ""

    def pretty(self) -> str:
        ps = ", ".join(f"{p.name}: {p.type}" + ("" if self.active(p) else " (inactive)") for p in self.fn.params)
        return f"{self.fn.name}({ps}) =\n{self.fn.body.pretty(mark=self.mark)}"


def analyse(fn: Function, wrt: frozenset[int] | None = None) -> Activity:
    """The activity of every value of ``fn`` (core or structural IR, or a macro's
    output made one function) when differentiating by the parameters ``wrt``."""
    _flows_of_table()
    act = Activity(fn, wrt)
    for i, p in enumerate(fn.params):
        act.known.add(p.name)
        if differentiable(p.type) and (wrt is None or i in wrt):
            act.varied.add(p.name)
    _varied_block(act, fn.body)
    _need(act, fn.body.result)
    # a function value may read what is bound after it (and is made useful by its calls, later
    # still): with one, the backward pass is made again until the useful values stop growing
    again = act.lams  # (the forward pass goes into every block a function value can be made in)
    size = -1
    while size != len(act.useful):
        size = len(act.useful)
        _useful_block(act, fn.body)
        if not again:
            break
    return act


#: a primitive's name -> whether dependence flows through it (it has a derivative), of every primitive of
#: the table: a plain dict (see astad.ad.reverse._VJPS), filled again where the table grew
_FLOWS: dict[str, bool] = {}


def _flows_of_table() -> None:
    if len(_FLOWS) != len(rules.TABLE):
        _FLOWS.update({op: p.kind not in _NO_DERIVATIVE for op, p in list(rules.TABLE.items())})


# --------------------------------------------------------------------------- forward: varied


def _is_varied(act: Activity, a: Atom) -> bool:
    return isinstance(a, Var) and (a.name in act.varied or a.name not in act.known)


def _set_varied(act: Activity, targets: tuple[Var, ...], flags: Callable[[int], bool]) -> None:
    for i, t in enumerate(targets):
        act.known.add(t.name)
        if differentiable(t.type) and flags(i):
            act.varied.add(t.name)


def _all(act: Activity, b: Bind, atoms: tuple[Atom, ...]) -> None:
    """Every target varied if anything read is."""
    flag = any(_is_varied(act, a) for a in atoms)
    _set_varied(act, b.targets, lambda i: flag)


def _varied_block(act: Activity, block: Block) -> None:
    """Each binding by its rule; a primitive's and a ``dup``'s written out (most bindings are)."""
    known, varied = act.known, act.varied
    flows, known_add, varied_add = _FLOWS, known.add, varied.add
    for b in block.binds:
        rhs = b.rhs
        cls = type(rhs)
        if cls is Prim:  # _varied_prim
            flag = False
            if flows[rhs.op]:
                for a in rhs.args:
                    if type(a) is Var and (a.name in varied or a.name not in known):
                        flag = True
                        break
            targets = b.targets
            if len(targets) == 1:  # (the most common: the loop below without a loop)
                t = targets[0]
                known_add(t.name)
                if flag:
                    tt = t.type
                    if (_diff(tt.dtype) or DTYPE_DIFF[tt.dtype]) if type(tt) is Num else tt.differentiable:
                        varied_add(t.name)
                continue
        elif cls is Dup:  # _all of its variable
            a = rhs.var
            flag = a.name in varied or a.name not in known
        else:
            VARIED.get(cls, _varied_other)(act, b, rhs)
            continue
        for t in b.targets:
            known.add(t.name)
            if flag:
                tt = t.type
                if (_diff(tt.dtype) or DTYPE_DIFF[tt.dtype]) if type(tt) is Num else tt.differentiable:
                    varied.add(t.name)


def _varied_prim(act: Activity, b: Bind, rhs: Prim) -> None:
    """``_all`` of the arguments, or nothing varied through a primitive without a derivative."""
    known, varied = act.known, act.varied
    flag = False
    if _FLOWS[rhs.op]:
        for a in rhs.args:
            if isinstance(a, Var) and (a.name in varied or a.name not in known):
                flag = True
                break
    for t in b.targets:
        known.add(t.name)
        if flag and t.type.differentiable:
            varied.add(t.name)


def _items(block: Block) -> tuple[Atom, ...]:
    """The atoms a branch or loop body passes on, one per joined or carried value."""
    items = result_items(block)
    return items if items is not None else ()


def _item_varied(act: Activity, block: Block, i: int) -> bool:
    items = _items(block)
    return _is_varied(act, items[i]) if i < len(items) else _is_varied(act, block.result)


def _varied_if(act: Activity, b: Bind, rhs: If) -> None:
    _varied_block(act, rhs.then)
    _varied_block(act, rhs.orelse)
    _set_varied(act, b.targets, lambda i: _item_varied(act, rhs.then, i) or _item_varied(act, rhs.orelse, i))


def _carried_fixpoint(act: Activity, params: tuple[Var, ...], init: tuple[Atom, ...], body: Block) -> None:
    """Carried values varied where their initial value is or any iteration makes them so."""
    flags = [_is_varied(act, a) for a in init]
    while True:
        _set_varied(act, params, lambda i: flags[i])
        _varied_block(act, body)
        grown = [f or _item_varied(act, body, i) for i, f in enumerate(flags)]
        if grown == flags:
            return
        flags = grown


def _varied_loop(act: Activity, b: Bind, rhs: Loop) -> None:
    if rhs.index is not None:
        act.known.add(rhs.index.name)
    _carried_fixpoint(act, rhs.carried, rhs.init, rhs.body)
    n = len(rhs.carried)
    _set_varied(act, b.targets, lambda i: i < n and rhs.carried[i].name in act.varied)


def _varied_loop_back(act: Activity, b: Bind, rhs: LoopBack) -> None:
    # the saved values are the forward loop's (the same names); any other one: varied
    _set_varied(act, tuple(v for v in rhs.saved if v.name not in act.known), lambda i: True)
    _carried_fixpoint(act, rhs.params, rhs.init, rhs.body)
    _set_varied(act, b.targets, lambda i: i >= len(rhs.params) or rhs.params[i].name in act.varied)


def _varied_lam(act: Activity, b: Bind, rhs: Lam) -> None:
    act.lams = True
    _set_varied(act, rhs.params, lambda i: True)  # whatever a call passes
    _varied_block(act, rhs.body)
    _all(act, b, lam_free_vars(rhs))


def _varied_other(act: Activity, b: Bind, rhs: object) -> None:
    """A construct without a rule of its own: all it makes is varied."""
    _set_varied(act, b.targets, lambda i: True)


VARIED: dict[type, Callable] = {
    Prim: _varied_prim,
    MakeTuple: lambda act, b, rhs: _all(act, b, rhs.items),
    Plus: lambda act, b, rhs: _all(act, b, rhs.items),
    Unpack: lambda act, b, rhs: _all(act, b, (rhs.tup,)),
    Dup: lambda act, b, rhs: _all(act, b, (rhs.var,)),
    Copy: lambda act, b, rhs: _all(act, b, (rhs.atom,)),
    Drop: lambda act, b, rhs: None,
    If: _varied_if, Loop: _varied_loop, LoopBack: _varied_loop_back, Lam: _varied_lam,
    App: lambda act, b, rhs: _all(act, b, (rhs.fn, *rhs.args)),
}


# --------------------------------------------------------------------------- backward: useful


def _need(act: Activity, a: Atom) -> None:
    if isinstance(a, Var) and differentiable(a.type):
        act.useful.add(a.name)


def _any_useful(act: Activity, targets: tuple[Var, ...]) -> bool:
    return any(t.name in act.useful for t in targets)


def _useful_block(act: Activity, block: Block) -> None:
    """Each binding by its rule, last first; a primitive's and a ``dup``'s written out (most bindings are)."""
    useful = act.useful
    flows, useful_add = _FLOWS, useful.add
    for b in reversed(block.binds):
        rhs = b.rhs
        cls = type(rhs)
        if cls is Prim:  # _useful_prim
            targets = b.targets
            if len(targets) == 1:  # (the most common: the loop below without a loop)
                if targets[0].name not in useful:
                    continue
            else:
                for t in targets:
                    if t.name in useful:
                        break
                else:
                    continue
            if flows[rhs.op]:
                for a in rhs.args:
                    if type(a) is Var:
                        at = a.type
                        if (_diff(at.dtype) or DTYPE_DIFF[at.dtype]) if type(at) is Num else at.differentiable:
                            useful_add(a.name)
        elif cls is Dup:  # _reads of its variable (_need written out)
            for t in b.targets:
                if t.name in useful:
                    a = rhs.var
                    at = a.type
                    if (_diff(at.dtype) or DTYPE_DIFF[at.dtype]) if type(at) is Num else at.differentiable:
                        useful.add(a.name)
                    break
        else:
            USEFUL.get(cls, _useful_other)(act, b, rhs)


def _reads(atoms: Callable[[object], tuple[Atom, ...]]) -> Callable:
    """The rule of a construct that reads ``atoms(rhs)``: each is useful if a target is."""
    def rule(act: Activity, b: Bind, rhs: object) -> None:
        if _any_useful(act, b.targets):
            for a in atoms(rhs):
                _need(act, a)
    return rule


def _useful_prim(act: Activity, b: Bind, rhs: Prim) -> None:
    """Each argument useful if a target is, through a primitive with a derivative
    (``_reads`` written out: this runs for most bindings)."""
    useful = act.useful
    for t in b.targets:
        if t.name in useful:
            break
    else:
        return
    if _FLOWS[rhs.op]:
        for a in rhs.args:
            if isinstance(a, Var) and a.type.differentiable:
                useful.add(a.name)


def _seed(act: Activity, block: Block, useful: Callable[[int], bool]) -> None:
    """A branch or loop body, from the items of its tuple that are useful."""
    items = result_items(block)
    if items is None:
        _need(act, block.result)
    else:
        act.ends.add(block.result.name)  # (not read through as one value: item by item)
        for i, a in enumerate(items):
            if useful(i):
                _need(act, a)
    _useful_block(act, block)


def _useful_if(act: Activity, b: Bind, rhs: If) -> None:
    for block in (rhs.then, rhs.orelse):
        _seed(act, block, lambda i: i < len(b.targets) and b.targets[i].name in act.useful)


def _body_fixpoint(act: Activity, outs: tuple[Var, ...], params: tuple[Var, ...], init: tuple[Atom, ...],
                   body: Block) -> None:
    """Carried values useful where the loop's result is (the value after the last
    iteration, or the initial one if there is none) or any iteration reads them usefully."""
    flags = [i < len(outs) and outs[i].name in act.useful for i in range(len(params))]
    while True:
        for p, f in zip(params, flags):
            if f:
                _need(act, p)
        _seed(act, body, lambda i: i < len(flags) and flags[i])
        grown = [f or p.name in act.useful for f, p in zip(flags, params)]
        if grown == flags:
            break
        flags = grown
    for a, f in zip(init, flags):
        if f:
            _need(act, a)


def _useful_loop(act: Activity, b: Bind, rhs: Loop) -> None:
    if rhs.tape is not None and rhs.tape.name in act.useful:  # what a backward loop reads of the tape
        for v in rhs.save:
            _need(act, v)
    _body_fixpoint(act, b.targets[:len(rhs.carried)], rhs.carried, rhs.init, rhs.body)


def _useful_loop_back(act: Activity, b: Bind, rhs: LoopBack) -> None:
    _body_fixpoint(act, b.targets, rhs.params, rhs.init, rhs.body)
    if any(v.name in act.useful for v in rhs.saved):
        act.useful.add(rhs.tape.name)  # (a tape has no derivative of its own, but what it records may)


def _useful_lam(act: Activity, b: Bind, rhs: Lam) -> None:
    if _any_useful(act, b.targets):
        _need(act, rhs.body.result)
    _useful_block(act, rhs.body)


def _useful_other(act: Activity, b: Bind, rhs: object) -> None:
    """A construct without a rule of its own: all it reads is useful."""
    for a in vars_of(rhs):  # type: ignore[arg-type]
        _need(act, a)


USEFUL: dict[type, Callable] = {
    Prim: _useful_prim,
    MakeTuple: _reads(lambda r: r.items), Plus: _reads(lambda r: r.items), Unpack: _reads(lambda r: (r.tup,)),
    Dup: _reads(lambda r: (r.var,)), Copy: _reads(lambda r: (r.atom,)), Drop: lambda act, b, rhs: None,
    If: _useful_if, Loop: _useful_loop, LoopBack: _useful_loop_back, Lam: _useful_lam,
    App: _reads(lambda r: (r.fn, *r.args)),
}

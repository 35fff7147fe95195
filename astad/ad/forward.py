"""The CHAD forward macro (§7.1), read as dual numbers: core IR -> core IR.

For ``Γ ⊢ t : σ`` CHAD's forward macro gives the primal and a linear map
``D2(Γ) ⊸ D2(σ)`` from the inputs' tangents to the output's.  In a let-based
IR that map need not be a closure: every binding's tangent is computed right
after its primal (the ML-family paper's dual numbers: every real carries its
tangent).  The result is again a core-IR :class:`Function`, with one tangent
parameter per differentiable parameter in ``wrt`` (named ``x_t``), returning
the pair ``(value, tangent)``.  One rule per construct, in :data:`RULES`:

- ``let y = op(a, b)``: the primal, then ``y_t`` from the table's JVP
  (``J_op(a, b) · (a_t, b_t)``).  A tangent that is statically zero is
  ``None`` in the macro and never materialised; discrete values have none;
- tuples and ``unpack``: pointwise.  ``dup x``: the copies share ``x``'s
  tangent (no sum: the mirror of reverse mode's ``plus``).  ``drop x``: nothing;
- ``if``: the same branch, each returning the joined values' tangents too (a
  zero on one side is made there);
- loops (``for`` and ``while``): the tangents are carried with the loop
  variables — no tape, memory O(1) in the number of iterations.  Which
  carried values have a tangent is a fixed point (one with a zero initial
  tangent may get one in the body);
- ``lam``: CHAD's ``D1(τ→σ) = D1(τ) → (D1(σ), D2(τ) ⊸ D2(σ))``: the function
  value becomes one taking its arguments' tangents too and returning its
  result with its tangent; the tangent of what it captures is read from
  where it is made (its free variables' tangents).  A call passes the
  arguments' tangents (zeros where there are none) and unpacks the pair;
- lists: their primitives' rules (``append``, ``list_get``, ...); a list's
  tangent is a list (of zeros like its items where the program made it and
  nothing has a tangent yet); recursion is unrolled by the frontend before
  any macro runs.

Which joined or carried values have a tangent is found while each branch and
body is done once (a loop body again only when a carried value turns out to
get a tangent in it: a fixed point), so the macro costs what the reverse
macro does on nested code.  JVP rules come from the primitive table
(``Primitive.jvp``, :mod:`astad.rules`).

Forward over the reverse macro's optimised output (Hessians) needs three
target-IR constructs more: ``plus`` (its tangent is the ``plus`` of the
tangents), a loop that records a tape (the tape also records the tangents
of what it saves) and the backward loop over it (it reads them back and
carries the tangents of its cotangents).  What remains after the optimiser
(``lam``, calls, copowers) cannot reach this macro and is refused.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Callable

from .. import rules as prims
from ..blocks import result_items
from ..errors import AstadError, AstadTypeError, InternalError, UnsupportedSyntaxError
from ..ir import (App, Atom, Bind, Block, Const, Copy, Drop, Dup, FunT, Function, If, Lam, Loop, LoopBack,
                  MakeTuple, NoneT, Num, Plus, Prim, TupleT, Type, Unpack, Var, Zero, all_binds, bound_vars,
                  nested_blocks)
from ..names import Namer
from ..rules import zeros_of
from .activity import Activity
from .reverse import Builder
from .vjp_function import SplitFunction, split_of

Rule = Callable[["Forward", Bind, Any], None]


@dataclass
class Opened:
    """A branch or loop body done but for the tuple it ends with."""

    binds: list[Bind]
    items: tuple[Atom, ...]
    result: Var


def differentiable(t: Type) -> bool:
    return bool(t.differentiable) and not isinstance(t, FunT)


def jvp_rule(op: str) -> Callable | None:
    """The table's JVP of ``op``."""
    return prims.TABLE[op].jvp


class Forward:
    """The macro's state: the builder, and each variable's tangent (None: zero)."""

    def __init__(self, fn: Function, activity: Activity | None = None) -> None:
        # only an active value gets a tangent (astad.ad.activity; without the analysis: every one)
        self.active: Callable[[Atom], bool] = activity.active if activity is not None else _always
        self.namer = Namer.of(fn)
        self.b = Builder(self.namer)
        self.tangents: dict[str, Atom] = {}
        self.tapes: dict[str, tuple[Var, ...]] = {}  # a loop's tape -> the tangents it records besides its values
        self.lams: dict[str, tuple[bool, tuple[int, ...]]] = {}  # function -> (returns a tangent, params with one)
        self.lists: dict[str, tuple[Atom, ...]] = {}  # variables bound to a new list -> its items
        self.copies: dict[str, Var] = {}  # a copy made by dup -> the variable it copies (x * x is a square)

    # tangents ---------------------------------------------------------------

    def tangent(self, a: Atom) -> Atom | None:
        return self.tangents.get(a.name) if isinstance(a, Var) else None

    def set(self, v: Var, t: Atom | None) -> None:
        """Record ``v``'s tangent; a temporary just made for it is named ``v_t``."""
        if t is None or not differentiable(v.type) or not self.active(v):
            return
        last = self.b.binds[-1] if self.b.binds else None
        if isinstance(t, Var) and Namer.is_temp(t.name) and not Namer.is_temp(v.name) and last is not None \
                and last.targets == (t,):
            named = Var(self.namer.fresh(f"{v.name}_t"), t.type)
            self.b.binds[-1] = Bind((named,), last.rhs, last.loc)
            t = named
        self.tangents[v.name] = t

    def tangent_var(self, v: Var) -> Var:
        return Var(self.namer.fresh(f"{v.name}_t"), v.type)

    def or_zeros(self, a: Atom) -> Atom:
        """The tangent of ``a``, made as zeros where it is statically zero."""
        t = self.tangent(a)
        if t is not None:
            return t
        if isinstance(a.type, TupleT):
            parts = tuple(Var(self.namer.temp(), i) for i in a.type.items)
            self.b.bind(parts, Unpack(a))
            made = tuple(self.or_zeros(p) if differentiable(p.type) else Const.literal(None, NoneT()) for p in parts)
            tup = Var(self.namer.temp(), TupleT(tuple(m.type for m in made)))
            self.b.bind((tup,), MakeTuple(made))
            return tup
        if isinstance(a, Zero):
            return a
        if isinstance(a, Var) and a.name in self.lists:  # a list made here: a list of zeros like its items
            return self.b.prim("list", *(zeros_of(self.b, x) for x in self.lists[a.name]))
        if isinstance(a.type, Num) and not a.type.shape and not a.type.py and a.type.differentiable:
            # a numpy scalar's zero as one (``np.float64(0.0)``): a literal 0.0 is weak, and the tangent
            # carried from it would take the dtype of a float16 or float32 array added to it, not the value's
            return self.b.prim("convert_float", Const.literal(0.0, Num((), "float64", py=True)), dtype=a.type.dtype,
                               py=False)
        return zeros_of(self.b, a)

    # blocks -----------------------------------------------------------------

    def block(self, block: Block) -> None:
        for bind in block.binds:
            self.bind(bind)

    def bind(self, bind: Bind) -> None:
        rule = RULES.get(type(bind.rhs))
        if rule is None:
            raise UnsupportedSyntaxError(f"forward mode does not support {type(bind.rhs).__name__} here", bind.loc)
        saved, self.b.loc = self.b.loc, bind.loc
        try:
            rule(self, bind, bind.rhs)
        finally:
            self.b.loc = saved

    def open(self, block: Block) -> "Opened":
        """A branch or loop body with tangents, but for the tuple it ends with
        (made by :meth:`close` once it is known which tangents pass on)."""
        items = result_items(block)
        if items is None:
            raise InternalError("forward macro: a branch or loop body must end with a tuple")
        saved = self.b.binds
        self.b.binds = []
        try:
            self.block(Block(block.binds[:-1], block.result))
            return Opened(self.b.binds, items, block.result)  # type: ignore[arg-type]
        finally:
            self.b.binds = saved

    def close(self, opened: "Opened", extra: Callable[[tuple[Atom, ...]], tuple[Atom, ...]]) -> Block:
        """The body's block: its bindings, then the tuple ``extra`` makes of the items it passed on."""
        saved = self.b.binds
        self.b.binds = opened.binds
        try:
            made = extra(opened.items)
            end = Var(opened.result.name, TupleT(tuple(a.type for a in made)))
            self.b.bind((end,), MakeTuple(made))
            return Block(tuple(self.b.binds), end)
        finally:
            self.b.binds = saved

    def snapshot(self) -> tuple:
        """The macro's state, to do a block again from it (:meth:`restore`)."""
        return (set(self.namer.used), set(self.namer.taken), self.namer.temps, dict(self.tangents), dict(self.tapes),
                dict(self.lams), dict(self.lists))

    def restore(self, state: tuple) -> None:
        used, taken, temps, tangents, tapes, lams, lists = state
        self.namer.used, self.namer.taken, self.namer.temps = set(used), set(taken), temps
        self.tangents, self.tapes, self.lams, self.lists = dict(tangents), dict(tapes), dict(lams), dict(lists)

    def run(self, fn: Function, wrt: frozenset[int] | None) -> Function:
        tparams = []
        for i, p in enumerate(fn.params):
            if differentiable(p.type) and (wrt is None or i in wrt):
                tp = self.tangent_var(p)
                tparams.append(tp)
                self.tangents[p.name] = tp
        split = split_of(fn)
        binds = fn.body.binds
        self.block(Block(binds[:split], fn.body.result))  # a reverse program's forward block first: where it ends is kept
        end = len(self.b.binds)
        self.block(Block(binds[split:] if split is not None else (), fn.body.result))
        result = fn.body.result
        self.b.loc = None
        value_t = self.or_zeros(result) if differentiable(result.type) else Const.literal(None, NoneT())
        value_t = _as_float(self.b, value_t, result.type)
        out = Var(self.namer.fresh("value_and_tangent"), TupleT((result.type, value_t.type)))
        self.b.bind((out,), MakeTuple((result, value_t)))
        body = Block(tuple(self.b.binds), out)
        if split is not None:
            return SplitFunction(fn.name, fn.params + tuple(tparams), body, split=end)
        return Function(fn.name, fn.params + tuple(tparams), body)


def _always(a: Atom) -> bool:
    return True


def _as_float(b: Builder, t: Atom, like: Type) -> Atom:
    """The tangent of a Python float as a Python float."""
    if isinstance(like, Num) and like.py and not like.shape and isinstance(t.type, Num) and not t.type.py:
        return b.prim("to_float", t)
    return t


# --------------------------------------------------------------------------- one rule per construct


def rule_prim(m: Forward, bind: Bind, rhs: Prim) -> None:
    m.b.binds.append(bind)
    if rhs.op == "list" and all(isinstance(a.type, Num) for a in rhs.args):
        m.lists[bind.targets[0].name] = rhs.args
    (out,) = bind.targets
    tangents = [m.tangent(a) for a in rhs.args]
    if not differentiable(out.type) or not m.active(out) or all(t is None for t in tangents):
        return
    entry = prims.TABLE[rhs.op]
    if entry.kind in (prims.DerivativeKind.ZERO, prims.DerivativeKind.DISCRETE):
        return
    rule = jvp_rule(rhs.op)
    if rule is None:
        raise UnsupportedSyntaxError(f"forward mode: {rhs.op} has no tangent rule", bind.loc)
    t = out.type
    if type(t) is Num and t.dtype.startswith("float"):
        # a tangent narrower than the value is widened before the rule computes with it, as the value's
        # operands were (math.exp(x32[0]) is a float64: its tangent exp(x) * t is computed in float64)
        tangents = [_widened(m.b, u, t.dtype) for u in tangents]
    try:
        m.set(out, _of_dtype(m.b, rule(m.b, same_copies(m, rhs), out, tangents), out.type))
    except prims.ShapeError as e:
        raise AstadTypeError(f"cannot differentiate {rhs.op} in forward mode: {e}", bind.loc) from None
    except AstadError as e:
        if e.loc is not None:
            raise
        raise type(e)(e.message, bind.loc, e.hint) from None


def _of_dtype(b: Builder, t: Atom | None, like: Type) -> Atom | None:
    """The tangent ``t`` of a value of type ``like`` at the value's float dtype, as JAX's tangents (of
    ``x16 + np.float64(c)`` the rule gives ``x16_t``: converted to float64; of a float32 value whose
    rule gave float64, rounded to float32); a Python float's tangent may stay a numpy float64."""
    if t is None or type(like) is not Num or type(t.type) is not Num:
        return t
    have, want = t.type.dtype, like.dtype
    if have == want or not (have.startswith("float") and want.startswith("float")):
        return t
    return b.prim("convert_float", t, dtype=want, py=False)


def _widened(b: Builder, t: Atom | None, dtype: str) -> Atom | None:
    """The tangent ``t`` converted to the float ``dtype`` where its own float dtype is narrower."""
    if t is None or type(t.type) is not Num:
        return t
    have = t.type.dtype
    if have == dtype or not have.startswith("float") or int(have[5:]) >= int(dtype[5:]):
        return t
    return b.prim("convert_float", t, dtype=dtype, py=False)


def rule_make_tuple(m: Forward, bind: Bind, rhs: MakeTuple) -> None:
    m.b.binds.append(bind)
    if all(m.tangent(a) is None for a in rhs.items):
        return
    items = tuple(m.or_zeros(a) if differentiable(a.type) else Const.literal(None, NoneT()) for a in rhs.items)
    tup = Var(m.namer.temp(), TupleT(tuple(a.type for a in items)))
    m.b.bind((tup,), MakeTuple(items))
    m.set(bind.targets[0], tup)


def rule_unpack(m: Forward, bind: Bind, rhs: Unpack) -> None:
    m.b.binds.append(bind)
    t = m.tangent(rhs.tup)
    if t is None:
        return
    parts = tuple(m.tangent_var(v) if differentiable(v.type) else Var(m.namer.temp(), v.type) for v in bind.targets)
    m.b.bind(parts, Unpack(t))
    for v, p in zip(bind.targets, parts):
        if differentiable(v.type) and m.active(v):
            m.tangents[v.name] = p


def same_copies(m: Forward, p: Prim) -> Prim:
    """``p`` with arguments that are copies of one variable (by ``dup``) all the
    first of them, so a rule sees a square as ``x * x`` (its tangent ``2 * x * t``)."""
    first: dict[str, Var] = {}
    args = []
    for a in p.args:
        root = m.copies.get(a.name) if isinstance(a, Var) else None
        args.append(first.setdefault(root.name, a) if root is not None else a)  # type: ignore[arg-type]
    return p if all(x is y for x, y in zip(args, p.args)) else Prim(p.op, tuple(args), p.params)


def rule_dup(m: Forward, bind: Bind, rhs: Dup) -> None:
    m.b.binds.append(bind)
    t = m.tangent(rhs.var)
    root = m.copies.get(rhs.var.name, rhs.var)
    for v in bind.targets:
        m.set(v, t)
        m.copies[v.name] = root


def rule_drop(m: Forward, bind: Bind, rhs: Drop) -> None:
    m.b.binds.append(bind)


def rule_copy(m: Forward, bind: Bind, rhs: Copy) -> None:
    m.b.binds.append(bind)
    m.set(bind.targets[0], m.tangent(rhs.atom))


def rule_plus(m: Forward, bind: Bind, rhs: Plus) -> None:
    m.b.binds.append(bind)
    ts = tuple(t for t in (m.tangent(a) for a in rhs.items) if t is not None)
    if len(ts) <= 1:
        m.set(bind.targets[0], ts[0] if ts else None)
        return
    total = Var(m.namer.temp(), bind.targets[0].type)
    m.b.bind((total,), Plus(ts))
    m.set(bind.targets[0], total)


def rule_if(m: Forward, bind: Bind, rhs: If) -> None:
    """The same branch, with tangents: each branch also returns the tangents of
    the joined values that have one on either side (zeros made on the other)."""
    state = m.snapshot()
    branches = [m.open(rhs.then), m.open(rhs.orelse)]
    active = [i for i, v in enumerate(bind.targets) if differentiable(v.type) and m.active(v)
              and any(m.tangent(br.items[i]) is not None for br in branches)]
    # (a value a branch binds may be read outside it, tangent and all: by a tape, or by the
    # backward part of a reverse program, which reads the forward part's values)
    if not active and not _calls(rhs) \
            and not any(m.tangent(v) is not None for v in (*bound_vars(rhs.then), *bound_vars(rhs.orelse))):
        m.restore(state)
        m.b.binds.append(bind)
        return
    blocks = [m.close(br, lambda items: items + tuple(m.or_zeros(items[i]) for i in active)) for br in branches]
    outs = tuple(m.tangent_var(bind.targets[i]) for i in active)
    m.b.bind(bind.targets + outs, If(rhs.cond, *blocks))
    for i, t in zip(active, outs):
        m.tangents[bind.targets[i].name] = t


def _calls(rhs: If | Loop) -> bool:
    """Whether a branch or loop body calls a function value: its dual takes tangents
    too, so the body is never kept as it was, even where no value in it has a tangent."""
    return any(isinstance(b.rhs, App) for block in nested_blocks(rhs) for b in all_binds(block))


def _with_tangents(items: tuple, tangents: tuple, condition_last: bool) -> tuple:
    """Carried values followed by their tangents (before a ``while`` loop's condition, which stays last)."""
    return items[:-1] + tangents + items[-1:] if condition_last else items + tangents


def _iterate(m: Forward, params: tuple[Var, ...], init: tuple[Atom, ...], body: Block,
             condition_last: bool) -> tuple[list[int], dict[int, Var], "Opened"]:
    """The loop body with tangents, and which carried values have one: those with a
    non-zero initial tangent, and those the body gives one given these (a fixed
    point: the body is done again, from the same state, when the set grows)."""
    last = len(params) - 1 if condition_last else None
    active = {i for i, (p, a) in enumerate(zip(params, init)) if differentiable(p.type) and i != last
              and m.active(p) and m.tangent(a) is not None}
    state = m.snapshot()
    while True:
        tparams = {i: m.tangent_var(params[i]) for i in sorted(active)}
        for i, tv in tparams.items():
            m.tangents[params[i].name] = tv
        opened = m.open(body)
        grown = active | {i for i, a in enumerate(opened.items) if i != last and differentiable(params[i].type)
                          and m.active(params[i]) and m.tangent(a) is not None}
        if grown == active:
            return sorted(active), tparams, opened
        active = grown
        m.restore(state)


def rule_loop(m: Forward, bind: Bind, rhs: Loop) -> None:
    """Tangents carried along with the loop's variables (no tape).  A loop that
    records a tape (forward over reverse) records its values' tangents too."""
    is_while = rhs.index is None
    state = m.snapshot()
    active, tparams, opened = _iterate(m, rhs.carried, rhs.init, rhs.body, is_while)
    if not active and rhs.tape is None and not _calls(rhs):
        m.restore(state)
        m.b.binds.append(bind)
        return
    saved_tangents: dict[str, Var] = {}

    def extra(items: tuple[Atom, ...]) -> tuple[Atom, ...]:
        if rhs.tape is not None:  # the tangents of what the tape saves, bound now in the body
            for v in rhs.save:
                t = m.tangent(v)
                if t is not None and not isinstance(t, Var):
                    named = Var(m.namer.fresh(f"{v.name}_t"), v.type)
                    m.b.bind((named,), Copy(t))
                    t = named
                if t is not None:
                    saved_tangents[v.name] = t  # type: ignore[assignment]
        return _with_tangents(items, tuple(m.or_zeros(items[i]) for i in active), is_while)

    body = m.close(opened, extra)
    init = _with_tangents(rhs.init, tuple(m.or_zeros(rhs.init[i]) for i in active), is_while)
    carried = _with_tangents(rhs.carried, tuple(tparams[i] for i in active), is_while)
    n = len(rhs.carried)
    outs = tuple(m.tangent_var(bind.targets[i]) for i in active)
    targets = _with_tangents(bind.targets[:n], outs, is_while) + bind.targets[n:]
    save = rhs.save
    if rhs.tape is not None:
        own = {v.name for v in save}
        extra_saved = tuple(dict.fromkeys(t for t in saved_tangents.values() if t.name not in own))
        save = save + extra_saved
        m.tapes[rhs.tape.name] = extra_saved
    m.b.bind(targets, Loop(rhs.bounds, rhs.index, carried, init, body, save, rhs.tape))
    for i, t in zip(active, outs):
        m.tangents[bind.targets[i].name] = t


def rule_loop_back(m: Forward, bind: Bind, rhs: LoopBack) -> None:
    """The backward loop over a tape, with tangents: it reads the tangents the
    forward loop recorded beside its values, and carries its accumulators' tangents."""
    extra_saved = m.tapes.get(rhs.tape.name, ())
    state = m.snapshot()
    active, tparams, opened = _iterate(m, rhs.params, rhs.init, rhs.body, False)
    if not active:  # it reads the tape as it is now, tangents and all
        m.restore(state)
        m.b.bind(bind.targets, replace(rhs, saved=rhs.saved + extra_saved))
        return
    body = m.close(opened, lambda items: items + tuple(m.or_zeros(items[i]) for i in active))
    outs = tuple(m.tangent_var(bind.targets[i]) for i in active)
    m.b.bind(bind.targets + outs, LoopBack(rhs.tape, rhs.saved + extra_saved, rhs.params + tuple(tparams[i] for i in active),
                                           rhs.init + tuple(m.or_zeros(rhs.init[i]) for i in active), body))
    for i, t in zip(active, outs):
        m.tangents[bind.targets[i].name] = t


def rule_lam(m: Forward, bind: Bind, rhs: Lam) -> None:
    """CHAD §7.1: the function value's dual takes its arguments' tangents too and
    returns its result with the result's tangent; what it captures has its
    tangent where the function is made, which the body reads from there."""
    if rhs.back is not None or rhs.save:
        raise UnsupportedSyntaxError("forward mode over a function value's backward map is not supported", bind.loc)
    (f,) = bind.targets
    with_t = tuple(i for i, p in enumerate(rhs.params) if differentiable(p.type))
    tparams = tuple(m.tangent_var(rhs.params[i]) for i in with_t)
    for i, tp in zip(with_t, tparams):
        m.tangents[rhs.params[i].name] = tp
    saved = m.b.binds
    m.b.binds = []
    try:
        m.block(rhs.body)
        result = rhs.body.result
        returns_t = differentiable(result.type)
        if returns_t:
            pair = Var(m.namer.temp(), TupleT((result.type, result.type)))
            m.b.bind((pair,), MakeTuple((result, m.or_zeros(result))))
            body = Block(tuple(m.b.binds), pair)
        else:
            body = Block(tuple(m.b.binds), result)
    finally:
        m.b.binds = saved
    m.lams[f.name] = (returns_t, with_t)
    m.b.bind(bind.targets, Lam(rhs.params + tparams, body))


def rule_app(m: Forward, bind: Bind, rhs: App) -> None:
    """A call of a function value's dual: the arguments with their tangents (zeros
    where there are none); the result with its tangent."""
    if len(bind.targets) != 1:
        raise UnsupportedSyntaxError("forward mode over a call's backward map is not supported", bind.loc)
    name = rhs.fn.type.name if isinstance(rhs.fn.type, FunT) else rhs.fn.name
    returns_t, with_t = m.lams[name]
    args = rhs.args + tuple(m.or_zeros(rhs.args[i]) for i in with_t)
    (y,) = bind.targets
    if not returns_t:
        m.b.bind(bind.targets, App(rhs.fn, args))
        return
    pair = Var(m.namer.temp(), TupleT((y.type, y.type)))
    m.b.bind((pair,), App(rhs.fn, args))
    yt = m.tangent_var(y)
    m.b.bind((y, yt), Unpack(pair))
    if m.active(y):
        m.tangents[y.name] = yt


#: one rule per construct (other modules may register rules for constructs of their own)
RULES: dict[type, Rule] = {
    Prim: rule_prim, MakeTuple: rule_make_tuple, Unpack: rule_unpack, Dup: rule_dup, Drop: rule_drop,
    Copy: rule_copy, Plus: rule_plus, If: rule_if, Loop: rule_loop, LoopBack: rule_loop_back,
    Lam: rule_lam, App: rule_app,
}


def forward(fn: Function, wrt: frozenset[int] | None = None, activity: Activity | None = None) -> Function:
    """The forward macro: ``fn(params) -> (value, tangent)`` with one tangent
    parameter per differentiable parameter in ``wrt`` (all when None), after
    the primal parameters, in order; with ``activity``
    (:func:`astad.ad.activity.analyse`), only its active values get tangents."""
    return Forward(fn, activity).run(fn, wrt)


__all__ = ["forward", "Forward", "RULES", "jvp_rule"]

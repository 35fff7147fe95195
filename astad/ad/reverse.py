"""The CHAD reverse macro: core IR (with explicit dup/drop) -> target IR.

For ``Γ ⊢ t : σ`` it produces the primal and a linear backward map
``D2(σ) ⊸ D2(Γ)``, defunctionalised into a :class:`ReverseProgram`: the
forward block is the primal itself, and the backward block mirrors the
``let``s in reverse, one rule per construct.  Because the structural pass made
every variable used exactly once, each variable's cotangent is produced by
exactly one place — its single use — so no run-time accumulation map is
needed: ``dup`` becomes ``plus`` and ``drop`` becomes ``zero``, statically.

This module holds the rules, one per construct (a primitive, by its VJP rule from the table, replayed
where it can be: :mod:`astad.ad.replay`; the structural constructs; ``if``, loops, function values and
their calls), and runs them over the blocks in reverse; :mod:`astad.ad.cotangents` holds the
cotangents they give (their types, where they are kept, how they are named).
"""

from __future__ import annotations

from typing import Any, Callable, Sequence, get_args

from .. import rules
from ..errors import AstadTypeError, InternalError
from ..frontend import literal_type
from ..blocks import rebound
from ..names import _TEMPS, Namer
from .. import structural
from dataclasses import replace

from ..ir import (App, AppBack, Atom, Bind, Block, CaseCopower, Comp, Const, Copower, CopowerT, Copy, Drop, Dup,
                 FunT, Function, If, Lam, ListT, Loop, LoopBack, MakeTuple, Num, Plus, Prim, ReverseProgram,
                 TupleT, Type, Unpack, Var, Zero, function_values, if_free_vars, lam_free_vars,
                 kinds, loop_free_vars)
from ..ir.types import DIFFERENTIABLE, DIFFERENTIABLE_DTYPE as DTYPE_DIFF
from .activity import Activity
from .builder import _TAPED, Builder, with_tapes  # noqa: F401  (Builder: what the rules' tests build with)
from . import replay
from .calls import backward as call_backward
from .cotangents import Cotangents, ct_type, differentiable, joined_ct_type, repeated_names, sized_at_run_time


_TABLE = rules.TABLE

#: whether a dtype is differentiable, where it is (else None: ask DTYPE_DIFF), read from a plain dict by its bound
#: ``get`` (see astad.ir.types.DIFFERENTIABLE; a name bound by an import is called as an attribute, a method made)
_diff = DIFFERENTIABLE.get

#: whether the macro names the cotangents of the top block where they are made (``Cotangents.take``, in
#: astad.ad.cotangents) rather than by a copy the optimiser's fold then removes (tests turn it off: the
#: generated code is the same)
NAME_COTANGENTS = True

#: whether the forward block is ``structural.primal`` of the macro's input, where it has one (tests turn it
#: off: the optimised program is the same)
PRIMAL = True


#: a primitive's name -> its VJP rule (None: none), of each primitive of the table (:func:`_vjps_of_table`).
#: A plain dict, not a subclass with ``__missing__``: ``d[k]`` of a dict subclass looks up and calls its
#: ``__getitem__`` (some 400 instructions a time; 1.2% of a cold transform of straight_line_500, all such dicts)
_VJPS: dict[str, Any] = {}


def _vjps_of_table() -> None:
    """``_VJPS`` of every primitive of the table (filled again where the table grew: :func:`astad.rules.register`)."""
    if len(_VJPS) != len(_TABLE):
        _VJPS.update({op: p.vjp for op, p in list(_TABLE.items())})


def _arg_key(a: Atom, inactive, cts: dict) -> tuple[object, bool]:
    """For ``rule_Prim``'s key of a replayed primitive: what ``replay.key`` holds of an argument (None where
    it cannot be keyed) and whether it gets a cotangent (give's tests: a variable with a derivative, active;
    an inactive one is given its zero here, as give would)."""
    cls = type(a)
    if cls is Var:
        at = a.type
        if (_diff(at.dtype) or DTYPE_DIFF[at.dtype]) if type(at) is Num else at.differentiable:
            if a.name not in inactive:
                return id(at), True
            cts[a.name] = Zero(ct_type(at))  # (give's)
        return id(at), False
    return (a.key if cls is Const and a.name is None else None), False


def _with_backs(block: Block, backs: dict[str, Lam]) -> Block:
    """The forward block with each function value's backward map attached (the
    block itself when there is none: a program without function values)."""
    if not backs:
        return block
    binds = []
    for b in block.binds:
        rhs = b.rhs
        if isinstance(rhs, Lam):
            rhs = backs.get(b.targets[0].name, rhs)
        elif isinstance(rhs, If):
            rhs = If(rhs.cond, _with_backs(rhs.then, backs), _with_backs(rhs.orelse, backs))
        elif isinstance(rhs, Loop):
            rhs = replace(rhs, body=_with_backs(rhs.body, backs))
        binds.append(rebound(b, rhs))
    return Block(tuple(binds), block.result)


class _Macro(Cotangents):
    """The macro: a rule per construct (``rule_<class>``), the cotangents the rules give (:class:`Cotangents`)."""

    def __init__(self, fn: Function, activity: Activity | None = None) -> None:
        # only an active value gets a cotangent (astad.ad.activity; without the analysis: every one)
        self.active: Callable[[Atom], bool] = activity.active if activity is not None else _always
        super().__init__(Namer.of(fn), activity.inactive() if activity is not None else frozenset())
        self.functions: dict[str, Lam] | None = None  # the variable a lam is bound to (its type's name) -> the lam
        self.forward: Block | None = None  # the forward block (its function values found at the first call)
        self.backs: dict[str, Lam] = {}  # function variable -> its Lam with the backward map
        self.top = True  # whether the block being built is the top one (``settle`` runs only there)
        # whether ``take`` names the cotangents (in the top block of a program without function values:
        # copowers.remove_functions, which runs before the optimiser's fold, draws names from those left)
        self.naming = True
        self.calls: dict[str, Prim] = {}  # the pair a call of a function of its own gives -> its call_forward
        self.replays: dict[tuple, replay.Replay] = {}  # what applications of rules made (astad.ad.replay), by key
        self.by_value: dict[tuple, replay.Replay] = {}  # the same, by the types themselves (replay.by_value)
        self.seen: set[tuple] = set()  # the keys by value of the applications made once (not recorded)
        self.pinned: list[tuple[Type, ...]] = []  # the types whose ids are in those keys: kept, so the ids stay theirs
        self.replayed = replay.REPLAYED if replay.REPLAY else frozenset()  # the primitives whose rules are replayed

    # one rule per construct -------------------------------------------------

    def rule_Prim(self, bind: Bind, rhs: Prim, primal: tuple[Atom, ...] | None = None) -> None:
        """A primitive, by its VJP rule (replayed where it can be: astad.ad.replay); ``primal``: the
        arguments the forward block's binding reads (``structural.primal``), which a replayed rule reads
        in place of ``rhs``'s (the same values: a copy where ``rhs`` has the variable it copies)."""
        op = rhs.op
        if op == "call_forward":  # (its arguments' cotangents were given at its unpacking: call_backward)
            return
        (out,) = bind.targets
        ct = self.cts.get(out.name)  # (ct_of, without making the zero there is no use for)
        vjp = _VJPS[op]
        t = out.type
        if ct is None or type(ct) is Zero or vjp is None or \
                not ((_diff(t.dtype) or DTYPE_DIFF[t.dtype]) if type(t) is Num else t.differentiable):
            give = self.give
            for a in rhs.args:
                give(a, None)
            return
        args = rhs.args
        inactive = self.inactive
        if len(args) == 2 and type(ct) is Var and op in self.replayed:
            # (the most common: which arguments get a cotangent, as the loop below finds,
            # and the key of replay.key with them, flat)
            x, y = args
            if type(x) is Var and type(y) is Var and x.name not in inactive and y.name not in inactive:
                xt, yt = x.type, y.type  # (_arg_key of two variables, neither inactive, written out: its type's)
                kx, gx = id(xt), (_diff(xt.dtype) or DTYPE_DIFF[xt.dtype]) if type(xt) is Num else xt.differentiable
                ky, gy = id(yt), (_diff(yt.dtype) or DTYPE_DIFF[yt.dtype]) if type(yt) is Num else yt.differentiable
            else:
                kx, gx = _arg_key(x, inactive, self.cts)
                ky, gy = _arg_key(y, inactive, self.cts)
            gets = None  # ([gx, gy], made where it is read: not where the replay runs)
            if kx is None or ky is None:
                key = None
            else:
                cname = ct.name
                key = (op, rhs.params, id(t), id(ct.type), kx, ky, x is y, gx, gy, self.top,
                       not (gx and gy) and cname[:1] == "t" and cname[1:].isdigit())
        elif len(args) == 1 and type(ct) is Var and type(args[0]) is Var and op in self.replayed:
            (x,) = args  # (the next most common, as above)
            if x.name in inactive:
                kx, gx = _arg_key(x, inactive, self.cts)
            else:
                xt = x.type
                kx, gx = id(xt), (_diff(xt.dtype) or DTYPE_DIFF[xt.dtype]) if type(xt) is Num else xt.differentiable
            gets = None  # ([gx], as above)
            cname = ct.name
            key = (op, rhs.params, id(t), id(ct.type), kx, gx, self.top,
                   not gx and cname[:1] == "t" and cname[1:].isdigit())
        else:
            cts = self.cts  # which arguments get a cotangent
            gets = [_arg_key(a, inactive, cts)[1] for a in args]
            key = replay.key(rhs, out, ct) if op in self.replayed else None
            if key is not None:  # (see astad.ad.replay; what settle leaves depends on which arguments get one)
                cname = ct.name  # (and whether the cotangent, which a rule may give an argument, is a temporary)
                key = (key, *gets, self.top, False in gets and cname[:1] == "t" and cname[1:].isdigit())
        done = None
        if key is not None:
            done = self.replays.get(key)
            if done is None:
                if gets is None:
                    gets = [gx, gy] if len(args) == 2 else [gx]
                cname = ct.name
                key2 = (replay.by_value(rhs, out, ct), *gets, self.top,  # type: ignore[arg-type]
                        False in gets and cname[:1] == "t" and cname[1:].isdigit())
                done = self.by_value.get(key2)
                if done is not None:  # (the ids of the types the key holds stay theirs: they are kept)
                    self.replays[key] = done
                    self.pinned.append((out.type, ct.type, *[a.type for a in args]))
        if done is not None and self.naming and done.plans is not None:  # (named as it was recorded, too)
            done.run_named(self, [ct, out, *(args if primal is None else primal)], args)
            return
        if gets is None:
            gets = [gx, gy] if len(args) == 2 else [gx]
        binds = self.b.binds
        start = len(binds)
        recorded = None
        if done is not None:
            arg_cts = done.run(self.b, [ct, out, *args])  # (settled as it was recorded)
        else:
            if key is not None and key2 not in self.seen:  # (recorded the second time: most are seen once)
                self.seen.add(key2)
                key = None
            b = self.b if key is None else replay.Recorder(self.b, [ct, out, *args])
            try:
                arg_cts = vjp(b, rhs, out, ct)
            except rules.ShapeError as e:
                raise AstadTypeError(f"cannot differentiate {op}: {e}", bind.loc) from None
            end = len(binds)
            if end != start and self.top:  # (in a nested block: see own_block)
                for g, c in zip(gets, arg_cts):
                    if not g and type(c) is Var:  # a cotangent made that no argument gets
                        self.settle(args, arg_cts, start, end)
                        break
            if key is not None:
                recorded = b.replay(arg_cts, binds[start:])
                if recorded is not None:
                    self.replays[key] = self.by_value[key2] = recorded
                    self.pinned.append((out.type, ct.type, *[a.type for a in args]))
        if not self.naming:
            give = self.give
            for a, c in zip(args, arg_cts):
                give(a, c)
            return
        take = self.take
        if len(args) == 1:
            if gets[0]:
                take(args[0], arg_cts[0], start)
        else:
            kept = [a for a, g in zip(args, gets) if g]  # the arguments that get a cotangent
            given = [c for c, g in zip(arg_cts, gets) if g]  # their cotangents
            repeated = repeated_names(given) if len(given) > 1 else ()
            for a, c in zip(kept, given):
                take(a, c, start, repeated)
        if recorded is not None:
            recorded.named(recorded.plans_of(args, gets, arg_cts, self.cts, binds[start:]))

    def settle(self, args: tuple[Atom, ...], arg_cts: Sequence[Atom | None], start: int, end: int) -> None:
        """Of the bindings a VJP rule made (from ``start`` to ``end``), leave out those only the cotangents
        ``give`` drops read (of a literal, of an inactive value): dce would remove them, after the
        optimiser's first passes walked them.  The names they drew stay drawn, so the names of what
        follows do not change."""
        binds, inactive = self.b.binds, self.inactive
        needed = set()  # the names read: as cotangents give keeps (give's tests), by the bindings kept
        # the temporaries among those cotangents: a binding that reads one is kept, as fold's
        # name_cotangents names a temporary by the copy give makes of it only where nothing read it before
        given = set()
        for a, c in zip(args, arg_cts):
            if type(a) is Var and type(c) is Var and a.name not in inactive:
                t = a.type
                if (_diff(t.dtype) or DTYPE_DIFF[t.dtype]) if type(t) is Num else t.differentiable:
                    name = c.name
                    needed.add(name)
                    if name[:1] == "t" and name[1:].isdigit():  # (Namer.is_temp)
                        given.add(name)
        kept: list[Bind] = []
        for b in reversed(binds[start:end]):
            rhs = b.rhs
            if type(rhs) is not Prim:  # (what Builder.prim makes; anything else: all kept, as made)
                return
            targets = b.targets
            if targets[0].name not in needed and len(targets) == 1 and not _TABLE[rhs.op].effect:
                for x in rhs.args:
                    if type(x) is Var and x.name in given:
                        break
                else:
                    continue  # read by none but the cotangents give drops: left out
            kept.append(b)
            for x in rhs.args:
                if type(x) is Var:
                    needed.add(x.name)
        if len(kept) != end - start:
            kept.reverse()
            binds[start:end] = kept

    def rule_Dup(self, bind: Bind, rhs: Dup) -> None:
        v = rhs.var
        t = v.type
        if not ((_diff(t.dtype) or DTYPE_DIFF[t.dtype]) if type(t) is Num else t.differentiable):
            return
        cts = self.cts
        items = []
        for c in bind.targets:
            ct = cts.get(c.name)  # (ct_of, written out)
            items.append(Zero(ct_type(c.type)) if ct is None else ct)
        for c in items:
            if type(c) is not Zero:
                break
        else:
            self.give(v, None)  # no use gives it a cotangent: a zero (made later if it must be)
            return
        items = tuple(items)
        # (ct_type's common case written out: an array's cotangent has its type)
        total_t = t if type(t) is Num and (t.shape or not t.py) else ct_type(t, *items)
        namer = self.namer  # (Namer.temp, its common case written out: the next temporary's name, free)
        used, k = namer.used, namer.temps + 1
        if k < len(_TEMPS) and _TEMPS[k] not in used and namer.taken is used and namer.log is None \
                and namer.undo is None:
            name = _TEMPS[k]
            namer.temps = k
            used.add(name)
        else:
            name = namer.temp()
        b = self.b
        vname = v.name
        if self.naming and vname not in self.inactive:
            if total_t is t and type(t) is not FunT:  # (take's common case, written out: the sum named ``v_ct``,
                # the temporary's name drawn all the same; ct_name's common case written out, as run_named's)
                base, taken = vname + "_ct", self.taken
                if taken is not None and (vname[0] != "t" or "_" not in vname) and base not in taken \
                        and base.isascii():
                    taken.add(base)
                else:
                    base = self.ct_name(vname)
                named = self.cts[vname] = Var(base, t)
                b.binds.append(Bind((named,), Plus(items), b.loc))
                return
            total = Var(name, total_t)
            b.binds.append(Bind((total,), Plus(items), b.loc))
            self.take(v, total, len(b.binds) - 1)
        else:
            total = Var(name, total_t)
            b.binds.append(Bind((total,), Plus(items), b.loc))
            self.give(v, total)

    def rule_Plus(self, bind: Bind, rhs: Plus) -> None:
        """``plus`` (in a derivative differentiated again) is linear: each summand gets the sum's cotangent."""
        ct = self.ct_of(bind.targets[0])
        for a in rhs.items:
            self.give(a, None if isinstance(ct, Zero) else ct)

    def rule_Drop(self, bind: Bind, rhs: Drop) -> None:
        self.give(rhs.var, None)

    def rule_MakeTuple(self, bind: Bind, rhs: MakeTuple) -> None:
        (out,) = bind.targets
        ct = self.ct_of(out)
        if isinstance(ct, Zero):
            for a in rhs.items:
                self.give(a, None)
            return
        parts = tuple(Var(self.namer.temp(), a.type) for a in rhs.items)
        self.b.bind(parts, Unpack(ct))
        for a, p in zip(rhs.items, parts):
            self.give(a, p)

    def rule_Unpack(self, bind: Bind, rhs: Unpack) -> None:
        if self.calls and type(rhs.tup) is Var and rhs.tup.name in self.calls:
            return call_backward(self, bind, self.calls[rhs.tup.name])
        tup = Var(self.namer.temp(), rhs.tup.type)
        self.b.bind((tup,), MakeTuple(tuple(self.ct_of(t) for t in bind.targets)))
        self.give(rhs.tup, tup)

    def rule_Copy(self, bind: Bind, rhs: Copy) -> None:
        self.give(rhs.atom, self.ct_of(bind.targets[0]))

    def rule_If(self, bind: Bind, rhs: If) -> None:
        """The backward pass of an ``if`` is an ``if`` on the same condition: each
        branch runs its own backward pass from the cotangents of the joined
        values to those of the variables the branches read."""
        out_cts = tuple(self.ct_of(o) for o in bind.targets)
        inputs = [v for v in if_free_vars(rhs) if differentiable(v.type) and self.active(v)]
        if not inputs or all(isinstance(c, Zero) for c in out_cts):
            for v in inputs:
                self.give(v, None)
            return
        branches = [self.nested(block, out_cts, lambda: [self.ct_or_zeros(v) for v in inputs])
                    for block in (rhs.then, rhs.orelse)]
        joined = tuple(Var(self.namer.fresh(f"{v.name}_ct"), joined_ct_type(v.type)) for v in inputs)
        self.b.bind(joined, If(rhs.cond, branches[0], branches[1]))
        for v, j in zip(inputs, joined):
            self.cts[v.name] = j

    def rule_Loop(self, bind: Bind, rhs: Loop) -> None:
        """CHAD's iteration: the backward pass runs the iterations in reverse over the
        tape the forward pass recorded, carrying the cotangents of the loop's
        variables and accumulating those of what the body reads from outside."""
        outs = bind.targets[:len(rhs.carried)]
        carried = [i for i, c in enumerate(rhs.carried) if differentiable(c.type)
                   and (self.active(c) or not isinstance(self.ct_of(outs[i]), Zero))]
        inputs = [v for v in loop_free_vars(rhs) if differentiable(v.type) and self.active(v)]
        out_cts = [self.ct_of(outs[i]) for i in carried]
        if (not carried and not inputs) or all(isinstance(c, Zero) for c in out_cts):
            for a in (*rhs.init, *inputs):
                self.give(a, None)
            return
        assert rhs.tape is not None
        ct_params = [Var(self.namer.fresh(f"{rhs.carried[i].name}_ct"), rhs.carried[i].type) for i in carried]
        accs = [Var(self.namer.fresh(f"{v.name}_ct_sum"), ct_type(v.type)) for v in inputs]
        by_index = dict(zip(carried, ct_params))

        never: set[str] = set()  # inputs no iteration gives a cotangent: their sums are zero

        def next_cts() -> list[Atom]:  # the carried cotangents, and the sums over iterations
            new = [self.ct_or_zeros(rhs.carried[i]) for i in carried]
            never.update(v.name for v in inputs if isinstance(self.ct_of(v), Zero))
            for acc, v in zip(accs, inputs):
                total = Var(self.namer.temp(), ct_type(v.type))
                self.b.bind((total,), Plus((acc, self.ct_or_zeros(v))))
                new.append(total)
            return new

        start = tuple(by_index.get(i, Zero(c.type)) for i, c in enumerate(rhs.carried))
        body = self.nested(rhs.body, start, next_cts)
        init = [self.ct_or_zeros(outs[i]) if isinstance(c.type, ListT) or sized_at_run_time(c) else c
                for i, c in zip(carried, out_cts)] + [self.zeros(v) for v in inputs]
        targets = tuple(Var(self.namer.fresh(f"{p.name}_out"), joined_ct_type(p.type)) for p in ct_params) + tuple(
            Var(self.namer.fresh(f"{v.name}_ct"), joined_ct_type(v.type)) for v in inputs)
        self.b.bind(targets, LoopBack(rhs.tape, rhs.save, tuple(ct_params + accs), tuple(init), body))
        for i, t in zip(carried, targets):
            self.give(rhs.init[i], t)
        for v, t in zip(inputs, targets[len(carried):]):
            self.cts[v.name] = Zero(ct_type(v.type)) if v.name in never else t

    def rule_Lam(self, bind: Bind, rhs: Lam) -> None:
        """CHAD's λ (§7.2): the function's backward map, from the cotangent of its
        result to those of what it captures and of its parameters, is attached
        to it; the cotangent of what it captures is the sum, over the calls in
        its copower, of the captured part of that call's backward map."""
        (f,) = bind.targets
        captured = self.captured(rhs)
        back_ct = Var(self.namer.fresh(f"{f.name}_out_ct"), ct_type(rhs.body.result.type))
        back = self.own_block(rhs.body, lambda: back_ct,
                              lambda: [self.ct_or_zeros(v) for v in (*captured, *rhs.params)])
        self.backs[f.name] = replace(rhs, back=back, back_ct=back_ct, captured=captured)
        ct = self.ct_of(f)
        if isinstance(ct, Zero) or not captured:
            for v in lam_free_vars(rhs):
                self.give(v, None)
            return
        targets = tuple(Var(self.namer.fresh(f"{v.name}_ct"), ct_type(v.type)) for v in captured)
        self.b.bind(targets, CaseCopower(ct, f))
        for v, t in zip(captured, targets):
            self.cts[v.name] = t

    def rule_App(self, bind: Bind, rhs: App) -> None:
        """CHAD's application (ev, §7.2): the argument's cotangent is the call's
        backward map (at what the call recorded) applied to the result's; the
        function's cotangent is the copower ``!record ⊗ ct`` of this call."""
        y, record = bind.targets
        ct = self.ct_of(y)
        if isinstance(ct, Zero) or not differentiable(y.type):
            for a in (rhs.fn, *rhs.args):
                self.give(a, None)
            return
        if self.functions is None:  # (found once, when the first call is reached: most programs make none)
            assert self.forward is not None
            self.functions = function_values(self.forward)
        lam = self.functions[rhs.fn.type.name]  # type: ignore[union-attr]
        captured = tuple(Var(self.namer.fresh(f"{v.name}_ct"), ct_type(v.type)) for v in self.captured(lam))
        args = tuple(Var(self.namer.fresh(f"{p.name}_ct"), ct_type(p.type)) for p in lam.params)
        self.b.bind(captured + args, AppBack(rhs.fn, record, ct))
        copower = Var(self.namer.fresh(f"{rhs.fn.name}_ct"), CopowerT(rhs.fn.type))  # type: ignore[arg-type]
        self.b.bind((copower,), Copower(record, ct))
        self.cts[rhs.fn.name] = copower
        for a, c in zip(rhs.args, args):
            self.give(a, c)

    def nested(self, block: Block, result_cts: tuple[Atom, ...], inputs_cts: Callable[[], list[Atom]]) -> Block:
        """The backward pass of a branch or loop body as a block of its own: from the
        cotangents of the tuple it ends with to the tuple ``inputs_cts()`` builds."""
        def start() -> Atom:
            tup = Var(self.namer.temp(), block.result.type)
            self.b.bind((tup,), MakeTuple(result_cts))
            return tup

        return self.own_block(block, start, inputs_cts)

    def own_block(self, block: Block, result_ct: Callable[[], Atom], inputs_cts: Callable[[], list[Atom]]) -> Block:
        """The backward pass of ``block`` as a block of its own (a branch, a loop
        body, a function's body): from the cotangent ``result_ct()`` makes there to
        the tuple ``inputs_cts()`` builds."""
        saved = self.b.binds, self.cts, self.top, self.naming
        # (a nested block is folded otherwise than the top one (fold, then name_cotangents, where a
        # temporary a copy named is read after it): there the rules' bindings are left as made)
        self.b.binds, self.cts, self.top, self.naming = [], {}, False, False
        try:
            self.block(block, result_ct())
            items = inputs_cts()
            end = Var(self.namer.temp(), TupleT(tuple(a.type for a in items)))
            self.b.bind((end,), MakeTuple(tuple(items)))
            return Block(tuple(self.b.binds), end)
        finally:
            self.b.binds, self.cts, self.top, self.naming = saved

    def block(self, block: Block, result_ct: Atom, primal: Block | None = None) -> None:
        """The backward pass of a block, given the cotangent of its result: the
        bindings in reverse, each by the rule for its construct.  ``primal``: the
        block's ``structural.primal``, whose primitives' arguments the replayed rules read."""
        if isinstance(block.result, Var):
            self.cts[block.result.name] = result_ct
        b, rules_ = self.b, _RULES
        saved = b.loc  # (a rule's nested blocks leave it as they found it: set once per binding)
        if primal is None:
            for bind in reversed(block.binds):
                rhs = bind.rhs
                b.loc = bind.loc
                rules_[type(rhs)](self, bind, rhs)
        else:
            rule_prim = self.rule_Prim
            for bind, pb in zip(reversed(block.binds), reversed(primal.binds)):
                rhs = bind.rhs
                b.loc = bind.loc
                if type(rhs) is Prim:
                    rule_prim(bind, rhs, pb.rhs.args)
                else:
                    rules_[type(rhs)](self, bind, rhs)
        b.loc = saved

    def run(self, fn: Function) -> ReverseProgram:
        result = fn.body.result
        # (a temporary's copy, `t2_2`, is a temporary: a value an effect also reads, a tested power's)
        ct_name = f"{result.name}_ct" if isinstance(result, Var) and not Namer.is_temp(result.name.partition("_")[0]) \
            else "out_ct"
        ct_in = Var(self.namer.fresh(ct_name), result.type)
        made = kinds(fn.body)
        self.naming = NAME_COTANGENTS and "Lam" not in made
        # (a block of primitives alone: the forward block has them as they were, see structural.primal)
        primal = structural.primal(fn) if PRIMAL else None
        if not made.isdisjoint(_TAPED):  # (else with_tapes would make the same block again)
            fn = Function(fn.name, fn.params, with_tapes(fn.body, self.namer, self.active, self.calls))
            primal = None
        self.forward = fn.body
        self.block(fn.body, ct_in, primal)
        if primal is not None:
            primal.__dict__.setdefault("_kinds", made)  # (what it is made of: the same, binding for binding)
            fn = Function(fn.name, fn.params, primal)
        else:
            fn = Function(fn.name, fn.params, _with_backs(fn.body, self.backs))
        param_cts = tuple(
            self.ct_of(p) if differentiable(p.type) else Const.literal(None, literal_type(None)) for p in fn.params
        )
        grads = Var(self.namer.temp(), TupleT(tuple(a.type for a in param_cts)))
        self.b.bind((grads,), MakeTuple(param_cts))
        return ReverseProgram(fn.name, fn.params, fn.body, ct_in, Block(tuple(self.b.binds), grads))

    def captured(self, lam: Lam) -> tuple[Var, ...]:
        """What a function value captures that has a cotangent."""
        return tuple(v for v in lam_free_vars(lam) if differentiable(v.type) and self.active(v))


def _no_rule(macro: _Macro, bind: Bind, rhs: Any) -> None:
    raise InternalError(f"reverse macro: no rule for {type(rhs).__name__}")


#: a construct's class -> the macro's rule for it (a plain dict, as ``_VJPS``; every class of the IR's)
_RULES: dict[type, Callable[[_Macro, Bind, Any], None]] = {
    cls: getattr(_Macro, "rule_" + cls.__name__, _no_rule) for cls in get_args(Comp)}


def _always(a: Atom) -> bool:
    return True


def reverse(fn: Function, activity: Activity | None = None) -> ReverseProgram:
    """Apply the reverse macro to a function whose variables are each used exactly
    once; with ``activity`` (:func:`astad.ad.activity.analyse`), only its active
    values get cotangents."""
    _vjps_of_table()
    return _Macro(fn, activity).run(fn)


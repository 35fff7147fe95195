"""VJP rule applications replayed: a rule applied to arguments of the same types (and literals of the
same values) as an earlier application of the same primitive makes the same bindings, up to the atoms
it reads, so the reverse macro records what the first application made (:class:`Recorder`) and makes
the bindings of the others from that record (:meth:`Replay.run`): no rule runs again, no type is
inferred again, no ``Memo`` is asked.

Only the primitives of ``REPLAYED`` are replayed: rules that read of their application only the types
of its arguments, result and cotangent, the values of its literal arguments and its parameters (what
the key of :func:`key` holds), which arguments are the same atom, and that build with ``b.prim`` and
``b.const`` alone.  A rule that reads anything else (an atom the record cannot name) is not recorded.
The names drawn are those the rule draws, in the same order, so the program is the same.
"""

from __future__ import annotations

from typing import Any, Sequence

from ..ir import Atom, Bind, Const, CopowerT, FunT, Prim, Var, Zero
from ..ir.types import FROZEN_NODES
from ..names import _TEMPS
from .builder import Builder

#: the primitives whose VJP rules are replayed (see the module's docstring)
REPLAYED = frozenset({"add", "sub", "mul", "div", "neg", "exp", "log", "sin", "cos", "tan", "tanh", "sqrt", "abs",
                      "maximum", "minimum", "where", "pow", "power", "matmul", "sum"})

#: how ``Replay.plans_of`` says a cotangent was named
ZERO, ALIAS, RENAME = "zero", "alias", "rename"

#: whether the macro replays rule applications (tests turn it off: the program is the same)
REPLAY = True

#: how ``Replay.run_named`` makes the IR's nodes of the bindings it makes (three a binding, most of the
#: macro's): ``object.__new__``, each field then set where it is made (the fields of Var, Prim and Bind, all of
#: them: tests/test_speed_s14_rev.py checks), not by calling the class (type_call, slot_tp_init and a frame for
#: ``fast_init``'s ``__init__``: ~1,000 instructions a node, this ~400).  None with ``ASTAD_FROZEN_IR=1``, whose
#: nodes' ``__setattr__`` raises: there the classes are called (``_emit``).
_NEW = None if FROZEN_NODES else object.__new__


def by_value(p: Prim, out: Var, ct: Var) -> tuple:
    """:func:`key` with the types themselves (equal types, one key: the rule reads only what they hold)."""
    return (p.op, p.params, out.type, ct.type, *[a.type if type(a) is Var else a.key for a in p.args],
            *[(i, j) for i, a in enumerate(p.args) for j in range(i) if p.args[j] is a])


def key(p: Prim, out: Var, ct: Atom) -> tuple | None:
    """What the VJP rule of ``p`` may read of its application (None where it is not replayed): the
    primitive, its parameters, the type objects (by their ids: the macro keeps them) of its result, its
    cotangent and its variable arguments, the key of each literal argument (its value) and which
    arguments are the same atom."""
    if type(ct) is not Var:
        return None
    args = p.args
    if len(args) == 2:  # (the most common: written out)
        x, y = args
        cls = type(x)
        kx = id(x.type) if cls is Var else x.key if cls is Const and x.name is None else None
        cls = type(y)
        ky = id(y.type) if cls is Var else y.key if cls is Const and y.name is None else None
        if kx is None or ky is None:
            return None
        return (p.op, p.params, id(out.type), id(ct.type), kx, ky, x is y)
    parts: list[Any] = [p.op, p.params, id(out.type), id(ct.type)]
    for i, a in enumerate(args):
        cls = type(a)
        if cls is Var:
            parts.append(id(a.type))
        elif cls is Const and a.name is None:
            parts.append(a.key)
        else:
            return None
        for j in range(i):
            if args[j] is a:
                parts.append(("same", j, i))
    return tuple(parts)


class Recorder:
    """A builder that makes what the macro's builder ``b`` makes and records it, each atom by its place:
    0 the cotangent, 1 the result, 2... the arguments, then the literals the rule made itself, then the
    results of the bindings made, in turn."""

    def __init__(self, b: Builder, atoms: Sequence[Atom]) -> None:
        self.b = b
        self.refs: dict[int, tuple[str, int]] = {}
        for i, a in enumerate(atoms):
            self.refs.setdefault(id(a), ("atom", i))
        self.atoms = len(atoms)
        self.made: list[Var] = []
        self.consts: list[Const] = []
        self.ops: list[tuple[str, list, tuple, Any]] = []
        self.binds: list[Bind] = []  # the bindings made
        self.ok = True

    def prim(self, op: str, *args: Atom, **params: Any) -> Atom:
        v = self.b.prim(op, *args, **params)
        made = self.b.binds[-1]
        self.binds.append(made)
        self.ops.append((op, [self.ref(a) for a in args], made.rhs.params, v.type))
        self.refs[id(v)] = ("made", len(self.made))
        self.made.append(v)
        return v

    def const(self, value: Any) -> Const:
        return self.b.const(value)

    def ref(self, a: Atom | None) -> Any:
        if a is None:
            return None
        r = self.refs.get(id(a))
        if r is None:
            if type(a) is not Const:
                self.ok = False  # an atom the record cannot name
                return ("atom", 0)
            r = self.refs[id(a)] = ("const", len(self.consts))
            self.consts.append(a)
        return r

    def replay(self, results: Sequence[Atom | None], left: Sequence[Bind]) -> "Replay | None":
        """The record, given the cotangents the rule gave and the bindings ``left`` of those it made (what
        the macro's ``settle`` left: the others are not made again, their names drawn all the same)."""
        refs = [self.ref(c) for c in results]
        if not self.ok:
            return None
        base = {"atom": 0, "const": self.atoms, "made": self.atoms + len(self.consts)}

        def at(r: Any) -> int:
            return -1 if r is None else base[r[0]] + r[1]

        self.at = at  # (plans_of's)
        kept = {id(bd) for bd in left}
        ops = tuple((op if id(bd) in kept else None, len(rs), at(rs[0]) if rs else -1,
                     at(rs[1]) if len(rs) > 1 else -1, tuple(at(r) for r in rs), ps, t, -1)
                    for (op, rs, ps, t), bd in zip(self.ops, self.binds))
        return Replay(ops, tuple(at(r) for r in refs), tuple(self.consts), self)


class Replay:
    """What one application of a rule made (see :class:`Recorder`), made again for other atoms."""

    def __init__(self, ops: tuple, results: tuple, consts: tuple, recorder: Recorder | None) -> None:
        self.ops, self.results, self.consts = ops, results, consts
        self.recorder = recorder  # (until plans_of has run)
        # the place in ``vals`` (see run) of the first binding's result: after the atoms and the literals
        self.first_made = (recorder.atoms if recorder is not None else 0) + len(consts)
        #: how the macro named each cotangent (see plans_of), or None: named by the macro as it is made
        self.plans: tuple | None = None

    def plans_of(self, args: Sequence[Atom], gets: Sequence[bool], cts: Sequence[Atom | None],
                 named: dict[str, Atom], made: Sequence[Bind]) -> tuple | None:
        """How the macro's ``take`` named the cotangent of each argument that gets one, given the cotangents
        ``cts`` the rule gave, the macro's cotangents ``named`` after ``take`` and the bindings ``made``:
        ``(i, ZERO)``; ``(i, ALIAS, place)``, the atom there taken as it is; ``(i, RENAME, op, type)``,
        the binding of the op-th binding recorded named; None where any is named otherwise (a copy, a
        conversion): then ``take`` names them again."""
        rec, self.recorder = self.recorder, None
        assert rec is not None
        plans = []
        for i, (a, g, c) in enumerate(zip(args, gets, cts)):
            if not g:
                continue
            if c is None or type(c) is Zero:
                plans.append((i, ZERO))
                continue
            r = rec.refs.get(id(c))
            now = named.get(a.name)  # type: ignore[union-attr]
            if r is None:
                return None
            if now is c:
                plans.append((i, ALIAS, rec.at(r)))
                continue
            if r[0] != "made" or type(now) is not Var:
                return None
            rhs = rec.binds[r[1]].rhs
            if not any(bd.rhs is rhs and bd.targets[0] is now for bd in made):
                return None
            plans.append((i, RENAME, rec.at(r), now.type))
        return tuple(plans)

    def named(self, plans: tuple | None) -> tuple | None:
        """``plans`` (of ``plans_of``), kept with what ``run_named`` reads of them: the arguments whose cotangent
        is a zero (``zeros``), those whose cotangent's name is drawn, in the order of the plans (``drawn``),
        which of those an atom there names (``aliases``: (its index in ``drawn``, the place)) and the
        recorded bindings, each with the index in ``drawn`` of the argument whose cotangent it makes (-1:
        none) and that cotangent's type (``named_ops``)."""
        self.plans = plans
        if plans is None:
            return None
        zeros, drawn, aliases, renamed = [], [], [], {}
        for plan in plans:
            if plan[1] is ZERO:
                zeros.append(plan[0])
                continue
            if plan[1] is ALIAS:
                aliases.append((len(drawn), plan[2]))
            else:
                renamed[plan[2]] = (len(drawn), plan[3])
            drawn.append(plan[0])
        self.zeros, self.drawn, self.aliases = tuple(zeros), tuple(drawn), tuple(aliases)
        at = self.first_made
        ops = []
        for k, (op, n, r0, r1, refs, ps, t, _) in enumerate(self.ops):
            j, rt = renamed.get(at + k, (-1, t))
            ops.append((op, n, r0, r1, refs, ps, rt, j))
        self.named_ops = tuple(ops)
        return plans

    def run_named(self, macro: Any, vals: list[Atom | None], args: Sequence[Atom]) -> None:
        """``run``, with the cotangents named as ``plans`` says (see ``plans_of``), into the macro's.
        (``macro.ct_name``'s common case written out, and ``_emit``'s: this runs for most primitives.)"""
        cts = macro.cts
        for i in self.zeros:
            a = args[i]
            t = a.type
            cts[a.name] = Zero(CopowerT(t) if type(t) is FunT else t)  # (take's)
        taken = macro.taken
        drawn = self.drawn
        bases = []
        for i in drawn:  # its cotangent's name drawn, as take draws it (ct_name)
            name = args[i].name  # type: ignore[union-attr]
            base = name + "_ct"
            if taken is not None and (name[0] != "t" or "_" not in name) and base not in taken and base.isascii():
                taken.add(base)
            else:
                base = macro.ct_name(name)
            bases.append(base)
        b = macro.b
        namer = b.namer
        used = namer.used
        if namer.taken is not used or namer.log is not None or _NEW is None:
            self._emit(b, vals, self.named_ops, (cts, args, drawn, bases))
        else:  # (_emit, its names drawn as Namer.temp draws them, written out)
            if self.consts:
                vals += self.consts
            binds, loc, append = b.binds, b.loc, vals.append
            k, size = namer.temps, len(_TEMPS)
            for op, n, r0, r1, refs, ps, t, j in self.named_ops:
                k += 1
                while k < size and _TEMPS[k] in used:
                    k += 1
                if k < size:
                    name = _TEMPS[k]
                    used.add(name)
                else:
                    namer.temps = k - 1
                    name = namer.temp()
                    k, size = namer.temps, len(_TEMPS)
                if op is None:  # (one settle left out: its name drawn, as the rule drew it)
                    append(None)
                    continue
                # (the nodes made by _NEW, each field set here: Var(name, t), Prim(op, args, ps), Bind((v,), p, loc))
                v = _NEW(Var)
                if j < 0:
                    v.name = name
                else:  # (the cotangent of the argument drawn j-th, its name drawn above)
                    v.name = bases[j]
                    cts[args[drawn[j]].name] = v  # type: ignore[union-attr]
                v.type = t
                p = _NEW(Prim)
                p.op, p.params = op, ps
                p.args = (vals[r0], vals[r1]) if n == 2 else (vals[r0],) if n == 1 else tuple([vals[r] for r in refs])
                bd = _NEW(Bind)
                bd.targets, bd.rhs, bd.loc = (v,), p, loc
                binds.append(bd)
                append(v)
            namer.temps = k
        for j, r in self.aliases:
            cts[args[drawn[j]].name] = vals[r]  # type: ignore[union-attr]

    def _emit(self, b: Builder, vals: list[Atom | None], ops: tuple, named: tuple | None = None) -> None:
        """The recorded bindings, made with ``b`` (names drawn as ``Builder.prim`` draws them), each result
        appended to ``vals``."""
        if self.consts:
            vals += self.consts
        binds, loc, namer = b.binds, b.loc, b.namer
        used = namer.used
        plain = namer.taken is used and namer.log is None
        append, size = vals.append, len(_TEMPS)
        for op, n, r0, r1, refs, ps, t, j in ops:
            k = namer.temps + 1
            if plain:  # (Namer.temp, written out: the next temporary not used)
                while k < size and _TEMPS[k] in used:
                    k += 1
            if plain and k < size:
                name = _TEMPS[k]
                namer.temps = k
                used.add(name)
            else:
                name = namer.temp()
                size = len(_TEMPS)
            if op is None:  # (one settle left out: its name drawn, as the rule drew it)
                append(None)
                continue
            if j < 0:
                v = Var(name, t)
            else:  # (the cotangent of the argument drawn j-th, its name drawn as run_named drew it)
                cts, args, drawn, bases = named  # type: ignore[misc]
                v = cts[args[drawn[j]].name] = Var(bases[j], t)
            binds.append(Bind((v,), Prim(op, (vals[r0], vals[r1]) if n == 2 else (vals[r0],) if n == 1 else
                                         tuple([vals[r] for r in refs]), ps), loc))
            append(v)

    def run(self, b: Builder, vals: list[Atom | None]) -> list[Atom | None]:
        """The bindings, made with ``b`` (names drawn as ``Builder.prim`` draws them), and the cotangents
        (``vals``: the cotangent, the result and the arguments, as ``Recorder``'s ``atoms``)."""
        self._emit(b, vals, self.ops)
        results = self.results
        if len(results) == 2:
            r0, r1 = results
            return [None if r0 < 0 else vals[r0], None if r1 < 0 else vals[r1]]
        return [None if r < 0 else vals[r] for r in results]

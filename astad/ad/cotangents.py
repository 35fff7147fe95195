"""The cotangents of the reverse macro (:mod:`astad.ad.reverse`): their types, where they are kept and how
they are named.

:class:`Cotangents` holds the cotangent of each variable of the block being differentiated (``cts``:
a variable's name -> its cotangent, a :class:`Zero` where it has none) and the builder the rules make
bindings with.  A rule gives each argument of the construct it differentiates its cotangent
(:meth:`Cotangents.give`, or :meth:`Cotangents.take` at the top level, which names the binding that
made it ``a_ct`` rather than copying it); a variable used once gets one from its single use.  The
rules themselves, one per construct, are :mod:`astad.ad.reverse`'s.
"""

from __future__ import annotations

from typing import Any

from .. import rules
from ..ir import Atom, Bind, Comp, Const, Copy, CopowerT, FunT, ListT, Num, Prim, Type, Var, Zero, vars_of
from ..ir.types import DIFFERENTIABLE_DTYPE
from ..names import Namer
from .builder import Builder


def sized_at_run_time(a: Atom) -> bool:
    """A zero whose shape is known only at run time: it is made like its primal."""
    return isinstance(a, Zero) and isinstance(a.type, Num) and None in a.type.shape


def differentiable(t: Type) -> bool:
    """Whether a value of type ``t`` has a derivative."""
    return bool(t.differentiable)


def joined_ct_type(t: Type) -> Type:
    """The cotangent of a Python float that comes out of a branch or a loop may
    be a numpy scalar (from one path): typed so, it is made a float when returned."""
    return Num((), t.dtype, py=False) if isinstance(t, Num) and t.py and not t.shape else ct_type(t)


def ct_type(t: Type, *cts: Atom) -> Type:
    """The type of a cotangent of a ``t`` computed from ``cts``: a numpy scalar
    flowing to a Python float stays one (``finish`` makes it a float when returned);
    that of a function value is a copower."""
    cls = type(t)  # (the types have no subclasses)
    if cls is FunT:
        return CopowerT(t)
    if cls is Num and t.py and not t.shape:  # (a loop, not any() of a generator: this runs for every cotangent)
        for c in cts:
            ct = c.type
            if type(ct) is Num and not ct.py:
                return Num((), t.dtype, py=False)  # as joined_ct_type
    return t


class Cotangents:
    """The cotangents of the variables of the block being differentiated, made and named with ``b``."""

    def __init__(self, namer: Namer, inactive: frozenset[str]) -> None:
        # (``give``'s test, which runs for every argument: the names the analysis saw and found inactive)
        self.inactive = inactive
        self.namer = namer
        # (the names taken where ``named_ct`` may add one itself, as Namer.fresh would; else None)
        self.taken: set[str] | None = namer.taken if namer.used is namer.taken and namer.log is None else None
        self.b = Builder(namer)
        self.cts: dict[str, Atom] = {}

    def ct_of(self, v: Var) -> Atom:
        ct = self.cts.get(v.name)  # (the zero made only when there is none)
        return Zero(ct_type(v.type)) if ct is None else ct

    def give(self, a: Atom, ct: Atom | None) -> bool:
        """Record the cotangent flowing to atom ``a`` (named ``a_ct`` in the target IR).  True where
        ``a`` gets none whatever ``ct`` is (a literal, a value without a derivative, an inactive one)."""
        if type(a) is not Var:  # (`type(...) is`, and ct_type written out: this runs for every argument)
            return True
        t = a.type
        cls = type(t)
        if cls is Num:
            if not DIFFERENTIABLE_DTYPE[t.dtype]:
                return True
        elif not t.differentiable:
            return True
        name = a.name
        if ct is None or type(ct) is Zero or name in self.inactive:
            self.cts[name] = Zero(CopowerT(t) if cls is FunT else t)  # ct_type(t)
            return name in self.inactive
        ct, named = self.named_ct(a, ct)
        b = self.b
        b.binds.append(Bind((named,), Copy(ct), b.loc))
        self.cts[name] = named
        return False

    def named_ct(self, a: Var, ct: Atom) -> tuple[Atom, Var]:
        """The cotangent ``ct`` of ``a`` (a variable with a derivative) in its value's dtype, and the
        variable naming it (``a_ct``), its name drawn."""
        t = a.type
        cls = type(t)
        name = a.name
        ct_t: Type = t
        if cls is Num:
            c_t = ct.type
            if c_t is not t and type(c_t) is Num:
                if c_t.dtype != t.dtype and DIFFERENTIABLE_DTYPE[c_t.dtype] and not t.dtype.startswith("complex"):
                    # a cotangent has its value's dtype (as JAX's): that of a float32 operand of a float64
                    # product is computed in float64 and rounded to float32 here, once
                    ct = self.b.prim("convert_float", ct, dtype=t.dtype, py=False)
                    if t.py and not t.shape:
                        ct_t = Num(t.shape, t.dtype)
                elif t.py and not t.shape and not c_t.py:
                    ct_t = Num((), t.dtype, py=False)
        elif cls is FunT:
            ct_t = CopowerT(t)
        return ct, Var(self.ct_name(name), ct_t)

    def ct_name(self, name: str) -> str:
        """The name of the cotangent of the variable ``name`` (``name_ct``), drawn."""
        # (Namer.fresh, its common case written out: ``name_ct`` not taken yet)
        base = name + "_ct"
        if name[0] == "t" and "_" in name and Namer.is_temp(name.partition("_")[0]):
            base = name.partition("_")[0] + "_ct"  # a temporary's copy (`t2_2`, a tested power's): `t2_ct`
        taken = self.taken
        if taken is not None and base not in taken and base.isascii():
            taken.add(base)
            return base
        return self.namer.fresh(base)

    def take(self, a: Var, ct: Atom | None, start: int, repeated: Any = ()) -> None:
        """``give`` at the top level, of a variable that gets a cotangent, without the copy ``let a_ct = ct``
        that ``give`` makes and the optimiser's fold and ``name_cotangents`` remove: where ``ct`` is a temporary
        the bindings from ``start`` made that none of them reads (nor gives to another argument: ``repeated``,
        the names of those given to more than one), its binding is named ``a_ct``; any other variable is taken
        as it is.  The program after the fold is the same, with fewer bindings before it."""
        if ct is None or type(ct) is Zero:
            t = a.type
            self.cts[a.name] = Zero(CopowerT(t) if type(t) is FunT else t)  # ct_type(t)
            return
        made, named = self.named_ct(a, ct)
        if type(made) is Var:
            binds = self.b.binds
            j = len(binds) - 1
            if made is not ct:  # a conversion just made, read nowhere else
                bd = binds[j]
                binds[j] = Bind((named,), bd.rhs, bd.loc)
                self.cts[a.name] = named
                return
            if ct.name not in repeated:
                while j >= start:  # (its binding is among the last: a VJP rule returns what it made last)
                    bd = binds[j]
                    if bd.targets[0] is ct:
                        binds[j] = Bind((named,), bd.rhs, bd.loc)
                        self.cts[a.name] = named
                        return
                    rhs = bd.rhs
                    if type(rhs) is Prim:
                        for x in rhs.args:
                            if x is ct:
                                j = start  # read after it is made: taken as it is (the walk ends)
                                break
                    elif _reads(rhs, ct.name):
                        break
                    j -= 1
            t = ct.type
            if t is named.type or t == named.type:
                self.cts[a.name] = ct
                return
        b = self.b
        b.binds.append(Bind((named,), Copy(made), b.loc))
        self.cts[a.name] = named


    def ct_or_zeros(self, v: Var) -> Atom:
        """The cotangent of ``v`` leaving a branch or loop body: a zero whose size is
        known only at run time (a list, an array of run-time length) is made
        like ``v``; other zeros stay symbolic (and are folded away)."""
        ct = self.ct_of(v)
        t = v.type
        if isinstance(t, ListT) or (isinstance(t, Num) and None in t.shape):
            return self.zeros(v) if isinstance(ct, Zero) else self.b.prim("or_zeros_like", ct, v)
        return ct

    def zeros(self, v: Var) -> Atom:
        """A real zero to start accumulating a cotangent in."""
        if isinstance(v.type, Num) and not v.type.shape:
            t = v.type
            return rules.zeros_of(self.b, v) if t.differentiable and not t.py else Const.literal(0.0, t)
        if isinstance(v.type, ListT):
            return self.b.prim("list_zeros_like", v)
        if isinstance(v.type, FunT):
            return Zero(CopowerT(v.type))  # the empty copower
        return self.b.prim("zeros_like", v)


def repeated_names(cts: list[Atom | None]) -> Any:
    """The names of the variables among ``cts`` that are there more than once."""
    names = [c.name for c in cts if type(c) is Var]
    return () if len(set(names)) == len(names) else {n for n in names if names.count(n) > 1}


def _reads(rhs: Comp, name: str) -> bool:
    """Whether ``rhs`` reads the variable ``name``."""
    if type(rhs) is Prim:
        for x in rhs.args:
            if type(x) is Var and x.name == name:
                return True
        return False
    return any(v.name == name for v in vars_of(rhs))

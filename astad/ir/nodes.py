"""The nodes of the IR: atoms, computations, bindings, blocks, functions and
the reverse macro's two-block programs.

A small typed λ-calculus in A-normal form.  A :class:`Block` is a sequence of
:class:`Bind` (``let targets = rhs``) followed by a result atom.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Union

import numpy as np

from .types import Num, Type, fast_init


# --------------------------------------------------------------------------- atoms


# (``fast_init``: the classes every pass makes by the thousand are made without ``object.__setattr__`` per field)


@fast_init
@dataclass(frozen=True, slots=True)
class Var:
    name: str
    type: Type = field(compare=False)

    def __str__(self) -> str:
        return self.name


@fast_init
@dataclass(frozen=True, slots=True)
class Const:
    """A constant.  ``name`` is set for a module-level constant of the user's,
    which generated code refers to by that name; otherwise it is a literal."""

    value: Any = field(compare=False)
    type: Type = field(compare=False)
    name: str | None = None
    key: Any = None  # identity for comparison of literals

    @staticmethod
    def literal(value: Any, type: Type) -> "Const":
        return Const(value, type, None, ("lit", repr(value), str(type)))

    @staticmethod
    def integer(n: int) -> "Const":
        """A Python int literal, its value known when transforming (a size, an axis, a count)."""
        return Const.literal(n, Num((), "int64", py=True, value=n))

    def __str__(self) -> str:
        return self.name if self.name is not None else repr(self.value)


@fast_init
@dataclass(frozen=True, slots=True)
class Zero:
    """The statically-zero cotangent of a type: never materialised unless it
    has to be returned or combined with something non-zero."""

    type: Type

    def __str__(self) -> str:
        return f"zero[{self.type}]"


Atom = Union[Var, Const, Zero]


# --------------------------------------------------------------------------- computations


@fast_init
@dataclass(frozen=True, slots=True)
class Prim:
    """An application of a primitive from the table in :mod:`astad.rules`.
    ``params`` are static (hashable) parameters such as ``axis``."""

    op: str
    args: tuple[Atom, ...]
    params: tuple[tuple[str, Any], ...] = ()

    def param(self, name: str, default: Any = None) -> Any:
        for k, v in self.params:
            if k == name:
                return v
        return default

    def __str__(self) -> str:
        ps = "".join(f", {k}={v!r}" for k, v in self.params)
        return f"{self.op}({', '.join(map(str, self.args))}{ps})"


@fast_init
@dataclass(frozen=True, slots=True)
class MakeTuple:
    items: tuple[Atom, ...]

    def __str__(self) -> str:
        return "(" + ", ".join(map(str, self.items)) + ("," if len(self.items) == 1 else "") + ")"


@fast_init
@dataclass(frozen=True, slots=True)
class Unpack:
    """``let (a, b, ...) = t``: split a tuple into its components."""

    tup: Atom

    def __str__(self) -> str:
        return f"unpack {self.tup}"


@fast_init
@dataclass(frozen=True, slots=True)
class Dup:
    """Contraction made explicit: ``let (x_1, ..., x_n) = dup x``."""

    var: Var

    def __str__(self) -> str:
        return f"dup {self.var}"


@fast_init
@dataclass(frozen=True, slots=True)
class Drop:
    """Weakening made explicit: ``drop x`` ends a variable that is not used."""

    var: Var

    def __str__(self) -> str:
        return f"drop {self.var}"


@fast_init
@dataclass(frozen=True, slots=True)
class Plus:
    """Cotangent addition (the monoid that ``dup`` is mapped to)."""

    items: tuple[Atom, ...]

    def __str__(self) -> str:
        return "plus(" + ", ".join(map(str, self.items)) + ")"


@fast_init
@dataclass(frozen=True, slots=True)
class Copy:
    """``let y = x``: an alias (produced by the AD macro, removed by the optimiser)."""

    atom: Atom

    def __str__(self) -> str:
        return str(self.atom)


@fast_init
@dataclass(frozen=True, slots=True)
class If:
    """``let (y_1, ..., y_k) = if cond then A else B``: CHAD's sum-type
    elimination on a boolean.  Each branch block ends in a tuple of the k joined
    values; the variables a branch reads from outside are its free variables."""

    cond: Atom
    then: "Block"
    orelse: "Block"

    def __str__(self) -> str:
        return f"if {self.cond}"


@fast_init
@dataclass(frozen=True, slots=True)
class Loop:
    """``let (c_1, ..., c_k) = for index in range(*bounds) from init: body``:
    iteration with loop-carried state.  The body's inputs are ``index`` and the
    ``carried`` variables; it ends in the tuple of their next values.  In the
    target IR a loop also records, per iteration, the values its backward pass
    needs (``save``) on a ``tape``, bound as its last target."""

    bounds: tuple[Atom, ...]
    index: Var | None  # None: a ``while`` loop, which runs while its last carried value is true
    carried: tuple[Var, ...]
    init: tuple[Atom, ...]
    body: "Block"
    save: tuple[Var, ...] = ()
    tape: Var | None = None

    @property
    def inputs(self) -> tuple[Var, ...]:
        """The body's inputs: the index (for ``for``) and the carried variables."""
        return self.carried if self.index is None else (self.index, *self.carried)

    def __str__(self) -> str:
        saved = f" saving ({', '.join(v.name for v in self.save)}) on {self.tape}" if self.tape else ""
        head = f"while {self.carried[-1]}" if self.index is None else \
            f"for {self.index} in range({', '.join(map(str, self.bounds))})"
        return f"{head} from ({', '.join(f'{c}={i}' for c, i in zip(self.carried, self.init))}){saved}"


@fast_init
@dataclass(frozen=True, slots=True)
class LoopBack:
    """The backward pass of a loop: over the ``tape`` in reverse, each
    iteration's ``saved`` values bound again; ``params`` (cotangents of the
    carried values, and accumulators for the cotangents of what the body reads
    from outside) start from ``init`` and are updated by ``body``."""

    tape: Var
    saved: tuple[Var, ...]
    params: tuple[Var, ...]
    init: tuple[Atom, ...]
    body: "Block"

    def __str__(self) -> str:
        return (f"for ({', '.join(v.name for v in self.saved)}) in reversed({self.tape}) from "
                f"({', '.join(f'{c}={i}' for c, i in zip(self.params, self.init))})")


@fast_init
@dataclass(frozen=True, slots=True)
class Lam:
    """``let f = lam (z_1, ..., z_n) body``: a function value; the variables its
    body reads from outside are what it captures.  In the target IR each call
    records ``save`` (the values the backward map needs: residuals, not a
    closure), and ``back`` is the backward map of one call: given those values
    and the cotangent ``back_ct`` of the result, the cotangents of the captured
    variables (``captured``) and of the parameters."""

    params: tuple[Var, ...]
    body: "Block"
    save: tuple[Var, ...] = ()
    back: "Block | None" = None
    back_ct: Var | None = None
    captured: tuple[Var, ...] = ()

    def __str__(self) -> str:
        saved = f" recording ({', '.join(v.name for v in self.save)})" if self.save else ""
        return f"lam ({', '.join(f'{p.name}: {p.type}' for p in self.params)}){saved} ="


@fast_init
@dataclass(frozen=True, slots=True)
class App:
    """``let y = f(a_1, ..., a_n)``: a call of a function value.  In the target IR
    the call also binds its record (what its backward map needs) as its last target."""

    fn: Var
    args: tuple[Atom, ...]

    def __str__(self) -> str:
        return f"{self.fn}({', '.join(map(str, self.args))})"


@fast_init
@dataclass(frozen=True, slots=True)
class AppBack:
    """The backward map of one call of ``fn``, at the values the call recorded,
    applied to the cotangent of its result: the cotangents of what ``fn``
    captures, then of its arguments."""

    fn: Var
    record: Var
    ct: Atom

    def __str__(self) -> str:
        return f"{self.fn}.back({self.record}, {self.ct})"


@fast_init
@dataclass(frozen=True, slots=True)
class Copower:
    """``!r ⊗ ct``: the cotangent of a function value from one call: the call's
    record with the cotangent of its result.  Copowers add by concatenation."""

    record: Var
    ct: Atom

    def __str__(self) -> str:
        return f"!{self.record} ⊗ {self.ct}"


@fast_init
@dataclass(frozen=True, slots=True)
class CaseCopower:
    """``case c of !r ⊗ ct -> ...``: the cotangents of what ``fn`` captures, summed
    over the calls in the copower ``c``: each call's backward map, at its record."""

    copower: Atom
    fn: Var

    def __str__(self) -> str:
        return f"case {self.copower} of !r ⊗ ct -> captured part of {self.fn}.back(r, ct), summed"


Comp = Union[Prim, MakeTuple, Unpack, Dup, Drop, Plus, Copy, If, Loop, LoopBack, Lam, App, AppBack, Copower,
             CaseCopower]


def nested_blocks(rhs: Comp) -> tuple["Block", ...]:
    cls = type(rhs)  # (no class of the IR has subclasses)
    if cls not in _NESTING:  # (the most common: one test)
        return ()
    if cls is If:
        return (rhs.then, rhs.orelse)
    if cls is Loop or cls is LoopBack or cls is Lam:
        return (rhs.body,)
    return ()


#: the constructs with blocks inside
_NESTING = frozenset({If, Loop, LoopBack, Lam})


def trip_count(loop: "Loop") -> int | None:
    """How often a ``for`` loop runs, when its bounds are known when transforming."""
    if loop.index is None:
        return None
    bounds = [a.value if isinstance(a, Const) else getattr(a.type, "value", None) for a in loop.bounds]
    if any(not isinstance(v, (int, np.integer)) or isinstance(v, bool) for v in bounds):
        return None
    return len(range(*(int(v) for v in bounds)))


# --------------------------------------------------------------------------- bindings, blocks, programs


@fast_init
@dataclass(frozen=True, slots=True)
class Loc:
    """A position in the user's source: file, 1-based line and column."""

    file: str
    line: int
    col: int
    text: str = ""


@fast_init
@dataclass(frozen=True, slots=True)
class Bind:
    targets: tuple[Var, ...]
    rhs: Comp
    loc: Loc | None = field(default=None, compare=False)

    def __str__(self) -> str:
        if not self.targets:
            return str(self.rhs)
        lhs = self.targets[0].name if len(self.targets) == 1 and not isinstance(self.rhs, (Unpack, Dup, If, Loop, LoopBack, AppBack, CaseCopower)) else (
            "(" + ", ".join(t.name for t in self.targets) + ")"
        )
        return f"let {lhs} = {self.rhs}"


@dataclass(frozen=True)
class Block:
    binds: tuple[Bind, ...]
    result: Atom

    def pretty(self, indent: str = "  ", mark: "Callable[[Bind], str] | None" = None) -> str:
        """The block, one binding a line; ``mark(b)`` is appended to each (a comment, say)."""
        lines = []
        for b in self.binds:
            lines.append(indent + str(b) + (mark(b) if mark is not None else ""))
            if isinstance(b.rhs, If):
                lines += [indent + "then", b.rhs.then.pretty(indent + "  ", mark),
                          indent + "else", b.rhs.orelse.pretty(indent + "  ", mark)]
            elif isinstance(b.rhs, (Loop, LoopBack)):
                lines += [indent + "do", b.rhs.body.pretty(indent + "  ", mark)]
            elif isinstance(b.rhs, Lam):
                lines += [b.rhs.body.pretty(indent + "  ", mark)]
                if b.rhs.back is not None and b.rhs.back_ct is not None:
                    lines += [indent + f"backward ({b.rhs.back_ct.name}) =", b.rhs.back.pretty(indent + "  ", mark)]
        lines.append(indent + f"in {self.result}")
        return "\n".join(lines)


@dataclass(frozen=True)
class Function:
    """A function in the IR: parameters and a body."""

    name: str
    params: tuple[Var, ...]
    body: Block

    def pretty(self) -> str:
        ps = ", ".join(f"{p.name}: {p.type}" for p in self.params)
        return f"{self.name}({ps}) =\n{self.body.pretty()}"


@dataclass(frozen=True)
class ReverseProgram:
    """The target IR of the reverse macro: CHAD's pair of a primal and a
    linear backward map, defunctionalised into two blocks.  ``forward``
    computes the primal value; ``backward`` takes the output cotangent
    ``ct_in`` and returns a tuple of one cotangent per parameter.  The backward
    block may read any variable the forward block binds (these become the
    residuals)."""

    name: str
    params: tuple[Var, ...]
    forward: Block
    ct_in: Var
    backward: Block

    def pretty(self) -> str:
        ps = ", ".join(f"{p.name}: {p.type}" for p in self.params)
        return (
            f"{self.name}_forward({ps}) =\n{self.forward.pretty()}\n\n"
            f"{self.name}_backward({self.ct_in.name}: {self.ct_in.type}) =\n{self.backward.pretty()}"
        )



@dataclass(eq=False)
class KeyFunction:
    """A call of the user's function lowered once for its static key (:mod:`astad.frontend.replay`)
    and called, not inlined, at each site with that key: ``let y = call(args, fn=this)``.  ``fn`` is
    its IR: parameters (the call's argument variables), a body of primitives, one array result.
    Reverse mode generates it as a pair of functions per set of active parameters (``variants``:
    which parameters need a cotangent -> the pair's name), each derived once (``derived``).
    ``names``: the names the lowering handed out or the user's code mentions (its namer's, shared),
    which no variant's pair may shadow."""

    name: str
    fn: Function
    variants: dict[tuple[bool, ...], str] = field(default_factory=dict)
    derived: dict[tuple[bool, ...], Any] = field(default_factory=dict)
    names: set[str] = field(default_factory=set)

    def variant(self, mask: tuple[bool, ...]) -> str:
        """The name of the pair of generated functions for the parameters ``mask`` makes active."""
        found = self.variants.get(mask)
        if found is None:
            found, k = self.name, len(self.variants) + 1
            while self.variants and any(n in self.names for n in (found, f"{found}_forward", f"{found}_backward")):
                found, k = f"{self.name}_v{k}", k + 1
            self.names.update((found, f"{found}_forward", f"{found}_backward"))
            self.variants[mask] = found
        return found

    def __repr__(self) -> str:
        return self.name

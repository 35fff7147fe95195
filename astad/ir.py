"""The IR shared by every stage: types, atoms, computations, blocks.

A small typed λ-calculus in A-normal form.  A :class:`Block` is a sequence of
:class:`Bind` (``let targets = rhs``) followed by a result atom.  The same
data structures carry the core IR (from the frontend), the core IR with
explicit ``dup``/``drop`` (structural pass), and the target IR produced by the
AD macro, which adds linear operations (cotangent ``zero``, ``plus``) as
ordinary primitives from the same table.
"""

from __future__ import annotations

import functools
from collections import Counter
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Iterator, Sequence, Union

import numpy as np

Dim = Union[int, None]  # None: not known statically


# --------------------------------------------------------------------------- types


@dataclass(frozen=True)
class Num:
    """Numbers: a scalar (``shape == ()``) or an array.

    ``dtype`` is a numpy dtype name.  Float dtypes are differentiable (real
    scalars and arrays); integer and boolean ones are discrete.  ``py`` marks a
    Python scalar (``float``/``int``/``bool``) rather than a numpy value; it
    matters for numpy's promotion rules (Python scalars are "weak").  ``value``
    is a statically known value of a discrete scalar (used for shapes).
    """

    shape: tuple[Dim, ...]
    dtype: str
    py: bool = False
    value: Any = None

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def differentiable(self) -> bool:
        return self.dtype.startswith(("float", "complex"))

    @property
    def known_shape(self) -> bool:
        return all(d is not None for d in self.shape)

    def __str__(self) -> str:
        base = {"float64": "f64", "float32": "f32", "int64": "int", "bool": "bool"}.get(self.dtype, self.dtype)
        if self.py and not self.shape:
            base = {"f64": "float", "int": "int", "bool": "bool"}.get(base, base)
        if self.value is not None:
            return f"{base}={self.value}"
        if not self.shape:
            return base
        return f"{base}[{','.join('?' if d is None else str(d) for d in self.shape)}]"


@dataclass(frozen=True)
class TupleT:
    items: tuple["Type", ...]

    @property
    def differentiable(self) -> bool:
        return any(t.differentiable for t in self.items)

    def __str__(self) -> str:
        return "(" + ", ".join(map(str, self.items)) + ("," if len(self.items) == 1 else "") + ")"


@dataclass(frozen=True)
class NoneT:
    differentiable = False

    def __str__(self) -> str:
        return "None"


@dataclass(frozen=True)
class ListT:
    """A Python list whose length is known only at run time (built by
    ``append`` in a loop); ``elem`` is None until the first append is seen."""

    elem: "Type | None"
    length: int | None = None  # known when transforming (a comprehension over a range or an array)

    @property
    def differentiable(self) -> bool:
        return self.elem is not None and bool(self.elem.differentiable)

    def __str__(self) -> str:
        return f"list[{self.elem if self.elem is not None else '?'}{'' if self.length is None else f'; {self.length}'}]"


@dataclass(frozen=True)
class StructT:
    """A structured argument (a "pytree" in JAX's words): a tuple, list, dict or
    NamedTuple of numbers, arrays and further structures.  It exists only at
    the boundary: the function's parameters are its leaves, and the cotangent
    comes back with the same structure.  ``keys`` are the dict's keys or the
    NamedTuple's fields; ``name`` the NamedTuple class (``cls``, not compared)."""

    kind: str  # "tuple", "list", "dict" or "namedtuple"
    keys: tuple[Any, ...]
    items: tuple["Type", ...]
    name: str = ""
    cls: Any = field(default=None, repr=False)  # compared: two classes of one name are two types

    @property
    def differentiable(self) -> bool:
        return any(t.differentiable for t in self.items)

    def __str__(self) -> str:
        if self.kind in ("tuple", "list"):
            inner = ", ".join(map(str, self.items))
            return f"({inner}{',' if len(self.items) == 1 else ''})" if self.kind == "tuple" else f"[{inner}]"
        inner = ", ".join(f"{k}: {t}" if self.kind == "namedtuple" else f"{k!r}: {t}" for k, t in zip(self.keys, self.items))
        return f"{self.name}({inner})" if self.kind == "namedtuple" else "{" + inner + "}"

    def flatten(self, value: Any) -> list[Any]:
        """The leaves of a value of this structure, in order."""
        return _flattener(self)(value)

    def paths(self) -> list[str]:
        """Where each leaf is, as Python subscripts (``["w"]``, ``[0][1]``)."""
        keys = self.keys if self.kind == "dict" else range(len(self.items))
        return [f"[{k!r}]{rest}" for k, t in zip(keys, self.items)
                for rest in (t.paths() if isinstance(t, StructT) else [""])]

    def unflatten(self, leaves: Iterator[Any]) -> Any:
        """A value of this structure from its leaves (cotangents, say)."""
        items = [t.unflatten(leaves) if isinstance(t, StructT) else next(leaves) for t in self.items]
        if self.kind == "dict":
            return dict(zip(self.keys, items))
        if self.kind == "namedtuple":
            return self.cls(*items)
        return items if self.kind == "list" else tuple(items)


@functools.lru_cache(maxsize=256)
def _flattener(t: StructT) -> Callable[[Any], list[Any]]:
    """A function returning the leaves of a value of structure ``t`` (one
    expression: no recursion per call).  Its text is made of indices only: the
    keys are read from a tuple, never written into the text (a key's repr is
    the user's)."""
    keys: list[Any] = []
    return eval("lambda v: [" + ", ".join(f"v{p}" for p in _key_paths(t, keys)) + "]",  # noqa: S307 - our text
                {"__builtins__": {}, "k": tuple(keys)})


def _key_paths(t: StructT, keys: list[Any]) -> list[str]:
    """The subscripts of each leaf as text (``[k[0]][k[3]]``), the keys appended to ``keys``."""
    out = []
    for key, item in zip(t.keys if t.kind == "dict" else range(len(t.items)), t.items):
        keys.append(key)
        here = f"[k[{len(keys) - 1}]]"
        out += [here + rest for rest in _key_paths(item, keys)] if isinstance(item, StructT) else [here]
    return out


def leaf_counts(types: Sequence["Type"]) -> list[int]:
    """How many parameters each argument becomes (a structure: its leaves)."""
    return [sum(leaf_counts(t.items)) if isinstance(t, StructT) else 1 for t in types]


@dataclass(frozen=True)
class FunT:
    """A function value (a ``lambda`` or nested ``def``) called with arguments of
    types ``params``, returning a ``result``."""

    params: tuple["Type", ...]
    result: "Type"
    name: str = ""  # the variable of the ``lam`` that made it: each function value has a type of its own
    differentiable = True

    def __str__(self) -> str:
        return f"({', '.join(map(str, self.params))}) -> {self.result}"


@dataclass(frozen=True)
class CopowerT:
    """The cotangent of a function value (CHAD: ``!D1(τ) ⊗ D2(σ)``): the
    formal sum of the calls made to it, each the call's primal argument (here:
    the residuals the call recorded) with the cotangent of its result."""

    fn: FunT
    differentiable = True

    def __str__(self) -> str:
        return f"!({', '.join(map(str, self.fn.params))}) ⊗ {self.fn.result}"


Type = Union[Num, TupleT, NoneT, ListT, StructT, FunT, CopowerT]

FLOAT = Num((), "float64", py=True)
INT = Num((), "int64", py=True)
BOOL = Num((), "bool", py=True)


def is_scalar(t: Type) -> bool:
    return isinstance(t, Num) and t.shape == ()


# --------------------------------------------------------------------------- atoms


@dataclass(frozen=True)
class Var:
    name: str
    type: Type = field(compare=False)

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True)
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

    def __str__(self) -> str:
        return self.name if self.name is not None else repr(self.value)


@dataclass(frozen=True)
class Zero:
    """The statically-zero cotangent of a type: never materialised unless it
    has to be returned or combined with something non-zero."""

    type: Type

    def __str__(self) -> str:
        return f"zero[{self.type}]"


Atom = Union[Var, Const, Zero]


# --------------------------------------------------------------------------- computations


@dataclass(frozen=True)
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


@dataclass(frozen=True)
class MakeTuple:
    items: tuple[Atom, ...]

    def __str__(self) -> str:
        return "(" + ", ".join(map(str, self.items)) + ("," if len(self.items) == 1 else "") + ")"


@dataclass(frozen=True)
class Unpack:
    """``let (a, b, ...) = t``: split a tuple into its components."""

    tup: Atom

    def __str__(self) -> str:
        return f"unpack {self.tup}"


@dataclass(frozen=True)
class Dup:
    """Contraction made explicit: ``let (x_1, ..., x_n) = dup x``."""

    var: Var

    def __str__(self) -> str:
        return f"dup {self.var}"


@dataclass(frozen=True)
class Drop:
    """Weakening made explicit: ``drop x`` ends a variable that is not used."""

    var: Var

    def __str__(self) -> str:
        return f"drop {self.var}"


@dataclass(frozen=True)
class Plus:
    """Cotangent addition (the monoid that ``dup`` is mapped to)."""

    items: tuple[Atom, ...]

    def __str__(self) -> str:
        return "plus(" + ", ".join(map(str, self.items)) + ")"


@dataclass(frozen=True)
class Copy:
    """``let y = x``: an alias (produced by the AD macro, removed by the optimiser)."""

    atom: Atom

    def __str__(self) -> str:
        return str(self.atom)


@dataclass(frozen=True)
class If:
    """``let (y_1, ..., y_k) = if cond then A else B``: CHAD's sum-type
    elimination on a boolean.  Each branch block ends in a tuple of the k joined
    values; the variables a branch reads from outside are its free variables."""

    cond: Atom
    then: "Block"
    orelse: "Block"

    def __str__(self) -> str:
        return f"if {self.cond}"


@dataclass(frozen=True)
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


@dataclass(frozen=True)
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


@dataclass(frozen=True)
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


@dataclass(frozen=True)
class App:
    """``let y = f(a_1, ..., a_n)``: a call of a function value.  In the target IR
    the call also binds its record (what its backward map needs) as its last target."""

    fn: Var
    args: tuple[Atom, ...]

    def __str__(self) -> str:
        return f"{self.fn}({', '.join(map(str, self.args))})"


@dataclass(frozen=True)
class AppBack:
    """The backward map of one call of ``fn``, at the values the call recorded,
    applied to the cotangent of its result: the cotangents of what ``fn``
    captures, then of its arguments."""

    fn: Var
    record: Var
    ct: Atom

    def __str__(self) -> str:
        return f"{self.fn}.back({self.record}, {self.ct})"


@dataclass(frozen=True)
class Copower:
    """``!r ⊗ ct``: the cotangent of a function value from one call: the call's
    record with the cotangent of its result.  Copowers add by concatenation."""

    record: Var
    ct: Atom

    def __str__(self) -> str:
        return f"!{self.record} ⊗ {self.ct}"


@dataclass(frozen=True)
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
    if isinstance(rhs, If):
        return (rhs.then, rhs.orelse)
    if isinstance(rhs, (Loop, LoopBack, Lam)):
        return (rhs.body,)
    return ()


def trip_count(loop: "Loop") -> int | None:
    """How often a ``for`` loop runs, when its bounds are known when transforming."""
    if loop.index is None:
        return None
    bounds = [a.value if isinstance(a, Const) else getattr(a.type, "value", None) for a in loop.bounds]
    if any(not isinstance(v, (int, np.integer)) or isinstance(v, bool) for v in bounds):
        return None
    return len(range(*(int(v) for v in bounds)))


def lam_free_vars(rhs: Lam) -> tuple[Var, ...]:
    """What a function value captures: the variables its body reads from outside."""
    own = {v.name for v in rhs.params}
    return tuple(v for v in free_vars(rhs.body) if v.name not in own)


def function_values(block: "Block") -> dict[str, Lam]:
    """Each ``lam`` of a block (also nested) by the variable it is bound to, which
    its type names (copies made by ``dup`` have the same type)."""
    found: dict[str, Lam] = {}
    for b in block.binds:
        if isinstance(b.rhs, Lam):
            found[b.targets[0].name] = b.rhs
        for inner in nested_blocks(b.rhs):
            found.update(function_values(inner))
    return found


def loop_free_vars(rhs: "Loop | LoopBack") -> tuple[Var, ...]:
    """What a loop body reads from outside (not its own inputs)."""
    own = {v.name for v in (rhs.saved + rhs.params if isinstance(rhs, LoopBack) else rhs.inputs)}
    return tuple(v for v in free_vars(rhs.body) if v.name not in own)


@dataclass(frozen=True)
class Loc:
    """A position in the user's source: file, 1-based line and column."""

    file: str
    line: int
    col: int
    text: str = ""


@dataclass(frozen=True)
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

    def pretty(self, indent: str = "  ") -> str:
        lines = []
        for b in self.binds:
            lines.append(indent + str(b))
            if isinstance(b.rhs, If):
                lines += [indent + "then", b.rhs.then.pretty(indent + "  "),
                          indent + "else", b.rhs.orelse.pretty(indent + "  ")]
            elif isinstance(b.rhs, (Loop, LoopBack)):
                lines += [indent + "do", b.rhs.body.pretty(indent + "  ")]
            elif isinstance(b.rhs, Lam):
                lines += [b.rhs.body.pretty(indent + "  ")]
                if b.rhs.back is not None and b.rhs.back_ct is not None:
                    lines += [indent + f"backward ({b.rhs.back_ct.name}) =", b.rhs.back.pretty(indent + "  ")]
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


# --------------------------------------------------------------------------- helpers


def _memo(block: Block, key: str, compute: Callable[[Block], Any]) -> Any:
    """``compute(block)``, remembered on the block: blocks are immutable, so a
    fact about one (its free variables, the names it binds) never changes.  A
    pass that asks at every level of a nested block then pays for each block
    once, not once per enclosing level (which is quadratic in the depth)."""
    memo = block.__dict__
    if key not in memo:
        memo[key] = compute(block)
    return memo[key]


def free_vars(block: Block) -> tuple[Var, ...]:
    """The variables a block reads and does not bind, in order of first use."""
    return _memo(block, "_free_vars", _free_vars)


def _free_vars(block: Block) -> tuple[Var, ...]:
    bound: set[str] = set()
    seen: dict[str, Var] = {}
    for b in block.binds:
        for v in vars_of(b.rhs):
            if v.name not in bound and v.name not in seen:
                seen[v.name] = v
        bound.update(t.name for t in b.targets)
    r = block.result
    if isinstance(r, Var) and r.name not in bound and r.name not in seen:
        seen[r.name] = r
    return tuple(seen.values())


def all_binds(block: Block) -> Iterator[Bind]:
    """Every binding of a block, also inside its branches, in order (each
    binding before those nested in it).  A stack, not nested generators: a
    binding deep down is passed up through no generator per level."""
    stack = [iter(block.binds)]
    while stack:
        b = next(stack[-1], None)
        if b is None:
            stack.pop()
            continue
        yield b
        stack.extend(iter(inner.binds) for inner in reversed(nested_blocks(b.rhs)))


def _bound_here(b: Bind, backward: bool) -> Iterator[Var]:
    """What one binding binds at its own level: its targets, a loop's inputs, a
    lam's parameters and, with ``backward``, a backward loop's saved values and parameters."""
    yield from b.targets
    if isinstance(b.rhs, Loop):
        yield from b.rhs.inputs
    if backward and isinstance(b.rhs, LoopBack):
        yield from b.rhs.saved + b.rhs.params
    if isinstance(b.rhs, Lam):
        yield from b.rhs.params


def bound_names(block: Block) -> Iterator[str]:
    """Every name a block binds, also inside its branches."""
    for b in all_binds(block):
        yield from (v.name for v in _bound_here(b, True))


def bound_vars(block: Block) -> Iterator[Var]:
    """Every variable a block binds, also inside its branches, in order."""
    for b in all_binds(block):
        yield from _bound_here(b, False)


def bound_set(block: Block) -> frozenset[str]:
    """``bound_names`` as a set, computed once per block (from its nested blocks' sets)."""
    return _memo(block, "_bound_set", lambda blk: _names_below(blk, True, bound_set))


def bound_var_names(block: Block) -> frozenset[str]:
    """The names of ``bound_vars``, computed once per block (from its nested blocks' sets)."""
    return _memo(block, "_bound_var_names", lambda blk: _names_below(blk, False, bound_var_names))


def _names_below(block: Block, backward: bool, inner_names: Callable[[Block], frozenset[str]]) -> frozenset[str]:
    names: set[str] = set()
    for b in block.binds:
        names.update(v.name for v in _bound_here(b, backward))
        for inner in nested_blocks(b.rhs):
            names |= inner_names(inner)
    return frozenset(names)


def read_names(block: Block) -> set[str]:
    """Every name a block reads, also inside its branches (a new set: the caller may change it)."""
    return set(read_set(block))


def read_set(block: Block) -> frozenset[str]:
    """``read_names``, computed once per block (from its nested blocks' sets)."""
    return _memo(block, "_read_set", _read_set)


def _read_set(block: Block) -> frozenset[str]:
    names = {block.result.name} if isinstance(block.result, Var) else set()
    for b in block.binds:
        names.update(v.name for v in vars_of(b.rhs))
        for inner in nested_blocks(b.rhs):
            names |= read_set(inner)
    return frozenset(names)


def if_free_vars(rhs: If) -> tuple[Var, ...]:
    """The variables the branches of an ``if`` read from outside, in order."""
    seen: dict[str, Var] = {}
    for v in free_vars(rhs.then) + free_vars(rhs.orelse):
        seen.setdefault(v.name, v)
    return tuple(seen.values())


def map_block(block: Block, f: Callable[[Atom], Atom]) -> Block:
    """A block with every free occurrence of a variable replaced by ``f``
    (variables the block binds itself are left alone)."""
    bound: set[str] = set()

    def g(a: Atom) -> Atom:
        return a if isinstance(a, Var) and a.name in bound else f(a)

    binds = []
    for b in block.binds:
        binds.append(Bind(b.targets, map_atoms(b.rhs, g), b.loc))
        bound.update(t.name for t in b.targets)
    return Block(tuple(binds), g(block.result))


def atoms_of(rhs: Comp) -> tuple[Atom, ...]:
    """The atoms a computation reads (for a branch or a loop: what it reads from outside)."""
    if isinstance(rhs, If):
        return (rhs.cond, *if_free_vars(rhs))
    if isinstance(rhs, Loop):
        return (*rhs.bounds, *rhs.init, *loop_free_vars(rhs))
    if isinstance(rhs, LoopBack):
        return (rhs.tape, *rhs.init, *loop_free_vars(rhs))
    if isinstance(rhs, Lam):
        return lam_free_vars(rhs)
    if isinstance(rhs, App):
        return (rhs.fn, *rhs.args)
    if isinstance(rhs, AppBack):
        return (rhs.fn, rhs.record, rhs.ct)
    if isinstance(rhs, Copower):
        return (rhs.record, rhs.ct)
    if isinstance(rhs, CaseCopower):
        return (rhs.copower, rhs.fn)
    if isinstance(rhs, Prim):
        return rhs.args
    if isinstance(rhs, (MakeTuple, Plus)):
        return rhs.items
    if isinstance(rhs, Unpack):
        return (rhs.tup,)
    if isinstance(rhs, (Dup, Drop)):
        return (rhs.var,)
    if isinstance(rhs, Copy):
        return (rhs.atom,)
    raise TypeError(rhs)


def vars_of(rhs: Comp) -> Iterator[Var]:
    return (a for a in atoms_of(rhs) if isinstance(a, Var))


def use_counts(block: Block) -> "Counter[str]":
    """How often each variable is read: inside nested blocks, by loop bounds,
    initial values and tapes too, and as the block's result.  A new Counter
    (the caller may change it); the counts of each block are computed once."""
    counts = Counter(_memo(block, "_use_counts", _nested_use_counts))
    if isinstance(block.result, Var):
        counts[block.result.name] += 1
    return counts


def _nested_use_counts(blk: Block) -> "Counter[str]":
    """The reads of a block's bindings, nested blocks included (not its result)."""
    counts: Counter[str] = Counter()
    for b in blk.binds:
        rhs = b.rhs
        if isinstance(rhs, If):
            direct: tuple[Atom, ...] = (rhs.cond,)
        elif isinstance(rhs, Loop):
            direct = (*rhs.bounds, *rhs.init, *rhs.save)
        elif isinstance(rhs, LoopBack):
            direct = (rhs.tape, *rhs.init)
        elif isinstance(rhs, Lam):
            direct = ()
        else:
            direct = tuple(vars_of(rhs))
        counts.update(a.name for a in direct if isinstance(a, Var))
        for inner in nested_blocks(rhs):
            counts.update(_memo(inner, "_use_counts", _nested_use_counts))
    return counts


def map_atoms(rhs: Comp, f: Callable[[Atom], Atom]) -> Comp:
    """The same computation with every atom it reads replaced by ``f(atom)``, in order."""
    if isinstance(rhs, Prim):
        return Prim(rhs.op, tuple(f(a) for a in rhs.args), rhs.params)
    if isinstance(rhs, MakeTuple):
        return MakeTuple(tuple(f(a) for a in rhs.items))
    if isinstance(rhs, Plus):
        return Plus(tuple(f(a) for a in rhs.items))
    if isinstance(rhs, Unpack):
        return Unpack(f(rhs.tup))
    if isinstance(rhs, Copy):
        return Copy(f(rhs.atom))
    if isinstance(rhs, If):
        return If(f(rhs.cond), map_block(rhs.then, f), map_block(rhs.orelse, f))
    if isinstance(rhs, Loop):
        own = {v.name for v in rhs.inputs}
        body = map_block(rhs.body, lambda a: a if isinstance(a, Var) and a.name in own else f(a))
        return Loop(tuple(f(a) for a in rhs.bounds), rhs.index, rhs.carried, tuple(f(a) for a in rhs.init), body,
                    rhs.save, rhs.tape)
    if isinstance(rhs, LoopBack):
        own = {v.name for v in rhs.saved + rhs.params}
        body = map_block(rhs.body, lambda a: a if isinstance(a, Var) and a.name in own else f(a))
        tape = f(rhs.tape)
        assert isinstance(tape, Var)
        return LoopBack(tape, rhs.saved, rhs.params, tuple(f(a) for a in rhs.init), body)
    if isinstance(rhs, Lam):
        own = {v.name for v in rhs.params}
        return replace(rhs, body=map_block(rhs.body, lambda a: a if isinstance(a, Var) and a.name in own else f(a)))
    if isinstance(rhs, App):
        return App(as_var(f(rhs.fn)), tuple(f(a) for a in rhs.args))
    if isinstance(rhs, AppBack):
        return AppBack(as_var(f(rhs.fn)), as_var(f(rhs.record)), f(rhs.ct))
    if isinstance(rhs, Copower):
        return Copower(as_var(f(rhs.record)), f(rhs.ct))
    if isinstance(rhs, CaseCopower):
        return CaseCopower(f(rhs.copower), as_var(f(rhs.fn)))
    if isinstance(rhs, (Dup, Drop)):
        a = f(rhs.var)
        if not isinstance(a, Var):
            raise TypeError("dup/drop of a non-variable")
        return type(rhs)(a)
    raise TypeError(rhs)


def as_var(a: Atom) -> Var:
    if not isinstance(a, Var):
        raise TypeError(f"expected a variable, got {a}")
    return a


def substitute(rhs: Comp, env: dict[str, Atom]) -> Comp:
    """Replace variables read by ``rhs`` according to ``env`` (name -> atom).

    A branch, loop or function value that reads none of ``env``'s names from
    outside is returned as it is, without a walk of its blocks: what it reads
    from outside is known once per block (``free_vars``), so substituting at
    every level of a deeply nested block costs each level once."""
    if not env:
        return rhs
    if not nested_blocks(rhs):
        return map_atoms(rhs, lambda a: env.get(a.name, a) if isinstance(a, Var) else a)
    if all(v.name not in env for v in vars_of(rhs)):
        return rhs
    if isinstance(rhs, If):
        cond = env.get(rhs.cond.name, rhs.cond) if isinstance(rhs.cond, Var) else rhs.cond
        return If(cond, substitute_block(rhs.then, env), substitute_block(rhs.orelse, env))
    if isinstance(rhs, Loop):
        return Loop(tuple(_subst(a, env) for a in rhs.bounds), rhs.index, rhs.carried,
                    tuple(_subst(a, env) for a in rhs.init), substitute_block(rhs.body, _without(env, rhs.inputs)),
                    rhs.save, rhs.tape)
    if isinstance(rhs, LoopBack):
        return LoopBack(as_var(_subst(rhs.tape, env)), rhs.saved, rhs.params, tuple(_subst(a, env) for a in rhs.init),
                        substitute_block(rhs.body, _without(env, rhs.saved + rhs.params)))
    if isinstance(rhs, Lam):
        return replace(rhs, body=substitute_block(rhs.body, _without(env, rhs.params)))
    raise TypeError(rhs)


def substitute_block(block: Block, env: dict[str, Atom]) -> Block:
    """``substitute`` on every free occurrence in a block (names the block binds
    itself are left alone, as ``map_block`` does); a block that reads none of
    ``env``'s names from outside is returned as it is."""
    if not env or all(v.name not in env for v in free_vars(block)):
        return block
    binds = []
    for b in block.binds:
        binds.append(Bind(b.targets, substitute(b.rhs, env), b.loc))
        if any(t.name in env for t in b.targets):  # bound here: later reads are this block's own
            env = _without(env, b.targets)
    return Block(tuple(binds), _subst(block.result, env))


def _subst(a: Atom, env: dict[str, Atom]) -> Atom:
    return env.get(a.name, a) if isinstance(a, Var) else a


def _without(env: dict[str, Atom], own: Sequence[Var]) -> dict[str, Atom]:
    """``env`` less the names a block binds for itself (loop inputs, parameters)."""
    names = {v.name for v in own}
    return env if names.isdisjoint(env) else {k: a for k, a in env.items() if k not in names}


def tuple_items(t: Type) -> tuple[Type, ...]:
    if not isinstance(t, TupleT):
        raise TypeError(f"not a tuple type: {t}")
    return t.items

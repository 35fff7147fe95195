"""The IR program behind a callable, for derivatives of derivatives.

A callable astad made (``grad(f)``, ``jacrev(f)``, ...) is differentiated again
not by reading source (it has none of its own) but through a :class:`Program`:
an IR function whose parameters are the leaves of the user's arguments, then
the leaves of ``extras`` (values the callable supplies itself: the output
cotangent ``1.0`` of a gradient, the tangent direction of a JVP), and whose
output ``select`` turns into what the callable returns.

An outer JVP is taken by the forward macro, which accepts the reverse macro's
output (:func:`astad.ad.vjp_function.vjp_function`): ``hessian`` and
``grad(grad(f))`` are forward over reverse, ``n`` JVPs for ``n`` inputs.  An
outer VJP (``astad.vjp`` or ``jacrev`` of a derivative) is taken by the reverse
macro (:meth:`Program.reverse`), after :mod:`astad.ad.lower_target` lowered the
reverse-mode target IR to core IR: reverse over reverse.  :meth:`Program.tangent_program` is the program
of one JVP, which can be differentiated again: any depth.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Sequence

from . import deep, pipeline
from .ad.vjp_function import vjp_function
from .errors import AstadError
from .frontend.unused import keep_primal_raising
from .ir import Function, NoneT, ReverseProgram, Type, Var, free_vars
from .memo import LRU, snapshot
from .pipeline import ForwardDerivative


def _as_function(p: Function | ReverseProgram) -> tuple[Function, bool]:
    """An optimised forward-mode program as one IR function, and whether it takes
    a trailing ``None`` (forward over reverse gives a reverse program again)."""
    if isinstance(p, ReverseProgram):
        taken = {v.name for v in p.params}
        if p.ct_in.name in taken:  # forward over forward over reverse: each level adds a `None` parameter
            assert all(v.name != p.ct_in.name for v in free_vars(p.backward))
            k = 1
            while f"{p.ct_in.name}{k}" in taken:
                k += 1
            p = replace(p, ct_in=Var(f"{p.ct_in.name}{k}", p.ct_in.type))
        return vjp_function(p), True
    return p, False


def _identity(v: Any) -> Any:
    return v


@dataclass(eq=False)
class Program:
    """``select(fn(*leaves of args, *leaves of extras))``; ``arg_types`` are the
    structured types of the user's arguments, then of the extras."""

    fn: Function
    arg_types: tuple[Type, ...]
    n_user: int
    name: str
    constants: dict[str, Any] = field(default_factory=dict)
    select: Callable[[Any], Any] = _identity  # linear and structural: applied to tangents too
    deps: list = field(default_factory=list)  # the globals it was built from (as Derivative.deps)
    checks: tuple = ()  # (see api._dep_checks), filled in by who caches it
    _forwards: dict = field(default_factory=dict)
    _tangents: dict = field(default_factory=dict)
    _reverse: Any = None
    _reselected: dict = field(default_factory=dict)
    base_select: Callable[[Any], Any] | None = None  # (a reselected program: the select before, and
    unselect: Callable[[Any], Any] | None = None  # the transpose of what was added; see api_vjp.program_vjp)

    def forward(self, wrt: frozenset[int]) -> ForwardDerivative:
        """Forward mode with tangents for the user's arguments in ``wrt`` (cached)."""
        d = self._forwards.get(wrt)
        if d is None:
            d = self._forwards[wrt] = pipeline.forward_of_function(self.fn, self.arg_types, wrt, self.name,
                                                                   self.constants)
        return d

    def reverse(self) -> pipeline.Derivative:
        """Reverse mode with cotangents for the user's arguments (cached); for a reverse
        program, reverse over reverse (:mod:`astad.ad.lower_target`)."""
        if self._reverse is None:
            self._reverse = pipeline.reverse_of_function(self.fn, self.arg_types, frozenset(range(self.n_user)),
                                                         self.name, self.constants, self.deps)
        return self._reverse

    def jvp(self, args: Sequence[Any], extras: Sequence[Any], tangents: Sequence[Any]) -> tuple[Any, Any]:
        """``(value, tangent)``: ``tangents`` one per user argument, None for none."""
        wrt = frozenset(i for i, t in enumerate(tangents) if t is not None)
        d = self.forward(wrt)
        value, tangent = d.jvp(*args, *extras, *(tangents[i] for i in sorted(wrt)))
        return self.select(value), (None if not wrt else self.select(tangent))

    def reselected(self, key: Any, select: Callable[[Any], Any], unselect: Callable[[Any], Any]) -> "Program":
        """This program with its output mapped by ``select`` too (linear; ``unselect`` its transpose), made
        once per ``key`` (it shares the forward programs: they do not depend on ``select``)."""
        found = self._reselected.get(key)
        if found is None:
            if len(self._reselected) > 32:  # (an output whose size is known only when running: one per size)
                self._reselected.clear()
            assert self.unselect is None
            inner = self.select
            found = self._reselected[key] = replace(self, select=lambda out: select(inner(out)), _tangents={},
                                                    _reverse=None, _reselected={}, base_select=inner,
                                                    unselect=unselect)
        return found

    def value(self, args: Sequence[Any], extras: Sequence[Any]) -> Any:
        return self.jvp(args, extras, [None] * len(args))[0]

    def tangent_program(self, i: int, tangent_type: Type) -> tuple["Program", tuple[Type, ...], bool]:
        """The program of a JVP along the user's argument ``i``: its parameters are
        the user's arguments, this program's extras, then the tangent (then a
        ``None`` when the result is a reverse program); it selects the tangent.
        Also returns the types of the extras it adds and whether ``None`` is one."""
        key = (i, tangent_type)
        found = self._tangents.get(key)
        if found is None:
            found = self._tangents[key] = self._tangent_program(i, tangent_type)
        return found

    def _tangent_program(self, i: int, tangent_type: Type) -> tuple["Program", tuple[Type, ...], bool]:
        d = self.forward(frozenset({i}))
        assert d.stages is not None
        fn, split = _as_function(d.stages.optimised)
        added: tuple[Type, ...] = (_tangent_type(tangent_type),) + ((NoneT(),) if split else ())
        inner, base = self.select, self.base_select
        return Program(fn, self.arg_types + added, self.n_user, f"{self.name}_t", self.constants,
                       lambda out: inner(out[1]), base_select=None if base is None else lambda out: base(out[1]),
                       unselect=self.unselect), added, split


def _tangent_type(t: Type) -> Type:
    """The type of the tangent of an argument of type ``t`` as the forward macro's code takes it: of a
    structure, its differentiable leaves alone (the others get no tangent parameter), read by their keys
    (a tuple's, a list's and a NamedTuple's by their indices: a structure of the kind "dict")."""
    from .ad.forward import differentiable
    from .ir import StructT

    if not isinstance(t, StructT) or all(map(differentiable, pipeline._leaf_types(t))):
        return t
    keys = t.keys if t.kind == "dict" else tuple(range(len(t.items)))
    kept = [(k, _tangent_type(x)) for k, x in zip(keys, t.items) if differentiable(x)]
    return StructT("dict", tuple(k for k, _ in kept), tuple(x for _, x in kept))


class NoProgram(AstadError):
    """A derived callable that is not one program (several JVPs or VJPs assembled in Python)."""


def plain_program(rev: Any, args: Sequence[Any]) -> Program:
    """The core IR of a plain function (through its ``Reverse``), as a program."""
    from . import frontend

    types = rev._types(args)
    with deep.gc_paused():  # (as the transformation lowers: the collector would walk the IR as it grows)
        lowerer = frontend.Lowerer(rev._parsed)
        core = frontend.drop_dead_temporaries(lowerer.lower_function(list(types)))
    values = {n: obj for n, (_, obj) in lowerer.constants.items()}
    return Program(core, tuple(types), len(types), rev._parsed.name, values, deps=lowerer.deps)


def vjp_program(rev: Any, args: Sequence[Any], wrt: frozenset[int]) -> tuple[Program, Type]:
    """The reverse program of a plain function as one function ``(args..., ct) ->
    cotangents`` (one per parameter, structured as the arguments), and the output type."""
    types = tuple(rev._types(args))
    stages, lowerer = pipeline.run_stages(rev._parsed, types, wrt)
    prog = keep_primal_raising(stages.optimised)  # (its value is read by nothing: kept where it may raise)
    values = {n: obj for n, (_, obj) in lowerer.constants.items()}
    ct_type = prog.ct_in.type
    return (Program(vjp_function(prog), types + (ct_type,), len(types), rev._parsed.name, values,
                    _regroup(types), lowerer.deps), ct_type)


def _regroup(types: Sequence[Type]) -> Callable[[Any], Any]:
    """The leaf cotangents of the generated code, one per parameter (a structured one rebuilt)."""
    from .ir import StructT

    if not any(isinstance(t, StructT) for t in types):
        return _identity

    def regroup(cts: Any) -> tuple:
        it = iter(cts)
        return tuple(t.unflatten(it) if isinstance(t, StructT) else next(it) for t in types)

    return regroup


class ProgramCache:
    """Programs of one function by abstract signature (small LRU); an entry is
    made again when ``valid`` says the globals it was built from changed."""

    def __init__(self) -> None:
        self._lru: LRU[Any] = LRU(lambda: 32)

    def get(self, key: Any, make: Callable[[], Any], valid: Callable[[Any], bool] = lambda _: True) -> Any:
        found = self._lru.get(key)
        if found is None or not valid(found):
            found = make()
            self._lru.put(key, found)
        return found

    def clear(self) -> None:
        self._lru.clear()


#: the program caches of each function (its Reverse object), shared by every derivative made of it
_CACHES: "weakref.WeakKeyDictionary[Any, ProgramCache]" = weakref.WeakKeyDictionary()


def cache_of(owner: Any) -> ProgramCache:
    found = _CACHES.get(owner)
    if found is None:
        found = _CACHES[owner] = ProgramCache()
    return found


def clear() -> None:
    for c in snapshot(_CACHES.values):  # (another thread may be adding one)
        c.clear()

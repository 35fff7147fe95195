"""Gradients, JVPs and VJPs of functions and of derivatives (``jacfwd`` and ``jacrev``:
:mod:`astad.api_jacobians`; Hessians: :mod:`astad.api_second`).

Every callable made here is a :class:`Derived`: it can be called, gives its
JVP (``.jvp(primals, tangents)``) and, where it is one IR program, that
program (``__astad_program__(args) -> (Program, extras)``, see
:mod:`astad.programs`).  An outer transform of a ``Derived`` never reads
source: it differentiates the inner callable by JVPs (forward mode over the
inner program; forward over reverse for ``grad(grad(f))``), one per input
element — exact, any depth.  ``jacrev`` of a plain function is one VJP per
output element; ``jacfwd`` one JVP per input element.  ``vjp`` and ``jacrev`` of
a ``Derived`` that is one program run the reverse macro over that program
(:mod:`astad.api_vjp`; reverse over reverse for a gradient).  One that is
assembled from several programs (a Jacobian's columns or rows) is an
:class:`astad.api_parts.Assembly` of them: its JVPs, the columns of a Jacobian
of it, ``.source`` (the first program) and ``vjp`` (by JVPs) come from its parts.
"""

from __future__ import annotations

import contextvars
import functools
from typing import Any, Callable, Sequence, Union

import numpy as np

from . import api, api_grad, api_parts, backends, fresh, guards, pipeline, scalar_grad, shown
from .api_forward import (_BY_ID, LATEST as _LATEST, all_differentiable, check_pairs, checked_tangents, fast_key,
                          forward_of, jvp_at, jvp_of_function, padded, param_names, zeros_like_type)
from .errors import AstadError, AstadTypeError, NonScalarOutputError
from .ir import Type
from .jacobians import basis, example, from_columns, is_real, skeleton
from .api_vjp import program_vjp
from .argnums import counted_from_first, shown_by
from .programs import NoProgram, Program, cache_of, plain_program, vjp_program

ArgNums = Union[int, Sequence[int]]
_MISS = guards.MISS


# --------------------------------------------------------------------------- derived callables

class Derived:
    """A callable astad made; see the module docstring."""

    name = "derived"

    @property
    def __astad_derived__(self) -> str:  # see source.check_not_wrapped
        return f"astad.{self.name}"

    def __call__(self, *args: Any) -> Any:
        raise NotImplementedError

    def jvp(self, primals: tuple, tangents: tuple) -> tuple[Any, Any]:
        """``(value, tangent)`` at ``primals`` along ``tangents`` (checked: one per argument, None for none)."""
        return self._jvps(primals, [self._checked(primals, tangents)])[0]

    _passed: dict | None = None  # keys (api_forward.fast_key) of arguments and tangents whose check passed as given

    def _checked(self, primals: tuple, tangents: tuple) -> tuple:
        """The tangents checked against the arguments; checked once per kind of arguments and tangents."""
        key = fast_key(primals, tangents)
        if key is not None and self._passed is not None and key in self._passed:
            return tuple(tangents)
        types, checked = _checked(self, primals, tangents)
        if key is not None and all(c is tv for c, tv in zip(checked, tangents)) and \
                all(all_differentiable(types[i]) for i, tv in enumerate(tangents) if tv is not None):
            if self._passed is None or len(self._passed) > 64:
                self._passed = {}
            self._passed[key] = True
        return checked

    def _jvps(self, primals: tuple, tangent_list: list) -> list[tuple[Any, Any]]:
        """JVPs along tangents astad made (unchecked), the program looked up once."""
        return api_parts.jvps(self._assembly(primals), primals, tangent_list)

    def program(self, args: Sequence[Any]) -> tuple[Program, tuple]:
        raise NoProgram(f"{self.name} is assembled from several derivatives, not one program")

    def _assembly(self, args: Sequence[Any]) -> api_parts.Assembly:
        """The programs this callable is assembled from at ``args`` (see :mod:`astad.api_parts`)."""
        return api_parts.one(*self.program(args))

    def _columns(self, args: Sequence[Any], nums: Sequence[int], single: bool, rows: bool = False,
                 gradient: bool = False) -> api_parts.Assembly:
        """The Jacobian of ``self.inner`` with respect to ``nums``, one JVP of each of its parts per input
        element (``gradient``: it is a gradient, of a real scalar; ``rows``: a jacrev's, the inputs' dtypes)."""
        inner: Derived = self.inner  # type: ignore[attr-defined]
        base = inner._assembly(args)
        value = _output_of(inner, args)
        if gradient:
            _require_scalar(inner.name, value)
        return api_parts.columns(base, value, args, nums, single, rows)

    def __astad_program__(self, args: Sequence[Any]) -> tuple[Program, tuple]:
        return self.program(args)

    _last_args: tuple | None = None  # the arguments of the last call (for .source and .ir)

    def _shown(self, args: Sequence[Any], kwargs: dict[str, Any] | None = None) -> Any:
        return self._shown_what(args, kwargs)[0]

    def _shown_what(self, args: Sequence[Any], kwargs: dict[str, Any] | None = None) -> tuple[Any, str]:
        """The program shown (compiled as forward mode with no tangents) and what it is."""
        twin = shown_by(self, tuple(args))
        if twin is not self:
            found = twin._shown_what(args, kwargs)
            self.__dict__["_last_twin"] = twin
            return found
        return self._shown_with(args, self._program_shown, kwargs)

    def _shown_with(self, args: Sequence[Any], make: Callable[[tuple], Any],
                    kwargs: dict[str, Any] | None = None) -> Any:
        """``make(args)``, args bound as a call binds them (remembered once it succeeds); with none given,
        at the last call's, whose arrays are zeros in place of the caller's (jacobians.skeleton): there the
        user's code is not run (it may loop forever or fail at zeros; see _output_of)."""
        if args or kwargs:
            args = _bind(self, None, tuple(args), kwargs or {})
            found = make(args)
            self._last_args = skeleton(args)
            return found
        if self._last_args is None and isinstance(getattr(self, "inner", None), Plain):
            d = self.inner.rev._last  # type: ignore[attr-defined]
            if d is not None:
                self._last_args = tuple(example(t) for t in d.arg_types)
        if self._last_args is None:
            raise AstadError(f"{self.name} has not been called yet, so its argument types are unknown: call it "
                             "once, or pass example arguments (e.g. .ir('core', x))")
        token = _SHOWING.set(True)
        try:
            return make(self._last_args)
        finally:
            _SHOWING.reset(token)

    def _program_shown(self, args: tuple) -> tuple[Any, str]:
        try:
            prog, what = self.program(args)[0], "as one program"
        except NoProgram:  # assembled from several JVPs or VJPs: the program of one of them
            a = self._assembly(args)
            first = a.first()
            if first is None:
                raise AstadError(f"{self.name} has no code to show at these arguments: it is assembled from no "
                                 "program", hint="pass arguments with elements: .source_for(x, ...)") from None
            prog, what = first, self._part_label(args, len(a.parts))
        return prog.forward(frozenset()), what

    def _part_label(self, args: Sequence[Any], n: int) -> str:
        """What the first of the ``n`` programs it is assembled from is, for the header of ``.source``."""
        part = "row (a VJP" if getattr(self, "mode", "fwd") == "rev" else "column (a JVP"
        inner = self.inner  # type: ignore[attr-defined]
        if isinstance(inner, Plain) or getattr(self, "mode", "fwd") == "rev" or \
                len(inner._assembly(args).parts) == 1:
            return f"the program of one {part} of {inner.name})"
        return f"the first of the {n} programs it is assembled from (JVPs of the programs of {inner.name})"

    def source_for(self, *args: Any, **kwargs: Any) -> str:
        """The generated code of this callable's program at ``args`` (and ``kwargs``)."""
        return shown.program_text(*self._labelled(args, kwargs))

    @property
    def source(self) -> str:
        """The generated code of this callable's program (the primal of its IR program, as
        forward mode with no tangents) at the arguments of the last call; for a Jacobian
        assembled from several JVPs (VJPs), the program of one of them."""
        return shown.program_text(*self._labelled(()))

    def _labelled(self, args: Sequence[Any], kwargs: dict[str, Any] | None = None) -> tuple[Any, str, str]:
        d, what = self._shown_what(args, kwargs)
        return d, self.name, what

    def ir(self, stage: str = "optimised", *args: Any, **kwargs: Any) -> str:
        """This callable's program after a stage: 'core' (the program itself), 'structural', 'activity',
        'forward', 'optimised'."""
        d = self._shown(args, kwargs)
        assert d.stages is not None
        return d.stages.text(stage)

    def _output_like(self, args: Sequence[Any], value: Any) -> Any:
        """The value of this callable's program at ``args`` as a call returns it."""
        return value

    def _remember(self, args: Sequence[Any]) -> None:
        self._last_args = skeleton(tuple(args))

    def _repr_markdown_(self) -> str:
        try:
            return f"**astad.{self.name}** — generated code:\n\n```python\n{self.source}```"
        except AstadError as e:
            if self._last_args is None and shown_by(self, ()) is self:
                return f"**astad.{self.name}** — not called yet"
            return f"**astad.{self.name}** — no code to show: {str(e).splitlines()[0]}"

    def __repr__(self) -> str:
        return f"<astad.{self.name}>"


class Plain(Derived):
    """A user's function (astad reads its source)."""

    plain = True  # (the end of a chain of derivatives: see argnums.counted_from_first)

    def __init__(self, fn: Callable[..., Any]) -> None:
        self.rev = api.reverse(fn)
        self.fn = self.rev._root  # the callable as given (a method, a partial, a function)
        self.name = self.rev._parsed.name

    def __call__(self, *args: Any) -> Any:
        """The primal at the values of the free parameters (see api.Reverse.positional)."""
        return self.rev.primal(args)

    def jvp(self, primals: tuple, tangents: tuple) -> tuple[Any, Any]:
        return jvp_at(forward_of(self.fn), primals, tangents)

    def _jvps(self, primals: tuple, tangent_list: list) -> list[tuple[Any, Any]]:
        fwd = forward_of(self.fn)
        return [jvp_at(fwd, primals, t, check=False) for t in tangent_list]

    def program(self, args: Sequence[Any]) -> tuple[Program, tuple]:
        return _cached(self.rev, ("core", self.rev._types(args)), lambda: plain_program(self.rev, args)), ()


def _cached(rev: Any, key: Any, make: Callable[[], Program]) -> Program:
    """A program of ``rev``'s function from the cache shared by its derivatives (made
    again when a global it read is another object now)."""
    fn = rev._root
    rev.check_code()

    def made() -> Program:
        p = make()
        p.checks = api._dep_checks(fn, p.deps)
        return p
    return cache_of(rev).get(key, made, lambda p: api._checks_hold(p.checks))


def vjp_of(rev: Any, args: Sequence[Any], nums: Sequence[int], single: bool) -> Program:
    """The reverse program of a plain function as one program: ``(args..., ct) ->`` the
    cotangents of the arguments ``nums`` (one, when ``single``)."""
    def make() -> Program:
        prog, _ = vjp_program(rev, args, frozenset(nums))
        regroup = prog.select
        prog.select = lambda cts: regroup(cts)[nums[0]] if single else tuple(regroup(cts)[i] for i in nums)
        return prog
    return _cached(rev, ("vjp", rev._types(args), tuple(nums), single), make)


def _checked(inner: Derived, primals: Sequence[Any], tangents: Sequence[Any]) -> tuple[Sequence[Type], tuple]:
    """The arguments' types and the tangents checked against them (shape, dtype, structure; None for discrete ones)."""
    from .frontend import abstract

    if isinstance(inner, Plain):
        types = inner.rev._types(primals)
        names = param_names(inner.rev, len(types))
    else:
        types = [abstract(a, f"argument {i}") for i, a in enumerate(primals)]
        names = [str(i) for i in range(len(types))]
        plain = plain_of(inner)
        if isinstance(plain, Plain):  # a derivative takes the arguments of the function it differentiates
            names = param_names(plain.rev, len(types))
    return types, tuple(checked_tangents(types, tangents, names, inner.name))


def _no_keywords(name: str, kwargs: dict[str, Any]) -> None:
    if kwargs:
        raise AstadTypeError(f"{name} takes its arguments by position, got keywords {', '.join(kwargs)}",
                             hint="pass every argument by position")


def _bind(outer: Derived, argnums: ArgNums | None, args: tuple, kwargs: dict[str, Any]) -> tuple:
    """The values of the parameters of the user's function a derived callable
    differentiates, bound as Python binds them (see :mod:`astad.calling`); as in
    JAX, ``argnums`` must index arguments passed by position."""
    backend = backends.of_args((args, kwargs))
    if backend != backends.NUMPY:  # the programs below are cached by types alone, made for numpy
        raise AstadTypeError(f"{outer.name} takes numpy arrays: derivatives of derivatives, Jacobians and "
                             f"Hessians are not generated for {backend} arrays",
                             hint="astad.grad, astad.value_and_grad, astad.vjp and astad.jvp of your function "
                                  f"run on {backend} arrays; or pass numpy arrays here")
    plain = plain_of(outer)
    if not isinstance(plain, Plain):
        _no_keywords(outer.name, kwargs)
        return args
    n = len(args)
    full = plain.rev.positional(args, kwargs)
    if len(full) != n and argnums is not None:
        api._argnums(argnums, n, outer.name, len(full))
        if any(i < 0 for i in ((argnums,) if isinstance(argnums, int) else argnums)):  # type: ignore[union-attr]
            raise AstadTypeError(f"negative argnums {argnums!r} of {outer.name} with arguments passed by keyword "
                                 "or left to their defaults", hint="argnums counted from the first argument")
    return full


def plain_of(d: Any) -> Any:
    """The user's function a chain of derivatives differentiates (a :class:`Plain`), or the last link
    of the chain that differentiates no :class:`Plain`; a ``jacobian`` is followed through its ``jacfwd``."""
    while not isinstance(d, Plain) and (hasattr(d, "inner") or hasattr(d, "fwd")):
        d = d.fwd.inner if hasattr(d, "fwd") else d.inner
    return d


def value_at(inner: Derived, args: Sequence[Any]) -> Any:
    """``inner`` at the values of the parameters of the user's function (bound: see _bind), called as
    Python binds them again: by keyword from the first that a partial gives by keyword (it would be
    given twice) or that is keyword-only."""
    plain = plain_of(inner)
    if isinstance(plain, Plain) and plain is not inner:
        positional, keywords = plain.rev.call_of(tuple(args))
        return inner(*positional, **keywords)
    return inner(*args)


def derived_of(fn: Any) -> Derived | None:
    return fn if isinstance(fn, Derived) else None


def _inner(fn: Any) -> Derived:
    return fn if isinstance(fn, Derived) else Plain(fn)


def _nums(argnums: ArgNums, n: int, name: str) -> tuple[tuple[int, ...], bool]:
    api._check_argnums(argnums)
    return api._argnums(argnums, n, name)




def _check_grad_types(name: str, prog: Program, nums: Sequence[int]) -> None:
    """As api_grad._check_grad_types, for the program of a gradient (its last parameter: the output's cotangent)."""
    if not pipeline.is_real_scalar(prog.arg_types[-1]):
        raise NonScalarOutputError(f"grad of {name} needs a real scalar output, but it returns {prog.arg_types[-1]}",
                                   hint="astad.jacfwd or astad.jacrev for a non-scalar output, or reduce it (np.sum)")
    for i in nums:
        if not prog.arg_types[i].differentiable:
            raise AstadTypeError(f"argument {i} of {name} is {prog.arg_types[i]}, which has no gradient",
                                 hint="differentiate with respect to float arguments (argnums)")


#: True while a program is made for .source or .ir at the remembered arguments (Derived._shown_with)
_SHOWING: contextvars.ContextVar[bool] = contextvars.ContextVar("astad_showing", default=False)


def _output_of(inner: Derived, args: Sequence[Any]) -> Any:
    """``inner(*args)``; while showing code at remembered arguments (zeros in place of the caller's
    arrays: the user's ``while`` loop may never end there, an ``assert`` or a division fail), a value of
    the output's type made from the types of ``inner``'s program instead, or astad's error."""
    if not _SHOWING.get():
        return value_at(inner, args)
    a = inner._assembly(args)
    return a.build([prog.select(_example_of(prog.fn.body.result.type, inner.name)) for prog, _ in a.parts])


def _example_of(t: Type, name: str) -> Any:
    """A value of type ``t`` (see jacobians.example), tuples, lists and None included."""
    from .ir import ListT, NoneT, Num, TupleT

    if isinstance(t, TupleT):
        return tuple(_example_of(x, name) for x in t.items)
    if isinstance(t, NoneT):
        return None
    if isinstance(t, ListT):
        if t.length is None or t.elem is None:
            raise AstadError(f"astad cannot show the code of {name} at the last call's argument types: its output "
                             f"is a list whose length is known only when it runs",
                             hint="pass example arguments: .source_for(x, ...) or .ir(stage, x, ...)")
        return [_example_of(t.elem, name) for _ in range(t.length)]
    if isinstance(t, Num) and t.shape and not t.known_shape:  # a size known only when running: 2 (not 1, as
        # most are: the program is then of one row of a Jacobian, which any size but 1 shows)
        return np.broadcast_to(np.zeros((), t.dtype), tuple(2 if n is None else n for n in t.shape))
    return example(t)


def _require_scalar(name: str, value: Any) -> None:
    """The output of a function whose gradient is asked for is a real scalar."""
    if not (np.ndim(value) == 0 and is_real(np.asarray(value)) and not isinstance(value, tuple)):
        raise NonScalarOutputError(f"grad of {name} needs a real scalar output, got {type(value).__name__}",
                                   hint="astad.jacfwd or astad.jacrev for a non-scalar output, or reduce it (np.sum)")


class Grad(Derived):
    """``grad(f, argnums)`` (``with_value``: ``value_and_grad``)."""

    def __init__(self, fn: Any, argnums: ArgNums, with_value: bool) -> None:
        api._check_argnums(argnums)
        self.inner = _inner(fn)
        self.argnums, self.with_value = argnums, with_value
        self.name = f"{'value_and_grad' if with_value else 'grad'}({self.inner.name})"
        self._vjps: dict[tuple, Program] = {}  # the reverse program as one, by the kinds of the arguments (api._arg_key)
        functools.update_wrapper(self, getattr(self.inner, "fn", self.inner), updated=())

    def with_argnums(self, fn: Any, argnums: ArgNums) -> "Grad":
        """This derivative of ``fn`` with respect to ``argnums`` (see counted_from_first)."""
        return _grad(fn, argnums, self.with_value)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        twin = counted_from_first(self, len(args))
        if twin is not self:
            return twin(*args, **kwargs)
        args = _bind(self, self.argnums, args, kwargs)
        value, g = self._by_jvps(args)
        self._remember(args)
        return (value, g) if self.with_value else g

    def _by_jvps(self, args: Sequence[Any]) -> tuple[Any, Any]:
        nums, single = _nums(self.argnums, len(args), self.inner.name)
        pairs = self.inner._jvps(tuple(args), basis(args, nums))
        value = pairs[0][0] if pairs else value_at(self.inner, args)
        cols = [t for _, t in pairs]
        _require_scalar(self.inner.name, value)
        return value, from_columns(value, cols, args, nums, single)

    def _vjp_program(self, args: Sequence[Any]) -> Program | None:
        """The VJP program of the inner callable where that is a Plain (cached per kind of arguments); else None."""
        key = tuple(map(api._arg_key, args)) if isinstance(self.inner, Plain) else (None,)
        found = self._vjps.get(key) if None not in key else None
        if found is not None and api._checks_hold(found.checks):  # arguments of kinds seen before
            self.inner.rev.check_code()
            return found
        nums, single = _nums(self.argnums, len(args), self.inner.name)
        if isinstance(self.inner, Plain):
            prog = vjp_of(self.inner.rev, args, nums, single)
            _check_grad_types(self.inner.name, prog, nums)
            if None not in key:
                if len(self._vjps) > 64:
                    self._vjps.clear()
                self._vjps[key] = prog
            return prog
        return None

    def _jvps(self, primals: tuple, tangent_list: list) -> list[tuple[Any, Any]]:
        if self.with_value:
            return super()._jvps(primals, tangent_list)
        prog = self._vjp_program(primals)
        if prog is not None:
            marks = self._zero_d_marks(primals)
            pairs = [prog.jvp(primals, _seed(prog), t) for t in tangent_list]
            return pairs if marks is None else [(fresh.zero_d(marks, v), fresh.zero_d(marks, t)) for v, t in pairs]
        return api_parts.jvps(self._assembly(primals), primals, tangent_list)

    def _zero_d_marks(self, args: Sequence[Any]) -> Any:
        """Where the gradient holds a 0-d array (see fresh.zero_d_marks): that of a 0-d array argument is a
        0-d array, as a call's (api_grad), where the generated code computes a numpy scalar."""
        nums, single = _nums(self.argnums, len(args), self.inner.name)
        marks = [fresh.zero_d_marks(args[i]) for i in nums]
        return marks[0] if single else (marks if any(m is not None for m in marks) else None)

    def _output_like(self, args: Sequence[Any], value: Any) -> Any:
        # (its program is the VJP of the inner one exactly where that is a Plain: see _vjp_program, which
        # program ran already; not looked up again here)
        if self.with_value or not isinstance(self.inner, Plain):
            return value
        return fresh.zero_d(self._zero_d_marks(args), value)

    def _assembly(self, args: Sequence[Any]) -> api_parts.Assembly:
        if self.with_value:
            return super()._assembly(args)
        prog = self._vjp_program(args)
        if prog is not None:
            return api_parts.one(prog, _seed(prog))
        nums, single = _nums(self.argnums, len(args), self.inner.name)
        return self._columns(args, nums, single, gradient=True)

    def program(self, args: Sequence[Any]) -> tuple[Program, tuple]:
        if self.with_value:
            raise NoProgram(f"{self.name} returns a pair (the value and the gradient), which astad does not "
                            "differentiate again", hint=f"differentiate {self.name[len('value_and_'):]}")
        nums, single = _nums(self.argnums, len(args), self.inner.name)
        if not isinstance(self.inner, Plain) and api_parts.n_columns(args, nums) != 1:  # (without running it)
            return super().program(args)
        a = self._assembly(args)
        if len(a.parts) != 1:
            return super().program(args)
        return api_parts.as_program(a, ("grad", tuple(nums), single))


class PlainGrad(api_grad.Gradient, Grad):
    """``grad`` of a function astad reads: called, reverse mode (:class:`astad.api_grad.Gradient`;
    ``.source`` finds the types in the Reverse's last derivative); differentiated again, a :class:`Grad`.
    In one Python-float argument of scalar ones, forward mode (:mod:`astad.scalar_grad`)."""

    def _by_forward(self, rev: Any, args: tuple, i: int, pick: Any) -> Any:
        found = scalar_grad.runner(rev, args, i, pick)
        if found is not None:
            self.ran((skeleton(tuple(args)), i))  # (.source: no reverse derivative was made)
        return found

    def source_for(self, *args: Any, **kwargs: Any) -> str:
        """The generated code a call at ``args`` (and ``kwargs``) runs (see :attr:`source`)."""
        return shown.grad_source(self, args, kwargs)

    @property
    def source(self) -> str:
        """The generated code the last call ran (see :mod:`astad.shown`): the reverse derivative at
        its arguments' types, or in one Python-float argument of scalar ones the forward-mode JVP."""
        return shown.grad_source(self, ())

    def ir(self, stage: str = "optimised", *args: Any, **kwargs: Any) -> str:
        """The IR after a stage of the derivative a call ran (see :attr:`source`)."""
        return shown.grad_ir(self, stage, args, kwargs)

    def __init__(self, fn: Any, argnums: ArgNums, with_value: bool) -> None:
        Grad.__init__(self, fn, argnums, with_value)
        api_grad.Gradient.__init__(self, self.inner.fn, argnums, with_value)  # type: ignore[attr-defined]


def _grad(fn: Any, argnums: ArgNums, with_value: bool) -> Grad:
    return (Grad if isinstance(fn, Derived) else PlainGrad)(fn, argnums, with_value)


# --------------------------------------------------------------------------- the public functions

def grad(fn: Callable[..., Any], argnums: ArgNums = 0) -> Grad:
    """The gradient of a real-scalar-valued function (as ``jax.grad``); ``fn`` may itself be made by astad."""
    return _grad(fn, argnums, with_value=False)


def value_and_grad(fn: Callable[..., Any], argnums: ArgNums = 0) -> Grad:
    """A function returning ``(value, gradient)`` (as ``jax.value_and_grad``)."""
    return _grad(fn, argnums, with_value=True)


def jvp(fn: Callable[..., Any], primals: Sequence[Any], tangents: Sequence[Any]) -> tuple[Any, Any]:
    """``(value, tangent)`` of ``fn`` at ``primals`` along ``tangents`` (as ``jax.jvp``):
    one tangent per positional argument, None for one held constant."""
    last, checked = _LATEST[0]  # the latest call's callable and the code of its kinds, which checks them itself
    if last is fn:
        out = checked(primals, tangents)
        if out is not _MISS:
            return out
    entry = _BY_ID.get(id(fn))  # scalars of kinds this plain function was called with: its generated code
    if entry is not None and entry[5] and entry[0]() is fn:
        mine = entry[5].get(None)  # the checked code of fn's latest kinds (a call of another callable came between)
        if mine is not None and mine is not checked:
            out = mine(primals, tangents)
            if out is not _MISS:
                _LATEST[0] = (fn, mine)
                return out
    if entry is not None and entry[3] and type(primals) is tuple and type(tangents) is tuple and \
            len(primals) == len(tangents) and entry[0]() is fn and entry[1].__code__ is entry[2]:
        both = primals + tangents
        n = len(both)
        hit = entry[3].get((type(both[0]), type(both[1]), type(both[2]), type(both[3])) if n == 4 else (
            type(both[0]), type(both[1])) if n == 2 else tuple(map(type, both)))
        if hit is not None and (hit[2] is None or hit[2]()):  # (generated code, order, holds, output type)
            order = hit[1]  # the arguments with a tangent (None: all)
            pair = hit[0](*both) if order is None else hit[0](*primals, *map(tangents.__getitem__, order))
            if pair[1] is not None and order != ():
                return pair  # scalars own no memory: nothing to copy
            return pair[0], zeros_like_type(hit[3], pair[0])
    if not isinstance(fn, Derived):
        return jvp_of_function(fn, primals, tangents)
    check_pairs(primals, tangents)
    args = _bind(fn, None, tuple(primals), {})
    value, tangent = fn.jvp(args, padded(tuple(tangents), len(primals), len(args), fn.name))
    return value, zeros_like_type(None, value) if tangent is None else tangent


def vjp(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> tuple[Any, Callable[[Any], tuple]]:
    """``(value, pullback)`` of ``fn`` at ``args`` (as ``jax.vjp``); ``fn`` may be made by
    astad when it is one program (``grad(f)``: reverse over reverse)."""
    d = derived_of(fn)
    if d is None:
        return api.vjp(fn, *args, **kwargs)
    full = _bind(d, None, args, kwargs)
    try:
        prog, extras = d.program(full)
    except NoProgram:  # assembled from several programs (a Jacobian's columns): by one JVP per argument element
        value, pullback = api_parts.vjp_by_jvps(d._assembly(full), full)
    else:
        value, pullback = program_vjp(prog, extras, full)
        value = d._output_like(full, value)
    if len(full) == len(args):
        return value, pullback
    return value, lambda ct: pullback(ct)[:len(args)]  # as in JAX: the arguments passed by position


def _seed(prog: Program) -> tuple[Any]:
    """The extras of a vjp program that give a gradient: the output's cotangent 1.0, of the
    output's type (a numpy scalar's is that numpy scalar, see :func:`astad.api.seed`)."""
    return (api.seed(prog.arg_types[prog.n_user]),)

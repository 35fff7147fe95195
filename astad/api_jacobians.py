"""Jacobians: ``jacfwd`` (one JVP per input element) and ``jacrev`` (one VJP per output
element), of plain functions and of callables astad made (:class:`astad.api_higher.Derived`;
``jacfwd(grad(f))`` is a Hessian by forward over reverse, ``jacrev(grad(f))`` reverse over
reverse where the gradient is one program)."""

from __future__ import annotations

import functools
from typing import Any, Callable, Sequence

from . import api, fresh
from . import api_parts
from .api_higher import ArgNums, Derived, Plain, _bind, _inner, _nums, _output_of, value_at, vjp_of
from .api_vjp import program_vjp
from .argnums import counted_from_first, shown_by
from .jacobians import basis, from_columns, from_rows, out_basis, require_real
from .programs import NoProgram, Program


class Jac(Derived):
    """``jacfwd`` (one JVP per input element) or ``jacrev`` (one VJP per output element)."""

    def __init__(self, fn: Any, argnums: ArgNums, mode: str) -> None:
        api._check_argnums(argnums)
        self.inner = _inner(fn)
        self.argnums = argnums
        # jacrev of a derived callable: one VJP of its program per output element when it is one
        # program (reverse over reverse for a gradient); its own JVPs and program by forward mode
        self.mode = mode if isinstance(self.inner, Plain) else "fwd"
        self.rows = mode == "rev"
        self.name = f"jac{mode}({self.inner.name})"
        functools.update_wrapper(self, getattr(self.inner, "fn", self.inner), updated=())

    def with_argnums(self, fn: Any, argnums: ArgNums) -> "Jac":
        """This Jacobian of ``fn`` with respect to ``argnums`` (see counted_from_first)."""
        return Jac(fn, argnums, "rev" if self.rows else "fwd")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        twin = counted_from_first(self, len(args))
        if twin is not self:
            return twin(*args, **kwargs)
        return self.at(_bind(self, self.argnums, args, kwargs))

    def at(self, args: tuple) -> Any:
        """The Jacobian at the values of the parameters (bound: see _bind)."""
        nums, single = _nums(self.argnums, len(args), self.inner.name)
        if self.mode == "rev":
            self._remember(args)
            return self._rev(args, nums, single)
        if self.rows:
            found = self._rows_of_program(args, nums, single)
            if found is not None:
                self._remember(args)
                return found[0]
        pairs = self.inner._jvps(tuple(args), basis(args, nums))
        value = pairs[0][0] if pairs else value_at(self.inner, args)
        cols = [t for _, t in pairs]
        self._remember(args)
        return from_columns(value, cols, args, nums, single, self.rows)

    def _rev(self, args: Sequence[Any], nums: Sequence[int], single: bool) -> Any:
        require_real(args, nums)
        value, pullback = self.inner.rev.vjp_at(tuple(args), len(args))
        held = fresh.owners(args)
        rows = [tuple(pullback(ct)[i] for i in nums) for ct in out_basis(value)]
        rows = [fresh.distinct(r, set(held)) for r in rows]
        return from_rows(value, rows, args, nums, single)

    def _shown_what(self, args: Sequence[Any], kwargs: dict[str, Any] | None = None) -> tuple[Any, str]:
        """jacrev of a derivative shows the reverse program over the derivative's (reverse over reverse)."""
        twin = shown_by(self, tuple(args))
        if twin is not self:
            found = twin._shown_what(args, kwargs)
            self.__dict__["_last_twin"] = twin
            return found
        if self.rows and not isinstance(self.inner, Plain) and (args or kwargs or self._last_args is not None):
            try:
                return self._shown_with(args, lambda a: (self.inner.program(a)[0].reverse(), "reverse over reverse"),
                                        kwargs)
            except NoProgram:
                pass
        return super()._shown_what(args, kwargs)

    def _rows_of_program(self, args: Sequence[Any], nums: Sequence[int], single: bool) -> tuple[Any] | None:
        """The Jacobian of a derived callable by one VJP of its program per output element
        (None when it is not one program: then by JVPs)."""
        try:
            prog, extras = self.inner.program(args)
        except NoProgram:
            return None
        require_real(args, nums)
        value, pullback = program_vjp(prog, extras, args)
        rows = [tuple(pullback(ct)[i] for i in nums) for ct in out_basis(value)]
        return (from_rows(value, rows, args, nums, single),)

    def _vjp_program(self, args: Sequence[Any], nums: Sequence[int], single: bool) -> Program:
        return vjp_of(self.inner.rev, args, nums, single)  # type: ignore[attr-defined]

    def _jvps(self, primals: tuple, tangent_list: list) -> list[tuple[Any, Any]]:
        return api_parts.jvps(self._assembly(primals), primals, tangent_list)

    def _assembly(self, args: Sequence[Any]) -> api_parts.Assembly:
        nums, single = _nums(self.argnums, len(args), self.inner.name)
        if self.mode == "rev":
            require_real(args, nums)
            return api_parts.vjp_rows(self._vjp_program(args, nums, single), _output_of(self.inner, args), args,
                                      nums, single)
        return self._columns(args, nums, single, rows=self.rows)

    def program(self, args: Sequence[Any]) -> tuple[Program, tuple]:
        nums, single = _nums(self.argnums, len(args), self.inner.name)
        if self.mode == "fwd" and api_parts.n_columns(args, nums) != 1:  # (known without running the function)
            return super().program(args)
        a = self._assembly(args)
        if len(a.parts) != 1:
            return super().program(args)
        return api_parts.as_program(a, (self.mode, self.rows, tuple(nums), single))


# --------------------------------------------------------------------------- the public functions

def jacfwd(fn: Callable[..., Any], argnums: ArgNums = 0) -> Jac:
    """The Jacobian by forward mode, one JVP per input element: shape ``out.shape + in.shape``
    (a tuple ``argnums`` gives a tuple of Jacobians, a structured output a structure of them)."""
    return Jac(fn, argnums, "fwd")


def jacrev(fn: Callable[..., Any], argnums: ArgNums = 0) -> Jac:
    """The Jacobian by reverse mode, one VJP per output element; when ``fn`` is made by astad and is one
    program, reverse mode over that program (``jacrev(grad(f))``: reverse over reverse), else by JVPs."""
    return Jac(fn, argnums, "rev")

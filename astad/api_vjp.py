"""VJPs of callables astad made: reverse mode over their IR program.

``astad.vjp(astad.grad(f), x)`` and ``jacrev`` of a derivative run the reverse
macro over the derivative's program (:meth:`astad.programs.Program.reverse`;
for a gradient, reverse over reverse).  A program's output is ``select`` of
what its generated code returns (a structural, linear map: it picks and
regroups leaves), so the pullback first transposes ``select``: the cotangent
of each leaf ``select`` keeps is placed where that leaf came from; the leaves
it drops get zero cotangents.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

from . import fresh
from .api import check_cotangent_like, kept
from .api_forward import zeros_like_type
from .programs import Program


class _Leaf:
    """A marker for the ``k``-th item of the generated code's output (to see where ``select`` puts it)."""

    __slots__ = ("k",)

    def __init__(self, k: int) -> None:
        self.k = k


def _place(marked: Any, ct: Any, raw: list) -> None:
    """Put the leaves of ``ct`` where the markers of ``marked`` (same structure) came from."""
    if isinstance(marked, _Leaf):
        raw[marked.k] = ct
    elif isinstance(marked, dict):
        for key, m in marked.items():
            _place(m, ct[key], raw)
    elif isinstance(marked, (tuple, list)):
        for m, c in zip(marked, ct):
            _place(m, c, raw)


def transpose_select(select: Callable[[Any], Any], raw_value: Any) -> Callable[[Any], Any]:
    """The transpose of ``select`` at an output ``raw_value`` of the generated code (a tuple,
    whose items may be tuples again: a JVP's program returns ``(value, tangent)``)."""
    leaves: list = []

    def mark(v: Any, top: bool = False) -> Any:
        if isinstance(v, tuple) if top else type(v) is tuple:
            return tuple(mark(x) for x in v)
        leaves.append(v)
        return _Leaf(len(leaves) - 1)

    marks = mark(raw_value, top=True)
    marked = select(marks)

    def rebuilt(m: Any, raw: list) -> Any:
        return tuple(rebuilt(x, raw) for x in m) if isinstance(m, tuple) else raw[m.k]

    def transposed(ct: Any) -> Any:
        raw = [zeros_like_type(None, v) for v in leaves]
        _place(marked, ct, raw)
        return rebuilt(marks, raw)

    return transposed


def program_vjp(prog: Program, extras: Sequence[Any], args: Sequence[Any]) -> tuple[Any, Callable[[Any], tuple]]:
    """``(value, pullback)`` of ``prog`` at ``args`` (its extras given): the pullback
    maps the cotangent of the value to one cotangent per argument (None for a discrete one)."""
    d = prog.reverse()
    raw_value, residuals = d.forward(*args, *extras)
    # the pullback may be called after the caller changed an argument, the value or a constant array in
    # place: it keeps copies of those its residuals share memory with (as astad.api.Pullback's)
    residuals = kept(d, residuals, fresh.owners(args, extras, raw_value))
    if prog.unselect is None:
        to_raw = transpose_select(prog.select, raw_value)
    else:  # (select maps a Jacobian's one column or row into its shape: numpy, not structural; see api_parts)
        assert prog.base_select is not None
        inner_t, unselect = transpose_select(prog.base_select, raw_value), prog.unselect
        to_raw = lambda ct: inner_t(unselect(ct))  # noqa: E731
    n = prog.n_user

    value = prog.select(raw_value)
    marks = [fresh.zero_d_marks(a) for a in args[:n]]  # 0-d arrays' cotangents: 0-d arrays, as JAX's

    def pullback(ct: Any) -> tuple:
        check_cotangent_like(value, ct)
        return tuple(fresh.zero_d(m, c) for m, c in zip(marks, tuple(d.backward(residuals, to_raw(ct)))[:n]))

    return value, pullback

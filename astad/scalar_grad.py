"""The gradient in one Python-float argument, by forward mode.

``grad(newton)(7.3)`` asks for the derivative along one direction: forward mode
computes it in one pass, each tangent next to its primal (no tape, no backward
loop over it), where reverse mode records what each iteration needs and runs
the iterations again in reverse.  When every argument is a scalar and the one
differentiated is a Python float, :func:`runner` gives ``grad`` the generated
``<name>_jvp`` with its tangent parameter made the local ``a_t = 1.0``, and its
``return value, tangent`` made to return what the caller gets: ``(value,
tangent)``, ``tangent``, ``(value, (tangent,))``, ...  The tangent is returned
as a Python float, as reverse mode returns the cotangent of a float argument
(``float(t)`` where it is a numpy scalar; ``0.0`` where the output does not
depend on the argument).  The derivative is the same to rounding, not
bit-for-bit: forward mode sums the chain rule's products in another order.

Where forward mode refuses the function, or its output is not a real scalar,
:func:`runner` returns None and ``grad`` uses reverse mode (which explains a
refusal in its own words).
"""

from __future__ import annotations

import ast
import copy
import weakref
from typing import Any, Callable

from . import deep, guards, pipeline
from .api_forward import forward_of
from .errors import AstadError
from .fused import Pick
from .guards import pair_returning

_RUNNERS: "weakref.WeakKeyDictionary[Any, dict]" = weakref.WeakKeyDictionary()


def runner(rev: Any, args: tuple, i: int, pick: Pick) -> tuple[Callable[..., Any], Any] | None:
    """``(run, holds)``: ``run(*args)`` returns what ``grad`` of ``rev``'s function in
    argument ``i`` returns (``pick``: see astad.fused), ``holds()`` whether the names
    its code read still mean the same objects (None: it read none); None where
    forward mode does not apply (see the module docstring)."""
    try:
        d, _, holds = forward_of(rev._root).entry(args, frozenset((i,)))
    except AstadError:
        return None
    if not pipeline.is_real_scalar(d.out_type):
        return None
    runs = _RUNNERS.get(d)
    if runs is None:
        runs = _RUNNERS[d] = {}
    run = runs.get(pick)
    if run is None:
        run = runs[pick] = _compiled(d, pick) or _wrapped(d.jvp, pick)
    return run, holds


def as_float(t: Any) -> float:
    """A tangent as the Python float reverse mode gives (None: the output does not depend on the argument)."""
    return 0.0 if t is None else float(t)


def _wrapped(jvp: Callable[..., Any], pick: Pick) -> Callable[..., Any]:
    _, single, with_value = pick

    def run(*args: Any) -> Any:
        value, tangent = jvp(*args, 1.0)
        g = tangent if type(tangent) is float else as_float(tangent)
        g = g if single else (g,)
        return (value, g) if with_value else g

    return run


def _compiled(d: Any, pick: Pick) -> Callable[..., Any] | None:
    """The generated jvp as the gradient's one function (see the module docstring); None where
    its text is not one plain function ending in ``return value, tangent``."""
    found = pair_returning(d.leaf_jvp, d.source, len(d.arg_types) + 1)
    if found is None:
        return None
    fn, namespace, body, ret = found
    names = guards.names_of(fn, namespace)
    value, tangent = names.fresh("value"), names.fresh("tangent")
    to_float = names.of(as_float, "as_float")
    name = names.fresh(f"{fn.name}_grad")
    _, single, with_value = pick
    g: ast.expr = ast.Name(id=tangent, ctx=ast.Load())
    g = g if single else ast.Tuple(elts=[g], ctx=ast.Load())
    out = ast.Tuple(elts=[ast.Name(id=value, ctx=ast.Load()), g], ctx=ast.Load()) if with_value else g
    tail = deep.parse_ast(f"{value} = 0\n{tangent} = 0\nif type({tangent}) is not float:\n"
                     f"    {tangent} = {to_float}({tangent})\n").body
    tail[0].value, tail[1].value = ret.elts  # type: ignore[attr-defined]
    seed = fn.args.args[-1].arg  # the tangent of the argument: 1.0
    f = copy.copy(fn)
    f.name, f.decorator_list = name, []
    f.args = copy.copy(fn.args)
    f.args.args = fn.args.args[:-1]
    f.body = [ast.Assign(targets=[ast.Name(id=seed, ctx=ast.Store())], value=ast.Constant(1.0)), *body[:-1], *tail,
              ast.Return(value=out)]
    return guards.compiled(f, namespace, f"<astad: {d.name} grad by forward mode>", names)

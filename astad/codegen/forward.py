"""Codegen for forward mode: the forward macro's optimised output -> one Python function.

``<name>_jvp(x, w, x_t, w_t)`` returns ``(value, tangent)``: the primal
parameters, then one tangent per parameter that has one.  Printed by the same
statement printer as reverse mode (:class:`astad.codegen.python.Printer`): inlined
temporaries, ``# line N: ...`` headings from the user's source; a loop variable
bound where its next value is computed (:mod:`.carried`), and in long code the
names of temporaries reused (:mod:`.reuse`).
"""

from __future__ import annotations

import libcst as cst

from .. import backends
from .python import Printer, funcdef, module_source
from .reuse import reused
from ..ir import Function, MakeTuple
from ..optimise.scalars import ScalarPlan, tested_abs


def generate_forward(fn: Function, header: str, primal_count: int) -> str:
    """The module's source text: imports and ``<name>_jvp``."""
    body = fn.body
    numpy = backends.current() == backends.NUMPY  # ``abs(step)`` for ``np.abs(step) > tol`` (optimise/scalars.py)
    printer = Printer(body, in_place=backends.allows_in_place(), plan=ScalarPlan(calls=tested_abs(body)) if numpy else None)
    printer.rename_carried = True
    final = body.binds[-1] if body.binds else None
    returns_pair = final is not None and final.targets == (body.result,) and isinstance(final.rhs, MakeTuple)
    for b in body.binds[:-1] if returns_pair else body.binds:
        printer.bind(b)
    if returns_pair:
        value = cst.Tuple([cst.Element(printer.atom(a)) for a in final.rhs.items], lpar=[], rpar=[])  # type: ignore[union-attr]
    else:
        value = printer.atom(body.result)
    printer.returns(value)
    name = fn.name
    params = [p.name for p in fn.params]
    doc = (f"Value and tangent of {name}: ({', '.join(params[:primal_count])}"
           f"{'; ' if params[primal_count:] else ''}{', '.join(params[primal_count:])}) -> (value, tangent).")
    return module_source(header, [funcdef(f"{name}_jvp", params, reused(printer.lines), doc)])

"""Codegen for forward mode: the forward macro's optimised output -> one Python function.

``<name>_jvp(x, w, x_t, w_t)`` returns ``(value, tangent)``: the primal
parameters, then one tangent per parameter that has one.  Printed by the same
statement printer as reverse mode (:class:`astad.codegen.python.Printer`): inlined
temporaries, ``# line N: ...`` headings from the user's source; a loop variable
bound where its next value is computed (:mod:`.carried`), and in long code the
names of temporaries reused (:mod:`.reuse`).
"""

from __future__ import annotations

import dataclasses

import libcst as cst

from .. import backends
from .loops import zipped_rows
from .module import funcdef, module_source
from .python import Printer
from .reuse import reused
from ..ir import Bind, Block, Function, If, Loop, MakeTuple, Var
from ..ir.walk import substitute
from ..names import Namer, program_names
from ..optimise.scalars import ScalarPlan, tested_abs


def generate_forward(fn: Function, header: str, primal_count: int) -> str:
    """The module's source text: imports and ``<name>_jvp``."""
    body = fn.body
    numpy = backends.current() == backends.NUMPY
    zipped = numpy  # (Dask and CuPy arrays keep their indexing)
    if zipped:
        body = named_rows(body, Namer.adding_to(program_names(fn), fn.name))
    # ``abs(step)`` for ``np.abs(step) > tol`` (optimise/scalars.py)
    printer = Printer(body, in_place=backends.allows_in_place(), plan=ScalarPlan(calls=tested_abs(body)) if numpy else None)
    printer.rename_carried = True
    printer.zip_elements = zipped
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


def named_rows(block: Block, namer: Namer) -> Block:
    """``block`` with the rows a loop reads (:func:`astad.codegen.loops.zipped_rows`) that are
    temporaries named after their arrays: ``for x_i, x_i_t in zip(x, x_t)`` (a fresh name each)."""
    binds = []
    for b in block.binds:
        rhs = b.rhs
        if isinstance(rhs, If):
            rhs = If(rhs.cond, named_rows(rhs.then, namer), named_rows(rhs.orelse, namer))
        elif isinstance(rhs, Loop):
            body = named_rows(rhs.body, namer)
            env = {t.name: Var(namer.fresh(f"{x.name[:-2]}_i_t" if x.name.endswith("_t") else f"{x.name}_i"), t.type)
                   for t, x in zipped_rows(rhs) or () if Namer.is_temp(t.name) and not Namer.is_temp(x.name)}
            if env:
                body = Block(tuple(Bind(tuple(env.get(t.name, t) for t in bb.targets), substitute(bb.rhs, env), bb.loc)
                                   for bb in body.binds), env.get(body.result.name, body.result)
                             if isinstance(body.result, Var) else body.result)
            rhs = dataclasses.replace(rhs, body=body)
        binds.append(Bind(b.targets, rhs, b.loc) if rhs is not b.rhs else b)
    return Block(tuple(binds), block.result)

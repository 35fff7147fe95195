"""The one table of primitives, read by both macros.

For each numpy function or operator the table holds its implementation (the
IR interpreter runs it), its type/shape rule, the Python it is printed as,
the kind of its derivative (:class:`DerivativeKind`) and its derivative rules
in both directions: the JVP (``jvp(b, p, out, tangents) -> tangent``, read by
the forward macro) and the VJP (``vjp(b, p, out, ct) -> cotangents``, read by
the reverse macro).

**The choice: one description per primitive, both rules derived from it.**
JAX writes a JVP rule per primitive and gets reverse mode by transposing the
linear primitives the JVP is made of; CHAD-ref keeps a forward (``dfOp``) and
a reverse (``drOp``) derivative side by side in one table.  astad takes
JAX's idea — a derivative is given once and the other direction follows by
transposition — but applies it *per entry, when the table is built*, not to
a whole linearised program: the reverse macro keeps producing the same
direct, readable cotangent code (no linearise-then-transpose pass, no
residuals of a JVP program to keep), and an entry that needs its own rules
(kinks, nans, exact products at zeros) keeps CHAD-ref's side-by-side form.
So an entry is written in one of four shapes (:mod:`astad.rules.derive`):

* an elementwise function of one argument by its derivative ``f'(x)``:
  JVP ``t * f'(x)``, VJP ``ct * f'(x)``;
* an elementwise function of several arguments by one partial derivative per
  argument, a pointwise linear map ``v -> v * d_i f``: the JVP sums them over
  the tangents and broadcasts; the VJP applies each to the cotangent and
  undoes broadcasting (``sum_to``);
* a function linear in some arguments (reshape, transpose, slicing, sum,
  concatenate, matmul in each argument, list operations) by itself and its
  transpose: the JVP is the same primitive applied to the tangents, the VJP
  the transpose;
* anything else by an explicit JVP and VJP side by side.

Primitives the reverse macro and the optimiser make (kind BACKWARD_ONLY) have
JVPs too — forward mode runs over reverse-mode output for Hessians — and,
being mostly linear, their transposes as VJPs.

Where to add a function: ``elementwise.py`` and ``elementwise_more.py`` (ufuncs and
operators; ``math_functions.py`` maps Python's ``math`` onto them),
``reductions.py``, ``scans.py`` (cumulative sums and products, ``diff``,
``sort``), ``shape.py`` (movers, joins, constructors), ``structure.py``
(flips, rolls, repeats, gathers, pads), ``einsum.py`` (contractions), ``indexing.py``,
``linalg.py``, ``decompositions.py``, ``lists.py``, ``python.py`` (builtins, effects), ``derivative_code.py`` (what
the macros make); each module registers its entries.  Then its sample
arguments in tests/samples_<family>.py (merged into tests/test_primitive_rules.py), which also drive
tests/test_rules_both_directions.py (JVP and VJP against finite differences,
and the transpose identity, for every entry).
"""

from __future__ import annotations

from . import (elementwise, elementwise_more, math_functions, reductions, scans, shape, structure, einsum, indexing, updates,  # noqa: F401
               linalg, adjugate, decompositions, lists, derivative_code, python, calls)  # (they register)
from .derive import expand_reduced, like_scalar, shape_atom, sum_to, zeros_of
from .indexing import index_exprs, index_shape, is_advanced, shift_index
from .table import (RUNTIME, TABLE, DerivativeKind, JvpRule, Primitive, ShapeError, VjpRule, has_effect, infer, norm_axes, num,
                    register, with_kind_rule)
from .types import broadcast_shapes, elementwise as elementwise_type

__all__ = ["TABLE", "DerivativeKind", "Primitive", "ShapeError", "infer", "RUNTIME", "JvpRule", "VjpRule", "register",
           "with_kind_rule", "has_effect", "broadcast_shapes", "elementwise_type", "index_exprs", "index_shape", "is_advanced",
           "shift_index", "expand_reduced",
           "like_scalar", "shape_atom", "sum_to", "zeros_of", "norm_axes", "num"]

"""Sample arguments of the reductions entries added to the rule table (merged into
``CASES`` of tests/test_primitive_rules.py, so tests/test_rules_both_directions.py
checks each entry's JVP and VJP against finite differences).  The entries made
only in derivative code (``linear_scan``, ``shift_along``, ``permute``,
``trace_embed``) are checked there too."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from astad.ir import Num
from rule_specs import A, B, C, I, L, M, NZ, P, POS, case  # noqa: F401

T3 = A((2, 3, 4))


@dataclass(frozen=True)
class Perm:
    """An int64 array of ``shape`` whose lines along ``axis`` are permutations (what ``permute`` gathers by)."""
    shape: tuple = (4,)
    axis: int = 0

    def type(self) -> Num:
        return Num(self.shape, "int64")

    def draw(self, rng: np.random.Generator) -> np.ndarray:
        return np.argsort(rng.random(self.shape), axis=self.axis)


CASES: dict[str, list[tuple]] = {
    "sum_initial": [case(M, P(), axis=0), case(A((5,)), P()), case(M, A(()), axis=1, keepdims=True),
                    case(T3, P(), axis=(0, 2))],
    "prod_initial": [case(M, P(), axis=0), case(A((5,)), P()), case(M, A(()), axis=1, keepdims=True),
                     case(T3, P(), axis=(0, 2))],
    "var": [case(M), case(M, axis=0), case(M, axis=1, keepdims=True), case(T3, axis=(0, 2), ddof=1),
            case(A((5,)), ddof=2), case(A(())), case(M, axis=None, keepdims=True)],
    "std": [case(M), case(M, axis=0, ddof=1), case(A((1, 3)), axis=0), case(T3, axis=(0, 2), keepdims=True),
            case(A(()))],
    "nanmax": [case(M), case(M, axis=0), case(T3, axis=(1, 2), keepdims=True)],
    # np.sum(x, where=mask)
    "masked_sum": [case(M, B((2, 3))), case(M, B((3,)), axis=0), case(T3, B((2, 3, 4)), axis=(0, 2), keepdims=True),
                   case(M, B((2, 1)), axis=1, initial=1.5)],
    "nanmin": [case(M), case(M, axis=1), case(T3, axis=2)],
    "trace": [case(A((3, 3))), case(A((3, 4)), offset=1), case(A((4, 3)), offset=-2),
              case(T3, axis1=2, axis2=0), case(T3, offset=1, axis1=1, axis2=-1)],
    "astype": [case(M, dtype="float64"), case(A(()), dtype="float64", scalar=True), case(I((3,)), dtype="float64")],
    "item": [case(A((1,))), case(A((1, 1))), case(A(()))],
    "cumsum": [case(A((4,)), axis=0), case(M, axis=1), case(T3, axis=None), case(A(()), axis=None), case(M, axis=-2),
               case(M, axis=0, reverse=True)],
    "cumprod": [case(A((4,)), axis=0), case(M, axis=1), case(T3, axis=None), case(T3, axis=1), case(P(), axis=None)],
    "diff": [case(A((5,))), case(M, axis=0), case(T3, n=2, axis=1), case(A((4,)), n=3), case(M, n=1, axis=-1, pad=True),
             case(A((3,)), n=2, axis=0, pad=True)],
    "sort": [case(A((5,))), case(M, axis=0), case(T3, axis=1), case(T3, axis=None)],
    "linear_scan": [case(A((4,)), A((4,)), axis=0), case(M, M, axis=1), case(M, M, axis=0, reverse=True),
                    case(T3, T3, axis=2, reverse=True)],
    "shift_along": [case(A((4,)), by=1, axis=0, fill=1.0), case(M, by=-1, axis=1), case(T3, by=1, axis=2)],
    "permute": [case(A((4,)), Perm(), axis=0), case(M, Perm((2, 3), 0), axis=0),
                case(T3, Perm((2, 3, 4), 2), axis=2)],
    "trace_embed": [case(P(), A((3, 4)), offset=1), case(A((3,)), T3, axis1=0, axis2=2)],
    # discrete
    "argmax": [case(M), case(M, axis=0), case(T3, axis=1, keepdims=True)],
    "argmin": [case(M), case(M, axis=1)],
    "argsort": [case(A((5,))), case(M, axis=0), case(T3, axis=None)],
    "all": [case(B((2, 3))), case(M, axis=0), case(B((2, 3)), axis=1, keepdims=True)],
    "any": [case(B((2, 3))), case(B((2, 3)), axis=(0, 1))],
    "count_nonzero": [case(B((2, 3))), case(B((2, 3)), axis=0), case(M, axis=1, keepdims=True)],
    "astype_discrete": [case(M, dtype="int64"), case(M, dtype="bool")],
}

"""Sample arguments of the indexing entries added to the rule table (merged into
``CASES`` of tests/test_primitive_rules.py, so tests/test_rules_both_directions.py
checks each entry's JVP and VJP against finite differences)."""

from __future__ import annotations

from rule_specs import A, B, C, I, L, M, NZ, P, POS, case  # noqa: F401

ALL = ("slice", None, None, None)

CASES: dict[str, list[tuple]] = {
    # integer arrays (repeats drawn often: the transpose adds them), masks, steps, np.newaxis
    "getitem": [case(A((4, 3)), I((5,), 0, 4), index=(("array", 1),)),
                case(A((4, 3)), I((2, 2), -3, 3), index=(ALL, ("array", 1))),
                case(A((4, 3)), I((3,), 0, 4), I((3,), 0, 3), index=(("array", 1), ("array", 2))),
                case(A((2, 4, 3)), I((3,), 0, 3), index=(1, ALL, ("array", 1))),
                case(A((2, 4, 3)), I((3,), 0, 2), I((3,), 0, 3), index=(("array", 1), ALL, ("array", 2))),
                case(A((4, 3)), B((4, 3)), index=(("mask", 1),)),
                case(A((4, 3)), B((4,)), index=(("mask", 1), 2)),
                case(A((6,)), index=(("slice", None, None, -1),)),
                case(A((7,)), index=(("slice", 1, None, 3),)),
                case(A((7, 2)), index=(("slice", 5, 0, -2), None))],
    "setitem": [case(A((4, 3)), A((3,)), index=(1,)),
                case(A((4, 3)), P(), index=(("slice", 1, 3, None),)),
                case(A((4, 3)), A((4,)), index=(ALL, 2)),
                case(A((6,)), A((3,)), index=(("slice", None, None, -2),)),
                case(A((5,)), A((4,)), I((4,), 0, 5), index=(("array", 2),)),
                case(A((4, 3)), A(()), I((3,), 0, 3), index=(ALL, ("array", 2))),
                case(A((4, 3)), P(), B((4, 3)), index=(("mask", 2),)),
                case(A((4, 3)), A((3,)), I(None, 0, 4), index=(("arg", 2),)),
                case(A((6,)), A(()), I(None, 0, 3), I(None, 3, 6), index=(("slice", ("arg", 2), ("arg", 3), None),))],
    # np.add.at(y, idx, v) as add_at(y, v, *ix, index): repeated indices (drawn often) add
    "add_at": [case(A((5,)), A((4,)), I((4,), 0, 5), index=(("array", 2),)),
               case(A((5,)), P(), I((6,), 0, 3), index=(("array", 2),)),
               case(A((4, 3)), A((3,)), index=(1,)),
               case(A((4, 3)), A((3, 3)), I((3,), 0, 4), index=(("array", 2),)),
               case(A((4, 3)), A(()), I((3,), 0, 3), index=(ALL, ("array", 2)))],
    "last_writes": [case(A((5,)), I((4,), 0, 5), index=(("array", 1),))],
}

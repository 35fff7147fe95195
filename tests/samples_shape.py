"""Sample arguments of the shape entries added to the rule table (merged into
``CASES`` of tests/test_primitive_rules.py, so tests/test_rules_both_directions.py
checks each entry's JVP and VJP against finite differences).  The entries made
only in derivative code (``take_transpose``, ``add_along_axis``, ``unpad_edge``)
have theirs here too: test_rules_both_directions reads them from ``CASES``."""

from __future__ import annotations

from rule_specs import A, B, C, I, L, M, NZ, P, POS, case  # noqa: F401

CASES: dict[str, list[tuple]] = {
    # rules/einsum.py
    "einsum": [case(M, A((3, 4)), subscripts="ij,jk->ik"), case(M, A((3, 4)), subscripts="ij,jk"),
               case(A((3, 3)), subscripts="ii->i"), case(A((3, 3)), subscripts="ii"), case(M, subscripts="ij->i"),
               case(A((2, 2, 3)), A((2,)), subscripts="iij,k->jk"), case(A((2, 1, 3)), A((4, 3)), subscripts="...i,...i->..."),
               case(A((1, 3)), A((4, 3)), subscripts="ij,ij->ij"), case(P(), A(), subscripts=",i->i"),
               case(M, A((3,)), A((2,)), subscripts="ij,j,i", optimize=True), case(M, I((3,)), subscripts="ij,j->i"),
               case(A((2, 3, 4)), subscripts="...ij->...ji"), case(M, subscripts="ij->"),
               case(A((1, 3, 1)), A((2, 1, 3)), subscripts="abc,abc->b"), case(A((3, 1)), A((1, 2)), subscripts="ij,ij->")],
    "tensordot": [case(A((2, 3, 4)), A((3, 4, 2)), axes=2), case(M, A((2, 4)), axes=((0,), (0,))), case(A(), A((3, 2)), axes=1),
                  case(M, A((2,)), axes=0)],
    "inner": [case(M, A((4, 3))), case(A(), A())],
    "vdot": [case(M, A((3, 2))), case(A(), A())],
    "kron": [case(M, A((2, 2))), case(A(), A((2, 2))), case(A((2,)), A())],
    # rules/structure.py
    "squeeze": [case(A((1, 3, 1))), case(A((1, 3, 1)), axis=2), case(A((1, 3, 1)), axis=(0, 2))],
    "flip": [case(M), case(M, axis=1), case(A((2, 3, 2)), axis=(0, 2))],
    "roll": [case(A((5,)), shift=2), case(M, shift=1, axis=1), case(M, shift=(1, -1), axis=(0, 1)), case(M, shift=4)],
    "tile": [case(M, reps=2), case(A(), reps=(2, 2)), case(M, reps=(2, 1, 3))],
    "repeat": [case(M, repeats=2), case(M, repeats=3, axis=0), case(M, I((3,), 0, 3), axis=1),
               case(A(), I((3,), 0, 3)), case(A((2, 3, 2)), I((3,), 0, 3), axis=-2)],
    "take": [case(M, I((4,), -6, 6)), case(M, I((2, 2), 0, 3), axis=1), case(M, I(None, 0, 2), axis=0),
             case(A((5,)), I((3,), 0, 2), axis=0), case(A((2, 3, 2)), I((4,), 0, 3), axis=-2)],
    "take_along_axis": [case(M, I((2, 4), 0, 3), axis=1), case(M, I((1, 3), 0, 2), axis=0), case(A((4,)), I((6,), 0, 4), axis=None),
                        case(A((3, 1)), I((3, 2), 0, 1), axis=1)],
    "pad": [case(M, pad_width=1, mode="constant"), case(M, P(), pad_width=((1, 0), (0, 2)), mode="constant"),
            case(M, pad_width=((1, 2), (2, 1)), mode="edge"), case(A((1,)), pad_width=2, mode="edge")],
    "linspace": [case(P(), P(), num=5), case(A(()), C(2.0), num=4, endpoint=False), case(P(), A(()), num=1)],
    "full": [case(P(), C((2, 3))), case(A((3,)), C((2, 3)))],
    "tri": [case(C(3)), case(C(3), C(4), k=1)],
    # made only in derivative code
    "take_transpose": [case(A((4, 3)), M, I((4,), -2, 2), axis=0), case(A((2, 2, 2)), A((2, 3)), I((2, 2), 0, 3), axis=1),
                       case(A((2, 3)), M, I((3,), 0, 3), axis=-1)],
    "add_along_axis": [case(A((2, 4)), M, I((2, 4), 0, 3), axis=1), case(A((5,)), A((3,)), I((5,), 0, 3), axis=None)],
    "unpad_edge": [case(A((5, 6)), pad_width=((1, 2), (2, 1))), case(A((4,)), pad_width=((0, 3),))],
}

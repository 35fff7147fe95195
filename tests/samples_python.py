"""Sample arguments of the python entries added to the rule table (merged into
``CASES`` of tests/test_primitive_rules.py, so tests/test_rules_both_directions.py
checks each entry's JVP and VJP against finite differences)."""

from __future__ import annotations

from rule_specs import A, B, C, I, L, M, NZ, P, POS, case  # noqa: F401

_MESSAGE = (("str", "x ="), ("arg", 0), ("fstr", (("text", "y="), ("field", ("arg", 1), None, ".2f"))))

CASES: dict[str, list[tuple]] = {
    # kind RULE
    "convert_float": [case(A(()), dtype="float64", py=True), case(P(), dtype="float64", py=False),
                      case(A(), dtype="float64", py=False), case(I(None), dtype="float64", py=True)],
    "py_abs": [case(P()), case(A(()))],
    "py_max": [case(P(), P()), case(P(), C(0.5)), case(A(()), P()), case(P(), I(None))],
    "py_min": [case(P(), P()), case(C(0.5), P()), case(P(), A(()))],
    "list_set": [case(L(3), A((2,)), C(1)), case(L(3), A((2,)), C(-1)), case(L(3), A((2,)), I(None, 0, 3)),
                 case(L(2, ()), P(), C(0))],
    # xs[a:b:c] of a run-time list (bounds known when transforming)
    "list_slice": [case(L(4), lower=1), case(L(5), step=2), case(L(4), lower=-1, upper=0, step=-1),
                   case(L(3, ()), upper=-1)],
    # Python's sum of a run-time list, with and without a start (a scalar start with array elements)
    "py_sum": [case(L(3)), case(L(3, ())), case(L(3, ()), P()), case(L(3), A((2,))), case(L(2), P()), case(L(1, ()))],
    # Python's sum of an array: its rows added left to right from 0 (or a start broadcast to a row)
    "py_sum_rows": [case(A((4,))), case(A((3, 2))), case(A((3,)), P()), case(A((3, 2)), A((2,))), case(A((2, 2)), P())],
    # kind ZERO
    "py_round_digits": [case(P(-4, 4), ndigits=1), case(A((), -4, 4), ndigits=0)],
    # kind DISCRETE
    "convert_discrete": [case(P(), dtype="int64", py=True), case(A(), dtype="int64", py=False),
                         case(P(), dtype="bool", py=True)],
    "py_round": [case(P(-4, 4)), case(A((), -4, 4))],
    "index_of_max": [case(A((5,))), case(L(3, ()))],
    "index_of_min": [case(A((5,))), case(L(3, ()))],
    # effects (kind DISCRETE, result None): run for what they do; tests/test_python_builtins.py checks them
    "print": [case(P(), A(), layout=_MESSAGE)],
    "raise": [case(P(), A(), exc="ValueError", layout=_MESSAGE)],
    "assert": [case(C(True), P(), A(), layout=("fstr", (("field", ("arg", 0), "r", None),)))],
    # real_power: a Python power's value, tested (here a real one: no error); tests/test_python_float_powers.py
    # checks the refusal of complex ones
    "real_power": [case(P(), file="f.py", line=3, col=5)],
    # keep: values nothing reads, computed because computing them may raise (tests/test_adversarial_14.py)
    "keep": [case(P()), case(A(), A((2, 3)))],
}

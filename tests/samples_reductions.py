"""Sample arguments of the reductions entries added to the rule table (merged into
``CASES`` of tests/test_primitive_rules.py, so tests/test_rules_both_directions.py
checks each entry's JVP and VJP against finite differences)."""

from __future__ import annotations

from rule_specs import A, B, C, I, L, M, NZ, P, POS, case  # noqa: F401

CASES: dict[str, list[tuple]] = {
}

"""An ``if`` whose branches bind a name to the same outside value (``s2 = a`` in
both) is folded away in the forward block; the backward block and the tapes
must read what replaced that name, not the name (it was a ``NameError`` in the
generated backward code).  Handwritten cases and random ones (an ``if`` with
equal bindings put inside loops, with ``break``/``continue``/``return``, beside
other joins and copies); each against central finite differences and every
stage's IR against the generated code."""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import check_grad, check_stages, load_program


def same_in_both(x, a):
    s2 = x
    if np.sum(x) > 0:
        s2 = a
    else:
        s2 = a
    return np.sum(s2 * x)


def same_in_a_loop(x, a, n):
    s = 0.0
    for i in range(n):
        if x[i % 3] > 0:
            s2 = a
        else:
            s2 = a
        s = s + np.sum(s2 * x)
    return s


def same_and_a_copy_in_a_loop(x, a, n):
    s = 0.0
    for i in range(n):
        b = a * x[i % 3]
        if x[i % 3] > 0:
            s2 = b
            s3 = s2
        else:
            s2 = b
            s3 = b
        s = s + np.sum(np.sin(s2) * s3)
    return s


def same_with_break(x, a, n):
    s = 0.0
    s2 = x
    for i in range(n):
        if x[i % 3] > 0:
            s2 = a
            if s > 0.5:
                break
        else:
            s2 = a
        s = s + np.sum(s2 * x)
    return s + np.sum(s2 * s2)


def same_with_return(x, a):
    for i in range(3):
        if x[i] > 0.5:
            s2 = a
            return np.sum(s2 * x)
        else:
            s2 = a
        x = x * np.tanh(s2)
    return np.sum(x)


def same_in_nested_ifs(x, a):
    if np.sum(x) > 0:
        if x[0] > 0:
            s2 = a * 2.0
        else:
            s2 = a * 2.0
        t = s2
    else:
        t = a * 2.0
    return np.sum(t * x)


_x, _a = np.array([0.3, -0.4, 0.8]), np.array([0.5, 0.2, -0.1])
CASES = [
    (same_in_both, (_x, _a)), (same_in_both, (-_x, _a)),
    (same_in_a_loop, (_x, _a, 4)), (same_in_a_loop, (_x, _a, np.int64(4))),
    (same_and_a_copy_in_a_loop, (_x, _a, 4)), (same_and_a_copy_in_a_loop, (_x, _a, np.int64(5))),
    (same_with_break, (_x, _a, 6)), (same_with_break, (_x, _a, np.int64(6))),
    (same_with_return, (_x, _a)), (same_with_return, (_x * 0.5, _a)),
    (same_in_nested_ifs, (_x, _a)), (same_in_nested_ifs, (-_x, _a)),
]


@pytest.mark.parametrize("fn, args", CASES, ids=lambda c: getattr(c, "__name__", ""))
def test_an_if_binding_the_same_value_in_both_branches(fn, args):
    check_grad(fn, args)
    check_stages(fn, args)


# ---------------------------------------------------------------- random programs

#: the value both branches bind: an argument, a value made before the ``if``, a constant times one
_VALUES = ["a", "b", "x * 0.5"]
#: what the loop body does after the ``if``
_USES = ["s = s + np.sum(np.sin(s2) * x)", "s = s + np.sum(s2 * b)", "b = np.tanh(b + s2 * 0.1)"]
#: an early exit inside the first branch, or none
_EXITS = ["", "if s > 1.0:\n    break", "if s > 1.0:\n    continue", "if s > 1.5:\n    return s"]


def _indent(text: str, n: int) -> str:
    return "\n".join(" " * n + line for line in text.splitlines())


@st.composite
def programs(draw):
    value = draw(st.sampled_from(_VALUES))
    exit_ = draw(st.sampled_from(_EXITS))
    uses = draw(st.lists(st.sampled_from(_USES), min_size=1, max_size=3))
    then_extra = draw(st.sampled_from(["", "c = s2"]))
    in_loop = draw(st.booleans())
    body = "\n".join([
        "b = a * x[0]" if not in_loop else "b = b * 0.9",
        f"if x[i % 3] > {draw(st.sampled_from(['0.0', '-0.2']))}:",
        _indent(f"s2 = {value}\n{then_extra}\n{exit_}" if in_loop else f"s2 = {value}\n{then_extra}", 4),
        "else:",
        _indent(f"s2 = {value}", 4),
        *uses,
    ])
    if in_loop:
        text = f"def f(x, a, n):\n    s = 0.0\n    b = a\n    for i in range(n):\n{_indent(body, 8)}\n" \
               "    return s + np.sum(b * b)\n"
    else:
        text = f"def f(x, a, n):\n    s = 0.0\n    b = a\n    i = 1\n{_indent(body, 4)}\n" \
               "    return s + np.sum(b * b)\n"
    return "import numpy as np\n\n\n" + text.replace("\n\n", "\n")


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(source=programs(), n=st.sampled_from([0, 3, np.int64(4)]))
def test_random_ifs_binding_the_same_value(tmp_path, source, n):
    fn = load_program(source, tmp_path, "folded_joins").f
    args = (np.array([0.3, -0.45, 0.8]), np.array([0.5, 0.2, -0.1]), n)
    check_grad(fn, args)
    check_stages(fn, args)

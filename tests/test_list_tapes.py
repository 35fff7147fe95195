"""Lists that grow in a loop and are read while they grow (``hs.append(f(hs[-1]))``):
the gradient is O(T) in time and memory, as the primal is.  The backward pass
adds each read's cotangent into one list of cotangents in place (no one-hot
list per read) and the tape records no list per iteration.  Gradients against
central finite differences; every stage's IR against the generated code."""

import tracemalloc

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import astad
from conftest import check_grad, check_stages, fuzz_examples, load_program


def rnn(w, x, h0):
    hs = [h0]
    for t in range(6):
        hs.append(np.tanh(w @ hs[-1] + x))
    return np.sum(hs[-1])


def read_by_index(x, n):
    hs = [x]
    for t in range(n):
        hs.append(np.sin(hs[t]) * 0.7 + hs[-1] * hs[0])
    return np.sum(hs[-1] * hs[1])


def two_back(x):
    hs = [x, x * 2.0]
    for t in range(5):
        hs.append(hs[-1] * 0.5 + np.cos(hs[-2]))
    return np.sum(hs[-1])


def while_grows(x):
    hs = [x]
    while len(hs) < 5:
        hs.append(np.tanh(hs[-1] * 1.5 + x))
    return np.sum(hs[-1] * hs[-1])


def appended_in_a_branch(x, n):
    hs = [x]
    for t in range(n):
        if t % 2 == 0:
            hs.append(np.sin(hs[-1]) + x)
        else:
            y = hs[-1]  # a dead read
    return np.sum(hs[-1])


def read_in_a_branch(x, n):
    hs = [x]
    for t in range(n):
        v = hs[-1]
        if np.sum(v) > 0.0:
            v = v * hs[0]
        hs.append(np.tanh(v))
    return np.sum(hs[-1])


def every_element_used(x):
    hs = [x]
    for t in range(4):
        hs.append(np.sin(hs[-1]) * (t + 1.0))
    s = 0.0
    for h in hs:
        s = s + np.sum(h * h)
    return s


def stacked_at_the_end(x):
    hs = [x]
    for t in range(4):
        hs.append(hs[-1] * x + 0.1)
    return np.sum(np.stack(hs) ** 2)


def two_lists(x, y):
    a = [x]
    b = [y]
    for t in range(4):
        a.append(np.sin(b[-1]) + a[-1])
        b.append(a[-1] * b[-1])
    return np.sum(a[-1] + b[-2])


def read_after_the_append(x):
    hs = [x]
    for t in range(3):
        hs.append(hs[-1] * 2.0)
        hs.append(np.cos(hs[-1]) + hs[-2])
    return np.sum(hs[-1] * hs[3])


def with_break(x, n):
    hs = [x]
    for t in range(n):
        if np.sum(hs[-1]) > 3.0:
            break
        hs.append(hs[-1] * 1.7 + 0.2)
    return np.sum(hs[-1])


def nested_reads(x):
    hs = [x]
    for t in range(4):
        s = hs[0] * 0.0
        for j in range(len(hs)):
            s = s + hs[j] * 0.3
        hs.append(np.tanh(s))
    return np.sum(hs[-1])


def carried_and_summed(x):
    hs = [x]
    total = 0.0
    for t in range(5):
        total = total + np.sum(hs[-1] ** 2)
        hs.append(np.sin(hs[-1]))
    return total


def both_branches_append(x, n):
    hs = [x]
    for t in range(n):
        if np.sum(hs[-1]) > 0.0:
            hs.append(np.sin(hs[-1]) - 0.3)
        else:
            hs.append(hs[-1] * hs[0] + 0.4)
        hs.append(hs[-1] * 0.9)
    return np.sum(hs[-1] * hs[-2])


def read_in_the_branch_that_does_not_append(x, n):
    hs = [x]
    s = 0.0
    for t in range(n):
        if t % 2 == 0:
            hs.append(np.cos(hs[-1]) * x)
        else:
            s = s + np.sum(hs[-1] * hs[0])
        s = s + np.sum(hs[-1])
    return s + np.sum(hs[-1])


def a_loop_in_a_branch_reads_the_list(x, n):
    hs = [x]
    for t in range(n):
        if t % 2 == 0:
            s = x * 0.0
            for h in hs:
                s = s + h * 0.5
            hs.append(np.tanh(s))
        else:
            hs.append(hs[-1] * 0.8)
    return np.sum(hs[-1])


def appended_after_a_break_test(x, n):
    hs = [x]
    for t in range(n):
        hs.append(hs[-1] * 1.1)
        if np.sum(hs[-1]) > 2.0:
            break
        hs.append(np.sin(hs[-2]) + hs[-1])
    return np.sum(hs[-1]) + np.sum(hs[1])


_x = np.array([0.3, -0.4, 0.8])
CASES = [
    (both_branches_append, (_x, 4)), (both_branches_append, (-_x, 3)),
    (read_in_the_branch_that_does_not_append, (_x, 5)),
    (a_loop_in_a_branch_reads_the_list, (_x, 4)),
    (appended_after_a_break_test, (_x, 5)), (appended_after_a_break_test, (_x * 3.0, 5)),
    (rnn, (np.random.default_rng(1).normal(size=(3, 3)) * 0.5, _x, np.array([0.1, 0.2, -0.3]))),
    (read_by_index, (_x, 4)),
    (two_back, (_x,)),
    (while_grows, (_x,)),
    (appended_in_a_branch, (_x, 5)),
    (read_in_a_branch, (_x, 4)),
    (read_in_a_branch, (-_x, 4)),
    (every_element_used, (_x,)),
    (stacked_at_the_end, (_x,)),
    (two_lists, (_x, np.array([0.5, 0.1, -0.2]))),
    (read_after_the_append, (_x,)),
    (with_break, (_x, 6)),
    (with_break, (_x * 0.1, 3)),
    (nested_reads, (_x,)),
    (carried_and_summed, (_x,)),
]


@pytest.mark.parametrize("fn, args", CASES, ids=lambda c: getattr(c, "__name__", ""))
def test_lists_read_while_they_grow(fn, args):
    check_grad(fn, args)
    check_stages(fn, args)


def grows(w, x, h0, n):
    hs = [h0]
    for t in range(n):
        hs.append(np.tanh(w @ hs[-1] + x))
    return np.sum(hs[-1])


def _peak(f) -> int:
    tracemalloc.start()
    try:
        f()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def grows_in_a_branch(w, x, h0, n):
    hs = [h0]
    for t in range(n):
        if t % 3 != 0:
            hs.append(np.tanh(w @ hs[-1] + x))
    return np.sum(hs[-1])


def grows_until_a_break(w, x, h0, n):
    hs = [h0]
    for t in range(n):
        if np.sum(hs[-1]) > 100.0:
            break
        hs.append(np.tanh(w @ hs[-1] + x))
    return np.sum(hs[-1])


def grows_two(w, x, h0, n):
    hs = [h0]
    ys = [x]
    for t in range(n):
        hs.append(np.tanh(w @ hs[-1] + ys[-1]))
        ys.append(hs[-1] * 0.5)
    return np.sum(ys[-1])


def read_in_a_branch_while_it_grows(w, x, h0, n):
    hs = [h0]
    for t in range(n):
        v = hs[-1]
        if t % 2 == 0:
            v = v * hs[t // 2]
        hs.append(np.tanh(w @ v + x))
    return np.sum(hs[-1])


@pytest.mark.parametrize("fn", [grows, grows_in_a_branch, grows_until_a_break, grows_two,
                                read_in_a_branch_while_it_grows])
def test_a_list_read_while_it_grows_costs_memory_linear_in_its_length(fn):
    """Four times the iterations: about four times the memory of the gradient
    (a tape of each iteration's list, or a one-hot list per read, is sixteen)."""
    rng = np.random.default_rng(0)
    w, x, h0 = rng.normal(size=(4, 4)) * 0.3, rng.normal(size=4), rng.normal(size=4)
    g = astad.grad(fn, argnums=(0, 1, 2))
    g(w, x, h0, 3)
    small, large = (_peak(lambda n=n: g(w, x, h0, n)) for n in (400, 1600))
    assert large / small < 6.0, (small, large)
    check_grad(fn, (w, x, h0, 5))


@pytest.mark.parametrize("fn", [grows, grows_in_a_branch, grows_until_a_break, grows_two])
def test_the_tape_records_no_list_and_the_list_is_appended_to_and_popped_in_place(fn):
    """O(1) time a step too: no copy of a list (``hs + [v]``, ``ct[:-1]``), no
    one-hot list in the backward loop."""
    rng = np.random.default_rng(0)
    d = astad.reverse(fn).transform(rng.normal(size=(4, 4)), rng.normal(size=4), rng.normal(size=4), 3)
    forward, backward = d.source.split(f"def {fn.__name__}_backward")
    assert ".append(" in forward and " + [" not in forward
    loop = backward.split("in reversed(")[1]
    assert ".pop()" in loop and "list_onehot(" not in loop and "[:-1]" not in loop and "list_add(" not in loop


# ---------------------------------------------------------------- random programs

#: values a loop body appends, reading the lists as they grow (every index valid: each list starts with two elements)
_READS = ["hs[-1]", "hs[-2]", "hs[0]", "hs[t % len(hs)]", "ys[-1]", "ys[len(ys) // 2]"]
_MAKE = ["np.tanh({a} * 0.9 + {b} * 0.3)", "np.sin({a}) * {b}", "{a} * 0.5 + x", "np.cos({a} - {b})"]
_INT_CONDS = ["t % 2 == 0", "t % 3 != 1", "t > 1", "len(hs) < 5"]


def _indent_lines(lines, n):
    return [" " * n + ln for ln in lines]


@st.composite
def growing_lists(draw):
    def value():
        a, b = draw(st.sampled_from(_READS)), draw(st.sampled_from(_READS))
        return draw(st.sampled_from(_MAKE)).format(a=a, b=b)

    def statement(depth):
        kind = draw(st.sampled_from(["append", "append", "other", "sum", "if", "break", "either_sum"] if depth < 2
                                    else ["append", "other", "sum"]))
        if kind == "either_sum":  # one `if` joining parts of both lists' cotangents (a bug found by fuzzing)
            return [f"if {draw(st.sampled_from(_INT_CONDS))}:", f"    s = s + np.sum({draw(st.sampled_from(_READS))})",
                    "else:", f"    s = s + np.sum({draw(st.sampled_from(_READS))})"]
        if kind == "append":
            return [f"hs.append({value()})"]
        if kind == "other":
            return [f"ys.append({value()})"]
        if kind == "sum":
            return [f"s = s + np.sum({draw(st.sampled_from(_READS))})"]
        if kind == "break":
            return [f"if {draw(st.sampled_from(_INT_CONDS))}:", "    break"]
        then = [ln for _ in range(draw(st.integers(1, 2))) for ln in statement(depth + 1)]
        lines = [f"if {draw(st.sampled_from(_INT_CONDS))}:", *_indent_lines(then, 4)]
        if draw(st.booleans()):
            lines += ["else:", *_indent_lines(statement(depth + 1), 4)]
        return lines

    body = [ln for _ in range(draw(st.integers(1, 4))) for ln in statement(0)]
    result = draw(st.sampled_from(["np.sum(hs[-1])", "np.sum(hs[-1] * ys[-1])", "np.sum(np.stack(hs)) + np.sum(ys[-2])"]))
    lines = ["def f(x, y, n):", "    hs = [x, x * 0.5]", "    ys = [y, y * y]", "    s = 0.0",
             "    for t in range(n):", *_indent_lines(body, 8), f"    return s + {result}"]
    return "import numpy as np\n\n\n" + "\n".join(lines) + "\n"


@settings(max_examples=fuzz_examples(12, long=30), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(source=growing_lists(), n=st.sampled_from([0, 1, 4, np.int64(5)]))
def test_random_lists_read_while_they_grow(tmp_path, source, n):
    """Against finite differences and every stage's IR: appends and reads at
    several indices, under ifs, with breaks, in two lists."""
    fn = load_program(source, tmp_path, "growing_lists").f
    args = (np.array([0.3, -0.45]), np.array([0.5, 0.2]), n)
    check_grad(fn, args)
    check_stages(fn, args)


def two_lists_joined_by_one_if(x, y, n):
    hs = [x, x * 0.5]
    ys = [y, y * y]
    s = 0.0
    for t in range(n):
        if t % 2 == 0:
            s = s + np.sum(hs[-1])
        else:
            s = s + np.sum(ys[-1])
        ys.append(hs[-1] * 0.9)
        hs.append(ys[1] * 0.3)
        if t % 2 == 0:
            break
    return s + np.sum(hs[-1])


@pytest.mark.parametrize("n", [1, 2, 5])
def test_one_if_joining_the_cotangents_of_two_lists(n):
    """The `if` adds into both lists' cotangents in its branches; the second rewrite
    started from the `if` before the first and dropped it (y's gradient was 0)."""
    args = (np.array([0.3, -0.45]), np.array([0.5, 0.2]), n)
    check_grad(two_lists_joined_by_one_if, args)
    check_stages(two_lists_joined_by_one_if, args)


def hs_and_ys(x, y, n):
    hs = [x, x * 0.5]
    ys = [y, y * y]
    s = 0.0
    for t in range(n):
        s = s + np.sum(hs[-2])
        if t % 2 == 0:
            ys.append(np.cos(hs[t % len(hs)] - hs[0]))
            hs.append(np.cos(hs[-1] - hs[-1]))
    return s + np.sum(np.stack(hs)) + np.sum(ys[-2])


@pytest.mark.parametrize("fn, args", CASES + [(hs_and_ys, (_x, _x * 0.5, 5))], ids=lambda c: getattr(c, "__name__", ""))
def test_every_name_is_bound_once(fn, args):
    """The adds in place the optimiser makes have names of their own (a name
    made twice reads the wrong value wherever the two differ)."""
    from collections import Counter

    from astad.ir import nested_blocks

    def targets(block):
        for b in block.binds:
            yield from (t.name for t in b.targets)
            for inner in nested_blocks(b.rhs):
                yield from targets(inner)

    prog = astad.reverse(fn).transform(*args).stages.optimised
    names = Counter([p.name for p in prog.params] + list(targets(prog.forward)) + list(targets(prog.backward)))
    assert not [n for n, k in names.items() if k > 1]
    check_grad(hs_and_ys, (_x, _x * 0.5, 5)) if fn is hs_and_ys else None


def _built_then_read(x, n):
    hs = []
    h = 0.0
    for i in range(n):
        h = np.tanh(h * 0.9 + x[i % 3])
        hs.append(h)
    s = 0.0
    for i in range(n):
        s = s + hs[i] * hs[n - 1 - i]
    return s


def test_a_list_read_in_one_loop_and_built_in_another_is_popped_in_place():
    """The cotangent list the reading loop fills (a new list it owns) is popped by the building
    loop's backward pass in place: O(1) a step, not a copy `ct[:-1]` (O(n^2) in all)."""
    x = np.array([0.1, 0.2, -0.3])
    for n in (1, 2, 7):
        g = astad.grad(_built_then_read)(x, n)
        fd = [(_built_then_read(x + 1e-6 * e, n) - _built_then_read(x - 1e-6 * e, n)) / 2e-6 for e in np.eye(3)]
        np.testing.assert_allclose(g, fd, rtol=1e-6, atol=1e-9)
    r = astad.reverse(_built_then_read)
    r(x, 5)
    backward = r.source.split("_backward(")[1]
    assert ".pop()" in backward and "[:-1]" not in backward
